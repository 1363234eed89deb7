//! Hand-written schemas for fields whose Rust type would otherwise give a different schema than CAPZ's.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A plain integer without a `format`, as CAPZ declares Go `int` fields.
pub(crate) fn integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer" })
}

/// An integer or a string such as a percentage (`x-kubernetes-int-or-string`).
pub(crate) fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "x-kubernetes-int-or-string": true,
    })
}

/// Drops an enum type's own description from its schema.
///
/// kube hoists the schema of an optional enum over the schema of the field that uses it, so the
/// enum's description would replace the field's, which is the one `kubectl explain` should show.
pub(crate) fn keep_field_description(schema: &mut Schema) {
    schema.remove("description");
}

/// Keeps `name` required in the schema of a type that reads a missing name as empty
/// (`#[serde(default)]`) for admission to fill in: what the API server stores must still have one.
pub(crate) fn name_required(schema: &mut Schema) {
    keep_required(schema, "name");
}

/// [`name_required`] for a security rule's `direction`.
pub(crate) fn direction_required(schema: &mut Schema) {
    keep_required(schema, "direction");
}

/// [`name_required`] for an AKS control plane's `resourceGroupName`.
pub(crate) fn resource_group_name_required(schema: &mut Schema) {
    keep_required(schema, "resourceGroupName");
}

/// Drops the default serde's `default` gives `field` and lists it as required again, in the order
/// of the properties.
fn keep_required(schema: &mut Schema, field: &str) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let mut order = Vec::new();
    if let Some(properties) = object.get_mut("properties").and_then(|p| p.as_object_mut()) {
        if let Some(property) = properties.get_mut(field).and_then(|p| p.as_object_mut()) {
            property.remove("default");
        }
        order = properties.keys().cloned().collect();
    }
    let mut required: Vec<String> = object
        .get("required")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    required.push(field.to_owned());
    order.retain(|name| required.contains(name));
    object.insert("required".into(), order.into());
}
