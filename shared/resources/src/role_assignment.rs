//! Role assignments (`Microsoft.Authorization/roleAssignments`) of machines' system-assigned
//! identities: the role `spec.systemAssignedIdentityRole.definitionID` at its `scope` (by default
//! Contributor on the subscription), under the name `spec.systemAssignedIdentityRole.name`.
//!
//! Assignments take no tags. One is ours when its name is the machine's and it names the
//! machine's identity as principal: assignments are immutable, so one found under that name is
//! left as it is.

use capz_api::common::compute::{VmIdentity, VmIdentityProfile};
use capz_azure::models::{PrincipalType, RoleAssignment as Model, RoleAssignmentProperties, id_of};
use capz_azure::{IdError, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};

use crate::virtual_machine::{MachineSpecError, invalid};

/// A name for the assignment of a machine whose spec names none (it was created without the
/// admission webhook): a UUID derived from the machine's VM id, so every reconcile (and every
/// restart) finds the same assignment instead of making another.
#[must_use]
pub fn derived_name(vm: &ResourceId) -> String {
    let lowered = vm.to_string().to_ascii_lowercase();
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, lowered.as_bytes());
    let mut bytes = [0_u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    uuid::Builder::from_sha1_bytes(bytes).into_uuid().to_string()
}

/// The role assignment a machine (a VM or a scale set) with a system-assigned identity gets:
/// `spec.systemAssignedIdentityRole`, by default at the machine's subscription, named after the
/// machine when the spec names none.
#[derive(Debug, Clone)]
pub struct IdentityRole {
    scope: String,
    name: String,
    definition: String,
}

impl IdentityRole {
    /// The role of the machine at `machine` with `identities`; `None` unless its identity is
    /// system-assigned.
    #[must_use]
    pub fn of(identities: &VmIdentityProfile, machine: &ResourceId) -> Option<Self> {
        if identities.identity.unwrap_or_default() != VmIdentity::SystemAssigned {
            return None;
        }
        let role = identities
            .system_assigned_identity_role
            .clone()
            .unwrap_or_default();
        let subscription = format!("/subscriptions/{}", machine.subscription());
        Some(Self {
            scope: role
                .scope
                .filter(|scope| !scope.is_empty())
                .unwrap_or(subscription),
            name: role
                .name
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| derived_name(machine)),
            definition: role.definition_id.unwrap_or_default(),
        })
    }

    /// The assignment, for `principal` once the machine's identity has one.
    ///
    /// # Errors
    /// When the spec's scope or name make no valid id.
    pub fn assignment(&self, principal: Option<String>) -> Result<RoleAssignment, MachineSpecError> {
        RoleAssignment::new(&self.scope, &self.name, &self.definition, principal)
            .map_err(|err| invalid("spec.systemAssignedIdentityRole", err.to_string()))
    }
}

/// The role assignment of a machine's system-assigned identity.
#[derive(Debug, Clone)]
pub struct RoleAssignment {
    id: ResourceId,
    definition: String,
    principal: Option<String>,
}

impl RoleAssignment {
    /// The assignment `name` of the role `definition` at `scope` (an ARM id, such as
    /// `/subscriptions/<id>/`), for `principal` once the machine's identity has one.
    ///
    /// # Errors
    /// When the scope is not an ARM id or the name is not a valid segment.
    pub fn new(
        scope: &str,
        name: &str,
        definition: &str,
        principal: Option<String>,
    ) -> Result<Self, IdError> {
        let scope: ResourceId = scope.trim_end_matches('/').parse()?;
        Ok(Self {
            id: id_of::<Model>(&scope, name)?,
            definition: definition.to_owned(),
            principal,
        })
    }
}

impl AzureResource for RoleAssignment {
    type Model = Model;
    const SERVICE: &'static str = "roleassignments";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        if existing.is_some() {
            return None;
        }
        Some(Model {
            properties: Some(RoleAssignmentProperties {
                role_definition_id: Some(self.definition.clone()),
                principal_id: self.principal.clone(),
                // A new identity may not have reached every directory replica yet; naming its
                // type spares Azure the look-up.
                principal_type: Some(PrincipalType::ServicePrincipal),
                scope: None,
            }),
            ..Model::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000001";

    #[test]
    fn an_assignment_at_the_subscription_is_created_once() {
        let definition = format!(
            "/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
        );
        let assignment = RoleAssignment::new(
            &format!("/subscriptions/{SUBSCRIPTION}/"),
            "2b0b6a9e-0000-4000-8000-000000000009",
            &definition,
            Some("2b0b6a9e-0000-4000-8000-000000000001".into()),
        )
        .unwrap();
        assert_eq!(
            assignment.id().to_string(),
            format!(
                "/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleAssignments/2b0b6a9e-0000-4000-8000-000000000009"
            )
        );
        let body = serde_json::to_value(assignment.desired(None).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"properties": {
                "roleDefinitionId": definition,
                "principalId": "2b0b6a9e-0000-4000-8000-000000000001",
                "principalType": "ServicePrincipal",
            }})
        );
        assert_eq!(assignment.desired(Some(&Model::default())), None);
    }

    #[test]
    fn a_derived_name_is_a_stable_uuid_per_machine() {
        let vm: ResourceId = format!(
            "/subscriptions/{SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Compute/virtualMachines/m-0"
        )
        .parse()
        .unwrap();
        let other: ResourceId = format!(
            "/subscriptions/{SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Compute/virtualMachines/m-1"
        )
        .parse()
        .unwrap();
        let name = derived_name(&vm);
        assert_eq!(name, derived_name(&vm));
        assert_ne!(name, derived_name(&other));
        let parsed = uuid::Uuid::parse_str(&name).unwrap();
        assert_eq!(parsed.get_version_num(), 5);
    }
}
