//! Deleting a pool in [`DELETION`]: the scale set (Azure deletes its instances with it), the role
//! assignment of its identity, then its AzureMachinePoolMachines; and deleting one instance when
//! its AzureMachinePoolMachine is deleted (after Cluster API drained its Node).

use capz_api::common::conditions::ConditionType;
use capz_api::{AzureMachinePool, AzureMachinePoolMachine};
use capz_azure::ResourceId;
use capz_kit::cluster::{azure_cluster_of, owner_cluster};
use capz_kit::error::{Error, Failure, Orphaned};
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::api::{DeleteParams, ListParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps};
use capz_kit::resource;
use capz_kit::scope::ClusterScope;
use capz_resources::scale_set::ScaleSetMember;
use capz_resources::virtual_machine::invalid;

use crate::context::{AZURE_POOL_LABEL, Found, ID, State};
use crate::plan::{DELETION, MEMBER_SERVICES, Plan, SERVICES, Unit};
use crate::status::{Fields, publish};

/// Deletes the Azure resources of `pool`; `Ok` once all are gone, so that the finalizer goes.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureMachinePool>,
    pool: &AzureMachinePool,
    found: &Found,
) -> Result<Action, Error> {
    let Some(azure_cluster) = found.azure_cluster.as_ref() else {
        return Err(Error::failed(Orphaned(format!(
            "the AzureCluster of Cluster {} is gone; the pool's scale set cannot be found",
            found.cluster.name_any()
        ))));
    };
    let mut operations = Operations::owned(pool.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(pool.conditions(), Direction::Delete);
    let client = state
        .identities
        .credential(ClusterIdentityRef::from(azure_cluster))
        .await
        .map(|credential| credential.arm_client(ID.user_agent()))
        .map_err(Failure::from);
    let credential = ClusterScope::new(
        azure_cluster,
        state.features,
        state.fallback_subscription.as_deref(),
    )
    .map_err(Failure::from)
    .and_then(|scope| Plan::new(&scope, pool, &found.pool).map_err(Failure::from))
    .and_then(|plan| client.map(|client| (plan, client)));
    match credential {
        Ok((plan, client)) => {
            for step in DELETION.iter().filter(|step| plan.expects(step.unit)) {
                let work = async {
                    let mut outcome = Outcome::Done;
                    match step.unit {
                        Unit::ScaleSet => {
                            outcome.absorb(resource::delete(&client, &plan.set, &mut operations).await);
                        }
                        Unit::RoleAssignment => match plan.role.as_ref().map(|role| role.assignment(None)) {
                            Some(Ok(assignment)) => {
                                outcome.absorb(resource::delete(&client, &assignment, &mut operations).await);
                            }
                            Some(Err(error)) => outcome.fail(error),
                            None => {}
                        },
                    }
                    outcome
                };
                steps.run(step, work).await;
            }
        }
        Err(failure) => steps.record(
            ConditionType::SCALE_SET_RUNNING,
            "scale set",
            Outcome::Failed(failure),
        ),
    }
    if !steps.blocked() {
        // The instances went with the set: their objects go, and the pool once none is left.
        if remove_members(state, pool).await? == 0 {
            // The cluster's other pools, if any, follow its Nodes again on their next pass.
            state
                .workloads
                .forget(&pool.namespace().unwrap_or_default(), &found.cluster.name_any());
            return Ok(Action::await_change());
        }
        return Err(Error::Pending(std::time::Duration::from_secs(2)));
    }
    let pass = steps.finish();
    publish(
        api,
        pool,
        pass.observations.clone(),
        &operations,
        &Fields::default(),
    )
    .await?;
    pass.next()
}

/// Deletes the pool's AzureMachinePoolMachines; gives how many are left.
async fn remove_members(state: &State, pool: &AzureMachinePool) -> Result<usize, Error> {
    let namespace = pool.namespace().unwrap_or_default();
    let api = Api::<AzureMachinePoolMachine>::namespaced(state.client.clone(), &namespace);
    let members = api
        .list(&ListParams::default().labels(&format!("{AZURE_POOL_LABEL}={}", pool.name_any())))
        .await?
        .items;
    for member in members
        .iter()
        .filter(|member| member.metadata.deletion_timestamp.is_none())
    {
        match api.delete(&member.name_any(), &DeleteParams::default()).await {
            Ok(_) | Err(capz_kit::kube::Error::Api(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(members.len())
}

/// Deletes the instance of a deleted AzureMachinePoolMachine; `Ok` once it is gone. When its pool
/// is gone or being deleted, the scale set's deletion takes the instance: nothing to do.
pub(crate) async fn cleanup_member(
    state: &State,
    api: &Api<AzureMachinePoolMachine>,
    member: &AzureMachinePoolMachine,
) -> Result<Action, Error> {
    let namespace = member.namespace().unwrap_or_default();
    let pool_name = member
        .owner_references()
        .iter()
        .find(|owner| owner.kind == "AzureMachinePool")
        .map(|owner| owner.name.clone());
    let pool = match pool_name {
        Some(name) => {
            Api::<AzureMachinePool>::namespaced(state.client.clone(), &namespace)
                .get_opt(&name)
                .await?
        }
        None => None,
    };
    let Some(pool) = pool.filter(|pool| pool.metadata.deletion_timestamp.is_none()) else {
        return Ok(Action::await_change());
    };
    let cluster = owner_cluster(&state.client, &pool).await?;
    let azure_cluster = match cluster.as_ref() {
        Some(cluster) => azure_cluster_of(&state.client, cluster, &namespace).await?,
        None => None,
    };
    let Some(azure_cluster) = azure_cluster else {
        return Err(Error::failed(Orphaned(format!(
            "the Cluster or AzureCluster of AzureMachinePool {} is gone; instance {} cannot be deleted",
            pool.name_any(),
            member.spec.provider_id
        ))));
    };
    let instance = member
        .spec
        .provider_id
        .trim_start_matches("azure://")
        .parse::<ResourceId>()
        .map_err(|err| Error::failed(invalid("spec.providerID", err.to_string())))?;
    let client = state
        .identities
        .credential(ClusterIdentityRef::from(&azure_cluster))
        .await
        .map_err(Error::failed)?
        .arm_client(ID.user_agent());
    let mut operations = Operations::owned(member.operations(), ID.name(), MEMBER_SERVICES);
    let mut outcome = Outcome::Done;
    outcome.absorb(resource::delete(&client, &ScaleSetMember::new(instance), &mut operations).await);
    if outcome.is_done() {
        return Ok(Action::await_change());
    }
    if operations.changed() {
        // Recorded so that a restarted controller polls the deletion instead of starting another.
        let report = capz_kit::status::Report {
            observations: Vec::new(),
            operations: Some(&operations),
            fields: (),
        };
        capz_kit::status::publish(api, &ID.field_manager(), &[], member, report).await?;
    }
    outcome.next(Direction::Delete)
}
