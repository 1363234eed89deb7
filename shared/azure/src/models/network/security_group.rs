//! Network security groups and their rules.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::models::{ChildResource, ProvisioningState, SubResource, TrackedResource};

/// A network security group (`Microsoft.Network/networkSecurityGroups`).
pub type NetworkSecurityGroup = TrackedResource<NetworkSecurityGroupProperties>;

/// The rules of a security group and where it is attached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSecurityGroupProperties {
    /// The group's own rules. A PUT of the group replaces them with this list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_rules: Option<Vec<SecurityRule>>,
    /// The rules Azure puts in every group, below all of its own (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_security_rules: Option<Vec<SecurityRule>>,
    /// The subnets the group is attached to (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnets: Option<Vec<SubResource>>,
    /// The network interfaces the group is attached to (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the group for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// A security rule (`Microsoft.Network/networkSecurityGroups/securityRules`, or
/// `…/defaultSecurityRules` for Azure's own): written inside its group or on its own.
pub type SecurityRule = ChildResource<SecurityRuleProperties>;

/// What a security rule matches and does. Ports and addresses come as one value (`…Range`,
/// `…Prefix`) or a list (`…Ranges`, `…Prefixes`); Azure answers both, the unused one empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityRuleProperties {
    /// A note for people reading the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The protocol matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<SecurityRuleProtocol>,
    /// The source port or range (`*`, `22`, `1024-65535`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_port_range: Option<String>,
    /// Several source ports or ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_port_ranges: Option<Vec<String>>,
    /// The destination port or range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_port_range: Option<String>,
    /// Several destination ports or ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_port_ranges: Option<Vec<String>>,
    /// The source prefix or service tag (`*`, `10.0.0.0/16`, `Internet`, `VirtualNetwork`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_address_prefix: Option<String>,
    /// Several source prefixes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_address_prefixes: Option<Vec<String>>,
    /// The destination prefix or service tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_address_prefix: Option<String>,
    /// Several destination prefixes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_address_prefixes: Option<Vec<String>>,
    /// Whether matching traffic passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<SecurityRuleAccess>,
    /// 100 to 4096, unique per direction; the lowest matching rule decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// The traffic the rule applies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<SecurityRuleDirection>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// The protocol a security rule matches.
    pub enum SecurityRuleProtocol {
        /// TCP.
        Tcp = "Tcp",
        /// UDP.
        Udp = "Udp",
        /// ICMP.
        Icmp = "Icmp",
        /// Any protocol.
        Any = "*",
    }
}

lenient_enum! {
    /// Whether a security rule lets traffic pass.
    pub enum SecurityRuleAccess {
        /// It passes.
        Allow = "Allow",
        /// It is dropped.
        Deny = "Deny",
    }
}

lenient_enum! {
    /// The traffic a security rule applies to.
    pub enum SecurityRuleDirection {
        /// Traffic into the subnet or interface.
        Inbound = "Inbound",
        /// Traffic out of it.
        Outbound = "Outbound",
    }
}

arm_model!(
    NetworkSecurityGroup,
    "Microsoft.Network/networkSecurityGroups",
    API_VERSION,
    tagged
);

arm_model!(
    SecurityRule,
    "Microsoft.Network/networkSecurityGroups/securityRules",
    API_VERSION
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{
        NetworkSecurityGroup, NetworkSecurityGroupProperties, SecurityRule, SecurityRuleAccess,
        SecurityRuleDirection, SecurityRuleProperties, SecurityRuleProtocol,
    };

    const NSG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg";

    #[test]
    fn an_answer_is_read_and_a_desired_group_sends_only_what_it_sets() {
        let answer = json!({
            "name": "nsg",
            "id": NSG,
            "etag": "W/\"4baf1936-2f8d-4d16-9ca1-6a7fd997cda7\"",
            "type": "Microsoft.Network/networkSecurityGroups",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "e59dc00c-f536-494d-b3bf-531df6f8fb6b",
                "securityRules": [{
                    "name": "allow_ssh",
                    "id": format!("{NSG}/securityRules/allow_ssh"),
                    "etag": "W/\"4baf1936-2f8d-4d16-9ca1-6a7fd997cda7\"",
                    "type": "Microsoft.Network/networkSecurityGroups/securityRules",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "protocol": "Tcp",
                        "sourcePortRange": "*",
                        "destinationPortRange": "22",
                        "sourceAddressPrefix": "*",
                        "destinationAddressPrefix": "*",
                        "access": "Allow",
                        "priority": 2200,
                        "direction": "Inbound",
                        "sourcePortRanges": [],
                        "destinationPortRanges": [],
                        "sourceAddressPrefixes": [],
                        "destinationAddressPrefixes": []
                    }
                }],
                "defaultSecurityRules": [{
                    "name": "DenyAllInBound",
                    "id": format!("{NSG}/defaultSecurityRules/DenyAllInBound"),
                    "type": "Microsoft.Network/networkSecurityGroups/defaultSecurityRules",
                    "properties": {
                        "protocol": "*", "sourcePortRange": "*", "destinationPortRange": "*",
                        "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
                        "access": "Deny", "priority": 65500, "direction": "Inbound"
                    }
                }, {
                    "name": "FutureRule",
                    "properties": {"protocol": "Gre", "access": "Allow", "priority": 65501, "direction": "Inbound"}
                }],
                "flushConnection": false
            }
        });
        let group: NetworkSecurityGroup = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &group);
        let properties = group.properties.unwrap();
        let rule = properties.security_rules.unwrap()[0].properties.clone().unwrap();
        assert_eq!(rule.protocol, Some(SecurityRuleProtocol::Tcp));
        assert_eq!(rule.priority, Some(2200));
        assert_eq!(rule.source_port_ranges, Some(Vec::new()));
        let defaults = properties.default_security_rules.unwrap();
        let deny = defaults[0].properties.as_ref().unwrap();
        assert_eq!(
            (deny.protocol.clone(), deny.access.clone(), deny.priority),
            (
                Some(SecurityRuleProtocol::Any),
                Some(SecurityRuleAccess::Deny),
                Some(65500)
            )
        );
        assert_eq!(
            defaults[1].properties.as_ref().unwrap().protocol,
            Some(SecurityRuleProtocol::Other("Gre".to_owned()))
        );

        let desired = NetworkSecurityGroup {
            location: Some("westus2".parse().unwrap()),
            properties: Some(NetworkSecurityGroupProperties {
                security_rules: Some(vec![SecurityRule {
                    name: Some("allow_apiserver".to_owned()),
                    properties: Some(SecurityRuleProperties {
                        protocol: Some(SecurityRuleProtocol::Tcp),
                        source_port_range: Some("*".to_owned()),
                        destination_port_range: Some("6443".to_owned()),
                        source_address_prefix: Some("*".to_owned()),
                        destination_address_prefix: Some("*".to_owned()),
                        access: Some(SecurityRuleAccess::Allow),
                        priority: Some(2201),
                        direction: Some(SecurityRuleDirection::Inbound),
                        ..SecurityRuleProperties::default()
                    }),
                    ..SecurityRule::default()
                }]),
                ..NetworkSecurityGroupProperties::default()
            }),
            ..NetworkSecurityGroup::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "properties": {"securityRules": [{"name": "allow_apiserver", "properties": {
                    "protocol": "Tcp", "sourcePortRange": "*", "destinationPortRange": "6443",
                    "sourceAddressPrefix": "*", "destinationAddressPrefix": "*",
                    "access": "Allow", "priority": 2201, "direction": "Inbound"
                }}]}
            })
        );
    }
}
