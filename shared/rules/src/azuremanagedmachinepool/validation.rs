//! What an AKS node pool may not say when it is created: its name, mode and OS, node labels,
//! public IPs, kubelet and Linux OS settings, subnet.

use capz_api::azuremanagedmachinepool::{
    AzureManagedMachinePoolClassSpec, KubeletConfig, LinuxOsConfig, NodePoolMode, OsType,
};

use crate::field::{FieldError, FieldPath, Verdict};

/// The prefix of the node labels AKS keeps for itself.
const AZURE_SYSTEM_LABEL_PREFIX: &str = "kubernetes.azure.com";

/// The sysctls a pool may allow pods to set, as patterns: a prefix with `*` for one or more
/// characters, or a whole name.
const UNSAFE_SYSCTLS: [(&str, bool); 5] = [
    ("kernel.shm", true),
    ("kernel.msg", true),
    ("kernel.sem", false),
    ("fs.mqueue.", true),
    ("net.", true),
];

/// The checks of a pool's spec at `at`; `name` is the object's name, the pool's when the spec
/// names none; `subnet` also checks the subnet's name (a template does not).
pub(super) fn check_pool(
    spec: &AzureManagedMachinePoolClassSpec,
    name: &str,
    at: &FieldPath,
    subnet: bool,
    verdict: &mut Verdict,
) {
    if let Some(max_pods) = spec.max_pods
        && !(10..=250).contains(&max_pods)
    {
        verdict.reject(FieldError::invalid(
            at.child("maxPods"),
            &max_pods,
            "MaxPods must be between 10 and 250",
        ));
    }
    if spec.mode == NodePoolMode::System && spec.os_type.is_some_and(|os| os != OsType::Linux) {
        verdict.reject(FieldError::forbidden(
            at.child("osType"),
            "System node pool must have OSType 'Linux'",
        ));
    }
    verdict.errors.extend(check_name(spec, name, &at.child("name")));
    verdict
        .errors
        .extend(check_node_labels(spec, &at.child("nodeLabels")));
    if let Some(id) = &spec.node_public_ip_prefix_id {
        if !is_public_ip_prefix_id(id) {
            verdict.reject(FieldError::invalid(
                at.child("nodePublicIPPrefixID"),
                id,
                "resource ID must match \"(?i)^/?subscriptions/[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}/resourcegroups/[^/]+/providers/microsoft\\.network/publicipprefixes/[^/]+$\"",
            ));
        }
        if spec.enable_node_public_ip != Some(true) {
            verdict.reject(FieldError::invalid(
                at.child("enableNodePublicIP"),
                &spec.enable_node_public_ip,
                "must be set to true when NodePublicIPPrefixID is set",
            ));
        }
    }
    if let Some(kubelet) = &spec.kubelet_config {
        check_kubelet_config(kubelet, &at.child("kubeletConfig"), verdict);
    }
    if let Some(linux) = &spec.linux_os_config {
        check_linux_os_config(
            linux,
            spec.kubelet_config.as_ref(),
            &at.child("linuxOSConfig"),
            verdict,
        );
    }
    if subnet
        && let Some(subnet) = &spec.subnet_name
        && !is_subnet_name(subnet)
    {
        verdict.reject(FieldError::invalid(
            at.child("subnetName"),
            subnet,
            "name of subnet doesn't match regex ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,78}[a-zA-Z0-9]$",
        ));
    }
}

/// The pool's name (the spec's, else the object's): at most 12 characters for Linux, 6 for
/// Windows; a lowercase letter, then lowercase letters and digits.
fn check_name(
    spec: &AzureManagedMachinePoolClassSpec,
    object_name: &str,
    at: &FieldPath,
) -> Option<FieldError> {
    let (name, which) = match spec.name.as_deref().filter(|name| !name.is_empty()) {
        Some(name) => (name, "spec.name"),
        None => (object_name, "when spec.name is empty, metadata.name"),
    };
    let length = name.chars().count();
    match spec.os_type {
        Some(OsType::Windows) if length > 6 => {
            return Some(FieldError::invalid(
                at.clone(),
                &name,
                format!("For OSType Windows, {which} can not be longer than 6 characters."),
            ));
        }
        None | Some(OsType::Linux) if length > 12 => {
            return Some(FieldError::invalid(
                at.clone(),
                &name,
                format!("For OSType Linux, {which} can not be longer than 12 characters."),
            ));
        }
        _ => {}
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    if !first.is_lowercase() {
        return Some(FieldError::invalid(
            at.clone(),
            &name,
            format!("{which} must begin with a lowercase letter."),
        ));
    }
    if !name.chars().all(|c| c.is_lowercase() || c.is_numeric()) {
        return Some(FieldError::invalid(
            at.clone(),
            &name,
            format!("{which} may only contain lowercase alphanumeric characters."),
        ));
    }
    None
}

/// Node labels may not use the prefix AKS keeps for itself.
pub(super) fn check_node_labels(
    spec: &AzureManagedMachinePoolClassSpec,
    at: &FieldPath,
) -> Option<FieldError> {
    spec.node_labels
        .iter()
        .flatten()
        .find(|(key, _)| key.starts_with(AZURE_SYSTEM_LABEL_PREFIX))
        .map(|(key, _)| {
            FieldError::invalid(
                at.key(key),
                key,
                format!("Node pool label key must not start with {AZURE_SYSTEM_LABEL_PREFIX}"),
            )
        })
}

/// `(?i)^/?subscriptions/<guid>/resourcegroups/[^/]+/providers/microsoft\.network/publicipprefixes/[^/]+$`.
fn is_public_ip_prefix_id(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    let parts: Vec<&str> = lower.strip_prefix('/').unwrap_or(&lower).split('/').collect();
    let is_guid = |text: &str| {
        let groups: Vec<&str> = text.split('-').collect();
        groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    matches!(
        parts.as_slice(),
        ["subscriptions", guid, "resourcegroups", group, "providers", "microsoft.network", "publicipprefixes", name]
            if is_guid(guid) && !group.is_empty() && !name.is_empty()
    )
}

/// `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,78}[a-zA-Z0-9]$`.
fn is_subnet_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (2..=80).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn check_kubelet_config(kubelet: &KubeletConfig, at: &FieldPath, verdict: &mut Verdict) {
    if let Some(period) = &kubelet.cpu_cfs_quota_period
        && !period.ends_with("ms")
    {
        verdict.reject(FieldError::invalid(
            at.child("cpuCfsQuotaPeriod"),
            period,
            "must be a string value in milliseconds with a 'ms' suffix, e.g., '100ms'",
        ));
    }
    if let (Some(high), Some(low)) = (kubelet.image_gc_high_threshold, kubelet.image_gc_low_threshold)
        && low > high
    {
        verdict.reject(FieldError::invalid(
            at.child("imageGcLowThreshold"),
            &low,
            format!(
                "must not be greater than ImageGcHighThreshold, ImageGcLowThreshold={low}, ImageGcHighThreshold={high}"
            ),
        ));
    }
    for (i, sysctl) in kubelet.allowed_unsafe_sysctls.iter().flatten().enumerate() {
        let allowed = UNSAFE_SYSCTLS.iter().any(|(pattern, prefix)| {
            if *prefix {
                sysctl.len() > pattern.len() && sysctl.starts_with(pattern)
            } else {
                sysctl == pattern
            }
        });
        if !allowed {
            verdict.reject(FieldError::invalid(
                at.child("allowedUnsafeSysctls").index(i),
                sysctl,
                format!(
                    "{sysctl} is not a supported AllowedUnsafeSysctls configuration: allowed are kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* and net.*"
                ),
            ));
        }
    }
}

fn check_linux_os_config(
    linux: &LinuxOsConfig,
    kubelet: Option<&KubeletConfig>,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    if let Some(size) = linux.swap_file_size_mb
        && kubelet.and_then(|kubelet| kubelet.fail_swap_on) != Some(false)
    {
        verdict.reject(FieldError::invalid(
            at.child("swapFileSizeMB"),
            &size,
            "KubeletConfig.FailSwapOn must be set to false to enable swap file on nodes",
        ));
    }
    let Some(range) = linux
        .sysctls
        .as_ref()
        .and_then(|sysctls| sysctls.net_ipv4_ip_local_port_range.as_ref())
    else {
        return;
    };
    let path = at.child("sysctls").child("netIpv4IPLocalPortRange");
    let ports = range.split_once(' ').and_then(|(first, last)| {
        let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        (digits(first) && digits(last)).then(|| (first.parse::<u64>().ok(), last.parse::<u64>().ok()))
    });
    let Some((first, last)) = ports else {
        verdict.reject(FieldError::invalid(
            path,
            range,
            "LinuxOSConfig.Sysctls.NetIpv4IpLocalPortRange must be of the format \"<int> <int>\"",
        ));
        return;
    };
    let (first, last) = (first.unwrap_or(u64::MAX), last.unwrap_or(u64::MAX));
    if !(1024..=60999).contains(&first) {
        verdict.reject(FieldError::invalid(
            path.clone(),
            range,
            format!("first port of NetIpv4IpLocalPortRange={first} must be in between [1024 - 60999]"),
        ));
    }
    if !(32768..=65000).contains(&last) {
        verdict.reject(FieldError::invalid(
            path.clone(),
            range,
            format!("last port of NetIpv4IpLocalPortRange={last} must be in between [32768 -65000]"),
        ));
    }
    if first > last {
        verdict.reject(FieldError::invalid(
            path,
            range,
            format!(
                "first port of NetIpv4IpLocalPortRange={first} cannot be greater than last port of NetIpv4IpLocalPortRange={last}"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_read_as_capz_reads_them() {
        assert!(is_public_ip_prefix_id(
            "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/g/providers/Microsoft.Network/publicIPPrefixes/p"
        ));
        assert!(is_public_ip_prefix_id(
            "subscriptions/0A1B2C3D-0000-4000-8000-000000000001/resourcegroups/g/providers/microsoft.network/publicipprefixes/p"
        ));
        assert!(!is_public_ip_prefix_id(
            "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/publicIPPrefixes/p"
        ));
        assert!(!is_public_ip_prefix_id(
            "/subscriptions/0a1b2c3d-0000-4000-8000-000000000001/resourceGroups/g/providers/Microsoft.Network/publicIPAddresses/p"
        ));
        assert!(is_subnet_name("node-subnet_1.a") && !is_subnet_name("a") && !is_subnet_name("-ab"));
    }
}
