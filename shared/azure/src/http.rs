//! The HTTP transport of every Azure call: azure_core's [`HttpClient`](azure_core::http::HttpClient)
//! over hyper, with rustls (ring) for TLS. It keeps connections open for reuse, bounds each
//! request (answer and body) by a timeout, and trusts Mozilla's root certificates plus, for a
//! custom cloud, the cloud's own CA bundle. Plain HTTP is allowed only because the managed identity
//! endpoint (IMDS) speaks it; Entra and ARM URLs are HTTPS-only by the time they get here.

use std::sync::Arc;
use std::time::Duration;

use azure_core::error::{Error, ErrorKind};
use azure_core::http::headers::{HeaderName, HeaderValue, Headers};
use azure_core::http::{AsyncRawResponse, Body, Request};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::cloud::error::CloudError;

/// The largest response body read; ARM's largest lists (resource SKUs) stay well below it.
const MAX_BODY_BYTES: usize = 64 << 20;

/// An HTTP client for Azure. Cloning shares its connection pool.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The read buffer of each connection: a TLS record's worth.
const READ_BUFFER: usize = 16 * 1024;

impl HttpClient {
    /// A client trusting the public roots and the PEM certificates of `ca_bundle`.
    ///
    /// # Errors
    /// When `ca_bundle` holds no certificate.
    pub fn new(ca_bundle: Option<&[u8]>, timeout: Duration) -> Result<Self, CloudError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(bundle) = ca_bundle {
            // A certificate rustls cannot use as a trust anchor is skipped, as other clients do.
            roots.add_parsable_certificates(parse_ca_bundle(bundle)?);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            // A fixed read buffer per connection: hyper's default grows it with large answers
            // (lists of scale-set instances) and keeps it while the connection is pooled.
            client: Client::builder(TokioExecutor::new())
                .http1_read_buf_exact_size(READ_BUFFER)
                .build(connector),
            timeout,
        })
    }
}

/// The certificates of a PEM bundle.
pub(crate) fn parse_ca_bundle(bundle: &[u8]) -> Result<Vec<CertificateDer<'static>>, CloudError> {
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(bundle)
        .filter_map(Result::ok)
        .collect();
    if certificates.is_empty() {
        return Err(CloudError::EmptyCaBundle);
    }
    Ok(certificates)
}

#[async_trait::async_trait]
impl azure_core::http::HttpClient for HttpClient {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        let body = match request.body() {
            Body::Bytes(bytes) => bytes.clone(),
            // Every body capz-rs sends is a JSON document or a form already in memory.
            Body::SeekableStream(_) => {
                return Err(Error::with_message(
                    ErrorKind::Other,
                    "streamed request bodies are not supported",
                ));
            }
        };
        let url = request.url();
        // Only the host is named in errors: paths and queries may carry more than needed.
        let target = format!("{} {}", request.method(), url.host_str().unwrap_or_default());
        let mut builder = hyper::Request::builder()
            .method(request.method().as_str())
            .uri(url.as_str());
        for (name, value) in request.headers().iter() {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let outgoing = builder
            .body(Full::new(body))
            .map_err(|err| Error::with_error(ErrorKind::Other, err, format!("{target}: invalid request")))?;
        let exchange = async {
            let response = self.client.request(outgoing).await.map_err(|err| {
                let kind = if err.is_connect() {
                    ErrorKind::Connection
                } else {
                    ErrorKind::Io
                };
                Error::with_error(kind, err, format!("{target}: request failed"))
            })?;
            let (parts, body) = response.into_parts();
            let bytes = Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|err| {
                    Error::with_error(ErrorKind::Io, err, format!("{target}: reading the answer failed"))
                })?
                .to_bytes();
            Ok::<_, Error>((parts, bytes))
        };
        let (parts, bytes) = tokio::time::timeout(self.timeout, exchange).await.map_err(|_| {
            Error::with_message(
                ErrorKind::Io,
                format!("{target}: no answer within {} s", self.timeout.as_secs_f32()),
            )
        })??;
        let mut headers = Headers::new();
        for name in parts.headers.keys() {
            // Repeated headers are joined, as HTTP allows for list-valued ones.
            let values: Vec<&str> = parts
                .headers
                .get_all(name)
                .iter()
                .filter_map(|value| value.to_str().ok())
                .collect();
            headers.insert(
                HeaderName::from(name.as_str().to_owned()),
                HeaderValue::from(values.join(", ")),
            );
        }
        Ok(AsyncRawResponse::from_bytes(
            parts.status.as_u16().into(),
            headers,
            bytes,
        ))
    }
}
