//! One reconcile of an AzureMachine: find its Machine, Cluster and AzureCluster, skip what is
//! not ours to do yet, then bring Azure to the spec or, once it is deleted, clean up.

use std::sync::Arc;

use capz_api::AzureMachine;
use capz_kit::cluster::is_paused;
use capz_kit::error::{Error, Orphaned};
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, ResourceExt as _};

use crate::context::{Found, ID, State};
use crate::{apply, cleanup};

/// The reconcile of one AzureMachine.
pub(crate) async fn reconcile(machine: Arc<AzureMachine>, state: Arc<State>) -> Result<Action, Error> {
    Box::pin(reconcile_machine(machine, &state)).await
}

async fn reconcile_machine(machine: Arc<AzureMachine>, state: &State) -> Result<Action, Error> {
    let owners = &state.owners;
    let cluster = owners.cluster(machine.as_ref()).await?;
    if is_paused(cluster.as_ref(), machine.as_ref()) {
        return Ok(Action::await_change());
    }
    let owner = owners.machine(machine.as_ref()).await?;
    let (Some(cluster), Some(owner)) = (cluster, owner) else {
        // Cluster API has not linked the machine yet (an owner reference change wakes it), or
        // the owners went before it: without them nothing can be found to clean up.
        let ours = machine
            .finalizers()
            .iter()
            .any(|finalizer| finalizer == ID.finalizer());
        if machine.metadata.deletion_timestamp.is_some() && ours {
            return Err(Error::failed(Orphaned(format!(
                "the Machine or Cluster of AzureMachine {} is gone; its Azure resources cannot be found",
                machine.name_any()
            ))));
        }
        return Ok(Action::await_change());
    };
    let namespace = machine.namespace().unwrap_or_default();
    let azure_cluster = owners.azure_cluster(&cluster).await?;
    let found = Found {
        machine: owner,
        cluster,
        azure_cluster,
    };
    let api = Api::<AzureMachine>::namespaced(state.client.clone(), &namespace);
    finalized(&api, ID.finalizer(), machine, async |event| match event {
        Event::Apply(machine) => Box::pin(apply::apply(state, &api, &machine, &found)).await,
        Event::Cleanup(machine) => Box::pin(cleanup::cleanup(state, &api, &machine, &found)).await,
    })
    .await
}
