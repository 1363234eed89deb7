//! Every object the CRD schemas accept with optional fields left out is read: by the types (as the
//! controllers' watches read it), by admission's reader, and through the rules, which may refuse
//! it but never fail to handle it.
//!
//! The objects come from the kinds' own schemas, which `just crd-compat` holds equal to CAPZ's
//! field by field. For each field at any depth, one object sets that field and, along the way,
//! only what the schema requires; every value is the simplest the schema allows (the first value
//! of an enumeration, a list of one item).

#![expect(clippy::unwrap_used, reason = "a broken case fails the test")]

use capz_api::{
    AzureCluster, AzureClusterIdentity, AzureClusterTemplate, AzureMachine, AzureMachinePool,
    AzureMachinePoolMachine, AzureMachineTemplate, AzureManagedCluster, AzureManagedClusterTemplate,
    AzureManagedControlPlane, AzureManagedControlPlaneTemplate, AzureManagedMachinePool,
    AzureManagedMachinePoolTemplate,
};
use capz_rules::{Context, Entropy, Features, Operation, Rules};
use serde_json::{Map, Value, json};

struct FixedEntropy;

impl Entropy for FixedEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        Ok("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC0 generated".to_owned())
    }

    fn uuid(&self) -> String {
        "00000000-0000-0000-0000-000000000001".to_owned()
    }
}

/// The simplest value `schema` allows, with only its required properties.
fn minimal(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|values| values.first()) {
        return first.clone();
    }
    if schema["x-kubernetes-int-or-string"] == true {
        return json!(1);
    }
    match schema["type"].as_str() {
        Some("object") => {
            let mut object = Map::new();
            for name in schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                object.insert(name.to_owned(), minimal(&schema["properties"][name]));
            }
            Value::Object(object)
        }
        Some("array") => json!([minimal(&schema["items"])]),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(false),
        Some("string") => json!("x"),
        _ => json!({}),
    }
}

/// One object per property of `schema` at any depth: the minimal object with that property set
/// (minimally) on the way down, each given with its path.
fn with_each_property(schema: &Value, path: &str, out: &mut Vec<(String, Value)>) {
    let base = minimal(schema);
    out.push((path.to_owned(), base.clone()));
    if schema["type"] == "object" {
        for (name, property) in schema["properties"].as_object().into_iter().flatten() {
            let mut inner = Vec::new();
            with_each_property(property, &format!("{path}.{name}"), &mut inner);
            for (inner_path, value) in inner {
                let mut object = base.clone();
                object[name] = value;
                out.push((inner_path, object));
            }
        }
    } else if schema["type"] == "array" {
        let mut inner = Vec::new();
        with_each_property(&schema["items"], &format!("{path}[0]"), &mut inner);
        out.extend(
            inner
                .into_iter()
                .map(|(inner_path, item)| (inner_path, json!([item]))),
        );
    }
}

/// Reads every generated `spec` of kind `K` and passes it through the rules; gives how many.
fn every_spec_reads<K: Rules>() -> usize {
    let crd = serde_json::to_value(K::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let mut specs = Vec::new();
    with_each_property(schema, "spec", &mut specs);
    let mut failures = Vec::new();
    for (path, spec) in &specs {
        let object = json!({
            "apiVersion": K::api_version(&()), "kind": K::kind(&()),
            "metadata": {"name": "generated", "namespace": "default",
                "labels": {"cluster.x-k8s.io/cluster-name": "generated"}},
            "spec": spec,
        });
        if let Err(error) = serde_json::from_value::<K>(object.clone()) {
            failures.push(format!("{path}: the type cannot read {spec}: {error}"));
            continue;
        }
        let mut read = match capz_rules::decode::decode::<K>(&object) {
            Ok(read) => read,
            Err(errors) => {
                failures.push(format!("{path}: admission cannot read {spec}: {errors:?}"));
                continue;
            }
        };
        let ctx = Context {
            operation: Operation::Create,
            dry_run: false,
            features: Features::default(),
            entropy: &FixedEntropy,
            cluster_subscription_id: None,
            machine_pool: capz_rules::PoolOwner::NotLookedUp,
            cluster: capz_rules::OwnerCluster::NotLookedUp,
        };
        // Refusals are verdicts; what must not happen is a panic, which fails the test.
        let _ = read.validate_create(&ctx);
        if read.default(&ctx).is_ok() {
            let _ = read.validate_create(&ctx);
            let _ = read.validate_update(
                &read.clone(),
                &Context {
                    operation: Operation::Update,
                    ..ctx
                },
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} objects:\n{}",
        failures.len(),
        specs.len(),
        failures.join("\n")
    );
    specs.len()
}

#[test]
fn every_object_the_schemas_accept_with_optional_fields_left_out_is_read() {
    let counts = [
        every_spec_reads::<AzureCluster>(),
        every_spec_reads::<AzureClusterTemplate>(),
        every_spec_reads::<AzureClusterIdentity>(),
        every_spec_reads::<AzureMachine>(),
        every_spec_reads::<AzureMachineTemplate>(),
        every_spec_reads::<AzureMachinePool>(),
        every_spec_reads::<AzureManagedControlPlane>(),
        every_spec_reads::<AzureManagedControlPlaneTemplate>(),
        every_spec_reads::<AzureManagedMachinePool>(),
        every_spec_reads::<AzureManagedMachinePoolTemplate>(),
    ];
    // Each of these schemas has dozens to hundreds of fields: a handful would mean the generator
    // broke. (A pool machine and the AzureManagedCluster kinds hold little more than an ID or an
    // endpoint.)
    assert!(counts.iter().all(|count| *count > 20), "{counts:?}");
    every_spec_reads::<AzureMachinePoolMachine>();
    every_spec_reads::<AzureManagedCluster>();
    every_spec_reads::<AzureManagedClusterTemplate>();
    eprintln!("generated objects per kind: {counts:?}");
}
