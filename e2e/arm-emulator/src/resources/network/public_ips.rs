//! Public IP addresses and prefixes. Static addresses come from the configured public pool (or
//! the prefix named); a DNS label gives `<label>.<location>.cloudapp.azure.com`.

use serde_json::{Value, json};

use super::{addresses, document, resource_guid, sku};
use crate::error::ArmError;
use crate::ip::Cidr;
use crate::resources::{BackReference, Prepare, ResourceType, fields};

pub(crate) static PUBLIC_IP: ResourceType = ResourceType {
    shown_when_provisioned: &["ipAddress"],
    ..document(
        "Microsoft.Network/publicIPAddresses",
        "PublicIPAddressCannotBeDeleted",
        &[
            BackReference {
                property: "ipConfiguration",
                from: &[
                    "Microsoft.Network/networkInterfaces/ipConfigurations",
                    "Microsoft.Network/loadBalancers/frontendIPConfigurations",
                    "Microsoft.Network/bastionHosts/bastionHostIpConfigurations",
                ],
                many: false,
            },
            BackReference {
                property: "natGateway",
                from: &["Microsoft.Network/natGateways"],
                many: false,
            },
        ],
        prepare_address,
    )
};

pub(crate) static PUBLIC_IP_PREFIX: ResourceType = ResourceType {
    shown_when_provisioned: &["ipPrefix"],
    ..document(
        "Microsoft.Network/publicIPPrefixes",
        "PublicIpPrefixInUseCannotBeDeleted",
        &[
            BackReference {
                property: "publicIPAddresses",
                from: &["Microsoft.Network/publicIPAddresses"],
                many: true,
            },
            BackReference {
                property: "natGateway",
                from: &["Microsoft.Network/natGateways"],
                many: false,
            },
        ],
        prepare_prefix,
    )
};

fn version(properties: &serde_json::Map<String, Value>) -> Result<&'static str, ArmError> {
    Ok(fields::one_of(
        properties,
        "publicIPAddressVersion",
        "properties",
        &["IPv4", "IPv6"],
    )?
    .unwrap_or("IPv4"))
}

fn prepare_address(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let sku_name = sku(prepare, &["Basic", "Standard", "StandardV2"], "Standard")?;
    let properties = prepare.properties()?.clone();
    let version = version(&properties)?;
    let allocation = fields::one_of(
        &properties,
        "publicIPAllocationMethod",
        "properties",
        &["Static", "Dynamic"],
    )?
    .unwrap_or(if sku_name == "Basic" { "Dynamic" } else { "Static" });
    if sku_name != "Basic" && allocation == "Dynamic" {
        return Err(ArmError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "StandardSkuPublicIPAddressesMustBeStatic",
            format!(
                "Standard sku publicIp /{} must have AllocationMethod set to Static.",
                prepare.id.to_id().trim_start_matches('/')
            ),
        ));
    }
    let prefix = match fields::reference(&properties, "publicIPPrefix", "properties")? {
        Some(prefix_id) => {
            let stored = prepare
                .state
                .body(&prefix_id.to_ascii_lowercase())
                .ok_or_else(|| ArmError::not_found(prefix_id))?;
            stored
                .pointer("/properties/ipPrefix")
                .and_then(Value::as_str)
                .and_then(Cidr::parse)
        }
        None => None,
    };
    let kept = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/ipAddress"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let address = match (kept, allocation) {
        (Some(address), _) => Some(address),
        (None, "Static") => Some(
            addresses::public_address(
                prepare.state,
                &prepare.config.public_ip_pool,
                version == "IPv6",
                prefix,
                &prepare.id.key(),
            )?
            .to_string(),
        ),
        (None, _) => None,
    };
    let location = prepare.location.to_owned();
    let dns = fields::object(&properties, "dnsSettings", "properties")?.cloned();
    let properties = prepare.properties()?;
    properties.insert("publicIPAddressVersion".into(), json!(version));
    properties.insert("publicIPAllocationMethod".into(), json!(allocation));
    if let Some(address) = address {
        properties.insert("ipAddress".into(), json!(address));
    }
    if let Some(mut dns) = dns {
        if let Some(label) = fields::string(&dns, "domainNameLabel", "properties.dnsSettings")? {
            let fqdn = format!("{label}.{location}.cloudapp.azure.com");
            dns.insert("fqdn".into(), json!(fqdn));
        }
        properties.insert("dnsSettings".into(), Value::Object(dns));
    }
    resource_guid(prepare)?;
    prepare.default("idleTimeoutInMinutes", json!(4))?;
    prepare.default("ipTags", json!([]))?;
    if sku_name != "Basic" {
        prepare.default(
            "ddosSettings",
            json!({ "protectionMode": "VirtualNetworkInherited" }),
        )?;
    }
    check_label_unique(prepare)
}

/// DNS labels are unique per location.
fn check_label_unique(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let Some(fqdn) = prepare
        .doc
        .get("properties")
        .and_then(|p| p.pointer("/dnsSettings/fqdn"))
        .and_then(Value::as_str)
    else {
        return Ok(());
    };
    let own = prepare.id.key();
    let taken = prepare.state.resources.iter().any(|(key, stored)| {
        **key != *own
            && stored.type_name == PUBLIC_IP.name
            && stored
                .body()
                .pointer("/properties/dnsSettings/fqdn")
                .and_then(Value::as_str)
                .is_some_and(|other| other.eq_ignore_ascii_case(fqdn))
    });
    if taken {
        return Err(ArmError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "DnsRecordInUse",
            format!("DNS record {fqdn} is already used by another public IP."),
        ));
    }
    Ok(())
}

fn prepare_prefix(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    sku(prepare, &["Standard", "StandardV2"], "Standard")?;
    let properties = prepare.properties()?.clone();
    let version = version(&properties)?;
    let length = fields::integer(&properties, "prefixLength", "properties")?
        .ok_or_else(|| fields::missing("properties.prefixLength"))?;
    let allowed = if version == "IPv4" { 21..=31 } else { 124..=127 };
    let length = u8::try_from(length)
        .ok()
        .filter(|length| allowed.contains(length))
        .ok_or_else(|| {
            ArmError::invalid_parameter(
                "properties.prefixLength",
                format!(
                    "The prefix length {length} is not allowed for {version}; use {}-{}.",
                    allowed.start(),
                    allowed.end()
                ),
            )
        })?;
    let kept = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/ipPrefix"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let prefix = match kept {
        Some(prefix) => prefix,
        None => addresses::public_prefix(
            prepare.state,
            &prepare.config.public_ip_pool,
            version == "IPv6",
            length,
            &prepare.id.key(),
        )?
        .to_string(),
    };
    let properties = prepare.properties()?;
    properties.insert("publicIPAddressVersion".into(), json!(version));
    properties.insert("ipPrefix".into(), json!(prefix));
    resource_guid(prepare)?;
    prepare.default("ipTags", json!([]))
}
