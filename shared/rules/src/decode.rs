//! Reading an object into its type, with a refusal that names the field when it cannot be read.
//!
//! The API server names the field of every value its schema refuses
//! (`spec.osDisk.cachingType: Unsupported value: ...`); a value our types cannot read gets the
//! same form, never a bare deserializer message. The kind's own schema (the CRD generated from the
//! type) finds the field, as the API server would; where it finds nothing, the deserializer's path
//! does, down to the nearest field it can see (a flattened part of a type hides the fields below
//! it from the deserializer, not from the schema).

use kube::CustomResourceExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use crate::field::{FieldError, FieldPath};

/// Reads `value` as the kind `K`.
///
/// # Errors
/// The fields that could not be read (at least one): required and missing, not one of the
/// supported values, or of the wrong type.
pub fn decode<K: DeserializeOwned + CustomResourceExt>(value: &Value) -> Result<K, Vec<FieldError>> {
    // CAPZ's schemas leave `spec` optional; our types always hold one, empty when the object
    // has none (and defaulting then writes it).
    let mut with_spec;
    let value = if value.is_object() && value.get("spec").is_none_or(Value::is_null) {
        with_spec = value.clone();
        with_spec["spec"] = Value::Object(serde_json::Map::new());
        &with_spec
    } else {
        value
    };
    serde_path_to_error::deserialize(value).map_err(|error| {
        let schema = serde_json::to_value(K::crd()).unwrap_or_default();
        let schema = &schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let mut found = Vec::new();
        check(schema, value, None, &mut found);
        if found.is_empty() {
            let at: Vec<&Segment> = error.path().iter().collect();
            found.push(field_error(value, &at, &error.inner().to_string()));
        }
        found
    })
}

/// Checks `value` at `path` against the structural `schema` as the API server does: types,
/// required properties and enumerations, recording what it refuses in `found`.
fn check(schema: &Value, value: &Value, path: Option<&FieldPath>, found: &mut Vec<FieldError>) {
    let here = || path.cloned().unwrap_or_else(|| FieldPath::root(""));
    if value.is_null() {
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            found.push(FieldError::invalid(
                here(),
                value,
                "must be an integer or a string",
            ));
        }
        return;
    }
    let expected = schema["type"].as_str().unwrap_or_default();
    let fits = match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        found.push(FieldError::invalid(
            here(),
            value,
            format!("must be of type {expected}"),
        ));
        return;
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        let supported: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        found.push(FieldError::not_supported(here(), value, &supported));
        return;
    }
    match value {
        Value::Object(fields) if schema["x-kubernetes-preserve-unknown-fields"] != true => {
            for required in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = required.as_str()
                    && fields.get(name).is_none_or(Value::is_null)
                {
                    found.push(FieldError::required(child(path.cloned(), name), ""));
                }
            }
            for (name, field) in fields {
                let field_path = child(path.cloned(), name);
                if let Some(property) = schema["properties"].get(name) {
                    check(property, field, Some(&field_path), found);
                } else if schema["additionalProperties"].is_object() {
                    let entry = path.map_or_else(|| FieldPath::root(name), |path| path.key(name));
                    check(&schema["additionalProperties"], field, Some(&entry), found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                check(&schema["items"], item, Some(&here().index(index)), found);
            }
        }
        _ => {}
    }
}

/// The field error for the deserializer's `message` about the value at `at` in `root`.
fn field_error(root: &Value, at: &[&Segment], message: &str) -> FieldError {
    let path = path_of(at);
    if let Some(field) = quoted(message.strip_prefix("missing field ")) {
        return FieldError::required(child(path, field), "");
    }
    let found = value_at(root, at).cloned().unwrap_or(Value::Null);
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let supported: Vec<&str> = rest
            .split_once("expected ")
            .map(|(_, expected)| expected.trim_start_matches("one of "))
            .map(|expected| {
                expected
                    .split(", ")
                    .filter_map(|name| quoted(Some(name)))
                    .collect()
            })
            .unwrap_or_default();
        if !supported.is_empty() {
            return FieldError::not_supported(
                path.unwrap_or_else(|| FieldPath::root("")),
                &found,
                &supported,
            );
        }
    }
    FieldError::invalid(path.unwrap_or_else(|| FieldPath::root("")), &found, message)
}

/// `name` in backquotes at the start of `text`.
fn quoted(text: Option<&str>) -> Option<&str> {
    let rest = text?.strip_prefix('`')?;
    rest.split_once('`').map(|(name, _)| name)
}

fn child(path: Option<FieldPath>, name: &str) -> FieldPath {
    path.map_or_else(|| FieldPath::root(name), |path| path.child(name))
}

/// The Kubernetes field path of the deserializer's path: `spec.subnets[0].name`.
fn path_of(at: &[&Segment]) -> Option<FieldPath> {
    at.iter().fold(None, |path, segment| match segment {
        Segment::Seq { index } => Some(path.unwrap_or_else(|| FieldPath::root("")).index(*index)),
        Segment::Map { key } => Some(child(path, key)),
        Segment::Enum { variant } => Some(child(path, variant)),
        Segment::Unknown => path,
    })
}

/// The value at `at` in `root`, when the path leads to one.
fn value_at<'a>(root: &'a Value, at: &[&Segment]) -> Option<&'a Value> {
    at.iter().try_fold(root, |value, segment| match segment {
        Segment::Seq { index } => value.get(*index),
        Segment::Map { key } => value.get(key.as_str()),
        Segment::Enum { .. } | Segment::Unknown => Some(value),
    })
}

#[cfg(test)]
mod tests {
    use capz_api::AzureMachine;
    use serde_json::json;

    use super::*;
    use crate::field::ErrorKind;

    const OS_DISK: &str = r#"{"osType": "Linux", "diskSizeGB": 30}"#;

    fn machine(spec: &Value) -> Value {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": {"name": "m", "namespace": "default"},
            "spec": spec,
        })
    }

    #[test]
    fn an_unsupported_value_names_its_field_and_the_supported_ones() {
        let object = machine(&json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "cachingType": "invalid_cache_type", "diskSizeGB": 30},
        }));
        let [error] = &decode::<AzureMachine>(&object).unwrap_err()[..] else {
            panic!("not one error");
        };
        assert_eq!(error.path.as_str(), "spec.osDisk.cachingType");
        let ErrorKind::NotSupported { value, supported } = &error.kind else {
            panic!("{error}");
        };
        assert_eq!(value, "invalid_cache_type");
        assert_eq!(supported, &["None", "ReadOnly", "ReadWrite"]);
    }

    #[test]
    fn a_missing_required_field_is_named_with_its_parent() {
        let object = machine(&json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": serde_json::from_str::<Value>(OS_DISK).unwrap(),
            "image": {"marketplace": {"offer": "o", "sku": "s", "version": "1"}},
        }));
        let errors = decode::<AzureMachine>(&object).unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["spec.image.marketplace.publisher: Required value"]);
    }

    #[test]
    fn a_value_of_the_wrong_type_is_shown_with_its_field_and_list_index() {
        let object = machine(&json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": serde_json::from_str::<Value>(OS_DISK).unwrap(),
            "dataDisks": [{"nameSuffix": "etcd", "diskSizeGB": 256}, {"nameSuffix": "x", "diskSizeGB": "big"}],
        }));
        let [error] = &decode::<AzureMachine>(&object).unwrap_err()[..] else {
            panic!("not one error");
        };
        assert_eq!(error.path.as_str(), "spec.dataDisks[1].diskSizeGB");
        assert!(
            matches!(&error.kind, ErrorKind::Invalid(value) if value == "big"),
            "{error}"
        );
    }

    #[test]
    fn an_object_without_a_spec_reads_as_an_empty_one() {
        let object = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureManagedCluster",
            "metadata": {"name": "m", "namespace": "default"},
        });
        let read = decode::<capz_api::AzureManagedCluster>(&object).unwrap();
        assert_eq!(read.spec, capz_api::AzureManagedClusterSpec::default());
        // A required part of the spec is still required.
        let errors = decode::<AzureMachine>(&machine(&Value::Null)).unwrap_err();
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["spec.osDisk: Required value", "spec.vmSize: Required value"]
        );
    }

    #[test]
    fn a_deserializer_message_alone_still_names_the_field() {
        let spec = Segment::Map {
            key: "spec".to_owned(),
        };
        let subnets = Segment::Map {
            key: "subnets".to_owned(),
        };
        let first = Segment::Seq { index: 0 };
        let root = json!({"spec": {"subnets": [{"role": "bogus"}]}});
        let missing = field_error(&root, &[&spec, &subnets, &first], "missing field `name`");
        assert_eq!(missing.to_string(), "spec.subnets[0].name: Required value");
        let role = Segment::Map {
            key: "role".to_owned(),
        };
        let at = [&spec, &subnets, &first, &role];
        let unknown = field_error(
            &root,
            &at,
            "unknown variant `bogus`, expected one of `node`, `control-plane`",
        );
        assert_eq!(
            unknown.to_string(),
            r#"spec.subnets[0].role: Unsupported value: "bogus": supported values: "node", "control-plane""#
        );
    }
}
