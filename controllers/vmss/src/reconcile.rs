//! One reconcile of an AzureMachinePool (find its MachinePool, Cluster and AzureCluster, skip what
//! is not ours to do yet, then bring Azure to the spec or clean up), and of an
//! AzureMachinePoolMachine (only its deletion is ours: the pool's pass writes its status).

use std::sync::Arc;

use capz_api::{AzureMachinePool, AzureMachinePoolMachine};
use capz_kit::cluster::{PoolOwners, azure_cluster_of, pool_owners};
use capz_kit::error::{Error, Orphaned};
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, ResourceExt as _};

use crate::context::{Found, ID, MemberMeta, State};
use crate::{apply, cleanup};

/// The reconcile of one AzureMachinePool.
pub(crate) async fn reconcile(pool: Arc<AzureMachinePool>, state: Arc<State>) -> Result<Action, Error> {
    Box::pin(reconcile_pool(pool, &state)).await
}

async fn reconcile_pool(pool: Arc<AzureMachinePool>, state: &State) -> Result<Action, Error> {
    let client = &state.client;
    let (cluster, owner) = match pool_owners(client, state.features.machine_pool, pool.as_ref()).await? {
        PoolOwners::Skip => return Ok(Action::await_change()),
        // Cluster API has not linked the pool yet (an owner reference change wakes it), or the
        // owners went before it: without them nothing can be found to clean up.
        PoolOwners::Unlinked => {
            let ours = pool
                .finalizers()
                .iter()
                .any(|finalizer| finalizer == ID.finalizer());
            if pool.metadata.deletion_timestamp.is_some() && ours {
                return Err(Error::failed(Orphaned(format!(
                    "the MachinePool or Cluster of AzureMachinePool {} is gone; its scale set cannot be found",
                    pool.name_any()
                ))));
            }
            return Ok(Action::await_change());
        }
        PoolOwners::Linked(cluster, owner) => (*cluster, *owner),
    };
    let namespace = pool.namespace().unwrap_or_default();
    let azure_cluster = azure_cluster_of(client, &cluster, &namespace).await?;
    let found = Found {
        pool: owner,
        cluster,
        azure_cluster,
    };
    let api = Api::<AzureMachinePool>::namespaced(client.clone(), &namespace);
    finalized(&api, ID.finalizer(), pool, async |event| match event {
        Event::Apply(pool) => Box::pin(apply::apply(state, &api, &pool, &found)).await,
        Event::Cleanup(pool) => Box::pin(cleanup::cleanup(state, &api, &pool, &found)).await,
    })
    .await
}

/// The reconcile of one AzureMachinePoolMachine, woken with its metadata: while it lives,
/// nothing (its pool's pass mirrors its instance); once deleted, its instance goes.
pub(crate) async fn member(member: Arc<MemberMeta>, state: Arc<State>) -> Result<Action, Error> {
    if member.metadata.deletion_timestamp.is_none() {
        return Ok(Action::await_change());
    }
    let namespace = member.namespace().unwrap_or_default();
    let api = Api::<AzureMachinePoolMachine>::namespaced(state.client.clone(), &namespace);
    // The instance to delete and the deletion in flight are in its spec and status.
    let Some(member) = api.get_opt(&member.name_any()).await? else {
        return Ok(Action::await_change());
    };
    finalized(
        &api,
        ID.finalizer(),
        Arc::new(member),
        async |event| match event {
            Event::Apply(_) => Ok(Action::await_change()),
            Event::Cleanup(member) => Box::pin(cleanup::cleanup_member(&state, &api, &member)).await,
        },
    )
    .await
}
