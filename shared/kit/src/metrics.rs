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
            Matcher::Full(ARM_REQUEST_DURATION_SECONDS.to_owned()),
            DURATION_BUCKETS,
        )?
        .set_buckets_for_metric(
            Matcher::Full(ADMISSION_DURATION_SECONDS.to_owned()),
            ADMISSION_BUCKETS,
        )?
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
    describe_gauge!(
        LRO_IN_FLIGHT,
        Unit::Count,
        "Azure long-running operations being followed, by controller and service."
    );
}

/// Measures one reconcile: created when it starts, it counts the reconcile in flight; dropped when
/// it ends (also by an early return or a panic), it records the duration and the count.
#[derive(Debug)]
#[must_use = "the reconcile is measured until the timer is dropped"]
pub struct ReconcileTimer {
    controller: &'static str,
    kind: &'static str,
    started: Instant,
}

impl ReconcileTimer {
    /// Starts measuring a reconcile of `kind` by `controller`.
    pub fn start(controller: &'static str, kind: &'static str) -> Self {
        gauge!(RECONCILES_IN_FLIGHT, "controller" => controller, "kind" => kind).increment(1.0);
        Self {
            controller,
            kind,
            started: Instant::now(),
        }
    }

    /// Counts this reconcile as failed with an error of `category` (such as `transient`).
    pub fn failed(&self, category: &'static str) {
        counter!(
            RECONCILE_ERRORS_TOTAL,
            "controller" => self.controller,
            "kind" => self.kind,
            "category" => category,
        )
        .increment(1);
    }
}

impl Drop for ReconcileTimer {
    fn drop(&mut self) {
        let (controller, kind) = (self.controller, self.kind);
        histogram!(RECONCILE_DURATION_SECONDS, "controller" => controller, "kind" => kind)
            .record(self.started.elapsed());
        counter!(RECONCILE_TOTAL, "controller" => controller, "kind" => kind).increment(1);
        gauge!(RECONCILES_IN_FLIGHT, "controller" => controller, "kind" => kind).decrement(1.0);
    }
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
    use super::{ReconcileTimer, install, lro_finished, lro_started};

    /// The lines of a rendering that describe `name`, without its help and type lines.
    fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines().filter(|line| line.starts_with(name)).collect()
    }

    #[test]
    fn reconciles_render_with_their_bounded_labels() {
        let handle = install().unwrap();
        assert!(install().is_ok(), "installing again returns the same handle");
        {
            let timer = ReconcileTimer::start("metrics-test", "AzureCluster");
            let rendered = handle.render();
            assert!(
                rendered.contains(
                    r#"capz_reconciles_in_flight{controller="metrics-test",kind="AzureCluster"} 1"#
                ),
                "{rendered}"
            );
            timer.failed("transient");
        }
        drop(ReconcileTimer::start("metrics-test", "AzureCluster"));
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
}
