//! Every example of the CAPZ book for our kinds (rebuilt as fixtures under `fixtures/book`) reads
//! into our types and writes back unchanged: no field lost, none invented.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "a broken fixture fails the test"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use capz_api::{
    AzureCluster, AzureClusterIdentity, AzureClusterTemplate, AzureMachine, AzureMachinePool,
    AzureMachinePoolMachine, AzureMachineTemplate, AzureManagedCluster, AzureManagedClusterTemplate,
    AzureManagedControlPlane, AzureManagedControlPlaneTemplate, AzureManagedMachinePool,
    AzureManagedMachinePoolTemplate,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The package directory, read when the test runs: the build directory is shared between clones,
/// so the path compiled into a reused test binary may name another clone.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn fixtures() -> Vec<PathBuf> {
    let dir = manifest_dir().join("tests/fixtures/book");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the fixture directory exists")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The `spec` default of each kind that has one, as the API server applies it on create.
fn spec_defaults() -> BTreeMap<String, Value> {
    capz_api::crd::all()
        .expect("the CRDs generate")
        .into_iter()
        .filter_map(|file| {
            let schema = serde_json::to_value(&file.crd.spec.versions[0].schema).ok()?;
            let default = schema
                .pointer("/openAPIV3Schema/properties/spec/default")?
                .clone();
            Some((file.crd.spec.names.kind, default))
        })
        .collect()
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the fixture is readable");
    serde_saphyr::from_multiple(&text).unwrap_or_else(|err| panic!("{}: not YAML: {err}", path.display()))
}

/// Reads `document` as `T` and writes it back.
fn round_trip<T: DeserializeOwned + Serialize>(document: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(document.clone()).map_err(|err| err.to_string())?;
    serde_json::to_value(&typed).map_err(|err| err.to_string())
}

fn round_trip_by_kind(document: &Value) -> Result<Value, String> {
    match document["kind"].as_str().unwrap_or_default() {
        "AzureCluster" => round_trip::<AzureCluster>(document),
        "AzureClusterTemplate" => round_trip::<AzureClusterTemplate>(document),
        "AzureClusterIdentity" => round_trip::<AzureClusterIdentity>(document),
        "AzureMachine" => round_trip::<AzureMachine>(document),
        "AzureMachineTemplate" => round_trip::<AzureMachineTemplate>(document),
        "AzureMachinePool" => round_trip::<AzureMachinePool>(document),
        "AzureMachinePoolMachine" => round_trip::<AzureMachinePoolMachine>(document),
        "AzureManagedControlPlane" => round_trip::<AzureManagedControlPlane>(document),
        "AzureManagedControlPlaneTemplate" => round_trip::<AzureManagedControlPlaneTemplate>(document),
        "AzureManagedCluster" => round_trip::<AzureManagedCluster>(document),
        "AzureManagedClusterTemplate" => round_trip::<AzureManagedClusterTemplate>(document),
        "AzureManagedMachinePool" => round_trip::<AzureManagedMachinePool>(document),
        "AzureManagedMachinePoolTemplate" => round_trip::<AzureManagedMachinePoolTemplate>(document),
        other => Err(format!("kind {other:?} is not one of ours")),
    }
}

/// The paths at which two JSON values differ.
fn differences(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                match b.get(key) {
                    Some(other) => differences(&format!("{path}.{key}"), value, other, out),
                    None => out.push(format!("{path}.{key}: lost")),
                }
            }
            out.extend(
                b.keys()
                    .filter(|key| !a.contains_key(*key))
                    .map(|key| format!("{path}.{key}: invented")),
            );
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{index}]"), x, y, out);
            }
        }
        _ if expected == actual => {}
        _ => out.push(format!("{path}: {expected} became {actual}")),
    }
}

#[test]
fn book_examples_round_trip_through_the_types() {
    let defaults = spec_defaults();
    let mut failures = Vec::new();
    let mut count = 0;
    for file in fixtures() {
        for (index, mut document) in documents(&file).into_iter().enumerate() {
            count += 1;
            // A manifest may leave out a spec whose schema has a default (AzureManagedCluster);
            // what the controllers read is the object after the API server applied it.
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            if let (Some(default), Some(object)) = (defaults.get(&kind), document.as_object_mut()) {
                object.entry("spec").or_insert_with(|| default.clone());
            }
            let document = &document;
            let name = format!(
                "{} (document {})",
                file.file_name().unwrap_or_default().to_string_lossy(),
                index + 1
            );
            match round_trip_by_kind(document) {
                Ok(written) => {
                    let mut diffs = Vec::new();
                    differences("", document, &written, &mut diffs);
                    if !diffs.is_empty() {
                        failures.push(format!("{name}:\n  {}", diffs.join("\n  ")));
                    }
                }
                Err(err) => failures.push(format!("{name}: {err}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} documents failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The book holds 70 documents of our kinds; a lost fixture must not go unnoticed.
    assert!(count >= 70, "only {count} documents found");
}

#[test]
fn the_round_trip_check_catches_unknown_fields_and_wrong_types() {
    // The check itself must be able to fail: an invented field is reported as lost on the way back,
    // a wrong type is a read error.
    let unknown: Value = serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureMachine",
        "metadata": { "name": "m" },
        "spec": { "vmSize": "Standard_D2s_v3", "osDisk": { "osType": "Linux" }, "vmSzie": "typo" }
    });
    let written = round_trip_by_kind(&unknown).expect("unknown fields are ignored when reading");
    let mut diffs = Vec::new();
    differences("", &unknown, &written, &mut diffs);
    assert_eq!(diffs, vec![".spec.vmSzie: lost".to_owned()]);

    let mut wrong_type = unknown.clone();
    wrong_type["spec"] = serde_json::json!({ "vmSize": 3, "osDisk": { "osType": "Linux" } });
    assert!(round_trip_by_kind(&wrong_type).is_err());
}
