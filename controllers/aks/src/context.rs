//! The aks controller's identity and what its reconciles share.

use capz_api::AzureManagedControlPlane;
use capz_api::capi::{Cluster, MachinePool};
use capz_api::controllers::Family;
use capz_kit::controller::ControllerId;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Aks);

/// The annotation by which a MachinePool says that an autoscaler outside Cluster API (AKS's
/// cluster autoscaler) sets its replicas (Cluster API's).
pub(crate) const REPLICAS_MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/replicas-managed-by";

/// What every reconcile shares: the client, the identities, the feature gates and the default
/// subscription, as every cluster-level controller has them.
pub(crate) type State = capz_kit::azure_cluster::Shared;

/// What an AzureManagedMachinePool belongs to.
pub(crate) struct Found {
    pub(crate) pool: MachinePool,
    pub(crate) cluster: Cluster,
    /// The control plane, once the Cluster names one that exists.
    pub(crate) control_plane: Option<AzureManagedControlPlane>,
}
