//! An HTTPS proxy in front of the emulator's Entra ID that counts token requests: the emulator
//! does not log sign-ins, and "no token was requested" is what some tests prove.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use azure_core::http::{Method, Request, Url};
use capz_azure::HttpClient;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::TestResult;

pub(crate) struct CountingProxy {
    pub(crate) url: Url,
    pub(crate) cert_pem: String,
    token_requests: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl CountingProxy {
    /// Serves on a free loopback port, forwarding to `upstream` through `http`.
    pub(crate) async fn start(upstream: String, http: HttpClient) -> TestResult<Self> {
        let key = rcgen::KeyPair::generate()?;
        let certificate = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?.self_signed(&key)?;
        let tls =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(
                    vec![certificate.der().clone()],
                    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
                )?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = Url::parse(&format!("https://{}/", listener.local_addr()?))?;
        let token_requests = Arc::new(AtomicUsize::new(0));
        let counter = token_requests.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Ok(stream) = acceptor.accept(stream).await else {
                    continue;
                };
                let (http, upstream, counter) = (http.clone(), upstream.clone(), counter.clone());
                let service = hyper::service::service_fn(move |incoming| {
                    let (http, upstream, counter) = (http.clone(), upstream.clone(), counter.clone());
                    async move {
                        let response = forward(&http, &upstream, &counter, incoming)
                            .await
                            .unwrap_or_else(|err| {
                                let mut failed = hyper::Response::new(Full::new(Bytes::from(format!(
                                    "proxy failed: {err}"
                                ))));
                                *failed.status_mut() = hyper::StatusCode::BAD_GATEWAY;
                                failed
                            });
                        Ok::<_, Infallible>(response)
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
                );
            }
        });
        Ok(Self {
            url,
            cert_pem: certificate.pem(),
            token_requests,
            server,
        })
    }

    /// How many token requests went through.
    pub(crate) fn token_requests(&self) -> usize {
        self.token_requests.load(Ordering::SeqCst)
    }
}

async fn forward(
    http: &HttpClient,
    upstream: &str,
    token_requests: &AtomicUsize,
    incoming: hyper::Request<Incoming>,
) -> TestResult<hyper::Response<Full<Bytes>>> {
    let (parts, body) = incoming.into_parts();
    if parts.method == hyper::Method::POST && parts.uri.path().ends_with("/oauth2/v2.0/token") {
        token_requests.fetch_add(1, Ordering::SeqCst);
    }
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let mut request = Request::new(
        Url::parse(&format!("{upstream}{path}"))?,
        parts.method.as_str().parse::<Method>()?,
    );
    // The Host header goes along: Entra checks a client assertion's audience against the URL the
    // client posted to, which is the proxy's.
    for (name, value) in &parts.headers {
        request.insert_header(name.as_str().to_owned(), value.to_str()?.to_owned());
    }
    request.set_body(body.collect().await?.to_bytes());
    let answer = azure_core::http::HttpClient::execute_request(http, &request).await?;
    let mut response = hyper::Response::builder().status(u16::from(answer.status()));
    for (name, value) in answer.headers().iter() {
        if name.as_str() != "content-length" {
            response = response.header(name.as_str(), value.as_str());
        }
    }
    Ok(response.body(Full::new(answer.into_body().collect().await?))?)
}
