//! The loadbalancer controller of capz-rs.
//!
//! For each AzureCluster (not externally managed, not paused, once its Cluster exists) it keeps
//! the load balancers the spec asks for — the API server's, public or internal (and with
//! `--feature-gates=APIServerILB=true` an internal one beside a public one), the node outbound and
//! the control-plane outbound ones — and the public IPs of their frontends, reports them as
//! `PublicIPsReady` and `LoadBalancersReady`, and sets `spec.controlPlaneEndpoint` once while it
//! is empty.
//!
//! ```text
//!   AzureCluster ── ResourceGroupReady (and SubnetsReady for a private frontend) ──▶ wait
//!     │ public IPs, in spec order                 PublicIPsReady
//!     │ load balancers, once their IPs exist      LoadBalancersReady
//!     ▼ spec.controlPlaneEndpoint (while empty)   the API server IP's DNS name, or the private address
//! ```
//!
//! Deletion removes the load balancers, then their public IPs, each only when it carries the
//! cluster's `owned` tag, and then the finalizer.
//!
//! A second controller, on AzureMachines, keeps the SSH inbound NAT rule of each control-plane
//! machine behind a public API server load balancer (in the same files: `reconcile::machine`,
//! `apply::apply_rule`, `cleanup::cleanup_rule`):
//!
//! ```text
//!   AzureMachine (control plane) ── LoadBalancersReady on its AzureCluster ──▶ wait
//!     │ finalizer, rule <machine> on port 22 or 2201..2219   InboundNATRulesReady
//!     ▼ deleted: compute's finalizer gone ─▶ rule deleted ─▶ finalizer gone
//! ```

mod apply;
mod cleanup;
mod context;
mod plan;
mod reconcile;
mod status;

use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::{Arc, Mutex};

use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::{AzureCluster, AzureMachine};
use capz_kit::filter::{changes, cluster_changes, hash_ownership};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::ResourceExt as _;
use capz_kit::runner::{self, BoxError};
use capz_resources::virtual_machine;

use crate::context::{Machines, State};

pub use context::ID;

/// The network's conditions it waits on; its own status writes and others' do not wake it.
const DEPENDS_ON: &[ConditionType] = &[ConditionType::RESOURCE_GROUP_READY, ConditionType::SUBNETS_READY];

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identity settings (a custom cloud) cannot be resolved.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let state = Arc::new(State::new(&ctx, settings).await?);
    // Pause and the API server port live on the Cluster.
    let azure_clusters = ctx.azure_cluster_controller(changes::<AzureCluster>(DEPENDS_ON));
    futures_util::join!(
        ctx.run(azure_clusters, reconcile::reconcile, state.clone()),
        rules(&ctx, state),
    );
    Ok(())
}

/// The AzureCluster condition whose changes wake the machines of the cluster.
const CLUSTER_DEPENDS_ON: &[ConditionType] = &[ConditionType::LOAD_BALANCERS_READY];

/// The controller of AzureMachines, woken by the changes of theirs that [`machine_changes`] sees,
/// by their Cluster (pause) and by their AzureCluster's `LoadBalancersReady` (and spec).
async fn rules(ctx: &runner::Context, state: Arc<State>) {
    let controller = ctx.filtered_controller(ctx.api::<AzureMachine>(), |machine: &AzureMachine| {
        Some(machine_changes(machine))
    });
    let machines = Arc::new(Machines {
        state,
        balancers: Mutex::default(),
    });
    let controller = ctx.wake_cluster_members(
        controller,
        cluster_changes,
        changes::<AzureCluster>(CLUSTER_DEPENDS_ON),
    );
    ctx.run(controller, reconcile::machine, machines).await;
}

/// An AzureMachine matters for its labels (the control plane's), annotations (pause), owners,
/// deletion and the finalizers of others (compute's, which a rule outlives), and for the one
/// field of its spec the rule's name depends on, the OS: not for compute's `spec.providerID` nor
/// this controller's own finalizer, which every worker would otherwise pay a pass for.
fn machine_changes(machine: &AzureMachine) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_ownership(machine, Some(ID.finalizer()), &mut hasher);
    machine.labels().hash(&mut hasher);
    machine.annotations().hash(&mut hasher);
    virtual_machine::is_windows(&machine.spec).hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_does_not_wake_the_rule_controller_for_compute_s_provider_id_or_its_own_finalizer() {
        let machine: AzureMachine = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": {"name": "w-0", "namespace": "n", "generation": 1},
            "spec": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}},
        }))
        .unwrap();
        let hash = machine_changes(&machine);
        let mut built = machine.clone();
        built.spec.provider_id = Some(
            "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/w-0"
                .to_owned(),
        );
        built.metadata.generation = Some(2);
        built.metadata.finalizers = Some(vec![ID.finalizer().to_owned()]);
        assert_eq!(machine_changes(&built), hash);

        let mut computed = built.clone();
        computed.metadata.finalizers = Some(vec![
            ID.finalizer().to_owned(),
            "azuremachine.infrastructure.cluster.x-k8s.io".to_owned(),
        ]);
        assert_ne!(
            machine_changes(&computed),
            hash,
            "compute's finalizer, which a rule outlives"
        );
        let mut control_plane = built;
        control_plane.metadata.labels =
            Some([("cluster.x-k8s.io/control-plane".to_owned(), String::new())].into());
        assert_ne!(machine_changes(&control_plane), hash);
    }
}
