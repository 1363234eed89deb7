//! The default flavor, as `clusterctl generate cluster` writes it: the AzureCluster becomes Ready
//! with its control plane endpoint, the first control-plane machine gets its VM, the workers wait
//! for bootstrap data (no workload cluster exists, so kubeadm never initializes), and deleting the
//! Cluster leaves nothing behind in Azure.

use std::time::{Duration, Instant};

use arm_emulator::Config;
use arm_emulator::config::DEFAULT_SUBSCRIPTION;
use capz_e2e::{Environment, TestResult};

const CONVERGE: Duration = Duration::from_mins(3);
const CLUSTER: &str = "flavor";

#[tokio::test]
async fn the_default_flavor_converges_and_deletes_without_leftovers() -> TestResult {
    let environment = Environment::start(Config {
        retry_after_seconds: 1,
        ..Config::default()
    })
    .await?;
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        environment.create_identity_secret(&namespace).await?;
        let manifest = environment.generate(CLUSTER, &namespace, 2).await?;
        let applied_at = Instant::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest).await?;
        environment.converged(&namespace, 2, CONVERGE, applied_at).await?;
        deletes_without_leftovers(&environment, &namespace).await
    })
    .await?
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
