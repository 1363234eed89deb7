//! Microsoft.ManagedIdentity: user-assigned identities and their federated identity credentials.
//! Both are written synchronously.

use axum::http::StatusCode;
use serde_json::json;

use super::names::{Naming, alphanumeric, refuse};
use super::{Hooks, Locality, Lro, NO_HOOKS, Prepare, ResourceType, SYNCHRONOUS, fields};
use crate::error::ArmError;

const API_VERSIONS: &[&str] = &[
    "2018-11-30",
    "2021-09-30-preview",
    "2022-01-31-preview",
    "2023-01-31",
    "2023-07-31-preview",
    "2024-11-30",
    "2025-01-31-preview",
    "2025-05-31-preview",
];

fn identity_character(c: char) -> bool {
    alphanumeric(c) || c == '-' || c == '_'
}

/// User-assigned identities: 3 to 128 letters, digits, hyphens and underscores, starting with a
/// letter or digit.
static IDENTITY_NAMES: Naming = Naming {
    min: 3,
    max: 128,
    allowed: identity_character,
    first: alphanumeric,
    last: identity_character,
    rule: "An identity name has 3 to 128 letters, digits, hyphens and underscores, and starts with a letter or digit.",
    refuse,
};

/// Federated identity credentials: as identities, up to 120 characters.
static CREDENTIAL_NAMES: Naming = Naming {
    max: 120,
    rule: "A federated identity credential name has 3 to 120 letters, digits, hyphens and underscores, and starts with a letter or digit.",
    ..IDENTITY_NAMES
};

const fn synchronous(
    name: &'static str,
    location: Locality,
    naming: &'static Naming,
    prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
) -> ResourceType {
    ResourceType {
        location,
        naming,
        put: Lro::Sync,
        delete: Lro::Sync,
        ..ResourceType::new(name, API_VERSIONS, &SYNCHRONOUS, prepare)
    }
}

pub(crate) static USER_ASSIGNED_IDENTITY: ResourceType = synchronous(
    "Microsoft.ManagedIdentity/userAssignedIdentities",
    Locality::Regional,
    &IDENTITY_NAMES,
    prepare_identity,
);

pub(crate) static FEDERATED_CREDENTIAL: ResourceType = ResourceType {
    // The identity provider answers for its credentials itself, not ARM.
    hooks: Hooks {
        not_found: Some(|id| {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("Resource '{}' was not found.", id.to_id()),
            )
        }),
        ..NO_HOOKS
    },
    ..synchronous(
        "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
        Locality::Inherited,
        &CREDENTIAL_NAMES,
        prepare_federated,
    )
};

pub(crate) static TYPES: &[&ResourceType] = &[&USER_ASSIGNED_IDENTITY, &FEDERATED_CREDENTIAL];

fn prepare_identity(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let tenant = prepare
        .config
        .subscriptions
        .iter()
        .find(|subscription| {
            prepare
                .id
                .subscription
                .as_deref()
                .is_some_and(|id| id.eq_ignore_ascii_case(&subscription.id))
        })
        .map_or_else(
            || crate::config::DEFAULT_TENANT.to_owned(),
            |subscription| subscription.tenant.clone(),
        );
    // The identity's service principal exists as long as the resource does: ids stay put.
    prepare.properties()?.insert("tenantId".into(), json!(tenant));
    prepare.keep("principalId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.keep("clientId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.doc.entry("tags").or_insert_with(|| json!({}));
    Ok(())
}

fn prepare_federated(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let issuer = fields::required_string(&properties, "issuer", "properties")?;
    if !issuer.starts_with("https://") {
        return Err(ArmError::invalid_parameter(
            "properties.issuer",
            format!("The issuer '{issuer}' must be an https URL."),
        ));
    }
    fields::required_string(&properties, "subject", "properties")?;
    if fields::strings(&properties, "audiences", "properties")?.is_empty() {
        return Err(fields::missing("properties.audiences"));
    }
    Ok(())
}
