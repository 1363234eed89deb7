//! Fault rules beyond a plain failure: a percentage of the matching calls, added latency, and a
//! connection dropped under a real HTTP client.

#![expect(clippy::unwrap_used, reason = "a failed step fails the test")]

mod common;

use std::time::{Duration, Instant};

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::faults::Fault;
use arm_emulator::throttle::RateLimits;
use arm_emulator::{Config, Emulator};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const GROUPS: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups";
const VERSION: &str = "api-version=2021-04-01";

/// A rule written as clients of the operations API write it.
fn rule(rule: Value) -> Fault {
    serde_json::from_value(rule).unwrap()
}

/// An emulator without request limits (the tests send many calls), holding the group `kept`.
async fn with_group() -> Emulator {
    let emulator = Emulator::new(Config {
        rate_limits: RateLimits::unlimited(),
        ..Config::default()
    });
    let created = get_or_put(&emulator, "PUT", "kept", Some(json!({"location": "westeurope"}))).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    emulator
}

async fn get_or_put(emulator: &Emulator, method: &str, group: &str, body: Option<Value>) -> common::Reply {
    let uri = format!("{GROUPS}/{group}?{VERSION}");
    common::call(emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await
}

#[tokio::test]
async fn a_percentage_rule_fails_about_that_share_of_the_calls() {
    let emulator = with_group().await;
    emulator.add_fault(rule(json!({
        "method": "GET",
        "path": "*/resourceGroups/kept",
        "status": 503,
        "code": "ServiceUnavailable",
        "percent": 30,
    })));
    let calls = 400;
    let mut failed = 0;
    for _ in 0..calls {
        let reply = get_or_put(&emulator, "GET", "kept", None).await;
        if reply.status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(reply.body["error"]["code"], "ServiceUnavailable");
            failed += 1;
        } else {
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            assert_eq!(reply.body["name"], "kept");
        }
    }
    // 120 expected; the bounds lie more than six standard deviations (9.2) away.
    assert!((60..=180).contains(&failed), "{failed} of {calls} failed");
    assert_eq!(
        emulator.count("GET", "Microsoft.Resources/resourceGroups", 503),
        failed
    );
    // Other calls are left alone.
    assert_eq!(
        get_or_put(&emulator, "PUT", "kept", Some(json!({"location": "westeurope"})))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_counted_percentage_rule_wears_out_only_when_it_applies() {
    let emulator = with_group().await;
    emulator.add_fault(rule(json!({
        "path": "*/resourceGroups/kept",
        "status": 429,
        "percent": 50,
        "count": 5,
    })));
    let mut throttled = 0;
    for _ in 0..100 {
        if get_or_put(&emulator, "GET", "kept", None).await.status == StatusCode::TOO_MANY_REQUESTS {
            throttled += 1;
        }
    }
    // Half of 100 calls would apply far more often than 5 times; the count caps it.
    assert_eq!(throttled, 5);
    assert!(emulator.faults().is_empty());
}

#[tokio::test]
async fn added_latency_delays_the_answer() {
    let emulator = with_group().await;
    emulator.add_fault(rule(
        json!({"method": "GET", "path": "*/resourceGroups/kept", "latencyMs": 300}),
    ));
    emulator.add_fault(rule(json!({
        "path": "*/resourceGroups/broken",
        "latencyMs": 200,
        "status": 500,
    })));
    let started = Instant::now();
    let slow = get_or_put(&emulator, "GET", "kept", None).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300),
        "answered after {elapsed:?}"
    );
    // Latency alone does not fail the call.
    assert_eq!(slow.status, StatusCode::OK, "{}", slow.body);
    assert_eq!(slow.body["name"], "kept");

    let started = Instant::now();
    let failed = get_or_put(&emulator, "GET", "broken", None).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200),
        "answered after {elapsed:?}"
    );
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(failed.body["error"]["code"], "InternalServerError");
}

/// One GET over a new HTTP/1.1 connection with hyper's client: the status and body, or the
/// client's error.
async fn get_over_http(
    address: std::net::SocketAddr,
    path: &str,
    token: &str,
) -> Result<(StatusCode, Value), String> {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::get(path)
        .header("host", address.to_string())
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = sender
        .send_request(request)
        .await
        .map_err(|err| err.to_string())?;
    let status = response.status();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX)
        .await
        .map_err(|err| err.to_string())?;
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

#[tokio::test]
async fn a_dropped_connection_fails_the_client_over_a_real_socket() {
    let running = arm_emulator::start(([127, 0, 0, 1], 0).into(), Config::default())
        .await
        .unwrap();
    let token = running.emulator.access_token(DEFAULT_CLIENT_ID).unwrap();
    running.emulator.add_fault(rule(json!({
        "method": "GET",
        "path": "*/resourceGroups/*",
        "dropConnection": true,
        "count": 1,
    })));
    let path = format!("{GROUPS}/absent?{VERSION}");
    let dropped = get_over_http(running.address, &path, &token).await;
    assert!(dropped.is_err(), "the connection was not dropped: {dropped:?}");
    // The rule is used up: the same call now gets its answer.
    let (status, body) = get_over_http(running.address, &path, &token).await.unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["code"], "ResourceGroupNotFound");
}
