//! What AKS managed clusters cost capz-aks: `--clusters` clusters of the `aks` flavor, each with a
//! third pool beside the flavor's two (pool0 System, pool1 and pool2 User) of `--nodes` nodes
//! each, in an environment with only the aks controller and the webhooks (as the `aks` case of
//! `tests/controllers.rs` runs), on an emulator that answers at once (no latency,
//! `Retry-After: 0`); the pools' instances boot in the workload cluster simulator.
//!
//! Ready is every AzureManagedControlPlane ready and initialized and every MachinePool with all its
//! replicas ready (their Nodes Ready in the managed cluster). The bench counts capz-aks's ARM calls
//! (by its user agent) from the apply to Ready, by method; lets it settle for one sync period
//! (`--sync-period`), then counts its calls over two more; last, the peak resident set of each
//! capz-rs process.
//!
//! `just bench-aks` (defaults: `--clusters 1 --nodes 2 --sync-period 20`); `just bench-aks
//! --clusters 50 --sync-period 60` for the memory of fifty (at 20 s, fifty clusters' resyncs read
//! more than Azure's per-principal read limit, which the emulator keeps, lets through).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::{Config, LoggedRequest};
use capz_e2e::bench::{self, Calls, by_method, count, per, total};
use capz_e2e::{Environment, TestResult, wait_list};
use kube::api::DynamicObject;

/// The aks controller's process, and its user agent towards Azure.
const AKS: &str = "capz-aks";

/// A patch AKS offers of the Kubernetes minor the suite runs.
const AKS_VERSION: &str = "v1.33.5";

struct Options {
    clusters: u32,
    nodes: u32,
    sync_period: u64,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        clusters: 1,
        nodes: 2,
        sync_period: 20,
    };
    for (flag, value) in capz_e2e::bench_flags()? {
        match flag.as_str() {
            "--clusters" => options.clusters = value.max(1),
            "--nodes" => options.nodes = value.max(1),
            "--sync-period" => options.sync_period = u64::from(value.max(1)),
            other => {
                return Err(format!(
                    "unexpected argument {other}; use --clusters N --nodes N --sync-period SECONDS"
                ));
            }
        }
    }
    Ok(options)
}

fn cluster_name(index: u32) -> String {
    format!("aks-{index}")
}

/// The `aks` flavor's objects for the cluster `name` with `nodes` nodes per pool, on a version AKS
/// offers, and a copy of its User pool (MachinePool and AzureManagedMachinePool) as `pool2`.
async fn cluster_objects(
    environment: &Environment,
    name: &str,
    namespace: &str,
    nodes: u32,
) -> TestResult<Vec<DynamicObject>> {
    let generated = environment
        .generate_flavor(Some("aks"), name, namespace, nodes, &[])
        .await?
        .replace(
            &format!("version: {}", capz_e2e::KUBERNETES_VERSION),
            &format!("version: {AKS_VERSION}"),
        );
    let mut objects = capz_e2e::manifest(&generated)?;
    let user_pool = format!("{name}-pool1");
    let copies: Vec<DynamicObject> = objects
        .iter()
        .filter(|object| object.metadata.name.as_deref() == Some(user_pool.as_str()))
        .map(|object| {
            let copy = serde_json::to_string(object)?
                .replace(&format!("\"{user_pool}\""), &format!("\"{name}-pool2\""))
                .replace("\"pool1\"", "\"pool2\"");
            serde_json::from_str(&copy)
        })
        .collect::<Result<_, _>>()?;
    if copies.len() != 2 {
        return Err(
            format!("the aks flavor has no MachinePool and AzureManagedMachinePool {user_pool}").into(),
        );
    }
    objects.extend(copies);
    Ok(objects)
}

/// The ARM requests capz-aks made since `since` (up to `until`, when given).
fn aks_requests(
    environment: &Environment,
    since: SystemTime,
    until: Option<SystemTime>,
) -> Vec<LoggedRequest> {
    environment
        .requests_since(since)
        .into_iter()
        .filter(|request| {
            request
                .user_agent
                .as_deref()
                .is_some_and(|agent| agent.contains(AKS))
                && request.path.starts_with("/subscriptions/")
                && until.is_none_or(|until| request.answered <= until)
        })
        .collect()
}

/// What a request addresses, without names: the types (and action) of its path below the last
/// provider, such as `managedClusters/agentPools` or `managedClusters/listClusterAdminCredential`;
/// `resourceGroups` for a group.
fn addressed(path: &str) -> String {
    let path = path.split('?').next().unwrap_or_default();
    match path.rsplit_once("/providers/") {
        Some((_, typed)) => typed.split('/').skip(1).step_by(2).collect::<Vec<_>>().join("/"),
        None => "resourceGroups".to_owned(),
    }
}

/// `requests` counted by method and what they address.
fn by_target(requests: &[LoggedRequest]) -> BTreeMap<(String, String), usize> {
    let mut calls = BTreeMap::new();
    for request in requests {
        *calls
            .entry((request.method.clone(), addressed(&request.path)))
            .or_default() += 1;
    }
    calls
}

/// Waits until every control plane is ready and initialized; then until every MachinePool has
/// all its replicas ready. Returns how long each took after `applied_at`.
async fn ready(
    environment: &Environment,
    namespace: &str,
    options: &Options,
    applied_at: Instant,
) -> TestResult<(Duration, Duration)> {
    let clusters = options.clusters as usize;
    environment
        .managed_control_planes_ready(namespace, clusters, Duration::from_mins(30))
        .await?;
    let planes_ready = applied_at.elapsed();
    let pools = environment.cluster_api("MachinePool", namespace).await?;
    let nodes = u64::from(options.nodes);
    wait_list(
        &pools,
        "",
        &format!("{} MachinePools with {nodes} ready replicas", 3 * clusters),
        Duration::from_mins(30),
        |all| {
            all.len() == 3 * clusters
                && all
                    .iter()
                    .all(|pool| pool.data["status"]["readyReplicas"].as_u64() == Some(nodes))
        },
    )
    .await?;
    Ok((planes_ready, applied_at.elapsed()))
}

async fn bench(options: &Options) -> TestResult {
    let sync_period = format!("--sync-period={}s", options.sync_period);
    let environment = Environment::start_with_controllers_and_args(
        Config {
            retry_after_seconds: 0,
            request_log_size: 1_000_000,
            ..Config::default()
        },
        &["aks", "webhooks"],
        &[(AKS, sync_period.as_str())],
    )
    .await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        environment.create_identity_secret(&namespace).await?;
        let mut objects = Vec::new();
        for index in 0..options.clusters {
            objects.extend(
                cluster_objects(&environment, &cluster_name(index), &namespace, options.nodes).await?,
            );
        }
        let since = SystemTime::now();
        let applied_at = Instant::now();
        environment.apply(&namespace, &objects).await?;
        let (planes_ready, all_ready) = ready(&environment, &namespace, options, applied_at).await?;
        let to_ready = aks_requests(&environment, since, Some(SystemTime::now()));

        // Steady state: let the controller settle, then count two of its sync periods.
        let steady_since =
            bench::steady_state(Duration::from_secs(options.sync_period), 2, SystemTime::now).await;
        let steady = aks_requests(&environment, steady_since, None);

        report(options, (planes_ready, all_ready), &to_ready, &steady);
        environment.print_capz_memory();
        Ok(())
    })
    .await?
}

fn report(
    options: &Options,
    (planes_ready, all_ready): (Duration, Duration),
    to_ready: &[LoggedRequest],
    steady: &[LoggedRequest],
) {
    let Options {
        clusters,
        nodes,
        sync_period,
    } = *options;
    println!(
        "\n{clusters} AKS cluster(s) of 3 pools (1 System, 2 User) x {nodes} nodes, capz-aks sync period \
         {sync_period} s, emulator with no latency"
    );
    println!(
        "{:<44} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "capz-aks ARM calls", "GET", "PUT", "POST", "other", "total"
    );
    let row = |what: &str, calls: &Calls, of: u64| {
        let total = total(calls);
        let (get, put, post) = (count(calls, "GET"), count(calls, "PUT"), count(calls, "POST"));
        println!(
            "{what:<44} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            per(get, of),
            per(put, of),
            per(post, of),
            per(total - get - put - post, of),
            per(total, of)
        );
    };
    row(
        "apply -> Ready, per cluster",
        &by_method(to_ready),
        u64::from(clusters),
    );
    row("steady state, per sync period", &by_method(steady), 2);
    row(
        "steady state, per sync period and cluster",
        &by_method(steady),
        2 * u64::from(clusters),
    );
    println!(
        "{:<44} {:>8.2} s",
        "apply -> every control plane ready",
        planes_ready.as_secs_f64()
    );
    println!(
        "{:<44} {:>8.2} s",
        "apply -> every pool's replicas ready",
        all_ready.as_secs_f64()
    );
    for (what, requests) in [
        ("apply -> Ready", to_ready),
        ("steady state, two sync periods", steady),
    ] {
        println!("{what}, calls by what they address (all clusters):");
        for ((method, target), count) in by_target(requests) {
            println!("  {method:<6} {target:<56} {count:>6}");
        }
    }
}

fn main() -> std::process::ExitCode {
    capz_e2e::bench_main("aks", options, async |options| bench(&options).await)
}
