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

use capz_api::AzureMachine;
use capz_kit::apply::FieldManager;
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::reflector::ObjectRef;
use capz_kit::policy::Backoff;
use capz_kit::report::Reporter;
use capz_kit::runner::{self, BoxError};
use capz_rules::Features;
use futures_util::StreamExt as _;

pub use error::Error;

/// The controller's name: `capz-compute` is its binary, field manager and lease.
pub const NAME: &str = "compute";
/// The field manager of every write.
pub const FIELD_MANAGER: FieldManager = FieldManager::new("capz-compute");
/// The finalizer on AzureMachines.
pub const FINALIZER: &str = "compute.infrastructure.cluster.x-k8s.io";

/// What every reconcile shares.
pub(crate) struct Shared {
    pub(crate) client: capz_kit::kube::Client,
    pub(crate) identities: Identities,
    pub(crate) fallback_subscription: Option<String>,
    pub(crate) features: Features,
    pub(crate) backoff: Backoff<ObjectRef<AzureMachine>>,
    pub(crate) reporter: Reporter,
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
        reporter: Reporter::new(client.clone(), FIELD_MANAGER.as_str()),
        features: ctx.args().feature_gates,
        fallback_subscription,
        backoff: Backoff::default(),
        client,
    });
    let controller = watches::controller(&ctx);
    controller
        .run(reconcile::reconcile, error_policy, shared)
        .for_each(|outcome| async move {
            if let Err(error) = outcome {
                tracing::debug!(%error, "reconcile not run");
            }
        })
        .await;
    Ok(())
}

/// Errors that reach the controller: the API server failed us (finalizer patches, reads), a
/// deletion failed or still runs (the finalizer must stay). Errors of a live machine's Azure
/// resources are handled inside the reconcile, which reports them in conditions.
#[expect(
    clippy::needless_pass_by_value,
    reason = "the signature kube-runtime's Controller::run asks for"
)]
fn error_policy(machine: Arc<AzureMachine>, error: &Error, shared: Arc<Shared>) -> Action {
    if let Error::Pending(wait) = error {
        return Action::requeue(*wait);
    }
    tracing::warn!(%error, "reconcile failed");
    shared
        .backoff
        .on_error(ObjectRef::from_obj(machine.as_ref()), error)
}
