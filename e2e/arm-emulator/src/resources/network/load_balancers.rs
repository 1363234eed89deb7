//! Load balancers: frontends, backend pools, load-balancing rules, probes, inbound NAT rules and
//! pools, and outbound rules, all kept inside the load balancer's document. Azure lists on each
//! frontend, pool and probe the rules that use it; `finish` recomputes those lists.

use serde_json::{Map, Value, json};

use super::{addresses, document, embedded, resource_guid, sku};
use crate::error::ArmError;
use crate::resources::{BackReference, Prepare, ResourceType, fields};

pub(crate) static LOAD_BALANCER: ResourceType = ResourceType {
    finish: cross_reference,
    ..document(
        "Microsoft.Network/loadBalancers",
        "InUseLoadBalancerCannotBeDeleted",
        &[],
        prepare_balancer,
    )
};

pub(crate) static FRONTEND: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/frontendIPConfigurations",
    "frontendIPConfigurations",
    "InUseFrontendIPConfigurationCannotBeDeleted",
    &[],
    prepare_frontend,
);

pub(crate) static BACKEND_POOL: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/backendAddressPools",
    "backendAddressPools",
    "InUseBackendAddressPoolCannotBeDeleted",
    &[BackReference {
        property: "backendIPConfigurations",
        from: &["Microsoft.Network/networkInterfaces/ipConfigurations"],
        many: true,
    }],
    prepare_pool,
);

pub(crate) static RULE: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/loadBalancingRules",
    "loadBalancingRules",
    "InUseLoadBalancingRuleCannotBeDeleted",
    &[],
    prepare_rule,
);

pub(crate) static PROBE: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/probes",
    "probes",
    "InUseProbeCannotBeDeleted",
    &[],
    prepare_probe,
);

pub(crate) static INBOUND_NAT_RULE: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/inboundNatRules",
    "inboundNatRules",
    "InUseInboundNatRuleCannotBeDeleted",
    &[BackReference {
        property: "backendIPConfiguration",
        from: &["Microsoft.Network/networkInterfaces/ipConfigurations"],
        many: false,
    }],
    prepare_nat_rule,
);

pub(crate) static OUTBOUND_RULE: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/outboundRules",
    "outboundRules",
    "InUseOutboundRuleCannotBeDeleted",
    &[],
    prepare_outbound_rule,
);

pub(crate) static INBOUND_NAT_POOL: ResourceType = embedded(
    "Microsoft.Network/loadBalancers/inboundNatPools",
    "inboundNatPools",
    "InUseInboundNatPoolCannotBeDeleted",
    &[],
    prepare_nat_pool,
);

const PROTOCOLS: &[&str] = &["Tcp", "Udp", "All"];

fn prepare_balancer(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    sku(prepare, &["Basic", "Standard", "Gateway"], "Standard")?;
    resource_guid(prepare)
}

fn prepare_frontend(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let path = "properties";
    let subnet = fields::reference(&properties, "subnet", path)?;
    let public = fields::reference(&properties, "publicIPAddress", path)?;
    let prefix = fields::reference(&properties, "publicIPPrefix", path)?;
    if subnet.is_none() && public.is_none() && prefix.is_none() {
        return Err(ArmError::invalid_parameter(
            "properties.subnet",
            format!(
                "Frontend IP configuration {} needs a 'subnet' (internal) or a 'publicIPAddress' (public).",
                prepare.id.to_id()
            ),
        ));
    }
    let method = fields::one_of(
        &properties,
        "privateIPAllocationMethod",
        path,
        &["Static", "Dynamic"],
    )?
    .unwrap_or("Dynamic");
    let version = fields::one_of(&properties, "privateIPAddressVersion", path, &["IPv4", "IPv6"])?;
    if let Some(subnet) = subnet {
        let requested = fields::string(&properties, "privateIPAddress", path)?;
        let kept = kept_private_address(prepare.existing, subnet);
        let address = match (method, requested, kept) {
            ("Static", Some(requested), _) => Some(requested.to_owned()),
            (_, _, Some(kept)) => Some(kept),
            _ => None,
        };
        let address = addresses::private_address(
            prepare.state,
            subnet,
            version == Some("IPv6"),
            address.as_deref(),
            &prepare.id.to_id(),
            "properties.privateIPAddress",
        )?;
        let properties = prepare.properties()?;
        properties.insert("privateIPAddress".into(), json!(address.to_string()));
        properties.insert("privateIPAddressVersion".into(), json!(version.unwrap_or("IPv4")));
    }
    prepare
        .properties()?
        .insert("privateIPAllocationMethod".into(), json!(method));
    Ok(())
}

/// The private address an IP configuration had in the same subnet, which it keeps.
pub(super) fn kept_private_address(existing: Option<&Value>, subnet: &str) -> Option<String> {
    let existing = existing?.get("properties")?;
    let same_subnet = existing
        .pointer("/subnet/id")
        .and_then(Value::as_str)
        .is_some_and(|old| old.eq_ignore_ascii_case(subnet));
    same_subnet
        .then(|| existing.get("privateIPAddress")?.as_str().map(str::to_owned))
        .flatten()
}

fn prepare_pool(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare.properties()?;
    Ok(())
}

fn required_port(properties: &Map<String, Value>, key: &str) -> Result<i64, ArmError> {
    let port = fields::integer(properties, key, "properties")?
        .ok_or_else(|| fields::missing(&format!("properties.{key}")))?;
    if (0..=65535).contains(&port) {
        Ok(port)
    } else {
        Err(ArmError::invalid_parameter(
            &format!("properties.{key}"),
            format!("The port {port} of 'properties.{key}' is outside 0-65535."),
        ))
    }
}

fn require_reference(properties: &Map<String, Value>, key: &str) -> Result<(), ArmError> {
    fields::reference(properties, key, "properties")?
        .map(|_| ())
        .ok_or_else(|| fields::missing(&format!("properties.{key}")))
}

fn protocol(properties: &Map<String, Value>, allowed: &[&'static str]) -> Result<&'static str, ArmError> {
    fields::one_of(properties, "protocol", "properties", allowed)?
        .ok_or_else(|| fields::missing("properties.protocol"))
}

fn prepare_rule(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    require_reference(&properties, "frontendIPConfiguration")?;
    let protocol = protocol(&properties, PROTOCOLS)?;
    let frontend = required_port(&properties, "frontendPort")?;
    let backend = fields::integer(&properties, "backendPort", "properties")?.unwrap_or(frontend);
    let properties = prepare.properties()?;
    properties.insert("protocol".into(), json!(protocol));
    properties.insert("backendPort".into(), json!(backend));
    prepare.default("enableFloatingIP", json!(false))?;
    prepare.default("idleTimeoutInMinutes", json!(4))?;
    prepare.default("loadDistribution", json!("Default"))?;
    prepare.default("disableOutboundSnat", json!(false))?;
    prepare.default("enableTcpReset", json!(false))
}

fn prepare_probe(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let protocol = protocol(&properties, &["Http", "Tcp", "Https"])?;
    required_port(&properties, "port")?;
    if protocol != "Tcp" && fields::string(&properties, "requestPath", "properties")?.is_none() {
        return Err(ArmError::invalid_parameter(
            "properties.requestPath",
            format!("An {protocol} probe needs 'properties.requestPath'."),
        ));
    }
    prepare.properties()?.insert("protocol".into(), json!(protocol));
    prepare.default("intervalInSeconds", json!(15))?;
    prepare.default("numberOfProbes", json!(2))?;
    prepare.default("probeThreshold", json!(1))
}

fn prepare_nat_rule(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    require_reference(&properties, "frontendIPConfiguration")?;
    let protocol = fields::one_of(&properties, "protocol", "properties", PROTOCOLS)?.unwrap_or("Tcp");
    required_port(&properties, "backendPort")?;
    if fields::integer(&properties, "frontendPortRangeStart", "properties")?.is_none() {
        required_port(&properties, "frontendPort")?;
    }
    prepare.properties()?.insert("protocol".into(), json!(protocol));
    nat_defaults(prepare)
}

fn nat_defaults(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare.default("enableFloatingIP", json!(false))?;
    prepare.default("idleTimeoutInMinutes", json!(4))?;
    prepare.default("enableDestinationServiceEndpoint", json!(false))?;
    prepare.default("enableTcpReset", json!(false))?;
    prepare.default("allowBackendPortConflict", json!(false))
}

fn prepare_nat_pool(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    require_reference(&properties, "frontendIPConfiguration")?;
    let protocol = protocol(&properties, PROTOCOLS)?;
    let start = required_port(&properties, "frontendPortRangeStart")?;
    let end = required_port(&properties, "frontendPortRangeEnd")?;
    required_port(&properties, "backendPort")?;
    if end < start {
        return Err(ArmError::invalid_parameter(
            "properties.frontendPortRangeEnd",
            "'properties.frontendPortRangeEnd' must not be below 'properties.frontendPortRangeStart'.",
        ));
    }
    prepare.properties()?.insert("protocol".into(), json!(protocol));
    nat_defaults(prepare)
}

fn prepare_outbound_rule(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    if fields::references(&properties, "frontendIPConfigurations", "properties")?.is_empty() {
        return Err(fields::missing("properties.frontendIPConfigurations"));
    }
    require_reference(&properties, "backendAddressPool")?;
    let protocol = protocol(&properties, PROTOCOLS)?;
    prepare.properties()?.insert("protocol".into(), json!(protocol));
    prepare.default("allocatedOutboundPorts", json!(0))?;
    prepare.default("idleTimeoutInMinutes", json!(4))?;
    prepare.default("enableTcpReset", json!(true))
}

/// Which parts use which: (user property, reference property, used property, back-reference).
const USES: &[(&str, &str, &str, &str)] = &[
    (
        "loadBalancingRules",
        "frontendIPConfiguration",
        "frontendIPConfigurations",
        "loadBalancingRules",
    ),
    (
        "inboundNatRules",
        "frontendIPConfiguration",
        "frontendIPConfigurations",
        "inboundNatRules",
    ),
    (
        "inboundNatPools",
        "frontendIPConfiguration",
        "frontendIPConfigurations",
        "inboundNatPools",
    ),
    (
        "outboundRules",
        "frontendIPConfigurations",
        "frontendIPConfigurations",
        "outboundRules",
    ),
    (
        "loadBalancingRules",
        "backendAddressPool",
        "backendAddressPools",
        "loadBalancingRules",
    ),
    (
        "outboundRules",
        "backendAddressPool",
        "backendAddressPools",
        "outboundRules",
    ),
    ("loadBalancingRules", "probe", "probes", "loadBalancingRules"),
];

/// Recomputes, on every frontend, backend pool and probe, the lists of rules using it.
pub(crate) fn cross_reference(body: &mut Value) {
    let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (_, _, used, back) in USES {
        for part in properties
            .get_mut(*used)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(part) = part.get_mut("properties").and_then(Value::as_object_mut) {
                part.remove(*back);
            }
        }
    }
    for (user, reference, used, back) in USES {
        let links: Vec<(String, String)> = properties
            .get(*user)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|item| {
                let item_id = item
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let targets: Vec<String> = match item.pointer(&format!("/properties/{reference}")) {
                    Some(Value::Array(many)) => many
                        .iter()
                        .filter_map(|r| r.get("id")?.as_str().map(str::to_owned))
                        .collect(),
                    Some(one) => one
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .into_iter()
                        .collect(),
                    None => Vec::new(),
                };
                targets.into_iter().map(move |target| (target, item_id.clone()))
            })
            .collect();
        for (target, item_id) in links {
            let parts = properties.get_mut(*used).and_then(Value::as_array_mut);
            let Some(part) = parts.into_iter().flatten().find(|part| {
                part.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| id.eq_ignore_ascii_case(&target))
            }) else {
                continue;
            };
            if let Some(part) = part.get_mut("properties").and_then(Value::as_object_mut) {
                let list = part.entry(*back).or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut() {
                    list.push(json!({ "id": item_id }));
                }
            }
        }
    }
}
