//! The vmss controller of capz-rs: for each AzureMachinePool, a virtual machine scale set whose
//! instances are the nodes of a Cluster API MachinePool, one AzureMachinePoolMachine per instance,
//! and rolling replacement of instances when the pool's model changes.
//!
//! ```text
//!   AzureMachinePool ── owner MachinePool (replicas, bootstrap data, version, failure domains)
//!        │              Cluster (pause, infrastructure provisioned), AzureCluster (subnets, names)
//!        │              workload Nodes (through <cluster>-kubeconfig): which instances are ready
//!        ▼
//!   scale set ─▶ role assignment
//!        │
//!        ├─ one AzureMachinePoolMachine per instance (Cluster API makes a Machine for each)
//!        ├─ instances removed through their Machines: Cluster API drains, then the
//!        │  AzureMachinePoolMachine's deletion deletes the instance
//!        ▼
//!   spec.providerIDList (sorted), status.{replicas, ready, instances}, conditions
//! ```
//!
//! Deletion deletes the scale set (its instances with it), the role assignment, then the pool's
//! AzureMachinePoolMachines; then the finalizer goes.

#![deny(missing_docs)]

mod apply;
mod cleanup;
mod context;
mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use capz_api::capi::{Cluster, MachinePool};
use capz_api::common::conditions::ConditionType;
use capz_api::{AzureCluster, AzureMachinePool};
use capz_kit::cluster::members_of;
use capz_kit::filter::{changes, cluster_changes, everything_but_status};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::runtime::reflector::ObjectRef;
use capz_kit::kube::runtime::{Controller, WatchStreamExt as _, predicates};
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::queue::counted;
use capz_kit::runner::{self, BoxError};
use capz_kit::watch::watch;
use futures_util::StreamExt as _;

use crate::context::{MemberMeta, State};

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identities cannot be set up (a custom cloud that cannot be resolved).
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let state = Arc::new(State::new(&ctx, settings).await?);
    if !state.features.machine_pool {
        tracing::warn!("the MachinePool feature gate is off: AzureMachinePools are left as they are");
    }
    // Only a member's deletion is this controller's to act on: its cache holds their metadata.
    let members = ctx.filtered_controller(ctx.api::<MemberMeta>(), everything_but_status::<MemberMeta>);
    futures_util::join!(
        ctx.run(pools(&ctx, &state), reconcile::reconcile, state.clone()),
        ctx.run(members, reconcile::member, state),
    );
    Ok(())
}

/// The AzureCluster conditions pools wait on.
const CLUSTER_DEPENDS_ON: &[ConditionType] =
    &[ConditionType::SUBNETS_READY, ConditionType::LOAD_BALANCERS_READY];

/// The controller of AzureMachinePools, woken by their MachinePools, their members' deletions,
/// their cluster and its Nodes.
fn pools(ctx: &runner::Context, state: &State) -> Controller<AzureMachinePool> {
    let controller = ctx.filtered_controller(
        ctx.api::<AzureMachinePool>(),
        everything_but_status::<AzureMachinePool>,
    );
    let controller = ctx.wake_on_machine_pools(controller, machine_pool_changes);
    let store = controller.store();
    let members = watch(ctx.api::<MemberMeta>(), ctx.watcher_config())
        .touched_objects()
        .predicate_filter(
            |member: &MemberMeta| Some(member_changes(member)),
            capz_kit::kube::runtime::PredicateConfig::default(),
        );
    // A Node that registers, turns Ready or is cordoned changes what its pool reports.
    let by_cluster = store.clone();
    let node_changes = state.workloads.changes().flat_map(move |cluster| {
        futures_util::stream::iter(members_of(&by_cluster, &cluster.namespace, &cluster.name))
    });
    let controller = controller
        .watches_stream(members, counted(store, |member: MemberMeta| pool_of(&member)))
        .reconcile_on(node_changes);
    ctx.wake_cluster_members(
        controller,
        |cluster: &Cluster| cluster_changes(cluster),
        changes::<AzureCluster>(CLUSTER_DEPENDS_ON),
    )
}

/// A MachinePool matters for its spec (replicas, bootstrap data, version, failure domains).
fn machine_pool_changes(pool: &MachinePool) -> u64 {
    let mut hasher = DefaultHasher::new();
    predicates::generation(pool).hash(&mut hasher);
    pool.spec
        .template
        .spec
        .bootstrap
        .data_secret_name
        .hash(&mut hasher);
    pool.meta().deletion_timestamp.is_some().hash(&mut hasher);
    hasher.finish()
}

/// A member matters to its pool when it is deleted or its owners change (Cluster API linked its
/// Machine).
fn member_changes(member: &MemberMeta) -> u64 {
    let mut hasher = DefaultHasher::new();
    member.meta().deletion_timestamp.is_some().hash(&mut hasher);
    member.owner_references().len().hash(&mut hasher);
    member.finalizers().len().hash(&mut hasher);
    hasher.finish()
}

/// The AzureMachinePool a member belongs to.
fn pool_of(member: &MemberMeta) -> Option<ObjectRef<AzureMachinePool>> {
    let owner = member
        .owner_references()
        .iter()
        .find(|owner| owner.kind == AzureMachinePool::kind(&()))?;
    Some(ObjectRef::new(&owner.name).within(&member.namespace().unwrap_or_default()))
}
