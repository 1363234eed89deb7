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
    /// By control plane (`namespace/name`): the API server its kubeconfig Secret reaches and
    /// until when the credential listed for it is trusted.
    listings: Mutex<HashMap<String, (String, Instant)>>,
}

impl State {
    /// What `ctx`'s controller shares, with the identities of `settings`.
    pub(crate) async fn new(ctx: &Context, settings: IdentitySettings) -> Result<Self, SettingsError> {
        Ok(Self {
            shared: Shared::new(ctx, settings).await?,
            listings: Mutex::default(),
        })
    }

    /// Whether the credentials of the control plane `key`, whose API server is `host`, were
    /// listed recently enough to be trusted still.
    pub(crate) fn listed_recently(&self, key: &str, host: &str) -> bool {
        let listings = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        listings
            .get(key)
            .is_some_and(|(listed_for, until)| listed_for == host && Instant::now() < *until)
    }

    /// Notes that the credentials of the control plane `key` (for `host`) were listed and are
    /// trusted until `until`.
    pub(crate) fn listed(&self, key: String, host: String, until: Instant) {
        let mut listings = self.listings.lock().unwrap_or_else(PoisonError::into_inner);
        listings.insert(key, (host, until));
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
