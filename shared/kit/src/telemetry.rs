//! Logs and traces: one call sets them up for the process and returns a guard that flushes them.
//!
//! Log lines go to standard output as compact text or as JSON objects, filtered by a directive in
//! RUST_LOG's syntax. With the cargo feature `otlp`, spans are also exported to an OpenTelemetry
//! collector over OTLP/HTTP (protobuf) when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` are honoured, and `OTEL_EXPORTER_OTLP_CERTIFICATE` names a CA bundle
//! to trust besides the public roots.
//!
//! Each reconcile runs in a [`reconcile_span`] carrying the controller, the kind and the object's
//! namespace and name, so every line logged inside it names its object.

use kube::Resource;
use tracing::Span;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One compact line of text per event.
    Text,
    /// One JSON object per event, with the fields of the current span.
    Json,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The log filter does not parse.
    #[error("the log filter '{filter}' is invalid: {source}")]
    Filter {
        /// The filter as given.
        filter: String,
        /// What is wrong with it.
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global subscriber was set already.
    #[error("logging is set up already: {0}")]
    AlreadySet(#[from] tracing_subscriber::util::TryInitError),
    /// The OTLP exporter could not be built.
    #[cfg(feature = "otlp")]
    #[error("cannot export traces to {endpoint}: {message}")]
    Otlp {
        /// The traces endpoint.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
}

/// Where `--enable-tracing` exports traces when the environment names no endpoint.
pub const DEFAULT_COLLECTOR: &str = "http://opentelemetry-collector:4318/v1/traces";

/// What to set up: see [`Telemetry::init`].
#[derive(Debug, Clone)]
pub struct Telemetry {
    service: String,
    format: LogFormat,
    filter: String,
    otlp_endpoint: Option<String>,
}

impl Telemetry {
    /// Logs in `format` filtered by `filter`, from the service `service` (such as
    /// `capz-network`); the OTLP traces endpoint comes from the environment.
    #[must_use]
    pub fn new(service: &str, format: LogFormat, filter: &str) -> Self {
        Self {
            service: service.to_owned(),
            format,
            filter: filter.to_owned(),
            otlp_endpoint: otlp_endpoint_from_env(),
        }
    }

    /// The same, with CAPZ's `--enable-tracing`: traces are exported even when the environment
    /// names no endpoint, to the OpenTelemetry collector CAPZ's manager sends to, the Service
    /// `opentelemetry-collector` in the controller's namespace, on the OTLP/HTTP port
    /// ([`DEFAULT_COLLECTOR`]; CAPZ speaks OTLP/gRPC to 4317 of the same Service).
    #[must_use]
    pub fn with_tracing(self, enabled: bool) -> Self {
        let otlp_endpoint = match self.otlp_endpoint {
            None if enabled => Some(DEFAULT_COLLECTOR.to_owned()),
            endpoint => endpoint,
        };
        Self {
            otlp_endpoint,
            ..self
        }
    }

    /// The traces endpoint, if traces are exported.
    #[must_use]
    pub fn otlp_endpoint(&self) -> Option<&str> {
        self.otlp_endpoint.as_deref()
    }

    /// The same, exporting traces to `endpoint` (the full URL, such as
    /// `http://collector:4318/v1/traces`) instead of the one the environment names.
    #[must_use]
    pub fn with_otlp_endpoint(self, endpoint: Option<String>) -> Self {
        Self {
            otlp_endpoint: endpoint,
            ..self
        }
    }

    /// Installs the process-wide subscriber. Keep the guard until the process ends: dropping it
    /// flushes the spans not exported yet, waiting for the collector (so drop it outside the async
    /// runtime, or on a multi-threaded one).
    ///
    /// # Errors
    /// When the filter does not parse, a subscriber is already installed, or the exporter cannot
    /// be built.
    pub fn init(self) -> Result<TelemetryGuard, TelemetryError> {
        let filter = EnvFilter::try_new(&self.filter).map_err(|source| TelemetryError::Filter {
            filter: self.filter.clone(),
            source,
        })?;
        let logs = match self.format {
            LogFormat::Text => tracing_subscriber::fmt::layer().compact().boxed(),
            LogFormat::Json => tracing_subscriber::fmt::layer()
                .json()
                .with_current_span(true)
                .with_span_list(false)
                .boxed(),
        };
        let registry = tracing_subscriber::registry().with(filter).with(logs);

        #[cfg(feature = "otlp")]
        {
            let (layer, provider) = match &self.otlp_endpoint {
                Some(endpoint) => {
                    let (layer, provider) = otlp::layer(&self.service, endpoint)?;
                    (Some(layer), Some(provider))
                }
                None => (None, None),
            };
            registry.with(layer).try_init()?;
            Ok(TelemetryGuard { provider })
        }
        #[cfg(not(feature = "otlp"))]
        {
            registry.try_init()?;
            if let Some(endpoint) = &self.otlp_endpoint {
                tracing::warn!(
                    %endpoint,
                    service = %self.service,
                    "OTLP export is configured, but this build cannot export traces (cargo feature otlp)"
                );
            }
            Ok(TelemetryGuard {})
        }
    }
}

/// Keeps telemetry running; dropping it flushes and stops trace export.
#[derive(Debug)]
#[must_use = "dropping the guard stops trace export"]
pub struct TelemetryGuard {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take()
            && let Err(err) = provider.shutdown()
        {
            // The subscriber may be gone by now; standard error is what is left.
            eprintln!("flushing traces failed: {err}");
        }
    }
}

/// The traces endpoint the standard variables name: the signal-specific one as it is, else the
/// generic one with `/v1/traces` appended.
fn otlp_endpoint_from_env() -> Option<String> {
    let set = |name| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
        set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
    })
}

/// The span of one reconcile of `object` by `controller`: enter it (or instrument the reconcile's
/// future with it) so that everything logged and traced inside names the object.
pub fn reconcile_span<K: Resource<DynamicType = ()>>(controller: &'static str, object: &K) -> Span {
    let meta = object.meta();
    tracing::info_span!(
        "reconcile",
        controller,
        kind = %K::kind(&()),
        namespace = meta.namespace.as_deref().unwrap_or_default(),
        name = meta.name.as_deref().unwrap_or_default(),
    )
}

#[cfg(feature = "otlp")]
mod otlp {
    //! The OTLP/HTTP trace exporter, sending through hyper (HTTP/1.1) and hyper-rustls.
    //!
    //! The SDK's batch processor exports from a thread of its own, outside any async runtime,
    //! while hyper needs one: each request is therefore spawned on the runtime that was current
    //! when telemetry was set up, and its result awaited from the exporter's thread.

    use std::sync::Arc;
    use std::time::Duration;

    use http_body_util::{BodyExt as _, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::TokioExecutor;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
    use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    use super::TelemetryError;

    /// How long one export may take.
    const TIMEOUT: Duration = Duration::from_secs(10);

    type Connector = hyper_rustls::HttpsConnector<HttpConnector>;

    /// An [`HttpClient`] that runs hyper on a given tokio runtime.
    #[derive(Debug)]
    struct OnRuntime {
        client: Client<Connector, Full<Bytes>>,
        runtime: tokio::runtime::Handle,
    }

    #[async_trait::async_trait]
    impl HttpClient for OnRuntime {
        async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
            let client = self.client.clone();
            let exchange = async move {
                let (parts, body) = request.into_parts();
                let response = client
                    .request(Request::from_parts(parts, Full::new(body)))
                    .await?;
                let (parts, body) = response.into_parts();
                let body = body.collect().await?.to_bytes();
                Ok::<_, HttpError>(Response::from_parts(parts, body))
            };
            self.runtime
                .spawn(async move { tokio::time::timeout(TIMEOUT, exchange).await? })
                .await?
        }
    }

    /// The tracing layer exporting spans to `endpoint`, and the provider to shut down at exit.
    pub(super) fn layer<S>(
        service: &str,
        endpoint: &str,
    ) -> Result<(impl Layer<S> + use<S>, SdkTracerProvider), TelemetryError>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let failed = |message: String| TelemetryError::Otlp {
            endpoint: endpoint.to_owned(),
            message,
        };
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| failed("trace export needs a tokio runtime to send from".to_owned()))?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .with_timeout(TIMEOUT)
            .with_http_client(OnRuntime {
                client: Client::builder(TokioExecutor::new()).build(connector().map_err(failed)?),
                runtime,
            })
            .build()
            .map_err(|err| failed(err.to_string()))?;
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(service.to_owned());
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("capz-kit");
        Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
    }

    /// HTTPS with the public roots and `OTEL_EXPORTER_OTLP_CERTIFICATE`'s CAs, or plain HTTP.
    fn connector() -> Result<Connector, String> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(path) = std::env::var_os("OTEL_EXPORTER_OTLP_CERTIFICATE") {
            let pem = std::fs::read(&path)
                .map_err(|err| format!("cannot read the CA bundle {}: {err}", path.to_string_lossy()))?;
            let certificates = CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok);
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(format!(
                    "the CA bundle {} holds no usable certificate",
                    path.to_string_lossy()
                ));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| err.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::{DEFAULT_COLLECTOR, LogFormat, Telemetry, reconcile_span};

    #[test]
    fn enable_tracing_exports_to_capzs_collector_unless_an_endpoint_is_named() {
        let base = || Telemetry::new("capz-test", LogFormat::Text, "info").with_otlp_endpoint(None);
        assert_eq!(base().with_tracing(false).otlp_endpoint(), None);
        assert_eq!(base().with_tracing(true).otlp_endpoint(), Some(DEFAULT_COLLECTOR));
        let named = base()
            .with_otlp_endpoint(Some("http://collector.monitoring:4318/v1/traces".into()))
            .with_tracing(true);
        assert_eq!(
            named.otlp_endpoint(),
            Some("http://collector.monitoring:4318/v1/traces")
        );
    }

    #[test]
    fn a_bad_filter_is_named() {
        let err = Telemetry::new("capz-test", LogFormat::Text, "info,kube=loud")
            .init()
            .unwrap_err();
        assert!(err.to_string().contains("'info,kube=loud'"), "{err}");
    }

    #[test]
    fn the_reconcile_span_names_its_object() {
        let object = ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("default".into()),
                name: Some("settings".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        // Without a subscriber the span is disabled; its metadata still lists the fields.
        let span = reconcile_span("test", &object);
        let fields = span
            .metadata()
            .map(|meta| meta.fields().iter().map(|field| field.name()).collect::<Vec<_>>());
        assert_eq!(
            fields.as_deref(),
            Some(&["controller", "kind", "namespace", "name"][..])
        );
    }
}
