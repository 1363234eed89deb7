//! What private clusters are built from behaves as on Azure: virtual network peerings with their
//! states, bastion hosts and the rules of `AzureBastionSubnet`, private DNS zones with their links
//! and record sets.

mod common;

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::{Config, Emulator};
use axum::http::StatusCode;
use common::Reply;
use serde_json::{Value, json};

const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";
const NET: &str = "api-version=2025-03-01";
const DNS: &str = "api-version=2024-06-01";

async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    let separator = if path.contains('?') { '&' } else { '?' };
    let uri = if path.contains("api-version=") {
        path.to_owned()
    } else {
        format!("{path}{separator}{NET}")
    };
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await
}

fn group(name: &str) -> String {
    format!("{SUB}/resourceGroups/{name}")
}

fn net(group_name: &str, path: &str) -> String {
    format!("{}/providers/Microsoft.Network/{path}", group(group_name))
}

async fn create_group(emulator: &Emulator, name: &str) {
    let created = send(
        emulator,
        "PUT",
        &format!("{}?api-version=2021-04-01", group(name)),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

async fn create_network(emulator: &Emulator, group_name: &str, name: &str, space: &str) -> Reply {
    let created = send(
        emulator,
        "PUT",
        &net(group_name, &format!("virtualNetworks/{name}")),
        Some(json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [space]}}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    created
}

async fn peer(emulator: &Emulator, from: (&str, &str), to: (&str, &str), name: &str) -> Reply {
    send(
        emulator,
        "PUT",
        &net(from.0, &format!("virtualNetworks/{}/virtualNetworkPeerings/{name}", from.1)),
        Some(json!({"properties": {"remoteVirtualNetwork": {"id": net(to.0, &format!("virtualNetworks/{}", to.1))}}})),
    )
    .await
}

async fn peering_state(emulator: &Emulator, group_name: &str, network: &str, name: &str) -> String {
    let read = send(
        emulator,
        "GET",
        &net(
            group_name,
            &format!("virtualNetworks/{network}/virtualNetworkPeerings/{name}"),
        ),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    read.body["properties"]["peeringState"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn peerings_connect_when_both_sides_exist_and_disconnect_when_one_goes() {
    let emulator = Emulator::new(Config::default());
    create_group(&emulator, "hub").await;
    create_group(&emulator, "spoke").await;
    create_network(&emulator, "hub", "hub", "10.0.0.0/16").await;
    create_network(&emulator, "spoke", "spoke", "10.1.0.0/16").await;
    create_network(&emulator, "spoke", "clash", "10.0.128.0/17").await;

    let there = peer(&emulator, ("hub", "hub"), ("spoke", "spoke"), "to-spoke").await;
    assert_eq!(there.status, StatusCode::CREATED, "{}", there.body);
    assert_eq!(there.body["properties"]["peeringState"], "Initiated");
    assert_eq!(
        there.body["properties"]["remoteAddressSpace"]["addressPrefixes"],
        json!(["10.1.0.0/16"])
    );
    assert_eq!(there.body["properties"]["allowVirtualNetworkAccess"], true);
    assert_eq!(
        peering_state(&emulator, "hub", "hub", "to-spoke").await,
        "Initiated"
    );

    let back = peer(&emulator, ("spoke", "spoke"), ("hub", "hub"), "to-hub").await;
    assert_eq!(back.body["properties"]["peeringState"], "Connected");
    assert_eq!(back.body["properties"]["peeringSyncLevel"], "FullyInSync");
    assert_eq!(
        peering_state(&emulator, "hub", "hub", "to-spoke").await,
        "Connected"
    );
    // The network shows its peerings, in their current state.
    let hub = send(&emulator, "GET", &net("hub", "virtualNetworks/hub"), None).await;
    assert_eq!(
        hub.body["properties"]["virtualNetworkPeerings"][0]["properties"]["peeringState"],
        "Connected"
    );

    // Overlapping address spaces cannot be peered.
    let refused = peer(&emulator, ("hub", "hub"), ("spoke", "clash"), "to-clash").await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.body["error"]["code"], "VnetAddressSpacesOverlap",
        "{}",
        refused.body
    );

    // Deleting one side leaves the other disconnected; the remote network may be deleted under a
    // peering, which the resource group's deletion does not remove either.
    let deleted = send(
        &emulator,
        "DELETE",
        &net("spoke", "virtualNetworks/spoke/virtualNetworkPeerings/to-hub"),
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    assert_eq!(
        peering_state(&emulator, "hub", "hub", "to-spoke").await,
        "Disconnected"
    );
    let peer_again = peer(&emulator, ("spoke", "spoke"), ("hub", "hub"), "to-hub").await;
    assert_eq!(peer_again.body["properties"]["peeringState"], "Connected");
    let spoke_gone = send(&emulator, "DELETE", &net("spoke", "virtualNetworks/spoke"), None).await;
    assert_eq!(spoke_gone.status, StatusCode::ACCEPTED, "{}", spoke_gone.body);
    assert_eq!(
        peering_state(&emulator, "hub", "hub", "to-spoke").await,
        "Disconnected"
    );

    // A peering to a network that does not exist is refused.
    let nowhere = peer(&emulator, ("hub", "hub"), ("spoke", "nowhere"), "to-nowhere").await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND, "{}", nowhere.body);
}

/// A security group with every rule Bastion needs, or without the one named.
fn bastion_rules(without: Option<&str>) -> Value {
    let rules = [
        ("AllowHttpsInbound", "Inbound", 120, "Internet", "*", "443"),
        (
            "AllowGatewayManagerInbound",
            "Inbound",
            130,
            "GatewayManager",
            "*",
            "443",
        ),
        (
            "AllowAzureLoadBalancerInbound",
            "Inbound",
            140,
            "AzureLoadBalancer",
            "*",
            "443",
        ),
        (
            "AllowBastionHostCommunication",
            "Inbound",
            150,
            "VirtualNetwork",
            "VirtualNetwork",
            "8080,5701",
        ),
        (
            "AllowSshRdpOutbound",
            "Outbound",
            100,
            "*",
            "VirtualNetwork",
            "22,3389",
        ),
        (
            "AllowAzureCloudOutbound",
            "Outbound",
            110,
            "*",
            "AzureCloud",
            "443",
        ),
        (
            "AllowBastionCommunication",
            "Outbound",
            120,
            "VirtualNetwork",
            "VirtualNetwork",
            "8080,5701",
        ),
        ("AllowHttpOutbound", "Outbound", 130, "*", "Internet", "80"),
    ];
    let rules: Vec<Value> = rules
        .iter()
        .filter(|rule| Some(rule.0) != without)
        .map(|(name, direction, priority, source, destination, ports)| {
            json!({"name": name, "properties": {
                "protocol": "*", "access": "Allow", "direction": direction, "priority": priority,
                "sourceAddressPrefix": source, "sourcePortRange": "*",
                "destinationAddressPrefix": destination,
                "destinationPortRanges": ports.split(',').collect::<Vec<_>>(),
            }})
        })
        .collect();
    json!({"location": "westeurope", "properties": {"securityRules": rules}})
}

async fn subnet(emulator: &Emulator, name: &str, prefix: &str, group_id: Option<&str>) -> Reply {
    let mut properties = json!({"addressPrefix": prefix});
    if let Some(group_id) = group_id {
        properties["networkSecurityGroup"] = json!({"id": group_id});
    }
    send(
        emulator,
        "PUT",
        &net("bastion", &format!("virtualNetworks/vnet/subnets/{name}")),
        Some(json!({"properties": properties})),
    )
    .await
}

async fn public_ip(emulator: &Emulator, name: &str, sku: &str, allocation: &str) -> String {
    let path = net("bastion", &format!("publicIPAddresses/{name}"));
    let created = send(
        emulator,
        "PUT",
        &path,
        Some(json!({"location": "westeurope", "sku": {"name": sku}, "properties": {"publicIPAllocationMethod": allocation}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    path
}

async fn bastion(emulator: &Emulator, subnet_name: &str, address: &str, sku: &str, units: i64) -> Reply {
    send(
        emulator,
        "PUT",
        &net("bastion", "bastionHosts/bastion"),
        Some(json!({
            "location": "westeurope",
            "sku": {"name": sku},
            "properties": {
                "scaleUnits": units,
                "ipConfigurations": [{"name": "default", "properties": {
                    "subnet": {"id": net("bastion", &format!("virtualNetworks/vnet/subnets/{subnet_name}"))},
                    "publicIPAddress": {"id": address},
                }}],
            },
        })),
    )
    .await
}

/// An emulator with the group `bastion` and its network `vnet` (10.0.0.0/16).
async fn with_bastion_network() -> Emulator {
    let emulator = Emulator::new(Config::default());
    create_group(&emulator, "bastion").await;
    create_network(&emulator, "bastion", "vnet", "10.0.0.0/16").await;
    emulator
}

#[tokio::test]
async fn a_security_group_on_the_bastion_subnet_needs_the_rules_bastion_needs() {
    let emulator = with_bastion_network().await;
    let lacking = send(
        &emulator,
        "PUT",
        &net("bastion", "networkSecurityGroups/lacking"),
        Some(bastion_rules(Some("AllowGatewayManagerInbound"))),
    )
    .await;
    let complete = send(
        &emulator,
        "PUT",
        &net("bastion", "networkSecurityGroups/complete"),
        Some(bastion_rules(None)),
    )
    .await;
    let refused = subnet(
        &emulator,
        "AzureBastionSubnet",
        "10.0.0.0/27",
        lacking.body["id"].as_str(),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.body["error"]["code"], "NetworkSecurityGroupNotCompliantForAzureBastionSubnet",
        "{}",
        refused.body
    );
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Inbound GatewayManager port 443"),
        "{}",
        refused.body
    );
    let accepted = subnet(
        &emulator,
        "AzureBastionSubnet",
        "10.0.0.0/27",
        complete.body["id"].as_str(),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.body);
    // Other subnets may use any group.
    let other = subnet(&emulator, "nodes", "10.0.1.0/24", lacking.body["id"].as_str()).await;
    assert_eq!(other.status, StatusCode::CREATED, "{}", other.body);
}

#[tokio::test]
async fn bastion_hosts_need_their_subnet_and_a_standard_static_address() {
    let emulator = with_bastion_network().await;
    assert_eq!(
        subnet(&emulator, "AzureBastionSubnet", "10.0.0.0/27", None)
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        subnet(&emulator, "nodes", "10.0.1.0/24", None).await.status,
        StatusCode::CREATED
    );
    let static_ip = public_ip(&emulator, "pip", "Standard", "Static").await;
    let dynamic_ip = public_ip(&emulator, "basic", "Basic", "Dynamic").await;

    let wrong_subnet = bastion(&emulator, "nodes", &static_ip, "Basic", 2).await;
    assert_eq!(
        wrong_subnet.body["error"]["code"],
        "SubnetNameMustBeAzureBastionSubnet"
    );
    let wrong_ip = bastion(&emulator, "AzureBastionSubnet", &dynamic_ip, "Basic", 2).await;
    assert_eq!(wrong_ip.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        wrong_ip.body["error"]["code"],
        "BastionHostPublicIpMustBeStandardStatic"
    );
    let basic_scaling = bastion(&emulator, "AzureBastionSubnet", &static_ip, "Basic", 4).await;
    assert_eq!(basic_scaling.body["error"]["code"], "InvalidParameter");
    // A /27 holds a host of two units; more need a /26.
    let too_small = bastion(&emulator, "AzureBastionSubnet", &static_ip, "Standard", 4).await;
    assert_eq!(
        too_small.body["error"]["code"],
        "AzureBastionSubnetPrefixTooSmall"
    );

    let created = bastion(&emulator, "AzureBastionSubnet", &static_ip, "Standard", 2).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Updating");
    assert!(created.body["properties"].get("dnsName").is_none());
    let read = send(&emulator, "GET", &net("bastion", "bastionHosts/bastion"), None).await;
    assert_eq!(read.body["properties"]["provisioningState"], "Succeeded");
    assert!(
        read.body["properties"]["dnsName"]
            .as_str()
            .is_some_and(|name| name.ends_with(".bastion.azure.com")),
        "{}",
        read.body
    );
    assert_eq!(read.body["sku"]["name"], "Standard");
    // The subnet and the address show the host's IP configuration, and stay in use.
    let used = send(
        &emulator,
        "GET",
        &net("bastion", "virtualNetworks/vnet/subnets/AzureBastionSubnet"),
        None,
    )
    .await;
    assert!(
        used.body["properties"]["ipConfigurations"][0]["id"]
            .as_str()
            .is_some_and(|id| id.ends_with("bastionHosts/bastion/bastionHostIpConfigurations/default")),
        "{}",
        used.body
    );
    let in_use = send(&emulator, "DELETE", &static_ip, None).await;
    assert_eq!(in_use.status, StatusCode::BAD_REQUEST, "{}", in_use.body);
    let deleted = send(&emulator, "DELETE", &net("bastion", "bastionHosts/bastion"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    let freed = send(&emulator, "DELETE", &static_ip, None).await;
    assert_eq!(freed.status, StatusCode::ACCEPTED, "{}", freed.body);
}

/// An emulator whose operations take 10 s, with the group `dns` and its network `vnet`.
async fn with_dns_network() -> Emulator {
    let emulator = Emulator::new(Config {
        operation_latency: std::time::Duration::from_secs(10),
        ..Config::default()
    });
    create_group(&emulator, "dns").await;
    create_network(&emulator, "dns", "vnet", "10.0.0.0/16").await;
    emulator
}

/// [`with_dns_network`] and the zone `capz.example` with an A record set `apiserver`.
async fn with_zone() -> Emulator {
    let emulator = with_dns_network().await;
    let zone = send(
        &emulator,
        "PUT",
        &dns("capz.example"),
        Some(json!({"location": "global"})),
    )
    .await;
    assert_eq!(zone.status, StatusCode::ACCEPTED, "{}", zone.body);
    emulator.advance_clock(std::time::Duration::from_secs(11));
    let record = send(
        &emulator,
        "PUT",
        &dns("capz.example/A/apiserver"),
        Some(json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "10.0.0.100"}]}})),
    )
    .await;
    assert_eq!(record.status, StatusCode::CREATED, "{}", record.body);
    emulator
}

fn dns(path: &str) -> String {
    format!(
        "{}/providers/Microsoft.Network/privateDnsZones/{path}?{DNS}",
        group("dns")
    )
}

#[tokio::test]
async fn private_dns_zones_are_global_written_as_the_dns_provider_does_and_count_their_records() {
    let emulator = with_dns_network().await;

    let regional = send(
        &emulator,
        "PUT",
        &dns("capz.example"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(regional.status, StatusCode::BAD_REQUEST);
    let single_label = send(
        &emulator,
        "PUT",
        &dns("capz"),
        Some(json!({"location": "global"})),
    )
    .await;
    assert_eq!(
        single_label.status,
        StatusCode::BAD_REQUEST,
        "{}",
        single_label.body
    );

    let created = send(
        &emulator,
        "PUT",
        &dns("capz.example"),
        Some(json!({"location": "global"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::ACCEPTED, "{}", created.body);
    assert_eq!(created.body, json!({}));
    let status_url = created.header("azure-asyncoperation").to_owned();
    assert!(
        status_url.contains("/resourceGroups/dns/providers/Microsoft.Network/privateDnsOperationStatuses/")
    );
    assert!(
        created
            .header("location")
            .contains("/privateDnsOperationResults/")
    );
    let path = status_url
        .split_once("://")
        .map_or("", |(_, rest)| &rest[rest.find('/').unwrap_or(0)..]);
    let running = send(&emulator, "GET", path, None).await;
    assert_eq!(running.status, StatusCode::ACCEPTED);
    assert_eq!(running.body["status"], "InProgress");
    emulator.advance_clock(std::time::Duration::from_secs(11));
    let done = send(&emulator, "GET", path, None).await;
    assert_eq!(
        (done.status, done.body["status"].as_str()),
        (StatusCode::OK, Some("Succeeded"))
    );

    let zone = send(&emulator, "GET", &dns("capz.example"), None).await;
    assert_eq!(zone.body["location"], "global");
    assert_eq!(
        zone.body["properties"]["numberOfRecordSets"], 1,
        "the SOA record set: {}",
        zone.body
    );
    let soa = send(&emulator, "GET", &dns("capz.example/SOA/@"), None).await;
    assert_eq!(soa.body["properties"]["fqdn"], "capz.example.");

    let record = send(
        &emulator,
        "PUT",
        &dns("capz.example/A/apiserver"),
        Some(json!({"properties": {"ttl": 300, "aRecords": [{"ipv4Address": "10.0.0.100"}]}})),
    )
    .await;
    assert_eq!(record.status, StatusCode::CREATED, "{}", record.body);
    assert_eq!(record.body["properties"]["fqdn"], "apiserver.capz.example.");
    let bad_address = send(
        &emulator,
        "PUT",
        &dns("capz.example/A/bad"),
        Some(json!({"properties": {"aRecords": [{"ipv4Address": "fd00::1"}]}})),
    )
    .await;
    assert_eq!(bad_address.status, StatusCode::BAD_REQUEST);

    let zone = send(&emulator, "GET", &dns("capz.example"), None).await;
    assert_eq!(zone.body["properties"]["numberOfRecordSets"], 2);
}

#[tokio::test]
async fn a_private_dns_zone_cannot_be_deleted_while_linked_and_takes_its_records_along() {
    let emulator = with_zone().await;
    let link = send(
        &emulator,
        "PUT",
        &dns("capz.example/virtualNetworkLinks/vnet"),
        Some(json!({"location": "global", "properties": {
            "registrationEnabled": false,
            "virtualNetwork": {"id": net("dns", "virtualNetworks/vnet")},
        }})),
    )
    .await;
    assert_eq!(link.status, StatusCode::ACCEPTED, "{}", link.body);
    emulator.advance_clock(std::time::Duration::from_secs(11));
    let zone = send(&emulator, "GET", &dns("capz.example"), None).await;
    assert_eq!(zone.body["properties"]["numberOfVirtualNetworkLinks"], 1);
    let link = send(
        &emulator,
        "GET",
        &dns("capz.example/virtualNetworkLinks/vnet"),
        None,
    )
    .await;
    assert_eq!(link.body["properties"]["virtualNetworkLinkState"], "Completed");
    assert!(link.header("etag").starts_with('"'), "{:?}", link.headers);

    let linked = send(&emulator, "DELETE", &dns("capz.example"), None).await;
    assert_eq!(linked.status, StatusCode::CONFLICT);
    assert_eq!(linked.body["error"]["code"], "CannotDeleteResource");
    send(
        &emulator,
        "DELETE",
        &dns("capz.example/virtualNetworkLinks/vnet"),
        None,
    )
    .await;
    emulator.advance_clock(std::time::Duration::from_secs(11));
    let deleted = send(&emulator, "DELETE", &dns("capz.example"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
    emulator.advance_clock(std::time::Duration::from_secs(11));
    // Its record sets went with it.
    let gone = send(&emulator, "GET", &dns("capz.example/A/apiserver"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

/// An emulator with the group `pe`, its network `vnet` with the subnet `endpoints`
/// (10.0.2.0/24), and the storage account `capzstore`.
async fn with_storage_account() -> Emulator {
    let emulator = Emulator::new(Config::default());
    create_group(&emulator, "pe").await;
    create_network(&emulator, "pe", "vnet", "10.0.0.0/16").await;
    let subnet = send(
        &emulator,
        "PUT",
        &net("pe", "virtualNetworks/vnet/subnets/endpoints"),
        Some(json!({"properties": {"addressPrefix": "10.0.2.0/24"}})),
    )
    .await;
    assert_eq!(subnet.status, StatusCode::CREATED, "{}", subnet.body);
    let account = send(
        &emulator,
        "PUT",
        &storage("capzstore"),
        Some(json!({"location": "westeurope", "kind": "StorageV2", "sku": {"name": "Standard_LRS"}})),
    )
    .await;
    assert_eq!(account.status, StatusCode::ACCEPTED, "{}", account.body);
    emulator
}

fn storage(name: &str) -> String {
    format!(
        "{}/providers/Microsoft.Storage/storageAccounts/{name}?api-version=2023-05-01",
        group("pe")
    )
}

fn endpoint_body(target: &str, group_id: &str) -> Value {
    json!({"location": "westeurope", "properties": {
        "subnet": {"id": net("pe", "virtualNetworks/vnet/subnets/endpoints")},
        "privateLinkServiceConnections": [{"name": "blob", "properties": {
            "privateLinkServiceId": target, "groupIds": [group_id],
        }}],
    }})
}

#[tokio::test]
async fn private_endpoints_connect_storage_accounts_through_an_interface_of_their_own() {
    let emulator = with_storage_account().await;
    let account = send(&emulator, "GET", &storage("capzstore"), None).await;
    assert_eq!(account.status, StatusCode::OK, "{}", account.body);
    assert_eq!(
        account.body["properties"]["privateEndpointConnections"],
        json!([])
    );
    let account_id = account.body["id"].as_str().unwrap_or_default().to_owned();

    let wrong_group = send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/pe"),
        Some(endpoint_body(&account_id, "disk")),
    )
    .await;
    assert_eq!(
        wrong_group.status,
        StatusCode::BAD_REQUEST,
        "{}",
        wrong_group.body
    );
    let created = send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/pe"),
        Some(endpoint_body(&account_id, "blob")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["customDnsConfigs"], json!([]));
    let endpoint = send(&emulator, "GET", &net("pe", "privateEndpoints/pe"), None).await;
    let connection = &endpoint.body["properties"]["privateLinkServiceConnections"][0]["properties"];
    assert_eq!(
        connection["privateLinkServiceConnectionState"]["status"],
        "Approved"
    );
    assert_eq!(
        endpoint.body["properties"]["customDnsConfigs"][0]["fqdn"],
        "capzstore.blob.core.windows.net"
    );
    let address = endpoint.body["properties"]["customDnsConfigs"][0]["ipAddresses"][0].clone();
    assert_eq!(address, "10.0.2.4", "{}", endpoint.body);

    // The interface Azure made: in the subnet, naming the endpoint, and not to be deleted alone.
    let nic_id = endpoint.body["properties"]["networkInterfaces"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(nic_id.contains("/networkInterfaces/pe.nic."), "{nic_id}");
    let nic = send(&emulator, "GET", &nic_id, None).await;
    assert_eq!(nic.status, StatusCode::OK, "{}", nic.body);
    assert_eq!(
        nic.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"],
        address
    );
    assert!(
        nic.body["properties"]["privateEndpoint"]["id"]
            .as_str()
            .is_some_and(|id| id.ends_with("privateEndpoints/pe"))
    );
    let alone = send(&emulator, "DELETE", &nic_id, None).await;
    assert_eq!(alone.status, StatusCode::BAD_REQUEST, "{}", alone.body);
    let subnet = send(
        &emulator,
        "GET",
        &net("pe", "virtualNetworks/vnet/subnets/endpoints"),
        None,
    )
    .await;
    assert_eq!(
        subnet.body["properties"]["privateEndpoints"][0]["id"],
        endpoint.body["id"]
    );

    // The account lists the connection.
    let account = send(&emulator, "GET", &storage("capzstore"), None).await;
    let listed = &account.body["properties"]["privateEndpointConnections"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{}", account.body);
    assert_eq!(
        listed[0]["properties"]["privateEndpoint"]["id"],
        endpoint.body["id"]
    );

    // Deleting the endpoint takes its interface along.
    let deleted = send(&emulator, "DELETE", &net("pe", "privateEndpoints/pe"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    assert_eq!(
        send(&emulator, "GET", &nic_id, None).await.status,
        StatusCode::NOT_FOUND
    );
    let account = send(&emulator, "GET", &storage("capzstore"), None).await;
    assert_eq!(
        account.body["properties"]["privateEndpointConnections"],
        json!([])
    );
}

#[tokio::test]
async fn zone_groups_write_the_record_of_the_endpoints_target() {
    let emulator = with_storage_account().await;
    let account_id = format!(
        "{}/providers/Microsoft.Storage/storageAccounts/capzstore",
        group("pe")
    );
    send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/pe"),
        Some(endpoint_body(&account_id, "blob")),
    )
    .await;
    let zone = format!(
        "{}/providers/Microsoft.Network/privateDnsZones/privatelink.blob.core.windows.net",
        group("pe")
    );
    send(
        &emulator,
        "PUT",
        &format!("{zone}?{DNS}"),
        Some(json!({"location": "global"})),
    )
    .await;
    let zone_group = send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/pe/privateDnsZoneGroups/default"),
        Some(json!({"properties": {"privateDnsZoneConfigs": [{"name": "blob", "properties": {"privateDnsZoneId": zone}}]}})),
    )
    .await;
    assert_eq!(zone_group.status, StatusCode::CREATED, "{}", zone_group.body);
    let record = send(&emulator, "GET", &format!("{zone}/A/capzstore?{DNS}"), None).await;
    assert_eq!(record.status, StatusCode::OK, "{}", record.body);
    assert_eq!(
        record.body["properties"]["aRecords"][0]["ipv4Address"],
        "10.0.2.4"
    );
    let read = send(
        &emulator,
        "GET",
        &net("pe", "privateEndpoints/pe/privateDnsZoneGroups/default"),
        None,
    )
    .await;
    let records = &read.body["properties"]["privateDnsZoneConfigs"][0]["properties"]["recordSets"][0];
    assert_eq!(records["fqdn"], "capzstore.privatelink.blob.core.windows.net");
    assert_eq!(records["provisioningState"], "Succeeded");
    send(
        &emulator,
        "DELETE",
        &net("pe", "privateEndpoints/pe/privateDnsZoneGroups/default"),
        None,
    )
    .await;
    let gone = send(&emulator, "GET", &format!("{zone}/A/capzstore?{DNS}"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
}

#[tokio::test]
async fn link_services_stand_behind_internal_frontends_and_approve_their_own_subscription() {
    let emulator = with_storage_account().await;
    // A private link service behind an internal load balancer's frontend.
    let balancer = send(
        &emulator,
        "PUT",
        &net("pe", "loadBalancers/internal"),
        Some(
            json!({"location": "westeurope", "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "fe", "properties": {
                    "subnet": {"id": net("pe", "virtualNetworks/vnet/subnets/endpoints")},
                }}],
            }}),
        ),
    )
    .await;
    assert_eq!(balancer.status, StatusCode::CREATED, "{}", balancer.body);
    let service = send(
        &emulator,
        "PUT",
        &net("pe", "privateLinkServices/pls"),
        Some(json!({"location": "westeurope", "properties": {
            "loadBalancerFrontendIpConfigurations": [{"id": net("pe", "loadBalancers/internal/frontendIPConfigurations/fe")}],
            "ipConfigurations": [{"name": "nat", "properties": {
                "subnet": {"id": net("pe", "virtualNetworks/vnet/subnets/endpoints")},
            }}],
        }})),
    )
    .await;
    assert_eq!(service.status, StatusCode::CREATED, "{}", service.body);
    assert!(
        service.body["properties"]["alias"]
            .as_str()
            .is_some_and(|alias| alias.ends_with(".azure.privatelinkservice"))
    );
    let service_id = service.body["id"].as_str().unwrap_or_default().to_owned();
    let mut manual = endpoint_body(&service_id, "");
    manual["properties"]["manualPrivateLinkServiceConnections"] =
        manual["properties"]["privateLinkServiceConnections"].take();
    manual["properties"]["manualPrivateLinkServiceConnections"][0]["properties"]["groupIds"] = json!([]);
    manual["properties"]["manualPrivateLinkServiceConnections"][0]["properties"]["requestMessage"] =
        json!("please");
    let pending = send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/manual"),
        Some(manual),
    )
    .await;
    assert_eq!(pending.status, StatusCode::CREATED, "{}", pending.body);
    let state = &pending.body["properties"]["manualPrivateLinkServiceConnections"][0]["properties"]["privateLinkServiceConnectionState"];
    assert_eq!(state["status"], "Pending");
    let mut automatic = endpoint_body(&service_id, "");
    automatic["properties"]["privateLinkServiceConnections"][0]["properties"]["groupIds"] = json!([]);
    let approved = send(
        &emulator,
        "PUT",
        &net("pe", "privateEndpoints/auto"),
        Some(automatic),
    )
    .await;
    let state = &approved.body["properties"]["privateLinkServiceConnections"][0]["properties"]["privateLinkServiceConnectionState"];
    assert_eq!(state["status"], "Approved");
    let service = send(&emulator, "GET", &net("pe", "privateLinkServices/pls"), None).await;
    assert_eq!(
        service.body["properties"]["privateEndpointConnections"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // A target deleted under an endpoint leaves it disconnected.
    let removed = send(&emulator, "DELETE", &net("pe", "privateLinkServices/pls"), None).await;
    assert_eq!(removed.status, StatusCode::ACCEPTED, "{}", removed.body);
    let orphan = send(&emulator, "GET", &net("pe", "privateEndpoints/auto"), None).await;
    let state = &orphan.body["properties"]["privateLinkServiceConnections"][0]["properties"]["privateLinkServiceConnectionState"];
    assert_eq!(state["status"], "Disconnected");
}
