//! `clusterctl move` of a converged cluster from one management cluster to another, as a platform
//! team moves clusters off a bootstrap cluster: two planes, each with its own service-account
//! issuer, Cluster API and capz-rs, working on one emulated Azure.
//!
//! Two clusters move, each in its namespace: one of the default flavor and one of the `aks`
//! flavor, both signing in with workload identity, set up through ARM as a user does it. Its
//! federated credential trusts only the source's issuer, so after the move the target's
//! controllers are refused a token until the user adds a federated credential for the target's
//! issuer; then the target manages both clusters (a worker is added, an AKS pool scales out)
//! without the move itself having written anything to Azure.

use std::time::{Duration, Instant, SystemTime};

use capz_e2e::{Environment, TestResult, condition_message, document, is_write, rbac_trusting, wait_list};
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::{CONVERGE, is_true};

const NAME: &str = "moved";
const AKS: &str = "moved-aks";
const WORKERS: &str = "cluster.x-k8s.io/deployment-name=moved-md-0";
/// The first retry after a refused sign-in comes a minute later; Cluster API then reconnects.
const RECOVER: Duration = Duration::from_mins(4);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_cluster_is_managed_by_the_target_once_its_issuer_is_federated() -> TestResult {
    let (source, target) = Environment::start_pair(|source, target| rbac_trusting(&[source, target])).await?;
    let client_id = source.workload_identity_through_arm().await?;
    let client = source.client.clone();
    let both = async |namespace: String, managed: String| -> TestResult {
        let applied_at = source
            .create_cluster_with(NAME, &namespace, (1, 1), true, |objects| {
                signs_in_with_workload_identity(objects, &client_id)
            })
            .await?;
        create_aks(&source, &managed, &client_id).await?;
        source.available(NAME, &namespace, CONVERGE, applied_at).await?;
        machines_ready(&source, &namespace, 1, CONVERGE).await?;
        source.managed_control_planes_ready(&managed, 1, CONVERGE).await?;
        source
            .machine_pool_nodes(&managed, &format!("{AKS}-pool1"), 1, CONVERGE)
            .await?;

        let moving = SystemTime::now();
        let started = Instant::now();
        let target_kubeconfig = target.plane.kubeconfig().display().to_string();
        for namespace in [&namespace, &managed] {
            source
                .clusterctl
                .run(&[
                    "move",
                    "--namespace",
                    namespace,
                    "--to-kubeconfig",
                    &target_kubeconfig,
                ])
                .await?;
        }
        let moved = SystemTime::now();
        eprintln!(
            "e2e: clusterctl move took {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let written: Vec<String> = source
            .requests_since(moving)
            .iter()
            .filter(|request| request.received <= moved && writes_azure(request))
            .map(|request| format!("{} {} {}", request.method, request.path, request.status))
            .collect();
        assert!(
            written.is_empty(),
            "Azure was written during the move: {written:#?}"
        );
        let left = source
            .cluster_api("Cluster", &namespace)
            .await?
            .list(&ListParams::default())
            .await?;
        assert!(left.items.is_empty(), "the source still has the Cluster");

        sign_in_refused_until_federated(&target, &namespace, &managed).await?;
        scale_up(&target, &namespace).await?;
        aks_pool_scaled(&target, &managed).await
    };
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        capz_harness::with_temp_namespace(&client, async |managed| both(namespace, managed).await).await?
    })
    .await?
}

/// Applies a cluster of the `aks` flavor with one Node a pool in `namespace`, signing in as the
/// workload identity `client_id`.
async fn create_aks(source: &Environment, namespace: &str, client_id: &str) -> TestResult {
    let generated = source
        .generate_flavor(Some("aks"), AKS, namespace, 1, &[])
        .await?;
    // A version AKS offers: it has only some patches of each minor.
    let generated = generated.replace(
        &format!("version: {}", capz_e2e::KUBERNETES_VERSION),
        "version: v1.33.5",
    );
    let mut objects = capz_e2e::manifest(&generated)?;
    signs_in_with_workload_identity(&mut objects, client_id)?;
    source.apply(namespace, &objects).await
}

/// The target scales the AKS cluster's User pool from one Node to two: the agent pool grows in
/// Azure and the new instance is a Node of the MachinePool; the control plane stays Ready.
async fn aks_pool_scaled(target: &Environment, namespace: &str) -> TestResult {
    let started = Instant::now();
    let pool = format!("{AKS}-pool1");
    target
        .cluster_api("MachinePool", namespace)
        .await?
        .patch(
            &pool,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    target.machine_pool_nodes(namespace, &pool, 2, RECOVER).await?;
    eprintln!(
        "e2e: the target scaled the AKS pool to two {:.1} s after the change",
        started.elapsed().as_secs_f64()
    );
    let plane = target
        .infrastructure("AzureManagedControlPlane", namespace)
        .await?
        .get(AKS)
        .await?;
    assert!(
        is_true(&plane, "Ready"),
        "the AzureManagedControlPlane is not Ready: {:?}",
        condition_message(&plane, "Ready")
    );
    Ok(())
}

/// Makes the cluster's AzureClusterIdentity sign in as the workload identity `client_id`.
fn signs_in_with_workload_identity(objects: &mut [DynamicObject], client_id: &str) -> TestResult {
    let identity = document(objects, "AzureClusterIdentity")?;
    let spec = identity.data["spec"]
        .as_object_mut()
        .ok_or("the AzureClusterIdentity has no spec")?;
    spec.remove("clientSecret");
    spec.insert("type".to_owned(), json!("WorkloadIdentity"));
    spec.insert("clientID".to_owned(), json!(client_id));
    Ok(())
}

/// Whether a request changed something in Azure: sign-ins (token requests) and the sandbox's own
/// endpoints (`/_emulator/...`, which the simulator polls and registers routes with) do not.
fn writes_azure(request: &arm_emulator::LoggedRequest) -> bool {
    is_write(request) && !request.path.ends_with("/token") && !request.path.starts_with("/_emulator")
}

/// The target's controllers sign in with tokens of the target's issuer, which no federated
/// credential trusts yet: the AzureCluster (in `namespace`) and the AzureManagedControlPlane
/// (in `managed`) say the credential was rejected. Once the user adds one for the target's
/// issuer through ARM, the next attempt signs in and both are Ready again.
async fn sign_in_refused_until_federated(target: &Environment, namespace: &str, managed: &str) -> TestResult {
    let clusters = target.infrastructure("AzureCluster", namespace).await?;
    let planes = target.infrastructure("AzureManagedControlPlane", managed).await?;
    let refused = |cluster: &DynamicObject| {
        cluster.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|condition| condition["reason"] == "CredentialRejected")
            .map(|condition| condition["message"].as_str().unwrap_or_default().to_owned())
    };
    for (objects, what) in [
        (&clusters, "the moved AzureCluster"),
        (&planes, "the moved AzureManagedControlPlane"),
    ] {
        let seen = wait_list(
            objects,
            "",
            &format!("{what} refused a token on the target"),
            CONVERGE,
            |all| all.iter().any(|object| refused(object).is_some()),
        )
        .await?;
        let message = seen.iter().find_map(refused).unwrap_or_default();
        assert!(
            message.contains("AADSTS70021"),
            "{what}: the message does not say no federated credential matched: {message}"
        );
    }
    let cluster = clusters.get(NAME).await?;
    assert!(
        cluster.data["status"]["ready"] != true,
        "the AzureCluster is ready without a token"
    );
    let federated = Instant::now();
    target.federate_through_arm("capz-target").await?;
    wait_list(
        &clusters,
        "",
        "the moved AzureCluster Ready on the target",
        RECOVER,
        |all| all.iter().any(|cluster| cluster.data["status"]["ready"] == true),
    )
    .await?;
    wait_list(
        &planes,
        "",
        "the moved AzureManagedControlPlane Ready on the target",
        RECOVER,
        |all| all.iter().any(|plane| is_true(plane, "Ready")),
    )
    .await?;
    eprintln!(
        "e2e: the AzureCluster was Ready on the target {:.1} s after its issuer was federated",
        federated.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The target scales the MachineDeployment from one worker to two: a new VM, a Node, a Ready
/// Machine.
async fn scale_up(target: &Environment, namespace: &str) -> TestResult {
    let before = target.created_of_type("microsoft.compute/virtualmachines").len();
    let started = Instant::now();
    target
        .cluster_api("MachineDeployment", namespace)
        .await?
        .patch(
            "moved-md-0",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    machines_ready(target, namespace, 2, RECOVER).await?;
    eprintln!(
        "e2e: the target scaled the MachineDeployment to two {:.1} s after the change",
        started.elapsed().as_secs_f64()
    );
    let after = target.created_of_type("microsoft.compute/virtualmachines").len();
    assert_eq!(after, before + 1, "one VM was added for the new worker");
    let cluster = target
        .infrastructure("AzureCluster", namespace)
        .await?
        .get(NAME)
        .await?;
    assert!(
        is_true(&cluster, "Ready"),
        "the AzureCluster is not Ready: {:?}",
        condition_message(&cluster, "Ready")
    );
    Ok(())
}

/// Waits until the MachineDeployment's `count` Machines are Ready (their Nodes are).
async fn machines_ready(
    environment: &Environment,
    namespace: &str,
    count: usize,
    timeout: Duration,
) -> TestResult {
    let machines = environment.cluster_api("Machine", namespace).await?;
    wait_list(
        &machines,
        WORKERS,
        &format!("{count} worker Machines Ready"),
        timeout,
        |all| all.len() == count && all.iter().all(|machine| is_true(machine, "Ready")),
    )
    .await?;
    Ok(())
}
