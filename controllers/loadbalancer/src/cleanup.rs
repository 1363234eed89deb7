//! Deleting an AzureCluster's load balancers, then their public IPs ([`DELETION`]).
//!
//! Each balancer and IP goes individually, whether or not the resource group is ours. Leaving
//! them to the network controller's group delete would save a few calls, but the individual
//! deletes are correct in every case — a brought group, a group that is not deleted because
//! something else keeps it — and cost nothing once the group is gone (a missing resource counts
//! as deleted).

use std::time::Duration;

use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::api::{AzureCluster, AzureMachine};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::{Error, Failure};
use capz_kit::filter::Reported as _;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, each};
use capz_kit::resource;
use capz_resources::inbound_nat_rule::ApiServerFrontend;

use crate::context::{ID, Machines, Site, State};
use crate::plan::{DELETION, SERVICES, Unit, arm_client, expects, plan, rule_of, rule_operations};
use crate::status::{OWNED, OWNED_ON_MACHINES, publish, report_rule};

/// Deletes the load balancers, then their public IPs; `Ok` once both are gone, so that the
/// finalizer goes.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    port: i32,
) -> Result<Action, Error> {
    let Ok(plan) = plan(state, object, port) else {
        // A spec that never described valid load balancers created none.
        return Ok(Action::await_change());
    };
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Delete);
    let order: Vec<_> = DELETION.iter().filter(|step| expects(&plan, step.unit)).collect();
    match arm_client(state, object).await {
        Err(error) => steps.hold(order, Outcome::failed(error)),
        Ok(client) => {
            for step in order {
                let work = async {
                    match step.unit {
                        Unit::LoadBalancers => {
                            each(&client, &plan.load_balancers, &mut operations, Direction::Delete).await
                        }
                        Unit::PublicIps => {
                            let ips: Vec<_> = plan.public_ips.iter().map(|(ip, _)| ip.clone()).collect();
                            each(&client, &ips, &mut operations, Direction::Delete).await
                        }
                    }
                };
                steps.run(step, work).await;
            }
        }
    }
    let pass = steps.finish();
    publish(api, object, OWNED, pass.observations.clone(), &operations).await?;
    pass.next()
}

/// How soon a machine whose interface compute still holds is looked at again, should the change
/// of its finalizers not wake it first.
pub(crate) const COMPUTE_WAIT: Duration = Duration::from_secs(30);

/// Deletes the rule of a deleted machine once compute has let go of its interface; done when the
/// rule is gone (or its cluster or balancer is, which took the rule with it).
pub(crate) async fn cleanup_rule(
    machines: &Machines,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    site: Option<&Site>,
    target: Option<&ApiServerFrontend>,
) -> Result<Action, Error> {
    let mut operations = rule_operations(machine);
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
    let outcome = match remove_rule(machines, machine, site, target, &mut operations).await {
        Ok(outcome) if outcome.is_done() => return Ok(Action::await_change()),
        Ok(outcome) => outcome,
        Err(failure) => Outcome::Failed(failure),
    };
    report_rule(api, machine, outcome, Direction::Delete, &operations).await
}

pub(crate) async fn remove_rule(
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
