//! Network interfaces and their IP configurations. Private addresses come from the subnet;
//! a NIC shows the virtual machine using it.

use serde_json::{Value, json};

use super::{addresses, document, embedded, load_balancers::kept_private_address, resource_guid};
use crate::error::ArmError;
use crate::resources::{BackReference, Lro, Prepare, ResourceType, fields};

/// Azure answers a network interface's PUT done, without an operation to poll.
pub(crate) static NETWORK_INTERFACE: ResourceType = ResourceType {
    put: Lro::Sync,
    ..document(
        "Microsoft.Network/networkInterfaces",
        "NicInUse",
        &[
            BackReference {
                property: "virtualMachine",
                from: &["Microsoft.Compute/virtualMachines"],
                many: false,
            },
            BackReference {
                property: "privateEndpoint",
                from: &["Microsoft.Network/privateEndpoints"],
                many: false,
            },
        ],
        prepare_interface,
    )
};

pub(crate) static IP_CONFIGURATION: ResourceType = embedded(
    "Microsoft.Network/networkInterfaces/ipConfigurations",
    "ipConfigurations",
    "InUseIpConfigurationCannotBeDeleted",
    &[],
    prepare_ip_configuration,
);

fn prepare_interface(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let configurations = fields::array(prepare.properties()?, "ipConfigurations", "properties")?.to_vec();
    if configurations.is_empty() {
        return Err(ArmError::invalid_parameter(
            "properties.ipConfigurations",
            "A network interface needs at least one entry in 'properties.ipConfigurations'.",
        ));
    }
    // With no primary configuration named, the first one is.
    let any_primary = configurations
        .iter()
        .any(|configuration| configuration.pointer("/properties/primary") == Some(&Value::Bool(true)));
    let configurations: Vec<Value> = configurations
        .into_iter()
        .enumerate()
        .map(|(index, mut configuration)| {
            if let Some(object) = configuration.as_object_mut() {
                let properties = object.entry("properties").or_insert_with(|| json!({}));
                if let Some(properties) = properties.as_object_mut() {
                    properties
                        .entry("primary")
                        .or_insert(Value::Bool(!any_primary && index == 0));
                }
            }
            configuration
        })
        .collect();
    prepare
        .properties()?
        .insert("ipConfigurations".into(), Value::Array(configurations));
    resource_guid(prepare)?;
    prepare.default("enableAcceleratedNetworking", json!(false))?;
    prepare.default("enableIPForwarding", json!(false))?;
    prepare.default("nicType", json!("Standard"))?;
    prepare.default("hostedWorkloads", json!([]))?;
    prepare.default("tapConfigurations", json!([]))?;
    prepare.default("vnetEncryptionSupported", json!(false))?;
    let suffix = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/dnsSettings/internalDomainNameSuffix"))
        .cloned()
        .unwrap_or_else(|| {
            json!(format!(
                "{}.xx.internal.cloudapp.net",
                uuid::Uuid::new_v4().simple()
            ))
        });
    let requested_dns = fields::object(prepare.properties()?, "dnsSettings", "properties")?
        .cloned()
        .unwrap_or_default();
    let servers = requested_dns
        .get("dnsServers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    prepare.properties()?.insert(
        "dnsSettings".into(),
        json!({ "dnsServers": servers, "appliedDnsServers": servers, "internalDomainNameSuffix": suffix }),
    );
    Ok(())
}

/// Also the IP configurations of private link services, which take addresses the same way.
pub(super) fn prepare_ip_configuration(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let path = "properties";
    let subnet = fields::reference(&properties, "subnet", path)?
        .ok_or_else(|| fields::missing("properties.subnet"))?;
    let method = fields::one_of(
        &properties,
        "privateIPAllocationMethod",
        path,
        &["Static", "Dynamic"],
    )?
    .unwrap_or("Dynamic");
    let version =
        fields::one_of(&properties, "privateIPAddressVersion", path, &["IPv4", "IPv6"])?.unwrap_or("IPv4");
    let requested = fields::string(&properties, "privateIPAddress", path)?;
    if method == "Static" && requested.is_none() {
        return Err(fields::missing("properties.privateIPAddress"));
    }
    let wanted = match (method, requested) {
        ("Static", Some(requested)) => Some(requested.to_owned()),
        _ => kept_private_address(prepare.existing, subnet),
    };
    let nic = prepare
        .id
        .parent()
        .map_or_else(|| prepare.id.to_id(), |nic| nic.to_id());
    let address = addresses::private_address(
        prepare.state,
        subnet,
        version == "IPv6",
        wanted.as_deref(),
        &nic,
        "properties.privateIPAddress",
    )?;
    let properties = prepare.properties()?;
    properties.insert("privateIPAddress".into(), json!(address.to_string()));
    properties.insert("privateIPAllocationMethod".into(), json!(method));
    properties.insert("privateIPAddressVersion".into(), json!(version));
    Ok(())
}
