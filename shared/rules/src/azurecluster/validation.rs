//! What Azure would refuse later, refused when an AzureCluster or AzureClusterTemplate is
//! admitted: names, address ranges and their overlaps, security rules, load balancers, private
//! endpoints and DNS.

use std::collections::{BTreeMap, BTreeSet};

use capz_api::azurecluster::{AzureClusterClassSpec, AzureClusterTemplateResourceSpec, BastionHostSku};
use capz_api::common::network::{
    LoadBalancerClassSpec, LoadBalancerSpec, NatGatewayClassSpec, NetworkClassSpec, PublicIpSpec,
    SecurityGroupClass, SecurityRuleDirection, SubnetClassSpec, SubnetRole, SubnetSpec, SubnetTemplateSpec,
};
use capz_api::common::{PrivateEndpoints, ServiceEndpoints};
use capz_api::{AzureCluster, AzureClusterSpec};
use kube::ResourceExt as _;

use super::defaults::{is_internal, is_ipv6, unset};
use super::layout::{
    BASTION_SUBNET_NAME, LB_INTERNAL, LB_PUBLIC, LB_SKU_STANDARD, MAX_CLUSTER_NAME, MAX_OUTBOUND_FRONTENDS,
};
use crate::cidr::Cidr;
use crate::field::{FieldError, FieldPath};
use crate::{Features, checks};

pub(super) struct SubnetView<'a> {
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
pub(super) struct NetworkView<'a> {
    vnet_cidrs: &'a [String],
    subnets: Vec<SubnetView<'a>>,
    bastion_subnet: Option<SubnetView<'a>>,
    api_server_lb: Option<&'a LoadBalancerClassSpec>,
    node_outbound_lb: Option<(&'a LoadBalancerClassSpec, Option<i32>)>,
    control_plane_outbound_lb: Option<(&'a LoadBalancerClassSpec, Option<i32>)>,
    class: Option<&'a NetworkClassSpec>,
    /// A template lists its control-plane and node subnets itself: a `cluster` subnet does not
    /// stand for them, and defaulting adds none.
    template: bool,
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
            template: false,
        }
    }

    pub(super) fn of_template(spec: &'a AzureClusterTemplateResourceSpec) -> Self {
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
            template: true,
        }
    }

    /// The ranges of the control plane's subnet: the first `control-plane` subnet, else the first
    /// `cluster` subnet.
    fn control_plane_ranges(&self) -> Vec<Cidr> {
        let subnet = [SubnetRole::ControlPlane, SubnetRole::Cluster]
            .into_iter()
            .find_map(|role| self.subnets.iter().find(|s| s.class.role == role));
        subnet
            .into_iter()
            .flat_map(|s| s.class.cidr_blocks.iter().flatten())
            .filter_map(|c| c.parse().ok())
            .collect()
    }

    /// Whether node machines get IPv6 addresses: only then does CAPZ look at the node outbound
    /// load balancer.
    fn nodes_have_ipv6(&self) -> bool {
        self.subnets
            .iter()
            .any(|s| matches!(s.class.role, SubnetRole::Node | SubnetRole::Cluster) && is_ipv6(s.class))
    }
}

/// Checks the network shared by clusters and templates; `root` is the path of the spec holding
/// `networkSpec` and `bastionSpec`.
pub(super) fn check_network(
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
    if view.template || !has_cluster_subnet {
        let mut required = vec![SubnetRole::Node];
        if control_plane || view.template {
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

    check_load_balancers(view, network, control_plane, errors);
    check_private_dns(view, network, control_plane, errors);
}

pub(super) fn check_subnet(
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

pub(super) fn check_security_rules(group: &SecurityGroupClass, at: &FieldPath, errors: &mut Vec<FieldError>) {
    let mut priorities = BTreeMap::new();
    for (i, rule) in group.security_rules.iter().flat_map(|r| r.0.iter()).enumerate() {
        let path = at.child("securityRules").index(i);
        errors.extend(checks::network_name(path.child("name"), &rule.name, 1, 80));
        match rule.priority {
            None => errors.push(FieldError::required(
                path.child("priority"),
                "give the rule a priority from 100 to 4096; lower numbers are evaluated first",
            )),
            Some(priority) if !(100..=4096).contains(&priority) => errors.push(FieldError::invalid(
                path.child("priority"),
                &priority,
                "Azure takes priorities from 100 to 4096",
            )),
            Some(priority) => {
                let direction = (rule.direction != Some(SecurityRuleDirection::Outbound), priority);
                if priorities.insert(direction, rule.name.as_str()).is_some() {
                    errors.push(FieldError::invalid(
                        path.child("priority"),
                        &priority,
                        "another rule of the same direction has this priority; give each rule its own",
                    ));
                }
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
pub(super) fn is_port_range(text: &str) -> bool {
    let port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok();
    text == "*"
        || port(text)
        || text
            .split_once('-')
            .is_some_and(|(lo, hi)| port(lo) && port(hi) && lo.parse::<u16>().ok() <= hi.parse::<u16>().ok())
}

pub(super) fn check_service_endpoints(
    endpoints: &ServiceEndpoints,
    at: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
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

pub(crate) fn check_private_endpoints(
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
            let connection_path = path.child("privateLinkServiceConnections").index(j);
            if let Some(name) = connection.name.as_deref().filter(|name| !name.is_empty()) {
                errors.extend(checks::network_name(connection_path.child("name"), name, 1, 80));
            }
            let id_path = connection_path.child("privateLinkServiceID");
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

pub(super) fn check_public_ip(ip: &PublicIpSpec, at: &FieldPath, errors: &mut Vec<FieldError>) {
    if !ip.name.is_empty() {
        errors.extend(checks::network_name(at.child("name"), &ip.name, 1, 80));
    }
    if let Some(dns) = ip.dns_name.as_deref().filter(|d| !d.is_empty()) {
        errors.extend(checks::public_ip_dns_name(at.child("dnsName"), dns));
    }
}

pub(super) fn check_lb_class(lb: &LoadBalancerClassSpec, at: &FieldPath, errors: &mut Vec<FieldError>) {
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

pub(super) fn check_load_balancers(
    view: &NetworkView<'_>,
    network: &FieldPath,
    control_plane: bool,
    errors: &mut Vec<FieldError>,
) {
    if let Some(lb) = view.api_server_lb {
        check_lb_class(lb, &network.child("apiServerLB"), errors);
    }
    // Without IPv6 nodes the node outbound load balancer is not used, and without a control
    // plane neither is the control plane's: CAPZ checks neither then.
    let node_outbound = view.node_outbound_lb.filter(|_| view.nodes_have_ipv6());
    let control_plane_outbound = view.control_plane_outbound_lb.filter(|_| control_plane);
    for (field, lb) in [
        ("nodeOutboundLB", node_outbound),
        ("controlPlaneOutboundLB", control_plane_outbound),
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
    if control_plane_outbound.is_some() && !is_internal(view.api_server_lb) {
        errors.push(FieldError::forbidden(
            network.child("controlPlaneOutboundLB"),
            "a public API server load balancer already gives the control plane outbound access; remove controlPlaneOutboundLB or make apiServerLB Internal",
        ));
    }
}

pub(super) fn check_private_dns(
    view: &NetworkView<'_>,
    network: &FieldPath,
    control_plane: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(class) = view.class else { return };
    if let Some(zone) = class.private_dns_zone_name.as_deref().filter(|z| !z.is_empty()) {
        let at = network.child("privateDNSZoneName");
        if control_plane && !is_internal(view.api_server_lb) {
            errors.push(FieldError::invalid(
                at.clone(),
                &zone,
                "a private DNS zone serves an Internal API server load balancer only; set apiServerLB.type to Internal or remove the zone",
            ));
        }
        errors.extend(checks::private_dns_zone_name(at, zone));
    }
    if let Some(group) = class
        .private_dns_zone_resource_group
        .as_deref()
        .filter(|g| !g.is_empty())
    {
        let at = network.child("privateDNSZoneResourceGroup");
        if unset(class.private_dns_zone_name.as_ref()) {
            errors.push(FieldError::invalid(
                at.clone(),
                &group,
                "set privateDNSZoneName too: the resource group says where that zone lives",
            ));
        }
        errors.extend(checks::resource_group_name(at, group));
    }
}

/// The checks only a concrete cluster has: its name, identity, the API server load balancer's
/// frontends, and the names of what it brings.
pub(super) fn check_cluster(cluster: &AzureCluster, features: Features, errors: &mut Vec<FieldError>) {
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
    check_class(&cluster.spec.class, &spec, features, false, errors);
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
        check_peerings(
            vnet.class.peerings.iter().flatten(),
            &at.child("peerings"),
            errors,
        );
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

pub(super) fn is_cluster_name(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() >= 2 && name.starts_with(ok) && name.ends_with(ok) && name.chars().all(|c| ok(c) || c == '-')
}

/// What clusters and templates share outside the network: identity, edge zone, tags.
/// `template`: a ClusterClass may patch the identity reference in, so a template may leave it out.
pub(super) fn check_class(
    class: &AzureClusterClassSpec,
    spec: &FieldPath,
    features: Features,
    template: bool,
    errors: &mut Vec<FieldError>,
) {
    match &class.identity_ref {
        None if template => {}
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
            "edge zones need the EdgeZone feature gate: EXP_EDGEZONE=true at clusterctl init, or --feature-gates=EdgeZone=true",
        ));
    }
    if let Some(tags) = &class.additional_tags {
        checks::tags(&spec.child("additionalTags"), tags, errors);
    }
}

pub(super) fn check_api_server_frontends(
    lb: &LoadBalancerSpec,
    view: &NetworkView<'_>,
    at: &FieldPath,
    features: Features,
    errors: &mut Vec<FieldError>,
) {
    let frontends = lb.frontend_ips.as_deref().unwrap_or_default();
    let control_plane = view.control_plane_ranges();
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
        let private = frontends.iter().filter(|f| !unset(f.private_ip.as_ref())).count();
        if private != 1 {
            errors.push(FieldError::invalid(
                at.child("frontendIPs"),
                &private,
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

/// The peerings of a cluster's network at `at`: valid names and groups, and, as CAPZ refuses it, no
/// second peering to the same network, named by `<group>/<network>` at the list (the group
/// defaulted to the cluster's).
fn check_peerings<'a>(
    peerings: impl Iterator<Item = &'a capz_api::common::network::VnetPeeringSpec>,
    at: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
    let mut peered = std::collections::HashSet::new();
    for (i, peering) in peerings.enumerate() {
        let path = at.index(i);
        let peer = format!(
            "{}/{}",
            peering.resource_group.as_deref().unwrap_or_default(),
            peering.remote_vnet_name
        );
        if !peered.insert(peer.clone()) {
            errors.push(FieldError::duplicate(at.clone(), &peer));
        }
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
}
