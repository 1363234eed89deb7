//! The api-versions the emulator serves per resource type (see the crate documentation's table).

/// api-versions of `Microsoft.Resources/resourceGroups`, of subscription-level operation results,
/// of tags and of the generic resource lists.
const RESOURCES: &[&str] = &[
    "2019-10-01",
    "2020-06-01",
    "2021-04-01",
    "2022-09-01",
    "2023-07-01",
    "2024-03-01",
    "2024-07-01",
    "2024-11-01",
    "2025-03-01",
    "2025-04-01",
];

/// api-versions of the subscriptions API: tenants, subscriptions and their locations.
const SUBSCRIPTIONS: &[&str] = &[
    "2016-06-01",
    "2019-11-01",
    "2020-01-01",
    "2021-01-01",
    "2022-01-01",
    "2022-12-01",
];

/// The api-versions served for a resource type.
pub(crate) fn supported(resource_type: &str) -> &'static [&'static str] {
    match resource_type {
        "Microsoft.Resources/resourceGroups"
        | "Microsoft.Resources/operationresults"
        | "Microsoft.Resources/tags"
        | "Microsoft.Resources/subscriptions/resources"
        | "Microsoft.Resources/subscriptions/resourceGroups/resources" => RESOURCES,
        "Microsoft.Resources/tenants"
        | "Microsoft.Resources/subscriptions"
        | "Microsoft.Resources/subscriptions/locations" => SUBSCRIPTIONS,
        _ => &[],
    }
}
