//! What the integration tests share: signing in, and sending one request to the emulator's router.

#![expect(clippy::expect_used, reason = "a request that cannot be made fails the test")]

use arm_emulator::Emulator;
use arm_emulator::config::DEFAULT_CLIENT_ID;
use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

/// An answer: status, headers and the JSON body (`null` when empty or not JSON).
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    #[allow(dead_code, reason = "only some test crates read the headers")]
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

impl Reply {
    /// A header's value, empty when it is missing.
    #[allow(dead_code, reason = "only some test crates read the headers")]
    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }
}

/// `Bearer <token>` for a configured principal; every ARM call needs one.
pub(crate) fn bearer(emulator: &Emulator, client_id: &str) -> String {
    let token = emulator.access_token(client_id).expect("a configured principal");
    format!("Bearer {token}")
}

/// Sends a request signed in as `client_id`, with extra `headers`.
pub(crate) async fn call(
    emulator: &Emulator,
    client_id: &str,
    method: &str,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    let body = body.map_or_else(Body::empty, |body| Body::from(body.to_string()));
    call_with_body(emulator, client_id, method, uri, body, headers).await
}

/// Sends a request signed in as `client_id` with a body of any bytes.
pub(crate) async fn call_with_body(
    emulator: &Emulator,
    client_id: &str,
    method: &str,
    uri: &str,
    body: Body,
    headers: &[(&str, &str)],
) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .header("authorization", bearer(emulator, client_id));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(body).expect("a valid request");
    let response = emulator
        .router()
        .oneshot(request)
        .await
        .expect("the router answers");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a readable body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

/// Creates the resource group `group` (its id) in `location`, holding a virtual network `vnet`
/// (10.0.0.0/16) with a subnet `nodes` (10.0.1.0/24); returns the network's creation answer.
#[allow(dead_code, reason = "only some test crates build a network")]
pub(crate) async fn group_with_network(emulator: &Emulator, group: &str, location: &str) -> Reply {
    let created = call(
        emulator,
        DEFAULT_CLIENT_ID,
        "PUT",
        &format!("{group}?api-version=2021-04-01"),
        Some(json!({ "location": location })),
        &[],
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let vnet = call(
        emulator,
        DEFAULT_CLIENT_ID,
        "PUT",
        &format!("{group}/providers/Microsoft.Network/virtualNetworks/vnet?api-version=2024-05-01"),
        Some(json!({
            "location": location,
            "properties": {
                "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
                "subnets": [{"name": "nodes", "properties": {"addressPrefix": "10.0.1.0/24"}}]
            }
        })),
        &[],
    )
    .await;
    assert_eq!(vnet.status, StatusCode::CREATED, "{}", vnet.body);
    vnet
}
