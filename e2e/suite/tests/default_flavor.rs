//! The default flavor, as `clusterctl generate cluster` writes it: the AzureCluster becomes Ready
//! with its control plane endpoint, the first control-plane machine gets its VM, the workers wait
//! for bootstrap data (no workload cluster exists, so kubeadm never initializes), and deleting the
//! Cluster leaves nothing behind in Azure.

use std::time::{Duration, Instant};

use arm_emulator::Config;
use arm_emulator::config::DEFAULT_SUBSCRIPTION;
use capz_e2e::{Environment, TestResult, condition, wait_list};
use kube::ResourceExt as _;

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
        converges(&environment, &namespace, applied_at).await?;
        deletes_without_leftovers(&environment, &namespace).await
    })
    .await?
}

/// The AzureCluster Ready with an endpoint, the first control-plane machine Ready with its VM,
/// and both workers waiting for bootstrap data.
async fn converges(environment: &Environment, namespace: &str, applied_at: Instant) -> TestResult {
    let clusters = environment.infrastructure("AzureCluster", namespace).await?;
    let ready = wait_list(
        &clusters,
        "",
        "AzureCluster Ready with an endpoint",
        CONVERGE,
        |all| {
            all.iter().any(|cluster| {
                cluster.data["status"]["ready"] == true
                    && cluster.data["spec"]["controlPlaneEndpoint"]["host"]
                        .as_str()
                        .is_some_and(|host| !host.is_empty())
            })
        },
    )
    .await?;
    eprintln!(
        "e2e: AzureCluster Ready {:.1} s after the apply, endpoint {}",
        applied_at.elapsed().as_secs_f64(),
        ready[0].data["spec"]["controlPlaneEndpoint"]
    );

    let machines = environment.infrastructure("AzureMachine", namespace).await?;
    let control_plane = wait_list(
        &machines,
        "cluster.x-k8s.io/control-plane",
        "the first control-plane AzureMachine Ready with providerID and addresses",
        CONVERGE,
        |all| {
            all.iter().any(|machine| {
                condition(machine, "Ready").is_some_and(|(status, _)| status == "True")
                    && machine.data["spec"]["providerID"]
                        .as_str()
                        .is_some_and(|id| id.starts_with("azure:///subscriptions/"))
                    && machine.data["status"]["addresses"]
                        .as_array()
                        .is_some_and(|addresses| !addresses.is_empty())
            })
        },
    )
    .await?;
    eprintln!(
        "e2e: control-plane AzureMachine {} Ready {:.1} s after the apply",
        control_plane[0].name_any(),
        applied_at.elapsed().as_secs_f64()
    );
    wait_list(
        &machines,
        "!cluster.x-k8s.io/control-plane",
        "two worker AzureMachines waiting for bootstrap data",
        CONVERGE,
        |all| {
            all.len() == 2
                && all.iter().all(|machine| {
                    condition(machine, "Ready").is_some_and(|(status, reason)| {
                        status == "False" && reason == "WaitingForBootstrapData"
                    })
                })
        },
    )
    .await?;
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
