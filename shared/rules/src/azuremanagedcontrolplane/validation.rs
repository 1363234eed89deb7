//! What an AKS control plane may not say, on create and on every update: the checks of the
//! settings a template shares ([`check_class`]), those of a control plane only
//! ([`check_control_plane`]), and those that read the owning Cluster's network
//! ([`check_cluster_network`]).

use std::collections::BTreeMap;
use std::net::IpAddr;

use capz_api::AzureManagedControlPlane;
use capz_api::azuremanagedcontrolplane::{
    AksExtension, ApiServerAccessProfile, AutoScalerProfile, AzureManagedControlPlaneClassSpec,
    ExtensionScopeType, LoadBalancerProfile, ManagedControlPlaneIdentityType,
    ManagedControlPlaneVirtualNetwork, NetworkDataplane, NetworkPlugin, NetworkPluginMode, NetworkPolicy,
};
use capz_api::capi::CLUSTER_NAME_LABEL;

use crate::azurecluster::check_private_endpoints;
use crate::cidr::Cidr;
use crate::field::{FieldError, FieldPath, Verdict};
use crate::{ClusterQuery, OwnerCluster, ssh, version};

/// The settings a control plane and a template share, found at `at`.
pub(super) fn check_class(class: &AzureManagedControlPlaneClassSpec, at: &FieldPath, verdict: &mut Verdict) {
    if !version::is_valid(&class.version) {
        verdict.reject(FieldError::invalid(
            at.child("version"),
            &class.version,
            "must be a semantic version with a v prefix, such as v1.33.2",
        ));
    }
    if let Some(profile) = &class.load_balancer_profile {
        check_load_balancer_profile(profile, &at.child("loadBalancerProfile"), verdict);
    }
    if let Some(profile) = &class.autoscaler_profile {
        check_autoscaler_profile(profile, &at.child("autoscalerProfile"), verdict);
    }
    for (i, extension) in class.extensions.iter().flatten().enumerate() {
        check_extension(extension, &at.child("extensions").index(i), verdict);
    }
    check_security_profile(class, at, verdict);
    check_network_policy(class, at, verdict);
    if let Some(profile) = &class.api_server_access_profile {
        check_api_server_access(profile, &at.child("apiServerAccessProfile"), verdict);
    }
    if let Some(network) = &class.virtual_network {
        check_virtual_network(network, &at.child("virtualNetwork"), verdict);
    }
}

/// What only a control plane is checked for: its name, SSH key, identity, plugin mode, DNS
/// prefix, local accounts and fleet membership.
pub(super) fn check_control_plane(plane: &AzureManagedControlPlane, verdict: &mut Verdict) {
    let spec = &plane.spec;
    let at = FieldPath::root("spec");
    check_name(plane.metadata.name.as_deref().unwrap_or_default(), verdict);
    if let Some(key) = spec.ssh_public_key.as_deref().filter(|key| !key.is_empty())
        && let Err(why) = ssh::check_encoded(key)
    {
        verdict.reject(FieldError::invalid(at.child("sshPublicKey"), &key, why));
    }
    if let Some(identity) = &spec.class.identity {
        let id = identity
            .user_assigned_identity_resource_id
            .as_deref()
            .unwrap_or_default();
        let path = at.child("identity").child("userAssignedIdentityResourceID");
        match identity.type_ {
            Some(ManagedControlPlaneIdentityType::UserAssigned) if id.is_empty() => verdict.reject(
                FieldError::invalid(path, &id, "cannot be empty if Identity.Type is UserAssigned"),
            ),
            Some(ManagedControlPlaneIdentityType::UserAssigned) => {}
            _ if !id.is_empty() => verdict.reject(FieldError::invalid(
                path,
                &id,
                "should be empty if Identity.Type is SystemAssigned",
            )),
            _ => {}
        }
    }
    if spec.class.network_plugin_mode == Some(NetworkPluginMode::Overlay)
        && spec.class.network_plugin == Some(NetworkPlugin::Kubenet)
    {
        verdict.reject(FieldError::invalid(
            at.child("networkPluginMode"),
            &"overlay",
            "cannot be set to \"overlay\" when NetworkPlugin is \"kubenet\"",
        ));
    }
    if let Some(prefix) = &spec.dns_prefix
        && !is_dns_prefix(prefix)
    {
        verdict.reject(FieldError::invalid(
            at.child("dnsPrefix"),
            prefix,
            "DNSPrefix is invalid, does not match regex: ^[a-zA-Z0-9][a-zA-Z0-9-]{0,52}[a-zA-Z0-9]$",
        ));
    }
    if let Some(disable) = spec.class.disable_local_accounts
        && spec.class.aad_profile.is_none()
    {
        verdict.reject(FieldError::invalid(
            at.child("disableLocalAccounts"),
            &disable,
            "DisableLocalAccounts should be set only for AAD enabled clusters",
        ));
    }
    if let Some(name) = spec
        .fleets_member
        .as_ref()
        .and_then(|member| member.name.as_deref())
        && !name.is_empty()
        && !is_fleet_member_name(name)
    {
        verdict.reject(FieldError::invalid(
            at.child("fleetsMember").child("name"),
            &name,
            "Name must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        ));
    }
}

/// AKS refuses cluster names holding `microsoft` or `windows`, in any case.
pub(super) fn check_name(name: &str, verdict: &mut Verdict) {
    let lower = name.to_ascii_lowercase();
    if lower.contains("microsoft") || lower.contains("windows") {
        verdict.reject(FieldError::invalid(
            FieldPath::root("metadata").child("name"),
            &name,
            "cluster name is invalid because 'MICROSOFT' and 'WINDOWS' can't be used as either a whole word or a substring in the name",
        ));
    }
}

/// `^[a-zA-Z0-9][a-zA-Z0-9-]{0,52}[a-zA-Z0-9]$`.
fn is_dns_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    (2..=54).contains(&bytes.len())
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn is_fleet_member_name(name: &str) -> bool {
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
        && bytes.first().is_some_and(lower_alnum)
        && bytes.last().is_some_and(lower_alnum)
}

fn check_load_balancer_profile(profile: &LoadBalancerProfile, at: &FieldPath, verdict: &mut Verdict) {
    let bounds = [
        ("managedOutboundIPs", profile.managed_outbound_ips, 1, 100),
        (
            "allocatedOutboundPorts",
            profile.allocated_outbound_ports,
            0,
            64000,
        ),
        ("idleTimeoutInMinutes", profile.idle_timeout_in_minutes, 4, 120),
    ];
    for (name, value, min, max) in bounds {
        if let Some(value) = value
            && !(min..=max).contains(&value)
        {
            verdict.reject(FieldError::invalid(
                at.child(name),
                &value,
                format!("value should be in between {min} and {max}"),
            ));
        }
    }
    let kinds = usize::from(profile.managed_outbound_ips.is_some())
        + usize::from(
            profile
                .outbound_ip_prefixes
                .as_ref()
                .is_some_and(|l| !l.is_empty()),
        )
        + usize::from(profile.outbound_ips.as_ref().is_some_and(|l| !l.is_empty()));
    if kinds > 1 {
        verdict.reject(FieldError::forbidden(
            at.clone(),
            "load balancer profile must specify at most one of ManagedOutboundIPs, OutboundIPPrefixes and OutboundIPs",
        ));
    }
}

/// A whole number, `suffix` after it.
fn is_count_with(text: &str, suffix: &str) -> bool {
    text.strip_suffix(suffix)
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `text` reads as a Go duration (`300ms`, `1.5h`, `2m30s`, `0`).
fn is_duration(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    if text == "0" {
        return true;
    }
    let mut rest = text;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let number = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (digits, after) = rest.split_at(number);
        if digits.is_empty() || digits == "." || digits.matches('.').count() > 1 {
            return false;
        }
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .find(|unit| after.starts_with(**unit));
        let Some(unit) = unit else {
            return false;
        };
        rest = &after[unit.len()..];
    }
    true
}

fn check_autoscaler_profile(profile: &AutoScalerProfile, at: &FieldPath, verdict: &mut Verdict) {
    let mut invalid = |name: &str, value: &str| {
        verdict.reject(FieldError::invalid(at.child(name), &value, "invalid value"));
    };
    let non_negative = |text: &str| text.parse::<i64>().is_ok_and(|n| n >= 0);
    for (name, value) in [
        ("maxEmptyBulkDelete", &profile.max_empty_bulk_delete),
        ("maxGracefulTerminationSec", &profile.max_graceful_termination_sec),
        ("okTotalUnreadyCount", &profile.ok_total_unready_count),
    ] {
        if let Some(value) = value
            && !non_negative(value)
        {
            invalid(name, value);
        }
    }
    if let Some(value) = &profile.max_total_unready_percentage
        && !value.parse::<i64>().is_ok_and(|n| (0..=100).contains(&n))
    {
        invalid("maxTotalUnreadyPercentage", value);
    }
    let suffixed = [
        ("maxNodeProvisionTime", &profile.max_node_provision_time, "m"),
        ("scanInterval", &profile.scan_interval, "s"),
        ("scaleDownDelayAfterAdd", &profile.scale_down_delay_after_add, "m"),
        (
            "scaleDownDelayAfterDelete",
            &profile.scale_down_delay_after_delete,
            "s",
        ),
        (
            "scaleDownDelayAfterFailure",
            &profile.scale_down_delay_after_failure,
            "m",
        ),
        ("scaleDownUnneededTime", &profile.scale_down_unneeded_time, "m"),
        ("scaleDownUnreadyTime", &profile.scale_down_unready_time, "m"),
    ];
    for (name, value, suffix) in suffixed {
        if let Some(value) = value.as_deref().filter(|value| !value.is_empty())
            && !is_count_with(value, suffix)
        {
            invalid(name, value);
        }
    }
    if let Some(value) = profile
        .new_pod_scale_up_delay
        .as_deref()
        .filter(|v| !v.is_empty())
        && !is_duration(value)
    {
        invalid("newPodScaleUpDelay", value);
    }
    if let Some(value) = &profile.scale_down_utilization_threshold
        && !value.parse::<f64>().is_ok_and(|n| (0.0..=1.0).contains(&n))
    {
        invalid("scaleDownUtilizationThreshold", value);
    }
}

fn check_extension(extension: &AksExtension, at: &FieldPath, verdict: &mut Verdict) {
    let auto_upgrade = extension.auto_upgrade_minor_version.unwrap_or(true);
    if extension.version.is_some() && auto_upgrade {
        verdict.reject(FieldError::forbidden(
            at.child("version"),
            "Version must not be given if AutoUpgradeMinorVersion is true (or not provided, as it is true by default)",
        ));
    }
    if !auto_upgrade && extension.release_train.is_some() {
        verdict.reject(FieldError::forbidden(
            at.child("releaseTrain"),
            "ReleaseTrain must not be given if AutoUpgradeMinorVersion is false",
        ));
    }
    let Some(scope) = &extension.scope else {
        return;
    };
    let at = at.child("scope");
    let release = scope.release_namespace.as_deref().unwrap_or_default();
    let target = scope.target_namespace.as_deref().unwrap_or_default();
    match scope.scope_type {
        ExtensionScopeType::Cluster => {
            if release.is_empty() {
                verdict.reject(FieldError::required(
                    at.child("releaseNamespace"),
                    "ReleaseNamespace must be provided if Scope is Cluster",
                ));
            }
            if !target.is_empty() {
                verdict.reject(FieldError::forbidden(
                    at.child("targetNamespace"),
                    "TargetNamespace can only be given if Scope is Namespace",
                ));
            }
        }
        ExtensionScopeType::Namespace => {
            if target.is_empty() {
                verdict.reject(FieldError::required(
                    at.child("targetNamespace"),
                    "TargetNamespace must be provided if Scope is Namespace",
                ));
            }
            if !release.is_empty() {
                verdict.reject(FieldError::forbidden(
                    at.child("releaseNamespace"),
                    "ReleaseNamespace can only be given if Scope is Cluster",
                ));
            }
        }
    }
}

fn check_security_profile(class: &AzureManagedControlPlaneClassSpec, at: &FieldPath, verdict: &mut Verdict) {
    let Some(profile) = &class.security_profile else {
        return;
    };
    let at = at.child("securityProfile");
    if let Some(kms) = &profile.azure_key_vault_kms {
        let path = at.child("azureKeyVaultKms").child("keyVaultResourceID");
        let user_assigned = class
            .identity
            .as_ref()
            .is_some_and(|identity| identity.type_ == Some(ManagedControlPlaneIdentityType::UserAssigned));
        let resource_id = kms.key_vault_resource_id.as_deref().unwrap_or_default();
        let private = kms.key_vault_network_access.as_deref() == Some("Private");
        if !user_assigned {
            verdict.reject(FieldError::invalid(
                path,
                &kms.key_vault_resource_id,
                "Spec.SecurityProfile.AzureKeyVaultKms can be set only when Spec.Identity.Type is UserAssigned",
            ));
        } else if private && resource_id.is_empty() {
            verdict.reject(FieldError::invalid(
                path,
                &kms.key_vault_resource_id,
                "Spec.SecurityProfile.AzureKeyVaultKms.KeyVaultResourceID cannot be empty when Spec.SecurityProfile.AzureKeyVaultKms.KeyVaultNetworkAccess is Private",
            ));
        } else if !private && !resource_id.is_empty() {
            verdict.reject(FieldError::invalid(
                path,
                &kms.key_vault_resource_id,
                "Spec.SecurityProfile.AzureKeyVaultKms.KeyVaultResourceID should be empty when Spec.SecurityProfile.AzureKeyVaultKms.KeyVaultNetworkAccess is Public",
            ));
        }
    }
    let oidc = class
        .oidc_issuer_profile
        .as_ref()
        .and_then(|profile| profile.enabled)
        .unwrap_or(false);
    if let Some(workload) = &profile.workload_identity
        && !oidc
    {
        verdict.reject(FieldError::invalid(
            at.child("workloadIdentity"),
            workload,
            "Spec.SecurityProfile.WorkloadIdentity cannot be enabled when Spec.OIDCIssuerProfile is disabled",
        ));
    }
}

/// Cilium as the policy needs Cilium as the data plane (when one is named); the Cilium data
/// plane needs the overlay plugin mode and the Cilium policy.
fn check_network_policy(class: &AzureManagedControlPlaneClassSpec, at: &FieldPath, verdict: &mut Verdict) {
    let (policy, dataplane) = (class.network_policy, class.network_dataplane);
    if policy == Some(NetworkPolicy::Cilium) && dataplane.is_some_and(|d| d != NetworkDataplane::Cilium) {
        verdict.reject(FieldError::invalid(
            at.child("networkPolicy"),
            &policy,
            "cilium network policy can only be used with cilium network dataplane",
        ));
    }
    if dataplane == Some(NetworkDataplane::Cilium) {
        let path = at.child("networkDataplane");
        if class.network_plugin_mode != Some(NetworkPluginMode::Overlay) {
            verdict.reject(FieldError::invalid(
                path.clone(),
                &dataplane,
                "cilium network dataplane can only be used with overlay network plugin mode",
            ));
        }
        if policy != Some(NetworkPolicy::Cilium) {
            verdict.reject(FieldError::invalid(
                path,
                &dataplane,
                "cilium dataplane requires network policy cilium.",
            ));
        }
    }
}

/// A private DNS zone named as AKS wants it: `private.<location>.azmk8s.io`,
/// `privatelink.<location>.azmk8s.io`, or either under a sub-zone of 1–32 letters, digits and
/// dashes.
fn is_aks_private_zone(zone: &str) -> bool {
    let labels: Vec<&str> = zone.split('.').collect();
    let alnum = |label: &str| !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric());
    let tail = |labels: &[&str]| matches!(labels, [kind, location, "azmk8s", "io"] if matches!(*kind, "private" | "privatelink") && alnum(location));
    match labels.as_slice() {
        [_, _, _, _] => tail(&labels),
        [sub, rest @ ..] if rest.len() == 4 => {
            (1..=32).contains(&sub.len())
                && sub.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && tail(rest)
        }
        _ => false,
    }
}

fn check_api_server_access(profile: &ApiServerAccessProfile, at: &FieldPath, verdict: &mut Verdict) {
    for (i, range) in profile.authorized_ip_ranges.iter().flatten().enumerate() {
        if range.parse::<Cidr>().is_err() {
            verdict.reject(FieldError::invalid(
                at.child("authorizedIPRanges").index(i),
                range,
                "invalid CIDR format",
            ));
        }
    }
    let Some(zone) = &profile.private_dns_zone else {
        return;
    };
    let zone = zone.to_ascii_lowercase();
    if zone == "system" || zone == "none" {
        return;
    }
    let path = at.child("privateDNSZone");
    let Some(start) = zone.find("privatednszones/") else {
        verdict.reject(FieldError::invalid(path, &zone, "invalid private DNS zone"));
        return;
    };
    if !profile.enable_private_cluster.unwrap_or(false) {
        verdict.reject(FieldError::invalid(
            at.child("enablePrivateCluster"),
            &profile.enable_private_cluster,
            "Private Cluster should be enabled to use PrivateDNSZone",
        ));
        return;
    }
    if !is_aks_private_zone(&zone[start + "privatednszones/".len()..]) {
        verdict.reject(FieldError::invalid(
            path,
            &zone,
            "invalid privateDnsZone resource ID. Each label the private dns zone name should be in either of these formats: 'private.<location>.azmk8s.io,privatelink.<location>.azmk8s.io,[a-zA-Z0-9-]{1,32}.private.<location>.azmk8s.io,[a-zA-Z0-9-]{1,32}.privatelink.<location>.azmk8s.io'",
        ));
    }
}

/// The network's and subnet's ranges must read, and the network's hold the subnet's address.
fn check_virtual_network(network: &ManagedControlPlaneVirtualNetwork, at: &FieldPath, verdict: &mut Verdict) {
    if *network == ManagedControlPlaneVirtualNetwork::default() {
        return;
    }
    let vnet = network.cidr_block.parse::<Cidr>();
    if vnet.is_err() {
        verdict.reject(FieldError::invalid(
            at.child("cidrBlock"),
            &network.cidr_block,
            "pre-existing virtual networks CIDR block is invalid",
        ));
    }
    let subnet_block = network
        .subnet
        .as_ref()
        .map(|s| s.cidr_block.as_str())
        .unwrap_or_default();
    let subnet_ok = subnet_block.parse::<Cidr>().is_ok();
    if !subnet_ok {
        verdict.reject(FieldError::invalid(
            at.child("subnet").child("cidrBlock"),
            &subnet_block,
            "pre-existing subnets CIDR block is invalid",
        ));
    }
    let subnet_address = subnet_block
        .split('/')
        .next()
        .and_then(|addr| addr.parse::<IpAddr>().ok());
    if let (Ok(vnet), true, Some(address)) = (vnet, subnet_ok, subnet_address)
        && !vnet.contains_ip(address)
    {
        verdict.reject(FieldError::invalid(
            at.child("cidrBlock"),
            &network.cidr_block,
            "pre-existing virtual networks CIDR block should contain the subnet CIDR block",
        ));
    }
}

/// The Cluster a control plane (or a template) labelled `labels` belongs to, when labelled.
pub(super) fn cluster_query(labels: Option<&BTreeMap<String, String>>) -> Option<ClusterQuery> {
    labels
        .and_then(|labels| labels.get(CLUSTER_NAME_LABEL))
        .map(|name| ClusterQuery {
            name: name.clone(),
            system_pools: false,
        })
}

/// What the Cluster's network must be for AKS: at most one service and one pod range, and the DNS
/// service IP (when set) inside the service range, ending in `.10`; the subnet's private
/// endpoints are checked against its range. Skipped unless the Cluster was found.
pub(super) fn check_cluster_network(
    cluster: &OwnerCluster,
    spec: &AzureManagedControlPlaneClassSpec,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    let OwnerCluster::Found(facts) = cluster else {
        return;
    };
    let network = FieldPath::root("Cluster").child("spec").child("clusterNetwork");
    for (ranges, name) in [(&facts.service_cidrs, "services"), (&facts.pod_cidrs, "pods")] {
        if ranges.len() > 1 {
            verdict.reject(FieldError::invalid(
                network.child(name).child("cidrBlocks"),
                ranges,
                "AKS takes at most one range: must have at most 1 item",
            ));
        }
    }
    let service_cidr = match facts.service_cidrs.as_slice() {
        [only] => Some(only.as_str()),
        _ => None,
    };
    if let Some(ip) = &spec.dns_service_ip {
        let path = at.child("dnsServiceIP");
        match service_cidr.map(|cidr| (cidr, cidr.parse::<Cidr>())) {
            None => verdict.reject(FieldError::required(
                network.child("services").child("cidrBlocks"),
                "service CIDR must be specified if specifying DNSServiceIP",
            )),
            Some((cidr, Err(err))) => verdict.reject(FieldError::invalid(
                network.child("services").child("cidrBlocks"),
                &cidr,
                format!("failed to parse cluster service cidr: {err}"),
            )),
            Some((cidr, Ok(range))) => {
                match ip.parse::<IpAddr>() {
                    Err(_) => verdict.reject(FieldError::invalid(path, ip, "must be a valid IP address")),
                    Ok(address) => {
                        if !range.contains_ip(address) {
                            verdict.reject(FieldError::invalid(
                            path.clone(),
                            ip,
                            format!("DNSServiceIP must reside within the associated cluster serviceCIDR {cidr}"),
                        ));
                        }
                        if !address.to_string().ends_with(".10") {
                            verdict.reject(FieldError::invalid(path, ip, "must end with \".10\""));
                        }
                    }
                }
            }
        }
    }
    if let Some(subnet) = spec
        .virtual_network
        .as_ref()
        .and_then(|network| network.subnet.as_ref())
        && let Some(endpoints) = &subnet.private_endpoints
    {
        let range: Vec<Cidr> = subnet.cidr_block.parse().into_iter().collect();
        check_private_endpoints(
            endpoints,
            &range,
            &at.child("virtualNetwork")
                .child("subnet")
                .child("privateEndpoints"),
            &mut verdict.errors,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_durations_read_as_capz_reads_them() {
        assert!(is_dns_prefix("a1") && is_dns_prefix("my-cluster") && !is_dns_prefix("a"));
        assert!(!is_dns_prefix("-a") && !is_dns_prefix(&"a".repeat(55)));
        assert!(is_fleet_member_name("a") && is_fleet_member_name("a-1") && !is_fleet_member_name("A"));
        for duration in ["0", "10s", "1m30s", "1.5h", "300ms"] {
            assert!(is_duration(duration), "{duration}");
        }
        for duration in ["", "10", "1x", "s", ".s"] {
            assert!(!is_duration(duration), "{duration}");
        }
        assert!(is_aks_private_zone("privatelink.westeurope.azmk8s.io"));
        assert!(is_aks_private_zone("my-zone.private.westeurope.azmk8s.io"));
        assert!(!is_aks_private_zone("example.com") && !is_aks_private_zone("private.west-europe.azmk8s.io"));
    }
}
