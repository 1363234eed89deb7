//! The identity controller of capz-rs.
//!
//! - **AzureClusterIdentity**: checks that each identity can obtain an Azure Resource Manager
//!   token and reports it as `Ready`; keeps the finalizer `identity.infrastructure.cluster.x-k8s.io`
//!   on it while an AzureCluster or AzureManagedControlPlane refers to it, so that it cannot vanish
//!   under a cluster that still needs it to delete its resources.
//! - **azure.json Secrets**: writes `<name>-azure-json` for every AzureMachineTemplate and every
//!   AzureMachine not cloned from a template — the Azure cloud provider's configuration of the
//!   workload cluster's machines, which kubeadm's bootstrap reads (see [`cloud_config`]).
//!
//! The two parts share nothing but the process: the identity check with the kit's
//! [`Identities`], and this crate's error policy.

pub mod cloud_config;

mod azure_json;
mod changes;
mod error;
mod identity;

use std::sync::Arc;

use capz_kit::api::controllers::Family;
use capz_kit::controller::ControllerId;
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::report::Reporter;
use capz_kit::runner::{BoxError, Context};

pub use error::Error;

/// The controller's names: binary, field manager (and Secret owner), finalizer (kept on an
/// AzureClusterIdentity while clusters use it), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Identity);

/// What every reconcile of the controller uses.
struct Shared {
    client: capz_kit::kube::Client,
    identities: Identities,
    features: capz_rules::Features,
    /// The controller's `AZURE_SUBSCRIPTION_ID`, for clusters naming no subscription.
    subscription: Option<String>,
    reporter: Reporter,
}

/// Runs the identity controller until the runner's shutdown: the AzureClusterIdentity checks and
/// the azure.json Secrets of AzureMachineTemplates and AzureMachines.
///
/// # Errors
/// When the identity settings (the custom cloud) cannot be resolved.
pub async fn run(ctx: Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let subscription = settings.environment.subscription_id.clone();
    let identities = Identities::new(client.clone(), settings).await?;
    let shared = Arc::new(Shared {
        reporter: ctx.reporter(),
        client,
        identities,
        features: ctx.args().feature_gates,
        subscription,
    });
    futures_util::join!(
        identity::run(&ctx, shared.clone()),
        azure_json::run::<capz_kit::api::AzureMachineTemplate>(&ctx, shared.clone()),
        azure_json::run::<capz_kit::api::AzureMachine>(&ctx, shared),
    );
    Ok(())
}
