//! Long-running Azure operations recorded in status so that a restarted controller resumes them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An Azure operation that was started and has not finished yet.
///
/// The controller that started it polls it on later reconciles instead of issuing the request
/// again. `type`, `serviceName` and `name` identify the entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Future {
    /// The kind of request that started the operation, for example `PUT` or `DELETE`.
    #[serde(rename = "type")]
    pub type_: String,

    /// The resource group of the resource the operation works on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,

    /// The Azure service (resource kind) the operation belongs to, for example `virtualmachine`.
    pub service_name: String,

    /// The name of the Azure resource the operation works on.
    pub name: String,

    /// An opaque token from which the controller resumes polling the operation.
    pub data: String,
}

/// The operations in flight for an object, at most one per (`type`, `serviceName`, `name`).
///
/// Declared as a map list so that several controllers can each apply their own entries with
/// server-side apply (CAPZ declares it atomic; see docs/compat.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend(
    "x-kubernetes-list-type" = "map",
    "x-kubernetes-list-map-keys" = ["type", "serviceName", "name"]
))]
pub struct Futures(pub Vec<Future>);

impl Futures {
    /// Whether no operation is in flight.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
