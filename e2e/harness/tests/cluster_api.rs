//! Cluster API's managers beside the plane: v1beta1 manifests, as CAPZ flavors are written, are
//! admitted, converted, stored and reconciled.

use std::time::{Duration, Instant};

use capz_harness::Plane;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject};

const CLUSTER: &str = r"
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: smoke
spec:
  clusterNetwork:
    pods:
      cidrBlocks: [192.168.0.0/16]
  infrastructureRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: AzureCluster
    name: smoke
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: smoke
spec:
  location: westeurope
  resourceGroup: smoke
";

#[tokio::test]
async fn a_v1beta1_cluster_is_converted_and_its_azure_cluster_gets_an_owner() {
    let mut plane = Plane::start().await.unwrap();
    let started = Instant::now();
    plane.start_cluster_api().await.unwrap();
    eprintln!("Cluster API's managers served in {:?}", started.elapsed());
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let applied = capz_harness::apply_yaml(&client, &namespace, CLUSTER)
            .await
            .unwrap();
        assert_eq!(
            applied[0].types.as_ref().unwrap().api_version,
            "cluster.x-k8s.io/v1beta1"
        );
        let applied_at = Instant::now();

        // The same Cluster through v1beta2: the conversion webhook moved the reference to a
        // contract-versioned one.
        let v1beta2 = capz_harness::resource(&client, "cluster.x-k8s.io", "v1beta2", "Cluster")
            .await
            .unwrap();
        let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &v1beta2);
        let cluster = clusters.get("smoke").await.unwrap();
        assert_eq!(
            cluster.data["spec"]["infrastructureRef"]["apiGroup"],
            "infrastructure.cluster.x-k8s.io"
        );
        assert_eq!(cluster.data["spec"]["infrastructureRef"]["kind"], "AzureCluster");
        assert_eq!(
            cluster.data["spec"]["clusterNetwork"]["pods"]["cidrBlocks"][0],
            "192.168.0.0/16"
        );

        let azure = capz_harness::resource(
            &client,
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "AzureCluster",
        )
        .await
        .unwrap();
        let azure_clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, &azure);
        let owned = capz_harness::wait_for(
            &azure_clusters,
            "smoke",
            "an owner reference to Cluster smoke",
            Duration::from_secs(30),
            |object| {
                object
                    .owner_references()
                    .iter()
                    .any(|owner| owner.kind == "Cluster" && owner.name == "smoke")
            },
        )
        .await
        .unwrap();
        eprintln!(
            "the owner reference came {:?} after the apply",
            applied_at.elapsed()
        );
        assert_eq!(owned.data["spec"]["location"], "westeurope");
        assert_eq!(
            owned
                .labels()
                .get("cluster.x-k8s.io/cluster-name")
                .map(String::as_str),
            Some("smoke")
        );
    })
    .await
    .unwrap();
}
