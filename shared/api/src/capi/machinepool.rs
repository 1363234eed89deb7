use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::{Bootstrap, ContractVersionedObjectReference};

/// The fields of a Cluster API `MachinePool` that capz-rs reads.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "MachinePool",
    namespaced,
    status = "MachinePoolStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct MachinePoolSpec {
    /// Name of the Cluster the pool belongs to.
    #[serde(default)]
    pub cluster_name: String,

    /// Desired number of machines; absent while an autoscaler owns the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// The machines of the pool.
    #[serde(default)]
    pub template: MachineTemplateSpec,

    /// The failure domains the pool's machines may be spread over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domains: Option<Vec<String>>,
}

/// The machine template of a MachinePool (its `spec.template`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineTemplateSpec {
    /// The spec of the pool's machines.
    #[serde(default)]
    pub spec: MachinePoolMachineSpec,
}

/// The fields of a MachinePool's machine spec that capz-rs reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachinePoolMachineSpec {
    /// Where the machines' bootstrap data comes from.
    #[serde(default)]
    pub bootstrap: Bootstrap,

    /// The infrastructure provider's object (an AzureMachinePool or AzureManagedMachinePool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,

    /// The Kubernetes version of the pool's machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The status fields of a `MachinePool` that capz-rs reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachinePoolStatus {
    /// Number of machines the pool currently has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// The pool's lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}
