//! One sink for what reconciles conclude: a log line and, for what users should see, a Kubernetes
//! event on the object (`kubectl describe` and `kubectl get events` show them).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter as EventReporter};

use crate::conditions::Reason;
use crate::policy::{Category, Classify};

/// Publishes a controller's events under its name.
#[derive(Clone)]
pub struct Reporter {
    recorder: Recorder,
}

impl Reporter {
    /// A reporter for `controller` (its field manager name, `capz-<family>`).
    #[must_use]
    pub fn new(client: kube::Client, controller: &str) -> Self {
        let reporter = EventReporter {
            controller: controller.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Reports a failed reconcile of `object`: a log line, and a warning event unless the
    /// failure is only a wait (throttling) that users need not act on.
    pub async fn failed<K, E>(&self, object: &K, action: &str, error: &E)
    where
        K: Resource<DynamicType = ()>,
        E: Classify,
    {
        let regarding = object.object_ref(&());
        tracing::warn!(
            category = error.category().as_str(),
            reason = %error.reason(),
            error = %error,
            "reconcile failed"
        );
        if error.category() != Category::Throttled {
            self.publish(
                &regarding,
                EventType::Warning,
                &error.reason(),
                action,
                error.to_string(),
            )
            .await;
        }
    }

    /// Reports something users may want to know that went well (a resource created, deleted)
    /// about the object `regarding`.
    pub async fn normal(&self, regarding: &ObjectReference, reason: &Reason, action: &str, note: String) {
        tracing::info!(reason = %reason, note, "{action}");
        self.publish(regarding, EventType::Normal, reason, action, note)
            .await;
    }

    /// Reports something users must act on that is not a failed reconcile about the object
    /// `regarding`.
    pub async fn warning(&self, regarding: &ObjectReference, reason: &Reason, action: &str, note: String) {
        tracing::warn!(reason = %reason, note, "{action}");
        self.publish(regarding, EventType::Warning, reason, action, note)
            .await;
    }

    async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: EventType,
        reason: &Reason,
        action: &str,
        note: String,
    ) {
        let event = Event {
            type_,
            reason: reason.as_str().to_owned(),
            note: Some(note),
            action: action.to_owned(),
            secondary: None,
        };
        // An event that cannot be published is not worth failing a reconcile over.
        if let Err(error) = self.recorder.publish(&event, regarding).await {
            tracing::debug!(%error, "cannot publish an event");
        }
    }
}
