//! Route tables and their routes.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::models::{ChildResource, ProvisioningState, SubResource, TrackedResource};

/// A route table (`Microsoft.Network/routeTables`).
pub type RouteTable = TrackedResource<RouteTableProperties>;

/// The routes of a table and where it is attached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTableProperties {
    /// The table's routes. A PUT of the table replaces them with this list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<Route>>,
    /// Whether routes learnt over BGP (from a VPN or ExpressRoute gateway) stay out of the
    /// subnets using the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_bgp_route_propagation: Option<bool>,
    /// The subnets using the table (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the table for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// A route (`Microsoft.Network/routeTables/routes`): written inside its table or on its own.
pub type Route = ChildResource<RouteProperties>;

/// Where a route sends which traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteProperties {
    /// The destination: a CIDR prefix or a service tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_prefix: Option<String>,
    /// Where matching traffic goes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_hop_type: Option<NextHopType>,
    /// The appliance's address, for a `VirtualAppliance` hop only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_hop_ip_address: Option<String>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// Where a route sends traffic.
    pub enum NextHopType {
        /// Through an appliance at `nextHopIpAddress` (a node routing pod traffic, a firewall).
        VirtualAppliance = "VirtualAppliance",
        /// Within the virtual network.
        VnetLocal = "VnetLocal",
        /// To the internet.
        Internet = "Internet",
        /// Through the network's VPN or ExpressRoute gateway.
        VirtualNetworkGateway = "VirtualNetworkGateway",
        /// Nowhere: the traffic is dropped.
        None = "None",
    }
}

arm_model!(RouteTable, "Microsoft.Network/routeTables", API_VERSION, tagged);

arm_model!(Route, "Microsoft.Network/routeTables/routes", API_VERSION);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{NextHopType, Route, RouteProperties, RouteTable, RouteTableProperties};
    use crate::models::ProvisioningState;

    const TABLE: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt";

    #[test]
    fn an_answer_is_read_and_a_desired_table_sends_only_what_it_sets() {
        let answer = json!({
            "name": "rt",
            "id": TABLE,
            "etag": "W/\"aad766e4-6fc5-40c2-8e79-06c55a44765e\"",
            "type": "Microsoft.Network/routeTables",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "c71abd26-6e43-4607-9074-289da156850d",
                "disableBgpRoutePropagation": false,
                "disablePeeringRoute": "None",
                "routes": [{
                    "name": "pods",
                    "id": format!("{TABLE}/routes/pods"),
                    "etag": "W/\"b3c72009-0b0d-460e-b186-bc012fd841ad\"",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "addressPrefix": "192.168.1.0/24",
                        "nextHopType": "VirtualAppliance",
                        "nextHopIpAddress": "10.1.0.4",
                        "hasBgpOverride": false
                    },
                    "type": "Microsoft.Network/routeTables/routes"
                }, {
                    "name": "future",
                    "properties": {"addressPrefix": "0.0.0.0/0", "nextHopType": "VirtualNetworkServiceEndpoint"}
                }]
            }
        });
        let table: RouteTable = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &table);
        let properties = table.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        assert_eq!(properties.disable_bgp_route_propagation, Some(false));
        let routes = properties.routes.unwrap();
        let pods = routes[0].properties.as_ref().unwrap();
        assert_eq!(pods.next_hop_type, Some(NextHopType::VirtualAppliance));
        assert_eq!(pods.next_hop_ip_address.as_deref(), Some("10.1.0.4"));
        assert_eq!(
            routes[1].properties.as_ref().unwrap().next_hop_type,
            Some(NextHopType::Other("VirtualNetworkServiceEndpoint".to_owned()))
        );

        let desired = RouteTable {
            location: Some("westus2".parse().unwrap()),
            properties: Some(RouteTableProperties {
                routes: Some(vec![Route {
                    name: Some("pods".to_owned()),
                    properties: Some(RouteProperties {
                        address_prefix: Some("192.168.1.0/24".to_owned()),
                        next_hop_type: Some(NextHopType::VirtualAppliance),
                        next_hop_ip_address: Some("10.1.0.4".to_owned()),
                        provisioning_state: None,
                    }),
                    ..Route::default()
                }]),
                ..RouteTableProperties::default()
            }),
            ..RouteTable::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "properties": {"routes": [{"name": "pods", "properties": {
                    "addressPrefix": "192.168.1.0/24",
                    "nextHopType": "VirtualAppliance",
                    "nextHopIpAddress": "10.1.0.4"
                }}]}
            })
        );
    }
}
