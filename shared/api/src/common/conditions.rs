//! Status conditions in the Cluster API v1beta1 shape, which every CAPZ kind reports.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of a condition, such as `Ready` or `VNetReady`.
///
/// Condition types are open-ended on the wire (Cluster API and other providers add their own), so
/// this is a string newtype; the types capz-rs writes are associated constants.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConditionType(Cow<'static, str>);

impl ConditionType {
    /// Builds a condition type from any name.
    #[must_use]
    pub fn new(name: impl Into<Cow<'static, str>>) -> Self {
        Self(name.into())
    }

    /// The wire form of the type.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for ConditionType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ConditionType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|name| Self(Cow::Owned(name)))
    }
}

macro_rules! condition_types {
    ($($(#[$doc:meta])* $constant:ident = $wire:literal;)*) => {
        impl ConditionType {
            $($(#[$doc])* pub const $constant: Self = Self(Cow::Borrowed($wire));)*
        }
    };
}

condition_types! {
    /// The summary of all other conditions of an object.
    READY = "Ready";
    /// The resource group of a cluster exists and is usable.
    RESOURCE_GROUP_READY = "ResourceGroupReady";
    /// The virtual network exists and is usable.
    VNET_READY = "VNetReady";
    /// The cluster's subnets exist.
    SUBNETS_READY = "SubnetsReady";
    /// The network security groups exist with their rules.
    SECURITY_GROUPS_READY = "SecurityGroupsReady";
    /// The route tables exist.
    ROUTE_TABLES_READY = "RouteTablesReady";
    /// The NAT gateways and their public IPs exist.
    NAT_GATEWAYS_READY = "NATGatewaysReady";
    /// The peerings between the cluster's network and other networks exist.
    VNET_PEERING_READY = "VnetPeeringReady";
    /// The private endpoints of the cluster's subnets exist.
    PRIVATE_ENDPOINTS_READY = "PrivateEndpointsReady";
    /// All network resources a cluster needs are in place.
    NETWORK_INFRASTRUCTURE_READY = "NetworkInfrastructureReady";
    /// The public IPs owned by the load-balancer controller exist.
    PUBLIC_IPS_READY = "PublicIPsReady";
    /// The cluster's load balancers exist.
    LOAD_BALANCERS_READY = "LoadBalancersReady";
    /// The bastion host and its public IP exist.
    BASTION_HOST_READY = "BastionHostReady";
    /// The private DNS zone of a private cluster exists.
    PRIVATE_DNS_ZONE_READY = "PrivateDNSZoneReady";
    /// The private DNS zone is linked to the cluster's virtual network.
    PRIVATE_DNS_LINK_READY = "PrivateDNSLinkReady";
    /// The API server record of the private DNS zone exists.
    PRIVATE_DNS_RECORD_READY = "PrivateDNSRecordReady";
    /// A virtual machine exists and is running.
    VM_RUNNING = "VMRunning";
    /// The identities a virtual machine asks for exist.
    VM_IDENTITIES_READY = "VMIdentitiesReady";
    /// The bootstrap of a machine finished.
    BOOTSTRAP_SUCCEEDED = "BootstrapSucceeded";
    /// A machine's network interfaces exist.
    NETWORK_INTERFACES_READY = "NetworkInterfacesReady";
    /// A machine's availability set exists.
    AVAILABILITY_SET_READY = "AvailabilitySetReady";
    /// A machine's inbound NAT rules exist.
    INBOUND_NAT_RULES_READY = "InboundNATRulesReady";
    /// The role assignment of a system-assigned identity exists.
    ROLE_ASSIGNMENT_READY = "RoleAssignmentReady";
    /// Every field the spec sets is acted on; False names those capz-rs accepts but does not act
    /// on yet.
    SPEC_SUPPORTED = "SpecSupported";
    /// A machine's disks exist (reported while they are deleted).
    DISKS_READY = "DisksReady";
    /// A scale set exists and is running.
    SCALE_SET_RUNNING = "ScaleSetRunning";
    /// A scale set has the number of instances asked for.
    SCALE_SET_DESIRED_REPLICAS = "ScaleSetDesiredReplicas";
    /// Every instance of a scale set runs its latest model.
    SCALE_SET_MODEL_UPDATED = "ScaleSetModelUpdated";
    /// The workload cluster's node of a machine is healthy.
    NODE_HEALTHY = "NodeHealthy";
    /// An AKS managed cluster exists and is running.
    MANAGED_CLUSTER_RUNNING = "ManagedClusterRunning";
    /// The agent pools of an AKS cluster exist.
    AGENT_POOLS_READY = "AgentPoolsReady";
    /// Azure Resource Health reports the resource as available.
    AZURE_RESOURCE_AVAILABLE = "AzureResourceAvailable";
    /// The AKS cluster is a member of its fleet.
    FLEET_READY = "FleetReady";
    /// The AKS extensions exist.
    AKS_EXTENSIONS_READY = "AKSExtensionsReady";
}

/// The value of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// The controller cannot tell yet.
    Unknown,
}

/// How serious a condition that does not hold is.
///
/// An empty string on the wire means "no severity" (used while the condition holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ConditionSeverity {
    /// Something failed and needs attention.
    Error,
    /// Something is wrong but the controller may still recover.
    Warning,
    /// Work is in progress; nothing is wrong.
    Info,
}

/// Reads a severity leniently: objects written by other controllers may carry an empty string.
fn deserialize_severity<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ConditionSeverity>, D::Error> {
    let raw = Option::<String>::deserialize(deserializer)?;
    match raw.as_deref() {
        None | Some("") => Ok(None),
        Some("Error") => Ok(Some(ConditionSeverity::Error)),
        Some("Warning") => Ok(Some(ConditionSeverity::Warning)),
        Some("Info") => Ok(Some(ConditionSeverity::Info)),
        Some(other) => Err(serde::de::Error::unknown_variant(
            other,
            &["Error", "Warning", "Info"],
        )),
    }
}

/// One observation about the state of an object, in the Cluster API v1beta1 format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The name of the condition, for example `Ready` or `VNetReady`.
    #[serde(rename = "type")]
    #[schemars(with = "String", length(min = 1, max = 256))]
    pub type_: ConditionType,

    /// `True`, `False` or `Unknown`.
    #[schemars(with = "String")]
    pub status: ConditionStatus,

    /// When the condition does not hold: `Error`, `Warning` or `Info`. Empty while it holds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "deserialize_severity"
    )]
    #[schemars(with = "Option<String>", length(max = 32))]
    pub severity: Option<ConditionSeverity>,

    /// When the status last changed from one value to another.
    pub last_transition_time: Time,

    /// A one-word, CamelCase explanation of the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub reason: Option<String>,

    /// A human-readable explanation of the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10240))]
    pub message: Option<String>,
}

/// The conditions of an object: at most one per type.
///
/// Each capz-rs controller applies its own condition types with server-side apply, so the list is
/// a map keyed by `type` (CAPZ declares it atomic; see docs/compat.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
pub struct Conditions(pub Vec<Condition>);

impl Conditions {
    /// The condition of the given type, if present.
    #[must_use]
    pub fn get(&self, type_: &ConditionType) -> Option<&Condition> {
        self.0.iter().find(|condition| &condition.type_ == type_)
    }

    /// Whether the condition of the given type is present and `True`.
    #[must_use]
    pub fn is_true(&self, type_: &ConditionType) -> bool {
        self.get(type_)
            .is_some_and(|condition| condition.status == ConditionStatus::True)
    }

    /// Whether no condition is recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(json: serde_json::Value) -> Result<Condition, serde_json::Error> {
        serde_json::from_value(json)
    }

    #[test]
    fn an_empty_severity_reads_as_none_and_is_not_written() {
        let ready = condition(serde_json::json!({
            "type": "Ready", "status": "True", "severity": "", "lastTransitionTime": "2026-11-01T10:00:00Z"
        }))
        .unwrap();
        assert_eq!(ready.severity, None);
        assert!(serde_json::to_value(&ready).unwrap().get("severity").is_none());
    }

    #[test]
    fn severities_and_statuses_round_trip() {
        let json = serde_json::json!({
            "type": "VNetReady", "status": "False", "severity": "Warning", "reason": "Creating",
            "message": "vnet is being created", "lastTransitionTime": "2026-11-01T10:00:00Z"
        });
        let vnet = condition(json.clone()).unwrap();
        assert_eq!(vnet.type_, ConditionType::VNET_READY);
        assert_eq!(vnet.status, ConditionStatus::False);
        assert_eq!(vnet.severity, Some(ConditionSeverity::Warning));
        assert_eq!(serde_json::to_value(&vnet).unwrap(), json);
    }

    #[test]
    fn an_unknown_severity_is_an_error() {
        let err = condition(serde_json::json!({
            "type": "Ready", "status": "False", "severity": "Fatal", "lastTransitionTime": "2026-11-01T10:00:00Z"
        }))
        .unwrap_err();
        assert!(err.to_string().contains("Fatal"), "{err}");
    }

    #[test]
    fn conditions_are_looked_up_by_type() {
        let conditions: Conditions = serde_json::from_value(serde_json::json!([
            { "type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z" },
            { "type": "SubnetsReady", "status": "False", "severity": "Info", "lastTransitionTime": "2026-11-01T10:00:00Z" }
        ]))
        .unwrap();
        assert!(conditions.is_true(&ConditionType::READY));
        assert!(!conditions.is_true(&ConditionType::SUBNETS_READY));
        assert!(!conditions.is_true(&ConditionType::VNET_READY));
        assert_eq!(
            conditions
                .get(&ConditionType::new("SubnetsReady"))
                .map(|c| c.status),
            Some(ConditionStatus::False)
        );
    }
}
