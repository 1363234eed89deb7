//! The load balancers and public IPs of an AzureCluster, built from its defaulted spec, and the
//! order of the steps that create them ([`ORDER`]: the IPs first, the balancers use them) and
//! delete them ([`DELETION`]: the other way round).

use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::{AzureCluster, AzureMachine};
use capz_kit::azure::{ArmClient, IdError};
use capz_kit::error::{Error, Failure};
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::ResourceExt as _;
use capz_kit::operations::Operations;
use capz_kit::progress::Step;
use capz_kit::resource::AzureResource as _;
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_resources::inbound_nat_rule::{ApiServerFrontend, InboundNatRule};
use capz_resources::load_balancer::{ClusterLoadBalancers, LoadBalancer, PlanError};
use capz_resources::public_ip::PublicIp;
use capz_resources::virtual_machine;

use crate::context::{ID, State};

/// The services whose operations this controller records on AzureClusters.
pub(crate) const SERVICES: &[&str] = &[PublicIp::SERVICE, LoadBalancer::SERVICE];

/// A step of the controller's reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    PublicIps,
    LoadBalancers,
}

const PUBLIC_IPS: Step<Unit> = Step {
    unit: Unit::PublicIps,
    condition: ConditionType::PUBLIC_IPS_READY,
    what: "public IPs",
};

const LOAD_BALANCERS: Step<Unit> = Step {
    unit: Unit::LoadBalancers,
    condition: ConditionType::LOAD_BALANCERS_READY,
    what: "load balancers",
};

/// The steps that build the balancers, in order.
pub(crate) const ORDER: &[Step<Unit>] = &[PUBLIC_IPS, LOAD_BALANCERS];

/// The steps that delete them: an IP cannot be deleted while a balancer uses it.
pub(crate) const DELETION: &[Step<Unit>] = &[LOAD_BALANCERS, PUBLIC_IPS];

/// The balancers and IPs of `object`'s spec; `port` is the API server's.
///
/// # Errors
/// When the spec asks for something Azure would refuse.
pub(crate) fn plan(
    state: &State,
    object: &AzureCluster,
    port: i32,
) -> Result<ClusterLoadBalancers, PlanError> {
    let scope = ClusterScope::new(object, state.features, state.subscription.as_deref())?;
    ClusterLoadBalancers::of(&scope, state.features, port)
}

/// Whether the spec calls for the step of `unit`.
pub(crate) fn expects(plan: &ClusterLoadBalancers, unit: Unit) -> bool {
    match unit {
        Unit::PublicIps => !plan.public_ips.is_empty(),
        Unit::LoadBalancers => !plan.load_balancers.is_empty(),
    }
}

/// The ARM client for `object`, with the credentials of its identity.
///
/// # Errors
/// When the identity cannot be used.
pub(crate) async fn arm_client(state: &State, object: &AzureCluster) -> Result<ArmClient, Error> {
    let credential = state
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await?;
    Ok(credential.arm_client(ID.user_agent()))
}

pub(crate) fn rule_operations(machine: &AzureMachine) -> Operations {
    let states = machine
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states);
    Operations::owned(states, ID.name(), &[InboundNatRule::SERVICE])
}

/// The name of `machine`'s rule: its VM's name, as compute names the VM.
pub(crate) fn rule_name(machine: &AzureMachine) -> String {
    virtual_machine::vm_name(&machine.name_any(), virtual_machine::is_windows(&machine.spec))
}

/// The rule of `machine` on `target`.
pub(crate) fn rule_of(machine: &AzureMachine, target: &ApiServerFrontend) -> Result<InboundNatRule, Failure> {
    let name = rule_name(machine);
    InboundNatRule::new(target, &name).map_err(|source: IdError| {
        Failure::from(PlanError::from(ScopeError::Invalid {
            field: "metadata.name",
            value: name,
            source,
        }))
    })
}
