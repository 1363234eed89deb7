//! Every flavor in `deploy/templates/` renders as `clusterctl generate cluster` renders it, and
//! each capz-rs object it holds is admitted: defaulted as the webhook would, then validated on
//! create with no error and no warning of a field capz-rs does not act on yet. A machine made
//! from each machine template is admitted too.
//!
//! Variables with a default take it; the required ones take the values a user would give.

#![expect(clippy::expect_used, clippy::panic, reason = "a broken flavor fails the test")]

use std::path::PathBuf;

use capz_api::{
    AzureCluster, AzureClusterIdentity, AzureMachine, AzureMachinePool, AzureMachineTemplate,
    AzureManagedCluster, AzureManagedClusterTemplate, AzureManagedControlPlane,
    AzureManagedControlPlaneTemplate, AzureManagedMachinePool, AzureManagedMachinePoolTemplate,
};
use capz_rules::support::{self, Kind};
use capz_rules::{Context, Features, Operation, Rules, SystemEntropy};
use serde_json::Value;

mod common;

/// The flavors that ship, by file name; a flavor added or lost must show up here.
const FLAVORS: [&str; 9] = [
    "cluster-template-aks-clusterclass.yaml",
    "cluster-template-aks-topology.yaml",
    "cluster-template-aks.yaml",
    "cluster-template-apiserver-ilb.yaml",
    "cluster-template-azure-bastion.yaml",
    "cluster-template-machinepool-windows.yaml",
    "cluster-template-machinepool.yaml",
    "cluster-template-private.yaml",
    "cluster-template.yaml",
];

/// [`common::render`] with the values of [`required`]; a flavor holds no `$` but those of
/// `${...}` references, which clusterctl could read as a variable of its own.
fn render(text: &str) -> Result<String, String> {
    if let Some(at) = text
        .match_indices('$')
        .find(|(at, _)| !text[*at..].starts_with("${"))
    {
        let line = text[at.0..].lines().next().unwrap_or_default();
        return Err(format!("a '$' that is not a ${{NAME}} reference: {line:?}"));
    }
    common::render(text, &|name| required(name).map(str::to_owned))
}

/// The flavors admitted only with the `APIServerILB` feature gate on.
const NEEDS_API_SERVER_ILB: [&str; 1] = ["cluster-template-apiserver-ilb.yaml"];

const CLUSTER: &str = "flavored";
const SUBSCRIPTION: &str = "01234567-89ab-cdef-0123-4567890abcde";

/// The package directory, read when the test runs: the build directory is shared between clones,
/// so the path compiled into a reused test binary may name another clone.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// The flavors in `deploy/templates/`, by file name, sorted.
fn flavors() -> Vec<(String, PathBuf)> {
    let dir = manifest_dir().join("../../deploy/templates");
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            name.starts_with("cluster-template").then_some((name, path))
        })
        .collect();
    found.sort();
    found
}

/// What a user gives for the variables the flavors require (those without a default).
fn required(name: &str) -> Option<&'static str> {
    Some(match name {
        "CLUSTER_NAME" => CLUSTER,
        "KUBERNETES_VERSION" => "v1.33.0",
        "AZURE_LOCATION" => "westeurope",
        "AZURE_SUBSCRIPTION_ID" => SUBSCRIPTION,
        "AZURE_TENANT_ID" => "00000000-0000-0000-0000-0000000000aa",
        "AZURE_CLIENT_ID" => "00000000-0000-0000-0000-0000000000bb",
        "AZURE_CONTROL_PLANE_MACHINE_TYPE" | "AZURE_NODE_MACHINE_TYPE" => "Standard_D2s_v3",
        "CLUSTER_IDENTITY_NAME" => "cluster-identity",
        "CLUSTER_CLASS_NAME" => "aks-class",
        "AZURE_CLUSTER_IDENTITY_SECRET_NAME" => "cluster-identity-secret",
        "AZURE_CLUSTER_IDENTITY_SECRET_NAMESPACE" => "default",
        "AZURE_SSH_PUBLIC_KEY" => {
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f test"
        }
        "APISERVER_LB_DNS_SUFFIX" => "a1b2c3",
        _ => return None,
    })
}

/// A real create, with the feature gates `features`.
fn create(features: Features) -> Context<'static> {
    Context {
        operation: Operation::Create,
        dry_run: false,
        features,
        entropy: &SystemEntropy,
        cluster_subscription_id: Some(SUBSCRIPTION.to_owned()),
        machine_pool: capz_rules::PoolOwner::NotLookedUp,
        cluster: capz_rules::OwnerCluster::NotLookedUp,
    }
}

/// Why `object` is not admitted as it is, once defaulted: its errors, and the warnings of the
/// fields capz-rs does not act on yet.
fn refusal<T: Rules>(mut object: T, kind: &str, features: Features) -> Option<String> {
    let ctx = create(features);
    if let Err(err) = object.default(&ctx) {
        return Some(format!("defaulting failed: {err}"));
    }
    let verdict = object.validate_create(&ctx);
    let name = object.meta().name.clone().unwrap_or_default();
    if !verdict.allowed() {
        return Some(verdict.message(kind, capz_api::GROUP, &name));
    }
    let defaulted = serde_json::to_value(&object).expect("an object serializes");
    let mut warnings = verdict.warnings;
    if let Some(kind) = Kind::named(kind) {
        warnings.extend(support::warnings(kind, &defaulted, None));
    }
    (!warnings.is_empty()).then(|| format!("{kind} {name} warns: {}", warnings.join("; ")))
}

/// What Cluster API makes of a template `document`: an object of `kind` with the template's
/// spec, labelled with its cluster's name.
fn made_from<T: serde::de::DeserializeOwned>(document: &Value, kind: &str) -> T {
    serde_json::from_value(serde_json::json!({
        "apiVersion": document["apiVersion"],
        "kind": kind,
        "metadata": {
            "name": "from-template",
            "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER},
        },
        "spec": document["spec"]["template"]["spec"],
    }))
    .unwrap_or_else(|err| panic!("a {kind} from a template: {err}"))
}

/// [`refusal`] of the template `document` of `T`, or else of the object of `kind` made from it.
fn template_refusal<T: Rules + serde::de::DeserializeOwned, O: Rules + serde::de::DeserializeOwned>(
    document: Value,
    kind: &str,
    made: &str,
    features: Features,
) -> Option<String> {
    let object: O = made_from(&document, made);
    let template: T = serde_json::from_value(document).unwrap_or_else(|err| panic!("a {kind}: {err}"));
    refusal(template, kind, features)
        .or_else(|| refusal(object, made, features).map(|why| format!("a {made} made from it: {why}")))
}

/// The refusals of the capz-rs objects of one rendered flavor, and how many objects it has.
fn admit(documents: Vec<Value>, features: Features) -> (Vec<String>, usize) {
    let mut refused = Vec::new();
    let mut admitted = 0;
    for document in documents {
        let kind = document["kind"].as_str().unwrap_or_default().to_owned();
        let why = match kind.as_str() {
            "AzureCluster" => refusal(
                serde_json::from_value::<AzureCluster>(document).expect("an AzureCluster"),
                &kind,
                features,
            ),
            "AzureMachineTemplate" => template_refusal::<AzureMachineTemplate, AzureMachine>(
                document,
                &kind,
                "AzureMachine",
                features,
            ),
            "AzureManagedControlPlaneTemplate" => template_refusal::<
                AzureManagedControlPlaneTemplate,
                AzureManagedControlPlane,
            >(
                document, &kind, "AzureManagedControlPlane", features
            ),
            "AzureManagedClusterTemplate" => template_refusal::<
                AzureManagedClusterTemplate,
                AzureManagedCluster,
            >(document, &kind, "AzureManagedCluster", features),
            "AzureManagedMachinePoolTemplate" => template_refusal::<
                AzureManagedMachinePoolTemplate,
                AzureManagedMachinePool,
            >(
                document, &kind, "AzureManagedMachinePool", features
            ),
            "AzureMachinePool" => refusal(
                serde_json::from_value::<AzureMachinePool>(document).expect("an AzureMachinePool"),
                &kind,
                features,
            ),
            "AzureManagedControlPlane" => refusal(
                serde_json::from_value::<AzureManagedControlPlane>(document)
                    .expect("an AzureManagedControlPlane"),
                &kind,
                features,
            ),
            "AzureManagedCluster" => refusal(
                serde_json::from_value::<AzureManagedCluster>(document).expect("an AzureManagedCluster"),
                &kind,
                features,
            ),
            "AzureManagedMachinePool" => refusal(
                serde_json::from_value::<AzureManagedMachinePool>(document)
                    .expect("an AzureManagedMachinePool"),
                &kind,
                features,
            ),
            "AzureClusterIdentity" => refusal(
                serde_json::from_value::<AzureClusterIdentity>(document).expect("an AzureClusterIdentity"),
                &kind,
                features,
            ),
            _ => continue,
        };
        admitted += 1;
        refused.extend(why);
    }
    (refused, admitted)
}

/// The flavor at `path` rendered and read as YAML documents.
fn rendered(name: &str, path: &PathBuf) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{name}: {err}"));
    let text = render(&text).unwrap_or_else(|err| panic!("{name}: {err}"));
    serde_saphyr::from_multiple(&text).unwrap_or_else(|err| panic!("{name}: not YAML once rendered: {err}"))
}

#[test]
fn every_flavor_renders_and_its_objects_are_admitted() {
    let found = flavors();
    let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, FLAVORS, "the flavors in deploy/templates/");
    let mut failures = Vec::new();
    for (name, path) in &found {
        let features = Features {
            api_server_ilb: NEEDS_API_SERVER_ILB.contains(&name.as_str()),
            ..Features::default()
        };
        let documents = rendered(name, path);
        let count = |kind: &str| documents.iter().filter(|d| d["kind"] == kind).count();
        if let Some(topology) = documents
            .iter()
            .find(|d| d["kind"] == "Cluster" && d["spec"]["topology"].is_object())
        {
            // A cluster of a class holds no capz-rs object: the class's flavor has them.
            assert_eq!(documents.len(), 1, "{name}: only the Cluster");
            the_class_has_what_the_topology_names(&found, &topology["spec"]["topology"], name);
            continue;
        }
        if count("ClusterClass") == 1 {
            assert_eq!(
                count("AzureManagedControlPlaneTemplate"),
                1,
                "{name}: the control plane's template"
            );
            assert_eq!(
                count("AzureManagedClusterTemplate"),
                1,
                "{name}: the cluster's template"
            );
            assert!(
                count("AzureManagedMachinePoolTemplate") >= 1,
                "{name}: its pools' templates"
            );
        } else if count("AzureManagedControlPlane") == 0 {
            assert_eq!(count("AzureCluster"), 1, "{name}: AzureClusters");
            assert!(
                count("AzureMachineTemplate") >= 1,
                "{name}: the control plane's AzureMachineTemplate"
            );
        } else {
            // A managed (AKS) cluster: AKS runs the control plane, the pools hold the nodes.
            assert_eq!(
                count("AzureManagedControlPlane"),
                1,
                "{name}: AzureManagedControlPlanes"
            );
            assert_eq!(count("AzureManagedCluster"), 1, "{name}: AzureManagedClusters");
            assert!(count("AzureManagedMachinePool") >= 1, "{name}: its pools");
        }
        let (refused, admitted) = admit(documents, features);
        assert!(admitted >= 3, "{name}: only {admitted} capz-rs objects");
        failures.extend(refused.into_iter().map(|why| format!("{name}: {why}")));
    }
    assert!(failures.is_empty(), "refused:\n{}", failures.join("\n"));
}

/// The ClusterClass of one of the `flavors` is the class `topology` names, and it has each machine
/// pool class the topology's pools name, each with a bootstrap and an infrastructure template
/// the class's flavor holds.
fn the_class_has_what_the_topology_names(flavors: &[(String, PathBuf)], topology: &Value, name: &str) {
    let class = topology["class"].as_str().expect("a class name");
    let documents: Vec<Value> = flavors
        .iter()
        .flat_map(|(flavor, path)| rendered(flavor, path))
        .collect();
    let found = documents
        .iter()
        .find(|d| d["kind"] == "ClusterClass" && d["metadata"]["name"] == class)
        .unwrap_or_else(|| panic!("{name}: no flavor has the ClusterClass {class}"));
    let templates: Vec<(&Value, &Value)> = documents
        .iter()
        .map(|d| (&d["kind"], &d["metadata"]["name"]))
        .collect();
    let pools = topology["workers"]["machinePools"]
        .as_array()
        .expect("machine pools");
    assert!(!pools.is_empty(), "{name}: no pools");
    for pool in pools {
        let wanted = &pool["class"];
        let pool_class = found["spec"]["workers"]["machinePools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|candidate| candidate["class"] == *wanted)
            .unwrap_or_else(|| panic!("{name}: the class {class} has no pool class {wanted}"));
        for part in ["bootstrap", "infrastructure"] {
            let reference = &pool_class["template"][part]["ref"];
            assert!(
                templates.contains(&(&reference["kind"], &reference["name"])),
                "{name}: {wanted}'s {part} template {reference} is in no flavor"
            );
        }
    }
    for part in [
        &found["spec"]["controlPlane"]["ref"],
        &found["spec"]["infrastructure"]["ref"],
    ] {
        assert!(
            templates.contains(&(&part["kind"], &part["name"])),
            "{name}: the class's template {part} is in no flavor"
        );
    }
}

#[test]
fn the_apiserver_ilb_flavor_needs_its_feature_gate() {
    let (name, path) = flavors()
        .into_iter()
        .find(|(name, _)| name == NEEDS_API_SERVER_ILB[0])
        .expect("the apiserver-ilb flavor");
    let (refused, _) = admit(rendered(&name, &path), Features::default());
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("APIServerILB"), "{}", refused[0]);
}

#[test]
fn rendering_works_like_clusterctls() {
    assert_eq!(
        render("a: ${CLUSTER_NAME}-md-0").as_deref(),
        Ok("a: flavored-md-0")
    );
    assert_eq!(render("n: ${WORKER_MACHINE_COUNT:=2}").as_deref(), Ok("n: 2"));
    assert_eq!(render("n: ${SOME_IP:-10.0.0.4}").as_deref(), Ok("n: 10.0.0.4"));
    assert_eq!(
        render("v: ${AZURE_VNET_NAME:=${CLUSTER_NAME}-vnet}, g: ${AZURE_RESOURCE_GROUP:=${CLUSTER_NAME}}")
            .as_deref(),
        Ok("v: flavored-vnet, g: flavored")
    );
    // A required variable takes its value even where a default is written.
    assert_eq!(
        render("l: ${AZURE_LOCATION:=eastus}").as_deref(),
        Ok("l: westeurope")
    );
    assert_eq!(
        render(r#"k: ${AZURE_SSH_PUBLIC_KEY_B64:=""}"#).as_deref(),
        Ok(r#"k: """#)
    );
    assert!(render("${NOT_A_FLAVOR_VARIABLE}").is_err());
    assert!(render("${CLUSTER_NAME").is_err());
    assert!(render("${X:=${CLUSTER_NAME}").is_err());
    assert!(render("echo $HOME").is_err());
}
