//! The loadbalancer controller of capz-rs.
//!
//! For each AzureCluster (not externally managed, not paused, once its Cluster exists) it keeps
//! the load balancers the spec asks for — the API server's, public or internal (and with
//! `--feature-gates=APIServerILB=true` an internal one beside a public one), the node outbound and
//! the control-plane outbound ones — and the public IPs of their frontends, reports them as
//! `PublicIPsReady` and `LoadBalancersReady`, and sets `spec.controlPlaneEndpoint` once while it
//! is empty.
//!
//! ```text
//!   AzureCluster ── ResourceGroupReady (and SubnetsReady for a private frontend) ──▶ wait
//!     │ public IPs, in spec order                 PublicIPsReady
//!     │ load balancers, once their IPs exist      LoadBalancersReady
//!     ▼ spec.controlPlaneEndpoint (while empty)   the API server IP's DNS name, or the private address
//! ```
//!
//! Deletion removes the load balancers, then their public IPs, each only when it carries the
//! cluster's `owned` tag, and then the finalizer.
//!
//! A second controller, on AzureMachines, keeps the SSH inbound NAT rule of each control-plane
//! machine behind a public API server load balancer (module `nat_rules`):
//!
//! ```text
//!   AzureMachine (control plane) ── LoadBalancersReady on its AzureCluster ──▶ wait
//!     │ finalizer, rule <machine> on port 22 or 2201..2219   InboundNATRulesReady
//!     ▼ deleted: compute's finalizer gone ─▶ rule deleted ─▶ finalizer gone
//! ```

mod apply;
mod cleanup;
mod context;
mod nat_rules;
mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::sync::Arc;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::filter::changes;
use capz_kit::identity::{Identities, IdentitySettings};

use crate::context::State;
use capz_kit::runner::{self, BoxError};

/// The network's conditions it waits on; its own status writes and others' do not wake it.
const DEPENDS_ON: &[ConditionType] = &[ConditionType::RESOURCE_GROUP_READY, ConditionType::SUBNETS_READY];

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identity settings (a custom cloud) cannot be resolved.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let subscription = settings.environment.subscription_id.clone();
    let state = Arc::new(State {
        client: ctx.client(),
        identities: Identities::new(ctx.client(), settings).await?,
        features: ctx.args().feature_gates,
        subscription,
        presence: ctx.presence(),
    });
    // Pause and the API server port live on the Cluster.
    let azure_clusters = ctx.azure_cluster_controller(changes::<AzureCluster>(DEPENDS_ON));
    futures_util::join!(
        ctx.run(azure_clusters, reconcile::reconcile, state.clone()),
        nat_rules::run(&ctx, state),
    );
    Ok(())
}
