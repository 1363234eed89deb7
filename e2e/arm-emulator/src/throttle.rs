//! Azure's request limits. Resource Manager keeps a token bucket per principal for reads, writes
//! and deletes; Microsoft.Compute adds its own for virtual machine creates, updates and deletes,
//! one per subscription and one per machine. A request that finds a bucket empty is answered 429
//! with `Retry-After`; every answer tells how many requests remain, in the headers Azure sends.
//! The request log names the buckets each request drew on and the ones that refused it, so that a
//! client coming back to an empty bucket before its `Retry-After` can be told from one that waited.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::error::ArmError;
use crate::path::{ArmPath, ResourceId};
use crate::{Emulator, lock};

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
    /// Microsoft.Compute's virtual machine limits.
    pub compute: ComputeLimits,
}

/// Microsoft.Compute's limits for one kind of virtual machine operation.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VmPolicy {
    /// Shared by every machine of a subscription.
    pub subscription: Bucket,
    /// Each machine's own.
    pub resource: Bucket,
}

/// Microsoft.Compute's virtual machine limits. The sizes are what Azure reports in
/// `x-ms-ratelimit-remaining-resource` (1,500 per subscription, 12 per machine); the refill
/// rates spread them over Azure's 30- and 3-minute windows.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct ComputeLimits {
    /// Creating a machine.
    pub put_vm: VmPolicy,
    /// Changing a machine or its extensions.
    pub update_vm: VmPolicy,
    /// Deleting a machine.
    pub delete_vm: VmPolicy,
}

impl Default for ComputeLimits {
    fn default() -> Self {
        let policy = VmPolicy {
            subscription: Bucket {
                burst: 1500,
                per_second: 1500.0 / 1800.0,
            },
            resource: Bucket {
                burst: 12,
                per_second: 12.0 / 180.0,
            },
        };
        Self {
            put_vm: policy,
            update_vm: policy,
            delete_vm: policy,
        }
    }
}

/// A kind of virtual machine operation Microsoft.Compute limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum VmOperation {
    Put,
    Update,
    Delete,
}

impl VmOperation {
    /// What a request does to a virtual machine, if it writes one: its kind and the machine's id.
    pub(crate) fn of(
        method: &Method,
        id: &ResourceId,
        exists: impl Fn(&str) -> bool,
    ) -> Option<(Self, String)> {
        let is_machine = id.namespace.eq_ignore_ascii_case("Microsoft.Compute")
            && id
                .types
                .first()
                .is_some_and(|t| t.eq_ignore_ascii_case("virtualMachines"));
        if !is_machine || !matches!(*method, Method::PUT | Method::PATCH | Method::DELETE) {
            return None;
        }
        let machine = ResourceId {
            types: id.types[..1].to_vec(),
            names: id.names[..1].to_vec(),
            ..id.clone()
        }
        .key();
        let operation = match (id.types.len(), method) {
            (1, &Method::DELETE) => Self::Delete,
            (1, _) if !exists(&machine) => Self::Put,
            // Writing or removing an extension changes its machine.
            _ => Self::Update,
        };
        Some((operation, machine))
    }

    fn name(self) -> &'static str {
        match self {
            Self::Put => "PutVM",
            Self::Update => "UpdateVM",
            Self::Delete => "DeleteVM",
        }
    }

    fn policy(self, limits: &ComputeLimits) -> VmPolicy {
        match self {
            Self::Put => limits.put_vm,
            Self::Update => limits.update_vm,
            Self::Delete => limits.delete_vm,
        }
    }
}

/// The buckets a request drew on, by name, and those of them that were empty when it came (why it
/// was answered 429); the request log keeps both.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Drawn {
    pub(crate) budgets: Vec<String>,
    pub(crate) empty: Vec<String>,
}

impl Drawn {
    fn draw(&mut self, budget: String, refused: bool) {
        if refused {
            self.empty.push(budget.clone());
        }
        self.budgets.push(budget);
    }
}

impl RateLimits {
    /// Buckets no client empties, for benchmarks and fuzzing.
    #[must_use]
    pub fn unlimited() -> Self {
        let bucket = Bucket {
            burst: u32::MAX,
            per_second: 1e12,
        };
        let policy = VmPolicy {
            subscription: bucket,
            resource: bucket,
        };
        Self {
            reads: bucket,
            writes: bucket,
            deletes: bucket,
            compute: ComputeLimits {
                put_vm: policy,
                update_vm: policy,
                delete_vm: policy,
            },
        }
    }
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
            compute: ComputeLimits::default(),
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

    /// The bucket's name in the request log, after the principal's object id.
    fn budget(self) -> &'static str {
        match self {
            Self::Reads => "reads",
            Self::Writes => "writes",
            Self::Deletes => "deletes",
        }
    }

    /// How ARM names the kind in a throttling message.
    fn word(self) -> &'static str {
        match self {
            Self::Reads => "read",
            Self::Writes => "write",
            Self::Deletes => "delete",
        }
    }

    fn bucket(self, limits: &RateLimits) -> Bucket {
        match self {
            Self::Reads => limits.reads,
            Self::Writes => limits.writes,
            Self::Deletes => limits.deletes,
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

impl Level {
    fn full(bucket: Bucket, now: Instant) -> Self {
        Self {
            tokens: f64::from(bucket.burst),
            updated: now,
        }
    }

    /// Refills for the time gone by, then whether a token is there to take.
    fn refill(&mut self, bucket: Bucket, now: Instant) -> Result<(), u64> {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * bucket.per_second).min(f64::from(bucket.burst));
        self.updated = now;
        if self.tokens >= 1.0 {
            return Ok(());
        }
        let wait = if bucket.per_second > 0.0 {
            Duration::try_from_secs_f64((1.0 - self.tokens) / bucket.per_second).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        };
        Err(wait
            .as_secs()
            .saturating_add(u64::from(wait.subsec_nanos() > 0))
            .min(3600))
    }

    /// The whole requests left; the fraction is still refilling.
    fn remaining(&self) -> f64 {
        self.tokens.floor()
    }
}

/// Every principal's buckets, and Microsoft.Compute's per subscription and per machine.
#[derive(Debug, Default)]
pub(crate) struct Throttle {
    levels: HashMap<(String, Kind), Level>,
    compute: HashMap<(String, VmOperation), Level>,
}

impl Throttle {
    /// Takes a token for a request of `principal` in `scope` (`subscription '<id>'`, or
    /// `tenant '<id>'` for calls outside subscriptions); on success the header and value
    /// reporting what remains, else the 429 to answer with its `Retry-After` seconds.
    pub(crate) fn take(
        &mut self,
        limits: &RateLimits,
        principal: &str,
        scope: &str,
        method: &Method,
        now: Instant,
        drawn: &mut Drawn,
    ) -> Result<(&'static str, String), (ArmError, u64)> {
        let kind = Kind::of(method);
        let bucket = kind.bucket(limits);
        let level = self
            .levels
            .entry((principal.to_owned(), kind))
            .or_insert_with(|| Level::full(bucket, now));
        let refill = level.refill(bucket, now);
        drawn.draw(format!("{principal}/{}", kind.budget()), refill.is_err());
        if let Err(seconds) = refill {
            return Err((
                ArmError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "SubscriptionRequestsThrottled",
                    format!(
                        "Number of '{}' requests for {scope} actor '{principal}' exceeded. Please try again after '{seconds}' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling for additional information.",
                        kind.word()
                    ),
                ),
                seconds,
            ));
        }
        level.tokens -= 1.0;
        Ok((kind.header(), format!("{}", level.remaining())))
    }

    /// The header and value reporting what remains of the bucket a request of this method
    /// draws on, without taking from it: 0 when it is empty, and the whole burst for a caller
    /// the emulator does not know (a refused token).
    pub(crate) fn remaining(
        &mut self,
        limits: &RateLimits,
        principal: Option<&str>,
        method: &Method,
        now: Instant,
    ) -> (&'static str, String) {
        let kind = Kind::of(method);
        let bucket = kind.bucket(limits);
        let tokens = match principal.and_then(|principal| self.levels.get_mut(&(principal.to_owned(), kind)))
        {
            Some(level) => {
                // An empty bucket only says how long to wait; what remains is still its level.
                let _ = level.refill(bucket, now);
                level.remaining()
            }
            None => f64::from(bucket.burst),
        };
        (kind.header(), format!("{tokens}"))
    }

    /// Takes a token from the subscription's and the machine's buckets of a virtual machine
    /// operation; on success the value of `x-ms-ratelimit-remaining-resource`, else the 429 to
    /// answer (Microsoft.Compute's `OperationNotAllowed`, naming each exhausted policy) with its
    /// `Retry-After` seconds. Nothing is taken when either bucket is empty.
    pub(crate) fn take_vm(
        &mut self,
        limits: &ComputeLimits,
        operation: VmOperation,
        subscription: &str,
        machine: &str,
        now: Instant,
        drawn: &mut Drawn,
    ) -> Result<String, (ArmError, u64)> {
        let policy = operation.policy(limits);
        let scopes = [
            (
                "SubscriptionMaximum",
                subscription.to_ascii_lowercase(),
                policy.subscription,
            ),
            ("Resource", machine.to_owned(), policy.resource),
        ];
        let mut exhausted = Vec::new();
        let mut retry_after = 0;
        for (suffix, key, bucket) in &scopes {
            let level = self
                .compute
                .entry((key.clone(), operation))
                .or_insert_with(|| Level::full(*bucket, now));
            let refill = level.refill(*bucket, now);
            drawn.draw(
                format!("Microsoft.Compute/{}{suffix}/{key}", operation.name()),
                refill.is_err(),
            );
            if let Err(seconds) = refill {
                retry_after = retry_after.max(seconds);
                exhausted.push(json!({
                    "code": "TooManyRequests",
                    "target": format!("{}{suffix}", operation.name()),
                    "message": json!({
                        "operationGroup": format!("{}{suffix}", operation.name()),
                        "startTime": crate::time::rfc3339(std::time::SystemTime::now()),
                        "endTime": crate::time::rfc3339(std::time::SystemTime::now() + Duration::from_secs(seconds)),
                        "allowedRequestCount": bucket.burst,
                        "measuredRequestCount": bucket.burst + 1,
                    }).to_string(),
                }));
            }
        }
        if !exhausted.is_empty() {
            let error = ArmError {
                details: Some(exhausted),
                ..ArmError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "OperationNotAllowed",
                    "The server rejected the request because too many requests have been received for this subscription.",
                )
            };
            return Err((error, retry_after));
        }
        let remaining: Vec<String> = scopes
            .iter()
            .filter_map(|(suffix, key, _)| {
                let level = self.compute.get_mut(&(key.clone(), operation))?;
                level.tokens -= 1.0;
                Some(format!(
                    "Microsoft.Compute/{}{suffix};{}",
                    operation.name(),
                    level.remaining()
                ))
            })
            .collect();
        Ok(remaining.join(","))
    }
}

impl Emulator {
    /// Takes Microsoft.Compute's allowance for a request that writes a virtual machine: `None`
    /// for other requests, else the `x-ms-ratelimit-remaining-resource` value or the 429.
    pub(crate) fn take_vm_allowance(
        &self,
        method: &Method,
        path: &str,
        drawn: &mut Drawn,
    ) -> Result<Option<String>, (ArmError, u64)> {
        let Some(ArmPath::Resource(id)) = ArmPath::parse(path) else {
            return Ok(None);
        };
        let Some(subscription) = id.subscription.clone() else {
            return Ok(None);
        };
        let now = self.now();
        let operation = {
            let state = self.state();
            VmOperation::of(method, &id, |key| state.resources.contains_key(key))
        };
        let Some((operation, machine)) = operation else {
            return Ok(None);
        };
        lock(&self.throttle)
            .take_vm(
                &self.config.rate_limits.compute,
                operation,
                &subscription,
                &machine,
                now,
                drawn,
            )
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use axum::http::Method;

    use super::{Bucket, ComputeLimits, Drawn, RateLimits, Throttle, VmOperation, VmPolicy};

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
        let scope = "subscription 's'";
        assert_eq!(
            throttle
                .take(&limits, "p", scope, &Method::PUT, start, &mut Drawn::default())
                .unwrap()
                .1,
            "1"
        );
        assert_eq!(
            throttle
                .take(&limits, "p", scope, &Method::PUT, start, &mut Drawn::default())
                .unwrap()
                .1,
            "0"
        );
        let (error, retry_after) = throttle
            .take(&limits, "p", scope, &Method::PUT, start, &mut Drawn::default())
            .unwrap_err();
        assert_eq!((error.status.as_u16(), retry_after), (429, 1));
        assert_eq!(error.code, "SubscriptionRequestsThrottled");
        assert!(
            error
                .message
                .starts_with("Number of 'write' requests for subscription 's' actor 'p' exceeded."),
            "{}",
            error.message
        );
        assert_eq!(
            throttle.remaining(&limits, Some("p"), &Method::PATCH, start),
            ("x-ms-ratelimit-remaining-subscription-writes", "0".to_owned())
        );
        assert_eq!(
            throttle.remaining(&limits, None, &Method::DELETE, start),
            ("x-ms-ratelimit-remaining-subscription-deletes", "200".to_owned())
        );
        // Another principal and another kind have their own buckets.
        assert!(
            throttle
                .take(&limits, "q", scope, &Method::PUT, start, &mut Drawn::default())
                .is_ok()
        );
        assert!(
            throttle
                .take(&limits, "p", scope, &Method::GET, start, &mut Drawn::default())
                .is_ok()
        );
        assert!(
            throttle
                .take(
                    &limits,
                    "p",
                    scope,
                    &Method::PUT,
                    start + Duration::from_secs(1),
                    &mut Drawn::default(),
                )
                .is_ok()
        );
    }

    #[test]
    fn machine_operations_are_told_apart() {
        use crate::path::ArmPath;

        let vm = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/m";
        let of = |method: &Method, path: &str, exists: bool| {
            let Some(ArmPath::Resource(id)) = ArmPath::parse(path) else {
                panic!("{path} is a resource path");
            };
            VmOperation::of(method, &id, |_| exists).map(|(operation, _)| operation)
        };
        assert_eq!(of(&Method::PUT, vm, false), Some(VmOperation::Put));
        assert_eq!(of(&Method::PUT, vm, true), Some(VmOperation::Update));
        assert_eq!(of(&Method::DELETE, vm, true), Some(VmOperation::Delete));
        assert_eq!(of(&Method::GET, vm, true), None);
        let extension = format!("{vm}/extensions/boot");
        assert_eq!(of(&Method::DELETE, &extension, true), Some(VmOperation::Update));
        let disk = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d";
        assert_eq!(of(&Method::PUT, disk, false), None);
    }

    #[test]
    fn each_request_names_the_buckets_it_drew_on_and_those_that_refused_it() {
        let one = Bucket {
            burst: 1,
            per_second: 0.5,
        };
        let limits = RateLimits {
            reads: one,
            compute: ComputeLimits {
                put_vm: VmPolicy {
                    subscription: Bucket {
                        burst: 10,
                        per_second: 1.0,
                    },
                    resource: one,
                },
                ..ComputeLimits::default()
            },
            ..RateLimits::default()
        };
        let mut throttle = Throttle::default();
        let start = Instant::now();
        let scope = "subscription 's'";
        let mut drawn = Drawn::default();
        assert!(
            throttle
                .take(&limits, "p", scope, &Method::GET, start, &mut drawn)
                .is_ok()
        );
        assert_eq!(
            drawn,
            Drawn {
                budgets: vec!["p/reads".to_owned()],
                empty: Vec::new(),
            }
        );
        let mut refused = Drawn::default();
        let (_, retry_after) = throttle
            .take(&limits, "p", scope, &Method::HEAD, start, &mut refused)
            .unwrap_err();
        assert_eq!(retry_after, 2);
        assert_eq!(refused.empty, ["p/reads"]);

        // A machine's create draws on the principal's writes, then on Microsoft.Compute's
        // buckets of the subscription and of the machine; the second create of the same machine
        // finds the machine's empty and only that one is named as refusing it.
        let machine = "/subscriptions/s/resourcegroups/g/providers/microsoft.compute/virtualmachines/m";
        let mut created = Drawn::default();
        let _ = throttle.take(&limits, "p", scope, &Method::PUT, start, &mut created);
        assert!(
            throttle
                .take_vm(
                    &limits.compute,
                    VmOperation::Put,
                    "S",
                    machine,
                    start,
                    &mut created
                )
                .is_ok()
        );
        assert_eq!(
            created.budgets,
            [
                "p/writes".to_owned(),
                "Microsoft.Compute/PutVMSubscriptionMaximum/s".to_owned(),
                format!("Microsoft.Compute/PutVMResource/{machine}"),
            ]
        );
        assert!(created.empty.is_empty());
        let mut again = Drawn::default();
        assert!(
            throttle
                .take_vm(&limits.compute, VmOperation::Put, "S", machine, start, &mut again)
                .is_err()
        );
        assert_eq!(again.budgets.len(), 2);
        assert_eq!(
            again.empty,
            [format!("Microsoft.Compute/PutVMResource/{machine}")]
        );
    }
}
