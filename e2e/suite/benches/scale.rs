//! What many clusters cost capz-rs (or, with `--capz`, CAPZ and ASO) on one management plane:
//! `--clusters` clusters of `--machines` machines each (defaults 100 and 10: 1,000 machines),
//! every machine given its bootstrap data by a Secret (`dataSecretName`) as in `just bench-e2e`,
//! on an emulator that keeps Azure's default request limits (per principal, 250 reads at 25 a
//! second, 200 writes and 200 deletes at 10 a second, and Microsoft.Compute's virtual machine
//! limits). The clusters sign in as `--principals`
//! AzureClusterIdentities, each a service principal of its own, taken in turn (default 1): with
//! one, every cluster draws on one principal's buckets, as clusters sharing a service principal do
//! in Azure; with one per cluster, as tenants with their own principals do, the limits are each
//! cluster's own. Operations take no time; their polls are told `Retry-After: 1`.
//!
//! The clusters are applied concurrently, a few at a time, into one namespace. The bench reports
//! the time from the first apply to every AzureCluster Ready and to every AzureMachine Ready; the
//! ARM calls to get there, by process and method, and per machine; the 429s met, and whether a
//! throttling storm happened: a request a process sent to a bucket the emulator had refused it
//! before the `Retry-After` it was given had passed (from the emulator's request log, which names
//! the buckets each request drew on and the ones that refused it). Then, after one sync period
//! to settle, the ARM calls of one more period (no writes expected), and last each process's peak
//! resident set and CPU time: capz-rs's controllers, Cluster API's managers, the API server and
//! etcd, the workload cluster simulator, and this program, which runs the emulator.
//!
//! `just bench-scale` (defaults `--clusters 100 --machines 10 --principals 1 --sync-period 600`,
//! the controllers' own default sync period of 10 minutes). With `--capz`, the plane runs CAPZ
//! and ASO instead (`just peer-bins`), as `just bench-peer` does, every controller of both with
//! the sync period given; the numbers per process are then CAPZ's manager's and ASO's. With
//! `--azuremachine-concurrency N`, the provider reconciles N AzureMachines at a time instead of
//! its default 10 (CAPZ's flag, which capz-rs's controllers take too). With
//! `--kube-calls`, the API server records every request (which costs it some CPU) and the bench
//! reports the Kubernetes API requests on the way to Ready by client, verb and resource.
//!
//! With `--stand-in`, no provider runs but capz-webhooks: this program marks every AzureCluster
//! and AzureMachine ready as soon as it appears, with the two writes any provider makes (the
//! spec's endpoint or provider ID, then the status), ten at a time, and no Azure at all. What
//! that run takes is what Cluster API and the API server take on this machine by themselves: no
//! provider can be faster here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::config::{DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, Principal};
use arm_emulator::{Config, LoggedRequest};
use capz_e2e::bench::{self, Calls, Management, Side, by_method, caller, count, per, total};
use capz_e2e::{
    INFRASTRUCTURE, TestResult, cluster_manifest, condition, service_principal_identity_of, summary,
};
use futures_util::{StreamExt as _, TryStreamExt as _};
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;

/// The AzureClusterIdentity cluster `index` signs in as, of `principals`.
fn identity(index: u32, principals: u32) -> String {
    format!("scale-{}", index % principals)
}

/// The client id of the service principal of identity `scale-{principal}`.
fn client_id(principal: u32) -> String {
    format!("5ca1e000-0000-4000-8000-{principal:012}")
}

/// The controllers' `--sync-period` when none is given: theirs (and CAPZ's) default, 10 minutes.
const DEFAULT_SYNC_PERIOD: u64 = 600;

/// How many clusters are being applied at any time.
const APPLYING: usize = 10;

/// How long the bench waits, from the first apply, for every AzureCluster and every AzureMachine
/// to be Ready: a size that takes longer than an hour is more than this bench compares at.
const TIMEOUT: Duration = Duration::from_hours(1);

/// The targets this benchmark checks: everything Ready within 5 minutes, each controller under
/// 30 MB.
const READY_TARGET: Duration = Duration::from_mins(5);
const RSS_TARGET_MIB: f64 = 30e6 / (1024.0 * 1024.0);

/// A request the emulator received this soon after it answered a 429 may have left its client
/// before the client read the answer: it is not counted as coming back early.
const IN_FLIGHT: Duration = Duration::from_millis(100);

struct Options {
    clusters: u32,
    machines: u32,
    principals: u32,
    sync_period: u64,
    side: Side,
    /// Whether the API server records every request, for the Kubernetes API calls by client.
    kube_calls: bool,
    /// How many AzureMachines the provider reconciles at a time, if not its default (10).
    machine_concurrency: Option<u32>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        clusters: 100,
        machines: 10,
        principals: 1,
        sync_period: DEFAULT_SYNC_PERIOD,
        side: Side::CapzRs,
        kube_calls: false,
        machine_concurrency: None,
    };
    let (flags, switches) = bench::bench_args(&["--capz", "--stand-in", "--kube-calls"])?;
    for switch in switches {
        match switch.as_str() {
            "--capz" => options.side = Side::Capz,
            "--stand-in" => options.side = Side::StandIn,
            _ => options.kube_calls = true,
        }
    }
    for (flag, value) in flags {
        match flag.as_str() {
            "--clusters" => options.clusters = value.max(1),
            "--machines" => options.machines = value.max(1),
            "--principals" => options.principals = value.max(1),
            "--sync-period" => options.sync_period = u64::from(value.max(1)),
            "--azuremachine-concurrency" => options.machine_concurrency = Some(value.max(1)),
            other => {
                return Err(format!(
                    "unexpected argument {other}; use --clusters N --machines N --principals N --sync-period SECONDS --azuremachine-concurrency N [--capz] [--kube-calls]"
                ));
            }
        }
    }
    Ok(options)
}

/// The Cluster, AzureCluster and workers of cluster `index`.
fn cluster(index: u32, options: &Options) -> String {
    let name = format!("scale-{index}");
    [
        cluster_manifest(&name, &identity(index, options.principals)),
        bench::workers_from_secret(&name, options.machines),
    ]
    .join("---\n")
}

/// Lists `api` until `want` of its objects are `ready`; returns how long after `applied_at` that
/// was. Prints the progress every 30 s, so a run that stalls shows where.
async fn all_ready(
    api: &Api<DynamicObject>,
    what: &str,
    want: usize,
    ready: impl Fn(&DynamicObject) -> bool,
    applied_at: Instant,
) -> TestResult<Duration> {
    // Each list is work for the API server the controllers and Cluster API share: a thousand
    // AzureMachines are listed every 5 s, a few every 200 ms.
    let interval = Duration::from_millis((5 * want as u64).clamp(200, 5000));
    let mut reported = Instant::now();
    loop {
        let objects = api.list(&ListParams::default()).await?.items;
        let done = objects.iter().filter(|object| ready(object)).count();
        if done == want {
            return Ok(applied_at.elapsed());
        }
        if applied_at.elapsed() > TIMEOUT {
            let waiting: Vec<String> = objects
                .iter()
                .filter(|object| !ready(object))
                .take(5)
                .map(summary)
                .collect();
            return Err(format!(
                "{done} of {want} {what} Ready after {} s (of {} listed); some not Ready:\n{}",
                TIMEOUT.as_secs(),
                objects.len(),
                waiting.join("\n")
            )
            .into());
        }
        if reported.elapsed() >= Duration::from_secs(30) {
            eprintln!(
                "bench-scale: {done} of {want} {what} Ready {:.0} s after the first apply",
                applied_at.elapsed().as_secs_f64()
            );
            reported = Instant::now();
        }
        tokio::time::sleep(interval).await;
    }
}

/// What kind of bucket a budget of the request log is: the principal's `reads`, `writes` or
/// `deletes`, or a Microsoft.Compute policy such as `Microsoft.Compute/PutVMResource`.
fn bucket_kind(budget: &str) -> String {
    if budget.starts_with("Microsoft.Compute/") {
        budget.splitn(3, '/').take(2).collect::<Vec<_>>().join("/")
    } else {
        budget.rsplit('/').next().unwrap_or(budget).to_owned()
    }
}

/// The 429s of a stretch of the request log, and the requests that came back to a bucket that
/// had refused them before their `Retry-After` had passed.
#[derive(Default)]
struct Throttling {
    /// 429s by method.
    by_method: Calls,
    /// 429s by the kind of bucket that was empty.
    by_bucket: BTreeMap<String, usize>,
    /// Early requests from the process that got the 429, by process.
    early: BTreeMap<String, usize>,
    /// Early requests from other processes signed in as the same principal (each process keeps
    /// its own account of the answers it got, so these cannot know).
    early_elsewhere: usize,
    /// How long after its 429 the latest early request of the throttled process came: requests
    /// already on their way when the answer left look the same in the log, a client ignoring the
    /// wait does not.
    latest: Duration,
    /// The first few early requests of the throttled process, described.
    examples: Vec<String>,
}

impl Throttling {
    fn of(log: &[LoggedRequest]) -> Self {
        let mut throttling = Self::default();
        // Every budget's requests by arrival, to find those inside a 429's wait.
        let mut drawing: HashMap<&str, Vec<(SystemTime, usize)>> = HashMap::new();
        for (index, request) in log.iter().enumerate() {
            for budget in &request.budgets {
                drawing
                    .entry(budget.as_str())
                    .or_default()
                    .push((request.received, index));
            }
        }
        for requests in drawing.values_mut() {
            requests.sort_unstable();
        }
        let mut early = BTreeSet::new();
        let mut early_elsewhere = BTreeSet::new();
        for refused in log.iter().filter(|request| request.status == 429) {
            *throttling.by_method.entry(refused.method.clone()).or_default() += 1;
            for budget in &refused.throttled_by {
                *throttling.by_bucket.entry(bucket_kind(budget)).or_default() += 1;
            }
            let Some(seconds) = refused.retry_after else {
                continue;
            };
            let from = refused.answered + IN_FLIGHT;
            let until = refused.answered + Duration::from_secs(seconds);
            for budget in &refused.throttled_by {
                let requests = drawing.get(budget.as_str()).map_or(&[][..], Vec::as_slice);
                let first = requests.partition_point(|(received, _)| *received <= from);
                for &(received, index) in requests[first..]
                    .iter()
                    .take_while(|(received, _)| *received < until)
                {
                    let call = &log[index];
                    if caller(call) != caller(refused) {
                        early_elsewhere.insert(index);
                        continue;
                    }
                    let after = received.duration_since(refused.answered).unwrap_or_default();
                    throttling.latest = throttling.latest.max(after);
                    if early.insert(index) && throttling.examples.len() < 5 {
                        throttling.examples.push(format!(
                            "{} {} {} {:.3} s after a 429 (Retry-After {seconds} s) from {}",
                            caller(call),
                            call.method,
                            call.path,
                            after.as_secs_f64(),
                            bucket_kind(budget)
                        ));
                    }
                }
            }
        }
        for index in early {
            *throttling.early.entry(caller(&log[index])).or_default() += 1;
        }
        throttling.early_elsewhere = early_elsewhere.len();
        throttling
    }

    fn print(&self, stretch: &str) {
        let early = self.early.values().sum::<usize>();
        println!(
            "{stretch}: {} 429s {:?}, by empty bucket {:?}",
            total(&self.by_method),
            self.by_method,
            self.by_bucket
        );
        println!(
            "  throttling storm (a process back at a bucket before its Retry-After): {} ({early} early requests {:?}, \
             the latest {:.2} s after its 429; {} more from other processes of the same principal)",
            if early == 0 { "no" } else { "YES" },
            self.early,
            self.latest.as_secs_f64(),
            self.early_elsewhere
        );
        for example in &self.examples {
            println!("    {example}");
        }
    }
}

/// The ARM requests (not sign-ins) of `log` received in `[from, until)`.
fn arm_between(log: &[LoggedRequest], from: SystemTime, until: SystemTime) -> Vec<LoggedRequest> {
    log.iter()
        .filter(|request| {
            request.path.starts_with("/subscriptions/")
                && request.received >= from
                && request.received < until
        })
        .cloned()
        .collect()
}

/// `requests` by process, then method.
fn by_process(requests: &[LoggedRequest]) -> BTreeMap<String, Calls> {
    let mut calls: BTreeMap<String, Vec<&LoggedRequest>> = BTreeMap::new();
    for request in requests {
        calls.entry(caller(request)).or_default().push(request);
    }
    calls
        .into_iter()
        .map(|(process, requests)| (process, by_method(requests)))
        .collect()
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "NOT met" }
}

/// What the way to every machine Ready measured.
struct Converged {
    /// The load average before the first apply and when every AzureMachine was Ready.
    load: (String, String),
    /// Applying every cluster, then until every AzureCluster, then every AzureMachine is Ready.
    apply_took: Duration,
    clusters_ready: Duration,
    machines_ready: Duration,
    /// The ARM requests from the first apply until every AzureMachine was Ready.
    requests: Vec<LoggedRequest>,
    /// Each process's CPU seconds when every AzureMachine was Ready.
    cpu_at_ready: BTreeMap<String, f64>,
    /// With `--kube-calls`, the Kubernetes API requests from the first apply until every
    /// AzureMachine was Ready, by client.
    kube_calls: Option<BTreeMap<String, Calls>>,
}

/// Applies the clusters and waits until they and their machines are Ready.
async fn converge(
    management: &Management,
    namespace: &str,
    options: &Options,
    audit_log: Option<&Path>,
) -> TestResult<Converged> {
    let client = management.client();
    let load_before = load_average();
    capz_e2e::create_identity_secret(client, namespace, DEFAULT_CLIENT_SECRET).await?;
    for principal in 0..options.principals {
        let identity = service_principal_identity_of(
            &identity(principal, options.principals),
            namespace,
            &client_id(principal),
        );
        capz_harness::apply_yaml(client, namespace, &identity).await?;
    }
    let stand_in = (options.side == Side::StandIn).then(|| {
        let (client, namespace) = (client.clone(), namespace.to_owned());
        AbortOnDrop(tokio::spawn(async move {
            let stopped = stand_in(client, namespace).await;
            if let Err(error) = &stopped {
                eprintln!("bench-scale: the stand-in provider stopped: {error}");
            }
            stopped
        }))
    });
    let manifests: Vec<String> = (0..options.clusters)
        .map(|index| cluster(index, options))
        .collect();
    let audited_before = audit_log.map_or(0, bench::line_count);
    let since = SystemTime::now();
    let applied_at = Instant::now();
    let applies: Vec<_> = futures_util::stream::iter(
        manifests
            .iter()
            .map(|manifest| capz_harness::apply_yaml(client, namespace, manifest)),
    )
    .buffer_unordered(APPLYING)
    .collect()
    .await;
    for applied in applies {
        applied?;
    }
    let apply_took = applied_at.elapsed();

    let infrastructure = async |kind: &str| -> TestResult<Api<DynamicObject>> {
        let resource = capz_harness::resource(client, INFRASTRUCTURE, "v1beta1", kind).await?;
        Ok(Api::namespaced_with(client.clone(), namespace, &resource))
    };
    let azure_clusters = infrastructure("AzureCluster").await?;
    let clusters_ready = all_ready(
        &azure_clusters,
        "AzureClusters",
        options.clusters as usize,
        |cluster| cluster.data["status"]["ready"] == true,
        applied_at,
    )
    .await?;
    let azure_machines = infrastructure("AzureMachine").await?;
    let machines_ready = all_ready(
        &azure_machines,
        "AzureMachines",
        (options.clusters * options.machines) as usize,
        |machine| condition(machine, "Ready").is_some_and(|(status, _)| status == "True"),
        applied_at,
    )
    .await?;
    let ready_clock = SystemTime::now();
    if let Some(AbortOnDrop(task)) = &stand_in
        && task.is_finished()
    {
        return Err("the stand-in provider stopped before every machine was Ready".into());
    }
    Ok(Converged {
        load: (load_before, load_average()),
        apply_took,
        clusters_ready,
        machines_ready,
        requests: arm_between(&management.azure().emulator.requests(), since, ready_clock),
        cpu_at_ready: management
            .plane()
            .processes()
            .iter()
            .map(|process| {
                (
                    process.name().to_owned(),
                    bench::process_cpu_seconds(process.program_id()),
                )
            })
            .collect(),
        kube_calls: audit_log.map(|log| bench::kube_calls(log, audited_before)),
    })
}

/// A task that ends with its handle.
struct AbortOnDrop(tokio::task::JoinHandle<TestResult>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How many objects the stand-in provider marks at a time, as capz-rs and CAPZ reconcile ten
/// AzureMachines at a time.
const STAND_IN_WORKERS: usize = 10;

/// Stands in for a provider in `namespace` (`--stand-in`): each AzureCluster gets its control
/// plane endpoint and each AzureMachine its provider ID, then each is marked ready, as soon as
/// it is seen. It waits for nothing a provider would wait for (a Cluster whose infrastructure is
/// ready), so what it measures is a bound no provider can beat.
async fn stand_in(client: kube::Client, namespace: String) -> TestResult {
    let api = async |kind: &str| -> TestResult<Api<DynamicObject>> {
        let resource = capz_harness::resource(&client, INFRASTRUCTURE, "v1beta1", kind).await?;
        Ok(Api::namespaced_with(client.clone(), &namespace, &resource))
    };
    let workers = std::sync::Arc::new(tokio::sync::Semaphore::new(STAND_IN_WORKERS));
    let (clusters, machines) = (api("AzureCluster").await?, api("AzureMachine").await?);
    tokio::try_join!(
        mark_each(clusters, workers.clone(), |name| {
            json!({"controlPlaneEndpoint": {"host": format!("{name}.westeurope.cloudapp.azure.com"), "port": 6443}})
        }),
        mark_each(machines, workers, |name| {
            json!({"providerID": format!(
                "azure:///subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/stand-in/providers/Microsoft.Compute/virtualMachines/{name}"
            )})
        }),
    )?;
    Ok(())
}

/// Marks every object of `api` once, as it appears: its spec gets `spec(name)`, then its status
/// says it is ready.
async fn mark_each(
    api: Api<DynamicObject>,
    workers: std::sync::Arc<tokio::sync::Semaphore>,
    spec: impl Fn(&str) -> serde_json::Value,
) -> TestResult {
    let mut seen = BTreeSet::new();
    let mut marking = tokio::task::JoinSet::new();
    loop {
        // A watch ends after a while; the list after it finds what came meanwhile.
        let list = api.list(&ListParams::default()).await?;
        let version = list.metadata.resource_version.clone().unwrap_or_default();
        let mut found: Vec<DynamicObject> = list.items;
        let mut events = api.watch(&WatchParams::default(), &version).await?.boxed();
        loop {
            for object in found.drain(..) {
                let name = object.name_any();
                if seen.insert(name.clone()) {
                    let (api, worker, spec) =
                        (api.clone(), workers.clone().acquire_owned().await?, spec(&name));
                    marking.spawn(async move {
                        let _worker = worker;
                        mark(&api, &name, spec).await
                    });
                }
            }
            while let Some(done) = marking.try_join_next() {
                done??;
            }
            match events.try_next().await? {
                Some(WatchEvent::Added(object)) => found.push(object),
                Some(_) => {}
                None => break,
            }
        }
    }
}

/// How often the stand-in tries an object's writes before it gives up, and how long it waits
/// between tries, as a provider requeues a failed reconcile.
const STAND_IN_TRIES: u32 = 10;
const STAND_IN_RETRY: Duration = Duration::from_secs(1);

/// One object's two writes, tried again while the API server refuses them; an object deleted
/// meanwhile (Cluster API removes a machine a MachineSet made one too many of) needs none.
async fn mark(api: &Api<DynamicObject>, name: &str, spec: serde_json::Value) -> TestResult {
    let params = PatchParams::default();
    let mut tries = 0;
    loop {
        let written: kube::Result<()> = async {
            api.patch(name, &params, &Patch::Merge(json!({"spec": &spec})))
                .await?;
            let now = k8s_openapi::jiff::Timestamp::now().to_string();
            let status = json!({"status": {
                "ready": true,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            }});
            api.patch_status(name, &params, &Patch::Merge(status)).await?;
            Ok(())
        }
        .await;
        tries += 1;
        match written {
            Ok(()) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(()),
            Err(error) if tries < STAND_IN_TRIES => {
                eprintln!("bench-scale: the stand-in could not mark {name} ({error}); trying again");
                tokio::time::sleep(STAND_IN_RETRY).await;
            }
            Err(error) => return Err(format!("the stand-in could not mark {name}: {error}").into()),
        }
    }
}

/// The 1, 5 and 15 minute load averages.
fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

async fn bench(options: &Options) -> TestResult {
    let audit_log = options
        .kube_calls
        .then(|| std::env::temp_dir().join(format!("bench-scale-{}-audit.log", std::process::id())));
    let management = Management::start(
        options.side,
        {
            let mut config = Config {
                retry_after_seconds: 1,
                request_log_size: 2_000_000,
                ..Config::default()
            };
            config
                .principals
                .extend((0..options.principals).map(|principal| Principal {
                    client_id: client_id(principal),
                    tenant: DEFAULT_TENANT.into(),
                    object_id: None,
                    secret: Some(DEFAULT_CLIENT_SECRET.into()),
                    certificate: None,
                    federated: Vec::new(),
                }));
            config
        },
        Some(options.sync_period),
        &options
            .machine_concurrency
            .map(|concurrency| format!("--azuremachine-concurrency={concurrency}"))
            .into_iter()
            .collect::<Vec<_>>(),
        audit_log.as_deref(),
    )
    .await?;
    let result = capz_harness::with_temp_namespace(management.client(), async |namespace| -> TestResult {
        let converged = converge(&management, &namespace, options, audit_log.as_deref()).await?;
        // Printed before the steady state, which takes two sync periods more.
        report_convergence(options, &converged);
        let since = bench::steady_state(Duration::from_secs(options.sync_period), 1, SystemTime::now).await;
        let steady = arm_between(&management.azure().emulator.requests(), since, SystemTime::now());
        report_steady_state(&steady, capz_e2e::created_in(management.azure()).len());
        report_processes(&management, &converged.cpu_at_ready);
        Ok(())
    })
    .await;
    if let Some(log) = audit_log {
        let _ = std::fs::remove_file(log);
    }
    result?
}

fn report_convergence(options: &Options, converged: &Converged) {
    let Options {
        clusters,
        machines,
        principals,
        sync_period,
        side,
        kube_calls: _,
        machine_concurrency,
    } = *options;
    let all = u64::from(clusters * machines);
    println!(
        "\n{}: {clusters} clusters x {machines} machines ({all} machines) on one plane, {principals} principal(s), \
         sync period {sync_period} s, {}; emulator with Azure's default request limits, no operation latency, \
         Retry-After 1 s on operations",
        side.name(),
        machine_concurrency.map_or_else(
            || "the default AzureMachine concurrency".to_owned(),
            |concurrency| format!("{concurrency} AzureMachines reconciled at a time")
        )
    );
    println!(
        "load average (1, 5, 15 min) before the apply: {}, when every AzureMachine was Ready: {}",
        converged.load.0, converged.load.1
    );
    println!(
        "applying the {clusters} clusters ({APPLYING} at a time)  {:>8.2} s",
        converged.apply_took.as_secs_f64()
    );
    println!(
        "first apply -> every AzureCluster Ready   {:>8.2} s",
        converged.clusters_ready.as_secs_f64()
    );
    println!(
        "first apply -> every AzureMachine Ready   {:>8.2} s   (target under {} s: {})",
        converged.machines_ready.as_secs_f64(),
        READY_TARGET.as_secs(),
        met(converged.machines_ready < READY_TARGET)
    );
    println!(
        "ARM calls, first apply -> every AzureMachine Ready: {} {:?}",
        converged.requests.len(),
        by_method(&converged.requests)
    );
    let processes = by_process(&converged.requests);
    for (process, calls) in &processes {
        println!("  {process:<28} {:>7} {calls:?}", total(calls));
    }
    let per_machine = |calls: &Calls| {
        calls
            .iter()
            .map(|(method, count)| format!("{method} {:.2}", per(*count, all)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let by_one: Vec<String> = processes
        .iter()
        .map(|(process, calls)| {
            format!(
                "{:.2} by {process} ({})",
                per(total(calls), all),
                per_machine(calls)
            )
        })
        .collect();
    println!(
        "ARM calls per AzureMachine to Ready: {}; {:.2} by every process ({})",
        by_one.join(", "),
        per(converged.requests.len(), all),
        per_machine(&by_method(&converged.requests))
    );
    Throttling::of(&converged.requests).print("first apply -> every AzureMachine Ready");
    if let Some(clients) = &converged.kube_calls {
        report_kube_calls(clients, all);
    }
}

/// The Kubernetes API requests of each client on the way to Ready, per AzureMachine, with the
/// verbs and resources that made most of them.
fn report_kube_calls(clients: &BTreeMap<String, Calls>, machines: u64) {
    let all: usize = clients.values().map(total).sum();
    println!(
        "Kubernetes API requests, first apply -> every AzureMachine Ready: {all} ({:.2} per AzureMachine)",
        per(all, machines)
    );
    let mut clients: Vec<_> = clients.iter().collect();
    clients.sort_by_key(|(_, calls)| std::cmp::Reverse(total(calls)));
    for (client, calls) in clients {
        let mut most: Vec<_> = calls.iter().collect();
        most.sort_by_key(|(_, count)| std::cmp::Reverse(**count));
        let most: Vec<String> = most
            .iter()
            .take(6)
            .map(|(request, count)| format!("{request} {:.2}", per(**count, machines)))
            .collect();
        println!(
            "  {client:<36} {:>8} ({:.2} per AzureMachine: {})",
            total(calls),
            per(total(calls), machines),
            most.join(", ")
        );
    }
}

fn report_steady_state(requests: &[LoggedRequest], resources: usize) {
    let calls = by_method(requests);
    let reads = count(&calls, "GET") + count(&calls, "HEAD");
    println!(
        "steady state, one sync period after one to settle: {reads} reads, {} writes over {resources} Azure \
         resources ({:.2} reads per resource) {calls:?}; load average then {}",
        total(&calls) - reads,
        per(reads, u64::try_from(resources).unwrap_or(u64::MAX)),
        load_average()
    );
    for (process, calls) in by_process(requests) {
        println!("  {process:<28} {:>7} {calls:?}", total(&calls));
    }
    Throttling::of(requests).print("steady state");
}

fn report_processes(management: &Management, cpu_at_ready: &BTreeMap<String, f64>) {
    let side = management.side();
    let processes: Vec<(&str, u32)> = management
        .plane()
        .processes()
        .iter()
        .map(|process| (process.name(), process.program_id()))
        .collect();
    let (capz, others): (Vec<_>, Vec<_>) = processes.iter().partition(|(name, _)| side.is_provider(name));
    println!(
        "{} processes (CPU s when every AzureMachine was Ready):",
        side.name()
    );
    for (name, _) in &capz {
        println!(
            "  {name:<28} {:>9.1}",
            cpu_at_ready.get(*name).copied().unwrap_or_default()
        );
    }
    println!("{} processes at the end:", side.name());
    bench::print_usage(capz.iter().copied());
    let over: Vec<&str> = capz
        .iter()
        .filter(|(_, pid)| bench::process_memory(*pid).peak >= RSS_TARGET_MIB)
        .map(|(name, _)| *name)
        .collect();
    println!(
        "  peak RSS of each process under 30 MB ({RSS_TARGET_MIB:.1} MiB): {}{}",
        met(over.is_empty()),
        if over.is_empty() {
            String::new()
        } else {
            format!(" ({})", over.join(", "))
        }
    );
    println!(
        "the rest of the plane, and this program (the emulator, in process, and the bench's own waiting):"
    );
    bench::print_usage(
        others
            .iter()
            .copied()
            .chain([("bench-scale (emulator)", std::process::id())]),
    );
}

fn main() -> std::process::ExitCode {
    bench::bench_main("scale", options, async |options| bench(&options).await)
}
