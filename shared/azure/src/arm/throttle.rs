//! The throttle gate: once ARM answers 429 for a subscription and principal, every later call with
//! that pair fails fast, without being sent, until the wait ARM asked for is over. Sending anyway
//! would only draw more 429s and lengthen the penalty. The gate is process-wide, so that all the
//! clients and workers of a controller honour one answer.
//!
//! It also keeps the last request budget ARM reported for each pair
//! (`x-ms-ratelimit-remaining-*` headers), for metrics.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use azure_core::http::headers::{HeaderName, Headers};
use azure_core::time::OffsetDateTime;

use crate::id::SubscriptionId;
use crate::metrics;

/// How long to hold calls back after a 429 that names no wait (CAPZ waits a minute too).
const DEFAULT_WAIT: Duration = Duration::from_mins(1);

/// What ARM last reported as left of the principal's request budget in a subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimitBudget {
    /// Reads left (`x-ms-ratelimit-remaining-subscription-reads`).
    pub subscription_reads: Option<u64>,
    /// Writes left (`x-ms-ratelimit-remaining-subscription-writes`).
    pub subscription_writes: Option<u64>,
    /// Deletes left (`x-ms-ratelimit-remaining-subscription-deletes`).
    pub subscription_deletes: Option<u64>,
    /// A resource provider's own budget as it reports it (`x-ms-ratelimit-remaining-resource`,
    /// such as `Microsoft.Compute/PutVMResource;11`).
    pub resource: Option<String>,
}

#[derive(Default)]
struct Entry {
    closed_until: Option<Instant>,
    budget: RateLimitBudget,
}

type Key = (SubscriptionId, String);

static GATE: LazyLock<Mutex<HashMap<Key, Entry>>> = LazyLock::new(Mutex::default);

fn with_gate<T>(f: impl FnOnce(&mut HashMap<Key, Entry>) -> T) -> T {
    // The map holds plain values that every writer leaves whole, so a panic elsewhere while the
    // lock was held cannot have broken it.
    f(&mut GATE.lock().unwrap_or_else(PoisonError::into_inner))
}

/// How long calls for `subscription` and `principal` must still wait; `None` when they may go.
pub(super) fn wait(subscription: &SubscriptionId, principal: &str) -> Option<Duration> {
    let now = Instant::now();
    with_gate(|gate| {
        let until = gate.get(&(*subscription, principal.to_owned()))?.closed_until?;
        until.checked_duration_since(now).filter(|left| !left.is_zero())
    })
}

/// Records an answer: closes the gate on 429, keeps the reported budget.
pub(super) fn record(subscription: &SubscriptionId, principal: &str, status: u16, headers: &Headers) {
    let number = |name: &'static str| {
        headers
            .get_optional_str(&HeaderName::from_static(name))
            .and_then(|value| value.trim().parse::<u64>().ok())
    };
    let reads = number("x-ms-ratelimit-remaining-subscription-reads");
    let writes = number("x-ms-ratelimit-remaining-subscription-writes");
    let deletes = number("x-ms-ratelimit-remaining-subscription-deletes");
    let resource = headers
        .get_optional_str(&HeaderName::from_static("x-ms-ratelimit-remaining-resource"))
        .map(str::to_owned);
    let closed_until = (status == 429).then(|| Instant::now() + retry_after(headers).unwrap_or(DEFAULT_WAIT));
    for (kind, remaining) in [("reads", reads), ("writes", writes), ("deletes", deletes)] {
        if let Some(remaining) = remaining {
            metrics::ratelimit_remaining(kind, remaining);
        }
    }
    if let Some(remaining) = resource.as_deref().and_then(lowest_resource_budget) {
        metrics::ratelimit_remaining("resource", remaining);
    }
    if reads.is_none()
        && writes.is_none()
        && deletes.is_none()
        && resource.is_none()
        && closed_until.is_none()
    {
        return;
    }
    with_gate(|gate| {
        let entry = gate.entry((*subscription, principal.to_owned())).or_default();
        // Each answer reports only the budget of its own kind of request; keep the others.
        let budget = &mut entry.budget;
        budget.subscription_reads = reads.or(budget.subscription_reads);
        budget.subscription_writes = writes.or(budget.subscription_writes);
        budget.subscription_deletes = deletes.or(budget.subscription_deletes);
        budget.resource = resource.or(budget.resource.take());
        if let Some(until) = closed_until {
            entry.closed_until = Some(entry.closed_until.map_or(until, |earlier| earlier.max(until)));
        }
    });
}

/// The smallest count of a resource provider's budget header, which lists policies with what is
/// left of each: `Microsoft.Compute/HighCostGet3Min;107,Microsoft.Compute/HighCostGet30Min;517`.
fn lowest_resource_budget(header: &str) -> Option<u64> {
    header
        .split(',')
        .filter_map(|policy| policy.rsplit_once(';')?.1.trim().parse::<u64>().ok())
        .min()
}

/// The budget last reported for `subscription` and `principal`.
pub(super) fn budget(subscription: &SubscriptionId, principal: &str) -> Option<RateLimitBudget> {
    with_gate(|gate| {
        gate.get(&(*subscription, principal.to_owned()))
            .map(|entry| entry.budget.clone())
    })
}

/// The wait an answer asks for: `retry-after-ms` / `x-ms-retry-after-ms` (milliseconds), else
/// `Retry-After` in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &Headers) -> Option<Duration> {
    for name in ["retry-after-ms", "x-ms-retry-after-ms"] {
        if let Some(millis) = headers
            .get_optional_str(&HeaderName::from_static(name))
            .and_then(|value| value.trim().parse::<u64>().ok())
        {
            return Some(Duration::from_millis(millis));
        }
    }
    let value = headers
        .get_optional_str(&HeaderName::from_static("retry-after"))?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = azure_core::time::parse_rfc7231(value).ok()?;
    let left = date - OffsetDateTime::now_utc();
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use azure_core::http::headers::Headers;
    use azure_core::time::{OffsetDateTime, to_rfc7231};

    use super::{budget, lowest_resource_budget, record, retry_after, wait};
    use crate::id::SubscriptionId;

    fn headers(pairs: &[(&'static str, String)]) -> Headers {
        let mut headers = Headers::new();
        for (name, value) in pairs {
            headers.insert(*name, value.clone());
        }
        headers
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "17".into())])),
            Some(Duration::from_secs(17))
        );
        assert_eq!(
            retry_after(&headers(&[
                ("retry-after", "3".into()),
                ("retry-after-ms", "250".into())
            ])),
            Some(Duration::from_millis(250))
        );
        let in_a_minute = OffsetDateTime::now_utc() + azure_core::time::Duration::seconds(61);
        let left = retry_after(&headers(&[("retry-after", to_rfc7231(&in_a_minute))])).unwrap();
        assert!(
            left > Duration::from_secs(55) && left <= Duration::from_secs(61),
            "{left:?}"
        );
        let past = OffsetDateTime::now_utc() - azure_core::time::Duration::seconds(10);
        assert_eq!(
            retry_after(&headers(&[("retry-after", to_rfc7231(&past))])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon".into())])), None);
    }

    #[test]
    fn the_resource_budget_is_its_lowest_policy() {
        assert_eq!(
            lowest_resource_budget(
                "Microsoft.Compute/HighCostGet3Min;107,Microsoft.Compute/HighCostGet30Min;517"
            ),
            Some(107)
        );
        assert_eq!(
            lowest_resource_budget("Microsoft.Compute/PutVMResource;11"),
            Some(11)
        );
        assert_eq!(lowest_resource_budget("garbled"), None);
    }

    #[test]
    fn a_429_closes_the_gate_for_its_pair_only() {
        let subscription: SubscriptionId = "00000000-0000-0000-0000-00000000beef".parse().unwrap();
        let principal = "gate-unit-test";
        assert_eq!(wait(&subscription, principal), None);
        record(
            &subscription,
            principal,
            200,
            &headers(&[("x-ms-ratelimit-remaining-subscription-reads", "249".into())]),
        );
        assert_eq!(wait(&subscription, principal), None);
        record(
            &subscription,
            principal,
            429,
            &headers(&[
                ("retry-after", "30".into()),
                ("x-ms-ratelimit-remaining-subscription-writes", "0".into()),
            ]),
        );
        let left = wait(&subscription, principal).unwrap();
        assert!(left > Duration::from_secs(29), "{left:?}");
        assert_eq!(wait(&subscription, "another-principal"), None);
        let budget = budget(&subscription, principal).unwrap();
        assert_eq!(
            (budget.subscription_reads, budget.subscription_writes),
            (Some(249), Some(0))
        );
    }
}
