//! The probe and metrics endpoints, over plain HTTP:
//!
//! - `/healthz` answers 200 while the process serves at all (the liveness probe);
//! - `/readyz` answers 200 once the API server has answered and the kind of each running
//!   controller could be listed in its scope (its CRD is served, RBAC allows it), else 503 saying
//!   what it waits for (the readiness probe). A replica waiting for leadership runs no
//!   controllers, so it is ready once connected. (kube-runtime's `Store::wait_until_ready`
//!   would say when a controller's cache is filled, but it wakes only one waiter, and the
//!   controller itself already waits on it: a second waiter could stall the controller.)
//! - `/metrics` renders every metric in Prometheus' text format.
//!
//! The probes and the metrics listen on separate addresses (`--health-probe-bind-address`,
//! `--metrics-bind-address`), or share one when both name the same. CAPZ's diagnostics endpoint
//! (`--diagnostics-address`) serves `/metrics` once more, over HTTPS by default
//! ([`crate::diagnostics`]).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use kube::Api;
use kube::api::ListParams;
use kube::runtime::watcher;
use metrics_exporter_prometheus::PrometheusHandle;
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::cli::{BindAddress, Diagnostics, Tls};
use crate::diagnostics::DiagnosticsError;

/// How often histogram samples are folded into buckets when nobody scrapes.
const UPKEEP_PERIOD: Duration = Duration::from_secs(5);
/// How long to wait before listing a kind again after a failure.
const LIST_RETRY: Duration = Duration::from_secs(5);

/// What `/readyz` reports. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct Readiness(Arc<ReadinessState>);

#[derive(Debug, Default)]
struct ReadinessState {
    connected: AtomicBool,
    watches_pending: AtomicUsize,
}

impl Readiness {
    /// What readiness still waits for.
    fn waiting_for(&self) -> Option<String> {
        if !self.0.connected.load(Ordering::Acquire) {
            return Some("the Kubernetes API server has not answered yet".to_owned());
        }
        match self.0.watches_pending.load(Ordering::Acquire) {
            0 => None,
            pending => Some(format!("{pending} watched kind(s) could not be listed yet")),
        }
    }

    /// Records that the API server answered: what `/readyz` waits for besides the watched kinds.
    /// The runner calls it; a server without controllers (the webhook server) calls it once it
    /// serves and the API server has answered.
    pub fn connected(&self) {
        self.0.connected.store(true, Ordering::Release);
    }

    /// Holds readiness back until objects of `api`'s kind can be listed with `config`'s
    /// selectors, retrying until `stop` is cancelled.
    pub(crate) fn wait_for_list<K>(&self, api: Api<K>, config: &watcher::Config, stop: CancellationToken)
    where
        K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        self.0.watches_pending.fetch_add(1, Ordering::AcqRel);
        let state = self.0.clone();
        let mut params = ListParams::default().limit(1);
        params.label_selector.clone_from(&config.label_selector);
        params.field_selector.clone_from(&config.field_selector);
        tokio::spawn(async move {
            loop {
                match api.list_metadata(&params).await {
                    Ok(_) => {
                        state.watches_pending.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                    Err(err) => tracing::warn!(error = %err, "cannot list a watched kind; not ready"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(LIST_RETRY) => {}
                }
            }
        });
    }
}

/// The running servers.
#[derive(Debug)]
pub struct Servers {
    health: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
    diagnostics: Option<SocketAddr>,
    tasks: JoinSet<io::Result<()>>,
}

impl Servers {
    /// Binds the addresses and starts serving; the servers stop when `stop` is cancelled.
    ///
    /// # Errors
    /// When an address cannot be bound.
    pub async fn start(
        health: &BindAddress,
        metrics: &BindAddress,
        readiness: Readiness,
        prometheus: PrometheusHandle,
        stop: CancellationToken,
    ) -> io::Result<Self> {
        let probes = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(ready))
            .with_state(readiness);
        let metrics_routes = Router::new()
            .route("/metrics", get(render))
            .with_state(prometheus.clone());
        let mut servers = Self {
            health: None,
            metrics: None,
            diagnostics: None,
            tasks: JoinSet::new(),
        };
        match (health, metrics) {
            // Port 0 asks for any free port, so two of them are two listeners.
            (BindAddress::Address(health), BindAddress::Address(metrics))
                if health == metrics && !health.ends_with(":0") =>
            {
                let address = servers.serve(health, probes.merge(metrics_routes), &stop).await?;
                servers.health = Some(address);
                servers.metrics = Some(address);
            }
            _ => {
                if let BindAddress::Address(address) = health {
                    servers.health = Some(servers.serve(address, probes, &stop).await?);
                }
                if let BindAddress::Address(address) = metrics {
                    servers.metrics = Some(servers.serve(address, metrics_routes, &stop).await?);
                }
            }
        }
        if servers.metrics.is_some() {
            let stop = stop.clone();
            servers.tasks.spawn(async move {
                let mut upkeep = tokio::time::interval(UPKEEP_PERIOD);
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return Ok(()),
                        _ = upkeep.tick() => prometheus.run_upkeep(),
                    }
                }
            });
        }
        Ok(servers)
    }

    /// Serves `/metrics` at CAPZ's diagnostics address too, when `flags` name one, until `stop`:
    /// over HTTPS with `tls`, to callers the API server of `client` vouches for, or with
    /// `--insecure-diagnostics` over plain HTTP.
    ///
    /// # Errors
    /// When the certificate cannot be made or the address cannot be bound.
    pub async fn serve_diagnostics(
        &mut self,
        flags: &Diagnostics,
        tls: &Tls,
        client: kube::Client,
        prometheus: PrometheusHandle,
        stop: &CancellationToken,
    ) -> Result<(), DiagnosticsError> {
        let Some(BindAddress::Address(address)) = &flags.diagnostics_address else {
            return Ok(());
        };
        let metrics = Router::new()
            .route("/metrics", get(render))
            .with_state(prometheus);
        let bound = if flags.insecure_diagnostics {
            self.serve(address, metrics, stop).await?
        } else {
            let acceptor = crate::diagnostics::acceptor(tls)?;
            let listener = bind(address).await?;
            let bound = listener.local_addr()?;
            let router = crate::diagnostics::authorized(metrics, client);
            let stop = stop.clone();
            self.tasks.spawn(async move {
                crate::https::serve(listener, acceptor, router, stop).await;
                Ok(())
            });
            bound
        };
        self.diagnostics = Some(bound);
        Ok(())
    }

    async fn serve(
        &mut self,
        address: &str,
        router: Router,
        stop: &CancellationToken,
    ) -> io::Result<SocketAddr> {
        let listener = bind(address).await?;
        let bound = listener.local_addr()?;
        let stop = stop.clone();
        self.tasks.spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await
        });
        Ok(bound)
    }

    /// Where the diagnostics endpoint is served, if it is.
    #[must_use]
    pub fn diagnostics_address(&self) -> Option<SocketAddr> {
        self.diagnostics
    }

    /// Where `/healthz` and `/readyz` are served, if they are.
    #[must_use]
    pub fn health_address(&self) -> Option<SocketAddr> {
        self.health
    }

    /// Where `/metrics` is served, if it is.
    #[must_use]
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// Waits until every server has stopped (after `stop` was cancelled).
    ///
    /// # Errors
    /// The first error a server stopped with.
    pub async fn wait(mut self) -> io::Result<()> {
        while let Some(joined) = self.tasks.join_next().await {
            joined.map_err(io::Error::other)??;
        }
        Ok(())
    }
}

async fn bind(address: &str) -> io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|err| io::Error::new(err.kind(), format!("cannot listen on {address}: {err}")))
}

async fn ready(State(readiness): State<Readiness>) -> impl IntoResponse {
    match readiness.waiting_for() {
        None => (StatusCode::OK, "ok".to_owned()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {reason}")),
    }
}

async fn render(State(prometheus): State<PrometheusHandle>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        prometheus.render() + &crate::queue::render() + &crate::metrics::process_metrics(),
    )
}

#[cfg(test)]
mod tests {
    use capz_harness::http_get as get;
    use tokio_util::sync::CancellationToken;

    use super::{Readiness, Servers};
    use crate::cli::BindAddress;

    fn local(port: u16) -> BindAddress {
        BindAddress::Address(format!("127.0.0.1:{port}"))
    }

    #[tokio::test]
    async fn probes_and_metrics_answer_on_their_addresses() {
        let prometheus = crate::metrics::install().unwrap();
        drop(crate::metrics::ReconcileTimer::start(
            "server-test",
            "ConfigMap",
            "configmap",
        ));
        let readiness = Readiness::default();
        let stop = CancellationToken::new();
        let servers = Servers::start(&local(0), &local(0), readiness.clone(), prometheus, stop.clone())
            .await
            .unwrap();
        let health = servers.health_address().unwrap();
        let metrics = servers.metrics_address().unwrap();
        assert_ne!(health.port(), 0);
        assert_ne!(health, metrics, "port 0 twice is two listeners");

        assert_eq!(get(health, "/healthz").await.unwrap(), (200, "ok".into()));
        let (status, body) = get(health, "/readyz").await.unwrap();
        assert_eq!(status, 503);
        assert!(body.contains("API server"), "{body}");
        readiness.connected();
        assert_eq!(get(health, "/readyz").await.unwrap(), (200, "ok".into()));
        assert_eq!(get(health, "/metrics").await.unwrap().0, 404);

        let (status, body) = get(metrics, "/metrics").await.unwrap();
        assert_eq!(status, 200);
        assert!(
            body.contains(r#"capz_reconcile_total{controller="server-test",kind="ConfigMap"} 1"#),
            "{body}"
        );
        assert_eq!(get(metrics, "/healthz").await.unwrap().0, 404);

        stop.cancel();
        servers.wait().await.unwrap();
        assert!(
            get(health, "/healthz").await.is_err(),
            "stopped servers refuse connections"
        );
    }

    #[tokio::test]
    async fn one_address_serves_everything_and_zero_serves_nothing() {
        let prometheus = crate::metrics::install().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let readiness = Readiness::default();
        readiness.connected();
        let stop = CancellationToken::new();
        let servers = Servers::start(
            &local(port),
            &local(port),
            readiness,
            prometheus.clone(),
            stop.clone(),
        )
        .await
        .unwrap();
        let address = servers.health_address().unwrap();
        assert_eq!(servers.metrics_address(), Some(address));
        assert_eq!(get(address, "/readyz").await.unwrap().0, 200);
        assert_eq!(get(address, "/metrics").await.unwrap().0, 200);
        stop.cancel();
        servers.wait().await.unwrap();

        let stop = CancellationToken::new();
        let none = Servers::start(
            &BindAddress::Disabled,
            &BindAddress::Disabled,
            Readiness::default(),
            prometheus,
            stop.clone(),
        )
        .await
        .unwrap();
        assert_eq!((none.health_address(), none.metrics_address()), (None, None));
        stop.cancel();
        none.wait().await.unwrap();
    }
}
