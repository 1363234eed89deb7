//! Network security groups and their rules. Azure adds six default rules to every group.

use serde_json::{Value, json};

use super::{document, embedded, resource_guid};
use crate::error::ArmError;
use crate::resources::{BackReference, Prepare, ResourceType, fields};

pub(crate) static SECURITY_GROUP: ResourceType = document(
    "Microsoft.Network/networkSecurityGroups",
    "InUseNetworkSecurityGroupCannotBeDeleted",
    &[
        BackReference {
            property: "subnets",
            from: &["Microsoft.Network/virtualNetworks/subnets"],
            many: true,
        },
        BackReference {
            property: "networkInterfaces",
            from: &["Microsoft.Network/networkInterfaces"],
            many: true,
        },
    ],
    prepare_group,
);

pub(crate) static SECURITY_RULE: ResourceType = embedded(
    "Microsoft.Network/networkSecurityGroups/securityRules",
    "securityRules",
    "InUseSecurityRuleCannotBeDeleted",
    &[],
    prepare_rule,
);

/// The rules Azure puts in every group: (name, description, source, destination, access,
/// priority, direction).
const DEFAULT_RULES: [(&str, &str, &str, &str, &str, u32, &str); 6] = [
    (
        "AllowVnetInBound",
        "Allow inbound traffic from all VMs in VNET",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow",
        65000,
        "Inbound",
    ),
    (
        "AllowAzureLoadBalancerInBound",
        "Allow inbound traffic from azure load balancer",
        "AzureLoadBalancer",
        "*",
        "Allow",
        65001,
        "Inbound",
    ),
    (
        "DenyAllInBound",
        "Deny all inbound traffic",
        "*",
        "*",
        "Deny",
        65500,
        "Inbound",
    ),
    (
        "AllowVnetOutBound",
        "Allow outbound traffic from all VMs to all VMs in VNET",
        "VirtualNetwork",
        "VirtualNetwork",
        "Allow",
        65000,
        "Outbound",
    ),
    (
        "AllowInternetOutBound",
        "Allow outbound traffic from all VMs to Internet",
        "*",
        "Internet",
        "Allow",
        65001,
        "Outbound",
    ),
    (
        "DenyAllOutBound",
        "Deny all outbound traffic",
        "*",
        "*",
        "Deny",
        65500,
        "Outbound",
    ),
];

fn prepare_group(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    resource_guid(prepare)?;
    let group = prepare.id.to_id();
    let state = prepare.provisioning_state;
    let defaults: Vec<Value> = DEFAULT_RULES
        .iter()
        .map(
            |(name, description, source, destination, access, priority, direction)| {
                json!({
                    "name": name,
                    "id": format!("{group}/defaultSecurityRules/{name}"),
                    "type": "Microsoft.Network/networkSecurityGroups/defaultSecurityRules",
                    "properties": {
                        "provisioningState": state,
                        "description": description,
                        "protocol": "*",
                        "sourcePortRange": "*",
                        "destinationPortRange": "*",
                        "sourceAddressPrefix": source,
                        "destinationAddressPrefix": destination,
                        "access": access,
                        "priority": priority,
                        "direction": direction,
                        "sourcePortRanges": [],
                        "destinationPortRanges": [],
                        "sourceAddressPrefixes": [],
                        "destinationAddressPrefixes": [],
                    }
                })
            },
        )
        .collect();
    prepare
        .properties()?
        .insert("defaultSecurityRules".into(), Value::Array(defaults));
    let rules = fields::array(prepare.properties()?, "securityRules", "properties")?.to_vec();
    let mut seen: Vec<(i64, String)> = Vec::new();
    for rule in &rules {
        let priority = rule.pointer("/properties/priority").and_then(Value::as_i64);
        let direction = rule
            .pointer("/properties/direction")
            .and_then(Value::as_str)
            .map(str::to_ascii_lowercase);
        if let (Some(priority), Some(direction)) = (priority, direction) {
            if seen.contains(&(priority, direction.clone())) {
                return Err(ArmError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "SecurityRuleConflict",
                    format!(
                        "Two security rules of the group have priority {priority} in the same direction ({direction}); priorities must be unique per direction."
                    ),
                ));
            }
            seen.push((priority, direction));
        }
    }
    Ok(())
}

fn prepare_rule(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let path = "properties";
    let protocol = fields::one_of(
        &properties,
        "protocol",
        path,
        &["Tcp", "Udp", "Icmp", "Esp", "Ah", "*"],
    )?
    .ok_or_else(|| fields::missing("properties.protocol"))?;
    let access = fields::one_of(&properties, "access", path, &["Allow", "Deny"])?
        .ok_or_else(|| fields::missing("properties.access"))?;
    let direction = fields::one_of(&properties, "direction", path, &["Inbound", "Outbound"])?
        .ok_or_else(|| fields::missing("properties.direction"))?;
    let priority = fields::integer(&properties, "priority", path)?
        .ok_or_else(|| fields::missing("properties.priority"))?;
    if !(100..=4096).contains(&priority) {
        return Err(ArmError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "SecurityRuleInvalidPriority",
            format!(
                "Security rule '{}' has invalid priority {priority}. Value provided: {priority}. Allowed range: 100-4096.",
                prepare.id.name()
            ),
        ));
    }
    for (single, many) in [
        ("sourcePortRange", "sourcePortRanges"),
        ("destinationPortRange", "destinationPortRanges"),
        ("sourceAddressPrefix", "sourceAddressPrefixes"),
        ("destinationAddressPrefix", "destinationAddressPrefixes"),
    ] {
        let has_single = fields::string(&properties, single, path)?.is_some();
        let has_many = !fields::strings(&properties, many, path)?.is_empty();
        if !has_single && !has_many {
            return Err(fields::missing(&format!("properties.{single}")));
        }
        prepare.default(many, json!([]))?;
    }
    let properties = prepare.properties()?;
    properties.insert("protocol".into(), json!(protocol));
    properties.insert("access".into(), json!(access));
    properties.insert("direction".into(), json!(direction));
    Ok(())
}
