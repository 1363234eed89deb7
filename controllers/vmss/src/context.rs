//! The vmss controller's identity and what its reconciles share.

use capz_api::capi::{Cluster, MachinePool};
use capz_api::controllers::Family;
use capz_api::{AzureCluster, AzureMachinePoolMachine};
use capz_kit::controller::ControllerId;
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::core::PartialObjectMeta;
use capz_kit::presence::Presence;
use capz_kit::runner::{self, BoxError};
use capz_kit::workload::Workloads;
use capz_rules::Features;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Vmss);

/// The label naming the AzureMachinePool of an AzureMachinePoolMachine (CAPZ's).
pub(crate) const AZURE_POOL_LABEL: &str = "azuremachinepool.infrastructure.cluster.x-k8s.io/machine-pool";
/// The annotation recording the hash of the scale-set model an instance was created with.
pub(crate) const MODEL_ANNOTATION: &str = "vmss.infrastructure.cluster.x-k8s.io/model-hash";
/// The annotation on a Machine asking that it goes first when its pool scales down (Cluster API's).
pub(crate) const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";
/// The annotation by which a MachinePool says that an autoscaler outside Cluster API (Azure's
/// own autoscale on the set) sets its replicas (Cluster API's).
pub(crate) const REPLICAS_MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/replicas-managed-by";

/// What the watches of AzureMachinePoolMachines hold of each: its metadata, which the API server
/// sends alone (`PartialObjectMetadata`).
pub(crate) type MemberMeta = PartialObjectMeta<AzureMachinePoolMachine>;

/// What every reconcile shares.
pub(crate) struct State {
    pub(crate) client: capz_kit::kube::Client,
    /// The workload clusters, whose Nodes tell whether instances are ready.
    pub(crate) workloads: Workloads,
    pub(crate) identities: Identities,
    pub(crate) features: Features,
    pub(crate) fallback_subscription: Option<String>,
    /// Whether the network and loadbalancer controllers, whose conditions pools wait for, run.
    pub(crate) presence: Presence,
}

impl State {
    /// The state of the controller `ctx` runs, signing in as `settings` say.
    pub(crate) async fn new(ctx: &runner::Context, settings: IdentitySettings) -> Result<Self, BoxError> {
        let client = ctx.client();
        Ok(Self {
            fallback_subscription: settings.environment.subscription_id.clone(),
            identities: Identities::new(client.clone(), settings).await?,
            workloads: Workloads::new(client.clone()),
            features: ctx.args().feature_gates,
            presence: ctx.presence(),
            client,
        })
    }
}

/// What an AzureMachinePool belongs to.
pub(crate) struct Found {
    pub(crate) pool: MachinePool,
    pub(crate) cluster: Cluster,
    pub(crate) azure_cluster: Option<AzureCluster>,
}
