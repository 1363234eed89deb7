//! The runner end to end against the real API server, with a controller of ConfigMaps that
//! counts its reconciles: namespace scoping, the watch filter, periodic resync, the probes and
//! metrics, leader election with a standby replica, graceful shutdown, and a lost lease that
//! stops reconciles until it is won again.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use capz_harness::http_get as get;
use capz_kit::cli::Args;
use capz_kit::controller::ControllerId;
use capz_kit::k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use capz_kit::k8s_openapi::api::core::v1::ConfigMap;
use capz_kit::k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use capz_kit::k8s_openapi::jiff::Timestamp;
use capz_kit::kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, Client, ResourceExt as _};
use capz_kit::leader::LeaderError;
use capz_kit::runner::{self, RunError, Shutdown};
use clap::Parser as _;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

const CONTROLLER: &str = "runner-test";
const ID: ControllerId = ControllerId::custom(
    CONTROLLER,
    "capz-runner-test",
    "runner-test.infrastructure.cluster.x-k8s.io",
);

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Reconciles by `namespace/name`.
type Seen = Arc<Mutex<BTreeMap<String, usize>>>;

/// Counts the reconcile; objects named `slow…` take a while, and count their start too.
async fn reconcile(object: Arc<ConfigMap>, seen: Arc<Seen>) -> Result<Action, Infallible> {
    async move {
        let key = format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any());
        let count = |key: String| {
            *seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default() += 1;
        };
        if object.name_any().starts_with("slow") {
            count(format!("{key} started"));
            sleep(Duration::from_millis(1500)).await;
        }
        count(key);
        Ok(Action::await_change())
    }
    .await
}

/// A replica: the runner with a ConfigMap controller, on the test's runtime.
struct Replica {
    seen: Seen,
    shutdown: Shutdown,
    health: SocketAddr,
    metrics: SocketAddr,
    run: JoinHandle<Result<(), RunError>>,
}

impl Replica {
    fn start(plane: &capz_harness::Plane, flags: &[&str]) -> TestResult<Self> {
        let ports = capz_harness::free_ports(2)?;
        let (health, metrics): (SocketAddr, SocketAddr) = (
            ([127, 0, 0, 1], ports[0]).into(),
            ([127, 0, 0, 1], ports[1]).into(),
        );
        let kubeconfig = plane.kubeconfig().to_string_lossy().into_owned();
        let mut command_line = vec![
            "capz-runner-test".to_owned(),
            format!("--kubeconfig={kubeconfig}"),
            format!("--health-probe-bind-address={health}"),
            format!("--metrics-bind-address={metrics}"),
            "--leader-elect-lease-duration=3s".to_owned(),
            "--leader-elect-renew-deadline=2s".to_owned(),
            "--leader-elect-retry-period=250ms".to_owned(),
        ];
        command_line.extend(flags.iter().map(|flag| (*flag).to_owned()));
        let args = Args::try_parse_from(command_line)?;
        let seen = Seen::default();
        let shutdown = Shutdown::new();
        let run = tokio::spawn(runner::run(ID, args, shutdown.clone(), {
            let seen = seen.clone();
            move |ctx| async move {
                ctx.run(ctx.controller(ctx.api::<ConfigMap>()), reconcile, Arc::new(seen))
                    .await;
                Ok(())
            }
        }));
        Ok(Self {
            seen,
            shutdown,
            health,
            metrics,
            run,
        })
    }

    fn seen(&self) -> BTreeMap<String, usize> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn count(&self, key: &str) -> usize {
        self.seen().get(key).copied().unwrap_or_default()
    }

    /// Waits until `key` has been reconciled at least `times` times.
    async fn reconciled(&self, key: &str, times: usize) -> TestResult {
        let waited = timeout(Duration::from_secs(30), async {
            while self.count(key) < times {
                sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        waited.map_err(|_| format!("{key} was not reconciled {times} times: {:?}", self.seen()).into())
    }

    /// Waits until `/readyz` answers 200.
    async fn ready(&self) -> TestResult {
        let waited = timeout(Duration::from_secs(30), async {
            while get(self.health, "/readyz").await.map(|(status, _)| status).ok() != Some(200) {
                sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        if waited.is_err() {
            return Err(format!("never ready: {:?}", get(self.health, "/readyz").await).into());
        }
        Ok(())
    }
}

async fn config_map(client: &Client, namespace: &str, name: &str, filter: Option<&str>) -> TestResult {
    let object = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: filter
                .map(|value| [("cluster.x-k8s.io/watch-filter".to_owned(), value.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &object)
        .await?;
    Ok(())
}

async fn lease_holder(client: &Client, namespace: &str) -> TestResult<Option<String>> {
    Ok(Api::<Lease>::namespaced(client.clone(), namespace)
        .get(&format!("capz-{CONTROLLER}"))
        .await?
        .spec
        .and_then(|spec| spec.holder_identity))
}

#[tokio::test]
async fn only_filtered_objects_of_the_namespace_are_reconciled_until_shutdown() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        capz_harness::with_temp_namespace(&client, async |elsewhere| {
            config_map(&client, &namespace, "mine", Some("team-a"))
                .await
                .unwrap();
            config_map(&client, &namespace, "unlabelled", None).await.unwrap();
            config_map(&client, &namespace, "theirs", Some("team-b"))
                .await
                .unwrap();
            config_map(&client, &elsewhere, "mine", Some("team-a"))
                .await
                .unwrap();

            let replica = Replica::start(
                plane,
                &[
                    &format!("--namespace={namespace}"),
                    "--watch-filter=team-a",
                    "--sync-period=1s",
                    "--leader-elect",
                    &format!("--leader-election-namespace={namespace}"),
                ],
            )
            .unwrap();
            // The first reconcile comes from the watch, the second from the resync.
            replica.reconciled(&format!("{namespace}/mine"), 2).await.unwrap();
            config_map(&client, &namespace, "late", Some("team-a"))
                .await
                .unwrap();
            config_map(&client, &namespace, "late-unlabelled", None)
                .await
                .unwrap();
            replica.reconciled(&format!("{namespace}/late"), 1).await.unwrap();
            assert_eq!(
                replica.seen().into_keys().collect::<Vec<_>>(),
                [format!("{namespace}/late"), format!("{namespace}/mine")]
            );

            replica.ready().await.unwrap();
            assert_eq!(get(replica.health, "/healthz").await.unwrap(), (200, "ok".into()));
            let (status, metrics) = get(replica.metrics, "/metrics").await.unwrap();
            assert_eq!(status, 200);
            for series in [
                r#"capz_reconcile_total{controller="runner-test",kind="ConfigMap"}"#,
                r#"controller_runtime_reconcile_total{controller="configmap",result="success"}"#,
                r#"controller_runtime_reconcile_time_seconds_count{controller="configmap"}"#,
                r#"controller_runtime_max_concurrent_reconciles{controller="configmap"} 10"#,
                r#"controller_runtime_active_workers{controller="configmap"}"#,
                // The other tests' replicas in this process share the series.
                r#"leader_election_master_status{name="capz-runner-test"}"#,
                "process_resident_memory_bytes ",
                "process_cpu_seconds_total ",
                "process_open_fds ",
            ] {
                assert!(metrics.contains(series), "{series} is not in\n{metrics}");
            }
            assert!(lease_holder(&client, &namespace).await.unwrap().is_some());

            // Shutdown drains: a reconcile in flight finishes before the runner returns.
            config_map(&client, &namespace, "slow", Some("team-a"))
                .await
                .unwrap();
            replica
                .reconciled(&format!("{namespace}/slow started"), 1)
                .await
                .unwrap();
            replica.shutdown.trigger();
            let stopped = timeout(Duration::from_secs(30), replica.run).await;
            assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
            assert_eq!(replica.seen.lock().unwrap()[&format!("{namespace}/slow")], 1);
            assert_eq!(lease_holder(&client, &namespace).await.unwrap(), None, "released");
            assert!(get(replica.health, "/healthz").await.is_err(), "servers stopped");
        })
        .await
        .unwrap();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_standby_is_ready_idle_and_takes_over_when_the_leader_shuts_down() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        config_map(&client, &namespace, "object", None).await.unwrap();
        let flags = [
            format!("--namespace={namespace}"),
            "--leader-elect".to_owned(),
            format!("--leader-election-namespace={namespace}"),
        ];
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let key = format!("{namespace}/object");

        let leader = Replica::start(plane, &flags).unwrap();
        leader.reconciled(&key, 1).await.unwrap();
        let standby = Replica::start(plane, &flags).unwrap();
        standby.ready().await.unwrap();
        // Ready, and a full lease duration later still idle.
        sleep(Duration::from_secs(4)).await;
        assert_eq!(standby.count(&key), 0);

        leader.shutdown.trigger();
        let stopped = timeout(Duration::from_secs(30), leader.run).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
        standby.reconciled(&key, 1).await.unwrap();

        standby.shutdown.trigger();
        let stopped = timeout(Duration::from_secs(30), standby.run).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    })
    .await
    .unwrap();
}

/// The Lease of the test of a lost leadership.
const LOST: &str = "capz-runner-test-lost";

#[tokio::test]
async fn a_leader_that_loses_its_lease_stops_reconciling_until_it_wins_it_again() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        config_map(&client, &namespace, "before", None).await.unwrap();
        let replica = Replica::start(
            plane,
            &[
                &format!("--namespace={namespace}"),
                "--leader-elect",
                &format!("--leader-election-namespace={namespace}"),
                // A Lease, and so a leadership series, of this test's own.
                &format!("--leader-election-id={LOST}"),
            ],
        )
        .unwrap();
        replica
            .reconciled(&format!("{namespace}/before"), 1)
            .await
            .unwrap();
        let leases = Api::<Lease>::namespaced(client.clone(), &namespace);
        let holder = async || {
            leases
                .get(LOST)
                .await
                .unwrap()
                .spec
                .and_then(|spec| spec.holder_identity)
        };
        let ours = holder().await;
        assert!(ours.is_some());

        // Another holder in the Lease, renewed now: leadership is lost at the next renewal.
        let intruder = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some("intruder".into()),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        leases
            .patch(LOST, &PatchParams::default(), &Patch::Merge(&intruder))
            .await
            .unwrap();
        let not_leading = format!(r#"leader_election_master_status{{name="{LOST}"}} 0"#);
        timeout(Duration::from_secs(10), async {
            while !get(replica.metrics, "/metrics")
                .await
                .is_ok_and(|(_, body)| body.contains(&not_leading))
            {
                sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("leadership was not given up");

        // No reconcile while another holds the Lease, and the process keeps running.
        config_map(&client, &namespace, "after", None).await.unwrap();
        sleep(Duration::from_millis(1500)).await;
        assert_eq!(
            replica.count(&format!("{namespace}/after")),
            0,
            "reconciled without leadership"
        );
        assert!(!replica.run.is_finished(), "the runner stopped");

        // The intruder never renews: its record expires and the replica leads again.
        replica
            .reconciled(&format!("{namespace}/after"), 1)
            .await
            .unwrap();
        assert_eq!(holder().await, ours);
        assert!(!replica.run.is_finished(), "the runner stopped");
        replica.shutdown.trigger();
        let stopped = timeout(Duration::from_secs(30), replica.run).await;
        assert!(matches!(stopped, Ok(Ok(Ok(())))), "{stopped:?}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn leader_timing_that_cannot_work_stops_the_runner_at_once() {
    let args = Args::try_parse_from([
        "capz-runner-test",
        "--kubeconfig=/nonexistent/kubeconfig",
        "--leader-elect",
        "--leader-elect-renew-deadline=20s",
        "--health-probe-bind-address=0",
        "--metrics-bind-address=0",
    ])
    .unwrap();
    let built = Arc::new(Mutex::new(false));
    let result = runner::run(ID, args, Shutdown::new(), {
        let built = built.clone();
        move |_| async move {
            *built.lock().unwrap_or_else(PoisonError::into_inner) = true;
            Ok(())
        }
    })
    .await;
    let Err(RunError::Leader(err @ LeaderError::Timing(_))) = result else {
        panic!("not a timing error: {result:?}");
    };
    assert!(err.to_string().contains("--leader-elect-renew-deadline"), "{err}");
    assert!(!*built.lock().unwrap(), "no controller was built");
}
