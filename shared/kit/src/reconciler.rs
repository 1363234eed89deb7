//! The wrapper every reconcile of every controller runs in.
//!
//! [`Context::run`] runs a kube-runtime `Controller` with a reconcile
//! function wrapped once for every controller:
//!
//! ```text
//!   trigger ─▶ wait while another replica leads ─▶ span "reconcile" {controller, kind, object}
//!              ─▶ reconcile(object, state), dropped at once if leadership is lost
//!              ─▶ each Azure resource created, updated or deleted: a Normal event
//!                 Ok(action)          backoff forgotten                 result success / requeue
//!                 Err(pending)        requeue after its wait, no error  result requeue_after
//!                 Err(failure)        warning event, metrics, backoff   result error
//! ```
//!
//! An object the controller's cache holds as it was before the controller's own last status
//! write is not reconciled: the write's watch event is still on its way, and acting on the old
//! copy would forget what that write recorded (an operation in flight, above all). The wrapper
//! looks again shortly; the watch event usually comes first.
//!
//! A failed reconcile that still wrote its object's status moved the object on: its backoff
//! starts afresh, so faults that come and go while work progresses never add up to a long wait.
//! The wrapper learns both from [`crate::observed`], and publishes each Azure resource the
//! reconcile created, updated or deleted as a Normal event on the object.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Resource;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde::de::DeserializeOwned;
use tracing::Instrument as _;

use crate::controller::ControllerId;
use crate::leader::Leadership;
use crate::metrics::{ReconcileResult, ReconcileTimer, Worker};
use crate::observed::announced;
use crate::policy::{Backoff, Classify};
use crate::queue::Queue;
use crate::report::Reporter;
use crate::runner::{Context, Shutdown};
use crate::telemetry::reconcile_span;

/// How soon a reconcile interrupted by a lost leadership is tried again (it then waits for
/// leadership first).
const AFTER_LOST_LEADERSHIP: Duration = Duration::from_secs(1);

/// How soon an object the cache still holds from before the controller's own write is looked at
/// again.
const AFTER_STALE_COPY: Duration = Duration::from_millis(200);

/// What the wrapped reconcile of one kube-runtime controller shares.
pub(crate) struct Wrapped<K: Resource, S, F> {
    pub(crate) id: ControllerId,
    pub(crate) kind: &'static str,
    pub(crate) label: &'static str,
    pub(crate) reconcile: F,
    pub(crate) state: Arc<S>,
    pub(crate) backoff: Backoff<ObjectRef<K>>,
    pub(crate) reporter: Reporter,
    pub(crate) leadership: Leadership,
    pub(crate) shutdown: Shutdown,
    pub(crate) queue: Arc<Queue>,
    pub(crate) overwritten: Overwritten<K>,
}

/// For each object whose status the controller wrote last time, the resource version the object
/// had before that write: a copy still at that version is stale.
pub(crate) struct Overwritten<K: Resource>(Mutex<HashMap<ObjectRef<K>, String>>);

impl<K: Resource<DynamicType = ()>> Default for Overwritten<K> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

impl<K: Resource<DynamicType = ()>> Overwritten<K> {
    /// Whether `object` is a copy from before this controller's last status write to it; a newer
    /// copy ends the watch.
    fn stale(&self, key: &ObjectRef<K>, object: &K) -> bool {
        let mut overwritten = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(before) = overwritten.get(key) else {
            return false;
        };
        if object.meta().resource_version.as_ref() == Some(before) {
            return true;
        }
        overwritten.remove(key);
        false
    }

    /// Remembers that a reconcile of `object` wrote its status, which the API server stored as
    /// `written`.
    fn wrote(&self, key: ObjectRef<K>, object: &K, written: &str) {
        let mut overwritten = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match object.meta().resource_version.as_deref() {
            // An apply that changed nothing keeps the version: the copy is as new as the write.
            Some(before) if before != written => {
                overwritten.insert(key, before.to_owned());
            }
            _ => {
                overwritten.remove(&key);
            }
        }
    }
}

/// The wrapped reconcile: see the module documentation.
pub(crate) async fn wrapped_reconcile<K, S, E, F, Fut>(
    object: Arc<K>,
    wrapped: Arc<Wrapped<K, S, F>>,
) -> Result<Action, std::convert::Infallible>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<S>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: Classify,
{
    let span = reconcile_span(wrapped.id.name(), &*object);
    let key = ObjectRef::from_obj(&*object);
    let regarding = object.object_ref(&());
    async move {
        if wrapped.overwritten.stale(&key, &object) {
            tracing::debug!("the cached copy predates our own status write: looking again shortly");
            wrapped.queue.start(&key);
            wrapped.queue.requeued(false);
            return Ok(Action::requeue(AFTER_STALE_COPY));
        }
        let run = async {
            wrapped.queue.start(&key);
            let started = std::time::Instant::now();
            let _worker = Worker::start(wrapped.label);
            let timer = ReconcileTimer::start(wrapped.id.name(), wrapped.kind, wrapped.label);
            // Boxed: a controller's reconcile is a large future, too large to move on the stack.
            let reconcile = Box::pin((wrapped.reconcile)(object.clone(), wrapped.state.clone()));
            let observed = announced(wrapped.reporter.clone(), regarding.clone(), reconcile).await;
            wrapped.queue.worked(started.elapsed());
            (timer, observed)
        };
        let leading = wrapped
            .leadership
            .while_leading(wrapped.shutdown.triggered(), run);
        let Some((timer, observed)) = leading.await else {
            tracing::debug!("not leading: the reconcile is left to the leader");
            return Ok(Action::requeue(AFTER_LOST_LEADERSHIP));
        };
        let progressed = observed.status_written.is_some();
        if let Some(written) = &observed.status_written {
            wrapped.overwritten.wrote(key.clone(), &object, written);
        }
        crate::observed::publish(&wrapped.reporter, &regarding, observed.changes).await;
        Ok(match observed.output {
            Ok(action) => {
                wrapped.backoff.reset(&key);
                let result = ReconcileResult::of(&action);
                if result == ReconcileResult::RequeueAfter {
                    wrapped.queue.requeued(false);
                }
                timer.finished(result);
                action
            }
            Err(error) => {
                if let Some(wait) = error.pending() {
                    timer.finished(ReconcileResult::RequeueAfter);
                    wrapped.queue.requeued(false);
                    return Ok(Action::requeue(wait));
                }
                timer.failed(error.category().as_str());
                if progressed {
                    wrapped.backoff.reset(&key);
                }
                wrapped.reporter.failed(&*object, "Reconcile", &error).await;
                let action = wrapped.backoff.on_error(key, &error);
                if action != Action::await_change() {
                    wrapped.queue.requeued(true);
                }
                action
            }
        })
    }
    .instrument(span)
    .await
}

impl Context {
    /// Runs `controller` until the shutdown signal has drained it, calling `reconcile` with
    /// `state` for each object it is woken for, inside the wrapper the module documentation
    /// describes. Every capz-rs controller runs its reconciles through here.
    pub async fn run<K, S, E, F, Fut>(&self, controller: Controller<K>, reconcile: F, state: Arc<S>)
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Eq + Hash + Clone,
        S: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Classify + Send + Sync + 'static,
    {
        use futures_util::StreamExt as _;

        let kind = K::kind(&());
        let label = crate::metrics::controller_label(&kind);
        crate::metrics::controller_started(label, self.args().concurrency_for(&kind));
        let wrapped = Arc::new(Wrapped {
            id: self.id(),
            kind: crate::metrics::static_kind(&kind),
            label,
            reconcile,
            state,
            backoff: Backoff::default(),
            reporter: self.reporter(),
            leadership: self.leadership(),
            shutdown: self.shutdown(),
            queue: Queue::of::<K>(),
            overwritten: Overwritten::default(),
        });
        controller
            .run(
                wrapped_reconcile::<K, S, E, F, Fut>,
                |_, never: &std::convert::Infallible, _| match *never {},
                wrapped,
            )
            .for_each(|outcome| async move {
                if let Err(error) = outcome {
                    tracing::debug!(%error, "reconcile not run");
                }
            })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::runtime::reflector::ObjectRef;

    use super::Overwritten;

    fn at(version: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some("cm".to_owned());
        object.metadata.namespace = Some("ns".to_owned());
        object.metadata.resource_version = Some(version.to_owned());
        object
    }

    #[test]
    fn a_copy_from_before_our_own_status_write_is_stale_until_a_newer_one_arrives() {
        let overwritten = Overwritten::<ConfigMap>::default();
        let key = ObjectRef::from_obj(&at("1"));
        assert!(!overwritten.stale(&key, &at("1")), "nothing written yet");
        overwritten.wrote(key.clone(), &at("1"), "2");
        assert!(overwritten.stale(&key, &at("1")));
        assert!(overwritten.stale(&key, &at("1")), "still the old copy");
        assert!(!overwritten.stale(&key, &at("2")));
        assert!(!overwritten.stale(&key, &at("1")), "a newer copy ended the watch");
        // An apply that changed nothing leaves the version: the copy is current.
        overwritten.wrote(key.clone(), &at("2"), "2");
        assert!(!overwritten.stale(&key, &at("2")));
    }
}
