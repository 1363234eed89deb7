//! Microsoft.Authorization: role assignments at any scope, custom role definitions, and the
//! built-in role definitions every subscription has.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Locality, Lro, Prepare, ResourceType, SYNCHRONOUS, fields};
use crate::error::ArmError;
use crate::state::State;

const API_VERSIONS: &[&str] = &[
    "2015-07-01",
    "2018-01-01-preview",
    "2020-04-01-preview",
    "2020-08-01-preview",
    "2020-10-01-preview",
    "2022-04-01",
    "2022-05-01-preview",
];

const fn synchronous(
    name: &'static str,
    prepare: fn(&mut Prepare<'_>) -> Result<(), ArmError>,
) -> ResourceType {
    ResourceType {
        location: Locality::Inherited,
        put: Lro::Sync,
        delete: Lro::Sync,
        delete_echoes: true,
        in_use_code: "RoleDefinitionHasAssignments",
        ..ResourceType::new(name, API_VERSIONS, &SYNCHRONOUS, prepare)
    }
}

pub(crate) static ROLE_ASSIGNMENT: ResourceType =
    synchronous("Microsoft.Authorization/roleAssignments", prepare_assignment);
pub(crate) static ROLE_DEFINITION: ResourceType =
    synchronous("Microsoft.Authorization/roleDefinitions", prepare_definition);

pub(crate) static TYPES: &[&ResourceType] = &[&ROLE_ASSIGNMENT, &ROLE_DEFINITION];

/// A built-in role: id, name, description, actions, not actions.
type BuiltInRole = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// The built-in roles CAPZ and its users assign.
const BUILT_IN: &[BuiltInRole] = &[
    (
        "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
        "Owner",
        "Grants full access to manage all resources, including assigning roles.",
        &["*"],
        &[],
    ),
    (
        "b24988ac-6180-42a0-ab88-20f7382dd24c",
        "Contributor",
        "Grants full access to manage all resources, but not to assign roles.",
        &["*"],
        &[
            "Microsoft.Authorization/*/Delete",
            "Microsoft.Authorization/*/Write",
            "Microsoft.Authorization/elevateAccess/Action",
        ],
    ),
    (
        "acdd72a7-3b69-4d06-9a3f-71a6b8f0b8b8",
        "Reader",
        "View all resources, but make no changes.",
        &["*/read"],
        &[],
    ),
    (
        "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
        "User Access Administrator",
        "Manage user access to Azure resources.",
        &["*/read", "Microsoft.Authorization/*"],
        &[],
    ),
    (
        "4d97b98b-1d4f-4787-a291-c67834d212e7",
        "Network Contributor",
        "Manage networks, but not access to them.",
        &[
            "Microsoft.Authorization/*/read",
            "Microsoft.Network/*",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
        ],
        &[],
    ),
    (
        "9980e02c-c2be-4d73-94e8-173b1dc7cf3c",
        "Virtual Machine Contributor",
        "Manage virtual machines, but not access to them or the networks they connect to.",
        &[
            "Microsoft.Authorization/*/read",
            "Microsoft.Compute/*",
            "Microsoft.Network/*/read",
            "Microsoft.Network/*/join/action",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
        ],
        &[],
    ),
    (
        "f1a07417-d97a-45cb-824c-7a7467783830",
        "Managed Identity Operator",
        "Read and assign user-assigned identities.",
        &[
            "Microsoft.ManagedIdentity/userAssignedIdentities/*/read",
            "Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action",
            "Microsoft.Authorization/*/read",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
        ],
        &[],
    ),
    (
        "e40ec5ca-96e0-45a2-b4ff-59039f2c2b59",
        "Managed Identity Contributor",
        "Create, read, update and delete user-assigned identities.",
        &[
            "Microsoft.ManagedIdentity/userAssignedIdentities/*",
            "Microsoft.Authorization/*/read",
            "Microsoft.Resources/subscriptions/resourceGroups/read",
        ],
        &[],
    ),
];

/// Stores the built-in role definitions under the tenant and every subscription.
pub(crate) fn seed_built_in_roles(state: &mut State, subscriptions: &[String]) {
    let scopes =
        std::iter::once(String::new()).chain(subscriptions.iter().map(|id| format!("/subscriptions/{id}")));
    for scope in scopes {
        for (id, name, description, actions, not_actions) in BUILT_IN {
            let full_id = format!("{scope}/providers/Microsoft.Authorization/roleDefinitions/{id}");
            let body = json!({
                "id": full_id,
                "name": id,
                "type": "Microsoft.Authorization/roleDefinitions",
                "properties": {
                    "roleName": name,
                    "type": "BuiltInRole",
                    "description": description,
                    "assignableScopes": ["/"],
                    "permissions": [{"actions": actions, "notActions": not_actions, "dataActions": [], "notDataActions": []}],
                    "createdOn": "2015-02-02T21:55:09.8806423Z",
                    "updatedOn": "2024-01-01T00:00:00.0000000Z",
                    "createdBy": null,
                    "updatedBy": null,
                }
            });
            state.put_doc(&full_id.to_ascii_lowercase(), ROLE_DEFINITION.name, body, true);
        }
    }
}

fn guid_name(prepare: &Prepare<'_>, what: &str) -> Result<(), ArmError> {
    if uuid::Uuid::parse_str(prepare.id.name()).is_ok() {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        format!("Invalid{what}Id"),
        format!(
            "The {} ID '{}' is not valid. The ID must be a GUID.",
            what.to_ascii_lowercase(),
            prepare.id.name()
        ),
    ))
}

/// Whether a principal (object) id belongs to someone the emulator knows: a configured principal
/// or managed identity, a user-assigned identity, or a resource's system-assigned identity.
fn principal_exists(prepare: &Prepare<'_>, principal: &str) -> bool {
    let same = |candidate: Option<&str>| {
        candidate.is_some_and(|candidate| candidate.eq_ignore_ascii_case(principal))
    };
    prepare
        .config
        .principals
        .iter()
        .any(|p| same(Some(&p.object_id())))
        || prepare
            .config
            .managed_identities
            .iter()
            .any(|m| same(Some(&m.object_id())))
        || prepare.state.resources.values().any(|stored| {
            // Only documents naming a principal id need to be read.
            stored.body_mentioning("\"principalId\"").is_some_and(|body| {
                same(body.pointer("/identity/principalId").and_then(Value::as_str))
                    || (stored.type_name == super::identity::USER_ASSIGNED_IDENTITY.name
                        && same(body.pointer("/properties/principalId").and_then(Value::as_str)))
            })
        })
}

fn prepare_assignment(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    guid_name(prepare, "RoleAssignment")?;
    let properties = prepare.properties()?.clone();
    let role = fields::required_string(&properties, "roleDefinitionId", "properties")?.to_owned();
    let principal = fields::required_string(&properties, "principalId", "properties")?.to_owned();
    if !prepare
        .state
        .resources
        .contains_key(role.to_ascii_lowercase().as_str())
    {
        let guid = role.rsplit('/').next().unwrap_or(&role);
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "RoleDefinitionDoesNotExist",
            format!("The specified role definition with ID '{guid}' does not exist."),
        ));
    }
    if !principal_exists(prepare, &principal) {
        let tenant = prepare
            .config
            .tenants
            .first()
            .map_or(crate::config::DEFAULT_TENANT, |tenant| tenant.id.as_str());
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "PrincipalNotFound",
            format!(
                "Principal {} does not exist in the directory {tenant}. Check that you have the correct principal ID.",
                principal.replace('-', "")
            ),
        ));
    }
    let scope = prepare.id.scope.clone();
    let own = prepare.id.key();
    let duplicate = prepare.state.resources.iter().any(|(key, stored)| {
        **key != *own && stored.type_name == ROLE_ASSIGNMENT.name && {
            let body = stored.body();
            body.pointer("/properties/scope")
                .and_then(Value::as_str)
                .is_some_and(|s| s.eq_ignore_ascii_case(&scope))
                && body
                    .pointer("/properties/principalId")
                    .and_then(Value::as_str)
                    .is_some_and(|p| p.eq_ignore_ascii_case(&principal))
                && body
                    .pointer("/properties/roleDefinitionId")
                    .and_then(Value::as_str)
                    .is_some_and(|r| r.eq_ignore_ascii_case(&role))
        }
    });
    if duplicate {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "RoleAssignmentExists",
            "The role assignment already exists.",
        ));
    }
    let now = crate::time::rfc3339(std::time::SystemTime::now());
    let properties = prepare.properties()?;
    properties.insert("scope".into(), json!(scope));
    properties
        .entry("principalType")
        .or_insert_with(|| json!("ServicePrincipal"));
    for absent in [
        "condition",
        "conditionVersion",
        "createdBy",
        "updatedBy",
        "delegatedManagedIdentityResourceId",
        "description",
    ] {
        properties.entry(absent).or_insert(Value::Null);
    }
    properties.insert("updatedOn".into(), json!(now));
    prepare.keep("createdOn", || json!(now))
}

fn prepare_definition(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    guid_name(prepare, "RoleDefinition")?;
    let properties = prepare.properties()?.clone();
    fields::required_string(&properties, "roleName", "properties")?;
    if fields::array(&properties, "permissions", "properties")?.is_empty() {
        return Err(fields::missing("properties.permissions"));
    }
    let scope = prepare.id.scope.clone();
    let properties = prepare.properties()?;
    properties.insert("type".into(), json!("CustomRole"));
    properties
        .entry("assignableScopes")
        .or_insert_with(|| json!([scope]));
    Ok(())
}

/// Whether `actions` (less `not_actions`) allow `operation`, as Azure RBAC matches them:
/// case-insensitive, `*` standing for any run of characters.
pub(crate) fn permits(actions: &[&str], not_actions: &[&str], operation: &str) -> bool {
    let operation = operation.to_ascii_lowercase();
    let matches = |pattern: &&str| crate::faults::glob(&pattern.to_ascii_lowercase(), &operation);
    actions.iter().any(matches) && !not_actions.iter().any(matches)
}
