//! Virtual networks and their subnets. Subnets live inside the virtual network's document; their
//! prefixes must lie inside the network's address space and must not overlap.

use serde_json::{Value, json};

use super::{document, embedded, resource_guid};
use crate::error::ArmError;
use crate::ip::Cidr;
use crate::resources::{BackReference, Prepare, ResourceType, fields};

pub(crate) static VIRTUAL_NETWORK: ResourceType = ResourceType {
    since: &[("privateEndpointVNetPolicies", "2024-03-01")],
    ..document(
        "Microsoft.Network/virtualNetworks",
        "InUseVirtualNetworkCannotBeDeleted",
        &[],
        prepare_network,
    )
};

pub(crate) static SUBNET: ResourceType = embedded(
    "Microsoft.Network/virtualNetworks/subnets",
    "subnets",
    "InUseSubnetCannotBeDeleted",
    &[
        BackReference {
            property: "ipConfigurations",
            from: &[
                "Microsoft.Network/networkInterfaces/ipConfigurations",
                "Microsoft.Network/loadBalancers/frontendIPConfigurations",
                "Microsoft.Network/bastionHosts/bastionHostIpConfigurations",
                "Microsoft.Network/privateLinkServices/ipConfigurations",
            ],
            many: true,
        },
        super::private_endpoints::ENDPOINTS_IN_SUBNET,
    ],
    prepare_subnet,
);

fn cidr(text: &str, property: &str) -> Result<Cidr, ArmError> {
    Cidr::parse(text).ok_or_else(|| {
        ArmError::invalid_parameter(
            property,
            format!("The address prefix '{text}' of '{property}' is not a valid CIDR prefix."),
        )
    })
}

/// The address space of a virtual network body.
fn address_space(properties: &serde_json::Map<String, Value>) -> Result<Vec<Cidr>, ArmError> {
    let space = fields::object(properties, "addressSpace", "properties")?
        .ok_or_else(|| fields::missing("properties.addressSpace"))?;
    let prefixes = fields::strings(space, "addressPrefixes", "properties.addressSpace")?;
    if prefixes.is_empty() {
        return Err(fields::missing("properties.addressSpace.addressPrefixes"));
    }
    prefixes
        .iter()
        .map(|prefix| cidr(prefix, "properties.addressSpace.addressPrefixes"))
        .collect()
}

/// The prefixes of a subnet body (`addressPrefix` and/or `addressPrefixes`).
pub(crate) fn subnet_prefixes(subnet: &Value) -> Vec<Cidr> {
    let Some(properties) = subnet.get("properties") else {
        return Vec::new();
    };
    let single = properties.get("addressPrefix").and_then(Value::as_str);
    let many = properties
        .get("addressPrefixes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    single.into_iter().chain(many).filter_map(Cidr::parse).collect()
}

fn requested_prefixes(
    properties: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<Vec<Cidr>, ArmError> {
    let mut prefixes = Vec::new();
    if let Some(prefix) = fields::string(properties, "addressPrefix", path)? {
        prefixes.push(cidr(prefix, &format!("{path}.addressPrefix"))?);
    }
    for prefix in fields::strings(properties, "addressPrefixes", path)? {
        prefixes.push(cidr(prefix, &format!("{path}.addressPrefixes"))?);
    }
    Ok(prefixes)
}

/// Checks subnets against the network's space and each other: (name, prefixes) pairs.
fn check_layout(network: &str, space: &[Cidr], subnets: &[(String, Vec<Cidr>)]) -> Result<(), ArmError> {
    for (index, (name, prefixes)) in subnets.iter().enumerate() {
        for prefix in prefixes {
            if !space.iter().any(|range| range.contains(prefix)) {
                return Err(ArmError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "NetcfgSubnetRangeOutsideVnet",
                    format!(
                        "Subnet '{name}' is not valid because its IP address range {prefix} is outside the IP address range of virtual network '{network}'."
                    ),
                ));
            }
            if let Some((other, _)) = subnets[..index]
                .iter()
                .find(|(_, others)| others.iter().any(|other| other.overlaps(prefix)))
            {
                return Err(ArmError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "NetcfgSubnetRangesOverlap",
                    format!(
                        "Subnet '{name}' is not valid because its IP address range {prefix} overlaps with that of subnet '{other}'."
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn prepare_network(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let space = address_space(&properties)?;
    let mut layout = Vec::new();
    for (index, subnet) in fields::array(&properties, "subnets", "properties")?
        .iter()
        .enumerate()
    {
        let path = format!("properties.subnets[{index}]");
        let name = subnet
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let subnet_properties = subnet
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        layout.push((
            name,
            requested_prefixes(&subnet_properties, &format!("{path}.properties"))?,
        ));
    }
    check_layout(prepare.id.name(), &space, &layout)?;
    resource_guid(prepare)?;
    prepare.default("enableDdosProtection", json!(false))?;
    prepare.default("privateEndpointVNetPolicies", json!("Disabled"))?;
    // Peerings are their own resources; a PUT of the network keeps them.
    prepare.keep("virtualNetworkPeerings", || json!([]))?;
    Ok(())
}

/// Regions paired for disaster recovery, among those a configuration usually names; service
/// endpoints of Microsoft.Storage reach the subnet's region and its pair.
const PAIRED_REGIONS: &[(&str, &str)] = &[
    ("eastus", "westus"),
    ("eastus2", "centralus"),
    ("westus2", "westcentralus"),
    ("westus3", "eastus"),
    ("northcentralus", "southcentralus"),
    ("westeurope", "northeurope"),
    ("uksouth", "ukwest"),
    ("francecentral", "francesouth"),
    ("germanywestcentral", "germanynorth"),
    ("swedencentral", "swedensouth"),
    ("japaneast", "japanwest"),
    ("australiaeast", "australiasoutheast"),
    ("southeastasia", "eastasia"),
    ("canadacentral", "canadaeast"),
];

/// The regions a service endpoint reaches when the request names none, as Azure fills them in:
/// Microsoft.Storage the subnet's region and its pair, Microsoft.Sql the subnet's region, every
/// other service (Microsoft.Storage.Global included) all regions.
fn default_endpoint_locations(service: &str, location: &str) -> Vec<String> {
    if service.eq_ignore_ascii_case("Microsoft.Storage") {
        let pair = PAIRED_REGIONS.iter().find_map(|(one, other)| {
            if *one == location {
                Some(*other)
            } else if *other == location {
                Some(*one)
            } else {
                None
            }
        });
        std::iter::once(location).chain(pair).map(str::to_owned).collect()
    } else if service.eq_ignore_ascii_case("Microsoft.Sql") {
        vec![location.to_owned()]
    } else {
        vec!["*".to_owned()]
    }
}

/// The requested service endpoints, each with its provisioning state and the regions it reaches.
fn service_endpoints(
    properties: &serde_json::Map<String, Value>,
    location: &str,
) -> Result<Vec<Value>, ArmError> {
    fields::array(properties, "serviceEndpoints", "properties")?
        .iter()
        .enumerate()
        .map(|(index, endpoint)| {
            let path = format!("properties.serviceEndpoints[{index}]");
            let object = endpoint
                .as_object()
                .ok_or_else(|| fields::wrong_type(&path, "an object"))?;
            let service = fields::required_string(object, "service", &path)?;
            let requested = fields::strings(object, "locations", &path)?;
            let locations = if requested.is_empty() {
                default_endpoint_locations(service, location)
            } else {
                requested.into_iter().map(str::to_owned).collect()
            };
            let mut endpoint = object.clone();
            endpoint.insert("locations".into(), json!(locations));
            endpoint.insert("provisioningState".into(), json!("Succeeded"));
            Ok(Value::Object(endpoint))
        })
        .collect()
}

fn prepare_subnet(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let prefixes = requested_prefixes(&properties, "properties")?;
    if prefixes.is_empty() {
        return Err(ArmError::invalid_parameter(
            "properties.addressPrefix",
            "A subnet needs 'properties.addressPrefix' or 'properties.addressPrefixes'.",
        ));
    }
    // A subnet written on its own is checked against the stored network and its siblings.
    if let Some(network) = prepare
        .id
        .parent()
        .and_then(|parent| prepare.state.body(&parent.key()))
    {
        let network_properties = network["properties"].as_object().cloned().unwrap_or_default();
        let space = address_space(&network_properties)?;
        let mut layout: Vec<(String, Vec<Cidr>)> = super::super::embedded::all(&network, "subnets")
            .iter()
            .filter(|sibling| {
                !sibling["name"]
                    .as_str()
                    .unwrap_or_default()
                    .eq_ignore_ascii_case(prepare.id.name())
            })
            .map(|sibling| {
                (
                    sibling["name"].as_str().unwrap_or_default().to_owned(),
                    subnet_prefixes(sibling),
                )
            })
            .collect();
        layout.push((prepare.id.name().to_owned(), prefixes));
        let network_name = network["name"].as_str().unwrap_or_default().to_owned();
        check_layout(&network_name, &space, &layout)?;
    }
    let delegations: Vec<Value> = fields::array(&properties, "delegations", "properties")?
        .iter()
        .enumerate()
        .map(|(index, delegation)| {
            let path = format!("properties.delegations[{index}]");
            let object = delegation
                .as_object()
                .ok_or_else(|| fields::wrong_type(&path, "an object"))?;
            let name = fields::required_string(object, "name", &path)?;
            let mut delegation = delegation.clone();
            delegation["id"] = json!(format!("{}/delegations/{name}", prepare.id.to_id()));
            delegation["type"] = json!("Microsoft.Network/virtualNetworks/subnets/delegations");
            let service = delegation
                .pointer("/properties/serviceName")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let Some(service) = service else {
                return Err(fields::missing(&format!("{path}.properties.serviceName")));
            };
            delegation["properties"] = json!({
                "provisioningState": "Succeeded",
                "serviceName": service,
                "actions": ["Microsoft.Network/virtualNetworks/subnets/action"],
            });
            Ok(delegation)
        })
        .collect::<Result<_, ArmError>>()?;
    prepare
        .properties()?
        .insert("delegations".into(), Value::Array(delegations));
    // Azure shows service endpoints only on subnets that asked for them.
    if properties
        .get("serviceEndpoints")
        .is_some_and(|value| !value.is_null())
    {
        let endpoints = service_endpoints(&properties, prepare.location)?;
        prepare
            .properties()?
            .insert("serviceEndpoints".into(), Value::Array(endpoints));
    }
    if prepare
        .id
        .name()
        .eq_ignore_ascii_case(super::bastion_hosts::SUBNET_NAME)
        && let Some(group) = fields::reference(&properties, "networkSecurityGroup", "properties")?
        && let Some(group) = prepare.state.body(&group.to_ascii_lowercase())
    {
        super::bastion_hosts::check_security_group(&group, prepare.id.name())?;
    }
    prepare.default("privateEndpointNetworkPolicies", json!("Disabled"))?;
    prepare.default("privateLinkServiceNetworkPolicies", json!("Enabled"))?;
    Ok(())
}
