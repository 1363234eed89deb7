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

mod nat_rules;
mod pipeline;

use std::sync::Arc;

use capz_kit::api::capi::Cluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::controllers::Family;
use capz_kit::api::{AzureCluster, GROUP};
use capz_kit::cluster::{is_externally_managed, is_paused, linked_cluster};
use capz_kit::conditions::Reason;
use capz_kit::controller::ControllerId;
use capz_kit::filter::{changes, cluster_changes};
use capz_kit::finalizer::{FinalizerError, finalized};
use capz_kit::identity::{Identities, IdentityError, IdentitySettings};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::runtime::reflector::ObjectRef;
use capz_kit::kube::runtime::{PredicateConfig, WatchStreamExt as _, watcher};
use capz_kit::kube::{Api, Client, ResourceExt as _};
use capz_kit::policy::{Category, Classify};
use capz_kit::presence::Presence;
use capz_kit::resource::ResourceError;
use capz_kit::runner::{self, BoxError};
use capz_resources::load_balancer::PlanError;
use capz_rules::Features;

/// The controller's names: binary, field manager, finalizer (on AzureClusters and on the
/// AzureMachines that get an SSH rule), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::LoadBalancer);
/// The condition types it owns.
pub const OWNED: &[ConditionType] = &[
    ConditionType::PUBLIC_IPS_READY,
    ConditionType::LOAD_BALANCERS_READY,
];

/// The network's conditions it waits on; its own status writes and others' do not wake it.
const DEPENDS_ON: &[ConditionType] = &[ConditionType::RESOURCE_GROUP_READY, ConditionType::SUBNETS_READY];

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server failed a read or write.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] capz_kit::kube::Error),
    /// The finalizer could not be changed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
    /// The cluster's Azure credentials cannot be had.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The spec asks for something Azure would refuse.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// An Azure resource could not be brought to what the spec asks.
    #[error(transparent)]
    Resource(Box<ResourceError>),
    /// Not a failure: deletes are still running, or wait for a peer. The finalizer stays until
    /// they end, and only an error keeps kube-runtime from removing it, so cleanup reports this
    /// one.
    #[error("{what}")]
    StillDeleting {
        /// What cleanup is doing.
        what: &'static str,
        /// When to look again.
        retry_after: std::time::Duration,
    },
}

impl From<ResourceError> for Error {
    fn from(error: ResourceError) -> Self {
        Self::Resource(Box::new(error))
    }
}

impl Classify for Error {
    fn category(&self) -> Category {
        match self {
            Self::Kube(_) => Category::Transient,
            Self::Finalizer(error) => error.category(),
            Self::Identity(error) => error.category(),
            Self::Plan(error) => error.category(),
            Self::Resource(error) => error.category(),
            // A wait for a known time, as throttling is.
            Self::StillDeleting { .. } => Category::Throttled,
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Resource(error) => error.retry_after(),
            Self::StillDeleting { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Kube(_) => Reason::KUBERNETES_API_ERROR,
            Self::Finalizer(error) => error.reason(),
            Self::Identity(error) => Classify::reason(error),
            Self::Plan(error) => error.reason(),
            Self::Resource(error) => error.reason(),
            Self::StillDeleting { .. } => Reason::DELETING,
        }
    }

    fn pending(&self) -> Option<std::time::Duration> {
        match self {
            Self::StillDeleting { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }
}

/// What every reconcile shares.
struct State {
    client: Client,
    identities: Identities,
    features: Features,
    /// `AZURE_SUBSCRIPTION_ID`, for clusters that name no subscription.
    subscription: Option<String>,
    /// Whether the network controller, whose conditions the balancers wait for, runs.
    presence: Presence,
}

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
    let clusters = watcher(ctx.api::<Cluster>(), ctx.watcher_config())
        .default_backoff()
        .touched_objects()
        .predicate_filter(cluster_changes, PredicateConfig::default());
    let azure_clusters = ctx
        .filtered_controller(ctx.api::<AzureCluster>(), changes::<AzureCluster>(DEPENDS_ON))
        .watches_stream(clusters, |cluster: Cluster| {
            let namespace = cluster.namespace()?;
            cluster
                .spec
                .infrastructure_ref
                .filter(|reference| reference.is(GROUP, "AzureCluster"))
                .map(|reference| ObjectRef::new(&reference.name).within(&namespace))
        });
    futures_util::join!(
        ctx.run(azure_clusters, reconcile, state.clone()),
        nat_rules::run(&ctx, state),
    );
    Ok(())
}

async fn reconcile(object: Arc<AzureCluster>, state: Arc<State>) -> Result<Action, Error> {
    // Its owner writes an externally managed cluster's status; nothing here is ours to do.
    if is_externally_managed(&*object) {
        return Ok(Action::await_change());
    }
    let cluster = linked_cluster(&state.client, &*object).await?;
    let deleting = object.metadata.deletion_timestamp.is_some();
    // Before a Cluster names or owns the AzureCluster there is no API server port and no pause to
    // honour; Cluster API's owner reference brings the object back. A cluster being deleted is
    // cleaned up anyway.
    if (cluster.is_none() && !deleting) || is_paused(cluster.as_ref(), &*object) {
        return Ok(Action::await_change());
    }
    let api = Api::<AzureCluster>::namespaced(state.client.clone(), &object.namespace().unwrap_or_default());
    finalized(&api, ID.finalizer(), object, async |event| match event {
        Event::Apply(object) => pipeline::apply(&state, &api, cluster.as_ref(), &object).await,
        Event::Cleanup(object) => pipeline::cleanup(&state, &api, cluster.as_ref(), &object).await,
    })
    .await
}
