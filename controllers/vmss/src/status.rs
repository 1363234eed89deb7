//! What vmss writes: on an AzureMachinePool its conditions, `Ready` (the scale set runs and its
//! identity's role is assigned; scaling and replacing instances keep a pool Ready, as in CAPZ),
//! the MachinePool contract's fields and its operations; on each AzureMachinePoolMachine its
//! instance's state and Node. Each is applied only when something changed. When the pool's
//! instances run the bootstrap check, `BootstrapSucceeded` tells how it went on each instance and
//! over the pool (it does not change `Ready`: an instance that failed it never has a Ready Node).

use capz_api::azuremachinepool::AzureMachinePoolInstanceStatus;
use capz_api::common::ObjectReference;
use capz_api::common::conditions::{ConditionSeverity, ConditionStatus, ConditionType};
use capz_api::{AzureMachinePool, AzureMachinePoolMachine};
use capz_azure::models::ProvisioningState;
use capz_azure::models::compute::ScaleSetInstance;
use capz_kit::conditions::{Observation, Reason};
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};
use capz_resources::vm_extension::is_bootstrap_check;
use serde::Serialize;

use crate::context::ID;

/// Every condition type vmss writes on an AzureMachinePool.
const OWNED: &[ConditionType] = &[
    ConditionType::READY,
    ConditionType::SCALE_SET_RUNNING,
    ConditionType::SCALE_SET_DESIRED_REPLICAS,
    ConditionType::SCALE_SET_MODEL_UPDATED,
    ConditionType::ROLE_ASSIGNMENT_READY,
    ConditionType::BOOTSTRAP_SUCCEEDED,
];

/// Every condition type vmss writes on an AzureMachinePoolMachine.
const MEMBER_OWNED: &[ConditionType] = &[
    ConditionType::READY,
    ConditionType::NODE_HEALTHY,
    ConditionType::BOOTSTRAP_SUCCEEDED,
];

/// The kind of a pool's machines, which Cluster API makes Machines for.
pub(crate) const MACHINE_KIND: &str = "AzureMachinePoolMachine";

/// The status fields vmss owns on a pool beside conditions and operations, as a pass found them.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub(crate) replicas: Option<i32>,
    pub(crate) instances: Option<Vec<AzureMachinePoolInstanceStatus>>,
    pub(crate) provisioning_state: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Applied<'a> {
    infrastructure_machine_kind: &'static str,
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instances: Option<&'a [AzureMachinePoolInstanceStatus]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provisioning_state: Option<&'a str>,
}

/// `Ready` of a pool: the first of `observations` of the set or the role that does not hold.
fn ready(observations: &[Observation]) -> Observation {
    let counted = [
        ConditionType::SCALE_SET_RUNNING,
        ConditionType::ROLE_ASSIGNMENT_READY,
    ];
    let failing = observations
        .iter()
        .filter(|observation| counted.contains(&observation.type_))
        .find(|observation| observation.status != ConditionStatus::True);
    match failing {
        None if observations
            .iter()
            .any(|observation| observation.type_ == ConditionType::SCALE_SET_RUNNING) =>
        {
            Observation::holds(ConditionType::READY)
        }
        None => Observation::unknown(ConditionType::READY, Reason::CREATING, "nothing observed yet"),
        Some(failing) => Observation {
            type_: ConditionType::READY,
            status: ConditionStatus::False,
            severity: failing.severity.or(Some(ConditionSeverity::Info)),
            reason: failing.reason.clone(),
            message: failing.message.clone(),
        },
    }
}

/// Applies a pass's `observations` with `Ready`, `fields` and `operations` to `pool` when they
/// change its status.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish(
    api: &Api<AzureMachinePool>,
    pool: &AzureMachinePool,
    mut observations: Vec<Observation>,
    operations: &Operations,
    fields: &Fields,
) -> capz_kit::kube::Result<bool> {
    let summary = ready(&observations);
    let applied = Applied {
        infrastructure_machine_kind: MACHINE_KIND,
        ready: summary.status == ConditionStatus::True,
        replicas: fields.replicas,
        instances: fields.instances.as_deref(),
        provisioning_state: fields.provisioning_state.as_deref(),
    };
    observations.push(summary);
    let report = Report {
        observations,
        operations: Some(operations),
        fields: applied,
    };
    status::publish(api, &ID.field_manager(), OWNED, pool, report).await
}

/// What a pass knows of one instance, for its AzureMachinePoolMachine.
#[derive(Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberFields {
    pub(crate) ready: bool,
    pub(crate) latest_model_applied: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) provisioning_state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) node_ref: Option<ObjectReference>,
}

/// Where the bootstrap check on `instance` stands, when its model has one (an instance answers
/// the check's installation among its `resources`).
fn bootstrap_state(instance: &ScaleSetInstance) -> Option<ProvisioningState> {
    let check = instance
        .resources
        .iter()
        .flatten()
        .find(|extension| extension.name.as_deref().is_some_and(is_bootstrap_check))?;
    Some(
        check
            .properties
            .as_ref()
            .and_then(|properties| properties.provisioning_state.clone())
            .unwrap_or(ProvisioningState::Creating),
    )
}

/// `BootstrapSucceeded` of one instance, when it runs the bootstrap check.
pub(crate) fn member_bootstrap(instance: &ScaleSetInstance) -> Option<Observation> {
    let bootstrap = ConditionType::BOOTSTRAP_SUCCEEDED;
    Some(match bootstrap_state(instance)? {
        ProvisioningState::Succeeded => Observation::holds(bootstrap),
        ProvisioningState::Failed => Observation::fails(
            bootstrap,
            Reason::BOOTSTRAP_FAILED,
            ConditionSeverity::Error,
            "the node did not report that it finished bootstrapping; see the instance's boot diagnostics",
        ),
        _ => Observation::fails(
            bootstrap,
            Reason::BOOTSTRAP_IN_PROGRESS,
            ConditionSeverity::Info,
            "the instance is bootstrapping",
        ),
    })
}

/// `BootstrapSucceeded` of the pool over its `instances` that run the bootstrap check: failed
/// ones named first, then how many are still bootstrapping.
pub(crate) fn pool_bootstrap<'a>(
    instances: impl Iterator<Item = &'a ScaleSetInstance>,
) -> Option<Observation> {
    let mut checked = 0_usize;
    let mut failed = Vec::new();
    let mut running = 0_usize;
    for instance in instances {
        match bootstrap_state(instance) {
            None => continue,
            Some(ProvisioningState::Succeeded) => {}
            Some(ProvisioningState::Failed) => failed.push(
                instance
                    .instance_id
                    .clone()
                    .or_else(|| instance.name.clone())
                    .unwrap_or_default(),
            ),
            Some(_) => running += 1,
        }
        checked += 1;
    }
    let bootstrap = ConditionType::BOOTSTRAP_SUCCEEDED;
    if checked == 0 {
        return None;
    }
    Some(if !failed.is_empty() {
        Observation::fails(
            bootstrap,
            Reason::BOOTSTRAP_FAILED,
            ConditionSeverity::Error,
            format!(
                "{} of {checked} instances failed the bootstrap check ({}); their nodes did not report that \
                 they finished bootstrapping",
                failed.len(),
                failed.join(", ")
            ),
        )
    } else if running > 0 {
        Observation::fails(
            bootstrap,
            Reason::BOOTSTRAP_IN_PROGRESS,
            ConditionSeverity::Info,
            format!("{running} of {checked} instances are bootstrapping"),
        )
    } else {
        Observation::holds(bootstrap)
    })
}

/// Applies what a pass found of a member's instance and Node, when it changes its status.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish_member(
    api: &Api<AzureMachinePoolMachine>,
    member: &AzureMachinePoolMachine,
    instance: &ScaleSetInstance,
    node: Observation,
    fields: MemberFields,
) -> capz_kit::kube::Result<bool> {
    let ready = Observation {
        type_: ConditionType::READY,
        ..node.clone()
    };
    let report = Report {
        observations: [node, ready]
            .into_iter()
            .chain(member_bootstrap(instance))
            .collect(),
        operations: None,
        fields,
    };
    status::publish(api, &ID.field_manager(), MEMBER_OWNED, member, report).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, check: Option<&str>) -> ScaleSetInstance {
        let resources = check.map_or_else(
            || serde_json::json!([{"name": "CustomScript", "properties": {"provisioningState": "Failed"}}]),
            |state| {
                serde_json::json!([
                    {"name": "CustomScript", "properties": {"provisioningState": "Succeeded"}},
                    {"name": "CAPZ.Linux.Bootstrapping", "properties": {"provisioningState": state}},
                ])
            },
        );
        serde_json::from_value(serde_json::json!({"instanceId": id, "resources": resources})).unwrap()
    }

    #[test]
    fn the_bootstrap_check_is_reported_per_instance_and_over_the_pool() {
        let (done, running, failed) = (
            instance("0", Some("Succeeded")),
            instance("1", Some("Creating")),
            instance("2", Some("Failed")),
        );
        let unchecked = instance("3", None);
        assert_eq!(member_bootstrap(&unchecked), None, "no check, no condition");
        assert_eq!(
            member_bootstrap(&done).map(|observation| observation.status),
            Some(ConditionStatus::True)
        );
        assert_eq!(
            member_bootstrap(&running).and_then(|observation| observation.reason),
            Some(Reason::BOOTSTRAP_IN_PROGRESS)
        );
        assert_eq!(
            member_bootstrap(&failed).and_then(|observation| observation.reason),
            Some(Reason::BOOTSTRAP_FAILED)
        );
        assert_eq!(pool_bootstrap([&unchecked].into_iter()), None);
        let all = [&done, &running, &failed, &unchecked];
        let pool = pool_bootstrap(all.into_iter()).unwrap();
        assert_eq!(pool.reason, Some(Reason::BOOTSTRAP_FAILED));
        assert!(
            pool.message
                .as_deref()
                .unwrap_or_default()
                .starts_with("1 of 3 instances failed the bootstrap check (2)"),
            "{pool:?}"
        );
        let pool = pool_bootstrap([&done, &running].into_iter()).unwrap();
        assert_eq!(
            pool.message.as_deref(),
            Some("1 of 2 instances are bootstrapping")
        );
        assert_eq!(
            pool_bootstrap([&done].into_iter()).map(|observation| observation.status),
            Some(ConditionStatus::True)
        );
    }

    #[test]
    fn scaling_and_replacing_keep_a_running_pool_ready() {
        let scaling = Observation::fails(
            ConditionType::SCALE_SET_DESIRED_REPLICAS,
            Reason::SCALE_SET_SCALING_UP,
            ConditionSeverity::Info,
            "2 of 3",
        );
        let running = Observation::holds(ConditionType::SCALE_SET_RUNNING);
        assert_eq!(ready(&[running, scaling.clone()]).status, ConditionStatus::True);
        let failed = Observation::fails(
            ConditionType::SCALE_SET_RUNNING,
            Reason::SCALE_SET_PROVISION_FAILED,
            ConditionSeverity::Error,
            "ZonalAllocationFailed",
        );
        let summary = ready(&[failed, scaling]);
        assert_eq!(summary.status, ConditionStatus::False);
        assert_eq!(summary.reason, Some(Reason::SCALE_SET_PROVISION_FAILED));
    }
}
