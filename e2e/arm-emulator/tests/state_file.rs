//! The binary keeps its state across a restart: stopped with SIGTERM, it saves the state file, and
//! started again with it, it serves what was there.

#![cfg(unix)]
#![expect(clippy::unwrap_used, reason = "a failed step fails the test")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_TENANT};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

const GROUP: &str =
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/survivor?api-version=2021-04-01";

/// The emulator binary serving plain HTTP on a free port with `state`, and its base URL.
fn start(state: &Path, ca: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arm-emulator"))
        .args(["--plain-http", "--listen", "127.0.0.1:0", "--ca-file"])
        .arg(ca)
        .arg("--state-file")
        .arg(state)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("http://127.0.0.1:"),
        "the first line is {line:?}"
    );
    (child, line.trim().to_owned())
}

/// Stops the emulator as `kill` does and waits for it to exit.
fn terminate(mut child: Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut exited = None;
    for _ in 0..100 {
        exited = child.try_wait().unwrap();
        if exited.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if exited.is_none() {
        child.kill().unwrap();
    }
    assert!(
        exited.is_some_and(|status| status.success()),
        "the emulator did not exit cleanly on SIGTERM: {exited:?}"
    );
}

/// One request over a new HTTP/1.1 connection: the status and JSON body.
async fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (StatusCode, Value) {
    let address = base.trim_start_matches("http://");
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", address);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), usize::MAX)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A token from the emulator's token endpoint: each run signs with a key of its own.
async fn token(base: &str) -> String {
    let form = format!(
        "grant_type=client_credentials&client_id={DEFAULT_CLIENT_ID}&client_secret={DEFAULT_CLIENT_SECRET}&scope=https%3A%2F%2Fmanagement.azure.com%2F.default"
    );
    let (status, body) = send(
        base,
        "POST",
        &format!("/{DEFAULT_TENANT}/oauth2/v2.0/token"),
        &[("content-type", "application/x-www-form-urlencoded")],
        form,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    format!("Bearer {}", body["access_token"].as_str().unwrap())
}

#[tokio::test]
async fn state_saved_on_sigterm_is_served_after_a_restart() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("state-file-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let (state, ca) = (dir.join("state.json"), dir.join("ca.pem"));

    let (first, base) = start(&state, &ca);
    let bearer = token(&base).await;
    let headers = [
        ("authorization", bearer.as_str()),
        ("content-type", "application/json"),
    ];
    let group = json!({"location": "westeurope", "tags": {"kept": "yes"}}).to_string();
    let (status, body) = send(&base, "PUT", GROUP, &headers, group).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    terminate(first);
    assert!(state.exists(), "SIGTERM saved no state");

    let (second, base) = start(&state, &ca);
    let bearer = token(&base).await;
    let (status, body) = send(
        &base,
        "GET",
        GROUP,
        &[("authorization", bearer.as_str())],
        String::new(),
    )
    .await;
    terminate(second);
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["name"], "survivor");
    assert_eq!(body["location"], "westeurope");
    assert_eq!(body["tags"], json!({"kept": "yes"}));
    std::fs::remove_dir_all(&dir).unwrap();
}
