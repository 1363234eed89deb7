//! Network resources behave as Azure's do: referential integrity, address allocation,
//! back-references, ETag preconditions, load balancer parts, lists, long-running operations and
//! injected faults.

mod common;

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::faults::Fault;
use arm_emulator::{Config, Emulator};
use axum::http::StatusCode;
use common::Reply;
use serde_json::{Value, json};
use tower::ServiceExt;

const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/net";
const NET: &str = "api-version=2024-05-01";

/// Sends a request as the default principal; network paths without an api-version get one.
async fn send_with(
    emulator: &Emulator,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    let separator = if path.contains('?') { '&' } else { '?' };
    let uri = if path.contains("api-version=") {
        path.to_owned()
    } else {
        format!("{path}{separator}{NET}")
    };
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, headers).await
}

async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    send_with(emulator, method, path, body, &[]).await
}

fn net(path: &str) -> String {
    format!("{RG}/providers/Microsoft.Network/{path}")
}

/// An emulator with the `net` group, a virtual network `vnet` (10.0.0.0/16) and a subnet `nodes`
/// (10.0.1.0/24).
async fn with_network() -> Emulator {
    let emulator = Emulator::new(Config::default());
    let vnet = common::group_with_network(&emulator, RG, "westeurope").await;
    assert_eq!(vnet.body["properties"]["provisioningState"], "Updating");
    assert!(vnet.headers.contains_key("azure-asyncoperation"));
    emulator
}

fn nic_body(subnet: &str) -> Value {
    json!({
        "location": "westeurope",
        "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {"subnet": {"id": subnet}}}]}
    })
}

#[tokio::test]
async fn operations_report_progress_until_they_finish() {
    let emulator = Emulator::new(Config {
        operation_latency: std::time::Duration::from_secs(30),
        ..Config::default()
    });
    send(
        &emulator,
        "PUT",
        &format!("{RG}?api-version=2021-04-01"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let created = send(
        &emulator,
        "PUT",
        &net("networkSecurityGroups/nsg"),
        Some(json!({"location": "West Europe"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(created.body["location"], "westeurope");
    assert_eq!(
        created.body["properties"]["defaultSecurityRules"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    let status_url = created.headers["azure-asyncoperation"]
        .to_str()
        .unwrap()
        .to_owned();
    let status_path = status_url.trim_start_matches("http://localhost");
    assert_eq!(
        send(&emulator, "GET", status_path, None).await.body,
        json!({"status": "InProgress"})
    );
    let during = send(&emulator, "GET", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(during.body["properties"]["provisioningState"], "Updating");
    emulator.advance_clock(std::time::Duration::from_secs(31));
    assert_eq!(
        send(&emulator, "GET", status_path, None).await.body,
        json!({"status": "Succeeded"})
    );
    let after = send(&emulator, "GET", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(after.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(
        after.headers["etag"].to_str().unwrap(),
        after.body["etag"].as_str().unwrap()
    );

    let deleted = send(&emulator, "DELETE", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    assert!(deleted.headers.contains_key("location") && deleted.headers.contains_key("retry-after"));
    assert_eq!(
        send(&emulator, "GET", &net("networkSecurityGroups/nsg"), None)
            .await
            .body["properties"]["provisioningState"],
        "Deleting"
    );
    emulator.advance_clock(std::time::Duration::from_secs(31));
    let gone = send(&emulator, "GET", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.body["error"]["code"], "ResourceNotFound");
}

#[tokio::test]
async fn nics_get_addresses_from_their_subnet_and_keep_it_in_use() {
    let emulator = with_network().await;
    let subnet = format!("{}/subnets/nodes", net("virtualNetworks/vnet"));
    let missing = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/nic0"),
        Some(nic_body(&format!(
            "{}/subnets/other",
            net("virtualNetworks/vnet")
        ))),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    assert_eq!(missing.body["error"]["code"], "NotFound");

    let first = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/nic1"),
        Some(nic_body(&subnet)),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let second = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/nic2"),
        Some(nic_body(&subnet)),
    )
    .await;
    let address = |reply: &Reply| {
        reply.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"].clone()
    };
    assert_eq!(address(&first), "10.0.1.4");
    assert_eq!(address(&second), "10.0.1.5");
    assert_eq!(
        first.body["properties"]["ipConfigurations"][0]["properties"]["primary"],
        true
    );
    // Updating a NIC keeps its address.
    let again = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/nic1"),
        Some(nic_body(&subnet)),
    )
    .await;
    assert_eq!(
        (again.status, address(&again)),
        (StatusCode::OK, json!("10.0.1.4"))
    );

    let subnet_now = send(&emulator, "GET", &subnet, None).await;
    let users: Vec<&str> = subnet_now.body["properties"]["ipConfigurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|reference| reference["id"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].ends_with("/networkInterfaces/nic1/ipConfigurations/ipconfig1"));

    let blocked = send(&emulator, "DELETE", &subnet, None).await;
    assert_eq!(blocked.status, StatusCode::BAD_REQUEST);
    assert_eq!(blocked.body["error"]["code"], "InUseSubnetCannotBeDeleted");
    let blocked = send(&emulator, "DELETE", &net("virtualNetworks/vnet"), None).await;
    assert_eq!(blocked.body["error"]["code"], "InUseSubnetCannotBeDeleted");
    // A PUT of the network without the subnet would delete it: refused too.
    let dropping = send(
        &emulator,
        "PUT",
        &net("virtualNetworks/vnet"),
        Some(json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}})),
    )
    .await;
    assert_eq!(dropping.body["error"]["code"], "InUseSubnetCannotBeDeleted");

    for nic in ["nic1", "nic2"] {
        assert_eq!(
            send(
                &emulator,
                "DELETE",
                &net(&format!("networkInterfaces/{nic}")),
                None
            )
            .await
            .status,
            StatusCode::ACCEPTED
        );
    }
    // Deletions finish by the next request (no latency configured).
    assert_eq!(
        send(&emulator, "DELETE", &subnet, None).await.status,
        StatusCode::ACCEPTED
    );
    let listed = send(
        &emulator,
        "GET",
        &format!("{}/subnets", net("virtualNetworks/vnet")),
        None,
    )
    .await;
    assert_eq!(listed.body, json!({"value": []}));
}

#[tokio::test]
async fn subnets_must_fit_the_network_and_not_overlap() {
    let emulator = with_network().await;
    let subnets = format!("{}/subnets", net("virtualNetworks/vnet"));
    let outside = send(
        &emulator,
        "PUT",
        &format!("{subnets}/far"),
        Some(json!({"properties": {"addressPrefix": "10.1.0.0/24"}})),
    )
    .await;
    assert_eq!(outside.body["error"]["code"], "NetcfgSubnetRangeOutsideVnet");
    let overlapping = send(
        &emulator,
        "PUT",
        &format!("{subnets}/twin"),
        Some(json!({"properties": {"addressPrefix": "10.0.1.128/25"}})),
    )
    .await;
    assert_eq!(overlapping.body["error"]["code"], "NetcfgSubnetRangesOverlap");
    let bad = send(
        &emulator,
        "PUT",
        &format!("{subnets}/bad"),
        Some(json!({"properties": {"addressPrefix": 7}})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("properties.addressPrefix"),
        "{}",
        bad.body
    );
    let fine = send(
        &emulator,
        "PUT",
        &format!("{subnets}/cp"),
        Some(json!({"properties": {"addressPrefix": "10.0.0.0/24"}})),
    )
    .await;
    assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.body);
    // The child shares its parent's etag, and the parent lists both subnets.
    let vnet = send(&emulator, "GET", &net("virtualNetworks/vnet"), None).await;
    assert_eq!(
        vnet.body["properties"]["subnets"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(vnet.body["etag"], vnet.body["properties"]["subnets"][1]["etag"]);
}

#[tokio::test]
async fn subnets_complete_their_delegations_and_service_endpoints() {
    let emulator = with_network().await;
    let subnet = format!("{}/subnets/apps", net("virtualNetworks/vnet"));
    let created = send(
        &emulator,
        "PUT",
        &subnet,
        Some(json!({"properties": {
            "addressPrefix": "10.0.2.0/24",
            "delegations": [{"name": "aci", "properties": {"serviceName": "Microsoft.ContainerInstance/containerGroups"}}],
            "serviceEndpoints": [
                {"service": "Microsoft.Storage"},
                {"service": "Microsoft.Sql"},
                {"service": "Microsoft.KeyVault"},
                {"service": "Microsoft.ContainerRegistry", "locations": ["westeurope"]}
            ]
        }})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator.advance_clock(std::time::Duration::from_secs(1));
    let read = send(&emulator, "GET", &subnet, None).await;
    let properties = &read.body["properties"];
    let delegation = &properties["delegations"][0];
    assert_eq!(delegation["id"], format!("{subnet}/delegations/aci"));
    assert_eq!(
        delegation["type"],
        "Microsoft.Network/virtualNetworks/subnets/delegations"
    );
    assert_eq!(
        delegation["properties"],
        json!({
            "provisioningState": "Succeeded",
            "serviceName": "Microsoft.ContainerInstance/containerGroups",
            "actions": ["Microsoft.Network/virtualNetworks/subnets/action"]
        })
    );
    assert_eq!(
        properties["serviceEndpoints"],
        json!([
            {"provisioningState": "Succeeded", "service": "Microsoft.Storage", "locations": ["westeurope", "northeurope"]},
            {"provisioningState": "Succeeded", "service": "Microsoft.Sql", "locations": ["westeurope"]},
            {"provisioningState": "Succeeded", "service": "Microsoft.KeyVault", "locations": ["*"]},
            {"provisioningState": "Succeeded", "service": "Microsoft.ContainerRegistry", "locations": ["westeurope"]}
        ])
    );
    // A subnet that asks for none shows none, as Azure's do.
    let plain = send(
        &emulator,
        "GET",
        &format!("{}/subnets/nodes", net("virtualNetworks/vnet")),
        None,
    )
    .await;
    assert!(
        plain.body["properties"].get("serviceEndpoints").is_none(),
        "{}",
        plain.body
    );
    let nameless = send(
        &emulator,
        "PUT",
        &subnet,
        Some(json!({"properties": {"addressPrefix": "10.0.2.0/24", "serviceEndpoints": [{"locations": ["*"]}]}})),
    )
    .await;
    assert_eq!(nameless.status, StatusCode::BAD_REQUEST, "{}", nameless.body);
    assert!(
        nameless.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("properties.serviceEndpoints[0].service"),
        "{}",
        nameless.body
    );
}

#[tokio::test]
async fn single_address_ipv6_prefixes_are_prefixes_like_any_other() {
    let emulator = with_network().await;
    let created = send(
        &emulator,
        "PUT",
        &net("virtualNetworks/v6"),
        Some(json!({"location": "westeurope", "properties": {
            "addressSpace": {"addressPrefixes": ["fd00::/128", "::/0"]},
            "subnets": [{"name": "host", "properties": {"addressPrefix": "fd00::/128"}}]
        }})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let subnet = send(&emulator, "GET", &net("virtualNetworks/v6/subnets/host"), None).await;
    assert_eq!(subnet.body["properties"]["addressPrefix"], "fd00::/128");
}

#[tokio::test]
async fn names_the_network_provider_refuses_get_invalid_resource_name() {
    let emulator = with_network().await;
    for name in ["dot.", "-dash", "a%20b", &"n".repeat(81)] {
        let refused = send(
            &emulator,
            "PUT",
            &net(&format!("networkSecurityGroups/{name}")),
            Some(json!({"location": "westeurope"})),
        )
        .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{name}");
        assert_eq!(refused.body["error"]["code"], "InvalidResourceName");
        assert_eq!(refused.body["error"]["details"], json!([]));
    }
    // A child named in its parent's body must be reachable at a path of its own.
    let vnet = net("virtualNetworks/vnet");
    let refused = send(
        &emulator,
        "PUT",
        &vnet,
        Some(json!({"location": "westeurope", "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": [
                {"name": "nodes", "properties": {"addressPrefix": "10.0.1.0/24"}},
                {"name": format!("{vnet}/subnets/other"), "properties": {"addressPrefix": "10.0.2.0/24"}}
            ]
        }})),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "InvalidResourceName");
    let kept = send(&emulator, "GET", &vnet, None).await;
    assert_eq!(
        kept.body["properties"]["subnets"].as_array().map(Vec::len),
        Some(1)
    );
    let fine = send(
        &emulator,
        "PUT",
        &net("networkSecurityGroups/capz_cp-nsg.v1_"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.body);
}

#[tokio::test]
async fn references_must_be_resource_ids_of_the_type_their_property_names() {
    let emulator = with_network().await;
    let nsg = net("networkSecurityGroups/nsg");
    let created = send(&emulator, "PUT", &nsg, Some(json!({"location": "westeurope"}))).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let subnet = format!("{}/subnets/nodes", net("virtualNetworks/vnet"));
    let with_table =
        |table: Value| json!({"properties": {"addressPrefix": "10.0.1.0/24", "routeTable": table}});

    let malformed = send(&emulator, "PUT", &subnet, Some(with_table(json!({"id": "/"})))).await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.body["error"]["code"], "LinkedInvalidPropertyId");
    assert!(
        malformed.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'properties.routeTable.id'"),
        "{}",
        malformed.body
    );
    let not_text = send(&emulator, "PUT", &subnet, Some(with_table(json!({"id": 5})))).await;
    assert_eq!(not_text.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_text.body["error"]["code"], "InvalidRequestContent");
    assert!(
        not_text.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'properties.routeTable.id'")
    );
    // A security group exists at that id, but it is no route table.
    let wrong_type = send(&emulator, "PUT", &subnet, Some(with_table(json!({"id": nsg})))).await;
    assert_eq!(wrong_type.status, StatusCode::NOT_FOUND, "{}", wrong_type.body);
    assert_eq!(wrong_type.body["error"]["code"], "NotFound");
    let kept = send(&emulator, "GET", &subnet, None).await;
    assert!(
        kept.body["properties"].get("routeTable").is_none(),
        "{}",
        kept.body
    );

    let gateway = send(
        &emulator,
        "PUT",
        &net("natGateways/nat"),
        Some(json!({"location": "westeurope", "properties": {"publicIpAddresses": [{"id": nsg}]}})),
    )
    .await;
    assert_eq!(gateway.status, StatusCode::NOT_FOUND, "{}", gateway.body);

    // Tags are the client's own strings, even one called `id`.
    for tag in [
        "not-an-id",
        "/subscriptions/00000000-0000-0000-0000-000000000000/nothing",
    ] {
        let tagged = send(
            &emulator,
            "PUT",
            &nsg,
            Some(json!({"location": "westeurope", "tags": {"id": tag}})),
        )
        .await;
        assert_eq!(tagged.status, StatusCode::OK, "{}", tagged.body);
    }
}

#[tokio::test]
async fn if_match_guards_against_lost_updates() {
    let emulator = with_network().await;
    let nsg = net("networkSecurityGroups/nsg");
    let created = send(&emulator, "PUT", &nsg, Some(json!({"location": "westeurope"}))).await;
    let etag = created.body["etag"].as_str().unwrap().to_owned();
    let rule = json!({"location": "westeurope", "properties": {"securityRules": [{"name": "ssh", "properties": {
        "protocol": "Tcp", "access": "Allow", "direction": "Inbound", "priority": 100,
        "sourcePortRange": "*", "destinationPortRange": "22", "sourceAddressPrefix": "*", "destinationAddressPrefix": "*"}}]}});
    let updated = send_with(&emulator, "PUT", &nsg, Some(rule.clone()), &[("if-match", &etag)]).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    let stale = send_with(&emulator, "PUT", &nsg, Some(rule.clone()), &[("if-match", &etag)]).await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    let exists = send_with(&emulator, "PUT", &nsg, Some(rule), &[("if-none-match", "*")]).await;
    assert_eq!(exists.status, StatusCode::PRECONDITION_FAILED);
    let bad_priority = send(
        &emulator,
        "PUT",
        &format!("{nsg}/securityRules/low"),
        Some(json!({"properties": {"protocol": "Tcp", "access": "Allow", "direction": "Inbound", "priority": 5000,
            "sourcePortRange": "*", "destinationPortRange": "*", "sourceAddressPrefix": "*", "destinationAddressPrefix": "*"}})),
    )
    .await;
    assert_eq!(bad_priority.body["error"]["code"], "SecurityRuleInvalidPriority");
}

#[tokio::test]
async fn load_balancers_link_their_parts_and_nics_join_pools() {
    let emulator = with_network().await;
    let ip = send(
        &emulator,
        "PUT",
        &net("publicIPAddresses/api"),
        Some(json!({"location": "westeurope", "sku": {"name": "Standard"}, "properties": {"dnsSettings": {"domainNameLabel": "capz-api"}}})),
    )
    .await;
    assert_eq!(ip.status, StatusCode::CREATED, "{}", ip.body);
    let ip = send(&emulator, "GET", &net("publicIPAddresses/api"), None).await;
    assert_eq!(
        ip.body["properties"]["dnsSettings"]["fqdn"],
        "capz-api.westeurope.cloudapp.azure.com"
    );
    assert_eq!(ip.body["properties"]["publicIPAllocationMethod"], "Static");
    assert!(
        ip.body["properties"]["ipAddress"]
            .as_str()
            .unwrap()
            .starts_with("20.")
    );

    let lb = net("loadBalancers/lb");
    let part = |kind: &str, name: &str| json!({"id": format!("{lb}/{kind}/{name}")});
    let body = json!({
        "location": "westeurope",
        "sku": {"name": "Standard"},
        "properties": {
            "frontendIPConfigurations": [{"name": "fe", "properties": {"publicIPAddress": {"id": net("publicIPAddresses/api")}}}],
            "backendAddressPools": [{"name": "pool"}],
            "probes": [{"name": "https", "properties": {"protocol": "Https", "port": 6443, "requestPath": "/readyz"}}],
            "loadBalancingRules": [{"name": "api", "properties": {
                "frontendIPConfiguration": part("frontendIPConfigurations", "fe"),
                "backendAddressPool": part("backendAddressPools", "pool"),
                "probe": part("probes", "https"),
                "protocol": "Tcp", "frontendPort": 6443, "backendPort": 6443}}],
            "outboundRules": [{"name": "out", "properties": {
                "frontendIPConfigurations": [part("frontendIPConfigurations", "fe")],
                "backendAddressPool": part("backendAddressPools", "pool"),
                "protocol": "All"}}]
        }
    });
    let created = send(&emulator, "PUT", &lb, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let frontend = &created.body["properties"]["frontendIPConfigurations"][0]["properties"];
    assert_eq!(
        frontend["loadBalancingRules"][0]["id"],
        format!("{lb}/loadBalancingRules/api")
    );
    assert_eq!(
        frontend["outboundRules"][0]["id"],
        format!("{lb}/outboundRules/out")
    );
    assert_eq!(
        created.body["properties"]["probes"][0]["properties"]["loadBalancingRules"][0]["id"],
        format!("{lb}/loadBalancingRules/api")
    );

    let nat = send(
        &emulator,
        "PUT",
        &format!("{lb}/inboundNatRules/ssh-0"),
        Some(json!({"properties": {"frontendIPConfiguration": part("frontendIPConfigurations", "fe"), "frontendPort": 2200, "backendPort": 22}})),
    )
    .await;
    assert_eq!(nat.status, StatusCode::CREATED, "{}", nat.body);
    assert_eq!(nat.body["properties"]["protocol"], "Tcp");

    let subnet = format!("{}/subnets/nodes", net("virtualNetworks/vnet"));
    let nic = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/cp0"),
        Some(json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {
            "subnet": {"id": subnet},
            "loadBalancerBackendAddressPools": [part("backendAddressPools", "pool")],
            "loadBalancerInboundNatRules": [part("inboundNatRules", "ssh-0")]}}]}})),
    )
    .await;
    assert_eq!(nic.status, StatusCode::CREATED, "{}", nic.body);
    let pool = send(&emulator, "GET", &format!("{lb}/backendAddressPools/pool"), None).await;
    assert_eq!(
        pool.body["properties"]["backendIPConfigurations"][0]["id"],
        format!("{}/ipConfigurations/ipconfig1", net("networkInterfaces/cp0"))
    );
    let nat = send(&emulator, "GET", &format!("{lb}/inboundNatRules/ssh-0"), None).await;
    assert!(
        nat.body["properties"]["backendIPConfiguration"]["id"]
            .as_str()
            .unwrap()
            .ends_with("/cp0/ipConfigurations/ipconfig1")
    );
    let ip = send(&emulator, "GET", &net("publicIPAddresses/api"), None).await;
    assert_eq!(
        ip.body["properties"]["ipConfiguration"]["id"],
        format!("{lb}/frontendIPConfigurations/fe")
    );
    let blocked = send(&emulator, "DELETE", &net("publicIPAddresses/api"), None).await;
    assert_eq!(blocked.body["error"]["code"], "PublicIPAddressCannotBeDeleted");
}

#[tokio::test]
async fn lists_page_and_cover_the_subscription() {
    let emulator = Emulator::new(Config {
        page_size: 2,
        ..Config::default()
    });
    for group in ["a", "b"] {
        send(
            &emulator,
            "PUT",
            &format!("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{group}?api-version=2021-04-01"),
            Some(json!({"location": "westeurope"})),
        )
        .await;
        for index in 0..2 {
            let path = format!(
                "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{group}/providers/Microsoft.Network/routeTables/rt{index}"
            );
            assert_eq!(
                send(&emulator, "PUT", &path, Some(json!({"location": "westeurope"})))
                    .await
                    .status,
                StatusCode::CREATED
            );
        }
    }
    let first = send(
        &emulator,
        "GET",
        "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Network/routeTables",
        None,
    )
    .await;
    assert_eq!(first.body["value"].as_array().map(Vec::len), Some(2));
    let next = first.body["nextLink"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://localhost")
        .to_owned();
    let second = send(&emulator, "GET", &next, None).await;
    assert_eq!(second.body["value"].as_array().map(Vec::len), Some(2));
    assert!(second.body.get("nextLink").is_none());
    let in_group = send(&emulator, "GET", "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/a/providers/Microsoft.Network/routeTables", None).await;
    assert_eq!(in_group.body["value"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn injected_faults_fail_throttle_and_break_operations() {
    let emulator = with_network().await;
    emulator.add_fault(Fault {
        method: Some("PUT".into()),
        path: "*/routeTables/*".into(),
        status: Some(429),
        code: None,
        message: None,
        count: Some(1),
        percent: None,
        latency_ms: None,
        drop_connection: false,
        retry_after_seconds: None,
        fail_operation: false,
        cancel_operation: false,
    });
    let throttled = send(
        &emulator,
        "PUT",
        &net("routeTables/rt"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(throttled.headers.contains_key("retry-after"));
    assert_eq!(
        send(&emulator, "GET", &net("routeTables/rt"), None).await.status,
        StatusCode::NOT_FOUND
    );
    let retried = send(
        &emulator,
        "PUT",
        &net("routeTables/rt"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(retried.status, StatusCode::CREATED);

    let rule = json!({"path": "*/natGateways/*", "failOperation": true, "code": "InternalServerError", "message": "boom"});
    let added = send(&emulator, "POST", "/_emulator/faults", Some(rule)).await;
    assert_eq!(added.status, StatusCode::CREATED);
    let accepted = send(
        &emulator,
        "PUT",
        &net("natGateways/nat"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::CREATED);
    let status_path = accepted.headers["azure-asyncoperation"]
        .to_str()
        .unwrap()
        .trim_start_matches("http://localhost")
        .to_owned();
    let status = send(&emulator, "GET", &status_path, None).await;
    assert_eq!(status.body["status"], "Failed");
    assert_eq!(status.body["error"]["message"], "boom");
    let nat = send(&emulator, "GET", &net("natGateways/nat"), None).await;
    assert_eq!(nat.body["properties"]["provisioningState"], "Failed");
    assert_eq!(
        send(&emulator, "DELETE", "/_emulator/faults", None).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn deleting_the_group_deletes_its_resources() {
    let emulator = with_network().await;
    let deleted = send(&emulator, "DELETE", &format!("{RG}?api-version=2021-04-01"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    // The deletion finishes by the next request.
    let group = send(&emulator, "GET", &format!("{RG}?api-version=2021-04-01"), None).await;
    assert_eq!(group.status, StatusCode::NOT_FOUND);
    let gone = send(&emulator, "GET", &net("virtualNetworks/vnet"), None).await;
    assert_eq!(gone.body["error"]["code"], "ResourceGroupNotFound");
    assert_eq!(emulator.count("PUT", "Microsoft.Network/virtualNetworks", 201), 1);
}

#[tokio::test]
async fn request_limits_throttle_each_principal() {
    use arm_emulator::throttle::{Bucket, RateLimits};
    let emulator = Emulator::new(Config {
        rate_limits: RateLimits {
            writes: Bucket {
                burst: 2,
                per_second: 0.5,
            },
            ..RateLimits::default()
        },
        ..Config::default()
    });
    let group = format!("{RG}?api-version=2021-04-01");
    let first = send(&emulator, "PUT", &group, Some(json!({"location": "westeurope"}))).await;
    assert_eq!(first.headers["x-ms-ratelimit-remaining-subscription-writes"], "1");
    let read = send(&emulator, "GET", &group, None).await;
    assert_eq!(read.headers["x-ms-ratelimit-remaining-subscription-reads"], "249");
    send(&emulator, "PUT", &group, Some(json!({"location": "westeurope"}))).await;
    let throttled = send(&emulator, "PUT", &group, Some(json!({"location": "westeurope"}))).await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(throttled.headers["retry-after"], "2");
    // The log names the bucket that refused it, which the read before it did not draw on.
    let principal = arm_emulator::config::derived_object_id(arm_emulator::config::DEFAULT_CLIENT_ID);
    let log = emulator.requests();
    let [.., read, _, refused] = log.as_slice() else {
        panic!("four requests logged: {log:?}");
    };
    assert_eq!(read.budgets, [format!("{principal}/reads")]);
    assert!(read.throttled_by.is_empty());
    assert_eq!(refused.throttled_by, [format!("{principal}/writes")]);
    assert_eq!((refused.status, refused.retry_after), (429, Some(2)));
    emulator.advance_clock(std::time::Duration::from_secs(2));
    assert_eq!(
        send(&emulator, "PUT", &group, Some(json!({"location": "westeurope"})))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_deleted_subnet_releases_what_it_used() {
    let emulator = with_network().await;
    let nsg = net("networkSecurityGroups/nsg");
    send(&emulator, "PUT", &nsg, Some(json!({"location": "westeurope"}))).await;
    let subnet = net("virtualNetworks/vnet/subnets/guarded");
    let body = json!({"properties": {"addressPrefix": "10.0.2.0/24", "networkSecurityGroup": {"id": nsg}}});
    assert_eq!(
        send(&emulator, "PUT", &subnet, Some(body)).await.status,
        StatusCode::CREATED
    );
    let held = send(&emulator, "GET", &nsg, None).await;
    assert_eq!(held.body["properties"]["subnets"][0]["id"], subnet);

    assert_eq!(
        send(&emulator, "DELETE", &subnet, None).await.status,
        StatusCode::ACCEPTED
    );
    let released = send(&emulator, "GET", &nsg, None).await;
    assert!(
        released.body["properties"].get("subnets").is_none(),
        "{}",
        released.body
    );
    assert_eq!(
        send(&emulator, "DELETE", &nsg, None).await.status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn a_full_subnet_refuses_interfaces_and_hands_out_freed_addresses_again() {
    let emulator = with_network().await;
    // A /29: Azure keeps back the first four addresses and the last, which leaves three.
    let small = format!("{}/subnets/small", net("virtualNetworks/vnet"));
    let created = send(
        &emulator,
        "PUT",
        &small,
        Some(json!({"properties": {"addressPrefix": "10.0.2.0/29"}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let address = |reply: &Reply| {
        reply.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"].clone()
    };
    for (nic, expected) in [("a", "10.0.2.4"), ("b", "10.0.2.5"), ("c", "10.0.2.6")] {
        let reply = send(
            &emulator,
            "PUT",
            &net(&format!("networkInterfaces/{nic}")),
            Some(nic_body(&small)),
        )
        .await;
        assert_eq!(address(&reply), expected, "{}", reply.body);
    }
    let full = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/d"),
        Some(nic_body(&small)),
    )
    .await;
    assert_eq!(full.status, StatusCode::BAD_REQUEST);
    assert_eq!(full.body["error"]["code"], "SubnetIsFull");
    let taken = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/d"),
        Some(json!({
            "location": "westeurope",
            "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": {
                "subnet": {"id": small},
                "privateIPAllocationMethod": "Static",
                "privateIPAddress": "10.0.2.4"
            }}]}
        })),
    )
    .await;
    assert_eq!(taken.body["error"]["code"], "PrivateIPAddressInUse");

    let deleted = send(&emulator, "DELETE", &net("networkInterfaces/b"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    let reused = send(
        &emulator,
        "PUT",
        &net("networkInterfaces/d"),
        Some(nic_body(&small)),
    )
    .await;
    assert_eq!(address(&reused), "10.0.2.5", "{}", reused.body);
}

#[tokio::test]
async fn unsupported_api_versions_are_refused_as_arm_refuses_them() {
    let emulator = with_network().await;
    // A provider's type: no provider is registered for the version, in the group's location.
    let vnet = send(
        &emulator,
        "GET",
        &format!("{}?api-version=2099-01-01", net("virtualNetworks/vnet")),
        None,
    )
    .await;
    assert_eq!(vnet.status, StatusCode::BAD_REQUEST);
    assert_eq!(vnet.body["error"]["code"], "NoRegisteredProviderFound");
    let message = vnet.body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "No registered resource provider found for location 'westeurope' and API version '2099-01-01' for type 'virtualNetworks'. The supported api-versions are '2020-06-01, "
        ),
        "{message}"
    );
    assert!(message.contains(", 2024-05-01, "), "{message}");
    assert!(
        message.contains("'. The supported locations are '") && message.contains("westeurope"),
        "{message}"
    );
    // A create names the location it asks for, and a child type names its parent's type.
    let ip = send(
        &emulator,
        "PUT",
        &format!("{}?api-version=2015-01-01", net("publicIPAddresses/ip")),
        Some(json!({"location": "West US 2"})),
    )
    .await;
    assert!(
        ip.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("No registered resource provider found for location 'westus2' and API version '2015-01-01' for type 'publicIPAddresses'."),
        "{}",
        ip.body
    );
    let subnet = send(
        &emulator,
        "GET",
        &format!("{}/subnets/nodes?api-version=latest", net("virtualNetworks/vnet")),
        None,
    )
    .await;
    assert!(
        subnet.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("for type 'virtualNetworks/subnets'"),
        "{}",
        subnet.body
    );
    // Microsoft.Resources answers for itself.
    let group = send(&emulator, "GET", &format!("{RG}?api-version=2099-01-01"), None).await;
    assert_eq!(group.status, StatusCode::BAD_REQUEST);
    assert_eq!(group.body["error"]["code"], "InvalidApiVersionParameter");
    assert_eq!(
        group.body["error"]["message"],
        "The api-version '2099-01-01' is invalid. The supported versions are '2019-10-01,2020-06-01,2021-04-01,2022-09-01,2023-07-01,2024-03-01,2024-07-01,2024-11-01,2025-03-01,2025-04-01'."
    );
}

#[tokio::test]
async fn every_answer_reports_the_requests_left_and_throttling_names_the_caller() {
    use arm_emulator::throttle::{Bucket, RateLimits};
    let emulator = Emulator::new(Config {
        rate_limits: RateLimits {
            deletes: Bucket {
                burst: 1,
                per_second: 0.5,
            },
            // Slow enough that the tokens taken do not come back while the test runs.
            writes: Bucket {
                burst: 200,
                per_second: 0.001,
            },
            ..RateLimits::default()
        },
        ..Config::default()
    });
    let group = format!("{RG}?api-version=2021-04-01");
    let created = send(&emulator, "PUT", &group, Some(json!({"location": "westeurope"}))).await;
    assert_eq!(
        created.headers["x-ms-ratelimit-remaining-subscription-writes"],
        "199"
    );
    let deleted = send(&emulator, "DELETE", &net("routeTables/none"), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(
        deleted.headers["x-ms-ratelimit-remaining-subscription-deletes"],
        "0"
    );
    let throttled = send(&emulator, "DELETE", &net("routeTables/none"), None).await;
    assert_eq!(throttled.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        throttled.headers["x-ms-ratelimit-remaining-subscription-deletes"],
        "0"
    );
    assert_eq!(throttled.body["error"]["code"], "SubscriptionRequestsThrottled");
    let object_id = emulator.requests()[0].caller.clone().unwrap().object_id;
    assert_eq!(
        throttled.body["error"]["message"],
        format!(
            "Number of 'delete' requests for subscription '00000000-0000-0000-0000-000000000000' actor '{object_id}' exceeded. Please try again after '2' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information."
        )
    );

    // Refused tokens and injected faults are answered with the header too.
    let anonymous = emulator
        .router()
        .oneshot(
            axum::http::Request::builder()
                .uri(format!("{RG}?api-version=2021-04-01"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        anonymous.headers()["x-ms-ratelimit-remaining-subscription-reads"],
        "250"
    );
    emulator.add_fault(Fault {
        method: Some("PATCH".into()),
        path: "*".into(),
        status: Some(503),
        code: None,
        message: None,
        count: Some(1),
        percent: None,
        latency_ms: None,
        drop_connection: false,
        retry_after_seconds: None,
        fail_operation: false,
        cancel_operation: false,
    });
    let faulted = send(&emulator, "PATCH", &group, Some(json!({"tags": {}}))).await;
    assert_eq!(faulted.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        faulted.headers["x-ms-ratelimit-remaining-subscription-writes"],
        "199"
    );
}

#[tokio::test]
async fn an_injected_fault_can_cancel_an_operation() {
    let emulator = with_network().await;
    let rule = json!({"method": "PUT", "path": "*/natGateways/*", "cancelOperation": true, "count": 1});
    let added = send(&emulator, "POST", "/_emulator/faults", Some(rule)).await;
    assert_eq!(added.status, StatusCode::CREATED);
    let accepted = send(
        &emulator,
        "PUT",
        &net("natGateways/nat"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::CREATED);
    let status_path = accepted.headers["azure-asyncoperation"]
        .to_str()
        .unwrap()
        .trim_start_matches("http://localhost")
        .to_owned();
    let status = send(&emulator, "GET", &status_path, None).await;
    assert_eq!(
        status.body,
        json!({"status": "Canceled", "error": {"code": "Canceled", "message": "Operation was canceled."}})
    );
    let nat = send(&emulator, "GET", &net("natGateways/nat"), None).await;
    assert_eq!(nat.body["properties"]["provisioningState"], "Canceled");
    // The rule is used up: the next write succeeds.
    let again = send(
        &emulator,
        "PUT",
        &net("natGateways/nat"),
        Some(json!({"location": "westeurope", "tags": {"retry": "1"}})),
    )
    .await;
    assert_eq!(again.status, StatusCode::OK);
    let nat = send(&emulator, "GET", &net("natGateways/nat"), None).await;
    assert_eq!(nat.body["properties"]["provisioningState"], "Succeeded");
}

#[tokio::test]
async fn writes_meeting_a_running_operation_are_refused() {
    let emulator = Emulator::new(Config {
        operation_latency: std::time::Duration::from_secs(30),
        ..Config::default()
    });
    common::group_with_network(&emulator, RG, "westeurope").await;
    emulator.advance_clock(std::time::Duration::from_secs(31));
    let vnet = net("virtualNetworks/vnet");
    let first = send(
        &emulator,
        "PUT",
        &format!("{vnet}/subnets/a"),
        Some(json!({"properties": {"addressPrefix": "10.0.2.0/24"}})),
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let running = first.headers["azure-asyncoperation"].to_str().unwrap().to_owned();
    // A sibling, the parent and the subnet itself all wait for the subnet's operation.
    for (method, path, body) in [
        (
            "PUT",
            format!("{vnet}/subnets/b"),
            Some(json!({"properties": {"addressPrefix": "10.0.3.0/24"}})),
        ),
        ("DELETE", vnet.clone(), None),
        ("DELETE", format!("{vnet}/subnets/a"), None),
    ] {
        let refused = send(&emulator, method, &path, body).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{method} {path}");
        assert_eq!(refused.body["error"]["code"], "AnotherOperationInProgress");
        assert_eq!(
            refused.body["error"]["message"],
            format!(
                "Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: {running}."
            )
        );
        assert_eq!(refused.body["error"]["details"], json!([]));
    }
    // Other resources are not held up.
    let nsg = send(
        &emulator,
        "PUT",
        &net("networkSecurityGroups/nsg"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(nsg.status, StatusCode::CREATED);
    emulator.advance_clock(std::time::Duration::from_secs(31));
    let later = send(
        &emulator,
        "PUT",
        &format!("{vnet}/subnets/b"),
        Some(json!({"properties": {"addressPrefix": "10.0.3.0/24"}})),
    )
    .await;
    assert_eq!(later.status, StatusCode::CREATED, "{}", later.body);

    // A deletion in flight is answered again for the same deletion, and refuses writes.
    let deleting = send(&emulator, "DELETE", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(deleting.status, StatusCode::ACCEPTED);
    let repeated = send(&emulator, "DELETE", &net("networkSecurityGroups/nsg"), None).await;
    assert_eq!(repeated.status, StatusCode::ACCEPTED);
    assert_eq!(
        repeated.headers["azure-asyncoperation"],
        deleting.headers["azure-asyncoperation"]
    );
    let write = send(
        &emulator,
        "PUT",
        &net("networkSecurityGroups/nsg"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(write.body["error"]["code"], "AnotherOperationInProgress");
}

#[tokio::test]
async fn a_group_being_deleted_takes_no_writes() {
    let emulator = Emulator::new(Config {
        latencies: [(
            "Microsoft.Resources/resourceGroups".to_owned(),
            std::time::Duration::from_secs(30),
        )]
        .into(),
        ..Config::default()
    });
    common::group_with_network(&emulator, RG, "westeurope").await;
    let group = format!("{RG}?api-version=2021-04-01");
    assert_eq!(
        send(&emulator, "DELETE", &group, None).await.status,
        StatusCode::ACCEPTED
    );
    let message = "The resource group 'net' is in deprovisioning state and cannot perform this operation.";
    for (method, path, body) in [
        ("PUT", net("routeTables/rt"), json!({"location": "westeurope"})),
        ("PATCH", net("virtualNetworks/vnet"), json!({"tags": {"a": "b"}})),
        ("PUT", group.clone(), json!({"location": "westeurope"})),
        ("PATCH", group.clone(), json!({"tags": {"a": "b"}})),
    ] {
        let refused = send(&emulator, method, &path, Some(body)).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{method} {path}");
        assert_eq!(refused.body["error"]["code"], "ResourceGroupBeingDeleted");
        assert_eq!(refused.body["error"]["message"], message);
    }
    // Reads still answer, and the deletion goes on.
    assert_eq!(
        send(&emulator, "GET", &net("virtualNetworks/vnet"), None)
            .await
            .status,
        StatusCode::OK
    );
    emulator.advance_clock(std::time::Duration::from_secs(31));
    assert_eq!(
        send(&emulator, "GET", &group, None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_group_others_still_use_is_not_deleted_from_under_them() {
    let emulator = with_network().await;
    let subnet = format!("{}/subnets/nodes", net("virtualNetworks/vnet"));
    // The subnet keeps its security group; an unrelated public IP goes with the group.
    let nsg = send(
        &emulator,
        "PUT",
        &net("networkSecurityGroups/nsg"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(nsg.status, StatusCode::CREATED);
    let associated = send(
        &emulator,
        "PUT",
        &subnet,
        Some(json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": nsg.body["id"]}}})),
    )
    .await;
    assert_eq!(associated.status, StatusCode::OK, "{}", associated.body);
    send(
        &emulator,
        "PUT",
        &net("publicIPAddresses/ip"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    // A NIC in another group sits on the subnet.
    let other = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/other";
    send(
        &emulator,
        "PUT",
        &format!("{other}?api-version=2021-04-01"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let outside_nic = format!("{other}/providers/Microsoft.Network/networkInterfaces/outside");
    let nic = send(&emulator, "PUT", &outside_nic, Some(nic_body(&subnet))).await;
    assert_eq!(nic.status, StatusCode::CREATED, "{}", nic.body);

    let group = format!("{RG}?api-version=2021-04-01");
    let deleted = send(&emulator, "DELETE", &group, None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    let poll = deleted.headers["location"]
        .to_str()
        .unwrap()
        .trim_start_matches("http://localhost")
        .to_owned();
    let failed = send(&emulator, "GET", &poll, None).await;
    assert_eq!(failed.status, StatusCode::CONFLICT, "{}", failed.body);
    assert_eq!(failed.body["error"]["code"], "ResourceGroupDeletionBlocked");
    let message = failed.body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Deletion of resource group 'net' failed as resources with identifiers 'Microsoft.Network/networkSecurityGroups/nsg,Microsoft.Network/virtualNetworks/vnet' could not be deleted. The provisioning state of the resource group will be rolled back."),
        "{message}"
    );
    let details = failed.body["error"]["details"].as_array().unwrap();
    let vnet_detail = details
        .iter()
        .find(|detail| detail["target"] == net("virtualNetworks/vnet"))
        .unwrap();
    let inner: Value = serde_json::from_str(vnet_detail["message"].as_str().unwrap()).unwrap();
    assert_eq!(inner["error"]["code"], "InUseSubnetCannotBeDeleted");
    assert!(
        inner["error"]["message"]
            .as_str()
            .unwrap()
            .contains("networkInterfaces/outside/ipConfigurations/ipconfig1"),
        "{inner}"
    );

    // What others use stays, with what it uses; the rest is gone; the group is back.
    let group_now = send(&emulator, "GET", &group, None).await;
    assert_eq!(group_now.body["properties"]["provisioningState"], "Succeeded");
    for (path, status) in [
        (net("virtualNetworks/vnet"), StatusCode::OK),
        (net("networkSecurityGroups/nsg"), StatusCode::OK),
        (net("publicIPAddresses/ip"), StatusCode::NOT_FOUND),
        (outside_nic.clone(), StatusCode::OK),
    ] {
        assert_eq!(send(&emulator, "GET", &path, None).await.status, status, "{path}");
    }
    let read_nic = send(&emulator, "GET", &outside_nic, None).await;
    assert_eq!(
        read_nic.body["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"],
        subnet
    );

    // Once nothing outside refers into it, the group goes.
    send(&emulator, "DELETE", &outside_nic, None).await;
    let again = send(&emulator, "DELETE", &group, None).await;
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_eq!(
        send(&emulator, "GET", &group, None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_public_ip_prefix_a_nat_gateway_uses_stays_until_the_gateway_lets_go() {
    let emulator = with_network().await;
    let prefix = net("publicIPPrefixes/outbound");
    let created = send(
        &emulator,
        "PUT",
        &prefix,
        Some(json!({"location": "westeurope", "sku": {"name": "Standard"}, "properties": {"prefixLength": 30}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let gateway = net("natGateways/nat");
    let body = json!({"location": "westeurope", "sku": {"name": "Standard"}, "properties": {"publicIpPrefixes": [{"id": prefix}]}});
    let made = send(&emulator, "PUT", &gateway, Some(body)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let read = send(&emulator, "GET", &prefix, None).await;
    assert_eq!(
        read.body["properties"]["natGateway"]["id"],
        json!(gateway),
        "{}",
        read.body
    );
    let refused = send(&emulator, "DELETE", &prefix, None).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(
        refused.body["error"]["code"],
        "PublicIpPrefixInUseCannotBeDeleted"
    );
    let released = send(
        &emulator,
        "PUT",
        &gateway,
        Some(json!({"location": "westeurope", "sku": {"name": "Standard"}})),
    )
    .await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.body);
    let read = send(&emulator, "GET", &prefix, None).await;
    assert!(
        read.body["properties"].get("natGateway").is_none(),
        "{}",
        read.body
    );
    let deleted = send(&emulator, "DELETE", &prefix, None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
}
