//! AKS managed clusters behave as Azure's do: a cluster and its pools are created with their node
//! resource group and one scale set per pool; pools scale, upgrade one minor at a time and keep a
//! System pool; fixed properties stay fixed; one operation runs per cluster; credentials,
//! versions, upgrade profiles, maintenance configurations and resource health answer. Each
//! cluster has a CA of its own that no answer shows, which its kubeconfigs trust and sign in
//! with, and `/_emulator/boots` shows the cluster, its nodes and how callers sign in to a stand-in
//! for its API server.

#![expect(clippy::unwrap_used, clippy::panic, reason = "a missing value fails the test")]

mod common;

use std::time::Duration;

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, Tenant};
use arm_emulator::{Config, Emulator};
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::Reply;
use serde_json::{Value, json};
use tower::ServiceExt;

const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";
const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/aks";
const AKS: &str = "api-version=2025-08-01";

async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    let separator = if path.contains('?') { '&' } else { '?' };
    let uri = if path.contains("api-version=") {
        path.to_owned()
    } else {
        format!("{path}{separator}{AKS}")
    };
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await
}

fn cluster(path: &str) -> String {
    format!("{RG}/providers/Microsoft.ContainerService/managedClusters/demo{path}")
}

fn node_group(path: &str) -> String {
    format!("{SUB}/resourceGroups/MC_aks_demo_westeurope{path}")
}

async fn group(config: Config) -> Emulator {
    let emulator = Emulator::new(config);
    let created = send(
        &emulator,
        "PUT",
        &format!("{RG}?api-version=2021-04-01"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator
}

fn cluster_body(version: &str) -> Value {
    json!({
        "location": "westeurope",
        "identity": {"type": "SystemAssigned"},
        "properties": {
            "kubernetesVersion": version,
            "dnsPrefix": "demo",
            "agentPoolProfiles": [{"name": "sys", "count": 1, "mode": "System", "vmSize": "Standard_D2s_v3", "nodeLabels": {}, "availabilityZones": null}],
        },
    })
}

fn pool_body(count: u64, version: Option<&str>) -> Value {
    let mut body = json!({"properties": {"count": count, "vmSize": "Standard_D2s_v3", "mode": "User", "nodeTaints": ["dedicated=batch:NoSchedule"]}});
    if let Some(version) = version {
        body["properties"]["orchestratorVersion"] = json!(version);
    }
    body
}

/// The scale set of pool `pool` and its instances.
async fn scale_set(emulator: &Emulator, pool: &str) -> (Value, Vec<Value>) {
    let sets = send(
        emulator,
        "GET",
        &node_group("/providers/Microsoft.Compute/virtualMachineScaleSets?api-version=2024-07-01"),
        None,
    )
    .await;
    assert_eq!(sets.status, StatusCode::OK, "{}", sets.body);
    let set = sets.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .find(|set| set["tags"]["aks-managed-poolName"] == pool)
        .unwrap_or_else(|| panic!("no scale set for pool {pool}: {}", sets.body))
        .clone();
    let instances = send(
        emulator,
        "GET",
        &format!(
            "{}/virtualMachines?api-version=2024-07-01",
            set["id"].as_str().unwrap()
        ),
        None,
    )
    .await;
    assert_eq!(instances.status, StatusCode::OK, "{}", instances.body);
    (set, instances.body["value"].as_array().unwrap().clone())
}

#[tokio::test]
async fn a_cluster_comes_with_its_node_resource_group_and_a_scale_set_per_pool() {
    let emulator = group(Config::default()).await;
    let created = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    assert!(
        created.body["properties"].get("identityProfile").is_none(),
        "{}",
        created.body
    );
    assert!(!created.header("azure-asyncoperation").is_empty());
    let read = send(&emulator, "GET", &cluster(""), None).await;
    let properties = &read.body["properties"];
    assert_eq!(properties["provisioningState"], "Succeeded", "{}", read.body);
    assert_eq!(properties["currentKubernetesVersion"], "1.33.6");
    assert_eq!(properties["nodeResourceGroup"], "MC_aks_demo_westeurope");
    assert!(
        properties["fqdn"]
            .as_str()
            .unwrap()
            .ends_with(".hcp.westeurope.azmk8s.io")
    );
    assert_eq!(properties["networkProfile"]["networkPluginMode"], "overlay");
    assert_eq!(properties["agentPoolProfiles"][0]["name"], "sys");
    assert_eq!(
        properties["agentPoolProfiles"][0]["provisioningState"],
        "Succeeded"
    );
    assert!(
        properties["agentPoolProfiles"][0].get("nodeLabels").is_none(),
        "empty labels are not kept"
    );
    // The kubelet identity is a real identity in the node group.
    let kubelet = properties["identityProfile"]["kubeletidentity"]["resourceId"]
        .as_str()
        .unwrap();
    let identity = send(
        &emulator,
        "GET",
        &format!("{kubelet}?api-version=2023-01-31"),
        None,
    )
    .await;
    assert_eq!(identity.status, StatusCode::OK, "{}", identity.body);
    assert_eq!(
        identity.body["properties"]["clientId"],
        properties["identityProfile"]["kubeletidentity"]["clientId"]
    );
    let node_group_read = send(&emulator, "GET", &node_group("?api-version=2021-04-01"), None).await;
    assert_eq!(
        node_group_read.body["managedBy"], read.body["id"],
        "{}",
        node_group_read.body
    );
    let (set, instances) = scale_set(&emulator, "sys").await;
    let name = set["name"].as_str().unwrap();
    assert!(
        name.starts_with("aks-sys-")
            && name.ends_with("-vmss")
            && name.len() == "aks-sys-12345678-vmss".len(),
        "{name}"
    );
    assert_eq!(set["properties"]["provisioningState"], "Succeeded");
    assert_eq!(instances.len(), 1);
    assert_eq!(instances[0]["name"], format!("{name}_0"));
    assert_eq!(
        instances[0]["properties"]["osProfile"]["computerName"],
        format!("{name}000000")
    );
    assert_eq!(instances[0]["properties"]["provisioningState"], "Succeeded");

    // Deleting the cluster takes the node group along.
    let deleted = send(&emulator, "DELETE", &cluster(""), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
    let gone = send(&emulator, "GET", &cluster(""), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
    let group_gone = send(&emulator, "GET", &node_group("?api-version=2021-04-01"), None).await;
    assert_eq!(group_gone.status, StatusCode::NOT_FOUND, "{}", group_gone.body);
}

#[tokio::test]
async fn pools_scale_keep_their_fixed_properties_and_a_system_pool() {
    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    let created = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(2, None)),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["properties"]["provisioningState"], "Creating");
    let (_, instances) = scale_set(&emulator, "batch").await;
    assert_eq!(instances.len(), 2);
    let scaled = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(3, None)),
    )
    .await;
    assert_eq!(scaled.status, StatusCode::OK, "{}", scaled.body);
    assert_eq!(scaled.body["properties"]["provisioningState"], "Scaling");
    let (set, instances) = scale_set(&emulator, "batch").await;
    assert_eq!(set["sku"]["capacity"], 3);
    assert_eq!(instances.len(), 3);
    let read = send(&emulator, "GET", &cluster(""), None).await;
    let names: Vec<&str> = read.body["properties"]["agentPoolProfiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pool| pool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["batch", "sys"]);

    let mut resized = pool_body(3, None);
    resized["properties"]["vmSize"] = json!("Standard_D4s_v3");
    let refused = send(&emulator, "PUT", &cluster("/agentPools/batch"), Some(resized)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(
        refused.body["code"], "PropertyChangeNotAllowed",
        "{}",
        refused.body
    );
    let mut tainted = pool_body(3, None);
    tainted["properties"]["nodeTaints"] = json!(["no-effect"]);
    let refused = send(&emulator, "PUT", &cluster("/agentPools/batch"), Some(tainted)).await;
    assert_eq!(refused.body["code"], "InvalidParameter", "{}", refused.body);

    let last = send(&emulator, "DELETE", &cluster("/agentPools/sys"), None).await;
    assert_eq!(last.status, StatusCode::BAD_REQUEST, "{}", last.body);
    assert_eq!(last.body["code"], "OperationNotAllowed", "{}", last.body);
    let mut demoted = pool_body(1, None);
    demoted["properties"]["vmSize"] = json!("Standard_D2s_v3");
    let deleted = send(&emulator, "DELETE", &cluster("/agentPools/batch"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
    let missing = send(&emulator, "GET", &cluster("/agentPools/batch"), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        missing.body["code"], "NotFound",
        "AKS answers its own 404: {}",
        missing.body
    );
    let sets = send(
        &emulator,
        "GET",
        &node_group("/providers/Microsoft.Compute/virtualMachineScaleSets?api-version=2024-07-01"),
        None,
    )
    .await;
    assert_eq!(
        sets.body["value"].as_array().unwrap().len(),
        1,
        "the pool's scale set went with it: {}",
        sets.body
    );

    let mut no_system = cluster_body("1.33");
    no_system["properties"]["agentPoolProfiles"][0]["mode"] = json!("User");
    let refused = send(
        &emulator,
        "PUT",
        &format!("{RG}/providers/Microsoft.ContainerService/managedClusters/other"),
        Some(no_system),
    )
    .await;
    assert_eq!(
        refused.body["code"], "MustDefineAtLeastOneSystemPool",
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn upgrades_go_control_plane_first_one_minor_at_a_time() {
    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.32"))).await;
    let unknown = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/old"),
        Some(pool_body(1, Some("1.20"))),
    )
    .await;
    assert_eq!(
        unknown.body["code"], "AgentPoolK8sVersionNotSupported",
        "{}",
        unknown.body
    );
    send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(1, None)),
    )
    .await;
    let (_, before) = scale_set(&emulator, "batch").await;
    let ahead = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(1, Some("1.33"))),
    )
    .await;
    assert_eq!(
        ahead.body["code"], "NodePoolMcVersionIncompatible",
        "{}",
        ahead.body
    );
    let skipping = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.34"))).await;
    assert_eq!(skipping.status, StatusCode::BAD_REQUEST, "{}", skipping.body);
    assert_eq!(skipping.body["code"], "OperationNotAllowed", "{}", skipping.body);
    let upgraded = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    assert_eq!(upgraded.status, StatusCode::OK, "{}", upgraded.body);
    assert_eq!(upgraded.body["properties"]["provisioningState"], "Upgrading");
    let read = send(&emulator, "GET", &cluster(""), None).await;
    assert_eq!(read.body["properties"]["currentKubernetesVersion"], "1.33.6");
    let pool = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(1, Some("1.33"))),
    )
    .await;
    assert_eq!(pool.status, StatusCode::OK, "{}", pool.body);
    assert_eq!(pool.body["properties"]["provisioningState"], "Upgrading");
    assert_eq!(pool.body["properties"]["currentOrchestratorVersion"], "1.33.6");
    let (set, after) = scale_set(&emulator, "batch").await;
    assert_eq!(set["tags"]["aks-managed-orchestrator"], "Kubernetes:1.33.6");
    assert_eq!(after[0]["name"], before[0]["name"]);
    assert_eq!(after[0]["properties"]["latestModelApplied"], true, "{}", after[0]);

    let profile = send(&emulator, "GET", &cluster("/upgradeProfiles/default"), None).await;
    assert_eq!(profile.status, StatusCode::OK, "{}", profile.body);
    assert_eq!(
        profile.body["properties"]["controlPlaneProfile"]["kubernetesVersion"],
        "1.33.6"
    );
    let offered: Vec<&str> = profile.body["properties"]["controlPlaneProfile"]["upgrades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|upgrade| upgrade["kubernetesVersion"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["1.34.1", "1.34.2"]);
    let versions = send(
        &emulator,
        "GET",
        &format!("{SUB}/providers/Microsoft.ContainerService/locations/westeurope/kubernetesVersions"),
        None,
    )
    .await;
    assert_eq!(versions.status, StatusCode::OK, "{}", versions.body);
    assert!(
        versions.body["values"]
            .as_array()
            .unwrap()
            .iter()
            .any(|release| release["version"] == "1.33" && release["isDefault"] == true)
    );
}

#[tokio::test]
async fn one_operation_runs_per_cluster() {
    let emulator = group(Config {
        latencies: [(
            "Microsoft.ContainerService/managedClusters".to_owned(),
            Duration::from_mins(1),
        )]
        .into(),
        ..Config::default()
    })
    .await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    let busy = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(1, None)),
    )
    .await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{}", busy.body);
    assert_eq!(busy.body["code"], "OperationNotAllowed", "{}", busy.body);
    emulator.advance_clock(Duration::from_mins(2));
    let free = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/batch"),
        Some(pool_body(1, None)),
    )
    .await;
    assert_eq!(free.status, StatusCode::CREATED, "{}", free.body);
}

#[tokio::test]
async fn credentials_maintenance_and_health_answer() {
    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    let read = send(&emulator, "GET", &cluster(""), None).await;
    for (action, user) in [
        ("listClusterAdminCredential", "clusterAdmin"),
        ("listClusterUserCredential", "clusterUser"),
    ] {
        let listed = send(
            &emulator,
            "POST",
            &cluster(&format!("/{action}?api-version=2022-04-01")),
            None,
        )
        .await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
        assert_eq!(listed.body["kubeconfigs"][0]["name"], user);
        let kubeconfig = base64::engine::general_purpose::STANDARD
            .decode(listed.body["kubeconfigs"][0]["value"].as_str().unwrap())
            .unwrap();
        let kubeconfig = String::from_utf8(kubeconfig).unwrap();
        let fqdn = read.body["properties"]["fqdn"].as_str().unwrap();
        assert!(
            kubeconfig.contains(&format!("server: https://{fqdn}:443")),
            "{kubeconfig}"
        );
        let (_, user_entry) = kubeconfig_parts(&kubeconfig);
        assert!(user_entry.get("token").is_none(), "{kubeconfig}");
        assert!(user_entry["client-certificate-data"].is_string(), "{kubeconfig}");
    }
    let window = json!({"properties": {"maintenanceWindow": {"durationHours": 8, "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}}, "startTime": "00:00", "notAllowedDates": null}}});
    let put = send(
        &emulator,
        "PUT",
        &cluster("/maintenanceConfigurations/aksManagedAutoUpgradeSchedule"),
        Some(window.clone()),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(put.body["properties"]["maintenanceWindow"]["utcOffset"], "+00:00");
    assert!(put.body.get("type").is_none(), "{}", put.body);
    assert!(
        put.body["properties"]["maintenanceWindow"]
            .get("notAllowedDates")
            .is_none()
    );
    let odd = send(
        &emulator,
        "PUT",
        &cluster("/maintenanceConfigurations/weekends"),
        Some(window),
    )
    .await;
    assert_eq!(odd.status, StatusCode::BAD_REQUEST, "{}", odd.body);
    let deleted = send(
        &emulator,
        "DELETE",
        &cluster("/maintenanceConfigurations/aksManagedAutoUpgradeSchedule"),
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
    let health = send(
        &emulator,
        "GET",
        &cluster("/providers/Microsoft.ResourceHealth/availabilityStatuses/current?api-version=2025-05-01"),
        None,
    )
    .await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.body);
    assert_eq!(health.body["properties"]["availabilityState"], "Available");
    let stopped = send(&emulator, "POST", &cluster("/stop"), None).await;
    assert_eq!(stopped.status, StatusCode::ACCEPTED, "{}", stopped.body);
    let read = send(&emulator, "GET", &cluster(""), None).await;
    assert_eq!(
        read.body["properties"]["powerState"]["code"], "Stopped",
        "{}",
        read.body
    );
}

#[tokio::test]
async fn add_ons_deployed_by_policy_come_with_their_identity() {
    let emulator = group(Config {
        policy_add_ons: vec!["azurepolicy".to_owned()],
        ..Config::default()
    })
    .await;
    let mut body = cluster_body("1.33");
    body["properties"]["addonProfiles"] = json!({"azurepolicy": {"enabled": false}});
    send(&emulator, "PUT", &cluster(""), Some(body.clone())).await;
    let read = send(&emulator, "GET", &cluster(""), None).await;
    let add_on = &read.body["properties"]["addonProfiles"]["azurepolicy"];
    assert_eq!(add_on["enabled"], true, "{}", read.body);
    let identity = add_on["identity"]["resourceId"].as_str().unwrap();
    assert!(
        identity.ends_with("/userAssignedIdentities/azurepolicy-demo"),
        "{identity}"
    );
    let found = send(
        &emulator,
        "GET",
        &format!("{identity}?api-version=2023-01-31"),
        None,
    )
    .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    // Turning it off again does not stick: the policy turns it back on, with the same identity.
    send(&emulator, "PUT", &cluster(""), Some(body)).await;
    let again = send(&emulator, "GET", &cluster(""), None).await;
    assert_eq!(again.body["properties"]["addonProfiles"]["azurepolicy"], *add_on);
}

/// The cluster entry and the user entry of a kubeconfig.
/// With Entra integration, the user's kubeconfig signs in through kubelogin for AKS's server
/// application, with no certificate of the cluster's; without local accounts the admin's is
/// refused.
#[tokio::test]
async fn an_entra_cluster_lists_a_kubelogin_user_and_no_admin() {
    let emulator = group(Config::default()).await;
    let mut body = cluster_body("1.33");
    body["properties"]["aadProfile"] =
        json!({"managed": true, "adminGroupObjectIDs": ["7d0ac1f4-9a4e-4f4e-9d55-3f0f1f7d2a10"]});
    body["properties"]["disableLocalAccounts"] = json!(true);
    let put = send(&emulator, "PUT", &cluster(""), Some(body)).await;
    assert!(put.status.is_success(), "{}", put.body);
    let listed = send(
        &emulator,
        "POST",
        &cluster("/listClusterUserCredential?api-version=2025-08-01"),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let kubeconfig = base64::engine::general_purpose::STANDARD
        .decode(listed.body["kubeconfigs"][0]["value"].as_str().unwrap())
        .unwrap();
    let kubeconfig = String::from_utf8(kubeconfig).unwrap();
    let (cluster_entry, user_entry) = kubeconfig_parts(&kubeconfig);
    assert!(
        cluster_entry["certificate-authority-data"].is_string(),
        "{kubeconfig}"
    );
    assert_eq!(user_entry["exec"]["command"], "kubelogin", "{kubeconfig}");
    let args: Vec<&str> = user_entry["exec"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        args.windows(2)
            .any(|pair| pair == ["--server-id", "6dae42f8-4368-4678-94ff-3960e28e3630"]),
        "{kubeconfig}"
    );
    assert!(
        user_entry.get("client-certificate-data").is_none(),
        "{kubeconfig}"
    );
    assert!(user_entry.get("token").is_none(), "{kubeconfig}");
    let admin = send(
        &emulator,
        "POST",
        &cluster("/listClusterAdminCredential?api-version=2025-08-01"),
        None,
    )
    .await;
    assert_eq!(admin.status, StatusCode::BAD_REQUEST, "{}", admin.body);
}

fn kubeconfig_parts(kubeconfig: &str) -> (Value, Value) {
    let config: Value = serde_saphyr::from_str(kubeconfig).unwrap();
    (
        config["clusters"][0]["cluster"].clone(),
        config["users"][0]["user"].clone(),
    )
}

/// The PEM text a kubeconfig field carries in base64.
fn pem_of(data: &Value) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_str().unwrap())
        .unwrap();
    String::from_utf8(bytes).unwrap()
}

/// The admin kubeconfig of the `demo` cluster.
async fn admin_kubeconfig(emulator: &Emulator) -> String {
    let listed = send(
        emulator,
        "POST",
        &cluster("/listClusterAdminCredential?api-version=2022-04-01"),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    pem_of(&listed.body["kubeconfigs"][0]["value"])
}

#[tokio::test]
async fn the_cluster_ca_is_kept_but_never_answered() {
    let emulator = group(Config::default()).await;
    let created = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let ca = emulator.boots_with_keys()["managedClusters"][0]["keys"].clone();
    assert!(
        ca["ca.crt"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----"),
        "{ca}"
    );
    assert!(
        ca["ca.key"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----"),
        "{ca}"
    );
    // A client writes back what it read: no CA, or one of its own, which is not taken.
    let read = send(&emulator, "GET", &cluster(""), None).await;
    let mut rewrite = read.body.clone();
    rewrite["properties"]["certificateAuthority"] = json!({"certificate": "mine", "key": "mine"});
    let updated = send(&emulator, "PUT", &cluster(""), Some(rewrite)).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    let again = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(emulator.boots_with_keys()["managedClusters"][0]["keys"], ca);
    let answers = [
        created.body,
        read.body,
        updated.body,
        again.body,
        send(&emulator, "GET", &cluster(""), None).await.body,
        send(
            &emulator,
            "GET",
            &format!("{RG}/providers/Microsoft.ContainerService/managedClusters"),
            None,
        )
        .await
        .body,
        send(
            &emulator,
            "GET",
            &format!("{SUB}/providers/Microsoft.ContainerService/managedClusters"),
            None,
        )
        .await
        .body,
    ];
    for answer in answers {
        let text = answer.to_string();
        assert!(text.contains("\"fqdn\""), "an answer with the cluster: {text}");
        for secret in ["certificateAuthority", "BEGIN", "PRIVATE KEY"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

#[tokio::test]
async fn the_admin_kubeconfig_signs_in_with_a_certificate_of_the_cluster_ca() {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, UnixTime};

    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    let kubeconfig = admin_kubeconfig(&emulator).await;
    let (cluster_entry, user_entry) = kubeconfig_parts(&kubeconfig);
    let ca_pem = pem_of(&cluster_entry["certificate-authority-data"]);
    assert_eq!(
        ca_pem,
        emulator.boots_with_keys()["managedClusters"][0]["keys"]["ca.crt"],
        "the CA a stand-in serves with"
    );
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap();
    let client_pem = pem_of(&user_entry["client-certificate-data"]);
    let client = CertificateDer::from_pem_slice(client_pem.as_bytes()).unwrap();
    let anchor = webpki::anchor_from_trusted_cert(&ca).unwrap();
    let end_entity = webpki::EndEntityCert::try_from(&client).unwrap();
    end_entity
        .verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &[anchor],
            &[],
            UnixTime::now(),
            webpki::KeyUsage::client_auth(),
            None,
            None,
        )
        .unwrap();
    // The subject Kubernetes reads the user and group from, as AKS's admin kubeconfig has it.
    let contains = |needle: &[u8]| client.windows(needle.len()).any(|window| window == needle);
    assert!(contains(b"masterclient") && contains(b"system:masters"));
    // The key is the certificate's: what it signs, the certificate's public key verifies.
    let key_pem = pem_of(&user_entry["client-key-data"]);
    let key = PrivatePkcs8KeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
    let rng = ring::rand::SystemRandom::new();
    let signer = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        key.secret_pkcs8_der(),
        &rng,
    )
    .unwrap();
    let signature = signer.sign(&rng, b"kubeconfig").unwrap();
    end_entity
        .verify_signature(webpki::ring::ECDSA_P256_SHA256, b"kubeconfig", signature.as_ref())
        .unwrap();
    // Local accounts off: no admin credential at all.
    let mut body = cluster_body("1.33");
    body["properties"]["disableLocalAccounts"] = json!(true);
    let updated = send(&emulator, "PUT", &cluster(""), Some(body)).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    let refused = send(
        &emulator,
        "POST",
        &cluster("/listClusterAdminCredential?api-version=2022-04-01"),
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
}

#[tokio::test]
async fn boots_show_the_cluster_its_nodes_and_only_when_asked_its_ca() {
    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    let added = send(
        &emulator,
        "PUT",
        &cluster("/agentPools/user"),
        Some(pool_body(2, Some("1.32"))),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    let read = send(&emulator, "GET", &cluster(""), None).await;
    let fqdn = read.body["properties"]["fqdn"].as_str().unwrap();

    let plain = send(&emulator, "GET", "/_emulator/boots", None).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.body);
    assert_eq!(
        plain.body["machines"],
        json!([]),
        "AKS nodes boot no kubeadm data"
    );
    let clusters = plain.body["managedClusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "{}", plain.body);
    let entry = &clusters[0];
    assert_eq!(entry["id"], read.body["id"]);
    assert_eq!(entry["name"], "demo");
    assert_eq!(entry["endpoint"], format!("{fqdn}:443"));
    assert_eq!(entry["kubernetesVersion"], "v1.33.6");
    assert_eq!(entry["powerState"], "Running");
    assert_eq!(entry["provisioningState"], "Succeeded");
    assert!(entry.get("keys").is_none(), "{entry}");
    let text = plain.body.to_string();
    assert!(!text.contains("PRIVATE KEY"), "{text}");

    let nodes = entry["nodes"].as_array().unwrap();
    let pools = read.body["properties"]["agentPoolProfiles"].as_array().unwrap();
    let count: u64 = pools.iter().map(|pool| pool["count"].as_u64().unwrap()).sum();
    assert_eq!(nodes.len() as u64, count, "{entry}");
    for (pool, mode, version) in [("sys", "System", "v1.33.6"), ("user", "User", "v1.32.9")] {
        let (_, instances) = scale_set(&emulator, pool).await;
        let of_pool: Vec<&Value> = nodes.iter().filter(|node| node["pool"] == pool).collect();
        assert_eq!(of_pool.len(), instances.len(), "{entry}");
        for (node, instance) in of_pool.iter().zip(&instances) {
            assert_eq!(node["id"], instance["id"]);
            assert_eq!(
                node["computerName"],
                instance["properties"]["osProfile"]["computerName"]
            );
            assert_eq!(node["mode"], mode, "{node}");
            assert_eq!(node["kubernetesVersion"], version, "{node}");
            assert_eq!(node["powerState"], "running", "{node}");
            let addresses = node["privateIpAddresses"].as_array().unwrap();
            assert_eq!(addresses.len(), 1, "{node}");
            assert!(addresses[0].as_str().unwrap().starts_with("10.224."), "{node}");
        }
    }

    // Keys only when asked for: the CA the kubeconfig trusts.
    let revealed = send(&emulator, "GET", "/_emulator/boots?keys=true", None).await;
    let keys = &revealed.body["managedClusters"][0]["keys"];
    let (cluster_entry, _) = kubeconfig_parts(&admin_kubeconfig(&emulator).await);
    assert_eq!(
        keys["ca.crt"],
        pem_of(&cluster_entry["certificate-authority-data"])
    );
    assert!(keys["ca.key"].as_str().unwrap().contains("PRIVATE KEY"), "{keys}");
    assert_eq!(emulator.boots_with_keys(), revealed.body);
    let other = send(&emulator, "GET", "/_emulator/boots?keys=1", None).await;
    assert!(!other.body.to_string().contains("PRIVATE KEY"), "{}", other.body);

    // The endpoint is one the proxy routes.
    let route = send(
        &emulator,
        "PUT",
        "/_emulator/routes",
        Some(json!({"host": fqdn, "port": 443, "target": "127.0.0.1:9"})),
    )
    .await;
    assert_eq!(route.status, StatusCode::CREATED, "{}", route.body);
    let routes = send(&emulator, "GET", "/_emulator/routes", None).await;
    assert_eq!(routes.body["routes"][0]["resolves"], true, "{}", routes.body);

    // A stopped cluster runs nothing.
    let stopped = send(&emulator, "POST", &cluster("/stop"), None).await;
    assert_eq!(stopped.status, StatusCode::ACCEPTED, "{}", stopped.body);
    assert_eq!(emulator.boots()["managedClusters"], json!([]));
}

/// A token the emulator issues to the default principal for `scope`, and its claims (unverified).
async fn token_claims(emulator: &Emulator, tenant: &str, scope: &str) -> (String, Value) {
    let form = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("client_secret", DEFAULT_CLIENT_SECRET),
            ("scope", scope),
        ])
        .finish();
    let request = Request::post(format!("/{tenant}/oauth2/v2.0/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form))
        .unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value =
        serde_json::from_slice(&to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap();
    let token = answer["access_token"].as_str().unwrap().to_owned();
    let payload = token.split('.').nth(1).unwrap();
    let claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    (token, claims)
}

#[tokio::test]
async fn boots_tell_how_the_api_server_signs_callers_in() {
    const TENANT: &str = "aaaaaaaa-0000-0000-0000-00000000000a";
    const ELSEWHERE: &str = "bbbbbbbb-0000-0000-0000-00000000000b";
    const AKS_SERVER_APP: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";
    // Another tenant than the default one, so that the subscription's is seen to count.
    let mut config = Config {
        tenants: vec![Tenant { id: TENANT.into() }],
        ..Config::default()
    };
    config.subscriptions[0].tenant = TENANT.into();
    config.principals[0].tenant = TENANT.into();
    let emulator = group(config).await;
    let feed = |emulator: &Emulator| emulator.boots()["managedClusters"][0].clone();
    let write = async |body: Value| {
        let written = send(&emulator, "PUT", &cluster(""), Some(body)).await;
        assert!(written.status.is_success(), "{}", written.body);
    };

    // Without Entra integration: local accounts, and the subscription's tenant.
    write(cluster_body("1.33")).await;
    let entry = feed(&emulator);
    assert_eq!(entry["localAccountsDisabled"], false, "{entry}");
    assert_eq!(entry["tenantId"], TENANT, "{entry}");

    // Local accounts count as disabled only with managed Entra integration.
    let mut body = cluster_body("1.33");
    body["properties"]["disableLocalAccounts"] = json!(true);
    write(body.clone()).await;
    assert_eq!(feed(&emulator)["localAccountsDisabled"], false);

    // AKS fills in the subscription's tenant as the AAD profile's.
    body["properties"]["aadProfile"] = json!({"managed": true, "adminGroupObjectIDs": ["g"]});
    write(body.clone()).await;
    let entry = feed(&emulator);
    assert_eq!(entry["localAccountsDisabled"], true, "{entry}");
    assert_eq!(entry["tenantId"], TENANT, "{entry}");
    assert_eq!(
        emulator.boots_with_keys()["managedClusters"][0]["localAccountsDisabled"],
        true
    );

    // What a caller signs in with: a token for AKS's server application, in that tenant, signed
    // by a key of the tenant's JWKS.
    let (token, claims) = token_claims(&emulator, TENANT, &format!("{AKS_SERVER_APP}/.default")).await;
    assert_eq!(claims["aud"], AKS_SERVER_APP, "{claims}");
    assert_eq!(claims["tid"], entry["tenantId"], "{claims}");
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    let keys = emulator
        .router()
        .oneshot(
            Request::get(format!("/{TENANT}/discovery/v2.0/keys"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let keys: Value = serde_json::from_slice(&to_bytes(keys.into_body(), usize::MAX).await.unwrap()).unwrap();
    assert_eq!(keys["keys"][0]["kid"], header["kid"], "{keys}");
    assert_eq!(
        (&keys["keys"][0]["crv"], &header["alg"]),
        (&json!("P-256"), &json!("ES256"))
    );

    // A tenant the AAD profile names is the one.
    body["properties"]["aadProfile"]["tenantID"] = json!(ELSEWHERE);
    write(body).await;
    assert_eq!(feed(&emulator)["tenantId"], ELSEWHERE);
}

#[tokio::test]
async fn a_cluster_kept_without_a_ca_gets_one_on_its_next_write() {
    let emulator = group(Config::default()).await;
    send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    // State saved by an emulator that made no CA.
    let mut snapshot = emulator.snapshot();
    for resource in snapshot["resources"].as_array_mut().unwrap() {
        if let Some(properties) = resource["body"]["properties"].as_object_mut() {
            properties.remove("certificateAuthority");
        }
    }
    emulator.restore(&snapshot).unwrap();
    let (cluster_entry, user_entry) = kubeconfig_parts(&admin_kubeconfig(&emulator).await);
    assert!(cluster_entry.get("certificate-authority-data").is_none());
    assert!(user_entry["token"].is_string(), "{user_entry}");
    assert_eq!(
        emulator.boots_with_keys()["managedClusters"][0]["keys"],
        json!({})
    );
    let updated = send(&emulator, "PUT", &cluster(""), Some(cluster_body("1.33"))).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    let (cluster_entry, _) = kubeconfig_parts(&admin_kubeconfig(&emulator).await);
    assert_eq!(
        emulator.boots_with_keys()["managedClusters"][0]["keys"]["ca.crt"],
        pem_of(&cluster_entry["certificate-authority-data"])
    );
}

#[tokio::test]
async fn deleting_its_group_takes_the_cluster_and_its_node_group_along() {
    let emulator = Emulator::new(Config::default());
    let network = common::group_with_network(&emulator, RG, "westeurope").await;
    let subnet = format!("{}/subnets/nodes", network.body["id"].as_str().unwrap());
    let mut body = cluster_body("1.33");
    body["properties"]["networkProfile"] = json!({"networkPlugin": "azure"});
    body["properties"]["agentPoolProfiles"][0]["vnetSubnetID"] = json!(subnet);
    let created = send(&emulator, "PUT", &cluster(""), Some(body)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // The pool's scale set, in the node group, sits in the subnet of the cluster's group.
    let (set, _) = scale_set(&emulator, "sys").await;
    assert_eq!(
        set["properties"]["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]["properties"]
            ["ipConfigurations"][0]["properties"]["subnet"]["id"]
            .as_str()
            .map(str::to_ascii_lowercase),
        Some(subnet.to_ascii_lowercase())
    );

    let deleted = send(&emulator, "DELETE", &format!("{RG}?api-version=2021-04-01"), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.body);
    // A blocked deletion would leave the group `Succeeded`; a finished one leaves nothing.
    for gone in [
        format!("{RG}?api-version=2021-04-01"),
        cluster(""),
        node_group("?api-version=2021-04-01"),
    ] {
        let read = send(&emulator, "GET", &gone, None).await;
        assert_eq!(read.status, StatusCode::NOT_FOUND, "{gone}: {}", read.body);
    }
    let left: Vec<Value> = emulator.snapshot()["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|resource| {
            let id = resource["body"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_ascii_lowercase();
            id.contains("/resourcegroups/aks") || id.contains("/resourcegroups/mc_aks_demo")
        })
        .cloned()
        .collect();
    assert_eq!(left, [] as [Value; 0]);
}
