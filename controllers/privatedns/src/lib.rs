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

mod context;
mod plan;

use capz_kit::azure_cluster;
use capz_kit::identity::IdentitySettings;
use capz_kit::runner::{self, BoxError};

pub use context::ID;

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identity settings (a custom cloud) cannot be resolved.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    azure_cluster::run_planned::<plan::PrivateDns>(ctx, settings).await
}
