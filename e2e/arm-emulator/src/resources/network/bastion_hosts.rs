//! Azure Bastion hosts. A host lives in its network's `AzureBastionSubnet` (a /27 or larger; a
//! Standard host with more than two scale units needs a /26) with a Standard, static public IP;
//! the subnet's security group, when it has one, must carry the rules Bastion needs, which Azure
//! checks when the group is attached to the subnet.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::{document, embedded, virtual_networks};
use crate::error::ArmError;
use crate::resources::{Prepare, ResourceType, fields};

pub(crate) static BASTION_HOST: ResourceType = ResourceType {
    shown_when_provisioned: &["dnsName"],
    since: &[("publicUri", "2025-03-01")],
    finish: |host| super::parts_succeeded(host, "ipConfigurations"),
    ..document(
        "Microsoft.Network/bastionHosts",
        "InUseResourceCannotBeDeleted",
        &[],
        prepare_host,
    )
};

pub(crate) static IP_CONFIGURATION: ResourceType = embedded(
    "Microsoft.Network/bastionHosts/bastionHostIpConfigurations",
    "ipConfigurations",
    "InUseResourceCannotBeDeleted",
    &[],
    prepare_ip_configuration,
);

/// The one subnet name Bastion accepts.
pub(crate) const SUBNET_NAME: &str = "AzureBastionSubnet";

const SKUS: &[&str] = &["Developer", "Basic", "Standard", "Premium"];

/// The longest prefix Bastion accepts, and the longest for hosts that scale past two units.
const SMALLEST_SUBNET: u8 = 27;
const SMALLEST_SCALING_SUBNET: u8 = 26;

fn prepare_host(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let requested = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let sku = fields::one_of(&requested, "name", "sku", SKUS)?.unwrap_or("Basic");
    prepare.doc.insert("sku".into(), json!({ "name": sku }));
    let properties = prepare.properties()?.clone();
    let units = fields::integer(&properties, "scaleUnits", "properties")?.unwrap_or(2);
    let largest = if matches!(sku, "Standard" | "Premium") {
        50
    } else {
        2
    };
    if !(2..=largest).contains(&units) {
        return Err(ArmError::invalid_parameter(
            "properties.scaleUnits",
            format!(
                "The scale units {units} of a {sku} bastion host must be between 2 and {largest}; only Standard and Premium hosts scale."
            ),
        ));
    }
    prepare.properties()?.insert("scaleUnits".into(), json!(units));
    let configurations = fields::array(&properties, "ipConfigurations", "properties")?;
    if sku != "Developer" && configurations.len() != 1 {
        return Err(ArmError::invalid_parameter(
            "properties.ipConfigurations",
            format!(
                "A {sku} bastion host needs exactly one IP configuration, with its subnet and public IP address."
            ),
        ));
    }
    for (index, configuration) in configurations.iter().enumerate() {
        let path = format!("properties.ipConfigurations[{index}].properties");
        let configuration = configuration
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        check_subnet(prepare, &configuration, &path, units)?;
        check_public_ip(prepare, &configuration, &path)?;
    }
    if let Some(public_ip) = configurations
        .first()
        .and_then(|configuration| configuration.pointer("/properties/publicIPAddress/id"))
    {
        // Azure names the host's public IP here.
        prepare
            .properties()?
            .insert("publicUri".into(), public_ip.clone());
    }
    prepare.keep("dnsName", || {
        json!(format!("bst-{}.bastion.azure.com", uuid::Uuid::new_v4()))
    })
}

fn check_subnet(
    prepare: &Prepare<'_>,
    configuration: &Map<String, Value>,
    path: &str,
    units: i64,
) -> Result<(), ArmError> {
    let Some(subnet) = fields::reference(configuration, "subnet", path)? else {
        return Err(fields::missing(&format!("{path}.subnet")));
    };
    let name = subnet.rsplit('/').next().unwrap_or_default();
    if !name.eq_ignore_ascii_case(SUBNET_NAME) {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "SubnetNameMustBeAzureBastionSubnet",
            format!(
                "Subnet name {subnet} is invalid for Azure Bastion. Azure Bastion can only be created in subnet with name '{SUBNET_NAME}'."
            ),
        ));
    }
    let lower = subnet.to_ascii_lowercase();
    let Some((network, _)) = lower.rsplit_once("/subnets/") else {
        return Ok(());
    };
    let Some(network) = prepare.state.body(network) else {
        // A missing subnet is refused with the other references.
        return Ok(());
    };
    let Some(stored) = super::super::embedded::find(&network, "subnets", SUBNET_NAME) else {
        return Ok(());
    };
    let smallest = if units > 2 {
        SMALLEST_SCALING_SUBNET
    } else {
        SMALLEST_SUBNET
    };
    if let Some(prefix) = virtual_networks::subnet_prefixes(stored)
        .into_iter()
        .find(|prefix| prefix.is_ipv4() && prefix.length() > smallest)
    {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "AzureBastionSubnetPrefixTooSmall",
            format!(
                "The prefix {prefix} of subnet {SUBNET_NAME} is too small for this bastion host: it needs a /{smallest} or larger."
            ),
        ));
    }
    Ok(())
}

fn check_public_ip(
    prepare: &Prepare<'_>,
    configuration: &Map<String, Value>,
    path: &str,
) -> Result<(), ArmError> {
    let Some(address) = fields::reference(configuration, "publicIPAddress", path)? else {
        return Err(fields::missing(&format!("{path}.publicIPAddress")));
    };
    let Some(stored) = prepare.state.body(&address.to_ascii_lowercase()) else {
        return Ok(());
    };
    let sku = stored
        .pointer("/sku/name")
        .and_then(Value::as_str)
        .unwrap_or("Basic");
    let allocation = stored
        .pointer("/properties/publicIPAllocationMethod")
        .and_then(Value::as_str)
        .unwrap_or("Dynamic");
    if !sku.eq_ignore_ascii_case("Standard") || !allocation.eq_ignore_ascii_case("Static") {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "BastionHostPublicIpMustBeStandardStatic",
            format!(
                "Public IP address {address} is {sku} with {allocation} allocation; a bastion host needs a Standard public IP address with Static allocation."
            ),
        ));
    }
    Ok(())
}

fn prepare_ip_configuration(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare.default("privateIPAllocationMethod", json!("Dynamic"))
}

/// The rules Bastion needs on its subnet's security group: (direction, the other end's address
/// tag, destination ports).
const REQUIRED_RULES: &[(&str, &str, &[u32])] = &[
    ("Inbound", "Internet", &[443]),
    ("Inbound", "GatewayManager", &[443]),
    ("Inbound", "AzureLoadBalancer", &[443]),
    ("Inbound", "VirtualNetwork", &[8080, 5701]),
    ("Outbound", "VirtualNetwork", &[22, 3389, 8080, 5701]),
    ("Outbound", "AzureCloud", &[443]),
    ("Outbound", "Internet", &[80]),
];

/// Refuses a security group on `AzureBastionSubnet` that lacks a rule Bastion needs.
pub(crate) fn check_security_group(group: &Value, subnet: &str) -> Result<(), ArmError> {
    let rules = super::super::embedded::all(group, "securityRules");
    let allows = |direction: &str, tag: &str, port: u32| {
        rules.iter().any(|rule| {
            let properties = &rule["properties"];
            let text = |name: &str| properties[name].as_str().unwrap_or_default();
            let (single, many) = if direction == "Inbound" {
                ("sourceAddressPrefix", "sourceAddressPrefixes")
            } else {
                ("destinationAddressPrefix", "destinationAddressPrefixes")
            };
            let addresses = strings(properties, single, many);
            let ports = strings(properties, "destinationPortRange", "destinationPortRanges");
            text("access").eq_ignore_ascii_case("Allow")
                && text("direction").eq_ignore_ascii_case(direction)
                && addresses.iter().any(|a| *a == "*" || a.eq_ignore_ascii_case(tag))
                && ports.iter().any(|range| port_in(range, port))
        })
    };
    let missing: Vec<String> = REQUIRED_RULES
        .iter()
        .flat_map(|(direction, tag, ports)| {
            ports
                .iter()
                .filter(move |port| !allows(direction, tag, **port))
                .map(move |port| format!("{direction} {tag} port {port}"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let name = group["name"].as_str().unwrap_or_default();
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        "NetworkSecurityGroupNotCompliantForAzureBastionSubnet",
        format!(
            "Network security group {name} does not have necessary rules for Azure Bastion Subnet {subnet}. Missing: {}.",
            missing.join(", ")
        ),
    ))
}

fn strings<'a>(properties: &'a Value, single: &str, many: &str) -> Vec<&'a str> {
    properties[single]
        .as_str()
        .into_iter()
        .chain(
            properties[many]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        )
        .collect()
}

/// Whether a port range (`*`, `443` or `8080-8090`) covers a port.
fn port_in(range: &str, port: u32) -> bool {
    if range == "*" {
        return true;
    }
    match range.split_once('-') {
        Some((low, high)) => {
            low.trim().parse().is_ok_and(|low: u32| low <= port)
                && high.trim().parse().is_ok_and(|high: u32| port <= high)
        }
        None => range.trim().parse() == Ok(port),
    }
}
