//! The HTTPS server: one `POST` route per path of the route table, over TLS (rustls with ring)
//! with the reloading certificate of [`crate::tls`], HTTP/1.1, served by the kit's
//! [`capz_kit::https`]: on [`Server::stop`] the listener closes, connections finish the request
//! they are answering, and after [`DRAIN_TIMEOUT`] whatever is left is dropped.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use capz_kit::cli::Tls;
use capz_kit::https;
use capz_kit::metrics::{ADMISSION_DURATION_SECONDS, ADMISSION_REQUESTS_TOTAL};
use capz_rules::Features;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::hook::Hook;
use crate::review::Admission;
use crate::routes::{Handler, Routes};
use crate::tls::{CertificateError, ReloadingCertificate};

/// The largest request body read: an AdmissionReview holds the object and, on update, its old
/// version, each up to the API server's own limit of about 1.5 MiB.
const BODY_LIMIT: usize = 8 * 1024 * 1024;
pub use capz_kit::https::DRAIN_TIMEOUT;
/// How often the certificate files are checked without traffic.
const RELOAD_PERIOD: Duration = Duration::from_secs(10);

/// What a server serves, where, and with what.
#[derive(Clone)]
pub struct Config {
    /// Where to listen, such as `0.0.0.0:9443`; port 0 picks a free port.
    pub address: SocketAddr,
    /// The directory holding `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
    /// The feature gates the rules consult.
    pub features: Features,
    /// The lowest TLS version and the TLS 1.2 cipher suites accepted.
    pub tls: Tls,
    /// A client for what defaulting looks up; without one, lookups find nothing.
    pub client: Option<kube::Client>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("address", &self.address)
            .field("cert_dir", &self.cert_dir)
            .field("features", &self.features)
            .field("tls", &self.tls)
            .field("client", &self.client.is_some())
            .finish()
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The certificate could not be loaded.
    #[error("cannot load the serving certificate: {0}")]
    Certificate(#[from] CertificateError),
    /// The TLS settings were refused.
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

/// A running webhook server.
#[derive(Debug)]
pub struct Server {
    address: SocketAddr,
    admission: Arc<Admission>,
    certificate: Arc<ReloadingCertificate>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Server {
    /// Loads the certificate, binds the address and starts serving `routes` on the current
    /// runtime.
    ///
    /// # Errors
    /// See [`StartError`].
    pub async fn start(config: Config, routes: &Routes) -> Result<Self, StartError> {
        let (provider, unavailable) = config.tls.provider();
        if !unavailable.is_empty() {
            tracing::warn!(suites = ?unavailable, "cipher suites rustls does not implement are not offered");
        }
        let provider = Arc::new(provider);
        let certificate = Arc::new(ReloadingCertificate::load(&config.cert_dir, provider.clone())?);
        let acceptor = TlsAcceptor::from(Arc::new(tls_config(provider, &config.tls, certificate.clone())?));
        let listener = TcpListener::bind(config.address)
            .await
            .map_err(|source| StartError::Listen {
                address: config.address,
                source,
            })?;
        let address = listener.local_addr().map_err(|source| StartError::Listen {
            address: config.address,
            source,
        })?;
        let admission = Arc::new(Admission::new(config.features, config.client));
        let app = router(routes, admission.clone());
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let (certificate, stop) = (certificate.clone(), stop.clone());
            async move {
                tokio::join!(
                    https::serve(listener, acceptor, app, stop.clone()),
                    reload_until(certificate, stop)
                );
            }
        });
        Ok(Self {
            address,
            admission,
            certificate,
            stop,
            task: Some(task),
        })
    }

    /// The address served.
    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// How many reviews `hook` has answered, whatever the answer.
    #[must_use]
    pub fn answered(&self, hook: Hook) -> u64 {
        self.admission.answered(hook)
    }

    /// The serving certificate.
    #[must_use]
    pub fn certificate(&self) -> &Arc<ReloadingCertificate> {
        &self.certificate
    }

    /// Stops accepting connections and lets those open finish; [`Self::shutdown`] waits for them.
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Stops (if not told already) and waits until every connection has ended.
    pub async fn shutdown(mut self) {
        self.stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The TLS settings: ring with the given suites, the given lowest version, the reloading
/// certificate, HTTP/1.1.
fn tls_config(
    provider: Arc<CryptoProvider>,
    tls: &Tls,
    certificate: Arc<ReloadingCertificate>,
) -> Result<ServerConfig, rustls::Error> {
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(tls.versions())?
        .with_no_client_auth()
        .with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The routes of the table, each timing and counting its reviews.
pub fn router(routes: &Routes, admission: Arc<Admission>) -> Router {
    let mut app = Router::new();
    for (path, route, hook) in routes.paths() {
        let endpoint = Endpoint {
            kind: route.kind().to_owned(),
            hook,
            handler: route.handler(hook).clone(),
        };
        app = app.route(
            &path,
            post(move |State(admission): State<Arc<Admission>>, body: Bytes| {
                let endpoint = endpoint.clone();
                async move { endpoint.answer(admission, body).await }
            }),
        );
    }
    app.layer(DefaultBodyLimit::max(BODY_LIMIT)).with_state(admission)
}

#[derive(Clone)]
struct Endpoint {
    kind: String,
    hook: Hook,
    handler: Handler,
}

impl Endpoint {
    async fn answer(&self, admission: Arc<Admission>, body: Bytes) -> Response {
        let started = Instant::now();
        let answer = (self.handler)(admission, body).await;
        let kind = self.kind.clone();
        let hook = self.hook.as_str();
        metrics::histogram!(ADMISSION_DURATION_SECONDS, "kind" => kind.clone(), "webhook" => hook)
            .record(started.elapsed());
        metrics::counter!(
            ADMISSION_REQUESTS_TOTAL,
            "kind" => kind,
            "webhook" => hook,
            "operation" => answer.operation,
            "result" => answer.outcome.as_str(),
        )
        .increment(1);
        tracing::debug!(
            kind = %self.kind,
            webhook = hook,
            operation = answer.operation,
            result = answer.outcome.as_str(),
            micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "answered an admission review"
        );
        match answer.to_json() {
            Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
            Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
        }
    }
}

/// Checks the certificate files every [`RELOAD_PERIOD`] until `stop`, so a rotation is loaded
/// (and logged) even without traffic.
async fn reload_until(certificate: Arc<ReloadingCertificate>, stop: CancellationToken) {
    let mut reload = tokio::time::interval(RELOAD_PERIOD);
    reload.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = reload.tick() => {
                let certificate = certificate.clone();
                // Reading two small files; off the async threads all the same.
                let _ = tokio::task::spawn_blocking(move || certificate.reload_and_log()).await;
            }
        }
    }
}
