//! Private endpoints (`Microsoft.Network/privateEndpoints`) of `subnets[].privateEndpoints`: in
//! the cluster's resource group, each takes an address in its subnet and connects it to the
//! target the spec names, automatically approved or, with `manualApproval`, approved by the
//! target's owner. An endpoint is always the cluster's own, as in CAPZ: one that exists without
//! the cluster's tag is refused.

use capz_azure::models::network::{
    PrivateEndpoint as Model, PrivateEndpointIpConfiguration, PrivateEndpointIpConfigurationProperties,
    PrivateEndpointProperties, PrivateLinkServiceConnection, PrivateLinkServiceConnectionProperties,
};
use capz_azure::models::{ChildResource, SubResource};
use capz_azure::{Location, ResourceId};
use capz_kit::api::common::PrivateEndpointSpec;
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{self, Role, Tags};

/// A private endpoint of one of the cluster's subnets.
#[derive(Debug, Clone)]
pub struct PrivateEndpoint {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    subnet: ResourceId,
    manual: bool,
    connections: Vec<PrivateLinkServiceConnection>,
    interface: Option<String>,
    security_groups: Vec<SubResource>,
    addresses: Vec<String>,
}

impl PrivateEndpoint {
    /// Every private endpoint of `scope`'s subnets, in the spec's order.
    ///
    /// # Errors
    /// When a name, location or target id is not valid.
    pub fn of_cluster(scope: &ClusterScope) -> Result<Vec<Self>, ScopeError> {
        let mut endpoints = Vec::new();
        for subnet in scope.subnets() {
            for spec in subnet
                .class
                .private_endpoints
                .iter()
                .flat_map(|endpoints| &endpoints.0)
            {
                endpoints.push(Self::new(scope, scope.subnet_id(&subnet.class.name)?, spec)?);
            }
        }
        Ok(endpoints)
    }

    fn new(scope: &ClusterScope, subnet: ResourceId, spec: &PrivateEndpointSpec) -> Result<Self, ScopeError> {
        let field = "spec.networkSpec.subnets[].privateEndpoints[]";
        let location = match spec.location.as_deref().filter(|location| !location.is_empty()) {
            Some(location) => location.parse().map_err(ScopeError::invalid(
                "spec.networkSpec.subnets[].privateEndpoints[].location",
                location,
            ))?,
            None => scope.location.clone(),
        };
        let mut connections = Vec::new();
        for (index, connection) in spec.private_link_service_connections.iter().flatten().enumerate() {
            let target = connection.private_link_service_id.as_deref().unwrap_or_default();
            let target: ResourceId = target.parse().map_err(ScopeError::invalid(
                "spec.networkSpec.subnets[].privateEndpoints[].privateLinkServiceConnections[].privateLinkServiceID",
                target,
            ))?;
            let name = connection
                .name
                .clone()
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| format!("{}-{index}", spec.name));
            connections.push(ChildResource {
                name: Some(name),
                properties: Some(PrivateLinkServiceConnectionProperties {
                    private_link_service_id: Some(target),
                    group_ids: connection.group_ids.clone().filter(|groups| !groups.is_empty()),
                    request_message: connection
                        .request_message
                        .clone()
                        .filter(|message| !message.is_empty()),
                    private_link_service_connection_state: None,
                }),
                ..ChildResource::default()
            });
        }
        // Sorted by name, as Azure keeps them, so that what is read back compares equal.
        connections.sort_by(|a, b| a.name.cmp(&b.name));
        let mut security_groups = Vec::new();
        for group in spec.application_security_groups.iter().flatten() {
            let id: ResourceId = group.parse().map_err(ScopeError::invalid(
                "spec.networkSpec.subnets[].privateEndpoints[].applicationSecurityGroups[]",
                group,
            ))?;
            security_groups.push(SubResource::from(id));
        }
        let mut addresses = spec.private_ip_addresses.clone().unwrap_or_default();
        addresses.sort();
        let mut tags = scope.owned_tags(Role::Common);
        tags.insert("Name".to_owned(), spec.name.clone());
        Ok(Self {
            id: scope
                .id_of::<Model>(&spec.name)
                .map_err(ScopeError::invalid(field, &spec.name))?,
            cluster: scope.name.clone(),
            location,
            tags,
            subnet,
            manual: spec.manual_approval.unwrap_or(false),
            connections,
            interface: spec
                .custom_network_interface_name
                .clone()
                .filter(|name| !name.is_empty()),
            security_groups,
            addresses,
        })
    }

    /// The connections as the spec gives them, in the list Azure keeps them in.
    fn wanted_connections(
        &self,
    ) -> (
        Option<Vec<PrivateLinkServiceConnection>>,
        Option<Vec<PrivateLinkServiceConnection>>,
    ) {
        if self.manual {
            (None, Some(self.connections.clone()))
        } else {
            (Some(self.connections.clone()), None)
        }
    }
}

/// What of a connection the spec decides and Azure keeps as it was sent: its name, target and
/// groups.
type Asked<'a> = (Option<&'a str>, Option<&'a ResourceId>, Option<&'a Vec<String>>);

/// The connections of `connections` as asked, sorted by name.
fn as_asked(connections: Option<&Vec<PrivateLinkServiceConnection>>) -> Vec<Asked<'_>> {
    let mut asked: Vec<_> = connections
        .into_iter()
        .flatten()
        .map(|connection| {
            let properties = connection.properties.as_ref();
            (
                connection.name.as_deref(),
                properties.and_then(|p| p.private_link_service_id.as_ref()),
                properties.and_then(|p| p.group_ids.as_ref()),
            )
        })
        .collect();
    asked.sort_by(|a, b| a.0.cmp(&b.0));
    asked
}

impl AzureResource for PrivateEndpoint {
    type Model = Model;
    const SERVICE: &'static str = "privateendpoints";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        let (automatic, manual) = self.wanted_connections();
        if let Some(existing) = existing {
            // The subnet, interface and addresses are fixed once the endpoint exists; the
            // connections and tags are what a write could still bring back.
            let properties = existing.properties.as_ref();
            let same = |wanted: &Option<Vec<PrivateLinkServiceConnection>>,
                        found: Option<&Vec<PrivateLinkServiceConnection>>| {
                as_asked(wanted.as_ref()) == as_asked(found.filter(|found| !found.is_empty()))
            };
            if same(
                &automatic,
                properties.and_then(|p| p.private_link_service_connections.as_ref()),
            ) && same(
                &manual,
                properties.and_then(|p| p.manual_private_link_service_connections.as_ref()),
            ) && tags::carries(existing.tags.as_ref(), &self.tags)
            {
                return None;
            }
        }
        let ip_configurations = (!self.addresses.is_empty()).then(|| {
            self.addresses
                .iter()
                .enumerate()
                .map(|(index, address)| PrivateEndpointIpConfiguration {
                    name: Some(format!("{}-ip-{index}", self.id.name())),
                    properties: Some(PrivateEndpointIpConfigurationProperties {
                        private_ip_address: Some(address.clone()),
                        ..PrivateEndpointIpConfigurationProperties::default()
                    }),
                    ..ChildResource::default()
                })
                .collect()
        });
        Some(Model {
            location: Some(self.location.clone()),
            tags: Some(tags::keeping_others(
                existing.and_then(|endpoint| endpoint.tags.as_ref()),
                &self.tags,
            )),
            properties: Some(PrivateEndpointProperties {
                subnet: Some(SubResource::from(self.subnet.clone())),
                private_link_service_connections: automatic,
                manual_private_link_service_connections: manual,
                custom_network_interface_name: self.interface.clone(),
                application_security_groups: (!self.security_groups.is_empty())
                    .then(|| self.security_groups.clone()),
                ip_configurations,
                ..PrivateEndpointProperties::default()
            }),
            ..Model::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{TEST_SUBSCRIPTION, test_scope};

    fn account() -> String {
        format!(
            "/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/data/providers/Microsoft.Storage/storageAccounts/logs"
        )
    }

    fn with_endpoint(endpoint: &serde_json::Value) -> ClusterScope {
        test_scope(&json!({"networkSpec": {"subnets": [
            {"name": "control-plane-subnet", "role": "control-plane"},
            {"name": "node-subnet", "role": "node", "privateEndpoints": [endpoint]},
        ]}}))
    }

    #[test]
    fn an_endpoint_connects_its_subnet_to_its_target() {
        let scope = with_endpoint(&json!({
            "name": "logs-pe",
            "privateLinkServiceConnections": [{"name": "blob", "privateLinkServiceID": account(), "groupIDs": ["blob"]}],
        }));
        let endpoints = PrivateEndpoint::of_cluster(&scope).unwrap();
        assert_eq!(endpoints.len(), 1);
        let endpoint = &endpoints[0];
        assert_eq!(
            endpoint.id().to_string(),
            format!(
                "/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network/privateEndpoints/logs-pe"
            )
        );
        let body = serde_json::to_value(endpoint.desired(None).unwrap()).unwrap();
        assert_eq!(body["location"], "westeurope");
        assert!(
            body["properties"]["subnet"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/subnets/node-subnet")
        );
        let connection = &body["properties"]["privateLinkServiceConnections"][0];
        assert_eq!(connection["name"], "blob");
        assert_eq!(connection["properties"]["privateLinkServiceId"], account());
        assert_eq!(connection["properties"]["groupIds"], json!(["blob"]));
        assert!(
            body["properties"]
                .get("manualPrivateLinkServiceConnections")
                .is_none()
        );
        assert_eq!(body["tags"]["Name"], "logs-pe");
        assert!(tags::is_owned(
            endpoint.desired(None).unwrap().tags.as_ref(),
            "c1"
        ));
    }

    #[test]
    fn an_endpoint_as_wanted_is_not_written_and_a_manual_one_asks_its_owner() {
        let spec = json!({
            "name": "logs-pe",
            "manualApproval": true,
            "privateIPAddresses": ["10.1.0.10"],
            "privateLinkServiceConnections": [{"privateLinkServiceID": account(), "requestMessage": "please"}],
        });
        let endpoint = PrivateEndpoint::of_cluster(&with_endpoint(&spec))
            .unwrap()
            .remove(0);
        let created = endpoint.desired(None).unwrap();
        let body = serde_json::to_value(&created).unwrap();
        let connection = &body["properties"]["manualPrivateLinkServiceConnections"][0];
        assert_eq!(connection["name"], "logs-pe-0", "an unnamed connection gets one");
        assert_eq!(connection["properties"]["requestMessage"], "please");
        assert_eq!(
            body["properties"]["ipConfigurations"][0]["properties"]["privateIPAddress"],
            "10.1.0.10"
        );
        // As Azure answers: the connection's state, and an empty list of the other kind.
        let mut answered = created.clone();
        let properties = answered.properties.as_mut().unwrap();
        properties.private_link_service_connections = Some(Vec::new());
        properties
            .manual_private_link_service_connections
            .as_mut()
            .unwrap()[0]
            .properties
            .as_mut()
            .unwrap()
            .private_link_service_connection_state = Some(capz_azure::models::network::ConnectionState {
            status: Some("Pending".to_owned()),
            description: None,
        });
        assert_eq!(endpoint.desired(Some(&answered)), None);
        answered
            .properties
            .as_mut()
            .unwrap()
            .manual_private_link_service_connections = Some(Vec::new());
        assert!(
            endpoint.desired(Some(&answered)).is_some(),
            "a lost connection is written back"
        );
    }
}
