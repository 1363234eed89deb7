//! The aks controller of capz-rs: AKS managed clusters from AzureManagedControlPlanes, their
//! agent pools from AzureManagedMachinePools, and the AzureManagedCluster side of Cluster API's
//! infrastructure contract.
//!
//! ```text
//!   AzureManagedControlPlane ── owner Cluster (pause, pod and service ranges)
//!     │ finalizer aks.infrastructure.cluster.x-k8s.io       its AzureManagedMachinePools (labelled
//!     │                                                     with the cluster): the pools the
//!     │                                                     managed cluster is created with
//!     ├─ resource group(s)                                  ResourceGroupReady
//!     ├─ virtual network, subnet (brought ones are read)    VNetReady, SubnetsReady
//!     ├─ managed cluster                                    ManagedClusterRunning
//!     └─ Secrets <cluster>-kubeconfig, -kubeconfig-user, -ca; spec.controlPlaneEndpoint;
//!        status.{ready, initialized, version, autoUpgradeVersion, oidcIssuerProfile}
//!
//!   AzureManagedMachinePool ── owner MachinePool (replicas, version), Cluster, its control plane
//!     │                        (waits for status.initialized)
//!     ├─ agent pool                                          AgentPoolsReady
//!     └─ spec.providerIDList (the pool's scale-set instances, sorted), status.{replicas, ready}
//!
//!   AzureManagedCluster ── spec.controlPlaneEndpoint copied from the control plane; status.ready
//! ```
//!
//! Deletion: the managed cluster (AKS takes its pools and node resource group), then the network
//! and groups when ours. A pool whose Cluster is being deleted is let go without a DELETE of its
//! own: AKS refuses changes to a cluster being deleted, and the cluster's delete takes it.

#![deny(missing_docs)]

mod apply;
mod cleanup;
mod context;
mod kubeconfig;
mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use capz_api::capi::{Cluster, MachinePool};
use capz_api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
use capz_kit::cluster::cluster_name;
use capz_kit::filter::{cluster_changes, everything_but_status};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::runtime::{Controller, predicates};
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::runner::{self, BoxError};

use crate::context::State;

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identities cannot be set up (a custom cloud that cannot be resolved).
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let state = Arc::new(State::new(&ctx, settings).await?);
    if !state.features.machine_pool {
        tracing::warn!("the MachinePool feature gate is off: AzureManagedMachinePools are left as they are");
    }
    futures_util::join!(
        ctx.run(planes(&ctx), reconcile::plane, state.clone()),
        ctx.run(pools(&ctx), reconcile::pool, state.clone()),
        ctx.run(clusters(&ctx), reconcile::cluster, state),
    );
    Ok(())
}

/// The Cluster of an object that belongs to one.
fn cluster_of<K: Resource>(object: &K) -> Option<String> {
    cluster_name(object)
}

/// The name of a Cluster, whose members it wakes.
#[expect(clippy::unnecessary_wraps, reason = "the shape `wake_members_on` takes")]
fn itself(cluster: &Cluster) -> Option<String> {
    Some(cluster.name_any())
}

/// A control plane matters to its cluster's pools and infrastructure cluster when it becomes
/// initialized, changes its endpoint or the version AKS upgraded to, or is deleted.
fn plane_changes(plane: &AzureManagedControlPlane) -> u64 {
    let mut hasher = DefaultHasher::new();
    if let Some(endpoint) = &plane.spec.control_plane_endpoint {
        (&endpoint.host, endpoint.port).hash(&mut hasher);
    }
    if let Some(status) = &plane.status {
        status.initialized.hash(&mut hasher);
        status.auto_upgrade_version.hash(&mut hasher);
    }
    plane.meta().deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

/// A pool matters to its control plane when it comes or goes, joins its cluster or its
/// MachinePool, or changes its mode.
fn pool_changes(pool: &AzureManagedMachinePool) -> u64 {
    let mut hasher = DefaultHasher::new();
    pool.uid().hash(&mut hasher);
    // Cluster API labels it with its cluster, and makes its MachinePool its owner, after it is
    // made; the managed cluster is created only with pools so linked.
    cluster_name(pool).hash(&mut hasher);
    for owner in pool.owner_references() {
        if owner.kind == "MachinePool" {
            owner.uid.hash(&mut hasher);
        }
    }
    pool.spec.class.mode.hash(&mut hasher);
    pool.meta().deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

/// The controller of control planes, woken by their Cluster and by their cluster's pools (the
/// managed cluster is created with them).
fn planes(ctx: &runner::Context) -> Controller<AzureManagedControlPlane> {
    let controller = ctx.filtered_controller(
        ctx.api::<AzureManagedControlPlane>(),
        everything_but_status::<AzureManagedControlPlane>,
    );
    let controller = ctx.wake_members_on(controller, cluster_changes, itself);
    ctx.wake_members_on(
        controller,
        |pool| Some(pool_changes(pool)),
        cluster_of::<AzureManagedMachinePool>,
    )
}

/// The controller of pools, woken by their MachinePool, their Cluster and its control plane.
fn pools(ctx: &runner::Context) -> Controller<AzureManagedMachinePool> {
    let controller = ctx.filtered_controller(
        ctx.api::<AzureManagedMachinePool>(),
        everything_but_status::<AzureManagedMachinePool>,
    );
    let controller = ctx.wake_on_machine_pools(controller, machine_pool_changes);
    let controller = ctx.wake_members_on(controller, cluster_changes, itself);
    ctx.wake_members_on(
        controller,
        |plane| Some(plane_changes(plane)),
        cluster_of::<AzureManagedControlPlane>,
    )
}

/// The controller of AKS infrastructure clusters, woken by their Cluster and its control plane.
fn clusters(ctx: &runner::Context) -> Controller<AzureManagedCluster> {
    let controller = ctx.filtered_controller(
        ctx.api::<AzureManagedCluster>(),
        everything_but_status::<AzureManagedCluster>,
    );
    let controller = ctx.wake_members_on(controller, cluster_changes, itself);
    ctx.wake_members_on(
        controller,
        |plane| Some(plane_changes(plane)),
        cluster_of::<AzureManagedControlPlane>,
    )
}

/// A MachinePool matters for its replicas and version.
fn machine_pool_changes(pool: &MachinePool) -> u64 {
    let mut hasher = DefaultHasher::new();
    predicates::generation(pool).hash(&mut hasher);
    pool.meta().deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}
