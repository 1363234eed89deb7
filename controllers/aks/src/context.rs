//! The aks controller's identity and what its reconciles share.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use capz_api::AzureManagedControlPlane;
use capz_api::capi::{Cluster, MachinePool};
use capz_api::controllers::Family;
use capz_kit::azure_cluster::Shared;
use capz_kit::controller::ControllerId;
use capz_kit::identity::{IdentitySettings, SettingsError};
use capz_kit::runner::Context;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Aks);

/// The annotation by which a MachinePool says that an autoscaler outside Cluster API (AKS's
/// cluster autoscaler) sets its replicas (Cluster API's).
pub(crate) const REPLICAS_MANAGED_BY_ANNOTATION: &str = "cluster.x-k8s.io/replicas-managed-by";

/// What every reconcile shares: what every cluster-level controller has (the client, the
/// identities, the feature gates and the default subscription), and when each control plane's
/// credentials are to be listed again.
pub(crate) struct State {
    shared: Shared,
    /// By control plane (`namespace/name`): the credentials listed last.
    listings: Mutex<HashMap<String, Listing>>,
}

/// The credentials listed last for one control plane.
struct Listing {
    /// The API server its kubeconfig Secret reaches.
    host: String,
    /// Until when they are trusted.
    until: Instant,
    /// Whether `kube-public/cluster-info` was written into the workload cluster since.
    informed: bool,
}

impl State {
    /// What `ctx`'s controller shares, with the identities of `settings`.
    pub(crate) async fn new(ctx: &Context, settings: IdentitySettings) -> Result<Self, SettingsError> {
        Ok(Self {
            shared: Shared::new(ctx, settings).await?,
            listings: Mutex::default(),
        })
    }

    /// When the credentials of the control plane `key`, whose API server is `host`, were listed
    /// recently enough to be trusted still: whether its workload cluster got `cluster-info`.
    pub(crate) fn listing(&self, key: &str, host: &str) -> Option<bool> {
        self.listings()
            .get(key)
            .filter(|listing| listing.host == host && Instant::now() < listing.until)
            .map(|listing| listing.informed)
    }

    /// Notes that the credentials of the control plane `key` (for `host`) were listed and are
    /// trusted until `until`.
    pub(crate) fn listed(&self, key: String, host: String, until: Instant) {
        let listing = Listing {
            host,
            until,
            informed: false,
        };
        self.listings().insert(key, listing);
    }

    /// Notes that the workload cluster of the control plane `key` got `cluster-info`.
    pub(crate) fn informed(&self, key: &str) {
        if let Some(listing) = self.listings().get_mut(key) {
            listing.informed = true;
        }
    }

    fn listings(&self) -> std::sync::MutexGuard<'_, HashMap<String, Listing>> {
        self.listings.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Deref for State {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// What an AzureManagedMachinePool belongs to.
pub(crate) struct Found {
    pub(crate) pool: MachinePool,
    pub(crate) cluster: Cluster,
    /// The control plane, once the Cluster names one that exists.
    pub(crate) control_plane: Option<AzureManagedControlPlane>,
}
