//! The privatedns controller of capz-rs.
//!
//! For each AzureCluster whose API server sits behind an internal load balancer (and whose
//! `privateDNSZone` is not `None`) it keeps the private DNS zone that resolves the API server's
//! name, the zone's links to the cluster's network and to every network peered with it, and the
//! `apiserver` record (A, and AAAA for IPv6 frontends) pointing at the load balancer's private
//! addresses, and reports them as `PrivateDNSZoneReady`, `PrivateDNSLinkReady` and
//! `PrivateDNSRecordReady`.
//!
//! ```text
//!   AzureCluster ── ResourceGroupReady and VNetReady ──▶ wait
//!     │ finalizer privatedns.infrastructure.cluster.x-k8s.io
//!     ├─ live:    zone (`<cluster>.capz.io` or privateDNSZoneName)   PrivateDNSZoneReady
//!     │           links `<network>-link`                             PrivateDNSLinkReady
//!     │           record `apiserver`                                 PrivateDNSRecordReady
//!     └─ deleted: record, links, zone (each only when ours), then the finalizer
//! ```
//!
//! A zone or link that exists without the cluster's `owned` tag is the user's: it is used, never
//! written or deleted.

mod apply;
mod cleanup;
mod context;
mod plan;
mod reconcile;
mod status;

use std::sync::Arc;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::filter::changes;
use capz_kit::identity::IdentitySettings;
use capz_kit::runner::{self, BoxError};

use crate::context::State;

pub use context::ID;

/// The network's conditions it waits on; its own status writes and others' do not wake it.
const DEPENDS_ON: &[ConditionType] = &[ConditionType::RESOURCE_GROUP_READY, ConditionType::VNET_READY];

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identity settings (a custom cloud) cannot be resolved.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let state = Arc::new(State::new(&ctx, settings).await?);
    // Pause lives on the Cluster.
    let controller = ctx.azure_cluster_controller(changes::<AzureCluster>(DEPENDS_ON));
    ctx.run(controller, reconcile::reconcile, state).await;
    Ok(())
}
