//! The default flavor, as `clusterctl generate cluster` writes it: the AzureCluster becomes Ready
//! with its control plane endpoint, the first control-plane machine gets its VM, the workers wait
//! for bootstrap data (no workload cluster exists, so kubeadm never initializes), and deleting the
//! Cluster leaves nothing behind in Azure. Every Azure resource capz-rs wrote shows in a Normal
//! `Created` event on its object, and in a `Deleted` event when it (or the resource group holding
//! it) is deleted; no event carries a secret.

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION};
use capz_e2e::{Environment, TestResult};
use k8s_openapi::api::events::v1::Event;
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
        environment.create_identity_secret(&namespace).await?;
        let manifest = environment.generate(CLUSTER, &namespace, 2).await?;
        let applied_at = Instant::now();
        let since = SystemTime::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest).await?;
        environment.converged(&namespace, 2, CONVERGE, applied_at).await?;
        let built = environment.created_in_azure();
        deletes_without_leftovers(&environment, &namespace).await?;
        every_change_is_an_event(&environment, &namespace, since, &built).await
    })
    .await?
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
