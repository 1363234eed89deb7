//! An HTTPS proxy that answers for Azure's own host names, so that clients which cannot be
//! pointed at a custom cloud (they hard-code `management.azure.com` and
//! `login.microsoftonline.com`) reach the emulator given only `HTTPS_PROXY` and its CA: the client
//! asks the proxy to `CONNECT` to an Azure host, and the emulator itself answers inside the
//! tunnel, with a certificate for that host signed by its CA.
//!
//! A host of the emulated cloud (a public IP address, its DNS name, a load balancer's private
//! frontend, a managed cluster's API server name) may be given a route to a local port: a
//! program standing in for what would run behind that address (a workload cluster's API server)
//! listens there, and the tunnel is joined to it byte for byte, TLS and all. A route counts only
//! while the emulator holds a resource with that address, as Azure's DNS would only answer then.
//! Other hosts are refused: nothing leaves the machine. When the configuration places the proxy's
//! clients in a virtual network (`managementNetwork`), private names and addresses count only as
//! seen from there: a private DNS zone's names while the zone is linked to that network, private
//! addresses in it or in a network peered with it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::tls::Tls;
use crate::{Emulator, lock};

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

/// How long the proxy waits for a route's target to accept.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection to an emulated address with nothing behind it waits for a server.
const UNROUTED_WAIT: Duration = Duration::from_secs(30);

/// How often such a connection looks for its server.
const ROUTE_POLL: Duration = Duration::from_millis(50);

/// A tunnel to `host:port` the proxy joins to a listener at `target`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Route {
    /// The host as a client names it in `CONNECT`, in lower case.
    pub host: String,
    /// The port a client names in `CONNECT`.
    pub port: u16,
    /// Where the stand-in for that address listens.
    pub target: SocketAddr,
}

/// The routes in force, by host (lower case, without brackets or a trailing dot) and port.
#[derive(Debug, Default)]
pub(crate) struct Routes(BTreeMap<(String, u16), SocketAddr>);

impl Routes {
    /// Adds or replaces a route; the target it had before.
    pub(crate) fn add(&mut self, host: &str, port: u16, target: SocketAddr) -> Option<SocketAddr> {
        self.0.insert((normal_host(host), port), target)
    }

    pub(crate) fn remove(&mut self, host: &str, port: u16) -> bool {
        self.0.remove(&(normal_host(host), port)).is_some()
    }

    fn get(&self, host: &str, port: u16) -> Option<SocketAddr> {
        self.0.get(&(normal_host(host), port)).copied()
    }

    pub(crate) fn list(&self) -> Vec<Route> {
        self.0
            .iter()
            .map(|((host, port), target)| Route {
                host: host.clone(),
                port: *port,
                target: *target,
            })
            .collect()
    }
}

/// A host as routes compare it: `[::1]` and `::1` alike, `name.` and `name` alike, any case.
pub(crate) fn normal_host(host: &str) -> String {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl Emulator {
    /// Routes tunnels to `host:port` (compared ignoring case) to `target`, replacing any route
    /// it had; honoured only while `host` is an address or name of an emulated resource.
    pub fn add_route(&self, host: &str, port: u16, target: SocketAddr) {
        lock(&self.routes).add(host, port, target);
    }

    /// Removes the route of `host:port`; whether there was one.
    #[expect(
        clippy::must_use_candidate,
        reason = "removing a route that is gone is no error"
    )]
    pub fn remove_route(&self, host: &str, port: u16) -> bool {
        lock(&self.routes).remove(host, port)
    }

    /// The routes in force, by host and port.
    #[must_use]
    pub fn routes(&self) -> Vec<Route> {
        lock(&self.routes).list()
    }

    /// Whether `host` is an address or name of a resource the emulator holds that a client in the
    /// configured management network reaches, as the next ARM request would find the state.
    pub(crate) fn resolves(&self, host: &str) -> bool {
        let from = self.management_network();
        let now = self.now();
        let mut state = self.state();
        state.advance(now);
        crate::resources::resolves(&state, &normal_host(host), from.as_deref())
    }

    /// The network the proxy's clients sit in, as the state keys it.
    fn management_network(&self) -> Option<String> {
        self.config
            .management_network
            .as_deref()
            .map(|id| id.trim_end_matches('/').to_ascii_lowercase())
    }
}

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
    let emulator = emulator.clone();
    let server = crate::serve_each(listener, move |stream| {
        let (emulator, router, acceptor) = (emulator.clone(), router.clone(), acceptor.clone());
        async move {
            let _ = tunnel(stream, &emulator, router, acceptor).await;
        }
    });
    Ok(RunningProxy { address, server })
}

/// Answers one `CONNECT`: serves the emulator over TLS inside the tunnel for an Azure host, joins
/// the tunnel to a route's target for a routed host, and refuses anything else.
async fn tunnel(
    mut stream: TcpStream,
    emulator: &Emulator,
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
    let (host, port) = target
        .rsplit_once(':')
        .map_or((target, None), |(host, port)| (host, port.parse::<u16>().ok()));
    let azure = AZURE_HOSTS.iter().any(|azure| azure.eq_ignore_ascii_case(host));
    if let (Some(port), false) = (port, azure) {
        if let Some(to) = route(emulator, host, port).await {
            return forward(stream, emulator, host, to).await;
        }
        if emulator.resolves(host) {
            let message = format!(
                "nothing answered at {host}:{port} within {} s: it is an emulated address, but no server listens behind it.",
                UNROUTED_WAIT.as_secs()
            );
            return refuse(&mut stream, "504 Gateway Timeout", &message).await;
        }
    }
    if !azure {
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

/// The route of `host:port`. An emulated address nothing listens behind yet (a load balancer
/// whose backends have not come up) leaves a connection hanging rather than refusing it, as
/// Azure drops the packets: the route is waited for, up to [`UNROUTED_WAIT`], so a client whose
/// server comes up meanwhile connects, as it would on Azure.
async fn route(emulator: &Emulator, host: &str, port: u16) -> Option<SocketAddr> {
    let started = tokio::time::Instant::now();
    let mut resolved = false;
    loop {
        if let Some(to) = lock(&emulator.routes).get(host, port) {
            return Some(to);
        }
        // Whether the host is emulated at all is asked once: it costs a scan of the state.
        if !resolved {
            if !emulator.resolves(host) {
                return None;
            }
            resolved = true;
        }
        if started.elapsed() >= UNROUTED_WAIT {
            return None;
        }
        tokio::time::sleep(ROUTE_POLL).await;
    }
}

/// Joins a routed tunnel to its target, when the host is one the emulator holds and the target
/// accepts.
async fn forward(
    mut stream: TcpStream,
    emulator: &Emulator,
    host: &str,
    to: SocketAddr,
) -> std::io::Result<()> {
    if !emulator.resolves(host) {
        let message = format!(
            "{host} does not resolve to an emulated address the proxy's clients reach: no public IP address, load balancer frontend, managed cluster or private DNS zone linked to their network has it."
        );
        return refuse(&mut stream, "502 Bad Gateway", &message).await;
    }
    let mut upstream = match tokio::time::timeout(DIAL_TIMEOUT, TcpStream::connect(to)).await {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(error)) => {
            let message = format!("the route of {host} leads to {to}, which cannot be reached: {error}.");
            return refuse(&mut stream, "502 Bad Gateway", &message).await;
        }
        Err(_) => {
            let message = format!(
                "the route of {host} leads to {to}, which did not accept within {} s.",
                DIAL_TIMEOUT.as_secs()
            );
            return refuse(&mut stream, "502 Bad Gateway", &message).await;
        }
    };
    stream
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await?;
    if emulator.management_network().is_none() {
        tokio::io::copy_bidirectional(&mut stream, &mut upstream).await?;
        return Ok(());
    }
    // From a management network, a tunnel lasts only while its host resolves and reaches: a
    // removed peering drops the packets, and a removed zone link is taken to end the connection
    // too, as if the client had looked the name up again (stricter than Azure, where an open
    // connection outlives the lookup), so that clients see the loss at once.
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut stream, &mut upstream) => {
            copied?;
        }
        () = lost(emulator, host) => {}
    }
    Ok(())
}

/// How often an open tunnel from a management network checks that its host still reaches.
const REACH_POLL: Duration = Duration::from_secs(1);

/// Returns once `host` no longer resolves or reaches from the management network.
async fn lost(emulator: &Emulator, host: &str) {
    loop {
        tokio::time::sleep(REACH_POLL).await;
        if !emulator.resolves(host) {
            return;
        }
    }
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
