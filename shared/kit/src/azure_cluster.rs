//! What every controller of AzureClusters (the cluster-level controllers) does first: skip what
//! is not its to do yet, then apply or clean up under its finalizer.

use std::sync::Arc;

use capz_api::AzureCluster;
use capz_api::capi::DEFAULT_API_SERVER_PORT;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::Event;
use kube::{Client, Resource, ResourceExt as _};

use capz_api::common::conditions::{ConditionType, Conditions};
use capz_api::controllers::Family;

use crate::cluster::{is_externally_managed, is_paused, linked_cluster};
use crate::error::Error;
use crate::filter::Reported as _;
use crate::finalizer::finalized;
use crate::scope::ClusterScope;
use capz_api::capi::Cluster;

/// What the reconciles of a cluster-level controller that reads the cluster's scope and calls
/// Azure share.
pub struct Shared {
    /// The management cluster.
    pub client: Client,
    /// The credentials of each cluster's identity.
    pub identities: crate::identity::Identities,
    /// The feature gates, which change defaults.
    pub features: capz_rules::Features,
    /// `AZURE_SUBSCRIPTION_ID`, for clusters that name no subscription.
    pub subscription: Option<String>,
    /// Which peer controllers run, for the conditions a step waits on.
    pub presence: crate::presence::Presence,
}

impl Shared {
    /// What `ctx`'s controller shares, with the identities of `settings`.
    ///
    /// # Errors
    /// When the identity settings (a custom cloud) cannot be resolved.
    pub async fn new(
        ctx: &crate::runner::Context,
        settings: crate::identity::IdentitySettings,
    ) -> Result<Self, crate::identity::SettingsError> {
        Ok(Self {
            client: ctx.client(),
            subscription: settings.environment.subscription_id.clone(),
            identities: crate::identity::Identities::new(ctx.client(), settings).await?,
            features: ctx.args().feature_gates,
            presence: ctx.presence(),
        })
    }
}

/// Whether a cluster-level controller reconciles an infrastructure cluster (an AzureCluster).
#[derive(Debug)]
pub enum Gate {
    /// Not now: it is externally managed, paused, or no Cluster names it yet (a change of its
    /// owner references, or of the Cluster, wakes it again).
    Skip,
    /// Yes, as part of this Cluster (none when the Cluster went before the object, which is
    /// then being deleted).
    Reconcile(Option<Box<Cluster>>),
}

/// The skip rules every cluster-level controller follows: someone else writes an externally
/// managed object's status (it gets no finalizer either); a paused one waits; one no Cluster names
/// has nothing to be built for, though its deletion goes on.
///
/// # Errors
/// When the API server cannot be read.
pub async fn gate<K>(client: &Client, object: &K) -> kube::Result<Gate>
where
    K: Resource<DynamicType = ()>,
{
    if is_externally_managed(object) {
        return Ok(Gate::Skip);
    }
    let cluster = linked_cluster(client, object).await?;
    let deleting = object.meta().deletion_timestamp.is_some();
    if (cluster.is_none() && !deleting) || is_paused(cluster.as_ref(), object) {
        return Ok(Gate::Skip);
    }
    Ok(Gate::Reconcile(cluster.map(Box::new)))
}

/// The reconcile of an AzureCluster that every cluster-level controller runs: the skip rules of
/// [`gate`], then, under the controller's `finalizer`, `apply` while the object lives and
/// `cleanup` once it is deleted, each given the API server port of the object's Cluster.
///
/// # Errors
/// The API server's, the finalizer's, or those of `apply` and `cleanup`.
pub async fn reconcile<S>(
    state: &S,
    client: &Client,
    finalizer: &str,
    object: Arc<AzureCluster>,
    apply: impl AsyncFnOnce(&S, &Api<AzureCluster>, &AzureCluster, i32) -> Result<Action, Error>,
    cleanup: impl AsyncFnOnce(&S, &Api<AzureCluster>, &AzureCluster, i32) -> Result<Action, Error>,
) -> Result<Action, Error> {
    let Gate::Reconcile(cluster) = gate(client, &*object).await? else {
        return Ok(Action::await_change());
    };
    let port = cluster
        .as_ref()
        .map_or(DEFAULT_API_SERVER_PORT, |cluster| cluster.api_server_port());
    let api = Api::<AzureCluster>::namespaced(client.clone(), &object.namespace().unwrap_or_default());
    finalized(&api, finalizer, object, async |event| match event {
        Event::Apply(object) => apply(state, &api, &object, port).await,
        Event::Cleanup(object) => cleanup(state, &api, &object, port).await,
    })
    .await
}
/// What a machine waits for: a sentence for people, and the families whose controllers write
/// the conditions it waits on.
#[derive(Debug)]
pub struct Wait {
    /// What it waits for.
    pub message: String,
    /// The controllers that would end the wait.
    pub on: Vec<Family>,
}

/// Why the machine waits for peers' work: the subnets and the load balancers its interface joins.
/// An externally managed AzureCluster has no such conditions: Cluster API's gate is all there is.
/// Once the AzureCluster has been Ready (`status.ready` stays true) they exist: a peer's later
/// check that failed (a throttled read, say) turns its condition False for a while, and must not
/// hold machines back, as CAPZ's machines only wait for the cluster's infrastructure once.
#[must_use]
pub fn dependencies(scope: &ClusterScope, azure_cluster: &AzureCluster, control_plane: bool) -> Option<Wait> {
    let was_ready = azure_cluster.status.as_ref().and_then(|status| status.ready) == Some(true);
    if was_ready || is_externally_managed(azure_cluster) {
        return None;
    }
    let holds = |conditions: Option<&Conditions>, type_: &ConditionType| {
        conditions.is_some_and(|conditions| conditions.is_true(type_))
    };
    let cluster_conditions = azure_cluster.conditions();
    let network = scope.spec.network_spec.as_ref();
    let joins_pool = if control_plane {
        network.is_some_and(|network| {
            network.api_server_lb.is_some() || network.control_plane_outbound_lb.is_some()
        })
    } else {
        network.is_some_and(|network| network.node_outbound_lb.is_some())
    };
    let mut waiting = Vec::new();
    let mut on = Vec::new();
    if !holds(cluster_conditions, &ConditionType::SUBNETS_READY) {
        waiting.push("SubnetsReady on the AzureCluster");
        on.push(Family::Network);
    }
    if joins_pool && !holds(cluster_conditions, &ConditionType::LOAD_BALANCERS_READY) {
        waiting.push("LoadBalancersReady on the AzureCluster");
        on.push(Family::LoadBalancer);
    }
    (!waiting.is_empty()).then(|| Wait {
        message: format!("waiting for {}", waiting.join(", ")),
        on,
    })
}
