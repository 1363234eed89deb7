//! Virtual network peerings: one direction of a link between two networks, a child of the network
//! it starts from. Traffic flows once both directions exist (`Connected`).

use serde::{Deserialize, Serialize};

use super::{API_VERSION, AddressSpace};
use crate::models::{ChildResource, ProvisioningState, SubResource};

/// A peering (`Microsoft.Network/virtualNetworks/virtualNetworkPeerings`); it takes no tags.
pub type VirtualNetworkPeering = ChildResource<VirtualNetworkPeeringProperties>;

/// Where a peering leads and what it lets through.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNetworkPeeringProperties {
    /// The network at the other end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_virtual_network: Option<SubResource>,
    /// Whether machines of the two networks reach each other (Azure's default: true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_virtual_network_access: Option<bool>,
    /// Whether traffic the remote network forwards from elsewhere is accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_forwarded_traffic: Option<bool>,
    /// Whether the remote network may use this network's gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_gateway_transit: Option<bool>,
    /// Whether this network uses the remote network's gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_remote_gateways: Option<bool>,
    /// `Initiated` until the remote network peers back, then `Connected`; `Disconnected` once
    /// the other side is gone (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peering_state: Option<PeeringState>,
    /// The remote network's address space as the peering knows it (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_address_space: Option<AddressSpace>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// Whether a peering carries traffic.
    pub enum PeeringState {
        /// Only this direction exists.
        Initiated = "Initiated",
        /// Both directions exist: traffic flows.
        Connected = "Connected",
        /// The other direction, or the remote network, is gone.
        Disconnected = "Disconnected",
    }
}

arm_model!(
    VirtualNetworkPeering,
    "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
    API_VERSION
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_written_back_as_answered() {
        let remote = format!("{RG}/providers/Microsoft.Network/virtualNetworks/hub");
        let answer = json!({
            "name": "spoke-To-hub",
            "id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/spoke/virtualNetworkPeerings/spoke-To-hub"),
            "etag": "W/\"e8525239-e4a5-4947-b713-0f8093f44c2e\"",
            "properties": {
                "provisioningState": "Updating",
                "resourceGuid": "4d1912fb-13bc-0e50-28d6-37b79bc9c0ea",
                "peeringState": "Initiated",
                "peeringSyncLevel": "RemoteNotInSync",
                "remoteVirtualNetwork": {"id": remote},
                "allowVirtualNetworkAccess": true,
                "allowForwardedTraffic": false,
                "allowGatewayTransit": false,
                "useRemoteGateways": false,
                "remoteAddressSpace": {"addressPrefixes": ["10.1.0.0/16"]},
            },
            "type": "Microsoft.Network/virtualNetworks/virtualNetworkPeerings"
        });
        let peering: VirtualNetworkPeering = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &peering);
        let properties = peering.properties.unwrap();
        assert_eq!(properties.peering_state, Some(PeeringState::Initiated));
        assert_eq!(properties.remote_virtual_network.unwrap().id.name(), "hub");
    }
}
