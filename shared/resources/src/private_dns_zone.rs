//! The private DNS zone of a private cluster (`Microsoft.Network/privateDnsZones`): where the name
//! of an API server behind an internal load balancer resolves. The zone is
//! `privateDNSZoneName` (by default `<cluster>.capz.io`) in `privateDNSZoneResourceGroup` (by
//! default the cluster's group). A zone that exists without the cluster's `owned` tag is the
//! user's: it is used as it is, never written or deleted.

use capz_azure::models::private_dns::PrivateZone;
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{self, Role, Tags};

/// The private DNS zone of a cluster.
#[derive(Debug, Clone)]
pub struct PrivateDnsZone {
    id: ResourceId,
    cluster: String,
    tags: Tags,
}

impl PrivateDnsZone {
    /// The zone of `scope`'s cluster, or `None` when it has none (a public API server, or
    /// `privateDNSZone: None`: the user resolves the name).
    ///
    /// # Errors
    /// When the zone's name or group is not valid.
    pub fn new(scope: &ClusterScope) -> Result<Option<Self>, ScopeError> {
        Ok(scope.private_dns_zone_id()?.map(|id| Self {
            id,
            cluster: scope.name.clone(),
            tags: scope.owned_tags(Role::Common),
        }))
    }
}

impl AzureResource for PrivateDnsZone {
    type Model = PrivateZone;
    const SERVICE: &'static str = "privatednszones";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&PrivateZone>) -> Option<PrivateZone> {
        let existing_tags = existing.and_then(|zone| zone.tags.as_ref());
        if existing.is_some() && tags::carries(existing_tags, &self.tags) {
            return None;
        }
        Some(PrivateZone {
            location: Some(Location::global()),
            tags: Some(tags::keeping_others(existing_tags, &self.tags)),
            ..PrivateZone::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{TEST_SUBSCRIPTION, test_scope};

    #[test]
    fn only_an_internal_api_server_has_a_zone_named_after_the_cluster_by_default() {
        assert!(PrivateDnsZone::new(&test_scope(&json!({}))).unwrap().is_none());
        let internal = json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}});
        let zone = PrivateDnsZone::new(&test_scope(&internal)).unwrap().unwrap();
        assert_eq!(
            zone.id().to_string(),
            format!(
                "/subscriptions/{TEST_SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network/privateDnsZones/c1.capz.io"
            )
        );
        let none = json!({"networkSpec": {"apiServerLB": {"type": "Internal"}, "privateDNSZone": "None"}});
        assert!(PrivateDnsZone::new(&test_scope(&none)).unwrap().is_none());
        let named = json!({"networkSpec": {
            "apiServerLB": {"type": "Internal"},
            "privateDNSZoneName": "kubernetes.example.com",
            "privateDNSZoneResourceGroup": "dns",
        }});
        let zone = PrivateDnsZone::new(&test_scope(&named)).unwrap().unwrap();
        assert_eq!(zone.id().name(), "kubernetes.example.com");
        assert_eq!(zone.id().resource_group_name().unwrap().as_str(), "dns");
    }

    #[test]
    fn a_zone_is_global_and_tags_others_added_are_kept() {
        let internal = json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}});
        let zone = PrivateDnsZone::new(&test_scope(&internal)).unwrap().unwrap();
        let mut created = zone.desired(None).unwrap();
        assert_eq!(created.location, Some(Location::global()));
        assert!(tags::is_owned(created.tags.as_ref(), "c1"));
        assert_eq!(zone.desired(Some(&created)), None);
        created
            .tags
            .as_mut()
            .unwrap()
            .insert("policy".to_owned(), "added".to_owned());
        assert_eq!(
            zone.desired(Some(&created)),
            None,
            "a foreign tag changes nothing"
        );
        created
            .tags
            .as_mut()
            .unwrap()
            .remove("sigs.k8s.io_cluster-api-provider-azure_role");
        let update = zone.desired(Some(&created)).unwrap();
        let written = update.tags.unwrap();
        assert_eq!(written["policy"], "added");
        assert_eq!(written["sigs.k8s.io_cluster-api-provider-azure_role"], "common");
    }
}
