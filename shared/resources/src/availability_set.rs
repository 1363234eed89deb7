//! Availability sets (`Microsoft.Compute/availabilitySets`): where machines of a region without
//! availability zones are spread over fault and update domains. CAPZ makes one for the control
//! plane and one per MachineDeployment (or MachineSet), named `<cluster>_<group>-as`.

use capz_azure::models::Sku;
use capz_azure::models::compute::{
    AvailabilitySet as Model, AvailabilitySetProperties, AvailabilitySetSkuName,
};
use capz_azure::{IdError, Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{Role, Tags};

/// The node group of the control plane's availability set.
pub const CONTROL_PLANE_GROUP: &str = "control-plane";

/// The name of the availability set of `group` (`control-plane`, or a MachineDeployment's or
/// MachineSet's name) in `cluster`.
#[must_use]
pub fn name(cluster: &str, group: &str) -> String {
    format!("{cluster}_{group}-as")
}

/// An availability set the cluster owns.
#[derive(Debug, Clone)]
pub struct AvailabilitySet {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
}

impl AvailabilitySet {
    /// The set `name` in the cluster's resource group. Like CAPZ, it carries the `common` role:
    /// machines of several roles may share a group's set.
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn new(scope: &ClusterScope, name: &str, additional: &Tags) -> Result<Self, IdError> {
        let mut tags = additional.clone();
        tags.extend(scope.owned_tags(Role::Common));
        Ok(Self {
            id: scope.id_of::<Model>(name)?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags,
        })
    }
}

impl AzureResource for AvailabilitySet {
    type Model = Model;
    const SERVICE: &'static str = "availabilitysets";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        // Domains and SKU are fixed once the set holds machines; only tags may change.
        if existing.is_some_and(|existing| existing.tags.as_ref() == Some(&self.tags)) {
            return None;
        }
        Some(Model {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            sku: Some(Sku {
                name: Some(AvailabilitySetSkuName::Aligned),
                tier: None,
            }),
            properties: existing
                .and_then(|existing| existing.properties.clone())
                .map(|properties| AvailabilitySetProperties {
                    virtual_machines: None,
                    ..properties
                }),
            ..Model::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use capz_rules::Features;

    use super::*;

    fn scope() -> ClusterScope {
        let cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001"},
        }))
        .unwrap();
        ClusterScope::new(&cluster, Features::default(), None).unwrap()
    }

    #[test]
    fn a_set_is_aligned_tagged_and_written_once() {
        let set = AvailabilitySet::new(&scope(), &name("c1", CONTROL_PLANE_GROUP), &Tags::new()).unwrap();
        assert_eq!(set.id().name(), "c1_control-plane-as");
        let body = set.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["sku"]["name"], "Aligned");
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
            "owned"
        );
        let mut existing = body;
        existing.properties = Some(AvailabilitySetProperties {
            platform_fault_domain_count: Some(2),
            ..AvailabilitySetProperties::default()
        });
        assert_eq!(set.desired(Some(&existing)), None);
        existing.tags = None;
        let rewritten = set.desired(Some(&existing)).unwrap();
        assert_eq!(rewritten.properties.unwrap().platform_fault_domain_count, Some(2));
    }
}
