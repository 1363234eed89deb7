//! Small types of the Cluster API contract shared by several kinds.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the API server of a workload cluster is reached.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEndpoint {
    /// The host name or IP address of the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub host: Option<String>,
    /// The TCP port of the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// A failure domain (an availability zone) machines can be placed in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureDomainSpec {
    /// Whether control-plane machines may be placed in this failure domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane: Option<bool>,
    /// Free-form attributes of the failure domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<BTreeMap<String, String>>,
}

/// Failure domains by name.
pub type FailureDomains = BTreeMap<String, FailureDomainSpec>;

/// Extra Azure tags, applied to every Azure resource created for the object.
pub type Tags = BTreeMap<String, String>;

/// A network address of a machine, as Cluster API reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineAddress {
    /// The kind of address: `Hostname`, `ExternalIP`, `InternalIP`, `ExternalDNS` or `InternalDNS`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The address itself.
    pub address: String,
}

/// Metadata a template gives to the objects cloned from it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Labels to set on the cloned objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations to set on the cloned objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}
