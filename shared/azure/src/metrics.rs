//! The metrics this crate records, through the `metrics` facade: whoever installs a recorder (the
//! controller runtime installs a Prometheus one) receives them; without a recorder they cost
//! nothing.
//!
//! | Metric | Type | Labels |
//! |---|---|---|
//! | `capz_arm_requests_total` | counter | `operation`, `resource_type`, `status_class` |
//! | `capz_arm_request_duration_seconds` | histogram | `operation`, `resource_type` |
//! | `capz_arm_ratelimit_remaining` | gauge | `kind` |
//! | `capz_token_refreshes_total` | counter | `credential_type`, `outcome` |
//!
//! Every label has a bounded set of values: an operation name, an ARM resource type such as
//! `Microsoft.Network/virtualNetworks`, a status class (`2xx`, `4xx`, … or `error` when no answer
//! came), a budget kind (`reads`, `writes`, `deletes`, `resource`), a credential type and an
//! outcome. Subscription ids, resource names and error messages are never labels.

use std::time::Duration;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};

/// Requests sent to Resource Manager, by operation, resource type and status class.
pub const ARM_REQUESTS_TOTAL: &str = "capz_arm_requests_total";
/// Time from sending a request to Resource Manager to its answer, by operation and resource type.
pub const ARM_REQUEST_DURATION_SECONDS: &str = "capz_arm_request_duration_seconds";
/// What ARM last reported as left of a request budget, by budget kind.
pub const ARM_RATELIMIT_REMAINING: &str = "capz_arm_ratelimit_remaining";
/// Tokens fetched from the identity provider (cache misses), by credential type and outcome.
pub const TOKEN_REFRESHES_TOTAL: &str = "capz_token_refreshes_total";

/// Registers the help text and unit of this crate's metrics with the installed recorder. Call it
/// once after installing the recorder.
pub fn describe() {
    describe_counter!(
        ARM_REQUESTS_TOTAL,
        Unit::Count,
        "Requests sent to Azure Resource Manager, by operation, resource type and status class."
    );
    describe_histogram!(
        ARM_REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "Time until Azure Resource Manager answered a request, by operation and resource type."
    );
    describe_gauge!(
        ARM_RATELIMIT_REMAINING,
        Unit::Count,
        "Requests left in the budget Azure Resource Manager last reported, by kind."
    );
    describe_counter!(
        TOKEN_REFRESHES_TOTAL,
        Unit::Count,
        "Tokens requested from the identity provider, by credential type and outcome."
    );
}

/// Records one request: `status` is `None` when no answer came (transport or credential failure).
pub(crate) fn arm_request(
    operation: &'static str,
    resource_type: &str,
    status: Option<u16>,
    elapsed: Duration,
) {
    let status_class = match status.map(|status| status / 100) {
        Some(1) => "1xx",
        Some(2) => "2xx",
        Some(3) => "3xx",
        Some(4) => "4xx",
        Some(5) => "5xx",
        Some(_) => "other",
        None => "error",
    };
    counter!(
        ARM_REQUESTS_TOTAL,
        "operation" => operation,
        "resource_type" => resource_type.to_owned(),
        "status_class" => status_class,
    )
    .increment(1);
    histogram!(
        ARM_REQUEST_DURATION_SECONDS,
        "operation" => operation,
        "resource_type" => resource_type.to_owned(),
    )
    .record(elapsed);
}

/// Records the budget an answer reported; `kind` is `reads`, `writes`, `deletes` or `resource`.
#[expect(
    clippy::cast_precision_loss,
    reason = "budgets are small counts, far below 2^52"
)]
pub(crate) fn ratelimit_remaining(kind: &'static str, remaining: u64) {
    gauge!(ARM_RATELIMIT_REMAINING, "kind" => kind).set(remaining as f64);
}

/// Records one token request of a credential: `outcome` is `success`, `rejected`, `transient` or
/// `misconfigured`.
pub(crate) fn token_refresh(credential_type: &'static str, outcome: &'static str) {
    counter!(
        TOKEN_REFRESHES_TOTAL,
        "credential_type" => credential_type,
        "outcome" => outcome,
    )
    .increment(1);
}
