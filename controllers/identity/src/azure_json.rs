//! The `<name>-azure-json` Secrets: the cloud provider's configuration for the machines of an
//! AzureMachineTemplate, or of an AzureMachine not cloned from one.
//!
//! The AzureCluster is found as Cluster API links it: the object's owner Cluster (or its
//! `cluster.x-k8s.io/cluster-name` label; templates often have only the owner reference), whose
//! `spec.infrastructureRef` names the AzureCluster. The Secret
//! carries the label `<cluster>: owned` and an owner reference to its object, so it goes with it.
//! A Secret of that name without the label is the user's own and is never touched. The Secret is
//! applied only when its content or owner differs.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use capz_kit::api::capi::Cluster;
use capz_kit::api::common::compute::{VmIdentity, VmIdentityProfile};
use capz_kit::api::{AzureCluster, AzureMachine, AzureMachineTemplate};
use capz_kit::azure::ResourceId;
use capz_kit::azure::models::{ArmModel as _, UserAssignedIdentity};
use capz_kit::cluster::{cluster_name, is_paused};
use capz_kit::filter::everything_but_status;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::Secret;
use capz_kit::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use capz_kit::kube::api::{Api, ObjectMeta, Patch, PatchParams};
use capz_kit::kube::core::NamespaceResourceScope;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::reflector::{ObjectRef, Store};
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::runner::Context;
use capz_kit::scope::ClusterScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::changes::Seen;
use crate::cloud_config::{
    CONTROL_PLANE_KEY, CloudProviderConfig, HostIdentity, LEGACY_KEY, WORKER_NODE_KEY,
};
use crate::{Error, ID, Shared};

/// The annotation Cluster API puts on objects cloned from a template, naming its kind and group.
const CLONED_FROM_GROUP_KIND: &str = "cluster.x-k8s.io/cloned-from-groupkind";
/// The one kind whose clones share their template's Secret.
const TEMPLATE_GROUP_KIND: &str = "AzureMachineTemplate.infrastructure.cluster.x-k8s.io";
/// The value of the Secret's cluster label.
const OWNED: &str = "owned";

/// A kind whose machines get an azure.json Secret.
pub(crate) trait MachineSource:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The managed identities of its machines.
    fn identities(&self) -> &VmIdentityProfile;

    /// Whether its machines use another object's Secret.
    fn shares_template_secret(&self) -> bool {
        false
    }
}

impl MachineSource for AzureMachineTemplate {
    fn identities(&self) -> &VmIdentityProfile {
        &self.spec.template.spec.identities
    }
}

impl MachineSource for AzureMachine {
    fn identities(&self) -> &VmIdentityProfile {
        &self.spec.identities
    }

    fn shares_template_secret(&self) -> bool {
        self.annotations()
            .get(CLONED_FROM_GROUP_KIND)
            .is_some_and(|group_kind| group_kind == TEMPLATE_GROUP_KIND)
    }
}

/// Runs the Secret controller of kind `K`. Besides `K` itself, a Cluster (pause, its
/// AzureCluster) or an AzureCluster (spec, cluster label) that changes wakes the objects of its
/// cluster; peers' status writes on them do not.
pub(crate) async fn run<K: MachineSource>(ctx: &Context, shared: Arc<Shared>) {
    let controller = ctx.filtered_controller(ctx.api::<K>(), everything_but_status::<K>);
    let store = controller.store();
    let clusters_seen = Seen::default();
    let azure_clusters_seen = Seen::default();
    let by_cluster = store.clone();
    let by_azure_cluster = store;
    let controller = controller
        .watches(
            ctx.api::<Cluster>(),
            ctx.watcher_config(),
            move |cluster: Cluster| {
                let fields = (cluster.metadata.generation, is_paused(Some(&cluster), &cluster));
                if clusters_seen.changed(&cluster, fields) {
                    of_cluster(&by_cluster, cluster.namespace().as_deref(), &cluster.name_any())
                } else {
                    Vec::new()
                }
            },
        )
        .watches(
            ctx.api::<AzureCluster>(),
            ctx.watcher_config(),
            move |azure_cluster: AzureCluster| {
                let name = cluster_name(&azure_cluster);
                let fields = (azure_cluster.metadata.generation, name.clone());
                match name {
                    Some(name) if azure_clusters_seen.changed(&azure_cluster, fields) => {
                        of_cluster(&by_azure_cluster, azure_cluster.namespace().as_deref(), &name)
                    }
                    _ => Vec::new(),
                }
            },
        );
    ctx.run(controller, reconcile::<K>, shared).await;
}

/// The objects of `store` that belong to the cluster `cluster` in `namespace`.
fn of_cluster<K: MachineSource>(
    store: &Store<K>,
    namespace: Option<&str>,
    cluster: &str,
) -> Vec<ObjectRef<K>> {
    store
        .state()
        .iter()
        .filter(|object| object.namespace().as_deref() == namespace)
        .filter(|object| cluster_name(object.as_ref()).as_deref() == Some(cluster))
        .map(|object| ObjectRef::from_obj(&**object))
        .collect()
}

async fn reconcile<K: MachineSource>(object: Arc<K>, shared: Arc<Shared>) -> Result<Action, Error> {
    write(&*object, &shared).await?;
    Ok(Action::await_change())
}

/// Writes the object's Secret when its cluster is known and not paused. Until Cluster API has
/// linked the objects, there is nothing to do; a watch brings the object back.
async fn write<K: MachineSource>(object: &K, shared: &Shared) -> Result<(), Error> {
    if object.shares_template_secret() || object.meta().deletion_timestamp.is_some() {
        return Ok(());
    }
    let Some(azure_cluster) = azure_cluster(object, shared).await? else {
        return Ok(());
    };
    let scope = ClusterScope::new(&azure_cluster, shared.features, shared.subscription.as_deref())?;
    let credentials = shared
        .identities
        .cloud_provider_credentials(ClusterIdentityRef::from(&azure_cluster))
        .await?;
    let host = host_identity(object.identities(), &azure_cluster, shared).await?;
    let file = CloudProviderConfig::new(&scope, &credentials, &host).to_bytes();
    apply_secret(object, shared, &scope.name, file).await
}

/// The AzureCluster of `object`'s cluster, unless the cluster is paused or not an AzureCluster's.
async fn azure_cluster<K: MachineSource>(object: &K, shared: &Shared) -> Result<Option<AzureCluster>, Error> {
    let namespace = object.namespace().unwrap_or_default();
    // Templates often carry no label: Cluster API links them to their Cluster by an owner
    // reference only.
    let Some(cluster_name) = cluster_name(object) else {
        return Ok(None);
    };
    let Some(cluster) = Api::<Cluster>::namespaced(shared.client.clone(), &namespace)
        .get_opt(&cluster_name)
        .await?
    else {
        return Ok(None);
    };
    if is_paused(Some(&cluster), object) {
        return Ok(None);
    }
    let Some(reference) = cluster
        .spec
        .infrastructure_ref
        .as_ref()
        .filter(|reference| reference.kind == AzureCluster::kind(&()))
    else {
        return Ok(None);
    };
    Ok(Api::<AzureCluster>::namespaced(shared.client.clone(), &namespace)
        .get_opt(&reference.name)
        .await?)
}

/// How the machines' cloud provider signs in: a user-assigned identity is named by its client
/// id, read from Azure with the cluster's credential.
async fn host_identity(
    profile: &VmIdentityProfile,
    azure_cluster: &AzureCluster,
    shared: &Shared,
) -> Result<HostIdentity, Error> {
    match profile.identity.unwrap_or_default() {
        VmIdentity::None => Ok(HostIdentity::ServicePrincipal),
        VmIdentity::SystemAssigned => Ok(HostIdentity::SystemAssigned),
        VmIdentity::UserAssigned => {
            let provider_id = profile
                .user_assigned_identities
                .iter()
                .flatten()
                .next()
                .map(|identity| identity.provider_id.as_str())
                .ok_or_else(|| {
                    Error::InvalidSpec(
                        "identity UserAssigned needs an entry in userAssignedIdentities".into(),
                    )
                })?;
            let id: ResourceId = provider_id
                .strip_prefix("azure://")
                .unwrap_or(provider_id)
                .parse()
                .map_err(|error| {
                    Error::InvalidSpec(format!(
                        "userAssignedIdentities[0].providerID {provider_id:?}: {error}"
                    ))
                })?;
            let arm = shared
                .identities
                .credential(ClusterIdentityRef::from(azure_cluster))
                .await?
                .arm_client(ID.user_agent());
            let identity: UserAssignedIdentity = arm.get(&id, &UserAssignedIdentity::API_VERSION).await?;
            identity
                .properties
                .and_then(|properties| properties.client_id)
                .map(HostIdentity::UserAssigned)
                .ok_or_else(|| {
                    Error::InvalidSpec(format!("the user-assigned identity {id} has no client id"))
                })
        }
    }
}

/// Applies the Secret `<name>-azure-json` holding `file` under every key, unless a Secret of that
/// name is the user's or already holds it.
async fn apply_secret<K: MachineSource>(
    object: &K,
    shared: &Shared,
    cluster: &str,
    file: Vec<u8>,
) -> Result<(), Error> {
    let namespace = object.namespace().unwrap_or_default();
    let name = format!("{}-azure-json", object.name_any());
    let api = Api::<Secret>::namespaced(shared.client.clone(), &namespace);
    let owner = OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: object.name_any(),
        uid: object.uid().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let data: BTreeMap<String, ByteString> = [CONTROL_PLANE_KEY, WORKER_NODE_KEY, LEGACY_KEY]
        .into_iter()
        .map(|key| (key.to_owned(), ByteString(file.clone())))
        .collect();
    if let Some(existing) = api.get_opt(&name).await? {
        if existing.labels().get(cluster).map(String::as_str) != Some(OWNED) {
            tracing::debug!(secret = %name, "a Secret of the user's holds the name; left as it is");
            return Ok(());
        }
        let owned_by = existing
            .owner_references()
            .iter()
            .any(|reference| reference.uid == owner.uid);
        if owned_by && existing.data.as_ref() == Some(&data) {
            return Ok(());
        }
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace),
            labels: Some([(cluster.to_owned(), OWNED.to_owned())].into()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    // The label says the Secret is the provider's: take over what CAPZ's manager wrote before.
    api.patch(
        &name,
        &PatchParams::apply(ID.field_manager().as_str()).force(),
        &Patch::Apply(&secret),
    )
    .await?;
    tracing::info!(secret = %name, "wrote the cloud provider configuration");
    Ok(())
}
