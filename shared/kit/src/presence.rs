//! Whether a peer controller runs, told through the API server: every capz-rs controller keeps
//! its Lease (`capz-<family>`, in the namespace of its own Lease) renewed while it runs — as
//! leader-election record with `--leader-elect`, as a plain heartbeat without — and clears the
//! holder when it stops.
//!
//! A controller that waits for a peer's condition asks [`Presence::running`] first: a peer whose
//! Lease is missing, released, or not renewed for twice its duration is not running, and the
//! wait is reported as [`Reason::CONTROLLER_NOT_RUNNING`] naming the controller and how to
//! install it, instead of a silent wait. Twice the duration leaves room for clocks that differ
//! between the machines of the peers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_api::controllers::Family;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Api, Client};
use tokio::time::Instant;

use crate::conditions::{Observation, Reason};

/// How long an answer is reused: many objects wait for the same peer.
const FRESH: Duration = Duration::from_secs(2);

/// The peers' Leases, read at most once per [`FRESH`] each.
#[derive(Debug)]
pub struct Presence {
    leases: Api<Lease>,
    checked: Mutex<HashMap<Family, (Instant, bool)>>,
}

impl Presence {
    /// Reads the peers' Leases in `namespace`, where this controller keeps its own.
    #[must_use]
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            leases: Api::namespaced(client, namespace),
            checked: Mutex::default(),
        }
    }

    /// Whether the controller of `family` runs. A Lease that cannot be read counts as running:
    /// an API server that does not answer says nothing about the peer.
    pub async fn running(&self, family: Family) -> bool {
        let now = Instant::now();
        if let Some((at, running)) = self.lock().get(&family).copied()
            && now.duration_since(at) < FRESH
        {
            return running;
        }
        let running = match self.leases.get_opt(family.qualified()).await {
            Ok(lease) => lease
                .as_ref()
                .is_some_and(|lease| renewed(lease, Timestamp::now())),
            Err(error) => {
                tracing::debug!(%error, lease = family.qualified(), "cannot read a peer's lease");
                true
            }
        };
        self.lock().insert(family, (now, running));
        running
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Family, (Instant, bool)>> {
        self.checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `lease` has a holder and was renewed within twice its duration before `now`.
fn renewed(lease: &Lease, now: Timestamp) -> bool {
    let Some(spec) = lease.spec.as_ref() else {
        return false;
    };
    if spec.holder_identity.as_deref().is_none_or(str::is_empty) {
        return false;
    }
    let (Some(renewed), Some(seconds)) = (spec.renew_time.as_ref(), spec.lease_duration_seconds) else {
        return false;
    };
    let allowed = SignedDuration::from_secs(2 * i64::from(seconds.max(1)));
    now.duration_since(renewed.0) <= allowed
}

/// `type_` waits for the controller of `family`, which does not run: False, reason
/// `ControllerNotRunning`, saying how to install it.
#[must_use]
pub fn not_running(type_: ConditionType, family: Family) -> Observation {
    let message = format!(
        "{type_} is set by the {family} controller ({}), which is not running: install it with the \
         overlay deploy/{family} (or the release's infrastructure-components.yaml), or check why its \
         Deployment does not run",
        family.qualified()
    );
    Observation::fails(
        type_,
        Reason::CONTROLLER_NOT_RUNNING,
        ConditionSeverity::Warning,
        message,
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    use super::*;

    fn lease(holder: Option<&str>, renewed_at: i64, seconds: i32) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(Timestamp::from_second(renewed_at).unwrap())),
                lease_duration_seconds: Some(seconds),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        }
    }

    #[test]
    fn a_peer_runs_while_its_lease_is_held_and_renewed() {
        let now = Timestamp::from_second(1_000).unwrap();
        assert!(renewed(&lease(Some("pod-a"), 990, 15), now));
        assert!(renewed(&lease(Some("pod-a"), 971, 15), now), "clocks may differ");
        assert!(!renewed(&lease(Some("pod-a"), 969, 15), now), "not renewed");
        assert!(!renewed(&lease(None, 999, 15), now), "released");
        assert!(!renewed(&lease(Some(""), 999, 15), now), "released");
        assert!(!renewed(&Lease::default(), now));
    }

    #[test]
    fn the_reason_says_how_to_install_the_controller() {
        let installable = not_running(ConditionType::LOAD_BALANCERS_READY, Family::LoadBalancer);
        assert_eq!(installable.reason, Some(Reason::CONTROLLER_NOT_RUNNING));
        let message = installable.message.unwrap();
        assert!(message.contains("deploy/loadbalancer"), "{message}");
    }
}
