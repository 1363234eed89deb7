//! What compute writes on an AzureMachine: its conditions, `Ready` summing them up, the status
//! fields it owns, and its operations in flight, applied only when something changed.

use capz_api::AzureMachine;
use capz_api::common::MachineAddress;
use capz_api::common::conditions::{Condition, ConditionSeverity, ConditionStatus, ConditionType};
use capz_api::common::operations::Future;
use capz_kit::apply::apply_status;
use capz_kit::conditions::{self, Observation, Reason, differ, observe};
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_rules::support::Kind;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use crate::ID;

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

/// The status fields compute owns, as applied.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnedStatus<'a> {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    addresses: Option<&'a [MachineAddress]>,
    #[serde(rename = "vmState", skip_serializing_if = "Option::is_none")]
    vm_state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_message: Option<&'a str>,
    conditions: &'a [Condition],
    #[serde(skip_serializing_if = "<[Future]>::is_empty")]
    long_running_operation_states: &'a [Future],
}

/// A failure that needs a person, kept in `status.failureReason` / `failureMessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) reason: String,
    pub(crate) message: String,
}

/// What one reconcile found out about an AzureMachine.
#[derive(Debug, Default)]
pub(crate) struct Report {
    observations: Vec<Observation>,
    /// The fields the machine is built without, kept out of `Ready`: the VM works without them,
    /// and a machine that never became Ready would be replaced, or hold its cluster back.
    not_yet: Vec<Observation>,
    pub(crate) addresses: Option<Vec<MachineAddress>>,
    pub(crate) vm_state: Option<String>,
    pub(crate) failure: Option<Failure>,
}

impl Report {
    /// Adds an observation.
    pub(crate) fn observe(&mut self, observation: Observation) {
        self.observations.retain(|known| known.type_ != observation.type_);
        self.observations.push(observation);
    }

    /// Adds the fields `machine` sets that capz-rs does not act on yet.
    pub(crate) fn not_yet(&mut self, machine: &AzureMachine) {
        self.not_yet = conditions::not_yet(Kind::AzureMachine, machine, NOT_YET);
    }

    /// Adds that `type_` holds.
    pub(crate) fn holds(&mut self, type_: ConditionType) {
        self.observe(Observation::holds(type_));
    }

    /// Adds that `type_` does not hold for `reason`.
    pub(crate) fn fails(
        &mut self,
        type_: ConditionType,
        reason: Reason,
        severity: ConditionSeverity,
        message: impl Into<String>,
    ) {
        self.observe(Observation::fails(type_, reason, severity, message));
    }

    /// `Ready`: true when every observation holds, else the most severe one that does not.
    fn ready(&self) -> Observation {
        let rank = |severity: Option<ConditionSeverity>| match severity {
            Some(ConditionSeverity::Error) => 0,
            Some(ConditionSeverity::Warning) => 1,
            _ => 2,
        };
        let worst = self
            .observations
            .iter()
            .filter(|observation| observation.status != ConditionStatus::True)
            .min_by_key(|observation| rank(observation.severity));
        match worst {
            None if !self.observations.is_empty() => Observation::holds(ConditionType::READY),
            None => Observation::unknown(ConditionType::READY, Reason::CREATING, "nothing observed yet"),
            Some(worst) => Observation {
                type_: ConditionType::READY,
                status: ConditionStatus::False,
                severity: worst.severity.or(Some(ConditionSeverity::Info)),
                reason: worst.reason.clone(),
                message: worst.message.clone(),
            },
        }
    }
}

/// Applies `report` and `operations` to `machine`'s status when they change it; gives whether it
/// wrote.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish(
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    report: &Report,
    operations: &Operations,
) -> capz_kit::kube::Result<bool> {
    let current = machine.status.as_ref();
    let ready = report.ready();
    let is_ready = ready.status == ConditionStatus::True;
    let observations = report
        .observations
        .iter()
        .chain(&report.not_yet)
        .cloned()
        .chain([ready]);
    let conditions = observe(
        current.map(|status| &status.conditions),
        observations,
        Timestamp::now(),
    );
    let owned = OwnedStatus {
        ready: is_ready,
        addresses: report.addresses.as_deref(),
        vm_state: report.vm_state.as_deref(),
        failure_reason: report.failure.as_ref().map(|failure| failure.reason.as_str()),
        failure_message: report.failure.as_ref().map(|failure| failure.message.as_str()),
        conditions: &conditions,
        long_running_operation_states: operations.entries(),
    };
    let fields_changed = current.is_none_or(|status| {
        status.ready != Some(owned.ready)
            || status.addresses.as_deref() != owned.addresses
            || status.vm_state.as_deref() != owned.vm_state
            || status.failure_reason.as_deref() != owned.failure_reason
            || status.failure_message.as_deref() != owned.failure_message
    });
    let changed = fields_changed
        || operations.changed()
        || differ(current.map(|status| &status.conditions), OWNED, &conditions);
    if changed {
        apply_status(api, &ID.field_manager(), machine, &owned).await?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_sums_up_the_most_severe_failure() {
        let mut report = Report::default();
        report.holds(ConditionType::NETWORK_INTERFACES_READY);
        assert_eq!(report.ready().status, ConditionStatus::True);
        report.fails(
            ConditionType::VM_RUNNING,
            Reason::CREATING,
            ConditionSeverity::Info,
            "creating",
        );
        report.fails(
            ConditionType::ROLE_ASSIGNMENT_READY,
            Reason::FAILED,
            ConditionSeverity::Error,
            "denied",
        );
        let ready = report.ready();
        assert_eq!(ready.status, ConditionStatus::False);
        assert_eq!(ready.reason, Some(Reason::FAILED));
        assert_eq!(ready.severity, Some(ConditionSeverity::Error));
        // A later observation of the same type replaces the earlier one.
        report.holds(ConditionType::ROLE_ASSIGNMENT_READY);
        assert_eq!(report.ready().reason, Some(Reason::CREATING));
    }

    #[test]
    fn fields_not_acted_on_are_reported_but_leave_ready_alone() {
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
        let mut report = Report::default();
        report.holds(ConditionType::VM_RUNNING);
        report.not_yet(&machine);
        let types: Vec<&str> = report
            .not_yet
            .iter()
            .map(|observation| observation.type_.as_str())
            .collect();
        assert_eq!(types, ["SpecSupported"]);
        let spec = &report.not_yet[0];
        assert_eq!(spec.reason, Some(Reason::NOT_SUPPORTED));
        assert_eq!(spec.severity, Some(ConditionSeverity::Warning));
        let message = spec.message.as_deref().unwrap();
        assert!(
            message.contains("spec.allocatePublicIP: ")
                && message.contains("spec.capacityReservationGroupID: "),
            "{message}"
        );
        assert_eq!(report.ready().status, ConditionStatus::True);
        assert!(
            report
                .not_yet
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
