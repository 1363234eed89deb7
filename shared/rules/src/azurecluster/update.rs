//! What cannot change once an AzureCluster exists.

use capz_api::AzureCluster;
use capz_api::common::network::{LoadBalancerSpec, NetworkSpec, SubnetSpec};

use super::layout::DEFAULT_AZURE_ENVIRONMENT;
use crate::field::{FieldError, FieldPath};
use crate::immutable::{unchanged, unchanged_once_set};

pub(super) fn check_cluster_update(new: &AzureCluster, old: &AzureCluster, errors: &mut Vec<FieldError>) {
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
    // An object stored before defaulting had no environment: it was the default one.
    let default_environment = DEFAULT_AZURE_ENVIRONMENT.to_owned();
    errors.extend(unchanged(
        spec.child("azureEnvironment"),
        Some(
            o.class
                .azure_environment
                .as_ref()
                .filter(|e| !e.is_empty())
                .unwrap_or(&default_environment),
        ),
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
pub(super) fn check_network_update(
    nn: &NetworkSpec,
    on: &NetworkSpec,
    net: &FieldPath,
    errors: &mut Vec<FieldError>,
) {
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
    // Its frontends follow frontendIPsCount, which may change.
    if let (Some(old), Some(new)) = (&on.node_outbound_lb, &nn.node_outbound_lb) {
        errors.extend(unchanged_once_set(
            net.child("nodeOutboundLB").child("id"),
            old.id.as_ref(),
            new.id.as_ref(),
        ));
    }
    errors.extend(unchanged(
        net.child("controlPlaneOutboundLB"),
        on.control_plane_outbound_lb.as_ref(),
        nn.control_plane_outbound_lb.as_ref(),
    ));
}

/// A load balancer keeps its name, SKU, type, idle timeout and zones.
pub(super) fn check_lb_update(
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
    // The same zones in another order are no change.
    let zones = |lb: &LoadBalancerSpec| {
        let mut zones = lb.availability_zones.clone().unwrap_or_default();
        zones.sort();
        zones
    };
    errors.extend(unchanged(
        at.child("availabilityZones"),
        Some(&zones(old)),
        Some(&zones(new)),
    ));
}

/// Subnets are matched by name; a subnet's range and the resources attached to it stay.
pub(super) fn check_subnets_update(
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
