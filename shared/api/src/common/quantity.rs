//! Schemas for Kubernetes resource quantities (`resource.Quantity`).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

pub use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The syntax of a quantity, as the Kubernetes API server checks it.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Schema of a quantity field: an integer or a string in quantity syntax.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// A map of resource names to quantities, as used for capacities.
pub(crate) struct QuantityMap;

impl JsonSchema for QuantityMap {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "QuantityMap".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "additionalProperties": quantity(generator),
        })
    }
}
