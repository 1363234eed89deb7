//! Microsoft.Compute: virtual machines and their extensions, managed disks, snapshots, managed
//! images, compute galleries, availability sets and capacity reservations, and the read-only
//! catalogues clients consult before creating machines: resource SKUs,
//! marketplace images and community gallery images.

mod availability_sets;
mod capacity_reservations;
mod disks;
mod extensions;
mod galleries;
mod images;
mod managed_images;
mod scale_sets;
mod skus;
mod virtual_machines;

use std::time::SystemTime;

pub(crate) use scale_sets::SCALE_SET;
pub(crate) use virtual_machines::{fill, identity};

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::names::{Naming, alphanumeric, refuse};
use super::{
    BackReferenceStyle, Catalogue, Concurrency, Flavour, Lro, OperationsAt, Prepare, ResourceType, fields,
};
use crate::error::ArmError;
use crate::state::{State, StatusStyle};

/// api-versions of virtual machines, extensions, availability sets and marketplace images: those
/// of the recorded sessions (2020-12-01, 2022-03-01, 2024-11-01), those the Azure SDK for Go
/// pins (armcompute v5 and v6: 2023-09-01, 2024-03-01, 2024-07-01) and the Python SDK defaults
/// (azure-mgmt-compute 33 to 35: 2024-07-01, 2024-11-01; 39: 2026-04-01).
pub(crate) const API_VERSIONS: &[&str] = &[
    "2020-06-01",
    "2020-12-01",
    "2021-03-01",
    "2021-04-01",
    "2021-07-01",
    "2021-11-01",
    "2022-03-01",
    "2022-08-01",
    "2022-11-01",
    "2023-03-01",
    "2023-07-01",
    "2023-09-01",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-04-01",
    "2026-04-01",
];

/// api-versions of managed disks: the recorded 2020-09-30 and 2024-03-02, the Go SDK's
/// 2023-04-02 and 2024-03-02, the Python SDK's 2024-03-02, 2025-01-02 and 2026-03-02.
pub(crate) const DISK_API_VERSIONS: &[&str] = &[
    "2020-09-30",
    "2020-12-01",
    "2021-04-01",
    "2021-08-01",
    "2021-12-01",
    "2022-03-02",
    "2022-07-02",
    "2023-01-02",
    "2023-04-02",
    "2023-10-02",
    "2024-03-02",
    "2025-01-02",
    "2026-03-02",
];

/// api-versions of resource SKUs; every SDK still calls 2021-07-01.
pub(crate) const SKU_API_VERSIONS: &[&str] = &["2017-09-01", "2019-04-01", "2021-07-01"];

/// api-versions of galleries and community galleries: the Go SDK's (armcompute v5: 2023-07-03,
/// v6: 2024-03-03) and the Python SDK's (azure-mgmt-compute 33 to 35: 2024-03-03; 39: 2026-03-03).
pub(crate) const GALLERY_API_VERSIONS: &[&str] = &[
    "2021-07-01",
    "2022-01-03",
    "2022-03-03",
    "2022-08-03",
    "2023-07-03",
    "2024-03-03",
    "2025-03-03",
    "2026-03-03",
];

/// Virtual machines and extensions: `Creating` while created, operations with times, no etags,
/// back-references on reads only.
pub(crate) static COMPUTE: Flavour = Flavour {
    status: StatusStyle::Timed,
    creating: "Creating",
    updating: "Updating",
    status_segment: "operations",
    operations: OperationsAt::Location {
        result: "operationResults",
    },
    etag: None,
    provisioning_state: true,
    create_status: StatusCode::CREATED,
    back_references: BackReferenceStyle::OnReads,
    settles_unchanged: false,
    concurrency: Concurrency::Preempted,
};

/// Managed disks: `Updating` while written, and their operations carry the disk.
pub(crate) static DISKS: Flavour = Flavour {
    status: StatusStyle::TimedWithOutput,
    creating: "Updating",
    updating: "Updating",
    status_segment: "DiskOperations",
    concurrency: Concurrency::Conflict,
    ..COMPUTE
};

/// Availability sets: written at once, 200 even when created, no provisioning state.
pub(crate) static AVAILABILITY_SETS: Flavour = Flavour {
    provisioning_state: false,
    create_status: StatusCode::OK,
    ..COMPUTE
};

/// Every Microsoft.Compute type kept in the store.
pub(crate) static TYPES: &[&ResourceType] = &[
    &virtual_machines::VIRTUAL_MACHINE,
    &extensions::EXTENSION,
    &disks::DISK,
    &disks::SNAPSHOT,
    &managed_images::IMAGE,
    &galleries::GALLERY,
    &galleries::DEFINITION,
    &galleries::VERSION,
    &capacity_reservations::GROUP,
    &capacity_reservations::RESERVATION,
    &availability_sets::AVAILABILITY_SET,
    &scale_sets::SCALE_SET,
    &scale_sets::INSTANCE,
    &scale_sets::SET_EXTENSION,
];

/// Every Microsoft.Compute catalogue.
pub(crate) static CATALOGUES: &[&Catalogue] = &[
    &skus::SKUS,
    &images::MARKETPLACE_VERSIONS,
    &images::COMMUNITY_VERSIONS,
    &galleries::SHARED_VERSIONS,
    &virtual_machines::INSTANCE_VIEW,
    &scale_sets::ROLLING_UPGRADE,
    &scale_sets::SET_INSTANCE_VIEW,
    &scale_sets::INSTANCE_INSTANCE_VIEW,
    &scale_sets::INSTANCE_INTERFACES,
    &scale_sets::SET_INTERFACES,
];

/// A compute resource with a document of its own; deletes are long-running unless writes are
/// synchronous.
const fn document(
    name: &'static str,
    api_versions: &'static [&'static str],
    flavour: &'static Flavour,
    put: Lro,
    prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
) -> ResourceType {
    ResourceType {
        put,
        delete: match put {
            Lro::Sync => Lro::Sync,
            Lro::Async | Lro::Accepted | Lro::AcceptedEmpty | Lro::AcceptedBare => Lro::Async,
        },
        in_use_code: "OperationNotAllowed",
        ..ResourceType::new(name, api_versions, flavour, prepare)
    }
}

/// What a virtual machine (or extension) name may not hold: whitespace, control characters and
/// `\/"'[]:|<>+=;,?*@&`, plus `%` and `#`, which do not survive in a URL path.
fn machine_character(c: char) -> bool {
    !c.is_whitespace() && !c.is_control() && !"\\/\"'[]:|<>+=;,?*@&%#".contains(c)
}

fn not_underscore(c: char) -> bool {
    c != '_' && machine_character(c)
}

fn not_period_or_hyphen(c: char) -> bool {
    c != '.' && c != '-' && machine_character(c)
}

fn alphanumeric_or_underscore(c: char) -> bool {
    alphanumeric(c) || c == '_'
}

fn disk_character(c: char) -> bool {
    alphanumeric(c) || "_-.".contains(c)
}

/// Virtual machines: up to 64 characters.
pub(crate) static MACHINE_NAMES: Naming = Naming {
    min: 1,
    max: 64,
    allowed: machine_character,
    first: not_underscore,
    last: not_period_or_hyphen,
    rule: "A virtual machine name has 1 to 64 characters, none of them whitespace, control characters or \\/\"'[]:|<>+=;,?*@&%#; it does not start with '_' nor end with '.' or '-'.",
    refuse,
};

/// Extensions: as machines, up to 80 characters.
pub(crate) static EXTENSION_NAMES: Naming = Naming {
    max: 80,
    rule: "An extension name has 1 to 80 characters, none of them whitespace, control characters or \\/\"'[]:|<>+=;,?*@&%#; it does not start with '_' nor end with '.' or '-'.",
    ..MACHINE_NAMES
};

/// Managed disks: up to 80 letters, digits, underscores, hyphens and periods.
pub(crate) static DISK_NAMES: Naming = Naming {
    min: 1,
    max: 80,
    allowed: disk_character,
    first: disk_character,
    last: disk_character,
    rule: "A disk name has 1 to 80 letters, digits, underscores, hyphens and periods.",
    refuse,
};

/// Availability sets: as disks, starting with a letter or digit and ending with one or '_'.
pub(crate) static AVAILABILITY_SET_NAMES: Naming = Naming {
    first: alphanumeric,
    last: alphanumeric_or_underscore,
    rule: "An availability set name has 1 to 80 letters, digits, underscores, periods and hyphens; it starts with a letter or digit and ends with one or '_'.",
    ..DISK_NAMES
};

/// The current time as Microsoft.Compute writes it.
fn now() -> String {
    crate::time::rfc3339(SystemTime::now())
}

/// The availability zones a request asks for, each one of its location's.
fn zones(prepare: &Prepare<'_>) -> Result<Vec<String>, ArmError> {
    let requested = fields::strings(&prepare.doc, "zones", "")?;
    let known = prepare
        .config
        .locations
        .iter()
        .find(|location| location.name == prepare.location)
        .map(|location| location.zones.as_slice())
        .unwrap_or_default();
    for zone in &requested {
        if !known.iter().any(|candidate| candidate == zone) {
            let offered = if known.is_empty() {
                format!("Location '{}' has no availability zones.", prepare.location)
            } else {
                format!(
                    "The zones of location '{}' are '{}'.",
                    prepare.location,
                    known.join(",")
                )
            };
            return Err(ArmError::invalid_parameter(
                "zones",
                format!("The zone '{zone}' in 'zones' is not available. {offered}"),
            ));
        }
    }
    Ok(requested.into_iter().map(str::to_owned).collect())
}

/// The name of a Uniform scale set's instance, `<set>_<instance id>`.
pub(super) fn stored_name(type_name: &str, id: &str) -> Option<String> {
    if !type_name.eq_ignore_ascii_case(scale_sets::INSTANCE.name) {
        return None;
    }
    let mut segments = id.trim_end_matches('/').rsplit('/');
    let instance = segments.next()?;
    let set = segments.nth(1)?;
    Some(format!("{set}_{instance}"))
}

/// What Azure answers when a resource is made from one (`target`) that does not exist.
fn entity_not_found(target: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        "The entity was not found in this Azure location.",
    )
    .with_target(target)
}

/// The stored document a resource is made from (a snapshot, a disk, an image), which must exist
/// and be of one of `types`.
fn source(state: &State, id: &str, types: &[&str]) -> Result<Value, ArmError> {
    state
        .resources
        .get(id.to_ascii_lowercase().as_str())
        .filter(|stored| {
            types
                .iter()
                .any(|name| stored.type_name.eq_ignore_ascii_case(name))
        })
        .map(|stored| stored.body().into_owned())
        .ok_or_else(|| entity_not_found(id))
}

/// Refuses to delete a resource (its key) that still has child resources: a gallery with image
/// definitions, a definition with versions, a capacity reservation group with reservations.
fn refuse_while_nested(state: &State, key: &str) -> Result<(), ArmError> {
    if state.under(&format!("{key}/")).next().is_none() {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::CONFLICT,
        "CannotDeleteResource",
        "Can not delete resource before nested resources are deleted.",
    ))
}

/// An enumerated property the request must set (`osType`, `osState`), kept in its canonical
/// casing.
fn required_choice(
    object: &mut Map<String, Value>,
    key: &str,
    path: &str,
    allowed: &[&'static str],
) -> Result<(), ArmError> {
    let value = fields::one_of(object, key, path, allowed)?
        .ok_or_else(|| fields::missing(&format!("{path}.{key}")))?;
    object.insert(key.to_owned(), Value::String(value.to_owned()));
    Ok(())
}

/// Virtual machines and Uniform scale set instances boot from their custom data.
pub(super) fn boots(type_name: &str) -> bool {
    [&virtual_machines::VIRTUAL_MACHINE, &scale_sets::INSTANCE]
        .iter()
        .any(|machine| machine.name.eq_ignore_ascii_case(type_name))
}

/// The instances of a Uniform scale set (its id, any case), in order of creation.
pub(crate) fn uniform_instances(state: &State, set_id: &str) -> Vec<Value> {
    scale_sets::instances(state, set_id, false)
        .into_iter()
        .map(|(_, instance)| instance)
        .collect()
}

/// A booting machine's power state as its instance view reports it (`running`, `starting`,
/// `stopping`, `stopped`, `deallocating`, `deallocated`).
pub(super) fn power_state(machine: &Value) -> &'static str {
    virtual_machines::power_state(&machine["properties"]).0
}

/// The private IPv4 addresses of a machine's network interfaces: its primary interface first,
/// and within each interface its primary IP configuration first. A Uniform instance keeps its
/// interfaces inside itself; a virtual machine refers to interfaces of its own.
pub(super) fn private_addresses(state: &State, machine: &Value) -> Vec<String> {
    let properties = &machine["properties"];
    let is_primary = |value: Option<&Value>| value == Some(&Value::Bool(true));
    let mut interfaces: Vec<(bool, std::borrow::Cow<'_, Value>)> =
        match properties.get(scale_sets::INTERFACES).and_then(Value::as_array) {
            Some(kept) => kept
                .iter()
                .map(|nic| {
                    (
                        is_primary(nic.pointer("/properties/primary")),
                        std::borrow::Cow::Borrowed(nic),
                    )
                })
                .collect(),
            None => properties
                .pointer("/networkProfile/networkInterfaces")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|reference| {
                    let nic = state.body(&reference["id"].as_str()?.to_ascii_lowercase())?;
                    Some((is_primary(reference.pointer("/properties/primary")), nic))
                })
                .collect(),
        };
    // Stable: unmarked interfaces keep the order the machine lists them in.
    interfaces.sort_by_key(|(primary, _)| !primary);
    let mut addresses = Vec::new();
    for (_, nic) in &interfaces {
        let mut configurations: Vec<&Value> = nic
            .pointer("/properties/ipConfigurations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        configurations.sort_by_key(|configuration| !is_primary(configuration.pointer("/properties/primary")));
        addresses.extend(
            configurations
                .iter()
                .filter_map(|configuration| configuration.pointer("/properties/privateIPAddress")?.as_str())
                .filter(|address| address.parse::<std::net::Ipv4Addr>().is_ok())
                .map(str::to_owned),
        );
    }
    addresses
}
