//! A workload cluster's Nodes as the kit follows them, against the real API server (which plays
//! the workload cluster too, reached through a kubeconfig Secret that names it): the first read
//! lists them, and Nodes registered, cordoned or deleted later are seen without another list and
//! told to the readers of the changes.

use std::collections::BTreeMap;
use std::time::Duration;

use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::{Node, Secret};
use capz_kit::kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use capz_kit::kube::{Api, Client};
use capz_kit::workload::{Nodes, WorkloadCluster, Workloads};
use futures_util::StreamExt as _;
use serde_json::json;
use tokio::time::{Instant, sleep};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A provider ID unique to the test's namespace: Nodes are cluster-scoped, and other tests run
/// side by side on the same API server.
fn provider_id(namespace: &str, instance: u32) -> String {
    format!(
        "azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{namespace}/providers/Microsoft.Compute/virtualMachineScaleSets/pool/virtualMachines/{instance}"
    )
}

/// Registers a Node for `instance`, Ready.
async fn register(nodes: &Api<Node>, namespace: &str, instance: u32) -> TestResult<String> {
    let name = format!("{namespace}-{instance}");
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"providerID": provider_id(namespace, instance)},
    }))?;
    nodes.create(&PostParams::default(), &node).await?;
    let status = json!({"status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        "nodeInfo": {"kubeletVersion": "v1.33.1", "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
            "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
    }});
    nodes
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(name)
}

/// Waits up to 10 s until `check` holds for what `nodes` knows of `instance`.
async fn eventually(
    nodes: &Nodes,
    namespace: &str,
    instance: u32,
    what: &str,
    check: impl Fn(Option<capz_kit::workload::Node>) -> bool,
) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check(nodes.by_provider_id(&provider_id(namespace, instance))) {
        if Instant::now() > deadline {
            return Err(format!("after 10 s, instance {instance}: {what}").into());
        }
        sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn kubeconfig_secret(client: &Client, namespace: &str, kubeconfig: &[u8]) -> TestResult {
    let secret = Secret {
        metadata: capz_kit::kube::api::ObjectMeta {
            name: Some("c1-kubeconfig".to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "value".to_owned(),
            ByteString(kubeconfig.to_vec()),
        )])),
        ..Secret::default()
    };
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

#[tokio::test]
async fn nodes_are_listed_once_then_followed() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    let kubeconfig = std::fs::read(plane.kubeconfig())?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let nodes = Api::<Node>::all(client.clone());
        let workloads = Workloads::new(client.clone());
        assert!(
            workloads.nodes(&namespace, "c1").await?.is_none(),
            "no kubeconfig yet: no cluster to read"
        );
        let first = register(&nodes, &namespace, 0).await?;
        kubeconfig_secret(&client, &namespace, &kubeconfig).await?;

        let followed = workloads
            .nodes(&namespace, "c1")
            .await?
            .ok_or("the kubeconfig is there")?;
        assert!(followed.synced(), "the first read waits for the first list");
        let node = followed
            .by_provider_id(&provider_id(&namespace, 0).to_uppercase())
            .ok_or("provider IDs compare without case")?;
        assert_eq!(
            (
                node.name.as_str(),
                node.ready,
                node.unschedulable,
                node.kubelet_version.as_deref()
            ),
            (first.as_str(), true, false, Some("v1.33.1"))
        );

        // Registered, cordoned, deleted after the list: seen through the watch, and told.
        let mut changes = workloads.changes().boxed();
        let second = register(&nodes, &namespace, 1).await?;
        let told = tokio::time::timeout(Duration::from_secs(10), changes.next()).await?;
        assert_eq!(
            told,
            Some(WorkloadCluster {
                namespace: namespace.clone(),
                name: "c1".to_owned()
            })
        );
        eventually(&followed, &namespace, 1, "registered and Ready", |node| {
            node.is_some_and(|node| node.available())
        })
        .await?;
        nodes
            .patch(
                &first,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"unschedulable": true}})),
            )
            .await?;
        eventually(&followed, &namespace, 0, "cordoned", |node| {
            node.is_some_and(|node| node.unschedulable && !node.available())
        })
        .await?;
        nodes.delete(&second, &DeleteParams::default()).await?;
        eventually(&followed, &namespace, 1, "gone", |node| node.is_none()).await?;

        // Another read of the same cluster shares the watch.
        let again = workloads
            .nodes(&namespace, "c1")
            .await?
            .ok_or("the kubeconfig is there")?;
        assert!(again.by_provider_id(&provider_id(&namespace, 0)).is_some());

        nodes.delete(&first, &DeleteParams::default()).await?;
        Api::<Secret>::namespaced(client.clone(), &namespace)
            .delete("c1-kubeconfig", &DeleteParams::default())
            .await?;
        assert!(
            workloads.nodes(&namespace, "c1").await?.is_none(),
            "the kubeconfig is gone: so is the cluster"
        );
        Ok(())
    })
    .await?
}
