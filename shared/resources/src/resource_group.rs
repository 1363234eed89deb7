//! The cluster's resource group (`Microsoft.Resources/resourceGroups`), which holds everything the
//! cluster creates. A group that already exists without the cluster's `owned` tag was brought by
//! the user: the reconcile routine reports it as not owned, and the controller then uses it as it
//! is and never deletes it.

use capz_azure::models::ResourceGroup as ResourceGroupModel;
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{Role, Tags};

/// The resource group of a cluster.
#[derive(Debug, Clone)]
pub struct ResourceGroup {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
}

impl ResourceGroup {
    /// The group the scope names, in its location, tagged as the cluster's common resource.
    #[must_use]
    pub fn new(scope: &ClusterScope) -> Self {
        Self::named(
            scope.group_id(),
            &scope.name,
            scope.location.clone(),
            scope.owned_tags(Role::Common),
        )
    }

    /// The group `id` of the cluster `cluster`, in `location`, with `tags` (its ownership tags
    /// among them).
    #[must_use]
    pub fn named(id: ResourceId, cluster: &str, location: Location, tags: Tags) -> Self {
        Self {
            id,
            cluster: cluster.to_owned(),
            location,
            tags,
        }
    }
}

impl AzureResource for ResourceGroup {
    type Model = ResourceGroupModel;
    const SERVICE: &'static str = "groups";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&ResourceGroupModel>) -> Option<ResourceGroupModel> {
        // A group's location is fixed; only its tags can drift.
        if existing.is_some_and(|group| group.tags.as_ref() == Some(&self.tags)) {
            return None;
        }
        Some(ResourceGroupModel {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            ..ResourceGroupModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_scope;

    #[test]
    fn a_new_group_is_tagged_common_with_the_additional_tags_and_an_equal_one_is_not_written() {
        let scope = test_scope(&serde_json::json!({"additionalTags": {"team": "blue"}}));
        let group = ResourceGroup::new(&scope);
        assert_eq!(
            group.id().to_string(),
            format!("/subscriptions/{}/resourceGroups/c1", crate::TEST_SUBSCRIPTION)
        );
        let body = group.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["location"], "westeurope");
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
            "owned"
        );
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "common"
        );
        assert_eq!(json["tags"]["team"], "blue");
        assert_eq!(group.desired(Some(&body)), None);
        let mut drifted = body;
        drifted.tags.as_mut().unwrap().remove("team");
        assert!(group.desired(Some(&drifted)).is_some());
    }
}
