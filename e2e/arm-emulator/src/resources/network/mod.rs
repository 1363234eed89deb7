//! Microsoft.Network: virtual networks with their subnets and peerings, security groups, route
//! tables, NAT gateways, public IP addresses and prefixes, load balancers, network interfaces,
//! bastion hosts, private DNS, private endpoints and private link services.

mod addresses;
pub(crate) mod bastion_hosts;
mod load_balancers;
mod nat_gateways;
mod network_interfaces;
mod peerings;
mod private_dns;
mod private_endpoints;
mod public_ips;
mod route_tables;
mod security_groups;
mod virtual_networks;

use serde_json::Value;

use super::names::Naming;
use super::{
    BackReferenceStyle, Concurrency, EtagStyle, Flavour, Locality, OperationsAt, Prepare, ResourceType,
    Storage,
};
use crate::error::ArmError;
use crate::state::StatusStyle;

/// Every Microsoft.Network api-version the emulator serves: those in the recorded sessions, the
/// ones capz-rs and the Azure SDK for Go pin, and the Python SDK defaults (azure-mgmt-network 33:
/// 2026-03-01).
pub(crate) const API_VERSIONS: &[&str] = &[
    "2020-06-01",
    "2020-07-01",
    "2020-08-01",
    "2020-11-01",
    "2021-02-01",
    "2021-03-01",
    "2021-05-01",
    "2021-08-01",
    "2022-01-01",
    "2022-05-01",
    "2022-07-01",
    "2022-09-01",
    "2022-11-01",
    "2023-02-01",
    "2023-04-01",
    "2023-05-01",
    "2023-06-01",
    "2023-09-01",
    "2023-11-01",
    "2024-01-01",
    "2024-03-01",
    "2024-05-01",
    "2024-07-01",
    "2024-10-01",
    "2025-01-01",
    "2025-03-01",
    "2025-05-01",
    "2025-07-01",
    "2025-09-01",
    "2026-03-01",
];

/// The api-versions of interfaces read under a scale set's path: the network's, and 2018-10-01,
/// which the SDKs' scale set interface operations still pin.
pub(crate) const INTERFACE_API_VERSIONS: &[&str] = &[
    "2018-10-01",
    "2020-06-01",
    "2020-11-01",
    "2021-02-01",
    "2022-01-01",
    "2022-07-01",
    "2023-02-01",
    "2023-05-01",
    "2023-09-01",
    "2024-01-01",
    "2024-03-01",
    "2024-05-01",
    "2024-07-01",
    "2025-03-01",
    "2026-03-01",
];

/// Network resources answer writes with `Azure-AsyncOperation`, show `Updating` while they are
/// created and carry etags.
pub(crate) static NETWORK: Flavour = Flavour {
    status: StatusStyle::Plain,
    creating: "Updating",
    updating: "Updating",
    status_segment: "operations",
    operations: OperationsAt::Location {
        result: "operationResults",
    },
    etag: Some(EtagStyle::Weak),
    provisioning_state: true,
    create_status: axum::http::StatusCode::CREATED,
    back_references: BackReferenceStyle::WhenPresent,
    settles_unchanged: true,
    concurrency: Concurrency::Refused,
};

/// A word character as .NET regular expressions mean it: a letter, a digit or an underscore.
fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn word_dot_or_hyphen(c: char) -> bool {
    word(c) || c == '.' || c == '-'
}

/// Microsoft.Network's names, parent and child resources alike.
static NAMES: Naming = Naming {
    min: 1,
    max: 80,
    allowed: word_dot_or_hyphen,
    first: word,
    last: word,
    rule: "The name can be up to 80 characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'.",
    refuse: refuse_name,
};

/// The network resource provider's own wording, with its (empty) details.
fn refuse_name(naming: &Naming, name: &str) -> ArmError {
    ArmError {
        details: Some(Vec::new()),
        ..ArmError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "InvalidResourceName",
            format!("Resource name {name} is invalid. {}", naming.rule),
        )
    }
}

/// A top-level network resource.
const fn document(
    name: &'static str,
    in_use_code: &'static str,
    back_references: &'static [super::BackReference],
    prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
) -> ResourceType {
    ResourceType {
        in_use_code,
        back_references,
        naming: &NAMES,
        ..ResourceType::new(name, API_VERSIONS, &NETWORK, prepare)
    }
}

/// A network child resource embedded in its parent's document under `property`.
const fn embedded(
    name: &'static str,
    property: &'static str,
    in_use_code: &'static str,
    back_references: &'static [super::BackReference],
    prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
) -> ResourceType {
    ResourceType {
        storage: Storage::Embedded { property },
        location: Locality::Inherited,
        ..document(name, in_use_code, back_references, prepare)
    }
}

/// Every Microsoft.Network type served.
/// The types whose documents address allocation scans.
pub(crate) static SCANNED: &[&ResourceType] = &[&public_ips::PUBLIC_IP, &public_ips::PUBLIC_IP_PREFIX];

pub(crate) static TYPES: &[&ResourceType] = &[
    &virtual_networks::VIRTUAL_NETWORK,
    &virtual_networks::SUBNET,
    &peerings::PEERING,
    &security_groups::SECURITY_GROUP,
    &security_groups::SECURITY_RULE,
    &route_tables::ROUTE_TABLE,
    &route_tables::ROUTE,
    &nat_gateways::NAT_GATEWAY,
    &public_ips::PUBLIC_IP,
    &public_ips::PUBLIC_IP_PREFIX,
    &load_balancers::LOAD_BALANCER,
    &load_balancers::FRONTEND,
    &load_balancers::BACKEND_POOL,
    &load_balancers::RULE,
    &load_balancers::PROBE,
    &load_balancers::INBOUND_NAT_RULE,
    &load_balancers::OUTBOUND_RULE,
    &load_balancers::INBOUND_NAT_POOL,
    &network_interfaces::NETWORK_INTERFACE,
    &network_interfaces::IP_CONFIGURATION,
    &bastion_hosts::BASTION_HOST,
    &bastion_hosts::IP_CONFIGURATION,
    &private_dns::ZONE,
    &private_dns::LINK,
    &private_dns::A,
    &private_dns::AAAA,
    &private_dns::CNAME,
    &private_dns::MX,
    &private_dns::PTR,
    &private_dns::SOA,
    &private_dns::SRV,
    &private_dns::TXT,
    &private_endpoints::PRIVATE_ENDPOINT,
    &private_endpoints::CONNECTION,
    &private_endpoints::MANUAL_CONNECTION,
    &private_endpoints::DNS_ZONE_GROUP,
    &private_endpoints::PRIVATE_LINK_SERVICE,
    &private_endpoints::LINK_SERVICE_IP_CONFIGURATION,
];

pub(crate) use load_balancers::LOAD_BALANCER;
pub(crate) use peerings::reaches;
pub(crate) use private_dns::addresses_from;
pub(crate) use private_endpoints::show_endpoint_connections;
pub(crate) use public_ips::PUBLIC_IP;
pub(crate) use virtual_networks::VIRTUAL_NETWORK;

/// Hands out free private IPv4 addresses of subnets to interfaces one write creates (a scale
/// set's instances and machines), none twice.
#[derive(Default)]
pub(crate) struct Addresses {
    handed: Vec<std::net::IpAddr>,
}

impl Addresses {
    /// The next free address of `subnet` for the interface `holder`; a subnet of a network in
    /// `staged` (built by the same write, not yet stored) is looked up there.
    pub(crate) fn next(
        &mut self,
        state: &crate::state::State,
        staged: &[Value],
        subnet: &str,
        holder: &str,
    ) -> Result<String, ArmError> {
        let address = match staged_subnet(staged, subnet) {
            Some(range) => (4..range.size())
                .filter_map(|index| range.host(index))
                .find(|address| !self.handed.contains(address))
                .ok_or_else(|| {
                    ArmError::invalid_parameter("properties.subnet", format!("Subnet {subnet} is full."))
                })?,
            None => addresses::private_address_besides(
                state,
                subnet,
                false,
                None,
                holder,
                "properties.subnet",
                &self.handed,
            )?,
        };
        self.handed.push(address);
        Ok(address.to_string())
    }
}

/// The IPv4 prefix of a subnet of one of the `staged` networks.
fn staged_subnet(staged: &[Value], subnet: &str) -> Option<crate::ip::Cidr> {
    let (network, name) = subnet.rsplit_once("/subnets/")?;
    let document = staged.iter().find(|document| {
        document["id"]
            .as_str()
            .is_some_and(|id| id.eq_ignore_ascii_case(network))
    })?;
    let subnet = super::embedded::find_any_case(document, "subnets", name)?;
    virtual_networks::subnet_prefixes(subnet)
        .into_iter()
        .find(crate::ip::Cidr::is_ipv4)
}

/// Marks the parts under `property` `Succeeded`: Azure has them ready when it answers the write
/// of their parent, which is still in progress.
fn parts_succeeded(doc: &mut Value, property: &str) {
    let Some(parts) = doc
        .pointer_mut(&format!("/properties/{property}"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for part in parts {
        if let Some(properties) = part.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert("provisioningState".into(), Value::String("Succeeded".into()));
        }
    }
}

/// A fresh `resourceGuid`, kept across updates.
fn resource_guid(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare.keep("resourceGuid", || Value::String(uuid::Uuid::new_v4().to_string()))
}

/// The SKU of a network resource: the requested name in its canonical casing (or `default`), with
/// tier `Regional` unless requested otherwise.
fn sku(
    prepare: &mut Prepare<'_>,
    names: &[&'static str],
    default: &'static str,
) -> Result<&'static str, ArmError> {
    let requested = super::fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let name = super::fields::one_of(&requested, "name", "sku", names)?.unwrap_or(default);
    let tier =
        super::fields::one_of(&requested, "tier", "sku", &["Regional", "Global"])?.unwrap_or("Regional");
    prepare
        .doc
        .insert("sku".into(), serde_json::json!({ "name": name, "tier": tier }));
    Ok(name)
}
