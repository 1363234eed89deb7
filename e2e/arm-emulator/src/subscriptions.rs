//! The subscriptions API clients call before anything else: `az login` lists tenants and
//! subscriptions, SDKs and tools read a subscription and its locations.

use serde_json::{Value, json};

use crate::config::Config;
use crate::error::ArmError;
use crate::path::ArmPath;

/// Answers a read of the tenants, the subscriptions, one subscription or its locations.
pub(crate) fn read(config: &Config, path: &ArmPath) -> Result<Value, ArmError> {
    match path {
        ArmPath::Tenants => Ok(tenants(config)),
        ArmPath::Subscription { subscription } => get(config, subscription),
        ArmPath::Locations { subscription } => Ok(locations(config, subscription)),
        _ => Ok(list(config)),
    }
}

/// `GET /tenants`: every configured tenant.
fn tenants(config: &Config) -> Value {
    let value: Vec<Value> = config
        .tenants
        .iter()
        .map(|tenant| {
            json!({
                "id": format!("/tenants/{}", tenant.id),
                "tenantId": tenant.id,
                "tenantCategory": "Home",
                "countryCode": "US",
                "displayName": "Emulated tenant",
                "domains": ["emulator.onmicrosoft.com"],
                "defaultDomain": "emulator.onmicrosoft.com",
                "tenantType": "AAD",
            })
        })
        .collect();
    json!({ "value": value })
}

/// `GET /subscriptions`: every configured subscription.
fn list(config: &Config) -> Value {
    let value: Vec<Value> = config.subscriptions.iter().map(describe).collect();
    json!({ "value": value, "count": {"type": "Total", "value": value.len()} })
}

/// `GET /subscriptions/{id}`.
fn get(config: &Config, id: &str) -> Result<Value, ArmError> {
    config
        .subscriptions
        .iter()
        .find(|subscription| subscription.id.eq_ignore_ascii_case(id))
        .map(describe)
        .ok_or_else(|| ArmError::subscription_not_found(id))
}

fn describe(subscription: &crate::config::Subscription) -> Value {
    let display_name = if subscription.display_name.is_empty() {
        "Emulated subscription"
    } else {
        subscription.display_name.as_str()
    };
    json!({
        "id": format!("/subscriptions/{}", subscription.id),
        "authorizationSource": "RoleBased",
        "managedByTenants": [],
        "subscriptionId": subscription.id,
        "tenantId": subscription.tenant,
        "displayName": display_name,
        "state": "Enabled",
        "subscriptionPolicies": {
            "locationPlacementId": "Public_2014-09-01",
            "quotaId": "PayAsYouGo_2014-09-01",
            "spendingLimit": "Off",
        },
    })
}

/// `GET /subscriptions/{id}/locations`: the configured locations, with the zones each offers.
fn locations(config: &Config, subscription: &str) -> Value {
    let value: Vec<Value> = config
        .locations
        .iter()
        .map(|location| {
            let display_name = display_name(&location.name);
            let zones: Vec<Value> = location
                .zones
                .iter()
                .map(|zone| json!({"logicalZone": zone, "physicalZone": format!("{}-az{zone}", location.name)}))
                .collect();
            json!({
                "id": format!("/subscriptions/{subscription}/locations/{}", location.name),
                "name": location.name,
                "type": "Region",
                "displayName": display_name,
                "regionalDisplayName": display_name,
                "metadata": {"regionType": "Physical", "regionCategory": "Recommended"},
                "availabilityZoneMappings": zones,
            })
        })
        .collect();
    json!({ "value": value })
}

/// How Azure spells a region's name for people: `westus2` is `West US 2`.
fn display_name(name: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("northcentral", "North Central "),
        ("southcentral", "South Central "),
        ("westcentral", "West Central "),
        ("southeast", "Southeast "),
        ("northeast", "Northeast "),
        ("central", "Central "),
        ("north", "North "),
        ("south", "South "),
        ("east", "East "),
        ("west", "West "),
        ("europe", "Europe "),
        ("asia", "Asia "),
        ("australia", "Australia "),
        ("japan", "Japan "),
        ("uk", "UK "),
        ("us", "US "),
    ];
    let mut rest = name;
    let mut out = String::new();
    'outer: while !rest.is_empty() {
        for (word, spelled) in WORDS {
            if let Some(after) = rest.strip_prefix(word) {
                out.push_str(spelled);
                rest = after;
                continue 'outer;
            }
        }
        // Anything else (a region number) is kept as written.
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len())
            .max(1);
        out.push_str(&rest[..split]);
        out.push(' ');
        rest = &rest[split..];
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn region_names_are_spelled_as_azure_shows_them() {
        assert_eq!(display_name("westus2"), "West US 2");
        assert_eq!(display_name("westeurope"), "West Europe");
        assert_eq!(display_name("northcentralus"), "North Central US");
        assert_eq!(display_name("uksouth"), "UK South");
        assert_eq!(display_name("southeastasia"), "Southeast Asia");
    }
}
