//! The compute controller's identity and what its reconciles share.

use capz_api::AzureCluster;
use capz_api::capi::{Cluster, Machine};
use capz_api::controllers::Family;
use capz_kit::cluster::Owners;
use capz_kit::controller::ControllerId;
use capz_kit::identity::Identities;
use capz_kit::presence::Presence;
use capz_rules::Features;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Compute);

/// What every reconcile shares.
pub(crate) struct State {
    pub(crate) client: capz_kit::kube::Client,
    pub(crate) identities: Identities,
    pub(crate) fallback_subscription: Option<String>,
    pub(crate) features: Features,
    /// Whether the network and loadbalancer controllers, whose conditions machines wait for, run.
    pub(crate) presence: Presence,
    /// Each machine's Machine, Cluster and AzureCluster.
    pub(crate) owners: Owners,
}

/// What an AzureMachine belongs to.
pub(crate) struct Found {
    pub(crate) machine: Machine,
    pub(crate) cluster: Cluster,
    pub(crate) azure_cluster: Option<AzureCluster>,
}
