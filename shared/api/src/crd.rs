//! The CustomResourceDefinitions of every kind, as they are installed on a management cluster.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::{
    AzureCluster, AzureClusterIdentity, AzureClusterTemplate, AzureMachine, AzureMachinePool,
    AzureMachinePoolMachine, AzureMachineTemplate, AzureManagedCluster, AzureManagedClusterTemplate,
    AzureManagedControlPlane, AzureManagedControlPlaneTemplate, AzureManagedMachinePool,
    AzureManagedMachinePoolTemplate,
};

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
        AzureCluster::crd(),
        AzureClusterTemplate::crd(),
        AzureMachine::crd(),
        AzureMachineTemplate::crd(),
        AzureMachinePool::crd(),
        AzureMachinePoolMachine::crd(),
        AzureManagedControlPlane::crd(),
        AzureManagedControlPlaneTemplate::crd(),
        AzureManagedCluster::crd(),
        AzureManagedClusterTemplate::crd(),
        AzureManagedMachinePool::crd(),
        AzureManagedMachinePoolTemplate::crd(),
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
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, RenderError> {
    let mut value = serde_json::to_value(crd)?;
    whole_bounds(&mut value);
    Ok(serde_saphyr::to_string(&value)?)
}

/// The name of the kustomization that lists the CRD files, so that `deploy/` overlays can include
/// the directory.
pub const KUSTOMIZATION: &str = "kustomization.yaml";

/// The kustomization listing `files`.
#[must_use]
pub fn kustomization(files: &[CrdFile]) -> String {
    let mut text = String::from(
        "# Generated with the CRDs by `just crds`; do not edit.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    for file in files {
        text.push_str("- ");
        text.push_str(&file.file_name);
        text.push('\n');
    }
    text
}

/// Why a CRD could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The definition did not convert to JSON.
    #[error("cannot convert the CRD to JSON")]
    Json(#[from] serde_json::Error),
    /// The definition did not convert to YAML.
    #[error("cannot write the CRD as YAML")]
    Yaml(#[from] serde_saphyr::ser::Error),
}

/// Writes integral `minimum`/`maximum` bounds as integers, as CAPZ's schemas do: the CRD model
/// keeps them as floating-point numbers, which would render as `24.0`.
fn whole_bounds(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let is_bound = matches!(key.as_str(), "minimum" | "maximum");
                match item.as_f64().filter(|_| is_bound) {
                    Some(bound) if bound.fract() == 0.0 && bound.abs() < 9.0e15 => {
                        #[expect(clippy::cast_possible_truncation, reason = "integral and in range")]
                        let whole = bound as i64;
                        *item = Value::from(whole);
                    }
                    // A property may itself be named `minimum`; its schema is an object.
                    _ => whole_bounds(item),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_bounds),
        _ => {}
    }
}

/// Brings a generated schema to the form CAPZ's schemas have.
///
/// - `nullable` is dropped: CAPZ's schemas do not accept explicit nulls either, and the API server
///   prunes a null sent for a non-nullable field, which is what a manifest author means.
/// - kube's structural rewrite empties the branches of an int-or-string `anyOf`; they get their
///   `integer` and `string` types back.
fn tidy(crd: CustomResourceDefinition) -> Result<CustomResourceDefinition, serde_json::Error> {
    let mut value = serde_json::to_value(crd)?;
    if let Some(versions) = value.pointer_mut("/spec/versions") {
        tidy_schema(versions);
    }
    serde_json::from_value(value)
}

fn tidy_schema(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
                map.insert(
                    "anyOf".into(),
                    json!([{ "type": "integer" }, { "type": "string" }]),
                );
            }
            map.values_mut().for_each(tidy_schema);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy_schema),
        _ => {}
    }
}
