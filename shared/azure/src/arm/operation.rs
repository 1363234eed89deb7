//! Long-running operations: what a PUT, PATCH or DELETE that ARM accepted but has not finished
//! leaves to poll, in a form a controller can store in a resource's status and poll from after a
//! restart.

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose::URL_SAFE_NO_PAD};
use serde::{Deserialize, Serialize};

use super::ArmError;
use crate::id::{ApiVersion, ResourceId};

/// The value of the token's `format` field: what tells our tokens from any other.
const FORMAT: &str = "capz-rs/1";

/// Decodes with or without padding: tokens may have passed through tools that add it.
const LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The write that started an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OperationMethod {
    /// A create or replace.
    Put,
    /// An update.
    Patch,
    /// A delete.
    Delete,
}

/// Which protocol the poll URL speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PollKind {
    /// The `Azure-AsyncOperation` URL: a status document `{"status": "InProgress" | "Succeeded" |
    /// "Failed" | "Canceled", "error": …}`.
    AsyncOperation,
    /// The `Location` URL: 202 while running, then the final answer.
    Location,
}

/// An operation in progress, enough to poll it with any client, in any process.
///
/// Its string form ([`OperationToken::encode`]) is unpadded base64url of a JSON object:
///
/// ```json
/// {"format": "capz-rs/1", "method": "PUT", "pollUrl": "https://management.azure.com/…",
///  "pollKind": "AsyncOperation", "resourceId": "/subscriptions/…", "apiVersion": "2024-07-01"}
/// ```
///
/// `format` marks the token as ours: [`OperationToken::decode`] refuses anything else, such as the
/// resume tokens CAPZ stores in the same status field, with [`UnknownTokenError`]. The poll URL is
/// only ever sent to the client's own Resource Manager host, whatever a token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationToken {
    /// The write that started the operation.
    pub method: OperationMethod,
    /// Where to poll.
    pub poll_url: String,
    /// How to read what the poll URL answers.
    pub poll_kind: PollKind,
    /// The resource the operation writes.
    pub resource_id: ResourceId,
    /// The api-version of the write, for reading the resource when the operation is done.
    pub api_version: ApiVersion,
    /// Whether the write creates the resource (it did not exist before it), so that a finished
    /// operation can be told as a creation or an update. Set by the caller, who read the
    /// resource first; absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub creates: bool,
}

/// The token in storage form, with its format marker.
#[derive(Serialize, Deserialize)]
struct Stored {
    format: String,
    #[serde(flatten)]
    token: OperationToken,
}

/// A string that is not an operation token of capz-rs: malformed, or written by another program
/// (such as CAPZ). Drop it and read the resource again; the operation it stood for, if any, has
/// either finished or shows in the resource's `provisioningState`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an operation token of capz-rs: {0}")]
pub struct UnknownTokenError(String);

impl OperationToken {
    /// The token's storage form (see the type's documentation).
    #[must_use]
    pub fn encode(&self) -> String {
        let stored = Stored {
            format: FORMAT.to_owned(),
            token: self.clone(),
        };
        // Serialising a struct of strings cannot fail.
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&stored).unwrap_or_default())
    }

    /// Reads a token written by [`OperationToken::encode`].
    ///
    /// # Errors
    /// [`UnknownTokenError`] for anything else.
    pub fn decode(text: &str) -> Result<Self, UnknownTokenError> {
        let bytes = LENIENT_URL_SAFE
            .decode(text.trim())
            .map_err(|_| UnknownTokenError("it is not base64url".to_owned()))?;
        let document: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| UnknownTokenError("it does not hold a JSON document".to_owned()))?;
        match document.get("format").and_then(serde_json::Value::as_str) {
            Some(FORMAT) => {}
            Some(other) => return Err(UnknownTokenError(format!("its format is '{other}'"))),
            None => return Err(UnknownTokenError("it has no format marker".to_owned())),
        }
        serde_json::from_value::<Stored>(document)
            .map(|stored| stored.token)
            .map_err(|err| UnknownTokenError(format!("it is incomplete ({err})")))
    }
}

impl fmt::Display for OperationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// An operation still running, and how long ARM suggests waiting before the next poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InProgress {
    /// What to poll.
    pub token: OperationToken,
    /// ARM's `Retry-After`, if it sent one.
    pub retry_after: Option<Duration>,
}

/// What a write returned: the finished result, or an operation to poll.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// ARM finished the write in the call; the resource as it answered (nothing for a delete).
    Done(T),
    /// ARM accepted the write and runs it; poll the token later.
    InProgress(InProgress),
}

/// What one poll found.
#[derive(Debug)]
pub enum PollOutcome<T> {
    /// Still running.
    InProgress(InProgress),
    /// Finished: the resource read after a PUT or PATCH, nothing after a DELETE.
    Succeeded(Option<T>),
    /// Finished, and failed: the operation's error. The token is spent.
    Failed(ArmError),
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};

    use super::{OperationMethod, OperationToken, PollKind};

    fn token() -> OperationToken {
        OperationToken {
            method: OperationMethod::Put,
            poll_url: "https://management.azure.com/subscriptions/s/providers/Microsoft.Network/locations/westeurope/operations/1?api-version=2024-07-01".into(),
            poll_kind: PollKind::AsyncOperation,
            resource_id: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"
                .parse()
                .unwrap(),
            api_version: "2024-07-01".parse().unwrap(),
            creates: false,
        }
    }

    #[test]
    fn tokens_round_trip_through_their_string_form() {
        let encoded = token().encode();
        assert!(
            encoded
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_eq!(OperationToken::decode(&encoded).unwrap(), token());
        let json: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&encoded).unwrap()).unwrap();
        assert_eq!(json["format"], "capz-rs/1");
        assert_eq!(json["method"], "PUT");
        assert_eq!(json["pollKind"], "AsyncOperation");
        // Padding added on the way is tolerated.
        let padded = URL_SAFE.encode(URL_SAFE_NO_PAD.decode(&encoded).unwrap());
        assert_eq!(OperationToken::decode(&padded).unwrap(), token());
    }

    #[test]
    fn foreign_and_broken_tokens_are_refused_distinctly() {
        // What CAPZ stores: base64url of the Go SDK's resume token.
        let capz = URL_SAFE.encode(r#"{"type":"AzureAsyncOperation","token":"eyJ0eXBlIjoi"}"#);
        let message = OperationToken::decode(&capz).unwrap_err().to_string();
        assert!(message.contains("no format marker"), "{message}");
        let other_version = URL_SAFE_NO_PAD.encode(r#"{"format":"capz-rs/9"}"#);
        assert!(
            OperationToken::decode(&other_version)
                .unwrap_err()
                .to_string()
                .contains("capz-rs/9")
        );
        assert!(
            OperationToken::decode("not base64!")
                .unwrap_err()
                .to_string()
                .contains("base64url")
        );
        let incomplete = URL_SAFE_NO_PAD.encode(r#"{"format":"capz-rs/1","method":"PUT"}"#);
        assert!(
            OperationToken::decode(&incomplete)
                .unwrap_err()
                .to_string()
                .contains("incomplete")
        );
    }
}
