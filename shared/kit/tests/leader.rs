//! Leader election against the real API server: a released lease passes to the waiting
//! candidate, a crashed leader's lease is taken over after the lease duration, and a leader that
//! finds another holder in its Lease gives up.
//!
//! Timing assertions have a lower bound that the protocol guarantees and a generous upper bound.

use std::future::pending;
use std::time::Duration;

use capz_kit::k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use capz_kit::k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use capz_kit::k8s_openapi::jiff::Timestamp;
use capz_kit::kube::api::{Patch, PatchParams};
use capz_kit::kube::{Api, Client};
use capz_kit::leader::{LeaderElector, LeaderError, Timing};
use tokio::time::{Instant, timeout};

const LEASE_DURATION: Duration = Duration::from_secs(3);
const RETRY_PERIOD: Duration = Duration::from_millis(250);

fn timing() -> Result<Timing, LeaderError> {
    Timing::new(LEASE_DURATION, Duration::from_secs(2), RETRY_PERIOD)
}

/// The holder and the transition count of a Lease.
async fn holder(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<(Option<String>, Option<i32>), capz_kit::kube::Error> {
    let lease = Api::<Lease>::namespaced(client.clone(), namespace)
        .get(name)
        .await?;
    let spec = lease.spec.unwrap_or_default();
    Ok((spec.holder_identity, spec.lease_transitions))
}

#[tokio::test]
async fn a_released_lease_passes_to_the_waiting_candidate() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let mut a = LeaderElector::new(client.clone(), &namespace, "handover", "a", timing().unwrap());
        assert!(
            timeout(Duration::from_secs(10), a.acquire(pending()))
                .await
                .unwrap()
        );
        assert_eq!(
            holder(&client, &namespace, "handover").await.unwrap(),
            (Some("a".into()), Some(0))
        );

        let candidate = {
            let (client, namespace) = (client.clone(), namespace.clone());
            tokio::spawn(async move {
                let mut b = LeaderElector::new(client, &namespace, "handover", "b", timing().unwrap());
                let acquired = b.acquire(pending()).await;
                (acquired, Instant::now())
            })
        };
        // A renews for longer than a lease duration: B keeps waiting.
        let held = timeout(LEASE_DURATION + Duration::from_secs(2), a.hold()).await;
        assert!(held.is_err(), "A lost the lease: {held:?}");
        assert!(!candidate.is_finished(), "B took a lease A was renewing");

        let released = Instant::now();
        a.release().await.unwrap();
        let (acquired, at) = timeout(Duration::from_secs(10), candidate)
            .await
            .unwrap()
            .unwrap();
        assert!(acquired);
        assert!(at >= released);
        // Well before A's last renewal could have expired: the release handed it over.
        assert!(at - released < LEASE_DURATION, "{:?}", at - released);
        assert_eq!(
            holder(&client, &namespace, "handover").await.unwrap(),
            (Some("b".into()), Some(1))
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_crashed_leaders_lease_is_taken_over_after_the_lease_duration() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let mut a = LeaderElector::new(client.clone(), &namespace, "crash", "a", timing().unwrap());
        assert!(
            timeout(Duration::from_secs(10), a.acquire(pending()))
                .await
                .unwrap()
        );
        let candidate = {
            let (client, namespace) = (client.clone(), namespace.clone());
            tokio::spawn(async move {
                let mut b = LeaderElector::new(client, &namespace, "crash", "b", timing().unwrap());
                b.acquire(pending()).await;
                Instant::now()
            })
        };
        // A renews for a while, then stops without releasing: a crash.
        assert!(timeout(Duration::from_secs(2), a.hold()).await.is_err());
        let crashed = Instant::now();
        drop(a);

        let acquired = timeout(LEASE_DURATION + Duration::from_secs(10), candidate)
            .await
            .unwrap()
            .unwrap();
        // A renewed at most a retry period (plus a request) before it stopped, and B waits a
        // whole lease duration from when it saw that renewal.
        let waited = acquired - crashed;
        assert!(waited + 2 * RETRY_PERIOD >= LEASE_DURATION, "{waited:?}");
        assert_eq!(
            holder(&client, &namespace, "crash").await.unwrap(),
            (Some("b".into()), Some(1))
        );
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_leader_that_finds_another_holder_gives_up() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let mut a = LeaderElector::new(client.clone(), &namespace, "taken", "a", timing().unwrap());
        assert!(
            timeout(Duration::from_secs(10), a.acquire(pending()))
                .await
                .unwrap()
        );

        let intruder = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some("intruder".into()),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        Api::<Lease>::namespaced(client.clone(), &namespace)
            .patch("taken", &PatchParams::default(), &Patch::Merge(&intruder))
            .await
            .unwrap();

        let lost = timeout(Duration::from_secs(10), a.hold()).await.unwrap();
        let LeaderError::Lost { reason, .. } = &lost else {
            panic!("not a loss: {lost}");
        };
        assert!(reason.contains("intruder"), "{lost}");
        // Releasing after the loss leaves the new holder alone.
        a.release().await.unwrap();
        assert_eq!(
            holder(&client, &namespace, "taken").await.unwrap().0.as_deref(),
            Some("intruder")
        );
    })
    .await
    .unwrap();
}
