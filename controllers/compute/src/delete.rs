//! Deleting a machine's Azure resources: the machine, its interfaces, its disks, the role
//! assignment of its identity, and its availability set once no other machine is in it. Each
//! waits for the one before it; what is not ours is left alone.

use std::time::Duration;

use capz_api::AzureMachine;
use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_azure::{ArmClient, Category as ArmCategory};
use capz_kit::conditions::Reason;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::Classify as _;
use capz_kit::resource::{self, AzureResource, Progress, ResourceError};
use capz_kit::scope::ClusterScope;

use crate::plan::{self, Plan};
use crate::reconcile::{Failed, Found, POLL, SERVICES, on};
use crate::status::{Report, publish};
use crate::{Error, ID, Shared};

/// Deletes the Azure resources of `machine`; `Ok` once all are gone, so that the finalizer goes.
/// While a deletion runs it answers [`Error::Pending`]: kube-runtime removes the finalizer after
/// any successful cleanup, so waiting must not look like success.
pub(crate) async fn cleanup(
    shared: &Shared,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    found: &Found,
) -> Result<Action, Error> {
    let Some(azure_cluster) = found.azure_cluster.as_ref() else {
        return Err(Error::Orphaned(format!(
            "the AzureCluster of Cluster {} is gone; the machine's Azure resources cannot be found",
            found.cluster.metadata.name.as_deref().unwrap_or_default()
        )));
    };
    let recorded = machine
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states);
    let mut operations = Operations::owned(recorded, ID.name(), SERVICES);
    let mut report = Report::default();
    report.fails(
        ConditionType::VM_RUNNING,
        Reason::DELETING,
        ConditionSeverity::Info,
        "deleting the VM and its resources",
    );
    let outcome = delete_all(shared, azure_cluster, machine, found, &mut operations).await;
    match outcome {
        // Everything is gone: the status goes with the object.
        Ok(None) => Ok(Action::await_change()),
        Ok(Some(wait)) => {
            publish(api, machine, &report, &operations).await?;
            Err(Error::Pending(wait))
        }
        Err(Failed { condition, error }) => {
            report.fails(
                condition,
                error.reason(),
                error.category().severity(),
                error.to_string(),
            );
            publish(api, machine, &report, &operations).await?;
            Err(error)
        }
    }
}

async fn delete_all(
    shared: &Shared,
    azure_cluster: &capz_api::AzureCluster,
    machine: &AzureMachine,
    found: &Found,
    operations: &mut Operations,
) -> Result<Option<Duration>, Failed> {
    let scope = ClusterScope::new(
        azure_cluster,
        shared.features,
        shared.fallback_subscription.as_deref(),
    )?;
    let spec = plan::defaulted(machine, &scope, shared.features);
    let plan = Plan::new(&scope, azure_cluster, machine, &found.machine, &spec)?;
    let credential = shared
        .identities
        .credential(ClusterIdentityRef::from(azure_cluster))
        .await?;
    let client = credential.arm_client(ID.user_agent());
    let running = ConditionType::VM_RUNNING;
    if let Some(wait) = step(&client, &plan.vm, operations, &running).await? {
        return Ok(Some(wait));
    }
    let interfaces = ConditionType::NETWORK_INTERFACES_READY;
    for interface in &plan.interfaces {
        if let Some(wait) = step(&client, interface, operations, &interfaces).await? {
            return Ok(Some(wait));
        }
    }
    let disks = ConditionType::DISKS_READY;
    for disk in &plan.disks {
        if let Some(wait) = step(&client, disk, operations, &disks).await? {
            return Ok(Some(wait));
        }
    }
    if let Some(role) = plan.role.as_ref() {
        let ready = ConditionType::ROLE_ASSIGNMENT_READY;
        let assignment = role.assignment(None).map_err(on(ready.clone()))?;
        if let Some(wait) = step(&client, &assignment, operations, &ready).await? {
            return Ok(Some(wait));
        }
    }
    if let Some(set) = plan.availability_set.as_ref() {
        match resource::delete(&client, set, operations).await {
            Ok(Progress::Done(())) => {}
            Ok(Progress::InProgress { retry_after }) => return Ok(Some(retry_after.unwrap_or(POLL))),
            // Other machines of the group are still in the set; the last one deletes it.
            Err(ResourceError::Arm { source, .. })
                if source.category() == ArmCategory::Conflict
                    || source.code() == Some("OperationNotAllowed") => {}
            Err(error) => return Err(on(ConditionType::AVAILABILITY_SET_READY)(error)),
        }
    }
    Ok(None)
}

/// Deletes one resource; how long to wait while its deletion runs.
async fn step<R: AzureResource>(
    client: &ArmClient,
    resource: &R,
    operations: &mut Operations,
    condition: &ConditionType,
) -> Result<Option<Duration>, Failed> {
    match resource::delete(client, resource, operations)
        .await
        .map_err(on(condition.clone()))?
    {
        Progress::Done(()) => Ok(None),
        Progress::InProgress { retry_after } => Ok(Some(retry_after.unwrap_or(POLL))),
    }
}
