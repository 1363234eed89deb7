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
//! A failed reconcile that still wrote its object's status moved the object on: its backoff
//! starts afresh, so faults that come and go while work progresses never add up to a long wait.
//! The wrapper learns both from [`crate::observed`], and publishes each Azure resource the
//! reconcile created, updated or deleted as a Normal event on the object.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
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
use crate::observed::observed;
use crate::policy::{Backoff, Classify};
use crate::queue::Queue;
use crate::report::Reporter;
use crate::runner::{Context, Shutdown};
use crate::telemetry::reconcile_span;

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
    pub(crate) queue: Arc<Queue>,
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
            wrapped.queue.start(&key);
            let started = std::time::Instant::now();
            let _worker = Worker::start(wrapped.label);
            let timer = ReconcileTimer::start(wrapped.id.name(), wrapped.kind, wrapped.label);
            let outcome = observed((wrapped.reconcile)(object.clone(), wrapped.state.clone())).await;
            wrapped.queue.worked(started.elapsed());
            (timer, outcome)
        };
        let leading = wrapped
            .leadership
            .while_leading(wrapped.shutdown.triggered(), run);
        let Some((timer, (outcome, progressed, changes))) = leading.await else {
            tracing::debug!("not leading: the reconcile is left to the leader");
            return Ok(Action::requeue(AFTER_LOST_LEADERSHIP));
        };
        for change in changes {
            let note = format!(
                "{} {} {}",
                change.verb.reason(),
                change.id.resource_type(),
                change.id
            );
            // The recorder aggregates events by object, reason and action: the action names the
            // resource, so that each resource gets an event of its own (and its repeats none).
            let action = event_action(change.verb.action(), &change.id);
            wrapped
                .reporter
                .normal(&*object, &change.verb.reason(), &action, note)
                .await;
        }
        Ok(match outcome {
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

/// An event's action for `verb` on the resource `id`: `Create Microsoft.Network/virtualNetworks/vnet`,
/// within the 128 characters Kubernetes allows.
fn event_action(verb: &str, id: &capz_azure::ResourceId) -> String {
    const LONGEST: usize = 128;
    let mut action = format!("{verb} {}/{}", id.resource_type(), id.name());
    if action.len() > LONGEST {
        let mut end = LONGEST;
        while !action.is_char_boundary(end) {
            end -= 1;
        }
        action.truncate(end);
    }
    action
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
    use super::event_action;

    #[test]
    fn an_event_action_names_its_resource_within_the_limit() {
        let id: capz_azure::ResourceId =
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/node-subnet"
                .parse()
                .unwrap();
        assert_eq!(
            event_action("Create", &id),
            "Create Microsoft.Network/virtualNetworks/subnets/node-subnet"
        );
        let long: capz_azure::ResourceId = format!(
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/{}",
            "v".repeat(120)
        )
        .parse()
        .unwrap();
        let action = event_action("Delete", &long);
        assert_eq!(action.len(), 128);
        assert!(
            action.starts_with("Delete Microsoft.Network/virtualNetworks/vvv"),
            "{action}"
        );
    }
}
