//! A NAT gateway of the cluster (`Microsoft.Network/natGateways`): outbound connectivity of the
//! node subnets that name it, through its own public IP (a [`PublicIp`](crate::public_ip::PublicIp)
//! unit the same controller reconciles first).

use capz_api::common::network::NatGateway as NatGatewaySpec;
use capz_azure::models::network::{NatGateway as NatGatewayModel, NatGatewayProperties, NatGatewaySkuName};
use capz_azure::models::{Sku, SubResource};
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{Role, Tags};

use crate::public_ip::{AddressOf, PublicIp, PublicIpFor};

/// A NAT gateway of the cluster with its public IP.
#[derive(Debug, Clone)]
pub struct NatGateway {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    zones: Option<Vec<String>>,
    ip: NatGatewayIp,
}

/// The public IP of a NAT gateway.
pub type NatGatewayIp = PublicIpFor<NatGateway>;

impl AddressOf for NatGateway {
    const IP_SERVICE: &'static str = "natgatewaypublicips";
}

impl NatGateway {
    /// The gateway `spec` describes, in the cluster's resource group, and its public IP (named
    /// by the spec, which defaulting always fills).
    ///
    /// # Errors
    /// When a name is not a valid Azure name.
    pub fn new(scope: &ClusterScope, spec: &NatGatewaySpec) -> Result<Self, ScopeError> {
        let name = &spec.class.name;
        let ip_name = spec
            .ip
            .as_ref()
            .map(|ip| ip.name.clone())
            .filter(|ip| !ip.is_empty())
            .unwrap_or_else(|| capz_rules::names::nat_gateway_ip(name));
        let zones = spec.zones.clone().filter(|zones| !zones.is_empty());
        let ip = NatGatewayIp::new(
            PublicIp::new(scope, &ip_name, Role::NodeOutbound, None)
                .map_err(ScopeError::invalid(
                    "spec.networkSpec.subnets[].natGateway.ip.name",
                    &ip_name,
                ))?
                .zones(zones.clone().unwrap_or_default()),
        );
        Ok(Self {
            id: scope.id_of::<NatGatewayModel>(name).map_err(ScopeError::invalid(
                "spec.networkSpec.subnets[].natGateway.name",
                name,
            ))?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags: scope.owned_tags(Role::Common),
            zones,
            ip,
        })
    }

    /// The gateway's public IP.
    #[must_use]
    pub fn public_ip(&self) -> &NatGatewayIp {
        &self.ip
    }
}

impl AzureResource for NatGateway {
    type Model = NatGatewayModel;
    const SERVICE: &'static str = "natgateways";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&NatGatewayModel>) -> Option<NatGatewayModel> {
        let addresses = vec![SubResource::from(self.ip.id().clone())];
        if let Some(existing) = existing {
            let current = existing
                .properties
                .as_ref()
                .and_then(|properties| properties.public_ip_addresses.as_ref());
            if existing.tags.as_ref() == Some(&self.tags) && current == Some(&addresses) {
                return None;
            }
        }
        Some(NatGatewayModel {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            sku: Some(Sku {
                name: Some(NatGatewaySkuName::Standard),
                tier: None,
            }),
            // Fixed once the gateway exists.
            zones: existing.map_or_else(|| self.zones.clone(), |gateway| gateway.zones.clone()),
            properties: Some(NatGatewayProperties {
                public_ip_addresses: Some(addresses),
                ..NatGatewayProperties::default()
            }),
            ..NatGatewayModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_scope;

    #[test]
    fn the_default_node_gateway_sends_from_its_own_address() {
        let scope = test_scope(&serde_json::json!({}));
        let spec = scope
            .subnets()
            .iter()
            .find_map(|subnet| subnet.nat_gateway.clone())
            .unwrap();
        let gateway = NatGateway::new(&scope, &spec).unwrap();
        assert!(
            gateway
                .public_ip()
                .id()
                .to_string()
                .ends_with("/publicIPAddresses/pip-c1-node-natgw")
        );
        let body = gateway.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["sku"]["name"], "Standard");
        assert_eq!(
            json["properties"]["publicIpAddresses"][0]["id"],
            gateway.public_ip().id().to_string()
        );
        assert_eq!(gateway.desired(Some(&body)), None);
    }
}
