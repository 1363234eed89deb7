//! The cluster's virtual network (`Microsoft.Network/virtualNetworks`), created with the spec's
//! address space, or brought by the user. A network that exists without the cluster's `owned`
//! tag is the user's: the reconcile routine reports it as not owned, and the controller then only
//! reads it (and the subnets in it), never writes or deletes it.

use capz_azure::models::network::{
    AddressSpace, VirtualNetwork as VirtualNetworkModel, VirtualNetworkProperties,
};
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{Role, Tags};

/// The virtual network of a cluster.
#[derive(Debug, Clone)]
pub struct VirtualNetwork {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    prefixes: Vec<String>,
}

impl VirtualNetwork {
    /// The network the spec describes: its name, group, address space and extra tags.
    ///
    /// # Errors
    /// When the network's group or name is not valid.
    pub fn new(scope: &ClusterScope) -> Result<Self, ScopeError> {
        let spec = scope.vnet();
        let mut tags = spec.class.tags.clone().unwrap_or_default();
        // The ownership and role tags win over the spec's own.
        tags.extend(scope.owned_tags(Role::Common));
        Ok(Self::named(
            scope.vnet_id()?,
            &scope.name,
            scope.location.clone(),
            tags,
            spec.class.cidr_blocks.clone().unwrap_or_default(),
        ))
    }

    /// The network `id` of the cluster `cluster`, in `location`, with `tags` (its ownership
    /// tags among them) and the address space `prefixes`.
    #[must_use]
    pub fn named(
        id: ResourceId,
        cluster: &str,
        location: Location,
        tags: Tags,
        prefixes: Vec<String>,
    ) -> Self {
        Self {
            id,
            cluster: cluster.to_owned(),
            location,
            tags,
            prefixes,
        }
    }
}

impl AzureResource for VirtualNetwork {
    type Model = VirtualNetworkModel;
    const SERVICE: &'static str = "virtualnetworks";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&VirtualNetworkModel>) -> Option<VirtualNetworkModel> {
        let properties = existing.and_then(|network| network.properties.as_ref());
        let prefixes = properties
            .and_then(|properties| properties.address_space.as_ref())
            .and_then(|space| space.address_prefixes.as_ref());
        if existing.is_some_and(|network| network.tags.as_ref() == Some(&self.tags))
            && prefixes == Some(&self.prefixes)
        {
            return None;
        }
        Some(VirtualNetworkModel {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            properties: Some(VirtualNetworkProperties {
                address_space: Some(AddressSpace {
                    address_prefixes: Some(self.prefixes.clone()),
                }),
                // A PUT replaces the subnets with the ones it carries: keep those that exist.
                subnets: properties.and_then(|properties| properties.subnets.clone()),
                ..VirtualNetworkProperties::default()
            }),
            ..VirtualNetworkModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use capz_azure::models::network::{Subnet, SubnetProperties};

    use super::*;
    use crate::test_scope;

    #[test]
    fn a_new_network_has_the_spec_space_and_an_update_keeps_the_subnets() {
        let scope = test_scope(&serde_json::json!({
            "networkSpec": {"vnet": {"name": "c1-vnet", "cidrBlocks": ["10.0.0.0/16"], "tags": {"env": "dev"}}},
        }));
        let network = VirtualNetwork::new(&scope).unwrap();
        assert!(
            network
                .id()
                .to_string()
                .ends_with("/resourceGroups/c1/providers/Microsoft.Network/virtualNetworks/c1-vnet")
        );
        let body = network.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json["properties"]["addressSpace"]["addressPrefixes"],
            serde_json::json!(["10.0.0.0/16"])
        );
        assert_eq!(json["tags"]["env"], "dev");
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "common"
        );
        assert!(json["properties"].get("subnets").is_none());

        let mut existing = body;
        existing.properties.as_mut().unwrap().subnets = Some(vec![Subnet {
            name: Some("nodes".into()),
            properties: Some(SubnetProperties {
                address_prefix: Some("10.0.1.0/24".into()),
                ..SubnetProperties::default()
            }),
            ..Subnet::default()
        }]);
        assert_eq!(network.desired(Some(&existing)), None);
        existing.tags.as_mut().unwrap().remove("env");
        let update = network.desired(Some(&existing)).unwrap();
        assert_eq!(
            update.properties.unwrap().subnets.unwrap().len(),
            1,
            "the subnets are carried"
        );
    }
}
