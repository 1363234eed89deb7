//! One reconcile of an AzureCluster: the kit's skip rules and finalizer, then the cluster's
//! resources brought to the spec or, once the object is deleted, cleaned up.

use std::sync::Arc;

use capz_kit::api::capi::Cluster;
use capz_kit::api::{AzureCluster, AzureMachine, GROUP};
use capz_kit::azure_cluster;
use capz_kit::cluster::{is_control_plane, is_paused, owner_cluster, owner_machine};
use capz_kit::error::Error;
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, Client, ResourceExt as _};
use capz_kit::scope::ClusterScope;
use capz_resources::inbound_nat_rule::{ApiServerFrontend, gets_rule};

use crate::context::{ID, Machines, Site, State};
use crate::{apply, cleanup};

pub(crate) async fn reconcile(object: Arc<AzureCluster>, state: Arc<State>) -> Result<Action, Error> {
    azure_cluster::reconcile(
        &*state,
        &state.client,
        ID.finalizer(),
        object,
        apply::apply,
        cleanup::cleanup,
    )
    .await
}

pub(crate) async fn machine(machine: Arc<AzureMachine>, machines: Arc<Machines>) -> Result<Action, Error> {
    let client = &machines.state.client;
    let ours = machine
        .finalizers()
        .iter()
        .any(|finalizer| finalizer == ID.finalizer());
    let deleting = machine.metadata.deletion_timestamp.is_some();
    // Only control-plane machines get a rule: a worker's reconcile ends at its Machine, without
    // reading its cluster (most machines are workers, and every change of theirs comes here).
    let owner = owner_machine(client, &*machine).await?;
    let control_plane = owner
        .as_ref()
        .is_some_and(|owner| is_control_plane(&*machine, owner));
    if !(control_plane || ours && deleting) {
        // Before Cluster API links the machine an owner reference change wakes it.
        return Ok(Action::await_change());
    }
    let cluster = owner_cluster(client, &*machine).await?;
    if is_paused(cluster.as_ref(), &*machine) {
        return Ok(Action::await_change());
    }
    let site = match &cluster {
        Some(cluster) => site_of(&machines, client, cluster).await?,
        None => None,
    };
    let wanted = site
        .as_ref()
        .is_some_and(|site| gets_rule(&site.azure_cluster, &site.scope, control_plane));
    // Only machines that get a rule carry the finalizer; one that has it keeps it until cleanup.
    if !(wanted || (ours && deleting)) {
        return Ok(Action::await_change());
    }
    let api = Api::<AzureMachine>::namespaced(client.clone(), &machine.namespace().unwrap_or_default());
    let target = site.as_ref().and_then(|site| site.target.as_ref());
    finalized(&api, ID.finalizer(), machine, async |event| {
        match (event, &site, target) {
            (Event::Apply(machine), Some(site), Some(target)) => {
                apply::apply_rule(&machines, &api, &machine, site, target).await
            }
            (Event::Apply(_), _, _) => Ok(Action::await_change()),
            (Event::Cleanup(machine), site, target) => {
                cleanup::cleanup_rule(&machines, &api, &machine, site.as_ref(), target).await
            }
        }
    })
    .await
}

/// The AzureCluster the Cluster names as its infrastructure, unless it has none or a spec that
/// names no valid resources (its own controller reports that).
pub(crate) async fn site_of(
    machines: &Machines,
    client: &Client,
    cluster: &Cluster,
) -> Result<Option<Site>, Error> {
    let Some(reference) = cluster
        .spec
        .infrastructure_ref
        .as_ref()
        .filter(|reference| reference.is(GROUP, "AzureCluster"))
    else {
        return Ok(None);
    };
    let namespace = cluster.namespace().unwrap_or_default();
    let Some(azure_cluster) = Api::<AzureCluster>::namespaced(client.clone(), &namespace)
        .get_opt(&reference.name)
        .await?
    else {
        return Ok(None);
    };
    let state = &machines.state;
    let Ok(scope) = ClusterScope::new(&azure_cluster, state.features, state.subscription.as_deref()) else {
        return Ok(None);
    };
    let target = ApiServerFrontend::of(&scope).ok().flatten();
    Ok(Some(Site {
        azure_cluster,
        scope,
        target,
    }))
}
