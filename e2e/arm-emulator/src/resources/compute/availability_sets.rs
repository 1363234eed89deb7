//! Availability sets: written at once, without a provisioning state; they list the virtual
//! machines placed in them and cannot be deleted while they hold any.

use axum::http::StatusCode;
use serde_json::json;

use super::{API_VERSIONS, AVAILABILITY_SET_NAMES, AVAILABILITY_SETS, document, skus};
use crate::error::ArmError;
use crate::resources::{BackReference, Hooks, Lro, NO_HOOKS, Prepare, ResourceType, fields};

pub(crate) static AVAILABILITY_SET: ResourceType = ResourceType {
    back_references: &[BackReference {
        property: "virtualMachines",
        from: &["Microsoft.Compute/virtualMachines"],
        many: true,
    }],
    naming: &AVAILABILITY_SET_NAMES,
    hooks: Hooks {
        in_use: Some(in_use),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/availabilitySets",
        API_VERSIONS,
        &AVAILABILITY_SETS,
        Lro::Sync,
        prepare_set,
    )
};

/// The SKU of a set whose machines use managed disks.
pub(super) const ALIGNED: &str = "Aligned";

fn in_use(id: &str, _holder: &str) -> ArmError {
    let name = id.rsplit('/').next().unwrap_or(id);
    ArmError::new(
        StatusCode::CONFLICT,
        "OperationNotAllowed",
        format!(
            "Availability Set {name} cannot be deleted. Before deleting an Availability Set please ensure that it does not contain any VM."
        ),
    )
}

/// A domain count: the requested one within `1..=largest`, or the default.
fn domain_count(
    prepare: &mut Prepare<'_>,
    property: &str,
    default: i64,
    largest: i64,
) -> Result<(), ArmError> {
    let path = format!("properties.{property}");
    let count = fields::integer(prepare.properties()?, property, "properties")?.unwrap_or(default);
    if !(1..=largest).contains(&count) {
        return Err(ArmError::invalid_parameter(
            &path,
            format!("The value {count} of '{path}' must fall in the range 1 to {largest}."),
        ));
    }
    prepare.properties()?.insert(property.to_owned(), json!(count));
    Ok(())
}

fn prepare_set(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let requested = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let sku = fields::one_of(&requested, "name", "sku", &["Classic", ALIGNED])?.unwrap_or("Classic");
    prepare.doc.insert("sku".into(), json!({ "name": sku }));
    // Azure lists the machines itself, from their references to the set.
    prepare.properties()?.remove("virtualMachines");
    domain_count(prepare, "platformFaultDomainCount", 2, skus::MAX_FAULT_DOMAINS)?;
    domain_count(prepare, "platformUpdateDomainCount", 5, 20)
}
