//! Compute resources behave as Azure's do: virtual machines with their disks, interfaces, images,
//! sizes, zones and quotas; extensions; managed disks; availability sets; and the catalogues of
//! resource SKUs and images.

mod common;

use std::time::Duration;

use arm_emulator::config::{DEFAULT_CLIENT_ID, Quota, SkuRestriction};
use arm_emulator::{Config, Emulator};
use axum::http::StatusCode;
use common::Reply;
use serde_json::{Value, json};

const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";
const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/cmp";
const COMPUTE: &str = "api-version=2024-07-01";
const NET: &str = "api-version=2024-05-01";
const DISKS: &str = "api-version=2024-03-02";
const GALLERY: &str = "ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019";

/// Sends a request; paths without an api-version get the compute one (network paths the network
/// one).
async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    let uri = if path.contains("api-version=") {
        path.to_owned()
    } else {
        let separator = if path.contains('?') { '&' } else { '?' };
        let version = if path.contains("/Microsoft.Network/") {
            NET
        } else {
            COMPUTE
        };
        format!("{path}{separator}{version}")
    };
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await
}

fn compute(path: &str) -> String {
    format!("{RG}/providers/Microsoft.Compute/{path}")
}

fn net(path: &str) -> String {
    format!("{RG}/providers/Microsoft.Network/{path}")
}

/// The path and query of an operation URL the emulator handed out.
fn local(url: &str) -> String {
    url.trim_start_matches("http://localhost").to_owned()
}

/// An emulator with the `cmp` group in westus2, a virtual network with a subnet `nodes` and the
/// network interfaces `nic0` and `nic1` on it.
async fn with_network(config: Config) -> Emulator {
    let emulator = Emulator::new(config);
    common::group_with_network(&emulator, RG, "westus2").await;
    for nic in ["nic0", "nic1"] {
        let created = put_nic(&emulator, nic, "westus2", false).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    }
    emulator
}

/// [`with_network`], where virtual machine operations take 30 s: long enough to see them run.
async fn with_slow_machines() -> Emulator {
    with_network(Config {
        latencies: [(
            "Microsoft.Compute/virtualMachines".to_owned(),
            Duration::from_secs(30),
        )]
        .into(),
        ..Config::default()
    })
    .await
}

async fn put_nic(emulator: &Emulator, name: &str, location: &str, accelerated: bool) -> Reply {
    let subnet = format!("{}/subnets/nodes", net("virtualNetworks/vnet"));
    send(
        emulator,
        "PUT",
        &net(&format!("networkInterfaces/{name}")),
        Some(json!({
            "location": location,
            "properties": {
                "enableAcceleratedNetworking": accelerated,
                "ipConfigurations": [{"name": "ipconfig1", "properties": {"subnet": {"id": subnet}}}]
            }
        })),
    )
    .await
}

/// A CAPZ-like machine body: a marketplace image, an SSH key and custom data.
fn vm_body(size: &str, nic: &str) -> Value {
    json!({
        "location": "westus2",
        "properties": {
            "hardwareProfile": {"vmSize": size},
            "storageProfile": {
                "imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"},
                "osDisk": {"osType": "Linux", "createOption": "FromImage", "diskSizeGB": 128, "managedDisk": {"storageAccountType": "Premium_LRS"}}
            },
            "osProfile": {
                "computerName": "node",
                "adminUsername": "capi",
                "adminPassword": "Not-to-be-seen-1",
                "customData": "I2Nsb3VkLWNvbmZpZwo=",
                "linuxConfiguration": {
                    "disablePasswordAuthentication": true,
                    "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}
                }
            },
            "networkProfile": {"networkInterfaces": [{"id": net(&format!("networkInterfaces/{nic}")), "properties": {"primary": true}}]}
        }
    })
}

/// Deletes `url`, expecting `status`, and checks that once operations have had time to finish a
/// read finds nothing.
async fn delete_and_confirm_gone(emulator: &Emulator, url: &str, status: StatusCode) {
    assert_eq!(send(emulator, "DELETE", url, None).await.status, status);
    emulator.advance_clock(Duration::from_mins(1));
    assert_eq!(
        send(emulator, "GET", url, None).await.status,
        StatusCode::NOT_FOUND
    );
}

fn assert_no_secrets(body: &Value) {
    let text = body.to_string();
    assert!(!text.contains("customData"), "{text}");
    assert!(!text.contains("adminPassword"), "{text}");
    assert!(!text.contains("Not-to-be-seen-1"), "{text}");
    assert!(!text.contains("protectedSettings"), "{text}");
}

#[tokio::test]
async fn a_machine_is_created_with_its_os_disk_and_holds_its_interface() {
    let emulator = with_slow_machines().await;
    let vm = compute("virtualMachines/node0");
    let created = send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    assert_no_secrets(&created.body);
    let status_url = created.header("azure-asyncoperation");
    assert!(
        status_url.contains("/providers/Microsoft.Compute/locations/westus2/operations/"),
        "{status_url}"
    );
    assert!(!created.header("retry-after").is_empty());
    let properties = &created.body["properties"];
    assert_eq!(
        properties["storageProfile"]["imageReference"]["exactVersion"],
        "130.3.20240717"
    );
    // The OS disk shows its name and id once provisioned.
    assert!(properties["storageProfile"]["osDisk"].get("name").is_none());
    assert_eq!(properties["storageProfile"]["osDisk"]["deleteOption"], "Detach");
    assert_eq!(
        properties["osProfile"]["linuxConfiguration"]["provisionVMAgent"],
        true
    );
    assert!(properties["vmId"].as_str().is_some_and(|id| id.len() == 36));

    let running = send(&emulator, "GET", &local(status_url), None).await;
    assert_eq!(running.body["status"], "InProgress");
    assert!(running.body["startTime"].is_string());
    emulator.advance_clock(Duration::from_mins(1));
    let done = send(&emulator, "GET", &local(status_url), None).await;
    assert_eq!(done.body["status"], "Succeeded");
    assert!(done.body["endTime"].is_string());

    let read = send(&emulator, "GET", &vm, None).await;
    assert_eq!(read.body["properties"]["provisioningState"], "Succeeded");
    assert_no_secrets(&read.body);
    let os_disk = &read.body["properties"]["storageProfile"]["osDisk"];
    assert_eq!(os_disk["diskSizeGB"], 128);
    let disk_id = os_disk["managedDisk"]["id"].as_str().unwrap().to_owned();
    assert!(
        disk_id.starts_with(&compute("disks/node0_OsDisk_1_")),
        "{disk_id}"
    );
    let disk = send(&emulator, "GET", &format!("{disk_id}?{DISKS}"), None).await;
    assert_eq!(disk.status, StatusCode::OK, "{}", disk.body);
    assert_eq!(disk.body["managedBy"], read.body["id"]);
    assert_eq!(disk.body["properties"]["diskState"], "Attached");
    assert_eq!(disk.body["properties"]["osType"], "Linux");
    assert_eq!(disk.body["properties"]["tier"], "P10");
    assert_eq!(
        disk.body["sku"],
        json!({"name": "Premium_LRS", "tier": "Premium"})
    );

    let nic = send(&emulator, "GET", &net("networkInterfaces/nic0"), None).await;
    assert_eq!(nic.body["properties"]["virtualMachine"]["id"], read.body["id"]);
    let nic_delete = send(&emulator, "DELETE", &net("networkInterfaces/nic0"), None).await;
    assert_eq!(nic_delete.status, StatusCode::BAD_REQUEST, "{}", nic_delete.body);
    assert_eq!(nic_delete.body["error"]["code"], "NicInUse");
    let disk_delete = send(&emulator, "DELETE", &format!("{disk_id}?{DISKS}"), None).await;
    assert_eq!(disk_delete.status, StatusCode::CONFLICT, "{}", disk_delete.body);
    assert_eq!(disk_delete.body["error"]["code"], "OperationNotAllowed");
    let message = disk_delete.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("is attached to VM"), "{message}");

    let deleted = send(&emulator, "DELETE", &vm, None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    assert!(!deleted.header("azure-asyncoperation").is_empty());
    assert!(!deleted.header("location").is_empty());
    emulator.advance_clock(Duration::from_mins(1));
    assert_eq!(
        send(&emulator, "GET", &vm, None).await.status,
        StatusCode::NOT_FOUND
    );
    // Detached by default: the interface and the disk stay, free.
    let nic = send(&emulator, "GET", &net("networkInterfaces/nic0"), None).await;
    assert_eq!(nic.status, StatusCode::OK);
    assert!(nic.body["properties"].get("virtualMachine").is_none());
    let disk = send(&emulator, "GET", &format!("{disk_id}?{DISKS}"), None).await;
    assert_eq!(disk.body["properties"]["diskState"], "Unattached");
    assert!(disk.body.get("managedBy").is_none());
    let freed = send(&emulator, "DELETE", &format!("{disk_id}?{DISKS}"), None).await;
    assert_eq!(freed.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn delete_options_take_disks_and_interfaces_along() {
    let emulator = with_network(Config::default()).await;
    let mut body = vm_body("Standard_D4s_v3", "nic1");
    body["properties"]["storageProfile"]["osDisk"]["deleteOption"] = json!("Delete");
    body["properties"]["storageProfile"]["osDisk"]["name"] = json!("node1_OSDisk");
    body["properties"]["storageProfile"]["dataDisks"] = json!([
        {"lun": 0, "name": "node1_etcddisk", "createOption": "Empty", "diskSizeGB": 256, "deleteOption": "Delete"},
        {"lun": 1, "name": "node1_scratch", "createOption": "Empty", "diskSizeGB": 64}
    ]);
    body["properties"]["networkProfile"]["networkInterfaces"][0]["properties"]["deleteOption"] =
        json!("Delete");
    let vm = compute("virtualMachines/node1");
    let created = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let read = send(&emulator, "GET", &vm, None).await;
    let data = &read.body["properties"]["storageProfile"]["dataDisks"];
    assert_eq!(data[0]["managedDisk"]["id"], compute("disks/node1_etcddisk"));
    assert_eq!(data[0]["caching"], "None");
    for disk in ["node1_OSDisk", "node1_etcddisk", "node1_scratch"] {
        let found = send(
            &emulator,
            "GET",
            &format!("{}?{DISKS}", compute(&format!("disks/{disk}"))),
            None,
        )
        .await;
        assert_eq!(found.body["properties"]["diskState"], "Attached", "{disk}");
    }

    delete_and_confirm_gone(&emulator, &vm, StatusCode::ACCEPTED).await;
    let gone = |name: &str| format!("{}?{DISKS}", compute(&format!("disks/{name}")));
    assert_eq!(
        send(&emulator, "GET", &gone("node1_OSDisk"), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(&emulator, "GET", &gone("node1_etcddisk"), None).await.status,
        StatusCode::NOT_FOUND
    );
    let kept = send(&emulator, "GET", &gone("node1_scratch"), None).await;
    assert_eq!(kept.body["properties"]["diskState"], "Unattached");
    let nic = send(&emulator, "GET", &net("networkInterfaces/nic1"), None).await;
    assert_eq!(nic.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn machines_are_checked_like_azure_checks_them() {
    let emulator = with_network(Config {
        quotas: vec![Quota {
            location: "westus2".into(),
            family: "standardDSv3Family".into(),
            cores: 6,
        }],
        ..Config::default()
    })
    .await;
    let put = |name: &str, body: Value| {
        let emulator = emulator.clone();
        let path = compute(&format!("virtualMachines/{name}"));
        async move { send(&emulator, "PUT", &path, Some(body)).await }
    };

    let unknown = put("a", vm_body("Standard_Imaginary_v9", "nic0")).await;
    assert_eq!(unknown.status, StatusCode::CONFLICT);
    assert_eq!(unknown.body["error"]["code"], "SkuNotAvailable");
    assert!(
        unknown.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Standard_Imaginary_v9")
    );

    let mut zoned = vm_body("Standard_D2s_v3", "nic0");
    zoned["zones"] = json!(["4"]);
    let bad_zone = put("a", zoned).await;
    assert_eq!(bad_zone.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad_zone.body["error"]["code"], "InvalidParameter");
    assert!(
        bad_zone.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("zones")
    );

    let mut no_nic = vm_body("Standard_D2s_v3", "nic0");
    no_nic["properties"]["networkProfile"]["networkInterfaces"] = json!([]);
    let refused = put("a", no_nic).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("networkInterfaces")
    );

    let missing_nic = put("a", vm_body("Standard_D2s_v3", "nicX")).await;
    assert_eq!(missing_nic.status, StatusCode::NOT_FOUND);
    assert_eq!(missing_nic.body["error"]["code"], "NotFound");

    let mut bad_data = vm_body("Standard_D2s_v3", "nic0");
    bad_data["properties"]["osProfile"]["customData"] = json!("#cloud-config");
    let bad_custom = put("a", bad_data).await;
    assert_eq!(bad_custom.status, StatusCode::BAD_REQUEST);
    assert!(
        bad_custom.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("customData")
    );

    let mut unknown_image = vm_body("Standard_D2s_v3", "nic0");
    unknown_image["properties"]["storageProfile"]["imageReference"]["version"] = json!("1.2.3");
    let no_image = put("a", unknown_image).await;
    assert_eq!(no_image.status, StatusCode::NOT_FOUND);
    assert_eq!(no_image.body["error"]["code"], "PlatformImageNotFound");

    // 4 of the 6 cores of the family.
    let first = put("a", vm_body("Standard_D4s_v3", "nic0")).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let taken = put("b", vm_body("Standard_D2s_v3", "nic0")).await;
    assert_eq!(taken.status, StatusCode::CONFLICT);
    assert_eq!(taken.body["error"]["code"], "NicInUse");
    let over = put("b", vm_body("Standard_D4s_v3", "nic1")).await;
    assert_eq!(over.status, StatusCode::CONFLICT);
    assert_eq!(over.body["error"]["code"], "OperationNotAllowed");
    let message = over.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("exceeding approved standardDSv3Family Cores quota")
            && message.contains("Current Limit: 6, Current Usage: 4, Additional Required: 4"),
        "{message}"
    );
    // Another family is not counted.
    let other = put("b", vm_body("Standard_D2s_v5", "nic1")).await;
    assert_eq!(other.status, StatusCode::CREATED, "{}", other.body);

    put_nic(&emulator, "far", "eastus", false).await;
    let elsewhere = put("c", vm_body("Standard_D2s_v5", "far")).await;
    assert_eq!(elsewhere.status, StatusCode::BAD_REQUEST);
    assert_eq!(elsewhere.body["error"]["code"], "InvalidResourceReference");
    let accelerated = put_nic(&emulator, "fast", "westus2", true).await;
    assert_eq!(accelerated.status, StatusCode::CREATED, "{}", accelerated.body);
    let slow = put("c", vm_body("Standard_B2s", "fast")).await;
    assert_eq!(slow.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        slow.body["error"]["code"],
        "VMSizeIsNotPermittedToEnableAcceleratedNetworking"
    );
}

#[tokio::test]
async fn windows_machines_need_a_short_computer_name_and_a_strong_password() {
    let emulator = with_network(Config::default()).await;
    let windows = |computer: &str, password: &str| {
        let mut body = vm_body("Standard_D2s_v3", "nic0");
        body["properties"]["storageProfile"] = json!({
            "imageReference": {"communityGalleryImageId": format!("/CommunityGalleries/{GALLERY}/Images/capi-win-2019-containerd/Versions/1.33.1")},
            "osDisk": {"osType": "Windows", "createOption": "FromImage", "diskSizeGB": 128}
        });
        let profile = &mut body["properties"]["osProfile"];
        profile["computerName"] = json!(computer);
        profile["adminPassword"] = json!(password);
        profile["windowsConfiguration"] = json!({"enableAutomaticUpdates": false});
        if let Some(profile) = profile.as_object_mut() {
            profile.remove("linuxConfiguration");
        }
        body
    };
    let path = compute("virtualMachines/win");
    let put = |body: Value| send(&emulator, "PUT", &path, Some(body));
    let message = |reply: &Reply| {
        reply.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    let long = put(windows("capz-md-win-abcde", "Aa1!-strong-enough")).await;
    assert_eq!(long.status, StatusCode::BAD_REQUEST);
    assert_eq!(long.body["error"]["code"], "InvalidParameter");
    assert!(
        message(&long).contains("cannot be more than 15 characters"),
        "{}",
        long.body
    );
    let numeric = put(windows("123456", "Aa1!-strong-enough")).await;
    assert_eq!(numeric.status, StatusCode::BAD_REQUEST);
    for weak in ["short1A", "alllowercase-but-long", "NoDigitsOrSymbols"] {
        let refused = put(windows("capz-md-w-abcde", weak)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{weak}");
        assert!(
            message(&refused).contains("password complexity"),
            "{}",
            refused.body
        );
    }
    let created = put(windows("capz-md-w-abcde", "Aa1!-strong-enough")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let os = &created.body["properties"]["osProfile"];
    assert_eq!(os["windowsConfiguration"]["enableAutomaticUpdates"], false);
    assert_no_secrets(&created.body);
}

#[tokio::test]
async fn identities_get_principals() {
    let emulator = with_network(Config::default()).await;
    let identity = format!("{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz");
    // Where the emulator serves identities, the machine's must exist; elsewhere this PUT is refused.
    send(
        &emulator,
        "PUT",
        &format!("{identity}?api-version=2023-01-31"),
        Some(json!({"location": "westus2"})),
    )
    .await;
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["identity"] =
        json!({"type": "SystemAssigned, UserAssigned", "userAssignedIdentities": {identity.clone(): {}}});
    let vm = compute("virtualMachines/node");
    let created = send(&emulator, "PUT", &vm, Some(body.clone())).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let assigned = &created.body["identity"];
    assert_eq!(assigned["type"], "SystemAssigned, UserAssigned");
    assert_eq!(assigned["tenantId"], "00000000-0000-0000-0000-000000000000");
    let principal = assigned["principalId"].clone();
    assert!(principal.is_string());
    assert!(assigned["userAssignedIdentities"][&identity]["clientId"].is_string());
    // An update keeps the principals.
    let updated = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(updated.body["identity"]["principalId"], principal);
}

#[tokio::test]
async fn references_to_resources_of_another_type_are_not_taken() {
    let emulator = with_network(Config::default()).await;
    let vm = compute("virtualMachines/node");
    let vnet = net("virtualNetworks/vnet");
    let nic = net("networkInterfaces/nic1");

    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["networkProfile"]["networkInterfaces"][0]["id"] = json!(vnet);
    let refused = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);

    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["dataDisks"] =
        json!([{"lun": 0, "createOption": "Attach", "managedDisk": {"id": nic}}]);
    let refused = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND, "{}", refused.body);
    // The interface was not turned into a disk on the way.
    let interface = send(&emulator, "GET", &nic, None).await;
    assert!(interface.body.get("managedBy").is_none(), "{}", interface.body);

    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["identity"] = json!({"type": "UserAssigned", "userAssignedIdentities": {nic.clone(): {}}});
    let refused = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(
        refused.body["error"]["code"], "FailedIdentityOperation",
        "{}",
        refused.body
    );

    let created = send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

#[tokio::test]
async fn instance_views_report_provisioning_and_power() {
    let emulator = with_network(Config::default()).await;
    let vm = compute("virtualMachines/node");
    send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    let expanded = send(
        &emulator,
        "GET",
        &format!("{vm}?$expand=instanceView&{COMPUTE}"),
        None,
    )
    .await;
    let view = &expanded.body["properties"]["instanceView"];
    let codes: Vec<&str> = view["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|status| status["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["ProvisioningState/succeeded", "PowerState/running"]);
    assert_eq!(view["statuses"][1]["displayStatus"], "VM running");
    assert_eq!(view["computerName"], "node");
    assert_eq!(view["hyperVGeneration"], "V1");
    let plain = send(&emulator, "GET", &vm, None).await;
    assert!(plain.body["properties"].get("instanceView").is_none());
    let direct = send(&emulator, "GET", &format!("{vm}/instanceView"), None).await;
    assert_eq!(direct.status, StatusCode::OK, "{}", direct.body);
    assert_eq!(&direct.body, view);
    let missing = send(
        &emulator,
        "GET",
        &compute("virtualMachines/none/instanceView"),
        None,
    )
    .await;
    assert_eq!(missing.body["error"]["code"], "ResourceNotFound");
}

/// The power state a machine's instance view and its boot report: (code, display status, boot).
async fn power_of(emulator: &Emulator, vm: &str) -> (String, String, String) {
    let view = send(emulator, "GET", &format!("{vm}/instanceView"), None).await;
    assert_eq!(view.status, StatusCode::OK, "{}", view.body);
    let status = &view.body["statuses"][1];
    let boots = emulator.boots();
    let boot = boots["machines"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|machine| {
            machine["id"]
                .as_str()
                .is_some_and(|id| id.eq_ignore_ascii_case(vm))
        })
        .map(|machine| machine["powerState"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    (
        status["code"].as_str().unwrap_or_default().to_owned(),
        status["displayStatus"].as_str().unwrap_or_default().to_owned(),
        boot,
    )
}

/// Every way a machine is read; none shows the hidden power state.
async fn assert_power_state_hidden(emulator: &Emulator, vm: &str) {
    for path in [
        vm.to_owned(),
        format!("{vm}?$expand=instanceView&{COMPUTE}"),
        compute("virtualMachines"),
        format!("{SUB}/providers/Microsoft.Compute/virtualMachines"),
    ] {
        let read = send(emulator, "GET", &path, None).await;
        assert_eq!(read.status, StatusCode::OK, "{path}: {}", read.body);
        let text = read.body.to_string();
        assert!(!text.contains("\"powerState\""), "{path}: {text}");
    }
}

#[tokio::test]
async fn power_actions_run_as_operations_and_end_in_their_power_state() {
    let emulator = with_slow_machines().await;
    let vm = compute("virtualMachines/node");
    let created = send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator.advance_clock(Duration::from_mins(1));
    assert_eq!(
        power_of(&emulator, &vm).await,
        ("PowerState/running".into(), "VM running".into(), "running".into())
    );
    // Start after deallocate returns the machine to running.
    for (action, in_flight, end) in [
        ("powerOff?skipShutdown=true", "stopping", "stopped"),
        ("start", "starting", "running"),
        ("deallocate?hibernate=false", "deallocating", "deallocated"),
        ("start", "starting", "running"),
        ("powerOff", "stopping", "stopped"),
        ("restart", "starting", "running"),
    ] {
        let acted = send(&emulator, "POST", &format!("{vm}/{action}"), None).await;
        assert_eq!(acted.status, StatusCode::ACCEPTED, "{action}: {}", acted.body);
        let status_url = acted.header("azure-asyncoperation");
        assert!(
            status_url.contains("/providers/Microsoft.Compute/locations/westus2/operations/"),
            "{action}: {status_url}"
        );
        let result_url = acted.header("location");
        assert!(
            result_url.contains("/providers/Microsoft.Compute/locations/westus2/operationResults/"),
            "{action}: {result_url}"
        );
        let running = send(&emulator, "GET", &local(status_url), None).await;
        assert_eq!(running.body["status"], "InProgress", "{action}");
        let read = send(&emulator, "GET", &vm, None).await;
        assert_eq!(
            read.body["properties"]["provisioningState"], "Updating",
            "{action}"
        );
        let (code, _, boot) = power_of(&emulator, &vm).await;
        assert_eq!(code, format!("PowerState/{in_flight}"), "{action}");
        assert_eq!(boot, in_flight, "{action}");

        emulator.advance_clock(Duration::from_secs(31));
        let done = send(&emulator, "GET", &local(status_url), None).await;
        assert_eq!(done.body["status"], "Succeeded", "{action}");
        let read = send(&emulator, "GET", &vm, None).await;
        assert_eq!(
            read.body["properties"]["provisioningState"], "Succeeded",
            "{action}"
        );
        let (code, display, boot) = power_of(&emulator, &vm).await;
        assert_eq!(code, format!("PowerState/{end}"), "{action}");
        assert_eq!(display, format!("VM {end}"), "{action}");
        assert_eq!(boot, end, "{action}");
        assert_power_state_hidden(&emulator, &vm).await;
    }
}

#[tokio::test]
async fn a_deallocated_machine_keeps_its_interface_disk_and_power_state_across_writes() {
    let emulator = with_network(Config::default()).await;
    let vm = compute("virtualMachines/node");
    send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    let acted = send(&emulator, "POST", &format!("{vm}/deallocate"), None).await;
    assert_eq!(acted.status, StatusCode::ACCEPTED, "{}", acted.body);
    let read = send(&emulator, "GET", &vm, None).await;
    let nic = send(&emulator, "GET", &net("networkInterfaces/nic0"), None).await;
    assert_eq!(nic.body["properties"]["virtualMachine"]["id"], read.body["id"]);
    let disk = os_disk_of(&emulator, &vm).await;
    assert_eq!(disk["properties"]["diskState"], "Attached");
    // Neither a replacement nor a patch starts it, whatever it says about power.
    let mut replaced = vm_body("Standard_D4s_v3", "nic0");
    replaced["properties"]["powerState"] = json!("running");
    let written = send(&emulator, "PUT", &vm, Some(replaced)).await;
    assert_eq!(written.status, StatusCode::OK, "{}", written.body);
    let patched = send(
        &emulator,
        "PATCH",
        &vm,
        Some(json!({"tags": {"a": "b"}, "properties": {"powerState": "running"}})),
    )
    .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    assert_eq!(
        power_of(&emulator, &vm).await,
        (
            "PowerState/deallocated".into(),
            "VM deallocated".into(),
            "deallocated".into()
        )
    );
    assert_power_state_hidden(&emulator, &vm).await;
}

#[tokio::test]
async fn power_actions_need_the_machine_and_boolean_flags() {
    let emulator = with_network(Config::default()).await;
    for action in ["powerOff", "deallocate", "start", "restart"] {
        let missing = send(
            &emulator,
            "POST",
            &compute(&format!("virtualMachines/none/{action}")),
            None,
        )
        .await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{action}");
        assert_eq!(missing.body["error"]["code"], "ResourceNotFound", "{action}");
    }
    let vm = compute("virtualMachines/node");
    send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    for action in ["powerOff?skipShutdown=soon", "deallocate?hibernate=1"] {
        let refused = send(&emulator, "POST", &format!("{vm}/{action}"), None).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(refused.body["error"]["code"], "InvalidParameter", "{action}");
    }
    let (code, _, _) = power_of(&emulator, &vm).await;
    assert_eq!(code, "PowerState/running");
}

#[tokio::test]
async fn extensions_live_under_their_machine_and_keep_protected_settings_to_themselves() {
    let emulator = with_network(Config::default()).await;
    let extension = compute("virtualMachines/node/extensions/CAPZ.Linux.Bootstrapping");
    let body = json!({
        "location": "westus2",
        "properties": {
            "publisher": "Microsoft.Azure.ContainerUpstream",
            "type": "linux-bootstrapping",
            "typeHandlerVersion": "1.0",
            "protectedSettings": {"commandToExecute": "secret"}
        }
    });
    let orphan = send(&emulator, "PUT", &extension, Some(body.clone())).await;
    assert_eq!(orphan.status, StatusCode::NOT_FOUND);
    assert_eq!(orphan.body["error"]["code"], "ParentResourceNotFound");

    let vm = compute("virtualMachines/node");
    send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    let created = send(&emulator, "PUT", &extension, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    assert_eq!(created.body["properties"]["settings"], json!({}));
    assert!(!created.header("azure-asyncoperation").is_empty());
    assert_no_secrets(&created.body);
    let listed = send(&emulator, "GET", &format!("{vm}/extensions"), None).await;
    assert_eq!(listed.body["value"].as_array().map(Vec::len), Some(1));
    assert_no_secrets(&listed.body);

    let incomplete = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node/extensions/other"),
        Some(json!({"properties": {"publisher": "p", "type": "t"}})),
    )
    .await;
    assert_eq!(incomplete.status, StatusCode::BAD_REQUEST);
    assert!(
        incomplete.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("typeHandlerVersion")
    );

    delete_and_confirm_gone(&emulator, &extension, StatusCode::ACCEPTED).await;
}

#[tokio::test]
async fn disks_are_accepted_and_report_through_their_operation() {
    let emulator = with_network(Config::default()).await;
    let disk = format!("{}?{DISKS}", compute("disks/data"));
    let missing = send(&emulator, "GET", &disk, None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["error"]["message"], "Disk data is not found.");

    let no_option = send(
        &emulator,
        "PUT",
        &disk,
        Some(json!({"location": "westus2", "properties": {"creationData": {}}})),
    )
    .await;
    assert_eq!(no_option.status, StatusCode::BAD_REQUEST);
    assert!(
        no_option.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("createOption")
    );

    let accepted = send(
        &emulator,
        "PUT",
        &disk,
        Some(json!({
            "location": "westus2",
            "sku": {"name": "Premium_ZRS"},
            "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 500}
        })),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    let status_url = accepted.header("azure-asyncoperation").to_owned();
    assert!(status_url.contains("/DiskOperations/"), "{status_url}");
    assert!(!accepted.header("location").is_empty());
    // The answer echoes the request.
    assert_eq!(accepted.body["sku"], json!({"name": "Premium_ZRS"}));
    assert_eq!(accepted.body["properties"]["provisioningState"], "Updating");
    let status = send(&emulator, "GET", &local(&status_url), None).await;
    assert_eq!(status.body["status"], "Succeeded");
    let output = &status.body["properties"]["output"];
    assert_eq!(output["properties"]["tier"], "P20");
    assert_eq!(output["properties"]["diskSizeBytes"], 536_870_912_000_i64);
    assert_eq!(output["properties"]["diskIOPSReadWrite"], 2300);
    assert_eq!(output["properties"]["diskState"], "Unattached");

    let zoned = send(
        &emulator,
        "PUT",
        &format!("{}?{DISKS}", compute("disks/zoned")),
        Some(json!({"location": "westus", "zones": ["1"], "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 8}})),
    )
    .await;
    assert_eq!(zoned.status, StatusCode::BAD_REQUEST);

    // Attached to a machine, it cannot be deleted.
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["dataDisks"] =
        json!([{"lun": 0, "createOption": "Attach", "managedDisk": {"id": compute("disks/data")}}]);
    let vm = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(vm.status, StatusCode::CREATED, "{}", vm.body);
    assert_eq!(
        vm.body["properties"]["storageProfile"]["dataDisks"][0]["diskSizeGB"],
        500
    );
    let blocked = send(&emulator, "DELETE", &disk, None).await;
    assert_eq!(blocked.status, StatusCode::CONFLICT);
    let other = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/other"),
        Some({
            let mut body = body;
            body["properties"]["networkProfile"]["networkInterfaces"][0]["id"] =
                json!(net("networkInterfaces/nic1"));
            body
        }),
    )
    .await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    assert_eq!(other.body["error"]["code"], "OperationNotAllowed");
}

#[tokio::test]
async fn names_azure_refuses_get_invalid_resource_name() {
    let emulator = with_network(Config::default()).await;
    for name in ["_node", "node.", "node-", "a%20b", "a;b", &"n".repeat(65)] {
        let refused = send(
            &emulator,
            "PUT",
            &compute(&format!("virtualMachines/{name}")),
            Some(vm_body("Standard_D2s_v3", "nic0")),
        )
        .await;
        assert_eq!(
            (refused.status, refused.body["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("InvalidResourceName")),
            "{name}: {}",
            refused.body
        );
    }
    let disk = json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 8}});
    for path in [
        format!("disks/..?{DISKS}"),
        format!("disks/a%20b?{DISKS}"),
        "availabilitySets/-set".to_owned(),
    ] {
        let refused = send(&emulator, "PUT", &compute(&path), Some(disk.clone())).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{path}: {}",
            refused.body
        );
        assert_eq!(refused.body["error"]["code"], "InvalidResourceName");
    }
    let fine = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/capz-cp_0.x"),
        Some(vm_body("Standard_D2s_v3", "nic0")),
    )
    .await;
    assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.body);
}

#[tokio::test]
async fn upload_sizes_out_of_range_are_refused_naming_the_property() {
    let emulator = with_network(Config::default()).await;
    let disk = format!("{}?{DISKS}", compute("disks/upload"));
    let upload = |bytes: i64| json!({"location": "westus2", "properties": {"creationData": {"createOption": "Upload", "uploadSizeBytes": bytes}}});
    for bytes in [i64::MIN, -1, 0, 512, i64::MAX] {
        let refused = send(&emulator, "PUT", &disk, Some(upload(bytes))).await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{bytes}: {}",
            refused.body
        );
        assert_eq!(refused.body["error"]["code"], "InvalidParameter");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("properties.creationData.uploadSizeBytes"),
            "{}",
            refused.body
        );
    }
    // 32 GiB of content and the VHD footer: a 32 GiB disk, ready for the upload.
    let accepted = send(&emulator, "PUT", &disk, Some(upload((32 << 30) + 512))).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    let read = send(&emulator, "GET", &disk, None).await;
    assert_eq!(read.body["properties"]["diskSizeGB"], 32);
    assert_eq!(read.body["properties"]["diskState"], "ReadyToUpload");
}

#[tokio::test]
async fn availability_sets_are_written_at_once_and_list_their_machines() {
    let emulator = with_network(Config::default()).await;
    let classic = compute("availabilitySets/classic");
    let created = send(
        &emulator,
        "PUT",
        &classic,
        Some(json!({"location": "westus2", "properties": {"platformFaultDomainCount": 2}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    assert!(created.headers.get("azure-asyncoperation").is_none());
    assert_eq!(created.body["sku"], json!({"name": "Classic"}));
    assert_eq!(created.body["properties"]["platformUpdateDomainCount"], 5);
    assert!(created.body["properties"].get("provisioningState").is_none());
    assert!(created.body["properties"].get("virtualMachines").is_none());
    let read = send(&emulator, "GET", &classic, None).await;
    assert_eq!(read.body["properties"]["virtualMachines"], json!([]));

    let too_many = send(
        &emulator,
        "PUT",
        &compute("availabilitySets/wide"),
        Some(json!({"location": "westus2", "properties": {"platformFaultDomainCount": 5}})),
    )
    .await;
    assert_eq!(too_many.status, StatusCode::BAD_REQUEST);
    assert!(
        too_many.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("platformFaultDomainCount")
    );

    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["availabilitySet"] = json!({"id": classic});
    let unmanaged = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(unmanaged.status, StatusCode::CONFLICT);

    let aligned = compute("availabilitySets/aligned");
    let set = send(
        &emulator,
        "PUT",
        &aligned,
        Some(json!({"location": "westus2", "sku": {"name": "Aligned"}, "properties": {"platformFaultDomainCount": 3}})),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK);
    body["properties"]["availabilitySet"] = json!({"id": aligned});
    let placed = send(&emulator, "PUT", &compute("virtualMachines/node"), Some(body)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    let listed = send(&emulator, "GET", &aligned, None).await;
    assert_eq!(
        listed.body["properties"]["virtualMachines"][0]["id"],
        compute("virtualMachines/node")
    );
    let blocked = send(&emulator, "DELETE", &aligned, None).await;
    assert_eq!(blocked.status, StatusCode::CONFLICT);
    delete_and_confirm_gone(&emulator, &classic, StatusCode::OK).await;
}

#[tokio::test]
async fn resource_skus_list_sizes_per_location() {
    let emulator = Emulator::new(Config::default());
    let skus = format!("{SUB}/providers/Microsoft.Compute/skus?api-version=2021-07-01");
    let all = send(&emulator, "GET", &skus, None).await;
    let one = send(
        &emulator,
        "GET",
        &format!("{skus}&$filter=location%20eq%20%27westus2%27"),
        None,
    )
    .await;
    assert_eq!(one.status, StatusCode::OK, "{}", one.body);
    let entries = one.body["value"].as_array().unwrap();
    assert!(entries.len() < all.body["value"].as_array().unwrap().len());
    assert!(
        entries
            .iter()
            .all(|entry| entry["locations"] == json!(["westus2"]))
    );
    let size = entries
        .iter()
        .find(|entry| entry["name"] == "Standard_D4s_v3")
        .unwrap();
    assert_eq!(size["resourceType"], "virtualMachines");
    assert_eq!(size["family"], "standardDSv3Family");
    assert_eq!(size["locationInfo"][0]["zones"], json!(["1", "2", "3"]));
    assert_eq!(size["restrictions"], json!([]));
    let capability = |name: &str| {
        size["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|capability| capability["name"] == name)
            .map(|capability| capability["value"].clone())
    };
    assert_eq!(capability("vCPUs"), Some(json!("4")));
    assert_eq!(capability("AcceleratedNetworkingEnabled"), Some(json!("True")));
    let aligned = entries
        .iter()
        .find(|entry| entry["resourceType"] == "availabilitySets" && entry["name"] == "Aligned")
        .unwrap();
    assert_eq!(
        aligned["capabilities"][0]["name"],
        "MaximumPlatformFaultDomainCount"
    );

    let bad = send(
        &emulator,
        "GET",
        &format!("{skus}&$filter=name%20eq%20%27x%27"),
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let old = send(
        &emulator,
        "GET",
        &format!("{SUB}/providers/Microsoft.Compute/skus?api-version=2024-07-01"),
        None,
    )
    .await;
    assert_eq!(old.body["error"]["code"], "NoRegisteredProviderFound");
}

/// The `restrictions` a resource SKU list shows for a size; `null` when it lists no such size.
fn restrictions_of(list: &Reply, size: &str) -> Value {
    list.body["value"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["name"] == size)
        .map_or(Value::Null, |entry| entry["restrictions"].clone())
}

#[tokio::test]
async fn restricted_sizes_are_listed_and_refused_where_restricted() {
    let emulator = with_network(Config {
        sku_restrictions: vec![
            SkuRestriction {
                size: "Standard_D8s_v3".into(),
                location: "westus2".into(),
                zones: Vec::new(),
            },
            SkuRestriction {
                size: "standard_d4s_v3".into(),
                location: "westus2".into(),
                zones: vec!["2".into()],
            },
        ],
        ..Config::default()
    })
    .await;
    let skus =
        format!("{SUB}/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location%20eq%20%27");
    let westus2 = send(&emulator, "GET", &format!("{skus}westus2%27"), None).await;
    assert_eq!(
        restrictions_of(&westus2, "Standard_D8s_v3"),
        json!([{
            "type": "Location",
            "values": ["westus2"],
            "restrictionInfo": {"locations": ["westus2"]},
            "reasonCode": "NotAvailableForSubscription",
        }])
    );
    assert_eq!(
        restrictions_of(&westus2, "Standard_D4s_v3"),
        json!([{
            "type": "Zone",
            "values": ["westus2"],
            "restrictionInfo": {"locations": ["westus2"], "zones": ["2"]},
            "reasonCode": "NotAvailableForSubscription",
        }])
    );
    assert_eq!(restrictions_of(&westus2, "Standard_D2s_v3"), json!([]));
    let eastus = send(&emulator, "GET", &format!("{skus}eastus%27"), None).await;
    assert_eq!(restrictions_of(&eastus, "Standard_D8s_v3"), json!([]));

    let refused = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/big"),
        Some(vm_body("Standard_D8s_v3", "nic0")),
    )
    .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "SkuNotAvailable");
    assert_eq!(
        refused.body["error"]["message"],
        format!(
            "The requested size for resource '{}' is currently not available in location 'westus2' zones '' for subscription '00000000-0000-0000-0000-000000000000'. Please try another size or deploy to a different location or zones. See https://aka.ms/azureskunotavailable for details.",
            compute("virtualMachines/big")
        )
    );
    assert_eq!(
        send(&emulator, "GET", &compute("virtualMachines/big"), None)
            .await
            .status,
        StatusCode::NOT_FOUND
    );

    let in_zone = |zone: &str, nic: &str| {
        let mut body = vm_body("Standard_D4s_v3", nic);
        body["zones"] = json!([zone]);
        body
    };
    let zonal = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/z2"),
        Some(in_zone("2", "nic0")),
    )
    .await;
    assert_eq!(zonal.status, StatusCode::CONFLICT, "{}", zonal.body);
    assert_eq!(zonal.body["error"]["code"], "SkuNotAvailable");
    assert!(
        zonal.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in location 'westus2' zones '2' for subscription"),
        "{}",
        zonal.body
    );
    let other_zone = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/z1"),
        Some(in_zone("1", "nic0")),
    )
    .await;
    assert_eq!(other_zone.status, StatusCode::CREATED, "{}", other_zone.body);
    // A size barred in some zones only still serves regional machines.
    let regional = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/regional"),
        Some(vm_body("Standard_D4s_v3", "nic1")),
    )
    .await;
    assert_eq!(regional.status, StatusCode::CREATED, "{}", regional.body);
}

#[tokio::test]
async fn confidential_machines_need_a_confidential_size() {
    let emulator = with_network(Config::default()).await;
    let skus = format!(
        "{SUB}/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location%20eq%20%27westus2%27"
    );
    let list = send(&emulator, "GET", &skus, None).await;
    let capability = |size: &str, name: &str| {
        list.body["value"]
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["name"] == size)
            .and_then(|entry| {
                entry["capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|capability| capability["name"] == name)
                    .map(|capability| capability["value"].clone())
            })
    };
    assert_eq!(
        capability("Standard_DC2as_v5", "ConfidentialComputingType"),
        Some(json!("SNP"))
    );
    assert_eq!(
        capability("Standard_DC2as_v5", "HyperVGenerations"),
        Some(json!("V2"))
    );
    assert_eq!(capability("Standard_D2s_v3", "ConfidentialComputingType"), None);

    let confidential = |size: &str, nic: &str| {
        let mut body = vm_body(size, nic);
        body["properties"]["securityProfile"] = json!({
            "securityType": "ConfidentialVM",
            "uefiSettings": {"secureBootEnabled": true, "vTpmEnabled": true},
        });
        body["properties"]["storageProfile"]["osDisk"]["managedDisk"]["securityProfile"] =
            json!({"securityEncryptionType": "VMGuestStateOnly"});
        body
    };
    let refused = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/plain"),
        Some(confidential("Standard_D2s_v3", "nic0")),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "BadRequest");
    assert_eq!(
        refused.body["error"]["message"],
        "The VM size 'Standard_D2s_v3' is not supported for creation of VMs and Virtual Machine Scale Set with 'ConfidentialVM' security type and managedDisk.securityProfile.securityEncryptionType set as 'VMGuestStateOnly'"
    );
    let created = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/sealed"),
        Some(confidential("Standard_DC2as_v5", "nic0")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.body["properties"]["securityProfile"]["securityType"],
        "ConfidentialVM"
    );
}

#[tokio::test]
async fn images_are_looked_up_like_azure_serves_them() {
    let emulator = with_network(Config::default()).await;
    let versions = format!(
        "{SUB}/providers/Microsoft.Compute/locations/westus2/publishers/cncf-upstream/artifacttypes/vmimage/offers/capi/skus/ubuntu-2204-gen1/versions"
    );
    let list = send(&emulator, "GET", &versions, None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    let names: Vec<&str> = list
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|version| version["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"130.3.20240717"), "{names:?}");
    let one = send(&emulator, "GET", &format!("{versions}/129.7.20240717"), None).await;
    assert_eq!(one.body["properties"]["osDiskImage"]["operatingSystem"], "Linux");
    let unknown = send(&emulator, "GET", &format!("{versions}/1.0.0"), None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.body["error"]["code"], "NotFound");

    let gallery_versions = format!(
        "{SUB}/providers/Microsoft.Compute/locations/westus2/communityGalleries/{GALLERY}/images/capi-ubun2-2404/versions"
    );
    let gallery = send(
        &emulator,
        "GET",
        &format!("{gallery_versions}?api-version=2023-07-03"),
        None,
    )
    .await;
    assert_eq!(gallery.status, StatusCode::OK, "{}", gallery.body);
    assert!(
        gallery.body["value"]
            .as_array()
            .unwrap()
            .iter()
            .any(|version| version["name"] == "1.33.1")
    );
    let version = send(
        &emulator,
        "GET",
        &format!("{gallery_versions}/1.33.1?api-version=2023-07-03"),
        None,
    )
    .await;
    let unique_id = version.body["identifier"]["uniqueId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        unique_id,
        format!("/CommunityGalleries/{GALLERY}/Images/capi-ubun2-2404/Versions/1.33.1")
    );
    let missing = send(
        &emulator,
        "GET",
        &format!("{gallery_versions}/0.0.1?api-version=2023-07-03"),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // CAPZ's default image for current releases.
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["imageReference"] = json!({"communityGalleryImageId": unique_id});
    let vm = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(vm.status, StatusCode::CREATED, "{}", vm.body);
    body["properties"]["storageProfile"]["imageReference"] = json!({"communityGalleryImageId": format!("/CommunityGalleries/{GALLERY}/Images/capi-ubun2-2404/Versions/1.99.0")});
    body["properties"]["networkProfile"]["networkInterfaces"][0]["id"] = json!(net("networkInterfaces/nic1"));
    let unavailable = send(&emulator, "PUT", &compute("virtualMachines/other"), Some(body)).await;
    assert_eq!(unavailable.status, StatusCode::NOT_FOUND);
    assert_eq!(unavailable.body["error"]["code"], "GalleryImageNotFound");
}

#[tokio::test]
async fn machine_writes_count_against_the_machine_and_the_subscription() {
    use arm_emulator::throttle::{Bucket, ComputeLimits, RateLimits, VmPolicy};
    let tight = VmPolicy {
        subscription: Bucket {
            burst: 1500,
            per_second: 1.0,
        },
        resource: Bucket {
            burst: 2,
            per_second: 0.1,
        },
    };
    let emulator = with_network(Config {
        rate_limits: RateLimits {
            compute: ComputeLimits {
                update_vm: tight,
                ..ComputeLimits::default()
            },
            ..RateLimits::default()
        },
        ..Config::default()
    })
    .await;
    let created = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node0"),
        Some(vm_body("Standard_D2s_v3", "nic0")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(
        created.header("x-ms-ratelimit-remaining-resource"),
        "Microsoft.Compute/PutVMSubscriptionMaximum;1499,Microsoft.Compute/PutVMResource;11"
    );
    let tag = |value: &str| json!({"tags": {"round": value}});
    for (round, left) in [("1", "1"), ("2", "0")] {
        let updated = send(
            &emulator,
            "PATCH",
            &compute("virtualMachines/node0"),
            Some(tag(round)),
        )
        .await;
        assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
        assert!(
            updated
                .header("x-ms-ratelimit-remaining-resource")
                .ends_with(&format!("UpdateVMResource;{left}")),
            "{}",
            updated.header("x-ms-ratelimit-remaining-resource")
        );
    }
    let refused = send(
        &emulator,
        "PATCH",
        &compute("virtualMachines/node0"),
        Some(tag("3")),
    )
    .await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.body["error"]["code"], "OperationNotAllowed");
    assert_eq!(refused.body["error"]["details"][0]["target"], "UpdateVMResource");
    assert_eq!(refused.header("retry-after"), "10");
    // The refused write changed nothing; another machine has a bucket of its own.
    let read = send(&emulator, "GET", &compute("virtualMachines/node0"), None).await;
    assert_eq!(read.body["tags"]["round"], "2");
    let other = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node1"),
        Some(vm_body("Standard_D2s_v3", "nic1")),
    )
    .await;
    assert_eq!(other.status, StatusCode::CREATED, "{}", other.body);
    let updated = send(
        &emulator,
        "PATCH",
        &compute("virtualMachines/node1"),
        Some(tag("1")),
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    // The machine's bucket refills with time.
    emulator.advance_clock(Duration::from_secs(10));
    let again = send(
        &emulator,
        "PATCH",
        &compute("virtualMachines/node0"),
        Some(tag("3")),
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
}

#[tokio::test]
async fn a_zone_without_capacity_fails_the_machine_through_its_operation() {
    let emulator = with_network(Config::default()).await;
    emulator.add_fault(arm_emulator::faults::Fault {
        method: Some("PUT".into()),
        path: "*/virtualMachines/*".into(),
        status: None,
        code: Some("ZonalAllocationFailed".into()),
        message: Some("Allocation failed. There is not enough capacity for the size in zone '1'.".into()),
        count: Some(1),
        percent: None,
        latency_ms: None,
        drop_connection: false,
        retry_after_seconds: None,
        fail_operation: true,
        cancel_operation: false,
    });
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["zones"] = json!(["1"]);
    let accepted = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/node0"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.body);
    let status = send(
        &emulator,
        "GET",
        &local(accepted.header("azure-asyncoperation")),
        None,
    )
    .await;
    assert_eq!(status.body["status"], "Failed", "{}", status.body);
    assert_eq!(status.body["error"]["code"], "ZonalAllocationFailed");
    let machine = send(&emulator, "GET", &compute("virtualMachines/node0"), None).await;
    assert_eq!(machine.body["properties"]["provisioningState"], "Failed");
    // The rule was for one call: the retry succeeds, as it would once capacity returns.
    let retried = send(&emulator, "PUT", &compute("virtualMachines/node0"), Some(body)).await;
    let status = send(
        &emulator,
        "GET",
        &local(retried.header("azure-asyncoperation")),
        None,
    )
    .await;
    assert_eq!(status.body["status"], "Succeeded", "{}", status.body);
}

#[tokio::test]
async fn a_generation_2_image_makes_generation_2_disks_and_machines() {
    let emulator = with_network(Config::default()).await;
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["imageReference"] =
        json!({"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"});
    let vm = compute("virtualMachines/gen2");
    let created = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let machine = send(&emulator, "GET", &vm, None).await;
    let os_disk = machine.body["properties"]["storageProfile"]["osDisk"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let disk = send(
        &emulator,
        "GET",
        &format!("{}?{DISKS}", compute(&format!("disks/{os_disk}"))),
        None,
    )
    .await;
    assert_eq!(disk.body["properties"]["hyperVGeneration"], "V2");
    let view = send(&emulator, "GET", &format!("{vm}/instanceView"), None).await;
    assert_eq!(view.body["hyperVGeneration"], "V2");
}

#[tokio::test]
async fn a_later_machine_write_preempts_the_running_one_and_a_deleted_machine_takes_no_writes() {
    let emulator = with_network(Config {
        latencies: [
            ("Microsoft.Compute/virtualMachines", 30),
            ("Microsoft.Compute/disks", 30),
        ]
        .map(|(resource_type, seconds)| (resource_type.to_owned(), Duration::from_secs(seconds)))
        .into(),
        ..Config::default()
    })
    .await;
    let vm = compute("virtualMachines/node0");
    let created = send(&emulator, "PUT", &vm, Some(vm_body("Standard_D2s_v3", "nic0"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let replaced = send(&emulator, "PUT", &vm, Some(vm_body("Standard_D4s_v3", "nic0"))).await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    let first = send(
        &emulator,
        "GET",
        &local(created.header("azure-asyncoperation")),
        None,
    )
    .await;
    assert_eq!(first.body["status"], "Canceled");
    assert_eq!(
        first.body["error"],
        json!({"code": "OperationPreempted", "message": "Operation execution has been preempted by a more recent operation."})
    );
    emulator.advance_clock(Duration::from_secs(31));
    let second = send(
        &emulator,
        "GET",
        &local(replaced.header("azure-asyncoperation")),
        None,
    )
    .await;
    assert_eq!(second.body["status"], "Succeeded");
    let machine = send(&emulator, "GET", &vm, None).await;
    assert_eq!(
        machine.body["properties"]["hardwareProfile"]["vmSize"],
        "Standard_D4s_v3"
    );
    assert_eq!(machine.body["properties"]["provisioningState"], "Succeeded");

    let deleting = send(&emulator, "DELETE", &vm, None).await;
    assert_eq!(deleting.status, StatusCode::ACCEPTED);
    let extension = json!({"location": "westus2", "properties": {"publisher": "p", "type": "t", "typeHandlerVersion": "1.0"}});
    for (path, body) in [
        (vm.clone(), vm_body("Standard_D2s_v3", "nic0")),
        (format!("{vm}/extensions/boot"), extension),
    ] {
        let refused = send(&emulator, "PUT", &path, Some(body)).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{path}");
        assert_eq!(refused.body["error"]["code"], "OperationNotAllowed");
        assert_eq!(
            refused.body["error"]["message"],
            "Operation 'Update VM' is not allowed on VM 'node0' since the VM is marked for deletion. You can only retry the Delete operation (or wait for an ongoing one to complete)."
        );
    }
    assert_eq!(
        send(&emulator, "DELETE", &vm, None).await.status,
        StatusCode::ACCEPTED
    );

    // A managed disk with an operation running refuses another write or a delete.
    let disk = format!("{}?{DISKS}", compute("disks/data"));
    let body = json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 8}});
    let accepted = send(&emulator, "PUT", &disk, Some(body.clone())).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    for (method, body) in [("PUT", Some(body.clone())), ("DELETE", None)] {
        let refused = send(&emulator, method, &disk, body).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{method}");
        assert_eq!(refused.body["error"]["code"], "Conflict");
    }
    emulator.advance_clock(Duration::from_secs(31));
    assert_eq!(
        send(&emulator, "PUT", &disk, Some(body)).await.status,
        StatusCode::ACCEPTED
    );
}

/// The OS disk a machine boots from, as stored.
async fn os_disk_of(emulator: &Emulator, vm: &str) -> Value {
    let machine = send(emulator, "GET", vm, None).await;
    assert_eq!(machine.status, StatusCode::OK, "{}", machine.body);
    let disk_id = machine.body["properties"]["storageProfile"]["osDisk"]["managedDisk"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    send(emulator, "GET", &format!("{disk_id}?{DISKS}"), None)
        .await
        .body
}

/// A Linux, generation 2 managed image of a 32 GB snapshot, as the recorded sessions make it.
async fn image_from_snapshot(emulator: &Emulator, image: &str) -> Reply {
    let snapshot = compute("snapshots/snap");
    send(
        emulator,
        "PUT",
        &compute(&format!("images/{image}")),
        Some(json!({
            "location": "westus2",
            "properties": {
                "hyperVGeneration": "V2",
                "storageProfile": {"osDisk": {"osType": "Linux", "osState": "Generalized", "snapshot": {"id": snapshot}}}
            }
        })),
    )
    .await
}

#[tokio::test]
async fn snapshots_are_written_as_disks_and_managed_images_need_their_source() {
    let emulator = with_network(Config::default()).await;
    let snapshot = format!("{}?{DISKS}", compute("snapshots/snap"));
    let missing = image_from_snapshot(&emulator, "image").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    assert_eq!(missing.body["error"]["code"], "NotFound");
    assert_eq!(missing.body["error"]["target"], compute("snapshots/snap"));

    let accepted = send(
        &emulator,
        "PUT",
        &snapshot,
        Some(json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 32}})),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    assert_eq!(accepted.body["properties"]["provisioningState"], "Updating");
    assert!(
        accepted
            .header("azure-asyncoperation")
            .contains("/DiskOperations/")
    );
    emulator.advance_clock(Duration::from_mins(1));
    let read = send(&emulator, "GET", &snapshot, None).await;
    let properties = &read.body["properties"];
    assert_eq!(properties["incremental"], false);
    assert_eq!(properties["diskSizeBytes"], 32_i64 << 30);
    assert_eq!(properties["diskState"], "Unattached");
    assert!(properties.get("diskIOPSReadWrite").is_none(), "{properties}");
    assert_eq!(
        read.body["sku"],
        json!({"name": "Standard_LRS", "tier": "Standard"})
    );
    let premium_v2 = send(
        &emulator,
        "PUT",
        &format!("{}?{DISKS}", compute("snapshots/v2")),
        Some(json!({"location": "westus2", "sku": {"name": "PremiumV2_LRS"}, "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 32}})),
    )
    .await;
    assert_eq!(premium_v2.status, StatusCode::BAD_REQUEST, "{}", premium_v2.body);
    // A disk copied from the snapshot takes its size.
    let copy = send(
        &emulator,
        "PUT",
        &format!("{}?{DISKS}", compute("disks/copy")),
        Some(json!({"location": "westus2", "properties": {"creationData": {"createOption": "Copy", "sourceResourceId": compute("snapshots/snap")}}})),
    )
    .await;
    assert_eq!(copy.status, StatusCode::ACCEPTED, "{}", copy.body);
    emulator.advance_clock(Duration::from_mins(1));
    let copied = send(
        &emulator,
        "GET",
        &format!("{}?{DISKS}", compute("disks/copy")),
        None,
    )
    .await;
    assert_eq!(copied.body["properties"]["diskSizeGB"], 32);
    assert_eq!(
        copied.body["properties"]["creationData"]["sourceUniqueId"],
        read.body["properties"]["uniqueId"]
    );

    let created = image_from_snapshot(&emulator, "image").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    let os_disk = &created.body["properties"]["storageProfile"]["osDisk"];
    assert_eq!(os_disk["caching"], "None");
    assert_eq!(os_disk["storageAccountType"], "Standard_LRS");
    assert_eq!(os_disk["diskSizeGB"], 32);
    assert_eq!(
        created.body["properties"]["storageProfile"]["dataDisks"],
        json!([])
    );
    let no_source = send(
        &emulator,
        "PUT",
        &compute("images/bare"),
        Some(json!({"location": "westus2", "properties": {"storageProfile": {"osDisk": {"osType": "Linux", "osState": "Generalized"}}}})),
    )
    .await;
    assert_eq!(no_source.status, StatusCode::BAD_REQUEST, "{}", no_source.body);
    emulator.advance_clock(Duration::from_mins(1));

    // A machine boots from the image: its OS disk is of the image's generation and size.
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["imageReference"] = json!({"id": compute("images/image")});
    body["properties"]["storageProfile"]["osDisk"]["diskSizeGB"] = json!(16);
    let vm = compute("virtualMachines/from-image");
    let small = send(&emulator, "PUT", &vm, Some(body.clone())).await;
    assert_eq!(small.status, StatusCode::BAD_REQUEST, "{}", small.body);
    body["properties"]["storageProfile"]["osDisk"]
        .as_object_mut()
        .unwrap()
        .remove("diskSizeGB");
    let created = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let disk = os_disk_of(&emulator, &vm).await;
    assert_eq!(disk["properties"]["hyperVGeneration"], "V2");
    assert_eq!(disk["properties"]["diskSizeGB"], 32);
    assert_eq!(
        disk["properties"]["creationData"]["imageReference"]["id"],
        compute("images/image")
    );
    // The image is a copy: its snapshot may go.
    delete_and_confirm_gone(&emulator, &snapshot, StatusCode::ACCEPTED).await;
}

/// A gallery `g` with the Linux generation 2 definition `def`.
async fn gallery_with_definition(emulator: &Emulator) {
    let gallery = send(
        emulator,
        "PUT",
        &format!("{}?api-version=2024-03-03", compute("galleries/g")),
        Some(json!({"location": "westus2", "properties": {"description": "images"}})),
    )
    .await;
    assert_eq!(gallery.status, StatusCode::CREATED, "{}", gallery.body);
    let definition = send(
        emulator,
        "PUT",
        &format!("{}?api-version=2024-03-03", compute("galleries/g/images/def")),
        Some(json!({"location": "westus2", "properties": {
            "osType": "Linux", "osState": "Generalized", "hyperVGeneration": "V2",
            "identifier": {"publisher": "capz", "offer": "capi", "sku": "ubuntu-2404"},
            "features": [{"name": "SecurityType", "value": "TrustedLaunchSupported"}]
        }})),
    )
    .await;
    assert_eq!(definition.status, StatusCode::CREATED, "{}", definition.body);
}

/// The managed image `image` of a new 32 GB snapshot `snap`, both provisioned.
async fn image_of_snapshot(emulator: &Emulator) {
    send(
        emulator,
        "PUT",
        &format!("{}?{DISKS}", compute("snapshots/snap")),
        Some(json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 32}})),
    )
    .await;
    emulator.advance_clock(Duration::from_mins(1));
    assert_eq!(
        image_from_snapshot(emulator, "image").await.status,
        StatusCode::CREATED
    );
    emulator.advance_clock(Duration::from_mins(1));
}

#[tokio::test]
async fn gallery_versions_are_made_from_images_and_boot_machines() {
    let emulator = with_network(Config::default()).await;
    let version = |name: &str| {
        format!(
            "{}?api-version=2024-03-03",
            compute(&format!("galleries/g/images/def/versions/{name}"))
        )
    };
    gallery_with_definition(&emulator).await;
    image_of_snapshot(&emulator).await;
    let from = |source: &str, regions: Value| {
        json!({"location": "westus2", "properties": {
            "publishingProfile": {"targetRegions": regions, "replicaCount": 2},
            "storageProfile": {"source": {"id": source}}
        }})
    };
    let missing = send(
        &emulator,
        "PUT",
        &version("1.0.0"),
        Some(from(&compute("images/none"), json!([]))),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
    let misnamed = send(
        &emulator,
        "PUT",
        &version("1.0"),
        Some(from(&compute("images/image"), json!([]))),
    )
    .await;
    assert_eq!(misnamed.status, StatusCode::BAD_REQUEST, "{}", misnamed.body);
    let created = send(
        &emulator,
        "PUT",
        &version("1.0.0"),
        Some(from(&compute("images/image"), json!([{"name": "West US 2"}]))),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    emulator.advance_clock(Duration::from_mins(1));
    let read = send(&emulator, "GET", &version("1.0.0"), None).await;
    let properties = &read.body["properties"];
    assert_eq!(properties["storageProfile"]["osDiskImage"]["sizeInGB"], 32);
    assert_eq!(
        properties["publishingProfile"]["targetRegions"][0]["regionalReplicaCount"],
        2
    );
    assert!(properties["publishingProfile"]["publishedDate"].is_string());
    assert!(properties.get("replicationStatus").is_none(), "{properties}");
    let expanded = send(
        &emulator,
        "GET",
        &format!("{}&$expand=ReplicationStatus", version("1.0.0")),
        None,
    )
    .await;
    assert_eq!(
        expanded.body["properties"]["replicationStatus"]["aggregatedState"],
        "Completed"
    );

    // Machines boot from a version, or from the definition's latest version.
    for (name, nic, id) in [
        (
            "from-version",
            "nic0",
            compute("galleries/g/images/def/versions/1.0.0"),
        ),
        ("from-definition", "nic1", compute("galleries/g/images/def")),
    ] {
        let mut body = vm_body("Standard_D2s_v3", nic);
        body["properties"]["storageProfile"]["imageReference"] = json!({"id": id});
        let vm = compute(&format!("virtualMachines/{name}"));
        let created = send(&emulator, "PUT", &vm, Some(body)).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let disk = os_disk_of(&emulator, &vm).await;
        assert_eq!(disk["properties"]["hyperVGeneration"], "V2");
        assert_eq!(
            disk["properties"]["creationData"]["galleryImageReference"]["id"],
            id
        );
    }
}

#[tokio::test]
async fn a_version_boots_machines_only_where_it_is_replicated() {
    let emulator = with_network(Config::default()).await;
    gallery_with_definition(&emulator).await;
    image_of_snapshot(&emulator).await;
    let body = json!({"location": "westus2", "properties": {
        "publishingProfile": {"targetRegions": [{"name": "eastus"}]},
        "storageProfile": {"source": {"id": compute("images/image")}}
    }});
    let version = format!(
        "{}?api-version=2024-03-03",
        compute("galleries/g/images/def/versions/1.0.1")
    );
    let created = send(&emulator, "PUT", &version, Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator.advance_clock(Duration::from_mins(1));
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["imageReference"] =
        json!({"id": compute("galleries/g/images/def/versions/1.0.1")});
    let elsewhere = send(
        &emulator,
        "PUT",
        &compute("virtualMachines/elsewhere"),
        Some(body),
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND, "{}", elsewhere.body);
    assert_eq!(elsewhere.body["error"]["code"], "GalleryImageNotFound");
}

#[tokio::test]
async fn galleries_keep_their_sharing_and_refuse_deletion_while_nested_resources_exist() {
    let emulator = Emulator::new(Config::default());
    common::group_with_network(&emulator, RG, "westus2").await;
    gallery_with_definition(&emulator).await;
    let gallery = format!("{}?api-version=2024-03-03", compute("galleries/g"));
    let definition = format!("{}?api-version=2024-03-03", compute("galleries/g/images/def"));
    let community = send(
        &emulator,
        "PUT",
        &gallery,
        Some(json!({"location": "westus2", "properties": {"sharingProfile": {
            "permissions": "Community",
            "communityGalleryInfo": {"publisherUri": "https://capz.example", "publisherContact": "capz@example.com", "eula": "none", "publicNamePrefix": "capz"}
        }}})),
    )
    .await;
    assert_eq!(community.status, StatusCode::OK, "{}", community.body);
    emulator.advance_clock(Duration::from_mins(1));
    let read = send(&emulator, "GET", &gallery, None).await;
    assert_eq!(
        read.body["properties"]["identifier"]["uniqueName"],
        "00000000-0000-0000-0000-000000000000-G"
    );
    let info = &read.body["properties"]["sharingProfile"]["communityGalleryInfo"];
    assert_eq!(info["communityGalleryEnabled"], true);
    let public_name = info["publicNames"][0].as_str().unwrap();
    assert!(public_name.starts_with("capz-"), "{public_name}");

    let incomplete = send(
        &emulator,
        "PUT",
        &format!("{}?api-version=2024-03-03", compute("galleries/g/images/bad")),
        Some(json!({"location": "westus2", "properties": {"osType": "Linux", "osState": "Generalized"}})),
    )
    .await;
    assert_eq!(incomplete.status, StatusCode::BAD_REQUEST, "{}", incomplete.body);
    let read_definition = send(
        &emulator,
        "GET",
        &format!("{}?api-version=2024-03-03", compute("galleries/g/images/def")),
        None,
    )
    .await;
    assert_eq!(read_definition.body["properties"]["architecture"], "x64");
    let changed = send(
        &emulator,
        "PUT",
        &format!("{}?api-version=2024-03-03", compute("galleries/g/images/def")),
        Some(json!({"location": "westus2", "properties": {
            "osType": "Windows", "osState": "Generalized",
            "identifier": {"publisher": "capz", "offer": "capi", "sku": "ubuntu-2404"}
        }})),
    )
    .await;
    assert_eq!(changed.status, StatusCode::CONFLICT, "{}", changed.body);
    assert_eq!(changed.body["error"]["code"], "PropertyChangeNotAllowed");

    let refused = send(&emulator, "DELETE", &gallery, None).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "CannotDeleteResource");
    delete_and_confirm_gone(&emulator, &definition, StatusCode::ACCEPTED).await;
    delete_and_confirm_gone(&emulator, &gallery, StatusCode::ACCEPTED).await;
}

#[tokio::test]
async fn capacity_reservations_list_the_machines_placed_in_their_group() {
    let emulator = with_network(Config::default()).await;
    let group = compute("capacityReservationGroups/crg");
    let reservation = compute("capacityReservationGroups/crg/capacityReservations/d2");
    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["capacityReservation"] = json!({"capacityReservationGroup": {"id": group}});
    let vm = compute("virtualMachines/reserved");
    let no_group = send(&emulator, "PUT", &vm, Some(body.clone())).await;
    assert_eq!(no_group.status, StatusCode::NOT_FOUND, "{}", no_group.body);

    let created = send(
        &emulator,
        "PUT",
        &group,
        Some(json!({"location": "westus2", "zones": ["1", "2"]})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert!(created.body["properties"].get("provisioningState").is_none());
    let regional = send(
        &emulator,
        "PUT",
        &reservation,
        Some(json!({"location": "westus2", "sku": {"name": "Standard_D2s_v3", "capacity": 2}})),
    )
    .await;
    assert_eq!(regional.status, StatusCode::BAD_REQUEST, "{}", regional.body);
    let unknown = send(
        &emulator,
        "PUT",
        &reservation,
        Some(json!({"location": "westus2", "zones": ["1"], "sku": {"name": "Standard_A0", "capacity": 2}})),
    )
    .await;
    assert_eq!(unknown.body["error"]["code"], "NotSupported");
    let reserved = send(
        &emulator,
        "PUT",
        &reservation,
        Some(
            json!({"location": "westus2", "zones": ["1"], "sku": {"name": "Standard_D2s_v3", "capacity": 2}}),
        ),
    )
    .await;
    assert_eq!(reserved.status, StatusCode::CREATED, "{}", reserved.body);
    assert_eq!(reserved.body["properties"]["provisioningState"], "Creating");
    emulator.advance_clock(Duration::from_mins(1));

    body["zones"] = json!(["1"]);
    let placed = send(&emulator, "PUT", &vm, Some(body)).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.body);
    emulator.advance_clock(Duration::from_mins(1));
    let read = send(&emulator, "GET", &group, None).await;
    let machine = json!([{"id": vm}]);
    assert_eq!(read.body["properties"]["virtualMachinesAssociated"], machine);
    assert_eq!(
        read.body["properties"]["capacityReservations"],
        json!([{"id": reservation}])
    );
    assert!(read.body["properties"].get("instanceView").is_none());
    let view = send(&emulator, "GET", &format!("{group}?$expand=instanceView"), None).await;
    let reservation_view = &view.body["properties"]["instanceView"]["capacityReservations"][0];
    assert_eq!(reservation_view["name"], "d2");
    assert_eq!(
        reservation_view["utilizationInfo"]["virtualMachinesAllocated"],
        machine
    );
    let read = send(&emulator, "GET", &reservation, None).await;
    assert_eq!(read.body["properties"]["virtualMachinesAssociated"], machine);
    assert!(read.body["properties"]["reservationId"].is_string());

    // The group goes last: after its machines and its reservations.
    assert_eq!(
        send(&emulator, "DELETE", &group, None).await.status,
        StatusCode::CONFLICT
    );
    delete_and_confirm_gone(&emulator, &vm, StatusCode::ACCEPTED).await;
    let refused = send(&emulator, "DELETE", &group, None).await;
    assert_eq!(refused.body["error"]["code"], "CannotDeleteResource");
    delete_and_confirm_gone(&emulator, &reservation, StatusCode::ACCEPTED).await;
    delete_and_confirm_gone(&emulator, &group, StatusCode::ACCEPTED).await;
}

#[tokio::test]
async fn versions_of_a_gallery_shared_with_groups_are_read_and_booted_by_unique_name() {
    let emulator = with_network(Config::default()).await;
    gallery_with_definition(&emulator).await;
    image_of_snapshot(&emulator).await;
    let unique = "00000000-0000-0000-0000-000000000000-G";
    let shared = format!(
        "{SUB}/providers/Microsoft.Compute/locations/westus2/sharedGalleries/{unique}/images/def/versions?api-version=2024-03-03"
    );
    let version = json!({"location": "westus2", "properties": {
        "storageProfile": {"source": {"id": compute("images/image")}}
    }});
    let created = send(
        &emulator,
        "PUT",
        &format!(
            "{}?api-version=2024-03-03",
            compute("galleries/g/images/def/versions/1.0.0")
        ),
        Some(version),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator.advance_clock(Duration::from_mins(1));
    let private = send(&emulator, "GET", &shared, None).await;
    assert_eq!(private.body["error"]["code"], "GalleryImageNotFound");

    let sharing = send(
        &emulator,
        "PUT",
        &format!("{}?api-version=2024-03-03", compute("galleries/g")),
        Some(json!({"location": "westus2", "properties": {"sharingProfile": {"permissions": "Groups"}}})),
    )
    .await;
    assert_eq!(sharing.status, StatusCode::OK, "{}", sharing.body);
    emulator.advance_clock(Duration::from_mins(1));
    let listed = send(&emulator, "GET", &shared, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let unique_id = format!("/SharedGalleries/{unique}/Images/def/Versions/1.0.0");
    assert_eq!(listed.body["value"][0]["identifier"]["uniqueId"], unique_id);
    assert_eq!(
        listed.body["value"][0]["properties"]["storageProfile"]["osDiskImage"]["diskSizeGB"],
        32
    );
    let one = send(
        &emulator,
        "GET",
        &shared.replace("/versions?", "/versions/1.0.0?"),
        None,
    )
    .await;
    assert_eq!(one.body["name"], "1.0.0");

    let mut body = vm_body("Standard_D2s_v3", "nic0");
    body["properties"]["storageProfile"]["imageReference"] = json!({"sharedGalleryImageId": unique_id});
    let vm = compute("virtualMachines/shared");
    let booted = send(&emulator, "PUT", &vm, Some(body.clone())).await;
    assert_eq!(booted.status, StatusCode::CREATED, "{}", booted.body);
    let disk = os_disk_of(&emulator, &vm).await;
    assert_eq!(disk["properties"]["hyperVGeneration"], "V2");
    body["properties"]["storageProfile"]["imageReference"] =
        json!({"sharedGalleryImageId": unique_id.replace("1.0.0", "9.9.9")});
    body["properties"]["networkProfile"]["networkInterfaces"][0]["id"] = json!(net("networkInterfaces/nic1"));
    let missing = send(&emulator, "PUT", &compute("virtualMachines/missing"), Some(body)).await;
    assert_eq!(missing.body["error"]["code"], "GalleryImageNotFound");
}

#[tokio::test]
async fn a_version_of_another_generation_than_its_definition_fails() {
    let emulator = with_network(Config::default()).await;
    gallery_with_definition(&emulator).await;
    send(
        &emulator,
        "PUT",
        &format!("{}?{DISKS}", compute("snapshots/snap")),
        Some(json!({"location": "westus2", "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 32}})),
    )
    .await;
    // A generation 1 image, for a generation 2 definition.
    let image = send(
        &emulator,
        "PUT",
        &compute("images/gen1"),
        Some(
            json!({"location": "westus2", "properties": {"storageProfile": {"osDisk": {
                "osType": "Linux", "osState": "Generalized", "snapshot": {"id": compute("snapshots/snap")}
            }}}}),
        ),
    )
    .await;
    assert_eq!(image.status, StatusCode::CREATED, "{}", image.body);
    let version = format!(
        "{}?api-version=2024-03-03",
        compute("galleries/g/images/def/versions/1.0.0")
    );
    let accepted = send(
        &emulator,
        "PUT",
        &version,
        Some(json!({"location": "westus2", "properties": {"storageProfile": {"source": {"id": compute("images/gen1")}}}})),
    )
    .await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.body);
    emulator.advance_clock(Duration::from_mins(1));
    let status = send(
        &emulator,
        "GET",
        &local(accepted.header("azure-asyncoperation")),
        None,
    )
    .await;
    assert_eq!(status.body["status"], "Failed", "{}", status.body);
    assert_eq!(status.body["error"]["code"], "Conflict");
    let read = send(&emulator, "GET", &version, None).await;
    assert_eq!(read.body["properties"]["provisioningState"], "Failed");
}

/// Cluster API's bootstrap data for the first control-plane machine: the cluster's CAs and keys
/// in `write_files`, and `kubeadm init`.
fn init_data() -> String {
    use std::fmt::Write as _;
    let mut files = String::new();
    for (path, content) in [
        (
            "ca.crt",
            "-----BEGIN CERTIFICATE-----\nAAECAwQ=\n-----END CERTIFICATE-----\n",
        ),
        (
            "ca.key",
            "-----BEGIN RSA PRIVATE KEY-----\nCLUSTER-CA-KEY\n-----END RSA PRIVATE KEY-----\n",
        ),
        ("etcd/ca.crt", "ETCD-CA-CERT\n"),
        ("etcd/ca.key", "ETCD-CA-KEY\n"),
        ("sa.key", "SERVICE-ACCOUNT-KEY\n"),
        ("sa.pub", "SERVICE-ACCOUNT-PUB\n"),
    ] {
        let indented = content.trim_end().replace('\n', "\n      ");
        let _ = write!(
            files,
            "-   path: /etc/kubernetes/pki/{path}\n    owner: root:root\n    permissions: '0640'\n    content: |\n      {indented}\n"
        );
    }
    format!(
        "## template: jinja\n#cloud-config\nwrite_files:\n{files}-   path: /run/kubeadm/kubeadm.yaml\n    content: |\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: ClusterConfiguration\n      clusterName: demo\n      controlPlaneEndpoint: demo-1a2b.westus2.cloudapp.azure.com:6443\n      kubernetesVersion: v1.33.5\n      ---\n      apiVersion: kubeadm.k8s.io/v1beta4\n      kind: InitConfiguration\n      nodeRegistration:\n        name: '{{{{ ds.meta_data[\"local_hostname\"] }}}}'\n        kubeletExtraArgs:\n        - name: cloud-provider\n          value: external\nruncmd:\n  - 'kubeadm init --config /run/kubeadm/kubeadm.yaml'\n"
    )
}

/// A worker's bootstrap data: `kubeadm join` with a bootstrap token.
const JOIN_DATA: &str = "#cloud-config\nwrite_files:\n- path: /run/kubeadm/kubeadm-join-config.yaml\n  content: |\n    apiVersion: kubeadm.k8s.io/v1beta4\n    kind: JoinConfiguration\n    discovery:\n      bootstrapToken:\n        apiServerEndpoint: demo-1a2b.westus2.cloudapp.azure.com:6443\n        token: abcdef.0123456789abcdef\n    nodeRegistration:\n      name: '{{ ds.meta_data.local_hostname }}'\nruncmd:\n- kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml\n";

/// An emulator with a cluster's first control-plane machine `cp0` (on `nic1` and, primary but
/// listed second, `nic0`) and a worker `worker0` (on `nic2`).
async fn with_cluster_machines() -> Emulator {
    use base64::Engine as _;
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let emulator = with_network(Config::default()).await;
    put_nic(&emulator, "nic2", "westus2", false).await;
    let mut control_plane = vm_body("Standard_D2s_v3", "nic0");
    control_plane["properties"]["osProfile"]["computerName"] = json!("demo-control-plane-abcde");
    control_plane["properties"]["osProfile"]["customData"] = json!(encode(&init_data()));
    control_plane["properties"]["networkProfile"]["networkInterfaces"] = json!([
        {"id": net("networkInterfaces/nic1"), "properties": {"primary": false}},
        {"id": net("networkInterfaces/nic0"), "properties": {"primary": true}},
    ]);
    let mut worker = vm_body("Standard_D2s_v3", "nic2");
    worker["properties"]["osProfile"]["computerName"] = json!("demo-md-0-xyz");
    worker["properties"]["osProfile"]["customData"] = json!(encode(JOIN_DATA));
    for (name, body) in [("cp0", control_plane), ("worker0", worker)] {
        let created = send(
            &emulator,
            "PUT",
            &compute(&format!("virtualMachines/{name}")),
            Some(body),
        )
        .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    }
    emulator
}

#[tokio::test]
async fn boots_tell_power_addresses_and_registration_without_secrets() {
    let emulator = with_cluster_machines().await;
    let address = |nic: &'static str| {
        let emulator = emulator.clone();
        async move {
            let read = send(&emulator, "GET", &net(&format!("networkInterfaces/{nic}")), None).await;
            read.body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"].clone()
        }
    };
    let plain = send(&emulator, "GET", "/_emulator/boots", None).await;
    assert_eq!(plain.status, StatusCode::OK);
    let machines = plain.body["machines"].as_array().cloned().unwrap_or_default();
    assert_eq!(machines.len(), 2, "{}", plain.body);
    let (cp, md) = (&machines[0], &machines[1]);
    assert_eq!(cp["computerName"], "demo-control-plane-abcde");
    assert_eq!(cp["powerState"], "running");
    assert_eq!(
        cp["privateIpAddresses"],
        json!([address("nic0").await, address("nic1").await]),
        "primary interface first"
    );
    assert_eq!(md["privateIpAddresses"], json!([address("nic2").await]));
    assert_eq!(cp["boot"]["role"], "init");
    assert_eq!(
        cp["boot"]["nodeRegistration"],
        json!({"name": "demo-control-plane-abcde", "kubeletExtraArgs": [{"name": "cloud-provider", "value": "external"}]})
    );
    assert_eq!(
        cp["boot"]["clusterConfiguration"]["controlPlaneEndpoint"],
        "demo-1a2b.westus2.cloudapp.azure.com:6443"
    );
    assert_eq!(md["boot"]["role"], "joinWorker");
    assert_eq!(md["boot"]["nodeRegistration"]["name"], "demo-md-0-xyz");
    let text = plain.body.to_string();
    for secret in [
        "CLUSTER-CA-KEY",
        "ETCD-CA-KEY",
        "SERVICE-ACCOUNT-KEY",
        "0123456789abcdef",
        "\"keys\"",
        "bootstrapToken",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    // Only `keys=true` asks for them.
    let other = send(&emulator, "GET", "/_emulator/boots?keys=1", None).await;
    assert!(
        !other.body.to_string().contains("CLUSTER-CA-KEY"),
        "{}",
        other.body
    );
}

#[tokio::test]
async fn boots_with_keys_true_carry_the_clusters_keys_and_tokens() {
    let emulator = with_cluster_machines().await;
    let revealed = send(&emulator, "GET", "/_emulator/boots?keys=true", None).await;
    assert_eq!(revealed.status, StatusCode::OK);
    let (cp, md) = (&revealed.body["machines"][0], &revealed.body["machines"][1]);
    let keys = cp["boot"]["keys"].as_object().cloned().unwrap_or_default();
    assert_eq!(
        keys.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "ca.crt",
            "ca.key",
            "etcd/ca.crt",
            "etcd/ca.key",
            "sa.key",
            "sa.pub"
        ],
        "{cp}"
    );
    assert_eq!(
        keys["ca.key"],
        "-----BEGIN RSA PRIVATE KEY-----\nCLUSTER-CA-KEY\n-----END RSA PRIVATE KEY-----\n"
    );
    assert_eq!(keys["sa.key"], "SERVICE-ACCOUNT-KEY\n");
    assert!(cp["boot"].get("bootstrapToken").is_none(), "{cp}");
    assert_eq!(md["boot"]["bootstrapToken"], "abcdef.0123456789abcdef");
    assert_eq!(md["boot"]["keys"], json!({}));
    assert_eq!(emulator.boots_with_keys(), revealed.body);
}
