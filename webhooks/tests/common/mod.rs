//! What the webhook tests share: HTTPS requests to a server under test, trusting one CA.

use std::net::SocketAddr;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

pub(crate) type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// An HTTP answer over TLS: status, body, and the certificate the server presented.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    pub(crate) leaf: Vec<u8>,
}

/// `method path` with `body` to the server at `address`, trusting the CA in `ca_pem` for the
/// name `localhost`, on a connection of its own.
pub(crate) async fn https(
    address: SocketAddr,
    ca_pem: &str,
    method: &str,
    path: &str,
    body: &[u8],
) -> TestResult<Answer> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let stream = tokio::net::TcpStream::connect(address).await?;
    let mut tls = connector
        .connect(ServerName::try_from("localhost")?, stream)
        .await?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|cert| cert.to_vec())
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await?;
    tls.write_all(body).await?;
    tls.flush().await?;
    let mut response = Vec::new();
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        match tls.read(&mut buffer).await {
            Ok(0) => break,
            Ok(read) => response.extend_from_slice(&buffer[..read]),
            // The server may close without a TLS close_notify once the body is sent.
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => break,
            Err(err) => return Err(err.into()),
        }
    }
    let split = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or("the answer has no end of headers")?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {head}"))?;
    Ok(Answer {
        status,
        body: response[split + 4..].to_vec(),
        leaf,
    })
}

/// The DER of the first certificate of a PEM chain.
pub(crate) fn der(pem: &str) -> TestResult<Vec<u8>> {
    Ok(CertificateDer::from_pem_slice(pem.as_bytes())?.to_vec())
}
