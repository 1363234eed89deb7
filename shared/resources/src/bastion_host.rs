//! The Azure Bastion host of a cluster (`Microsoft.Network/bastionHosts`), from
//! `spec.bastionSpec.azureBastion`: in the network's `AzureBastionSubnet`, reached through its own
//! public IP (see [`BastionHost::public_ip`]). A host is always the cluster's own: one that
//! exists without the cluster's tag is refused, not adopted.

use capz_azure::models::network::{
    BastionHost as Model, BastionHostIpConfigurationProperties, BastionHostProperties, BastionHostSkuName,
    IpAllocationMethod,
};
use capz_azure::models::{ChildResource, Sku, SubResource};
use capz_azure::{Location, ResourceId};
use capz_kit::api::azurecluster::{AzureBastion, BastionHostSku};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{self, Role, Tags};

use crate::public_ip::{AddressOf, PublicIp, PublicIpFor};

/// The public IP of a bastion host.
pub type BastionIp = PublicIpFor<BastionHost>;

impl AddressOf for BastionHost {
    const IP_SERVICE: &'static str = "bastionpublicips";
}

/// The bastion host of a cluster.
#[derive(Debug, Clone)]
pub struct BastionHost {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    sku: BastionHostSkuName,
    tunneling: bool,
    subnet: ResourceId,
    public_ip: BastionIp,
}

impl BastionHost {
    /// The host `scope`'s defaulted spec asks for, or `None` when it asks for none.
    ///
    /// # Errors
    /// When the host's, its subnet's or its public IP's name is not valid.
    pub fn new(scope: &ClusterScope) -> Result<Option<Self>, ScopeError> {
        let Some(bastion) = scope
            .spec
            .bastion_spec
            .as_ref()
            .and_then(|spec| spec.azure_bastion.as_ref())
        else {
            return Ok(None);
        };
        let AzureBastion {
            name,
            subnet,
            public_ip,
            sku,
            enable_tunneling,
        } = bastion;
        // The webhook's defaults fill every name; a spec stored before them gets the same ones.
        let name = name
            .clone()
            .unwrap_or_else(|| capz_rules::names::bastion(&scope.name));
        let subnet = subnet
            .as_ref()
            .map_or(capz_rules::azurecluster::BASTION_SUBNET_NAME, |subnet| {
                subnet.class.name.as_str()
            });
        let ip_name = public_ip
            .as_ref()
            .map(|ip| ip.name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| capz_rules::names::bastion_ip(&scope.name));
        Ok(Some(Self {
            id: scope
                .id_of::<Model>(&name)
                .map_err(ScopeError::invalid("spec.bastionSpec.azureBastion.name", &name))?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags: scope.owned_tags(Role::Bastion),
            sku: match sku {
                Some(BastionHostSku::Standard) => BastionHostSkuName::Standard,
                Some(BastionHostSku::Basic) | None => BastionHostSkuName::Basic,
            },
            tunneling: enable_tunneling.unwrap_or(false),
            subnet: scope.subnet_id(subnet)?,
            public_ip: BastionIp::new(PublicIp::new(scope, &ip_name, Role::Bastion, None).map_err(
                ScopeError::invalid("spec.bastionSpec.azureBastion.publicIP.name", &ip_name),
            )?),
        }))
    }

    /// The host's public IP, which must exist before the host.
    #[must_use]
    pub fn public_ip(&self) -> &BastionIp {
        &self.public_ip
    }

    /// The name of the host's one IP configuration, as CAPZ names it.
    fn configuration_name(&self) -> String {
        format!("{}-bastionIP", self.id.name())
    }
}

impl AzureResource for BastionHost {
    type Model = Model;
    const SERVICE: &'static str = "bastionhosts";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        if let Some(existing) = existing {
            // The placement is fixed once the host exists (the webhook refuses a changed
            // bastion); the tier, tunnelling and tags are what a write could still bring back.
            let sku = existing.sku.as_ref().and_then(|sku| sku.name.as_ref());
            let tunneling = existing
                .properties
                .as_ref()
                .and_then(|properties| properties.enable_tunneling)
                .unwrap_or(false);
            if sku == Some(&self.sku)
                && tunneling == self.tunneling
                && tags::carries(existing.tags.as_ref(), &self.tags)
            {
                return None;
            }
        }
        Some(Model {
            location: Some(self.location.clone()),
            tags: Some(tags::keeping_others(
                existing.and_then(|host| host.tags.as_ref()),
                &self.tags,
            )),
            sku: Some(Sku {
                name: Some(self.sku.clone()),
                tier: None,
            }),
            properties: Some(BastionHostProperties {
                ip_configurations: Some(vec![ChildResource {
                    name: Some(self.configuration_name()),
                    properties: Some(BastionHostIpConfigurationProperties {
                        subnet: Some(SubResource::from(self.subnet.clone())),
                        public_ip_address: Some(SubResource::from(self.public_ip.id().clone())),
                        private_ip_allocation_method: Some(IpAllocationMethod::Dynamic),
                        provisioning_state: None,
                    }),
                    ..ChildResource::default()
                }]),
                enable_tunneling: Some(self.tunneling),
                ..BastionHostProperties::default()
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

    #[test]
    fn no_bastion_spec_means_no_host() {
        assert!(BastionHost::new(&test_scope(&json!({}))).unwrap().is_none());
    }

    #[test]
    fn an_empty_bastion_spec_gives_a_basic_host_in_the_bastion_subnet_with_its_ip() {
        let host = BastionHost::new(&test_scope(&json!({"bastionSpec": {"azureBastion": {}}})))
            .unwrap()
            .unwrap();
        let group =
            format!("/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network");
        assert_eq!(
            host.id().to_string(),
            format!("{group}/bastionHosts/c1-azure-bastion")
        );
        assert_eq!(
            host.public_ip().id().to_string(),
            format!("{group}/publicIPAddresses/c1-azure-bastion-pip")
        );
        let body = serde_json::to_value(host.desired(None).unwrap()).unwrap();
        assert_eq!(body["sku"]["name"], "Basic");
        assert_eq!(body["properties"]["enableTunneling"], false);
        let configuration = &body["properties"]["ipConfigurations"][0];
        assert_eq!(configuration["name"], "c1-azure-bastion-bastionIP");
        assert_eq!(
            configuration["properties"]["subnet"]["id"],
            format!("{group}/virtualNetworks/c1-vnet/subnets/AzureBastionSubnet")
        );
        assert_eq!(
            configuration["properties"]["publicIPAddress"]["id"],
            format!("{group}/publicIPAddresses/c1-azure-bastion-pip")
        );
        assert_eq!(
            body["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "bastion"
        );
    }

    #[test]
    fn a_host_as_wanted_is_not_written_and_a_changed_tier_is() {
        let spec = json!({"bastionSpec": {"azureBastion": {
            "name": "jump", "sku": "Standard", "enableTunneling": true, "publicIP": {"name": "jump-ip"},
        }}});
        let host = BastionHost::new(&test_scope(&spec)).unwrap().unwrap();
        assert_eq!(host.id().name(), "jump");
        assert_eq!(host.public_ip().id().name(), "jump-ip");
        let mut existing = host.desired(None).unwrap();
        assert_eq!(host.desired(Some(&existing)), None);
        existing.sku = Some(Sku {
            name: Some(BastionHostSkuName::Basic),
            tier: None,
        });
        let write = host.desired(Some(&existing)).unwrap();
        assert_eq!(write.sku.unwrap().name, Some(BastionHostSkuName::Standard));
    }
}
