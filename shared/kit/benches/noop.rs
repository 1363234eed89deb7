//! How fast a controller on the kit goes through objects that need nothing, and how much memory
//! it holds: 1,000 AzureClusters already reconciled, on a real kube-apiserver, reconciled again
//! and again by a controller whose steady state is the kit's (finalizer in place, pause and
//! managed-by checks, conditions computed and found unchanged, no write).
//!
//! `just bench-kit` runs it; `--objects N` and `--passes N` change the load.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use capz_harness::{Options, Plane};
use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::apply::{FieldManager, apply_status};
use capz_kit::cluster::{is_externally_managed, is_paused};
use capz_kit::conditions::{Observation, differ, observe};
use capz_kit::finalizer::{FinalizerError, finalized};
use capz_kit::kube::api::{Api, ObjectMeta, PostParams};
use capz_kit::kube::runtime::controller::{Action, Controller};
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::runtime::watcher;
use capz_kit::kube::{Client, ResourceExt as _};
use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

type Result<T = (), E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const FINALIZER: &str = "bench.infrastructure.cluster.x-k8s.io";
const MANAGER: FieldManager = FieldManager::new("capz-bench");
const OWNED: &[ConditionType] = &[ConditionType::VNET_READY];

#[derive(Debug, Serialize)]
struct OwnedStatus {
    conditions: Vec<capz_kit::api::common::conditions::Condition>,
}

#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error(transparent)]
    Kube(#[from] capz_kit::kube::Error),
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
}

struct Context {
    client: Client,
    reconciles: AtomicUsize,
    writes: AtomicUsize,
}

async fn reconcile(object: Arc<AzureCluster>, context: Arc<Context>) -> Result<Action, BenchError> {
    context.reconciles.fetch_add(1, Ordering::Relaxed);
    if is_externally_managed(&*object) || is_paused(None, &*object) {
        return Ok(Action::await_change());
    }
    let api =
        Api::<AzureCluster>::namespaced(context.client.clone(), &object.namespace().unwrap_or_default());
    finalized(&api, FINALIZER, object, async |event| match event {
        Event::Apply(object) => {
            let current = object.status.as_ref().map(|status| &status.conditions);
            let conditions = observe(
                current,
                [Observation::holds(ConditionType::VNET_READY)],
                Timestamp::now(),
            );
            if differ(current, OWNED, &conditions) {
                context.writes.fetch_add(1, Ordering::Relaxed);
                apply_status(&api, &MANAGER, &object, &OwnedStatus { conditions }).await?;
            }
            Ok(Action::await_change())
        }
        Event::Cleanup(_) => Ok(Action::await_change()),
    })
    .await
}

fn flag(name: &str, default: usize) -> Result<usize> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|arg| arg == name) {
        Some(at) => Ok(args.get(at + 1).ok_or(format!("{name} needs a value"))?.parse()?),
        None => Ok(default),
    }
}

/// Peak and current resident memory of this process, in MiB (Linux).
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

async fn wait_until(what: &str, done: impl Fn() -> bool) -> Result<Duration> {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > Duration::from_mins(5) {
            return Err(format!("{what} did not happen in 5 minutes").into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> Result {
    let objects = flag("--objects", 1000)?;
    let passes = flag("--passes", 5)?;
    let plane = Plane::start_with(Options {
        crds: vec![capz_harness::crds::ours()],
        dir: None,
        port: None,
        audit_log: None,
    })
    .await?;
    let client = plane.client().await?;
    let namespace = "bench";
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await?;
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    for index in 0..objects {
        let cluster: AzureCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": format!("cluster-{index:04}")},
            "spec": {"location": "westeurope", "resourceGroup": format!("cluster-{index:04}")},
        }))?;
        api.create(&PostParams::default(), &cluster).await?;
    }

    let context = Arc::new(Context {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
        writes: AtomicUsize::new(0),
    });
    let (trigger, receiver) = tokio::sync::mpsc::unbounded_channel::<()>();
    let triggers = futures_util::stream::unfold(receiver, async |mut receiver| {
        receiver.recv().await.map(|()| ((), receiver))
    });
    let controller = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .reconcile_all_on(triggers)
            .run(
                reconcile,
                |_, _, _| Action::requeue(Duration::from_secs(1)),
                context.clone(),
            )
            .for_each(|_| async {}),
    );

    // The first pass adds the finalizer and writes the condition of every object; the events of
    // those writes bring each object back once more, to find nothing to do.
    let settle = wait_until("the first reconcile of every object", || {
        context.writes.load(Ordering::Relaxed) >= objects
            && context.reconciles.load(Ordering::Relaxed) >= 3 * objects
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!(
        "{objects} objects brought to their steady state in {:.2} s ({} reconciles, {} writes)",
        settle.as_secs_f64(),
        context.reconciles.load(Ordering::Relaxed),
        context.writes.load(Ordering::Relaxed)
    );

    let writes_before = context.writes.load(Ordering::Relaxed);
    let mut rates = Vec::new();
    for pass in 1..=passes {
        let target = context.reconciles.load(Ordering::Relaxed) + objects;
        trigger.send(())?;
        let took = wait_until("a pass over every object", || {
            context.reconciles.load(Ordering::Relaxed) >= target
        })
        .await?;
        let rate = f64::from(u32::try_from(objects)?) / took.as_secs_f64();
        println!(
            "pass {pass}: {objects} no-op reconciles in {:.3} s, {rate:.0}/s",
            took.as_secs_f64()
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    let (peak, now) = memory();
    let writes = context.writes.load(Ordering::Relaxed) - writes_before;
    println!(
        "median {:.0} no-op reconciles/s over {passes} passes; writes during them: {writes}; RSS peak {peak:.1} MiB, now {now:.1} MiB",
        rates.get(rates.len() / 2).copied().unwrap_or_default(),
    );
    controller.abort();
    if writes > 0 {
        return Err(format!("the steady state wrote {writes} times; it must write nothing").into());
    }
    Ok(())
}
