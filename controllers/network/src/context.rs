//! The network controller's identity and what its reconciles share.

use capz_kit::api::controllers::Family;
use capz_kit::controller::ControllerId;
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::Client;
use capz_kit::presence::Presence;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Network);

/// What every reconcile shares.
pub(crate) struct State {
    pub(crate) client: Client,
    pub(crate) identities: Identities,
    pub(crate) settings: IdentitySettings,
    pub(crate) features: capz_rules::Features,
    pub(crate) presence: Presence,
}
