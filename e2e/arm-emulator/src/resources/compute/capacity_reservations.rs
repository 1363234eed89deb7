//! Capacity reservation groups and their reservations: a reserved quantity of one machine size in
//! a region or zone. A group is written at once (deleted through an operation) and lists its reservations and the machines and
//! scale sets placed in it (`capacityReservation.capacityReservationGroup`), which must name an
//! existing group; a reservation is written as machines are and lists the machines of its size in
//! the group. A group cannot be deleted while it holds reservations or machines.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::virtual_machines::VIRTUAL_MACHINE;
use super::{API_VERSIONS, COMPUTE, MACHINE_NAMES, document, now, refuse_while_nested, skus, zones};
use crate::error::ArmError;
use crate::resources::{
    BackReference, Expansion, Flavour, Hooks, Lro, NO_HOOKS, Prepare, ResourceType, fields,
};
use crate::state::State;

/// The compute api-versions from the first with capacity reservations (2021-04-01) on.
const API_VERSIONS_SINCE_2021_04: &[&str] = API_VERSIONS.split_at(3).1;

/// Groups: written at once, without a provisioning state.
static GROUPS: Flavour = Flavour {
    provisioning_state: false,
    ..COMPUTE
};

pub(crate) static GROUP: ResourceType = ResourceType {
    // Written at once, deleted through an operation (202 and `Location`), as the SDKs poll it.
    delete: Lro::Async,
    back_references: &[BackReference {
        property: "virtualMachinesAssociated",
        from: &[
            "Microsoft.Compute/virtualMachines",
            "Microsoft.Compute/virtualMachineScaleSets",
        ],
        many: true,
    }],
    naming: &MACHINE_NAMES,
    hooks: Hooks {
        render: Some(list_reservations),
        deletable: Some(refuse_while_nested),
        expand: Some(Expansion::instance_view(group_instance_view)),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/capacityReservationGroups",
        API_VERSIONS_SINCE_2021_04,
        &GROUPS,
        Lro::Sync,
        prepare_group,
    )
};

pub(crate) static RESERVATION: ResourceType = ResourceType {
    naming: &MACHINE_NAMES,
    hooks: Hooks {
        render: Some(list_machines),
        expand: Some(Expansion::instance_view(reservation_instance_view)),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/capacityReservationGroups/capacityReservations",
        API_VERSIONS_SINCE_2021_04,
        &COMPUTE,
        Lro::Async,
        prepare_reservation,
    )
};

fn prepare_group(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    zones(prepare)?;
    let properties = prepare.properties()?;
    // Azure lists the reservations and machines itself.
    properties.remove("capacityReservations");
    properties.remove("virtualMachinesAssociated");
    properties.remove("instanceView");
    Ok(())
}

fn prepare_reservation(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let sku = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .ok_or_else(|| fields::missing("sku"))?;
    let name = fields::required_string(&sku, "name", "sku")?;
    let size = skus::find(name).ok_or_else(|| {
        ArmError::new(
            StatusCode::BAD_REQUEST,
            "NotSupported",
            format!("Capacity Reservation is not supported for VM size {name}."),
        )
    })?;
    let capacity =
        fields::integer(&sku, "capacity", "sku")?.ok_or_else(|| fields::missing("sku.capacity"))?;
    if capacity < 0 {
        return Err(ArmError::invalid_parameter(
            "sku.capacity",
            format!("The capacity {capacity} of 'sku.capacity' must not be negative."),
        ));
    }
    prepare
        .doc
        .insert("sku".into(), json!({ "name": size.name, "capacity": capacity }));
    let requested = zones(prepare)?;
    let group_zones: Vec<String> = prepare
        .id
        .parent()
        .and_then(|group| prepare.state.body(&group.key()))
        .and_then(|group| group["zones"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|zone| zone.as_str().map(str::to_owned))
        .collect();
    // A zonal group reserves in one of its zones; a regional one only regionally.
    let fits = match (requested.as_slice(), group_zones.is_empty()) {
        ([], true) => true,
        ([zone], false) => group_zones.contains(zone),
        _ => false,
    };
    if !fits {
        return Err(ArmError::invalid_parameter(
            "zones",
            format!(
                "The zones '{}' of the capacity reservation must be one zone of its group's zones '{}', or none for a regional group.",
                requested.join(","),
                group_zones.join(",")
            ),
        ));
    }
    prepare.keep("reservationId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.keep("timeCreated", || json!(now()))?;
    prepare.keep("provisioningTime", || json!(now()))?;
    let properties = prepare.properties()?;
    properties.insert("platformFaultDomainCount".into(), json!(1));
    properties.remove("virtualMachinesAssociated");
    properties.remove("instanceView");
    Ok(())
}

/// The reservations of a group (its key), as stored.
fn reservations(state: &State, group: &str) -> Vec<Value> {
    state
        .under(&format!("{group}/capacityreservations/"))
        .filter(|(_, stored)| stored.type_name == RESERVATION.name)
        .map(|(_, stored)| stored.body().into_owned())
        .collect()
}

fn key_of(document: &Value) -> String {
    document["id"].as_str().unwrap_or_default().to_ascii_lowercase()
}

fn list_reservations(state: &State, group: &mut Value) {
    let ids: Vec<Value> = reservations(state, &key_of(group))
        .iter()
        .map(|reservation| json!({ "id": reservation["id"] }))
        .collect();
    if let Some(properties) = group.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("capacityReservations".into(), Value::Array(ids));
    }
}

/// The machines of a group using a reservation: those of its size (and zone, when it has one).
fn machines_of(state: &State, reservation: &Value) -> Vec<Value> {
    let key = key_of(reservation);
    let Some((group, _)) = key.rsplit_once("/capacityreservations/") else {
        return Vec::new();
    };
    let size = reservation["sku"]["name"].as_str().unwrap_or_default();
    let zone = reservation["zones"].get(0);
    state
        .referrers_of(group)
        .filter(|referrer| referrer.holder_type == Some(VIRTUAL_MACHINE.name))
        .filter_map(|referrer| state.body(referrer.document))
        .filter(|machine| {
            machine
                .pointer("/properties/hardwareProfile/vmSize")
                .and_then(Value::as_str)
                .is_some_and(|vm_size| vm_size.eq_ignore_ascii_case(size))
                && zone.is_none_or(|zone| machine["zones"].get(0) == Some(zone))
        })
        .map(|machine| json!({ "id": machine["id"] }))
        .collect()
}

fn list_machines(state: &State, reservation: &mut Value) {
    let machines = machines_of(state, reservation);
    if let Some(properties) = reservation.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert("virtualMachinesAssociated".into(), Value::Array(machines));
    }
}

fn reservation_instance_view(state: &State, reservation: &Value) -> Value {
    json!({
        "utilizationInfo": {
            "currentCapacity": reservation["sku"]["capacity"],
            "virtualMachinesAllocated": machines_of(state, reservation),
        },
        "statuses": [{
            "code": "ProvisioningState/succeeded",
            "level": "Info",
            "displayStatus": "Provisioning succeeded",
            "time": reservation["properties"]["provisioningTime"],
        }],
    })
}

fn group_instance_view(state: &State, group: &Value) -> Value {
    let views: Vec<Value> = reservations(state, &key_of(group))
        .iter()
        .map(|reservation| {
            let mut view = reservation_instance_view(state, reservation);
            view["name"] = reservation["name"].clone();
            view
        })
        .collect();
    json!({ "capacityReservations": views })
}

#[cfg(test)]
mod tests {
    use super::API_VERSIONS_SINCE_2021_04;

    #[test]
    fn reservations_start_at_the_api_version_that_brought_them() {
        assert_eq!(API_VERSIONS_SINCE_2021_04.first(), Some(&"2021-04-01"));
    }
}
