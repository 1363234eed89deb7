//! The availability zones of a region, as the subscriptions API lists them
//! (`GET /subscriptions/{id}/locations`, `availabilityZoneMappings`): the failure domains of a
//! cluster. A region's zones do not change, so each is read once per process.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use capz_azure::{ApiVersion, ArmClient, ArmError, Location, ResourceId, SubscriptionId};
use serde::Deserialize;

/// The api-version of the subscriptions API's location list.
const API_VERSION: ApiVersion = ApiVersion::new("2022-12-01");

/// A region as the location list describes it; only what the zones need.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    name: String,
    #[serde(default)]
    availability_zone_mappings: Option<Vec<ZoneMapping>>,
}

/// A logical zone of the subscription and the physical zone behind it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ZoneMapping {
    logical_zone: String,
}

/// The zones of each region, by subscription and region name.
type Known = HashMap<(SubscriptionId, String), Vec<String>>;

static ZONES: Mutex<Option<Known>> = Mutex::new(None);

/// The availability zones (`"1"`, `"2"`, …) of `location` for `subscription`, sorted; none for a
/// region without zones or one the subscription does not list.
///
/// # Errors
/// When the location list cannot be read.
pub async fn zones(
    client: &ArmClient,
    subscription: SubscriptionId,
    location: &Location,
) -> Result<Vec<String>, ArmError> {
    let key = (subscription, location.as_str().to_ascii_lowercase());
    if let Some(known) = ZONES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|zones| zones.get(&key))
    {
        return Ok(known.clone());
    }
    let regions: Vec<Region> = client
        .list(
            &ResourceId::subscription_scope(subscription),
            "Microsoft.Resources/subscriptions/locations",
            &API_VERSION,
        )
        .await?;
    let mut zones = ZONES.lock().unwrap_or_else(PoisonError::into_inner);
    let zones = zones.get_or_insert_with(HashMap::new);
    for region in regions {
        let mut logical: Vec<String> = region
            .availability_zone_mappings
            .unwrap_or_default()
            .into_iter()
            .map(|mapping| mapping.logical_zone)
            .collect();
        logical.sort();
        zones.insert((subscription, region.name.to_ascii_lowercase()), logical);
    }
    Ok(zones.get(&key).cloned().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_reads_its_logical_zones_and_one_without_has_none() {
        let regions: Vec<Region> = serde_json::from_value(serde_json::json!([
            {"name": "westeurope", "availabilityZoneMappings": [
                {"logicalZone": "2", "physicalZone": "westeurope-az1"},
                {"logicalZone": "1", "physicalZone": "westeurope-az2"}
            ]},
            {"name": "westus", "metadata": {"regionType": "Physical"}}
        ]))
        .unwrap();
        assert_eq!(
            regions[0].availability_zone_mappings.as_ref().unwrap()[0].logical_zone,
            "2"
        );
        assert!(regions[1].availability_zone_mappings.is_none());
    }
}
