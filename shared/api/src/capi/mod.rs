//! Read-only views of the Cluster API objects the controllers read, at the version Cluster API
//! v1.14 stores: `cluster.x-k8s.io/v1beta2`.
//!
//! Only the fields capz-rs reads are modelled; unknown fields are ignored on the way in. These
//! types are for reading: never send one back to the API server, it would drop everything else.

mod cluster;
mod machine;
mod machinepool;

pub use cluster::{
    Cluster, ClusterInitialization, ClusterNetwork, ClusterSpec, ClusterStatus, NetworkRanges,
};
pub use machine::{Bootstrap, Machine, MachineNodeReference, MachineSpec, MachineStatus};
pub use machinepool::{
    MachinePool, MachinePoolMachineSpec, MachinePoolSpec, MachinePoolStatus, MachineTemplateSpec,
};

use serde::{Deserialize, Serialize};

/// The API group of Cluster API's core kinds.
pub const GROUP: &str = "cluster.x-k8s.io";
/// The version of Cluster API's kinds read by capz-rs.
pub const VERSION: &str = "v1beta2";

/// The label Cluster API puts on every object of a cluster, naming the cluster.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// The label Cluster API puts on control-plane Machines (and their infrastructure machines).
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// The annotation pausing one object.
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// The annotation marking infrastructure whose owner is not the provider.
pub const MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/managed-by";
/// The annotation Cluster API's topology controller puts on the objects it dry-runs.
pub const TOPOLOGY_DRY_RUN_ANNOTATION: &str = "topology.cluster.x-k8s.io/dry-run";
/// The API server port of a cluster whose `spec.clusterNetwork.apiServerPort` is unset.
pub const DEFAULT_API_SERVER_PORT: i32 = 6443;

/// A reference to a provider object, as Cluster API v1beta2 writes it (API group without version).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContractVersionedObjectReference {
    /// API group of the referenced object, for example `infrastructure.cluster.x-k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// Kind of the referenced object.
    #[serde(default)]
    pub kind: String,
    /// Name of the referenced object, in the referrer's namespace.
    #[serde(default)]
    pub name: String,
}

impl ContractVersionedObjectReference {
    /// Whether the reference names an object of the given group and kind.
    #[must_use]
    pub fn is(&self, api_group: &str, kind: &str) -> bool {
        self.api_group == api_group && self.kind == kind
    }
}
