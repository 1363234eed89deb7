//! The identity controller of capz-rs.
//!
//! - **AzureClusterIdentity**: checks that each identity can obtain an Azure Resource Manager
//!   token and reports it as `Ready`; keeps the finalizer `identity.infrastructure.cluster.x-k8s.io`
//!   on it while an AzureCluster or AzureManagedControlPlane refers to it, so that it cannot vanish
//!   under a cluster that still needs it to delete its resources.
//! - **azure.json Secrets**: writes `<name>-azure-json` for every AzureMachineTemplate, every
//!   AzureMachinePool and every AzureMachine not cloned from a template — the Azure cloud
//!   provider's configuration of the workload cluster's machines, which kubeadm's bootstrap reads
//!   (see [`plan`]).
//!
//! ```text
//!   AzureClusterIdentity ── users from the caches of AzureClusters and managed control planes
//!     │ used: finalizer held; unused: released, a deletion goes on       (cleanup)
//!     ▼ sign in, a failure remembered per generation ─▶ Ready            (apply, status)
//!   AzureMachineTemplate / AzureMachinePool / AzureMachine ── its Cluster's AzureCluster,
//!     │                                                         not paused  (reconcile)
//!     ▼ plan::CloudProviderConfig ─▶ Secret <name>-azure-json, when it differs   (plan, apply)
//! ```

mod apply;
mod cleanup;
mod context;
pub mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::sync::{Arc, Mutex};

use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::api::capi::Cluster;
use capz_kit::api::{
    AzureCluster, AzureMachine, AzureMachinePool, AzureMachineTemplate, AzureManagedControlPlane,
};
use capz_kit::cluster::{cluster_name, is_paused};
use capz_kit::filter::{Seen, everything_but_status};
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::runtime::WatchStreamExt as _;
use capz_kit::kube::runtime::reflector::{self, ObjectRef, Store};
use capz_kit::queue::counted;
use capz_kit::runner::{BoxError, Context};
use capz_kit::watch::watch;
use futures_util::StreamExt as _;

use crate::context::{MachineSource, State};
use crate::reconcile::{Referenced, reference_key, references_changed};

/// Runs the identity controller until the runner's shutdown: the AzureClusterIdentity checks and
/// the azure.json Secrets of AzureMachineTemplates, AzureMachinePools and AzureMachines.
///
/// # Errors
/// When the identity settings (the custom cloud) cannot be resolved.
pub async fn run(ctx: Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let subscription = settings.environment.subscription_id.clone();
    let (clusters, cluster_writer) = reflector::store();
    let (control_planes, control_plane_writer) = reflector::store();
    let state = Arc::new(State {
        reporter: ctx.reporter(),
        identities: Identities::new(client.clone(), settings).await?,
        client,
        features: ctx.args().feature_gates,
        subscription,
        clusters,
        control_planes,
        failures: Mutex::default(),
    });
    // A change of who refers to which identity reconciles the identities it concerns.
    let cluster_events = watch(ctx.api::<AzureCluster>(), ctx.watcher_config()).reflect(cluster_writer);
    let control_plane_events =
        watch(ctx.api::<AzureManagedControlPlane>(), ctx.watcher_config()).reflect(control_plane_writer);
    let references = futures_util::stream::select(
        references_changed(cluster_events, |cluster: &AzureCluster| {
            reference_key(cluster, cluster.spec.class.identity_ref.as_ref())
        }),
        references_changed(control_plane_events, |plane: &AzureManagedControlPlane| {
            reference_key(plane, Some(&plane.spec.class.identity_ref))
        }),
    );
    let identities = ctx.filtered_controller(
        ctx.api::<AzureClusterIdentity>(),
        everything_but_status::<AzureClusterIdentity>,
    );
    let store = identities.store();
    let concerned = counted(store.clone(), move |referenced| match referenced {
        Referenced::Identities(keys) => keys
            .into_iter()
            .map(|(namespace, name)| ObjectRef::new(&name).within(&namespace))
            .collect(),
        Referenced::All => store
            .state()
            .iter()
            .map(|identity| ObjectRef::from_obj(&**identity))
            .collect::<Vec<_>>(),
    });
    let identities = identities.reconcile_on(
        references.flat_map(move |referenced| futures_util::stream::iter(concerned(referenced))),
    );
    futures_util::join!(
        ctx.run(identities, reconcile::identity, state.clone()),
        machines::<AzureMachineTemplate>(&ctx, state.clone()),
        machines::<AzureMachinePool>(&ctx, state.clone()),
        machines::<AzureMachine>(&ctx, state),
    );
    Ok(())
}

/// Runs the Secret controller of kind `K`. Besides `K` itself, a Cluster (pause, its
/// AzureCluster) or an AzureCluster (spec, cluster label) that changes wakes the objects of its
/// cluster; peers' status writes on them do not.
async fn machines<K: MachineSource>(ctx: &Context, state: Arc<State>) {
    let controller = ctx.filtered_controller(ctx.api::<K>(), everything_but_status::<K>);
    let store = controller.store();
    let clusters_seen = Seen::default();
    let azure_clusters_seen = Seen::default();
    let by_cluster = store.clone();
    let by_azure_cluster = store.clone();
    let controller = controller
        .watches(
            ctx.api::<Cluster>(),
            ctx.watcher_config(),
            counted(store.clone(), move |cluster: Cluster| {
                let fields = (cluster.metadata.generation, is_paused(Some(&cluster), &cluster));
                if clusters_seen.changed(&cluster, fields) {
                    of_cluster(&by_cluster, cluster.namespace().as_deref(), &cluster.name_any())
                } else {
                    Vec::new()
                }
            }),
        )
        .watches(
            ctx.api::<AzureCluster>(),
            ctx.watcher_config(),
            counted(store, move |azure_cluster: AzureCluster| {
                let name = cluster_name(&azure_cluster);
                let fields = (azure_cluster.metadata.generation, name.clone());
                match name {
                    Some(name) if azure_clusters_seen.changed(&azure_cluster, fields) => {
                        of_cluster(&by_azure_cluster, azure_cluster.namespace().as_deref(), &name)
                    }
                    _ => Vec::new(),
                }
            }),
        );
    ctx.run(controller, reconcile::machine::<K>, state).await;
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
