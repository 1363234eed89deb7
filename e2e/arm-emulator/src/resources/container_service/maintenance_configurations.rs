//! Maintenance configurations of a managed cluster (`default`, `aksManagedAutoUpgradeSchedule`,
//! `aksManagedNodeOSUpgradeSchedule`): written and deleted at once, answered without a type, as
//! AKS answers them; a window gets its start date (today) and UTC offset when they are not given.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{API_VERSIONS, drop_nulls};
use crate::error::ArmError;
use crate::resources::compute::fill;
use crate::resources::{Flavour, Locality, Lro, Prepare, ResourceType, SYNCHRONOUS};

const NAMES: &[&str] = &[
    "default",
    "aksManagedAutoUpgradeSchedule",
    "aksManagedNodeOSUpgradeSchedule",
];

/// Written at once and answered 200, even when created.
static MAINTENANCE: Flavour = Flavour {
    create_status: StatusCode::OK,
    ..SYNCHRONOUS
};

pub(super) static MAINTENANCE_CONFIGURATION: ResourceType = ResourceType {
    location: Locality::Inherited,
    put: Lro::Sync,
    delete: Lro::Sync,
    finish: |doc| {
        if let Some(doc) = doc.as_object_mut() {
            doc.remove("type");
        }
    },
    ..ResourceType::new(
        "Microsoft.ContainerService/managedClusters/maintenanceConfigurations",
        API_VERSIONS,
        &MAINTENANCE,
        prepare_configuration,
    )
};

fn prepare_configuration(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let name = prepare.id.name();
    if !NAMES.iter().any(|known| known.eq_ignore_ascii_case(name)) {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            format!(
                "Maintenance configuration name '{name}' is not valid: it must be one of {}.",
                NAMES.join(", ")
            ),
        ));
    }
    let today = crate::time::rfc3339(std::time::SystemTime::now());
    let today = today.get(..10).unwrap_or_default().to_owned();
    let kept_start = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/maintenanceWindow/startDate"))
        .cloned();
    let properties = prepare.properties()?;
    drop_nulls(properties);
    if let Some(window) = properties
        .get_mut("maintenanceWindow")
        .and_then(Value::as_object_mut)
    {
        fill(
            window,
            json!({ "utcOffset": "+00:00", "startDate": kept_start.unwrap_or_else(|| json!(today)) }),
        );
    }
    Ok(())
}
