//! A subnet of the cluster's virtual network (`Microsoft.Network/virtualNetworks/subnets`), with
//! its address ranges, security group, route table, NAT gateway and service endpoints.
//!
//! Subnets take no tags: one is the cluster's when its network is, and its name is the spec's.
//! In a brought network a subnet is the user's: it must exist, and it is only read.

use capz_api::common::network::SubnetSpec;
use capz_azure::ResourceId;
use capz_azure::models::network::{
    NatGateway, NetworkSecurityGroup, RouteTable, ServiceEndpoint, Subnet as SubnetModel, SubnetProperties,
};
use capz_azure::models::{ArmModel, SubResource};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};

/// Whether the subnet's virtual network is the cluster's or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// The cluster created the network: its subnets are written as the spec says.
    Owned,
    /// The user brought the network: its subnets are only read.
    Brought,
}

/// A subnet of the cluster.
#[derive(Debug, Clone)]
pub struct Subnet {
    id: ResourceId,
    network: Network,
    prefixes: Vec<String>,
    security_group: Option<ResourceId>,
    route_table: Option<ResourceId>,
    nat_gateway: Option<ResourceId>,
    service_endpoints: Vec<(String, Vec<String>)>,
}

/// The id of the resource named by a subnet's `name` field, when it names one.
fn attached<M: ArmModel>(scope: &ClusterScope, name: Option<&str>) -> Result<Option<ResourceId>, ScopeError> {
    let Some(name) = name.filter(|name| !name.is_empty()) else {
        return Ok(None);
    };
    scope
        .id_of::<M>(name)
        .map(Some)
        .map_err(|source| ScopeError::Invalid {
            field: "spec.networkSpec.subnets[]",
            value: name.to_owned(),
            source,
        })
}

impl Subnet {
    /// The subnet `spec` describes in the cluster's network. Its security group, route table and
    /// NAT gateway live in the cluster's resource group.
    ///
    /// # Errors
    /// When a name in the spec is not a valid Azure name.
    pub fn new(scope: &ClusterScope, spec: &SubnetSpec, network: Network) -> Result<Self, ScopeError> {
        let service_endpoints = spec
            .class
            .service_endpoints
            .iter()
            .flat_map(|endpoints| &endpoints.0)
            .map(|endpoint| (endpoint.service.clone(), endpoint.locations.clone()))
            .collect();
        Ok(Self {
            id: scope.subnet_id(&spec.class.name)?,
            network,
            prefixes: spec.class.cidr_blocks.clone().unwrap_or_default(),
            security_group: attached::<NetworkSecurityGroup>(
                scope,
                spec.security_group.as_ref().map(|group| group.name.as_str()),
            )?,
            route_table: attached::<RouteTable>(
                scope,
                spec.route_table.as_ref().map(|table| table.name.as_str()),
            )?,
            nat_gateway: attached::<NatGateway>(
                scope,
                spec.nat_gateway
                    .as_ref()
                    .map(|gateway| gateway.class.name.as_str()),
            )?,
            service_endpoints,
        })
    }

    /// The subnet `id` with the address ranges `prefixes` and the service endpoints
    /// `service_endpoints` (service, locations), and nothing attached.
    #[must_use]
    pub fn plain(
        id: ResourceId,
        prefixes: Vec<String>,
        service_endpoints: Vec<(String, Vec<String>)>,
        network: Network,
    ) -> Self {
        Self {
            id,
            network,
            prefixes,
            security_group: None,
            route_table: None,
            nat_gateway: None,
            service_endpoints,
        }
    }

    fn matches(&self, existing: &SubnetProperties) -> bool {
        let prefixes: Vec<&String> = existing
            .address_prefixes
            .iter()
            .flatten()
            .chain(existing.address_prefix.iter())
            .collect();
        let reference = |sub: Option<&SubResource>| sub.map(|sub| sub.id.clone());
        let endpoints: Vec<(String, Vec<String>)> = existing
            .service_endpoints
            .iter()
            .flatten()
            .map(|endpoint| {
                (
                    endpoint.service.clone().unwrap_or_default(),
                    endpoint.locations.clone().unwrap_or_default(),
                )
            })
            .collect();
        prefixes.len() == self.prefixes.len()
            && self.prefixes.iter().all(|prefix| prefixes.contains(&prefix))
            && reference(existing.network_security_group.as_ref()) == self.security_group
            && reference(existing.route_table.as_ref()) == self.route_table
            && reference(existing.nat_gateway.as_ref()) == self.nat_gateway
            && endpoints == self.service_endpoints
    }
}

impl AzureResource for Subnet {
    type Model = SubnetModel;
    const SERVICE: &'static str = "subnets";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        match self.network {
            Network::Owned => Ownership::OwnedParent,
            Network::Brought => Ownership::Shared,
        }
    }

    fn desired(&self, existing: Option<&SubnetModel>) -> Option<SubnetModel> {
        if self.network == Network::Brought
            || existing
                .and_then(|subnet| subnet.properties.as_ref())
                .is_some_and(|properties| self.matches(properties))
        {
            return None;
        }
        let (address_prefix, address_prefixes) = match self.prefixes.as_slice() {
            [one] => (Some(one.clone()), None),
            several => (None, Some(several.to_vec())),
        };
        let endpoints = (!self.service_endpoints.is_empty()).then(|| {
            self.service_endpoints
                .iter()
                .map(|(service, locations)| ServiceEndpoint {
                    service: Some(service.clone()),
                    locations: Some(locations.clone()),
                    provisioning_state: None,
                })
                .collect()
        });
        Some(SubnetModel {
            properties: Some(SubnetProperties {
                address_prefix,
                address_prefixes,
                network_security_group: self.security_group.clone().map(SubResource::from),
                route_table: self.route_table.clone().map(SubResource::from),
                nat_gateway: self.nat_gateway.clone().map(SubResource::from),
                service_endpoints: endpoints,
                ..SubnetProperties::default()
            }),
            ..SubnetModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_scope;

    fn node_subnet(scope: &ClusterScope) -> SubnetSpec {
        scope
            .subnets()
            .iter()
            .find(|subnet| subnet.class.name == "c1-node-subnet")
            .cloned()
            .unwrap()
    }

    #[test]
    fn the_default_node_subnet_attaches_its_group_table_and_gateway() {
        let scope = test_scope(&serde_json::json!({}));
        let subnet = Subnet::new(&scope, &node_subnet(&scope), Network::Owned).unwrap();
        let body = subnet.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        let group = format!(
            "/subscriptions/{}/resourceGroups/c1/providers/Microsoft.Network",
            crate::TEST_SUBSCRIPTION
        );
        assert_eq!(json["properties"]["addressPrefix"], "10.1.0.0/16");
        assert_eq!(
            json["properties"]["networkSecurityGroup"]["id"],
            format!("{group}/networkSecurityGroups/c1-node-nsg")
        );
        assert_eq!(
            json["properties"]["routeTable"]["id"],
            format!("{group}/routeTables/c1-node-routetable")
        );
        assert_eq!(
            json["properties"]["natGateway"]["id"],
            format!("{group}/natGateways/c1-node-natgw")
        );
        assert_eq!(subnet.ownership(), Ownership::OwnedParent);

        // Azure's answer adds read-only fields and may spell ids in another case.
        let mut answer = body.clone();
        let properties = answer.properties.as_mut().unwrap();
        properties.ip_configurations = Some(Vec::new());
        properties.network_security_group = Some(SubResource::from(
            format!("{}/networkSecurityGroups/C1-NODE-NSG", group.to_lowercase())
                .parse::<ResourceId>()
                .unwrap(),
        ));
        assert_eq!(subnet.desired(Some(&answer)), None);
        answer.properties.as_mut().unwrap().route_table = None;
        assert!(
            subnet.desired(Some(&answer)).is_some(),
            "a detached route table is attached again"
        );
    }

    #[test]
    fn a_subnet_of_a_brought_network_is_only_read() {
        let scope = test_scope(&serde_json::json!({}));
        let subnet = Subnet::new(&scope, &node_subnet(&scope), Network::Brought).unwrap();
        assert_eq!(subnet.ownership(), Ownership::Shared);
        assert_eq!(subnet.desired(None), None);
    }
}
