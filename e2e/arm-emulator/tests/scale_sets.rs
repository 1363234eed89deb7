//! Virtual machine scale sets behave as Azure's do: capacity that creates and deletes instances
//! with Azure's names, balanced across zones; instance models, upgrade policies and
//! `latestModelApplied`; instance actions; Flexible sets of virtual machines; and the capacity,
//! quota and SKU errors Azure gives.

mod common;

use arm_emulator::config::{CapacityLimit, DEFAULT_CLIENT_ID, Quota};
use arm_emulator::{Config, Emulator};
use axum::http::StatusCode;
use common::Reply;
use serde_json::{Value, json};

const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/pool";
const COMPUTE: &str = "api-version=2024-07-01";

async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    let separator = if path.contains('?') { '&' } else { '?' };
    let uri = if path.contains("api-version=") {
        path.to_owned()
    } else {
        format!("{path}{separator}{COMPUTE}")
    };
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await
}

fn set(path: &str) -> String {
    format!("{RG}/providers/Microsoft.Compute/virtualMachineScaleSets/{path}")
}

fn subnet() -> String {
    format!("{RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes")
}

async fn with_network(config: Config) -> Emulator {
    let emulator = Emulator::new(config);
    common::group_with_network(&emulator, RG, "westeurope").await;
    emulator
}

/// A scale set body: `capacity` instances of CAPZ's image in the `nodes` subnet.
fn body(mode: &str, capacity: u64, zones: &[&str], upgrade: &str) -> Value {
    json!({
        "location": "westeurope",
        "sku": {"name": "Standard_D2s_v3", "capacity": capacity},
        "zones": zones,
        "identity": {"type": "SystemAssigned"},
        "properties": {
            "orchestrationMode": mode,
            "upgradePolicy": {"mode": upgrade},
            "virtualMachineProfile": {
                "osProfile": {
                    "computerNamePrefix": "pool",
                    "adminUsername": "capi",
                    "customData": "I2Nsb3VkLWNvbmZpZwo=",
                    "linuxConfiguration": {"disablePasswordAuthentication": true, "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}},
                },
                "storageProfile": {"imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"}},
                "networkProfile": {"networkInterfaceConfigurations": [{"name": "nic", "properties": {
                    "primary": true,
                    "ipConfigurations": [{"name": "ipconfig", "properties": {"subnet": {"id": subnet()}}}],
                }}]},
                "extensionProfile": {"extensions": [{"name": "bootstrap", "properties": {
                    "publisher": "Microsoft.Azure.ContainerUpstream", "type": "LinuxBootstrapping", "typeHandlerVersion": "1.0",
                }}]},
            },
        },
    })
}

async fn instances(emulator: &Emulator, name: &str) -> Vec<Value> {
    let listed = send(emulator, "GET", &set(&format!("{name}/virtualMachines")), None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    listed.body["value"].as_array().cloned().unwrap_or_default()
}

fn field<'a>(items: &'a [Value], pointer: &str) -> Vec<&'a str> {
    items
        .iter()
        .map(|item| item.pointer(pointer).and_then(Value::as_str).unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn uniform_capacity_makes_named_instances_balanced_across_zones() {
    let emulator = with_network(Config::default()).await;
    let created = send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 4, &["1", "2", "3"], "Manual")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    assert!(
        created.body["properties"]["virtualMachineProfile"]["osProfile"]
            .get("customData")
            .is_none()
    );
    assert!(created.headers.contains_key("azure-asyncoperation"));
    let read = send(&emulator, "GET", &set("pool"), None).await;
    assert_eq!(read.body["properties"]["provisioningState"], "Succeeded");
    assert_eq!(read.body["sku"]["capacity"], 4);
    assert_eq!(read.body["properties"]["orchestrationMode"], "Uniform");

    let members = instances(&emulator, "pool").await;
    assert_eq!(field(&members, "/name"), ["pool_0", "pool_1", "pool_2", "pool_3"]);
    assert_eq!(field(&members, "/instanceId"), ["0", "1", "2", "3"]);
    assert_eq!(field(&members, "/zones/0"), ["1", "2", "3", "1"]);
    assert_eq!(
        field(&members, "/properties/osProfile/computerName"),
        ["pool000000", "pool000001", "pool000002", "pool000003"]
    );
    assert!(
        members
            .iter()
            .all(|member| member["properties"]["latestModelApplied"] == true
                && member["properties"]["provisioningState"] == "Succeeded")
    );
    // Each instance answers the model's extensions, installed once it settled.
    let installed = &members[0]["resources"][0];
    assert_eq!(installed["name"], "bootstrap", "{}", members[0]);
    assert_eq!(
        installed["type"],
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/extensions"
    );
    assert_eq!(installed["properties"]["provisioningState"], "Succeeded");
    assert_eq!(
        installed["properties"]["publisher"],
        "Microsoft.Azure.ContainerUpstream"
    );
    // Each instance has its OS disk, in use while the instance exists.
    let disk = members[0]["properties"]["storageProfile"]["osDisk"]["managedDisk"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let disk = format!("{disk}?api-version=2024-03-02");
    assert_eq!(send(&emulator, "GET", &disk, None).await.status, StatusCode::OK);
    let view = send(
        &emulator,
        "GET",
        &set("pool/virtualMachines/0/instanceView"),
        None,
    )
    .await;
    assert_eq!(
        view.body["statuses"][1]["code"], "PowerState/running",
        "{}",
        view.body
    );

    // Scaling out keeps the zones balanced and never reuses an id; scaling in takes from the
    // fullest zone, the highest id first.
    let mut grown = body("Uniform", 6, &["1", "2", "3"], "Manual");
    send(&emulator, "PUT", &set("pool"), Some(grown.clone())).await;
    let members = instances(&emulator, "pool").await;
    assert_eq!(field(&members, "/instanceId"), ["0", "1", "2", "3", "4", "5"]);
    assert_eq!(field(&members, "/zones/0"), ["1", "2", "3", "1", "2", "3"]);
    grown["sku"]["capacity"] = json!(4);
    send(&emulator, "PUT", &set("pool"), Some(grown.clone())).await;
    let members = instances(&emulator, "pool").await;
    assert_eq!(
        field(&members, "/instanceId"),
        ["0", "1", "2", "3"],
        "{members:?}"
    );
    grown["sku"]["capacity"] = json!(5);
    send(&emulator, "PUT", &set("pool"), Some(grown)).await;
    let members = instances(&emulator, "pool").await;
    assert_eq!(field(&members, "/instanceId"), ["0", "1", "2", "3", "6"]);

    // Deleting the set takes the instances and their disks along.
    assert_eq!(
        send(&emulator, "DELETE", &set("pool"), None).await.status,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        send(&emulator, "GET", &disk, None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&emulator, "GET", &set("pool/virtualMachines/0"), None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn upgrade_policies_decide_when_instances_take_a_new_model() {
    let emulator = with_network(Config::default()).await;
    send(
        &emulator,
        "PUT",
        &set("manual"),
        Some(body("Uniform", 2, &[], "Manual")),
    )
    .await;
    let mut changed = body("Uniform", 2, &[], "Manual");
    changed["properties"]["virtualMachineProfile"]["osProfile"]["customData"] = json!("bmV3Cg==");
    send(&emulator, "PUT", &set("manual"), Some(changed)).await;
    let members = instances(&emulator, "manual").await;
    assert!(
        members
            .iter()
            .all(|member| member["properties"]["latestModelApplied"] == false)
    );
    let upgraded = send(
        &emulator,
        "POST",
        &set("manual/manualUpgrade"),
        Some(json!({"instanceIds": ["1"]})),
    )
    .await;
    assert_eq!(upgraded.status, StatusCode::ACCEPTED, "{}", upgraded.body);
    assert!(upgraded.headers.contains_key("azure-asyncoperation"));
    let members = instances(&emulator, "manual").await;
    assert_eq!(
        members
            .iter()
            .map(|member| member["properties"]["latestModelApplied"] == true)
            .collect::<Vec<_>>(),
        [false, true]
    );
    let unknown = send(
        &emulator,
        "POST",
        &set("manual/manualUpgrade"),
        Some(json!({"instanceIds": ["9"]})),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    send(&emulator, "POST", &set("manual/virtualMachines/0/reimage"), None).await;
    assert!(
        instances(&emulator, "manual")
            .await
            .iter()
            .all(|member| member["properties"]["latestModelApplied"] == true)
    );
}

#[tokio::test]
async fn rolling_upgrades_report_their_progress_and_power_actions_show() {
    let emulator = with_network(Config::default()).await;
    send(
        &emulator,
        "PUT",
        &set("rolling"),
        Some(body("Uniform", 3, &[], "Rolling")),
    )
    .await;
    let none_yet = send(&emulator, "GET", &set("rolling/rollingUpgrades/latest"), None).await;
    assert_eq!(none_yet.status, StatusCode::NOT_FOUND);
    let mut changed = body("Uniform", 3, &[], "Rolling");
    changed["sku"]["name"] = json!("Standard_D4s_v3");
    send(&emulator, "PUT", &set("rolling"), Some(changed)).await;
    let latest = send(&emulator, "GET", &set("rolling/rollingUpgrades/latest"), None).await;
    assert_eq!(
        latest.body["properties"]["runningStatus"]["code"], "Completed",
        "{}",
        latest.body
    );
    assert_eq!(
        latest.body["properties"]["progress"]["successfulInstanceCount"],
        3
    );

    // Power actions show in the instance view.
    send(
        &emulator,
        "POST",
        &set("rolling/virtualMachines/0/powerOff"),
        None,
    )
    .await;
    let view = send(
        &emulator,
        "GET",
        &set("rolling/virtualMachines/0/instanceView"),
        None,
    )
    .await;
    assert_eq!(
        view.body["statuses"][1]["code"], "PowerState/stopped",
        "{}",
        view.body
    );
    send(
        &emulator,
        "POST",
        &set("rolling/restart"),
        Some(json!({"instanceIds": ["0"]})),
    )
    .await;
    let view = send(
        &emulator,
        "GET",
        &set("rolling/virtualMachines/0?$expand=instanceView"),
        None,
    )
    .await;
    assert_eq!(
        view.body["properties"]["instanceView"]["statuses"][1]["code"],
        "PowerState/running"
    );
}

#[tokio::test]
async fn deleting_instances_shrinks_the_set() {
    let emulator = with_network(Config::default()).await;
    send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 4, &[], "Manual")),
    )
    .await;
    let deleted = send(
        &emulator,
        "POST",
        &set("pool/delete?forceDeletion=true"),
        Some(json!({"instanceIds": ["1", "2"]})),
    )
    .await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
    assert_eq!(
        field(&instances(&emulator, "pool").await, "/instanceId"),
        ["0", "3"]
    );
    assert_eq!(
        send(&emulator, "GET", &set("pool"), None).await.body["sku"]["capacity"],
        2
    );
    let one = send(&emulator, "DELETE", &set("pool/virtualMachines/3"), None).await;
    assert_eq!(one.status, StatusCode::ACCEPTED, "{}", one.body);
    assert_eq!(field(&instances(&emulator, "pool").await, "/instanceId"), ["0"]);
    assert_eq!(
        send(&emulator, "GET", &set("pool"), None).await.body["sku"]["capacity"],
        1
    );
}

#[tokio::test]
async fn a_full_zone_fails_the_scale_out_and_quotas_and_restrictions_refuse_it() {
    let emulator = with_network(Config {
        capacity: vec![CapacityLimit {
            location: "westeurope".into(),
            zone: Some("2".into()),
            size: None,
            machines: 1,
        }],
        quotas: vec![Quota {
            location: "westeurope".into(),
            family: "standardDSv3Family".into(),
            cores: 16,
        }],
        ..Config::default()
    })
    .await;
    send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 3, &["1", "2"], "Manual")),
    )
    .await;
    let read = send(&emulator, "GET", &set("pool"), None).await;
    assert_eq!(
        read.body["properties"]["provisioningState"], "Succeeded",
        "{}",
        read.body
    );
    let members = instances(&emulator, "pool").await;
    assert_eq!(field(&members, "/zones/0"), ["1", "2", "1"]);
    assert_eq!(
        field(&members, "/properties/provisioningState"),
        ["Succeeded", "Succeeded", "Succeeded"]
    );
    let grown = send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 4, &["1", "2"], "Manual")),
    )
    .await;
    let status = grown
        .header("azure-asyncoperation")
        .split_once("/subscriptions/")
        .map(|(_, rest)| format!("/subscriptions/{rest}"))
        .unwrap_or_default();
    let failed = send(&emulator, "GET", &status, None).await;
    assert_eq!(failed.body["status"], "Failed", "{}", failed.body);
    assert_eq!(failed.body["error"]["code"], "ZonalAllocationFailed");
    let members = instances(&emulator, "pool").await;
    assert_eq!(field(&members, "/zones/0")[3], "2");
    assert_eq!(field(&members, "/properties/provisioningState")[3], "Failed");
    let read = send(&emulator, "GET", &set("pool"), None).await;
    assert_eq!(
        read.body["properties"]["provisioningState"], "Failed",
        "{}",
        read.body
    );

    // 16 cores hold four D2s_v3 instances (two cores each) and no more.
    let over = send(
        &emulator,
        "PUT",
        &set("other"),
        Some(body("Uniform", 5, &[], "Manual")),
    )
    .await;
    assert_eq!(over.status, StatusCode::CONFLICT, "{}", over.body);
    assert_eq!(over.body["error"]["code"], "OperationNotAllowed");
    let mut unknown = body("Uniform", 1, &[], "Manual");
    unknown["sku"]["name"] = json!("Standard_Nope");
    let refused = send(&emulator, "PUT", &set("odd"), Some(unknown)).await;
    assert_eq!(refused.body["error"]["code"], "SkuNotAvailable");
}

#[tokio::test]
async fn flexible_sets_are_made_of_virtual_machines_with_their_interfaces_and_disks() {
    let emulator = with_network(Config::default()).await;
    let automatic = send(
        &emulator,
        "PUT",
        &set("flex"),
        Some(body("Flexible", 2, &["1", "2"], "Automatic")),
    )
    .await;
    assert_eq!(automatic.status, StatusCode::BAD_REQUEST, "{}", automatic.body);
    let created = send(
        &emulator,
        "PUT",
        &set("flex"),
        Some(body("Flexible", 2, &["1", "2"], "Manual")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let machines = send(
        &emulator,
        "GET",
        &format!("{RG}/providers/Microsoft.Compute/virtualMachines"),
        None,
    )
    .await;
    let machines = machines.body["value"].as_array().cloned().unwrap_or_default();
    assert_eq!(machines.len(), 2);
    assert!(
        field(&machines, "/name")
            .iter()
            .all(|name| name.starts_with("flex_") && name.len() == "flex_".len() + 8)
    );
    let mut zones = field(&machines, "/zones/0");
    zones.sort_unstable();
    assert_eq!(zones, ["1", "2"]);
    assert_eq!(
        field(&machines, "/resources/0/type"),
        ["Microsoft.Compute/virtualMachines/extensions"; 2],
        "a Flexible set's machines answer the model's extensions as machine extensions"
    );
    assert_eq!(
        field(&machines, "/resources/0/properties/provisioningState"),
        ["Succeeded"; 2]
    );
    let nic = machines[0]["properties"]["networkProfile"]["networkInterfaces"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let interface = send(&emulator, "GET", &format!("{nic}?api-version=2024-05-01"), None).await;
    assert_eq!(interface.status, StatusCode::OK, "{}", interface.body);
    // Each machine's interface has an address of its own.
    let mut addresses = Vec::new();
    for machine in &machines {
        let id = machine["properties"]["networkProfile"]["networkInterfaces"][0]["id"]
            .as_str()
            .unwrap_or_default();
        let read = send(&emulator, "GET", &format!("{id}?api-version=2024-05-01"), None).await;
        addresses
            .push(read.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"].clone());
    }
    addresses.sort_by_key(ToString::to_string);
    assert_eq!(addresses, [json!("10.0.1.4"), json!("10.0.1.5")]);
    assert_eq!(
        interface.body["properties"]["virtualMachine"]["id"],
        machines[0]["id"]
    );

    // Deleting one machine leaves the set one smaller; deleting the set takes the rest along.
    let machine = machines[0]["id"].as_str().unwrap_or_default().to_owned();
    send(&emulator, "DELETE", &machine, None).await;
    assert_eq!(
        send(&emulator, "GET", &set("flex"), None).await.body["sku"]["capacity"],
        1
    );
    assert_eq!(
        send(&emulator, "GET", &format!("{nic}?api-version=2024-05-01"), None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    send(&emulator, "DELETE", &set("flex"), None).await;
    let left = send(
        &emulator,
        "GET",
        &format!("{RG}/providers/Microsoft.Compute/virtualMachines"),
        None,
    )
    .await;
    assert_eq!(left.body["value"], json!([]));
}

#[tokio::test]
async fn a_flexible_sets_power_actions_show_on_its_machines_but_not_in_their_bodies() {
    let emulator = with_network(Config::default()).await;
    let created = send(
        &emulator,
        "PUT",
        &set("flex"),
        Some(body("Flexible", 2, &[], "Manual")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let acted = send(&emulator, "POST", &set("flex/powerOff"), None).await;
    assert_eq!(acted.status, StatusCode::ACCEPTED, "{}", acted.body);
    let machines = format!("{RG}/providers/Microsoft.Compute/virtualMachines");
    let listed = send(&emulator, "GET", &machines, None).await;
    let listed = listed.body["value"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), 2);
    for machine in &listed {
        let id = machine["id"].as_str().unwrap_or_default();
        for path in [
            id.to_owned(),
            format!("{id}?$expand=instanceView"),
            machines.clone(),
        ] {
            let read = send(&emulator, "GET", &path, None).await;
            assert_eq!(read.status, StatusCode::OK, "{path}: {}", read.body);
            let text = read.body.to_string();
            assert!(!text.contains("\"powerState\""), "{path}: {text}");
        }
        let view = send(&emulator, "GET", &format!("{id}/instanceView"), None).await;
        assert_eq!(
            view.body["statuses"][1]["code"], "PowerState/stopped",
            "{}",
            view.body
        );
    }
}

#[tokio::test]
async fn a_machine_in_a_full_zone_is_accepted_and_fails() {
    let emulator = with_network(Config {
        capacity: vec![CapacityLimit {
            location: "westeurope".into(),
            zone: Some("3".into()),
            size: Some("Standard_D2s_v3".into()),
            machines: 0,
        }],
        ..Config::default()
    })
    .await;
    let nic = format!("{RG}/providers/Microsoft.Network/networkInterfaces/nic?api-version=2024-05-01");
    send(
        &emulator,
        "PUT",
        &nic,
        Some(json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig", "properties": {"subnet": {"id": subnet()}}}]}})),
    )
    .await;
    let machine = format!("{RG}/providers/Microsoft.Compute/virtualMachines/full");
    let created = send(
        &emulator,
        "PUT",
        &machine,
        Some(json!({
            "location": "westeurope",
            "zones": ["3"],
            "properties": {
                "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
                "storageProfile": {"imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"}},
                "osProfile": {"computerName": "full", "adminUsername": "capi", "linuxConfiguration": {"disablePasswordAuthentication": true, "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}}},
                "networkProfile": {"networkInterfaces": [{"id": nic.split('?').next().unwrap_or_default()}]},
            },
        })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let read = send(&emulator, "GET", &machine, None).await;
    assert_eq!(
        read.body["properties"]["provisioningState"], "Failed",
        "{}",
        read.body
    );
}

#[tokio::test]
async fn instances_take_addresses_from_their_subnet() {
    let emulator = with_network(Config::default()).await;
    send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 3, &[], "Manual")),
    )
    .await;
    let nic = send(
        &emulator,
        "GET",
        &set("pool/virtualMachines/1/networkInterfaces/nic?api-version=2018-10-01"),
        None,
    )
    .await;
    assert_eq!(nic.status, StatusCode::OK, "{}", nic.body);
    assert_eq!(
        nic.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"],
        "10.0.1.5"
    );
    let all = send(
        &emulator,
        "GET",
        &set("pool/networkInterfaces?api-version=2018-10-01"),
        None,
    )
    .await;
    let addresses = field(
        all.body["value"].as_array().map_or(&[][..], Vec::as_slice),
        "/properties/ipConfigurations/0/properties/privateIPAddress",
    );
    assert_eq!(addresses, ["10.0.1.4", "10.0.1.5", "10.0.1.6"]);
    // A machine's interface in the same subnet gets the next free address.
    let machine_nic = send(
        &emulator,
        "PUT",
        &format!("{RG}/providers/Microsoft.Network/networkInterfaces/other?api-version=2024-05-01"),
        Some(json!({"location": "westeurope", "properties": {"ipConfigurations": [{"name": "ipconfig", "properties": {"subnet": {"id": subnet()}}}]}})),
    )
    .await;
    assert_eq!(
        machine_nic.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"],
        "10.0.1.7"
    );
}

#[tokio::test]
async fn a_set_boots_from_a_managed_image_and_is_placed_in_a_capacity_reservation_group() {
    let emulator = with_network(Config::default()).await;
    let compute = |path: &str| format!("{RG}/providers/Microsoft.Compute/{path}");
    let image = compute("images/image");
    let group = compute("capacityReservationGroups/crg");
    let mut from_image = body("Uniform", 1, &["1"], "Manual");
    from_image["properties"]["virtualMachineProfile"]["storageProfile"]["imageReference"] =
        json!({"id": image});
    from_image["properties"]["virtualMachineProfile"]["capacityReservation"] =
        json!({"capacityReservationGroup": {"id": group}});
    let missing = send(&emulator, "PUT", &set("pool"), Some(from_image.clone())).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);

    let snapshot = send(
        &emulator,
        "PUT",
        &format!("{}?api-version=2024-03-02", compute("snapshots/snap")),
        Some(json!({"location": "westeurope", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 32}})),
    )
    .await;
    assert_eq!(snapshot.status, StatusCode::ACCEPTED, "{}", snapshot.body);
    let created = send(
        &emulator,
        "PUT",
        &image,
        Some(
            json!({"location": "westeurope", "properties": {"storageProfile": {"osDisk": {
                "osType": "Linux", "osState": "Generalized", "snapshot": {"id": compute("snapshots/snap")}
            }}}}),
        ),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let crg = send(
        &emulator,
        "PUT",
        &group,
        Some(json!({"location": "westeurope", "zones": ["1"]})),
    )
    .await;
    assert_eq!(crg.status, StatusCode::CREATED, "{}", crg.body);

    let placed = send(&emulator, "PUT", &set("pool"), Some(from_image)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    let read = send(&emulator, "GET", &group, None).await;
    assert_eq!(
        read.body["properties"]["virtualMachinesAssociated"],
        json!([{"id": set("pool")}])
    );
}

#[tokio::test]
async fn boots_tell_each_instances_power_state_and_addresses() {
    let emulator = with_network(Config::default()).await;
    let created = send(
        &emulator,
        "PUT",
        &set("pool"),
        Some(body("Uniform", 2, &[], "Manual")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    send(&emulator, "POST", &set("pool/virtualMachines/0/powerOff"), None).await;
    let boots = emulator.boots();
    let machines = boots["machines"].as_array().cloned().unwrap_or_default();
    assert_eq!(machines.len(), 2, "{boots}");
    for (machine, (instance, power)) in machines.iter().zip([("0", "stopped"), ("1", "running")]) {
        assert!(
            machine["id"]
                .as_str()
                .unwrap_or_default()
                .ends_with(&format!("/virtualMachines/{instance}")),
            "{machine}"
        );
        assert_eq!(machine["powerState"], power, "{machine}");
        // The set's custom data runs no kubeadm: the instance would never join, yet is there.
        assert!(machine["refused"].is_string(), "{machine}");
        let nics = send(
            &emulator,
            "GET",
            &set(&format!(
                "pool/virtualMachines/{instance}/networkInterfaces?api-version=2018-10-01"
            )),
            None,
        )
        .await;
        let address =
            &nics.body["value"][0]["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"];
        assert!(address.is_string(), "{}", nics.body);
        assert_eq!(machine["privateIpAddresses"], json!([address]), "{machine}");
    }
}
