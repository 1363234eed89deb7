//! Role-based access control, when the configuration turns it on: an ARM call is allowed only if
//! a role assignment at the request's scope (or above) gives the caller a role whose actions
//! cover the operation, as Azure RBAC decides.

use axum::http::{Method, StatusCode};
use serde_json::Value;

use crate::error::ArmError;
use crate::path::ArmPath;
use crate::resources::authorization::{ROLE_ASSIGNMENT, permits};
use crate::state::{State, Stored};
use crate::{Caller, Emulator};

/// The RBAC operation a request performs, for example
/// `Microsoft.Network/virtualNetworks/write`.
fn operation(method: &Method, arm_path: &ArmPath) -> String {
    let verb = match *method {
        Method::GET | Method::HEAD => "read",
        Method::DELETE => "delete",
        Method::POST => "action",
        _ => "write",
    };
    let resource_type = match arm_path {
        ArmPath::ResourceGroups { .. } | ArmPath::ResourceGroup { .. } => {
            "Microsoft.Resources/subscriptions/resourceGroups".to_owned()
        }
        other => other.resource_type(),
    };
    format!("{resource_type}/{verb}")
}

/// Whether `path` lies at or under `scope` (case-insensitive, on segment boundaries).
pub(crate) fn within(path: &str, scope: &str) -> bool {
    let (path, scope) = (
        path.to_ascii_lowercase(),
        scope.trim_end_matches('/').to_ascii_lowercase(),
    );
    scope.is_empty() || path == scope || path.starts_with(&format!("{scope}/"))
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Whether some role assignment of `principal` covering `path` allows `action`.
fn allowed(state: &State, principal: &str, path: &str, action: &str) -> bool {
    state
        .resources
        .values()
        .filter(|stored| stored.type_name == ROLE_ASSIGNMENT.name)
        .map(Stored::body)
        .filter(|assignment| {
            assignment
                .pointer("/properties/principalId")
                .and_then(Value::as_str)
                .is_some_and(|assigned| assigned.eq_ignore_ascii_case(principal))
                && assignment
                    .pointer("/properties/scope")
                    .and_then(Value::as_str)
                    .is_some_and(|scope| within(path, scope))
        })
        .filter_map(|assignment| {
            let role = assignment
                .pointer("/properties/roleDefinitionId")?
                .as_str()?
                .to_ascii_lowercase();
            state.body(&role)
        })
        .any(|role| {
            role.pointer("/properties/permissions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|permission| {
                    permits(
                        &strings(&permission["actions"]),
                        &strings(&permission["notActions"]),
                        action,
                    )
                })
        })
}

impl Emulator {
    /// Checks that the caller may make this request; always true unless RBAC is on.
    pub(crate) fn authorize(&self, caller: &Caller, method: &Method, path: &str) -> Result<(), ArmError> {
        if !self.config.rbac {
            return Ok(());
        }
        let Some(arm_path) = ArmPath::parse(path) else {
            return Ok(());
        };
        // Polling an operation needs no role: whoever started it may watch it. Anyone signed in
        // may list the tenants and subscriptions.
        if matches!(
            arm_path,
            ArmPath::ProviderOperation { .. }
                | ArmPath::OperationResult { .. }
                | ArmPath::Tenants
                | ArmPath::Subscriptions
        ) {
            return Ok(());
        }
        let action = operation(method, &arm_path);
        if allowed(&self.state(), &caller.object_id, path, &action) {
            return Ok(());
        }
        Err(ArmError::new(
            StatusCode::FORBIDDEN,
            "AuthorizationFailed",
            format!(
                "The client '{}' with object id '{}' does not have authorization to perform action '{action}' over scope '{path}' or the scope is invalid. If access was recently granted, please refresh your credentials.",
                caller.client_id, caller.object_id
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn scopes_cover_what_lies_under_them() {
        assert!(within(
            "/subscriptions/S/resourceGroups/rg/providers/x",
            "/subscriptions/s"
        ));
        assert!(within(
            "/subscriptions/s/resourceGroups/rg",
            "/subscriptions/s/resourcegroups/RG"
        ));
        assert!(!within(
            "/subscriptions/s/resourceGroups/rg2",
            "/subscriptions/s/resourceGroups/rg"
        ));
        assert!(within("/subscriptions/s", "/"));
    }
}
