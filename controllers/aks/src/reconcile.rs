//! One reconcile of each kind: find what the object belongs to, skip what is not ours to do yet
//! (paused, not linked, the MachinePool gate off, nothing to build while the Cluster is being
//! deleted), then, under the finalizer, apply or clean up, or, for a control plane whose
//! deletion a person abandoned, let go.

use std::sync::Arc;

use capz_api::capi::Cluster;
use capz_api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
use capz_kit::abandon;
use capz_kit::cluster::{PoolOwners, is_paused, linked_cluster, owner_cluster, pool_owners};
use capz_kit::error::{Error, Orphaned};
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, Client, Resource as _, ResourceExt as _};

use crate::apply::{apply_cluster, apply_plane, apply_pool};
use crate::cleanup::{abandon_plane, cleanup_plane, cleanup_pool};
use crate::context::{Found, ID, State};

/// Whether `object` still carries the controller's finalizer.
fn ours(object: &impl capz_kit::kube::Resource) -> bool {
    object
        .finalizers()
        .iter()
        .any(|finalizer| finalizer == ID.finalizer())
}

/// The control plane the Cluster `cluster` names, when it is an AzureManagedControlPlane that
/// exists.
async fn control_plane_of(
    client: &Client,
    cluster: &Cluster,
) -> capz_kit::kube::Result<Option<AzureManagedControlPlane>> {
    let Some(reference) = cluster.spec.control_plane_ref.as_ref().filter(|reference| {
        reference.is(
            &AzureManagedControlPlane::group(&()),
            &AzureManagedControlPlane::kind(&()),
        )
    }) else {
        return Ok(None);
    };
    Api::<AzureManagedControlPlane>::namespaced(client.clone(), &cluster.namespace().unwrap_or_default())
        .get_opt(&reference.name)
        .await
}

/// The reconcile of one AzureManagedControlPlane.
pub(crate) async fn plane(plane: Arc<AzureManagedControlPlane>, state: Arc<State>) -> Result<Action, Error> {
    let client = &state.client;
    let cluster = owner_cluster(client, plane.as_ref()).await?;
    if is_paused(cluster.as_ref(), plane.as_ref()) {
        return Ok(Action::await_change());
    }
    let api =
        Api::<AzureManagedControlPlane>::namespaced(client.clone(), &plane.namespace().unwrap_or_default());
    // A person gave up on the deletion: let go, deleting nothing, even when its Cluster is gone.
    if plane.metadata.deletion_timestamp.is_some() && abandon::requested(plane.as_ref(), ID) {
        return finalized(&api, ID.finalizer(), plane, async |event| match event {
            Event::Cleanup(plane) => abandon_plane(&state, &plane, cluster.as_ref()).await,
            Event::Apply(_) => Ok(Action::await_change()),
        })
        .await;
    }
    let Some(cluster) = cluster else {
        if plane.metadata.deletion_timestamp.is_some() && ours(plane.as_ref()) {
            return Err(Error::failed(Orphaned(format!(
                "the Cluster of AzureManagedControlPlane {} is gone; its managed cluster cannot be named",
                plane.name_any()
            ))));
        }
        // Cluster API has not linked it yet: the owner reference it sets wakes it.
        return Ok(Action::await_change());
    };
    let cluster_deleting = cluster.metadata.deletion_timestamp.is_some();
    finalized(&api, ID.finalizer(), plane, async |event| match event {
        // Cluster API deletes the control plane next: what is missing in Azure (gone out of
        // band, say) is not built again only to be deleted.
        Event::Apply(_) if cluster_deleting => Ok(Action::await_change()),
        Event::Apply(plane) => Box::pin(apply_plane(&state, &api, &plane, &cluster)).await,
        Event::Cleanup(plane) => Box::pin(cleanup_plane(&state, &api, &plane, &cluster)).await,
    })
    .await
}

/// The reconcile of one AzureManagedMachinePool.
pub(crate) async fn pool(pool: Arc<AzureManagedMachinePool>, state: Arc<State>) -> Result<Action, Error> {
    let client = &state.client;
    let (cluster, owner) = match pool_owners(client, state.features.machine_pool, pool.as_ref()).await? {
        PoolOwners::Unlinked if pool.metadata.deletion_timestamp.is_some() && ours(pool.as_ref()) => {
            // Without its Cluster the managed cluster, and the pool with it, went first.
            let api = Api::<AzureManagedMachinePool>::namespaced(
                client.clone(),
                &pool.namespace().unwrap_or_default(),
            );
            return finalized(&api, ID.finalizer(), pool, async |_| Ok(Action::await_change())).await;
        }
        PoolOwners::Skip | PoolOwners::Unlinked => return Ok(Action::await_change()),
        PoolOwners::Linked(cluster, owner) => (*cluster, *owner),
    };
    let found = Found {
        control_plane: control_plane_of(client, &cluster).await?,
        pool: owner,
        cluster,
    };
    let api =
        Api::<AzureManagedMachinePool>::namespaced(client.clone(), &pool.namespace().unwrap_or_default());
    let cluster_deleting = found.cluster.metadata.deletion_timestamp.is_some();
    finalized(&api, ID.finalizer(), pool, async |event| match event {
        // As for the control plane: the pool goes with its cluster, and nothing is built now.
        Event::Apply(_) if cluster_deleting => Ok(Action::await_change()),
        Event::Apply(pool) => Box::pin(apply_pool(&state, &api, &pool, &found)).await,
        Event::Cleanup(pool) => Box::pin(cleanup_pool(&state, &api, &pool, &found)).await,
    })
    .await
}

/// The reconcile of one AzureManagedCluster.
pub(crate) async fn cluster(object: Arc<AzureManagedCluster>, state: Arc<State>) -> Result<Action, Error> {
    let client = &state.client;
    let cluster = linked_cluster(client, object.as_ref()).await?;
    if is_paused(cluster.as_ref(), object.as_ref()) {
        return Ok(Action::await_change());
    }
    let plane = match &cluster {
        Some(cluster) => control_plane_of(client, cluster).await?,
        None if object.metadata.deletion_timestamp.is_none() => return Ok(Action::await_change()),
        None => None,
    };
    let api = Api::<AzureManagedCluster>::namespaced(client.clone(), &object.namespace().unwrap_or_default());
    // Nothing of it is in Azure: its deletion only lets go.
    finalized(&api, ID.finalizer(), object, async |event| match event {
        Event::Apply(object) => apply_cluster(&api, &object, plane.as_ref()).await,
        Event::Cleanup(_) => Ok(Action::await_change()),
    })
    .await
}
