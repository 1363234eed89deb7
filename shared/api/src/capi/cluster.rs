use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::ContractVersionedObjectReference;
use crate::common::ApiEndpoint;

/// The fields of a Cluster API `Cluster` that capz-rs reads.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Whether reconciliation of the cluster and all its objects is paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,

    /// The cluster's network settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_network: Option<ClusterNetwork>,

    /// Where the API server is reached, copied by Cluster API from the infrastructure provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,

    /// The control-plane provider's object (for example an AzureManagedControlPlane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_ref: Option<ContractVersionedObjectReference>,

    /// The infrastructure provider's object (an AzureCluster or AzureManagedCluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractVersionedObjectReference>,
}

/// The network settings of a workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetwork {
    /// The port the API server listens on; 6443 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server_port: Option<i32>,

    /// Address ranges of Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<NetworkRanges>,

    /// Address ranges of Pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<NetworkRanges>,

    /// DNS domain of Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_domain: Option<String>,
}

/// A set of address ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRanges {
    /// The ranges, in CIDR notation.
    #[serde(default)]
    pub cidr_blocks: Vec<String>,
}

/// The status fields of a `Cluster` that capz-rs reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Which provisioning milestones the cluster has reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<ClusterInitialization>,

    /// The cluster's lifecycle phase, for example `Provisioning` or `Deleting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// Provisioning milestones of a `Cluster`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInitialization {
    /// Whether the infrastructure provider reported the cluster infrastructure ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_provisioned: Option<bool>,

    /// Whether the control plane can accept requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_initialized: Option<bool>,
}

impl Cluster {
    /// Whether reconciliation is paused through `spec.paused`.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.spec.paused.unwrap_or(false)
    }

    /// Whether Cluster API considers the cluster's infrastructure provisioned.
    #[must_use]
    pub fn infrastructure_provisioned(&self) -> bool {
        self.initialization()
            .and_then(|i| i.infrastructure_provisioned)
            .unwrap_or(false)
    }

    /// Whether the cluster's control plane is initialized.
    #[must_use]
    pub fn control_plane_initialized(&self) -> bool {
        self.initialization()
            .and_then(|i| i.control_plane_initialized)
            .unwrap_or(false)
    }

    /// The API server port of the cluster: `spec.clusterNetwork.apiServerPort`, else
    /// [`super::DEFAULT_API_SERVER_PORT`].
    #[must_use]
    pub fn api_server_port(&self) -> i32 {
        self.spec
            .cluster_network
            .as_ref()
            .and_then(|n| n.api_server_port)
            .unwrap_or(super::DEFAULT_API_SERVER_PORT)
    }

    fn initialization(&self) -> Option<&ClusterInitialization> {
        self.status.as_ref()?.initialization.as_ref()
    }
}
