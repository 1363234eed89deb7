//! Azure Bastion hosts: SSH and RDP to a network's machines without public addresses on them.

use serde::{Deserialize, Serialize};

use super::{API_VERSION, IpAllocationMethod};
use crate::id::{Location, ResourceId};
use crate::models::{ChildResource, ProvisioningState, Sku, SubResource, Tags};

/// A bastion host (`Microsoft.Network/bastionHosts`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BastionHost {
    /// The host's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The host's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Network/bastionHosts` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Changes with every write (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The host's region: its network's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The host's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The host's tier; Azure takes `Basic` when none is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<BastionHostSkuName>>,
    /// Where the host sits and what it offers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<BastionHostProperties>,
}

/// A bastion host's placement and features.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BastionHostProperties {
    /// The one IP configuration: the `AzureBastionSubnet` and the public IP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configurations: Option<Vec<BastionHostIpConfiguration>>,
    /// Native-client connections (`az network bastion ssh`); Standard and above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_tunneling: Option<bool>,
    /// Instances serving connections: 2 for Basic, 2 to 50 for Standard (2 when not sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_units: Option<u32>,
    /// The host's name in DNS (read-only).
    #[serde(rename = "dnsName", skip_serializing_if = "Option::is_none")]
    pub dns_name: Option<String>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// The subnet and public IP of a bastion host.
pub type BastionHostIpConfiguration = ChildResource<BastionHostIpConfigurationProperties>;

/// What a bastion host's IP configuration refers to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BastionHostIpConfigurationProperties {
    /// The network's `AzureBastionSubnet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubResource>,
    /// A Standard, static public IP.
    #[serde(rename = "publicIPAddress", skip_serializing_if = "Option::is_none")]
    pub public_ip_address: Option<SubResource>,
    /// How the private address in the subnet is chosen.
    #[serde(rename = "privateIPAllocationMethod", skip_serializing_if = "Option::is_none")]
    pub private_ip_allocation_method: Option<IpAllocationMethod>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// The tiers of Azure Bastion.
    pub enum BastionHostSkuName {
        /// Browser connections, two instances.
        Basic = "Basic",
        /// Adds native-client tunnelling and scaling.
        Standard = "Standard",
    }
}

arm_model!(BastionHost, "Microsoft.Network/bastionHosts", API_VERSION, tagged);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_written_back_as_answered() {
        let subnet =
            format!("{RG}/providers/Microsoft.Network/virtualNetworks/vn/subnets/AzureBastionSubnet");
        let pip = format!("{RG}/providers/Microsoft.Network/publicIPAddresses/bastion-pip");
        let answer = json!({
            "name": "bastion",
            "id": format!("{RG}/providers/Microsoft.Network/bastionHosts/bastion"),
            "etag": "W/\"a7a7bdb1-5f99-4812-9c23-103d00a2b076\"",
            "type": "Microsoft.Network/bastionHosts",
            "location": "westus2",
            "properties": {
                "provisioningState": "Updating",
                "scaleUnits": 2,
                "ipConfigurations": [{
                    "name": "IpConf",
                    "id": format!("{RG}/providers/Microsoft.Network/bastionHosts/bastion/bastionHostIpConfigurations/IpConf"),
                    "etag": "W/\"a7a7bdb1-5f99-4812-9c23-103d00a2b076\"",
                    "type": "Microsoft.Network/bastionHosts/bastionHostIpConfigurations",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "privateIPAllocationMethod": "Dynamic",
                        "publicIPAddress": {"id": pip},
                        "subnet": {"id": subnet}
                    }
                }]
            },
            "sku": {"name": "Basic"}
        });
        let host: BastionHost = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &host);
        assert_eq!(host.sku.unwrap().name, Some(BastionHostSkuName::Basic));
        let properties = host.properties.unwrap();
        assert_eq!(properties.scale_units, Some(2));
        let configuration = &properties.ip_configurations.unwrap()[0];
        let refers = configuration.properties.as_ref().unwrap();
        assert_eq!(refers.subnet.as_ref().unwrap().id.name(), "AzureBastionSubnet");
        assert_eq!(
            refers.public_ip_address.as_ref().unwrap().id.name(),
            "bastion-pip"
        );
    }
}
