//! A MachinePool's Machines read as metadata against the real API server: only the pool's, with
//! their annotations and whether they are being deleted.

use capz_kit::cluster::{MachineMeta, POOL_NAME_LABEL, pool_machines};
use capz_kit::kube::Client;
use capz_kit::kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use capz_kit::kube::discovery::ApiResource;
use serde_json::json;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

async fn machine(
    client: &Client,
    namespace: &str,
    name: &str,
    pool: &str,
    extra: serde_json::Value,
) -> TestResult {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine"));
    let mut object = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": name, "labels": {POOL_NAME_LABEL: pool}},
        "spec": {"clusterName": "c1", "bootstrap": {"dataSecretName": "unused"},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureMachinePoolMachine", "name": name}},
    });
    if let (Some(metadata), Some(extra)) = (object["metadata"].as_object_mut(), extra.as_object()) {
        metadata.extend(extra.clone());
    }
    Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
        .create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_pools_machines_are_read_as_their_metadata() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        assert_eq!(pool_machines(&client, &namespace, "pool").await?, []);
        machine(&client, &namespace, "plain", "pool", json!({})).await?;
        machine(
            &client,
            &namespace,
            "marked",
            "pool",
            json!({"annotations": {"cluster.x-k8s.io/delete-machine": ""}}),
        )
        .await?;
        machine(
            &client,
            &namespace,
            "leaving",
            "pool",
            json!({"finalizers": ["test/keep"]}),
        )
        .await?;
        machine(&client, &namespace, "other", "another-pool", json!({})).await?;
        let resource =
            ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine"));
        let machines = Api::<DynamicObject>::namespaced_with(client.clone(), &namespace, &resource);
        machines.delete("leaving", &DeleteParams::default()).await?;

        let mut seen = pool_machines(&client, &namespace, "pool").await?;
        seen.sort_by(|a, b| a.name.cmp(&b.name));
        let meta = |name: &str, marked: bool, deleting: bool| MachineMeta {
            name: name.to_owned(),
            annotations: if marked {
                [("cluster.x-k8s.io/delete-machine".to_owned(), String::new())].into()
            } else {
                std::collections::BTreeMap::default()
            },
            deleting,
        };
        assert_eq!(
            seen,
            [
                meta("leaving", false, true),
                meta("marked", true, false),
                meta("plain", false, false)
            ]
        );
        let unblock = json!({"metadata": {"finalizers": null}});
        machines
            .patch(
                "leaving",
                &capz_kit::kube::api::PatchParams::default(),
                &capz_kit::kube::api::Patch::Merge(&unblock),
            )
            .await?;
        Ok(())
    })
    .await?
}
