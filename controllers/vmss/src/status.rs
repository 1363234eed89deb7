//! What vmss writes: on an AzureMachinePool its conditions, `Ready` (the scale set runs and its
//! identity's role is assigned; scaling and replacing instances keep a pool Ready, as in CAPZ),
//! the MachinePool contract's fields and its operations; on each AzureMachinePoolMachine its
//! instance's state and Node. Each is applied only when something changed.

use capz_api::azuremachinepool::AzureMachinePoolInstanceStatus;
use capz_api::common::ObjectReference;
use capz_api::common::conditions::{ConditionSeverity, ConditionStatus, ConditionType};
use capz_api::{AzureMachinePool, AzureMachinePoolMachine};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};
use serde::Serialize;

use crate::context::ID;

/// Every condition type vmss writes on an AzureMachinePool.
const OWNED: &[ConditionType] = &[
    ConditionType::READY,
    ConditionType::SCALE_SET_RUNNING,
    ConditionType::SCALE_SET_DESIRED_REPLICAS,
    ConditionType::SCALE_SET_MODEL_UPDATED,
    ConditionType::ROLE_ASSIGNMENT_READY,
];

/// Every condition type vmss writes on an AzureMachinePoolMachine.
const MEMBER_OWNED: &[ConditionType] = &[ConditionType::READY, ConditionType::NODE_HEALTHY];

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

/// Applies what a pass found of a member's instance and Node, when it changes its status.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish_member(
    api: &Api<AzureMachinePoolMachine>,
    member: &AzureMachinePoolMachine,
    node: Observation,
    fields: MemberFields,
) -> capz_kit::kube::Result<bool> {
    let ready = Observation {
        type_: ConditionType::READY,
        ..node.clone()
    };
    let report = Report {
        observations: vec![node, ready],
        operations: None,
        fields,
    };
    status::publish(api, &ID.field_manager(), MEMBER_OWNED, member, report).await
}

#[cfg(test)]
mod tests {
    use super::*;

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
