//! Server-side apply of the fields one controller owns.
//!
//! Each controller applies under its own field manager a partial object holding only what it
//! owns — its conditions, its long-running-operation entries, its status fields — never a status
//! it read. Because our CRDs declare `status.conditions` and `status.longRunningOperationStates`
//! as map lists, every manager owns its own entries: an entry a controller stops applying is
//! removed, the others' stay. Applies are not forced: two capz-rs controllers claiming the same
//! field is a design error, and the API server reports it as a conflict instead of letting one
//! overwrite the other. A conflict only with managers outside capz-rs — CAPZ's manager on an
//! object it wrote before, or a person's `kubectl edit` — is resolved by applying again with
//! force: those fields are ours to write.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The name a controller applies under: `capz-<family>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldManager(&'static str);

impl FieldManager {
    /// The field manager `name`.
    #[must_use]
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    /// Its name.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        self.0
    }

    fn params(&self) -> PatchParams {
        PatchParams::apply(self.0)
    }
}

/// The prefix of every capz-rs field manager.
const OURS: &str = "capz-";

/// Whether `error` is an apply conflict with field managers none of which is capz-rs's.
fn conflicts_only_with_others(error: &kube::Error) -> bool {
    let kube::Error::Api(status) = error else {
        return false;
    };
    if status.code != 409 {
        return false;
    }
    // The API server names each conflicting manager as `conflict with "<manager>"` (one field)
    // or `conflicts with "<manager>"` (several).
    let managers: Vec<&str> = status
        .message
        .split("with \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    !managers.is_empty() && managers.iter().all(|manager| !manager.starts_with(OURS))
}

/// Applies `body` with `apply`, once more with force when the conflict is only with managers
/// outside capz-rs.
async fn apply_once_or_take_over<K, F, Fut>(manager: &FieldManager, apply: F) -> kube::Result<K>
where
    F: Fn(PatchParams) -> Fut,
    Fut: Future<Output = kube::Result<K>>,
{
    match apply(manager.params()).await {
        Err(error) if conflicts_only_with_others(&error) => apply(manager.params().force()).await,
        outcome => outcome,
    }
}

/// A partial object of kind `K` for server-side apply: its identity plus what the caller owns.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Partial<'a, S, T> {
    api_version: Cow<'static, str>,
    kind: Cow<'static, str>,
    metadata: PartialMeta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a T>,
}

#[derive(Debug, Serialize)]
struct PartialMeta<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a BTreeMap<String, String>>,
}

fn partial<'a, K, S, T>(object: &'a K, spec: Option<&'a S>, status: Option<&'a T>) -> Partial<'a, S, T>
where
    K: Resource<DynamicType = ()>,
{
    Partial {
        api_version: K::api_version(&()),
        kind: K::kind(&()),
        metadata: PartialMeta {
            name: object.meta().name.as_deref().unwrap_or_default(),
            namespace: object.meta().namespace.as_deref(),
            annotations: None,
        },
        spec,
        status,
    }
}

/// Applies `status` — a type holding only the status fields the caller owns — to `object`'s
/// status subresource under `manager`.
///
/// # Errors
/// The API server's refusal: a conflict when another capz-rs controller owns one of the fields.
pub async fn apply_status<K, T>(
    api: &Api<K>,
    manager: &FieldManager,
    object: &K,
    status: &T,
) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    T: Serialize + std::fmt::Debug,
{
    let body = partial::<K, (), T>(object, None, Some(status));
    let name = object.name_any();
    let applied = apply_once_or_take_over(manager, |params| {
        let (name, body) = (&name, &body);
        async move { api.patch_status(name, &params, &Patch::Apply(body)).await }
    })
    .await?;
    crate::observed::status_written(
        applied.meta().uid.as_deref(),
        applied.meta().resource_version.as_deref(),
    );
    Ok(applied)
}

/// Applies `spec` — a type holding only the spec fields the caller owns, such as the
/// provider-written `controlPlaneEndpoint` or `providerID` — to `object` under `manager`.
///
/// # Errors
/// The API server's refusal: a conflict when another capz-rs controller owns one of the fields.
pub async fn apply_spec<K, S>(api: &Api<K>, manager: &FieldManager, object: &K, spec: &S) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + std::fmt::Debug,
{
    let body = partial::<K, S, ()>(object, Some(spec), None);
    let name = object.name_any();
    apply_once_or_take_over(manager, |params| {
        let (name, body) = (&name, &body);
        async move { api.patch(name, &params, &Patch::Apply(body)).await }
    })
    .await
}

/// Applies `annotations` — every annotation the caller owns on `object`, so one it no longer
/// sends is removed — under `manager`.
///
/// # Errors
/// The API server's refusal: a conflict when another capz-rs controller owns one of them.
pub async fn apply_annotations<K>(
    api: &Api<K>,
    manager: &FieldManager,
    object: &K,
    annotations: &BTreeMap<String, String>,
) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut body = partial::<K, (), ()>(object, None, None);
    body.metadata.annotations = Some(annotations);
    let name = object.name_any();
    apply_once_or_take_over(manager, |params| {
        let (name, body) = (&name, &body);
        async move { api.patch(name, &params, &Patch::Apply(body)).await }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use capz_api::AzureCluster;

    fn conflict(message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status {
            code: 409,
            message: message.to_owned(),
            ..kube::core::Status::default()
        }))
    }

    #[test]
    fn only_conflicts_with_managers_outside_capz_rs_are_taken_over() {
        assert!(conflicts_only_with_others(&conflict(
            r#"Apply failed with 1 conflict: conflict with "manager" using infrastructure.cluster.x-k8s.io/v1beta1: .status.conditions[type="Ready"].status"#
        )));
        assert!(!conflicts_only_with_others(&conflict(
            r#"Apply failed with 1 conflict: conflict with "capz-network": .status.conditions[type="Ready"].status"#
        )));
        assert!(!conflicts_only_with_others(&conflict(
            "Apply failed with 2 conflicts: conflicts with \"kubectl-edit\":\n- .status.ready\nconflicts with \"capz-compute\":\n- .spec.providerID"
        )));
        assert!(!conflicts_only_with_others(&conflict(
            "the object has been modified"
        )));
    }

    #[derive(Debug, Serialize)]
    struct Owned {
        ready: bool,
    }

    #[test]
    fn the_partial_object_holds_identity_and_the_owned_fields_only() {
        let cluster: AzureCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "team-a", "labels": {"a": "b"}},
            "spec": {"location": "westeurope", "resourceGroup": "c1"},
            "status": {"ready": false},
        }))
        .unwrap();
        let body =
            serde_json::to_value(partial::<_, (), _>(&cluster, None, Some(&Owned { ready: true }))).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "AzureCluster",
                "metadata": {"name": "c1", "namespace": "team-a"},
                "status": {"ready": true},
            })
        );
    }
}
