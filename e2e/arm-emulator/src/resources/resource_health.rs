//! Microsoft.ResourceHealth: the availability of a resource,
//! `{resource}/providers/Microsoft.ResourceHealth/availabilityStatuses/current` (and the list of
//! statuses beside it). A resource whose last operation succeeded is `Available`; one being
//! written or deleted, or that failed, is `Unknown` or `Degraded`, as Azure reports it.

use serde_json::{Value, json};

use super::{Catalogue, Lookup};
use crate::error::ArmError;

const API_VERSIONS: &[&str] = &[
    "2015-01-01",
    "2017-07-01",
    "2018-07-01",
    "2020-05-01",
    "2022-10-01",
    "2023-10-01-preview",
    "2024-02-01",
    "2025-05-01",
];

pub(crate) static AVAILABILITY_STATUSES: Catalogue = Catalogue {
    name: "Microsoft.ResourceHealth/availabilityStatuses",
    api_versions: API_VERSIONS,
    entry: Some(current),
    collection: Some(|lookup| Ok(json!({ "value": [status(lookup)?] }))),
};

fn current(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    if !lookup.id.name().eq_ignore_ascii_case("current") {
        return Err(ArmError::not_found(&lookup.id.to_id()));
    }
    status(lookup)
}

fn status(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let scope = &lookup.id.scope;
    let resource = lookup
        .state
        .body(&scope.to_ascii_lowercase())
        .ok_or_else(|| ArmError::not_found(scope))?;
    let provisioning = resource
        .pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("Succeeded");
    let (availability, summary) = match provisioning {
        "Succeeded" => (
            "Available",
            "There aren't any known Azure platform problems affecting this resource.",
        ),
        "Failed" => ("Degraded", "The resource's last operation failed."),
        _ => (
            "Unknown",
            "The resource is being changed; its health is reported once the change ends.",
        ),
    };
    let now = crate::time::rfc3339(std::time::SystemTime::now());
    Ok(json!({
        "id": format!("{scope}/providers/Microsoft.ResourceHealth/availabilityStatuses/current"),
        "name": "current",
        "type": "Microsoft.ResourceHealth/AvailabilityStatuses",
        "location": resource.get("location").cloned().unwrap_or(Value::Null),
        "properties": {
            "availabilityState": availability,
            "summary": summary,
            "reasonType": "",
            "occuredTime": now,
            "reportedTime": now,
        },
    }))
}
