//! The loadbalancer controller's identity and what its reconciles share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use capz_kit::api::AzureCluster;
use capz_kit::api::controllers::Family;
use capz_kit::azure::ResourceId;
use capz_kit::controller::ControllerId;
use capz_kit::scope::ClusterScope;
use capz_resources::inbound_nat_rule::ApiServerFrontend;

/// The controller's names: binary, field manager, finalizer (on AzureClusters and on the
/// AzureMachines that get an SSH rule), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::LoadBalancer);

/// What every reconcile shares: the management cluster, the identities, the feature gates, the
/// fallback subscription, and whether the network controller, whose conditions the balancers
/// wait for, runs.
pub(crate) type State = capz_kit::azure_cluster::Shared;

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
