//! The loadbalancer controller's identity and what its reconciles share.

use capz_kit::api::controllers::Family;
use capz_kit::controller::ControllerId;
use capz_kit::identity::Identities;
use capz_kit::kube::Client;
use capz_kit::presence::Presence;
use capz_rules::Features;

/// The controller's names: binary, field manager, finalizer (on AzureClusters and on the
/// AzureMachines that get an SSH rule), user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::LoadBalancer);

/// What every reconcile shares.
pub(crate) struct State {
    pub(crate) client: Client,
    pub(crate) identities: Identities,
    pub(crate) features: Features,
    /// `AZURE_SUBSCRIPTION_ID`, for clusters that name no subscription.
    pub(crate) subscription: Option<String>,
    /// Whether the network controller, whose conditions the balancers wait for, runs.
    pub(crate) presence: Presence,
}
