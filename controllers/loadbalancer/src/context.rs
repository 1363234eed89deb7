//! The loadbalancer controller's identity and what its reconciles share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use capz_kit::api::AzureCluster;
use capz_kit::api::controllers::Family;
use capz_kit::azure::ResourceId;
use capz_kit::controller::ControllerId;
use capz_kit::identity::Identities;
use capz_kit::kube::Client;
use capz_kit::presence::Presence;
use capz_kit::scope::ClusterScope;
use capz_resources::inbound_nat_rule::ApiServerFrontend;
use capz_rules::Features;

/// The controller's names: binary, field manager, finalizer (on AzureClusters and on the
/// AzureMachines that get an SSH rule), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::LoadBalancer);

/// What every reconcile shares.
pub(crate) struct State {
    pub(crate) client: Client,
    pub(crate) identities: Identities,
    pub(crate) features: Features,
    /// `AZURE_SUBSCRIPTION_ID`, for clusters that name no subscription.
    pub(crate) subscription: Option<String>,
    /// Whether the network controller, whose conditions the balancers wait for, runs.
    pub(crate) presence: Presence,
}

/// What the reconciles of machines share.
pub(crate) struct Machines {
    pub(crate) state: Arc<State>,
    /// One lock per API server load balancer: its rules get their ports one machine at a time, or
    /// two machines could both see 22 free and take it.
    pub(crate) balancers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Machines {
    pub(crate) fn lock_of(&self, balancer: &ResourceId) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.balancers.lock().unwrap_or_else(PoisonError::into_inner);
        locks
            .entry(balancer.to_string().to_ascii_lowercase())
            .or_default()
            .clone()
    }
}

/// A machine's AzureCluster, with its defaults, and where its SSH rules sit (`None` when its
/// machines get none).
pub(crate) struct Site {
    pub(crate) azure_cluster: AzureCluster,
    pub(crate) scope: ClusterScope,
    pub(crate) target: Option<ApiServerFrontend>,
}
