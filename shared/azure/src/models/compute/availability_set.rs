//! Availability sets: spread machines of a region without zones over fault and update domains.

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use crate::id::{Location, ResourceId};
use crate::models::{Sku, SubResource, Tags};

/// An availability set (`Microsoft.Compute/availabilitySets`). Azure reports no provisioning state
/// for it: it is written at once.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilitySet {
    /// The set's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The set's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Compute/availabilitySets` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The set's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The set's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// `Aligned` for machines with managed disks, which all of a cluster's have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<AvailabilitySetSkuName>>,
    /// The set's domains and machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<AvailabilitySetProperties>,
}

/// How an availability set spreads its machines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailabilitySetProperties {
    /// Fault domains (racks) to spread over; the region's maximum is in its resource SKUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_fault_domain_count: Option<u32>,
    /// Update domains (host maintenance groups) to spread over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_update_domain_count: Option<u32>,
    /// The machines in the set; a set with machines cannot be deleted (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machines: Option<Vec<SubResource>>,
}

lenient_enum! {
    /// The SKU of an availability set.
    pub enum AvailabilitySetSkuName {
        /// For machines with managed disks: the disks follow the machines' fault domains.
        Aligned = "Aligned",
        /// For machines with unmanaged (blob) disks.
        Classic = "Classic",
    }
}

arm_model!(
    AvailabilitySet,
    "Microsoft.Compute/availabilitySets",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{AvailabilitySet, AvailabilitySetProperties, AvailabilitySetSkuName};
    use crate::models::Sku;

    #[test]
    fn an_answer_is_read_and_a_desired_set_sends_only_what_it_sets() {
        let answer = json!({
            "name": "capz-md-0-as",
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/availabilitySets/capz-md-0-as",
            "type": "Microsoft.Compute/availabilitySets",
            "location": "westus",
            "properties": {
                "platformUpdateDomainCount": 5,
                "platformFaultDomainCount": 3,
                "virtualMachines": [{"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/RG/providers/Microsoft.Compute/virtualMachines/NODE-0"}],
                "statuses": []
            },
            "sku": {"name": "Flexible"}
        });
        let set: AvailabilitySet = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &set);
        assert_eq!(
            set.sku.unwrap().name,
            Some(AvailabilitySetSkuName::Other("Flexible".to_owned()))
        );
        let properties = set.properties.unwrap();
        assert_eq!(properties.platform_fault_domain_count, Some(3));
        assert_eq!(properties.virtual_machines.unwrap()[0].id.name(), "NODE-0");

        let desired = AvailabilitySet {
            location: Some("westus".parse().unwrap()),
            sku: Some(Sku {
                name: Some(AvailabilitySetSkuName::Aligned),
                tier: None,
            }),
            properties: Some(AvailabilitySetProperties {
                platform_fault_domain_count: Some(3),
                platform_update_domain_count: Some(5),
                virtual_machines: None,
            }),
            ..AvailabilitySet::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus",
                "sku": {"name": "Aligned"},
                "properties": {"platformFaultDomainCount": 3, "platformUpdateDomainCount": 5}
            })
        );
    }
}
