//! One sink for what reconciles conclude: a log line and, for what users should see, a Kubernetes
//! event on the object (`kubectl describe` and `kubectl get events` show them).
//!
//! Events are `events.k8s.io/v1` Events. The same event again (same object, type, reason and
//! action) within [`SERIES_WINDOW`] becomes a count on the first one's `series` instead of a new
//! Event, as Kubernetes' own recorders do. kube-runtime's recorder does this too, but keeps every
//! Event it sent in full for the window and scans them all on each publish: a controller creating
//! a thousand machines' resources held megabytes of Events it would never repeat. This one keeps
//! a hash and the Event's name per series, and prunes the expired ones once per window.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::conditions::Reason;
use crate::policy::{Category, Classify};

/// How long a repeat of an event counts on the first one's series (kube-runtime's window).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// Whether an event is for information or asks for attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// An Event sent, which repeats count on.
struct Series {
    namespace: String,
    name: String,
    count: i32,
    last: Timestamp,
}

/// The series of the events sent within the window, by a hash of what makes events the same.
#[derive(Default)]
struct Sent {
    series: HashMap<u64, Series>,
    pruned: Option<Timestamp>,
}

/// Publishes a controller's events under its name.
#[derive(Clone)]
pub struct Reporter {
    client: kube::Client,
    controller: String,
    instance: String,
    sent: Arc<Mutex<Sent>>,
}

impl Reporter {
    /// A reporter for `controller` (its field manager name, `capz-<family>`).
    #[must_use]
    pub fn new(client: kube::Client, controller: &str) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: std::env::var("POD_NAME").unwrap_or_else(|_| controller.to_owned()),
            sent: Arc::default(),
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
        let sent: kube::Result<()> = async {
            let now = Timestamp::now();
            let key = {
                let mut hasher = DefaultHasher::new();
                (
                    &regarding.uid,
                    &regarding.namespace,
                    &regarding.name,
                    &regarding.kind,
                )
                    .hash(&mut hasher);
                (type_, reason.as_str(), action).hash(&mut hasher);
                hasher.finish()
            };
            let repeat = self.repeat(key, now);
            // Cluster-scoped objects' events go to `default`, as Kubernetes' recorders put them.
            let namespace = regarding
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned());
            if let Some((namespace, name, count)) = repeat {
                let series = serde_json::json!({"series": EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                }});
                let counted = Api::<Event>::namespaced(self.client.clone(), &namespace)
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                    .await;
                if counted.is_err() {
                    // Gone or refused: the next repeat starts a series of its own.
                    self.lock().series.remove(&key);
                }
                return counted.map(drop);
            }
            let name = format!(
                "{}.{:x}",
                regarding.name.as_deref().unwrap_or(&self.controller),
                now.as_nanosecond()
            );
            let event = Event {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    ..ObjectMeta::default()
                },
                action: Some(action.to_owned()),
                reason: Some(reason.as_str().to_owned()),
                note: Some(note),
                type_: Some(type_.as_str().to_owned()),
                event_time: Some(MicroTime(now)),
                regarding: Some(regarding.clone()),
                reporting_controller: Some(self.controller.clone()),
                reporting_instance: Some(self.instance.clone()),
                ..Event::default()
            };
            Api::<Event>::namespaced(self.client.clone(), &namespace)
                .create(&PostParams::default(), &event)
                .await?;
            self.lock().series.insert(
                key,
                Series {
                    namespace,
                    name,
                    count: 1,
                    last: now,
                },
            );
            Ok(())
        }
        .await;
        // An event that cannot be published is not worth failing a reconcile over.
        if let Err(error) = sent {
            tracing::debug!(%error, "cannot publish an event");
        }
    }

    /// The namespace, name and new count of the series the event `key` repeats, if it is within
    /// the window; the series is counted on. Expired series are dropped once per window.
    fn repeat(&self, key: u64, now: Timestamp) -> Option<(String, String, i32)> {
        let mut sent = self.lock();
        if sent.pruned.is_none_or(|pruned| pruned + SERIES_WINDOW <= now) {
            sent.series.retain(|_, series| series.last + SERIES_WINDOW > now);
            sent.pruned = Some(now);
        }
        let series = sent
            .series
            .get_mut(&key)
            .filter(|series| series.last + SERIES_WINDOW > now)?;
        series.count += 1;
        series.last = now;
        Some((series.namespace.clone(), series.name.clone(), series.count))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sent> {
        self.sent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
