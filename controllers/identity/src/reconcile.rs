//! The reconciles of the controller: an AzureClusterIdentity (hold or release it, then check it
//! signs in), and an object whose machines get an azure.json Secret (skip what is not ours to
//! write yet, then write it).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::api::capi::Cluster;
use capz_kit::api::common::ObjectReference;
use capz_kit::cluster::{cluster_name, is_paused};
use capz_kit::error::Error;
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::watcher;
use capz_kit::kube::{Resource, ResourceExt as _};
use futures_util::{Stream, StreamExt as _};

use crate::context::{Key, MachineSource, State};
use crate::{apply, cleanup, status};

/// How long a reconcile waits for the caches of clusters to be listed before trying again.
const CACHE_WAIT: Duration = Duration::from_secs(1);

/// The identity `object` refers to with `reference`: a reference without a namespace points into
/// the object's own; one naming another kind refers to no identity.
pub(crate) fn reference_key(object: &impl Resource, reference: Option<&ObjectReference>) -> Option<Key> {
    let reference = reference?;
    if reference
        .kind
        .as_deref()
        .is_some_and(|kind| kind != "AzureClusterIdentity")
    {
        return None;
    }
    let name = reference.name.clone().filter(|name| !name.is_empty())?;
    let namespace = reference
        .namespace
        .clone()
        .filter(|namespace| !namespace.is_empty())
        .or_else(|| object.namespace())?;
    Some((namespace, name))
}

/// Whose users changed, as [`references_changed`] tells.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Referenced {
    /// These identities gained or lost a user.
    Identities(Vec<Key>),
    /// The watch listed everything again: any identity may have.
    All,
}

/// The identities an object starts or stops referring to (both, when it changes which one),
/// and [`Referenced::All`] once the watch has listed everything. Other changes of the objects
/// (their status, most often) give nothing, so that a cluster coming up does not check every
/// identity again.
pub(crate) fn references_changed<K: Resource<DynamicType = ()> + 'static>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    key: impl Fn(&K) -> Option<Key> + Send + 'static,
) -> impl Stream<Item = Referenced> + Send + 'static {
    // The identity each object referred to when last seen, by uid (or name).
    let mut referred: HashMap<String, Option<Key>> = HashMap::new();
    let id = |object: &K| object.uid().unwrap_or_else(|| object.name_any());
    events.filter_map(move |event| {
        let changed = match event {
            Ok(watcher::Event::Apply(object)) => {
                let now = key(&object);
                match referred.insert(id(&object), now.clone()) {
                    Some(before) if before == now => None,
                    before => Some(Referenced::Identities(
                        before.flatten().into_iter().chain(now).collect(),
                    )),
                }
            }
            Ok(watcher::Event::InitApply(object)) => {
                referred.insert(id(&object), key(&object));
                None
            }
            Ok(watcher::Event::Delete(object)) => referred
                .remove(&id(&object))
                .map(|before| Referenced::Identities(before.into_iter().collect())),
            Ok(watcher::Event::InitDone) => Some(Referenced::All),
            Ok(watcher::Event::Init) => {
                // A new listing: what is no longer there gives no Delete.
                referred.clear();
                None
            }
            Err(error) => {
                tracing::warn!(%error, kind = %K::kind(&()), "watch failed");
                None
            }
        };
        std::future::ready(changed.filter(|referenced| *referenced != Referenced::Identities(Vec::new())))
    })
}

impl State {
    /// The clusters using the identity `key`, and the cloud the first of them names.
    fn users(&self, key: &Key) -> (usize, Option<String>) {
        let clusters = self
            .clusters
            .state()
            .into_iter()
            .filter(|cluster| {
                reference_key(&**cluster, cluster.spec.class.identity_ref.as_ref()).as_ref() == Some(key)
            })
            .map(|cluster| cluster.spec.class.azure_environment.clone());
        let planes = self
            .control_planes
            .state()
            .into_iter()
            .filter(|plane| {
                reference_key(&**plane, Some(&plane.spec.class.identity_ref)).as_ref() == Some(key)
            })
            .map(|plane| plane.spec.class.azure_environment.clone());
        let environments: Vec<Option<String>> = clusters.chain(planes).collect();
        let cloud = environments.iter().flatten().next().cloned();
        (environments.len(), cloud)
    }
}

/// The reconcile of an AzureClusterIdentity.
pub(crate) async fn identity(
    identity: Arc<AzureClusterIdentity>,
    state: Arc<State>,
) -> Result<Action, Error> {
    let key = (identity.namespace().unwrap_or_default(), identity.name_any());
    // Counting users from caches that have not listed everything could release a used identity.
    // The wait is bounded: a reconcile must never outlive the shutdown it would hold up.
    let listed = async {
        state.clusters.wait_until_ready().await.is_ok()
            && state.control_planes.wait_until_ready().await.is_ok()
    };
    if !tokio::time::timeout(CACHE_WAIT, listed).await.unwrap_or(false) {
        return Ok(Action::requeue(CACHE_WAIT));
    }
    let (users, cloud) = state.users(&key);
    let api = Api::<AzureClusterIdentity>::namespaced(state.client.clone(), &key.0);
    cleanup::hold(&api, &identity, users > 0).await?;
    if identity.metadata.deletion_timestamp.is_some() {
        // Deleted once its last user is gone; a change of users wakes it.
        return Ok(Action::await_change());
    }
    let (observation, action) = apply::check(&state, &identity, &key, cloud.as_deref()).await;
    status::publish(&api, &identity, observation).await?;
    Ok(action)
}

/// The reconcile of an object whose machines get an azure.json Secret: written when its cluster
/// is known and not paused. Until Cluster API has linked the objects there is nothing to do; a
/// watch brings the object back. The Secret goes with its object (an owner reference).
pub(crate) async fn machine<K: MachineSource>(object: Arc<K>, state: Arc<State>) -> Result<Action, Error> {
    if object.shares_template_secret() || object.meta().deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if let Some(azure_cluster) = azure_cluster(&*object, &state).await? {
        apply::write(&*object, &azure_cluster, &state).await?;
    }
    Ok(Action::await_change())
}

/// The AzureCluster of `object`'s cluster, unless the cluster is paused or not an AzureCluster's.
async fn azure_cluster<K: MachineSource>(object: &K, state: &State) -> Result<Option<AzureCluster>, Error> {
    let namespace = object.namespace().unwrap_or_default();
    // Templates often carry no label: Cluster API links them to their Cluster by an owner
    // reference only.
    let Some(cluster_name) = cluster_name(object) else {
        return Ok(None);
    };
    let Some(cluster) = Api::<Cluster>::namespaced(state.client.clone(), &namespace)
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
    Ok(Api::<AzureCluster>::namespaced(state.client.clone(), &namespace)
        .get_opt(&reference.name)
        .await?)
}

#[cfg(test)]
mod tests {
    use capz_kit::api::AzureCluster;
    use futures_util::StreamExt as _;
    use serde_json::json;

    use super::*;

    fn cluster(uid: &str, identity: Option<&str>) -> AzureCluster {
        let reference = identity.map(|name| json!({"kind": "AzureClusterIdentity", "name": name}));
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": uid, "namespace": "n", "uid": uid},
            "spec": {"location": "westeurope", "identityRef": reference},
        }))
        .unwrap()
    }

    fn key(name: &str) -> Key {
        ("n".to_owned(), name.to_owned())
    }

    #[tokio::test]
    async fn only_the_identities_a_cluster_starts_or_stops_using_are_named() {
        let events = vec![
            watcher::Event::Init,
            watcher::Event::InitApply(cluster("a", Some("one"))),
            watcher::Event::InitDone,
            // A status write: the same reference.
            watcher::Event::Apply(cluster("a", Some("one"))),
            watcher::Event::Apply(cluster("b", Some("two"))),
            watcher::Event::Apply(cluster("a", Some("two"))),
            watcher::Event::Apply(cluster("c", None)),
            watcher::Event::Delete(cluster("b", Some("two"))),
            watcher::Event::Delete(cluster("c", None)),
        ];
        let told: Vec<Referenced> = references_changed(
            futures_util::stream::iter(events.into_iter().map(Ok)),
            |cluster: &AzureCluster| reference_key(cluster, cluster.spec.class.identity_ref.as_ref()),
        )
        .collect()
        .await;
        assert_eq!(
            told,
            [
                Referenced::All,
                Referenced::Identities(vec![key("two")]),
                Referenced::Identities(vec![key("one"), key("two")]),
                Referenced::Identities(vec![key("two")]),
            ]
        );
    }
}
