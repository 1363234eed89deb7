//! Azure Resource Manager's request limits: a token bucket per principal for reads, writes and
//! deletes. A request that finds its bucket empty is answered 429 with `Retry-After`; every
//! answer tells how many requests of its kind remain, in the headers ARM sends.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde::Deserialize;

use crate::error::ArmError;

/// The size and refill rate of one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Bucket {
    /// How many requests may come at once.
    pub burst: u32,
    /// How many tokens come back per second.
    pub per_second: f64,
}

/// The buckets of each principal, by kind of request. The defaults are Azure's documented
/// per-principal limits.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimits {
    /// GET and HEAD.
    pub reads: Bucket,
    /// PUT, PATCH and POST.
    pub writes: Bucket,
    /// DELETE.
    pub deletes: Bucket,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            reads: Bucket {
                burst: 250,
                per_second: 25.0,
            },
            writes: Bucket {
                burst: 200,
                per_second: 10.0,
            },
            deletes: Bucket {
                burst: 200,
                per_second: 10.0,
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Reads,
    Writes,
    Deletes,
}

impl Kind {
    fn of(method: &Method) -> Self {
        match *method {
            Method::GET | Method::HEAD => Self::Reads,
            Method::DELETE => Self::Deletes,
            _ => Self::Writes,
        }
    }

    /// The header ARM reports the remaining requests of this kind in.
    fn header(self) -> &'static str {
        match self {
            Self::Reads => "x-ms-ratelimit-remaining-subscription-reads",
            Self::Writes => "x-ms-ratelimit-remaining-subscription-writes",
            Self::Deletes => "x-ms-ratelimit-remaining-subscription-deletes",
        }
    }
}

#[derive(Debug)]
struct Level {
    tokens: f64,
    updated: Instant,
}

/// Every principal's buckets.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    levels: HashMap<(String, Kind), Level>,
}

impl Throttle {
    /// Takes a token for a request of `principal`; on success the header and value reporting
    /// what remains, else the 429 to answer with its `Retry-After` seconds.
    pub(crate) fn take(
        &mut self,
        limits: &RateLimits,
        principal: &str,
        method: &Method,
        now: Instant,
    ) -> Result<(&'static str, String), (ArmError, u64)> {
        let kind = Kind::of(method);
        let bucket = match kind {
            Kind::Reads => limits.reads,
            Kind::Writes => limits.writes,
            Kind::Deletes => limits.deletes,
        };
        let burst = f64::from(bucket.burst);
        let level = self.levels.entry((principal.to_owned(), kind)).or_insert(Level {
            tokens: burst,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(level.updated).as_secs_f64();
        level.tokens = (level.tokens + elapsed * bucket.per_second).min(burst);
        level.updated = now;
        if level.tokens >= 1.0 {
            level.tokens -= 1.0;
            // Whole requests remain; the fraction is still refilling.
            return Ok((kind.header(), format!("{}", level.tokens.floor())));
        }
        let wait = if bucket.per_second > 0.0 {
            Duration::try_from_secs_f64((1.0 - level.tokens) / bucket.per_second).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        };
        let seconds = wait
            .as_secs()
            .saturating_add(u64::from(wait.subsec_nanos() > 0))
            .min(3600);
        Err((
            ArmError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                format!(
                    "The request is being throttled as the limit has been reached for operation type - {kind:?}. Please retry after {seconds} seconds."
                ),
            ),
            seconds,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use axum::http::Method;

    use super::{Bucket, RateLimits, Throttle};

    #[test]
    fn buckets_empty_then_refill_with_time() {
        let limits = RateLimits {
            writes: Bucket {
                burst: 2,
                per_second: 1.0,
            },
            ..RateLimits::default()
        };
        let mut throttle = Throttle::default();
        let start = Instant::now();
        assert_eq!(throttle.take(&limits, "p", &Method::PUT, start).unwrap().1, "1");
        assert_eq!(throttle.take(&limits, "p", &Method::PUT, start).unwrap().1, "0");
        let (error, retry_after) = throttle.take(&limits, "p", &Method::PUT, start).unwrap_err();
        assert_eq!((error.status.as_u16(), retry_after), (429, 1));
        // Another principal and another kind have their own buckets.
        assert!(throttle.take(&limits, "q", &Method::PUT, start).is_ok());
        assert!(throttle.take(&limits, "p", &Method::GET, start).is_ok());
        assert!(
            throttle
                .take(&limits, "p", &Method::PUT, start + Duration::from_secs(1))
                .is_ok()
        );
    }
}
