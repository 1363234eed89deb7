//! The signing keys of federated issuers (for example a Kubernetes service account issuer): given
//! inline in the configuration, or fetched from the issuer's OIDC discovery document and its
//! `jwks_uri`, then kept per issuer until a token names a key the set lacks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, Uri, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::jwt::Jwks;
use crate::config::FederatedCredential;

/// How long fetching one document may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest document read from an issuer.
const MAX_DOCUMENT: usize = 1 << 20;

/// Keys fetched from issuers, by issuer URL.
#[derive(Debug, Default)]
pub(crate) struct Issuers {
    fetched: Mutex<HashMap<String, Jwks>>,
}

impl Issuers {
    /// The keys to check a token of `credential`'s issuer with; `kid` is the key the token names.
    ///
    /// # Errors
    /// Says why the keys cannot be had (unreadable inline JWKS, unreachable issuer, bad answer).
    pub(crate) async fn keys(
        &self,
        credential: &FederatedCredential,
        kid: Option<&str>,
    ) -> Result<Jwks, String> {
        if let Some(inline) = &credential.jwks {
            return serde_json::from_value(inline.clone())
                .map_err(|err| format!("the credential's inline JWKS cannot be read: {err}"));
        }
        let cached = crate::lock(&self.fetched).get(&credential.issuer).cloned();
        if let Some(keys) = cached.filter(|keys| keys.has(kid)) {
            return Ok(keys);
        }
        // Not fetched yet, or the issuer rotated its keys.
        let keys = fetch(&credential.issuer, credential.ca.as_deref()).await?;
        crate::lock(&self.fetched).insert(credential.issuer.clone(), keys.clone());
        Ok(keys)
    }
}

async fn fetch(issuer: &str, ca: Option<&str>) -> Result<Jwks, String> {
    let discovery_url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let discovery = get_json(&discovery_url, ca).await?;
    let jwks_uri = discovery
        .get("jwks_uri")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{discovery_url} names no jwks_uri"))?;
    let jwks = get_json(jwks_uri, ca).await?;
    serde_json::from_value(jwks).map_err(|err| format!("{jwks_uri} is not a JWKS: {err}"))
}

async fn get_json(url: &str, ca: Option<&str>) -> Result<Value, String> {
    let response = tokio::time::timeout(FETCH_TIMEOUT, get(url, ca))
        .await
        .map_err(|_| format!("GET {url} timed out"))??;
    if response.status() != StatusCode::OK {
        return Err(format!("GET {url} answered {}", response.status()));
    }
    let body = tokio::time::timeout(
        FETCH_TIMEOUT,
        axum::body::to_bytes(Body::new(response.into_body()), MAX_DOCUMENT),
    )
    .await
    .map_err(|_| format!("reading {url} timed out"))?
    .map_err(|err| format!("reading {url} failed: {err}"))?;
    serde_json::from_slice(&body).map_err(|err| format!("{url} is not JSON: {err}"))
}

/// One GET over HTTP/1.1, over TLS for `https` URLs.
async fn get(url: &str, ca: Option<&str>) -> Result<Response<Incoming>, String> {
    let uri: Uri = url
        .parse()
        .map_err(|err| format!("'{url}' is not a URL: {err}"))?;
    let secure = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(format!("'{url}' is not an http or https URL")),
    };
    let (Some(host), Some(authority)) = (uri.host(), uri.authority()) else {
        return Err(format!("'{url}' names no host"));
    };
    // IPv6 literals come bracketed in URLs but not in socket addresses or server names.
    let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
    let request = Request::get(uri.path_and_query().map_or("/", |path| path.as_str()))
        .header(header::HOST, authority.as_str())
        // kube-apiserver serves its keys only as `application/jwk-set+json` (406 otherwise).
        .header(header::ACCEPT, "application/json, application/jwk-set+json")
        .body(Body::empty())
        .map_err(|err| format!("cannot build the request for {url}: {err}"))?;
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|err| format!("cannot connect to {url}: {err}"))?;
    if secure {
        let server_name = ServerName::try_from(host).map_err(|err| format!("'{url}': {err}"))?;
        let stream = connector(ca)?
            .connect(server_name, tcp)
            .await
            .map_err(|err| format!("TLS with {url} failed: {err}"))?;
        send(stream, request, url).await
    } else {
        send(tcp, request, url).await
    }
}

async fn send<S>(stream: S, request: Request<Body>, url: &str) -> Result<Response<Incoming>, String>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|err| format!("HTTP with {url} failed: {err}"))?;
    // The connection ends when the response is read and the sender dropped.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|err| format!("GET {url} failed: {err}"))
}

/// A TLS client trusting only the credential's CA certificates.
fn connector(ca: Option<&str>) -> Result<tokio_rustls::TlsConnector, String> {
    let ca =
        ca.ok_or("the issuer is served over HTTPS but the federated credential names no 'ca' to trust")?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        let certificate =
            certificate.map_err(|err| format!("the credential's 'ca' cannot be read: {err}"))?;
        roots
            .add(certificate)
            .map_err(|err| format!("the credential's 'ca' is not a usable CA certificate: {err}"))?;
    }
    if roots.is_empty() {
        return Err("the credential's 'ca' holds no PEM certificate".into());
    }
    let mut config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|err| format!("cannot configure TLS: {err}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
