//! Virtual networks and their subnets.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::models::{ChildResource, ProvisioningState, SubResource, TrackedResource};

/// A virtual network (`Microsoft.Network/virtualNetworks`).
pub type VirtualNetwork = TrackedResource<VirtualNetworkProperties>;

/// The address space and subnets of a virtual network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualNetworkProperties {
    /// The prefixes the network's subnets are cut from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_space: Option<AddressSpace>,
    /// The network's subnets. A PUT of the network replaces its subnets with this list, so a
    /// write of an existing network carries the subnets it has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Vec<Subnet>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the network for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// The address prefixes of a network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddressSpace {
    /// CIDR prefixes such as `10.0.0.0/16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_prefixes: Option<Vec<String>>,
}

/// A subnet (`Microsoft.Network/virtualNetworks/subnets`): written inside its network or on its
/// own.
pub type Subnet = ChildResource<SubnetProperties>;

/// The prefixes of a subnet and what is attached to it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubnetProperties {
    /// The subnet's prefix, such as `10.0.0.0/24`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_prefix: Option<String>,
    /// The subnet's prefixes when it has more than one (dual-stack: one IPv4 and one IPv6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_prefixes: Option<Vec<String>>,
    /// The security group filtering the subnet's traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_security_group: Option<SubResource>,
    /// The route table of the subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_table: Option<SubResource>,
    /// The NAT gateway the subnet's outbound traffic leaves through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<SubResource>,
    /// Azure services reached over the backbone from this subnet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_endpoints: Option<Vec<ServiceEndpoint>>,
    /// The IP configurations (of interfaces, load balancer frontends…) in the subnet; a subnet
    /// with any cannot be deleted (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configurations: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A service endpoint of a subnet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEndpoint {
    /// The service, such as `Microsoft.Storage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// The regions of the service reached; Azure fills in the subnet's when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<String>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

arm_model!(
    VirtualNetwork,
    "Microsoft.Network/virtualNetworks",
    API_VERSION,
    tagged
);

arm_model!(Subnet, "Microsoft.Network/virtualNetworks/subnets", API_VERSION);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{AddressSpace, Subnet, SubnetProperties, VirtualNetwork, VirtualNetworkProperties};
    use crate::models::{ProvisioningState, SubResource};

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_a_desired_network_sends_only_what_it_sets() {
        let answer = json!({
            "name": "vnet",
            "id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/vnet"),
            "etag": "W/\"0e5dc00f-2d57-49ed-97d9-84863ded1088\"",
            "type": "Microsoft.Network/virtualNetworks",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "88eb7d9a-1954-4dbb-8f37-86ffc6e95400",
                "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [{
                    "name": "nodes",
                    "id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"),
                    "etag": "W/\"0e5dc00f-2d57-49ed-97d9-84863ded1088\"",
                    "type": "Microsoft.Network/virtualNetworks/subnets",
                    "properties": {
                        "provisioningState": "Migrating",
                        "addressPrefix": "10.0.0.0/24",
                        // Azure upper-cases the ids of back-references.
                        "ipConfigurations": [{"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/RG/providers/Microsoft.Network/networkInterfaces/NIC/ipConfigurations/IPCONFIG1"}],
                        "networkSecurityGroup": {"id": format!("{RG}/providers/Microsoft.Network/networkSecurityGroups/nsg")},
                        "delegations": [],
                        "privateEndpointNetworkPolicies": "Disabled"
                    }
                }],
                "virtualNetworkPeerings": [],
                "enableDdosProtection": false
            }
        });
        let network: VirtualNetwork = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &network);
        let properties = network.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        let subnet = properties.subnets.unwrap().remove(0);
        let subnet_properties = subnet.properties.unwrap();
        assert_eq!(
            subnet_properties.provisioning_state,
            Some(ProvisioningState::Other("Migrating".to_owned()))
        );
        let nic_config = &subnet_properties.ip_configurations.unwrap()[0].id;
        assert_eq!(
            nic_config,
            &format!("{RG}/providers/Microsoft.Network/networkInterfaces/nic/ipConfigurations/ipconfig1")
                .parse()
                .unwrap()
        );

        let desired = VirtualNetwork {
            location: Some("westus2".parse().unwrap()),
            properties: Some(VirtualNetworkProperties {
                address_space: Some(AddressSpace {
                    address_prefixes: Some(vec!["10.0.0.0/16".to_owned()]),
                }),
                subnets: Some(vec![Subnet {
                    name: Some("nodes".to_owned()),
                    properties: Some(SubnetProperties {
                        address_prefix: Some("10.0.0.0/24".to_owned()),
                        route_table: Some(SubResource {
                            id: format!("{RG}/providers/Microsoft.Network/routeTables/rt")
                                .parse()
                                .unwrap(),
                        }),
                        ..SubnetProperties::default()
                    }),
                    ..Subnet::default()
                }]),
                ..VirtualNetworkProperties::default()
            }),
            ..VirtualNetwork::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "properties": {
                    "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                    "subnets": [{"name": "nodes", "properties": {
                        "addressPrefix": "10.0.0.0/24",
                        "routeTable": {"id": format!("{RG}/providers/Microsoft.Network/routeTables/rt")}
                    }}]
                }
            })
        );
    }
}
