//! What every controller of AzureClusters (the cluster-level controllers) does first: skip what
//! is not its to do yet, then apply or clean up under its finalizer.

use std::sync::Arc;

use capz_api::AzureCluster;
use capz_api::capi::DEFAULT_API_SERVER_PORT;
use capz_azure::ArmClient;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::Event;
use kube::{Client, Resource, ResourceExt as _};

use capz_api::common::conditions::{ConditionType, Conditions};
use capz_api::controllers::Family;

use crate::cluster::{is_externally_managed, is_paused, linked_cluster};
use crate::controller::ControllerId;
use crate::error::Error;
use crate::filter::Reported as _;
use crate::finalizer::finalized;
use crate::identity::ClusterIdentityRef;
use crate::operations::Operations;
use crate::policy::Classify;
use crate::presence::Presence;
use crate::progress::{Direction, Outcome, Step, Steps, waiting_on};
use crate::scope::ClusterScope;
use crate::status::{self, Report};
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

/// What a cluster-level controller owns on AzureClusters: its names, its conditions and the
/// services its operations in flight are recorded under.
#[derive(Clone, Copy, Debug)]
pub struct Owned {
    /// The controller's names (field manager, user agent).
    pub id: ControllerId,
    /// The condition types it writes.
    pub conditions: &'static [ConditionType],
    /// The services of its operations.
    pub services: &'static [&'static str],
}

/// A cluster-level controller whose work is one [`Plan`] built from each AzureCluster's spec, in
/// steps that wait for what peers provide: it needs no code of its own beyond these items, and
/// [`reconcile_planned`] is its reconcile.
pub trait Planner {
    /// What it builds for one cluster.
    type Plan: Plan;
    /// Why a spec gives no plan.
    type Error: Classify + Send + Sync + 'static;

    /// What it owns on AzureClusters.
    const OWNED: Owned;
    /// The steps that build the plan's resources, in order.
    const ORDER: &'static [Step<<Self::Plan as Plan>::Unit>];
    /// The steps that delete them, in order.
    const DELETION: &'static [Step<<Self::Plan as Plan>::Unit>];
    /// The families whose controllers provide what [`Planner::missing`] checks.
    const PEERS: &'static [Family];
    /// The peers' conditions whose changes wake the controller (its own status writes and the
    /// other conditions do not).
    const WAITS_ON: &'static [ConditionType];

    /// The plan of `object`'s spec, or `None` when it asks nothing of the controller.
    ///
    /// # Errors
    /// When the spec names something Azure would refuse.
    fn plan(shared: &Shared, object: &AzureCluster) -> Result<Option<Self::Plan>, Self::Error>;

    /// What the peers have not provided yet, said for people; `None` once the steps can run.
    fn missing(object: &AzureCluster) -> Option<String>;
}

/// Runs the controller of `C` until the runner's shutdown signal, each AzureCluster reconciled
/// by [`reconcile_planned`].
///
/// # Errors
/// When the identity settings (a custom cloud) cannot be resolved.
pub async fn run_planned<C: Planner + 'static>(
    ctx: crate::runner::Context,
    settings: crate::identity::IdentitySettings,
) -> Result<(), crate::runner::BoxError> {
    let shared = Arc::new(Shared::new(&ctx, settings).await?);
    // Pause lives on the Cluster.
    let controller = ctx.azure_cluster_controller(crate::filter::changes::<AzureCluster>(C::WAITS_ON));
    let reconcile =
        |object, shared: Arc<Shared>| async move { reconcile_planned::<C>(&shared, object).await };
    ctx.run(controller, reconcile, shared).await;
    Ok(())
}

/// The reconcile of a [`Planner`]'s controller: under its finalizer, the plan's steps brought
/// about in [`Planner::ORDER`] once the peers have provided what they need, or, once the object
/// is deleted, undone in [`Planner::DELETION`].
///
/// # Errors
/// As [`reconcile`].
pub async fn reconcile_planned<C: Planner>(
    shared: &Shared,
    object: Arc<AzureCluster>,
) -> Result<Action, Error> {
    let apply = async |shared: &Shared, api: &Api<AzureCluster>, object: &AzureCluster, _port: i32| {
        let planned = match C::plan(shared, object) {
            Err(error) => Planned::Held(Outcome::failed(error)),
            Ok(None) => Planned::Nothing,
            Ok(Some(plan)) => {
                Planned::unless_waiting(plan, C::missing(object), &shared.presence, C::PEERS).await
            }
        };
        pass(
            shared,
            api,
            object,
            C::OWNED,
            (Direction::Apply, C::ORDER),
            planned,
        )
        .await
    };
    let cleanup = async |shared: &Shared, api: &Api<AzureCluster>, object: &AzureCluster, _port: i32| {
        // No plan, or a spec that never described a valid one: nothing was created.
        let Ok(Some(plan)) = C::plan(shared, object) else {
            return Ok(Action::await_change());
        };
        pass(
            shared,
            api,
            object,
            C::OWNED,
            (Direction::Delete, C::DELETION),
            Planned::Ready(plan),
        )
        .await
    };
    let finalizer = C::OWNED.id.finalizer();
    // A cluster whose spec asks nothing of the controller does not get its finalizer: nothing
    // of its making is there to delete, and one write fewer per cluster spares Cluster API a
    // reconcile too. A spec that asks for something later gets it then, before anything is
    // built; one that held it keeps it until its cleanup.
    let held = object.finalizers().iter().any(|held| held == finalizer);
    if !held && matches!(C::plan(shared, &object), Ok(None)) {
        return Ok(Action::await_change());
    }
    reconcile(shared, &shared.client, finalizer, object, apply, cleanup).await
}

/// What a cluster-level controller builds for one cluster, step by step.
pub trait Plan: Send + Sync {
    /// What a step of the controller works on.
    type Unit: Send + Sync + 'static;

    /// Brings the resources of `unit` to the spec (`Direction::Apply`) or deletes them.
    fn converge(
        &self,
        client: &ArmClient,
        unit: &Self::Unit,
        operations: &mut Operations,
        direction: Direction,
    ) -> impl Future<Output = Outcome> + Send;
}

/// Where one pass of a cluster-level controller stands before it calls Azure.
#[derive(Debug)]
enum Planned<P> {
    /// The spec asks nothing of the controller: its conditions are withdrawn.
    Nothing,
    /// Its steps cannot run, for this reason (a spec that cannot be built, a dependency that is
    /// not there yet).
    Held(Outcome),
    /// Its steps run with this plan.
    Ready(P),
}

impl<P> Planned<P> {
    /// `plan`, or held while `missing` says what a peer has not provided yet: the first of
    /// `peers` whose controller does not run is then named instead.
    async fn unless_waiting(plan: P, missing: Option<String>, presence: &Presence, peers: &[Family]) -> Self {
        match missing {
            Some(waiting) => Self::Held(waiting_on(presence, peers, waiting).await),
            None => Self::Ready(plan),
        }
    }
}

/// One pass of a cluster-level controller over `steps`, in `direction`, as `planned` says: each
/// step's units converged in turn with an ARM client of the cluster's identity, unless the
/// steps are held; then the steps' conditions and the controller's operations are published on
/// `object`, and the pass says when to come back.
///
/// # Errors
/// The API server's, or what the steps' outcome asks of the caller (a failure, a pending delete).
async fn pass<P: Plan>(
    shared: &Shared,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    owned: Owned,
    (direction, steps): (Direction, &[Step<P::Unit>]),
    planned: Planned<P>,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(object.operations(), owned.id.name(), owned.services);
    let mut progress = Steps::new(object.conditions(), direction);
    match planned {
        Planned::Nothing => {}
        Planned::Held(outcome) => progress.hold(steps, outcome),
        Planned::Ready(plan) => match shared
            .identities
            .credential(ClusterIdentityRef::from(object))
            .await
        {
            Err(error) => progress.hold(steps, Outcome::failed(error)),
            Ok(credential) => {
                let client = credential.arm_client(owned.id.user_agent());
                for step in steps {
                    let work = plan.converge(&client, &step.unit, &mut operations, direction);
                    progress.run(step, work).await;
                }
            }
        },
    }
    let pass = progress.finish();
    let report = Report {
        observations: pass.observations.clone(),
        operations: Some(&operations),
        fields: (),
    };
    status::publish(api, &owned.id.field_manager(), owned.conditions, object, report).await?;
    pass.next()
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
