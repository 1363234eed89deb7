//! What the reconcile loop does after an error: every error a controller returns says which
//! [`Category`] it falls in, and [`Backoff`] turns that into the next reconcile's time.
//!
//! - invalid input: nothing to do until the object changes (a watch event brings it back);
//! - transient: again after an exponential backoff per object, reset by a success;
//! - throttled: again once Azure's `Retry-After` has passed, not before;
//! - terminal: the condition says why; again after a pause that starts at a minute and doubles up
//!   to ten, so an outside fix (a role assignment, a federated credential, a quota increase) is
//!   noticed within minutes of being made without a retry storm while nobody fixes anything. An
//!   exceeded quota is terminal whatever ARM's status (409) says.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use capz_api::common::conditions::ConditionSeverity;
use kube::runtime::controller::Action;

use crate::conditions::Reason;

/// How the reconcile loop treats an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// The spec asks for something impossible; wait for it to change.
    InvalidInput,
    /// Worth retrying soon: server errors, timeouts, conflicts, a resource not there yet.
    Transient,
    /// Azure throttled the caller; retry after the time it gave.
    Throttled,
    /// Retrying will not help until something outside the object changes.
    Terminal,
}

impl Category {
    /// A stable name for metrics labels.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Transient => "transient",
            Self::Throttled => "throttled",
            Self::Terminal => "terminal",
        }
    }

    /// How serious a condition failing with an error of this category is: one that waits for a
    /// person (invalid input, terminal) is an error, one that passes by itself a warning.
    #[must_use]
    pub fn severity(self) -> ConditionSeverity {
        match self {
            Self::InvalidInput | Self::Terminal => ConditionSeverity::Error,
            Self::Transient | Self::Throttled => ConditionSeverity::Warning,
        }
    }
}

impl From<capz_azure::Category> for Category {
    fn from(category: capz_azure::Category) -> Self {
        use capz_azure::Category as Arm;
        match category {
            Arm::InvalidInput => Self::InvalidInput,
            Arm::Throttled => Self::Throttled,
            Arm::NotFound | Arm::Conflict | Arm::Transient => Self::Transient,
            Arm::Unauthorized | Arm::Forbidden => Self::Terminal,
        }
    }
}

/// An error the reconcile loop can act on.
pub trait Classify: std::error::Error {
    /// How the loop treats it.
    fn category(&self) -> Category;

    /// For [`Category::Throttled`]: how long Azure asked to wait.
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// The reason shown in conditions and events.
    fn reason(&self) -> Reason;

    /// Not a failure but a wait: cleanup that must let an operation or a peer finish first
    /// returns such an error (only an error keeps the finalizer), and the reconcile runs again
    /// after the wait, without a warning, an error count or a backoff.
    fn pending(&self) -> Option<Duration> {
        None
    }
}

/// A reconcile that cannot fail.
impl Classify for std::convert::Infallible {
    fn category(&self) -> Category {
        match *self {}
    }

    fn reason(&self) -> Reason {
        match *self {}
    }
}

impl Classify for capz_azure::ArmError {
    fn category(&self) -> Category {
        if exceeds_quota(self) {
            return Category::Terminal;
        }
        capz_azure::ArmError::category(self).into()
    }

    fn retry_after(&self) -> Option<Duration> {
        capz_azure::ArmError::retry_after(self)
    }

    fn reason(&self) -> Reason {
        if exceeds_quota(self) {
            return Reason::QUOTA_EXCEEDED;
        }
        // Tokens are fetched at the first call that needs one: a refused credential shows there.
        if let capz_azure::ArmError::Credential(error) = self {
            return Reason::new(credential_reason(error));
        }
        match capz_azure::ArmError::category(self) {
            capz_azure::Category::Throttled => Reason::THROTTLED,
            capz_azure::Category::InvalidInput => Reason::INVALID_CONFIGURATION,
            _ => Reason::FAILED,
        }
    }
}

/// The condition reason of a credential that could not get a token, whether it failed while
/// the credential was built or at the first Azure call that needed a token.
#[must_use]
pub fn credential_reason(error: &capz_azure::CredentialError) -> &'static str {
    use capz_azure::CredentialError;
    match error {
        CredentialError::Rejected { .. } => "CredentialRejected",
        CredentialError::Configuration { .. } => "InvalidCredential",
        CredentialError::Transient { .. } => "CredentialUnavailable",
    }
}

/// Whether Azure refused the request because it would exceed a quota of the subscription: a 409
/// (or a failed operation) that only a quota increase or a smaller request fixes, so retrying
/// soon is pointless. Compute answers `OperationNotAllowed` naming the quota; other providers
/// answer `QuotaExceeded`.
fn exceeds_quota(error: &capz_azure::ArmError) -> bool {
    let (capz_azure::ArmError::Status { error: body, .. }
    | capz_azure::ArmError::OperationFailed { error: body }) = error
    else {
        return false;
    };
    body.code.eq_ignore_ascii_case("QuotaExceeded")
        || (body.code.eq_ignore_ascii_case("OperationNotAllowed")
            && body.message.to_ascii_lowercase().contains("quota"))
}

/// Per-object retry state and the timings of the policy.
#[derive(Debug)]
pub struct Backoff<Key> {
    /// The first retry after a transient error.
    pub initial: Duration,
    /// The longest wait between transient retries.
    pub max: Duration,
    /// The wait after a first terminal error; it doubles with each one after.
    pub terminal_initial: Duration,
    /// The longest wait after terminal errors.
    pub terminal: Duration,
    failures: Mutex<HashMap<Key, u32>>,
}

/// The first retry after a terminal error.
pub const TERMINAL_FIRST: Duration = Duration::from_mins(1);
/// The longest wait between retries after terminal errors.
pub const TERMINAL_LONGEST: Duration = Duration::from_mins(10);

/// The wait before retrying after the `failures`-th failure in a row: `first`, doubled for each
/// failure before it, at most `limit`.
#[must_use]
pub fn doubling(first: Duration, failures: u32, limit: Duration) -> Duration {
    first
        .saturating_mul(2_u32.saturating_pow(failures.saturating_sub(1).min(16)))
        .min(limit)
}

impl<Key: Eq + Hash> Default for Backoff<Key> {
    fn default() -> Self {
        Self::new(
            Duration::from_secs(1),
            Duration::from_mins(5),
            TERMINAL_FIRST,
            TERMINAL_LONGEST,
        )
    }
}

impl<Key: Eq + Hash> Backoff<Key> {
    /// A policy with these timings: transient errors wait from `initial` up to `max`, terminal
    /// ones from `terminal_initial` up to `terminal`.
    #[must_use]
    pub fn new(initial: Duration, max: Duration, terminal_initial: Duration, terminal: Duration) -> Self {
        Self {
            initial,
            max,
            terminal_initial,
            terminal,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The action after `error` on the object `key`.
    pub fn on_error(&self, key: Key, error: &impl Classify) -> Action {
        match error.category() {
            Category::InvalidInput => Action::await_change(),
            Category::Terminal => Action::requeue(self.doubled(key, self.terminal_initial, self.terminal)),
            // A throttled call never reached Azure's work; it does not count as a failure.
            Category::Throttled => Action::requeue(error.retry_after().unwrap_or(self.initial)),
            Category::Transient => Action::requeue(self.doubled(key, self.initial, self.max)),
        }
    }

    /// Counts one more failure of `key` and returns its wait: `first` doubled per earlier
    /// failure, at most `limit`.
    fn doubled(&self, key: Key, first: Duration, limit: Duration) -> Duration {
        let failures = {
            let mut failures = self
                .failures
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let count = failures.entry(key).or_insert(0);
            *count = count.saturating_add(1);
            *count
        };
        doubling(first, failures, limit)
    }

    /// Forgets the failures of `key`: after a reconcile that succeeded, and after one that failed
    /// but still moved the object on (its status changed). Faults that come and go while work
    /// progresses then never add up to a long wait; the same failure again and again does.
    pub fn reset(&self, key: &Key) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("test error")]
    struct TestError(Category, Option<Duration>);

    impl Classify for TestError {
        fn category(&self) -> Category {
            self.0
        }
        fn retry_after(&self) -> Option<Duration> {
            self.1
        }
        fn reason(&self) -> Reason {
            Reason::FAILED
        }
    }

    #[test]
    fn each_category_gets_its_action() {
        let backoff = Backoff::<&str>::default();
        assert_eq!(
            backoff.on_error("a", &TestError(Category::InvalidInput, None)),
            Action::await_change()
        );
        assert_eq!(
            backoff.on_error("a", &TestError(Category::Terminal, None)),
            Action::requeue(Duration::from_mins(1))
        );
        assert_eq!(
            backoff.on_error("a", &TestError(Category::Throttled, Some(Duration::from_secs(7)))),
            Action::requeue(Duration::from_secs(7))
        );
    }

    fn arm_error(status: u16, code: &str, message: &str) -> capz_azure::ArmError {
        capz_azure::ArmError::Status {
            status,
            error: capz_azure::ErrorBody {
                code: code.into(),
                message: message.into(),
                target: None,
                details: Vec::new(),
            },
            retry_after: None,
        }
    }

    #[test]
    fn an_exceeded_quota_is_terminal_and_says_so() {
        let cores = arm_error(
            409,
            "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding approved Total Regional Cores quota.",
        );
        assert_eq!(Classify::category(&cores), Category::Terminal);
        assert_eq!(Classify::reason(&cores), Reason::QUOTA_EXCEEDED);
        let addresses = arm_error(
            409,
            "QuotaExceeded",
            "Cannot create more than 10 public IP addresses.",
        );
        assert_eq!(Classify::category(&addresses), Category::Terminal);
        let failed = capz_azure::ArmError::OperationFailed {
            error: capz_azure::ErrorBody {
                code: "QuotaExceeded".into(),
                message: String::new(),
                target: None,
                details: Vec::new(),
            },
        };
        assert_eq!(Classify::reason(&failed), Reason::QUOTA_EXCEEDED);
        // Other refusals keep their category.
        let busy = arm_error(
            409,
            "OperationNotAllowed",
            "Another operation is in progress on the resource.",
        );
        assert_eq!(Classify::category(&busy), Category::Transient);
        assert_eq!(Classify::reason(&busy), Reason::FAILED);
    }

    #[test]
    fn a_credential_refused_at_the_first_call_keeps_its_reason() {
        let rejected = capz_azure::ArmError::from(capz_azure::CredentialError::Rejected {
            kind: "client secret",
            message: "AADSTS7000215: Invalid client secret provided.".into(),
        });
        assert_eq!(Classify::category(&rejected), Category::Terminal);
        assert_eq!(Classify::reason(&rejected).as_str(), "CredentialRejected");
        let unreachable = capz_azure::ArmError::from(capz_azure::CredentialError::Transient {
            kind: "client secret",
            message: "timeout".into(),
        });
        assert_eq!(Classify::category(&unreachable), Category::Transient);
        assert_eq!(Classify::reason(&unreachable).as_str(), "CredentialUnavailable");
    }

    #[test]
    fn transient_errors_back_off_per_object_up_to_the_limit_and_reset_on_success() {
        let backoff = Backoff::new(
            Duration::from_secs(1),
            Duration::from_secs(10),
            Duration::from_mins(1),
            Duration::from_mins(10),
        );
        let transient = TestError(Category::Transient, None);
        let waits: Vec<Action> = (0..6).map(|_| backoff.on_error("a", &transient)).collect();
        let expected: Vec<Action> = [1, 2, 4, 8, 10, 10]
            .into_iter()
            .map(|seconds| Action::requeue(Duration::from_secs(seconds)))
            .collect();
        assert_eq!(waits, expected);
        // Another object has its own count.
        assert_eq!(
            backoff.on_error("b", &transient),
            Action::requeue(Duration::from_secs(1))
        );
        backoff.reset(&"a");
        assert_eq!(
            backoff.on_error("a", &transient),
            Action::requeue(Duration::from_secs(1))
        );
    }

    #[test]
    fn terminal_errors_are_retried_ever_less_often_up_to_the_limit() {
        let backoff = Backoff::<&str>::default();
        let terminal = TestError(Category::Terminal, None);
        let waits: Vec<Action> = (0..6).map(|_| backoff.on_error("a", &terminal)).collect();
        let expected: Vec<Action> = [1, 2, 4, 8, 10, 10]
            .into_iter()
            .map(|minutes| Action::requeue(Duration::from_mins(minutes)))
            .collect();
        assert_eq!(waits, expected);
        // A reconcile that moved the object on starts the schedule again.
        backoff.reset(&"a");
        assert_eq!(
            backoff.on_error("a", &terminal),
            Action::requeue(Duration::from_mins(1))
        );
    }
}
