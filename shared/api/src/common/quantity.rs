//! Kubernetes resource quantities (`resource.Quantity`), such as `0.05`, `2` or `512Mi`.

use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The syntax of a quantity, as the Kubernetes API server checks it.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A resource quantity as written in a manifest: an integer, or a string such as `"0.05"`.
///
/// The form is kept as written, so that reading and writing an object never changes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    /// Written as a bare integer.
    Integer(i64),
    /// Written as a string in quantity syntax.
    Text(String),
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integer(value) => write!(f, "{value}"),
            Self::Text(value) => f.write_str(value),
        }
    }
}

/// Schema of a quantity field: an integer or a string in quantity syntax.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{ "type": "integer" }, { "type": "string" }],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// Schema of a map from resource names to quantities, as used for capacities.
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
