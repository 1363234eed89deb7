//! Serving a router over TLS (rustls, HTTP/1.1), for the admission webhooks and the diagnostics
//! endpoint.
//!
//! Each connection is handshaken and served on a task of its own, so a slow client holds up no
//! other. When `stop` is cancelled the listener closes, connections finish the request they are
//! answering, and after [`DRAIN_TIMEOUT`] whatever is left is dropped.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long requests in flight may take to finish after the server is told to stop.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` through `acceptor` until `stop` is cancelled and the
/// connections have drained.
pub async fn serve(listener: TcpListener, acceptor: TlsAcceptor, router: Router, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(connection(stream, peer, acceptor.clone(), router.clone(), stop.clone()));
                }
                Err(err) => {
                    // Out of file descriptors, say: wait a little instead of spinning.
                    tracing::warn!(error = %err, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "connections still open after the drain timeout; closing them"
        );
        connections.shutdown().await;
    }
}

async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    router: Router,
    stop: CancellationToken,
) {
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(%peer, error = %err, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let service = TowerToHyperService::new(router);
    let http = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(tls), service);
    let mut http = std::pin::pin!(http);
    let served = tokio::select! {
        served = http.as_mut() => served,
        () = stop.cancelled() => {
            http.as_mut().graceful_shutdown();
            http.await
        }
    };
    if let Err(err) = served {
        tracing::debug!(%peer, error = %err, "connection ended with an error");
    }
}
