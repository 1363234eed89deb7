//! A network security group of the cluster (`Microsoft.Network/networkSecurityGroups`), with the
//! rules the spec asks for.
//!
//! A PUT replaces the group's rules, so a write carries every rule the group has: rules added out
//! of band (by a person, a policy, the cloud provider) are kept as they are, and only the spec's
//! rules are added or brought back to what the spec says. The control-plane subnet's group gets
//! rules for SSH and the API server when the spec gives it no rules, as CAPZ does.
//!
//! A rule that was written from the spec and then removed from it is removed from the group too.
//! What was written is remembered on the AzureCluster, in CAPZ's annotation and format
//! ([`LastApplied`]), so that a cluster taken over from CAPZ keeps its record.

use std::collections::BTreeMap;

use capz_api::common::network::{
    SecurityProtocol, SecurityRule as RuleSpec, SecurityRuleAction, SecurityRuleDirection as DirectionSpec,
    SubnetRole, SubnetSpec,
};
use capz_azure::models::network::{
    NetworkSecurityGroup, NetworkSecurityGroupProperties, SecurityRule as RuleModel, SecurityRuleAccess,
    SecurityRuleDirection, SecurityRuleProperties, SecurityRuleProtocol,
};
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{Role, Tags};

/// The priority of the default SSH rule; the API server rule takes the next one.
const SSH_PRIORITY: u32 = 2200;

/// The AzureCluster annotation recording, per security group, the rules last written from the
/// spec (name to description), as CAPZ records them.
pub const LAST_APPLIED_ANNOTATION: &str =
    "sigs.k8s.io/cluster-api-provider-azure-last-applied-security-rules";

/// The rules written from the spec to each security group, by group name, then rule name (the
/// value is the rule's description, which CAPZ keeps there).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LastApplied(BTreeMap<String, BTreeMap<String, String>>);

impl LastApplied {
    /// The record in `annotations`. A value that is not such a record counts as none: at worst a
    /// rule removed from the spec stays on its group, which is what happened before it existed.
    #[must_use]
    pub fn from_annotations(annotations: &BTreeMap<String, String>) -> Self {
        annotations
            .get(LAST_APPLIED_ANNOTATION)
            .and_then(|value| serde_json::from_str(value).ok())
            .unwrap_or_default()
    }

    /// The record as the annotation's value (`{}` when empty, so that an emptied record reads back
    /// as what was written).
    #[must_use]
    pub fn to_annotation(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }

    /// Records the rules `group` writes. Until Azure is known to hold them (`done`), the rules it
    /// drops stay recorded, so that a later pass still removes them.
    pub fn record(&mut self, group: &SecurityGroup, done: bool) {
        let mut rules: BTreeMap<String, String> = group
            .rules
            .iter()
            .filter_map(|rule| {
                let description = rule
                    .properties
                    .as_ref()
                    .and_then(|properties| properties.description.clone());
                Some((rule.name.clone()?, description.unwrap_or_default()))
            })
            .collect();
        let name = group.id.name().into_owned();
        if !done {
            for (rule, description) in self.rules_of(&name) {
                if group.dropped.contains(rule) {
                    rules.insert(rule.clone(), description.clone());
                }
            }
        }
        self.0.retain(|recorded, _| !recorded.eq_ignore_ascii_case(&name));
        if !rules.is_empty() {
            self.0.insert(name, rules);
        }
    }

    /// The rules recorded for the group `group` (Azure names are case-insensitive).
    fn rules_of<'a>(&'a self, group: &'a str) -> impl Iterator<Item = (&'a String, &'a String)> {
        self.0
            .iter()
            .filter(move |(name, _)| name.eq_ignore_ascii_case(group))
            .flat_map(|(_, rules)| rules)
    }
}

/// A security group of the cluster and the rules it must hold.
#[derive(Debug, Clone)]
pub struct SecurityGroup {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    rules: Vec<RuleModel>,
    /// Rules written from the spec before that the spec no longer has.
    dropped: Vec<String>,
}

impl SecurityGroup {
    /// The group of `subnet`, if the subnet names one; `api_server_port` is the port the default
    /// control-plane rule opens; `last_applied` says which rules were written from the spec before.
    ///
    /// # Errors
    /// When the group's name is not a valid Azure name.
    pub fn for_subnet(
        scope: &ClusterScope,
        subnet: &SubnetSpec,
        api_server_port: i32,
        last_applied: &LastApplied,
    ) -> Result<Option<Self>, ScopeError> {
        let Some(group) = subnet
            .security_group
            .as_ref()
            .filter(|group| !group.name.is_empty())
        else {
            return Ok(None);
        };
        let id = scope
            .id_of::<NetworkSecurityGroup>(&group.name)
            .map_err(|source| ScopeError::Invalid {
                field: "spec.networkSpec.subnets[].securityGroup.name",
                value: group.name.clone(),
                source,
            })?;
        let spec_rules = group
            .class
            .security_rules
            .as_ref()
            .map(|rules| rules.0.as_slice())
            .unwrap_or_default();
        let rules = if spec_rules.is_empty() && subnet.class.role == SubnetRole::ControlPlane {
            default_control_plane_rules(api_server_port)
        } else {
            spec_rules.iter().map(rule).collect()
        };
        let mut tags = group.class.tags.clone().unwrap_or_default();
        tags.extend(scope.owned_tags(Role::Common));
        let dropped = last_applied
            .rules_of(&group.name)
            .map(|(name, _)| name)
            .filter(|name| !rules.iter().any(|rule| same_name(rule, Some(name))))
            .cloned()
            .collect();
        Ok(Some(Self {
            id,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags,
            rules,
            dropped,
        }))
    }
}

fn inbound_tcp(name: &str, description: &str, port: String, priority: u32) -> RuleModel {
    RuleModel {
        name: Some(name.to_owned()),
        properties: Some(SecurityRuleProperties {
            description: Some(description.to_owned()),
            protocol: Some(SecurityRuleProtocol::Tcp),
            source_port_range: Some("*".to_owned()),
            destination_port_range: Some(port),
            source_address_prefix: Some("*".to_owned()),
            destination_address_prefix: Some("*".to_owned()),
            access: Some(SecurityRuleAccess::Allow),
            priority: Some(priority),
            direction: Some(SecurityRuleDirection::Inbound),
            ..SecurityRuleProperties::default()
        }),
        ..RuleModel::default()
    }
}

/// SSH and the API server, open from anywhere, as CAPZ opens them on the control plane.
fn default_control_plane_rules(api_server_port: i32) -> Vec<RuleModel> {
    vec![
        inbound_tcp("allow_ssh", "Allow SSH", "22".to_owned(), SSH_PRIORITY),
        inbound_tcp(
            "allow_apiserver",
            "Allow K8s API Server",
            api_server_port.to_string(),
            SSH_PRIORITY + 1,
        ),
    ]
}

/// The ARM rule of a spec rule; `sources` wins over `source`, and `*` stands for what is unset.
fn rule(spec: &RuleSpec) -> RuleModel {
    let any = || Some("*".to_owned());
    let (source_address_prefix, source_address_prefixes) =
        match spec.sources.as_ref().filter(|s| !s.is_empty()) {
            Some(sources) => (None, Some(sources.clone())),
            None => (spec.source.clone().or_else(any), None),
        };
    RuleModel {
        name: Some(spec.name.clone()),
        properties: Some(SecurityRuleProperties {
            description: Some(spec.description.clone()).filter(|text| !text.is_empty()),
            protocol: Some(match spec.protocol {
                SecurityProtocol::Tcp => SecurityRuleProtocol::Tcp,
                SecurityProtocol::Udp => SecurityRuleProtocol::Udp,
                SecurityProtocol::Icmp => SecurityRuleProtocol::Icmp,
                SecurityProtocol::All => SecurityRuleProtocol::Any,
            }),
            source_port_range: spec.source_ports.clone().or_else(any),
            destination_port_range: spec.destination_ports.clone().or_else(any),
            source_address_prefix,
            source_address_prefixes,
            destination_address_prefix: spec.destination.clone().or_else(any),
            access: Some(match spec.action {
                Some(SecurityRuleAction::Deny) => SecurityRuleAccess::Deny,
                Some(SecurityRuleAction::Allow) | None => SecurityRuleAccess::Allow,
            }),
            priority: spec.priority.and_then(|priority| u32::try_from(priority).ok()),
            // Admission writes Inbound where it was left out, as CAPZ does.
            direction: Some(match spec.direction {
                Some(DirectionSpec::Inbound) | None => SecurityRuleDirection::Inbound,
                Some(DirectionSpec::Outbound) => SecurityRuleDirection::Outbound,
            }),
            ..SecurityRuleProperties::default()
        }),
        ..RuleModel::default()
    }
}

fn same_name(rule: &RuleModel, name: Option<&str>) -> bool {
    rule.name
        .as_deref()
        .zip(name)
        .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
}

/// Whether `existing` says what `wanted` says; Azure answers an unused list as empty.
fn same_rule(existing: &SecurityRuleProperties, wanted: &SecurityRuleProperties) -> bool {
    let list = |list: &Option<Vec<String>>| list.clone().filter(|list| !list.is_empty());
    existing.description == wanted.description
        && existing.protocol == wanted.protocol
        && existing.source_port_range == wanted.source_port_range
        && existing.destination_port_range == wanted.destination_port_range
        && existing
            .source_address_prefix
            .clone()
            .filter(|prefix| !prefix.is_empty())
            == wanted.source_address_prefix
        && list(&existing.source_address_prefixes) == wanted.source_address_prefixes
        && existing.destination_address_prefix == wanted.destination_address_prefix
        && existing.access == wanted.access
        && existing.priority == wanted.priority
        && existing.direction == wanted.direction
}

/// A rule as written back: what it says, without what Azure adds.
fn writable(rule: &RuleModel) -> RuleModel {
    RuleModel {
        name: rule.name.clone(),
        properties: rule.properties.clone().map(|properties| SecurityRuleProperties {
            provisioning_state: None,
            ..properties
        }),
        ..RuleModel::default()
    }
}

impl AzureResource for SecurityGroup {
    type Model = NetworkSecurityGroup;
    const SERVICE: &'static str = "securitygroups";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&NetworkSecurityGroup>) -> Option<NetworkSecurityGroup> {
        let current: &[RuleModel] = existing
            .and_then(|group| group.properties.as_ref())
            .and_then(|properties| properties.security_rules.as_deref())
            .unwrap_or_default();
        let holds = |wanted: &RuleModel| {
            current.iter().any(|rule| {
                same_name(rule, wanted.name.as_deref())
                    && rule
                        .properties
                        .as_ref()
                        .zip(wanted.properties.as_ref())
                        .is_some_and(|(existing, wanted)| same_rule(existing, wanted))
            })
        };
        let dropped = |rule: &RuleModel| self.dropped.iter().any(|name| same_name(rule, Some(name)));
        if existing.is_some_and(|group| group.tags.as_ref() == Some(&self.tags))
            && self.rules.iter().all(holds)
            && !current.iter().any(dropped)
        {
            return None;
        }
        // Every other rule the group has stays, those of the spec as the spec says.
        let mut rules: Vec<RuleModel> = current
            .iter()
            .filter(|rule| !dropped(rule))
            .map(|rule| {
                self.rules
                    .iter()
                    .find(|wanted| same_name(rule, wanted.name.as_deref()))
                    .unwrap_or(rule)
            })
            .map(writable)
            .collect();
        rules.extend(
            self.rules
                .iter()
                .filter(|wanted| !current.iter().any(|rule| same_name(rule, wanted.name.as_deref())))
                .cloned(),
        );
        Some(NetworkSecurityGroup {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            properties: Some(NetworkSecurityGroupProperties {
                security_rules: Some(rules),
                ..NetworkSecurityGroupProperties::default()
            }),
            ..NetworkSecurityGroup::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_scope;

    fn group_of(scope: &ClusterScope, subnet: &str) -> SecurityGroup {
        let spec = scope.subnets().iter().find(|s| s.class.name == subnet).unwrap();
        SecurityGroup::for_subnet(scope, spec, 6443, &LastApplied::default())
            .unwrap()
            .unwrap()
    }

    fn names(group: &NetworkSecurityGroup) -> Vec<String> {
        group
            .properties
            .as_ref()
            .unwrap()
            .security_rules
            .as_ref()
            .unwrap()
            .iter()
            .map(|r| r.name.clone().unwrap())
            .collect()
    }

    #[test]
    fn the_control_plane_group_opens_ssh_and_the_api_server_unless_the_spec_has_rules() {
        let scope = test_scope(&serde_json::json!({}));
        let body = group_of(&scope, "c1-controlplane-subnet").desired(None).unwrap();
        assert_eq!(names(&body), ["allow_ssh", "allow_apiserver"]);
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json["properties"]["securityRules"][1]["properties"]["destinationPortRange"],
            "6443"
        );
        assert_eq!(
            json["properties"]["securityRules"][0]["properties"]["priority"],
            2200
        );
        assert!(
            group_of(&scope, "c1-node-subnet")
                .desired(None)
                .unwrap()
                .properties
                .unwrap()
                .security_rules
                .unwrap()
                .is_empty()
        );

        let custom = test_scope(&serde_json::json!({"networkSpec": {"subnets": [{
            "name": "cp", "role": "control-plane",
            "securityGroup": {"name": "cp-nsg", "securityRules": [{
                "name": "allow_https", "description": "HTTPS", "protocol": "Tcp", "direction": "Inbound",
                "priority": 2300, "destinationPorts": "443", "sources": ["10.0.0.0/8", "192.168.0.0/16"]
            }]},
        }]}}));
        let body = group_of(&custom, "cp").desired(None).unwrap();
        assert_eq!(names(&body), ["allow_https"]);
        let json = serde_json::to_value(&body).unwrap();
        let rule = &json["properties"]["securityRules"][0]["properties"];
        assert_eq!(
            rule["sourceAddressPrefixes"],
            serde_json::json!(["10.0.0.0/8", "192.168.0.0/16"])
        );
        assert!(rule.get("sourceAddressPrefix").is_none());
        assert_eq!(rule["access"], "Allow");
    }

    #[test]
    fn a_foreign_rule_is_kept_and_only_a_changed_spec_rule_is_written() {
        let scope = test_scope(&serde_json::json!({}));
        let group = group_of(&scope, "c1-controlplane-subnet");
        let mut existing = group.desired(None).unwrap();
        let rules = existing
            .properties
            .as_mut()
            .unwrap()
            .security_rules
            .as_mut()
            .unwrap();
        rules.push(inbound_tcp("foreign", "added by hand", "8080".into(), 3000));
        for rule in rules.iter_mut() {
            rule.properties.as_mut().unwrap().source_address_prefixes = Some(Vec::new());
        }
        assert_eq!(
            group.desired(Some(&existing)),
            None,
            "a foreign rule alone changes nothing"
        );

        let rules = existing
            .properties
            .as_mut()
            .unwrap()
            .security_rules
            .as_mut()
            .unwrap();
        rules[0].properties.as_mut().unwrap().destination_port_range = Some("2222".into());
        let update = group.desired(Some(&existing)).unwrap();
        assert_eq!(names(&update), ["allow_ssh", "allow_apiserver", "foreign"]);
        let ssh = &update
            .properties
            .as_ref()
            .unwrap()
            .security_rules
            .as_ref()
            .unwrap()[0];
        assert_eq!(
            ssh.properties.as_ref().unwrap().destination_port_range.as_deref(),
            Some("22")
        );
    }

    #[test]
    fn a_rule_removed_from_the_spec_is_removed_and_foreign_rules_stay() {
        let with_https = test_scope(&serde_json::json!({"networkSpec": {"subnets": [{
            "name": "cp", "role": "control-plane",
            "securityGroup": {"name": "cp-nsg", "securityRules": [
                {"name": "allow_https", "description": "HTTPS", "protocol": "Tcp", "direction": "Inbound",
                 "priority": 2300, "destinationPorts": "443"},
                {"name": "allow_dns", "description": "DNS", "protocol": "Udp", "direction": "Inbound",
                 "priority": 2301, "destinationPorts": "53"}
            ]},
        }]}}));
        let before = group_of(&with_https, "cp");
        let mut existing = before.desired(None).unwrap();
        existing
            .properties
            .as_mut()
            .unwrap()
            .security_rules
            .as_mut()
            .unwrap()
            .push(inbound_tcp("foreign", "added by hand", "8080".into(), 3000));
        let mut record = LastApplied::default();
        record.record(&before, true);
        let annotation = record.to_annotation();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&annotation).unwrap(),
            serde_json::json!({"cp-nsg": {"allow_dns": "DNS", "allow_https": "HTTPS"}})
        );

        // The spec drops allow_dns: the next write leaves it out, and keeps the foreign rule.
        let without_dns = test_scope(&serde_json::json!({"networkSpec": {"subnets": [{
            "name": "cp", "role": "control-plane",
            "securityGroup": {"name": "cp-nsg", "securityRules": [
                {"name": "allow_https", "description": "HTTPS", "protocol": "Tcp", "direction": "Inbound",
                 "priority": 2300, "destinationPorts": "443"}
            ]},
        }]}}));
        let annotations = [(LAST_APPLIED_ANNOTATION.to_owned(), annotation)].into();
        let recorded = LastApplied::from_annotations(&annotations);
        let spec = without_dns
            .subnets()
            .iter()
            .find(|s| s.class.name == "cp")
            .unwrap();
        let after = SecurityGroup::for_subnet(&without_dns, spec, 6443, &recorded)
            .unwrap()
            .unwrap();
        let update = after.desired(Some(&existing)).unwrap();
        assert_eq!(names(&update), ["allow_https", "foreign"]);

        // Until that write is done, the record keeps the dropped rule; then it forgets it.
        let mut pending = recorded.clone();
        pending.record(&after, false);
        assert_eq!(pending, recorded);
        let mut done = recorded.clone();
        done.record(&after, true);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&done.to_annotation()).unwrap(),
            serde_json::json!({"cp-nsg": {"allow_https": "HTTPS"}})
        );

        // Once the rule is gone, nothing more is written; without a record nothing is dropped.
        assert_eq!(after.desired(Some(&update)), None);
        let unrecorded = SecurityGroup::for_subnet(&without_dns, spec, 6443, &LastApplied::default())
            .unwrap()
            .unwrap();
        assert_eq!(unrecorded.desired(Some(&existing)), None);
    }
}
