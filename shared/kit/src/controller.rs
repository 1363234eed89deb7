//! What makes a process one capz-rs controller: its identity, and the wrapper every reconcile runs
//! in.
//!
//! [`ControllerId`] gives every name a controller goes by — field manager, finalizer, event
//! reporter, ARM user agent, Lease — from its [`Family`], so they cannot disagree.
//!
//! [`Context::run`](crate::runner::Context::run) runs a kube-runtime `Controller` with a reconcile
//! function wrapped once for every controller:
//!
//! ```text
//!   trigger ─▶ wait while another replica leads ─▶ span "reconcile" {controller, kind, object}
//!              ─▶ reconcile(object, state), dropped at once if leadership is lost
//!              ─▶ Ok(action)          backoff forgotten                 result success / requeue
//!                 Err(pending)        requeue after its wait, no error  result requeue_after
//!                 Err(failure)        warning event, metrics, backoff   result error
//! ```
//!
//! A failed reconcile that still wrote its object's status moved the object on: its backoff
//! starts afresh, so faults that come and go while work progresses never add up to a long wait.
//! The wrapper tells from [`crate::apply::apply_status`], which marks the reconcile it runs in.

use std::cell::Cell;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use capz_api::controllers::Family;
use kube::Resource;
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::Instrument as _;

use crate::apply::FieldManager;
use crate::metrics::{ReconcileResult, ReconcileTimer, Worker};
use crate::policy::{Backoff, Classify};
use crate::report::Reporter;
use crate::runner::{Context, Shutdown};
use crate::telemetry::reconcile_span;

/// The names one controller goes by, all derived from its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ControllerId {
    name: &'static str,
    qualified: &'static str,
    finalizer: &'static str,
}

impl ControllerId {
    /// The controller of `family`.
    #[must_use]
    pub const fn of(family: Family) -> Self {
        Self {
            name: family.name(),
            qualified: family.qualified(),
            finalizer: family.finalizer(),
        }
    }

    /// A controller outside the families, such as a test's: `name`, `capz-<name>` as
    /// `qualified`, and its finalizer.
    #[must_use]
    pub const fn custom(name: &'static str, qualified: &'static str, finalizer: &'static str) -> Self {
        Self {
            name,
            qualified,
            finalizer,
        }
    }

    /// Its short name, such as `network`: the `controller` label of its own metrics.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The field manager of everything it writes: `capz-<name>`.
    #[must_use]
    pub const fn field_manager(self) -> FieldManager {
        FieldManager::new(self.qualified)
    }

    /// The finalizer it keeps on the objects it reconciles.
    #[must_use]
    pub const fn finalizer(self) -> &'static str {
        self.finalizer
    }

    /// How it introduces itself to Azure and in events: `capz-<name>`.
    #[must_use]
    pub const fn user_agent(self) -> &'static str {
        self.qualified
    }

    /// Its leader-election Lease, which also tells peers it runs: `capz-<name>`.
    #[must_use]
    pub const fn lease(self) -> &'static str {
        self.qualified
    }
}

/// Whether this replica may reconcile now: it holds the leader-election Lease, or leader election
/// is off. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Leadership(watch::Receiver<bool>);

/// Sets a [`Leadership`].
#[derive(Debug)]
pub struct LeadershipSender(watch::Sender<bool>);

impl Leadership {
    /// A leadership that `sender` grants and revokes, not held yet.
    #[must_use]
    pub fn new() -> (LeadershipSender, Self) {
        let (sender, receiver) = watch::channel(false);
        (LeadershipSender(sender), Self(receiver))
    }

    /// A leadership always held: leader election is off.
    #[must_use]
    pub fn always() -> Self {
        let (sender, receiver) = watch::channel(true);
        // Dropped, the sender can never take it back.
        drop(sender);
        Self(receiver)
    }

    /// Whether it is held now.
    #[must_use]
    pub fn held(&self) -> bool {
        *self.0.borrow()
    }

    /// Runs `work` once leadership is held; `None` when `stop` resolves first (shutting down
    /// without leadership), or when leadership is lost before `work` finishes (`work` is dropped
    /// at once: another replica may already be leading).
    pub async fn while_leading<T>(
        &self,
        stop: impl Future<Output = ()>,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        let mut start = self.0.clone();
        tokio::select! {
            // A sender gone keeps its last value: held stays held.
            _ = start.wait_for(|held| *held) => {}
            () = stop => return None,
        }
        if !self.held() {
            return None;
        }
        let mut lost = self.0.clone();
        tokio::select! {
            output = work => Some(output),
            Ok(_) = lost.wait_for(|held| !*held) => None,
        }
    }
}

impl LeadershipSender {
    /// Grants (`true`) or revokes (`false`) leadership.
    pub fn set(&self, held: bool) {
        self.0.send_replace(held);
    }
}

tokio::task_local! {
    /// Set by the wrapper around each reconcile: whether it wrote its object's status.
    static STATUS_WRITTEN: Cell<bool>;
}

/// Notes that the reconcile running now wrote its object's status (called by the kit's status
/// apply). Outside a wrapped reconcile it does nothing.
pub(crate) fn status_written() {
    let _ = STATUS_WRITTEN.try_with(|written| written.set(true));
}

/// How soon a reconcile interrupted by a lost leadership is tried again (it then waits for
/// leadership first).
const AFTER_LOST_LEADERSHIP: Duration = Duration::from_secs(1);

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
    async move {
        let run = async {
            let _worker = Worker::start(wrapped.label);
            let timer = ReconcileTimer::start(wrapped.id.name(), wrapped.kind, wrapped.label);
            let outcome = STATUS_WRITTEN
                .scope(Cell::new(false), async {
                    let outcome = (wrapped.reconcile)(object.clone(), wrapped.state.clone()).await;
                    (outcome, STATUS_WRITTEN.with(Cell::get))
                })
                .await;
            (timer, outcome)
        };
        let leading = wrapped
            .leadership
            .while_leading(wrapped.shutdown.triggered(), run);
        let Some((timer, (outcome, progressed))) = leading.await else {
            tracing::debug!("not leading: the reconcile is left to the leader");
            return Ok(Action::requeue(AFTER_LOST_LEADERSHIP));
        };
        Ok(match outcome {
            Ok(action) => {
                wrapped.backoff.reset(&key);
                timer.finished(ReconcileResult::of(&action));
                action
            }
            Err(error) => {
                if let Some(wait) = error.pending() {
                    timer.finished(ReconcileResult::RequeueAfter);
                    return Ok(Action::requeue(wait));
                }
                timer.failed(error.category().as_str());
                if progressed {
                    wrapped.backoff.reset(&key);
                }
                wrapped.reporter.failed(&*object, "Reconcile", &error).await;
                wrapped.backoff.on_error(key, &error)
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
        crate::metrics::max_concurrent_reconciles(label, self.args().concurrency_for(&kind));
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
    use super::*;

    #[tokio::test]
    async fn work_waits_for_leadership_and_stops_when_it_is_lost() {
        let (sender, leadership) = Leadership::new();
        let waiting = tokio::spawn({
            let leadership = leadership.clone();
            async move {
                leadership
                    .while_leading(std::future::pending(), async { 7 })
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "ran without leadership");
        sender.set(true);
        assert_eq!(waiting.await.unwrap(), Some(7));

        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let long = tokio::spawn({
            let leadership = leadership.clone();
            async move {
                leadership
                    .while_leading(std::future::pending(), async {
                        let _ = rx.await;
                        1
                    })
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        sender.set(false);
        assert_eq!(
            long.await.unwrap(),
            None,
            "kept running after leadership was lost"
        );
        drop(tx);
        assert_eq!(
            Leadership::always()
                .while_leading(std::future::pending(), async { 3 })
                .await,
            Some(3)
        );
        let (_sender, never) = Leadership::new();
        assert_eq!(
            never.while_leading(async {}, async { 4 }).await,
            None,
            "stopped while waiting"
        );
    }

    #[test]
    fn every_name_comes_from_the_family() {
        let id = ControllerId::of(Family::LoadBalancer);
        assert_eq!(id.name(), "loadbalancer");
        assert_eq!(id.field_manager().as_str(), "capz-loadbalancer");
        assert_eq!(id.user_agent(), "capz-loadbalancer");
        assert_eq!(id.lease(), "capz-loadbalancer");
        assert_eq!(id.finalizer(), "loadbalancer.infrastructure.cluster.x-k8s.io");
    }
}
