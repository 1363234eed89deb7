//! What compute writes on an AzureMachine: its conditions, `Ready` summing them up, the status
//! fields it owns, and its operations in flight, applied only when something changed.

use capz_api::AzureMachine;
use capz_api::common::MachineAddress;
use capz_api::common::conditions::{ConditionStatus, ConditionType};
use capz_kit::conditions::{self, Observation};
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};
use capz_rules::support::Kind;
use serde::Serialize;

use crate::context::ID;

/// Every condition type compute writes on an AzureMachine.
const OWNED: &[ConditionType] = &[
    ConditionType::READY,
    ConditionType::VM_RUNNING,
    ConditionType::NETWORK_INTERFACES_READY,
    ConditionType::AVAILABILITY_SET_READY,
    ConditionType::DISKS_READY,
    ConditionType::ROLE_ASSIGNMENT_READY,
    ConditionType::SPEC_SUPPORTED,
    ConditionType::BOOTSTRAP_SUCCEEDED,
];

/// The conditions compute reports the AzureMachine fields on that capz-rs does not act on yet
/// (`capz_rules::support`).
pub(crate) const NOT_YET: &[ConditionType] = &[ConditionType::SPEC_SUPPORTED];

/// A failure that needs a person, kept in `status.failureReason` / `failureMessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) reason: String,
    pub(crate) message: String,
}

/// The status fields compute owns beside conditions and operations, as a pass found them.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    pub(crate) addresses: Option<Vec<MachineAddress>>,
    pub(crate) vm_state: Option<String>,
    pub(crate) failure: Option<Failure>,
}

/// The fields as applied.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Applied<'a> {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    addresses: Option<&'a [MachineAddress]>,
    #[serde(rename = "vmState", skip_serializing_if = "Option::is_none")]
    vm_state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_message: Option<&'a str>,
}

/// Applies `observations` with `Ready` summing them up, the fields `machine` sets that capz-rs
/// does not act on yet (kept out of `Ready`: the VM works without them, and a machine that never
/// became Ready would be replaced, or hold its cluster back), `fields` and `operations`, when they
/// change `machine`'s status; gives whether it wrote.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish(
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    mut observations: Vec<Observation>,
    operations: &Operations,
    fields: &Fields,
) -> capz_kit::kube::Result<bool> {
    let ready = conditions::ready(&observations);
    let applied = Applied {
        ready: ready.status == ConditionStatus::True,
        addresses: fields.addresses.as_deref(),
        vm_state: fields.vm_state.as_deref(),
        failure_reason: fields.failure.as_ref().map(|failure| failure.reason.as_str()),
        failure_message: fields.failure.as_ref().map(|failure| failure.message.as_str()),
    };
    observations.extend(conditions::not_yet(Kind::AzureMachine, machine, NOT_YET));
    observations.push(ready);
    let report = Report {
        observations,
        operations: Some(operations),
        fields: applied,
    };
    status::publish(api, &ID.field_manager(), OWNED, machine, report).await
}

#[cfg(test)]
mod tests {
    use capz_api::common::conditions::ConditionSeverity;
    use capz_kit::conditions::Reason;

    use super::*;

    #[test]
    fn fields_not_acted_on_are_reported_by_compute() {
        let machine: AzureMachine = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {
                "vmSize": "Standard_D2s_v3",
                "osDisk": {"osType": "Linux", "diskSizeGB": 128},
                "allocatePublicIP": true,
                "capacityReservationGroupID": "/crg",
            },
        }))
        .unwrap();
        let not_yet = conditions::not_yet(Kind::AzureMachine, &machine, NOT_YET);
        let types: Vec<&str> = not_yet
            .iter()
            .map(|observation| observation.type_.as_str())
            .collect();
        assert_eq!(types, ["SpecSupported"]);
        let spec = &not_yet[0];
        assert_eq!(spec.reason, Some(Reason::NOT_SUPPORTED));
        assert_eq!(spec.severity, Some(ConditionSeverity::Warning));
        let message = spec.message.as_deref().unwrap();
        assert!(
            message.contains("spec.allocatePublicIP: ")
                && message.contains("spec.capacityReservationGroupID: "),
            "{message}"
        );
        assert!(
            not_yet
                .iter()
                .all(|observation| OWNED.contains(&observation.type_))
        );
    }

    #[test]
    fn every_condition_the_matrix_names_for_machines_is_reported() {
        for entry in Kind::AzureMachine.entries() {
            if let capz_rules::support::Support::NotYet(not_yet) = &entry.support
                && let Some(condition) = &not_yet.condition
            {
                assert!(NOT_YET.contains(condition), "{}: {condition}", entry.field);
            }
        }
    }
}
