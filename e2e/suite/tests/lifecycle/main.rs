//! What Cluster API users do after "create", on workload clusters whose machines boot (the
//! workload cluster simulator, `e2e/workload`): each case is a cluster of the default flavor with
//! its add-ons installed by ClusterResourceSets, in a namespace of its own, side by side on one
//! management plane.
//!
//! - A KubeadmControlPlane of three moves to a new Kubernetes version: each control-plane machine
//!   is replaced by a new VM, one at a time; the old VMs, NICs and disks go; the etcd members and
//!   health conditions come back to three and True.
//! - Without a CNI the nodes stay NotReady, and `clusterctl describe` says why.
//! - A MachineDeployment whose AzureMachineTemplate reference changes rolls its machines to new
//!   VMs of the new size (draining CoreDNS off the old nodes); then, left alone, the converged
//!   cluster is quiet for the soak (`CAPZ_E2E_SOAK_SECONDS`, 60 by default): no Machine replaced,
//!   no capz-rs object written.
//! - A worker VM deleted out of band loses its Node (the cloud controller manager deletes it), and
//!   a MachineHealthCheck replaces the machine with one that joins; a worker VM powered off has
//!   its Node go `Unknown`, and `Ready` again once started.
//! - An AKS cluster made through ARM answers kubectl, through the emulator's proxy, with the
//!   kubeconfig `listClusterAdminCredential` returns: its pools' instances are its Nodes.
//! - MachinePools of the `machinepool` flavor, Uniform and Flexible, converge, scale with each
//!   delete policy and roll to a new version one Node at a time ([`pools`]).
//! - `clusterctl move` hands a cluster of the default flavor and one of the `aks` flavor to a
//!   second management cluster ([`moving`], a test of its own with its own two planes, run beside
//!   the others).
//! - A cluster of the `private` flavor is reached only through its peering with the plane's
//!   emulated network and its zone's link to it ([`private`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use arm_emulator::Config;
use base64::Engine as _;
use capz_e2e::{Environment, TestResult, condition, wait_list};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

mod moving;
mod pools;
mod private;

const CONVERGE: Duration = Duration::from_mins(4);
const ROLLOUT: Duration = Duration::from_mins(8);
const UPGRADE_TO: &str = "v1.33.2";
const CONTROL_PLANE: &str = "cluster.x-k8s.io/control-plane";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_live_through_upgrades_rollouts_and_remediation() -> TestResult {
    let environment = Environment::start(private::in_a_management_network(Config {
        retry_after_seconds: 1,
        ..Config::default()
    }))
    .await?;
    let client = environment.client.clone();
    let (upgrade, no_cni, rollout, remediation, managed, uniform, flexible, private) = tokio::join!(
        capz_harness::with_temp_namespace(&client, async |namespace| {
            control_plane_upgrade(&environment, &namespace).await
        }),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            without_a_cni(&environment, &namespace).await
        }),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            rollout_then_soak(&environment, &namespace).await
        }),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            remediation_of_a_lost_vm(&environment, &namespace).await
        }),
        an_aks_cluster_answers_its_kubeconfig(&environment),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            pools::machine_pool(&environment, &namespace, false).await
        }),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            pools::machine_pool(&environment, &namespace, true).await
        }),
        capz_harness::with_temp_namespace(&client, async |namespace| {
            private::a_private_cluster_through_its_peering(&environment, &namespace).await
        }),
    );
    for (case, outcome) in [
        ("control-plane upgrade", upgrade),
        ("no CNI", no_cni),
        ("rollout and soak", rollout),
        ("remediation", remediation),
        ("Uniform machine pool", uniform),
        ("Flexible machine pool", flexible),
        ("private cluster", private),
    ] {
        outcome?.map_err(|error| format!("{case}: {error}"))?;
    }
    managed.map_err(|error| format!("AKS: {error}"))?;
    Ok(())
}

/// The provider ID cloud-provider-azure gives the node of the instance `id`: its resource group
/// (for AKS, `MC_...`) in lower case.
fn provider_id(id: &str) -> String {
    let mut segments: Vec<String> = id.split('/').map(str::to_owned).collect();
    if let Some(at) = segments
        .iter()
        .position(|segment| segment.eq_ignore_ascii_case("resourceGroups"))
        && let Some(group) = segments.get_mut(at + 1)
    {
        *group = group.to_ascii_lowercase();
    }
    format!("azure://{}", segments.join("/"))
}

/// A managed cluster with a system pool of one and a user pool of two, made through ARM: the
/// admin kubeconfig it lists, used by kubectl through the emulator's proxy, lists three Ready
/// nodes, one per scale-set instance, each with its instance as provider ID.
async fn an_aks_cluster_answers_its_kubeconfig(environment: &Environment) -> TestResult {
    let started = Instant::now();
    let kubeconfig = managed_cluster_kubeconfig(environment, started).await?;
    let nodes = kubectl_nodes(environment, &kubeconfig, 3, started).await?;
    let instances: BTreeSet<String> = environment.azure.emulator.boots()["managedClusters"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|cluster| cluster["nodes"].as_array().cloned().unwrap_or_default())
        .filter_map(|node| node["id"].as_str().map(provider_id))
        .collect();
    let provider_ids: BTreeSet<String> = nodes
        .iter()
        .filter_map(|node| node["spec"]["providerID"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(provider_ids, instances, "one node per pool instance");
    for node in &nodes {
        let ready = node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|condition| condition["type"] == "Ready" && condition["status"] == "True");
        assert!(ready, "AKS nodes are Ready: {node}");
    }
    eprintln!(
        "e2e: kubectl lists the AKS cluster's three nodes through its admin kubeconfig {:.1} s after the create",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Creates a managed cluster through ARM (pools of one and two) and writes the admin kubeconfig
/// it lists once provisioned to a file; returns the file.
async fn managed_cluster_kubeconfig(
    environment: &Environment,
    started: Instant,
) -> TestResult<std::path::PathBuf> {
    const GROUP: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/aks-e2e";
    const CLUSTER: &str = "/providers/Microsoft.ContainerService/managedClusters/aks";
    const API: &str = "api-version=2025-08-01";
    let cluster_body = json!({
        "location": "westeurope",
        "identity": {"type": "SystemAssigned"},
        "properties": {
            "kubernetesVersion": "1.33.5",
            "dnsPrefix": "aks-e2e",
            "agentPoolProfiles": [
                {"name": "sys", "count": 1, "mode": "System", "vmSize": "Standard_D2s_v3"},
                {"name": "user", "count": 2, "mode": "User", "vmSize": "Standard_D2s_v3"},
            ],
        },
    });
    for (path, body) in [
        (
            format!("{GROUP}?api-version=2021-04-01"),
            json!({"location": "westeurope"}),
        ),
        (format!("{GROUP}{CLUSTER}?{API}"), cluster_body),
    ] {
        let (status, answer) = environment.arm_json("PUT", &path, Some(body)).await?;
        assert!(status < 300, "PUT {path}: {status} {answer}");
    }
    loop {
        let (_, cluster) = environment
            .arm_json("GET", &format!("{GROUP}{CLUSTER}?{API}"), None)
            .await?;
        if cluster["properties"]["provisioningState"] == "Succeeded" {
            break;
        }
        if started.elapsed() > CONVERGE {
            return Err(format!("the managed cluster did not provision: {cluster}").into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (status, credentials) = environment
        .arm_json(
            "POST",
            &format!("{GROUP}{CLUSTER}/listClusterAdminCredential?{API}"),
            None,
        )
        .await?;
    assert_eq!(status, 200, "{credentials}");
    let kubeconfig = base64::engine::general_purpose::STANDARD.decode(
        credentials["kubeconfigs"][0]["value"]
            .as_str()
            .ok_or("no kubeconfig")?,
    )?;
    let file = capz_e2e::scratch("aks-kubeconfig")?.join("kubeconfig");
    std::fs::write(&file, kubeconfig)?;
    Ok(file)
}

/// `kubectl get nodes` with `kubeconfig`, through the emulator's proxy as a user's shell would,
/// until it lists `count` nodes.
async fn kubectl_nodes(
    environment: &Environment,
    kubeconfig: &std::path::Path,
    count: usize,
    started: Instant,
) -> TestResult<Vec<Value>> {
    let kubectl = capz_harness::KubeBinaries::locate()?.binary("kubectl");
    let proxy = format!("http://{}", environment.proxy.address);
    loop {
        let mut command = std::process::Command::new(&kubectl);
        command
            .args([
                "--kubeconfig",
                &kubeconfig.display().to_string(),
                "get",
                "nodes",
                "-o",
                "json",
            ])
            .env("HTTPS_PROXY", &proxy);
        let output = tokio::task::spawn_blocking(move || command.output()).await??;
        if output.status.success() {
            let nodes: Value = serde_json::from_slice(&output.stdout)?;
            if let Some(items) = nodes["items"].as_array().filter(|items| items.len() == count) {
                return Ok(items.clone());
            }
        }
        if started.elapsed() > CONVERGE {
            return Err(format!(
                "kubectl did not list {count} nodes: {}",
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The KubeadmControlPlanes of `namespace`.
async fn control_planes(environment: &Environment, namespace: &str) -> TestResult<Api<DynamicObject>> {
    let resource = capz_harness::resource(
        &environment.client,
        "controlplane.cluster.x-k8s.io",
        "v1beta2",
        "KubeadmControlPlane",
    )
    .await?;
    Ok(Api::namespaced_with(
        environment.client.clone(),
        namespace,
        &resource,
    ))
}

/// The Azure resources a machine's VM holds: the VM, its NICs and its OS disk.
fn vm_resources(environment: &Environment, provider_id: &str) -> Vec<String> {
    let id = provider_id.trim_start_matches("azure://").to_owned();
    let Some(vm) = environment.azure_resource(&id) else {
        return vec![id];
    };
    let mut held = vec![id];
    for nic in vm["properties"]["networkProfile"]["networkInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        held.extend(nic["id"].as_str().map(str::to_owned));
    }
    held.extend(
        vm["properties"]["storageProfile"]["osDisk"]["managedDisk"]["id"]
            .as_str()
            .map(str::to_owned),
    );
    held
}

async fn provider_ids(environment: &Environment, namespace: &str, selector: &str) -> TestResult<Vec<String>> {
    Ok(environment
        .infrastructure("AzureMachine", namespace)
        .await?
        .list(&ListParams::default().labels(selector))
        .await?
        .items
        .iter()
        .filter_map(|machine| machine.data["spec"]["providerID"].as_str().map(str::to_owned))
        .collect())
}

fn is_true(object: &DynamicObject, type_: &str) -> bool {
    condition(object, type_).is_some_and(|(status, _)| status == "True")
}

/// Three control-plane machines move to [`UPGRADE_TO`] one at a time (never more than four at
/// once), each on a new VM; the old VMs, NICs and disks are deleted; `EtcdClusterHealthy` and
/// `ControlPlaneComponentsHealthy` are True whenever no member is being replaced, and at the end
/// etcd has three members, one per new node, every node at the new version.
async fn control_plane_upgrade(environment: &Environment, namespace: &str) -> TestResult {
    const NAME: &str = "upgrade";
    let applied_at = environment.create_cluster(NAME, namespace, 3, 0, true).await?;
    environment
        .available(NAME, namespace, CONVERGE, applied_at)
        .await?;
    let machines = environment.cluster_api("Machine", namespace).await?;
    // Available comes with the first members; the control plane scales up to three one by one.
    let before: BTreeSet<String> = wait_list(
        &machines,
        CONTROL_PLANE,
        "three control-plane Machines Ready",
        CONVERGE,
        |all| all.len() == 3 && all.iter().all(|machine| is_true(machine, "Ready")),
    )
    .await?
    .iter()
    .map(ResourceExt::name_any)
    .collect();
    eprintln!(
        "e2e: three control-plane machines Ready {:.1} s after the apply",
        applied_at.elapsed().as_secs_f64()
    );
    let old_resources: Vec<String> = provider_ids(environment, namespace, CONTROL_PLANE)
        .await?
        .iter()
        .flat_map(|id| vm_resources(environment, id))
        .collect();
    let kcps = control_planes(environment, namespace).await?;
    let kcp_name = format!("{NAME}-control-plane");
    kcps.patch(
        &kcp_name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"version": UPGRADE_TO}})),
    )
    .await?;
    let started = Instant::now();
    let mut most = 0;
    let mut unhealthy_while_steady = Vec::new();
    loop {
        let current = machines
            .list(&ListParams::default().labels(CONTROL_PLANE))
            .await?
            .items;
        let kcp = kcps.get(&kcp_name).await?;
        most = most.max(current.len());
        // By the machines, or by the KubeadmControlPlane's own count at its last reconcile (which
        // its conditions come from).
        let replacing = current.len() != 3
            || current
                .iter()
                .any(|machine| machine.metadata.deletion_timestamp.is_some() || !is_true(machine, "Ready"))
            || ["replicas", "readyReplicas", "upToDateReplicas"]
                .iter()
                .any(|count| kcp.data["status"][count] != 3);
        for type_ in ["EtcdClusterHealthy", "ControlPlaneComponentsHealthy"] {
            if !replacing && !is_true(&kcp, type_) {
                unhealthy_while_steady.push(format!("{type_}: {:?}", condition(&kcp, type_)));
            }
        }
        let upgraded = kcp.data["status"]["version"] == UPGRADE_TO
            && !replacing
            && current
                .iter()
                .all(|machine| !before.contains(&machine.name_any()))
            && ["EtcdClusterHealthy", "ControlPlaneComponentsHealthy"]
                .iter()
                .all(|type_| is_true(&kcp, type_));
        if upgraded {
            break;
        }
        if started.elapsed() > ROLLOUT {
            return Err(format!(
                "the control plane did not move to {UPGRADE_TO} in {} s: {}; machines {:?}",
                ROLLOUT.as_secs(),
                capz_e2e::summary(&kcp),
                current.iter().map(capz_e2e::summary).collect::<Vec<_>>()
            )
            .into());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    eprintln!(
        "e2e: three control-plane machines at {UPGRADE_TO} {:.1} s after the change",
        started.elapsed().as_secs_f64()
    );
    assert!(
        most <= 4,
        "one machine at a time: {most} control-plane machines at once"
    );
    // Conditions are read a second apart, so one read may fall between a new member joining and
    // its machine turning Ready; a condition that stays False would show in many.
    assert!(
        unhealthy_while_steady.len() <= 2,
        "the control plane was unhealthy while no member was replaced: {unhealthy_while_steady:?}"
    );
    for id in &old_resources {
        assert!(
            environment.azure_resource(id).is_none(),
            "{id} of an old control-plane machine is deleted"
        );
    }
    one_member_per_upgraded_node(environment, namespace, NAME).await
}

/// After the upgrade, three nodes at the new version and one etcd member per node.
async fn one_member_per_upgraded_node(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
) -> TestResult {
    let workload = environment.workload_client(cluster, namespace).await?;
    let nodes: BTreeMap<String, String> = Api::<Node>::all(workload.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|node| {
            let version = node
                .status
                .and_then(|status| status.node_info)
                .map(|info| info.kubelet_version);
            (
                node.metadata.name.unwrap_or_default(),
                version.unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(nodes.len(), 3, "three nodes: {nodes:?}");
    assert!(nodes.values().all(|version| version == UPGRADE_TO), "{nodes:?}");
    let members: BTreeSet<String> = Api::<Pod>::namespaced(workload, "kube-system")
        .list(&ListParams::default().labels("component=etcd"))
        .await?
        .items
        .iter()
        .map(|pod| pod.name_any().trim_start_matches("etcd-").to_owned())
        .collect();
    assert_eq!(
        members,
        nodes.keys().cloned().collect(),
        "one etcd member per control-plane node"
    );
    Ok(())
}

/// With a cloud controller manager but no CNI, every machine gets its node (the provider IDs
/// match) but no node becomes Ready, the Cluster is not Available, and `clusterctl describe`
/// shows the kubelet's reason. A machine whose bootstrap data kubeadm would not take (its
/// `kubeadm join` reads a file the data does not write) gets its VM and never a node: the
/// simulator says why, Cluster API sees no node.
async fn without_a_cni(environment: &Environment, namespace: &str) -> TestResult {
    const NAME: &str = "nocni";
    const BROKEN: &str = "cluster.x-k8s.io/deployment-name=nocni-broken";
    environment.create_cluster(NAME, namespace, 1, 1, false).await?;
    let broken_data =
        "#cloud-config\nruncmd:\n- kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml\n";
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: nocni-broken\ntype: cluster.x-k8s.io/secret\nstringData:\n  format: cloud-config\n  value: {}\n",
        serde_json::to_string(broken_data)?
    );
    capz_harness::apply_yaml(&environment.client, namespace, &secret).await?;
    capz_harness::apply_yaml(
        &environment.client,
        namespace,
        &capz_e2e::machine_deployment("nocni-broken", NAME, 1, "nocni-broken"),
    )
    .await?;
    let machines = environment.cluster_api("Machine", namespace).await?;
    wait_list(
        &machines,
        "cluster.x-k8s.io/deployment-name!=nocni-broken",
        "both Machines with their nodes",
        CONVERGE,
        |all| {
            all.len() == 2
                && all
                    .iter()
                    .all(|machine| machine.data["status"]["nodeRef"]["name"].is_string())
        },
    )
    .await?;
    never_joins(environment, namespace, BROKEN).await?;
    // Long enough for Cluster API to have read the nodes' conditions.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cluster = environment
        .cluster_api("Cluster", namespace)
        .await?
        .get(NAME)
        .await?;
    assert!(
        !is_true(&cluster, "Available"),
        "a cluster without a CNI is not Available: {}",
        capz_e2e::summary(&cluster)
    );
    let describe = environment
        .clusterctl
        .run(&[
            "describe",
            "cluster",
            NAME,
            "--namespace",
            namespace,
            "--show-conditions",
            "all",
        ])
        .await?
        .stdout;
    assert!(
        describe.contains("cni plugin not initialized"),
        "clusterctl describe says why the nodes are not ready:\n{describe}"
    );
    Ok(())
}

/// The machine of `selector`, whose bootstrap data kubeadm would not take, has its VM and never a
/// node: the simulator says why, and Cluster API sees no node for it.
async fn never_joins(environment: &Environment, namespace: &str, selector: &str) -> TestResult {
    let azure_machines = environment.infrastructure("AzureMachine", namespace).await?;
    wait_list(
        &azure_machines,
        selector,
        "the broken machine's VM",
        CONVERGE,
        |all| all.len() == 1 && all.iter().all(capz_e2e::machine_ready),
    )
    .await?;
    let broken_vm = provider_ids(environment, namespace, selector).await?;
    let broken_vm = broken_vm.first().ok_or("the broken machine has a VM")?;
    let refusal = environment.workload_status().await?["unjoined"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|machine| {
            machine["id"]
                .as_str()
                .is_some_and(|id| broken_vm.trim_start_matches("azure://").eq_ignore_ascii_case(id))
        })
        .and_then(|machine| machine["failed"].as_str().map(str::to_owned))
        .ok_or_else(|| format!("the simulator lists {broken_vm} as a machine that never joins"))?;
    assert!(
        refusal.contains("/run/kubeadm/kubeadm-join-config.yaml"),
        "the simulator says why: {refusal}"
    );
    // Long enough for Cluster API to have looked for its node.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let machines = environment.cluster_api("Machine", namespace).await?;
    let broken = machines
        .list(&ListParams::default().labels(selector))
        .await?
        .items;
    assert_eq!(broken.len(), 1);
    assert!(
        broken[0].data["status"]["nodeRef"].is_null() && !is_true(&broken[0], "NodeReady"),
        "Cluster API sees no node for the broken machine: {}",
        capz_e2e::summary(&broken[0])
    );
    Ok(())
}

/// The MachineDeployment's machines move to a new AzureMachineTemplate (a bigger size): two new
/// VMs of that size join, the old machines' VMs go, and CoreDNS, drained off the old nodes, runs
/// on the new ones. Then the soak.
async fn rollout_then_soak(environment: &Environment, namespace: &str) -> TestResult {
    const NAME: &str = "rollout";
    const WORKERS: &str = "cluster.x-k8s.io/deployment-name=rollout-md-0";
    let applied_at = environment.create_cluster(NAME, namespace, 1, 2, true).await?;
    environment
        .available(NAME, namespace, CONVERGE, applied_at)
        .await?;
    let machines = environment.cluster_api("Machine", namespace).await?;
    let before: BTreeSet<String> = machines
        .list(&ListParams::default().labels(WORKERS))
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let old_vms = provider_ids(environment, namespace, WORKERS).await?;
    let templates = environment
        .infrastructure("AzureMachineTemplate", namespace)
        .await?;
    let mut template = templates.get("rollout-md-0").await?;
    template.metadata = kube::api::ObjectMeta {
        name: Some("rollout-md-1".to_owned()),
        ..kube::api::ObjectMeta::default()
    };
    template.data["spec"]["template"]["spec"]["vmSize"] = json!("Standard_D4s_v3");
    if let Some(data) = template.data.as_object_mut() {
        data.remove("status");
    }
    environment.apply(namespace, &[template]).await?;
    let deployments = environment.cluster_api("MachineDeployment", namespace).await?;
    deployments
        .patch(
            "rollout-md-0",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"template": {"spec": {"infrastructureRef": {"name": "rollout-md-1"}}}}}),
            ),
        )
        .await?;
    let started = Instant::now();
    wait_list(
        &machines,
        WORKERS,
        "two new worker Machines Ready, the old ones gone",
        ROLLOUT,
        |all| {
            all.len() == 2
                && all
                    .iter()
                    .all(|machine| !before.contains(&machine.name_any()) && is_true(machine, "Ready"))
        },
    )
    .await?;
    eprintln!(
        "e2e: the MachineDeployment rolled out {:.1} s after the change",
        started.elapsed().as_secs_f64()
    );
    for id in &old_vms {
        assert!(
            environment
                .azure_resource(id.trim_start_matches("azure://"))
                .is_none(),
            "{id} of an old worker is deleted"
        );
    }
    for id in provider_ids(environment, namespace, WORKERS).await? {
        let vm = environment
            .azure_resource(id.trim_start_matches("azure://"))
            .ok_or_else(|| format!("{id} exists"))?;
        assert_eq!(
            vm["properties"]["hardwareProfile"]["vmSize"], "Standard_D4s_v3",
            "{id}"
        );
    }
    coredns_runs_on_nodes_that_exist(environment, namespace, NAME).await?;
    soak(environment, namespace).await
}

/// CoreDNS keeps its two replicas, each on a node that exists (drain moved them off the old
/// ones).
async fn coredns_runs_on_nodes_that_exist(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
) -> TestResult {
    let workload = environment.workload_client(cluster, namespace).await?;
    let nodes: BTreeSet<String> = Api::<Node>::all(workload.clone())
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let coredns = Api::<Pod>::namespaced(workload, "kube-system")
        .list(&ListParams::default().labels("k8s-app=kube-dns"))
        .await?
        .items;
    assert_eq!(coredns.len(), 2, "CoreDNS keeps its two replicas");
    for pod in &coredns {
        let node = pod
            .spec
            .as_ref()
            .and_then(|spec| spec.node_name.clone())
            .unwrap_or_default();
        assert!(
            nodes.contains(&node),
            "{} runs on a node that exists ({node})",
            pod.name_any()
        );
    }
    Ok(())
}

/// Left alone, a converged cluster is quiet: over the soak no Machine is replaced and no object
/// of capz-rs's kinds in the namespace changes.
async fn soak(environment: &Environment, namespace: &str) -> TestResult {
    let seconds: u64 = std::env::var("CAPZ_E2E_SOAK_SECONDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(60);
    let snapshot = async || -> TestResult<(BTreeSet<String>, BTreeMap<String, String>)> {
        let machines = environment
            .cluster_api("Machine", namespace)
            .await?
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(|machine| machine.uid().unwrap_or_default())
            .collect();
        let versions = environment
            .resource_versions(
                namespace,
                &[
                    "AzureCluster",
                    "AzureMachine",
                    "AzureMachineTemplate",
                    "AzureClusterIdentity",
                ],
            )
            .await?;
        Ok((machines, versions))
    };
    let before = snapshot().await?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = snapshot().await?;
    assert_eq!(
        before.0, after.0,
        "no Machine was replaced in the {seconds} s soak"
    );
    let changed: Vec<&String> = before
        .1
        .iter()
        .filter(|(key, version)| after.1.get(*key) != Some(*version))
        .map(|(key, _)| key)
        .collect();
    assert!(
        changed.is_empty(),
        "written during the {seconds} s soak: {changed:?}"
    );
    eprintln!("e2e: {seconds} s soak: no Machine replaced, no capz-rs object written");
    Ok(())
}

/// A worker's VM deleted out of band: its Node goes (Azure's cloud controller manager deletes
/// nodes whose VM is gone), the MachineHealthCheck marks the machine unhealthy, and the
/// MachineDeployment's replacement joins the cluster; the lost VM is not recreated.
async fn remediation_of_a_lost_vm(environment: &Environment, namespace: &str) -> TestResult {
    const NAME: &str = "heal";
    const WORKERS: &str = "cluster.x-k8s.io/deployment-name=heal-md-0";
    let applied_at = environment.create_cluster(NAME, namespace, 1, 2, true).await?;
    capz_harness::apply_yaml(
        &environment.client,
        namespace,
        &format!(
            r"
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata:
  name: heal-md-0
spec:
  clusterName: {NAME}
  selector:
    matchLabels:
      cluster.x-k8s.io/deployment-name: heal-md-0
  checks:
    nodeStartupTimeoutSeconds: 600
    unhealthyNodeConditions:
    - type: Ready
      status: Unknown
      timeoutSeconds: 60
    - type: Ready
      status: 'False'
      timeoutSeconds: 60
"
        ),
    )
    .await?;
    environment
        .available(NAME, namespace, CONVERGE, applied_at)
        .await?;
    let machines = environment.cluster_api("Machine", namespace).await?;
    let before: Vec<DynamicObject> = machines.list(&ListParams::default().labels(WORKERS)).await?.items;
    let lost = &before[0];
    let lost_name = lost.name_any();
    let lost_vm = lost.data["spec"]["providerID"]
        .as_str()
        .ok_or("the machine has a provider ID")?
        .trim_start_matches("azure://")
        .to_owned();
    let status = environment
        .arm("DELETE", &format!("{lost_vm}?api-version=2024-07-01"))
        .await?;
    assert!(matches!(status, 200 | 202 | 204), "deleting {lost_vm}: {status}");
    let started = Instant::now();
    wait_list(
        &machines,
        WORKERS,
        "the lost machine replaced by a Ready one",
        ROLLOUT,
        |all| {
            all.len() == 2
                && all
                    .iter()
                    .all(|machine| machine.name_any() != lost_name && is_true(machine, "Ready"))
        },
    )
    .await?;
    eprintln!(
        "e2e: the machine whose VM was deleted was replaced {:.1} s later",
        started.elapsed().as_secs_f64()
    );
    assert!(
        environment.azure_resource(&lost_vm).is_none(),
        "the lost VM is not recreated"
    );
    let nodes = Api::<Node>::all(environment.workload_client(NAME, namespace).await?)
        .list(&ListParams::default())
        .await?
        .items;
    assert_eq!(nodes.len(), 3, "the control plane and two workers");
    assert!(
        nodes
            .iter()
            .all(|node| capz_e2e::node_ready(node).is_some_and(|ready| ready.status == "True")),
        "every node Ready"
    );
    a_stopped_vm_leaves_its_node_unknown(environment, namespace, NAME, WORKERS).await
}

/// A worker VM powered off: its Node's `Ready` goes `Unknown` (the kubelet stops posting), and is
/// `True` again once the VM is started.
async fn a_stopped_vm_leaves_its_node_unknown(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    workers: &str,
) -> TestResult {
    let vm = provider_ids(environment, namespace, workers)
        .await?
        .first()
        .ok_or("a worker has a VM")?
        .trim_start_matches("azure://")
        .to_owned();
    let node = environment
        .azure_resource(&vm)
        .and_then(|vm| {
            vm["properties"]["osProfile"]["computerName"]
                .as_str()
                .map(str::to_owned)
        })
        .ok_or("the VM has a computer name")?;
    let nodes = Api::<Node>::all(environment.workload_client(cluster, namespace).await?);
    let ready_status = async || -> TestResult<String> {
        let node = nodes.get(&node).await?;
        Ok(capz_e2e::node_ready(&node)
            .map(|ready| ready.status)
            .unwrap_or_default())
    };
    for (action, wanted) in [("powerOff", "Unknown"), ("start", "True")] {
        let status = environment
            .arm("POST", &format!("{vm}/{action}?api-version=2024-07-01"))
            .await?;
        assert_eq!(status, 202, "{action} {vm}");
        let started = Instant::now();
        loop {
            let ready = ready_status().await?;
            if ready == wanted {
                break;
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("after {action}, node {node} is Ready={ready}, not {wanted}").into());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    eprintln!("e2e: a stopped VM's node went Unknown, and Ready again once started");
    Ok(())
}
