//! The compute controller of capz-rs: for each AzureMachine, its virtual machine in Azure with
//! the network interfaces, disks, availability set and role assignment it needs.
//!
//! ```text
//!   AzureMachine ── owner Machine (bootstrap data, failure domain, version)
//!        │          owner Cluster (pause, infrastructure provisioned)
//!        │          AzureCluster (subnets and load balancers ready; names, ids, credentials)
//!        │          InboundNATRulesReady (a control-plane machine's SSH rule, from loadbalancer)
//!        ▼
//!   availability set ─▶ network interfaces ─▶ virtual machine ─▶ role assignment
//!        ▼
//!   spec.providerID, status.{ready, addresses, vmState}, conditions
//! ```
//!
//! Deletion goes the other way: the machine, its interfaces, its disks, the role assignment, and
//! the availability set once no machine uses it; then the finalizer goes.

#![deny(missing_docs)]

mod converge;
mod delete;
mod error;
mod plan;
mod reconcile;
mod status;
mod watches;

use std::sync::Arc;

use capz_api::controllers::Family;
use capz_kit::controller::ControllerId;
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::presence::Presence;
use capz_kit::runner::{self, BoxError};
use capz_rules::Features;

pub use error::Error;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Compute);

/// What every reconcile shares.
pub(crate) struct Shared {
    pub(crate) client: capz_kit::kube::Client,
    pub(crate) identities: Identities,
    pub(crate) fallback_subscription: Option<String>,
    pub(crate) features: Features,
    /// Whether the network and loadbalancer controllers, whose conditions machines wait for, run.
    pub(crate) presence: Presence,
}

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identities cannot be set up (a custom cloud that cannot be resolved).
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let fallback_subscription = settings.environment.subscription_id.clone();
    let shared = Arc::new(Shared {
        identities: Identities::new(client.clone(), settings).await?,
        features: ctx.args().feature_gates,
        presence: ctx.presence(),
        fallback_subscription,
        client,
    });
    ctx.run(watches::controller(&ctx), reconcile::reconcile, shared)
        .await;
    Ok(())
}
