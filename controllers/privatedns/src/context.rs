//! The privatedns controller's identity.

use capz_kit::api::controllers::Family;
use capz_kit::controller::ControllerId;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::PrivateDns);
