//! With the `otlp` feature, spans reach an OTLP/HTTP collector: a local server stands in for one
//! (`cargo test -p capz-kit --features otlp --test otlp`).

#![cfg(feature = "otlp")]

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use capz_kit::k8s_openapi::api::core::v1::ConfigMap;
use capz_kit::kube::api::ObjectMeta;
use capz_kit::telemetry::{LogFormat, Telemetry, reconcile_span};

/// The content type and body of each export request.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

async fn collect(State(received): State<Received>, headers: HeaderMap, body: Bytes) {
    let content_type = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    received
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((content_type, body.to_vec()));
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_spans_are_exported_over_otlp_http() {
    let received = Received::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/v1/traces", post(collect))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let guard = Telemetry::new("capz-otlp-test", LogFormat::Json, "info")
        .with_otlp_endpoint(Some(endpoint))
        .init()
        .unwrap();
    let object = ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("exported".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    reconcile_span("otlp-test", &object).in_scope(|| tracing::info!("reconciled"));
    // Dropping the guard flushes the batch, blocking until the collector answered.
    tokio::task::spawn_blocking(move || drop(guard)).await.unwrap();

    let received = received.lock().unwrap_or_else(PoisonError::into_inner);
    let (content_type, body) = received.first().expect("no export request arrived");
    assert_eq!(content_type, "application/x-protobuf");
    for expected in [
        "capz-otlp-test",
        "reconcile",
        "otlp-test",
        "ConfigMap",
        "exported",
    ] {
        assert!(contains(body, expected), "the export lacks {expected}");
    }
}
