//! The kit against a real kube-apiserver: conditions of two field managers on one object, and a
//! test-only controller built on the kit (finalizer, pause, externally managed infrastructure).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionStatus, ConditionType, Conditions};
use capz_kit::apply::{FieldManager, apply_status};
use capz_kit::cluster::{
    MANAGED_BY_ANNOTATION, PAUSED_ANNOTATION, is_externally_managed, is_paused, linked_cluster,
};
use capz_kit::conditions::{Observation, Reason, observe};
use capz_kit::finalizer::{FinalizerError, finalized};
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use capz_kit::kube::runtime::controller::{Action, Controller};
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::runtime::watcher;
use capz_kit::kube::{Client, ResourceExt as _};
use futures_util::StreamExt as _;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const FINALIZER: &str = "test.infrastructure.cluster.x-k8s.io";
const NETWORK: FieldManager = FieldManager::new("capz-test-network");
const LOAD_BALANCER: FieldManager = FieldManager::new("capz-test-loadbalancer");

/// The status fields one test controller owns.
#[derive(Debug, Serialize)]
struct OwnedStatus {
    conditions: Vec<capz_kit::api::common::conditions::Condition>,
}

/// A client of `plane` counting the requests it sends: reads, and everything else.
async fn counting_client(plane: &capz_harness::Plane) -> TestResult<(Client, Arc<Requests>)> {
    let kubeconfig = capz_kit::kube::config::Kubeconfig::read_from(plane.kubeconfig())?;
    let config = capz_kit::kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &capz_kit::kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let requests = Arc::new(Requests::default());
    let counted = requests.clone();
    let client = capz_kit::kube::client::ClientBuilder::try_from(config)?
        .with_layer(&tower::util::MapRequestLayer::new(
            move |request: http::Request<capz_kit::kube::client::Body>| {
                let count = if request.method() == http::Method::GET {
                    &counted.reads
                } else {
                    &counted.writes
                };
                count.fetch_add(1, Ordering::SeqCst);
                request
            },
        ))
        .build();
    Ok((client, requests))
}

/// Requests a client sent.
#[derive(Default)]
struct Requests {
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl Requests {
    /// Reads and writes.
    fn counts(&self) -> (usize, usize) {
        (
            self.reads.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
        )
    }
}

fn azure_cluster(name: &str, annotations: &[&str]) -> TestResult<AzureCluster> {
    let annotations: serde_json::Map<String, serde_json::Value> = annotations
        .iter()
        .map(|key| ((*key).to_owned(), serde_json::Value::String("true".into())))
        .collect();
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"location": "westeurope", "resourceGroup": name},
    }))?)
}

/// Applies `observations` as `manager`'s conditions on `object`, as a controller does.
async fn report(
    api: &Api<AzureCluster>,
    manager: &FieldManager,
    object: &AzureCluster,
    observations: Vec<Observation>,
) -> capz_kit::kube::Result<AzureCluster> {
    let current = object.status.as_ref().map(|status| &status.conditions);
    let status = OwnedStatus {
        conditions: observe(current, observations, Timestamp::now()),
    };
    apply_status(api, manager, object, &status).await
}

fn conditions(object: &AzureCluster) -> Vec<(String, ConditionStatus)> {
    object
        .status
        .as_ref()
        .map(|status| {
            status
                .conditions
                .0
                .iter()
                .map(|condition| (condition.type_.to_string(), condition.status))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn two_field_managers_keep_their_own_conditions_and_cannot_take_each_others() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| {
        Box::pin(two_managers(&client, &namespace)).await
    })
    .await?
}

fn pairs(expected: &[(&str, ConditionStatus)]) -> Vec<(String, ConditionStatus)> {
    expected
        .iter()
        .map(|(type_, status)| ((*type_).to_owned(), *status))
        .collect()
}

async fn two_managers(client: &Client, namespace: &str) -> TestResult {
    use ConditionStatus::{False, True};
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let object = api
        .create(&PostParams::default(), &azure_cluster("shared", &[])?)
        .await?;

    let object = report(
        &api,
        &NETWORK,
        &object,
        vec![Observation::holds(ConditionType::VNET_READY)],
    )
    .await?;
    let object = report(
        &api,
        &LOAD_BALANCER,
        &object,
        vec![Observation::fails(
            ConditionType::LOAD_BALANCERS_READY,
            Reason::CREATING,
            ConditionSeverity::Info,
            "creating the API server load balancer",
        )],
    )
    .await?;
    assert_eq!(
        conditions(&object),
        pairs(&[("VNetReady", True), ("LoadBalancersReady", False)])
    );

    // Each manager updates and drops only its own entries.
    let object = report(
        &api,
        &NETWORK,
        &object,
        vec![
            Observation::holds(ConditionType::VNET_READY),
            Observation::holds(ConditionType::SUBNETS_READY),
        ],
    )
    .await?;
    let object = report(
        &api,
        &LOAD_BALANCER,
        &object,
        vec![Observation::holds(ConditionType::LOAD_BALANCERS_READY)],
    )
    .await?;
    assert_eq!(
        conditions(&object),
        pairs(&[
            ("VNetReady", True),
            ("LoadBalancersReady", True),
            ("SubnetsReady", True)
        ])
    );
    let object = report(
        &api,
        &NETWORK,
        &object,
        vec![Observation::holds(ConditionType::SUBNETS_READY)],
    )
    .await?;
    assert_eq!(
        conditions(&object),
        pairs(&[("LoadBalancersReady", True), ("SubnetsReady", True)])
    );

    // A manager writing another's condition is a bug; the API server says so instead of
    // letting it overwrite the entry.
    let clash = report(
        &api,
        &LOAD_BALANCER,
        &object,
        vec![
            Observation::holds(ConditionType::LOAD_BALANCERS_READY),
            Observation::fails(
                ConditionType::SUBNETS_READY,
                Reason::FAILED,
                ConditionSeverity::Error,
                "not mine to say",
            ),
        ],
    )
    .await;
    match clash {
        Err(capz_kit::kube::Error::Api(status)) => assert_eq!(status.code, 409, "{status:?}"),
        other => return Err(format!("expected a conflict, got {other:?}").into()),
    }
    let unchanged = api.get("shared").await?;
    assert_eq!(
        conditions(&unchanged),
        pairs(&[("LoadBalancersReady", True), ("SubnetsReady", True)])
    );

    foreign_fields_are_taken_over(&api, unchanged).await
}

async fn foreign_fields_are_taken_over(api: &Api<AzureCluster>, unchanged: AzureCluster) -> TestResult {
    use ConditionStatus::{False, True};
    // Fields last written by a manager outside capz-rs (CAPZ's, here with an update as it makes
    // them) are taken over.
    let mut foreign = unchanged;
    if let Some(status) = foreign.status.as_mut() {
        for condition in &mut status.conditions.0 {
            condition.status = False;
        }
    }
    let capz = PostParams {
        field_manager: Some("manager".into()),
        ..PostParams::default()
    };
    let foreign = api.replace_status("shared", &capz, &foreign).await?;
    assert_eq!(
        conditions(&foreign),
        pairs(&[("LoadBalancersReady", False), ("SubnetsReady", False)])
    );
    let object = report(
        api,
        &NETWORK,
        &foreign,
        vec![Observation::holds(ConditionType::SUBNETS_READY)],
    )
    .await?;
    assert_eq!(
        conditions(&object),
        pairs(&[("LoadBalancersReady", False), ("SubnetsReady", True)])
    );
    Ok(())
}

#[derive(Debug, thiserror::Error)]
enum TestError {
    #[error(transparent)]
    Kube(#[from] capz_kit::kube::Error),
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
}

struct Context {
    client: Client,
    cleanups: AtomicUsize,
}

/// The test controller: skips paused and externally managed clusters, keeps a finalizer and
/// reports `VNetReady`.
async fn reconcile(object: Arc<AzureCluster>, context: Arc<Context>) -> Result<Action, TestError> {
    if is_externally_managed(&*object) || is_paused(None, &*object) {
        return Ok(Action::await_change());
    }
    let api =
        Api::<AzureCluster>::namespaced(context.client.clone(), &object.namespace().unwrap_or_default());
    finalized(&api, FINALIZER, object, async |event| match event {
        Event::Apply(object) => {
            report(
                &api,
                &NETWORK,
                &object,
                vec![Observation::holds(ConditionType::VNET_READY)],
            )
            .await?;
            Ok(Action::await_change())
        }
        Event::Cleanup(_) => {
            context.cleanups.fetch_add(1, Ordering::SeqCst);
            Ok(Action::await_change())
        }
    })
    .await
}

fn reconciled(object: &AzureCluster) -> bool {
    object.finalizers().iter().any(|finalizer| finalizer == FINALIZER)
        && object
            .status
            .as_ref()
            .is_some_and(|status| Conditions::is_true(&status.conditions, &ConditionType::VNET_READY))
}

#[tokio::test]
async fn a_controller_on_the_kit_keeps_its_finalizer_and_skips_paused_and_external_clusters() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| {
        Box::pin(controller_on_the_kit(&client, &namespace)).await
    })
    .await?
}

async fn controller_on_the_kit(client: &Client, namespace: &str) -> TestResult {
    let api = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let context = Arc::new(Context {
        client: client.clone(),
        cleanups: AtomicUsize::new(0),
    });
    let controller = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(
                reconcile,
                |_, _, _| Action::requeue(Duration::from_secs(1)),
                context.clone(),
            )
            .for_each(|_| async {}),
    );

    // Created before the plain one, so the controller has seen them by the time it is done.
    api.create(
        &PostParams::default(),
        &azure_cluster("paused", &[PAUSED_ANNOTATION])?,
    )
    .await?;
    api.create(
        &PostParams::default(),
        &azure_cluster("external", &[MANAGED_BY_ANNOTATION])?,
    )
    .await?;
    api.create(&PostParams::default(), &azure_cluster("plain", &[])?)
        .await?;
    let wait = Duration::from_secs(30);
    capz_harness::wait_for(&api, "plain", "the finalizer and VNetReady", wait, reconciled).await?;
    for skipped in ["paused", "external"] {
        let object = api.get(skipped).await?;
        assert!(
            object.finalizers().is_empty(),
            "{skipped}: {:?}",
            object.finalizers()
        );
        assert!(
            conditions(&object).is_empty(),
            "{skipped}: {:?}",
            conditions(&object)
        );
    }

    // Unpausing brings the cluster back to the controller.
    let unpause = serde_json::json!({"metadata": {"annotations": {PAUSED_ANNOTATION: null}}});
    api.patch("paused", &PatchParams::default(), &Patch::Merge(&unpause))
        .await?;
    capz_harness::wait_for(&api, "paused", "the finalizer and VNetReady", wait, reconciled).await?;

    // Deleting runs the cleanup, then the finalizer goes and so does the object.
    api.delete("plain", &DeleteParams::default()).await?;
    let deadline = tokio::time::Instant::now() + wait;
    while api.get_opt("plain").await?.is_some() {
        assert!(tokio::time::Instant::now() < deadline, "plain was not deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(context.cleanups.load(Ordering::SeqCst) >= 1);
    controller.abort();
    Ok(())
}

#[tokio::test]
async fn a_finalizer_is_added_to_an_object_a_peer_changed_meanwhile_and_applied_at_once() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        api.create(&PostParams::default(), &azure_cluster("raced", &[])?)
            .await?;
        // The controller's copy is from before a peer added its own finalizer.
        let stale = api.get("raced").await?;
        let peer = serde_json::json!({"metadata": {"finalizers": ["peer.infrastructure.cluster.x-k8s.io"]}});
        api.patch("raced", &PatchParams::default(), &Patch::Merge(&peer))
            .await?;
        let applied = AtomicUsize::new(0);
        let (counting, requests) = counting_client(plane).await?;
        let counted = Api::<AzureCluster>::namespaced(counting, &namespace);
        let result: Result<Action, TestError> =
            finalized(&counted, FINALIZER, Arc::new(stale), async |event| {
                if let Event::Apply(object) = event {
                    assert!(object.finalizers().iter().any(|held| held == FINALIZER));
                    applied.fetch_add(1, Ordering::SeqCst);
                }
                Ok(Action::await_change())
            })
            .await;
        result?;
        assert_eq!(
            applied.load(Ordering::SeqCst),
            1,
            "the apply runs in the same reconcile"
        );
        assert_eq!(
            requests.counts(),
            (0, 2),
            "the add refused for a newer object is appended at once, without reading it again"
        );
        let stored = api.get("raced").await?;
        assert_eq!(
            stored.finalizers(),
            ["peer.infrastructure.cluster.x-k8s.io", FINALIZER],
            "the peer's finalizer is kept"
        );
        TestResult::Ok(())
    })
    .await?
}

#[tokio::test]
async fn a_finalizer_is_appended_to_a_list_peers_grew_meanwhile_without_a_conflict() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        api.create(&PostParams::default(), &azure_cluster("appended", &[])?)
            .await?;
        let first =
            serde_json::json!({"metadata": {"finalizers": ["first.infrastructure.cluster.x-k8s.io"]}});
        api.patch("appended", &PatchParams::default(), &Patch::Merge(&first))
            .await?;
        // The controller's copy has the first peer's finalizer, not the second's.
        let stale = api.get("appended").await?;
        let second = serde_json::json!({"metadata": {"finalizers": [
            "first.infrastructure.cluster.x-k8s.io",
            "second.infrastructure.cluster.x-k8s.io",
        ]}});
        api.patch("appended", &PatchParams::default(), &Patch::Merge(&second))
            .await?;
        let (counting, requests) = counting_client(plane).await?;
        let counted = Api::<AzureCluster>::namespaced(counting, &namespace);
        let result: Result<Action, TestError> = finalized(&counted, FINALIZER, Arc::new(stale), async |_| {
            Ok(Action::await_change())
        })
        .await;
        result?;
        assert_eq!(requests.counts(), (0, 1), "one append, never refused");
        let stored = api.get("appended").await?;
        assert_eq!(
            stored.finalizers(),
            [
                "first.infrastructure.cluster.x-k8s.io",
                "second.infrastructure.cluster.x-k8s.io",
                FINALIZER
            ],
            "both peers' finalizers are kept and ours added once"
        );
        TestResult::Ok(())
    })
    .await?
}

#[tokio::test]
async fn a_cluster_is_found_by_its_infrastructure_reference_before_cluster_api_links_it() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let cluster = |name: &str, infrastructure: &str| {
            format!(
                "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {name}}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureCluster, name: {infrastructure}}}
"
            )
        };
        capz_harness::apply_yaml(&client, &namespace, &cluster("one", "named-once")).await?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        for name in ["named-once", "named-twice", "not-named"] {
            api.create(&PostParams::default(), &azure_cluster(name, &[])?)
                .await?;
        }
        let linked = |name: &'static str| {
            let api = api.clone();
            let client = client.clone();
            async move {
                let object = api.get(name).await?;
                TestResult::Ok(
                    linked_cluster(&client, &object)
                        .await?
                        .map(|cluster| cluster.name_any()),
                )
            }
        };
        assert_eq!(linked("named-once").await?.as_deref(), Some("one"));
        assert_eq!(linked("not-named").await?, None);
        capz_harness::apply_yaml(
            &client,
            &namespace,
            &[cluster("two", "named-twice"), cluster("three", "named-twice")].join("---\n"),
        )
        .await?;
        assert_eq!(
            linked("named-twice").await?,
            None,
            "two Clusters name it: neither is taken"
        );
        // Once Cluster API labels (or owns) the object, that is what counts.
        let label = serde_json::json!({"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "two"}}});
        api.patch("named-twice", &PatchParams::default(), &Patch::Merge(&label))
            .await?;
        assert_eq!(linked("named-twice").await?.as_deref(), Some("two"));
        TestResult::Ok(())
    })
    .await?
}
