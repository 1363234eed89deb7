//! The emulator serves HTTPS with a certificate its own CA signed; clients that trust the CA get
//! through, others are refused.

#![expect(clippy::unwrap_used, reason = "a failed step fails the test")]

use std::sync::Arc;

use arm_emulator::Config;
use arm_emulator::tls::Tls;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn client(roots: RootCertStore) -> tokio_rustls::TlsConnector {
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn a_client_trusting_the_ca_gets_through() {
    let tls = Tls::generate(&[]).unwrap();
    assert!(tls.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), Config::default(), &tls)
        .await
        .unwrap();
    assert!(running.base_url().starts_with("https://127.0.0.1:"));

    let mut roots = RootCertStore::empty();
    roots.add(tls.ca_der().unwrap()).unwrap();
    for name in ["localhost", "127.0.0.1"] {
        let tcp = tokio::net::TcpStream::connect(running.address).await.unwrap();
        let server_name = ServerName::try_from(name.to_owned()).unwrap();
        let mut stream = client(roots.clone()).connect(server_name, tcp).await.unwrap();
        stream
            .write_all(b"GET /_emulator/health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut reply = Vec::new();
        // The server may close without a TLS close_notify; what was read until then is the answer.
        let _ = stream.read_to_end(&mut reply).await;
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("HTTP/1.1 200"), "{name}: {reply}");
        assert!(reply.ends_with("ok"), "{name}: {reply}");
    }
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_is_refused() {
    let tls = Tls::generate(&[]).unwrap();
    let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), Config::default(), &tls)
        .await
        .unwrap();
    let other_ca = Tls::generate(&[]).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(other_ca.ca_der().unwrap()).unwrap();
    let tcp = tokio::net::TcpStream::connect(running.address).await.unwrap();
    let handshake = client(roots)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await;
    assert!(
        handshake.is_err(),
        "a certificate from another CA must not be accepted"
    );
}

#[tokio::test]
async fn extra_names_are_in_the_certificate() {
    let tls = Tls::generate(&["emulator.sandbox.internal".to_owned()]).unwrap();
    let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), Config::default(), &tls)
        .await
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(tls.ca_der().unwrap()).unwrap();
    let tcp = tokio::net::TcpStream::connect(running.address).await.unwrap();
    let named = ServerName::try_from("emulator.sandbox.internal").unwrap();
    assert!(client(roots.clone()).connect(named, tcp).await.is_ok());
    let tcp = tokio::net::TcpStream::connect(running.address).await.unwrap();
    let unknown = ServerName::try_from("elsewhere.example").unwrap();
    assert!(client(roots).connect(unknown, tcp).await.is_err());
}
