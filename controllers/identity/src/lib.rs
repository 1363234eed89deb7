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

use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::policy::Backoff;
use capz_kit::report::Reporter;
use capz_kit::runner::{BoxError, Context};

pub use error::Error;

/// The controller's field manager, event reporter and Secret owner: `capz-identity`.
pub const FIELD_MANAGER: &str = "capz-identity";
/// The finalizer kept on an AzureClusterIdentity while clusters use it.
pub const FINALIZER: &str = "identity.infrastructure.cluster.x-k8s.io";

/// What every reconcile of the controller uses.
struct Shared {
    client: capz_kit::kube::Client,
    identities: Identities,
    features: capz_rules::Features,
    /// The controller's `AZURE_SUBSCRIPTION_ID`, for clusters naming no subscription.
    subscription: Option<String>,
    reporter: Reporter,
    backoff: Backoff<String>,
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
        reporter: Reporter::new(client.clone(), FIELD_MANAGER),
        client,
        identities,
        features: ctx.args().feature_gates,
        subscription,
        backoff: Backoff::default(),
    });
    futures_util::join!(
        identity::run(&ctx, shared.clone()),
        azure_json::run::<capz_kit::api::AzureMachineTemplate>(&ctx, shared.clone()),
        azure_json::run::<capz_kit::api::AzureMachine>(&ctx, shared),
    );
    Ok(())
}
