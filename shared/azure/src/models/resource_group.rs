//! Resource groups: the container every other resource of a cluster lives in.

use serde::{Deserialize, Serialize};

use super::{ProvisioningState, TrackedResource};
use crate::id::ApiVersion;

/// A resource group (`Microsoft.Resources/resourceGroups`).
pub type ResourceGroup = TrackedResource<ResourceGroupProperties>;

/// What Azure reports about a resource group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceGroupProperties {
    /// `Succeeded`, or `Deleting` while the group and everything in it is deleted (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

arm_model!(
    ResourceGroup,
    "Microsoft.Resources/resourceGroups",
    ApiVersion::new("2024-03-01"),
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::ResourceGroup;
    use crate::models::{ProvisioningState, Tags};

    #[test]
    fn an_answer_is_read_and_a_desired_group_sends_only_what_it_sets() {
        let answer = json!({
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/capz-rg",
            "name": "capz-rg",
            "type": "Microsoft.Resources/resourceGroups",
            "location": "westus2",
            "managedBy": null,
            "tags": {"sigs.k8s.io_cluster-api-provider-azure_cluster_capz": "owned"},
            "properties": {"provisioningState": "Deleting", "someNewField": 1}
        });
        let group: ResourceGroup = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &group);
        assert_eq!(group.id.unwrap().name(), "capz-rg");
        assert_eq!(group.location.unwrap().as_str(), "westus2");
        assert_eq!(
            group.properties.unwrap().provisioning_state,
            Some(ProvisioningState::Deleting)
        );

        let desired = ResourceGroup {
            location: Some("westus2".parse().unwrap()),
            tags: Some(Tags::from([("a".to_owned(), "b".to_owned())])),
            ..ResourceGroup::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({"location": "westus2", "tags": {"a": "b"}})
        );
    }
}
