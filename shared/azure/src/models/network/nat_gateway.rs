//! NAT gateways: outbound connectivity for the nodes' subnets.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::id::{Location, ResourceId};
use crate::models::{ProvisioningState, Sku, SubResource, Tags};

/// A NAT gateway (`Microsoft.Network/natGateways`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NatGateway {
    /// The gateway's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The gateway's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Network/natGateways` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Changes with every write (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The gateway's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The gateway's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The gateway's SKU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<NatGatewaySkuName>>,
    /// The one zone the gateway lives in, if pinned to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// The gateway's addresses and subnets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<NatGatewayProperties>,
}

/// The addresses a NAT gateway sends from and the subnets it serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NatGatewayProperties {
    /// Minutes an idle flow is kept, 4 to 120.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<u32>,
    /// The public IPs outbound traffic leaves from. (Azure spells this `publicIpAddresses`,
    /// unlike elsewhere.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_ip_addresses: Option<Vec<SubResource>>,
    /// Public IP prefixes outbound traffic leaves from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_ip_prefixes: Option<Vec<SubResource>>,
    /// The subnets using the gateway; set on the subnet, not here (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the gateway for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

lenient_enum! {
    /// The SKU of a NAT gateway.
    pub enum NatGatewaySkuName {
        /// The zonal gateway clusters use.
        Standard = "Standard",
    }
}

arm_model!(NatGateway, "Microsoft.Network/natGateways", API_VERSION, tagged);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{NatGateway, NatGatewayProperties, NatGatewaySkuName};
    use crate::models::{ProvisioningState, Sku, SubResource};

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_a_desired_gateway_sends_only_what_it_sets() {
        let pip = format!("{RG}/providers/Microsoft.Network/publicIPAddresses/natgw-pip");
        let answer = json!({
            "name": "natgw",
            "id": format!("{RG}/providers/Microsoft.Network/natGateways/natgw"),
            "etag": "W/\"6c65cc6b-df28-4277-b2a3-e21589fedf84\"",
            "type": "Microsoft.Network/natGateways",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "ada25ddc-e468-4403-987c-3cd7ac7eaec9",
                "idleTimeoutInMinutes": 4,
                "scope": "Public",
                "privateIPAddresses": [],
                "publicIpAddresses": [{"id": pip}],
                "subnets": [{"id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes")}]
            },
            "sku": {"name": "StandardV2", "tier": "Regional"}
        });
        let gateway: NatGateway = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &gateway);
        assert_eq!(
            gateway.sku.unwrap().name,
            Some(NatGatewaySkuName::Other("StandardV2".to_owned()))
        );
        let properties = gateway.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        assert_eq!(
            properties.public_ip_addresses.unwrap()[0].id,
            pip.parse().unwrap()
        );
        assert_eq!(properties.subnets.unwrap()[0].id.name(), "nodes");

        let desired = NatGateway {
            location: Some("westus2".parse().unwrap()),
            sku: Some(Sku {
                name: Some(NatGatewaySkuName::Standard),
                tier: None,
            }),
            properties: Some(NatGatewayProperties {
                public_ip_addresses: Some(vec![SubResource {
                    id: pip.parse().unwrap(),
                }]),
                ..NatGatewayProperties::default()
            }),
            ..NatGateway::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "sku": {"name": "Standard"},
                "properties": {"publicIpAddresses": [{"id": pip}]}
            })
        );
    }
}
