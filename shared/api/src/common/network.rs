//! The network of a self-managed cluster: virtual network, subnets, security groups, route tables,
//! NAT gateways, load balancers and their public IPs.
//!
//! CAPZ splits most of these types in two: a "class" part that a ClusterClass template may carry,
//! and the full type that adds what only a concrete cluster has (names, IDs). The class parts are
//! embedded with `#[serde(flatten)]`, so both shapes share one definition.
//!
//! Fields the schema requires but admission defaults (resource names, a security rule's
//! direction) read as empty when missing (`#[serde(default)]`, still required in the schema): the
//! mutating webhook sees an object before the API server checks its required fields, and fills
//! them in, so a manifest that leaves them out is admitted as CAPZ admits it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{PrivateEndpoints, ServiceEndpoints, Tags};

/// The part of the network configuration a ClusterClass template may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkClassSpec {
    /// Name of the private DNS zone of a cluster with an internal API server load balancer.
    /// Defaults to `<cluster name>.capz.io`.
    #[serde(
        rename = "privateDNSZoneName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_dns_zone_name: Option<String>,

    /// Resource group of the private DNS zone; defaults to the cluster's.
    #[serde(
        rename = "privateDNSZoneResourceGroup",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub private_dns_zone_resource_group: Option<String>,
}

/// The network of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSpec {
    /// The virtual network. Give the name (and resource group) of an existing one to bring your own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnet: Option<VnetSpec>,

    /// The subnets of the virtual network. Defaults to one control-plane and one node subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Subnets>,

    /// The load balancer in front of the Kubernetes API server.
    #[serde(rename = "apiServerLB", default, skip_serializing_if = "Option::is_none")]
    pub api_server_lb: Option<LoadBalancerSpec>,

    /// A load balancer giving worker nodes outbound connectivity, where the subnets have no NAT
    /// gateway.
    #[serde(rename = "nodeOutboundLB", default, skip_serializing_if = "Option::is_none")]
    pub node_outbound_lb: Option<LoadBalancerSpec>,

    /// A load balancer giving control-plane nodes outbound connectivity; used with an internal API
    /// server load balancer.
    #[serde(
        rename = "controlPlaneOutboundLB",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub control_plane_outbound_lb: Option<LoadBalancerSpec>,

    /// Extra ports exposed by the API server load balancer, forwarded to the control-plane nodes.
    #[serde(
        rename = "additionalAPIServerLBPorts",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_api_server_lb_ports: Option<Vec<LoadBalancerPort>>,

    /// Whether capz-rs manages the private DNS zone of a private cluster (`System`, the default) or
    /// the user does (`None`).
    #[serde(rename = "privateDNSZone", default, skip_serializing_if = "Option::is_none")]
    pub private_dns_zone: Option<PrivateDnsZoneMode>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: NetworkClassSpec,
}

/// The network part of an AzureClusterTemplate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkTemplateSpec {
    /// The virtual network of clusters created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vnet: Option<VnetClassSpec>,

    /// The subnets of clusters created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnets: Option<SubnetTemplates>,

    /// The API server load balancer of clusters created from the template.
    #[serde(rename = "apiServerLB", default, skip_serializing_if = "Option::is_none")]
    pub api_server_lb: Option<LoadBalancerClassSpec>,

    /// The node outbound load balancer of clusters created from the template.
    #[serde(rename = "nodeOutboundLB", default, skip_serializing_if = "Option::is_none")]
    pub node_outbound_lb: Option<LoadBalancerClassSpec>,

    /// The control-plane outbound load balancer of clusters created from the template.
    #[serde(
        rename = "controlPlaneOutboundLB",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub control_plane_outbound_lb: Option<LoadBalancerClassSpec>,

    /// Extra ports exposed by the API server load balancer, forwarded to the control-plane nodes.
    #[serde(
        rename = "additionalAPIServerLBPorts",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_api_server_lb_ports: Option<Vec<LoadBalancerPort>>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: NetworkClassSpec,
}

/// Who manages the private DNS zone of a private cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum PrivateDnsZoneMode {
    /// capz-rs creates the zone, links it to the virtual network and writes the API server record.
    System,
    /// The user provides DNS resolution of the API server name.
    None,
}

/// An extra port on the API server load balancer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerPort {
    /// Name of the load-balancing rule and probe for the port.
    pub name: String,
    /// The TCP port.
    pub port: i32,
}

/// The part of a virtual network's configuration a template may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnetClassSpec {
    /// Address ranges of the virtual network. Defaults to `10.0.0.0/8`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr_blocks: Option<Vec<String>>,

    /// Peerings with other virtual networks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peerings: Option<Vec<VnetPeeringSpec>>,

    /// Extra tags for the virtual network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

/// The virtual network of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct VnetSpec {
    /// Resource group of the virtual network; defaults to the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,

    /// Azure resource ID of the virtual network, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// Name of the virtual network.
    #[serde(default)]
    pub name: String,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: VnetClassSpec,
}

/// A peering between the cluster's virtual network and another one, created in both directions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnetPeeringSpec {
    /// Name of the remote virtual network.
    pub remote_vnet_name: String,

    /// Resource group of the remote virtual network; defaults to the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,

    /// Settings of the peering from the cluster's network to the remote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_peering_properties: Option<VnetPeeringProperties>,

    /// Settings of the peering from the remote network back to the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_peering_properties: Option<VnetPeeringProperties>,
}

/// Settings of one direction of a virtual network peering.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VnetPeeringProperties {
    /// Whether traffic forwarded from outside the peered network is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_forwarded_traffic: Option<bool>,

    /// Whether the remote network may use this network's gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_gateway_transit: Option<bool>,

    /// Whether machines in the two networks can reach each other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_virtual_network_access: Option<bool>,

    /// Whether this network uses the remote network's gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_remote_gateways: Option<bool>,
}

/// What a subnet is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SubnetRole {
    /// Worker nodes.
    #[serde(rename = "node")]
    Node,
    /// Control-plane nodes.
    #[serde(rename = "control-plane")]
    ControlPlane,
    /// The Azure Bastion host.
    #[serde(rename = "bastion")]
    Bastion,
    /// Both control-plane and worker nodes, in a single subnet.
    #[serde(rename = "cluster")]
    Cluster,
}

/// The part of a subnet's configuration a template may carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct SubnetClassSpec {
    /// Name of the subnet.
    #[serde(default)]
    pub name: String,

    /// What the subnet is for: `node`, `control-plane`, `bastion` or `cluster`.
    pub role: SubnetRole,

    /// Address ranges of the subnet, inside the virtual network's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr_blocks: Option<Vec<String>>,

    /// Service endpoints enabled on the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_endpoints: Option<ServiceEndpoints>,

    /// Private endpoints placed in the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_endpoints: Option<PrivateEndpoints>,
}

/// A subnet of the cluster's virtual network.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    /// Azure resource ID of the subnet, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// The network security group of the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_group: Option<SecurityGroup>,

    /// The route table of the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_table: Option<RouteTable>,

    /// The NAT gateway giving the subnet's machines outbound connectivity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<NatGateway>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: SubnetClassSpec,
}

/// The subnets of a cluster, one per name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
pub struct Subnets(pub Vec<SubnetSpec>);

/// A subnet as a template describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnetTemplateSpec {
    /// The network security group of the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_group: Option<SecurityGroupClass>,

    /// The NAT gateway of the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<NatGatewayClassSpec>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: SubnetClassSpec,
}

/// The subnets of a template, one per name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
pub struct SubnetTemplates(pub Vec<SubnetTemplateSpec>);

/// The part of a network security group a template may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupClass {
    /// Rules added to the security group, beside the ones capz-rs adds for SSH and the API server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_rules: Option<SecurityRules>,

    /// Extra tags for the security group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
}

/// A network security group attached to a subnet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct SecurityGroup {
    /// Azure resource ID of the security group, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// Name of the security group.
    #[serde(default)]
    pub name: String,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: SecurityGroupClass,
}

/// The rules of a security group, one per name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
pub struct SecurityRules(pub Vec<SecurityRule>);

/// One rule of a network security group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::direction_required)]
pub struct SecurityRule {
    /// Name of the rule, unique within the security group.
    pub name: String,

    /// What the rule is for.
    pub description: String,

    /// The protocol the rule matches.
    pub protocol: SecurityProtocol,

    /// Whether the rule matches incoming or outgoing traffic (`Inbound` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<SecurityRuleDirection>,

    /// Order of evaluation, from 100 to 4096; lower numbers are evaluated first and must be unique
    /// per direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,

    /// Source port or range, such as `*`, `22` or `1024-65535`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_ports: Option<String>,

    /// Destination port or range, such as `*`, `6443` or `30000-32767`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_ports: Option<String>,

    /// Source address prefix, CIDR or service tag such as `Internet` or `*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,

    /// Several source address prefixes; used instead of `source` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sources: Option<Vec<String>>,

    /// Destination address prefix, CIDR or service tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,

    /// Whether matching traffic is allowed or denied. Defaults to `Allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Allow"))]
    pub action: Option<SecurityRuleAction>,
}

/// The protocol a security rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SecurityProtocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// ICMP.
    Icmp,
    /// Any protocol.
    #[serde(rename = "*")]
    All,
}

/// The traffic direction a security rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SecurityRuleDirection {
    /// Traffic entering the subnet.
    Inbound,
    /// Traffic leaving the subnet.
    Outbound,
}

/// What a security rule does with matching traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SecurityRuleAction {
    /// Let it through.
    Allow,
    /// Drop it.
    Deny,
}

/// A route table attached to a subnet.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct RouteTable {
    /// Azure resource ID of the route table, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// Name of the route table.
    #[serde(default)]
    pub name: String,
}

/// The part of a NAT gateway a template may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct NatGatewayClassSpec {
    /// Name of the NAT gateway.
    #[serde(default)]
    pub name: String,
}

/// A NAT gateway giving a subnet outbound connectivity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NatGateway {
    /// Azure resource ID of the NAT gateway, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// The public IP of the NAT gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<PublicIpSpec>,

    /// Availability zones of the NAT gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: NatGatewayClassSpec,
}

/// A public IP address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct PublicIpSpec {
    /// Name of the public IP resource.
    #[serde(default)]
    pub name: String,

    /// DNS name of the address (a fully qualified name under the location's cloudapp domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_name: Option<String>,

    /// Tags of the address itself (such as a routing preference), not Azure resource tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_tags: Option<Vec<IpTag>>,
}

/// A tag of a public IP address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IpTag {
    /// Kind of tag, for example `RoutingPreference`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Value of the tag, for example `Internet`.
    pub tag: String,
}

/// The part of a load balancer's configuration a template may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerClassSpec {
    /// SKU of the load balancer; `Standard` is the only one supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,

    /// `Public` or `Internal`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,

    /// Idle timeout of TCP connections, in minutes (4 to 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<i32>,
}

/// A load balancer of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerSpec {
    /// Azure resource ID of the load balancer, filled in by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// Name of the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// The frontend IP configurations of the load balancer.
    #[serde(rename = "frontendIPs", default, skip_serializing_if = "Option::is_none")]
    pub frontend_ips: Option<Vec<FrontendIp>>,

    /// How many frontend IPs (each with its public IP) an outbound load balancer gets; more give
    /// more outbound ports.
    #[serde(rename = "frontendIPsCount", default, skip_serializing_if = "Option::is_none")]
    pub frontend_ips_count: Option<i32>,

    /// The backend pool of the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_pool: Option<BackendPool>,

    /// Availability zones of the load balancer's frontends (`1`, `2`, `3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 3),
        inner(pattern(r"^[1-3]$")),
        extend("x-kubernetes-list-type" = "set")
    )]
    pub availability_zones: Option<Vec<String>>,

    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: LoadBalancerClassSpec,
}

/// A frontend IP configuration of a load balancer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::name_required)]
pub struct FrontendIp {
    /// Name of the frontend IP configuration.
    #[schemars(length(min = 1))]
    #[serde(default)]
    pub name: String,

    /// The public IP of a public load balancer's frontend.
    #[serde(rename = "publicIP", default, skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<PublicIpSpec>,

    /// The private IP of an internal load balancer's frontend.
    #[serde(rename = "privateIP", default, skip_serializing_if = "Option::is_none")]
    pub private_ip: Option<String>,
}

/// The backend pool of a load balancer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendPool {
    /// Name of the backend pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
