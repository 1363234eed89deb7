//! Private DNS: zones (global), their links to virtual networks and their record sets. Zones and
//! links are written as the private DNS provider writes them: 202 with an empty body, polled
//! under the resource group (`privateDnsOperationStatuses`, answered 202 while running). Record
//! sets are written at once. A zone comes with its SOA record set, and cannot be deleted while
//! it has links.

use std::net::IpAddr;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::error::ArmError;
use crate::resources::names::Naming;
use crate::resources::{
    BackReferenceStyle, Concurrency, EtagStyle, Flavour, Hooks, Locality, Lro, NO_HOOKS, OperationsAt,
    Prepare, ResourceType, Storage, fields,
};
use crate::state::{State, StatusStyle};

/// The private DNS api-versions: those of the recorded sessions and the SDKs'.
const API_VERSIONS: &[&str] = &["2018-09-01", "2020-01-01", "2020-06-01", "2024-06-01"];

const STATUSES: &str = "privateDnsOperationStatuses";
const RESULTS: &str = "privateDnsOperationResults";

static ZONES: Flavour = Flavour {
    status: StatusStyle::Accepting {
        status: STATUSES,
        result: RESULTS,
    },
    creating: "Creating",
    updating: "Updating",
    status_segment: STATUSES,
    operations: OperationsAt::ResourceGroup { result: RESULTS },
    etag: Some(EtagStyle::Bare),
    provisioning_state: true,
    create_status: StatusCode::CREATED,
    back_references: BackReferenceStyle::WhenPresent,
    settles_unchanged: false,
    concurrency: Concurrency::Conflict,
};

static LINKS: Flavour = Flavour {
    etag: Some(EtagStyle::Quoted),
    ..ZONES
};

/// Record sets: written at once, no provisioning state.
static RECORDS: Flavour = Flavour {
    provisioning_state: false,
    ..ZONES
};

fn dns_character(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'
}

fn dns_edge(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn refuse_name(naming: &Naming, name: &str) -> ArmError {
    ArmError::new(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        format!("The domain name '{name}' is invalid. {}", naming.rule),
    )
}

static ZONE_NAMES: Naming = Naming {
    min: 1,
    max: 253,
    allowed: dns_character,
    first: dns_edge,
    last: dns_edge,
    rule: "A private DNS zone name is a domain name of at least two labels, each of letters, digits, hyphens and underscores.",
    refuse: refuse_name,
};

/// Record set names are relative to the zone; `@` is the zone itself.
static RECORD_NAMES: Naming = Naming {
    first: |c| dns_edge(c) || c == '@' || c == '*',
    rule: "A record set name is '@' or a relative domain name of letters, digits, hyphens and underscores.",
    ..ZONE_NAMES
};

static LINK_NAMES: Naming = Naming {
    max: 80,
    rule: "A virtual network link name has up to 80 letters, digits, hyphens, periods and underscores.",
    ..ZONE_NAMES
};

pub(crate) static ZONE: ResourceType = ResourceType {
    since: &[("internalId", "2024-06-01")],
    location: Locality::Global,
    put: Lro::AcceptedEmpty,
    naming: &ZONE_NAMES,
    hooks: Hooks {
        render: Some(count_zone),
        deletable: Some(refuse_while_linked),
        ..NO_HOOKS
    },
    ..ResourceType::new(
        "Microsoft.Network/privateDnsZones",
        API_VERSIONS,
        &ZONES,
        prepare_zone,
    )
};

pub(crate) static LINK: ResourceType = ResourceType {
    location: Locality::Global,
    put: Lro::AcceptedEmpty,
    naming: &LINK_NAMES,
    // A linked network may be deleted; the link stays, as on Azure.
    weak_references: true,
    ..ResourceType::new(
        "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
        API_VERSIONS,
        &LINKS,
        prepare_link,
    )
};

/// A record set type of a zone.
const fn record_set(name: &'static str) -> ResourceType {
    ResourceType {
        storage: Storage::Document,
        location: Locality::Inherited,
        put: Lro::Sync,
        delete: Lro::Sync,
        naming: &RECORD_NAMES,
        ..ResourceType::new(name, API_VERSIONS, &RECORDS, prepare_record_set)
    }
}

pub(crate) static A: ResourceType = record_set("Microsoft.Network/privateDnsZones/A");
pub(crate) static AAAA: ResourceType = record_set("Microsoft.Network/privateDnsZones/AAAA");
pub(crate) static CNAME: ResourceType = record_set("Microsoft.Network/privateDnsZones/CNAME");
pub(crate) static MX: ResourceType = record_set("Microsoft.Network/privateDnsZones/MX");
pub(crate) static PTR: ResourceType = record_set("Microsoft.Network/privateDnsZones/PTR");
pub(crate) static SOA: ResourceType = record_set("Microsoft.Network/privateDnsZones/SOA");
pub(crate) static SRV: ResourceType = record_set("Microsoft.Network/privateDnsZones/SRV");
pub(crate) static TXT: ResourceType = record_set("Microsoft.Network/privateDnsZones/TXT");

/// Azure's limits on a zone, shown on it.
const LIMITS: [(&str, u32); 3] = [
    ("maxNumberOfRecordSets", 25_000),
    ("maxNumberOfVirtualNetworkLinks", 1_000),
    ("maxNumberOfVirtualNetworkLinksWithRegistration", 100),
];

fn prepare_zone(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let name = prepare.id.name();
    if name.split('.').filter(|label| !label.is_empty()).count() < 2 {
        return Err(refuse_name(&ZONE_NAMES, name));
    }
    for (limit, value) in LIMITS {
        prepare.properties()?.insert(limit.into(), json!(value));
    }
    prepare.keep("internalId", || {
        use base64::Engine;
        json!(
            base64::engine::general_purpose::STANDARD.encode(format!("PrivateZone;{}", uuid::Uuid::new_v4()))
        )
    })?;
    if prepare.existing.is_none() {
        let zone = prepare.id.to_id();
        prepare.companions.push(json!({
            "id": format!("{zone}/SOA/@"),
            "name": "@",
            "type": SOA.name,
            "properties": {
                "fqdn": format!("{name}."),
                "ttl": 3600,
                "isAutoRegistered": false,
                "soaRecord": {
                    "email": "azureprivatedns-host.microsoft.com",
                    "expireTime": 2_419_200,
                    "host": "azureprivatedns.net",
                    "minimumTtl": 10,
                    "refreshTime": 3600,
                    "retryTime": 300,
                    "serialNumber": 1,
                },
            },
        }));
    }
    Ok(())
}

/// The zone of a record set or link id: the id up to its name.
fn zone_key(id: &str) -> String {
    let lower = id.to_ascii_lowercase();
    let marker = "/privatednszones/";
    match lower.find(marker) {
        Some(at) => {
            let rest = &lower[at + marker.len()..];
            let end = rest
                .find('/')
                .map_or(lower.len(), |slash| at + marker.len() + slash);
            lower[..end].to_owned()
        }
        None => lower,
    }
}

fn is_link(type_name: &str) -> bool {
    type_name == LINK.name
}

/// Fills in the counts Azure keeps on a zone.
fn count_zone(state: &State, zone: &mut Value) {
    let key = zone["id"].as_str().map(zone_key).unwrap_or_default();
    let prefix = format!("{key}/");
    let (mut records, mut links, mut registering) = (0_u64, 0_u64, 0_u64);
    for (_, stored) in state.under(&prefix) {
        if is_link(stored.type_name) {
            links += 1;
            if stored.body()["properties"]["registrationEnabled"] == json!(true) {
                registering += 1;
            }
        } else {
            records += 1;
        }
    }
    if let Some(properties) = zone.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("numberOfRecordSets".into(), json!(records));
        properties.insert("numberOfVirtualNetworkLinks".into(), json!(links));
        properties.insert(
            "numberOfVirtualNetworkLinksWithRegistration".into(),
            json!(registering),
        );
    }
}

/// What `name` (lower case, no trailing dot) resolves to for a machine in `network` (a lower-case
/// id): the addresses of its A and AAAA record sets in every private zone that holds the name and
/// is linked to that network. A zone no link joins to the network is not consulted, as Azure's
/// resolver answers a network only from the zones linked to it.
pub(crate) fn addresses_from(state: &State, network: &str, name: &str) -> Vec<IpAddr> {
    let mut found = Vec::new();
    for (key, stored) in &state.resources {
        if stored.type_name != ZONE.name {
            continue;
        }
        let zone = key.rsplit('/').next().unwrap_or_default();
        let label = if name == zone {
            "@"
        } else {
            match name.strip_suffix(zone).and_then(|rest| rest.strip_suffix('.')) {
                Some(label) => label,
                None => continue,
            }
        };
        let linked = state
            .under(&format!("{key}/virtualnetworklinks/"))
            .any(|(_, link)| {
                link.body()
                    .pointer("/properties/virtualNetwork/id")
                    .and_then(Value::as_str)
                    .is_some_and(|linked| linked.eq_ignore_ascii_case(network))
            });
        if !linked {
            continue;
        }
        for (set, records, field) in [
            ("a", "aRecords", "ipv4Address"),
            ("aaaa", "aaaaRecords", "ipv6Address"),
        ] {
            let Some(body) = state.body(&format!("{key}/{set}/{label}")) else {
                continue;
            };
            found.extend(
                body.pointer(&format!("/properties/{records}"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|record| record[field].as_str()?.parse::<IpAddr>().ok()),
            );
        }
    }
    found
}

/// Azure refuses to delete a zone that still has virtual network links.
fn refuse_while_linked(state: &State, key: &str) -> Result<(), ArmError> {
    let prefix = format!("{key}/");
    let linked: Vec<String> = state
        .under(&prefix)
        .filter(|(_, stored)| is_link(stored.type_name))
        .filter_map(|(_, stored)| {
            let id = stored.body()["id"].as_str()?.to_owned();
            let at = id.to_ascii_lowercase().find("microsoft.network/")?;
            Some(id[at..].to_owned())
        })
        .collect();
    if linked.is_empty() {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::CONFLICT,
        "CannotDeleteResource",
        format!(
            "Cannot delete resource while nested resources exist. Some existing nested resource IDs include: '{}'. Please delete all nested resources before deleting this resource.",
            linked.join("', '")
        ),
    ))
}

fn prepare_link(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    if fields::reference(&properties, "virtualNetwork", "properties")?.is_none() {
        return Err(fields::missing("properties.virtualNetwork"));
    }
    let registration = properties
        .get("registrationEnabled")
        .filter(|value| !value.is_null());
    if registration.is_some_and(|value| !value.is_boolean()) {
        return Err(fields::wrong_type("properties.registrationEnabled", "a boolean"));
    }
    prepare.default("registrationEnabled", json!(false))?;
    prepare
        .properties()?
        .insert("virtualNetworkLinkState".into(), json!("Completed"));
    Ok(())
}

/// The record property each type carries, and whether it holds many records.
const RECORD_PROPERTIES: &[(&str, &str, bool)] = &[
    ("A", "aRecords", true),
    ("AAAA", "aaaaRecords", true),
    ("CNAME", "cnameRecord", false),
    ("MX", "mxRecords", true),
    ("PTR", "ptrRecords", true),
    ("SOA", "soaRecord", false),
    ("SRV", "srvRecords", true),
    ("TXT", "txtRecords", true),
];

fn prepare_record_set(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let record_type = prepare
        .id
        .types
        .last()
        .cloned()
        .unwrap_or_default()
        .to_ascii_uppercase();
    let properties = prepare.properties()?.clone();
    if fields::integer(&properties, "ttl", "properties")?
        .is_some_and(|ttl| !(0..=2_147_483_647).contains(&ttl))
    {
        return Err(ArmError::invalid_parameter(
            "properties.ttl",
            "The TTL of a record set must lie between 0 and 2147483647 seconds.",
        ));
    }
    for (address_type, property, field, v4) in [
        ("A", "aRecords", "ipv4Address", true),
        ("AAAA", "aaaaRecords", "ipv6Address", false),
    ] {
        if record_type != address_type {
            continue;
        }
        for (index, record) in fields::array(&properties, property, "properties")?
            .iter()
            .enumerate()
        {
            let path = format!("properties.{property}[{index}].{field}");
            let address = record
                .get(field)
                .and_then(Value::as_str)
                .and_then(|a| a.parse::<IpAddr>().ok());
            if address.is_none_or(|address| address.is_ipv4() != v4) {
                return Err(ArmError::invalid_parameter(
                    &path,
                    format!(
                        "The value of '{path}' must be an {} address.",
                        if v4 { "IPv4" } else { "IPv6" }
                    ),
                ));
            }
        }
    }
    // Other types' records are not accepted on this one.
    for (other, property, _) in RECORD_PROPERTIES {
        if *other != record_type && properties.get(*property).is_some_and(|value| !value.is_null()) {
            return Err(ArmError::invalid_parameter(
                &format!("properties.{property}"),
                format!("A record set of type {record_type} cannot carry '{property}'."),
            ));
        }
    }
    let zone = prepare.id.names.first().cloned().unwrap_or_default();
    let name = prepare.id.name();
    let fqdn = if name == "@" {
        format!("{zone}.")
    } else {
        format!("{name}.{zone}.")
    };
    prepare.default("ttl", json!(3600))?;
    let properties = prepare.properties()?;
    properties.insert("fqdn".into(), json!(fqdn));
    properties.insert("isAutoRegistered".into(), json!(false));
    Ok(())
}
