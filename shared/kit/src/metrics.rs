//! The Prometheus metrics of a controller, defined once with bounded labels.
//!
//! | Metric | Type | Labels |
//! |---|---|---|
//! | `capz_reconcile_total` | counter | `controller`, `kind` |
//! | `capz_reconcile_errors_total` | counter | `controller`, `kind`, `category` |
//! | `capz_reconcile_duration_seconds` | histogram | `controller`, `kind` |
//! | `capz_reconciles_in_flight` | gauge | `controller`, `kind` |
//! | `capz_lro_in_flight` | gauge | `controller`, `service` |
//! | `capz_arm_requests_total` | counter | `operation`, `resource_type`, `status_class` |
//! | `capz_arm_request_duration_seconds` | histogram | `operation`, `resource_type` |
//! | `capz_arm_ratelimit_remaining` | gauge | `kind` |
//! | `capz_token_refreshes_total` | counter | `credential_type`, `outcome` |
//! | `capz_admission_requests_total` | counter | `kind`, `webhook`, `operation`, `result` |
//! | `capz_admission_duration_seconds` | histogram | `kind`, `webhook` |
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` |
//! | `controller_runtime_reconcile_time_seconds` | histogram | `controller` |
//! | `controller_runtime_active_workers` | gauge | `controller` |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` |
//! | `leader_election_master_status` | gauge | `name` |
//! | `workqueue_adds_total`, `workqueue_retries_total` | counter | `name` |
//! | `workqueue_depth` | gauge | `name` |
//! | `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds` | histogram | `name` |
//! | `process_resident_memory_bytes`, `process_cpu_seconds_total`, `process_open_fds`, `process_max_fds`, `process_start_time_seconds` | | |
//!
//! The `controller_runtime_*` and `leader_election_master_status` series carry the names and
//! labels of Go's controller-runtime, which Cluster API dashboards and alerts are written
//! against: `controller` is the reconciled kind in lower case (`azurecluster`), `result` one of
//! `success`, `error`, `requeue_after`, and `name` the Lease. The `workqueue_*` series are those
//! of [`crate::queue`], `name` being the same label as `controller`. The `process_*` series are
//! read from `/proc` when `/metrics` is scraped.
//!
//! The ARM and token metrics are recorded by capz-azure ([`capz_azure::metrics`]), the admission
//! metrics by the webhook server (`webhook` is `mutate` or `validate`, `result` is `allowed`,
//! `denied` or `error`); this module
//! installs the recorder that receives all of them and renders them for `/metrics`. The labels
//! recorded here take `&'static str`: a controller's name, a kind, an error category, a service
//! name — never an object's name or an error's text, which would make every object a new series.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

pub use capz_azure::metrics::{
    ARM_RATELIMIT_REMAINING, ARM_REQUEST_DURATION_SECONDS, ARM_REQUESTS_TOTAL, TOKEN_REFRESHES_TOTAL,
};

/// Reconciles finished, by controller and kind.
pub const RECONCILE_TOTAL: &str = "capz_reconcile_total";
/// Reconciles that failed, by controller, kind and error category.
pub const RECONCILE_ERRORS_TOTAL: &str = "capz_reconcile_errors_total";
/// How long reconciles took, by controller and kind.
pub const RECONCILE_DURATION_SECONDS: &str = "capz_reconcile_duration_seconds";
/// Reconciles running now, by controller and kind.
pub const RECONCILES_IN_FLIGHT: &str = "capz_reconciles_in_flight";
/// Azure long-running operations this process is following, by controller and service.
pub const LRO_IN_FLIGHT: &str = "capz_lro_in_flight";

/// controller-runtime's count of reconciles, by controller and result.
pub const CR_RECONCILE_TOTAL: &str = "controller_runtime_reconcile_total";
/// controller-runtime's count of failed reconciles, by controller.
pub const CR_RECONCILE_ERRORS_TOTAL: &str = "controller_runtime_reconcile_errors_total";
/// controller-runtime's reconcile durations, by controller.
pub const CR_RECONCILE_TIME_SECONDS: &str = "controller_runtime_reconcile_time_seconds";
/// controller-runtime's count of reconciles running now, by controller.
pub const CR_ACTIVE_WORKERS: &str = "controller_runtime_active_workers";
/// controller-runtime's limit of reconciles at a time, by controller.
pub const CR_MAX_CONCURRENT_RECONCILES: &str = "controller_runtime_max_concurrent_reconciles";
/// 1 while this replica holds the leader-election Lease `name`, else 0.
pub const LEADER_ELECTION_MASTER_STATUS: &str = "leader_election_master_status";

/// client-go's work queue: triggers and requeues, by controller ([`crate::queue`]).
pub const ADDS_TOTAL: &str = "workqueue_adds_total";
/// Objects waiting for their reconcile, by controller.
pub const DEPTH: &str = "workqueue_depth";
/// How long objects waited for their reconcile, by controller.
pub const QUEUE_DURATION_SECONDS: &str = "workqueue_queue_duration_seconds";
/// How long reconciles took, by controller.
pub const WORK_DURATION_SECONDS: &str = "workqueue_work_duration_seconds";
/// Failed reconciles queued again, by controller.
pub const RETRIES_TOTAL: &str = "workqueue_retries_total";

/// Admission reviews answered, by kind, webhook (`mutate` or `validate`), operation and result
/// (`allowed`, `denied`, `error`).
pub const ADMISSION_REQUESTS_TOTAL: &str = "capz_admission_requests_total";
/// How long answering an admission review took, by kind and webhook.
pub const ADMISSION_DURATION_SECONDS: &str = "capz_admission_duration_seconds";

/// Histogram buckets in seconds of an admission review: in-memory work, or one or two reads
/// from the API server for a machine's cluster.
const ADMISSION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
];

/// Histogram buckets in seconds, from a fast cached read to a slow Azure write.
const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Installs the process-wide Prometheus recorder, once; later calls return the same handle.
///
/// # Errors
/// When another recorder was installed first.
pub fn install() -> Result<PrometheusHandle, BuildError> {
    static INSTALLED: Mutex<Option<PrometheusHandle>> = Mutex::new(None);
    // The lock only guards an Option that is written whole, so a poisoned lock is still sound.
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(handle) = installed.as_ref() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(RECONCILE_DURATION_SECONDS.to_owned()),
            DURATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(CR_RECONCILE_TIME_SECONDS.to_owned()),
            DURATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(ARM_REQUEST_DURATION_SECONDS.to_owned()),
            DURATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(ADMISSION_DURATION_SECONDS.to_owned()),
            ADMISSION_BUCKETS,
        )?
        .set_buckets_for_metric(Matcher::Full(QUEUE_DURATION_SECONDS.to_owned()), DURATION_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(WORK_DURATION_SECONDS.to_owned()), DURATION_BUCKETS)?
        .install_recorder()?;
    describe();
    capz_azure::metrics::describe();
    *installed = Some(handle.clone());
    Ok(handle)
}

fn describe() {
    describe_counter!(
        RECONCILE_TOTAL,
        Unit::Count,
        "Reconciles finished, by controller and kind."
    );
    describe_counter!(
        RECONCILE_ERRORS_TOTAL,
        Unit::Count,
        "Reconciles that failed, by controller, kind and error category."
    );
    describe_histogram!(
        RECONCILE_DURATION_SECONDS,
        Unit::Seconds,
        "How long reconciles took, by controller and kind."
    );
    describe_gauge!(
        RECONCILES_IN_FLIGHT,
        Unit::Count,
        "Reconciles running now, by controller and kind."
    );
    describe_counter!(
        ADMISSION_REQUESTS_TOTAL,
        Unit::Count,
        "Admission reviews answered, by kind, webhook, operation and result."
    );
    describe_histogram!(
        ADMISSION_DURATION_SECONDS,
        Unit::Seconds,
        "How long answering an admission review took, by kind and webhook."
    );
    describe_counter!(
        CR_RECONCILE_TOTAL,
        Unit::Count,
        "Total number of reconciliations per controller."
    );
    describe_counter!(
        CR_RECONCILE_ERRORS_TOTAL,
        Unit::Count,
        "Total number of reconciliation errors per controller."
    );
    describe_histogram!(
        CR_RECONCILE_TIME_SECONDS,
        Unit::Seconds,
        "Length of time per reconciliation per controller."
    );
    describe_gauge!(
        CR_ACTIVE_WORKERS,
        Unit::Count,
        "Number of currently used workers per controller."
    );
    describe_gauge!(
        CR_MAX_CONCURRENT_RECONCILES,
        Unit::Count,
        "Maximum number of concurrent reconciles per controller."
    );
    describe_gauge!(
        LEADER_ELECTION_MASTER_STATUS,
        Unit::Count,
        "1 while this replica leads through the named Lease, else 0."
    );
    describe_gauge!(
        LRO_IN_FLIGHT,
        Unit::Count,
        "Azure long-running operations being followed, by controller and service."
    );
}

/// How a reconcile ended, as controller-runtime labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Done until something changes.
    Success,
    /// Done for now, to be looked at again after a wait.
    RequeueAfter,
    /// Failed.
    Error,
}

impl ReconcileResult {
    /// The result of a reconcile that returned `action`.
    #[must_use]
    pub fn of(action: &kube::runtime::controller::Action) -> Self {
        if *action == kube::runtime::controller::Action::await_change() {
            Self::Success
        } else {
            Self::RequeueAfter
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::RequeueAfter => "requeue_after",
            Self::Error => "error",
        }
    }
}

/// Measures one reconcile: created when it starts, it counts the reconcile in flight; dropped when
/// it ends (also by an early return or a panic), it records the duration and the count, under
/// capz-rs's names (`controller`, `kind`) and controller-runtime's (`label`, the kind in lower
/// case).
#[derive(Debug)]
#[must_use = "the reconcile is measured until the timer is dropped"]
pub struct ReconcileTimer {
    controller: &'static str,
    kind: &'static str,
    label: &'static str,
    result: ReconcileResult,
    started: Instant,
}

impl ReconcileTimer {
    /// Starts measuring a reconcile of `kind` by `controller`; `label` names the kind's
    /// controller in controller-runtime's series ([`controller_label`]).
    pub fn start(controller: &'static str, kind: &'static str, label: &'static str) -> Self {
        gauge!(RECONCILES_IN_FLIGHT, "controller" => controller, "kind" => kind).increment(1.0);
        Self {
            controller,
            kind,
            label,
            // Until it says otherwise: a reconcile dropped half-way did not succeed.
            result: ReconcileResult::Error,
            started: Instant::now(),
        }
    }

    /// Counts this reconcile as ended with `result`.
    pub fn finished(mut self, result: ReconcileResult) {
        self.result = result;
    }

    /// Counts this reconcile as failed with an error of `category` (such as `transient`).
    pub fn failed(self, category: &'static str) {
        counter!(
            RECONCILE_ERRORS_TOTAL,
            "controller" => self.controller,
            "kind" => self.kind,
            "category" => category,
        )
        .increment(1);
        counter!(CR_RECONCILE_ERRORS_TOTAL, "controller" => self.label).increment(1);
    }
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        let (controller, kind, label) = (self.controller, self.kind, self.label);
        let elapsed = self.started.elapsed();
        histogram!(RECONCILE_DURATION_SECONDS, "controller" => controller, "kind" => kind).record(elapsed);
        counter!(RECONCILE_TOTAL, "controller" => controller, "kind" => kind).increment(1);
        gauge!(RECONCILES_IN_FLIGHT, "controller" => controller, "kind" => kind).decrement(1.0);
        histogram!(CR_RECONCILE_TIME_SECONDS, "controller" => label).record(elapsed);
        counter!(CR_RECONCILE_TOTAL, "controller" => label, "result" => self.result.as_str()).increment(1);
    }
}

/// Counts a worker busy with a reconcile of the controller `label` while it lives
/// (`controller_runtime_active_workers`).
#[derive(Debug)]
#[must_use = "the worker counts as busy until it is dropped"]
pub struct Worker(&'static str);

impl Worker {
    /// A worker of the controller `label` starts.
    pub fn start(label: &'static str) -> Self {
        gauge!(CR_ACTIVE_WORKERS, "controller" => label).increment(1.0);
        Self(label)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        gauge!(CR_ACTIVE_WORKERS, "controller" => self.0).decrement(1.0);
    }
}

/// Starts the series of the controller `label`, which runs `concurrency` reconciles at a time:
/// present from the start, as controller-runtime's are, so that dashboards see zero, not nothing.
pub fn controller_started(label: &'static str, concurrency: u16) {
    gauge!(CR_MAX_CONCURRENT_RECONCILES, "controller" => label).set(f64::from(concurrency));
    gauge!(CR_ACTIVE_WORKERS, "controller" => label).increment(0.0);
    counter!(CR_RECONCILE_ERRORS_TOTAL, "controller" => label).increment(0);
    for result in [
        ReconcileResult::Success,
        ReconcileResult::RequeueAfter,
        ReconcileResult::Error,
    ] {
        counter!(CR_RECONCILE_TOTAL, "controller" => label, "result" => result.as_str()).increment(0);
    }
}

/// Records whether this replica leads through the Lease `name`.
pub fn leader(name: &str, held: bool) {
    gauge!(LEADER_ELECTION_MASTER_STATUS, "name" => name.to_owned()).set(if held { 1.0 } else { 0.0 });
}

/// The `controller` label of a kind in controller-runtime's series: the kind in lower case.
#[must_use]
pub fn controller_label(kind: &str) -> &'static str {
    intern(kind.to_ascii_lowercase())
}

/// A kind's name for as long as the process runs.
#[must_use]
pub fn static_kind(kind: &str) -> &'static str {
    intern(kind.to_owned())
}

/// One leaked copy per distinct text: labels are `&'static str`, and the kinds a process
/// reconciles are few.
fn intern(text: String) -> &'static str {
    static TEXTS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = texts.iter().find(|known| **known == text) {
        return known;
    }
    let leaked: &'static str = Box::leak(text.into_boxed_str());
    texts.push(leaked);
    leaked
}

/// The process's own figures in Prometheus' text format, read from `/proc` (nothing off Linux):
/// resident memory, CPU time, open and allowed file descriptors, and start time.
#[must_use]
pub fn process_metrics() -> String {
    use std::fmt::Write as _;

    // /proc reports times in clock ticks of USER_HZ, which Linux fixes at 100 for user space.
    const TICKS_PER_SECOND: f64 = 100.0;
    let mut out = String::new();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |index: usize| fields.get(index).and_then(|value| value.parse::<u64>().ok());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    if let (Some(user), Some(system)) = (field(11), field(12)) {
        #[expect(clippy::cast_precision_loss, reason = "CPU ticks stay far below 2^52")]
        let seconds = (user + system) as f64 / TICKS_PER_SECOND;
        let _ = writeln!(
            out,
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n\
             # TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {seconds}"
        );
    }
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("btime "))
            .and_then(|value| value.trim().parse::<u64>().ok())
    });
    if let (Some(boot), Some(started)) = (boot, field(19)) {
        #[expect(
            clippy::cast_precision_loss,
            reason = "seconds since 1970 stay far below 2^52"
        )]
        let since_epoch = boot as f64 + started as f64 / TICKS_PER_SECOND;
        let _ = writeln!(
            out,
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n\
             # TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {since_epoch}"
        );
    }
    let resident = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
    if let Some(kib) = resident {
        let _ = writeln!(
            out,
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n\
             # TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}",
            kib * 1024
        );
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        let _ = writeln!(
            out,
            "# HELP process_open_fds Number of open file descriptors.\n\
             # TYPE process_open_fds gauge\nprocess_open_fds {}",
            entries.count()
        );
    }
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(3))
                .and_then(|soft| soft.parse::<u64>().ok())
        });
    if let Some(max) = max_fds {
        let _ = writeln!(
            out,
            "# HELP process_max_fds Maximum number of open file descriptors.\n\
             # TYPE process_max_fds gauge\nprocess_max_fds {max}"
        );
    }
    out
}

/// Counts a long-running operation of `service` (such as `virtualnetworks`) that `controller`
/// starts following: one it started, or one it resumed from status after a restart.
pub fn lro_started(controller: &'static str, service: &'static str) {
    gauge!(LRO_IN_FLIGHT, "controller" => controller, "service" => service).increment(1.0);
}

/// Counts a long-running operation counted by [`lro_started`] as no longer followed: it ended,
/// or its state was dropped.
pub fn lro_finished(controller: &'static str, service: &'static str) {
    gauge!(LRO_IN_FLIGHT, "controller" => controller, "service" => service).decrement(1.0);
}

#[cfg(test)]
mod tests {
    use super::{ReconcileResult, ReconcileTimer, install, lro_finished, lro_started, process_metrics};

    /// The lines of a rendering that describe `name`, without its help and type lines.
    fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines().filter(|line| line.starts_with(name)).collect()
    }

    #[test]
    fn reconciles_render_with_their_bounded_labels() {
        let handle = install().unwrap();
        assert!(install().is_ok(), "installing again returns the same handle");
        {
            let timer = ReconcileTimer::start("metrics-test", "AzureCluster", "azurecluster");
            let rendered = handle.render();
            assert!(
                rendered.contains(
                    r#"capz_reconciles_in_flight{controller="metrics-test",kind="AzureCluster"} 1"#
                ),
                "{rendered}"
            );
            timer.failed("transient");
        }
        ReconcileTimer::start("metrics-test", "AzureCluster", "azurecluster")
            .finished(ReconcileResult::Success);
        lro_started("metrics-test", "virtualnetworks");
        lro_started("metrics-test", "virtualnetworks");
        lro_finished("metrics-test", "virtualnetworks");

        let rendered = handle.render();
        for expected in [
            "# TYPE capz_reconcile_total counter",
            r#"capz_reconcile_total{controller="metrics-test",kind="AzureCluster"} 2"#,
            r#"capz_reconcile_errors_total{controller="metrics-test",kind="AzureCluster",category="transient"} 1"#,
            r#"capz_reconciles_in_flight{controller="metrics-test",kind="AzureCluster"} 0"#,
            "# TYPE capz_reconcile_duration_seconds histogram",
            r#"capz_reconcile_duration_seconds_bucket{controller="metrics-test",kind="AzureCluster",le="0.005"} 2"#,
            r#"capz_reconcile_duration_seconds_count{controller="metrics-test",kind="AzureCluster"} 2"#,
            r#"capz_lro_in_flight{controller="metrics-test",service="virtualnetworks"} 1"#,
            r#"controller_runtime_reconcile_total{controller="azurecluster",result="error"} 1"#,
            r#"controller_runtime_reconcile_total{controller="azurecluster",result="success"} 1"#,
            r#"controller_runtime_reconcile_errors_total{controller="azurecluster"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="azurecluster"} 2"#,
        ] {
            assert!(rendered.contains(expected), "{expected} is not in\n{rendered}");
        }
        // Every series carries only its declared labels.
        for line in samples(&rendered, "capz_reconcile_total")
            .into_iter()
            .chain(samples(&rendered, "capz_reconciles_in_flight"))
        {
            assert!(line.contains(r#"{controller=""#), "{line}");
            assert_eq!(line.matches('=').count(), 2, "{line}");
        }
    }

    #[test]
    fn the_process_reports_its_memory_cpu_and_descriptors() {
        let text = process_metrics();
        for name in [
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
        ] {
            let value: f64 = text
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{name} ")))
                .unwrap_or_else(|| panic!("{name} is not in\n{text}"))
                .parse()
                .unwrap();
            assert!(value >= 0.0, "{name} {value}");
        }
        let resident = text
            .lines()
            .find_map(|line| line.strip_prefix("process_resident_memory_bytes "))
            .unwrap();
        assert!(resident.parse::<f64>().unwrap() > 1_000_000.0, "{resident}");
    }
}
