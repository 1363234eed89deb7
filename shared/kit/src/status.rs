//! Publishing what a reconcile found: the conditions a controller owns, its operations in flight
//! and any other status fields it owns, applied together under its field manager, and only when
//! they change what the object holds, so that a steady state writes nothing.

use std::fmt::Debug;

use capz_api::common::conditions::{Condition, ConditionType};
use capz_api::common::operations::Future;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::apply::{FieldManager, apply_status};
use crate::conditions::{Observation, differ, observe};
use crate::filter::Reported;
use crate::operations::Operations;

/// What one reconcile publishes: its observations, its operations, and `fields`, the other status
/// fields the controller owns (a struct serializing to them, `()` for none).
#[derive(Debug)]
pub struct Report<'a, F = ()> {
    /// One per owned condition the reconcile reports.
    pub observations: Vec<Observation>,
    /// The controller's operations in flight, where the kind records them.
    pub operations: Option<&'a Operations>,
    /// Further owned status fields.
    pub fields: F,
}

/// The status a controller applies.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Owned<'a, F> {
    // Left out when empty, as for a kind without conditions (an AzureManagedCluster): applying
    // no list drops the entries this manager owned just as an empty one would.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Condition>,
    #[serde(skip_serializing_if = "<[Future]>::is_empty")]
    long_running_operation_states: &'a [Future],
    #[serde(flatten)]
    fields: F,
}

/// Applies `report` to `object`'s status when it changes it: a condition differs, an owned one is
/// no longer reported, the operations changed, or one of the fields differs. Gives whether it
/// wrote.
///
/// # Errors
/// The API server's refusal.
pub async fn publish<K, F>(
    api: &Api<K>,
    manager: &FieldManager,
    owned: &[ConditionType],
    object: &K,
    report: Report<'_, F>,
) -> kube::Result<bool>
where
    K: Reported<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    F: Serialize + Debug,
{
    let current = object.conditions();
    let conditions = observe(current, report.observations, Timestamp::now());
    let operations_changed = report.operations.is_some_and(Operations::changed);
    let changed =
        operations_changed || differ(current, owned, &conditions) || fields_differ(object, &report.fields);
    if changed {
        let status = Owned {
            conditions,
            long_running_operation_states: report.operations.map_or(&[], Operations::entries),
            fields: report.fields,
        };
        apply_status(api, manager, object, &status).await?;
    }
    Ok(changed)
}

/// Whether a field of `fields` holds another value than `object`'s status has for it. Fields
/// `fields` leaves out are not compared.
fn fields_differ(object: &impl Serialize, fields: &impl Serialize) -> bool {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(fields) else {
        return false;
    };
    if fields.is_empty() {
        return false;
    }
    let object = serde_json::to_value(object).unwrap_or_default();
    let status = object.get("status");
    fields.iter().any(|(name, value)| {
        status
            .and_then(|status| status.get(name))
            .unwrap_or(&serde_json::Value::Null)
            != value
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fields_differ;

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Fields {
        ready: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        vm_state: Option<&'static str>,
    }

    #[test]
    fn only_the_fields_given_are_compared() {
        let object = json!({"status": {"ready": true, "vmState": "Succeeded", "other": 1}});
        let same = Fields {
            ready: true,
            vm_state: None,
        };
        assert!(!fields_differ(&object, &same));
        assert!(!fields_differ(&object, &()));
        let other = Fields {
            ready: true,
            vm_state: Some("Updating"),
        };
        assert!(fields_differ(&object, &other));
        assert!(
            fields_differ(&json!({}), &same),
            "a field the object lacks differs"
        );
    }
}
