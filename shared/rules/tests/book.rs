//! Every example of the CAPZ book for the kinds with admission rules (the fixtures of capz-api) is
//! admitted: defaulted as the webhook would, then validated on create. A machine made from each
//! machine template is admitted too.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use capz_api::{AzureCluster, AzureClusterTemplate, AzureMachine, AzureMachineTemplate};
use capz_rules::{Context, Features, Operation, Rules, SystemEntropy};
use serde_json::{Value, json};

mod common;

/// The package directory, read when the test runs: the build directory is shared between clones,
/// so the path compiled into a reused test binary may name another clone.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn fixtures() -> Result<Vec<PathBuf>, String> {
    let dir = manifest_dir().join("../api/tests/fixtures/book");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|err| format!("{}: {err}", dir.display()))? {
        let path = entry.map_err(|err| format!("{}: {err}", dir.display()))?.path();
        if path.extension().is_some_and(|ext| ext == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The name of the fixture `path`, as failures name it.
fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

const SUBSCRIPTION: &str = "01234567-89ab-cdef-0123-4567890abcde";

/// An OpenSSH public key as the spec carries it (base64 of the `authorized_keys` line).
fn ssh_key() -> String {
    let mut blob = Vec::new();
    for part in [b"ssh-ed25519".as_slice(), &[42; 32]] {
        blob.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
        blob.extend_from_slice(part);
    }
    STANDARD.encode(format!("ssh-ed25519 {} book@capz-rs", STANDARD.encode(blob)))
}

/// The value clusterctl would put in for a variable of the book's templates.
fn variable(name: &str) -> Option<String> {
    Some(match name {
        "CLUSTER_NAME" => "capz-book".to_owned(),
        "AZURE_LOCATION" => "westeurope".to_owned(),
        "AZURE_CONTROL_PLANE_MACHINE_TYPE" | "AZURE_NODE_MACHINE_TYPE" => "Standard_D2s_v3".to_owned(),
        "AZURE_SSH_PUBLIC_KEY_B64" | "YOUR_SSH_PUB_KEY" => ssh_key(),
        "AZURE_SUBSCRIPTION_ID" => SUBSCRIPTION.to_owned(),
        "RESOURCE_GROUP_NAME" => "capz-book-rg".to_owned(),
        "CLUSTER_IDENTITY_NAME" => "cluster-identity".to_owned(),
        "CLUSTER_IDENTITY_NAMESPACE" => "default".to_owned(),
        "KUBERNETES_VERSION" => "v1.33.5".to_owned(),
        "USER_ASSIGNED_IDENTITY_PROVIDER_ID" => format!(
            "azure:///subscriptions/{SUBSCRIPTION}/resourceGroups/capz-book-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz-identity"
        ),
        _ => return None,
    })
}

/// Substitutes the variables in every string of `value`.
fn substitute_all(value: &mut Value) -> Result<(), String> {
    match value {
        Value::String(text) => *text = common::render(text, &variable)?,
        Value::Array(items) => items.iter_mut().try_for_each(substitute_all)?,
        Value::Object(fields) => fields.values_mut().try_for_each(substitute_all)?,
        _ => {}
    }
    Ok(())
}

/// The documents of `path` of one of `kinds`, variables substituted.
fn documents(path: &Path, kinds: &[&str]) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&text).map_err(|err| format!("not YAML: {err}"))?;
    let mut ours = Vec::new();
    for mut document in documents {
        if document["kind"]
            .as_str()
            .is_some_and(|kind| kinds.contains(&kind))
        {
            substitute_all(&mut document)?;
            ours.push(document);
        }
    }
    Ok(ours)
}

/// A real create of an object whose cluster is known.
fn create() -> Context<'static> {
    Context {
        operation: Operation::Create,
        dry_run: false,
        features: Features::default(),
        entropy: &SystemEntropy,
        cluster_subscription_id: Some(SUBSCRIPTION.to_owned()),
        machine_pool: capz_rules::PoolOwner::NotLookedUp,
        cluster: capz_rules::OwnerCluster::NotLookedUp,
    }
}

/// Why `object` is not admitted once defaulted, if it is not.
fn refusal<T: Rules>(mut object: T, kind: &str) -> Option<String> {
    let ctx = create();
    if let Err(err) = object.default(&ctx) {
        return Some(format!("defaulting failed: {err}"));
    }
    let verdict = object.validate_create(&ctx);
    let name = object.meta().name.clone().unwrap_or_default();
    (!verdict.allowed()).then(|| verdict.message(kind, capz_api::GROUP, &name))
}

#[test]
fn book_machines_and_templates_are_admitted() {
    let mut failures = Vec::new();
    let (mut machines, mut templates) = (0, 0);
    for file in fixtures().unwrap() {
        let file_name = file_name(&file);
        for document in documents(&file, &["AzureMachine", "AzureMachineTemplate"])
            .unwrap_or_else(|err| panic!("{file_name}: {err}"))
        {
            let refused = match document["kind"].as_str() {
                Some("AzureMachine") => {
                    machines += 1;
                    let mut machine: AzureMachine =
                        serde_json::from_value(document).expect("an AzureMachine");
                    // The book's snippets leave out the cluster's label, without which CAPZ refuses a
                    // machine too; a machine applied into a cluster carries it.
                    machine
                        .metadata
                        .labels
                        .get_or_insert_default()
                        .insert("cluster.x-k8s.io/cluster-name".to_owned(), "book".to_owned());
                    refusal(machine, "AzureMachine")
                }
                Some("AzureMachineTemplate") => {
                    templates += 1;
                    let template: AzureMachineTemplate =
                        serde_json::from_value(document).expect("an AzureMachineTemplate");
                    // What Cluster API creates from the template: an AzureMachine with its spec,
                    // labelled with its cluster's name.
                    let mut machine = AzureMachine::new("from-template", template.spec.template.spec.clone());
                    machine.metadata.labels =
                        Some([("cluster.x-k8s.io/cluster-name".to_owned(), "book".to_owned())].into());
                    refusal(template, "AzureMachineTemplate").or_else(|| {
                        refusal(machine, "AzureMachine").map(|why| format!("a machine made from it: {why}"))
                    })
                }
                _ => None,
            };
            failures.extend(refused.map(|why| format!("{file_name}: {why}")));
        }
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));
    // The book shows 1 AzureMachine and 15 AzureMachineTemplates; a lost fixture must not go unnoticed.
    assert!(
        machines >= 1 && templates >= 15,
        "only {machines} machines and {templates} templates found"
    );
}

/// The book shows clusters in fragments: one without an identity reference gets the one every
/// cluster of the book's quick start has, and "..." placeholders are emptied so defaulting fills
/// them.
fn complete_cluster_spec(spec: &mut Value) {
    fn empty_placeholders(value: &mut Value) {
        match value {
            Value::Object(map) => map.values_mut().for_each(empty_placeholders),
            Value::Array(items) => items.iter_mut().for_each(empty_placeholders),
            Value::String(text) if text == "..." => text.clear(),
            _ => {}
        }
    }
    empty_placeholders(spec);
    if spec.get("identityRef").is_none() {
        spec["identityRef"] = json!({"kind": "AzureClusterIdentity", "name": "cluster-identity"});
    }
}

#[test]
fn book_clusters_and_templates_are_admitted() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in fixtures().unwrap() {
        let file_name = file_name(&file);
        let kinds = ["AzureCluster", "AzureClusterTemplate"];
        for mut document in documents(&file, &kinds).unwrap_or_else(|err| panic!("{file_name}: {err}")) {
            checked += 1;
            let refused = if document["kind"] == "AzureCluster" {
                complete_cluster_spec(&mut document["spec"]);
                refusal(
                    serde_json::from_value::<AzureCluster>(document).expect("an AzureCluster"),
                    "AzureCluster",
                )
            } else {
                complete_cluster_spec(&mut document["spec"]["template"]["spec"]);
                let template = serde_json::from_value::<AzureClusterTemplate>(document).expect("a template");
                refusal(template, "AzureClusterTemplate")
            };
            if file_name == "012-azurecluster-private-dns-zone-name.yaml" {
                // The book prints an internal load balancer IP outside its control-plane subnet;
                // Azure (and CAPZ) refuse that, so the example is refused with the fix named.
                assert_eq!(
                    refused.as_deref(),
                    Some(
                        r#"AzureCluster.infrastructure.cluster.x-k8s.io "cluster-example" is invalid: spec.networkSpec.apiServerLB.frontendIPs[0].privateIP: Invalid value: "172.16.0.100": the private IP must be a free address in the control-plane subnet (10.0.1.0/24)"#
                    )
                );
            } else {
                failures.extend(refused.map(|why| format!("{file_name}: {why}")));
            }
        }
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));
    assert!(checked >= 19, "only {checked} cluster examples found");
}

/// The AKS examples of the book show fragments of a control plane (a `...` for the rest, no
/// version or location when the example is about something else): each gets what every AKS
/// cluster of the book's quick start has.
fn complete_control_plane_spec(spec: &mut Value) {
    for (field, value) in [
        ("version", json!("v1.33.5")),
        ("location", json!("westeurope")),
        ("resourceGroupName", json!("capz-book-rg")),
        ("subscriptionID", json!(SUBSCRIPTION)),
    ] {
        if spec.get(field).is_none_or(|held| held == "...") {
            spec[field] = value;
        }
    }
}

#[test]
fn book_managed_clusters_and_pools_are_admitted() {
    use capz_api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
    let mut failures = Vec::new();
    let (mut planes, mut pools) = (0, 0);
    for file in fixtures().unwrap() {
        let file_name = file_name(&file);
        let kinds = [
            "AzureManagedControlPlane",
            "AzureManagedMachinePool",
            "AzureManagedCluster",
        ];
        for mut document in documents(&file, &kinds).unwrap_or_else(|err| panic!("{file_name}: {err}")) {
            let kind = document["kind"].as_str().unwrap_or_default().to_owned();
            let refused = match kind.as_str() {
                "AzureManagedControlPlane" => {
                    planes += 1;
                    complete_control_plane_spec(&mut document["spec"]);
                    serde_json::from_value::<AzureManagedControlPlane>(document)
                        .map_err(|err| format!("not an AzureManagedControlPlane: {err}"))
                        .map(|plane| refusal(plane, &kind))
                }
                "AzureManagedMachinePool" => {
                    pools += 1;
                    serde_json::from_value::<AzureManagedMachinePool>(document)
                        .map_err(|err| format!("not an AzureManagedMachinePool: {err}"))
                        .map(|pool| refusal(pool, &kind))
                }
                _ => {
                    // The API server stores `spec: {}` when the example has none (the schema's
                    // default), as the book's AKS quick start applies it.
                    if document.get("spec").is_none() {
                        document["spec"] = json!({});
                    }
                    serde_json::from_value::<AzureManagedCluster>(document)
                        .map_err(|err| format!("not an AzureManagedCluster: {err}"))
                        .map(|cluster| refusal(cluster, &kind))
                }
            };
            // Three examples break a rule the book states elsewhere; CAPZ refuses them too,
            // and so must admission, naming the field and the fix.
            let expected = match file_name.as_str() {
                "031-azuremanagedmachinepool-os-type-windows.yaml" => Some(
                    r#"AzureManagedMachinePool.infrastructure.cluster.x-k8s.io "agentpool0" is invalid: spec.name: Invalid value: "agentpool0": For OSType Windows, spec.name can not be longer than 6 characters."#,
                ),
                "034-azuremanagedcontrolplane-load-balancer-profile.yaml" => Some(
                    r#"AzureManagedControlPlane.infrastructure.cluster.x-k8s.io "my-cluster-control-plane" is invalid: spec.loadBalancerProfile: Forbidden: load balancer profile must specify at most one of ManagedOutboundIPs, OutboundIPPrefixes and OutboundIPs"#,
                ),
                "036-azuremanagedmachinepool-linux-os-config.yaml" => Some(
                    r#"AzureManagedMachinePool.infrastructure.cluster.x-k8s.io "capz-book-pool1" is invalid: [spec.name: Invalid value: "capz-book-pool1": For OSType Linux, spec.name can not be longer than 12 characters., spec.linuxOSConfig.swapFileSizeMB: Invalid value: 1500: KubeletConfig.FailSwapOn must be set to false to enable swap file on nodes]"#,
                ),
                _ => None,
            };
            match (refused, expected) {
                (Ok(got), Some(expected)) if got.as_deref() == Some(expected) => {}
                (Ok(None), None) => {}
                (Ok(got), Some(expected)) => {
                    failures.push(format!("{file_name}: refused with {got:?}, not {expected:?}"));
                }
                (Ok(Some(why)) | Err(why), _) => failures.push(format!("{file_name}: {why}")),
            }
        }
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));
    // A lost fixture must not go unnoticed.
    assert!(
        planes >= 8 && pools >= 10,
        "only {planes} control planes and {pools} pools found"
    );
}
