//! Private endpoints and the private link services they may connect to. An endpoint connects one
//! target (a storage account's sub-resource, or a private link service) into a subnet through a
//! network interface Azure creates for it (`<endpoint>.nic.<guid>`), which goes when the endpoint
//! goes. Its DNS zone groups write the target's A record set into private DNS zones. Targets list
//! the endpoints connected to them; an endpoint whose target is gone shows `Disconnected`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{document, embedded, network_interfaces, parts_succeeded, resource_guid};
use crate::error::ArmError;
use crate::resources::embedded as children;
use crate::resources::{BackReference, Hooks, NO_HOOKS, Prepare, ResourceType, Storage, fields, storage};
use crate::state::State;

pub(crate) static PRIVATE_ENDPOINT: ResourceType = ResourceType {
    // Azure replaced the IPv6 flag with the IP version type.
    since: &[("ipVersionType", "2025-01-01")],
    until: &[("isIPv6EnabledPrivateEndpoint", "2025-01-01")],
    finish: |endpoint| {
        parts_succeeded(endpoint, "privateLinkServiceConnections");
        parts_succeeded(endpoint, "manualPrivateLinkServiceConnections");
    },
    hooks: Hooks {
        create_answer: Some(|properties| {
            // Azure fills the DNS configurations in once the interface has its address.
            properties["customDnsConfigs"] = json!([]);
        }),
        on_deleted: Some(remove_interfaces),
        render: Some(show_disconnected),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Network/privateEndpoints",
        "InUsePrivateEndpointCannotBeDeleted",
        &[],
        prepare_endpoint,
    )
};

pub(crate) static CONNECTION: ResourceType = embedded(
    "Microsoft.Network/privateEndpoints/privateLinkServiceConnections",
    "privateLinkServiceConnections",
    "InUseResourceCannotBeDeleted",
    &[],
    prepare_connection,
);

pub(crate) static MANUAL_CONNECTION: ResourceType = embedded(
    "Microsoft.Network/privateEndpoints/manualPrivateLinkServiceConnections",
    "manualPrivateLinkServiceConnections",
    "InUseResourceCannotBeDeleted",
    &[],
    prepare_connection,
);

pub(crate) static DNS_ZONE_GROUP: ResourceType = ResourceType {
    storage: Storage::Document,
    location: crate::resources::Locality::Inherited,
    hooks: Hooks {
        on_deleted: Some(remove_record_sets),
        render: Some(show_record_set_states),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Network/privateEndpoints/privateDnsZoneGroups",
        "InUseResourceCannotBeDeleted",
        &[],
        prepare_zone_group,
    )
};

pub(crate) static PRIVATE_LINK_SERVICE: ResourceType = ResourceType {
    hooks: Hooks {
        render: Some(show_endpoint_connections),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Network/privateLinkServices",
        "InUsePrivateLinkServiceCannotBeDeleted",
        &[],
        prepare_link_service,
    )
};

pub(crate) static LINK_SERVICE_IP_CONFIGURATION: ResourceType = embedded(
    "Microsoft.Network/privateLinkServices/ipConfigurations",
    "ipConfigurations",
    "InUseIpConfigurationCannotBeDeleted",
    &[],
    network_interfaces::prepare_ip_configuration,
);

/// The back-reference a subnet shows for the endpoints in it.
pub(crate) const ENDPOINTS_IN_SUBNET: BackReference = BackReference {
    property: "privateEndpoints",
    from: &["Microsoft.Network/privateEndpoints"],
    many: true,
};

const CONNECTIONS: [&str; 2] = [
    "privateLinkServiceConnections",
    "manualPrivateLinkServiceConnections",
];

/// What an endpoint connects to: (target id, its first group id), from an endpoint body.
fn target_of(endpoint: &Value) -> Option<(String, String)> {
    CONNECTIONS.iter().find_map(|property| {
        let connection = children::all(endpoint, property).first()?;
        let target = connection.pointer("/properties/privateLinkServiceId")?.as_str()?;
        let group = connection
            .pointer("/properties/groupIds/0")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Some((target.to_owned(), group.to_owned()))
    })
}

fn is_storage_account(id: &str) -> bool {
    id.to_ascii_lowercase()
        .contains("/providers/microsoft.storage/storageaccounts/")
}

/// The name clients resolve for a storage account's sub-resource.
fn storage_fqdn(target: &str, group: &str) -> String {
    let account = target.rsplit('/').next().unwrap_or_default();
    let service = group.trim_end_matches("_secondary");
    format!("{account}.{service}.core.windows.net")
}

fn prepare_endpoint(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let subnet = fields::reference(&properties, "subnet", "properties")?
        .ok_or_else(|| fields::missing("properties.subnet"))?
        .to_owned();
    let count: usize = CONNECTIONS
        .iter()
        .map(|property| fields::array(&properties, property, "properties").map(<[Value]>::len))
        .sum::<Result<usize, ArmError>>()?;
    if count != 1 {
        return Err(ArmError::invalid_parameter(
            "properties.privateLinkServiceConnections",
            "A private endpoint needs exactly one entry in 'properties.privateLinkServiceConnections' or 'properties.manualPrivateLinkServiceConnections'.",
        ));
    }
    resource_guid(prepare)?;
    prepare.default("customNetworkInterfaceName", json!(""))?;
    prepare.default("ipConfigurations", json!([]))?;
    prepare.default("ipVersionType", json!("IPv4"))?;
    prepare.default("isIPv6EnabledPrivateEndpoint", json!(false))?;
    let body = Value::Object(prepare.doc.clone());
    let (target, group) = target_of(&body).unwrap_or_default();
    if let Some(existing) = prepare.existing {
        // The interface stays the one made with the endpoint.
        for kept in ["networkInterfaces", "customDnsConfigs"] {
            prepare.keep(kept, || existing["properties"][kept].clone())?;
        }
        return Ok(());
    }
    let name = prepare.id.name().to_owned();
    let nic_name = format!("{name}.nic.{}", uuid::Uuid::new_v4());
    let group_path = crate::path::resource_group_id(
        prepare.id.subscription.as_deref().unwrap_or_default(),
        prepare.id.resource_group.as_deref().unwrap_or_default(),
    );
    let nic_id = format!("{group_path}/providers/Microsoft.Network/networkInterfaces/{nic_name}");
    let address =
        super::addresses::private_address(prepare.state, &subnet, false, None, &nic_id, "properties.subnet")?
            .to_string();
    let fqdns: Vec<String> = if is_storage_account(&target) {
        vec![storage_fqdn(&target, &group)]
    } else {
        Vec::new()
    };
    let dns_configs: Vec<Value> = fqdns
        .iter()
        .map(|fqdn| json!({ "fqdn": fqdn, "ipAddresses": [address] }))
        .collect();
    let configuration_name = format!("privateEndpointIpConfig.{}", uuid::Uuid::new_v4());
    prepare.companions.push(json!({
        "id": nic_id,
        "name": nic_name,
        "type": network_interfaces::NETWORK_INTERFACE.name,
        "location": prepare.location,
        "managedBy": prepare.id.to_id(),
        "kind": "Regular",
        "properties": {
            "provisioningState": "Succeeded",
            "resourceGuid": uuid::Uuid::new_v4().to_string(),
            "ipConfigurations": [{
                "name": configuration_name,
                "id": format!("{nic_id}/ipConfigurations/{configuration_name}"),
                "type": network_interfaces::IP_CONFIGURATION.name,
                "properties": {
                    "provisioningState": "Succeeded",
                    "privateIPAddress": address,
                    "privateIPAllocationMethod": "Dynamic",
                    "subnet": {"id": subnet},
                    "primary": true,
                    "privateIPAddressVersion": "IPv4",
                    "privateLinkConnectionProperties": {"groupId": group, "requiredMemberName": group, "fqdns": fqdns},
                },
            }],
            "dnsSettings": {
                "dnsServers": [],
                "appliedDnsServers": [],
                "internalDomainNameSuffix": format!("{}.xx.internal.cloudapp.net", uuid::Uuid::new_v4().simple()),
            },
            "macAddress": "",
            "enableAcceleratedNetworking": false,
            "vnetEncryptionSupported": false,
            "enableIPForwarding": false,
            "hostedWorkloads": [],
            "tapConfigurations": [],
            "nicType": "Standard",
            "allowPort25Out": true,
            "auxiliaryMode": "None",
        },
    }));
    let properties = prepare.properties()?;
    properties.insert("networkInterfaces".into(), json!([{ "id": nic_id }]));
    properties.insert("customDnsConfigs".into(), Value::Array(dns_configs));
    Ok(())
}

/// A connection's target must exist and offer the group asked for; Azure approves it at once
/// unless it is manual, or to a private link service of another subscription that does not
/// approve that subscription automatically.
fn prepare_connection(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let path = "properties";
    let target = fields::required_string(&properties, "privateLinkServiceId", path)?.to_owned();
    let groups = fields::strings(&properties, "groupIds", path)?;
    let Some(stored) = prepare.state.body(&target.to_ascii_lowercase()) else {
        return Err(ArmError::not_found(&target));
    };
    if is_storage_account(&target) && (groups.len() != 1 || !storage::GROUP_IDS.contains(&groups[0])) {
        return Err(ArmError::invalid_parameter(
            "properties.groupIds",
            format!(
                "A private endpoint to a storage account names one of its sub-resources in 'properties.groupIds': {}.",
                storage::GROUP_IDS.join(", ")
            ),
        ));
    }
    let manual = prepare
        .id
        .types
        .last()
        .is_some_and(|segment| segment.starts_with("manual"));
    let subscription = prepare
        .id
        .subscription
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let approving = stored
        .pointer("/properties/autoApproval/subscriptions")
        .and_then(Value::as_array)
        .is_some_and(|listed| {
            listed
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.eq_ignore_ascii_case(&subscription)))
        });
    let own = target
        .to_ascii_lowercase()
        .starts_with(&format!("/subscriptions/{subscription}/"));
    let state = if manual || !(own || approving) {
        json!({"status": "Pending", "description": properties.get("requestMessage").cloned().unwrap_or_else(|| json!("")), "actionsRequired": "None"})
    } else {
        json!({"status": "Approved", "description": "Auto-Approved", "actionsRequired": "None"})
    };
    prepare.keep("privateLinkServiceConnectionState", || state)?;
    Ok(())
}

/// The interface made for an endpoint goes with it.
fn remove_interfaces(state: &mut State, endpoint: &Value) {
    for nic in children::all(endpoint, "networkInterfaces") {
        if let Some(id) = nic["id"].as_str() {
            state.remove_resource(&id.to_ascii_lowercase());
        }
    }
}

/// An endpoint whose target is gone shows its connection `Disconnected`.
fn show_disconnected(state: &State, endpoint: &mut Value) {
    for property in CONNECTIONS {
        let Some(connections) = endpoint
            .pointer_mut(&format!("/properties/{property}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for connection in connections {
            let gone = connection
                .pointer("/properties/privateLinkServiceId")
                .and_then(Value::as_str)
                .is_some_and(|target| state.body(&target.to_ascii_lowercase()).is_none());
            if gone
                && let Some(status) =
                    connection.pointer_mut("/properties/privateLinkServiceConnectionState/status")
            {
                *status = json!("Disconnected");
            }
        }
    }
}

/// Lists, on a target (storage account or private link service), the endpoints connected to it.
pub(crate) fn show_endpoint_connections(state: &State, target: &mut Value) {
    let Some(target_id) = target["id"].as_str().map(str::to_owned) else {
        return;
    };
    let target_type = target["type"].as_str().unwrap_or_default().to_owned();
    let mut listed = Vec::new();
    for stored in state.resources.values() {
        if stored.type_name != PRIVATE_ENDPOINT.name {
            continue;
        }
        let Some(endpoint) = stored.body_mentioning("privateLinkServiceId") else {
            continue;
        };
        for property in CONNECTIONS {
            for connection in children::all(&endpoint, property) {
                let connects = connection
                    .pointer("/properties/privateLinkServiceId")
                    .and_then(Value::as_str)
                    .is_some_and(|id| id.eq_ignore_ascii_case(&target_id));
                if !connects {
                    continue;
                }
                let name = format!(
                    "{}.{}",
                    endpoint["name"].as_str().unwrap_or_default(),
                    endpoint["properties"]["resourceGuid"]
                        .as_str()
                        .unwrap_or_default()
                );
                listed.push(json!({
                    "id": format!("{target_id}/privateEndpointConnections/{name}"),
                    "name": name,
                    "type": format!("{target_type}/privateEndpointConnections"),
                    "properties": {
                        "privateEndpoint": {"id": endpoint["id"]},
                        "privateLinkServiceConnectionState": connection["properties"]["privateLinkServiceConnectionState"],
                        "provisioningState": "Succeeded",
                    },
                }));
            }
        }
    }
    if let Some(properties) = target.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("privateEndpointConnections".into(), Value::Array(listed));
    }
}

/// The endpoint's address, from the interface made for it.
fn endpoint_address(state: &State, endpoint: &Value) -> Option<String> {
    let nic = endpoint.pointer("/properties/networkInterfaces/0/id")?.as_str()?;
    let nic = state.body(&nic.to_ascii_lowercase())?;
    nic.pointer("/properties/ipConfigurations/0/properties/privateIPAddress")?
        .as_str()
        .map(str::to_owned)
}

fn prepare_zone_group(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let endpoint = prepare
        .id
        .parent()
        .and_then(|parent| prepare.state.body(&parent.key()))
        .map(std::borrow::Cow::into_owned)
        .unwrap_or_default();
    let (target, _) = target_of(&endpoint).unwrap_or_default();
    let record_name = target.rsplit('/').next().unwrap_or_default().to_owned();
    let addresses: Vec<String> = endpoint_address(prepare.state, &endpoint).into_iter().collect();
    let own = prepare.id.to_id();
    let in_progress = prepare.provisioning_state.to_owned();
    let configurations =
        fields::array(prepare.properties()?, "privateDnsZoneConfigs", "properties")?.to_vec();
    let mut built = Vec::with_capacity(configurations.len());
    for (index, configuration) in configurations.iter().enumerate() {
        let path = format!("properties.privateDnsZoneConfigs[{index}]");
        let object = configuration
            .as_object()
            .ok_or_else(|| fields::wrong_type(&path, "an object"))?;
        let name = fields::required_string(object, "name", &path)?;
        let zone_properties = fields::object(object, "properties", &path)?
            .cloned()
            .unwrap_or_default();
        let zone = fields::required_string(
            &zone_properties,
            "privateDnsZoneId",
            &format!("{path}.properties"),
        )?;
        let zone_name = zone.rsplit('/').next().unwrap_or_default();
        if prepare.state.body(&zone.to_ascii_lowercase()).is_none() {
            return Err(ArmError::not_found(zone));
        }
        prepare.companions.push(json!({
            "id": format!("{zone}/A/{record_name}"),
            "name": record_name,
            "type": "Microsoft.Network/privateDnsZones/A",
            "properties": {
                "fqdn": format!("{record_name}.{zone_name}."),
                "ttl": 10,
                "isAutoRegistered": false,
                "aRecords": addresses.iter().map(|address| json!({"ipv4Address": address})).collect::<Vec<_>>(),
            },
        }));
        built.push(json!({
            "name": name,
            "id": format!("{own}/privateDnsZoneConfigs/{name}"),
            "type": "Microsoft.Network/privateEndpoints/privateDnsZoneGroups/privateDnsZoneConfigs",
            "properties": {
                "provisioningState": in_progress,
                "privateDnsZoneId": zone,
                "recordSets": [{
                    "recordType": "A",
                    "recordSetName": record_name,
                    "fqdn": format!("{record_name}.{zone_name}"),
                    "ttl": 10,
                    "provisioningState": in_progress,
                    "ipAddresses": addresses,
                }],
            },
        }));
    }
    prepare
        .properties()?
        .insert("privateDnsZoneConfigs".into(), Value::Array(built));
    Ok(())
}

/// The record sets a zone group wrote go with it.
fn remove_record_sets(state: &mut State, group: &Value) {
    for configuration in children::all(group, "privateDnsZoneConfigs") {
        let Some(zone) = configuration
            .pointer("/properties/privateDnsZoneId")
            .and_then(Value::as_str)
        else {
            continue;
        };
        for record in configuration["properties"]["recordSets"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = record["recordSetName"].as_str() {
                state.remove_resource(&format!("{zone}/A/{name}").to_ascii_lowercase());
            }
        }
    }
}

/// A zone configuration's record sets are as far along as the configuration.
fn show_record_set_states(_: &State, group: &mut Value) {
    let Some(configurations) = group
        .pointer_mut("/properties/privateDnsZoneConfigs")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for configuration in configurations {
        let state = configuration["properties"]["provisioningState"].clone();
        if let Some(records) = configuration
            .pointer_mut("/properties/recordSets")
            .and_then(Value::as_array_mut)
        {
            for record in records {
                record["provisioningState"] = state.clone();
            }
        }
    }
}

/// A private link service stands behind the internal frontends of standard load balancers.
fn prepare_link_service(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let frontends = fields::references(&properties, "loadBalancerFrontendIpConfigurations", "properties")?;
    if frontends.is_empty() {
        return Err(fields::missing("properties.loadBalancerFrontendIpConfigurations"));
    }
    for frontend in &frontends {
        let lower = frontend.to_ascii_lowercase();
        let Some((balancer, name)) = lower.rsplit_once("/frontendipconfigurations/") else {
            continue;
        };
        let Some(balancer) = prepare.state.body(balancer) else {
            continue;
        };
        let public = children::find(&balancer, "frontendIPConfigurations", name)
            .is_some_and(|frontend| frontend.pointer("/properties/publicIPAddress").is_some());
        if public {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "PrivateLinkServiceNotSupportedOnPublicFrontend",
                format!(
                    "Frontend {frontend} has a public IP address; a private link service needs the frontend of an internal load balancer."
                ),
            ));
        }
    }
    if fields::array(&properties, "ipConfigurations", "properties")?.is_empty() {
        return Err(fields::missing("properties.ipConfigurations"));
    }
    resource_guid(prepare)?;
    for (property, default) in [
        ("visibility", json!({"subscriptions": []})),
        ("autoApproval", json!({"subscriptions": []})),
        ("fqdns", json!([])),
        ("enableProxyProtocol", json!(false)),
        ("networkInterfaces", json!([])),
    ] {
        prepare.default(property, default)?;
    }
    let alias = format!(
        "{}.{}.{}.azure.privatelinkservice",
        prepare.id.name(),
        uuid::Uuid::new_v4(),
        prepare.location
    );
    prepare.keep("alias", || json!(alias))?;
    prepare.properties()?.remove("privateEndpointConnections");
    Ok(())
}
