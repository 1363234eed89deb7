//! Deleting an AzureCluster's network: once no other capz-rs controller keeps a finalizer on the
//! cluster (their resources sit in this network), the resource group goes in one delete when it
//! is the cluster's; in a group the user brought, the controller's own resources go one by one in
//! the reverse order of their creation. What the user brought (the group, a virtual network and
//! its subnets, rules added to a security group) stays.

use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::capi::DEFAULT_API_SERVER_PORT;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::azure::{ArmClient, Category as ArmCategory};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::resource::{self, AzureResource};
use capz_kit::scope::ClusterScope;
use capz_kit::tags;
use capz_resources::security_group::LastApplied;
use capz_resources::subnet::Network;

use crate::plan::Plan;
use crate::provision::{Outcome, observation};
use crate::{Context, Error, ID, Report, SERVICES, current_operations, publish};

/// Deletes every unit of `units`, folding their results into one outcome.
async fn each<R: AzureResource>(client: &ArmClient, units: &[R], operations: &mut Operations) -> Outcome {
    let mut outcome = Outcome::Done;
    for unit in units {
        outcome.absorb(resource::delete(client, unit, operations).await);
    }
    outcome
}

/// Whether the resource at `unit`'s id exists with the cluster's `owned` tag.
async fn owned<R: AzureResource>(client: &ArmClient, unit: &R, cluster: &str) -> Result<bool, Outcome> {
    match client.get::<R::Model>(unit.id(), &R::API_VERSION).await {
        Ok(model) => Ok(tags::is_owned(R::tags(&model), cluster)),
        Err(error) if error.category() == ArmCategory::NotFound => Ok(false),
        Err(error) => Err(Outcome::Failed(Box::new(error))),
    }
}

/// Deletes the cluster's own resources in a group it does not own, last created first; each
/// stage waits for the one before it (a subnet holds on to its security group).
async fn one_by_one(client: &ArmClient, plan: &Plan, operations: &mut Operations) -> Outcome {
    let cluster = &plan.scope().name;
    // Subnets are the cluster's only in its own network; a delete in flight says it was.
    let network_owned = operations.in_flight(<capz_resources::subnet::Subnet as AzureResource>::SERVICE) > 0
        || match owned(client, &plan.network, cluster).await {
            Ok(owned) => owned,
            Err(failure) => return failure,
        };
    if network_owned {
        let subnets = match plan.subnets(Network::Owned) {
            Ok(subnets) => subnets,
            Err(error) => return Outcome::Failed(Box::new(error)),
        };
        // One at a time: Azure refuses a second operation on a virtual network's subnets while
        // one runs.
        for subnet in &subnets {
            let mut outcome = Outcome::Done;
            outcome.absorb(resource::delete(client, subnet, operations).await);
            if !matches!(outcome, Outcome::Done) {
                return outcome;
            }
        }
    }
    let outcome = each(client, &plan.nat_gateways, operations).await;
    if !matches!(outcome, Outcome::Done) {
        return outcome;
    }
    let addresses: Vec<_> = plan
        .nat_gateways
        .iter()
        .map(|gateway| gateway.public_ip().clone())
        .collect();
    let mut outcome = each(client, &addresses, operations).await;
    if matches!(outcome, Outcome::Done) {
        outcome = each(client, &plan.route_tables, operations).await;
    }
    if matches!(outcome, Outcome::Done) {
        outcome = each(client, &plan.security_groups, operations).await;
    }
    if matches!(outcome, Outcome::Done) {
        outcome.absorb(resource::delete(client, &plan.network, operations).await);
    }
    outcome
}

async fn delete(client: &ArmClient, plan: &Plan, operations: &mut Operations) -> Outcome {
    let group_deleting =
        operations.in_flight(<capz_resources::resource_group::ResourceGroup as AzureResource>::SERVICE) > 0;
    let group_owned = group_deleting
        || match owned(client, &plan.group, &plan.scope().name).await {
            Ok(owned) => owned,
            Err(failure) => return failure,
        };
    if group_owned {
        // Azure deletes everything in the group with it.
        let mut outcome = Outcome::Done;
        outcome.absorb(resource::delete(client, &plan.group, operations).await);
        outcome
    } else {
        one_by_one(client, plan, operations).await
    }
}

/// Cleans up a deleted AzureCluster. `Ok` lets the finalizer go; [`Error::Deleting`] keeps it
/// and says when to look again.
pub(crate) async fn cleanup(
    context: &Context,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
) -> Result<Action, Error> {
    let peers: Vec<&str> = object
        .finalizers()
        .iter()
        .map(String::as_str)
        .filter(|finalizer| *finalizer != ID.finalizer() && Family::from_finalizer(finalizer).is_some())
        .collect();
    let fallback = context.settings.environment.subscription_id.as_deref();
    // A spec naming no valid subscription or names never led to anything in Azure.
    let Ok(plan) = ClusterScope::new(object, context.features, fallback)
        .and_then(|scope| Plan::new(scope, DEFAULT_API_SERVER_PORT, &LastApplied::default()))
    else {
        return Ok(Action::await_change());
    };
    let mut operations = Operations::owned(current_operations(object), ID.name(), SERVICES);
    if !peers.is_empty() {
        let waiting = Observation::fails(
            ConditionType::NETWORK_INFRASTRUCTURE_READY,
            Reason::DELETING,
            ConditionSeverity::Info,
            format!(
                "waiting for the finalizers {} to be removed before deleting the network",
                peers.join(", ")
            ),
        );
        report(api, object, waiting, &operations).await?;
        // Their removal wakes the controller; the requeue is a safety net.
        return Err(Error::Deleting(Duration::from_secs(30)));
    }
    let outcome = match context
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await
    {
        Ok(credential) => delete(&credential.arm_client(ID.user_agent()), &plan, &mut operations).await,
        Err(error) => Outcome::Failed(Box::new(error)),
    };
    if matches!(outcome, Outcome::Done) {
        return Ok(Action::await_change());
    }
    let observed = observation(
        ConditionType::NETWORK_INFRASTRUCTURE_READY,
        "deleting the network",
        &outcome,
        Reason::DELETING,
    );
    report(api, object, observed, &operations).await?;
    match outcome {
        Outcome::Failed(failure) => Err(Error::Azure(failure)),
        Outcome::InFlight(retry_after) => Err(Error::Deleting(retry_after.unwrap_or(crate::POLL))),
        Outcome::Done => Ok(Action::await_change()),
    }
}

/// Applies the deletion's progress: the network's condition, `Ready` following it. Gives whether
/// the status changed.
async fn report(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    network: Observation,
    operations: &Operations,
) -> Result<bool, Error> {
    let ready = Observation {
        type_: ConditionType::READY,
        ..network.clone()
    };
    let current = object.status.as_ref();
    publish(
        api,
        object,
        Report {
            observations: vec![network, ready],
            ready: Some(current.and_then(|status| status.ready) == Some(true)),
            failure_domains: current.and_then(|status| status.failure_domains.as_ref()),
            operations,
        },
    )
    .await
}
