//! The privatedns controller's identity and what its reconciles share.

use capz_kit::api::controllers::Family;
use capz_kit::controller::ControllerId;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::PrivateDns);

/// What every reconcile shares: the management cluster, the identities, the feature gates, the
/// fallback subscription, and whether the network controller, whose conditions the zone and
/// links wait for, runs.
pub(crate) type State = capz_kit::azure_cluster::Shared;
