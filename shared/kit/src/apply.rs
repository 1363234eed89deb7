//! Server-side apply of the fields one controller owns.
//!
//! Each controller applies under its own field manager a partial object holding only what it
//! owns — its conditions, its long-running-operation entries, its status fields — never a status
//! it read. Because our CRDs declare `status.conditions` and `status.longRunningOperationStates`
//! as map lists, every manager owns its own entries: an entry a controller stops applying is
//! removed, the others' stay. Applies are not forced: two managers claiming the same field is a
//! design error, and the API server reports it as a conflict instead of letting one overwrite the
//! other.

use std::borrow::Cow;

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
        },
        spec,
        status,
    }
}

/// Applies `status` — a type holding only the status fields the caller owns — to `object`'s
/// status subresource under `manager`.
///
/// # Errors
/// The API server's refusal: a conflict when another manager owns one of the fields.
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
    api.patch_status(&object.name_any(), &manager.params(), &Patch::Apply(&body))
        .await
}

/// Applies `spec` — a type holding only the spec fields the caller owns, such as the
/// provider-written `controlPlaneEndpoint` or `providerID` — to `object` under `manager`.
///
/// # Errors
/// The API server's refusal: a conflict when another manager owns one of the fields.
pub async fn apply_spec<K, S>(api: &Api<K>, manager: &FieldManager, object: &K, spec: &S) -> kube::Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + std::fmt::Debug,
{
    let body = partial::<K, S, ()>(object, Some(spec), None);
    api.patch(&object.name_any(), &manager.params(), &Patch::Apply(&body))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use capz_api::AzureCluster;

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
