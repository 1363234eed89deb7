//! Leader election on a `coordination.k8s.io/v1` Lease, the way client-go's leader elector
//! (which Cluster API's managers use) does it, so that of several replicas one reconciles.
//!
//! - A candidate reads the Lease every retry period. It takes the Lease when nobody holds it, or
//!   when the holder's record has not changed for the lease duration as measured on the
//!   candidate's own clock since it saw the record change; clocks of different machines are
//!   never compared. Taking it over counts up `leaseTransitions`.
//! - The holder renews every retry period. When it has not renewed for the renew deadline, or
//!   finds another holder in the Lease, it has lost leadership: [`LeaderElector::hold`] returns,
//!   and the runner stops reconciling at once and campaigns again. Because the renew deadline is
//!   shorter than the lease duration, a leader that cannot renew stops before anyone else may
//!   take over.
//! - On shutdown the holder releases the Lease by clearing `holderIdentity`, so that a waiting
//!   replica takes over at its next retry instead of after the lease duration.
//!
//! Every write replaces the Lease at the `resourceVersion` just read, so two candidates racing
//! for a free Lease cannot both win: the second write fails with a conflict.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio::time::Instant;

/// The timing of leader election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl Timing {
    /// Checks the three durations against each other: a leader must give up (after the renew
    /// deadline) before others may take over (after the lease duration), and must get more than
    /// one attempt to renew within the deadline.
    ///
    /// # Errors
    /// When the lease duration is under a second or not longer than the renew deadline, or the
    /// renew deadline is not longer than the retry period.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self, LeaderError> {
        if lease_duration < Duration::from_secs(1) {
            return Err(LeaderError::Timing(
                "--leader-elect-lease-duration must be at least 1s".to_owned(),
            ));
        }
        if lease_duration <= renew_deadline {
            return Err(LeaderError::Timing(format!(
                "--leader-elect-lease-duration ({lease_duration:?}) must be longer than \
                 --leader-elect-renew-deadline ({renew_deadline:?})"
            )));
        }
        if renew_deadline <= retry_period {
            return Err(LeaderError::Timing(format!(
                "--leader-elect-renew-deadline ({renew_deadline:?}) must be longer than \
                 --leader-elect-retry-period ({retry_period:?})"
            )));
        }
        Ok(Self {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }

    /// The lease duration in whole seconds, as the Lease stores it (rounded up).
    fn lease_seconds(&self) -> i32 {
        let seconds = self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(seconds).unwrap_or(i32::MAX)
    }
}

/// Why leader election failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The durations do not fit together.
    #[error("invalid leader election timing: {0}")]
    Timing(String),
    /// This replica held the lease and lost it.
    #[error("lost leadership of the lease {namespace}/{name}: {reason}")]
    Lost {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// Why: another holder, or no renewal within the renew deadline.
        reason: String,
    },
    /// The lease could not be released.
    #[error("cannot release the lease {namespace}/{name}: {source}")]
    Release {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// The API server's answer.
        source: kube::Error,
    },
}

/// A replica's identity in the Lease: the host name (the Pod's name in a cluster) and a random
/// suffix, so that a restarted Pod of the same name is a new holder.
#[must_use]
pub fn default_identity() -> String {
    let host = hostname::get().map_or_else(|_| "capz".to_owned(), |name| name.to_string_lossy().into_owned());
    format!("{host}_{}", uuid::Uuid::new_v4())
}

/// The result of one attempt to acquire or renew.
enum Attempt {
    /// This replica holds the lease now.
    Holding,
    /// Another replica holds it and its record is fresh.
    HeldBy(String),
    /// Someone wrote the lease between the read and the write.
    Conflict,
}

/// The holder's record as last seen, and when it was first seen with these values.
struct Observed {
    holder: Option<String>,
    renew_time: Option<MicroTime>,
    lease_seconds: i32,
    since: Instant,
}

/// Takes part in leader election for one Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    namespace: String,
    identity: String,
    timing: Timing,
    observed: Option<Observed>,
    renewed: Option<Instant>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lease", &format_args!("{}/{}", self.namespace, self.name))
            .field("identity", &self.identity)
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// A candidate named `identity` for the Lease `namespace/name`.
    #[must_use]
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str, timing: Timing) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            timing,
            observed: None,
            renewed: None,
        }
    }

    /// This candidate's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Waits until this candidate holds the lease (`true`), or until `stop` resolves (`false`).
    /// Failed attempts (an unreachable API server, a conflict) are logged and retried.
    pub async fn acquire(&mut self, stop: impl Future<Output = ()>) -> bool {
        tokio::pin!(stop);
        let mut last_holder = None;
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Holding) => {
                    tracing::info!(lease = %self.name, namespace = %self.namespace, "acquired the lease");
                    return true;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(
                            lease = %self.name,
                            namespace = %self.namespace,
                            %holder,
                            "the lease is held by another replica; waiting"
                        );
                        last_holder = Some(holder);
                    }
                }
                Ok(Attempt::Conflict) => {}
                Err(err) => {
                    tracing::warn!(
                        lease = %self.name,
                        namespace = %self.namespace,
                        error = %err,
                        "cannot read or write the lease"
                    );
                }
            }
            tokio::select! {
                () = &mut stop => return false,
                () = tokio::time::sleep(self.timing.retry_period) => {}
            }
        }
    }

    /// Renews the lease every retry period for as long as this candidate holds it; returns when
    /// leadership is lost: another holder is in the Lease, or no renewal succeeded within the
    /// renew deadline. Call it after [`Self::acquire`] returned `true`.
    pub async fn hold(&mut self) -> LeaderError {
        loop {
            tokio::time::sleep(self.timing.retry_period).await;
            let renewed = self.renewed.unwrap_or_else(Instant::now);
            let deadline = renewed + self.timing.renew_deadline;
            let attempt = tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await;
            let failure = match attempt {
                Ok(Ok(Attempt::Holding)) => continue,
                Ok(Ok(Attempt::HeldBy(holder))) => {
                    return self.lost(format!("the lease is now held by {holder}"));
                }
                Ok(Ok(Attempt::Conflict)) => "the lease was written by someone else meanwhile".to_owned(),
                Ok(Err(err)) => err.to_string(),
                Err(_) => String::from("the API server did not answer in time"),
            };
            if Instant::now() >= deadline {
                return self.lost(format!(
                    "not renewed within the renew deadline of {:?}: {failure}",
                    self.timing.renew_deadline
                ));
            }
            tracing::warn!(
                lease = %self.name,
                namespace = %self.namespace,
                reason = %failure,
                "cannot renew the lease; retrying"
            );
        }
    }

    /// Releases the lease if this candidate holds it, by clearing `holderIdentity`.
    ///
    /// # Errors
    /// When the Lease cannot be read or written.
    pub async fn release(&mut self) -> Result<(), LeaderError> {
        let released = async {
            let Some(mut lease) = self.api.get_opt(&self.name).await? else {
                return Ok(false);
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(&self.identity) {
                return Ok(false);
            }
            spec.holder_identity = None;
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            self.api.replace(&self.name, &self.post_params(), &lease).await?;
            Ok::<_, kube::Error>(true)
        }
        .await
        .map_err(|source| LeaderError::Release {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        })?;
        self.renewed = None;
        if released {
            tracing::info!(lease = %self.name, namespace = %self.namespace, "released the lease");
        }
        Ok(())
    }

    fn lost(&self, reason: String) -> LeaderError {
        LeaderError::Lost {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            reason,
        }
    }

    fn post_params(&self) -> PostParams {
        PostParams {
            field_manager: Some(self.name.clone()),
            ..PostParams::default()
        }
    }

    /// One read and, when the lease is ours to take or renew, one write.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        self.write(false).await
    }

    /// Renews the lease every retry period until `stop` resolves, whoever else holds it: a sign
    /// of life for a replica that runs without leader election. Failed writes are retried at the
    /// next period.
    pub async fn beat(&mut self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        loop {
            if let Err(error) = self.write(true).await {
                tracing::debug!(lease = %self.name, namespace = %self.namespace, %error, "cannot renew the lease");
            }
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(self.timing.retry_period) => {}
            }
        }
    }

    /// The Lease's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One read and one write when the lease is ours to take or renew, or whatever its holder
    /// when `regardless`.
    async fn write(&mut self, regardless: bool) -> Result<Attempt, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.timing.lease_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&self.post_params(), &lease).await {
                Ok(created) => Ok(self.holding(&created)),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Conflict),
                Err(err) => Err(err),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        self.observe(spec);
        let holder = spec.holder_identity.clone().filter(|holder| !holder.is_empty());
        let ours = holder.as_deref() == Some(self.identity.as_str());
        if let Some(holder) = holder.as_ref().filter(|_| !ours && !regardless)
            && !self.observed_expired()
        {
            return Ok(Attempt::HeldBy(holder.clone()));
        }
        if !ours {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
            spec.holder_identity = Some(self.identity.clone());
        }
        spec.renew_time = Some(now);
        spec.lease_duration_seconds = Some(self.timing.lease_seconds());
        match self.api.replace(&self.name, &self.post_params(), &lease).await {
            Ok(updated) => Ok(self.holding(&updated)),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(Attempt::Conflict),
            Err(err) => Err(err),
        }
    }

    /// Notes a successful write.
    fn holding(&mut self, lease: &Lease) -> Attempt {
        if let Some(spec) = &lease.spec {
            self.observe(spec);
        }
        self.renewed = Some(Instant::now());
        Attempt::Holding
    }

    /// Notes the record read, restarting the expiry clock when it changed.
    fn observe(&mut self, spec: &LeaseSpec) {
        let unchanged = self.observed.as_ref().is_some_and(|observed| {
            observed.holder == spec.holder_identity && observed.renew_time == spec.renew_time
        });
        if !unchanged {
            self.observed = Some(Observed {
                holder: spec.holder_identity.clone(),
                renew_time: spec.renew_time.clone(),
                lease_seconds: spec
                    .lease_duration_seconds
                    .unwrap_or_else(|| self.timing.lease_seconds()),
                since: Instant::now(),
            });
        }
    }

    /// Whether the record seen has not changed for its lease duration.
    fn observed_expired(&self) -> bool {
        self.observed.as_ref().is_none_or(|observed| {
            let lease = Duration::from_secs(u64::try_from(observed.lease_seconds.max(0)).unwrap_or_default());
            observed.since.elapsed() >= lease
        })
    }
}

/// Whether this replica may reconcile now: it holds the leader-election Lease, or leader election
/// is off. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Leadership(watch::Receiver<bool>);

/// Sets a [`Leadership`].
#[derive(Debug)]
pub struct LeadershipSender(watch::Sender<bool>);

impl Leadership {
    /// A leadership that `sender` grants and revokes, not held yet.
    #[must_use]
    pub fn new() -> (LeadershipSender, Self) {
        let (sender, receiver) = watch::channel(false);
        (LeadershipSender(sender), Self(receiver))
    }

    /// A leadership always held: leader election is off.
    #[must_use]
    pub fn always() -> Self {
        let (sender, receiver) = watch::channel(true);
        // Dropped, the sender can never take it back.
        drop(sender);
        Self(receiver)
    }

    /// Whether it is held now.
    #[must_use]
    pub fn held(&self) -> bool {
        *self.0.borrow()
    }

    /// Runs `work` once leadership is held; `None` when `stop` resolves first (shutting down
    /// without leadership), or when leadership is lost before `work` finishes (`work` is dropped
    /// at once: another replica may already be leading).
    pub async fn while_leading<T>(
        &self,
        stop: impl Future<Output = ()>,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        let mut start = self.0.clone();
        tokio::select! {
            // A sender gone keeps its last value: held stays held.
            _ = start.wait_for(|held| *held) => {}
            () = stop => return None,
        }
        if !self.held() {
            return None;
        }
        let mut lost = self.0.clone();
        tokio::select! {
            output = work => Some(output),
            Ok(_) = lost.wait_for(|held| !*held) => None,
        }
    }
}

impl LeadershipSender {
    /// Grants (`true`) or revokes (`false`) leadership.
    pub fn set(&self, held: bool) {
        self.0.send_replace(held);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Leadership, Timing, default_identity};

    #[test]
    fn timing_must_let_the_leader_give_up_first() {
        let secs = Duration::from_secs;
        let timing = Timing::new(secs(15), secs(10), secs(2)).unwrap();
        assert_eq!(timing.lease_seconds(), 15);
        assert_eq!(
            Timing::new(Duration::from_millis(2500), secs(2), secs(1))
                .unwrap()
                .lease_seconds(),
            3
        );
        for (lease, renew, retry, flag) in [
            (secs(10), secs(10), secs(2), "--leader-elect-renew-deadline"),
            (secs(15), secs(2), secs(2), "--leader-elect-retry-period"),
            (
                Duration::from_millis(900),
                Duration::from_millis(500),
                Duration::from_millis(100),
                "at least 1s",
            ),
        ] {
            let err = Timing::new(lease, renew, retry).unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
    }

    #[test]
    fn identities_are_unique_per_process_start() {
        let (first, second) = (default_identity(), default_identity());
        assert_ne!(first, second);
        let host = hostname::get().unwrap().to_string_lossy().into_owned();
        assert!(first.starts_with(&format!("{host}_")), "{first}");
    }

    #[tokio::test]
    async fn work_waits_for_leadership_and_stops_when_it_is_lost() {
        let (sender, leadership) = Leadership::new();
        let waiting = tokio::spawn({
            let leadership = leadership.clone();
            async move {
                leadership
                    .while_leading(std::future::pending(), async { 7 })
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "ran without leadership");
        sender.set(true);
        assert_eq!(waiting.await.unwrap(), Some(7));

        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let long = tokio::spawn({
            let leadership = leadership.clone();
            async move {
                leadership
                    .while_leading(std::future::pending(), async {
                        let _ = rx.await;
                        1
                    })
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        sender.set(false);
        assert_eq!(
            long.await.unwrap(),
            None,
            "kept running after leadership was lost"
        );
        drop(tx);
        assert_eq!(
            Leadership::always()
                .while_leading(std::future::pending(), async { 3 })
                .await,
            Some(3)
        );
        let (_sender, never) = Leadership::new();
        assert_eq!(
            never.while_leading(async {}, async { 4 }).await,
            None,
            "stopped while waiting"
        );
    }
}
