//! How much a cluster of Ready machines costs capz-rs: ARM calls per AzureMachine to reach Ready
//! and per steady-state resync, time from apply to AzureCluster Ready and to every machine Ready
//! (zero emulator latency), and each controller's peak RSS.
//!
//! The environment is the end-to-end tests' (clusterctl installs Cluster API and capz-rs, the
//! controllers run as this build's binaries), with a MachineDeployment whose bootstrap data comes
//! from a Secret (`dataSecretName`), so every machine gets its VM.
//!
//! `just bench-e2e --machines 100 --sync-period 20` (defaults: 20 machines, 20 s). With
//! `--timeline`, every ARM call up to AzureCluster Ready is listed with the time it arrived and was
//! answered (since the apply) and the controller that made it, to see where that time goes. With
//! `--private`, the cluster is laid out as the `private` flavor lays it out: its API server behind
//! an internal load balancer named in a private DNS zone, outbound load balancers for the control
//! plane and the nodes, and an Azure Bastion host.
//!
//! `just bench-e2e --available` measures instead how long the default flavor (one control plane,
//! two workers, its add-ons installed by ClusterResourceSets) takes from the apply to the Cluster
//! `Available`, its machines booting in the workload cluster simulator, on an emulator that
//! answers at once (no latency, `Retry-After: 0`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::Config;
use capz_e2e::bench::{self, Calls, per, total};
use capz_e2e::{Environment, TestResult, cluster_manifest, condition, service_principal_identity, wait_list};

const CLUSTER: &str = "bench";

struct Options {
    machines: u32,
    sync_period: u64,
    timeline: bool,
    available: bool,
    private: bool,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        machines: 20,
        sync_period: 20,
        timeline: false,
        available: false,
        private: false,
    };
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--machines" => {
                options.machines = value()?.parse().map_err(|err| format!("--machines: {err}"))?;
            }
            "--sync-period" => {
                options.sync_period = value()?.parse().map_err(|err| format!("--sync-period: {err}"))?;
            }
            "--timeline" => options.timeline = true,
            "--available" => options.available = true,
            "--private" => options.private = true,
            other => {
                return Err(format!(
                    "unexpected argument {other}; use --machines N --sync-period SECONDS [--timeline] [--private], or \
                     --available"
                ));
            }
        }
    }
    Ok(options)
}

/// The network of the `private` flavor, in the place of the default one.
const PRIVATE_NETWORK: &str = "  bastionSpec:
    azureBastion: {}
  networkSpec:
    apiServerLB:
      type: Internal
    controlPlaneOutboundLB:
      frontendIPsCount: 1
    nodeOutboundLB:
      frontendIPsCount: 1
";

fn manifest(namespace: &str, machines: u32, private: bool) -> String {
    let mut cluster = cluster_manifest(CLUSTER, CLUSTER);
    if private {
        cluster = cluster.replacen("  networkSpec:\n", PRIVATE_NETWORK, 1);
    }
    [
        cluster,
        service_principal_identity(CLUSTER, namespace),
        bench::workers_from_secret(CLUSTER, machines),
    ]
    .join("---\n")
}

/// What the emulator counted so far: requests per (method, resource type, status).
type Counts = BTreeMap<(String, String, u16), u64>;

/// ARM requests (to a resource type, not sign-ins or metadata) answered since `before`, by method.
fn arm_calls(environment: &Environment, before: &Counts) -> Calls {
    let mut calls = Calls::new();
    for ((method, resource_type, status), count) in environment.azure.emulator.counts() {
        let earlier = before
            .get(&(method.clone(), resource_type.clone(), status))
            .copied()
            .unwrap_or_default();
        if resource_type.contains('/') && count > earlier {
            *calls.entry(method).or_default() += usize::try_from(count - earlier).unwrap_or(usize::MAX);
        }
    }
    calls
}

/// Prints the ARM calls between `since` and `until`: arrival and answer in seconds after `since`,
/// the controller (from the user agent), method, status and path below the resource group.
fn print_timeline(environment: &Environment, since: SystemTime, until: SystemTime) {
    let offset = |time: SystemTime| time.duration_since(since).unwrap_or_default().as_secs_f64();
    println!("\nARM calls until AzureCluster Ready (s after apply: arrived, answered):");
    for request in environment.azure.emulator.requests() {
        if request.received < since
            || request.received > until
            || !request.path.starts_with("/subscriptions/")
        {
            continue;
        }
        let caller = request
            .user_agent
            .as_deref()
            // `capz-rs/<version> <controller>`
            .and_then(|agent| agent.split_whitespace().nth(1))
            .unwrap_or("-");
        let path = request
            .path
            .split_once("/providers/")
            .map_or(request.path.as_str(), |(_, rest)| rest);
        println!(
            "  {:>6.3} {:>6.3}  {caller:<28} {:<6} {} {path}",
            offset(request.received),
            offset(request.answered),
            request.method,
            request.status
        );
    }
}

async fn bench(options: &Options) -> TestResult {
    let sync_period = format!("--sync-period={}s", options.sync_period);
    let environment = Environment::start_with_args(
        |_| Config {
            retry_after_seconds: 1,
            ..Config::default()
        },
        &[],
        &[
            "capz-network",
            "capz-loadbalancer",
            "capz-privatedns",
            "capz-bastion",
            "capz-compute",
            "capz-identity",
        ]
        .map(|controller| (controller, sync_period.as_str())),
    )
    .await?;
    let client = environment.client.clone();
    let machines = options.machines;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        environment.create_identity_secret(&namespace).await?;
        let applied_at = Instant::now();
        let applied_clock = SystemTime::now();
        let start = environment.azure.emulator.counts();
        capz_harness::apply_yaml(&client, &namespace, &manifest(&namespace, machines, options.private)).await?;
        let clusters = environment.infrastructure("AzureCluster", &namespace).await?;
        wait_list(&clusters, "", "AzureCluster Ready", Duration::from_mins(5), |all| {
            all.iter().any(|cluster| cluster.data["status"]["ready"] == true)
        })
        .await?;
        let cluster_ready = applied_at.elapsed();
        let cluster_calls = arm_calls(&environment, &start);
        if options.timeline {
            print_timeline(&environment, applied_clock, SystemTime::now());
        }
        let machines_start = environment.azure.emulator.counts();
        let azure_machines = environment.infrastructure("AzureMachine", &namespace).await?;
        wait_list(&azure_machines, "", "every AzureMachine Ready", Duration::from_mins(15), |all| {
            all.len() == machines as usize
                && all
                    .iter()
                    .all(|machine| condition(machine, "Ready").is_some_and(|(status, _)| status == "True"))
        })
        .await?;
        let machines_ready = applied_at.elapsed();
        let machine_calls = arm_calls(&environment, &machines_start);

        // Steady state: let the controllers settle, then count what two full sync periods cost.
        let steady_start = bench::steady_state(Duration::from_secs(options.sync_period), 2, || {
            environment.azure.emulator.counts()
        })
        .await;
        let steady = arm_calls(&environment, &steady_start);
        let resources = environment.created_in_azure().len();

        let layout = if options.private { "private" } else { "default" };
        println!(
            "\n{machines} machines, {layout} cluster, sync period {} s, zero emulator latency",
            options.sync_period
        );
        println!(
            "apply -> AzureCluster Ready            {:>8.2} s   ({} ARM calls: {cluster_calls:?})",
            cluster_ready.as_secs_f64(),
            total(&cluster_calls)
        );
        println!(
            "apply -> every AzureMachine Ready      {:>8.2} s",
            machines_ready.as_secs_f64()
        );
        println!(
            "ARM calls per AzureMachine to Ready    {:>8.2}     ({machine_calls:?})",
            per(total(&machine_calls), u64::from(machines))
        );
        let writes = total(&steady) - steady.get("GET").copied().unwrap_or_default();
        println!(
            "steady state, per sync period          {:>8.2} reads, {} writes, over {resources} Azure resources ({:.2} reads per resource)",
            per(steady.get("GET").copied().unwrap_or_default(), 2),
            writes,
            per(steady.get("GET").copied().unwrap_or_default(), 2) / f64::from(u32::try_from(resources).unwrap_or(1).max(1))
        );
        environment.print_capz_memory();
        Ok(())
    })
    .await?
}

/// Apply to Available for the default flavor, with each step's time after the apply.
async fn available() -> TestResult {
    let environment = Environment::start(Config {
        retry_after_seconds: 0,
        ..Config::default()
    })
    .await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let applied_at = environment
            .create_cluster(CLUSTER, &namespace, 1, 2, true)
            .await?;
        environment
            .available(CLUSTER, &namespace, Duration::from_mins(5), applied_at)
            .await?;
        let took = applied_at.elapsed();
        let clusters = environment.infrastructure("AzureCluster", &namespace).await?;
        let ready_at = |object: &kube::api::DynamicObject, type_: &str| {
            object.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|condition| condition["type"] == type_)
                .and_then(|condition| condition["lastTransitionTime"].as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        let azure_cluster = clusters.get(CLUSTER).await?;
        println!(
            "\ndefault flavor (1 control plane, 2 workers), emulator with no latency and Retry-After: 0"
        );
        println!(
            "apply -> Cluster Available              {:>8.2} s",
            took.as_secs_f64()
        );
        println!(
            "AzureCluster Ready at                   {}",
            ready_at(&azure_cluster, "Ready")
        );
        for machine in environment
            .cluster_api("Machine", &namespace)
            .await?
            .list(&kube::api::ListParams::default())
            .await?
            .items
        {
            println!(
                "{:<40} Ready at {}",
                kube::ResourceExt::name_any(&machine),
                ready_at(&machine, "Ready")
            );
        }
        Ok(())
    })
    .await?
}

fn main() -> std::process::ExitCode {
    capz_e2e::bench_main("convergence", options, async |options| {
        if options.available {
            available().await
        } else {
            bench(&options).await
        }
    })
}
