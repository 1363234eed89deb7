//! The rules of AzureCluster and AzureClusterTemplate: the network CAPZ fills in (virtual
//! network, subnets with their security groups, route tables and NAT gateways, the load
//! balancers and their public IPs, the bastion), what Azure would refuse later, and what cannot
//! change once the cluster exists.

use std::collections::{BTreeMap, BTreeSet};

use capz_api::azurecluster::{
    AzureBastion, AzureBastionTemplateSpec, AzureClusterClassSpec, AzureClusterTemplateResourceSpec,
    BastionHostSku,
};
use capz_api::common::network::{
    FrontendIp, LoadBalancerClassSpec, LoadBalancerSpec, NatGateway, NatGatewayClassSpec, NetworkClassSpec,
    NetworkSpec, PublicIpSpec, RouteTable, SecurityGroup, SecurityGroupClass, SecurityRuleDirection,
    SubnetClassSpec, SubnetRole, SubnetSpec, SubnetTemplateSpec, VnetSpec,
};
use capz_api::common::{PrivateEndpoints, ServiceEndpoints};
use capz_api::{AzureCluster, AzureClusterSpec, AzureClusterTemplate};
use kube::ResourceExt as _;

use crate::cidr::Cidr;
use crate::field::{FieldError, FieldPath, Verdict};
use crate::immutable::{unchanged, unchanged_once_set};
use crate::{Context, Features, Rules, checks, names};

/// The address space of a virtual network given none.
pub const DEFAULT_VNET_CIDR: &str = "10.0.0.0/8";
/// The subnet Azure Bastion requires, by name.
pub const BASTION_SUBNET_NAME: &str = "AzureBastionSubnet";
/// The range of the bastion subnet given none, in the default address space.
pub const DEFAULT_BASTION_SUBNET_CIDR: &str = "10.255.255.224/27";
/// The private IP of an internal API server load balancer given none.
pub const DEFAULT_INTERNAL_LB_IP: &str = "10.0.0.100";
/// The idle timeout of load balancers given none, in minutes.
pub const DEFAULT_IDLE_TIMEOUT_MINUTES: i32 = 4;
/// The cloud of a cluster given none.
pub const DEFAULT_AZURE_ENVIRONMENT: &str = "AzurePublicCloud";
/// The only load balancer SKU capz-rs creates.
pub const LB_SKU_STANDARD: &str = "Standard";
/// A load balancer reachable from the internet.
pub const LB_PUBLIC: &str = "Public";
/// A load balancer reachable from the virtual network only.
pub const LB_INTERNAL: &str = "Internal";
/// The names of the subnets a template gets when it lists none; a template has no cluster name
/// to derive them from.
pub const TEMPLATE_CONTROL_PLANE_SUBNET: &str = "control-plane-subnet";
/// See [`TEMPLATE_CONTROL_PLANE_SUBNET`].
pub const TEMPLATE_NODE_SUBNET: &str = "node-subnet";
/// The longest cluster name: it names the resource group and prefixes every resource name.
pub const MAX_CLUSTER_NAME: usize = 44;
/// How many public IPs an outbound load balancer may have.
pub const MAX_OUTBOUND_FRONTENDS: i32 = 16;

/// Where default subnet ranges come from: blocks of the virtual network's first IPv4 range, 8 bits
/// longer (at most /29). The control-plane (or `cluster`) subnet takes block 0 and node subnet
/// `n` block `n`; the bastion takes the last /27. With CAPZ's default address space 10.0.0.0/8
/// this is CAPZ's layout exactly (10.0.0.0/16, 10.<n>.0.0/16, 10.255.255.224/27); with a custom
/// address space the defaults still fall inside it.
#[derive(Clone, Copy, Debug)]
pub struct SubnetLayout(Option<Cidr>);

impl SubnetLayout {
    /// The layout of a virtual network with `cidrs`.
    #[must_use]
    pub fn of(cidrs: Option<&Vec<String>>) -> Self {
        Self(
            cidrs
                .into_iter()
                .flatten()
                .filter_map(|c| c.parse::<Cidr>().ok())
                .find(|c| !c.is_ipv6()),
        )
    }

    /// The default range of block `index`, CAPZ's fixed default when the space has no such block.
    #[must_use]
    pub fn block(&self, index: usize) -> String {
        self.0
            .filter(|vnet| vnet.prefix() < 29)
            .and_then(|vnet| vnet.subrange((vnet.prefix() + 8).min(29), u128::try_from(index).ok()?))
            .map_or_else(|| format!("10.{index}.0.0/16"), |c| c.to_string())
    }

    /// The default range of the bastion subnet.
    #[must_use]
    pub fn bastion(&self) -> String {
        self.0
            .and_then(|vnet| vnet.subrange(27, vnet.count(27).checked_sub(1)?))
            .map_or_else(|| DEFAULT_BASTION_SUBNET_CIDR.to_owned(), |c| c.to_string())
    }
}

fn unset(value: Option<&String>) -> bool {
    value.is_none_or(String::is_empty)
}

fn fill(value: &mut Option<String>, default: impl FnOnce() -> String) {
    if unset(value.as_ref()) {
        *value = Some(default());
    }
}

fn fill_name(name: &mut String, default: impl FnOnce() -> String) {
    if name.is_empty() {
        *name = default();
    }
}

fn fill_cidrs(class: &mut SubnetClassSpec, default: &str) {
    if class.cidr_blocks.as_ref().is_none_or(Vec::is_empty) {
        class.cidr_blocks = Some(vec![default.to_owned()]);
    }
}

/// Whether a subnet has an IPv6 range (IPv6-only or dual-stack).
#[must_use]
pub fn is_ipv6(class: &SubnetClassSpec) -> bool {
    class.cidr_blocks.iter().flatten().any(|cidr| cidr.contains(':'))
}

fn subnet(name: String, role: SubnetRole, cidr: &str) -> SubnetSpec {
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

fn security_group(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
    fill_name(
        &mut subnet
            .security_group
            .get_or_insert_with(SecurityGroup::default)
            .name,
        default,
    );
}

fn route_table(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
    fill_name(
        &mut subnet.route_table.get_or_insert_with(RouteTable::default).name,
        default,
    );
}

/// Gives a subnet a NAT gateway with a public IP, unless it is IPv6 (NAT gateways take IPv4 only)
/// or brought by the user (its ID is set, so it exists with whatever outbound path it has).
fn nat_gateway(subnet: &mut SubnetSpec, default: impl FnOnce() -> String) {
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

fn default_class(class: &mut AzureClusterClassSpec) {
    fill(&mut class.azure_environment, || {
        DEFAULT_AZURE_ENVIRONMENT.to_owned()
    });
}

fn default_lb_class(class: &mut LoadBalancerClassSpec) {
    fill(&mut class.type_, || LB_PUBLIC.to_owned());
    fill(&mut class.sku, || LB_SKU_STANDARD.to_owned());
    class
        .idle_timeout_in_minutes
        .get_or_insert(DEFAULT_IDLE_TIMEOUT_MINUTES);
}

fn is_internal(class: Option<&LoadBalancerClassSpec>) -> bool {
    class.and_then(|c| c.type_.as_deref()) == Some(LB_INTERNAL)
}

/// Fills in the defaults of an AzureCluster, as CAPZ's webhook does. Idempotent: defaulting a
/// defaulted cluster changes nothing.
pub fn default_cluster(cluster: &mut AzureCluster, features: Features) {
    let name = cluster.name_any();
    let group_default = cluster
        .labels()
        .get(capz_api::capi::CLUSTER_NAME_LABEL)
        .cloned()
        .unwrap_or_else(|| name.clone());
    let spec = &mut cluster.spec;
    default_class(&mut spec.class);
    fill(&mut spec.resource_group, || group_default);
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
    default_subnets(subnets, &name, layout);

    if control_plane {
        let lb = network
            .api_server_lb
            .get_or_insert_with(LoadBalancerSpec::default);
        default_api_server_lb(lb, &name, features);
    } else {
        network.api_server_lb = None;
    }

    let needs_node_outbound = !is_internal(network.api_server_lb.as_ref().map(|lb| &lb.class))
        && subnets
            .iter()
            .any(|s| matches!(s.class.role, SubnetRole::Node | SubnetRole::Cluster) && is_ipv6(&s.class));
    if network.node_outbound_lb.is_none() && needs_node_outbound {
        network.node_outbound_lb = Some(LoadBalancerSpec::default());
    }
    if let Some(lb) = network.node_outbound_lb.as_mut() {
        default_outbound_lb(lb, name.clone(), &names::node_outbound_ip(&name));
    }
    if let Some(lb) = network.control_plane_outbound_lb.as_mut() {
        default_outbound_lb(
            lb,
            names::control_plane_outbound_load_balancer(&name),
            &names::control_plane_outbound_ip(&name),
        );
    }
}

fn default_bastion(bastion: &mut AzureBastion, cluster: &str, layout: SubnetLayout) {
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
/// and at least one node subnet.
fn default_subnets(subnets: &mut Vec<SubnetSpec>, cluster: &str, layout: SubnetLayout) {
    let has_cluster_subnet = subnets.iter().any(|s| s.class.role == SubnetRole::Cluster);
    for subnet in subnets.iter_mut().filter(|s| s.class.role == SubnetRole::Cluster) {
        fill_name(&mut subnet.class.name, || names::cluster_subnet(cluster));
        fill_cidrs(&mut subnet.class, &layout.block(0));
        security_group(subnet, || names::cluster_security_group(cluster));
        route_table(subnet, || names::cluster_route_table(cluster));
        nat_gateway(subnet, || names::cluster_nat_gateway(cluster));
    }

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
}

fn default_api_server_lb(lb: &mut LoadBalancerSpec, cluster: &str, features: Features) {
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
fn default_outbound_lb(lb: &mut LoadBalancerSpec, name: String, ip_name: &str) {
    default_lb_class(&mut lb.class);
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
        || names::outbound_backend_pool(&lb_name),
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
    let template_subnet = |name: &str, role| SubnetTemplateSpec {
        security_group: None,
        nat_gateway: None,
        class: SubnetClassSpec {
            name: name.to_owned(),
            role,
            cidr_blocks: None,
            service_endpoints: None,
            private_endpoints: None,
        },
    };
    let has_cluster_subnet = subnets.iter().any(|s| s.class.role == SubnetRole::Cluster);
    for subnet in subnets.iter_mut().filter(|s| s.class.role == SubnetRole::Cluster) {
        fill_cidrs(&mut subnet.class, &layout.block(0));
    }
    if !has_cluster_subnet && !subnets.iter().any(|s| s.class.role == SubnetRole::ControlPlane) {
        subnets.push(template_subnet(
            TEMPLATE_CONTROL_PLANE_SUBNET,
            SubnetRole::ControlPlane,
        ));
    }
    if let Some(subnet) = subnets
        .iter_mut()
        .find(|s| s.class.role == SubnetRole::ControlPlane)
    {
        fill_cidrs(&mut subnet.class, &layout.block(0));
    }
    if !has_cluster_subnet && !subnets.iter().any(|s| s.class.role == SubnetRole::Node) {
        subnets.push(template_subnet(TEMPLATE_NODE_SUBNET, SubnetRole::Node));
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
        default_lb_class(lb);
    }
}

fn default_template_bastion(bastion: &mut AzureBastionTemplateSpec, layout: SubnetLayout) {
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

/// A subnet as both an AzureCluster and a template carry it.
struct SubnetView<'a> {
    class: &'a SubnetClassSpec,
    security_group: Option<&'a SecurityGroupClass>,
    security_group_name: Option<&'a str>,
    route_table: Option<&'a str>,
    nat_gateway: Option<&'a NatGatewayClassSpec>,
    nat_gateway_ip: Option<&'a PublicIpSpec>,
}

impl<'a> SubnetView<'a> {
    fn of_cluster(s: &'a SubnetSpec) -> Self {
        Self {
            class: &s.class,
            security_group: s.security_group.as_ref().map(|g| &g.class),
            security_group_name: s.security_group.as_ref().map(|g| g.name.as_str()),
            route_table: s.route_table.as_ref().map(|t| t.name.as_str()),
            nat_gateway: s.nat_gateway.as_ref().map(|g| &g.class),
            nat_gateway_ip: s.nat_gateway.as_ref().and_then(|g| g.ip.as_ref()),
        }
    }

    fn of_template(s: &'a SubnetTemplateSpec) -> Self {
        Self {
            class: &s.class,
            security_group: s.security_group.as_ref(),
            security_group_name: None,
            route_table: None,
            nat_gateway: s.nat_gateway.as_ref(),
            nat_gateway_ip: None,
        }
    }
}

/// The network as both an AzureCluster and a template carry it.
struct NetworkView<'a> {
    vnet_cidrs: &'a [String],
    subnets: Vec<SubnetView<'a>>,
    bastion_subnet: Option<SubnetView<'a>>,
    api_server_lb: Option<&'a LoadBalancerClassSpec>,
    node_outbound_lb: Option<(&'a LoadBalancerClassSpec, Option<i32>)>,
    control_plane_outbound_lb: Option<(&'a LoadBalancerClassSpec, Option<i32>)>,
    class: Option<&'a NetworkClassSpec>,
}

impl<'a> NetworkView<'a> {
    fn of_cluster(spec: &'a AzureClusterSpec) -> Self {
        let network = spec.network_spec.as_ref();
        let outbound = |lb: &'a LoadBalancerSpec| (&lb.class, lb.frontend_ips_count);
        Self {
            vnet_cidrs: network
                .and_then(|n| n.vnet.as_ref())
                .and_then(|v| v.class.cidr_blocks.as_deref())
                .unwrap_or(&[]),
            subnets: network
                .and_then(|n| n.subnets.as_ref())
                .map_or(&[][..], |s| &s.0)
                .iter()
                .map(SubnetView::of_cluster)
                .collect(),
            bastion_subnet: spec
                .bastion_spec
                .as_ref()
                .and_then(|b| b.azure_bastion.as_ref())
                .and_then(|b| b.subnet.as_ref())
                .map(SubnetView::of_cluster),
            api_server_lb: network.and_then(|n| n.api_server_lb.as_ref()).map(|lb| &lb.class),
            node_outbound_lb: network.and_then(|n| n.node_outbound_lb.as_ref()).map(outbound),
            control_plane_outbound_lb: network
                .and_then(|n| n.control_plane_outbound_lb.as_ref())
                .map(outbound),
            class: network.map(|n| &n.class),
        }
    }

    fn of_template(spec: &'a AzureClusterTemplateResourceSpec) -> Self {
        let network = spec.network_spec.as_ref();
        Self {
            vnet_cidrs: network
                .and_then(|n| n.vnet.as_ref())
                .and_then(|v| v.cidr_blocks.as_deref())
                .unwrap_or(&[]),
            subnets: network
                .and_then(|n| n.subnets.as_ref())
                .map_or(&[][..], |s| &s.0)
                .iter()
                .map(SubnetView::of_template)
                .collect(),
            bastion_subnet: spec
                .bastion_spec
                .as_ref()
                .and_then(|b| b.azure_bastion.as_ref())
                .and_then(|b| b.subnet.as_ref())
                .map(SubnetView::of_template),
            api_server_lb: network.and_then(|n| n.api_server_lb.as_ref()),
            node_outbound_lb: network
                .and_then(|n| n.node_outbound_lb.as_ref())
                .map(|lb| (lb, None)),
            control_plane_outbound_lb: network
                .and_then(|n| n.control_plane_outbound_lb.as_ref())
                .map(|lb| (lb, None)),
            class: network.map(|n| &n.class),
        }
    }

    /// The ranges of the subnets with `role`.
    fn ranges_of(&self, role: SubnetRole) -> Vec<Cidr> {
        self.subnets
            .iter()
            .filter(|s| s.class.role == role)
            .flat_map(|s| s.class.cidr_blocks.iter().flatten())
            .filter_map(|c| c.parse().ok())
            .collect()
    }
}

/// Checks the network shared by clusters and templates; `root` is the path of the spec holding
/// `networkSpec` and `bastionSpec`.
fn check_network(
    view: &NetworkView<'_>,
    root: &FieldPath,
    control_plane: bool,
    errors: &mut Vec<FieldError>,
) {
    let network = &root.child("networkSpec");
    let vnet_path = network.child("vnet").child("cidrBlocks");
    let mut vnet_ranges = Vec::new();
    for (i, text) in view.vnet_cidrs.iter().enumerate() {
        match text.parse::<Cidr>() {
            Ok(cidr) => vnet_ranges.push(cidr),
            Err(e) => errors.push(FieldError::invalid(vnet_path.index(i), text, e.to_string())),
        }
    }

    let subnets_path = network.child("subnets");
    let mut seen = BTreeSet::new();
    let mut ranges: Vec<(String, Cidr)> = Vec::new();
    for (i, subnet) in view.subnets.iter().enumerate() {
        let at = subnets_path.index(i);
        if !seen.insert(subnet.class.name.as_str()) {
            errors.push(FieldError::duplicate(at.child("name"), &subnet.class.name));
        }
        check_subnet(subnet, &at, &vnet_ranges, &mut ranges, errors);
    }
    if let Some(bastion) = &view.bastion_subnet {
        let at = root.child("bastionSpec").child("azureBastion").child("subnet");
        if bastion.class.name != BASTION_SUBNET_NAME {
            errors.push(FieldError::invalid(
                at.child("name"),
                &bastion.class.name,
                format!("Azure Bastion only works in a subnet named {BASTION_SUBNET_NAME}"),
            ));
        }
        check_subnet(bastion, &at, &vnet_ranges, &mut ranges, errors);
    }

    let has_cluster_subnet = view.subnets.iter().any(|s| s.class.role == SubnetRole::Cluster);
    if !has_cluster_subnet {
        let mut required = vec![SubnetRole::Node];
        if control_plane {
            required.push(SubnetRole::ControlPlane);
        }
        for role in required {
            if !view.subnets.iter().any(|s| s.class.role == role) {
                let role = serde_json::to_value(role).unwrap_or_default();
                errors.push(FieldError::required(
                    subnets_path.clone(),
                    format!("add a subnet with role {role} (or one with role \"cluster\" for all machines)"),
                ));
            }
        }
    }

    check_load_balancers(view, network, errors);
    check_private_dns(view, network, errors);
}

fn check_subnet(
    subnet: &SubnetView<'_>,
    at: &FieldPath,
    vnet_ranges: &[Cidr],
    ranges: &mut Vec<(String, Cidr)>,
    errors: &mut Vec<FieldError>,
) {
    let class = subnet.class;
    errors.extend(checks::network_name(at.child("name"), &class.name, 1, 80));
    for (j, text) in class.cidr_blocks.iter().flatten().enumerate() {
        let path = at.child("cidrBlocks").index(j);
        let cidr = match text.parse::<Cidr>() {
            Ok(cidr) => cidr,
            Err(e) => {
                errors.push(FieldError::invalid(path, text, e.to_string()));
                continue;
            }
        };
        if cidr.is_ipv6() && cidr.prefix() != 64 {
            errors.push(FieldError::invalid(
                path.clone(),
                text,
                "Azure IPv6 subnets are /64 ranges",
            ));
        }
        if !vnet_ranges.is_empty() && !vnet_ranges.iter().any(|vnet| vnet.contains(&cidr)) {
            let space: Vec<String> = vnet_ranges.iter().map(ToString::to_string).collect();
            errors.push(FieldError::invalid(
                path.clone(),
                text,
                format!(
                    "the subnet must lie inside the virtual network's address space {}",
                    space.join(", ")
                ),
            ));
        }
        if let Some((other, _)) = ranges.iter().find(|(_, r)| r.overlaps(&cidr)) {
            errors.push(FieldError::invalid(
                path,
                text,
                format!("overlaps subnet {other:?}; subnet ranges must be disjoint"),
            ));
        }
        ranges.push((class.name.clone(), cidr));
    }
    if let Some(name) = subnet.security_group_name.filter(|n| !n.is_empty()) {
        errors.extend(checks::network_name(
            at.child("securityGroup").child("name"),
            name,
            1,
            80,
        ));
    }
    if let Some(group) = subnet.security_group {
        check_security_rules(group, &at.child("securityGroup"), errors);
    }
    if let Some(name) = subnet.route_table.filter(|n| !n.is_empty()) {
        errors.extend(checks::network_name(
            at.child("routeTable").child("name"),
            name,
            1,
            80,
        ));
    }
    if let Some(gateway) = subnet.nat_gateway.filter(|g| !g.name.is_empty()) {
        errors.extend(checks::network_name(
            at.child("natGateway").child("name"),
            &gateway.name,
            1,
            80,
        ));
        if is_ipv6(class) && !class.cidr_blocks.iter().flatten().any(|c| !c.contains(':')) {
            errors.push(FieldError::forbidden(
                at.child("natGateway"),
                "a NAT gateway gives IPv4 outbound access only; an IPv6-only subnet cannot use one",
            ));
        }
    }
    if let Some(ip) = subnet.nat_gateway_ip {
        check_public_ip(ip, &at.child("natGateway").child("ip"), errors);
    }
    if let Some(endpoints) = &class.service_endpoints {
        check_service_endpoints(endpoints, &at.child("serviceEndpoints"), errors);
    }
    if let Some(endpoints) = &class.private_endpoints {
        let own: Vec<Cidr> = class
            .cidr_blocks
            .iter()
            .flatten()
            .filter_map(|c| c.parse().ok())
            .collect();
        check_private_endpoints(endpoints, &own, &at.child("privateEndpoints"), errors);
    }
}

fn check_security_rules(group: &SecurityGroupClass, at: &FieldPath, errors: &mut Vec<FieldError>) {
    let mut priorities = BTreeMap::new();
    for (i, rule) in group.security_rules.iter().flat_map(|r| r.0.iter()).enumerate() {
        let path = at.child("securityRules").index(i);
        errors.extend(checks::network_name(path.child("name"), &rule.name, 1, 80));
        if let Some(priority) = rule.priority {
            if !(100..=4096).contains(&priority) {
                errors.push(FieldError::invalid(
                    path.child("priority"),
                    &priority,
                    "Azure takes priorities from 100 to 4096",
                ));
            } else if priorities
                .insert(
                    (rule.direction == SecurityRuleDirection::Inbound, priority),
                    rule.name.as_str(),
                )
                .is_some()
            {
                errors.push(FieldError::invalid(
                    path.child("priority"),
                    &priority,
                    "another rule of the same direction has this priority; give each rule its own",
                ));
            }
        }
        if rule.source.is_some() && rule.sources.is_some() {
            errors.push(FieldError::forbidden(
                path.child("sources"),
                "set either source or sources, not both",
            ));
        }
        for (field, ports) in [
            ("sourcePorts", &rule.source_ports),
            ("destinationPorts", &rule.destination_ports),
        ] {
            if let Some(ports) = ports.as_deref().filter(|p| !is_port_range(p)) {
                errors.push(FieldError::invalid(
                    path.child(field),
                    &ports,
                    "use *, a port such as 443, or a range such as 30000-32767 (ports 0 to 65535)",
                ));
            }
        }
    }
}

/// `*`, a port, or `low-high`, with ports up to 65535.
fn is_port_range(text: &str) -> bool {
    let port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok();
    text == "*"
        || port(text)
        || text
            .split_once('-')
            .is_some_and(|(lo, hi)| port(lo) && port(hi) && lo.parse::<u16>().ok() <= hi.parse::<u16>().ok())
}

fn check_service_endpoints(endpoints: &ServiceEndpoints, at: &FieldPath, errors: &mut Vec<FieldError>) {
    let mut services = BTreeSet::new();
    for (i, endpoint) in endpoints.0.iter().enumerate() {
        let path = at.index(i);
        let service_ok = endpoint.service.strip_prefix("Microsoft.").is_some_and(|rest| {
            let letters = rest.chars().take_while(char::is_ascii_alphabetic).count();
            (1..=84).contains(&rest.len()) && letters >= 1 && rest.chars().all(|c| c.is_ascii_alphanumeric())
        });
        if !service_ok {
            errors.push(FieldError::invalid(
                path.child("service"),
                &endpoint.service,
                "name an Azure service endpoint such as Microsoft.Storage or Microsoft.KeyVault",
            ));
        }
        if !services.insert(&endpoint.service) {
            errors.push(FieldError::duplicate(path.child("service"), &endpoint.service));
        }
        if endpoint.locations.is_empty() {
            errors.push(FieldError::required(
                path.child("locations"),
                "list the regions the endpoint serves, or \"*\"",
            ));
        }
        let mut locations = BTreeSet::new();
        for (j, location) in endpoint.locations.iter().enumerate() {
            let letters = location.chars().take_while(char::is_ascii_lowercase).count();
            let digits = &location[letters..];
            let ok = location == "*"
                || ((1..=42).contains(&letters)
                    && digits.len() <= 5
                    && digits.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                errors.push(FieldError::invalid(
                    path.child("locations").index(j),
                    location,
                    "use a region name such as westeurope or eastus2, or \"*\"",
                ));
            }
            if !locations.insert(location) {
                errors.push(FieldError::duplicate(path.child("locations").index(j), location));
            }
        }
    }
}

fn check_private_endpoints(
    endpoints: &PrivateEndpoints,
    subnet: &[Cidr],
    at: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    for (i, endpoint) in endpoints.0.iter().enumerate() {
        let path = at.index(i);
        errors.extend(checks::network_name(path.child("name"), &endpoint.name, 1, 80));
        let connections = endpoint
            .private_link_service_connections
            .as_deref()
            .unwrap_or_default();
        if connections.is_empty() {
            errors.push(FieldError::required(
                path.child("privateLinkServiceConnections"),
                "a private endpoint needs at least one private link service connection",
            ));
        }
        for (j, connection) in connections.iter().enumerate() {
            let id_path = path
                .child("privateLinkServiceConnections")
                .index(j)
                .child("privateLinkServiceID");
            match connection.private_link_service_id.as_deref() {
                None | Some("") => {
                    errors.push(FieldError::required(
                        id_path,
                        "give the resource ID of the service to connect to",
                    ));
                }
                Some(id) => {
                    if let Err(reason) = checks::resource_type_of(id) {
                        errors.push(FieldError::invalid(
                            id_path,
                            &id,
                            format!("the resource ID of a private link service {reason}"),
                        ));
                    }
                }
            }
        }
        for (j, ip) in endpoint.private_ip_addresses.iter().flatten().enumerate() {
            let ip_path = path.child("privateIPAddresses").index(j);
            match ip.parse() {
                Ok(addr) if subnet.is_empty() || subnet.iter().any(|s| s.contains_ip(addr)) => {}
                Ok(_) => errors.push(FieldError::invalid(
                    ip_path,
                    ip,
                    "the address must lie in the subnet's range",
                )),
                Err(_) => errors.push(FieldError::invalid(ip_path, ip, "must be an IP address")),
            }
        }
    }
}

fn check_public_ip(ip: &PublicIpSpec, at: &FieldPath, errors: &mut Vec<FieldError>) {
    if !ip.name.is_empty() {
        errors.extend(checks::network_name(at.child("name"), &ip.name, 1, 80));
    }
    if let Some(dns) = ip.dns_name.as_deref().filter(|d| !d.is_empty()) {
        errors.extend(checks::public_ip_dns_name(at.child("dnsName"), dns));
    }
}

fn check_lb_class(lb: &LoadBalancerClassSpec, at: &FieldPath, errors: &mut Vec<FieldError>) {
    if let Some(sku) = lb.sku.as_deref().filter(|s| *s != LB_SKU_STANDARD) {
        errors.push(FieldError::not_supported(
            at.child("sku"),
            &sku,
            &[LB_SKU_STANDARD],
        ));
    }
    if let Some(kind) = lb
        .type_
        .as_deref()
        .filter(|t| *t != LB_PUBLIC && *t != LB_INTERNAL)
    {
        errors.push(FieldError::not_supported(
            at.child("type"),
            &kind,
            &[LB_PUBLIC, LB_INTERNAL],
        ));
    }
    if let Some(minutes) = lb.idle_timeout_in_minutes.filter(|m| !(4..=30).contains(m)) {
        errors.push(FieldError::invalid(
            at.child("idleTimeoutInMinutes"),
            &minutes,
            "Azure takes idle timeouts from 4 to 30 minutes",
        ));
    }
}

fn check_load_balancers(view: &NetworkView<'_>, network: &FieldPath, errors: &mut Vec<FieldError>) {
    if let Some(lb) = view.api_server_lb {
        check_lb_class(lb, &network.child("apiServerLB"), errors);
    }
    for (field, lb) in [
        ("nodeOutboundLB", view.node_outbound_lb),
        ("controlPlaneOutboundLB", view.control_plane_outbound_lb),
    ] {
        let Some((lb, count)) = lb else { continue };
        let at = network.child(field);
        check_lb_class(lb, &at, errors);
        if let Some(count) = count.filter(|c| !(0..=MAX_OUTBOUND_FRONTENDS).contains(c)) {
            errors.push(FieldError::invalid(
                at.child("frontendIPsCount"),
                &count,
                format!("an outbound load balancer has 0 to {MAX_OUTBOUND_FRONTENDS} public IPs"),
            ));
        }
    }
    if view.control_plane_outbound_lb.is_some() && !is_internal(view.api_server_lb) {
        errors.push(FieldError::forbidden(
            network.child("controlPlaneOutboundLB"),
            "a public API server load balancer already gives the control plane outbound access; remove controlPlaneOutboundLB or make apiServerLB Internal",
        ));
    }
}

fn check_private_dns(view: &NetworkView<'_>, network: &FieldPath, errors: &mut Vec<FieldError>) {
    let Some(class) = view.class else { return };
    if let Some(zone) = class.private_dns_zone_name.as_deref().filter(|z| !z.is_empty()) {
        let at = network.child("privateDNSZoneName");
        if !is_internal(view.api_server_lb) {
            errors.push(FieldError::invalid(
                at.clone(),
                &zone,
                "a private DNS zone serves an Internal API server load balancer only; set apiServerLB.type to Internal or remove the zone",
            ));
        }
        errors.extend(checks::dns_name(at, zone));
    }
    if class
        .private_dns_zone_resource_group
        .as_deref()
        .is_some_and(|g| !g.is_empty())
        && unset(class.private_dns_zone_name.as_ref())
    {
        errors.push(FieldError::invalid(
            network.child("privateDNSZoneResourceGroup"),
            &class.private_dns_zone_resource_group,
            "set privateDNSZoneName too: the resource group says where that zone lives",
        ));
    }
}

/// The checks only a concrete cluster has: its name, identity, the API server load balancer's
/// frontends, and the names of what it brings.
fn check_cluster(cluster: &AzureCluster, features: Features, errors: &mut Vec<FieldError>) {
    let name = cluster.name_any();
    let name_path = FieldPath::root("metadata").child("name");
    if name.len() > MAX_CLUSTER_NAME {
        errors.push(FieldError::invalid(
            name_path,
            &name,
            format!("must be at most {MAX_CLUSTER_NAME} characters: it prefixes the names of the cluster's Azure resources"),
        ));
    } else if !is_cluster_name(&name) {
        errors.push(FieldError::invalid(
            name_path,
            &name,
            "must be lower-case letters, digits and '-', starting and ending with a letter or digit",
        ));
    }

    let spec = FieldPath::root("spec");
    check_class(&cluster.spec.class, &spec, features, errors);
    let group = cluster.spec.resource_group.as_deref().unwrap_or_default();
    if !group.is_empty() {
        errors.extend(checks::resource_group_name(spec.child("resourceGroup"), group));
    }
    let control_plane = cluster.spec.control_plane_enabled.unwrap_or(true);
    let view = NetworkView::of_cluster(&cluster.spec);
    let network_path = spec.child("networkSpec");
    check_network(&view, &spec, control_plane, errors);

    let network = cluster.spec.network_spec.as_ref();
    if let Some(vnet) = network.and_then(|n| n.vnet.as_ref()) {
        let at = network_path.child("vnet");
        errors.extend(checks::network_name(at.child("name"), &vnet.name, 2, 64));
        if let Some(vnet_group) = vnet.resource_group.as_deref().filter(|g| *g != group) {
            errors.extend(checks::resource_group_name(at.child("resourceGroup"), vnet_group));
        }
        for (i, peering) in vnet.class.peerings.iter().flatten().enumerate() {
            let path = at.child("peerings").index(i);
            errors.extend(checks::network_name(
                path.child("remoteVnetName"),
                &peering.remote_vnet_name,
                2,
                64,
            ));
            if let Some(peer_group) = peering.resource_group.as_deref().filter(|g| !g.is_empty()) {
                errors.extend(checks::resource_group_name(
                    path.child("resourceGroup"),
                    peer_group,
                ));
            }
        }
        if let Some(tags) = &vnet.class.tags {
            checks::tags(&at.child("tags"), tags, errors);
        }
    }
    if let Some(lb) = network
        .and_then(|n| n.api_server_lb.as_ref())
        .filter(|_| control_plane)
    {
        check_api_server_frontends(lb, &view, &network_path.child("apiServerLB"), features, errors);
    }
    for (field, lb) in [
        ("apiServerLB", network.and_then(|n| n.api_server_lb.as_ref())),
        (
            "nodeOutboundLB",
            network.and_then(|n| n.node_outbound_lb.as_ref()),
        ),
        (
            "controlPlaneOutboundLB",
            network.and_then(|n| n.control_plane_outbound_lb.as_ref()),
        ),
    ] {
        let Some(lb) = lb else { continue };
        let at = network_path.child(field);
        if let Some(name) = lb.name.as_deref().filter(|n| !n.is_empty()) {
            errors.extend(checks::network_name(at.child("name"), name, 1, 80));
        }
        for (i, frontend) in lb.frontend_ips.iter().flatten().enumerate() {
            if let Some(ip) = &frontend.public_ip {
                check_public_ip(ip, &at.child("frontendIPs").index(i).child("publicIP"), errors);
            }
        }
    }
    if let Some(bastion) = cluster
        .spec
        .bastion_spec
        .as_ref()
        .and_then(|b| b.azure_bastion.as_ref())
    {
        let at = spec.child("bastionSpec").child("azureBastion");
        if bastion.enable_tunneling == Some(true) && bastion.sku != Some(BastionHostSku::Standard) {
            errors.push(FieldError::invalid(
                at.child("sku"),
                &bastion.sku.unwrap_or(BastionHostSku::Basic),
                "native client tunneling (enableTunneling) needs the Standard SKU",
            ));
        }
        if let Some(ip) = &bastion.public_ip {
            check_public_ip(ip, &at.child("publicIP"), errors);
        }
    }
}

fn is_cluster_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() >= 2 && name.starts_with(ok) && name.ends_with(ok) && name.chars().all(|c| ok(c) || c == '-')
}

/// What clusters and templates share outside the network: identity, edge zone, tags.
fn check_class(
    class: &AzureClusterClassSpec,
    spec: &FieldPath,
    features: Features,
    errors: &mut Vec<FieldError>,
) {
    match &class.identity_ref {
        None => errors.push(FieldError::required(
            spec.child("identityRef"),
            "reference the AzureClusterIdentity the controllers authenticate as",
        )),
        Some(reference) if reference.kind.as_deref() != Some("AzureClusterIdentity") => {
            errors.push(FieldError::not_supported(
                spec.child("identityRef").child("kind"),
                &reference.kind,
                &["AzureClusterIdentity"],
            ));
        }
        Some(_) => {}
    }
    if class.extended_location.is_some() && !features.edge_zone {
        errors.push(FieldError::forbidden(
            spec.child("extendedLocation"),
            "edge zones need the EdgeZone feature gate (--feature-gates=EdgeZone=true)",
        ));
    }
    if let Some(tags) = &class.additional_tags {
        checks::tags(&spec.child("additionalTags"), tags, errors);
    }
}

fn check_api_server_frontends(
    lb: &LoadBalancerSpec,
    view: &NetworkView<'_>,
    at: &FieldPath,
    features: Features,
    errors: &mut Vec<FieldError>,
) {
    let frontends = lb.frontend_ips.as_deref().unwrap_or_default();
    let control_plane = view.ranges_of(SubnetRole::ControlPlane);
    let in_control_plane = |ip: &str| {
        ip.parse()
            .is_ok_and(|addr| control_plane.is_empty() || control_plane.iter().any(|r| r.contains_ip(addr)))
    };
    let ranges = control_plane
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let public = frontends.iter().filter(|f| f.public_ip.is_some()).count();
    if is_internal(Some(&lb.class)) {
        for (i, frontend) in frontends.iter().enumerate() {
            if frontend.public_ip.is_some() {
                errors.push(FieldError::forbidden(
                    at.child("frontendIPs").index(i).child("publicIP"),
                    "an Internal load balancer has no public IP",
                ));
            }
        }
        if frontends.len() != 1 {
            errors.push(FieldError::invalid(
                at.child("frontendIPs"),
                &frontends.len(),
                "an Internal API server load balancer has exactly one frontend with a private IP",
            ));
        }
    } else if public != 1 || lb.frontend_ips_count.unwrap_or(1) != 1 {
        errors.push(FieldError::invalid(
            at.child("frontendIPs"),
            &public,
            "a Public API server load balancer has exactly one frontend with a public IP",
        ));
    }
    for (i, frontend) in frontends.iter().enumerate() {
        let Some(ip) = frontend.private_ip.as_deref().filter(|ip| !ip.is_empty()) else {
            continue;
        };
        let path = at.child("frontendIPs").index(i).child("privateIP");
        if !is_internal(Some(&lb.class)) && !features.api_server_ilb {
            errors.push(FieldError::forbidden(
                path,
                "a Public load balancer has no private IP unless the APIServerILB feature gate is on",
            ));
        } else if !in_control_plane(ip) {
            errors.push(FieldError::invalid(
                path,
                &ip,
                format!("the private IP must be a free address in the control-plane subnet ({ranges})"),
            ));
        }
    }
}

fn check_cluster_update(new: &AzureCluster, old: &AzureCluster, errors: &mut Vec<FieldError>) {
    let spec = FieldPath::root("spec");
    let (n, o) = (&new.spec, &old.spec);
    errors.extend(unchanged(
        spec.child("resourceGroup"),
        o.resource_group.as_ref(),
        n.resource_group.as_ref(),
    ));
    errors.extend(unchanged(
        spec.child("subscriptionID"),
        o.class.subscription_id.as_ref(),
        n.class.subscription_id.as_ref(),
    ));
    errors.extend(unchanged(
        spec.child("location"),
        Some(&o.class.location),
        Some(&n.class.location),
    ));
    errors.extend(unchanged(
        spec.child("azureEnvironment"),
        o.class.azure_environment.as_ref(),
        n.class.azure_environment.as_ref(),
    ));
    errors.extend(unchanged(
        spec.child("cloudProviderConfigOverrides"),
        o.class.cloud_provider_config_overrides.as_ref(),
        n.class.cloud_provider_config_overrides.as_ref(),
    ));
    let endpoint = spec.child("controlPlaneEndpoint");
    let (oe, ne) = (
        o.control_plane_endpoint.as_ref(),
        n.control_plane_endpoint.as_ref(),
    );
    errors.extend(unchanged_once_set(
        endpoint.child("host"),
        oe.and_then(|e| e.host.as_ref()).filter(|h| !h.is_empty()),
        ne.and_then(|e| e.host.as_ref()),
    ));
    errors.extend(unchanged_once_set(
        endpoint.child("port"),
        oe.and_then(|e| e.port.as_ref()).filter(|p| **p != 0),
        ne.and_then(|e| e.port.as_ref()),
    ));
    if let Some(old_bastion) = o.bastion_spec.as_ref().and_then(|b| b.azure_bastion.as_ref()) {
        errors.extend(unchanged(
            spec.child("bastionSpec").child("azureBastion"),
            Some(old_bastion),
            n.bastion_spec.as_ref().and_then(|b| b.azure_bastion.as_ref()),
        ));
    }

    let (nn, on) = (
        n.network_spec.clone().unwrap_or_default(),
        o.network_spec.clone().unwrap_or_default(),
    );
    check_network_update(&nn, &on, &spec.child("networkSpec"), errors);
    check_subnets_update(&nn, &on, &spec.child("networkSpec").child("subnets"), errors);
}

/// What identifies the network and its load balancers stays.
fn check_network_update(nn: &NetworkSpec, on: &NetworkSpec, net: &FieldPath, errors: &mut Vec<FieldError>) {
    for (field, old, new) in [
        (
            "privateDNSZoneName",
            &on.class.private_dns_zone_name,
            &nn.class.private_dns_zone_name,
        ),
        (
            "privateDNSZoneResourceGroup",
            &on.class.private_dns_zone_resource_group,
            &nn.class.private_dns_zone_resource_group,
        ),
    ] {
        errors.extend(unchanged(net.child(field), old.as_ref(), new.as_ref()));
    }
    errors.extend(unchanged(
        net.child("privateDNSZone"),
        on.private_dns_zone.as_ref(),
        nn.private_dns_zone.as_ref(),
    ));
    let vnet = net.child("vnet");
    let (ov, nv) = (
        on.vnet.clone().unwrap_or_default(),
        nn.vnet.clone().unwrap_or_default(),
    );
    errors.extend(unchanged(vnet.child("name"), Some(&ov.name), Some(&nv.name)));
    errors.extend(unchanged(
        vnet.child("resourceGroup"),
        ov.resource_group.as_ref(),
        nv.resource_group.as_ref(),
    ));
    errors.extend(unchanged_once_set(
        vnet.child("id"),
        ov.id.as_ref(),
        nv.id.as_ref(),
    ));

    check_lb_update(
        &net.child("apiServerLB"),
        on.api_server_lb.as_ref(),
        nn.api_server_lb.as_ref(),
        errors,
    );
    if let (Some(old), Some(new)) = (&on.api_server_lb, &nn.api_server_lb) {
        // The API server's address is in every kubeconfig and certificate of the cluster.
        let private = |lb: &LoadBalancerSpec| -> Vec<String> {
            lb.frontend_ips
                .iter()
                .flatten()
                .filter_map(|f| f.private_ip.clone())
                .collect()
        };
        let (old_ips, new_ips) = (private(old), private(new));
        if !old_ips.is_empty() && old_ips != new_ips {
            errors.push(FieldError::invalid(
                net.child("apiServerLB").child("frontendIPs"),
                &new_ips,
                "the private IPs of the API server load balancer are immutable",
            ));
        }
    }
    check_lb_update(
        &net.child("nodeOutboundLB"),
        on.node_outbound_lb.as_ref(),
        nn.node_outbound_lb.as_ref(),
        errors,
    );
    if let (Some(old), Some(new)) = (&on.node_outbound_lb, &nn.node_outbound_lb) {
        let at = net.child("nodeOutboundLB");
        errors.extend(unchanged_once_set(
            at.child("id"),
            old.id.as_ref(),
            new.id.as_ref(),
        ));
        errors.extend(unchanged(
            at.child("frontendIPs"),
            old.frontend_ips.as_ref(),
            new.frontend_ips.as_ref(),
        ));
    }
    errors.extend(unchanged(
        net.child("controlPlaneOutboundLB"),
        on.control_plane_outbound_lb.as_ref(),
        nn.control_plane_outbound_lb.as_ref(),
    ));
}

/// A load balancer keeps its name, SKU, type, idle timeout and zones.
fn check_lb_update(
    at: &FieldPath,
    old: Option<&LoadBalancerSpec>,
    new: Option<&LoadBalancerSpec>,
    errors: &mut Vec<FieldError>,
) {
    let (Some(old), Some(new)) = (old, new) else {
        return;
    };
    errors.extend(unchanged(at.child("name"), old.name.as_ref(), new.name.as_ref()));
    errors.extend(unchanged(
        at.child("sku"),
        old.class.sku.as_ref(),
        new.class.sku.as_ref(),
    ));
    errors.extend(unchanged(
        at.child("type"),
        old.class.type_.as_ref(),
        new.class.type_.as_ref(),
    ));
    errors.extend(unchanged(
        at.child("idleTimeoutInMinutes"),
        old.class.idle_timeout_in_minutes.as_ref(),
        new.class.idle_timeout_in_minutes.as_ref(),
    ));
    errors.extend(unchanged(
        at.child("availabilityZones"),
        old.availability_zones.as_ref(),
        new.availability_zones.as_ref(),
    ));
}

/// Subnets are matched by name; a subnet's range and the resources attached to it stay.
fn check_subnets_update(
    nn: &NetworkSpec,
    on: &NetworkSpec,
    subnets: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    let new_subnets = nn.subnets.clone().unwrap_or_default().0;
    for old_subnet in on.subnets.iter().flat_map(|s| s.0.iter()) {
        let Some((i, new_subnet)) = new_subnets
            .iter()
            .enumerate()
            .find(|(_, s)| s.class.name == old_subnet.class.name)
        else {
            continue;
        };
        let at = subnets.index(i);
        let name_of =
            |s: &SubnetSpec, f: fn(&SubnetSpec) -> Option<&String>| f(s).filter(|n| !n.is_empty()).cloned();
        errors.extend(unchanged_once_set(
            at.child("cidrBlocks"),
            old_subnet.class.cidr_blocks.as_ref().filter(|c| !c.is_empty()),
            new_subnet.class.cidr_blocks.as_ref(),
        ));
        for (field, get) in [
            (
                "routeTable",
                (|s: &SubnetSpec| s.route_table.as_ref().map(|t| &t.name))
                    as fn(&SubnetSpec) -> Option<&String>,
            ),
            ("natGateway", |s: &SubnetSpec| {
                s.nat_gateway.as_ref().map(|g| &g.class.name)
            }),
            ("securityGroup", |s: &SubnetSpec| {
                s.security_group.as_ref().map(|g| &g.name)
            }),
        ] {
            errors.extend(unchanged_once_set(
                at.child(field).child("name"),
                name_of(old_subnet, get).as_ref(),
                name_of(new_subnet, get).as_ref(),
            ));
        }
    }
}

impl Rules for AzureCluster {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        default_cluster(self, ctx.features);
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_cluster(self, ctx.features, &mut verdict.errors);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = self.validate_create(ctx);
        check_cluster_update(self, old, &mut verdict.errors);
        verdict
    }
}

impl Rules for AzureClusterTemplate {
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        default_template(self);
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let spec = &self.spec.template.spec;
        let at = FieldPath::root("spec").child("template").child("spec");
        check_class(&spec.class, &at, ctx.features, &mut verdict.errors);
        check_network(&NetworkView::of_template(spec), &at, true, &mut verdict.errors);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = self.validate_create(ctx);
        if ctx.is_topology_dry_run(self) {
            return verdict;
        }
        // Objects stored before a default was introduced compare as if they had it.
        let mut old = old.clone();
        default_template(&mut old);
        if old.spec.template.spec != self.spec.template.spec {
            verdict.reject(FieldError::forbidden(
                FieldPath::root("spec").child("template").child("spec"),
                "AzureClusterTemplate spec.template.spec field is immutable: create a new template and point the ClusterClass at it",
            ));
        }
        verdict
    }
}
