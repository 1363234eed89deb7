use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::ContractVersionedObjectReference;

/// The fields of a Cluster API `Machine` that capz-rs reads.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Machine",
    namespaced,
    status = "MachineStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// Name of the Cluster the machine belongs to.
    #[serde(default)]
    pub cluster_name: String,

    /// Where the machine's bootstrap data comes from.
    #[serde(default)]
    pub bootstrap: Bootstrap,

    /// The infrastructure provider's object (an AzureMachine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,

    /// The Kubernetes version the machine runs, for example `v1.34.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// The provider ID of the machine's node, copied from the infrastructure object.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,

    /// The failure domain (availability zone) the machine is placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
}

/// The bootstrap part of a machine or machine template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// The bootstrap provider's object (for example a KubeadmConfig).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_ref: Option<ContractVersionedObjectReference>,

    /// Name of the Secret whose key `value` holds the bootstrap data (cloud-init or Ignition),
    /// once the bootstrap provider has rendered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_name: Option<String>,
}

/// The status fields of a `Machine` that capz-rs reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The workload cluster's Node of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<MachineNodeReference>,

    /// The machine's lifecycle phase, for example `Provisioning` or `Running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// A reference to a workload cluster's Node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineNodeReference {
    /// Name of the Node.
    #[serde(default)]
    pub name: String,
}

impl Machine {
    /// The name of the bootstrap data Secret, once the bootstrap provider has written it.
    #[must_use]
    pub fn bootstrap_data_secret_name(&self) -> Option<&str> {
        self.spec.bootstrap.data_secret_name.as_deref()
    }
}
