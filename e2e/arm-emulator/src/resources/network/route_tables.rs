//! Route tables and their routes.

use serde_json::json;

use super::{document, embedded, resource_guid};
use crate::error::ArmError;
use crate::resources::{BackReference, Prepare, ResourceType, fields};

pub(crate) static ROUTE_TABLE: ResourceType = ResourceType {
    since: &[("disablePeeringRoute", "2025-03-01")],
    ..document(
        "Microsoft.Network/routeTables",
        "InUseRouteTableCannotBeDeleted",
        &[BackReference {
            property: "subnets",
            from: &["Microsoft.Network/virtualNetworks/subnets"],
            many: true,
        }],
        prepare_table,
    )
};

pub(crate) static ROUTE: ResourceType = embedded(
    "Microsoft.Network/routeTables/routes",
    "routes",
    "InUseRouteCannotBeDeleted",
    &[],
    prepare_route,
);

fn prepare_table(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    resource_guid(prepare)?;
    prepare.default("disablePeeringRoute", json!("None"))?;
    prepare.default("disableBgpRoutePropagation", json!(false))
}

fn prepare_route(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    fields::required_string(&properties, "addressPrefix", "properties")?;
    let next_hop = fields::one_of(
        &properties,
        "nextHopType",
        "properties",
        &[
            "VirtualNetworkGateway",
            "VnetLocal",
            "Internet",
            "VirtualAppliance",
            "None",
        ],
    )?
    .ok_or_else(|| fields::missing("properties.nextHopType"))?;
    let next_hop_address = fields::string(&properties, "nextHopIpAddress", "properties")?;
    if next_hop == "VirtualAppliance" && next_hop_address.is_none() {
        return Err(ArmError::invalid_parameter(
            "properties.nextHopIpAddress",
            "A route to a VirtualAppliance needs 'properties.nextHopIpAddress'.",
        ));
    }
    prepare
        .properties()?
        .insert("nextHopType".into(), json!(next_hop));
    prepare.default("hasBgpOverride", json!(false))
}
