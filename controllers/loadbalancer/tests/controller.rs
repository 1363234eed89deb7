//! The loadbalancer controller in-process against a real API server and the ARM emulator: it
//! waits for the network controller's conditions (applied here by the test under a field manager
//! of its own), builds the load balancers and public IPs CAPZ builds, sets the control plane
//! endpoint, writes nothing on a resync, leaves foreign resources alone and cleans up on delete.
//! For control-plane AzureMachines it keeps the SSH inbound NAT rules, with the test playing
//! compute (its finalizer and conditions).

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use capz_harness::{EmulatedAzure, InProcessController};
use capz_kit::api::common::conditions::{ConditionStatus, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::api::{AzureCluster, AzureMachine};
use capz_kit::apply::FieldManager;
use capz_kit::azure::models::network::LoadBalancer;
use capz_kit::azure::models::{ArmModel as _, network::PublicIpAddress};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams};
use capz_kit::kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

use capz_harness::TestResult;

/// The network controller, as the test plays it.
const NETWORK: FieldManager = FieldManager::new("capz-test-network");
/// The compute controller, as the test plays it.
const COMPUTE: FieldManager = FieldManager::new("capz-test-compute");
const COMPUTE_FINALIZER: &str = Family::Compute.finalizer();
const WAIT: Duration = Duration::from_mins(1);

fn group_id(group: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{group}")
}

fn network_id(group: &str, kind: &str, name: &str) -> String {
    format!("{}/providers/Microsoft.Network/{kind}/{name}", group_id(group))
}

/// The emulator with the cluster's group and virtual network already there, as the network
/// controller leaves them, plus `extra` seeded resources.
/// The emulator with the cluster's group and network seeded (plus `extra`), and what these
/// tests read from it.
struct Azure(EmulatedAzure);

impl std::ops::Deref for Azure {
    type Target = EmulatedAzure;

    fn deref(&self) -> &EmulatedAzure {
        &self.0
    }
}

impl Azure {
    async fn start(cluster: &str, extra: Vec<SeedResource>) -> TestResult<Self> {
        let mut resources = vec![
            SeedResource {
                id: group_id(cluster),
                body: json!({"location": "westeurope"}),
            },
            SeedResource {
                id: network_id(cluster, "virtualNetworks", &format!("{cluster}-vnet")),
                body: json!({"location": "westeurope", "properties": {
                    "addressSpace": {"addressPrefixes": ["10.0.0.0/8"]},
                    "subnets": [
                        {"name": format!("{cluster}-controlplane-subnet"), "properties": {"addressPrefix": "10.0.0.0/16"}},
                        {"name": format!("{cluster}-node-subnet"), "properties": {"addressPrefix": "10.1.0.0/16"}}
                    ]
                }}),
            },
        ];
        resources.extend(extra);
        let config = Config {
            resources,
            ..Config::default()
        };
        Ok(Self(EmulatedAzure::start(config).await?))
    }

    async fn load_balancer(&self, group: &str, name: &str) -> TestResult<Option<Value>> {
        Ok(self
            .get_at(
                &network_id(group, "loadBalancers", name),
                &LoadBalancer::API_VERSION,
            )
            .await?)
    }

    async fn public_ip(&self, group: &str, name: &str) -> TestResult<Option<Value>> {
        Ok(self
            .get_at(
                &network_id(group, "publicIPAddresses", name),
                &PublicIpAddress::API_VERSION,
            )
            .await?)
    }
}

/// The controller in-process, watching `namespace`, with the feature `gates` on.
fn controller(
    plane: &capz_harness::Plane,
    namespace: &str,
    settings: IdentitySettings,
    gates: &str,
) -> TestResult<InProcessController> {
    let flags = [
        "--health-probe-bind-address=0".to_owned(),
        "--metrics-bind-address=0".to_owned(),
        "--sync-period=1s".to_owned(),
        format!("--feature-gates={gates}"),
    ];
    Ok(InProcessController::start(
        capz_loadbalancer::ID,
        plane,
        namespace,
        flags,
        move |ctx| capz_loadbalancer::run(ctx, settings),
    )?)
}

/// Reports `types` True as the network controller would.
async fn network_reports(api: &Api<AzureCluster>, name: &str, types: &[ConditionType]) -> TestResult {
    Ok(capz_harness::report_conditions(api, name, &NETWORK, types).await?)
}

/// A Cluster and its AzureCluster named `name`, with `network` as `spec.networkSpec`.
async fn create_cluster(client: &Client, namespace: &str, name: &str, network: &Value) -> TestResult {
    Ok(capz_harness::create_azure_cluster(
        client,
        namespace,
        name,
        DEFAULT_SUBSCRIPTION,
        &json!({"networkSpec": network}),
    )
    .await?)
}

async fn delete_and_wait(api: &Api<AzureCluster>, name: &str) -> TestResult {
    Ok(capz_harness::delete_and_wait(api, name, WAIT).await?)
}

fn condition(object: &AzureCluster, type_: &ConditionType) -> Option<(ConditionStatus, Option<String>)> {
    capz_harness::cluster_condition(object, type_)
}

fn is_true(object: &AzureCluster, type_: &ConditionType) -> bool {
    condition(object, type_).is_some_and(|(status, _)| status == ConditionStatus::True)
}

fn reason_is(type_: ConditionType, reason: &'static str) -> impl Fn(&AzureCluster) -> bool {
    move |object| condition(object, &type_).is_some_and(|(_, found)| found.as_deref() == Some(reason))
}

#[tokio::test]
async fn a_public_cluster_gets_capz_api_server_load_balancer_and_endpoint_then_loses_them() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "pub1";
        let azure = Azure::start(name, Vec::new()).await?;
        let controller = controller(plane, &namespace, azure.default_principal_settings()?, "")?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        create_cluster(&client, &namespace, name, &json!({})).await?;

        // Before the resource group is ready: a condition saying so, and not one ARM call.
        let waiting = reason_is(ConditionType::LOAD_BALANCERS_READY, "WaitingForDependency");
        capz_harness::wait_for(&api, name, "LoadBalancersReady waiting", WAIT, waiting).await?;
        assert_eq!(azure.arm_calls(), Vec::<String>::new());

        network_reports(&api, name, &[ConditionType::RESOURCE_GROUP_READY]).await?;
        let ready = |object: &AzureCluster| {
            is_true(object, &ConditionType::LOAD_BALANCERS_READY)
                && is_true(object, &ConditionType::PUBLIC_IPS_READY)
                && object
                    .spec
                    .control_plane_endpoint
                    .as_ref()
                    .is_some_and(|endpoint| endpoint.host.is_some())
        };
        let object =
            capz_harness::wait_for(&api, name, "load balancers, IPs and endpoint", WAIT, ready).await?;

        let ip = azure
            .public_ip(name, "pip-pub1-apiserver")
            .await?
            .ok_or("no API server IP")?;
        let label =
            capz_rules::names::api_server_dns_label(name, DEFAULT_SUBSCRIPTION, name, "pip-pub1-apiserver");
        assert_eq!(ip["properties"]["dnsSettings"]["domainNameLabel"], label.as_str());
        assert_eq!(
            ip["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_pub1"],
            "owned"
        );
        let fqdn = format!("{label}.westeurope.cloudapp.azure.com");
        let endpoint = object.spec.control_plane_endpoint.clone().unwrap_or_default();
        assert_eq!(
            (endpoint.host.as_deref(), endpoint.port),
            (Some(fqdn.as_str()), Some(6443))
        );

        let lb = azure
            .load_balancer(name, "pub1-public-lb")
            .await?
            .ok_or("no API server LB")?;
        let parts = &lb["properties"];
        assert_eq!(lb["sku"]["name"], "Standard");
        assert_eq!(
            lb["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "apiserver"
        );
        assert_eq!(
            parts["frontendIPConfigurations"][0]["name"],
            "pub1-public-lb-frontEnd"
        );
        assert!(
            parts["frontendIPConfigurations"][0]["properties"]["publicIPAddress"]["id"]
                .as_str()
                .is_some_and(|id| id.ends_with("/publicIPAddresses/pip-pub1-apiserver"))
        );
        assert_eq!(
            parts["backendAddressPools"][0]["name"],
            "pub1-public-lb-backendPool"
        );
        assert_eq!(parts["probes"][0]["name"], "HTTPSProbe");
        assert_eq!(parts["probes"][0]["properties"]["port"], 6443);
        assert_eq!(parts["loadBalancingRules"][0]["name"], "LBRuleHTTPS");
        assert_eq!(parts["loadBalancingRules"][0]["properties"]["frontendPort"], 6443);
        assert_eq!(parts["outboundRules"][0]["name"], "OutboundNATAllProtocols");
        // A public cluster without IPv6 node subnets gets no node outbound balancer (NAT gateways).
        assert!(azure.load_balancer(name, name).await?.is_none());

        // Resyncs (every second) read and write nothing.
        azure.resyncs_write_nothing(6, WAIT).await?;
        let unchanged = api.get(name).await?;
        assert_eq!(unchanged.status, object.status, "a resync changed the status");

        delete_and_wait(&api, name).await?;
        assert!(azure.load_balancer(name, "pub1-public-lb").await?.is_none());
        assert!(azure.public_ip(name, "pip-pub1-apiserver").await?.is_none());
        Ok(controller.stop().await?)
    })
    .await
}

#[tokio::test]
async fn a_private_cluster_waits_for_its_subnet_and_points_the_endpoint_at_the_private_address() -> TestResult
{
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "priv1";
        let azure = Azure::start(name, Vec::new()).await?;
        let controller = controller(plane, &namespace, azure.default_principal_settings()?, "")?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        create_cluster(
            &client,
            &namespace,
            name,
            &json!({"apiServerLB": {"type": "Internal"}}),
        )
        .await?;
        network_reports(&api, name, &[ConditionType::RESOURCE_GROUP_READY]).await?;

        let waiting = reason_is(ConditionType::LOAD_BALANCERS_READY, "WaitingForDependency");
        let object = capz_harness::wait_for(&api, name, "LoadBalancersReady waiting", WAIT, waiting).await?;
        // No public IP in a private cluster: the condition is not reported at all.
        assert_eq!(condition(&object, &ConditionType::PUBLIC_IPS_READY), None);
        assert_eq!(azure.arm_calls(), Vec::<String>::new());

        network_reports(
            &api,
            name,
            &[ConditionType::RESOURCE_GROUP_READY, ConditionType::SUBNETS_READY],
        )
        .await?;
        let ready = |object: &AzureCluster| {
            is_true(object, &ConditionType::LOAD_BALANCERS_READY)
                && object.spec.control_plane_endpoint.is_some()
        };
        let object = capz_harness::wait_for(&api, name, "the internal load balancer", WAIT, ready).await?;
        let endpoint = object.spec.control_plane_endpoint.clone().unwrap_or_default();
        assert_eq!(
            (endpoint.host.as_deref(), endpoint.port),
            (Some("apiserver.priv1.capz.io"), Some(6443)),
            "a private API server is named in the cluster's private DNS zone, as CAPZ names it"
        );
        let lb = azure
            .load_balancer(name, "priv1-internal-lb")
            .await?
            .ok_or("no internal LB")?;
        let frontend = &lb["properties"]["frontendIPConfigurations"][0]["properties"];
        assert_eq!(frontend["privateIPAddress"], "10.0.0.100");
        assert!(
            frontend["subnet"]["id"]
                .as_str()
                .is_some_and(|id| id.ends_with("/subnets/priv1-controlplane-subnet"))
        );
        assert_eq!(lb["properties"]["outboundRules"], json!([]));

        delete_and_wait(&api, name).await?;
        assert!(azure.load_balancer(name, "priv1-internal-lb").await?.is_none());
        Ok(controller.stop().await?)
    })
    .await
}

#[tokio::test]
async fn a_foreign_load_balancer_by_our_name_is_reported_and_left_alone() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "foreign1";
        let foreign_ip = network_id(name, "publicIPAddresses", "someone-elses-ip");
        let foreign = vec![
            SeedResource {
                id: foreign_ip.clone(),
                body: json!({"location": "westeurope", "sku": {"name": "Standard"}, "properties": {"publicIPAllocationMethod": "Static"}}),
            },
            SeedResource {
                id: network_id(name, "loadBalancers", "foreign1-public-lb"),
                body: json!({"location": "westeurope", "sku": {"name": "Standard"}, "tags": {"team": "other"}, "properties": {
                    "frontendIPConfigurations": [{"name": "theirs", "properties": {"publicIPAddress": {"id": foreign_ip}}}]
                }}),
            },
        ];
        let azure = Azure::start(name, foreign).await?;
        let controller = controller(plane, &namespace, azure.default_principal_settings()?, "")?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        create_cluster(&client, &namespace, name, &json!({})).await?;
        network_reports(&api, name, &[ConditionType::RESOURCE_GROUP_READY]).await?;

        let not_owned = reason_is(ConditionType::LOAD_BALANCERS_READY, "NotOwned");
        capz_harness::wait_for(&api, name, "LoadBalancersReady NotOwned", WAIT, not_owned).await?;
        let lb_writes = |azure: &Azure| {
            azure
                .writes()
                .into_iter()
                .filter(|call| call.contains("/loadBalancers/"))
                .collect::<Vec<_>>()
        };
        assert_eq!(lb_writes(&azure), Vec::<String>::new());

        delete_and_wait(&api, name).await?;
        let lb = azure.load_balancer(name, "foreign1-public-lb").await?.ok_or("the foreign LB was deleted")?;
        assert_eq!(lb["properties"]["frontendIPConfigurations"][0]["name"], "theirs");
        assert_eq!(lb_writes(&azure), Vec::<String>::new());
        // Our own IP, created before the balancer was found foreign, is gone.
        assert!(azure.public_ip(name, "pip-foreign1-apiserver").await?.is_none());
        assert!(azure.public_ip(name, "someone-elses-ip").await?.is_some());
        Ok(controller.stop().await?)
    })
    .await
}

#[tokio::test]
async fn the_ilb_gate_and_an_outbound_balancer_add_their_balancers_and_ips() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "ilb1";
        let azure = Azure::start(name, Vec::new()).await?;
        let controller = controller(
            plane,
            &namespace,
            azure.default_principal_settings()?,
            "APIServerILB=true",
        )?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        create_cluster(
            &client,
            &namespace,
            name,
            &json!({"nodeOutboundLB": {"frontendIPsCount": 2}}),
        )
        .await?;
        network_reports(
            &api,
            name,
            &[ConditionType::RESOURCE_GROUP_READY, ConditionType::SUBNETS_READY],
        )
        .await?;
        let ready = |object: &AzureCluster| {
            is_true(object, &ConditionType::LOAD_BALANCERS_READY)
                && is_true(object, &ConditionType::PUBLIC_IPS_READY)
        };
        capz_harness::wait_for(&api, name, "all load balancers", WAIT, ready).await?;

        let internal = azure
            .load_balancer(name, "ilb1-public-lb-internal")
            .await?
            .ok_or("no internal LB")?;
        assert_eq!(
            internal["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "apiserver-internal"
        );
        let frontend = &internal["properties"]["frontendIPConfigurations"][0];
        assert_eq!(frontend["name"], "ilb1-public-lb-frontEnd-internal-ip");
        assert_eq!(frontend["properties"]["privateIPAddress"], "10.0.0.100");
        let public = azure
            .load_balancer(name, "ilb1-public-lb")
            .await?
            .ok_or("no public LB")?;
        assert_eq!(
            public["properties"]["frontendIPConfigurations"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );

        let outbound = azure
            .load_balancer(name, name)
            .await?
            .ok_or("no node outbound LB")?;
        assert_eq!(
            outbound["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "nodeOutbound"
        );
        assert_eq!(
            outbound["properties"]["outboundRules"][0]["name"],
            "OutboundNATAllProtocols"
        );
        assert_eq!(
            outbound["properties"]["backendAddressPools"][0]["name"],
            "ilb1-outboundBackendPool"
        );
        for ip in ["pip-ilb1-node-outbound-1", "pip-ilb1-node-outbound-2"] {
            assert!(azure.public_ip(name, ip).await?.is_some(), "{ip} missing");
        }

        delete_and_wait(&api, name).await?;
        for lb in ["ilb1-public-lb", "ilb1-public-lb-internal", name] {
            assert!(azure.load_balancer(name, lb).await?.is_none(), "{lb} left behind");
        }
        for ip in [
            "pip-ilb1-apiserver",
            "pip-ilb1-node-outbound-1",
            "pip-ilb1-node-outbound-2",
        ] {
            assert!(azure.public_ip(name, ip).await?.is_none(), "{ip} left behind");
        }
        Ok(controller.stop().await?)
    })
    .await
}

/// A Machine of the cluster `cluster` and its AzureMachine `name`, in the control plane when
/// `control_plane`, carrying compute's finalizer as compute would.
async fn create_machine(
    client: &Client,
    namespace: &str,
    cluster: &str,
    name: &str,
    control_plane: bool,
) -> TestResult {
    let mut labels = json!({"cluster.x-k8s.io/cluster-name": cluster});
    if control_plane {
        labels["cluster.x-k8s.io/control-plane"] = json!("");
    }
    let machine = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "clusterName": cluster,
            "bootstrap": {},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureMachine", "name": name},
        },
    });
    let created = capz_harness::apply_yaml(client, namespace, &serde_json::to_string(&machine)?).await?;
    let uid = created
        .first()
        .and_then(|object| object.metadata.uid.clone())
        .ok_or("the Machine has no uid")?;
    let azure_machine = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureMachine",
        "metadata": {
            "name": name,
            "labels": labels,
            "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name, "uid": uid}],
            "finalizers": [COMPUTE_FINALIZER],
        },
        "spec": {
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "diskSizeGB": 64, "managedDisk": {"storageAccountType": "Premium_LRS"}},
        },
    });
    capz_harness::apply_yaml(client, namespace, &serde_json::to_string(&azure_machine)?).await?;
    Ok(())
}

fn machine_condition(
    machine: &AzureMachine,
    type_: &ConditionType,
) -> Option<(ConditionStatus, Option<String>)> {
    machine
        .status
        .as_ref()?
        .conditions
        .get(type_)
        .map(|condition| (condition.status, condition.reason.clone()))
}

fn has_rule(machine: &AzureMachine) -> bool {
    machine_condition(machine, &ConditionType::INBOUND_NAT_RULES_READY)
        .is_some_and(|(status, _)| status == ConditionStatus::True)
}

impl Azure {
    /// The frontend port of the SSH rule of `machine`, if the rule exists.
    async fn ssh_port(&self, group: &str, machine: &str) -> TestResult<Option<u64>> {
        let id = format!(
            "{}/inboundNatRules/{machine}",
            network_id(group, "loadBalancers", &format!("{group}-public-lb"))
        );
        let rule: Option<Value> = self.get_at(&id, &LoadBalancer::API_VERSION).await?;
        let Some(rule) = rule else { return Ok(None) };
        let properties = &rule["properties"];
        assert_eq!(properties["protocol"], "Tcp");
        assert_eq!(properties["backendPort"], 22);
        assert_eq!(properties["idleTimeoutInMinutes"], 4);
        assert_eq!(properties["enableFloatingIP"], false);
        assert!(
            properties["frontendIPConfiguration"]["id"].as_str().is_some_and(
                |id| id.ends_with(&format!("/frontendIPConfigurations/{group}-public-lb-frontEnd"))
            )
        );
        Ok(properties["frontendPort"].as_u64())
    }
}

#[tokio::test]
async fn control_plane_machines_get_ssh_rules_on_free_ports_and_lose_them_after_compute() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "nat1";
        let azure = Azure::start(name, Vec::new()).await?;
        let controller = controller(plane, &namespace, azure.default_principal_settings()?, "")?;
        let result = Box::pin(ssh_rules(&client, &namespace, name, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn ssh_rules(client: &Client, namespace: &str, name: &str, azure: &Azure) -> TestResult {
    let clusters = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let machines = Api::<AzureMachine>::namespaced(client.clone(), namespace);
    create_cluster(client, namespace, name, &json!({})).await?;

    // Before the API server load balancer exists the machine waits, with nothing in Azure.
    create_machine(client, namespace, name, "nat1-cp-0", true).await?;
    capz_harness::report_conditions(&machines, "nat1-cp-0", &COMPUTE, &[ConditionType::VM_RUNNING]).await?;
    let waiting = |machine: &AzureMachine| {
        machine_condition(machine, &ConditionType::INBOUND_NAT_RULES_READY)
            .is_some_and(|(_, reason)| reason.as_deref() == Some("WaitingForDependency"))
    };
    capz_harness::wait_for(&machines, "nat1-cp-0", "the rule waiting", WAIT, waiting).await?;
    assert_eq!(azure.arm_calls(), Vec::<String>::new());

    network_reports(&clusters, name, &[ConditionType::RESOURCE_GROUP_READY]).await?;
    let first = capz_harness::wait_for(&machines, "nat1-cp-0", "the first rule", WAIT, has_rule).await?;
    assert_eq!(azure.ssh_port(name, "nat1-cp-0").await?, Some(22));
    assert!(
        first
            .finalizers()
            .iter()
            .any(|f| f == capz_loadbalancer::ID.finalizer())
    );
    // The condition went in beside compute's, which stayed as it was.
    assert_eq!(
        machine_condition(&first, &ConditionType::VM_RUNNING).map(|(status, _)| status),
        Some(ConditionStatus::True)
    );
    assert!(
        first
            .status
            .as_ref()
            .is_some_and(|status| status.long_running_operation_states.0.is_empty()),
        "an ended operation stayed recorded"
    );

    // The next machines take the first free alternatives, in turn.
    create_machine(client, namespace, name, "nat1-cp-1", true).await?;
    capz_harness::wait_for(&machines, "nat1-cp-1", "the second rule", WAIT, has_rule).await?;
    assert_eq!(azure.ssh_port(name, "nat1-cp-1").await?, Some(2201));
    create_machine(client, namespace, name, "nat1-cp-2", true).await?;
    create_machine(client, namespace, name, "nat1-cp-3", true).await?;
    create_machine(client, namespace, name, "nat1-md-0", false).await?;
    let mut ports = Vec::new();
    for machine in ["nat1-cp-2", "nat1-cp-3"] {
        capz_harness::wait_for(&machines, machine, "a concurrent rule", WAIT, has_rule).await?;
        ports.push(azure.ssh_port(name, machine).await?);
    }
    ports.sort_unstable();
    assert_eq!(ports, [Some(2202), Some(2203)]);

    steady(&machines, azure).await?;
    // A worker gets no rule, no finalizer and no condition.
    let worker = machines.get("nat1-md-0").await?;
    assert_eq!(azure.ssh_port(name, "nat1-md-0").await?, None);
    assert_eq!(worker.finalizers(), [COMPUTE_FINALIZER]);
    assert_eq!(
        machine_condition(&worker, &ConditionType::INBOUND_NAT_RULES_READY),
        None
    );

    deletion(&machines, name, azure).await
}

/// Resyncs (every second) list the rules and write nothing, to Azure or to the machines.
async fn steady(machines: &Api<AzureMachine>, azure: &Azure) -> TestResult {
    let version = machines.get("nat1-cp-0").await?.resource_version();
    let writes = azure.writes();
    let lists = |azure: &Azure| {
        azure
            .arm_calls()
            .into_iter()
            .filter(|call| call.starts_with("GET ") && call.ends_with("/inboundNatRules"))
            .count()
    };
    let listed = lists(azure);
    let deadline = tokio::time::Instant::now() + WAIT;
    while lists(azure) < listed + 8 {
        assert!(tokio::time::Instant::now() < deadline, "no resync happened");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(azure.writes(), writes, "a resync wrote to Azure");
    assert_eq!(
        machines.get("nat1-cp-0").await?.resource_version(),
        version,
        "a resync wrote the machine"
    );
    Ok(())
}

/// A deleted machine keeps its rule while compute's finalizer is on it, then loses both.
async fn deletion(machines: &Api<AzureMachine>, name: &str, azure: &Azure) -> TestResult {
    machines.delete("nat1-cp-0", &DeleteParams::default()).await?;
    let held = |machine: &AzureMachine| {
        machine_condition(machine, &ConditionType::INBOUND_NAT_RULES_READY)
            .is_some_and(|(_, reason)| reason.as_deref() == Some("Deleting"))
    };
    capz_harness::wait_for(machines, "nat1-cp-0", "the rule held for compute", WAIT, held).await?;
    assert_eq!(azure.ssh_port(name, "nat1-cp-0").await?, Some(22));

    let remaining: Vec<String> = machines
        .get("nat1-cp-0")
        .await?
        .finalizers()
        .iter()
        .filter(|finalizer| *finalizer != COMPUTE_FINALIZER)
        .cloned()
        .collect();
    machines
        .patch(
            "nat1-cp-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": remaining}})),
        )
        .await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while machines.get_opt("nat1-cp-0").await?.is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nat1-cp-0 kept its finalizer"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(azure.ssh_port(name, "nat1-cp-0").await?, None);
    assert_eq!(azure.ssh_port(name, "nat1-cp-1").await?, Some(2201));
    Ok(())
}
