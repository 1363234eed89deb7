//! The default flavor, as `clusterctl generate cluster` writes it: the AzureCluster becomes Ready
//! with its control plane endpoint, the first control-plane machine gets its VM (whose custom data
//! is what kubeadm would initialize the cluster with), the workers wait
//! for bootstrap data (no workload cluster exists, so kubeadm never initializes), and deleting the
//! Cluster leaves nothing behind in Azure. Every Azure resource capz-rs wrote shows in a Normal
//! `Created` event on its object, and in a `Deleted` event when it (or the resource group holding
//! it) is deleted; no event carries a secret. Every controller's `/metrics` serves
//! controller-runtime's series, counting the reconciles.

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION};
use capz_e2e::{Environment, TestResult};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams};

const CONVERGE: Duration = Duration::from_mins(3);
const CLUSTER: &str = "flavor";

#[tokio::test]
async fn the_default_flavor_converges_and_deletes_without_leftovers() -> TestResult {
    let environment = Environment::start(Config {
        retry_after_seconds: 1,
        // Every call of the run, for the events check.
        request_log_size: 100_000,
        ..Config::default()
    })
    .await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        // EdgeZone is off unless `clusterctl init` turns it on.
        let refusal = environment.admits_edge_zone_cluster(&namespace).await?.err();
        assert!(
            refusal
                .as_deref()
                .is_some_and(|message| message.contains("extendedLocation")),
            "without EXP_EDGEZONE an edge-zone AzureCluster is refused at its field: {refusal:?}"
        );
        environment.create_identity_secret(&namespace).await?;
        let manifest = environment.generate(CLUSTER, &namespace, 2).await?;
        let applied_at = Instant::now();
        let since = SystemTime::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest).await?;
        environment.converged(&namespace, 2, CONVERGE, applied_at).await?;
        first_machine_would_initialize_the_cluster(&environment, &namespace).await?;
        the_workload_cluster_comes_up(&environment, &namespace, applied_at).await?;
        controllers_serve_controller_runtime_metrics(&environment).await?;
        let built = environment.created_in_azure();
        deletes_without_leftovers(&environment, &namespace).await?;
        every_change_is_an_event(&environment, &namespace, since, &built).await
    })
    .await?
}

/// The control-plane machine's bootstrap data, as Cluster API's kubeadm bootstrap provider wrote
/// it and capz-rs passed it to the VM, is what kubeadm would initialize this cluster with: its
/// name, version and endpoint, the node named after the VM, the cluster's CAs aboard. The workers
/// have no VM yet (their bootstrap data waits for an initialized control plane).
async fn first_machine_would_initialize_the_cluster(
    environment: &Environment,
    namespace: &str,
) -> TestResult {
    let cluster = environment
        .infrastructure("AzureCluster", namespace)
        .await?
        .get(CLUSTER)
        .await?;
    let endpoint = &cluster.data["spec"]["controlPlaneEndpoint"];
    let endpoint = format!(
        "{}:{}",
        endpoint["host"].as_str().unwrap_or_default(),
        endpoint["port"].as_i64().unwrap_or_default()
    );
    let boots = environment.azure.emulator.boots();
    let machines = boots["machines"].as_array().cloned().unwrap_or_default();
    let roles: Vec<&str> = machines
        .iter()
        .filter_map(|machine| machine["boot"]["role"].as_str())
        .collect();
    assert_eq!(
        roles.iter().filter(|role| **role == "init").count(),
        1,
        "one machine initializes the cluster: {boots}"
    );
    assert_eq!(
        roles.iter().filter(|role| **role == "joinWorker").count(),
        2,
        "both workers join it: {boots}"
    );
    let machine = machines
        .iter()
        .find(|machine| machine["boot"]["role"] == "init")
        .ok_or("no machine initializes the cluster")?;
    let boot = &machine["boot"];
    assert_eq!(boot["role"], "init", "{machine}");
    assert_eq!(boot["nodeName"], machine["computerName"], "{machine}");
    assert_eq!(boot["clusterName"], CLUSTER, "{machine}");
    assert_eq!(
        boot["kubernetesVersion"],
        capz_e2e::KUBERNETES_VERSION,
        "{machine}"
    );
    assert_eq!(boot["controlPlaneEndpoint"], endpoint.as_str(), "{machine}");
    assert_eq!(
        boot["certificates"].as_array().map_or(0, Vec::len),
        8,
        "{machine}"
    );
    Ok(())
}

/// The workload cluster the first control-plane VM initialized answers at the endpoint with the
/// kubeconfig Cluster API wrote, and every machine registered its Node at the version asked for:
/// NotReady for want of a CNI, tainted uninitialized and without a provider ID until a cloud
/// controller manager runs, as on Azure with this flavor. Once both run (installed as a user
/// installs them, straight into the workload cluster), each Node carries its machine's provider
/// ID and is Ready, every Machine has its node, and the Cluster is Available.
async fn the_workload_cluster_comes_up(
    environment: &Environment,
    namespace: &str,
    applied_at: Instant,
) -> TestResult {
    let started = Instant::now();
    let (workload, nodes) = loop {
        let attempt = async {
            let workload = environment.workload_client(CLUSTER, namespace).await?;
            let nodes = Api::<Node>::all(workload.clone())
                .list(&ListParams::default())
                .await?;
            TestResult::Ok((workload, nodes.items))
        };
        match attempt.await {
            Ok((workload, nodes)) if nodes.len() == 3 => break (workload, nodes),
            outcome => {
                if started.elapsed() > CONVERGE {
                    let status = environment.workload_status().await?;
                    return Err(format!(
                        "the workload cluster did not get its three nodes: {:?}; the simulator: {status}",
                        outcome.map(|(_, nodes)| nodes.len())
                    )
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    };
    eprintln!(
        "e2e: the workload cluster has its 3 nodes {:.1} s after the apply",
        applied_at.elapsed().as_secs_f64()
    );
    for node in &nodes {
        let name = node.name_any();
        let status = node.status.clone().unwrap_or_default();
        assert_eq!(
            status.node_info.map(|info| info.kubelet_version).as_deref(),
            Some(capz_e2e::KUBERNETES_VERSION),
            "{name}"
        );
        let ready = capz_e2e::node_ready(node).ok_or_else(|| format!("{name} has no Ready condition"))?;
        assert_eq!(ready.status, "False", "{name}: {ready:?}");
        assert!(
            ready
                .message
                .unwrap_or_default()
                .contains("cni plugin not initialized"),
            "{name} says why it is not ready"
        );
        let spec = node.spec.clone().unwrap_or_default();
        assert!(
            spec.provider_id.is_none(),
            "{name} has no provider ID without a cloud provider"
        );
        assert!(
            spec.taints
                .unwrap_or_default()
                .iter()
                .any(|taint| taint.key == "node.cloudprovider.kubernetes.io/uninitialized"),
            "{name} waits for its cloud provider"
        );
    }
    // The add-ons the flavor's ClusterResourceSets would install, created by hand.
    capz_e2e::create_all(&workload, &capz_harness::capz::addon_objects(CLUSTER)?).await?;
    let clusters = environment.cluster_api("Cluster", namespace).await?;
    capz_e2e::wait_list(&clusters, "", "the Cluster Available", CONVERGE, |all| {
        all.iter().all(|cluster| {
            capz_e2e::condition(cluster, "Available").is_some_and(|(status, _)| status == "True")
        })
    })
    .await?;
    eprintln!(
        "e2e: the Cluster is Available {:.1} s after the apply",
        applied_at.elapsed().as_secs_f64()
    );
    let provider_ids: BTreeSet<String> = environment
        .infrastructure("AzureMachine", namespace)
        .await?
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter_map(|machine| machine.data["spec"]["providerID"].as_str().map(str::to_owned))
        .collect();
    let node_ids: BTreeSet<String> = Api::<Node>::all(workload)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|node| node.spec?.provider_id)
        .collect();
    assert_eq!(
        node_ids, provider_ids,
        "each Node carries its machine's provider ID"
    );
    Ok(())
}

/// The value of the series `name` (with its labels) in a Prometheus rendering.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// The sum of the values of every series of `name`, whatever its labels.
fn total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} ")))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Every controller's `/metrics` serves the series of controller-runtime and client-go's work
/// queue that Cluster API dashboards read, counting the reconciles that converged the cluster, and
/// the process series.
async fn controllers_serve_controller_runtime_metrics(environment: &Environment) -> TestResult {
    for process in environment.capz.processes() {
        if process == "capz-webhooks" {
            continue;
        }
        let address = environment
            .capz
            .metrics_address(process)
            .ok_or_else(|| format!("{process} serves no metrics"))?;
        let (status, text) = capz_harness::http_get(address, "/metrics").await?;
        assert_eq!(status, 200, "{process}: /metrics answered {status}");
        // The default flavor has no MachinePool and no AKS kind: the vmss and aks controllers run
        // with nothing to do.
        let idle = process == "capz-vmss" || process == "capz-aks";
        for name in [
            "controller_runtime_reconcile_total",
            "controller_runtime_reconcile_time_seconds_count",
            "controller_runtime_max_concurrent_reconciles",
            "workqueue_adds_total",
            "workqueue_queue_duration_seconds_count",
            "workqueue_work_duration_seconds_count",
        ] {
            // An idle controller's counters are served at zero; it has timed nothing yet.
            let counted = total(&text, name) > 0.0;
            let declared = text.contains(&format!("# TYPE {name} ")) || name.ends_with("_count");
            assert!(
                counted || (idle && declared),
                "{process}: {name} is zero or missing:\n{text}"
            );
        }
        assert!(
            total(&text, "controller_runtime_max_concurrent_reconciles") > 0.0,
            "{process}: no controller declared:\n{text}"
        );
        for name in [
            "controller_runtime_reconcile_errors_total",
            "controller_runtime_active_workers",
        ] {
            assert!(
                text.contains(&format!("{name}{{controller=")),
                "{process}: no {name}:\n{text}"
            );
        }
        for name in ["workqueue_depth", "workqueue_retries_total"] {
            assert!(
                text.contains(&format!("{name}{{name=")),
                "{process}: no {name}:\n{text}"
            );
        }
        let leading = format!("leader_election_master_status{{name=\"{process}\"}}");
        assert_eq!(
            sample(&text, &leading),
            Some(1.0),
            "{process}: not leading:\n{text}"
        );
        for name in [
            "process_resident_memory_bytes",
            "process_open_fds",
            "process_max_fds",
        ] {
            assert!(
                sample(&text, name).is_some_and(|value| value > 0.0),
                "{process}: {name} is zero or missing"
            );
        }
        assert!(
            sample(&text, "process_cpu_seconds_total").is_some(),
            "{process}: no CPU time"
        );
    }
    Ok(())
}

/// Every resource of the cluster's group that capz-rs wrote (an accepted PUT) has a Normal
/// `Created` event naming it, on the object it belongs to; every resource of the cluster is named
/// by a `Deleted` event, its own or its resource group's; no event carries the client secret.
async fn every_change_is_an_event(
    environment: &Environment,
    namespace: &str,
    since: SystemTime,
    built: &[String],
) -> TestResult {
    let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups/{CLUSTER}");
    let written: BTreeSet<String> = environment
        .requests_since(since)
        .into_iter()
        .filter(|request| request.method == "PUT" && request.status < 300)
        .map(|request| request.path.to_ascii_lowercase())
        .filter(|path| path.starts_with(&group))
        .collect();
    let events = Api::<Event>::namespaced(environment.client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items;
    let noted = |reason: &str| -> Vec<String> {
        events
            .iter()
            .filter(|event| {
                event.type_.as_deref() == Some("Normal")
                    && event.reason.as_deref() == Some(reason)
                    && event
                        .reporting_controller
                        .as_deref()
                        .is_some_and(|who| who.starts_with("capz-"))
            })
            .filter_map(|event| event.note.as_deref().map(str::to_ascii_lowercase))
            .collect()
    };
    let created = noted("Created");
    let deleted = noted("Deleted");
    let names = |notes: &[String], id: &str| notes.iter().any(|note| note.ends_with(&format!(" {id}")));
    let unannounced: Vec<&String> = written.iter().filter(|id| !names(&created, id)).collect();
    assert!(
        unannounced.is_empty(),
        "written without a Created event: {unannounced:?}\nCreated events: {created:#?}"
    );
    let in_cluster: Vec<&String> = built.iter().filter(|id| id.starts_with(&group)).collect();
    let unmourned: Vec<&&String> = in_cluster
        .iter()
        .filter(|id| !names(&deleted, id) && !names(&deleted, &group))
        .collect();
    assert!(
        unmourned.is_empty(),
        "deleted without a Deleted event: {unmourned:?}\nDeleted events: {deleted:#?}"
    );
    assert!(
        names(&deleted, &group),
        "the resource group's deletion is not an event: {deleted:#?}"
    );
    for event in &events {
        let text = serde_json::to_string(event)?;
        assert!(
            !text.contains(DEFAULT_CLIENT_SECRET),
            "an event carries the client secret: {text}"
        );
    }
    eprintln!(
        "e2e: {} resources written, {} Created and {} Deleted events",
        written.len(),
        created.len(),
        deleted.len()
    );
    Ok(())
}

/// Deleting the Cluster releases every finalizer and leaves nothing capz-rs created in Azure.
async fn deletes_without_leftovers(environment: &Environment, namespace: &str) -> TestResult {
    let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups/{CLUSTER}");
    let created = environment.created_in_azure();
    assert!(
        created.iter().any(|id| id.starts_with(&group)),
        "nothing was created under {group}: {created:?}"
    );
    let took = environment
        .delete_cluster_without_leftovers(CLUSTER, namespace, CONVERGE)
        .await?;
    eprintln!(
        "e2e: the Cluster was deleted {:.1} s after the request",
        took.as_secs_f64()
    );
    Ok(())
}
