//! ARM errors and their classification.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::credential::CredentialError;

/// ARM's error document: `{"error": {"code", "message", "target", "details"}}` holds one of these,
/// and so does the `error` of a failed operation's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Azure's error code, such as `ResourceGroupNotFound` or `InvalidParameter`.
    pub code: String,
    /// The human-readable explanation.
    #[serde(default)]
    pub message: String,
    /// The property or resource the error is about, when ARM names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Nested errors, such as one per invalid property.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<ErrorBody>,
}

/// A failed ARM call. [`ArmError::category`] says what a controller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum ArmError {
    /// ARM answered with an error status.
    #[error("ARM answered {status} {}: {}", .error.code, .error.message)]
    Status {
        /// The HTTP status.
        status: u16,
        /// ARM's error document (a code derived from the status when the body had none).
        error: ErrorBody,
        /// How long ARM asked the caller to wait (`Retry-After`), if it did.
        retry_after: Option<Duration>,
    },
    /// A long-running operation ended `Failed` or `Canceled`.
    #[error("the operation failed: {}: {}", .error.code, .error.message)]
    OperationFailed {
        /// The operation's error.
        error: ErrorBody,
    },
    /// Not sent: ARM throttled this subscription and principal a moment ago and the wait it asked
    /// for is not over. The message names no countdown: it lands in conditions, and a message
    /// changing at every attempt would write the status (and wake its watchers) each time.
    #[error(
        "ARM is throttling this subscription and principal; not sending until the wait it asked for is over"
    )]
    Throttled {
        /// How long is left to wait.
        retry_after: Duration,
    },
    /// No token could be had.
    #[error(transparent)]
    Credential(#[from] CredentialError),
    /// ARM could not be reached or did not answer in time.
    #[error("cannot reach ARM: {0}")]
    Transport(String),
    /// ARM's answer was not what the protocol or the expected model says.
    #[error("unexpected answer from ARM: {0}")]
    UnexpectedAnswer(String),
    /// The call itself is unusable, such as a poll URL on another host than ARM's.
    #[error("invalid ARM request: {0}")]
    InvalidRequest(String),
}

/// What kind of failure an [`ArmError`] is: a bounded label for metrics and condition reasons, and
/// what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// The resource (or its parent) does not exist.
    NotFound,
    /// The request conflicts with the resource's current state (409, or 412 for a stale
    /// `If-Match`): read it again and retry after a backoff.
    Conflict,
    /// ARM refused the request as invalid (other 4xx): retrying the same request fails the same
    /// way, so wait for a change of the spec.
    InvalidInput,
    /// Throttled (429): wait for [`ArmError::retry_after`].
    Throttled,
    /// Server errors, transport errors and timeouts, failed operations: retry with backoff.
    Transient,
    /// The credential was rejected or ARM refused the token (401): wait for a change of the
    /// identity.
    Unauthorized,
    /// The principal lacks a role assignment for the call (403): wait for a change.
    Forbidden,
}

impl Category {
    /// Whether retrying without a change of configuration is pointless.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::InvalidInput | Self::Unauthorized | Self::Forbidden)
    }

    /// A stable name for metrics labels and condition reasons.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "NotFound",
            Self::Conflict => "Conflict",
            Self::InvalidInput => "InvalidInput",
            Self::Throttled => "Throttled",
            Self::Transient => "Transient",
            Self::Unauthorized => "Unauthorized",
            Self::Forbidden => "Forbidden",
        }
    }
}

impl ArmError {
    /// The category of this error.
    #[must_use]
    pub fn category(&self) -> Category {
        match self {
            Self::Status { status, .. } => match status {
                404 => Category::NotFound,
                409 | 412 => Category::Conflict,
                401 => Category::Unauthorized,
                403 => Category::Forbidden,
                429 => Category::Throttled,
                408 => Category::Transient,
                400..=499 => Category::InvalidInput,
                _ => Category::Transient,
            },
            Self::Throttled { .. } => Category::Throttled,
            Self::Credential(err) if err.is_terminal() => Category::Unauthorized,
            // Operations that ARM accepted failed while running: capacity, allocation or internal
            // errors, which a later attempt may not meet (invalid input is refused up front).
            Self::OperationFailed { .. }
            | Self::Credential(_)
            | Self::Transport(_)
            | Self::UnexpectedAnswer(_) => Category::Transient,
            Self::InvalidRequest(_) => Category::InvalidInput,
        }
    }

    /// How long ARM asked to wait before the next call, when it said so.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            Self::Throttled { retry_after } => Some(*retry_after),
            _ => None,
        }
    }

    /// Azure's error code, for errors ARM answered with.
    #[must_use]
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Status { error, .. } | Self::OperationFailed { error } => Some(&error.code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ArmError, Category, ErrorBody};
    use crate::credential::CredentialError;

    fn status(status: u16) -> ArmError {
        ArmError::Status {
            status,
            error: ErrorBody {
                code: "Code".into(),
                message: "message".into(),
                target: None,
                details: Vec::new(),
            },
            retry_after: (status == 429).then(|| Duration::from_secs(7)),
        }
    }

    #[test]
    fn statuses_map_to_categories() {
        let expected = [
            (400, Category::InvalidInput),
            (401, Category::Unauthorized),
            (403, Category::Forbidden),
            (404, Category::NotFound),
            (408, Category::Transient),
            (409, Category::Conflict),
            (412, Category::Conflict),
            (422, Category::InvalidInput),
            (429, Category::Throttled),
            (500, Category::Transient),
            (503, Category::Transient),
        ];
        for (code, category) in expected {
            assert_eq!(status(code).category(), category, "{code}");
        }
        assert_eq!(status(429).retry_after(), Some(Duration::from_secs(7)));
        assert!(status(400).category().is_terminal());
        assert!(!status(503).category().is_terminal());
    }

    #[test]
    fn credential_failures_follow_their_kind() {
        let rejected = ArmError::from(CredentialError::Rejected {
            kind: "client secret",
            message: "AADSTS7000215".into(),
        });
        assert_eq!(rejected.category(), Category::Unauthorized);
        let down = ArmError::from(CredentialError::Transient {
            kind: "client secret",
            message: "timeout".into(),
        });
        assert_eq!(down.category(), Category::Transient);
    }

    #[test]
    fn the_error_document_parses_with_details() {
        let body: ErrorBody = serde_json::from_str(
            r#"{"code":"InvalidParameter","message":"bad","target":"properties.x","details":[{"code":"Inner","message":"why"}]}"#,
        )
        .unwrap();
        assert_eq!(body.details[0].code, "Inner");
        assert_eq!(
            ArmError::OperationFailed { error: body }.to_string(),
            "the operation failed: InvalidParameter: bad"
        );
        assert_eq!(
            ArmError::Throttled {
                retry_after: Duration::from_millis(1500)
            }
            .to_string(),
            "ARM is throttling this subscription and principal; not sending until the wait it asked for is over"
        );
    }
}
