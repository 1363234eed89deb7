//! Microsoft.Network: the virtual network and subnets, their security groups, route tables and
//! NAT gateways, peerings, private endpoints, public IPs, load balancers, network interfaces and
//! bastion hosts.
//!
//! All of them follow one api-version, [`API_VERSION`]: they refer to each other and share pieces
//! (references, address settings), which then have one shape.

mod bastion_host;
mod load_balancer;
mod nat_gateway;
mod network_interface;
mod private_endpoint;
mod public_ip_address;
mod route_table;
mod security_group;
mod virtual_network;
mod virtual_network_peering;

pub use bastion_host::{
    BastionHost, BastionHostIpConfiguration, BastionHostIpConfigurationProperties, BastionHostProperties,
    BastionHostSkuName,
};
pub use load_balancer::{
    BackendAddressPool, BackendAddressPoolProperties, FrontendIpConfiguration,
    FrontendIpConfigurationProperties, InboundNatRule, InboundNatRuleProperties, LoadBalancer,
    LoadBalancerProperties, LoadBalancerSkuName, LoadBalancingRule, LoadBalancingRuleProperties,
    LoadDistribution, OutboundRule, OutboundRuleProperties, Probe, ProbeProperties, ProbeProtocol,
    TransportProtocol,
};
pub use nat_gateway::{NatGateway, NatGatewayProperties, NatGatewaySkuName};
pub use network_interface::{
    IpConfiguration, IpConfigurationProperties, NetworkInterface, NetworkInterfaceDnsSettings,
    NetworkInterfaceProperties,
};
pub use private_endpoint::{
    ConnectionState, PrivateEndpoint, PrivateEndpointIpConfiguration,
    PrivateEndpointIpConfigurationProperties, PrivateEndpointProperties, PrivateLinkServiceConnection,
    PrivateLinkServiceConnectionProperties,
};
pub use public_ip_address::{
    IpTag, PublicIpAddress, PublicIpAddressDnsSettings, PublicIpAddressProperties, PublicIpSkuName,
};
pub use route_table::{NextHopType, Route, RouteProperties, RouteTable, RouteTableProperties};
pub use security_group::{
    NetworkSecurityGroup, NetworkSecurityGroupProperties, SecurityRule, SecurityRuleAccess,
    SecurityRuleDirection, SecurityRuleProperties, SecurityRuleProtocol,
};
pub use virtual_network::{
    AddressSpace, ServiceEndpoint, Subnet, SubnetProperties, VirtualNetwork, VirtualNetworkProperties,
};
pub use virtual_network_peering::{PeeringState, VirtualNetworkPeering, VirtualNetworkPeeringProperties};

use crate::id::ApiVersion;

/// The api-version of every Microsoft.Network model.
pub const API_VERSION: ApiVersion = ApiVersion::new("2024-05-01");

lenient_enum! {
    /// How a private or public address is chosen.
    pub enum IpAllocationMethod {
        /// Kept until the resource is deleted; a private one is the address asked for.
        Static = "Static",
        /// Chosen by Azure (a private one from the subnet); a public one only while in use.
        Dynamic = "Dynamic",
    }
}

lenient_enum! {
    /// An IP version.
    pub enum IpVersion {
        /// IPv4.
        Ipv4 = "IPv4",
        /// IPv6.
        Ipv6 = "IPv6",
    }
}
