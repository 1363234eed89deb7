//! How far a reconcile got, told the same way by every controller.
//!
//! A controller lists its work as an ordered table of [`Step`]s, each owning one condition. A
//! pass runs the table through [`Steps`]: each step folds the results of its resources into one
//! [`Outcome`], and the first step that is not done holds back every step after it, which then
//! report that they wait for it. The pass ends in a [`Pass`]: the observations to publish and
//! what to do next.
//!
//! ```text
//!   for step in ORDER (or DELETION):  Steps::run(step, work)
//!     blocked?   ── yes ─▶ "waiting for <blocking condition>"
//!     work ─▶ Outcome: Done | InFlight(hint) | Waiting(why) | PeerNotRunning(family) | Failed(error)
//!   Pass::next ─▶ Ok(await change) | Ok(poll after hint) | Err(failure) | Err(pending delete)
//! ```
//!
//! A step that failed because Azure throttled the caller did not look at its resources, so a
//! condition that held before keeps holding (see [`unless_held`]).

use std::future::Future;
use std::time::Duration;

use capz_api::common::conditions::{ConditionSeverity, ConditionType, Conditions};
use capz_api::controllers::Family;
use capz_azure::ArmClient;
use kube::runtime::controller::Action;

use crate::conditions::{Observation, Reason, unless_held};
use crate::error::{Error, Failure};
use crate::operations::Operations;
use crate::policy::Category;
use crate::presence::{Presence, not_running};
use crate::resource::{self, AzureResource, Progress};

/// The wait before polling an operation Azure gave no `Retry-After` for.
pub const POLL: Duration = Duration::from_secs(5);

/// Whether a pass builds resources to the spec or deletes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Bring the resources to the spec.
    Apply,
    /// Delete them.
    Delete,
}

/// One step of a controller's reconcile order: the unit of work (the controller's own enum),
/// the condition reporting it, and how people call its resources.
#[derive(Clone, Debug)]
pub struct Step<U> {
    /// What the controller does in this step.
    pub unit: U,
    /// The condition the step owns.
    pub condition: ConditionType,
    /// Its resources, for messages ("virtual network", "load balancers").
    pub what: &'static str,
}

/// How the resources of one step stand after a pass.
#[derive(Debug, Default)]
pub enum Outcome {
    /// All as wanted (or, deleting, all gone).
    #[default]
    Done,
    /// An operation runs; poll after Azure's hint.
    InFlight(Option<Duration>),
    /// Waits for something outside the step, said for people: a peer's condition, Cluster API.
    Waiting(String),
    /// Waits for a condition that the controller of this family writes, and it does not run.
    PeerNotRunning(Family),
    /// Something failed.
    Failed(Failure),
}

impl Outcome {
    /// An outcome that failed with `error`.
    pub fn failed(error: impl Into<Failure>) -> Self {
        Self::Failed(error.into())
    }

    /// Folds one resource's result in: a failure outweighs an operation in flight, the soonest
    /// hint wins. Gives the resource when it is done.
    pub fn absorb<T, E: Into<Failure>>(&mut self, result: Result<Progress<T>, E>) -> Option<T> {
        match result {
            Ok(Progress::Done(model)) => Some(model),
            Ok(Progress::InProgress { retry_after }) => {
                match self {
                    Self::Done | Self::Waiting(_) | Self::PeerNotRunning(_) => {
                        *self = Self::InFlight(retry_after);
                    }
                    Self::InFlight(hint) => *hint = (*hint).min(retry_after).or(retry_after),
                    Self::Failed(_) => {}
                }
                None
            }
            Err(error) => {
                self.fail(error);
                None
            }
        }
    }

    /// Records a failure, unless an earlier one is already recorded.
    pub fn fail(&mut self, error: impl Into<Failure>) {
        if !matches!(self, Self::Failed(_)) {
            *self = Self::Failed(error.into());
        }
    }

    /// Whether everything is as wanted.
    #[must_use]
    pub fn is_done(&self) -> bool {
        matches!(self, Self::Done)
    }

    /// Whether the step could not look at its resources because Azure throttled the caller.
    #[must_use]
    pub fn throttled(&self) -> bool {
        matches!(self, Self::Failed(failure) if failure.category() == Category::Throttled)
    }

    /// The condition `type_` as this outcome reports it; `what` names the step's resources.
    #[must_use]
    pub fn observation(&self, type_: ConditionType, what: &str, direction: Direction) -> Observation {
        use ConditionSeverity::Info;
        match (self, direction) {
            (Self::Done, Direction::Apply) => Observation::holds(type_),
            (Self::Done, Direction::Delete) => {
                Observation::fails(type_, Reason::DELETED, Info, format!("{what} deleted"))
            }
            (Self::InFlight(_), Direction::Apply) => Observation::fails(
                type_,
                Reason::CREATING,
                Info,
                format!("{what}: an Azure operation is in progress"),
            ),
            (Self::InFlight(_), Direction::Delete) => {
                Observation::fails(type_, Reason::DELETING, Info, format!("deleting {what}"))
            }
            (Self::Waiting(message), _) => {
                Observation::fails(type_, Reason::WAITING_FOR_DEPENDENCY, Info, message.clone())
            }
            (Self::PeerNotRunning(family), _) => not_running(type_, *family),
            (Self::Failed(failure), direction) => {
                let category = failure.category();
                let reason = if direction == Direction::Delete && category != Category::Throttled {
                    Reason::DELETION_FAILED
                } else {
                    failure.reason()
                };
                Observation::fails(type_, reason, category.severity(), failure.to_string())
            }
        }
    }

    /// The next reconcile after a pass that ended here: a failure goes to the run wrapper
    /// (condition already written, event and backoff there); an operation in flight is polled;
    /// a delete not finished keeps the finalizer and looks again.
    ///
    /// # Errors
    /// The failure, or [`Error::Pending`] for a delete still running.
    pub fn next(self, direction: Direction) -> Result<Action, Error> {
        match (self, direction) {
            (Self::Failed(failure), _) => Err(Error::Failed(failure)),
            (Self::InFlight(hint), Direction::Apply) => Ok(Action::requeue(hint.unwrap_or(POLL))),
            (Self::InFlight(hint), Direction::Delete) => Err(Error::Pending(hint.unwrap_or(POLL))),
            (Self::Waiting(_) | Self::PeerNotRunning(_), Direction::Delete) => Err(Error::Pending(POLL)),
            (Self::Done | Self::Waiting(_) | Self::PeerNotRunning(_), _) => Ok(Action::await_change()),
        }
    }
}

/// Brings every unit of `units` to the spec (or deletes it), each independently, folding their
/// results into one outcome.
pub async fn each<R: AzureResource>(
    client: &ArmClient,
    units: &[R],
    operations: &mut Operations,
    direction: Direction,
) -> Outcome {
    let mut outcome = Outcome::Done;
    fold_each(client, units, operations, direction, &mut outcome).await;
    outcome
}

/// [`each`], folding the results into `outcome`: for one step whose units are of several types.
pub async fn fold_each<R: AzureResource>(
    client: &ArmClient,
    units: &[R],
    operations: &mut Operations,
    direction: Direction,
    outcome: &mut Outcome,
) {
    for unit in units {
        match direction {
            Direction::Apply => {
                outcome.absorb(resource::reconcile(client, unit, operations).await);
            }
            Direction::Delete => {
                outcome.absorb(resource::delete(client, unit, operations).await);
            }
        }
    }
}

/// Brings `units` to the spec (or deletes them) one after the other, stopping at the first that
/// is not done: for children of one parent, on which Azure runs one operation at a time and
/// refuses another meanwhile (AnotherOperationInProgress).
pub async fn in_turn<R: AzureResource>(
    client: &ArmClient,
    units: &[R],
    operations: &mut Operations,
    direction: Direction,
) -> Outcome {
    for unit in units {
        let outcome = each(client, std::slice::from_ref(unit), operations, direction).await;
        if !outcome.is_done() {
            return outcome;
        }
    }
    Outcome::Done
}

/// What a step waiting on conditions of `families` reports: that the first of them whose
/// controller does not run is missing, else `message`.
pub async fn waiting_on(presence: &Presence, families: &[Family], message: String) -> Outcome {
    for family in families {
        if !presence.running(*family).await {
            return Outcome::PeerNotRunning(*family);
        }
    }
    Outcome::Waiting(message)
}

/// The steps of one pass, in their order.
#[derive(Debug)]
pub struct Steps<'a> {
    /// The object's conditions before the pass.
    current: Option<&'a Conditions>,
    direction: Direction,
    observations: Vec<Observation>,
    /// The first step that is not done, with how it ended.
    blocker: Option<(ConditionType, Outcome)>,
}

impl<'a> Steps<'a> {
    /// A pass in `direction` over an object whose conditions are `current`.
    #[must_use]
    pub fn new(current: Option<&'a Conditions>, direction: Direction) -> Self {
        Self {
            current,
            direction,
            observations: Vec::new(),
            blocker: None,
        }
    }

    /// Whether a step before this point is not done.
    #[must_use]
    pub fn blocked(&self) -> bool {
        self.blocker.is_some()
    }

    /// Runs `step`: its `work` when nothing before it holds it back, else reports that it waits.
    pub async fn run<U>(&mut self, step: &Step<U>, work: impl Future<Output = Outcome>) {
        if self.blocked() {
            self.wait(step.condition.clone());
        } else {
            let outcome = work.await;
            self.record(step.condition.clone(), step.what, outcome);
        }
    }

    /// Reports every step of `order` as `outcome` says, before any runs: the pass met something
    /// all of them need (a peer's condition, the credentials), and the first one holds the rest.
    pub fn hold<'s, U: 's>(&mut self, order: impl IntoIterator<Item = &'s Step<U>>, outcome: Outcome) {
        let mut first = None;
        for step in order {
            let observed = outcome.observation(step.condition.clone(), step.what, self.direction);
            self.observations.push(if outcome.throttled() {
                unless_held(self.current, observed)
            } else {
                observed
            });
            first.get_or_insert_with(|| step.condition.clone());
        }
        if let Some(condition) = first
            && self.blocker.is_none()
        {
            self.blocker = Some((condition, outcome));
        }
    }

    /// Records a step's outcome; one that is not done holds back the steps after it.
    pub fn record(&mut self, type_: ConditionType, what: &str, outcome: Outcome) {
        let observed = outcome.observation(type_.clone(), what, self.direction);
        self.observations.push(if outcome.throttled() {
            unless_held(self.current, observed)
        } else {
            observed
        });
        if !outcome.is_done() && self.blocker.is_none() {
            self.blocker = Some((type_, outcome));
        }
    }

    /// Reports `type_`, a condition summing the steps up: the outcome of the step that holds
    /// the pass back, or, when every step is done, the outcome of `work` (a last check).
    pub async fn conclude(&mut self, type_: ConditionType, what: &str, work: impl Future<Output = Outcome>) {
        let Some((_, blocking)) = &self.blocker else {
            let outcome = work.await;
            return self.record(type_, what, outcome);
        };
        let observed = blocking.observation(type_, what, self.direction);
        self.observations.push(if blocking.throttled() {
            unless_held(self.current, observed)
        } else {
            observed
        });
    }

    /// Reports a step that cannot run before the one that holds it back.
    pub fn wait(&mut self, type_: ConditionType) {
        let (blocker, outcome) = self
            .blocker
            .as_ref()
            .map(|(blocker, outcome)| (blocker.to_string(), outcome))
            .unzip();
        let waiting = Observation::fails(
            type_,
            Reason::WAITING_FOR_DEPENDENCY,
            ConditionSeverity::Info,
            format!("waiting for {}", blocker.unwrap_or_default()),
        );
        // Held back by throttling, the step was not looked at: what it was stays.
        self.observations
            .push(if outcome.is_some_and(Outcome::throttled) {
                unless_held(self.current, waiting)
            } else {
                waiting
            });
    }

    /// Adds an observation of a condition outside the table (one replacing an earlier one of
    /// its type).
    pub fn observe(&mut self, observation: Observation) {
        self.observations.retain(|known| known.type_ != observation.type_);
        self.observations.push(observation);
    }

    /// The end of the pass.
    #[must_use]
    pub fn finish(self) -> Pass {
        Pass {
            observations: self.observations,
            outcome: self.blocker.map(|(_, outcome)| outcome).unwrap_or_default(),
            direction: self.direction,
        }
    }
}

/// A finished pass: what it observed, and how its first unfinished step ended.
#[derive(Debug)]
pub struct Pass {
    /// The observations of every step, in order.
    pub observations: Vec<Observation>,
    /// The first unfinished step's outcome, [`Outcome::Done`] when all are done.
    pub outcome: Outcome,
    direction: Direction,
}

impl Pass {
    /// Whether every step is done.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.outcome.is_done()
    }

    /// The next reconcile (see [`Outcome::next`]).
    ///
    /// # Errors
    /// The failure of the blocking step, or a delete still pending.
    pub fn next(self) -> Result<Action, Error> {
        self.outcome.next(self.direction)
    }
}

#[cfg(test)]
mod tests {
    use capz_api::common::conditions::ConditionStatus;
    use capz_azure::ArmError;
    use k8s_openapi::jiff::Timestamp;

    use super::*;
    use crate::conditions::observe;

    fn failed(error: ArmError) -> Outcome {
        Outcome::failed(error)
    }

    fn status(pass: &Pass, type_: &ConditionType) -> ConditionStatus {
        pass.observations
            .iter()
            .find(|observation| &observation.type_ == type_)
            .map(|observation| observation.status)
            .unwrap()
    }

    fn step(condition: ConditionType, what: &'static str) -> Step<()> {
        Step {
            unit: (),
            condition,
            what,
        }
    }

    #[tokio::test]
    async fn a_throttled_step_keeps_what_held_and_other_failures_do_not() {
        let current = Conditions(observe(
            None,
            [
                Observation::holds(ConditionType::VNET_READY),
                Observation::holds(ConditionType::SUBNETS_READY),
                Observation::fails(
                    ConditionType::SECURITY_GROUPS_READY,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating",
                ),
            ],
            Timestamp::now(),
        ));
        let order = [
            step(ConditionType::VNET_READY, "virtual network"),
            step(ConditionType::SECURITY_GROUPS_READY, "security groups"),
            step(ConditionType::SUBNETS_READY, "subnets"),
        ];
        let run = async |outcome: fn() -> Outcome| {
            let mut steps = Steps::new(Some(&current), Direction::Apply);
            for (index, step) in order.iter().enumerate() {
                steps
                    .run(step, async { if index == 0 { outcome() } else { Outcome::Done } })
                    .await;
            }
            steps.finish()
        };
        let throttled = run(|| {
            failed(ArmError::Throttled {
                retry_after: Duration::from_secs(1),
            })
        })
        .await;
        assert_eq!(
            status(&throttled, &ConditionType::VNET_READY),
            ConditionStatus::True
        );
        assert_eq!(
            status(&throttled, &ConditionType::SUBNETS_READY),
            ConditionStatus::True
        );
        assert_eq!(
            status(&throttled, &ConditionType::SECURITY_GROUPS_READY),
            ConditionStatus::False
        );
        assert!(matches!(throttled.next(), Err(Error::Failed(_))));

        let broken = run(|| failed(ArmError::UnexpectedAnswer("the server failed".into()))).await;
        assert_eq!(
            status(&broken, &ConditionType::VNET_READY),
            ConditionStatus::False
        );
        assert_eq!(
            status(&broken, &ConditionType::SUBNETS_READY),
            ConditionStatus::False
        );
        let waiting = broken
            .observations
            .iter()
            .find(|observation| observation.type_ == ConditionType::SUBNETS_READY)
            .unwrap();
        assert_eq!(waiting.message.as_deref(), Some("waiting for VNetReady"));
    }

    #[tokio::test]
    async fn an_operation_in_flight_is_polled_while_applying_and_pending_while_deleting() {
        let mut outcome = Outcome::Done;
        outcome.absorb::<(), crate::resource::ResourceError>(Ok(Progress::InProgress {
            retry_after: Some(Duration::from_secs(9)),
        }));
        outcome.absorb::<(), crate::resource::ResourceError>(Ok(Progress::InProgress {
            retry_after: Some(Duration::from_secs(3)),
        }));
        assert!(matches!(outcome, Outcome::InFlight(Some(hint)) if hint == Duration::from_secs(3)));
        assert_eq!(
            Outcome::InFlight(None).next(Direction::Apply).unwrap(),
            Action::requeue(POLL)
        );
        assert!(matches!(
            Outcome::InFlight(None).next(Direction::Delete),
            Err(Error::Pending(wait)) if wait == POLL
        ));
        assert_eq!(
            Outcome::Done.next(Direction::Delete).unwrap(),
            Action::await_change()
        );
        let deleting =
            Outcome::InFlight(None).observation(ConditionType::DISKS_READY, "disks", Direction::Delete);
        assert_eq!(deleting.reason, Some(Reason::DELETING));
    }
}
