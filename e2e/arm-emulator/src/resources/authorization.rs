//! Microsoft.Authorization: role assignments at any scope, custom role definitions, and the
//! built-in role definitions every subscription has.

use std::borrow::Cow;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{Hooks, Lister, Locality, Lro, NO_HOOKS, Prepare, ResourceType, SYNCHRONOUS, fields};
use crate::error::ArmError;
use crate::path::ResourceId;
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
    not_found: fn(&ResourceId) -> ArmError,
    list: Lister,
) -> ResourceType {
    ResourceType {
        location: Locality::Inherited,
        hooks: Hooks {
            not_found: Some(not_found),
            list: Some(list),
            // Azure records who created it only after answering the create.
            create_answer: Some(|properties| properties["createdBy"] = Value::Null),
            ..NO_HOOKS
        },
        put: Lro::Sync,
        delete: Lro::Sync,
        delete_echoes: true,
        in_use_code: "RoleDefinitionHasAssignments",
        ..ResourceType::new(name, API_VERSIONS, &SYNCHRONOUS, prepare)
    }
}

pub(crate) static ROLE_ASSIGNMENT: ResourceType = synchronous(
    "Microsoft.Authorization/roleAssignments",
    prepare_assignment,
    assignment_not_found,
    list_assignments,
);
pub(crate) static ROLE_DEFINITION: ResourceType = {
    let mut definition = synchronous(
        "Microsoft.Authorization/roleDefinitions",
        prepare_definition,
        |id| definition_does_not_exist(StatusCode::NOT_FOUND, id.name()),
        list_definitions,
    );
    definition.hooks.built_in = Some(is_built_in);
    definition
};

fn is_built_in(definition: &Value) -> bool {
    definition.pointer("/properties/type").and_then(Value::as_str) == Some("BuiltInRole")
}

/// The conditions of a `$filter` as Microsoft.Authorization reads them: `name eq 'value'`
/// clauses joined by `and`, and the functions `atScope()` and `assignedTo('{principal id}')`.
#[derive(Debug, Default, PartialEq)]
struct Filter {
    equals: Vec<(String, String)>,
    at_scope: bool,
}

impl Filter {
    /// Reads `text`, whose `eq` clauses may compare only the `comparable` properties.
    fn parse(text: Option<&str>, comparable: &[&str]) -> Result<Self, ArmError> {
        let mut filter = Self::default();
        let Some(text) = text.map(str::trim).filter(|text| !text.is_empty()) else {
            return Ok(filter);
        };
        for clause in text.split(" and ").map(str::trim) {
            if clause.eq_ignore_ascii_case("atScope()") {
                filter.at_scope = true;
                continue;
            }
            if let Some(principal) = clause
                .strip_prefix("assignedTo(")
                .and_then(|rest| rest.strip_suffix(')'))
            {
                let principal = principal.trim().trim_matches('\'').to_owned();
                filter.equals.push(("principalId".to_owned(), principal));
                continue;
            }
            let parsed = clause.split_once(" eq ").and_then(|(name, value)| {
                let value = value.trim().strip_prefix('\'')?.strip_suffix('\'')?;
                let name = comparable
                    .iter()
                    .find(|known| known.eq_ignore_ascii_case(name.trim()))?;
                Some(((*name).to_owned(), value.to_owned()))
            });
            match parsed {
                Some(condition) => filter.equals.push(condition),
                None => {
                    return Err(ArmError::new(
                        StatusCode::BAD_REQUEST,
                        "InvalidFilterInQueryString",
                        format!(
                            "The filter '{text}' is not supported. Supported filters are 'atScope()', 'assignedTo('{{value}}')' and '<property> eq '{{value}}'' for the properties {}.",
                            comparable.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(filter)
    }

    /// Whether a document's properties satisfy every `eq` clause (case-insensitively).
    fn matches(&self, body: &Value) -> bool {
        self.equals.iter().all(|(name, value)| {
            body.pointer(&format!("/properties/{name}"))
                .and_then(Value::as_str)
                .is_some_and(|found| found.eq_ignore_ascii_case(value))
        })
    }
}

/// Role definitions usable at a scope: those defined at it or above it (a subscription's built-in
/// roles among them). The tenant's copies of the built-in roles show only at the tenant.
fn list_definitions(state: &State, scope: &str, filter: Option<&str>) -> Result<Vec<String>, ArmError> {
    let filter = Filter::parse(filter, &["roleName", "type"])?;
    Ok(of_type(state, ROLE_DEFINITION.name)
        .filter(|(key, stored)| {
            let defined_at = definition_scope(key);
            let visible = if defined_at.is_empty() {
                scope.is_empty()
            } else {
                crate::rbac::within(scope, defined_at)
            };
            visible && filter.matches(stored)
        })
        .map(|(key, _)| key.to_owned())
        .collect())
}

/// Role assignments seen from a scope: with `atScope()` those at it or above, otherwise also
/// those below it, as Azure lists them.
fn list_assignments(state: &State, scope: &str, filter: Option<&str>) -> Result<Vec<String>, ArmError> {
    let filter = Filter::parse(filter, &["principalId"])?;
    Ok(of_type(state, ROLE_ASSIGNMENT.name)
        .filter(|(_, stored)| {
            let assigned_at = stored
                .pointer("/properties/scope")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let relevant = crate::rbac::within(scope, assigned_at)
                || (!filter.at_scope && crate::rbac::within(assigned_at, scope));
            relevant && filter.matches(stored)
        })
        .map(|(key, _)| key.to_owned())
        .collect())
}

fn of_type<'s>(state: &'s State, type_name: &'static str) -> impl Iterator<Item = (&'s str, Cow<'s, Value>)> {
    state
        .resources
        .iter()
        .filter(move |(_, stored)| stored.type_name == type_name)
        .map(|(key, stored)| (&**key, stored.body()))
}

/// The scope a role definition's key lies under.
fn definition_scope(key: &str) -> &str {
    key.find("/providers/microsoft.authorization/roledefinitions/")
        .map_or("", |at| &key[..at])
}

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
        "acdd72a7-3385-48ef-bd42-f606fba81ae7",
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
    let is_role = prepare
        .state
        .resources
        .get(role.to_ascii_lowercase().as_str())
        .is_some_and(|stored| stored.type_name == ROLE_DEFINITION.name);
    if !is_role {
        let guid = role.rsplit('/').next().unwrap_or(&role);
        return Err(definition_does_not_exist(StatusCode::BAD_REQUEST, guid));
    }
    if uuid::Uuid::parse_str(&principal).is_err() {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "InvalidPrincipalId",
            format!("The Principal ID '{principal}' is not valid. Principal ID must be a GUID."),
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
    let properties = prepare.properties()?;
    properties.insert("scope".into(), json!(scope));
    properties
        .entry("principalType")
        .or_insert_with(|| json!("ServicePrincipal"));
    for absent in [
        "condition",
        "conditionVersion",
        "delegatedManagedIdentityResourceId",
        "description",
    ] {
        properties.entry(absent).or_insert(Value::Null);
    }
    stamp_authorship(prepare)
}

/// Records when and by whom the resource was created and last changed.
fn stamp_authorship(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let now = json!(crate::time::rfc3339(std::time::SystemTime::now()));
    let caller = json!(prepare.caller);
    prepare.keep("createdOn", || now.clone())?;
    prepare.keep("createdBy", || caller.clone())?;
    let properties = prepare.properties()?;
    properties.insert("updatedOn".into(), now);
    properties.insert("updatedBy".into(), caller);
    Ok(())
}

fn assignment_not_found(id: &ResourceId) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "RoleAssignmentNotFound",
        format!("The role assignment '{}' is not found.", id.name()),
    )
}

fn definition_does_not_exist(status: StatusCode, guid: &str) -> ArmError {
    ArmError::new(
        status,
        "RoleDefinitionDoesNotExist",
        format!("The specified role definition with ID '{guid}' does not exist."),
    )
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
    // Azure accepts the type in any case and always answers it as `CustomRole`.
    properties.insert("type".into(), json!("CustomRole"));
    properties.entry("description").or_insert(Value::Null);
    properties
        .entry("assignableScopes")
        .or_insert_with(|| json!([scope]));
    if let Some(Value::Array(permissions)) = properties.get_mut("permissions") {
        for permission in permissions.iter_mut().filter_map(Value::as_object_mut) {
            for list in ["actions", "notActions", "dataActions", "notDataActions"] {
                permission.entry(list).or_insert_with(|| json!([]));
            }
        }
    }
    stamp_authorship(prepare)
}

/// Whether `actions` (less `not_actions`) allow `operation`, as Azure RBAC matches them:
/// case-insensitive, `*` standing for any run of characters.
pub(crate) fn permits(actions: &[&str], not_actions: &[&str], operation: &str) -> bool {
    let operation = operation.to_ascii_lowercase();
    let matches = |pattern: &&str| crate::faults::glob(&pattern.to_ascii_lowercase(), &operation);
    actions.iter().any(matches) && !not_actions.iter().any(matches)
}
