//! Virtual network peerings (`Microsoft.Network/virtualNetworks/virtualNetworkPeerings`) of
//! `spec.networkSpec.vnet.peerings`: for each remote network, one peering from the cluster's
//! network to it (`<vnet>-To-<remote>`, the forward properties) and one back
//! (`<remote>-To-<vnet>`, the reverse properties), as CAPZ names them. The one back is a child
//! of a network the cluster does not own: deleting the cluster's resource group does not remove
//! it, so it is always deleted on its own.

use capz_azure::models::SubResource;
use capz_azure::models::network::{VirtualNetworkPeering, VirtualNetworkPeeringProperties};
use capz_azure::{IdError, ResourceId};
use capz_kit::api::common::network::VnetPeeringProperties;
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};

/// One direction of a peering of the cluster's network.
#[derive(Debug, Clone)]
pub struct VnetPeering {
    id: ResourceId,
    remote: ResourceId,
    settings: VnetPeeringProperties,
}

impl VnetPeering {
    /// Both directions of every peering `scope`'s spec asks for, forward then reverse for each
    /// remote network, in the spec's order.
    ///
    /// # Errors
    /// When a network's or peering's name is not valid.
    pub fn of_cluster(scope: &ClusterScope) -> Result<Vec<Self>, ScopeError> {
        let local = scope.vnet_id()?;
        let specs = scope.vnet().class.peerings.unwrap_or_default();
        let remotes = scope.peered_vnet_ids()?;
        let mut peerings = Vec::with_capacity(2 * specs.len());
        for (spec, remote) in specs.iter().zip(remotes) {
            let both =
                Self::between(&local, &remote, spec.forward_peering_properties.clone()).and_then(|forward| {
                    let reverse = Self::between(&remote, &local, spec.reverse_peering_properties.clone())?;
                    Ok([forward, reverse])
                });
            let field = "spec.networkSpec.vnet.peerings[].remoteVnetName";
            peerings.extend(both.map_err(ScopeError::invalid(field, &spec.remote_vnet_name))?);
        }
        Ok(peerings)
    }

    /// The peering from `from` to `to`, named `<from>-To-<to>`.
    fn between(
        from: &ResourceId,
        to: &ResourceId,
        settings: Option<VnetPeeringProperties>,
    ) -> Result<Self, IdError> {
        let name = capz_rules::names::vnet_peering(&from.name(), &to.name());
        Ok(Self {
            id: capz_azure::models::id_of::<VirtualNetworkPeering>(from, &name)?,
            remote: to.clone(),
            settings: settings.unwrap_or_default(),
        })
    }

    /// The network the peering leads to.
    #[must_use]
    pub fn remote(&self) -> &ResourceId {
        &self.remote
    }
}

impl AzureResource for VnetPeering {
    type Model = VirtualNetworkPeering;
    const SERVICE: &'static str = "vnetpeerings";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    /// Peerings take no tags; they are the cluster's by the names it derives.
    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    fn desired(&self, existing: Option<&VirtualNetworkPeering>) -> Option<VirtualNetworkPeering> {
        let wanted = VirtualNetworkPeeringProperties {
            remote_virtual_network: Some(SubResource::from(self.remote.clone())),
            allow_virtual_network_access: self.settings.allow_virtual_network_access,
            allow_forwarded_traffic: self.settings.allow_forwarded_traffic,
            allow_gateway_transit: self.settings.allow_gateway_transit,
            use_remote_gateways: self.settings.use_remote_gateways,
            ..VirtualNetworkPeeringProperties::default()
        };
        if let Some(properties) = existing.and_then(|peering| peering.properties.as_ref()) {
            // Only what the spec sets is compared: Azure fills the rest in.
            let same_remote = properties
                .remote_virtual_network
                .as_ref()
                .is_some_and(|remote| remote.id == self.remote);
            let holds = |wanted: Option<bool>, found: Option<bool>| wanted.is_none() || wanted == found;
            if same_remote
                && holds(
                    wanted.allow_virtual_network_access,
                    properties.allow_virtual_network_access,
                )
                && holds(wanted.allow_forwarded_traffic, properties.allow_forwarded_traffic)
                && holds(wanted.allow_gateway_transit, properties.allow_gateway_transit)
                && holds(wanted.use_remote_gateways, properties.use_remote_gateways)
            {
                return None;
            }
        }
        Some(VirtualNetworkPeering {
            properties: Some(wanted),
            ..VirtualNetworkPeering::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{TEST_SUBSCRIPTION, test_scope};

    #[test]
    fn each_remote_network_is_peered_both_ways_as_capz_names_them() {
        let spec = json!({"networkSpec": {"vnet": {"name": "spoke", "peerings": [
            {"remoteVnetName": "hub", "resourceGroup": "shared",
             "forwardPeeringProperties": {"allowForwardedTraffic": true},
             "reversePeeringProperties": {"allowGatewayTransit": true}},
        ]}}});
        let peerings = VnetPeering::of_cluster(&test_scope(&spec)).unwrap();
        let base = format!("/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups");
        let ids: Vec<String> = peerings.iter().map(|peering| peering.id().to_string()).collect();
        assert_eq!(
            ids,
            [
                format!(
                    "{base}/c1/providers/Microsoft.Network/virtualNetworks/spoke/virtualNetworkPeerings/spoke-To-hub"
                ),
                format!(
                    "{base}/shared/providers/Microsoft.Network/virtualNetworks/hub/virtualNetworkPeerings/hub-To-spoke"
                ),
            ]
        );
        let forward = serde_json::to_value(peerings[0].desired(None).unwrap()).unwrap();
        assert_eq!(
            forward,
            json!({"properties": {
                "remoteVirtualNetwork": {"id": format!("{base}/shared/providers/Microsoft.Network/virtualNetworks/hub")},
                "allowForwardedTraffic": true,
            }})
        );
        let reverse = serde_json::to_value(peerings[1].desired(None).unwrap()).unwrap();
        assert_eq!(reverse["properties"]["allowGatewayTransit"], true);
        assert_eq!(peerings[1].remote().name(), "spoke");
    }

    #[test]
    fn a_peering_as_wanted_is_not_written_and_a_changed_setting_is() {
        let spec = json!({"networkSpec": {"vnet": {"name": "spoke", "peerings": [
            {"remoteVnetName": "hub", "forwardPeeringProperties": {"allowForwardedTraffic": true}},
        ]}}});
        let peering = VnetPeering::of_cluster(&test_scope(&spec)).unwrap().remove(0);
        let mut existing = peering.desired(None).unwrap();
        let properties = existing.properties.as_mut().unwrap();
        properties.allow_virtual_network_access = Some(true);
        properties.allow_gateway_transit = Some(false);
        assert_eq!(
            peering.desired(Some(&existing)),
            None,
            "Azure's defaults are kept"
        );
        existing.properties.as_mut().unwrap().allow_forwarded_traffic = Some(false);
        assert!(peering.desired(Some(&existing)).is_some());
        assert!(
            VnetPeering::of_cluster(&test_scope(&json!({})))
                .unwrap()
                .is_empty()
        );
    }
}
