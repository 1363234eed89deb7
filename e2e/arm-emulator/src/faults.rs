//! Fault injection: rules that make matching ARM requests fail, slow down, lose their connection,
//! or start a long-running operation that ends `Failed` or `Canceled`. Tests and demos add them through the
//! operations API (`/_emulator/faults`) or [`crate::Emulator::add_fault`].

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde::{Deserialize, Serialize};

use crate::error::ArmError;
use crate::state::Unsuccessful;

/// A rule for matching requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    /// The HTTP method to match; any when absent.
    #[serde(default)]
    pub method: Option<String>,
    /// The request path to match, without the query, ignoring case; `*` stands for any run of
    /// characters (`*/virtualMachines/*`).
    pub path: String,
    /// Answer with this HTTP status and an ARM error instead of serving the request.
    #[serde(default)]
    pub status: Option<u16>,
    /// The ARM error code (of the answer, or of the failed operation).
    #[serde(default)]
    pub code: Option<String>,
    /// The error message.
    #[serde(default)]
    pub message: Option<String>,
    /// For a 429 answer: the `Retry-After` seconds it carries (`Config::retry_after_seconds` when
    /// absent).
    #[serde(default)]
    pub retry_after_seconds: Option<u64>,
    /// Apply to the next `count` matching requests only; to every one when absent.
    #[serde(default)]
    pub count: Option<u32>,
    /// Apply to this percentage of matching requests (default 100).
    #[serde(default)]
    pub percent: Option<u8>,
    /// Delay the answer by this many milliseconds.
    #[serde(default)]
    pub latency_ms: Option<u64>,
    /// Close the connection instead of answering.
    #[serde(default)]
    pub drop_connection: bool,
    /// Serve the request, but make the long-running operation it starts end `Failed` with
    /// `code` and `message`.
    #[serde(default)]
    pub fail_operation: bool,
    /// Serve the request, but make the long-running operation it starts end `Canceled` with
    /// `code` and `message` (by default `Canceled`, "Operation was canceled.").
    #[serde(default)]
    pub cancel_operation: bool,
}

/// What a matching rule does to a request.
#[derive(Debug, Default)]
pub(crate) struct Effect {
    pub(crate) delay: Option<Duration>,
    pub(crate) drop_connection: bool,
    pub(crate) answer: Option<ArmError>,
    pub(crate) retry_after_seconds: Option<u64>,
}

/// The rules in force, by id.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    rules: Vec<(u64, Fault)>,
    next_id: u64,
}

impl Fault {
    /// A rule that accepts the next `method` request to `path` and ends its operation `Failed`
    /// with the error `code`, once.
    #[must_use]
    pub fn failing_operation_once(method: &str, path: &str, code: &str) -> Self {
        Self {
            method: Some(method.to_owned()),
            path: path.to_owned(),
            status: None,
            code: Some(code.to_owned()),
            message: None,
            retry_after_seconds: None,
            count: Some(1),
            percent: None,
            latency_ms: None,
            drop_connection: false,
            fail_operation: true,
            cancel_operation: false,
        }
    }

    fn matches(&self, method: &Method, path: &str) -> bool {
        self.method
            .as_deref()
            .is_none_or(|wanted| wanted.eq_ignore_ascii_case(method.as_str()))
            && glob(&self.path.to_ascii_lowercase(), &path.to_ascii_lowercase())
    }

    /// Whether the rule serves the request and decides how its operation ends.
    fn ends_operation(&self) -> bool {
        self.fail_operation || self.cancel_operation
    }

    fn error(&self, default_status: StatusCode) -> ArmError {
        let status = self
            .status
            .and_then(|status| StatusCode::from_u16(status).ok())
            .unwrap_or(default_status);
        let code = self
            .code
            .clone()
            .unwrap_or_else(|| default_code(status).to_owned());
        let message = self
            .message
            .clone()
            .unwrap_or_else(|| format!("The emulator failed this request on purpose ({code})."));
        ArmError::new(status, code, message)
    }
}

fn default_code(status: StatusCode) -> &'static str {
    match status.as_u16() {
        429 => "TooManyRequests",
        409 => "Conflict",
        404 => "NotFound",
        400 => "BadRequest",
        503 => "ServiceUnavailable",
        _ => "InternalServerError",
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of characters.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A roll of the dice for percentage rules.
fn roll(percent: u8) -> bool {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) % 100 < u32::from(percent)
}

impl Faults {
    pub(crate) fn add(&mut self, fault: Fault) -> u64 {
        self.next_id += 1;
        self.rules.push((self.next_id, fault));
        self.next_id
    }

    pub(crate) fn list(&self) -> &[(u64, Fault)] {
        &self.rules
    }

    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let before = self.rules.len();
        self.rules.retain(|(rule, _)| *rule != id);
        self.rules.len() != before
    }

    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    /// Uses up one application of the first rule that matches and passes `wanted`.
    fn take(&mut self, method: &Method, path: &str, wanted: impl Fn(&Fault) -> bool) -> Option<Fault> {
        let index = self.rules.iter().position(|(_, fault)| {
            wanted(fault) && fault.matches(method, path) && roll(fault.percent.unwrap_or(100))
        })?;
        let fault = self.rules[index].1.clone();
        if let Some(count) = &mut self.rules[index].1.count {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.rules.remove(index);
            }
        }
        Some(fault)
    }

    /// The effect of the rules on a request as it arrives.
    pub(crate) fn on_request(&mut self, method: &Method, path: &str) -> Effect {
        let Some(fault) = self.take(method, path, |fault| !fault.ends_operation()) else {
            return Effect::default();
        };
        Effect {
            delay: fault.latency_ms.map(Duration::from_millis),
            drop_connection: fault.drop_connection,
            answer: fault
                .status
                .is_some()
                .then(|| fault.error(StatusCode::INTERNAL_SERVER_ERROR)),
            retry_after_seconds: fault.retry_after_seconds,
        }
    }

    /// How a long-running operation started by this request must end, if a rule says so.
    pub(crate) fn operation_failure(&mut self, method: &Method, path: &str) -> Option<Unsuccessful> {
        let fault = self.take(method, path, Fault::ends_operation)?;
        if !fault.cancel_operation {
            return Some(Unsuccessful::Failed(
                fault.error(StatusCode::INTERNAL_SERVER_ERROR),
            ));
        }
        // What Azure reports for an operation it canceled, unless the rule says otherwise.
        let canceled = Fault {
            code: fault.code.clone().or_else(|| Some("Canceled".into())),
            message: fault
                .message
                .clone()
                .or_else(|| Some("Operation was canceled.".into())),
            ..fault
        };
        Some(Unsuccessful::Canceled(canceled.error(StatusCode::CONFLICT)))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::{Fault, Faults, glob};
    use crate::state::Unsuccessful;

    fn fault(path: &str) -> Fault {
        Fault {
            method: Some("PUT".into()),
            path: path.into(),
            status: Some(429),
            code: None,
            message: None,
            retry_after_seconds: None,
            count: Some(2),
            percent: None,
            latency_ms: None,
            drop_connection: false,
            fail_operation: false,
            cancel_operation: false,
        }
    }

    #[test]
    fn globs_match_runs_of_characters() {
        assert!(glob(
            "*/virtualmachines/*",
            "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/virtualmachines/vm"
        ));
        assert!(glob("/a/*/c", "/a/b/c"));
        assert!(!glob("/a/*/c", "/a/b/d"));
        assert!(glob("*", ""));
        assert!(!glob("/a", "/ab"));
        assert!(glob("/a*", "/ab"));
    }

    #[test]
    fn counted_rules_wear_out_and_match_only_their_method() {
        let mut faults = Faults::default();
        faults.add(fault("*/virtualNetworks/*"));
        let path = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v";
        assert!(faults.on_request(&Method::GET, path).answer.is_none());
        let first = faults.on_request(&Method::PUT, path).answer.unwrap();
        assert_eq!(
            (first.status.as_u16(), first.code.as_ref()),
            (429, "TooManyRequests")
        );
        assert!(faults.on_request(&Method::PUT, path).answer.is_some());
        assert!(faults.on_request(&Method::PUT, path).answer.is_none());
        assert!(faults.list().is_empty());
    }

    #[test]
    fn operation_failures_are_separate_from_request_faults() {
        let mut faults = Faults::default();
        let id = faults.add(Fault {
            fail_operation: true,
            code: Some("ZonalAllocationFailed".into()),
            count: None,
            ..fault("*")
        });
        assert!(faults.on_request(&Method::PUT, "/x").answer.is_none());
        assert!(matches!(
            faults.operation_failure(&Method::PUT, "/x"),
            Some(Unsuccessful::Failed(error)) if error.code == "ZonalAllocationFailed"
        ));
        assert!(faults.remove(id));
        assert!(faults.operation_failure(&Method::PUT, "/x").is_none());
    }

    #[test]
    fn canceling_rules_end_operations_canceled_with_azure_words_by_default() {
        let mut faults = Faults::default();
        faults.add(Fault {
            cancel_operation: true,
            status: None,
            count: Some(1),
            ..fault("*")
        });
        assert!(faults.on_request(&Method::PUT, "/x").answer.is_none());
        let Some(Unsuccessful::Canceled(error)) = faults.operation_failure(&Method::PUT, "/x") else {
            panic!("the operation must end Canceled");
        };
        assert_eq!(
            (error.code.as_ref(), error.message.as_str()),
            ("Canceled", "Operation was canceled.")
        );
        assert!(faults.list().is_empty());
    }
}
