//! The HTTPS proxy: Azure's hosts are answered by the emulator inside the tunnel; a routed host
//! of the emulated cloud is joined to a local listener, while an emulated resource has that
//! address (and, from a management network, while that network reaches it); anything else is
//! refused.

#![expect(clippy::unwrap_used, reason = "a failed step fails the test")]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::proxy::{AZURE_HOSTS, RunningProxy, start_proxy};
use arm_emulator::tls::Tls;
use arm_emulator::{Config, Emulator};
use axum::http::StatusCode;
use common::Reply;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/demo";
const FQDN: &str = "demo-1a2b.westeurope.cloudapp.azure.com";

async fn send(emulator: &Emulator, method: &str, path: &str, body: Option<Value>) -> Reply {
    common::call(emulator, DEFAULT_CLIENT_ID, method, path, body, &[]).await
}

fn public_ip() -> String {
    format!("{RG}/providers/Microsoft.Network/publicIPAddresses/demo-apiserver?api-version=2024-05-01")
}

/// An emulator holding a static public IP labelled `demo-1a2b`, and its proxy; the address.
async fn with_public_ip() -> (Emulator, RunningProxy, Tls, String) {
    let emulator = Emulator::new(Config::default());
    let group = send(
        &emulator,
        "PUT",
        &format!("{RG}?api-version=2021-04-01"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(group.status, StatusCode::CREATED, "{}", group.body);
    let created = send(
        &emulator,
        "PUT",
        &public_ip(),
        Some(json!({
            "location": "westeurope",
            "sku": {"name": "Standard"},
            "properties": {"publicIPAllocationMethod": "Static", "dnsSettings": {"domainNameLabel": "demo-1a2b"}},
        })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator.advance_clock(Duration::from_mins(1));
    let read = send(&emulator, "GET", &public_ip(), None).await;
    assert_eq!(read.body["properties"]["dnsSettings"]["fqdn"], FQDN);
    let address = read.body["properties"]["ipAddress"].as_str().unwrap().to_owned();
    let names: Vec<String> = AZURE_HOSTS.iter().map(|host| (*host).to_owned()).collect();
    let tls = Tls::generate(&names).unwrap();
    let proxy = start_proxy(([127, 0, 0, 1], 0).into(), &emulator, &tls)
        .await
        .unwrap();
    (emulator, proxy, tls, address)
}

/// A TCP server that sends back whatever it reads, on each connection.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut from, mut to) = stream.split();
                let _ = tokio::io::copy(&mut from, &mut to).await;
            });
        }
    });
    address
}

/// Asks the proxy to `CONNECT` to `target`: its answer's head, and the stream.
async fn connect(proxy: &RunningProxy, target: &str) -> (String, TcpStream) {
    let mut stream = TcpStream::connect(proxy.address).await.unwrap();
    stream
        .write_all(format!("CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "the proxy closed early");
        head.push(byte[0]);
    }
    (String::from_utf8(head).unwrap(), stream)
}

/// Sends `CONNECT target` and checks that no answer comes for a while: the proxy holds a
/// connection to an emulated address nothing listens behind. Returns the stream, still waiting.
async fn held(proxy: &RunningProxy, target: &str) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.address).await.unwrap();
    stream
        .write_all(format!("CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut byte = [0_u8; 1];
    let answered = tokio::time::timeout(Duration::from_millis(300), stream.peek(&mut byte)).await;
    assert!(answered.is_err(), "the proxy answered at once for {target}");
    stream
}

/// The head of the proxy's answer on a stream [`held`] left waiting.
async fn answer(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read, 1, "the proxy closed early");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A refusal: the status line and the message.
async fn refusal(proxy: &RunningProxy, target: &str) -> (String, String) {
    let (head, mut stream) = connect(proxy, target).await;
    let mut message = String::new();
    stream.read_to_string(&mut message).await.unwrap();
    (head.lines().next().unwrap().to_owned(), message)
}

/// Sends `text` through the tunnel and reads as much back.
async fn echoes(stream: &mut TcpStream, text: &str) -> String {
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut back = vec![0_u8; text.len()];
    tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8(back).unwrap()
}

#[tokio::test]
async fn a_routed_host_of_an_emulated_address_reaches_its_listener() {
    let (emulator, proxy, _tls, address) = with_public_ip().await;
    let echo = echo_server().await;
    let added = send(
        &emulator,
        "PUT",
        "/_emulator/routes",
        Some(json!({"host": FQDN.to_ascii_uppercase(), "port": 6443, "target": echo.to_string()})),
    )
    .await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert_eq!(added.body["host"], FQDN);
    // By name, any case, and by address (routed in process).
    emulator.add_route(&address, 6443, echo);
    for target in [
        format!("{FQDN}:6443"),
        "Demo-1A2B.westeurope.cloudapp.azure.com:6443".to_owned(),
        format!("{address}:6443"),
    ] {
        let (head, mut stream) = connect(&proxy, &target).await;
        assert_eq!(head, "HTTP/1.1 200 Connection Established\r\n\r\n", "{target}");
        assert_eq!(
            echoes(&mut stream, "hello through the tunnel").await,
            "hello through the tunnel"
        );
    }
    let listed = send(&emulator, "GET", "/_emulator/routes", None).await;
    assert_eq!(
        listed.body["routes"],
        json!([
            {"host": address, "port": 6443, "target": echo.to_string(), "resolves": true},
            {"host": FQDN, "port": 6443, "target": echo.to_string(), "resolves": true},
        ])
    );
    // Another port of the host has no route yet: the connection waits, as one to a load
    // balancer with no backend up does, and goes through once a server comes up behind it.
    let mut waiting = held(&proxy, &format!("{FQDN}:443")).await;
    emulator.add_route(FQDN, 443, echo);
    assert!(
        answer(&mut waiting).await.starts_with("HTTP/1.1 200"),
        "the held connection is joined once its route exists"
    );
    assert_eq!(echoes(&mut waiting, "late").await, "late");
    assert!(emulator.remove_route(FQDN, 443));

    // Replacing a route answers 200; removing it leaves the host unrouted.
    let replaced = send(
        &emulator,
        "PUT",
        "/_emulator/routes",
        Some(json!({"host": FQDN, "port": 6443, "target": echo.to_string()})),
    )
    .await;
    assert_eq!(replaced.status, StatusCode::OK);
    let removed = send(
        &emulator,
        "DELETE",
        "/_emulator/routes",
        Some(json!({"host": FQDN, "port": 6443})),
    )
    .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT);
    let again = send(
        &emulator,
        "DELETE",
        "/_emulator/routes",
        Some(json!({"host": FQDN, "port": 6443})),
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    drop(held(&proxy, &format!("{FQDN}:6443")).await);
    let (status, _) = refusal(&proxy, "nowhere.example.com:6443").await;
    assert_eq!(
        status, "HTTP/1.1 403 Forbidden",
        "a host the emulator does not hold"
    );
    assert!(emulator.remove_route(&address, 6443));
    assert!(emulator.routes().is_empty());
}

#[tokio::test]
async fn a_route_counts_only_while_an_emulated_resource_has_the_address() {
    let (emulator, proxy, _tls, address) = with_public_ip().await;
    let echo = echo_server().await;
    emulator.add_route("elsewhere.westeurope.cloudapp.azure.com", 6443, echo);
    let (status, message) = refusal(&proxy, "elsewhere.westeurope.cloudapp.azure.com:6443").await;
    assert_eq!(status, "HTTP/1.1 502 Bad Gateway");
    assert!(
        message.contains("does not resolve to an emulated address"),
        "{message}"
    );

    // Once the public IP is gone, its name and address resolve no more.
    emulator.add_route(FQDN, 6443, echo);
    emulator.add_route(&address, 6443, echo);
    let deleted = send(&emulator, "DELETE", &public_ip(), None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    emulator.advance_clock(Duration::from_mins(1));
    for target in [format!("{FQDN}:6443"), format!("{address}:6443")] {
        let (status, message) = refusal(&proxy, &target).await;
        assert_eq!(status, "HTTP/1.1 502 Bad Gateway", "{target}");
        assert!(
            message.contains("does not resolve to an emulated address"),
            "{message}"
        );
    }
    let listed = send(&emulator, "GET", "/_emulator/routes", None).await;
    assert!(
        listed.body["routes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|route| route["resolves"] == false)
    );
}

#[tokio::test]
async fn a_route_to_nothing_listening_is_a_bad_gateway() {
    let (emulator, proxy, _tls, _) = with_public_ip().await;
    // A port that was free a moment ago.
    let closed = TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    emulator.add_route(FQDN, 6443, closed);
    let (status, message) = refusal(&proxy, &format!("{FQDN}:6443")).await;
    assert_eq!(status, "HTTP/1.1 502 Bad Gateway");
    assert!(message.contains("cannot be reached"), "{message}");
}

#[tokio::test]
async fn routes_need_a_host_a_port_and_a_target() {
    let emulator = Emulator::new(Config::default());
    for body in [
        json!({"host": FQDN, "port": 6443}),
        json!({"host": FQDN, "port": 6443, "target": "localhost:6443"}),
        json!({"host": "", "port": 6443, "target": "127.0.0.1:6443"}),
        json!({"host": FQDN, "port": 0, "target": "127.0.0.1:6443"}),
        json!({"port": 6443, "target": "127.0.0.1:6443"}),
    ] {
        let refused = send(&emulator, "PUT", "/_emulator/routes", Some(body.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
    }
    assert!(emulator.routes().is_empty());
}

#[tokio::test]
async fn azure_hosts_are_answered_by_the_emulator_and_other_hosts_refused() {
    let (emulator, proxy, tls, _) = with_public_ip().await;
    // A route does not take an Azure host away from the emulator.
    emulator.add_route("management.azure.com", 443, echo_server().await);
    let (head, stream) = connect(&proxy, "management.azure.com:443").await;
    assert_eq!(head, "HTTP/1.1 200 Connection Established\r\n\r\n");
    let mut roots = RootCertStore::empty();
    roots.add(tls.ca_der().unwrap()).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("management.azure.com").unwrap(), stream)
        .await
        .unwrap();
    stream
        .write_all(
            b"GET /_emulator/health HTTP/1.1\r\nhost: management.azure.com\r\nconnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply).await;
    let reply = String::from_utf8_lossy(&reply);
    assert!(
        reply.starts_with("HTTP/1.1 200") && reply.ends_with("ok"),
        "{reply}"
    );

    let (status, message) = refusal(&proxy, "example.com:443").await;
    assert_eq!(status, "HTTP/1.1 403 Forbidden");
    assert!(message.contains("not an Azure endpoint"), "{message}");
}

/// From a management network, a private zone's name is reached only through the zone's link to
/// that network and a peering both ways; an open tunnel ends once the link is gone, and a new
/// one is refused.
#[tokio::test]
async fn from_a_management_network_a_private_name_needs_its_link_and_peering() {
    const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups";
    const NETWORK_API: &str = "api-version=2024-05-01";
    const DNS_API: &str = "api-version=2024-06-01";
    let hub = format!("{SUB}/hub/providers/Microsoft.Network/virtualNetworks/hub");
    let spoke = format!("{SUB}/c/providers/Microsoft.Network/virtualNetworks/c-vnet");
    let zone = format!("{SUB}/c/providers/Microsoft.Network/privateDnsZones/c.capz.io");
    let emulator = Emulator::new(Config {
        management_network: Some(hub.clone()),
        ..Config::default()
    });
    let put = async |path: String, body: Value| {
        let reply = send(&emulator, "PUT", &path, Some(body)).await;
        assert!(reply.status.is_success(), "{path}: {}", reply.body);
        emulator.advance_clock(Duration::from_mins(1));
    };
    for (group, network, prefix) in [("hub", &hub, "192.168.0.0/24"), ("c", &spoke, "10.0.0.0/16")] {
        put(
            format!("{SUB}/{group}?api-version=2021-04-01"),
            json!({"location": "westeurope"}),
        )
        .await;
        put(
            format!("{network}?{NETWORK_API}"),
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [prefix]}}}),
        )
        .await;
    }
    for (from, to, name) in [(&hub, &spoke, "hub-To-c-vnet"), (&spoke, &hub, "c-vnet-To-hub")] {
        put(
            format!("{from}/virtualNetworkPeerings/{name}?{NETWORK_API}"),
            json!({"properties": {"remoteVirtualNetwork": {"id": to}}}),
        )
        .await;
    }
    put(format!("{zone}?{DNS_API}"), json!({"location": "global"})).await;
    let link = format!("{zone}/virtualNetworkLinks/hub-link");
    put(
        format!("{link}?{DNS_API}"),
        json!({"location": "global", "properties": {"virtualNetwork": {"id": hub}, "registrationEnabled": false}}),
    )
    .await;
    put(
        format!("{zone}/A/apiserver?{DNS_API}"),
        json!({"properties": {"ttl": 10, "aRecords": [{"ipv4Address": "10.0.0.100"}]}}),
    )
    .await;
    let tls = Tls::generate(&[]).unwrap();
    let proxy = start_proxy(([127, 0, 0, 1], 0).into(), &emulator, &tls)
        .await
        .unwrap();
    emulator.add_route("apiserver.c.capz.io", 6443, echo_server().await);

    let (head, mut stream) = connect(&proxy, "apiserver.c.capz.io:6443").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream.write_all(b"ping").await.unwrap();
    let mut echoed = [0_u8; 4];
    stream.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");

    let deleted = send(&emulator, "DELETE", &format!("{link}?{DNS_API}"), None).await;
    assert!(deleted.status.is_success(), "{}", deleted.body);
    emulator.advance_clock(Duration::from_mins(1));
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the tunnel outlived the zone's link");
    let (status, message) = refusal(&proxy, "apiserver.c.capz.io:6443").await;
    assert_eq!(status, "HTTP/1.1 502 Bad Gateway", "{message}");

    // Linked again, the name reaches until the peering back goes.
    put(
        format!("{link}?{DNS_API}"),
        json!({"location": "global", "properties": {"virtualNetwork": {"id": hub}, "registrationEnabled": false}}),
    )
    .await;
    let (head, mut stream) = connect(&proxy, "apiserver.c.capz.io:6443").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let unpeered = send(
        &emulator,
        "DELETE",
        &format!("{spoke}/virtualNetworkPeerings/c-vnet-To-hub?{NETWORK_API}"),
        None,
    )
    .await;
    assert!(unpeered.status.is_success(), "{}", unpeered.body);
    emulator.advance_clock(Duration::from_mins(1));
    let closed = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the tunnel outlived the peering");
    let (status, message) = refusal(&proxy, "apiserver.c.capz.io:6443").await;
    assert_eq!(status, "HTTP/1.1 502 Bad Gateway", "{message}");
}
