//! The bastion controller of capz-rs.
//!
//! For each AzureCluster whose spec asks for `bastionSpec.azureBastion` it keeps the Azure Bastion
//! host in the network's `AzureBastionSubnet` (which the network controller creates with the
//! other subnets) and the host's public IP, and reports them as `BastionHostReady`.
//!
//! ```text
//!   AzureCluster ── ResourceGroupReady, VNetReady and SubnetsReady ──▶ wait
//!     │ finalizer bastion.infrastructure.cluster.x-k8s.io
//!     ├─ live:    public IP `<cluster>-azure-bastion-pip`, then
//!     │           host `<cluster>-azure-bastion` (Basic or Standard)   BastionHostReady
//!     └─ deleted: host, then its public IP, then the finalizer
//! ```
//!
//! The network controller keeps its own finalizer until this one is gone, so the subnet the host
//! sits in outlives it.

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
    azure_cluster::run_planned::<plan::Bastion>(ctx, settings).await
}
