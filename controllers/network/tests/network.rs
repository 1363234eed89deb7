//! The network controller end to end: a real API server with our CRDs and Cluster API's, the ARM
//! emulator in process as a custom cloud, and the controller running in process through the
//! kit's runner. A fake load-balancer controller is played by the test with its own field manager.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use capz_harness::{EmulatedAzure, InProcessController};
use capz_kit::api::AzureCluster;
use capz_kit::api::capi::Cluster;
use capz_kit::api::common::conditions::{Condition, ConditionStatus, ConditionType, Conditions};
use capz_kit::apply::{FieldManager, apply_spec, apply_status};
use capz_kit::azure::{ApiVersion, ResourceId};
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use capz_kit::kube::{Client, ResourceExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use capz_harness::TestResult;

const WAIT: Duration = Duration::from_mins(1);
const NETWORK_API: ApiVersion = ApiVersion::new("2024-05-01");
const GROUP_API: ApiVersion = ApiVersion::new("2024-03-01");
const PEER_FINALIZER: &str = capz_kit::api::controllers::Family::LoadBalancer.finalizer();
const FAKE_LOAD_BALANCER: FieldManager = FieldManager::new("capz-loadbalancer");

/// The emulator, a client of it for the test's own reads and writes, and the controller.
struct Harness {
    azure: EmulatedAzure,
    controller: InProcessController,
}

impl Harness {
    async fn start(config: Config, namespace: &str) -> TestResult<Self> {
        let azure = EmulatedAzure::start(config).await?;
        let settings = azure.default_principal_settings()?;
        let flags = [
            "--health-probe-bind-address=127.0.0.1:0",
            "--metrics-bind-address=127.0.0.1:0",
            "--sync-period=1s",
        ];
        let controller = InProcessController::start(
            capz_network::ID,
            capz_harness::shared(),
            namespace,
            flags,
            move |ctx| capz_network::run(ctx, settings),
        )?;
        Ok(Self { azure, controller })
    }

    async fn stop(self) -> TestResult {
        Ok(self.controller.stop().await?)
    }

    /// A resource as the emulator has it, `None` when it does not exist.
    async fn read(&self, id: &str, api_version: &ApiVersion) -> TestResult<Option<Value>> {
        Ok(self.azure.get_at(id, api_version).await?)
    }

    /// The writes (PUT, PATCH, DELETE) that reached ARM so far.
    fn writes(&self) -> Vec<String> {
        self.azure.writes()
    }

    /// How many requests touched a path containing `part` (any case).
    fn touching(&self, part: &str) -> usize {
        let part = part.to_ascii_lowercase();
        self.azure
            .running
            .emulator
            .requests()
            .iter()
            .filter(|request| request.path.to_ascii_lowercase().contains(&part))
            .count()
    }
}

fn group(name: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{name}")
}

fn network_resource(group_name: &str, path: &str) -> String {
    format!("{}/providers/Microsoft.Network/{path}", group(group_name))
}

async fn create_cluster(client: &Client, namespace: &str, name: &str) -> TestResult {
    let cluster: Cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureCluster", "name": name}},
    }))?;
    Api::<Cluster>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &cluster)
        .await?;
    Ok(())
}

async fn create_azure_cluster(
    api: &Api<AzureCluster>,
    name: &str,
    metadata: Value,
    spec: Value,
) -> TestResult<AzureCluster> {
    let mut full = json!({"location": "westeurope", "subscriptionID": DEFAULT_SUBSCRIPTION});
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        full.extend(extra.clone());
    }
    let mut meta = json!({"name": name, "labels": {"cluster.x-k8s.io/cluster-name": name}});
    if let (Some(meta), Some(extra)) = (meta.as_object_mut(), metadata.as_object()) {
        meta.extend(extra.clone());
    }
    let object: AzureCluster = serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": meta,
        "spec": full,
    }))?;
    Ok(api.create(&PostParams::default(), &object).await?)
}

/// Waits until `ready` holds for the object; on timeout, says what the object looked like.
async fn wait(
    api: &Api<AzureCluster>,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: impl Fn(&AzureCluster) -> bool,
) -> TestResult<AzureCluster> {
    match capz_harness::wait_for(api, name, what, timeout, ready).await {
        Ok(object) => Ok(object),
        Err(error) => {
            let object = api.get_opt(name).await?;
            let seen = object.map(|object| (object.metadata.finalizers, object.status));
            Err(format!("{error}; the object: {seen:?}").into())
        }
    }
}

fn condition<'a>(object: &'a AzureCluster, type_: &ConditionType) -> Option<&'a Condition> {
    object
        .status
        .as_ref()
        .and_then(|status| status.conditions.get(type_))
}

fn is_true(object: &AzureCluster, type_: &ConditionType) -> bool {
    object
        .status
        .as_ref()
        .is_some_and(|status| Conditions::is_true(&status.conditions, type_))
}

#[tokio::test]
async fn a_default_cluster_gets_its_network_then_ready_and_is_deleted_with_its_group() -> TestResult {
    capz_harness::in_namespace(&[], async |_plane, client, namespace| {
        // Subnet operations take a while, so that writing two at once would meet Azure's refusal.
        let config = Config {
            latencies: [(
                "Microsoft.Network/virtualNetworks/subnets".to_owned(),
                Duration::from_millis(300),
            )]
            .into(),
            ..Config::default()
        };
        let azure = Harness::start(config, &namespace).await?;
        let result = Box::pin(default_cluster(&azure, &client, &namespace)).await;
        azure.stop().await?;
        result
    })
    .await
}

async fn default_cluster(azure: &Harness, client: &Client, namespace: &str) -> TestResult {
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    // Created first: by the time the other cluster is done, the controller has seen it.
    create_cluster(client, namespace, "ext").await?;
    create_azure_cluster(
        &api,
        "ext",
        json!({"annotations": {"cluster.x-k8s.io/managed-by": "someone"}}),
        json!({}),
    )
    .await?;
    create_cluster(client, namespace, "c1").await?;
    create_azure_cluster(
        &api,
        "c1",
        json!({"finalizers": [PEER_FINALIZER]}),
        json!({"additionalTags": {"team": "blue"}}),
    )
    .await?;
    let network_ready = |object: &AzureCluster| is_true(object, &ConditionType::NETWORK_INFRASTRUCTURE_READY);
    let object = wait(&api, "c1", "NetworkInfrastructureReady", WAIT, network_ready).await?;
    for type_ in [
        ConditionType::RESOURCE_GROUP_READY,
        ConditionType::VNET_READY,
        ConditionType::SECURITY_GROUPS_READY,
        ConditionType::ROUTE_TABLES_READY,
        ConditionType::NAT_GATEWAYS_READY,
        ConditionType::SUBNETS_READY,
    ] {
        assert!(
            is_true(&object, &type_),
            "{type_}: {:?}",
            condition(&object, &type_)
        );
    }
    // No loadbalancer controller runs beside this one: Ready names it rather than waiting.
    let ready = condition(&object, &ConditionType::READY).ok_or("no Ready")?;
    assert_eq!(ready.status, ConditionStatus::False);
    assert_eq!(ready.reason.as_deref(), Some("ControllerNotRunning"), "{ready:?}");
    assert!(
        ready
            .message
            .as_deref()
            .is_some_and(|message| message.contains("deploy/loadbalancer")),
        "{ready:?}"
    );
    assert!(
        object
            .finalizers()
            .iter()
            .any(|f| f == capz_network::ID.finalizer())
    );
    // The subnets were written one after another, so none met another's operation.
    let refused: Vec<String> = azure
        .azure
        .arm_requests()
        .into_iter()
        .filter(|request| request.status == 409)
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    assert_eq!(refused, Vec::<String>::new());

    check_azure_resources(azure).await?;
    resync_writes_nothing(azure, &api).await?;
    foreign_rule_survives_an_update(azure, &api).await?;
    removed_rules_go_and_foreign_ones_stay(azure, &api).await?;

    // The externally managed cluster was left alone, in Kubernetes and in Azure.
    let external = api.get("ext").await?;
    assert!(external.finalizers().is_empty(), "{:?}", external.finalizers());
    assert!(external.status.is_none(), "{:?}", external.status);
    assert_eq!(azure.touching("/resourceGroups/ext"), 0);

    become_ready(&api).await?;
    delete_after_peers(azure, &api).await
}

async fn check_azure_resources(azure: &Harness) -> TestResult {
    let rg = azure
        .read(&group("c1"), &GROUP_API)
        .await?
        .ok_or("no resource group")?;
    assert_eq!(
        rg["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
        "owned"
    );
    assert_eq!(
        rg["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
        "common"
    );
    assert_eq!(rg["tags"]["team"], "blue");
    let vnet = azure
        .read(&network_resource("c1", "virtualNetworks/c1-vnet"), &NETWORK_API)
        .await?
        .ok_or("no vnet")?;
    assert_eq!(
        vnet["properties"]["addressSpace"]["addressPrefixes"],
        json!(["10.0.0.0/8"])
    );
    assert_eq!(
        vnet["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
        "owned"
    );
    for (subnet, prefix, nsg) in [
        ("c1-controlplane-subnet", "10.0.0.0/16", "c1-controlplane-nsg"),
        ("c1-node-subnet", "10.1.0.0/16", "c1-node-nsg"),
    ] {
        let body = azure
            .read(
                &network_resource("c1", &format!("virtualNetworks/c1-vnet/subnets/{subnet}")),
                &NETWORK_API,
            )
            .await?
            .ok_or(format!("no subnet {subnet}"))?;
        assert_eq!(body["properties"]["addressPrefix"], prefix);
        let attached = body["properties"]["networkSecurityGroup"]["id"]
            .as_str()
            .unwrap_or_default();
        assert!(attached.ends_with(nsg), "{subnet}: {attached}");
    }
    let node = azure
        .read(
            &network_resource("c1", "virtualNetworks/c1-vnet/subnets/c1-node-subnet"),
            &NETWORK_API,
        )
        .await?
        .ok_or("no node subnet")?;
    assert!(
        node["properties"]["natGateway"]["id"]
            .as_str()
            .unwrap_or_default()
            .ends_with("c1-node-natgw")
    );
    assert!(
        node["properties"]["routeTable"]["id"]
            .as_str()
            .unwrap_or_default()
            .ends_with("c1-node-routetable")
    );
    let nsg = azure
        .read(
            &network_resource("c1", "networkSecurityGroups/c1-controlplane-nsg"),
            &NETWORK_API,
        )
        .await?
        .ok_or("no control-plane nsg")?;
    let rules: Vec<(&str, &str)> = nsg["properties"]["securityRules"]
        .as_array()
        .ok_or("no rules")?
        .iter()
        .map(|rule| {
            (
                rule["name"].as_str().unwrap_or_default(),
                rule["properties"]["destinationPortRange"]
                    .as_str()
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(rules, [("allow_ssh", "22"), ("allow_apiserver", "6443")]);
    let ip = azure
        .read(
            &network_resource("c1", "publicIPAddresses/pip-c1-node-natgw"),
            &NETWORK_API,
        )
        .await?
        .ok_or("no NAT gateway address")?;
    assert_eq!(
        ip["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
        "owned"
    );
    Ok(())
}

/// Several periodic resyncs read Azure and write neither to Azure nor to the object.
async fn resync_writes_nothing(azure: &Harness, api: &Api<AzureCluster>) -> TestResult {
    let vnet_reads = || azure.touching("/virtualNetworks/c1-vnet");
    let before = (
        azure.writes(),
        api.get("c1").await?.resource_version(),
        vnet_reads(),
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    while vnet_reads() < before.2 + 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no resync read the network"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(azure.writes(), before.0, "a resync wrote to Azure");
    assert_eq!(
        api.get("c1").await?.resource_version(),
        before.1,
        "a resync wrote the object"
    );
    Ok(())
}

/// A rule added to our security group by hand stays when the controller rewrites the group.
async fn foreign_rule_survives_an_update(azure: &Harness, api: &Api<AzureCluster>) -> TestResult {
    let rule_id: ResourceId =
        network_resource("c1", "networkSecurityGroups/c1-node-nsg/securityRules/by-hand").parse()?;
    let rule = json!({"properties": {
        "protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "8443",
        "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
        "access": "Allow", "priority": 3000, "direction": "Inbound"
    }});
    let _: capz_kit::azure::Outcome<Value> = azure.azure.client().put(&rule_id, &NETWORK_API, &rule).await?;
    let retag = json!({"spec": {"additionalTags": {"team": "green"}}});
    api.patch("c1", &PatchParams::default(), &Patch::Merge(&retag))
        .await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let nsg = azure
            .read(
                &network_resource("c1", "networkSecurityGroups/c1-node-nsg"),
                &NETWORK_API,
            )
            .await?
            .ok_or("no node nsg")?;
        if nsg["tags"]["team"] == "green" {
            let names: Vec<&str> = nsg["properties"]["securityRules"]
                .as_array()
                .ok_or("no rules")?
                .iter()
                .filter_map(|rule| rule["name"].as_str())
                .collect();
            assert_eq!(names, ["by-hand"], "the foreign rule was dropped");
            return Ok(());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the security group was not retagged"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The rule names of the security group `name` of cluster c1, sorted.
async fn rule_names(azure: &Harness, name: &str) -> TestResult<Vec<String>> {
    let nsg = azure
        .read(
            &network_resource("c1", &format!("networkSecurityGroups/{name}")),
            &NETWORK_API,
        )
        .await?
        .ok_or("no security group")?;
    let mut names: Vec<String> = nsg["properties"]["securityRules"]
        .as_array()
        .ok_or("no rules")?
        .iter()
        .filter_map(|rule| rule["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

/// The record of the security rules written from the spec, as the AzureCluster holds it.
async fn last_applied(api: &Api<AzureCluster>) -> TestResult<Value> {
    let object = api.get("c1").await?;
    let value = object
        .annotations()
        .get("sigs.k8s.io/cluster-api-provider-azure-last-applied-security-rules")
        .ok_or("no record of the applied security rules")?;
    Ok(serde_json::from_str(value)?)
}

/// Rules written from the spec and then removed from it are removed from the group; a rule added
/// by hand stays.
async fn removed_rules_go_and_foreign_ones_stay(azure: &Harness, api: &Api<AzureCluster>) -> TestResult {
    assert_eq!(
        last_applied(api).await?,
        json!({"c1-controlplane-nsg": {"allow_apiserver": "Allow K8s API Server", "allow_ssh": "Allow SSH"}})
    );
    let by_hand: ResourceId = network_resource(
        "c1",
        "networkSecurityGroups/c1-controlplane-nsg/securityRules/by-hand",
    )
    .parse()?;
    let rule = json!({"properties": {
        "protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "9090",
        "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
        "access": "Allow", "priority": 3000, "direction": "Inbound"
    }});
    let _: capz_kit::azure::Outcome<Value> = azure.azure.client().put(&by_hand, &NETWORK_API, &rule).await?;
    // Custom rules replace the defaults on the control-plane subnet.
    let custom = json!({"spec": {"networkSpec": {"subnets": [
        {"name": "c1-controlplane-subnet", "role": "control-plane", "securityGroup": {
            "name": "c1-controlplane-nsg", "securityRules": [{
                "name": "allow_https", "description": "HTTPS", "protocol": "Tcp", "direction": "Inbound",
                "priority": 2300, "destinationPorts": "443"
            }]
        }},
        {"name": "c1-node-subnet", "role": "node"}
    ]}}});
    api.patch("c1", &PatchParams::default(), &Patch::Merge(&custom))
        .await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while rule_names(azure, "c1-controlplane-nsg").await? != ["allow_https", "by-hand"] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the control-plane group holds {:?}",
            rule_names(azure, "c1-controlplane-nsg").await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while last_applied(api).await? != json!({"c1-controlplane-nsg": {"allow_https": "HTTPS"}}) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the record says {}",
            last_applied(api).await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Plays the load-balancer controller: its conditions and the endpoint make the cluster ready.
async fn become_ready(api: &Api<AzureCluster>) -> TestResult {
    let object = api.get("c1").await?;
    let now = Time(Timestamp::now());
    let holds = |type_: ConditionType| Condition {
        type_,
        status: ConditionStatus::True,
        severity: None,
        last_transition_time: now.clone(),
        reason: None,
        message: None,
    };
    let status = json!({"conditions": [holds(ConditionType::LOAD_BALANCERS_READY), holds(ConditionType::PUBLIC_IPS_READY)]});
    apply_status(api, &FAKE_LOAD_BALANCER, &object, &status).await?;
    let object = api.get("c1").await?;
    assert!(
        !is_true(&object, &ConditionType::READY),
        "Ready without an endpoint"
    );
    let endpoint =
        json!({"controlPlaneEndpoint": {"host": "c1.westeurope.cloudapp.azure.com", "port": 6443}});
    apply_spec(api, &FAKE_LOAD_BALANCER, &object, &endpoint).await?;
    let object = wait(api, "c1", "Ready", WAIT, |object| {
        is_true(object, &ConditionType::READY)
    })
    .await?;
    let status = object.status.as_ref().ok_or("no status")?;
    assert_eq!(status.ready, Some(true));
    let domains: Vec<(&String, Option<bool>)> = status
        .failure_domains
        .as_ref()
        .ok_or("no failure domains")?
        .iter()
        .map(|(zone, spec)| (zone, spec.control_plane))
        .collect();
    assert_eq!(
        domains,
        [
            (&"1".to_owned(), Some(true)),
            (&"2".to_owned(), Some(true)),
            (&"3".to_owned(), Some(true))
        ]
    );
    Ok(())
}

/// Deletion waits for the peer's finalizer, then the owned group goes in one delete.
async fn delete_after_peers(azure: &Harness, api: &Api<AzureCluster>) -> TestResult {
    api.delete("c1", &DeleteParams::default()).await?;
    wait(api, "c1", "waiting for the peer's finalizer", WAIT, |object| {
        condition(object, &ConditionType::NETWORK_INFRASTRUCTURE_READY)
            .and_then(|condition| condition.message.as_deref())
            .is_some_and(|message| message.contains(PEER_FINALIZER))
    })
    .await?;
    assert!(
        azure.read(&group("c1"), &GROUP_API).await?.is_some(),
        "deleted before the peer was done"
    );
    let object = api.get("c1").await?;
    let finalizers: Vec<String> = object
        .finalizers()
        .iter()
        .filter(|f| *f != PEER_FINALIZER)
        .cloned()
        .collect();
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": object.resource_version()}});
    api.patch("c1", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_gone(api, "c1").await?;
    assert!(
        azure.read(&group("c1"), &GROUP_API).await?.is_none(),
        "the owned group is still there"
    );
    let group_deletes = azure
        .writes()
        .iter()
        .filter(|write| write.eq_ignore_ascii_case(&format!("DELETE {}", group("c1"))))
        .count();
    assert_eq!(group_deletes, 1, "{:?}", azure.writes());
    Ok(())
}

async fn wait_gone(api: &Api<AzureCluster>, name: &str) -> TestResult {
    let deadline = tokio::time::Instant::now() + WAIT;
    while api.get_opt(name).await?.is_some() {
        assert!(tokio::time::Instant::now() < deadline, "{name} was not deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

fn seed(id: String, body: Value) -> SeedResource {
    SeedResource { id, body }
}

/// A network in its own group with two subnets, the control plane's behind a security group
/// holding a rule of its owner's.
fn brought_network() -> Vec<SeedResource> {
    let nsg = network_resource("net-rg", "networkSecurityGroups/byo-nsg");
    vec![
        seed(group("net-rg"), json!({"location": "westeurope"})),
        seed(
            nsg.clone(),
            json!({"location": "westeurope", "properties": {"securityRules": [{
                "name": "owner-https",
                "properties": {"protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "443",
                    "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
                    "access": "Allow", "priority": 1000, "direction": "Inbound"}
            }]}}),
        ),
        seed(
            network_resource("net-rg", "virtualNetworks/byo-vnet"),
            json!({"location": "westeurope", "tags": {"owner": "network-team"}, "properties": {
                "addressSpace": {"addressPrefixes": ["10.20.0.0/16"]},
                "subnets": [
                    {"name": "cp", "properties": {"addressPrefix": "10.20.0.0/24", "networkSecurityGroup": {"id": nsg}}},
                    {"name": "nodes", "properties": {"addressPrefix": "10.20.1.0/24"}}
                ]
            }}),
        ),
    ]
}

fn brought_spec(node_subnet: &str) -> Value {
    json!({"networkSpec": {
        "vnet": {"name": "byo-vnet", "resourceGroup": "net-rg"},
        "subnets": [
            {"name": "cp", "role": "control-plane", "cidrBlocks": ["10.20.0.0/24"]},
            {"name": node_subnet, "role": "node", "cidrBlocks": ["10.20.1.0/24"]}
        ]
    }})
}

#[tokio::test]
async fn a_brought_network_is_used_unchanged_and_outlives_the_cluster() -> TestResult {
    capz_harness::in_namespace(&[], async |_plane, client, namespace| {
        let config = Config {
            resources: brought_network(),
            ..Config::default()
        };
        let azure = Harness::start(config, &namespace).await?;
        let result = Box::pin(brought(&azure, &client, &namespace)).await;
        azure.stop().await?;
        result
    })
    .await
}

async fn brought(azure: &Harness, client: &Client, namespace: &str) -> TestResult {
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let vnet_id = network_resource("net-rg", "virtualNetworks/byo-vnet");
    let nsg_id = network_resource("net-rg", "networkSecurityGroups/byo-nsg");
    let vnet_before = azure
        .read(&vnet_id, &NETWORK_API)
        .await?
        .ok_or("no brought vnet")?;
    let nsg_before = azure.read(&nsg_id, &NETWORK_API).await?.ok_or("no brought nsg")?;

    create_cluster(client, namespace, "c2").await?;
    create_azure_cluster(&api, "c2", json!({}), brought_spec("nodes")).await?;
    create_cluster(client, namespace, "c3").await?;
    create_azure_cluster(&api, "c3", json!({}), brought_spec("absent")).await?;

    let object = wait(&api, "c2", "NetworkInfrastructureReady", WAIT, |object| {
        is_true(object, &ConditionType::NETWORK_INFRASTRUCTURE_READY)
    })
    .await?;
    assert!(is_true(&object, &ConditionType::SUBNETS_READY));
    assert!(
        azure.read(&group("c2"), &GROUP_API).await?.is_some(),
        "the cluster's own group"
    );
    // Nothing is created for subnets that are not ours, and nothing of the user's is written.
    assert!(
        azure
            .read(
                &network_resource("c2", "networkSecurityGroups/c2-controlplane-nsg"),
                &NETWORK_API
            )
            .await?
            .is_none()
    );
    let foreign_writes: Vec<String> = azure
        .writes()
        .into_iter()
        .filter(|write| write.to_ascii_lowercase().contains("/resourcegroups/net-rg"))
        .collect();
    assert!(foreign_writes.is_empty(), "{foreign_writes:?}");

    let missing = wait(&api, "c3", "SubnetsReady False", WAIT, |object| {
        condition(object, &ConditionType::SUBNETS_READY).is_some_and(|c| c.status == ConditionStatus::False)
    })
    .await?;
    let subnets = condition(&missing, &ConditionType::SUBNETS_READY).ok_or("no SubnetsReady")?;
    assert_eq!(subnets.reason.as_deref(), Some("SubnetNotFound"), "{subnets:?}");
    assert!(
        subnets
            .message
            .as_deref()
            .is_some_and(|m| m.contains("absent") && m.contains("byo-vnet")),
        "{subnets:?}"
    );
    assert!(!is_true(&missing, &ConditionType::NETWORK_INFRASTRUCTURE_READY));

    for name in ["c2", "c3"] {
        api.delete(name, &DeleteParams::default()).await?;
    }
    for name in ["c2", "c3"] {
        wait_gone(&api, name).await?;
    }
    assert!(
        azure.read(&group("c2"), &GROUP_API).await?.is_none(),
        "our group is still there"
    );
    assert!(
        azure.read(&group("c3"), &GROUP_API).await?.is_none(),
        "our group is still there"
    );
    let vnet_after = azure
        .read(&vnet_id, &NETWORK_API)
        .await?
        .ok_or("the brought vnet was deleted")?;
    let nsg_after = azure
        .read(&nsg_id, &NETWORK_API)
        .await?
        .ok_or("the brought nsg was deleted")?;
    assert_eq!(
        vnet_after["etag"], vnet_before["etag"],
        "the brought vnet was written"
    );
    assert_eq!(
        nsg_after["etag"], nsg_before["etag"],
        "the brought nsg was written"
    );
    assert_eq!(nsg_after["properties"]["securityRules"][0]["name"], "owner-https");
    let foreign_writes: Vec<String> = azure
        .writes()
        .into_iter()
        .filter(|write| write.to_ascii_lowercase().contains("/resourcegroups/net-rg"))
        .collect();
    assert!(foreign_writes.is_empty(), "{foreign_writes:?}");
    Ok(())
}

/// Two networks of the user's in another group: `hub`, whose range no cluster overlaps, and
/// `overlapping`, inside the default 10.0.0.0/8.
fn remote_networks() -> Vec<SeedResource> {
    let network = |name: &str, prefix: &str| {
        seed(
            network_resource("hub-rg", &format!("virtualNetworks/{name}")),
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [prefix]}}}),
        )
    };
    vec![
        seed(group("hub-rg"), json!({"location": "westeurope"})),
        network("hub", "192.168.0.0/24"),
        network("overlapping", "10.50.0.0/16"),
    ]
}

fn peered_with(remote: &str) -> Value {
    json!({"networkSpec": {"vnet": {"peerings": [{
        "remoteVnetName": remote,
        "resourceGroup": "hub-rg",
        "forwardPeeringProperties": {"allowForwardedTraffic": true},
    }]}}})
}

#[tokio::test]
async fn peered_networks_are_peered_both_ways_and_unpeered_when_the_cluster_goes() -> TestResult {
    capz_harness::in_namespace(&[], async |_plane, client, namespace| {
        let config = Config {
            resources: remote_networks(),
            ..Config::default()
        };
        let azure = Harness::start(config, &namespace).await?;
        let result = Box::pin(peered(&azure, &client, &namespace)).await;
        azure.stop().await?;
        result
    })
    .await
}

async fn peered(azure: &Harness, client: &Client, namespace: &str) -> TestResult {
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let hub = network_resource("hub-rg", "virtualNetworks/hub");
    for (name, remote) in [("p1", "hub"), ("p2", "overlapping")] {
        create_cluster(client, namespace, name).await?;
        create_azure_cluster(&api, name, json!({}), peered_with(remote)).await?;
    }
    let object = wait(&api, "p1", "VnetPeeringReady", WAIT, |object| {
        is_true(object, &ConditionType::VNET_PEERING_READY)
    })
    .await?;
    assert!(is_true(&object, &ConditionType::NETWORK_INFRASTRUCTURE_READY));
    let forward = network_resource(
        "p1",
        "virtualNetworks/p1-vnet/virtualNetworkPeerings/p1-vnet-To-hub",
    );
    let reverse = format!("{hub}/virtualNetworkPeerings/hub-To-p1-vnet");
    for (id, remote) in [
        (&forward, hub.clone()),
        (&reverse, network_resource("p1", "virtualNetworks/p1-vnet")),
    ] {
        let peering = azure
            .read(id, &NETWORK_API)
            .await?
            .ok_or(format!("no peering {id}"))?;
        assert_eq!(peering["properties"]["peeringState"], "Connected", "{id}");
        assert_eq!(
            peering["properties"]["remoteVirtualNetwork"]["id"]
                .as_str()
                .map(str::to_ascii_lowercase),
            Some(remote.to_ascii_lowercase())
        );
    }
    let forward_body = azure
        .read(&forward, &NETWORK_API)
        .await?
        .ok_or("no forward peering")?;
    assert_eq!(forward_body["properties"]["allowForwardedTraffic"], true);

    // Azure refuses to peer networks whose address spaces overlap; the condition says so.
    let refused = wait(&api, "p2", "VnetPeeringReady False", WAIT, |object| {
        condition(object, &ConditionType::VNET_PEERING_READY).is_some_and(|c| {
            c.status == ConditionStatus::False && c.message.as_deref().is_some_and(|m| m.contains("overlap"))
        })
    })
    .await?;
    assert!(!is_true(&refused, &ConditionType::NETWORK_INFRASTRUCTURE_READY));

    for name in ["p1", "p2"] {
        api.delete(name, &DeleteParams::default()).await?;
    }
    for name in ["p1", "p2"] {
        wait_gone(&api, name).await?;
    }
    assert!(
        azure.read(&reverse, &NETWORK_API).await?.is_none(),
        "the peering back is left"
    );
    assert!(
        azure.read(&hub, &NETWORK_API).await?.is_some(),
        "the remote network was deleted"
    );
    assert!(
        azure.read(&group("p1"), &GROUP_API).await?.is_none(),
        "our group is left"
    );
    assert!(
        azure
            .azure
            .deleted_in_order(&["/hub-To-p1-vnet", "/resourceGroups/p1"]),
        "the peering back before the group: {:?}",
        azure.writes()
    );
    let remote_writes: Vec<String> = azure
        .writes()
        .into_iter()
        .filter(|write| write.to_ascii_lowercase().contains("/resourcegroups/hub-rg/"))
        .filter(|write| !write.contains("/virtualNetworkPeerings/hub-To-p1-vnet"))
        .collect();
    assert!(
        remote_writes.is_empty(),
        "only the peering back is written there: {remote_writes:?}"
    );
    Ok(())
}

const STORAGE_API: ApiVersion = ApiVersion::new("2023-05-01");

fn storage_account() -> String {
    format!(
        "{}/providers/Microsoft.Storage/storageAccounts/clusterlogs",
        group("data")
    )
}

#[tokio::test]
async fn a_private_endpoint_connects_a_subnet_to_a_storage_account_until_the_cluster_goes() -> TestResult {
    capz_harness::in_namespace(&[], async |_plane, client, namespace| {
        let config = Config {
            resources: vec![
                seed(group("data"), json!({"location": "westeurope"})),
                seed(
                    storage_account(),
                    json!({"location": "westeurope", "kind": "StorageV2", "sku": {"name": "Standard_LRS"}}),
                ),
            ],
            ..Config::default()
        };
        let azure = Harness::start(config, &namespace).await?;
        let result = Box::pin(private_endpoint(&azure, &client, &namespace)).await;
        azure.stop().await?;
        result
    })
    .await
}

async fn private_endpoint(azure: &Harness, client: &Client, namespace: &str) -> TestResult {
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let spec = json!({"networkSpec": {"subnets": [
        {"name": "control-plane-subnet", "role": "control-plane"},
        {"name": "node-subnet", "role": "node", "privateEndpoints": [{
            "name": "logs-pe",
            "privateLinkServiceConnections": [{"name": "logs-blob", "privateLinkServiceID": storage_account(), "groupIDs": ["blob"]}],
        }]},
    ]}});
    create_cluster(client, namespace, "pe1").await?;
    create_azure_cluster(&api, "pe1", json!({}), spec).await?;
    let object = wait(&api, "pe1", "PrivateEndpointsReady", WAIT, |object| {
        is_true(object, &ConditionType::PRIVATE_ENDPOINTS_READY)
    })
    .await?;
    assert!(is_true(&object, &ConditionType::NETWORK_INFRASTRUCTURE_READY));
    let endpoint_id = network_resource("pe1", "privateEndpoints/logs-pe");
    let endpoint = azure
        .read(&endpoint_id, &NETWORK_API)
        .await?
        .ok_or("no private endpoint")?;
    let connection = &endpoint["properties"]["privateLinkServiceConnections"][0];
    assert_eq!(connection["name"], "logs-blob");
    assert_eq!(
        connection["properties"]["privateLinkServiceConnectionState"]["status"],
        "Approved"
    );
    assert!(
        endpoint["properties"]["subnet"]["id"]
            .as_str()
            .is_some_and(|subnet| subnet.ends_with("/subnets/node-subnet")),
        "{endpoint}"
    );
    // The storage account lists the endpoint among its connections.
    let account = azure
        .read(&storage_account(), &STORAGE_API)
        .await?
        .ok_or("no storage account")?;
    let listed = account["properties"]["privateEndpointConnections"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(listed.len(), 1, "{account}");
    assert_eq!(
        listed[0]["properties"]["privateEndpoint"]["id"]
            .as_str()
            .map(str::to_ascii_lowercase),
        Some(endpoint_id.to_ascii_lowercase())
    );

    api.delete("pe1", &DeleteParams::default()).await?;
    wait_gone(&api, "pe1").await?;
    assert!(
        azure.read(&endpoint_id, &NETWORK_API).await?.is_none(),
        "the endpoint is left"
    );
    let account = azure
        .read(&storage_account(), &STORAGE_API)
        .await?
        .ok_or("the storage account was deleted")?;
    assert_eq!(account["properties"]["privateEndpointConnections"], json!([]));
    Ok(())
}
