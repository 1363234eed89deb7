//! The aks controller against a real kube-apiserver and the in-process ARM emulator: the Cluster
//! API objects of an AKS cluster (a Cluster, its AzureManagedControlPlane and AzureManagedCluster,
//! two MachinePools with their AzureManagedMachinePools) are stored by the test (no Cluster API
//! controllers run), the controller runs in-process, and the emulator's state and request log
//! tell what it did.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use capz_harness::fixtures::{CLUSTER, bootstrapped, machine_controller, machine_pool};
use capz_harness::{EmulatedAzure, InProcessController, TestResult};
use capz_kit::api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
use capz_kit::azure::models::container_service::ManagedCluster;
use capz_kit::identity::IdentitySettings;
use capz_kit::k8s_openapi::api::core::v1::Secret;
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams};
use capz_kit::kube::{Client, ResourceExt as _};
use serde_json::json;

const WAIT: Duration = Duration::from_mins(2);
const GROUP: &str = "aks-rg";

fn cluster_id() -> String {
    format!(
        "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.ContainerService/managedClusters/{CLUSTER}"
    )
}

fn controller(
    plane: &capz_harness::Plane,
    namespace: &str,
    settings: IdentitySettings,
) -> TestResult<InProcessController> {
    Ok(machine_controller(capz_aks::ID, plane, namespace, move |ctx| {
        capz_aks::run(ctx, settings)
    })?)
}

/// The identity, the Cluster, its control plane and its infrastructure cluster.
async fn cluster_objects(client: &Client, namespace: &str) -> TestResult {
    capz_harness::apply_yaml(
        client,
        namespace,
        &format!(
            r"
apiVersion: v1
kind: Secret
metadata: {{name: sp}}
stringData: {{clientSecret: {DEFAULT_CLIENT_SECRET}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata: {{name: emulator}}
spec:
  type: ServicePrincipal
  tenantID: {DEFAULT_TENANT}
  clientID: {DEFAULT_CLIENT_ID}
  clientSecret: {{name: sp, namespace: {namespace}}}
  allowedNamespaces: {{}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {CLUSTER}}}
spec:
  clusterNetwork:
    pods: {{cidrBlocks: [192.168.0.0/16]}}
    services: {{cidrBlocks: [10.96.0.0/12]}}
  controlPlaneRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureManagedControlPlane, name: {CLUSTER}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureManagedCluster, name: {CLUSTER}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureManagedControlPlane
metadata:
  name: {CLUSTER}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
spec:
  version: v1.33.5
  location: westeurope
  resourceGroupName: {GROUP}
  subscriptionID: {DEFAULT_SUBSCRIPTION}
  identityRef: {{apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: AzureClusterIdentity, name: emulator, namespace: {namespace}}}
  sku: {{tier: Free}}
  networkPlugin: azure
  loadBalancerSKU: Standard
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureManagedCluster
metadata:
  name: {CLUSTER}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
spec: {{}}
"
        ),
    )
    .await?;
    Ok(())
}

/// A MachinePool of `replicas` and its AzureManagedMachinePool `name` of `mode`.
async fn pool(client: &Client, namespace: &str, name: &str, mode: &str, replicas: u32) -> TestResult {
    let machine_pool = machine_pool(name, replicas, &[], "v1.33.5", "AzureManagedMachinePool");
    bootstrapped(client, namespace, name, ("MachinePool", &machine_pool), |uid| {
        format!(
            r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureManagedMachinePool
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
  ownerReferences: [{{apiVersion: cluster.x-k8s.io/v1beta2, kind: MachinePool, name: {name}, uid: {uid}}}]
spec:
  mode: {mode}
  sku: Standard_D2s_v3
  name: {name}
"
        )
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_aks_cluster_is_built_with_its_pools_reported_and_deleted_without_pool_deletes() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = EmulatedAzure::start(Config::default()).await?;
        cluster_objects(&client, &namespace).await?;
        pool(&client, &namespace, "pool0", "System", 2).await?;
        pool(&client, &namespace, "pool1", "User", 1).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(lifecycle(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn lifecycle(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    built(client, namespace, azure).await?;
    steady_and_scaled(client, namespace, azure).await?;
    upgraded(client, namespace, azure).await?;
    changed_in_place(client, namespace, azure).await?;
    deleted(client, namespace, azure).await
}

/// The cluster is built with both pools, and Cluster API's contract is written.
async fn built(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
    let plane = capz_harness::wait_for(&planes, CLUSTER, "the control plane initialized", WAIT, |plane| {
        plane
            .status
            .as_ref()
            .is_some_and(|status| status.ready == Some(true) && status.initialized == Some(true))
    })
    .await?;
    let status = plane.status.as_ref().ok_or("no status")?;
    assert_eq!(status.version.as_deref(), Some("v1.33.5"));
    let endpoint = plane.spec.control_plane_endpoint.clone().ok_or("no endpoint")?;
    assert_eq!(endpoint.port, Some(443));
    let host = endpoint.host.clone().unwrap_or_default();
    assert!(host.ends_with(".azmk8s.io"), "{host}");

    // Both pools went inline with the cluster's creation, no agentPools PUT of their own.
    let built = azure
        .get::<ManagedCluster>(&cluster_id())
        .await?
        .ok_or("no managed cluster")?;
    let properties = built.properties.clone().unwrap_or_default();
    let mut pools: Vec<String> = properties
        .agent_pool_profiles
        .iter()
        .flatten()
        .filter_map(|pool| pool.name.clone())
        .collect();
    pools.sort();
    assert_eq!(pools, ["pool0", "pool1"]);
    let network = properties.network_profile.clone().unwrap_or_default();
    assert_eq!(network.service_cidr.as_deref(), Some("10.96.0.0/12"));
    assert_eq!(network.dns_service_ip.as_deref(), Some("10.96.0.10"));

    // The kubeconfig reaches the cluster's FQDN; the CA Secret holds what it trusts.
    let secrets = Api::<Secret>::namespaced(client.clone(), namespace);
    let kubeconfig = secrets.get(&format!("{CLUSTER}-kubeconfig")).await?;
    let value = kubeconfig
        .data
        .as_ref()
        .and_then(|data| data.get("value"))
        .ok_or("no value")?;
    let text = String::from_utf8(value.0.clone())?;
    assert!(text.contains(&format!("https://{host}:443")), "{text}");
    assert_eq!(
        kubeconfig
            .labels()
            .get("cluster.x-k8s.io/cluster-name")
            .map(String::as_str),
        Some(CLUSTER)
    );
    assert!(
        kubeconfig
            .owner_references()
            .iter()
            .any(|owner| owner.kind == "AzureManagedControlPlane")
    );
    let ca = secrets.get(&format!("{CLUSTER}-ca")).await?;
    let certificate = ca
        .data
        .as_ref()
        .and_then(|data| data.get("tls.crt"))
        .ok_or("no tls.crt")?;
    assert!(String::from_utf8_lossy(&certificate.0).contains("BEGIN CERTIFICATE"));

    // The infrastructure cluster follows the control plane.
    let clusters = Api::<AzureManagedCluster>::namespaced(client.clone(), namespace);
    let infrastructure = capz_harness::wait_for(
        &clusters,
        CLUSTER,
        "the AzureManagedCluster ready",
        WAIT,
        |cluster| {
            cluster.status.as_ref().and_then(|status| status.ready) == Some(true)
                && cluster.spec.control_plane_endpoint.is_some()
        },
    )
    .await?;
    assert_eq!(infrastructure.spec.control_plane_endpoint, Some(endpoint));

    // Each pool reports its scale set's instances, sorted.
    let pool_api = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    for (name, replicas) in [("pool0", 2), ("pool1", 1)] {
        let pool = capz_harness::wait_for(&pool_api, name, "the pool ready", WAIT, |pool| {
            pool.status.as_ref().and_then(|status| status.ready) == Some(true)
        })
        .await?;
        let ids = pool.spec.provider_id_list.clone().unwrap_or_default();
        assert_eq!(ids.len(), replicas, "{ids:?}");
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        assert!(
            ids.iter().all(|id| id.starts_with("azure:///subscriptions/")
                && id.contains("/virtualMachineScaleSets/aks-")),
            "{ids:?}"
        );
        assert_eq!(
            pool.status.as_ref().and_then(|status| status.replicas),
            i32::try_from(replicas).ok()
        );
    }

    Ok(())
}

/// A steady cluster writes nothing; a scale is one agentPools write.
async fn steady_and_scaled(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let pool_api = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    // Nothing but reads: not even the credentials are listed again (a POST) while they are new.
    let before = azure.writes().len();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let writes: Vec<String> = azure.writes()[before..].to_vec();
    assert_eq!(writes, [] as [String; 0], "a steady cluster wrote");

    // Scaling a pool is one agentPools write.
    Api::<capz_kit::api::capi::MachinePool>::namespaced(client.clone(), namespace)
        .patch(
            "pool1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await?;
    capz_harness::wait_for(&pool_api, "pool1", "pool1 scaled to 2", WAIT, |pool| {
        pool.spec
            .provider_id_list
            .as_ref()
            .is_some_and(|ids| ids.len() == 2)
    })
    .await?;
    assert!(
        azure
            .writes()
            .iter()
            .any(|call| call.starts_with("PUT ") && call.ends_with("/agentPools/pool1")),
        "{:?}",
        azure.writes()
    );

    Ok(())
}

fn pool_id(pool: &str) -> String {
    format!("{}/agentPools/{pool}", cluster_id())
}

/// The index in the request log of the first PUT to `path` at or after `from`.
fn first_put(azure: &EmulatedAzure, from: usize, path: &str) -> Option<usize> {
    azure.arm_calls()[from..]
        .iter()
        .position(|call| call == &format!("PUT {path}"))
        .map(|at| from + at)
}

/// Both the control plane and its MachinePools asked for the next minor at once: the managed
/// cluster is upgraded first, then each pool; a version that skips a minor is refused by AKS
/// and said so on the control plane.
async fn upgraded(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
    let machine_pools = Api::<capz_kit::api::capi::MachinePool>::namespaced(client.clone(), namespace);
    // 1.33 to 1.35 skips a minor: AKS refuses, and the control plane says why.
    planes
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": "v1.35.0"}})),
        )
        .await?;
    let refused = capz_harness::wait_for(&planes, CLUSTER, "the skipped minor refused", WAIT, |plane| {
        plane.status.as_ref().is_some_and(|status| {
            status.conditions.0.iter().any(|condition| {
                condition.type_.as_str() == "ManagedClusterRunning"
                    && condition
                        .message
                        .as_deref()
                        .is_some_and(|message| message.contains("not allowed"))
            })
        })
    })
    .await?;
    let status = refused.status.as_ref().ok_or("no status")?;
    assert_eq!(
        status.version.as_deref(),
        Some("v1.33.5"),
        "the version that runs is kept"
    );
    planes
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": "v1.33.5"}})),
        )
        .await?;
    capz_harness::wait_for(&planes, CLUSTER, "the control plane ready again", WAIT, |plane| {
        plane.status.as_ref().is_some_and(|status| {
            status.conditions.0.iter().any(|condition| {
                condition.type_.as_str() == "ManagedClusterRunning"
                    && condition.status == capz_kit::api::common::conditions::ConditionStatus::True
            })
        })
    })
    .await?;
    let from = azure.arm_calls().len();
    planes
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"version": "v1.34.1"}})),
        )
        .await?;
    for pool in ["pool0", "pool1"] {
        let version = json!({"spec": {"template": {"spec": {"version": "v1.34.1"}}}});
        machine_pools
            .patch(pool, &PatchParams::default(), &Patch::Merge(version))
            .await?;
    }
    capz_harness::wait_for(&planes, CLUSTER, "the control plane at v1.34.1", WAIT, |plane| {
        plane.status.as_ref().and_then(|status| status.version.as_deref()) == Some("v1.34.1")
    })
    .await?;
    let pool_api = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    for pool in ["pool0", "pool1"] {
        let mut upgraded = false;
        for _ in 0..120 {
            let found = azure
                .get::<capz_kit::azure::models::container_service::AgentPool>(&pool_id(pool))
                .await?;
            let properties = found.and_then(|found| found.properties).unwrap_or_default();
            if properties.orchestrator_version.as_deref() == Some("1.34.1")
                && properties.provisioning_state
                    == Some(capz_kit::azure::models::ProvisioningState::Succeeded)
            {
                upgraded = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(upgraded, "{pool} was not upgraded");
        let cluster_put = first_put(azure, from, &cluster_id()).ok_or("no cluster PUT")?;
        let pool_put = first_put(azure, from, &pool_id(pool)).ok_or("no pool PUT")?;
        assert!(
            cluster_put < pool_put,
            "{pool} was written before the control plane"
        );
        pool_api.get(pool).await?;
    }

    Ok(())
}

/// Labels, taints and the autoscaler's bounds change on the pool itself: one agentPools write,
/// the same scale set and instances.
async fn changed_in_place(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let pool_api = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    let before = pool_api
        .get("pool1")
        .await?
        .spec
        .provider_id_list
        .unwrap_or_default();
    let change = json!({"spec": {
        "nodeLabels": {"team": "a"},
        "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
        "scaling": {"minSize": 1, "maxSize": 4},
    }});
    pool_api
        .patch("pool1", &PatchParams::default(), &Patch::Merge(change))
        .await?;
    let mut applied = None;
    for _ in 0..120 {
        let found = azure
            .get::<capz_kit::azure::models::container_service::AgentPool>(&pool_id("pool1"))
            .await?;
        let properties = found.and_then(|found| found.properties).unwrap_or_default();
        if properties.node_taints.as_deref() == Some(&["dedicated=batch:NoSchedule".to_owned()][..])
            && properties.enable_auto_scaling == Some(true)
        {
            applied = Some(properties);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let applied = applied.ok_or("the pool's settings were not written")?;
    assert_eq!(
        applied
            .node_labels
            .unwrap_or_default()
            .get("team")
            .map(String::as_str),
        Some("a")
    );
    assert_eq!((applied.min_count, applied.max_count), (Some(1), Some(4)));
    let after = capz_harness::wait_for(&pool_api, "pool1", "pool1 settled", WAIT, |pool| {
        pool.status.as_ref().and_then(|status| status.ready) == Some(true)
    })
    .await?;
    assert_eq!(
        after.spec.provider_id_list.unwrap_or_default(),
        before,
        "no node was replaced"
    );
    // While AKS's autoscaler sizes the pool, its MachinePool says so and follows AKS's count.
    let machine_pools = Api::<capz_kit::api::capi::MachinePool>::namespaced(client.clone(), namespace);
    capz_harness::wait_for(
        &machine_pools,
        "pool1",
        "the MachinePool following the autoscaler",
        WAIT,
        |pool| {
            pool.annotations()
                .get("cluster.x-k8s.io/replicas-managed-by")
                .map(String::as_str)
                == Some("true")
        },
    )
    .await?;
    Ok(())
}

/// Deletes the Cluster, which a test finalizer holds (as Cluster API holds it while its members
/// go); gives its API for letting it go.
async fn delete_held_cluster(
    client: &Client,
    namespace: &str,
) -> TestResult<Api<capz_kit::api::capi::Cluster>> {
    let clusters = Api::<capz_kit::api::capi::Cluster>::namespaced(client.clone(), namespace);
    clusters
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test/hold"]}})),
        )
        .await?;
    clusters.delete(CLUSTER, &DeleteParams::default()).await?;
    Ok(clusters)
}

async fn deleted(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
    let pool_api = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    // The whole cluster goes: its Cluster is deleted first (Cluster API marks it), the pools let
    // go without a DELETE of their own, and the managed cluster, network and group are deleted.
    let clusters_api = delete_held_cluster(client, namespace).await?;
    for name in ["pool0", "pool1"] {
        capz_harness::delete_and_wait(&pool_api, name, WAIT).await?;
    }
    capz_harness::delete_and_wait(&planes, CLUSTER, WAIT).await?;
    let pool_deletes: Vec<String> = azure
        .arm_calls()
        .into_iter()
        .filter(|call| call.starts_with("DELETE ") && call.contains("/agentPools/"))
        .collect();
    assert_eq!(pool_deletes, [] as [String; 0]);
    assert!(
        azure.get::<ManagedCluster>(&cluster_id()).await?.is_none(),
        "the managed cluster is left"
    );
    assert!(
        azure.deleted_in_order(&[
            &format!("managedClusters/{CLUSTER}"),
            &format!("resourceGroups/{GROUP}")
        ]),
        "{:?}",
        azure.arm_calls()
    );
    clusters_api
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
    Ok(())
}

fn group_id() -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{GROUP}")
}

/// The ids of the resources left in Azure under the cluster's group or its node resource group.
fn left_in_azure(azure: &EmulatedAzure) -> Vec<String> {
    let node_group = format!("/resourcegroups/mc_{GROUP}_{CLUSTER}_").to_ascii_lowercase();
    let group = format!("{}/", group_id()).to_ascii_lowercase();
    azure.running.emulator.snapshot()["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|resource| resource["body"]["id"].as_str())
        .filter(|id| {
            let id = id.to_ascii_lowercase();
            id == group_id().to_ascii_lowercase() || id.starts_with(&group) || id.contains(&node_group)
        })
        .map(str::to_owned)
        .collect()
}

/// The cluster with one System pool, built; the test then runs `scenario`. With `quiet`, the
/// controller resyncs every ten minutes, as deployed, instead of every two seconds: only its own
/// requeues and watch events wake it.
async fn with_built_cluster(
    quiet: bool,
    scenario: impl AsyncFnOnce(&Client, &str, &EmulatedAzure) -> TestResult,
) -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = EmulatedAzure::start(Config::default()).await?;
        cluster_objects(&client, &namespace).await?;
        pool(&client, &namespace, "pool0", "System", 1).await?;
        let settings = azure.cloud_settings()?;
        let controller = if quiet {
            let flags = [
                "--health-probe-bind-address=0",
                "--metrics-bind-address=0",
                "--sync-period=10m",
            ];
            InProcessController::start(capz_aks::ID, plane, &namespace, flags, move |ctx| {
                capz_aks::run(ctx, settings)
            })?
        } else {
            controller(plane, &namespace, settings)?
        };
        let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), &namespace);
        let built =
            capz_harness::wait_for(&planes, CLUSTER, "the control plane initialized", WAIT, |plane| {
                plane.status.as_ref().and_then(|status| status.ready) == Some(true)
            })
            .await;
        let result = match built {
            Ok(_) => Box::pin(scenario(&client, &namespace, &azure)).await,
            Err(error) => Err(error.into()),
        };
        controller.stop().await?;
        release_cluster(&client, &namespace).await?;
        result
    })
    .await
}

/// Takes the Cluster's test finalizer off, whether or not the test deleted it.
async fn release_cluster(client: &Client, namespace: &str) -> TestResult {
    let release = json!({"metadata": {"finalizers": null}});
    Api::<capz_kit::api::capi::Cluster>::namespaced(client.clone(), namespace)
        .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(release))
        .await?;
    Ok(())
}

/// Cluster API's side of a deletion: the Cluster (held by a test finalizer, as Cluster API holds
/// it), its pool and its control plane are deleted.
async fn delete_cluster_objects(client: &Client, namespace: &str) -> TestResult {
    delete_held_cluster(client, namespace).await?;
    Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace)
        .delete("pool0", &DeleteParams::default())
        .await?;
    Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace)
        .delete(CLUSTER, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Sets the Cluster's `spec.paused`.
async fn pause(client: &Client, namespace: &str, paused: bool) -> TestResult {
    Api::<capz_kit::api::capi::Cluster>::namespaced(client.clone(), namespace)
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": paused}})),
        )
        .await?;
    Ok(())
}

/// Waits until the control plane and its pool are gone.
async fn gone(client: &Client, namespace: &str, timeout: Duration) -> TestResult {
    let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
    let pools = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace);
    let started = std::time::Instant::now();
    while planes.get_opt(CLUSTER).await?.is_some() || pools.get_opt("pool0").await?.is_some() {
        if started.elapsed() > timeout {
            return Err(format!("the control plane or its pool is still there after {timeout:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_cluster_whose_resource_group_was_deleted_in_azure_is_deleted_at_once() -> TestResult {
    with_built_cluster(false, async |client, namespace, azure| {
        // Paused, so that the controller does not build again what goes under its feet; a
        // reconcile that began before the pause ends first (ARM hears nothing for two seconds).
        pause(client, namespace, true).await?;
        let mut calls = azure.arm_calls().len();
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let now = azure.arm_calls().len();
            if now == calls {
                break;
            }
            calls = now;
        }
        let id: capz_kit::azure::ResourceId = group_id().parse()?;
        let api = capz_kit::azure::ApiVersion::new("2021-04-01");
        azure.client().delete(&id, &api).await?;
        for _ in 0..100 {
            if azure
                .get_at::<serde_json::Value>(&group_id(), &api)
                .await?
                .is_none()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Azure took the managed cluster and its node resource group along.
        assert_eq!(left_in_azure(azure), [] as [String; 0]);
        let from = azure.arm_calls().len();

        delete_cluster_objects(client, namespace).await?;
        pause(client, namespace, false).await?;
        gone(client, namespace, Duration::from_secs(20)).await?;
        // Every read answered 404: nothing was deleted or built again.
        let writes: Vec<String> = azure.arm_calls()[from..]
            .iter()
            .filter(|call| !call.starts_with("GET ") && !call.starts_with("HEAD "))
            .cloned()
            .collect();
        assert_eq!(writes, [] as [String; 0]);
        assert_eq!(left_in_azure(azure), [] as [String; 0]);
        Ok(())
    })
    .await
}

/// The control plane's `Ready` condition.
fn ready(plane: &AzureManagedControlPlane) -> Option<&capz_kit::api::common::conditions::Condition> {
    plane.status.as_ref().and_then(|status| {
        status
            .conditions
            .0
            .iter()
            .find(|condition| condition.type_.as_str() == "Ready")
    })
}

#[tokio::test]
async fn a_deletion_whose_credentials_azure_refuses_waits_names_the_identity_and_ends_once_restored()
-> TestResult {
    with_built_cluster(true, async |client, namespace, azure| {
        let emulator = &azure.running.emulator;
        // The controller holds a token; disabling its principal makes ARM refuse that token, and
        // Entra any new one.
        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, true);
        delete_cluster_objects(client, namespace).await?;
        let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
        let refused = capz_harness::wait_for(
            &planes,
            CLUSTER,
            "Ready naming the refused identity",
            WAIT,
            |plane| {
                ready(plane).is_some_and(|ready| {
                    ready.status == capz_kit::api::common::conditions::ConditionStatus::False
                        && ready
                            .message
                            .as_deref()
                            .is_some_and(|message| message.contains("AzureClusterIdentity"))
                })
            },
        )
        .await?;
        let condition = ready(&refused).ok_or("no Ready")?;
        let message = condition.message.clone().unwrap_or_default();
        assert_eq!(condition.reason.as_deref(), Some("DeletionFailed"), "{message}");
        assert!(
            message.contains(&format!(
                "AzureClusterIdentity {namespace}/emulator (client id {DEFAULT_CLIENT_ID})"
            )),
            "{message}"
        );
        assert!(message.contains("InvalidAuthenticationToken"), "{message}");
        assert!(
            !message.contains(DEFAULT_CLIENT_SECRET),
            "the secret is shown: {message}"
        );

        // The refusal waits for a person: no retry storm, nothing deleted meanwhile.
        let refusals = || {
            emulator
                .requests()
                .iter()
                .filter(|request| {
                    request.status == 401 || (request.path.ends_with("/token") && request.status >= 400)
                })
                .count()
        };
        let first = refusals();
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert!(refusals() <= first + 1, "{} refusals after {first}", refusals());
        assert!(
            left_in_azure(azure).contains(&cluster_id()),
            "{:?}",
            left_in_azure(azure)
        );
        assert!(planes.get_opt(CLUSTER).await?.is_some(), "the finalizer went");

        // Restored, the next reconcile (an edit wakes it at once; else the backoff, a minute at
        // first) deletes everything, with no refusal more.
        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, false);
        let restored = refusals();
        planes
            .patch(
                CLUSTER,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {"test/credentials": "restored"}}})),
            )
            .await?;
        gone(client, namespace, Duration::from_mins(1)).await?;
        assert_eq!(refusals(), restored);
        assert_eq!(left_in_azure(azure), [] as [String; 0]);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_abandoned_deletion_lets_go_deletes_nothing_and_names_what_stays() -> TestResult {
    with_built_cluster(false, async |client, namespace, azure| {
        // The deletion cannot proceed: Azure refuses the cluster's credentials.
        azure
            .running
            .emulator
            .set_principal_disabled(DEFAULT_CLIENT_ID, true);
        let before = left_in_azure(azure);
        delete_cluster_objects(client, namespace).await?;
        let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), namespace);
        capz_harness::wait_for(&planes, CLUSTER, "the deletion refused", WAIT, |plane| {
            ready(plane).and_then(|ready| ready.reason.as_deref()) == Some("DeletionFailed")
        })
        .await?;
        let annotation = capz_kit::abandon::annotation(capz_aks::ID);
        assert_eq!(
            annotation,
            "aks.infrastructure.cluster.x-k8s.io/abandon-azure-resources"
        );
        planes
            .patch(
                CLUSTER,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {annotation: "true"}}})),
            )
            .await?;
        gone(client, namespace, Duration::from_secs(20)).await?;

        // Nothing was deleted: Azure holds what it held.
        let deletes: Vec<String> = azure
            .arm_calls()
            .into_iter()
            .filter(|call| call.starts_with("DELETE "))
            .collect();
        assert_eq!(deletes, [] as [String; 0]);
        assert_eq!(left_in_azure(azure), before);
        // A Warning event on the control plane names every resource left behind.
        let events =
            Api::<capz_kit::k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), namespace)
                .list(&capz_kit::kube::api::ListParams::default())
                .await?;
        let abandoned: Vec<_> = events
            .items
            .iter()
            .filter(|event| {
                event.reason.as_deref() == Some("AzureResourcesAbandoned")
                    && event
                        .regarding
                        .as_ref()
                        .and_then(|regarding| regarding.name.as_deref())
                        == Some(CLUSTER)
            })
            .collect();
        assert_eq!(abandoned.len(), 1, "{:?}", events.items);
        let event = abandoned[0];
        assert_eq!(event.type_.as_deref(), Some("Warning"));
        assert_eq!(
            event
                .regarding
                .as_ref()
                .and_then(|regarding| regarding.kind.as_deref()),
            Some("AzureManagedControlPlane")
        );
        let note = event.note.clone().unwrap_or_default().to_ascii_lowercase();
        let node_group =
            format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/MC_{GROUP}_{CLUSTER}_westeurope");
        let network = format!(
            "{}/providers/Microsoft.Network/virtualNetworks/{CLUSTER}",
            group_id()
        );
        for id in [cluster_id(), node_group, network, group_id()] {
            assert!(
                note.contains(&format!("{} ", id.to_ascii_lowercase()))
                    || note.ends_with(&id.to_ascii_lowercase()),
                "{id} is not named: {note}"
            );
            assert!(
                before.iter().any(|left| left.eq_ignore_ascii_case(&id)),
                "{id} is not in Azure: {before:?}"
            );
        }
        Ok(())
    })
    .await
}

/// A restarted controller lists the credentials again; when Azure throttles that listing, the
/// Secrets keep the credentials listed before and the control plane stays Ready, and the next
/// passes list again until one is answered.
#[tokio::test]
async fn a_throttled_listing_keeps_the_last_credentials_and_ready() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = EmulatedAzure::start(Config::default()).await?;
        cluster_objects(&client, &namespace).await?;
        pool(&client, &namespace, "pool0", "System", 1).await?;
        let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), &namespace);
        let first = controller(plane, &namespace, azure.cloud_settings()?)?;
        let built = capz_harness::wait_for(&planes, CLUSTER, "the control plane ready", WAIT, |plane| {
            plane.status.as_ref().and_then(|status| status.ready) == Some(true)
        })
        .await;
        first.stop().await?;
        built?;
        let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
        let held = secrets.get(&format!("{CLUSTER}-kubeconfig")).await?.data;

        let emulator = &azure.running.emulator;
        let throttle = emulator.add_fault(arm_emulator::faults::Fault {
            method: Some("POST".to_owned()),
            path: "*/listClusterAdminCredential".to_owned(),
            status: Some(429),
            retry_after_seconds: Some(1),
            ..arm_emulator::faults::Fault::default()
        });
        let listings = || {
            emulator
                .requests()
                .iter()
                .filter(|request| request.path.ends_with("/listClusterAdminCredential"))
                .map(|request| request.status)
                .collect::<Vec<u16>>()
        };
        let before = listings().len();
        let second = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = async {
            let started = std::time::Instant::now();
            while listings()[before..]
                .iter()
                .filter(|status| **status == 429)
                .count()
                < 2
            {
                assert!(
                    started.elapsed() < WAIT,
                    "no listing was throttled: {:?}",
                    listings()
                );
                let plane = planes.get(CLUSTER).await?;
                assert_eq!(
                    ready(&plane).map(|ready| ready.status),
                    Some(capz_kit::api::common::conditions::ConditionStatus::True),
                    "{:?}",
                    ready(&plane)
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            assert_eq!(
                secrets.get(&format!("{CLUSTER}-kubeconfig")).await?.data,
                held,
                "the Secret changed"
            );
            // Answered again, the next listing is served and the passes stop listing.
            emulator.remove_fault(throttle);
            let started = std::time::Instant::now();
            while !listings()[before..].contains(&200) {
                assert!(
                    started.elapsed() < WAIT,
                    "the listing never came back: {:?}",
                    listings()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            let served = listings().len();
            tokio::time::sleep(Duration::from_secs(5)).await;
            assert_eq!(listings().len(), served, "listed again once answered");
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }
        .await;
        second.stop().await?;
        release_cluster(&client, &namespace).await?;
        result
    })
    .await
}

/// The claims of the token the kubeconfig Secret of an Entra-only cluster signs in with (capz-aks
/// writes that kubeconfig as JSON).
async fn secret_token(secrets: &Api<Secret>) -> TestResult<serde_json::Value> {
    use base64::Engine as _;
    let secret = secrets.get(&format!("{CLUSTER}-kubeconfig")).await?;
    let value = secret
        .data
        .and_then(|mut data| data.remove("value"))
        .ok_or("no value")?;
    let kubeconfig: serde_json::Value = serde_json::from_slice(&value.0)?;
    let user = &kubeconfig["users"][0]["user"];
    assert!(
        user.get("exec").is_none_or(serde_json::Value::is_null),
        "the exec plugin stayed: {user}"
    );
    let payload = user["token"]
        .as_str()
        .and_then(|token| token.split('.').nth(1))
        .ok_or("the kubeconfig holds no JWT")?;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload)?;
    Ok(serde_json::from_slice(&claims)?)
}

/// Seconds since the epoch.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
}

/// With Entra sign-in only, the kubeconfig Secret signs in with a token for AKS's server
/// application, and a new one is written when half of the token's life is gone: the Secret
/// never holds an expired token. (Tokens live 10 s here.)
#[tokio::test]
async fn an_entra_only_cluster_has_a_token_kubeconfig_renewed_before_it_expires() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = EmulatedAzure::start(Config {
            token_lifetime_seconds: 10,
            ..Config::default()
        })
        .await?;
        cluster_objects(&client, &namespace).await?;
        let planes = Api::<AzureManagedControlPlane>::namespaced(client.clone(), &namespace);
        let entra_only = json!({"spec": {
            "aadProfile": {"managed": true, "adminGroupObjectIDs": ["7d0ac1f4-9a4e-4f4e-9d55-3f0f1f7d2a10"]},
            "disableLocalAccounts": true,
        }});
        planes
            .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(entra_only))
            .await?;
        pool(&client, &namespace, "pool0", "System", 1).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = async {
            capz_harness::wait_for(&planes, CLUSTER, "the control plane ready", WAIT, |plane| {
                plane.status.as_ref().and_then(|status| status.ready) == Some(true)
            })
            .await?;
            let secrets = Api::<Secret>::namespaced(client.clone(), &namespace);
            let first = secret_token(&secrets).await?;
            assert_eq!(first["aud"], "6dae42f8-4368-4678-94ff-3960e28e3630", "{first}");
            let started = std::time::Instant::now();
            let mut renewals = 0;
            let mut held = first;
            while renewals < 2 {
                assert!(started.elapsed() < Duration::from_secs(40), "no renewal: {held}");
                let token = secret_token(&secrets).await?;
                let expires = token["exp"].as_i64().ok_or("no exp")?;
                assert!(expires > now(), "the Secret holds an expired token: {token}");
                if token["exp"] != held["exp"] {
                    renewals += 1;
                    held = token;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }
        .await;
        controller.stop().await?;
        release_cluster(&client, &namespace).await?;
        result
    })
    .await
}
