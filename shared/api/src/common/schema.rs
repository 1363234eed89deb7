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
