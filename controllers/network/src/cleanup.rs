//! Deleting an AzureCluster's network: once no other capz-rs controller keeps a finalizer on the
//! cluster (their resources sit in this network), the peerings go both ways (the one back lives
//! in the remote network, which the group's deletion would not touch), then the resource group
//! goes in one delete when it is the cluster's; in a group the user brought, the controller's own resources go one by one in
//! the reverse order of their creation. What the user brought (the group, a virtual network and
//! its subnets, rules added to a security group) stays.

use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::{ArmClient, Category as ArmCategory};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, each, in_turn};
use capz_kit::resource::{self, AzureResource};
use capz_kit::scope::ClusterScope;
use capz_kit::tags;
use capz_resources::security_group::LastApplied;
use capz_resources::subnet::Network;

use crate::context::{ID, State};
use crate::plan::{DELETION, PEERINGS, Plan, SERVICES, Unit};
use crate::status::publish;

/// How soon a cluster whose peers still hold their finalizers is looked at again, should their
/// removal not wake it first.
const PEERS_WAIT: Duration = Duration::from_secs(30);

/// Whether the resource at `unit`'s id exists with the cluster's `owned` tag.
async fn owned<R: AzureResource>(client: &ArmClient, unit: &R, cluster: &str) -> Result<bool, Outcome> {
    match client.get::<R::Model>(unit.id(), &R::Model::API_VERSION).await {
        Ok(model) => Ok(tags::is_owned(model.tags(), cluster)),
        Err(error) if error.category() == ArmCategory::NotFound => Ok(false),
        Err(error) => Err(Outcome::failed(error)),
    }
}

/// One deleting pass over the network of a cluster whose resource group is not its own.
struct Run<'a> {
    client: &'a ArmClient,
    plan: &'a Plan,
    operations: &'a mut Operations,
    /// Whether the virtual network (so its subnets) is the cluster's.
    network: Network,
}

impl Run<'_> {
    async fn delete(&mut self, unit: Unit) -> Outcome {
        let (client, plan) = (self.client, self.plan);
        match unit {
            Unit::Subnets if self.network == Network::Owned => {
                let subnets = match plan.subnets(Network::Owned) {
                    Ok(subnets) => subnets,
                    Err(error) => return Outcome::failed(error),
                };
                in_turn(client, &subnets, self.operations, Direction::Delete).await
            }
            Unit::NatGateways => {
                let outcome = each(client, &plan.nat_gateways, self.operations, Direction::Delete).await;
                if !outcome.is_done() {
                    return outcome;
                }
                let addresses: Vec<_> = plan
                    .nat_gateways
                    .iter()
                    .map(|gateway| gateway.public_ip().clone())
                    .collect();
                each(client, &addresses, self.operations, Direction::Delete).await
            }
            Unit::RouteTables => each(client, &plan.route_tables, self.operations, Direction::Delete).await,
            Unit::PrivateEndpoints => {
                each(
                    client,
                    &plan.private_endpoints,
                    self.operations,
                    Direction::Delete,
                )
                .await
            }
            Unit::SecurityGroups => {
                each(client, &plan.security_groups, self.operations, Direction::Delete).await
            }
            Unit::VirtualNetwork if self.network == Network::Owned => {
                let mut outcome = Outcome::Done;
                outcome.absorb(resource::delete(client, &plan.network, self.operations).await);
                outcome
            }
            _ => Outcome::Done,
        }
    }
}

/// Deletes the network: the resource group in one delete when it is the cluster's (Azure deletes
/// everything in it), else the cluster's own resources one by one.
async fn delete(steps: &mut Steps<'_>, client: &ArmClient, plan: &Plan, operations: &mut Operations) {
    if plan.expects(Unit::Peerings) {
        let peerings = in_turn(client, &plan.peerings, operations, Direction::Delete);
        steps.run(&PEERINGS, peerings).await;
        if steps.blocked() {
            return;
        }
    }
    let cluster = &plan.scope().name;
    let group_deleting =
        operations.in_flight(<capz_resources::resource_group::ResourceGroup as AzureResource>::SERVICE) > 0;
    let group_owned = group_deleting
        || match owned(client, &plan.group, cluster).await {
            Ok(owned) => owned,
            Err(failure) => {
                return steps.record(ConditionType::RESOURCE_GROUP_READY, "resource group", failure);
            }
        };
    if group_owned {
        let mut outcome = Outcome::Done;
        outcome.absorb(resource::delete(client, &plan.group, operations).await);
        return steps.record(ConditionType::RESOURCE_GROUP_READY, "resource group", outcome);
    }
    // Subnets are the cluster's only in its own network; a delete in flight says it was.
    let network_owned = operations.in_flight(<capz_resources::subnet::Subnet as AzureResource>::SERVICE) > 0
        || match owned(client, &plan.network, cluster).await {
            Ok(owned) => owned,
            Err(failure) => return steps.record(ConditionType::VNET_READY, "virtual network", failure),
        };
    let mut run = Run {
        client,
        plan,
        operations,
        network: if network_owned {
            Network::Owned
        } else {
            Network::Brought
        },
    };
    for step in DELETION.iter().filter(|step| plan.expects(step.unit)) {
        steps.run(step, run.delete(step.unit)).await;
    }
}

/// Cleans up a deleted AzureCluster. `Ok` lets the finalizer go; [`Error::Pending`] keeps it
/// and says when to look again.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    api_server_port: i32,
) -> Result<Action, Error> {
    let peers: Vec<&str> = object
        .finalizers()
        .iter()
        .map(String::as_str)
        .filter(|finalizer| *finalizer != ID.finalizer() && Family::from_finalizer(finalizer).is_some())
        .collect();
    let fallback = state.settings.environment.subscription_id.as_deref();
    // A spec naming no valid subscription or names never led to anything in Azure.
    let Ok(plan) = ClusterScope::new(object, state.features, fallback)
        .and_then(|scope| Plan::new(scope, api_server_port, &LastApplied::default()))
    else {
        return Ok(Action::await_change());
    };
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Delete);
    if !peers.is_empty() {
        let waiting = format!(
            "waiting for the finalizers {} to be removed before deleting the network",
            peers.join(", ")
        );
        steps.record(
            ConditionType::NETWORK_INFRASTRUCTURE_READY,
            "network",
            Outcome::Waiting(waiting),
        );
        // Their removal wakes the controller; the requeue is a safety net.
        return match report(api, object, steps, &operations).await {
            Ok(_) | Err(Error::Pending(_)) => Err(Error::Pending(PEERS_WAIT)),
            Err(error) => Err(error),
        };
    }
    match state
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await
    {
        Ok(credential) => {
            let client = credential.arm_client(ID.user_agent());
            delete(&mut steps, &client, &plan, &mut operations).await;
        }
        Err(error) => steps.record(
            ConditionType::NETWORK_INFRASTRUCTURE_READY,
            "network",
            Outcome::failed(error),
        ),
    }
    if !steps.blocked() {
        // Everything is gone: the status goes with the object.
        return Ok(Action::await_change());
    }
    report(api, object, steps, &operations).await
}

/// Applies the deletion's progress: the steps' conditions, and `NetworkInfrastructureReady` and
/// `Ready` following the step that holds the deletion back. Gives the next reconcile.
async fn report(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    steps: Steps<'_>,
    operations: &Operations,
) -> Result<Action, Error> {
    let mut pass = steps.finish();
    let blocking = pass
        .observations
        .iter()
        .find(|observation| observation.reason != Some(Reason::DELETED))
        .cloned()
        .unwrap_or_else(|| {
            Observation::fails(
                ConditionType::NETWORK_INFRASTRUCTURE_READY,
                Reason::DELETING,
                ConditionSeverity::Info,
                "deleting the network",
            )
        });
    for type_ in [ConditionType::NETWORK_INFRASTRUCTURE_READY, ConditionType::READY] {
        pass.observations.retain(|observation| observation.type_ != type_);
        pass.observations.push(Observation {
            type_,
            ..blocking.clone()
        });
    }
    let current = object.status.as_ref();
    let ready = current.and_then(|status| status.ready) == Some(true);
    let domains = current.and_then(|status| status.failure_domains.as_ref());
    let observations = std::mem::take(&mut pass.observations);
    publish(api, object, observations, operations, ready, domains).await?;
    pass.next()
}
