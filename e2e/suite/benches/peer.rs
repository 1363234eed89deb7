//! capz-rs and CAPZ side by side: the same cluster applied to a management plane running capz-rs
//! and to one running CAPZ with the Azure Service Operator (ASO) it drives, each against an ARM
//! emulator of its own with no latency, one after the other on the same machine.
//!
//! The cluster is `bench-e2e`'s: the default flavor's AzureCluster (network, NAT gateway, API
//! server load balancer) and a MachineDeployment of `--machines` machines whose bootstrap data a
//! Secret gives, so every machine gets its VM without a control plane to wait for.
//!
//! Per side and run (`--runs`, 3 by default; the medians are printed): time from the apply to
//! AzureCluster Ready, to the first VM created in Azure, to the last, and to every AzureMachine
//! Ready; ARM calls from the apply until then, by method and per machine (sign-ins apart); the
//! Kubernetes API calls the provider's processes made (from the API server's audit log) and
//! their reconciles (from their `controller_runtime_reconcile_total`); each process's peak RSS
//! and CPU seconds. Every run uses each implementation's defaults (sync period 10 minutes for
//! both, ASO's own resync an hour). The last run then counts ARM calls in the steady state over
//! `--default-window` seconds (600, one default sync period). One more run per side with every
//! controller's sync period set to `--sync-period` (60 s; ASO's `AZURE_SYNC_PERIOD` too) counts
//! the steady state over two of those periods.
//!
//! `just bench-peer --machines 10` (`just peer-bins` builds CAPZ and ASO first).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::config::DEFAULT_CLIENT_SECRET;
use arm_emulator::{Config, LoggedRequest};
use capz_e2e::bench::{self, Management, Side, caller, process_cpu_seconds, total, workers_from_secret};
use capz_e2e::{
    INFRASTRUCTURE, TestResult, cluster_manifest, machine_ready, process_memory, service_principal_identity,
    wait_list,
};
use kube::api::{Api, DynamicObject};

const CLUSTER: &str = "bench";

struct Options {
    machines: u32,
    runs: usize,
    sync_period: u64,
    default_window: u64,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        machines: 10,
        runs: 3,
        sync_period: 60,
        default_window: 600,
    };
    for (flag, value) in bench::bench_flags()? {
        match flag.as_str() {
            "--machines" => options.machines = value.max(1),
            "--runs" => options.runs = usize::try_from(value.max(1)).map_err(|err| err.to_string())?,
            "--sync-period" => options.sync_period = u64::from(value.max(1)),
            "--default-window" => options.default_window = u64::from(value),
            other => {
                return Err(format!(
                    "unexpected argument {other}; use --machines N --runs N --sync-period SECONDS --default-window SECONDS"
                ));
            }
        }
    }
    Ok(options)
}

fn manifest(namespace: &str, machines: u32) -> String {
    [
        cluster_manifest(CLUSTER, CLUSTER),
        service_principal_identity(CLUSTER, namespace),
        workers_from_secret(CLUSTER, machines),
    ]
    .join("---\n")
}

/// What one run measured.
#[derive(Default)]
struct Figures {
    side: Side,
    cluster_ready: f64,
    first_vm: f64,
    last_vm: f64,
    machines_ready: f64,
    /// ARM calls to a resource from the apply until every AzureMachine was Ready, by method.
    arm_calls: BTreeMap<String, usize>,
    /// The same by caller (the first word of the User-Agent that tells the process).
    arm_callers: BTreeMap<String, usize>,
    sign_ins: usize,
    /// The longest time between two ARM calls (one answered, the next arriving) from the apply
    /// to AzureCluster Ready.
    longest_quiet: f64,
    /// Kubernetes API calls of the provider's processes from the apply until every AzureMachine
    /// was Ready, and their reconciles meanwhile.
    kube_calls: usize,
    reconciles: f64,
    /// Per process of the plane: peak RSS (MiB) and CPU seconds.
    processes: Vec<(String, f64, f64)>,
    /// Steady state: ARM calls by method over `steady_seconds`.
    steady: BTreeMap<String, usize>,
    steady_seconds: u64,
}

/// Whether a logged request is an ARM call to a resource (not a sign-in or metadata).
fn is_arm(request: &LoggedRequest) -> bool {
    request.path.starts_with("/subscriptions/") && request.resource_type.contains('/')
}

fn is_sign_in(request: &LoggedRequest) -> bool {
    request.path.ends_with("/oauth2/v2.0/token") || request.path.ends_with("/oauth2/token")
}

fn seconds_after(since: SystemTime, time: SystemTime) -> f64 {
    time.duration_since(since).unwrap_or_default().as_secs_f64()
}

/// The sum of `controller_runtime_reconcile_total` at `address`.
async fn reconciles(address: std::net::SocketAddr) -> f64 {
    let Ok((_, body)) = capz_harness::http_get(address, "/metrics").await else {
        return 0.0;
    };
    body.lines()
        .filter(|line| line.starts_with("controller_runtime_reconcile_total{"))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Requests in the audit log `log` by the provider's processes: capz-rs's ServiceAccounts, or
/// the clients whose User-Agent names CAPZ's manager or ASO's controller.
fn kube_calls(log: &Path, side: Side, skip: usize) -> usize {
    bench::kube_calls(log, skip)
        .iter()
        // CAPZ's manager names itself after the project in some of its clients.
        .filter(|(client, _)| side.is_provider(client) || *client == "cluster-api-provider-azure")
        .map(|(_, calls)| total(calls))
        .sum()
}

/// Adds what the emulator logged between the apply and every AzureMachine Ready to `figures`:
/// ARM calls by method and caller, sign-ins, when VMs were created, and the longest silence
/// before the AzureCluster was Ready. `span` is (applied, AzureCluster Ready, every machine Ready).
fn tally(figures: &mut Figures, requests: &[LoggedRequest], span: (SystemTime, SystemTime, SystemTime)) {
    let (applied_clock, cluster_ready_clock, ready_clock) = span;
    let until_ready = requests
        .iter()
        .filter(|request| request.received >= applied_clock && request.received <= ready_clock);
    let mut vms = Vec::new();
    let mut last_call = applied_clock;
    for request in until_ready {
        if is_sign_in(request) {
            figures.sign_ins += 1;
        }
        if !is_arm(request) {
            continue;
        }
        // How long Azure heard nothing from the provider before its cluster was Ready: the
        // emulator answers at once, so such gaps are the provider's own waits.
        if request.received <= cluster_ready_clock {
            figures.longest_quiet = figures
                .longest_quiet
                .max(seconds_after(last_call, request.received));
            last_call = last_call.max(request.answered);
        }
        *figures.arm_calls.entry(request.method.clone()).or_default() += 1;
        *figures.arm_callers.entry(caller(request)).or_default() += 1;
        if request.method == "PUT"
            && request
                .resource_type
                .eq_ignore_ascii_case("Microsoft.Compute/virtualMachines")
            && (200..300).contains(&request.status)
        {
            vms.push(seconds_after(applied_clock, request.answered));
        }
    }
    figures.first_vm = vms.iter().copied().fold(f64::INFINITY, f64::min);
    figures.last_vm = vms.iter().copied().fold(0.0, f64::max);
}

async fn run(
    side: Side,
    options: &Options,
    sync_period: Option<u64>,
    steady: Option<u64>,
) -> TestResult<Figures> {
    let audit = tempfile_path(side);
    let config = Config {
        retry_after_seconds: 1,
        ..Config::default()
    };
    let running = Management::start(side, config, sync_period, &[], Some(&audit)).await?;
    let client = running.client().clone();
    let machines = options.machines;
    let figures = capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult<Figures> {
        capz_e2e::create_identity_secret(&client, &namespace, DEFAULT_CLIENT_SECRET).await?;
        // What the provider did before the apply (starting, listing, watching) is left out.
        let audited_before = bench::line_count(&audit);
        let mut reconciled_before = 0.0;
        for (_, address) in running.metrics() {
            reconciled_before += reconciles(address).await;
        }
        let applied_at = Instant::now();
        let applied_clock = SystemTime::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest(&namespace, machines)).await?;
        let infrastructure = async |kind: &str| -> TestResult<Api<DynamicObject>> {
            let resource = capz_harness::resource(&client, INFRASTRUCTURE, "v1beta1", kind).await?;
            Ok(Api::namespaced_with(client.clone(), &namespace, &resource))
        };
        let clusters = infrastructure("AzureCluster").await?;
        wait_list(
            &clusters,
            "",
            "AzureCluster Ready",
            Duration::from_mins(10),
            |all| all.iter().any(|cluster| cluster.data["status"]["ready"] == true),
        )
        .await?;
        let cluster_ready_clock = SystemTime::now();
        let mut figures = Figures {
            side,
            cluster_ready: applied_at.elapsed().as_secs_f64(),
            ..Figures::default()
        };
        let azure_machines = infrastructure("AzureMachine").await?;
        wait_list(
            &azure_machines,
            "",
            "every AzureMachine Ready",
            Duration::from_mins(20),
            |all| all.len() == machines as usize && all.iter().all(machine_ready),
        )
        .await?;
        figures.machines_ready = applied_at.elapsed().as_secs_f64();
        let ready_clock = SystemTime::now();
        for (_, address) in running.metrics() {
            figures.reconciles += reconciles(address).await;
        }
        figures.reconciles -= reconciled_before;
        figures.kube_calls = kube_calls(&audit, side, audited_before);
        let span = (applied_clock, cluster_ready_clock, ready_clock);
        tally(&mut figures, &running.azure().emulator.requests(), span);
        if let Some(window) = steady {
            // Settle first: the last reconciles of the convergence are not steady state.
            tokio::time::sleep(Duration::from_secs(30)).await;
            let start = SystemTime::now();
            tokio::time::sleep(Duration::from_secs(window)).await;
            let end = SystemTime::now();
            for request in running.azure().emulator.requests() {
                if request.received >= start && request.received <= end && is_arm(&request) {
                    *figures.steady.entry(request.method.clone()).or_default() += 1;
                }
            }
            figures.steady_seconds = window;
        }
        Ok(figures)
    })
    .await??;
    let mut figures = figures;
    for process in running.plane().processes() {
        let pid = process.program_id();
        figures.processes.push((
            process.name().to_owned(),
            process_memory(pid).peak,
            process_cpu_seconds(pid),
        ));
    }
    let _ = std::fs::remove_file(&audit);
    Ok(figures)
}

/// Where the API server's audit log of one side's plane goes.
fn tempfile_path(side: Side) -> std::path::PathBuf {
    let name = match side {
        Side::CapzRs => "capz-rs",
        Side::Capz => "capz",
        Side::StandIn => "stand-in",
    };
    std::env::temp_dir().join(format!("bench-peer-{}-{name}-audit.log", std::process::id()))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

#[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
fn count(value: usize) -> f64 {
    value as f64
}

/// Prints a row: the medians of `value` over each side's runs and their ratio (capz-rs ÷ CAPZ).
fn row(label: &str, ours: &[Figures], theirs: &[Figures], value: impl Fn(&Figures) -> f64) {
    let a = median(ours.iter().map(&value).collect());
    let b = median(theirs.iter().map(&value).collect());
    let ratio = if b == 0.0 { f64::NAN } else { a / b };
    println!("{label:<52} {a:>12.2} {b:>12.2} {ratio:>8.2}");
}

fn provider_sum(figures: &Figures, of: impl Fn(&(String, f64, f64)) -> f64) -> f64 {
    figures
        .processes
        .iter()
        .filter(|process| figures.side.is_provider(&process.0))
        .map(of)
        .sum()
}

fn print_processes(side: Side, figures: &Figures) {
    println!("\n{} processes (last run): peak RSS MiB, CPU s", side.name());
    for (name, rss, cpu) in &figures.processes {
        println!("  {name:<32} {rss:>8.1} {cpu:>8.2}");
    }
}

fn print_steady(side: Side, figures: &Figures, per: u64) {
    let reads = figures.steady.get("GET").copied().unwrap_or_default();
    let writes: usize = figures
        .steady
        .iter()
        .filter(|(method, _)| *method != "GET")
        .map(|(_, n)| n)
        .sum();
    let periods = count(usize::try_from(figures.steady_seconds).unwrap_or(1))
        / count(usize::try_from(per).unwrap_or(1));
    println!(
        "  {:<12} over {:>4} s: {reads} reads, {writes} writes ({:.2} reads and {:.2} writes per {per} s)",
        side.name(),
        figures.steady_seconds,
        count(reads) / periods,
        count(writes) / periods
    );
}

async fn bench(options: Options) -> TestResult {
    capz_harness::peer::binaries()?;
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for index in 0..options.runs {
        let steady = (index + 1 == options.runs).then_some(options.default_window);
        for side in [Side::CapzRs, Side::Capz] {
            let figures = run(side, &options, None, steady).await?;
            eprintln!(
                "bench-peer: run {} of {}, {}: every AzureMachine Ready after {:.1} s",
                index + 1,
                options.runs,
                side.name(),
                figures.machines_ready
            );
            match side {
                Side::Capz => theirs.push(figures),
                Side::CapzRs | Side::StandIn => ours.push(figures),
            }
        }
    }
    let mut common = Vec::new();
    for side in [Side::CapzRs, Side::Capz] {
        common.push(
            run(
                side,
                &options,
                Some(options.sync_period),
                Some(2 * options.sync_period),
            )
            .await?,
        );
    }

    let machines = f64::from(options.machines);
    println!(
        "\n{} machines, median of {} runs, emulator with no latency; defaults: sync period 10 min (capz-rs, CAPZ), ASO resync 1 h",
        options.machines, options.runs
    );
    println!("{:<52} {:>12} {:>12} {:>8}", "", "capz-rs", "CAPZ + ASO", "ratio");
    row("apply -> AzureCluster Ready (s)", &ours, &theirs, |f| {
        f.cluster_ready
    });
    row("apply -> first VM created (s)", &ours, &theirs, |f| f.first_vm);
    row("apply -> last VM created (s)", &ours, &theirs, |f| f.last_vm);
    row("apply -> every AzureMachine Ready (s)", &ours, &theirs, |f| {
        f.machines_ready
    });
    row(
        "longest ARM silence before AzureCluster Ready (s)",
        &ours,
        &theirs,
        |f| f.longest_quiet,
    );
    for method in ["GET", "PUT", "PATCH", "POST", "DELETE"] {
        row(&format!("ARM {method} to Ready"), &ours, &theirs, |f| {
            count(f.arm_calls.get(method).copied().unwrap_or_default())
        });
    }
    row("ARM calls to Ready, per machine", &ours, &theirs, |f| {
        count(f.arm_calls.values().sum()) / machines
    });
    row("sign-ins (token requests) to Ready", &ours, &theirs, |f| {
        count(f.sign_ins)
    });
    row("Kubernetes API calls (provider)", &ours, &theirs, |f| {
        count(f.kube_calls)
    });
    row("reconciles (provider)", &ours, &theirs, |f| f.reconciles);
    row("Kubernetes API calls per reconcile", &ours, &theirs, |f| {
        count(f.kube_calls) / f.reconciles.max(1.0)
    });
    row("peak RSS, provider processes summed (MiB)", &ours, &theirs, |f| {
        provider_sum(f, |process| process.1)
    });
    row("CPU s, provider processes summed", &ours, &theirs, |f| {
        provider_sum(f, |process| process.2)
    });
    println!("\nARM calls to Ready by caller (last run):");
    for (side, figures) in [(Side::CapzRs, ours.last()), (Side::Capz, theirs.last())] {
        if let Some(figures) = figures {
            println!("  {:<12} {:?}", side.name(), figures.arm_callers);
        }
    }
    println!("\nsteady state at the defaults (last run; 10 min sync period, ASO 1 h):");
    if let (Some(a), Some(b)) = (ours.last(), theirs.last()) {
        print_steady(Side::CapzRs, a, 600);
        print_steady(Side::Capz, b, 600);
    }
    println!(
        "\nsteady state with every sync period at {} s:",
        options.sync_period
    );
    print_steady(Side::CapzRs, &common[0], options.sync_period);
    print_steady(Side::Capz, &common[1], options.sync_period);
    if let (Some(a), Some(b)) = (ours.last(), theirs.last()) {
        print_processes(Side::CapzRs, a);
        print_processes(Side::Capz, b);
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    capz_e2e::bench_main("bench-peer", options, bench)
}
