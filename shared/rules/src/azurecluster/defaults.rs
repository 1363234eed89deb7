//! What CAPZ fills in on an AzureCluster or AzureClusterTemplate the user left out: the virtual
//! network, its subnets with their security groups, route tables and NAT gateways, the load
//! balancers with their public IPs, and the bastion.

use capz_api::azurecluster::{AzureBastion, AzureBastionTemplateSpec, AzureClusterClassSpec};
use capz_api::common::network::{
    FrontendIp, LoadBalancerClassSpec, LoadBalancerSpec, NatGateway, PublicIpSpec, RouteTable, SecurityGroup,
    SecurityGroupClass, SecurityRuleDirection, SubnetClassSpec, SubnetRole, SubnetSpec, SubnetTemplateSpec,
    VnetSpec,
};
use capz_api::{AzureCluster, AzureClusterTemplate};
use kube::ResourceExt as _;

use super::layout::{
    BASTION_SUBNET_NAME, DEFAULT_AZURE_ENVIRONMENT, DEFAULT_IDLE_TIMEOUT_MINUTES, DEFAULT_INTERNAL_LB_IP,
    DEFAULT_VNET_CIDR, LB_INTERNAL, LB_PUBLIC, LB_SKU_STANDARD, SubnetLayout,
};
use crate::{Features, names};

pub(super) fn unset(value: Option<&String>) -> bool {
    value.is_none_or(String::is_empty)
}

pub(super) fn fill(value: &mut Option<String>, default: impl FnOnce() -> String) {
    if unset(value.as_ref()) {
        *value = Some(default());
    }
}

pub(super) fn fill_name(name: &mut String, default: impl FnOnce() -> String) {
    if name.is_empty() {
        *name = default();
    }
}

pub(super) fn fill_cidrs(class: &mut SubnetClassSpec, default: &str) {
    if class.cidr_blocks.as_ref().is_none_or(Vec::is_empty) {
        class.cidr_blocks = Some(vec![default.to_owned()]);
    }
}

/// Whether a subnet has an IPv6 range (IPv6-only or dual-stack).
#[must_use]
pub fn is_ipv6(class: &SubnetClassSpec) -> bool {
    class.cidr_blocks.iter().flatten().any(|cidr| cidr.contains(':'))
}

pub(super) fn subnet(name: String, role: SubnetRole, cidr: &str) -> SubnetSpec {
    SubnetSpec {
        id: None,
        security_group: None,
        route_table: None,
        nat_gateway: None,
        class: SubnetClassSpec {
            name,
            role,
            cidr_blocks: Some(vec![cidr.to_owned()]),
            service_endpoints: None,
            private_endpoints: None,
        },
    }
}

pub(super) fn security_group(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
    let group = subnet.security_group.get_or_insert_with(SecurityGroup::default);
    fill_name(&mut group.name, default);
    default_rule_directions(&mut group.class);
}

/// A security rule that leaves its direction out matches incoming traffic.
pub(super) fn default_rule_directions(group: &mut SecurityGroupClass) {
    for rule in group
        .security_rules
        .iter_mut()
        .flat_map(|rules| rules.0.iter_mut())
    {
        rule.direction.get_or_insert(SecurityRuleDirection::Inbound);
    }
}

pub(super) fn route_table(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
    fill_name(
        &mut subnet.route_table.get_or_insert_with(RouteTable::default).name,
        default,
    );
}

/// Gives a subnet a NAT gateway with a public IP, unless it is IPv6 (NAT gateways take IPv4 only)
/// or brought by the user (its ID is set, so it exists with whatever outbound path it has).
pub(super) fn nat_gateway(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
    if is_ipv6(&subnet.class) || !unset(subnet.id.as_ref()) {
        return;
    }
    let gateway = subnet.nat_gateway.get_or_insert_with(NatGateway::default);
    fill_name(&mut gateway.class.name, default);
    let ip_name = names::nat_gateway_ip(&gateway.class.name);
    fill_name(
        &mut gateway.ip.get_or_insert_with(PublicIpSpec::default).name,
        || ip_name,
    );
}

pub(super) fn default_class(class: &mut AzureClusterClassSpec) {
    fill(&mut class.azure_environment, || {
        DEFAULT_AZURE_ENVIRONMENT.to_owned()
    });
}

/// An outbound load balancer is always public and standard: CAPZ sets both over whatever is written.
pub(super) fn default_outbound_lb_class(class: &mut LoadBalancerClassSpec) {
    class.type_ = Some(LB_PUBLIC.to_owned());
    class.sku = Some(LB_SKU_STANDARD.to_owned());
    class
        .idle_timeout_in_minutes
        .get_or_insert(DEFAULT_IDLE_TIMEOUT_MINUTES);
}

pub(super) fn default_lb_class(class: &mut LoadBalancerClassSpec) {
    fill(&mut class.type_, || LB_PUBLIC.to_owned());
    fill(&mut class.sku, || LB_SKU_STANDARD.to_owned());
    class
        .idle_timeout_in_minutes
        .get_or_insert(DEFAULT_IDLE_TIMEOUT_MINUTES);
}

pub(super) fn is_internal(class: Option<&LoadBalancerClassSpec>) -> bool {
    class.and_then(|c| c.type_.as_deref()) == Some(LB_INTERNAL)
}

/// Fills in the defaults of an AzureCluster, as CAPZ's webhook does. Idempotent: defaulting a
/// defaulted cluster changes nothing.
pub fn default_cluster(cluster: &mut AzureCluster, features: Features) {
    let name = cluster.name_any();
    let spec = &mut cluster.spec;
    default_class(&mut spec.class);
    // The AzureCluster's own name, as CAPZ has it, even when the Cluster's name differs.
    fill(&mut spec.resource_group, || name.clone());
    let group = spec.resource_group.clone().unwrap_or_default();
    let control_plane = spec.control_plane_enabled.unwrap_or(true);

    let network = spec.network_spec.get_or_insert_with(Default::default);
    let vnet = network.vnet.get_or_insert_with(VnetSpec::default);
    fill(&mut vnet.resource_group, || group.clone());
    fill_name(&mut vnet.name, || names::vnet(&name));
    if vnet.class.cidr_blocks.as_ref().is_none_or(Vec::is_empty) {
        vnet.class.cidr_blocks = Some(vec![DEFAULT_VNET_CIDR.to_owned()]);
    }
    for peering in vnet.class.peerings.iter_mut().flatten() {
        fill(&mut peering.resource_group, || group.clone());
    }

    let layout = SubnetLayout::of(vnet.class.cidr_blocks.as_ref());
    if let Some(bastion) = spec.bastion_spec.as_mut().and_then(|b| b.azure_bastion.as_mut()) {
        default_bastion(bastion, &name, layout);
    }

    let subnets = &mut network.subnets.get_or_insert_with(Default::default).0;
    default_subnets(subnets, &name, layout, control_plane);

    if control_plane {
        let lb = network
            .api_server_lb
            .get_or_insert_with(LoadBalancerSpec::default);
        default_api_server_lb(lb, &name, features);
    } else {
        network.api_server_lb = None;
    }

    let needs_node_outbound = control_plane
        && !is_internal(network.api_server_lb.as_ref().map(|lb| &lb.class))
        && subnets
            .iter()
            .any(|s| matches!(s.class.role, SubnetRole::Node | SubnetRole::Cluster) && is_ipv6(&s.class));
    if network.node_outbound_lb.is_none() && needs_node_outbound {
        network.node_outbound_lb = Some(LoadBalancerSpec::default());
    }
    if let Some(lb) = network.node_outbound_lb.as_mut() {
        default_outbound_lb(lb, name.clone(), &names::node_outbound_ip(&name), None);
    }
    if let Some(lb) = network
        .control_plane_outbound_lb
        .as_mut()
        .filter(|_| control_plane)
    {
        let default_name = names::control_plane_outbound_load_balancer(&name);
        default_outbound_lb(
            lb,
            default_name.clone(),
            &names::control_plane_outbound_ip(&name),
            Some(&default_name),
        );
    }
}

pub(super) fn default_bastion(bastion: &mut AzureBastion, cluster: &str, layout: SubnetLayout) {
    fill(&mut bastion.name, || names::bastion(cluster));
    let subnet = bastion.subnet.get_or_insert_with(|| {
        subnet(
            BASTION_SUBNET_NAME.to_owned(),
            SubnetRole::Bastion,
            &layout.bastion(),
        )
    });
    fill_name(&mut subnet.class.name, || BASTION_SUBNET_NAME.to_owned());
    fill_cidrs(&mut subnet.class, &layout.bastion());
    fill_name(
        &mut bastion.public_ip.get_or_insert_with(PublicIpSpec::default).name,
        || names::bastion_ip(cluster),
    );
}

/// A `cluster` subnet stands for both roles; otherwise there is always one control-plane subnet
/// (when the cluster has a control plane) and at least one node subnet.
pub(super) fn default_subnets(
    subnets: &mut Vec<SubnetSpec>,
    cluster: &str,
    layout: SubnetLayout,
    control_plane: bool,
) {
    let has_cluster_subnet = subnets.iter().any(|s| s.class.role == SubnetRole::Cluster);
    for subnet in subnets.iter_mut().filter(|s| s.class.role == SubnetRole::Cluster) {
        fill_name(&mut subnet.class.name, || names::cluster_subnet(cluster));
        fill_cidrs(&mut subnet.class, &layout.block(0));
        security_group(subnet, || names::cluster_security_group(cluster));
        route_table(subnet, || names::cluster_route_table(cluster));
        nat_gateway(subnet, || names::cluster_nat_gateway(cluster));
    }

    if control_plane {
        default_control_plane_subnet(subnets, cluster, layout, has_cluster_subnet);
    }

    let mut nodes = 0;
    for subnet in subnets.iter_mut().filter(|s| s.class.role == SubnetRole::Node) {
        nodes += 1;
        fill_name(&mut subnet.class.name, || {
            names::indexed(&names::node_subnet(cluster), nodes)
        });
        fill_cidrs(&mut subnet.class, &layout.block(nodes));
        security_group(subnet, || names::node_security_group(cluster));
        route_table(subnet, || names::node_route_table(cluster));
        nat_gateway(subnet, || {
            names::indexed(&names::node_nat_gateway(cluster), nodes)
        });
    }
    if nodes == 0 && !has_cluster_subnet {
        let mut subnet = subnet(names::node_subnet(cluster), SubnetRole::Node, &layout.block(1));
        security_group(&mut subnet, || names::node_security_group(cluster));
        route_table(&mut subnet, || names::node_route_table(cluster));
        nat_gateway(&mut subnet, || names::node_nat_gateway(cluster));
        subnets.push(subnet);
    }

    // The cloud provider writes pod routes into one route table, the first node (or cluster)
    // subnet's; the control plane shares it so the API server reaches pods on the nodes.
    let node_route_table = subnets
        .iter()
        .find(|s| matches!(s.class.role, SubnetRole::Node | SubnetRole::Cluster))
        .and_then(|s| s.route_table.as_ref())
        .map(|table| table.name.clone())
        .filter(|name| !name.is_empty());
    if control_plane
        && let Some(table) = node_route_table
        && let Some(subnet) = subnets
            .iter_mut()
            .find(|s| s.class.role == SubnetRole::ControlPlane)
    {
        route_table(subnet, || table);
    }
}

/// The first control-plane subnet gets what it leaves out; without one (and without a `cluster`
/// subnet) a control-plane subnet is added.
fn default_control_plane_subnet(
    subnets: &mut Vec<SubnetSpec>,
    cluster: &str,
    layout: SubnetLayout,
    has_cluster_subnet: bool,
) {
    if let Some(subnet) = subnets
        .iter_mut()
        .find(|s| s.class.role == SubnetRole::ControlPlane)
    {
        fill_name(&mut subnet.class.name, || names::control_plane_subnet(cluster));
        fill_cidrs(&mut subnet.class, &layout.block(0));
        security_group(subnet, || names::control_plane_security_group(cluster));
    } else if !has_cluster_subnet {
        let mut subnet = subnet(
            names::control_plane_subnet(cluster),
            SubnetRole::ControlPlane,
            &layout.block(0),
        );
        security_group(&mut subnet, || names::control_plane_security_group(cluster));
        subnets.push(subnet);
    }
}

pub(super) fn default_api_server_lb(lb: &mut LoadBalancerSpec, cluster: &str, features: Features) {
    default_lb_class(&mut lb.class);
    let internal = is_internal(Some(&lb.class));
    fill(&mut lb.name, || {
        if internal {
            names::internal_load_balancer(cluster)
        } else {
            names::public_load_balancer(cluster)
        }
    });
    let lb_name = lb.name.clone().unwrap_or_default();
    let frontends = lb.frontend_ips.get_or_insert_with(Vec::new);
    if frontends.is_empty() {
        frontends.push(if internal {
            FrontendIp {
                name: names::frontend_ip(&lb_name),
                public_ip: None,
                private_ip: Some(DEFAULT_INTERNAL_LB_IP.to_owned()),
            }
        } else {
            FrontendIp {
                name: names::frontend_ip(&lb_name),
                public_ip: Some(PublicIpSpec {
                    name: names::api_server_ip(cluster),
                    ..PublicIpSpec::default()
                }),
                private_ip: None,
            }
        });
    }
    if !internal && features.api_server_ilb {
        if let Some(private) = frontends.iter_mut().find(|f| !unset(f.private_ip.as_ref())) {
            fill_name(&mut private.name, || names::internal_frontend_ip(&lb_name));
        } else {
            frontends.push(FrontendIp {
                name: names::internal_frontend_ip(&lb_name),
                public_ip: None,
                private_ip: Some(DEFAULT_INTERNAL_LB_IP.to_owned()),
            });
        }
    }
    fill(
        &mut lb.backend_pool.get_or_insert_with(Default::default).name,
        || names::backend_pool(&lb_name),
    );
}

/// An outbound load balancer's frontends follow its `frontendIPsCount`, one public IP each.
/// `pool_of` names the load balancer the backend pool's default name derives from: the node
/// outbound one's own name, the control plane's default name whatever its name is (as CAPZ has
/// them).
pub(super) fn default_outbound_lb(
    lb: &mut LoadBalancerSpec,
    name: String,
    ip_name: &str,
    pool_of: Option<&str>,
) {
    default_outbound_lb_class(&mut lb.class);
    fill(&mut lb.name, || name);
    let lb_name = lb.name.clone().unwrap_or_default();
    let count = *lb.frontend_ips_count.get_or_insert(1);
    let frontend = |frontend: String, ip: String| FrontendIp {
        name: frontend,
        public_ip: Some(PublicIpSpec {
            name: ip,
            ..PublicIpSpec::default()
        }),
        private_ip: None,
    };
    lb.frontend_ips = Some(match usize::try_from(count).unwrap_or(0) {
        0 => Vec::new(),
        1 => vec![frontend(names::frontend_ip(&lb_name), ip_name.to_owned())],
        n => (1..=n)
            .map(|i| {
                frontend(
                    names::indexed(&names::frontend_ip(&lb_name), i),
                    names::indexed(ip_name, i),
                )
            })
            .collect(),
    });
    fill(
        &mut lb.backend_pool.get_or_insert_with(Default::default).name,
        || names::outbound_backend_pool(pool_of.unwrap_or(&lb_name)),
    );
}

/// Fills in the defaults of an AzureClusterTemplate: what does not depend on the cluster's name.
pub fn default_template(template: &mut AzureClusterTemplate) {
    let spec = &mut template.spec.template.spec;
    default_class(&mut spec.class);
    let network = spec.network_spec.get_or_insert_with(Default::default);
    let vnet = network.vnet.get_or_insert_with(Default::default);
    if vnet.cidr_blocks.as_ref().is_none_or(Vec::is_empty) {
        vnet.cidr_blocks = Some(vec![DEFAULT_VNET_CIDR.to_owned()]);
    }
    let layout = SubnetLayout::of(vnet.cidr_blocks.as_ref());
    if let Some(bastion) = spec.bastion_spec.as_mut().and_then(|b| b.azure_bastion.as_mut()) {
        default_template_bastion(bastion, layout);
    }
    let subnets = &mut network.subnets.get_or_insert_with(Default::default).0;
    // The control-plane and node subnets a template needs are its own to list (validation asks
    // for them); defaulting only fills in the ranges of those it lists.
    for subnet in subnets.iter_mut().filter(|s| s.class.role != SubnetRole::Bastion) {
        if let Some(group) = subnet.security_group.as_mut() {
            default_rule_directions(group);
        }
    }
    for subnet in subnets.iter_mut().filter(|s| s.class.role == SubnetRole::Cluster) {
        fill_cidrs(&mut subnet.class, &layout.block(0));
    }
    if let Some(subnet) = subnets
        .iter_mut()
        .find(|s| s.class.role == SubnetRole::ControlPlane)
    {
        fill_cidrs(&mut subnet.class, &layout.block(0));
    }
    for (n, subnet) in subnets
        .iter_mut()
        .filter(|s| s.class.role == SubnetRole::Node)
        .enumerate()
    {
        fill_cidrs(&mut subnet.class, &layout.block(n + 1));
    }

    default_lb_class(network.api_server_lb.get_or_insert_with(Default::default));
    let needs_node_outbound = !is_internal(network.api_server_lb.as_ref())
        && subnets
            .iter()
            .any(|s| matches!(s.class.role, SubnetRole::Node | SubnetRole::Cluster) && is_ipv6(&s.class));
    if network.node_outbound_lb.is_none() && needs_node_outbound {
        network.node_outbound_lb = Some(LoadBalancerClassSpec::default());
    }
    for lb in [
        network.node_outbound_lb.as_mut(),
        network.control_plane_outbound_lb.as_mut(),
    ]
    .into_iter()
    .flatten()
    {
        default_outbound_lb_class(lb);
    }
}

pub(super) fn default_template_bastion(bastion: &mut AzureBastionTemplateSpec, layout: SubnetLayout) {
    let subnet = bastion.subnet.get_or_insert_with(|| SubnetTemplateSpec {
        security_group: None,
        nat_gateway: None,
        class: subnet(
            BASTION_SUBNET_NAME.to_owned(),
            SubnetRole::Bastion,
            &layout.bastion(),
        )
        .class,
    });
    fill_name(&mut subnet.class.name, || BASTION_SUBNET_NAME.to_owned());
    fill_cidrs(&mut subnet.class, &layout.bastion());
}
