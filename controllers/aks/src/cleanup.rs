//! Deleting: an AzureManagedControlPlane's managed cluster (AKS deletes its pools and node
//! resource group with it), then its network and groups when they are ours, in [`DELETION`];
//! an AzureManagedMachinePool's agent pool, unless its whole cluster is going, in which case
//! the cluster's delete takes the pool and no pool DELETE is sent (Azure refuses changes to a
//! cluster being deleted).

use capz_api::capi::Cluster;
use capz_api::{AzureManagedControlPlane, AzureManagedMachinePool};
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps};
use capz_kit::resource::{self, AzureResource as _, Ownership};
use capz_kit::{abandon, azure::ResourceId};

use crate::apply::{arm_client, pool_of_plane};
use crate::context::{Found, ID, State};
use crate::plan::{self, DELETION, POOL_ORDER, POOL_SERVICES, SERVICES, Unit};
use crate::status::{self, PlaneFields};

/// Deletes what the control plane `plane` of `cluster` built, and reports where it stands.
pub(crate) async fn cleanup_plane(
    state: &State,
    api: &Api<AzureManagedControlPlane>,
    plane: &AzureManagedControlPlane,
    cluster: &Cluster,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(plane.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(plane.conditions(), Direction::Delete);
    let fallback = state.subscription.as_deref();
    let prepared = match plan::control_plane(plane, cluster, &[], fallback) {
        Err(error) => Err(Outcome::failed(error)),
        Ok(plan) => arm_client(state, plane)
            .await
            .map(|(client, credential)| (plan, client, credential)),
    };
    match prepared {
        Err(outcome) => steps.hold(DELETION, outcome),
        Ok((plan, client, credential)) => {
            for step in DELETION {
                let work = async {
                    let mut outcome = Outcome::Done;
                    // A refused credential is named: the deletion waits for a person to fix it.
                    match step.unit {
                        Unit::ManagedCluster => {
                            let deleted = resource::delete(&client, &plan.cluster, &mut operations).await;
                            outcome.absorb(credential.blame(deleted));
                        }
                        // The network goes with its subnet, the groups with what is left in them.
                        Unit::Network => {
                            let deleted = resource::delete(&client, &plan.network, &mut operations).await;
                            outcome.absorb(credential.blame(deleted));
                        }
                        Unit::Groups => {
                            for group in plan.groups.iter().rev() {
                                let deleted = resource::delete(&client, group, &mut operations).await;
                                outcome.absorb(credential.blame(deleted));
                            }
                        }
                        Unit::Subnet => {}
                    }
                    outcome
                };
                steps.run(step, work).await;
            }
        }
    }
    let pass = steps.finish();
    let fields = PlaneFields::default();
    status::publish_plane(api, plane, pass.observations.clone(), &operations, &fields).await?;
    pass.next()
}

/// Deletes the agent pool of `pool`, unless its Cluster is being deleted (then the managed
/// cluster's delete takes it) or its control plane is gone (and the managed cluster with it).
pub(crate) async fn cleanup_pool(
    state: &State,
    api: &Api<AzureManagedMachinePool>,
    pool: &AzureManagedMachinePool,
    found: &Found,
) -> Result<Action, Error> {
    let Some(plane) = found.control_plane.as_ref() else {
        return Ok(Action::await_change());
    };
    if found.cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let mut operations = Operations::owned(pool.operations(), ID.name(), POOL_SERVICES);
    let mut steps = Steps::new(pool.conditions(), Direction::Delete);
    match pool_of_plane(state, plane, pool, found).await {
        Err(outcome) => steps.hold(POOL_ORDER, outcome),
        Ok((agent_pool, (client, credential), _)) => {
            let work = async {
                let mut outcome = Outcome::Done;
                let deleted = resource::delete(&client, &agent_pool, &mut operations).await;
                outcome.absorb(credential.blame(deleted));
                outcome
            };
            steps.run(&POOL_ORDER[0], work).await;
        }
    }
    let pass = steps.finish();
    status::publish_pool(api, pool, pass.observations.clone(), &operations, None).await?;
    pass.next()
}

/// Lets go of `plane` without deleting anything, as its abandon annotation asks, and tells in a
/// Warning event what stays in Azure: the managed cluster and its node resource group and, when
/// the controller made them (not brought in the spec), the network and the groups. Without its
/// Cluster (or with a spec that names nothing valid) only what the spec alone names is told.
pub(crate) async fn abandon_plane(
    state: &State,
    plane: &AzureManagedControlPlane,
    cluster: Option<&Cluster>,
) -> Result<Action, Error> {
    let fallback = state.subscription.as_deref();
    let ours = |ownership: Ownership| !matches!(ownership, Ownership::Shared);
    let mut left: Vec<ResourceId> = Vec::new();
    if let Some(Ok(plan)) = cluster.map(|cluster| plan::control_plane(plane, cluster, &[], fallback)) {
        left.push(plan.cluster.id().clone());
        left.extend(plan::node_group(plane, fallback));
        if ours(plan.network.ownership()) {
            left.push(plan.network.id().clone());
        }
        for group in &plan.groups {
            if ours(group.ownership()) {
                left.push(group.id().clone());
            }
        }
    } else {
        left.extend(plan::cluster_id(plane, fallback));
        left.extend(plan::node_group(plane, fallback));
    }
    // A group may be named twice (the network's and the cluster's): each id is told once.
    let mut told = std::collections::HashSet::new();
    left.retain(|id| told.insert(id.to_string().to_ascii_lowercase()));
    abandon::announce(&left).await;
    Ok(Action::await_change())
}
