//! Replays real Azure sessions against the emulator and compares the answers.
//!
//! The recordings (HTTP sessions recorded against Azure by the Azure Service Operator project) live
//! beside the clone in `../shared/reference/arm-recordings`. A recording is replayed when every
//! resource type it touches is one the emulator serves. For each interaction the emulator's answer
//! must have the recorded status code, the long-running-operation headers the recording has, and a
//! body of the same structure: the same property paths with the same JSON types (a GUID, an IP
//! address or an RFC 3339 time where Azure answers one), and the same values for the properties
//! that carry meaning rather than identity (`type`, `location`, `provisioningState`, error codes). Mismatches that are understood are listed, with their
//! reasons, in `tests/replay-mismatches.txt`; any other mismatch fails the test, and so does a match
//! rate under 90%.

#![expect(clippy::unwrap_used, reason = "a broken recording or answer fails the test")]

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::{Config, Emulator};
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

/// The package directory, read when the test runs: the build directory is shared between clones,
/// so the path compiled into a reused test binary may name another clone.
/// The admin password sent where a recording shows its redaction placeholder.
const REPLAYED_PASSWORD: &str = "Replayed-Passw0rd";

fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn recordings_dir() -> PathBuf {
    manifest_dir().join("../../../shared/reference/arm-recordings")
}

/// Sessions recorded in a subscription whose policies deployed the Azure Policy add-on on every
/// AKS cluster: their clusters show it although no request asked for it.
const POLICY_ADD_ON_SESSIONS: &[&str] = &[
    "Test_AKS_ManagedCluster_20240901_CRUD.yaml",
    "Test_AKS_ManagedCluster_20250801_CRUD.yaml",
];

/// Resource types the emulator serves.
const SERVED: &[&str] = &[
    "microsoft.network/virtualnetworks",
    "microsoft.network/virtualnetworks/subnets",
    "microsoft.network/virtualnetworks/virtualnetworkpeerings",
    "microsoft.network/bastionhosts",
    "microsoft.network/privatednszones",
    "microsoft.network/privatednszones/virtualnetworklinks",
    "microsoft.network/privatednszones/a",
    "microsoft.network/privatednszones/aaaa",
    "microsoft.network/privatednszones/cname",
    "microsoft.network/privatednszones/mx",
    "microsoft.network/privatednszones/ptr",
    "microsoft.network/privatednszones/srv",
    "microsoft.network/privatednszones/txt",
    "microsoft.network/privateendpoints",
    "microsoft.network/privateendpoints/privatednszonegroups",
    "microsoft.network/privatelinkservices",
    "microsoft.storage/storageaccounts",
    "microsoft.network/networksecuritygroups",
    "microsoft.network/networksecuritygroups/securityrules",
    "microsoft.network/routetables",
    "microsoft.network/routetables/routes",
    "microsoft.network/natgateways",
    "microsoft.network/publicipaddresses",
    "microsoft.network/publicipprefixes",
    "microsoft.network/loadbalancers",
    "microsoft.network/loadbalancers/inboundnatrules",
    "microsoft.network/networkinterfaces",
    "microsoft.compute/virtualmachines",
    "microsoft.compute/virtualmachines/extensions",
    "microsoft.compute/virtualmachinescalesets",
    "microsoft.compute/virtualmachinescalesets/extensions",
    "microsoft.compute/virtualmachinescalesets/virtualmachines",
    "microsoft.compute/disks",
    "microsoft.compute/snapshots",
    "microsoft.compute/images",
    "microsoft.compute/availabilitysets",
    "microsoft.managedidentity/userassignedidentities",
    "microsoft.managedidentity/userassignedidentities/federatedidentitycredentials",
    "microsoft.authorization/roleassignments",
    "microsoft.authorization/roledefinitions",
    "microsoft.containerservice/managedclusters",
    "microsoft.containerservice/managedclusters/agentpools",
    "microsoft.containerservice/managedclusters/maintenanceconfigurations",
    // The credential listings: POST {cluster}/listCluster...Credential.
    "microsoft.containerservice/managedclusters/listclusteradmincredential",
    "microsoft.containerservice/managedclusters/listclusterusercredential",
];

/// Whether the emulator serves what a recorded path addresses: resource groups, operation polls
/// and the types above.
fn served(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let after_subscription = lower.splitn(4, '/').nth(3).unwrap_or_default();
    let Some((_, provider_path)) = lower.rsplit_once("/providers/") else {
        return after_subscription.starts_with("resourcegroups")
            || after_subscription.starts_with("operationresults/");
    };
    let segments: Vec<&str> = provider_path.split('/').collect();
    if segments.len() == 5 && segments[1] == "locations" {
        return true;
    }
    // Private DNS polls its operations under the resource group.
    if segments.len() == 3 && segments[1].starts_with("privatednsoperation") {
        return true;
    }
    let type_name = std::iter::once(segments[0])
        .chain(segments[1..].iter().step_by(2).copied())
        .collect::<Vec<_>>()
        .join("/");
    SERVED.contains(&type_name.as_str())
}

struct Interaction {
    method: String,
    path_and_query: String,
    body: String,
    status: u16,
    response_body: String,
    /// The recorded `Location` / `Azure-AsyncOperation` URLs, as (header, path and query).
    lro_urls: Vec<(String, String)>,
}

impl Interaction {
    /// Whether this interaction polls an operation, and whether the recorded answer says it
    /// had ended.
    fn poll_ended(&self) -> Option<bool> {
        let path = self
            .path_and_query
            .split('?')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let polls = path.contains("/operationresults/")
            || path.contains("/operations/")
            || path.contains("/diskoperations/")
            || path.contains("/asyncoperations/")
            || path.contains("/privatednsoperationstatuses/")
            || path.contains("/privatednsoperationresults/");
        if !polls || self.method != "GET" {
            return None;
        }
        // AKS reports its progress in the status (`ProvisioningControlPlane`, ...).
        let status = parse(&self.response_body)["status"].as_str().map(str::to_owned);
        Some(
            self.status != 202
                && status.is_none_or(|status| matches!(status.as_str(), "Succeeded" | "Failed" | "Canceled")),
        )
    }
}

/// The path and query of a URL.
fn path_of(url: &str) -> String {
    url.splitn(4, '/')
        .nth(3)
        .map(|rest| format!("/{rest}"))
        .unwrap_or_default()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn interactions(file: &Path) -> Vec<Interaction> {
    let yaml = std::fs::read_to_string(file).unwrap();
    let recording: Value = serde_saphyr::from_str(&yaml).unwrap();
    recording["interactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|interaction| {
            let request = &interaction["request"];
            let response = &interaction["response"];
            let path_and_query = path_of(&text(&request["url"]));
            let headers = response["headers"].as_object().cloned().unwrap_or_default();
            let status = response["code"].as_u64().unwrap_or_default();
            let mut lro_urls: Vec<(String, String)> = headers
                .iter()
                .filter(|(name, _)| {
                    name.eq_ignore_ascii_case("azure-asyncoperation")
                        // A Location on a 200 or 201 names the resource, not an operation.
                        || (name.eq_ignore_ascii_case("location") && status == 202)
                })
                .filter_map(|(name, values)| {
                    Some((name.to_ascii_lowercase(), path_of(values.get(0)?.as_str()?)))
                })
                .collect();
            // Clients poll Azure-AsyncOperation when a response has both; Microsoft.Compute gives
            // both the same path, so that header's URL must win.
            lro_urls.sort_by_key(|(name, _)| name == "azure-asyncoperation");
            Interaction {
                method: text(&request["method"]),
                path_and_query,
                body: text(&request["body"]),
                status: u16::try_from(response["code"].as_u64().unwrap_or_default()).unwrap_or_default(),
                response_body: text(&response["body"]),
                lro_urls,
            }
        })
        .collect()
}

/// Differences in structure between a recorded body and the emulator's.
fn shape_differences(path: &str, recorded: &Value, ours: &Value, out: &mut Vec<String>) {
    const MEANINGFUL: [&str; 4] = ["type", "location", "provisioningState", "code"];
    match (recorded, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(other) => {
                        if MEANINGFUL.contains(&key.as_str()) && value.is_string() && value != other {
                            out.push(format!("{path}.{key}: {value} != {other}"));
                        } else {
                            shape_differences(&format!("{path}.{key}"), value, other, out);
                        }
                    }
                    None => out.push(format!("{path}.{key}: missing")),
                }
            }
            out.extend(
                b.keys()
                    .filter(|key| !a.contains_key(*key))
                    .map(|key| format!("{path}.{key}: extra")),
            );
        }
        (Value::Array(a), Value::Array(b)) => {
            if let (Some(x), Some(y)) = (a.first(), b.first()) {
                shape_differences(&format!("{path}[]"), x, y, out);
            } else if a.is_empty() != b.is_empty() {
                out.push(format!("{path}: {} items != {}", a.len(), b.len()));
            }
        }
        (Value::String(a), Value::String(b)) => {
            if let Some(shape) = string_shape(a)
                && string_shape(b) != Some(shape)
            {
                out.push(format!("{path}: {b:?} is not {shape} as {a:?} is"));
            }
        }
        (a, b) if std::mem::discriminant(a) == std::mem::discriminant(b) => {}
        (a, b) => out.push(format!("{path}: {a} != {b}")),
    }
}

/// The shape of a string that carries one: a GUID, an IPv4 or IPv6 address, or an RFC 3339 time.
/// Where Azure answers such a string, the emulator must answer one of the same shape.
fn string_shape(text: &str) -> Option<&'static str> {
    // Only the hyphenated form: the parser also takes 32 bare hex digits, which hashes can be.
    if text.len() == 36 && uuid::Uuid::try_parse(text).is_ok() {
        return Some("a GUID");
    }
    if text.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some("an IPv4 address");
    }
    if text.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some("an IPv6 address");
    }
    is_rfc3339(text).then_some("an RFC 3339 time")
}

/// Whether `text` is an RFC 3339 date and time: `2024-07-30T18:52:26.3200589+00:00`, fraction
/// optional, `Z` or an offset.
fn is_rfc3339(text: &str) -> bool {
    fn fits(text: &str, pattern: &str) -> bool {
        text.len() == pattern.len()
            && text.bytes().zip(pattern.bytes()).all(|(c, p)| match p {
                b'd' => c.is_ascii_digit(),
                b'T' => c.eq_ignore_ascii_case(&b'T'),
                b'+' => c == b'+' || c == b'-',
                other => c == other,
            })
    }
    let Some((date_time, rest)) = text.split_at_checked(19) else {
        return false;
    };
    if !fits(date_time, "dddd-dd-ddTdd:dd:dd") {
        return false;
    }
    let zone = match rest.strip_prefix('.') {
        Some(fraction) => {
            let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            &fraction[digits..]
        }
        None => rest,
    };
    zone.eq_ignore_ascii_case("Z") || fits(zone, "+dd:dd")
}

/// Pairs each GUID Azure generated in a recorded answer (an identity's principal id, say) with the
/// one the emulator generated in the same place, so later requests that reuse it — as the recorded
/// client did — name the emulator's.
fn learn_generated_ids(recorded: &Value, ours: &Value, learned: &mut HashMap<String, String>) {
    match (recorded, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                if let Some(other) = b.get(key) {
                    learn_generated_ids(value, other, learned);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter().zip(b) {
                learn_generated_ids(x, y, learned);
            }
        }
        (Value::String(a), Value::String(b)) if a != b => {
            // Whole GUIDs, or GUIDs inside names Azure made up (a private endpoint's interface
            // is `<endpoint>.nic.<guid>`): paired when they are all that differs.
            let (theirs, mine) = (guids_in(a), guids_in(b));
            if theirs.is_empty() || theirs.len() != mine.len() {
                return;
            }
            let replaced = theirs.iter().zip(&mine).fold(a.clone(), |text, (recorded, own)| {
                text.replace(recorded.as_str(), own)
            });
            if replaced.eq_ignore_ascii_case(b) {
                for (recorded, own) in theirs.into_iter().zip(mine) {
                    learned.insert(recorded, own);
                }
            }
        }
        _ => {}
    }
}

/// The hyphenated GUIDs in a string, in order.
fn guids_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut start = 0;
    while start + 36 <= text.len() {
        match text.get(start..start + 36) {
            Some(window) if string_shape(window) == Some("a GUID") => {
                found.push(window.to_owned());
                start += 36;
            }
            _ => start += 1,
        }
    }
    found
}

fn parse(body: &str) -> Value {
    if body.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or(Value::String(body.into()))
    }
}

/// The path of a URL without its query, lower-cased: how a recorded operation URL is recognised.
fn poll_key(path_and_query: &str) -> String {
    path_and_query
        .split('?')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// Replays one recording; returns (interactions, mismatches as "file#index: reason").
///
/// Deleting a resource group takes 5 s of emulated time, compute, private DNS and storage
/// operations 30 s, other operations finish by the next request. The replay only moves the clock when the client polls an operation whose recorded
/// answer says it had ended, so the emulator must report operations as running until their time
/// has passed, and with the recorded outcome once it has.
async fn replay(file: &Path) -> (usize, Vec<String>) {
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    // Network operations finish within a poll or two; deleting a group, compute, private DNS
    // and storage operations take a while.
    let emulator = Emulator::new(Config {
        latencies: [
            ("Microsoft.Resources/resourceGroups", 5),
            ("Microsoft.Compute/virtualMachines", 30),
            ("Microsoft.Compute/virtualMachines/extensions", 30),
            ("Microsoft.Compute/disks", 30),
            ("Microsoft.Compute/snapshots", 30),
            ("Microsoft.Compute/images", 30),
            ("Microsoft.Compute/virtualMachineScaleSets", 30),
            ("Microsoft.Compute/virtualMachineScaleSets/extensions", 30),
            ("Microsoft.Network/privateDnsZones", 30),
            ("Microsoft.Storage/storageAccounts", 30),
            ("Microsoft.Network/privateDnsZones/virtualNetworkLinks", 30),
            ("Microsoft.ContainerService/managedClusters", 30),
            ("Microsoft.ContainerService/managedClusters/agentPools", 30),
        ]
        .map(|(resource_type, seconds)| (resource_type.to_owned(), Duration::from_secs(seconds)))
        .into(),
        policy_add_ons: if POLICY_ADD_ON_SESSIONS.contains(&name.as_str()) {
            vec!["azurepolicy".to_owned()]
        } else {
            Vec::new()
        },
        ..Config::default()
    });
    // The recordings' clients were signed in; every replayed call carries a token.
    let bearer = format!("Bearer {}", emulator.access_token(DEFAULT_CLIENT_ID).unwrap());
    // Recorded operation URLs -> the emulator's URLs for the same operations.
    let mut operation_urls: HashMap<String, String> = HashMap::new();
    let mut generated_ids: HashMap<String, String> = HashMap::new();
    let mut mismatches = Vec::new();
    let recorded = interactions(file);
    for (index, interaction) in recorded.iter().enumerate() {
        let mut target = interaction.path_and_query.clone();
        if let Some(ended) = interaction.poll_ended() {
            // Clients poll the URL the service gave them.
            let Some(url) = operation_urls.get(&poll_key(&target)) else {
                mismatches.push(format!("{name}#{index} GET: no operation URL to poll"));
                continue;
            };
            target.clone_from(url);
            if ended {
                emulator.advance_clock(Duration::from_mins(1));
            }
        }
        // The recorded client named what Azure generated in paths too.
        let target = generated_ids.iter().fold(target, |path, (recorded, ours)| {
            path.replace(recorded.as_str(), ours)
        });
        let request = Request::builder()
            .method(interaction.method.as_str())
            .uri(&target)
            .header("content-type", "application/json")
            .header("authorization", &bearer)
            .body(Body::from(
                generated_ids
                    .iter()
                    .fold(interaction.body.clone(), |body, (recorded, ours)| {
                        body.replace(recorded.as_str(), ours)
                    })
                    // The recorder hid the password it sent; Azure took it, so it met the rules.
                    .replace("{PASSWORD}", REPLAYED_PASSWORD),
            ))
            .unwrap();
        let response = emulator.router().oneshot(request).await.unwrap();
        let status = response.status();
        let mut problems = Vec::new();
        for (header, recorded_url) in &interaction.lro_urls {
            match response
                .headers()
                .get(header.as_str())
                .and_then(|v| v.to_str().ok())
            {
                Some(ours) => {
                    operation_urls.insert(poll_key(recorded_url), path_of(ours));
                }
                None => problems.push(format!("no {header} header")),
            }
        }
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let ours = parse(&String::from_utf8_lossy(&body));
        if status != StatusCode::from_u16(interaction.status).unwrap() {
            problems.push(format!("status {} != {}", status.as_u16(), interaction.status));
        }
        let recorded_body = parse(&interaction.response_body);
        shape_differences("", &recorded_body, &ours, &mut problems);
        learn_generated_ids(&recorded_body, &ours, &mut generated_ids);
        if !problems.is_empty() {
            mismatches.push(format!(
                "{name}#{index} {} {}: {}",
                interaction.method,
                interaction.path_and_query.split('?').next().unwrap_or_default(),
                problems.join("; ")
            ));
        }
    }
    (recorded.len(), mismatches)
}

#[tokio::test]
async fn recorded_azure_sessions_replay_against_the_emulator() {
    let dir = recordings_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("replay skipped: no recordings at {}", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let known: BTreeSet<String> = include_str!("replay-mismatches.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    let (mut total, mut replayed_files, mut unexplained, mut mismatched_count) =
        (0, Vec::new(), Vec::new(), 0);
    for file in files {
        if !interactions(&file)
            .iter()
            .all(|i| served(i.path_and_query.split('?').next().unwrap_or_default()))
        {
            continue;
        }
        let (count, mismatches) = replay(&file).await;
        total += count;
        mismatched_count += mismatches.len();
        replayed_files.push(file.file_name().unwrap().to_string_lossy().into_owned());
        unexplained.extend(
            mismatches
                .into_iter()
                .filter(|m| !known.contains(m.split_whitespace().next().unwrap_or_default())),
        );
    }
    let rate = 100.0 * f64::from(u32::try_from(total - mismatched_count).unwrap())
        / f64::from(u32::try_from(total.max(1)).unwrap());
    eprintln!(
        "replayed {} recordings, {total} interactions, {rate:.1}% match: {replayed_files:?}",
        replayed_files.len()
    );
    assert!(
        !replayed_files.is_empty(),
        "no recording is covered by the emulator"
    );
    assert!(
        unexplained.is_empty(),
        "mismatches not listed in tests/replay-mismatches.txt:\n{}",
        unexplained.join("\n")
    );
    assert!(
        rate >= 90.0,
        "only {rate:.1}% of the replayed interactions match Azure"
    );
}

#[test]
fn the_shape_comparison_notices_what_differs() {
    let recorded = serde_json::json!({"id": "/a", "type": "T", "properties": {"provisioningState": "Succeeded", "n": 1}});
    let mut problems = Vec::new();
    shape_differences(
        "",
        &recorded,
        &serde_json::json!({"id": "/b", "type": "T", "properties": {"provisioningState": "Succeeded", "n": 2}}),
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:?}");
    shape_differences(
        "",
        &recorded,
        &serde_json::json!({"id": 3, "type": "U", "properties": {"extra": true}}),
        &mut problems,
    );
    assert_eq!(
        problems,
        vec![
            ".id: \"/a\" != 3",
            ".properties.n: missing",
            ".properties.provisioningState: missing",
            ".properties.extra: extra",
            ".type: \"T\" != \"U\"",
        ]
    );
}

#[test]
fn guids_addresses_and_times_are_compared_as_shapes() {
    let recorded = serde_json::json!({
        "principalId": "4f7b1a3e-0000-4000-8000-00000000abcd",
        "ipAddress": "20.1.2.3",
        "ipv6": "2603:1030::1",
        "startTime": "2024-07-30T18:52:26.3200589+00:00",
        "name": "anything",
    });
    let mut problems = Vec::new();
    let alike = serde_json::json!({
        "principalId": "00000000-0000-0000-0000-000000000001",
        "ipAddress": "10.0.0.4",
        "ipv6": "fd00::4",
        "startTime": "2026-01-01T00:00:00Z",
        "name": "else",
    });
    shape_differences("", &recorded, &alike, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    let unlike = serde_json::json!({
        "principalId": "not-a-guid",
        "ipAddress": "fd00::4",
        "ipv6": "20.1.2.3",
        "startTime": "2026-01-01 00:00:00",
        "name": "4f7b1a3e-0000-4000-8000-00000000abcd",
    });
    shape_differences("", &recorded, &unlike, &mut problems);
    assert_eq!(
        problems,
        vec![
            ".ipAddress: \"fd00::4\" is not an IPv4 address as \"20.1.2.3\" is",
            ".ipv6: \"20.1.2.3\" is not an IPv6 address as \"2603:1030::1\" is",
            ".principalId: \"not-a-guid\" is not a GUID as \"4f7b1a3e-0000-4000-8000-00000000abcd\" is",
            ".startTime: \"2026-01-01 00:00:00\" is not an RFC 3339 time as \"2024-07-30T18:52:26.3200589+00:00\" is",
        ]
    );
}

/// Every built-in role the emulator serves carries the id Azure gives it: the recorded sessions
/// list Azure's built-in roles.
#[tokio::test]
async fn built_in_roles_carry_azures_ids() {
    let Ok(entries) = std::fs::read_dir(recordings_dir()) else {
        eprintln!("skipped: no recordings at {}", recordings_dir().display());
        return;
    };
    let mut azure: HashMap<String, String> = HashMap::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "yaml") {
            continue;
        }
        for interaction in interactions(&path) {
            let body = parse(&interaction.response_body);
            let listed = body["value"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| vec![body.clone()]);
            for role in listed {
                if role["properties"]["type"] == "BuiltInRole"
                    && let (Some(name), Some(id)) =
                        (role["properties"]["roleName"].as_str(), role["name"].as_str())
                {
                    azure.insert(name.to_owned(), id.to_owned());
                }
            }
        }
    }
    assert!(azure.len() > 100, "the recordings list Azure's built-in roles");
    let emulator = Emulator::new(Config::default());
    let bearer = format!("Bearer {}", emulator.access_token(DEFAULT_CLIENT_ID).unwrap());
    let request = Request::builder()
        .uri("/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions?api-version=2022-04-01")
        .header("authorization", &bearer)
        .body(Body::empty())
        .unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    let served = parse(&String::from_utf8_lossy(
        &to_bytes(response.into_body(), usize::MAX).await.unwrap(),
    ));
    let served = served["value"].as_array().cloned().unwrap_or_default();
    assert!(!served.is_empty());
    for role in served {
        let name = role["properties"]["roleName"].as_str().unwrap();
        assert_eq!(
            azure.get(name).map(String::as_str),
            role["name"].as_str(),
            "the id of built-in role {name}"
        );
    }
}
