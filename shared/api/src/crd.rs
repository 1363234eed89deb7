//! The CustomResourceDefinitions of every kind, as they are installed on a management cluster.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;

use crate::{AzureCluster, AzureClusterIdentity, AzureClusterTemplate, AzureMachine, AzureMachinePool, AzureMachinePoolMachine, AzureMachineTemplate};

/// One generated CRD and the file name it is committed under in `deploy/crds`.
#[derive(Debug)]
pub struct CrdFile {
    /// File name, `<group>_<plural>.yaml` as Cluster API providers name them.
    pub file_name: String,
    /// The definition.
    pub crd: CustomResourceDefinition,
}

/// Every CRD of the API, in a stable order.
///
/// # Errors
/// Fails only if a generated definition does not survive a JSON round trip, a bug in the types.
pub fn all() -> Result<Vec<CrdFile>, serde_json::Error> {
    [
        AzureClusterIdentity::crd(),
        // self-managed kinds
        AzureCluster::crd(),
        AzureClusterTemplate::crd(),
        AzureMachine::crd(),
        AzureMachineTemplate::crd(),
        AzureMachinePool::crd(),
        AzureMachinePoolMachine::crd(),
        // managed (AKS) kinds
        crate::AzureManagedControlPlane::crd(),
        crate::AzureManagedControlPlaneTemplate::crd(),
        crate::AzureManagedCluster::crd(),
        crate::AzureManagedClusterTemplate::crd(),
        crate::AzureManagedMachinePool::crd(),
        crate::AzureManagedMachinePoolTemplate::crd(),
    ]
    .into_iter()
    .map(|crd| {
        Ok(CrdFile {
            file_name: format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural),
            crd: tidy(crd)?,
        })
    })
    .collect()
}

/// Renders a CRD as the YAML committed under `deploy/crds`.
///
/// # Errors
/// Fails only if the definition cannot be serialized, which would be a bug in the types.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_saphyr::ser::Error> {
    serde_saphyr::to_string(crd)
}

/// Removes what schema generation adds but the API server does not need.
///
/// `nullable` is dropped because CAPZ's schemas do not accept explicit nulls either: the API server
/// prunes a null sent for a non-nullable field, which is what a manifest author means.
fn tidy(crd: CustomResourceDefinition) -> Result<CustomResourceDefinition, serde_json::Error> {
    let mut value = serde_json::to_value(crd)?;
    if let Some(versions) = value.pointer_mut("/spec/versions") {
        strip_nullable(versions);
    }
    serde_json::from_value(value)
}

fn strip_nullable(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            map.values_mut().for_each(strip_nullable);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nullable),
        _ => {}
    }
}
