//! The watches of the kit's controllers, each paced by a backoff of its own.
//!
//! A kube-runtime `Controller` merges all of its trigger streams (the watch of its own kind and
//! those of the kinds that wake it) into one, and by default pauses that merged stream with one
//! growing backoff (up to a minute with its jitter) whenever any of them yields an error. One
//! failing watch thus holds up the events of every other watch of the controller; and after an
//! API server outage every watch yields errors in turn (refused connections while it is down, then
//! 410 Gone once it serves again, its watch cache starting at a newer resource version), each
//! paused for longer than the one before: minutes in which the controller sees no new object.
//!
//! So the kit paces each watch by itself ([`watch`], [`paced`]) and keeps the controller-wide
//! backoff to a short, constant [`TriggerPause`], which only stops a watch without a backoff of
//! its own from spinning. A watch answered with 410 Gone is listed again after the backoff's
//! first, shortest wait: the API server answers, so what the backoff grew while it did not is
//! forgotten.

use std::fmt::Debug;
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::reflector::{self, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

/// How long a controller of the kit stops taking triggers after one of its watches yielded an
/// error, however many came before.
pub const TRIGGER_PAUSE: Duration = Duration::from_secs(1);

/// The wait after an error when a watch's backoff has run out (the kit's never do).
const LONGEST_WAIT: Duration = Duration::from_secs(30);

/// The controller-wide trigger backoff of the kit's controllers
/// (`Controller::trigger_backoff`): [`TRIGGER_PAUSE`] after every error.
#[derive(Debug, Clone, Default)]
pub struct TriggerPause;

impl Iterator for TriggerPause {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(TRIGGER_PAUSE)
    }
}

impl Backoff for TriggerPause {
    fn reset(&mut self) {}
}

/// A watch of `api`'s kind with `config`, paced by kube-runtime's default backoff (0.8 s doubling
/// up to 30 s, with jitter) as [`paced`] describes. Use it in place of
/// `watcher(api, config).default_backoff()`.
pub fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    paced(
        K::kind(&()).into_owned(),
        watcher::watcher(api, config),
        DefaultBackoff::default(),
    )
}

/// [`watch`], also keeping what it sees in the returned store, without the objects' managed
/// fields: nothing reads who wrote which field from a cache, and on objects several controllers
/// write that record is most of their size.
pub fn cached<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (
    Store<K>,
    impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let events = watch(api, config)
        .modify(|object| object.meta_mut().managed_fields = None)
        .reflect(writer);
    (reader, events)
}

/// `events` of a watch of `kind`, each error passed on and followed by a wait from `backoff`
/// before the watch goes on; anything else resets `backoff`. An error that is 410 Gone resets it
/// too, and waits its first delay only. Errors are logged, 410 Gone at debug level only.
pub fn paced<T, B>(
    kind: String,
    events: impl Stream<Item = Result<T, watcher::Error>> + Send + 'static,
    backoff: B,
) -> impl Stream<Item = Result<T, watcher::Error>> + Send + 'static
where
    T: Send + 'static,
    B: Backoff + 'static,
{
    let state = (kind, events.boxed(), backoff, None::<Duration>);
    futures_util::stream::unfold(state, |(kind, mut events, mut backoff, wait)| async move {
        if let Some(wait) = wait {
            tokio::time::sleep(wait).await;
        }
        let item = events.next().await?;
        let wait = match &item {
            Ok(_) => {
                backoff.reset();
                None
            }
            Err(error) if expired(error) => {
                backoff.reset();
                let wait = backoff.next().unwrap_or(LONGEST_WAIT);
                tracing::debug!(%kind, %error, ?wait, "the watch expired; listing again");
                Some(wait)
            }
            Err(error) => {
                let wait = backoff.next().unwrap_or(LONGEST_WAIT);
                tracing::warn!(%kind, %error, ?wait, "the watch failed; retrying");
                Some(wait)
            }
        };
        Some((item, (kind, events, backoff, wait)))
    })
}

/// Whether the API server answered the watch with 410 Gone: its resource version is older than
/// what the API server still has, and the watcher lists again.
fn expired(error: &watcher::Error) -> bool {
    matches!(error, watcher::Error::WatchError(status) if status.code == 410)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use futures_util::{StreamExt as _, stream};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::Status;
    use kube::runtime::controller::{Action, Controller};
    use kube::runtime::reflector::{self, ObjectRef};
    use kube::runtime::utils::Backoff;
    use kube::runtime::watcher;

    use super::{TRIGGER_PAUSE, TriggerPause, paced};

    /// Waits of 1 s, 2 s, then a minute: far enough apart that a busy machine cannot blur them.
    struct Steps(usize);

    impl Iterator for Steps {
        type Item = Duration;

        fn next(&mut self) -> Option<Duration> {
            let wait = [1000, 2000, 60_000][self.0.min(2)];
            self.0 += 1;
            Some(Duration::from_millis(wait))
        }
    }

    impl Backoff for Steps {
        fn reset(&mut self) {
            self.0 = 0;
        }
    }

    fn failed() -> watcher::Error {
        watcher::Error::NoResourceVersion
    }

    fn gone() -> watcher::Error {
        watcher::Error::WatchError(Box::new(
            Status::failure("too old resource version", "Expired").with_code(410),
        ))
    }

    #[tokio::test]
    async fn errors_wait_longer_each_time_and_a_watch_expired_is_listed_again_at_once() {
        let events = stream::iter([
            Err(failed()),
            Err(failed()),
            Err(gone()),
            Ok(1),
            Err(failed()),
            Ok(2),
        ]);
        let started = Instant::now();
        let mut paced = Box::pin(paced("ConfigMap".to_owned(), events, Steps(0)));
        let mut at = Vec::new();
        while let Some(item) = paced.next().await {
            at.push((item.is_ok(), started.elapsed()));
        }
        let ms = |index: usize| at[index].1.as_millis();
        let gap = |index: usize| ms(index) - ms(index - 1);
        assert_eq!(at.len(), 6);
        assert!(ms(0) < 500, "the first error is passed on at once: {at:?}");
        assert!(gap(1) >= 1000, "the first error waits 1 s: {at:?}");
        assert!(gap(2) >= 2000, "the second waits 2 s: {at:?}");
        // Without the reset, 410 Gone would wait the backoff's next step, a minute.
        assert!(
            (1000..30_000).contains(&gap(3)),
            "410 Gone waits the first step only: {at:?}"
        );
        assert!(gap(4) < 500, "an event is followed by no wait: {at:?}");
        assert!(
            (1000..30_000).contains(&gap(5)),
            "an event reset the backoff: {at:?}"
        );
    }

    /// After an outage every watch of a controller yields an error in turn; the object its own
    /// watch delivers meanwhile is reconciled after a pause per error, not after kube-runtime's
    /// default backoff growing with each (0.8 + 1.6 + 3.2 + 6.4 s at least for four).
    #[tokio::test]
    async fn errors_of_other_watches_hold_a_new_object_up_for_a_short_pause_each() {
        let (reader, mut writer) = reflector::store::<ConfigMap>();
        let mut object = ConfigMap::default();
        object.metadata.name = Some("new".to_owned());
        object.metadata.namespace = Some("default".to_owned());
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let (send, receive) = tokio::sync::mpsc::unbounded_channel::<ConfigMap>();
        let own = futures_util::stream::unfold(receive, |mut receive| async move {
            let object = receive.recv().await?;
            Some((Ok(object), receive))
        });
        let mut controller = Controller::for_stream(own, reader).trigger_backoff(TriggerPause);
        for _ in 0..4 {
            let failing = stream::iter([Err::<ConfigMap, _>(failed())]).chain(stream::pending());
            controller = controller.watches_stream(failing, |_| Vec::<ObjectRef<ConfigMap>>::new());
        }
        let (report, mut reports) = tokio::sync::mpsc::unbounded_channel::<String>();
        let run = controller.run(
            |object: Arc<ConfigMap>, reconciled: Arc<tokio::sync::mpsc::UnboundedSender<String>>| async move {
                let _ = reconciled.send(object.metadata.name.clone().unwrap_or_default());
                Ok::<_, std::convert::Infallible>(Action::await_change())
            },
            |_, never, _| match *never {},
            Arc::new(report),
        );
        let running = tokio::spawn(run.for_each(|_| async {}));
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(100)).await;
        send.send(object).unwrap();
        let name = tokio::time::timeout(Duration::from_secs(20), reports.recv())
            .await
            .expect("the new object was never reconciled");
        let took = started.elapsed();
        running.abort();
        assert_eq!(name.as_deref(), Some("new"));
        assert!(
            took < TRIGGER_PAUSE * 4 + Duration::from_secs(2),
            "four errors of other watches held the new object up for {took:?}"
        );
    }
}
