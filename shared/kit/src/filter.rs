//! Which watch events wake a controller.
//!
//! [`changes`] gives a hash of exactly what a controller reacts to on an object: the spec
//! generation, deletion and finalizers, owner references, the pause and managed-by annotations,
//! and the type and status of the conditions it depends on. kube-runtime's `predicate_filter`
//! drops every event whose hash did not change, so a peer's status write wakes the controllers
//! that depend on the condition it changed, while a controller's own status writes (conditions it
//! does not depend on, operation entries, status fields) do not wake it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use capz_api::common::conditions::{ConditionType, Conditions};
use capz_api::common::operations::Futures;
use kube::{Resource, ResourceExt as _};

use crate::cluster::{MANAGED_BY_ANNOTATION, PAUSED_ANNOTATION};

/// A kind that reports conditions and long-running operations in its status.
pub trait Reported: Resource {
    /// Its conditions, if it has a status.
    fn conditions(&self) -> Option<&Conditions>;
    /// Its operations in flight, if it has a status.
    fn operations(&self) -> Option<&Futures>;

    /// Whether its condition `type_` holds.
    fn holds(&self, type_: &ConditionType) -> bool {
        self.conditions()
            .is_some_and(|conditions| conditions.is_true(type_))
    }
}

macro_rules! reported {
    ($($kind:ty),* $(,)?) => {$(
        impl Reported for $kind {
            fn conditions(&self) -> Option<&Conditions> {
                self.status.as_ref().map(|status| &status.conditions)
            }
            fn operations(&self) -> Option<&Futures> {
                self.status.as_ref().map(|status| &status.long_running_operation_states)
            }
        }
    )*};
}

reported!(
    capz_api::AzureCluster,
    capz_api::AzureMachine,
    capz_api::AzureMachinePool,
    capz_api::AzureMachinePoolMachine,
    capz_api::AzureManagedControlPlane,
    capz_api::AzureManagedMachinePool,
);

/// An AKS infrastructure cluster reports `ready` only.
impl Reported for capz_api::AzureManagedCluster {
    fn conditions(&self) -> Option<&Conditions> {
        None
    }
    fn operations(&self) -> Option<&Futures> {
        None
    }
}

/// An identity reports conditions only.
impl Reported for capz_api::AzureClusterIdentity {
    fn conditions(&self) -> Option<&Conditions> {
        self.status.as_ref().map(|status| &status.conditions)
    }
    fn operations(&self) -> Option<&Futures> {
        None
    }
}

/// A hash of what wakes a controller depending on the conditions `depends_on`: use it as the
/// predicate of `predicate_filter`.
pub fn changes<K: Reported>(depends_on: &'static [ConditionType]) -> impl Fn(&K) -> Option<u64> + Clone {
    move |object: &K| {
        let mut hasher = DefaultHasher::new();
        hash_lifecycle(object, &mut hasher);
        for annotation in [PAUSED_ANNOTATION, MANAGED_BY_ANNOTATION] {
            object.annotations().get(annotation).hash(&mut hasher);
        }
        for type_ in depends_on {
            object
                .conditions()
                .and_then(|conditions| conditions.get(type_))
                .map(|condition| condition.status)
                .hash(&mut hasher);
        }
        Some(hasher.finish())
    }
}

/// A hash of everything but the status: the spec generation, deletion, finalizers, owner
/// references, labels and annotations. For controllers that read nothing from the status of the
/// kind they watch, so that status writes (their own, or a peer's) never wake them.
#[must_use]
pub fn everything_but_status<K: Resource>(object: &K) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    hash_lifecycle(object, &mut hasher);
    object.labels().hash(&mut hasher);
    object.annotations().hash(&mut hasher);
    Some(hasher.finish())
}

/// The spec generation, deletion, finalizers and owners: what every controller reacts to.
fn hash_lifecycle<K: Resource>(object: &K, hasher: &mut DefaultHasher) {
    object.meta().generation.hash(hasher);
    hash_ownership(object, None, hasher);
}

/// Deletion, the finalizers but `own` (a controller's own, which it adds itself in a pass that
/// goes on), and the owner references. For a controller that hashes the spec itself in place of
/// the generation.
pub fn hash_ownership<K: Resource>(object: &K, own: Option<&str>, hasher: &mut DefaultHasher) {
    object.meta().deletion_timestamp.is_some().hash(hasher);
    object
        .finalizers()
        .iter()
        .filter(|finalizer| Some(finalizer.as_str()) != own)
        .for_each(|finalizer| finalizer.hash(hasher));
    for owner in object.owner_references() {
        (&owner.uid, &owner.kind, &owner.name).hash(hasher);
    }
}

/// A hash of what a cluster-level controller reacts to on a Cluster: its spec (pause, API server
/// port, infrastructure reference) and the pause annotation, not the status Cluster API keeps
/// writing. Use it as the predicate of a `Cluster` watch.
#[must_use]
pub fn cluster_changes(cluster: &capz_api::capi::Cluster) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    cluster.meta().generation.hash(&mut hasher);
    cluster.annotations().get(PAUSED_ANNOTATION).hash(&mut hasher);
    Some(hasher.finish())
}

/// Remembers, per object, a hash of the fields a controller reacts to.
#[derive(Debug, Default)]
pub struct Seen(Mutex<HashMap<String, u64>>);

impl Seen {
    /// Whether `fields` of `object` differ from the last time (always true the first time).
    pub fn changed(&self, object: &impl Resource, fields: impl Hash) -> bool {
        let mut hasher = DefaultHasher::new();
        fields.hash(&mut hasher);
        let hash = hasher.finish();
        let key = object.uid().unwrap_or_else(|| object.name_any());
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, hash)
            != Some(hash)
    }

    /// Forgets `object`, once it is gone.
    pub fn forget(&self, object: &impl Resource) {
        let key = object.uid().unwrap_or_else(|| object.name_any());
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use capz_api::common::conditions::{Condition, ConditionStatus};
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn cluster(conditions: &[(ConditionType, ConditionStatus, &str)]) -> capz_api::AzureCluster {
        let mut cluster: capz_api::AzureCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c", "namespace": "n", "generation": 1},
            "spec": {"location": "westeurope", "resourceGroup": "c"},
        }))
        .unwrap();
        let mut status = capz_api::azurecluster::AzureClusterStatus::default();
        status.conditions = Conditions(
            conditions
                .iter()
                .map(|(type_, status, reason)| Condition {
                    type_: type_.clone(),
                    status: *status,
                    severity: None,
                    last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                    reason: Some((*reason).to_owned()),
                    message: None,
                })
                .collect(),
        );
        cluster.status = Some(status);
        cluster
    }

    #[test]
    fn only_what_the_controller_depends_on_changes_the_hash() {
        const DEPENDS_ON: &[ConditionType] = &[ConditionType::SUBNETS_READY];
        let hash = changes::<capz_api::AzureCluster>(DEPENDS_ON);
        let base = cluster(&[(ConditionType::SUBNETS_READY, ConditionStatus::False, "Creating")]);

        // Its own condition, a new reason on a condition it depends on, status fields: no wake.
        let own = cluster(&[
            (ConditionType::SUBNETS_READY, ConditionStatus::False, "Creating"),
            (ConditionType::LOAD_BALANCERS_READY, ConditionStatus::True, ""),
        ]);
        assert_eq!(hash(&base), hash(&own));
        let reworded = cluster(&[(ConditionType::SUBNETS_READY, ConditionStatus::False, "Updating")]);
        assert_eq!(hash(&base), hash(&reworded));
        let mut ready = base.clone();
        if let Some(status) = ready.status.as_mut() {
            status.ready = Some(true);
        }
        assert_eq!(hash(&base), hash(&ready));

        // What it depends on, the spec, deletion, finalizers and pausing: a wake.
        let subnets = cluster(&[(ConditionType::SUBNETS_READY, ConditionStatus::True, "")]);
        assert_ne!(hash(&base), hash(&subnets));
        let mut spec = base.clone();
        spec.metadata.generation = Some(2);
        assert_ne!(hash(&base), hash(&spec));
        let mut finalized = base.clone();
        finalized.metadata.finalizers = Some(vec!["network.infrastructure.cluster.x-k8s.io".into()]);
        assert_ne!(hash(&base), hash(&finalized));
        let mut deleted = base.clone();
        deleted.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert_ne!(hash(&base), hash(&deleted));
        let mut paused = base.clone();
        paused.metadata.annotations = Some([(PAUSED_ANNOTATION.to_owned(), String::new())].into());
        assert_ne!(hash(&base), hash(&paused));
    }

    #[test]
    fn everything_but_the_status_changes_the_whole_object_hash() {
        let base = cluster(&[(ConditionType::SUBNETS_READY, ConditionStatus::False, "Creating")]);
        let hash = everything_but_status::<capz_api::AzureCluster>;
        let written = cluster(&[(ConditionType::READY, ConditionStatus::True, "")]);
        assert_eq!(hash(&base), hash(&written));

        let mut labelled = base.clone();
        labelled.metadata.labels =
            Some([("cluster.x-k8s.io/cluster-name".to_owned(), "c".to_owned())].into());
        assert_ne!(hash(&base), hash(&labelled));
        let mut annotated = base.clone();
        annotated.metadata.annotations = Some([("example.com/any".to_owned(), String::new())].into());
        assert_ne!(hash(&base), hash(&annotated));
        let mut spec = base.clone();
        spec.metadata.generation = Some(2);
        assert_ne!(hash(&base), hash(&spec));
        let mut deleted = base.clone();
        deleted.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert_ne!(hash(&base), hash(&deleted));
    }

    #[test]
    fn seen_tells_only_a_change_of_the_fields() {
        let seen = Seen::default();
        let mut object = ConfigMap::default();
        object.metadata.uid = Some("u1".into());
        assert!(seen.changed(&object, ("a", 1)));
        assert!(!seen.changed(&object, ("a", 1)));
        assert!(seen.changed(&object, ("a", 2)));
        seen.forget(&object);
        assert!(seen.changed(&object, ("a", 2)));
    }
}
