//! Resource SKUs (`GET /subscriptions/{sub}/providers/Microsoft.Compute/skus`): the VM sizes
//! clients check before creating machines, with their capabilities, in every configured location,
//! and the two availability set SKUs with their fault domain limit. Sizes are restricted where
//! `Config::sku_restrictions` says.

use serde_json::{Value, json};

use super::SKU_API_VERSIONS;
use crate::config::{Config, Location};
use crate::error::ArmError;
use crate::resources::{Catalogue, Lookup};

pub(crate) static SKUS: Catalogue = Catalogue {
    name: "Microsoft.Compute/skus",
    api_versions: SKU_API_VERSIONS,
    entry: None,
    collection: Some(list),
};

/// The most fault domains an availability set may spread over.
pub(super) const MAX_FAULT_DOMAINS: i64 = 3;

/// A virtual machine size and what it can do.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag is one capability resource SKUs list"
)]
pub(super) struct VmSize {
    pub(super) name: &'static str,
    /// The quota family, for example `standardDSv3Family`.
    pub(super) family: &'static str,
    pub(super) vcpus: u32,
    memory_gb: &'static str,
    pub(super) max_data_disks: usize,
    pub(super) max_nics: usize,
    pub(super) accelerated_networking: bool,
    pub(super) premium_io: bool,
    pub(super) ephemeral_os_disk: bool,
    pub(super) encryption_at_host: bool,
    pub(super) ultra_ssd: bool,
    trusted_launch: bool,
    hyper_v: &'static str,
    arm64: bool,
    gpus: u32,
    /// The hardware isolation of confidential VM sizes (`SNP` for AMD SEV-SNP); `None` for the
    /// others, which cannot run `ConfidentialVM` machines.
    pub(super) confidential: Option<&'static str>,
}

/// A size with the common traits of current general-purpose sizes.
const fn size(name: &'static str, family: &'static str, vcpus: u32, memory_gb: &'static str) -> VmSize {
    VmSize {
        name,
        family,
        vcpus,
        memory_gb,
        max_data_disks: 4,
        max_nics: 2,
        accelerated_networking: true,
        premium_io: true,
        ephemeral_os_disk: true,
        encryption_at_host: true,
        ultra_ssd: true,
        trusted_launch: true,
        hyper_v: "V1,V2",
        arm64: false,
        gpus: 0,
        confidential: None,
    }
}

/// The sizes CAPZ's templates, its tests and the recorded sessions use.
const SIZES: &[VmSize] = &[
    VmSize {
        accelerated_networking: false,
        ephemeral_os_disk: false,
        ultra_ssd: false,
        max_nics: 3,
        ..size("Standard_B2s", "standardBSFamily", 2, "4")
    },
    VmSize {
        accelerated_networking: false,
        ephemeral_os_disk: false,
        ultra_ssd: false,
        max_nics: 3,
        ..size("Standard_B2ms", "standardBSFamily", 2, "8")
    },
    VmSize {
        accelerated_networking: false,
        premium_io: false,
        ephemeral_os_disk: false,
        ultra_ssd: false,
        ..size("Standard_D1_v2", "standardDv2Family", 1, "3.5")
    },
    VmSize {
        max_data_disks: 8,
        ultra_ssd: false,
        ..size("Standard_DS2_v2", "standardDSv2Family", 2, "7")
    },
    // Hyper-threaded v3 sizes accelerate networking from 4 vCPUs on.
    VmSize {
        accelerated_networking: false,
        ..size("Standard_D2s_v3", "standardDSv3Family", 2, "8")
    },
    VmSize {
        max_data_disks: 8,
        ..size("Standard_D4s_v3", "standardDSv3Family", 4, "16")
    },
    VmSize {
        max_data_disks: 16,
        max_nics: 4,
        ..size("Standard_D8s_v3", "standardDSv3Family", 8, "32")
    },
    VmSize {
        accelerated_networking: false,
        ..size("Standard_E2s_v3", "standardESv3Family", 2, "16")
    },
    size("Standard_F2s_v2", "standardFSv2Family", 2, "4"),
    // v5 sizes without a local disk cannot hold an ephemeral OS disk.
    VmSize {
        ephemeral_os_disk: false,
        ..size("Standard_D2s_v5", "standardDSv5Family", 2, "8")
    },
    VmSize {
        ephemeral_os_disk: false,
        max_data_disks: 8,
        ..size("Standard_D4s_v5", "standardDSv5Family", 4, "16")
    },
    VmSize {
        ephemeral_os_disk: false,
        max_data_disks: 16,
        max_nics: 4,
        ..size("Standard_D8s_v5", "standardDSv5Family", 8, "32")
    },
    size("Standard_D2ds_v5", "standardDDSv5Family", 2, "8"),
    VmSize {
        max_data_disks: 8,
        ..size("Standard_D4ds_v5", "standardDDSv5Family", 4, "16")
    },
    VmSize {
        ephemeral_os_disk: false,
        ..size("Standard_D2as_v5", "standardDASv5Family", 2, "8")
    },
    VmSize {
        ephemeral_os_disk: false,
        trusted_launch: false,
        hyper_v: "V2",
        arm64: true,
        ..size("Standard_D2ps_v5", "standardDPSv5Family", 2, "8")
    },
    VmSize {
        accelerated_networking: false,
        encryption_at_host: false,
        ultra_ssd: false,
        trusted_launch: false,
        max_data_disks: 12,
        max_nics: 4,
        gpus: 1,
        ..size("Standard_NC6s_v3", "standardNCSv3Family", 6, "112")
    },
    // Confidential sizes: AMD SEV-SNP, generation 2 only, no local disk.
    VmSize {
        ephemeral_os_disk: false,
        encryption_at_host: false,
        ultra_ssd: false,
        hyper_v: "V2",
        confidential: Some("SNP"),
        ..size("Standard_DC2as_v5", "standardDCASv5Family", 2, "8")
    },
    VmSize {
        ephemeral_os_disk: false,
        encryption_at_host: false,
        ultra_ssd: false,
        hyper_v: "V2",
        max_data_disks: 8,
        confidential: Some("SNP"),
        ..size("Standard_DC4as_v5", "standardDCASv5Family", 4, "16")
    },
];

/// The size called `name` (any case).
pub(super) fn find(name: &str) -> Option<&'static VmSize> {
    SIZES.iter().find(|size| size.name.eq_ignore_ascii_case(name))
}

fn flag(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

fn capability(name: &str, value: &dyn std::fmt::Display) -> Value {
    json!({ "name": name, "value": value.to_string() })
}

/// The configured restrictions of a size in a location, in ARM's shape: a `Location` restriction
/// bars the whole location, a `Zone` restriction the zones it lists.
fn restrictions(config: &Config, size: &VmSize, location: &Location) -> Vec<Value> {
    config
        .sku_restrictions
        .iter()
        .filter(|restriction| restriction.applies_to(size.name, &location.name))
        .map(|restriction| {
            let (kind, info) = if restriction.zones.is_empty() {
                ("Location", json!({ "locations": [location.name] }))
            } else {
                (
                    "Zone",
                    json!({ "locations": [location.name], "zones": restriction.zones }),
                )
            };
            json!({
                "type": kind,
                "values": [location.name],
                "restrictionInfo": info,
                "reasonCode": "NotAvailableForSubscription",
            })
        })
        .collect()
}

/// Whether the configuration bars a size in a location, or in the zone a machine asks for.
pub(super) fn restricted(config: &Config, size: &str, location: &str, zones: &[String]) -> bool {
    config
        .sku_restrictions
        .iter()
        .filter(|restriction| restriction.applies_to(size, location))
        .any(|restriction| {
            restriction.zones.is_empty() || zones.iter().any(|zone| restriction.zones.contains(zone))
        })
}

fn vm_entry(config: &Config, size: &VmSize, location: &Location) -> Value {
    let mut capabilities = vec![
        capability(
            "MaxResourceVolumeMB",
            &if size.ephemeral_os_disk { 16_384 } else { 0 },
        ),
        capability("OSVhdSizeMB", &1_047_552),
        capability("vCPUs", &size.vcpus),
        capability("HyperVGenerations", &size.hyper_v),
        capability("MemoryGB", &size.memory_gb),
        capability("MaxDataDiskCount", &size.max_data_disks),
        capability("CpuArchitectureType", &if size.arm64 { "Arm64" } else { "x64" }),
        capability("LowPriorityCapable", &"True"),
        capability("PremiumIO", &flag(size.premium_io)),
        capability("VMDeploymentTypes", &"IaaS"),
        capability("vCPUsAvailable", &size.vcpus),
    ];
    if size.gpus > 0 {
        capabilities.push(capability("GPUs", &size.gpus));
    }
    capabilities.extend([
        capability("EphemeralOSDiskSupported", &flag(size.ephemeral_os_disk)),
        capability("EncryptionAtHostSupported", &flag(size.encryption_at_host)),
        capability("AcceleratedNetworkingEnabled", &flag(size.accelerated_networking)),
        capability("RdmaEnabled", &"False"),
        capability("MaxNetworkInterfaces", &size.max_nics),
    ]);
    if !size.trusted_launch {
        capabilities.push(capability("TrustedLaunchDisabled", &"True"));
    }
    if let Some(kind) = size.confidential {
        capabilities.push(capability("ConfidentialComputingType", &kind));
    }
    // Ultra disks are a zonal capability.
    let zone_details = if size.ultra_ssd && !location.zones.is_empty() {
        json!([{ "name": location.zones, "capabilities": [capability("UltraSSDAvailable", &"True")] }])
    } else {
        json!([])
    };
    json!({
        "resourceType": "virtualMachines",
        "name": size.name,
        "tier": "Standard",
        "size": size.name.trim_start_matches("Standard_"),
        "family": size.family,
        "locations": [location.name],
        "locationInfo": [{ "location": location.name, "zones": location.zones, "zoneDetails": zone_details }],
        "capabilities": capabilities,
        "restrictions": restrictions(config, size, location),
    })
}

fn availability_set_entry(name: &str, location: &Location) -> Value {
    json!({
        "resourceType": "availabilitySets",
        "name": name,
        "locations": [location.name],
        "locationInfo": [{ "location": location.name, "zones": [], "zoneDetails": [] }],
        "capabilities": [capability("MaximumPlatformFaultDomainCount", &MAX_FAULT_DOMAINS)],
        "restrictions": [],
    })
}

/// The location a `$filter` of `location eq 'westus2'` names.
fn filtered_location(filter: &str) -> Result<String, ArmError> {
    let words: Vec<&str> = filter.split_whitespace().collect();
    match words.as_slice() {
        [field, operator, value]
            if field.eq_ignore_ascii_case("location") && operator.eq_ignore_ascii_case("eq") =>
        {
            Ok(value.trim_matches('\'').to_ascii_lowercase())
        }
        _ => Err(ArmError::invalid_parameter(
            "$filter",
            format!(
                "The $filter '{filter}' is not supported; resource SKUs filter by \"location eq '<location>'\" only."
            ),
        )),
    }
}

fn list(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let wanted = lookup.filter.map(filtered_location).transpose()?;
    let mut value = Vec::new();
    for location in &lookup.config.locations {
        if wanted.as_ref().is_some_and(|wanted| *wanted != location.name) {
            continue;
        }
        value.extend(["Aligned", "Classic"].map(|name| availability_set_entry(name, location)));
        value.extend(SIZES.iter().map(|size| vm_entry(lookup.config, size, location)));
    }
    Ok(json!({ "value": value }))
}

#[cfg(test)]
mod tests {
    use super::{SIZES, filtered_location, find};

    #[test]
    fn sizes_are_found_in_any_case_and_named_once() {
        assert_eq!(find("standard_d2s_v3").map(|size| size.vcpus), Some(2));
        assert!(find("Standard_Nope").is_none());
        for (index, size) in SIZES.iter().enumerate() {
            assert!(
                SIZES[..index].iter().all(|other| other.name != size.name),
                "{} twice",
                size.name
            );
        }
    }

    #[test]
    fn only_location_filters_are_understood() {
        assert_eq!(
            filtered_location("location eq 'WestUS2'").ok().as_deref(),
            Some("westus2")
        );
        assert!(filtered_location("name eq 'Standard_B2s'").is_err());
    }
}
