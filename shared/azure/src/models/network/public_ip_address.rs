//! Public IP addresses: of the API server's load balancer, of outbound load balancers and NAT
//! gateways, and of bastion hosts.

use serde::{Deserialize, Serialize};

use super::{API_VERSION, IpAllocationMethod, IpVersion};
use crate::id::{Location, ResourceId};
use crate::models::{ProvisioningState, Sku, SubResource, Tags};

/// A public IP address (`Microsoft.Network/publicIPAddresses`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicIpAddress {
    /// The address's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The address's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Network/publicIPAddresses` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Changes with every write (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The address's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The address's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The address's SKU; it must match the SKU of the load balancer or gateway using it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<PublicIpSkuName>>,
    /// The availability zones the address is served from; all of the region's for a
    /// zone-redundant address. Fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// How the address is allocated, and the address itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<PublicIpAddressProperties>,
}

/// How a public IP is allocated and named, and what uses it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicIpAddressProperties {
    /// Standard SKUs only take `Static`.
    #[serde(rename = "publicIPAllocationMethod", skip_serializing_if = "Option::is_none")]
    pub public_ip_allocation_method: Option<IpAllocationMethod>,
    /// IPv4 unless asked otherwise.
    #[serde(rename = "publicIPAddressVersion", skip_serializing_if = "Option::is_none")]
    pub public_ip_address_version: Option<IpVersion>,
    /// The address Azure allocated; absent while a dynamic address is not in use (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// The DNS name of the address under `<region>.cloudapp.azure.com`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_settings: Option<PublicIpAddressDnsSettings>,
    /// Minutes an idle TCP flow is kept, 4 to 30.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<u32>,
    /// Tags of the address itself, such as the routing preference (`RoutingPreference:Internet`).
    /// Fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_tags: Option<Vec<IpTag>>,
    /// The load balancer frontend or interface IP configuration using the address (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configuration: Option<SubResource>,
    /// The NAT gateway using the address (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nat_gateway: Option<SubResource>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the address for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// The DNS name of a public IP.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublicIpAddressDnsSettings {
    /// The label, unique in the region: `<label>.<region>.cloudapp.azure.com`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_name_label: Option<String>,
    /// The full name the label gives (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
}

/// A tag of a public IP address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpTag {
    /// The kind of tag, such as `RoutingPreference` or `FirstPartyUsage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_tag_type: Option<String>,
    /// The tag's value, such as `Internet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

lenient_enum! {
    /// The SKU of a public IP address.
    pub enum PublicIpSkuName {
        /// Zone-aware, secure by default; what clusters use.
        Standard = "Standard",
        /// Being retired by Azure; not zone-aware.
        Basic = "Basic",
    }
}

arm_model!(
    PublicIpAddress,
    "Microsoft.Network/publicIPAddresses",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{PublicIpAddress, PublicIpAddressDnsSettings, PublicIpAddressProperties, PublicIpSkuName};
    use crate::models::Sku;
    use crate::models::network::{IpAllocationMethod, IpVersion};

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    #[test]
    fn an_answer_is_read_and_a_desired_address_sends_only_what_it_sets() {
        let answer = json!({
            "name": "pip",
            "id": format!("{RG}/providers/Microsoft.Network/publicIPAddresses/pip"),
            "etag": "W/\"4d161a83-edfc-4260-b78b-587c44a9529d\"",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "95960afc-95d3-4ccb-85b3-febf7f4f84c0",
                "ipAddress": "20.165.223.214",
                "publicIPAddressVersion": "IPv4",
                "publicIPAllocationMethod": "Static",
                "idleTimeoutInMinutes": 4,
                "ipTags": [],
                "dnsSettings": {"domainNameLabel": "capz-api", "fqdn": "capz-api.westus2.cloudapp.azure.com"},
                "ipConfiguration": {"id": format!("{RG}/providers/Microsoft.Network/loadBalancers/lb/frontendIPConfigurations/api")},
                "ddosSettings": {"protectionMode": "VirtualNetworkInherited"}
            },
            "type": "Microsoft.Network/publicIPAddresses",
            "sku": {"name": "StandardV2", "tier": "Regional"}
        });
        let address: PublicIpAddress = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &address);
        assert_eq!(
            address.sku.unwrap().name,
            Some(PublicIpSkuName::Other("StandardV2".to_owned()))
        );
        let properties = address.properties.unwrap();
        assert_eq!(properties.ip_address.as_deref(), Some("20.165.223.214"));
        assert_eq!(properties.public_ip_address_version, Some(IpVersion::Ipv4));
        assert_eq!(properties.ip_configuration.unwrap().id.name(), "api");
        assert_eq!(
            properties.dns_settings.unwrap().fqdn.as_deref(),
            Some("capz-api.westus2.cloudapp.azure.com")
        );

        let desired = PublicIpAddress {
            location: Some("westus2".parse().unwrap()),
            sku: Some(Sku {
                name: Some(PublicIpSkuName::Standard),
                tier: None,
            }),
            zones: Some(vec!["1".to_owned(), "2".to_owned(), "3".to_owned()]),
            properties: Some(PublicIpAddressProperties {
                public_ip_allocation_method: Some(IpAllocationMethod::Static),
                public_ip_address_version: Some(IpVersion::Ipv4),
                dns_settings: Some(PublicIpAddressDnsSettings {
                    domain_name_label: Some("capz-api".to_owned()),
                    fqdn: None,
                }),
                ..PublicIpAddressProperties::default()
            }),
            ..PublicIpAddress::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "sku": {"name": "Standard"},
                "zones": ["1", "2", "3"],
                "properties": {
                    "publicIPAllocationMethod": "Static",
                    "publicIPAddressVersion": "IPv4",
                    "dnsSettings": {"domainNameLabel": "capz-api"}
                }
            })
        );
    }
}
