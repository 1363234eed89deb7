//! What defaulting needs from the API server: the subscription of the AzureCluster a machine or
//! machine pool belongs to, the default scope of its system-assigned identity's role.
//!
//! The path is the object's label `cluster.x-k8s.io/cluster-name` → the Cluster of that name in
//! the object's namespace (read as `cluster.x-k8s.io/v1beta2`, the version Cluster API stores) →
//! its `spec.infrastructureRef` when it names an AzureCluster → that AzureCluster's
//! `spec.subscriptionID`. A missing piece anywhere (no label, no Cluster yet, another
//! infrastructure kind, no subscription set) means no subscription, not an error: the rules then
//! leave what depends on it to the controllers. Failing reads (the API server unreachable, access
//! denied) are errors, so that a default is never computed from a guess.
//!
//! CAPZ finds a machine's cluster the same way; for a machine pool it looks for the MachinePool
//! whose infrastructure reference names the pool (reading MachinePools in every namespace), and
//! refuses the pool while there is none. capz-rs follows the label for both.
//!
//! Validation of a Flexible machine pool needs its MachinePool's Kubernetes version: the
//! MachinePool in the pool's namespace whose infrastructure reference names the pool
//! ([`pool_owner`]), as CAPZ finds it (but in the one namespace).
//!
//! Validation of the AKS kinds needs their Cluster ([`owner_cluster`]): its network ranges (an
//! AKS control plane's DNS service IP lies in the service range), whether it is being deleted,
//! and how many System node pools it has (the AzureManagedMachinePools of its namespace labelled
//! with its name and the agent pool mode `System`), so that the last one is kept.

use std::collections::BTreeMap;

use capz_api::capi::{Cluster, MachinePool};
use capz_api::{AzureCluster, AzureMachinePool, AzureManagedMachinePool};
use capz_kit::cluster::CLUSTER_NAME_LABEL;
use capz_rules::azuremanagedmachinepool::AGENT_POOL_MODE_LABEL;
use capz_rules::{ClusterFacts, ClusterQuery, OwnerCluster, PoolOwner};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, Resource as _};

/// The subscription of the AzureCluster of the Cluster that an object in `namespace` labelled
/// `labels` belongs to; `None` when any piece of the way is missing.
///
/// # Errors
/// When the API server cannot be read.
pub async fn cluster_subscription_id(
    client: &Client,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> kube::Result<Option<String>> {
    let Some(cluster_name) = labels.get(CLUSTER_NAME_LABEL).filter(|name| !name.is_empty()) else {
        return Ok(None);
    };
    let Some(cluster) = Api::<Cluster>::namespaced(client.clone(), namespace)
        .get_opt(cluster_name)
        .await?
    else {
        return Ok(None);
    };
    let Some(reference) = cluster.spec.infrastructure_ref.as_ref() else {
        return Ok(None);
    };
    if !reference.is(&AzureCluster::group(&()), &AzureCluster::kind(&())) || reference.name.is_empty() {
        return Ok(None);
    }
    // Read without the typed AzureCluster: only one field matters, whatever else it holds.
    let resource = ApiResource::erase::<AzureCluster>(&());
    let Some(azure_cluster) = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
        .get_opt(&reference.name)
        .await?
    else {
        return Ok(None);
    };
    Ok(azure_cluster.data["spec"]["subscriptionID"]
        .as_str()
        .filter(|subscription| !subscription.is_empty())
        .map(str::to_owned))
}

/// The MachinePool in `namespace` whose infrastructure reference is the AzureMachinePool `name`,
/// with the Kubernetes version it names.
///
/// # Errors
/// When the API server cannot be read.
pub async fn pool_owner(client: &Client, namespace: &str, name: &str) -> kube::Result<PoolOwner> {
    // Read without the typed MachinePool: two fields matter, whatever else it holds.
    let resource = ApiResource::erase::<MachinePool>(&());
    let pools = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
        .list(&ListParams::default())
        .await?;
    let kind = AzureMachinePool::kind(&());
    let owner = pools.items.iter().find(|pool| {
        let reference = &pool.data["spec"]["template"]["spec"]["infrastructureRef"];
        reference["kind"].as_str() == Some(kind.as_ref()) && reference["name"].as_str() == Some(name)
    });
    Ok(match owner {
        Some(pool) => PoolOwner::Found {
            version: pool.data["spec"]["template"]["spec"]["version"]
                .as_str()
                .filter(|version| !version.is_empty())
                .map(str::to_owned),
        },
        None => PoolOwner::Missing,
    })
}

/// The Cluster `query` names in `namespace`, with its System node pools counted when the query
/// asks.
///
/// # Errors
/// When the API server cannot be read.
pub async fn owner_cluster(
    client: &Client,
    namespace: &str,
    query: &ClusterQuery,
) -> kube::Result<OwnerCluster> {
    let Some(cluster) = Api::<Cluster>::namespaced(client.clone(), namespace)
        .get_opt(&query.name)
        .await?
    else {
        return Ok(OwnerCluster::Missing);
    };
    let network = cluster.spec.cluster_network.as_ref();
    let ranges = |which: Option<&capz_api::capi::NetworkRanges>| {
        which.map(|r| r.cidr_blocks.clone()).unwrap_or_default()
    };
    let mut facts = ClusterFacts {
        deleting: cluster.metadata.deletion_timestamp.is_some(),
        service_cidrs: ranges(network.and_then(|n| n.services.as_ref())),
        pod_cidrs: ranges(network.and_then(|n| n.pods.as_ref())),
        system_pools: None,
    };
    if query.system_pools && !facts.deleting {
        let resource = ApiResource::erase::<AzureManagedMachinePool>(&());
        let selector = format!(
            "{CLUSTER_NAME_LABEL}={},{AGENT_POOL_MODE_LABEL}=System",
            query.name
        );
        let pools = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
            .list_metadata(&ListParams::default().labels(&selector))
            .await?;
        facts.system_pools = Some(pools.items.len());
    }
    Ok(OwnerCluster::Found(facts))
}
