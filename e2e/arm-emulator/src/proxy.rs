//! An HTTPS proxy that answers for Azure's own host names, so that clients which cannot be
//! pointed at a custom cloud (they hard-code `management.azure.com` and
//! `login.microsoftonline.com`) reach the emulator given only `HTTPS_PROXY` and its CA: the client
//! asks the proxy to `CONNECT` to an Azure host, and the emulator itself answers inside the
//! tunnel, with a certificate for that host signed by its CA. Other hosts are refused: nothing
//! leaves the machine.

use std::net::SocketAddr;

use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::Emulator;
use crate::tls::Tls;

/// The hosts the proxy answers for: the resource manager and sign-in hosts of Azure's public,
/// US Government and China clouds.
pub const AZURE_HOSTS: &[&str] = &[
    "management.azure.com",
    "login.microsoftonline.com",
    "management.usgovcloudapi.net",
    "login.microsoftonline.us",
    "management.chinacloudapi.cn",
    "login.chinacloudapi.cn",
];

/// The longest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;

/// A running proxy; dropping it stops the listener.
pub struct RunningProxy {
    /// Where it listens.
    pub address: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RunningProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Serves the proxy on `address` for `emulator`, with `tls` (whose server certificate must be
/// valid for [`AZURE_HOSTS`], as [`Tls::generate`] makes it when given them).
///
/// # Errors
/// When the address cannot be bound.
pub async fn start_proxy(
    address: SocketAddr,
    emulator: &Emulator,
    tls: &Tls,
) -> std::io::Result<RunningProxy> {
    let listener = TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let router = emulator.router();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server.clone());
    let server = crate::serve_each(listener, move |stream| {
        let (router, acceptor) = (router.clone(), acceptor.clone());
        async move {
            let _ = tunnel(stream, router, acceptor).await;
        }
    });
    Ok(RunningProxy { address, server })
}

/// Answers one `CONNECT`: refuses anything but an Azure host, else serves the emulator over TLS
/// inside the tunnel.
async fn tunnel(
    mut stream: TcpStream,
    router: Router,
    acceptor: tokio_rustls::TlsAcceptor,
) -> std::io::Result<()> {
    let head = read_head(&mut stream).await?;
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if !method.eq_ignore_ascii_case("CONNECT") {
        return refuse(
            &mut stream,
            "405 Method Not Allowed",
            "The emulator's proxy only tunnels HTTPS (CONNECT).",
        )
        .await;
    }
    let host = target.rsplit_once(':').map_or(target, |(host, _)| host);
    if !AZURE_HOSTS.iter().any(|azure| azure.eq_ignore_ascii_case(host)) {
        let message = format!(
            "{host} is not an Azure endpoint the emulator answers for: {}.",
            AZURE_HOSTS.join(", ")
        );
        return refuse(&mut stream, "403 Forbidden", &message).await;
    }
    stream
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await?;
    crate::serve_https(stream, &acceptor, router).await
}

/// Reads the request head, up to its blank line.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    // One byte at a time: nothing past the head may be consumed, the TLS handshake follows it.
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD || stream.read(&mut byte).await? == 0 {
            return Err(std::io::Error::other("no complete request head"));
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

async fn refuse(stream: &mut TcpStream, status: &str, message: &str) -> std::io::Result<()> {
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{message}",
        message.len()
    );
    stream.write_all(answer.as_bytes()).await?;
    stream.shutdown().await
}
