//! What MachinePools cost capz-rs: one cluster of the `machinepool` flavor with `--pools` pools
//! of `--instances` instances each, whose machines boot in the workload cluster simulator, on an
//! emulator that answers at once (no latency, `Retry-After: 0`).
//!
//! Once every pool's Nodes are Ready and the controllers settled, the bench counts the ARM calls
//! of each pool's scale set (its path) over two sync periods of capz-vmss (`--sync-period`), then
//! grows the first pool by `--scale-out` instances and reports the time from the MachinePool's
//! new replicas to every new Node Ready and the ARM calls that took. Last, each capz-rs process's
//! peak resident set.
//!
//! `just bench-pools` (defaults: `--pools 2 --instances 100 --scale-out 10 --sync-period 20`);
//! `just bench-pools --pools 20 --instances 50` for 1,000 instances.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::Config;
use capz_e2e::bench::{self, per, total};
use capz_e2e::{Environment, TestResult, node_ready, wait_list};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

const CLUSTER: &str = "bench";

struct Options {
    pools: u32,
    instances: u32,
    scale_out: u32,
    sync_period: u64,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        pools: 2,
        instances: 100,
        scale_out: 10,
        sync_period: 20,
    };
    for (flag, value) in capz_e2e::bench_flags()? {
        match flag.as_str() {
            "--pools" => options.pools = value.max(1),
            "--instances" => options.instances = value,
            "--scale-out" => options.scale_out = value,
            "--sync-period" => options.sync_period = u64::from(value.max(1)),
            other => {
                return Err(format!(
                    "unexpected argument {other}; use --pools N --instances N --scale-out N --sync-period SECONDS"
                ));
            }
        }
    }
    Ok(options)
}

fn pool_name(index: u32) -> String {
    format!("{CLUSTER}-mp-{index}")
}

/// Copies of the flavor's pool (its MachinePool, AzureMachinePool and KubeadmConfig among
/// `objects`) named `<cluster>-mp-1` up to `pools - 1`.
fn more_pools(objects: &[DynamicObject], pools: u32) -> TestResult<Vec<DynamicObject>> {
    let first = pool_name(0);
    let originals: Vec<String> = objects
        .iter()
        .filter(|object| object.metadata.name.as_deref() == Some(first.as_str()))
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    let mut copies = Vec::new();
    for index in 1..pools {
        for original in &originals {
            let copy = original.replace(&format!("\"{first}"), &format!("\"{}", pool_name(index)));
            copies.push(serde_json::from_str(&copy)?);
        }
    }
    Ok(copies)
}

/// The calls the emulator answered since `since` to the scale set `pool` and its instances, by
/// method.
fn pool_calls(environment: &Environment, since: SystemTime, pool: &str) -> BTreeMap<String, usize> {
    let set = format!("/virtualmachinescalesets/{pool}").to_ascii_lowercase();
    let mut calls = BTreeMap::new();
    for request in environment.requests_since(since) {
        let path = request.path.to_ascii_lowercase();
        let ours = path
            .find(&set)
            .is_some_and(|at| matches!(path.as_bytes().get(at + set.len()), None | Some(b'/' | b'?')));
        if ours {
            *calls.entry(request.method.clone()).or_default() += 1;
        }
    }
    calls
}

/// How many of the workload cluster's Nodes belong to `pool`'s set and are Ready.
async fn ready_nodes(nodes: &Api<Node>, pool: &str) -> TestResult<usize> {
    let set = format!("/virtualmachinescalesets/{pool}/").to_ascii_lowercase();
    Ok(nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|node| {
            node.spec
                .as_ref()
                .and_then(|spec| spec.provider_id.as_deref())
                .is_some_and(|id| id.to_ascii_lowercase().contains(&set))
                && node_ready(node).is_some_and(|ready| ready.status == "True")
        })
        .count())
}

/// Waits until every MachinePool has `replicas` ready replicas.
async fn pools_ready(environment: &Environment, namespace: &str, replicas: u32, pools: u32) -> TestResult {
    let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
    wait_list(
        &machine_pools,
        "",
        &format!("{pools} MachinePools with {replicas} ready replicas"),
        Duration::from_mins(30),
        |all| {
            all.len() == pools as usize
                && all
                    .iter()
                    .all(|pool| pool.data["status"]["readyReplicas"].as_u64() == Some(u64::from(replicas)))
        },
    )
    .await?;
    Ok(())
}

async fn bench(options: &Options) -> TestResult {
    let sync_period = format!("--sync-period={}s", options.sync_period);
    let environment = Environment::start_with_args(
        |_| Config {
            retry_after_seconds: 0,
            request_log_size: 1_000_000,
            ..Config::default()
        },
        &[],
        &[("capz-vmss", sync_period.as_str())],
    )
    .await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let pools = options.pools;
        let instances = options.instances;
        let mut copies = Vec::new();
        let applied_at = environment
            .create_cluster_of(
                Some("machinepool"),
                CLUSTER,
                &namespace,
                (1, instances),
                true,
                |objects| {
                    copies = more_pools(objects, pools)?;
                    Ok(())
                },
            )
            .await?;
        environment.apply(&namespace, &copies).await?;
        environment
            .available(CLUSTER, &namespace, Duration::from_mins(10), applied_at)
            .await?;
        pools_ready(&environment, &namespace, instances, pools).await?;
        let converged = applied_at.elapsed();

        // Steady state: let the controllers settle, then count two sync periods of capz-vmss.
        let steady_since =
            bench::steady_state(Duration::from_secs(options.sync_period), 2, SystemTime::now).await;
        let steady: Vec<BTreeMap<String, usize>> = (0..pools)
            .map(|index| pool_calls(&environment, steady_since, &pool_name(index)))
            .collect();

        let scale_out = scale_out(&environment, &namespace, options).await?;
        report(options, converged, &steady, &scale_out);
        environment.print_capz_memory();
        Ok(())
    })
    .await?
}

/// What growing the first pool cost.
struct ScaleOut {
    /// From the MachinePool's new replicas until every new Node is Ready.
    nodes_ready: Duration,
    /// Until the MachinePool counts them ready.
    pool_ready: Duration,
    calls: BTreeMap<String, usize>,
}

/// Grows the first pool by `--scale-out` instances and waits until their Nodes are Ready.
async fn scale_out(environment: &Environment, namespace: &str, options: &Options) -> TestResult<ScaleOut> {
    let nodes = Api::<Node>::all(environment.workload_client(CLUSTER, namespace).await?);
    let first = pool_name(0);
    let grown = options.instances + options.scale_out;
    let since = SystemTime::now();
    let scaled_at = Instant::now();
    let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
    machine_pools
        .patch(
            &first,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": grown}})),
        )
        .await?;
    while ready_nodes(&nodes, &first).await? < grown as usize {
        if scaled_at.elapsed() > Duration::from_mins(10) {
            return Err(format!("{first}: fewer than {grown} Ready Nodes after 10 minutes").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let nodes_ready = scaled_at.elapsed();
    wait_list(
        &machine_pools,
        "",
        "the grown pool ready",
        Duration::from_mins(10),
        |all| {
            all.iter().any(|pool| {
                pool.metadata.name.as_deref() == Some(first.as_str())
                    && pool.data["status"]["readyReplicas"].as_u64() == Some(u64::from(grown))
            })
        },
    )
    .await?;
    let pool_ready = scaled_at.elapsed();
    // The passes that follow the last Node (its member's status) count too.
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(ScaleOut {
        nodes_ready,
        pool_ready,
        calls: pool_calls(environment, since, &first),
    })
}

fn report(options: &Options, converged: Duration, steady: &[BTreeMap<String, usize>], scale_out: &ScaleOut) {
    let Options {
        pools,
        instances,
        scale_out: added,
        sync_period,
    } = *options;
    println!(
        "\n{pools} pool(s) of {instances} instances (Uniform), capz-vmss sync period {sync_period} s, emulator with no latency"
    );
    println!(
        "apply -> every pool's Nodes Ready       {:>8.2} s",
        converged.as_secs_f64()
    );
    println!("steady state, ARM calls per pool per sync period (two periods counted):");
    for (index, calls) in steady.iter().enumerate() {
        let reads = calls.get("GET").copied().unwrap_or_default();
        println!(
            "  {:<16} {:>5.1} reads, {} writes   {calls:?}",
            pool_name(u32::try_from(index).unwrap_or_default()),
            per(reads, 2),
            total(calls) - reads
        );
    }
    println!(
        "scale-out {instances} -> {}: replicas -> every Node Ready {:>6.2} s, -> MachinePool ready {:.2} s",
        instances + added,
        scale_out.nodes_ready.as_secs_f64(),
        scale_out.pool_ready.as_secs_f64()
    );
    println!(
        "  ARM calls of the scale-out           {:>8} {:?}",
        total(&scale_out.calls),
        scale_out.calls
    );
}

fn main() -> std::process::ExitCode {
    capz_e2e::bench_main("pools", options, async |options| bench(&options).await)
}
