//! A link of a cluster's private DNS zone to a virtual network
//! (`Microsoft.Network/privateDnsZones/virtualNetworkLinks`): the cluster's own network and each
//! network it is peered with, so that machines there resolve the API server's name. Named
//! `<network>-link`; the network may live in another resource group. A link that exists without
//! the cluster's `owned` tag is the user's: used, never written or deleted.

use capz_azure::models::SubResource;
use capz_azure::models::private_dns::{VirtualNetworkLink, VirtualNetworkLinkProperties};
use capz_azure::{IdError, Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::tags::{self, Tags};
use capz_rules::names;

use crate::private_dns_zone::PrivateDnsZone;

/// A link of the zone to one network.
#[derive(Debug, Clone)]
pub struct PrivateDnsLink {
    id: ResourceId,
    network: ResourceId,
    cluster: String,
    tags: Tags,
}

impl PrivateDnsLink {
    /// The link of `zone` to `network`, for `cluster`, tagged `tags`.
    ///
    /// # Errors
    /// When the link's name, from the network's, is not a valid name.
    pub fn new(
        zone: &PrivateDnsZone,
        network: ResourceId,
        cluster: &str,
        tags: Tags,
    ) -> Result<Self, IdError> {
        Ok(Self {
            id: zone
                .id()
                .child("virtualNetworkLinks", &names::private_dns_link(&network.name()))?,
            network,
            cluster: cluster.to_owned(),
            tags,
        })
    }
}

impl AzureResource for PrivateDnsLink {
    type Model = VirtualNetworkLink;
    const SERVICE: &'static str = "privatednslinks";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&VirtualNetworkLink>) -> Option<VirtualNetworkLink> {
        let existing_tags = existing.and_then(|link| link.tags.as_ref());
        let linked = existing
            .and_then(|link| link.properties.as_ref())
            .and_then(|properties| properties.virtual_network.as_ref())
            .is_some_and(|network| network.id == self.network);
        if linked && tags::carries(existing_tags, &self.tags) {
            return None;
        }
        Some(VirtualNetworkLink {
            location: Some(Location::global()),
            tags: Some(tags::keeping_others(existing_tags, &self.tags)),
            properties: Some(VirtualNetworkLinkProperties {
                virtual_network: Some(SubResource::from(self.network.clone())),
                // The cluster's machines do not register their names in the zone; CAPZ's
                // links do not either.
                registration_enabled: Some(false),
                ..VirtualNetworkLinkProperties::default()
            }),
            ..VirtualNetworkLink::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use capz_kit::tags::Role;
    use serde_json::json;

    use super::*;
    use crate::{TEST_SUBSCRIPTION, test_scope};

    #[test]
    fn a_link_is_named_after_its_network_and_written_once() {
        let scope = test_scope(&json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}}));
        let zone = PrivateDnsZone::new(&scope).unwrap().unwrap();
        let network = scope.vnet_id().unwrap();
        let link = PrivateDnsLink::new(&zone, network.clone(), "c1", scope.owned_tags(Role::Common)).unwrap();
        assert_eq!(
            link.id().to_string(),
            format!("{}/virtualNetworkLinks/c1-vnet-link", zone.id())
        );
        let created = link.desired(None).unwrap();
        let properties = created.properties.clone().unwrap();
        assert_eq!(properties.virtual_network.unwrap().id, network);
        assert_eq!(properties.registration_enabled, Some(false));
        assert_eq!(created.location, Some(Location::global()));
        assert_eq!(link.desired(Some(&created)), None);

        let mut elsewhere = created;
        let hub: ResourceId = format!("/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/hub/providers/Microsoft.Network/virtualNetworks/hub")
            .parse()
            .unwrap();
        elsewhere.properties.as_mut().unwrap().virtual_network = Some(SubResource::from(hub));
        assert!(
            link.desired(Some(&elsewhere)).is_some(),
            "a link to another network is rewritten"
        );
    }

    #[test]
    fn a_peered_network_in_another_group_gets_a_link_too() {
        let scope = test_scope(&json!({"networkSpec": {
            "apiServerLB": {"type": "Internal"},
            "vnet": {"peerings": [{"remoteVnetName": "hub", "resourceGroup": "shared"}, {"remoteVnetName": "spoke"}]},
        }}));
        let peered = scope.peered_vnet_ids().unwrap();
        let groups: Vec<&str> = peered
            .iter()
            .map(|id| id.resource_group_name().unwrap().as_str())
            .collect();
        assert_eq!(groups, ["shared", "c1"]);
        let zone = PrivateDnsZone::new(&scope).unwrap().unwrap();
        let link = PrivateDnsLink::new(&zone, peered[0].clone(), "c1", Tags::new()).unwrap();
        assert_eq!(link.id().name(), "hub-link");
        let linked = link
            .desired(None)
            .unwrap()
            .properties
            .unwrap()
            .virtual_network
            .unwrap();
        assert_eq!(linked.id, peered[0]);
    }
}
