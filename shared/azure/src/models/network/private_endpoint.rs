//! Private endpoints: a private address in a subnet through which a service outside the network
//! (a storage account, a private link service) is reached.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::id::ResourceId;
use crate::models::{ChildResource, ProvisioningState, SubResource, TrackedResource};

/// A private endpoint (`Microsoft.Network/privateEndpoints`).
pub type PrivateEndpoint = TrackedResource<PrivateEndpointProperties>;

/// A private endpoint's subnet, connection and interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivateEndpointProperties {
    /// The subnet the endpoint's address is taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubResource>,
    /// The connection Azure approves by itself (the target's owner allows it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_link_service_connections: Option<Vec<PrivateLinkServiceConnection>>,
    /// The connection the target's owner approves by hand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual_private_link_service_connections: Option<Vec<PrivateLinkServiceConnection>>,
    /// The name of the network interface Azure creates, instead of a generated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_network_interface_name: Option<String>,
    /// Application security groups the endpoint's interface joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub application_security_groups: Option<Vec<SubResource>>,
    /// Static addresses of the endpoint in its subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configurations: Option<Vec<PrivateEndpointIpConfiguration>>,
    /// The interface Azure created for the endpoint (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A private endpoint's connection to its target.
pub type PrivateLinkServiceConnection = ChildResource<PrivateLinkServiceConnectionProperties>;

/// What a private endpoint connects to, and whether it was approved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivateLinkServiceConnectionProperties {
    /// The target: a private link service, or a resource offering private links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_link_service_id: Option<ResourceId>,
    /// The target's sub-resources connected to, such as `blob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_ids: Option<Vec<String>>,
    /// A message for the owner asked to approve the connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_message: Option<String>,
    /// The owner's answer (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_link_service_connection_state: Option<ConnectionState>,
}

/// The target owner's answer to a connection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionState {
    /// `Approved`, `Pending`, `Rejected` or `Disconnected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why, in the owner's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A static address of a private endpoint.
pub type PrivateEndpointIpConfiguration = ChildResource<PrivateEndpointIpConfigurationProperties>;

/// The address, and which of the target's members it serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrivateEndpointIpConfigurationProperties {
    /// The address, in the endpoint's subnet.
    #[serde(rename = "privateIPAddress", skip_serializing_if = "Option::is_none")]
    pub private_ip_address: Option<String>,
    /// The target's sub-resource, such as `blob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// The member of that sub-resource, such as `blob`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_name: Option<String>,
}

arm_model!(
    PrivateEndpoint,
    "Microsoft.Network/privateEndpoints",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_written_back_as_answered() {
        let endpoint = format!("{RG}/providers/Microsoft.Network/privateEndpoints/pe");
        let account = format!("{RG}/providers/Microsoft.Storage/storageAccounts/account");
        let answer = json!({
            "name": "pe",
            "id": endpoint,
            "etag": "W/\"13cffb70-992a-4dca-844e-7547a0f9077b\"",
            "type": "Microsoft.Network/privateEndpoints",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "privateLinkServiceConnections": [{
                    "name": "blob",
                    "id": format!("{endpoint}/privateLinkServiceConnections/blob"),
                    "etag": "W/\"13cffb70-992a-4dca-844e-7547a0f9077b\"",
                    "properties": {
                        "privateLinkServiceId": account,
                        "groupIds": ["blob"],
                        "privateLinkServiceConnectionState": {"status": "Approved", "description": "Auto Approved"},
                    },
                    "type": "Microsoft.Network/privateEndpoints/privateLinkServiceConnections"
                }],
                "manualPrivateLinkServiceConnections": [],
                "customNetworkInterfaceName": "",
                "subnet": {"id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/vn/subnets/nodes")},
                "ipConfigurations": [],
                "networkInterfaces": [{"id": format!("{RG}/providers/Microsoft.Network/networkInterfaces/pe.nic.9fe2835c")}],
            }
        });
        let endpoint: PrivateEndpoint = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &endpoint);
        let properties = endpoint.properties.unwrap();
        let connection = &properties.private_link_service_connections.unwrap()[0];
        let state = connection.properties.as_ref().unwrap();
        assert_eq!(
            state
                .private_link_service_connection_state
                .as_ref()
                .unwrap()
                .status
                .as_deref(),
            Some("Approved")
        );
        assert_eq!(state.private_link_service_id.as_ref().unwrap().name(), "account");
    }
}
