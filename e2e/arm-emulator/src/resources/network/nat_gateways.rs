//! NAT gateways: outbound connectivity for subnets through public IPs.

use serde_json::json;

use super::{document, resource_guid, sku};
use crate::error::ArmError;
use crate::resources::{BackReference, Prepare, ResourceType};

pub(crate) static NAT_GATEWAY: ResourceType = ResourceType {
    since: &[
        ("scope", "2025-03-01"),
        ("privateIPAddresses", "2025-03-01"),
        ("privateIPAddressesV6", "2025-03-01"),
    ],
    ..document(
        "Microsoft.Network/natGateways",
        "InUseNatGatewayCannotBeDeleted",
        &[BackReference {
            property: "subnets",
            from: &["Microsoft.Network/virtualNetworks/subnets"],
            many: true,
        }],
        prepare_gateway,
    )
};

fn prepare_gateway(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    sku(prepare, &["Standard", "StandardV2"], "Standard")?;
    resource_guid(prepare)?;
    prepare.default("scope", json!("Public"))?;
    prepare.default("privateIPAddresses", json!([]))?;
    prepare.default("privateIPAddressesV6", json!([]))?;
    prepare.default("idleTimeoutInMinutes", json!(4))
}
