//! Where an object stands in Cluster API's world: its owning Cluster, Machine or MachinePool
//! (read as v1beta2, the version Cluster API stores), whether it is paused, and whether its
//! infrastructure is managed by someone else.

use capz_api::AzureCluster;
use capz_api::capi::{Cluster, Machine, MachinePool};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;

pub use capz_api::capi::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, MANAGED_BY_ANNOTATION, PAUSED_ANNOTATION};

/// Whether reconciling `object` is paused: its Cluster says `spec.paused`, or the object carries
/// the paused annotation.
#[must_use]
pub fn is_paused(cluster: Option<&Cluster>, object: &impl Resource) -> bool {
    cluster.is_some_and(|cluster| cluster.spec.paused == Some(true))
        || object.annotations().contains_key(PAUSED_ANNOTATION)
}

/// Whether `object` (an AzureCluster) is externally managed: the cluster-level controllers leave
/// it alone and its owner sets its status.
#[must_use]
pub fn is_externally_managed(object: &impl Resource) -> bool {
    object.annotations().contains_key(MANAGED_BY_ANNOTATION)
}

/// The name of `object`'s Cluster: the owner reference Cluster API sets, else the label.
#[must_use]
pub fn cluster_name(object: &impl Resource) -> Option<String> {
    owner_named::<Cluster>(object).or_else(|| object.labels().get(CLUSTER_NAME_LABEL).cloned())
}

/// Whether an infrastructure machine belongs to the control plane: it or its Machine carries
/// Cluster API's control-plane label.
#[must_use]
pub fn is_control_plane(infrastructure: &impl Resource, machine: &Machine) -> bool {
    infrastructure.labels().contains_key(CONTROL_PLANE_LABEL)
        || machine.labels().contains_key(CONTROL_PLANE_LABEL)
}

/// The objects in `store` that belong to the Cluster `cluster` of `namespace`: what a watch of a
/// cluster-level object wakes.
#[must_use]
pub fn members_of<K>(store: &Store<K>, namespace: &str, cluster: &str) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()> + Clone,
{
    store
        .state()
        .iter()
        .filter(|object| {
            object.namespace().as_deref() == Some(namespace)
                && cluster_name(object.as_ref()).as_deref() == Some(cluster)
        })
        .map(|object| ObjectRef::from_obj(object.as_ref()))
        .collect()
}

/// The Cluster an infrastructure cluster `object` (such as an AzureCluster) belongs to: the one
/// Cluster API linked it to, else, before Cluster API's first reconcile of the Cluster has set
/// the owner reference, the only Cluster of its namespace whose `spec.infrastructureRef` names it.
/// Going by the reference spares new clusters the wait for Cluster API (seconds on a busy
/// management cluster); no Cluster, or two naming the object, is `None`.
///
/// # Errors
/// When the API server cannot be read.
pub async fn linked_cluster<K>(client: &Client, object: &K) -> kube::Result<Option<Cluster>>
where
    K: Resource<DynamicType = ()>,
{
    if cluster_name(object).is_some() {
        return owner_cluster(client, object).await;
    }
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let clusters = Api::<Cluster>::namespaced(client.clone(), &namespace)
        .list(&ListParams::default())
        .await?;
    let mut naming =
        clusters.items.into_iter().filter(|cluster| {
            cluster.spec.infrastructure_ref.as_ref().is_some_and(|reference| {
                reference.is(&K::group(&()), &K::kind(&())) && reference.name == name
            })
        });
    Ok(match (naming.next(), naming.next()) {
        (Some(cluster), None) => Some(cluster),
        _ => None,
    })
}

/// The Cluster `object` belongs to, `None` until Cluster API has linked them (or when it is gone).
///
/// # Errors
/// When the API server cannot be read.
pub async fn owner_cluster(client: &Client, object: &impl Resource) -> kube::Result<Option<Cluster>> {
    match cluster_name(object) {
        Some(name) => get_in_namespace(client, object, &name).await,
        None => Ok(None),
    }
}

/// Why a machine or pool of `cluster` cannot be built yet: the Cluster's infrastructure is not
/// provisioned, its owner has no bootstrap data (`missing_bootstrap` says whose field, `None` once
/// it has it), or the AzureCluster the Cluster names does not exist (`has_azure_cluster`).
#[must_use]
pub fn build_gate(
    cluster: &Cluster,
    missing_bootstrap: Option<String>,
    has_azure_cluster: bool,
) -> Option<(crate::conditions::Reason, String)> {
    use crate::conditions::Reason;
    if !cluster.infrastructure_provisioned() {
        return Some((
            Reason::WAITING_FOR_CLUSTER_INFRASTRUCTURE,
            format!(
                "waiting for Cluster {} to have its infrastructure provisioned",
                cluster.name_any()
            ),
        ));
    }
    if let Some(field) = missing_bootstrap {
        return Some((Reason::WAITING_FOR_BOOTSTRAP_DATA, format!("waiting for {field}")));
    }
    (!has_azure_cluster).then(|| {
        (
            Reason::WAITING_FOR_DEPENDENCY,
            format!(
                "waiting for the AzureCluster that Cluster {} names in spec.infrastructureRef",
                cluster.name_any()
            ),
        )
    })
}

/// The AzureCluster `cluster` names as its infrastructure (`None` for another kind, or while it
/// does not exist).
///
/// # Errors
/// When the API server cannot be read.
pub async fn azure_cluster_of(
    client: &Client,
    cluster: &Cluster,
    namespace: &str,
) -> kube::Result<Option<AzureCluster>> {
    let Some(name) = azure_cluster_name(cluster) else {
        return Ok(None);
    };
    kube::Api::<AzureCluster>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
}

/// The name of the AzureCluster `cluster` names as its infrastructure, if it names one.
fn azure_cluster_name(cluster: &Cluster) -> Option<&str> {
    let reference = cluster.spec.infrastructure_ref.as_ref()?;
    (reference.kind == "AzureCluster").then_some(reference.name.as_str())
}

/// The Machine owning `object` (an AzureMachine), `None` until Cluster API has set the owner
/// reference.
///
/// # Errors
/// When the API server cannot be read.
pub async fn owner_machine(client: &Client, object: &impl Resource) -> kube::Result<Option<Machine>> {
    match owner_named::<Machine>(object) {
        Some(name) => get_in_namespace(client, object, &name).await,
        None => Ok(None),
    }
}

/// What an infrastructure machine pool (an AzureMachinePool or AzureManagedMachinePool)
/// belongs to, or why it is not acted on.
#[derive(Debug)]
pub enum PoolOwners {
    /// Not now: the MachinePool feature gate is off (CAPZ then runs no pool controller), or the
    /// pool or its Cluster is paused.
    Skip,
    /// Cluster API has not linked it to its MachinePool and Cluster yet, or they are gone.
    Unlinked,
    /// Its Cluster and MachinePool.
    Linked(Box<Cluster>, Box<MachinePool>),
}

/// The owners of `pool`, as [`PoolOwners`] tells them; `machine_pool_gate` is the MachinePool
/// feature gate.
///
/// # Errors
/// When the API server cannot be read.
pub async fn pool_owners(
    client: &Client,
    machine_pool_gate: bool,
    pool: &impl Resource,
) -> kube::Result<PoolOwners> {
    if !machine_pool_gate {
        return Ok(PoolOwners::Skip);
    }
    let cluster = owner_cluster(client, pool).await?;
    if is_paused(cluster.as_ref(), pool) {
        return Ok(PoolOwners::Skip);
    }
    let owner = owner_machine_pool(client, pool).await?;
    Ok(match (cluster, owner) {
        (Some(cluster), Some(owner)) => PoolOwners::Linked(Box::new(cluster), Box::new(owner)),
        _ => PoolOwners::Unlinked,
    })
}

/// The MachinePool owning `object` (an AzureMachinePool or AzureManagedMachinePool).
///
/// # Errors
/// When the API server cannot be read.
pub async fn owner_machine_pool(
    client: &Client,
    object: &impl Resource,
) -> kube::Result<Option<MachinePool>> {
    match owner_named::<MachinePool>(object) {
        Some(name) => get_in_namespace(client, object, &name).await,
        None => Ok(None),
    }
}

/// The name in `object`'s owner reference of kind `K`, in any version of `K`'s group.
fn owner_named<K: Resource<DynamicType = ()>>(object: &impl Resource) -> Option<String> {
    let group = K::group(&());
    object
        .owner_references()
        .iter()
        .find(|owner| {
            owner.kind == K::kind(&())
                && owner
                    .api_version
                    .split_once('/')
                    .is_some_and(|(owner_group, _)| owner_group == group)
        })
        .map(|owner| owner.name.clone())
}

async fn get_in_namespace<K>(client: &Client, object: &impl Resource, name: &str) -> kube::Result<Option<K>>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let namespace = object.namespace().unwrap_or_default();
    Api::<K>::namespaced(client.clone(), &namespace)
        .get_opt(name)
        .await
}

/// The Clusters and AzureClusters (and, for a controller of infrastructure machines, the
/// Machines) a controller watches anyway, kept in its stores: a reconcile finds an object's
/// owners there without a request, and reads the API server only for one the store does not
/// hold (yet). A store is as fresh as its watch, whose events wake the reconciles that depend on
/// them after the store has them.
#[derive(Clone)]
pub struct Owners {
    client: Client,
    clusters: Store<Cluster>,
    azure_clusters: Store<AzureCluster>,
    machines: Option<Store<Machine>>,
}

impl Owners {
    /// Owners found in `clusters` and `azure_clusters`, else read with `client`.
    #[must_use]
    pub fn new(client: Client, clusters: Store<Cluster>, azure_clusters: Store<AzureCluster>) -> Self {
        Self {
            client,
            clusters,
            azure_clusters,
            machines: None,
        }
    }

    /// These owners, with the Machines found in `machines`.
    #[must_use]
    pub fn with_machines(self, machines: Store<Machine>) -> Self {
        Self {
            machines: Some(machines),
            ..self
        }
    }

    /// The Cluster `object` belongs to, as [`owner_cluster`] finds it.
    ///
    /// # Errors
    /// When it is not in the store and the API server cannot be read.
    pub async fn cluster(&self, object: &impl Resource) -> kube::Result<Option<Cluster>> {
        let Some(name) = cluster_name(object) else {
            return Ok(None);
        };
        match stored(&self.clusters, object, &name) {
            Some(cluster) => Ok(Some(cluster)),
            None => get_in_namespace(&self.client, object, &name).await,
        }
    }

    /// The Machine owning `object`, as [`owner_machine`] finds it.
    ///
    /// # Errors
    /// When it is not in the store and the API server cannot be read.
    pub async fn machine(&self, object: &impl Resource) -> kube::Result<Option<Machine>> {
        let Some(name) = owner_named::<Machine>(object) else {
            return Ok(None);
        };
        match self
            .machines
            .as_ref()
            .and_then(|machines| stored(machines, object, &name))
        {
            Some(machine) => Ok(Some(machine)),
            None => get_in_namespace(&self.client, object, &name).await,
        }
    }

    /// The AzureCluster `cluster` names as its infrastructure, as [`azure_cluster_of`] finds it.
    ///
    /// # Errors
    /// When it is not in the store and the API server cannot be read.
    pub async fn azure_cluster(&self, cluster: &Cluster) -> kube::Result<Option<AzureCluster>> {
        let Some(name) = azure_cluster_name(cluster) else {
            return Ok(None);
        };
        match stored(&self.azure_clusters, cluster, name) {
            Some(azure_cluster) => Ok(Some(azure_cluster)),
            None => get_in_namespace(&self.client, cluster, name).await,
        }
    }
}

/// The object `name` of `store` in the namespace of `beside`.
fn stored<K>(store: &Store<K>, beside: &impl Resource, name: &str) -> Option<K>
where
    K: Resource<DynamicType = ()> + Clone,
{
    let namespace = beside.namespace().unwrap_or_default();
    store
        .get(&ObjectRef::new(name).within(&namespace))
        .map(|object| K::clone(&object))
}

/// The label naming the MachinePool of a pool's Machine (Cluster API's).
pub const POOL_NAME_LABEL: &str = "cluster.x-k8s.io/pool-name";

/// A Machine as a machine pool's controller weighs it: its name, annotations and whether it is
/// being deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineMeta {
    /// Its name.
    pub name: String,
    /// Its annotations.
    pub annotations: std::collections::BTreeMap<String, String>,
    /// It has a deletion timestamp.
    pub deleting: bool,
}

#[derive(serde::Deserialize)]
struct MetadataList {
    /// `null` when there is none.
    items: Option<Vec<MetadataItem>>,
}

#[derive(serde::Deserialize)]
struct MetadataItem {
    metadata: Metadata,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: String,
    annotations: Option<std::collections::BTreeMap<String, String>>,
    deletion_timestamp: Option<serde_json::Value>,
}

/// The Machines of the MachinePool `pool` in `namespace`, read as metadata and kept as
/// [`MachineMeta`]: what else a Machine holds (its managed fields above all) is skipped while the
/// answer is read, not parsed and then dropped.
///
/// # Errors
/// The API server's refusal.
pub async fn pool_machines(client: &Client, namespace: &str, pool: &str) -> kube::Result<Vec<MachineMeta>> {
    let url = Api::<Machine>::namespaced(client.clone(), namespace)
        .resource_url()
        .to_owned();
    let request = kube::core::Request::new(url)
        .list_metadata(&ListParams::default().labels(&format!("{POOL_NAME_LABEL}={pool}")))
        .map_err(kube::Error::BuildRequest)?;
    let list: MetadataList = client.request(request).await?;
    Ok(list
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|item| MachineMeta {
            name: item.metadata.name,
            annotations: item.metadata.annotations.unwrap_or_default(),
            deleting: item
                .metadata
                .deletion_timestamp
                .is_some_and(|time| !time.is_null()),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn object(annotations: &[&str], labels: &[(&str, &str)], owners: &[(&str, &str, &str)]) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.annotations = Some(
            annotations
                .iter()
                .map(|key| ((*key).to_owned(), String::new()))
                .collect(),
        );
        object.metadata.labels = Some(
            labels
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
        );
        object.metadata.owner_references = Some(
            owners
                .iter()
                .map(|(api_version, kind, name)| OwnerReference {
                    api_version: (*api_version).into(),
                    kind: (*kind).into(),
                    name: (*name).into(),
                    uid: "u".into(),
                    ..OwnerReference::default()
                })
                .collect(),
        );
        object
    }

    #[test]
    fn the_cluster_comes_from_the_owner_reference_of_any_version_else_the_label() {
        let owned = object(
            &[],
            &[(CLUSTER_NAME_LABEL, "from-label")],
            &[("cluster.x-k8s.io/v1beta1", "Cluster", "owner")],
        );
        assert_eq!(cluster_name(&owned).as_deref(), Some("owner"));
        let labelled = object(
            &[],
            &[(CLUSTER_NAME_LABEL, "from-label")],
            &[("other.io/v1", "Cluster", "x")],
        );
        assert_eq!(cluster_name(&labelled).as_deref(), Some("from-label"));
        assert_eq!(cluster_name(&object(&[], &[], &[])), None);
        let machine = object(&[], &[], &[("cluster.x-k8s.io/v1beta2", "Machine", "m1")]);
        assert_eq!(owner_named::<Machine>(&machine).as_deref(), Some("m1"));
        assert_eq!(owner_named::<MachinePool>(&machine), None);
    }

    #[test]
    fn pause_comes_from_the_cluster_or_the_annotation_and_managed_by_from_its_annotation() {
        let mut cluster = Cluster::new("c", capz_api::capi::ClusterSpec::default());
        assert!(!is_paused(Some(&cluster), &object(&[], &[], &[])));
        assert!(is_paused(Some(&cluster), &object(&[PAUSED_ANNOTATION], &[], &[])));
        assert!(is_paused(None, &object(&[PAUSED_ANNOTATION], &[], &[])));
        cluster.spec.paused = Some(true);
        assert!(is_paused(Some(&cluster), &object(&[], &[], &[])));
        assert!(is_externally_managed(&object(&[MANAGED_BY_ANNOTATION], &[], &[])));
        assert!(!is_externally_managed(&object(&[PAUSED_ANNOTATION], &[], &[])));
    }
}
