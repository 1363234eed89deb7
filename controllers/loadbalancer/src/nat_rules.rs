//! The SSH inbound NAT rules of control-plane machines, a controller of AzureMachines beside the
//! AzureCluster one: the rules are children of the API server load balancer, which this family
//! owns.
//!
//! A machine gets a rule when [`gets_rule`] says so (control plane, public API server load
//! balancer, cluster not externally managed); compute asks the same question before it creates
//! the machine's network interface. Once the AzureCluster reports `LoadBalancersReady`, the
//! machine gets this controller's finalizer and its rule, on a frontend port chosen from one list
//! of the balancer's rules, and `InboundNATRulesReady` in its status (applied alone under this
//! controller's field manager, so compute's conditions stay as they are).
//!
//! A deleted machine keeps its rule until compute's finalizer is gone: until then its interface
//! may still use the rule, which Azure refuses to delete. Then the rule goes, and the finalizer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use capz_kit::api::capi::Cluster;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType, Conditions};
use capz_kit::api::controllers::Family;
use capz_kit::api::{AzureCluster, AzureMachine, GROUP};
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::network::InboundNatRule as RuleModel;
use capz_kit::azure::{IdError, ResourceId};
use capz_kit::cluster::{is_control_plane, is_paused, owner_cluster, owner_machine};
use capz_kit::conditions::{Observation, Reason, unless_held};
use capz_kit::error::{Error, Failure};
use capz_kit::filter::{Reported as _, changes, cluster_changes, everything_but_status};
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, Client, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::{Direction, Outcome};
use capz_kit::resource::{self, AzureResource as _, ResourceError};
use capz_kit::runner;
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_resources::inbound_nat_rule::{ApiServerFrontend, InboundNatRule, frontend_port, gets_rule};
use capz_resources::load_balancer::PlanError;
use capz_resources::virtual_machine;

use crate::context::{ID, State};
use crate::plan::arm_client;
use crate::status::{OWNED_ON_MACHINES, publish};

/// How people call what this controller keeps on machines.
const RULE: &str = "SSH inbound NAT rule";
/// The AzureCluster condition whose changes wake the machines of the cluster.
const CLUSTER_DEPENDS_ON: &[ConditionType] = &[ConditionType::LOAD_BALANCERS_READY];
/// How soon a machine whose interface compute still holds is looked at again, should the change
/// of its finalizers not wake it first.
const COMPUTE_WAIT: Duration = Duration::from_secs(30);

/// What the reconciles of machines share.
struct Machines {
    state: Arc<State>,
    /// One lock per API server load balancer: its rules get their ports one machine at a time, or
    /// two machines could both see 22 free and take it.
    balancers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Machines {
    fn lock_of(&self, balancer: &ResourceId) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.balancers.lock().unwrap_or_else(PoisonError::into_inner);
        locks
            .entry(balancer.to_string().to_ascii_lowercase())
            .or_default()
            .clone()
    }
}

/// The controller of AzureMachines, woken by their changes other than status writes, by their
/// Cluster (pause) and by their AzureCluster's `LoadBalancersReady` (and spec).
pub(crate) async fn run(ctx: &runner::Context, state: Arc<State>) {
    let controller =
        ctx.filtered_controller(ctx.api::<AzureMachine>(), everything_but_status::<AzureMachine>);
    let machines = Arc::new(Machines {
        state,
        balancers: Mutex::default(),
    });
    let controller = ctx.wake_cluster_members(
        controller,
        cluster_changes,
        changes::<AzureCluster>(CLUSTER_DEPENDS_ON),
    );
    ctx.run(controller, reconcile, machines).await;
}

/// A machine's AzureCluster, with its defaults, and where its SSH rules sit (`None` when its
/// machines get none).
struct Site {
    azure_cluster: AzureCluster,
    scope: ClusterScope,
    target: Option<ApiServerFrontend>,
}

async fn reconcile(machine: Arc<AzureMachine>, machines: Arc<Machines>) -> Result<Action, Error> {
    let client = &machines.state.client;
    let cluster = owner_cluster(client, &*machine).await?;
    if is_paused(cluster.as_ref(), &*machine) {
        return Ok(Action::await_change());
    }
    let site = match &cluster {
        Some(cluster) => site_of(&machines, client, cluster).await?,
        None => None,
    };
    let owner = owner_machine(client, &*machine).await?;
    let wanted = match (&site, &owner) {
        (Some(site), Some(owner)) => gets_rule(
            &site.azure_cluster,
            &site.scope,
            is_control_plane(&*machine, owner),
        ),
        // Before Cluster API links the machine (an owner reference change wakes it).
        _ => false,
    };
    let ours = machine
        .finalizers()
        .iter()
        .any(|finalizer| finalizer == ID.finalizer());
    let deleting = machine.metadata.deletion_timestamp.is_some();
    // Only machines that get a rule carry the finalizer; one that has it keeps it until cleanup.
    if !(wanted || (ours && deleting)) {
        return Ok(Action::await_change());
    }
    let api = Api::<AzureMachine>::namespaced(client.clone(), &machine.namespace().unwrap_or_default());
    let target = site.as_ref().and_then(|site| site.target.as_ref());
    finalized(&api, ID.finalizer(), machine, async |event| {
        match (event, &site, target) {
            (Event::Apply(machine), Some(site), Some(target)) => {
                apply(&machines, &api, &machine, site, target).await
            }
            (Event::Apply(_), _, _) => Ok(Action::await_change()),
            (Event::Cleanup(machine), site, target) => {
                cleanup(&machines, &api, &machine, site.as_ref(), target).await
            }
        }
    })
    .await
}

/// The AzureCluster the Cluster names as its infrastructure, unless it has none or a spec that
/// names no valid resources (its own controller reports that).
async fn site_of(machines: &Machines, client: &Client, cluster: &Cluster) -> Result<Option<Site>, Error> {
    let Some(reference) = cluster
        .spec
        .infrastructure_ref
        .as_ref()
        .filter(|reference| reference.is(GROUP, "AzureCluster"))
    else {
        return Ok(None);
    };
    let namespace = cluster.namespace().unwrap_or_default();
    let Some(azure_cluster) = Api::<AzureCluster>::namespaced(client.clone(), &namespace)
        .get_opt(&reference.name)
        .await?
    else {
        return Ok(None);
    };
    let state = &machines.state;
    let Ok(scope) = ClusterScope::new(&azure_cluster, state.features, state.subscription.as_deref()) else {
        return Ok(None);
    };
    let target = ApiServerFrontend::of(&scope).ok().flatten();
    Ok(Some(Site {
        azure_cluster,
        scope,
        target,
    }))
}

/// No frontend port of the balancer is free for another SSH rule.
#[derive(Debug, thiserror::Error)]
#[error("no frontend port is free for the SSH rule on {balancer}: 22 and 2201 to 2219 are taken")]
struct NoFreePort {
    balancer: String,
}

impl Classify for NoFreePort {
    fn category(&self) -> Category {
        // A port frees when another control-plane machine goes.
        Category::Transient
    }

    fn reason(&self) -> Reason {
        Reason::NO_FREE_FRONTEND_PORT
    }
}

/// `InboundNATRulesReady` as a pass in `direction` found it, given the machine's `current`
/// conditions. Compute joins the interface to the rule while the condition holds: a check that
/// failed for a while says nothing about a rule that existed, and must not detach it.
fn observation(outcome: &Outcome, direction: Direction, current: Option<&Conditions>) -> Observation {
    let observed = outcome.observation(ConditionType::INBOUND_NAT_RULES_READY, RULE, direction);
    let passing = matches!(outcome, Outcome::Failed(failure)
        if matches!(failure.category(), Category::Transient | Category::Throttled));
    if passing && direction == Direction::Apply {
        unless_held(current, observed)
    } else {
        observed
    }
}

fn operations_of(machine: &AzureMachine) -> Operations {
    let states = machine
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states);
    Operations::owned(states, ID.name(), &[InboundNatRule::SERVICE])
}

/// The name of `machine`'s rule: its VM's name, as compute names the VM.
fn rule_name(machine: &AzureMachine) -> String {
    virtual_machine::vm_name(&machine.name_any(), virtual_machine::is_windows(&machine.spec))
}

/// The rule of `machine` on `target`.
fn rule_of(machine: &AzureMachine, target: &ApiServerFrontend) -> Result<InboundNatRule, Failure> {
    let name = rule_name(machine);
    InboundNatRule::new(target, &name).map_err(|source: IdError| {
        Failure::from(PlanError::from(ScopeError::Invalid {
            field: "metadata.name",
            value: name,
            source,
        }))
    })
}

/// Creates the machine's rule once the API server load balancer exists, and reports it.
async fn apply(
    machines: &Machines,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    site: &Site,
    target: &ApiServerFrontend,
) -> Result<Action, Error> {
    let mut operations = operations_of(machine);
    // Once the cluster has been ready its balancer exists, whatever a later check of it says.
    let was_ready = site.azure_cluster.status.as_ref().and_then(|status| status.ready) == Some(true);
    let outcome = if was_ready || site.azure_cluster.holds(&ConditionType::LOAD_BALANCERS_READY) {
        create(machines, machine, site, target, &mut operations)
            .await
            .unwrap_or_else(Outcome::Failed)
    } else {
        Outcome::Waiting(
            "waiting for the API server load balancer: LoadBalancersReady is not True on the AzureCluster"
                .to_owned(),
        )
    };
    let observed = observation(&outcome, Direction::Apply, machine.conditions());
    publish(api, machine, OWNED_ON_MACHINES, vec![observed], &operations).await?;
    outcome.next(Direction::Apply)
}

async fn create(
    machines: &Machines,
    machine: &AzureMachine,
    site: &Site,
    target: &ApiServerFrontend,
    operations: &mut Operations,
) -> Result<Outcome, Failure> {
    let rule = rule_of(machine, target)?;
    let client = arm_client(&machines.state, &site.azure_cluster).await?;
    let lock = machines.lock_of(&target.load_balancer);
    let _choosing = lock.lock().await;
    let rules: Vec<RuleModel> = client
        .list(
            &target.load_balancer,
            RuleModel::RESOURCE_TYPE,
            &RuleModel::API_VERSION,
        )
        .await
        .map_err(|source| ResourceError::Arm {
            action: "list the inbound NAT rules of",
            id: target.load_balancer.clone(),
            source,
        })?;
    let name = rule_name(machine);
    let Some(port) = frontend_port(&rules, &name) else {
        return Err(NoFreePort {
            balancer: target.load_balancer.name().into_owned(),
        }
        .into());
    };
    let mut outcome = Outcome::Done;
    outcome.absorb(resource::reconcile(&client, &rule.frontend_port(port), operations).await);
    Ok(outcome)
}

/// Deletes the rule of a deleted machine once compute has let go of its interface; done when the
/// rule is gone (or its cluster or balancer is, which took the rule with it).
async fn cleanup(
    machines: &Machines,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    site: Option<&Site>,
    target: Option<&ApiServerFrontend>,
) -> Result<Action, Error> {
    let mut operations = operations_of(machine);
    let compute_holds = machine
        .finalizers()
        .iter()
        .any(|finalizer| finalizer == Family::Compute.finalizer());
    if compute_holds {
        let waiting = Observation::fails(
            ConditionType::INBOUND_NAT_RULES_READY,
            Reason::DELETING,
            ConditionSeverity::Info,
            "waiting for compute to delete the network interface that uses the SSH inbound NAT rule",
        );
        publish(api, machine, OWNED_ON_MACHINES, vec![waiting], &operations).await?;
        // The removal of compute's finalizer wakes the machine; the requeue is a safety net.
        return Err(Error::Pending(COMPUTE_WAIT));
    }
    let (Some(site), Some(target)) = (site, target) else {
        return Ok(Action::await_change());
    };
    let outcome = match remove(machines, machine, site, target, &mut operations).await {
        Ok(outcome) if outcome.is_done() => return Ok(Action::await_change()),
        Ok(outcome) => outcome,
        Err(failure) => Outcome::Failed(failure),
    };
    let observed = observation(&outcome, Direction::Delete, machine.conditions());
    publish(api, machine, OWNED_ON_MACHINES, vec![observed], &operations).await?;
    outcome.next(Direction::Delete)
}

async fn remove(
    machines: &Machines,
    machine: &AzureMachine,
    site: &Site,
    target: &ApiServerFrontend,
    operations: &mut Operations,
) -> Result<Outcome, Failure> {
    let rule = rule_of(machine, target)?;
    let client = arm_client(&machines.state, &site.azure_cluster).await?;
    let mut outcome = Outcome::Done;
    outcome.absorb(resource::delete(&client, &rule, operations).await);
    Ok(outcome)
}
