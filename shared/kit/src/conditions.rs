//! Computing a controller's conditions from what it observed.
//!
//! A controller reports each of its condition types as an [`Observation`]; [`observe`] turns the
//! observations into conditions, keeping `lastTransitionTime` of those whose status did not
//! change, so that a reconcile that changes nothing writes nothing new.

use std::borrow::Cow;
use std::fmt;

use capz_api::common::conditions::{
    Condition, ConditionSeverity, ConditionStatus, ConditionType, Conditions,
};
use capz_rules::support::{self, Kind};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

/// Why a condition has its status: one CamelCase word users and tools match on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reason(Cow<'static, str>);

impl Reason {
    /// A reason of the caller's own.
    #[must_use]
    pub const fn new(reason: &'static str) -> Self {
        Self(Cow::Borrowed(reason))
    }

    /// The wire form.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A reason read from an object, such as another controller's condition.
impl From<String> for Reason {
    fn from(reason: String) -> Self {
        Self(Cow::Owned(reason))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! reasons {
    ($($(#[$doc:meta])* $constant:ident = $wire:literal;)*) => {
        impl Reason {
            $($(#[$doc])* pub const $constant: Self = Self::new($wire);)*
        }
    };
}

reasons! {
    /// An Azure resource is being created or updated.
    CREATING = "Creating";
    /// An Azure resource is being deleted.
    DELETING = "Deleting";
    /// Deleting an Azure resource failed.
    DELETION_FAILED = "DeletionFailed";
    /// An Azure operation failed.
    FAILED = "Failed";
    /// The spec asks for something Azure cannot do; it waits for a change.
    INVALID_CONFIGURATION = "InvalidConfiguration";
    /// Azure asked to slow down; the controller retries after the time it gave.
    THROTTLED = "Throttled";
    /// The request would exceed a quota of the subscription; raise it or ask for less.
    QUOTA_EXCEEDED = "QuotaExceeded";
    /// A resource by the wanted name exists but is not ours; it is left alone.
    NOT_OWNED = "NotOwned";
    /// The cluster is paused.
    PAUSED = "Paused";
    /// Another condition this one needs does not hold yet.
    WAITING_FOR_DEPENDENCY = "WaitingForDependency";
    /// The controller that sets a condition this one needs does not run.
    CONTROLLER_NOT_RUNNING = "ControllerNotRunning";
    /// The identity may not be used from the object's namespace.
    NAMESPACE_NOT_ALLOWED_BY_IDENTITY = "NamespaceNotAllowedByIdentity";
    /// The Kubernetes API server refused or failed a request.
    KUBERNETES_API_ERROR = "KubernetesApiError";
    /// The finalizer could not be added or removed.
    FINALIZER_UPDATE_FAILED = "FinalizerUpdateFailed";
    /// A resource the spec brings does not exist.
    NOT_FOUND = "NotFound";
    /// An Azure resource was created (an event's reason).
    CREATED = "Created";
    /// An Azure resource was written again (an event's reason).
    UPDATED = "Updated";
    /// An Azure resource was deleted (an event's reason, and a condition's once all are gone).
    DELETED = "Deleted";
    /// The AzureCluster waits for `spec.controlPlaneEndpoint`.
    WAITING_FOR_CONTROL_PLANE_ENDPOINT = "WaitingForControlPlaneEndpoint";
    /// A subnet the spec names is missing from the brought virtual network.
    SUBNET_NOT_FOUND = "SubnetNotFound";
    /// Every frontend port an SSH inbound NAT rule may use is taken.
    NO_FREE_FRONTEND_PORT = "NoFreeFrontendPort";
    /// Cluster API's reason while the Machine has no bootstrap data yet.
    WAITING_FOR_BOOTSTRAP_DATA = "WaitingForBootstrapData";
    /// CAPZ's reason while the Cluster's infrastructure is not provisioned.
    WAITING_FOR_CLUSTER_INFRASTRUCTURE = "WaitingForClusterInfrastructure";
    /// A VM that existed is gone; it is not recreated.
    VM_NOT_FOUND = "VMNotFound";
    /// The VM's provisioning failed.
    VM_PROVISION_FAILED = "VMProvisionFailed";
    /// The VM exists but does not run.
    VM_NOT_RUNNING = "VMNotRunning";
    /// CAPZ's reason while a VM extension is being installed.
    BOOTSTRAP_IN_PROGRESS = "BootstrapInProgress";
    /// CAPZ's reason when a VM extension failed.
    BOOTSTRAP_FAILED = "BootstrapFailed";
    /// A value that must be random could not be made.
    RANDOM_SOURCE_FAILED = "RandomSourceFailed";
    /// CAPZ's reason while a scale set is being created.
    SCALE_SET_CREATING = "ScaleSetCreating";
    /// CAPZ's reason while a scale set is being deleted.
    SCALE_SET_DELETING = "ScaleSetDeleting";
    /// CAPZ's reason when Azure left a scale set Failed (capacity, quota, size).
    SCALE_SET_PROVISION_FAILED = "ScaleSetProvisionFailed";
    /// CAPZ's reason while a scale set has fewer instances than its pool's replicas.
    SCALE_SET_SCALING_UP = "ScaleSetScalingUp";
    /// CAPZ's reason while a scale set has more instances than its pool's replicas.
    SCALE_SET_SCALING_DOWN = "ScaleSetScalingDown";
    /// CAPZ's reason while instances of a scale set run an older model.
    SCALE_SET_MODEL_OUT_OF_DATE = "ScaleSetModelOutOfDate";
    /// Cluster API's reason while a machine's Node has not registered.
    NODE_PROVISIONING = "NodeProvisioning";
    /// Cluster API's reason when a machine's Node reports a condition that fails.
    NODE_CONDITIONS_FAILED = "NodeConditionsFailed";
}

impl Reason {
    /// The spec names a field capz-rs does not act on yet (the support matrix's word).
    pub const NOT_SUPPORTED: Self = Self::new(support::NOT_SUPPORTED);
}

/// What a controller observed about one of its condition types in one reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The condition type.
    pub type_: ConditionType,
    /// Whether it holds.
    pub status: ConditionStatus,
    /// How serious it is when it does not hold.
    pub severity: Option<ConditionSeverity>,
    /// Why, when it does not hold.
    pub reason: Option<Reason>,
    /// A sentence for people.
    pub message: Option<String>,
}

impl Observation {
    /// The condition holds.
    #[must_use]
    pub fn holds(type_: ConditionType) -> Self {
        Self {
            type_,
            status: ConditionStatus::True,
            severity: None,
            reason: None,
            message: None,
        }
    }

    /// The condition does not hold, for `reason`.
    #[must_use]
    pub fn fails(
        type_: ConditionType,
        reason: Reason,
        severity: ConditionSeverity,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status: ConditionStatus::False,
            severity: Some(severity),
            reason: Some(reason),
            message: Some(message.into()),
        }
    }

    /// Whether the condition holds cannot be told yet.
    #[must_use]
    pub fn unknown(type_: ConditionType, reason: Reason, message: impl Into<String>) -> Self {
        Self {
            type_,
            status: ConditionStatus::Unknown,
            severity: None,
            reason: Some(reason),
            message: Some(message.into()),
        }
    }
}

/// `Ready`: true when every observation holds, else the most severe one that does not (the
/// first of equal ones, in the steps' order).
#[must_use]
pub fn ready(observations: &[Observation]) -> Observation {
    let rank = |severity: Option<ConditionSeverity>| match severity {
        Some(ConditionSeverity::Error) => 0,
        Some(ConditionSeverity::Warning) => 1,
        _ => 2,
    };
    let worst = observations
        .iter()
        .filter(|observation| observation.status != ConditionStatus::True)
        .min_by_key(|observation| rank(observation.severity));
    match worst {
        None if !observations.is_empty() => Observation::holds(ConditionType::READY),
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

/// What to report for a condition whose resources could not be checked because Azure throttled
/// the caller: `Observation::holds` when the condition holds in `current` (a 429 says nothing
/// about the resources, and a condition flapping at every throttled pass would keep the
/// controllers that roll it up from ever seeing all of theirs hold), else `observation`.
#[must_use]
pub fn unless_held(current: Option<&Conditions>, observation: Observation) -> Observation {
    let held = current
        .and_then(|conditions| conditions.get(&observation.type_))
        .is_some_and(|condition| condition.status == ConditionStatus::True);
    if held {
        Observation::holds(observation.type_)
    } else {
        observation
    }
}

/// What `object` (of `kind`) sets that capz-rs does not act on yet, as the support matrix
/// reports it on conditions among `reported_here` (a controller's own): one observation per type, False
/// with severity Warning and reason `NotSupported`, naming each field and why, in matrix order.
#[must_use]
pub fn not_yet(kind: Kind, object: &impl Serialize, reported_here: &[ConditionType]) -> Vec<Observation> {
    let Ok(object) = serde_json::to_value(object) else {
        return Vec::new();
    };
    let mut observations: Vec<Observation> = Vec::new();
    for unacted in support::not_yet_set(kind, &object) {
        let Some(type_) = unacted
            .not_yet
            .condition
            .as_ref()
            .filter(|type_| reported_here.contains(type_))
        else {
            continue;
        };
        let line = format!("{}: {}", unacted.path, unacted.not_yet.reason);
        match observations.iter_mut().find(|known| &known.type_ == type_) {
            Some(known) => {
                let message = known.message.get_or_insert_with(String::new);
                message.push_str("; ");
                message.push_str(&line);
            }
            None => observations.push(Observation::fails(
                type_.clone(),
                Reason::NOT_SUPPORTED,
                ConditionSeverity::Warning,
                format!("not acted on by capz-rs yet: {line}"),
            )),
        }
    }
    observations
}

/// The conditions for `observations`, in their order, given the object's current `conditions`:
/// a condition whose status is unchanged keeps its `lastTransitionTime`, others take `now`.
#[must_use]
pub fn observe(
    conditions: Option<&Conditions>,
    observations: impl IntoIterator<Item = Observation>,
    now: Timestamp,
) -> Vec<Condition> {
    observations
        .into_iter()
        .map(|observed| {
            let since = conditions
                .and_then(|conditions| conditions.get(&observed.type_))
                .filter(|previous| previous.status == observed.status)
                .map_or(Time(now), |previous| previous.last_transition_time.clone());
            Condition {
                type_: observed.type_,
                status: observed.status,
                severity: observed.severity,
                last_transition_time: since,
                reason: observed.reason.map(|reason| reason.as_str().to_owned()),
                message: observed.message,
            }
        })
        .collect()
}

/// Whether applying `computed` as the conditions of a controller owning the types `owned` would
/// change `current`: a condition differs, or one of its types is there but no longer reported.
/// When it would not, the controller skips its status apply and the steady state writes nothing.
#[must_use]
pub fn differ(current: Option<&Conditions>, owned: &[ConditionType], computed: &[Condition]) -> bool {
    let stale = current.is_some_and(|current| {
        current.0.iter().any(|condition| {
            owned.contains(&condition.type_) && !computed.iter().any(|new| new.type_ == condition.type_)
        })
    });
    stale
        || computed
            .iter()
            .any(|new| current.and_then(|current| current.get(&new.type_)) != Some(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_sums_up_the_most_severe_failure() {
        let mut observations = vec![Observation::holds(ConditionType::NETWORK_INTERFACES_READY)];
        assert_eq!(ready(&observations).status, ConditionStatus::True);
        observations.push(Observation::fails(
            ConditionType::VM_RUNNING,
            Reason::CREATING,
            ConditionSeverity::Info,
            "creating",
        ));
        observations.push(Observation::fails(
            ConditionType::ROLE_ASSIGNMENT_READY,
            Reason::FAILED,
            ConditionSeverity::Error,
            "denied",
        ));
        let summary = ready(&observations);
        assert_eq!(summary.status, ConditionStatus::False);
        assert_eq!(summary.reason, Some(Reason::FAILED));
        assert_eq!(summary.severity, Some(ConditionSeverity::Error));
        observations.pop();
        assert_eq!(ready(&observations).reason, Some(Reason::CREATING));
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn a_throttled_check_keeps_a_held_condition_only() {
        let current = Conditions(observe(
            None,
            [
                Observation::holds(ConditionType::VNET_READY),
                Observation::fails(
                    ConditionType::SUBNETS_READY,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating",
                ),
            ],
            at(1),
        ));
        let throttled =
            |type_| Observation::fails(type_, Reason::THROTTLED, ConditionSeverity::Warning, "429");
        assert_eq!(
            unless_held(Some(&current), throttled(ConditionType::VNET_READY)),
            Observation::holds(ConditionType::VNET_READY)
        );
        assert_eq!(
            unless_held(Some(&current), throttled(ConditionType::SUBNETS_READY)),
            throttled(ConditionType::SUBNETS_READY)
        );
        assert_eq!(
            unless_held(None, throttled(ConditionType::VNET_READY)),
            throttled(ConditionType::VNET_READY)
        );
    }

    #[test]
    fn an_unchanged_status_keeps_its_transition_time_and_a_changed_one_takes_now() {
        let first = observe(
            None,
            [
                Observation::holds(ConditionType::VNET_READY),
                Observation::fails(
                    ConditionType::SUBNETS_READY,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating subnet node",
                ),
            ],
            at(100),
        );
        assert!(
            first
                .iter()
                .all(|condition| condition.last_transition_time == Time(at(100)))
        );

        let current = Conditions(first);
        let second = observe(
            Some(&current),
            [
                Observation::holds(ConditionType::VNET_READY),
                Observation::holds(ConditionType::SUBNETS_READY),
            ],
            at(200),
        );
        assert_eq!(second[0].last_transition_time, Time(at(100)));
        assert_eq!(second[1].last_transition_time, Time(at(200)));
        assert_eq!(second[1].reason, None);
        assert_eq!(second[1].severity, None);
    }

    #[test]
    fn only_a_real_change_of_the_owned_conditions_differs() {
        const OWNED: &[ConditionType] = &[ConditionType::VNET_READY, ConditionType::SUBNETS_READY];
        let vnet = observe(None, [Observation::holds(ConditionType::VNET_READY)], at(1));
        let peer = observe(
            None,
            [Observation::holds(ConditionType::LOAD_BALANCERS_READY)],
            at(1),
        );
        let current = Conditions([vnet.clone(), peer].concat());
        // The same observation later keeps its time: nothing to write.
        let again = observe(
            Some(&current),
            [Observation::holds(ConditionType::VNET_READY)],
            at(9),
        );
        assert!(!differ(Some(&current), OWNED, &again));
        assert!(differ(None, OWNED, &again));
        let failing = observe(
            Some(&current),
            [Observation::fails(
                ConditionType::VNET_READY,
                Reason::FAILED,
                ConditionSeverity::Error,
                "gone",
            )],
            at(9),
        );
        assert!(differ(Some(&current), OWNED, &failing));
        // Dropping an owned type is a change; a peer's type is not ours to drop.
        assert!(differ(Some(&current), OWNED, &[]));
        assert!(!differ(
            Some(&Conditions(vnet.clone())),
            &[ConditionType::VNET_READY],
            &vnet
        ));
    }

    #[test]
    fn a_new_reason_with_the_same_status_keeps_the_transition_time() {
        let current = Conditions(observe(
            None,
            [Observation::fails(
                ConditionType::VM_RUNNING,
                Reason::CREATING,
                ConditionSeverity::Info,
                "creating",
            )],
            at(100),
        ));
        let later = observe(
            Some(&current),
            [Observation::fails(
                ConditionType::VM_RUNNING,
                Reason::FAILED,
                ConditionSeverity::Error,
                "failed",
            )],
            at(300),
        );
        assert_eq!(later[0].last_transition_time, Time(at(100)));
        assert_eq!(later[0].reason.as_deref(), Some("Failed"));
    }

    #[test]
    fn not_yet_fields_are_reported_once_per_condition_of_the_callers_types() {
        let machine = serde_json::json!({"spec": {
            "osDisk": {"managedDisk": {"securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}},
            "dataDisks": [{"managedDisk": {"securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}}],
        }});
        let types = [ConditionType::SPEC_SUPPORTED, ConditionType::VM_RUNNING];
        let observations = not_yet(Kind::AzureMachine, &machine, &types);
        assert_eq!(observations.len(), 1, "{observations:?}");
        let unsupported = &observations[0];
        assert_eq!(unsupported.type_, ConditionType::SPEC_SUPPORTED);
        assert_eq!(unsupported.status, ConditionStatus::False);
        assert_eq!(unsupported.severity, Some(ConditionSeverity::Warning));
        assert_eq!(unsupported.reason, Some(Reason::NOT_SUPPORTED));
        assert_eq!(
            unsupported.message.as_deref(),
            Some(
                "not acted on by capz-rs yet: spec.osDisk.managedDisk.securityProfile: the VM is created without \
                 disk security settings; spec.dataDisks[0].managedDisk.securityProfile: the VM is created without \
                 disk security settings"
            )
        );
        assert!(not_yet(Kind::AzureMachine, &serde_json::json!({"spec": {}}), &types).is_empty());
        assert!(not_yet(Kind::AzureMachine, &machine, &[ConditionType::VM_RUNNING]).is_empty());
    }
}
