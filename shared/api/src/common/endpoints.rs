//! Service endpoints and private endpoints of a subnet, shared by self-managed and AKS networks.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Azure services a subnet reaches over the Azure backbone (a service endpoint).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEndpointSpec {
    /// The service, for example `Microsoft.Storage`.
    pub service: String,
    /// The locations of the service the endpoint reaches; `*` for all.
    pub locations: Vec<String>,
}

/// The service endpoints of a subnet, one per service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["service"]))]
pub struct ServiceEndpoints(pub Vec<ServiceEndpointSpec>);

/// A private endpoint placed in a subnet, giving private access to an Azure service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrivateEndpointSpec {
    /// Name of the private endpoint.
    pub name: String,

    /// Location of the private endpoint; defaults to the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,

    /// Resource IDs of application security groups the endpoint's interface joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_security_groups: Option<Vec<String>>,

    /// Connections to private link services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_link_service_connections: Option<Vec<PrivateLinkServiceConnection>>,

    /// Name for the endpoint's network interface, instead of the one Azure generates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_network_interface_name: Option<String>,

    /// Static private IP addresses for the endpoint's interface, from the subnet's range.
    #[serde(
        rename = "privateIPAddresses",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_ip_addresses: Option<Vec<String>>,

    /// Whether the owner of the linked resource must approve the connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_approval: Option<bool>,
}

/// The private endpoints of a subnet, one per name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
pub struct PrivateEndpoints(pub Vec<PrivateEndpointSpec>);

/// A connection from a private endpoint to a private link service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrivateLinkServiceConnection {
    /// Name of the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// Resource ID of the private link service (or resource) to connect to.
    #[serde(
        rename = "privateLinkServiceID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_link_service_id: Option<String>,

    /// Which sub-resources of the target the endpoint connects to, for example `blob`.
    #[serde(rename = "groupIDs", default, skip_serializing_if = "Option::is_none")]
    pub group_ids: Option<Vec<String>>,

    /// A message sent to the owner of the target with a manual approval request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 140))]
    pub request_message: Option<String>,
}
