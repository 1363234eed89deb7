//! The network controller: for every AzureCluster, the resource group, virtual network, security
//! groups, route tables, NAT gateways (with their public IPs) and subnets, in that order, and the
//! AzureCluster roll-up (`Ready`, `status.ready`, `status.failureDomains`).
//!
//! ```text
//!   AzureCluster ── externally managed, paused, no Cluster yet ──▶ left alone   (reconcile)
//!     │ finalizer network.infrastructure.cluster.x-k8s.io
//!     ├─ live:     plan::ORDER, one read per resource, a write when it differs  (apply)
//!     │            status::ready   own conditions + peers' + controlPlaneEndpoint
//!     │            status only when something changed                           (status)
//!     └─ deleted:  after every other capz-rs finalizer is gone: the owned group  (cleanup)
//!                  in one delete, else plan::DELETION, our resources one by one
//! ```

mod apply;
mod cleanup;
mod context;
mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::Arc;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::filter::{Reported as _, changes};
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::runner::{self, BoxError};

use crate::context::State;

/// Runs the controller until the runner's shutdown: AzureClusters, woken too by their Cluster
/// (pause, API server port).
///
/// # Errors
/// When the identities' custom cloud cannot be set up.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let state = Arc::new(State {
        identities: Identities::new(client.clone(), settings.clone()).await?,
        client,
        settings,
        features: ctx.args().feature_gates,
        presence: ctx.presence(),
    });
    let controller = ctx.azure_cluster_controller(|object| Some(wakes(object)));
    ctx.run(controller, reconcile::reconcile, state).await;
    Ok(())
}

/// The peers' conditions the roll-up carries into `Ready`.
const PEER_CONDITIONS: &[ConditionType] = &[
    ConditionType::LOAD_BALANCERS_READY,
    ConditionType::PUBLIC_IPS_READY,
    ConditionType::BASTION_HOST_READY,
    ConditionType::PRIVATE_DNS_ZONE_READY,
    ConditionType::PRIVATE_DNS_LINK_READY,
    ConditionType::PRIVATE_DNS_RECORD_READY,
];

/// What wakes the controller on an AzureCluster: what the kit's filter sees, and also a peer's
/// condition changing its reason, severity or message, which `Ready` repeats. Its own status
/// writes do not: they would only read everything in Azure again.
fn wakes(object: &AzureCluster) -> u64 {
    let mut hasher = DefaultHasher::new();
    changes::<AzureCluster>(PEER_CONDITIONS)(object).hash(&mut hasher);
    if let Some(conditions) = object.conditions() {
        for condition in PEER_CONDITIONS.iter().filter_map(|type_| conditions.get(type_)) {
            (&condition.reason, condition.severity, &condition.message).hash(&mut hasher);
        }
    }
    hasher.finish()
}
