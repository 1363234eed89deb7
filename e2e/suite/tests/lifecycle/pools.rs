//! MachinePools on scale sets: a cluster of the `machinepool` flavor converges (every instance a
//! Ready Node, the MachinePool's ready replicas its replicas), scales up and down with each delete
//! policy, rolls to a new Kubernetes version and image without more than one Node unavailable or
//! missing at any moment, each old Node cordoned (drained) before its instance goes, and is
//! deleted without leaving anything in Azure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use capz_e2e::{Environment, TestResult, condition, document, node_ready, summary, wait_list};
use futures_util::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;

use super::{CONVERGE, ROLLOUT, UPGRADE_TO};

/// The flavor's pool is `<cluster>-mp-0`.
fn pool_name(cluster: &str) -> String {
    format!("{cluster}-mp-0")
}

/// How a pool's Nodes stand at one moment.
#[derive(Debug, Default, Clone)]
struct Sample {
    /// Ready and schedulable Nodes.
    available: usize,
    /// Every Node of the pool, by name: whether it is cordoned.
    cordoned: BTreeMap<String, bool>,
}

/// The pool's Nodes (every Node but the control plane's).
async fn sample(nodes: &Api<Node>) -> TestResult<Sample> {
    Ok(Sample::of(&nodes.list(&ListParams::default()).await?.items))
}

impl Sample {
    fn of<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Self {
        let mut sample = Sample::default();
        for node in nodes {
            if node
                .labels()
                .contains_key("node-role.kubernetes.io/control-plane")
            {
                continue;
            }
            let cordoned = node
                .spec
                .as_ref()
                .and_then(|spec| spec.unschedulable)
                .unwrap_or(false);
            if node_ready(node).is_some_and(|ready| ready.status == "True") && !cordoned {
                sample.available += 1;
            }
            sample.cordoned.insert(node.name_any(), cordoned);
        }
        sample
    }
}

/// Records every state the pool's Nodes pass through, one [`Sample`] per change the API server's
/// watch reports, so a Node cordoned and deleted within a moment is still seen cordoned. A watch
/// that ends (or expires) is resumed from a fresh list.
async fn record(nodes: Api<Node>, samples: Arc<Mutex<Vec<Sample>>>) -> TestResult {
    loop {
        let list = nodes.list(&ListParams::default()).await?;
        let mut now: BTreeMap<String, Node> = list
            .items
            .into_iter()
            .map(|node| (node.name_any(), node))
            .collect();
        let push = |now: &BTreeMap<String, Node>| {
            samples
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Sample::of(now.values()));
        };
        push(&now);
        let version = list.metadata.resource_version.unwrap_or_default();
        let mut events = nodes.watch(&WatchParams::default(), &version).await?.boxed();
        while let Some(event) = events.try_next().await? {
            match event {
                WatchEvent::Added(node) | WatchEvent::Modified(node) => {
                    now.insert(node.name_any(), node);
                }
                WatchEvent::Deleted(node) => {
                    now.remove(&node.name_any());
                }
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(_) => break,
            }
            push(&now);
        }
    }
}

/// Waits until the object `name` of `api` is as `done` says, for at most [`ROLLOUT`].
async fn until(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    done: impl Fn(&DynamicObject) -> bool,
) -> TestResult {
    wait_list(api, "", what, ROLLOUT, |all| {
        all.iter().any(|object| object.name_any() == name && done(object))
    })
    .await?;
    Ok(())
}

/// Waits until the MachinePool has `replicas` ready replicas and as many Ready, schedulable Nodes,
/// and its AzureMachinePool `replicas` instances.
async fn pool_converges(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    replicas: usize,
    nodes: &Api<Node>,
) -> TestResult {
    let converged = converge(environment, namespace, cluster, replicas, nodes).await;
    let Err(error) = converged else {
        return Ok(());
    };
    let pool = pool_name(cluster);
    Err(format!("{error}\n{}", pool_report(environment, namespace, &pool).await).into())
}

async fn converge(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    replicas: usize,
    nodes: &Api<Node>,
) -> TestResult {
    let pool = pool_name(cluster);
    let started = Instant::now();
    let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
    let what = format!("MachinePool {pool} with {replicas} ready replicas");
    until(&machine_pools, &pool, &what, |object| {
        object.data["status"]["readyReplicas"].as_u64() == Some(replicas as u64)
            && object.data["status"]["replicas"].as_u64() == Some(replicas as u64)
    })
    .await?;
    let azure_pools = environment.infrastructure("AzureMachinePool", namespace).await?;
    let what = format!("AzureMachinePool {pool} with {replicas} instances, Ready");
    until(&azure_pools, &pool, &what, |object| {
        object.data["spec"]["providerIDList"].as_array().map(Vec::len) == Some(replicas)
            && condition(object, "Ready").is_some_and(|(status, _)| status == "True")
    })
    .await?;
    loop {
        let now = sample(nodes).await?;
        if now.available == replicas && now.cordoned.len() == replicas {
            break;
        }
        if started.elapsed() > ROLLOUT {
            return Err(format!("pool {pool}: {now:?}, wanted {replicas} Ready Nodes").into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "e2e: pool {pool} holds {replicas} Ready Nodes after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Where a pool that did not converge stands: its MachinePool's counts and conditions, its
/// AzureMachinePool and members with theirs, what capz-vmss logged last and what the workload
/// simulator logged of the pool's machines.
async fn pool_report(environment: &Environment, namespace: &str, pool: &str) -> String {
    let mut report = String::new();
    let selector = format!("azuremachinepool.infrastructure.cluster.x-k8s.io/machine-pool={pool}");
    let kinds = [
        ("MachinePool", String::new()),
        ("AzureMachinePool", String::new()),
        ("AzureMachinePoolMachine", selector),
    ];
    for (kind, selector) in kinds {
        let api = if kind == "MachinePool" {
            environment.cluster_api(kind, namespace).await
        } else {
            environment.infrastructure(kind, namespace).await
        };
        let listed = match api {
            Ok(api) => api
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match listed {
            Ok(list) => {
                for object in &list.items {
                    let status = &object.data["status"];
                    let _ = writeln!(
                        report,
                        "{kind} {}\n  spec.providerIDList {}; status replicas {} ready {} readyReplicas {}",
                        summary(object),
                        object.data["spec"]["providerIDList"],
                        status["replicas"],
                        status["ready"],
                        status["readyReplicas"],
                    );
                }
            }
            Err(error) => {
                let _ = writeln!(report, "{kind}: cannot list: {error}");
            }
        }
    }
    // What capz-vmss did last, and how the pool's machines fared joining their cluster.
    for (process, only_of_pool) in [("capz-vmss", false), ("workload-simulator", true)] {
        match environment.log_of(process) {
            Ok(log) => {
                let lines: Vec<&str> = log
                    .lines()
                    .filter(|line| !only_of_pool || line.contains(pool))
                    .collect();
                let _ = writeln!(report, "{process} logged last:");
                for line in &lines[lines.len().saturating_sub(30)..] {
                    let _ = writeln!(report, "  {}", line.chars().take(600).collect::<String>());
                }
            }
            Err(error) => {
                let _ = writeln!(report, "{process}'s log: {error}");
            }
        }
    }
    report
}

async fn patch_machine_pool(
    environment: &Environment,
    namespace: &str,
    pool: &str,
    patch: serde_json::Value,
) -> TestResult {
    environment
        .cluster_api("MachinePool", namespace)
        .await?
        .patch(pool, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    Ok(())
}

async fn delete_policy(environment: &Environment, namespace: &str, pool: &str, policy: &str) -> TestResult {
    environment
        .infrastructure("AzureMachinePool", namespace)
        .await?
        .patch(
            pool,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"strategy": {"rollingUpdate": {"deletePolicy": policy}}}})),
        )
        .await?;
    Ok(())
}

/// The pool's instances by creation, oldest first, as their AzureMachinePoolMachines record them.
async fn members_by_age(environment: &Environment, namespace: &str, pool: &str) -> TestResult<Vec<String>> {
    let members = environment
        .infrastructure("AzureMachinePoolMachine", namespace)
        .await?
        .list(&ListParams::default().labels(&format!(
            "azuremachinepool.infrastructure.cluster.x-k8s.io/machine-pool={pool}"
        )))
        .await?
        .items;
    let mut aged: Vec<(String, String)> = members
        .iter()
        .filter(|member| member.metadata.deletion_timestamp.is_none())
        .map(|member| {
            let created = member
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|time| time.0.to_string())
                .unwrap_or_default();
            (
                created,
                member.data["spec"]["providerID"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    aged.sort();
    Ok(aged.into_iter().map(|(_, id)| id).collect())
}

/// A pool of the `machinepool` flavor: converge at 3, scale with each delete policy, roll to a new
/// version, delete. `flexible` makes its scale set Flexible.
pub(crate) async fn machine_pool(environment: &Environment, namespace: &str, flexible: bool) -> TestResult {
    let cluster = if flexible { "flexpool" } else { "pool" };
    let pool = pool_name(cluster);
    let applied_at = environment
        .create_cluster_of(Some("machinepool"), cluster, namespace, (1, 3), true, |objects| {
            if flexible {
                document(objects, "AzureMachinePool")?.data["spec"]["orchestrationMode"] = json!("Flexible");
            }
            Ok(())
        })
        .await?;
    environment
        .available(cluster, namespace, CONVERGE, applied_at)
        .await?;
    let nodes = Api::<Node>::all(environment.workload_client(cluster, namespace).await?);
    pool_converges(environment, namespace, cluster, 3, &nodes).await?;

    quiet(environment, namespace, &pool).await?;
    if !flexible {
        unready_extra_goes_first(environment, namespace, cluster, &nodes).await?;
    }
    if flexible {
        patch_machine_pool(environment, namespace, &pool, json!({"spec": {"replicas": 5}})).await?;
        pool_converges(environment, namespace, cluster, 5, &nodes).await?;
    } else {
        scale_with_each_policy(environment, namespace, cluster, &nodes).await?;
    }
    rolling_upgrade(environment, namespace, cluster, &nodes).await?;
    let took = environment
        .delete_cluster_without_leftovers(cluster, namespace, CONVERGE)
        .await?;
    eprintln!(
        "e2e: cluster {cluster} and its pool deleted in {:.1} s",
        took.as_secs_f64()
    );
    Ok(())
}

/// A converged pool is quiet: for 10 s neither the AzureMachinePool nor its machines are written
/// (no reordered `providerIDList`, no status flapping).
async fn quiet(environment: &Environment, namespace: &str, pool: &str) -> TestResult {
    let kinds = ["AzureMachinePool", "AzureMachinePoolMachine"];
    let before = environment.resource_versions(namespace, &kinds).await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = environment.resource_versions(namespace, &kinds).await?;
    assert_eq!(before, after, "pool {pool} was written while converged");
    Ok(())
}

/// CAPZ #6479: scale-down counted only Ready instances, so an instance that never became Ready
/// stayed forever. The pool grows 3 → 4, the new instance is powered off through ARM (it never
/// gives a Ready Node), and the pool goes back to 3 under the `Oldest` policy: the unready new
/// instance goes, not the oldest Ready one, and the three Ready Nodes stay.
async fn unready_extra_goes_first(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    nodes: &Api<Node>,
) -> TestResult {
    let pool = pool_name(cluster);
    let before = members_by_age(environment, namespace, &pool).await?;
    delete_policy(environment, namespace, &pool, "Oldest").await?;
    patch_machine_pool(environment, namespace, &pool, json!({"spec": {"replicas": 4}})).await?;
    let members = environment
        .infrastructure("AzureMachinePoolMachine", namespace)
        .await?;
    let selector = format!("azuremachinepool.infrastructure.cluster.x-k8s.io/machine-pool={pool}");
    let listed = wait_list(
        &members,
        &selector,
        "the fourth instance's member",
        ROLLOUT,
        |all| all.len() == 4,
    )
    .await?;
    let extra = listed
        .iter()
        .map(|member| member.data["spec"]["providerID"].as_str().unwrap_or_default())
        .find(|id| !before.iter().any(|old| old == id))
        .ok_or("a member for the new instance")?
        .to_owned();
    let instance = extra.trim_start_matches("azure://");
    let status = environment
        .arm("POST", &format!("{instance}/powerOff?api-version=2024-07-01"))
        .await?;
    assert!(matches!(status, 200 | 202), "powering off {instance}: {status}");
    // The pool now holds four instances, of which the new one is not Ready.
    let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
    until(&machine_pools, &pool, "4 replicas, 3 of them ready", |object| {
        object.data["status"]["replicas"].as_u64() == Some(4)
            && object.data["status"]["readyReplicas"].as_u64() == Some(3)
    })
    .await?;
    wait_list(
        &members,
        &selector,
        "the new instance's member not ready",
        ROLLOUT,
        |all| {
            all.iter().any(|member| {
                member.data["spec"]["providerID"] == extra.as_str() && member.data["status"]["ready"] == false
            })
        },
    )
    .await?;
    // Its Node, if it registered before the power went, is no longer Ready.
    let started = Instant::now();
    while nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .any(|node| {
            node.spec
                .as_ref()
                .and_then(|spec| spec.provider_id.as_deref())
                .is_some_and(|id| id.eq_ignore_ascii_case(&extra))
                && node_ready(node).is_some_and(|ready| ready.status == "True")
        })
    {
        if started.elapsed() > ROLLOUT {
            return Err(format!("the Node of {extra} stayed Ready after its power went").into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    patch_machine_pool(environment, namespace, &pool, json!({"spec": {"replicas": 3}})).await?;
    pool_converges(environment, namespace, cluster, 3, nodes).await?;
    let after = members_by_age(environment, namespace, &pool).await?;
    assert_eq!(
        after, before,
        "the unready extra instance went and the Ready ones stayed"
    );
    assert!(
        environment.azure_resource(instance).is_none(),
        "the unready instance {instance} is deleted in Azure"
    );
    eprintln!("e2e: pool {pool} removed its unready extra instance first");
    Ok(())
}

/// 3 → 5 (new instances), then down one at a time: `Newest` removes the newest, `Oldest` the
/// oldest, `Random` one of them; then back to 5 for the upgrade.
async fn scale_with_each_policy(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    nodes: &Api<Node>,
) -> TestResult {
    let pool = pool_name(cluster);
    patch_machine_pool(environment, namespace, &pool, json!({"spec": {"replicas": 5}})).await?;
    pool_converges(environment, namespace, cluster, 5, nodes).await?;
    for (policy, replicas) in [("Newest", 4), ("Oldest", 3), ("Random", 2)] {
        let before = members_by_age(environment, namespace, &pool).await?;
        delete_policy(environment, namespace, &pool, policy).await?;
        patch_machine_pool(
            environment,
            namespace,
            &pool,
            json!({"spec": {"replicas": replicas}}),
        )
        .await?;
        pool_converges(environment, namespace, cluster, replicas, nodes).await?;
        let after = members_by_age(environment, namespace, &pool).await?;
        let gone: Vec<&String> = before.iter().filter(|id| !after.contains(id)).collect();
        assert_eq!(gone.len(), 1, "{policy}: {gone:?}");
        assert!(
            after.iter().all(|id| before.contains(id)),
            "{policy}: a new instance came: {after:?}"
        );
        match policy {
            "Newest" => assert_eq!(gone[0], before.last().unwrap_or(&String::new()), "Newest"),
            "Oldest" => assert_eq!(gone[0], before.first().unwrap_or(&String::new()), "Oldest"),
            _ => {}
        }
    }
    patch_machine_pool(environment, namespace, &pool, json!({"spec": {"replicas": 5}})).await?;
    pool_converges(environment, namespace, cluster, 5, nodes).await
}

/// The pool of 5 moves to a new Kubernetes version (and with it the reference image): watched
/// throughout, never fewer than 4 Ready, schedulable Nodes (`maxUnavailable: 1`); every Node that
/// goes was cordoned first; in the end every instance is new and runs the new model.
async fn rolling_upgrade(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
    nodes: &Api<Node>,
) -> TestResult {
    let pool = pool_name(cluster);
    let old = members_by_age(environment, namespace, &pool).await?;
    let old_nodes: BTreeSet<String> = sample(nodes).await?.cordoned.into_keys().collect();
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let recording = tokio::spawn(record(nodes.clone(), samples.clone()));
    while samples.lock().unwrap_or_else(PoisonError::into_inner).is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    patch_machine_pool(
        environment,
        namespace,
        &pool,
        json!({"spec": {"template": {"spec": {"version": UPGRADE_TO}}}}),
    )
    .await?;
    let azure_pools = environment.infrastructure("AzureMachinePool", namespace).await?;
    let what = format!("every instance of {pool} on the new model");
    let done = until(&azure_pools, &pool, &what, |object| {
        object.data["status"]["instances"]
            .as_array()
            .is_some_and(|instances| {
                instances.len() == 5
                    && instances.iter().all(|instance| {
                        let id = instance["providerID"].as_str().unwrap_or_default();
                        instance["latestModelApplied"] == true && !old.iter().any(|old| old == id)
                    })
            })
    })
    .await;
    let converged = match done {
        Ok(()) => pool_converges(environment, namespace, cluster, 5, nodes).await,
        Err(error) => Err(error),
    };
    recording.abort();
    if let Ok(Err(error)) = recording.await {
        return Err(format!("watching the pool's Nodes: {error}").into());
    }
    converged?;
    let samples = samples.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let fewest = samples.iter().map(|sample| sample.available).min().unwrap_or(0);
    assert!(
        fewest >= 4,
        "at some moment only {fewest} of 5 Nodes were Ready and schedulable ({} states watched)",
        samples.len()
    );
    for node in &old_nodes {
        let seen_cordoned = samples
            .iter()
            .any(|sample| sample.cordoned.get(node) == Some(&true));
        let still_there = samples
            .last()
            .is_some_and(|sample| sample.cordoned.contains_key(node));
        assert!(!still_there, "old Node {node} is still there");
        assert!(seen_cordoned, "old Node {node} went without being cordoned first");
    }
    let nodes_now = sample(nodes).await?;
    let versions: BTreeSet<String> = nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|node| nodes_now.cordoned.contains_key(&node.name_any()))
        .filter_map(|node| {
            node.status
                .as_ref()?
                .node_info
                .as_ref()
                .map(|info| info.kubelet_version.clone())
        })
        .collect();
    assert_eq!(
        versions,
        BTreeSet::from([UPGRADE_TO.to_owned()]),
        "the pool's Nodes run the new version"
    );
    eprintln!(
        "e2e: pool {pool} rolled to {UPGRADE_TO} in {:.1} s; at least {fewest} of 5 Nodes available throughout ({} states watched)",
        started.elapsed().as_secs_f64(),
        samples.len()
    );
    Ok(())
}
