//! Deleting an AzureMachine's Azure resources in [`DELETION`]: the machine, its interfaces, its
//! disks, the role assignment of its identity, and its availability set once no other machine is
//! in it. Each step waits for the one before it; what is not ours is left alone.

use capz_api::AzureMachine;
use capz_api::common::conditions::ConditionType;
use capz_azure::{ArmClient, Category as ArmCategory};
use capz_kit::error::{Error, Orphaned};
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, each};
use capz_kit::resource::{self, ResourceError};
use capz_kit::scope::ClusterScope;

use crate::context::{Found, ID, State};
use crate::plan::{self, DELETION, Plan, SERVICES, Unit};
use crate::status::{Fields, publish};

/// Deletes the Azure resources of `machine`; `Ok` once all are gone, so that the finalizer goes.
/// While a deletion runs it answers [`Error::Pending`]: kube-runtime removes the finalizer after
/// any successful cleanup, so waiting must not look like success.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    found: &Found,
) -> Result<Action, Error> {
    let Some(azure_cluster) = found.azure_cluster.as_ref() else {
        return Err(Error::failed(Orphaned(format!(
            "the AzureCluster of Cluster {} is gone; the machine's Azure resources cannot be found",
            found.cluster.metadata.name.as_deref().unwrap_or_default()
        ))));
    };
    let mut operations = Operations::owned(machine.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(machine.conditions(), Direction::Delete);
    let plan = ClusterScope::new(
        azure_cluster,
        state.features,
        state.fallback_subscription.as_deref(),
    )
    .map_err(Into::into)
    .and_then(|scope| {
        let spec = plan::defaulted(machine, &scope, state.features);
        Plan::new(&scope, azure_cluster, machine, &found.machine, &spec).map_err(Into::into)
    });
    let credential = match plan {
        Ok(plan) => state
            .identities
            .credential(ClusterIdentityRef::from(azure_cluster))
            .await
            .map(|credential| (plan, credential))
            .map_err(Into::into),
        Err(failure) => Err(failure),
    };
    match credential {
        Ok((plan, credential)) => {
            let client = credential.arm_client(ID.user_agent());
            for step in DELETION.iter().filter(|step| plan.expects(step.unit)) {
                steps
                    .run(step, delete(&client, &plan, step.unit, &mut operations))
                    .await;
            }
        }
        Err(failure) => steps.record(
            ConditionType::VM_RUNNING,
            "virtual machine",
            Outcome::Failed(failure),
        ),
    }
    if !steps.blocked() {
        // Everything is gone: the status goes with the object.
        return Ok(Action::await_change());
    }
    let pass = steps.finish();
    publish(
        api,
        machine,
        pass.observations.clone(),
        &operations,
        &Fields::default(),
    )
    .await?;
    pass.next()
}

/// Deletes the resources of the step of `unit`.
async fn delete(client: &ArmClient, plan: &Plan, unit: Unit, operations: &mut Operations) -> Outcome {
    let mut outcome = Outcome::Done;
    match unit {
        Unit::VirtualMachine => {
            outcome.absorb(resource::delete(client, &plan.vm, operations).await);
        }
        Unit::NetworkInterfaces => {
            return each(client, &plan.interfaces, operations, Direction::Delete).await;
        }
        Unit::Disks => return each(client, &plan.disks, operations, Direction::Delete).await,
        Unit::RoleAssignment => {
            if let Some(role) = plan.role.as_ref() {
                match role.assignment(None) {
                    Ok(assignment) => {
                        outcome.absorb(resource::delete(client, &assignment, operations).await);
                    }
                    Err(error) => outcome.fail(error),
                }
            }
        }
        Unit::AvailabilitySet => {
            if let Some(set) = plan.availability_set.as_ref() {
                match resource::delete(client, set, operations).await {
                    // Other machines of the group are still in the set; the last one deletes it.
                    Err(ResourceError::Arm { source, .. })
                        if source.category() == ArmCategory::Conflict
                            || source.code() == Some("OperationNotAllowed") => {}
                    result => {
                        outcome.absorb(result);
                    }
                }
            }
        }
        Unit::Extensions => {}
    }
    outcome
}
