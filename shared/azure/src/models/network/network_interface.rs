//! Network interfaces of machines and their IP configurations.

use serde::{Deserialize, Serialize};

use super::{API_VERSION, IpAllocationMethod, IpVersion};
use crate::models::{ChildResource, ProvisioningState, SubResource, TrackedResource};

/// A network interface (`Microsoft.Network/networkInterfaces`).
pub type NetworkInterface = TrackedResource<NetworkInterfaceProperties>;

/// The addresses and settings of an interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterfaceProperties {
    /// The interface's IP configurations; one is primary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configurations: Option<Vec<IpConfiguration>>,
    /// A security group filtering the interface's traffic, besides its subnet's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_security_group: Option<SubResource>,
    /// Whether the interface bypasses the host's virtual switch; the machine's size must
    /// allow it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_accelerated_networking: Option<bool>,
    /// Whether the interface forwards traffic not addressed to it, as a node routing pod
    /// traffic must.
    #[serde(rename = "enableIPForwarding", skip_serializing_if = "Option::is_none")]
    pub enable_ip_forwarding: Option<bool>,
    /// The interface's DNS servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_settings: Option<NetworkInterfaceDnsSettings>,
    /// The machine using the interface (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machine: Option<SubResource>,
    /// The interface's MAC address once attached (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Whether it is its machine's primary interface (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the interface for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// The DNS settings of an interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterfaceDnsSettings {
    /// DNS servers for the interface; empty for the network's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_servers: Option<Vec<String>>,
    /// The servers in effect, the network's if the interface names none (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_dns_servers: Option<Vec<String>>,
    /// The suffix of the machine's name in Azure's internal DNS (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub internal_domain_name_suffix: Option<String>,
}

/// An IP configuration of an interface (`…/networkInterfaces/ipConfigurations`).
pub type IpConfiguration = ChildResource<IpConfigurationProperties>;

/// An address of an interface, and the load balancer pools and NAT rules it joins.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpConfigurationProperties {
    /// The subnet the address is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubResource>,
    /// Whether this is the interface's primary configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// The private address: asked for with `Static`, assigned from the subnet with `Dynamic`.
    #[serde(rename = "privateIPAddress", skip_serializing_if = "Option::is_none")]
    pub private_ip_address: Option<String>,
    /// How the private address is chosen.
    #[serde(rename = "privateIPAllocationMethod", skip_serializing_if = "Option::is_none")]
    pub private_ip_allocation_method: Option<IpAllocationMethod>,
    /// The version of the private address (an IPv6 configuration for dual-stack).
    #[serde(rename = "privateIPAddressVersion", skip_serializing_if = "Option::is_none")]
    pub private_ip_address_version: Option<IpVersion>,
    /// A public IP of the machine's own, such as a bastion's.
    #[serde(rename = "publicIPAddress", skip_serializing_if = "Option::is_none")]
    pub public_ip_address: Option<SubResource>,
    /// The load balancer backend pools the address joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_backend_address_pools: Option<Vec<SubResource>>,
    /// The load balancer inbound NAT rules forwarding to the address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_inbound_nat_rules: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

arm_model!(
    NetworkInterface,
    "Microsoft.Network/networkInterfaces",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{IpConfiguration, IpConfigurationProperties, NetworkInterface, NetworkInterfaceProperties};
    use crate::models::SubResource;
    use crate::models::network::{IpAllocationMethod, IpVersion};

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_a_desired_interface_sends_only_what_it_sets() {
        let subnet = format!("{RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes");
        let pool = format!("{RG}/providers/Microsoft.Network/loadBalancers/out/backendAddressPools/nodes");
        let answer = json!({
            "name": "node-0-nic",
            "id": format!("{RG}/providers/Microsoft.Network/networkInterfaces/node-0-nic"),
            "etag": "W/\"f4195fb4-2674-4693-a033-244119c6e52d\"",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "11fe90b3-bd0a-4c57-8fdf-de75a594e2d8",
                "ipConfigurations": [{
                    "name": "ipconfig1",
                    "id": format!("{RG}/providers/Microsoft.Network/networkInterfaces/node-0-nic/ipConfigurations/ipconfig1"),
                    "etag": "W/\"f4195fb4-2674-4693-a033-244119c6e52d\"",
                    "type": "Microsoft.Network/networkInterfaces/ipConfigurations",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "privateIPAddress": "10.1.0.4",
                        "privateIPAllocationMethod": "Dynamic",
                        "subnet": {"id": subnet},
                        "loadBalancerBackendAddressPools": [{"id": pool}],
                        "primary": true,
                        "privateIPAddressVersion": "IPv4"
                    }
                }],
                "dnsSettings": {
                    "dnsServers": [],
                    "appliedDnsServers": [],
                    "internalDomainNameSuffix": "tj44xccudg3u1dzxq152n0kuaa.xx.internal.cloudapp.net"
                },
                "macAddress": "00-0D-3A-8F-1B-2C",
                "virtualMachine": {"id": format!("{RG}/providers/Microsoft.Compute/virtualMachines/node-0")},
                "enableAcceleratedNetworking": true,
                "vnetEncryptionSupported": false,
                "enableIPForwarding": true,
                "hostedWorkloads": [],
                "nicType": "Standard",
                "auxiliaryMode": "None"
            },
            "type": "Microsoft.Network/networkInterfaces",
            "location": "westus2"
        });
        let interface: NetworkInterface = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &interface);
        let properties = interface.properties.unwrap();
        assert_eq!(properties.enable_ip_forwarding, Some(true));
        assert_eq!(properties.virtual_machine.unwrap().id.name(), "node-0");
        let configuration = properties.ip_configurations.unwrap()[0]
            .properties
            .clone()
            .unwrap();
        assert_eq!(configuration.private_ip_address.as_deref(), Some("10.1.0.4"));
        assert_eq!(
            configuration.private_ip_allocation_method,
            Some(IpAllocationMethod::Dynamic)
        );
        assert_eq!(configuration.private_ip_address_version, Some(IpVersion::Ipv4));
        assert_eq!(
            configuration.load_balancer_backend_address_pools.unwrap()[0].id,
            pool.parse().unwrap()
        );

        let desired = NetworkInterface {
            location: Some("westus2".parse().unwrap()),
            properties: Some(NetworkInterfaceProperties {
                ip_configurations: Some(vec![IpConfiguration {
                    name: Some("pipConfig".to_owned()),
                    properties: Some(IpConfigurationProperties {
                        subnet: Some(SubResource {
                            id: subnet.parse().unwrap(),
                        }),
                        primary: Some(true),
                        private_ip_allocation_method: Some(IpAllocationMethod::Dynamic),
                        load_balancer_backend_address_pools: Some(vec![SubResource {
                            id: pool.parse().unwrap(),
                        }]),
                        ..IpConfigurationProperties::default()
                    }),
                    ..IpConfiguration::default()
                }]),
                enable_accelerated_networking: Some(true),
                ..NetworkInterfaceProperties::default()
            }),
            ..NetworkInterface::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "properties": {
                    "ipConfigurations": [{"name": "pipConfig", "properties": {
                        "subnet": {"id": subnet},
                        "primary": true,
                        "privateIPAllocationMethod": "Dynamic",
                        "loadBalancerBackendAddressPools": [{"id": pool}]
                    }}],
                    "enableAcceleratedNetworking": true
                }
            })
        );
    }
}
