//! Role assignments: the permissions a cluster grants its machines' identities.
//!
//! Their ids, scopes and role definition ids are kept as strings: assignments inherited from a
//! management group or the tenant root (which a list at a subscription shows) have ids outside
//! any subscription, which [`ResourceId`](crate::ResourceId) does not represent, and a list must
//! not fail on them.

use serde::{Deserialize, Serialize};

use crate::id::ApiVersion;

/// A role assignment (`Microsoft.Authorization/roleAssignments`), an extension resource of its
/// scope: `{scope}/providers/Microsoft.Authorization/roleAssignments/{guid}`. Assignments are
/// immutable: changing one means deleting it and creating another.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleAssignment {
    /// The assignment's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The assignment's name, a GUID (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Authorization/roleAssignments` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Who gets which role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<RoleAssignmentProperties>,
}

/// Who gets which role, where.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleAssignmentProperties {
    /// The role's definition id, such as
    /// `/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{guid}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role_definition_id: Option<String>,
    /// The object id of the principal given the role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
    /// What kind of principal it is. Worth sending for a new managed identity: Azure then does not
    /// look the principal up in a directory that may not have replicated it yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_type: Option<PrincipalType>,
    /// Where the assignment applies (read-only: the id says it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

lenient_enum! {
    /// The kind of principal a role is assigned to.
    pub enum PrincipalType {
        /// An application or managed identity.
        ServicePrincipal = "ServicePrincipal",
        /// A user.
        User = "User",
        /// A group.
        Group = "Group",
    }
}

arm_model!(
    RoleAssignment,
    "Microsoft.Authorization/roleAssignments",
    ApiVersion::new("2022-04-01")
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{PrincipalType, RoleAssignment, RoleAssignmentProperties};

    #[test]
    fn answers_are_read_even_from_outside_a_subscription() {
        let answers = json!([
            {
                "properties": {
                    "roleDefinitionId": "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c",
                    "principalId": "90cc53e8-4a6e-45b6-8339-516448218ee0",
                    "principalType": "ServicePrincipal",
                    "scope": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg",
                    "condition": null,
                    "conditionVersion": null,
                    "createdOn": "2001-02-03T04:05:06Z",
                    "createdBy": null,
                    "delegatedManagedIdentityResourceId": null,
                    "description": null
                },
                "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Authorization/roleAssignments/ed3c9f84-ae20-5aea-8602-58ed2eeffef1",
                "type": "Microsoft.Authorization/roleAssignments",
                "name": "ed3c9f84-ae20-5aea-8602-58ed2eeffef1"
            },
            {
                "properties": {
                    "roleDefinitionId": "/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
                    "principalId": "11111111-1111-1111-1111-111111111111",
                    "principalType": "ForeignGroup",
                    "scope": "/providers/Microsoft.Management/managementGroups/root"
                },
                "id": "/providers/Microsoft.Management/managementGroups/root/providers/Microsoft.Authorization/roleAssignments/0b1c2d3e-0000-0000-0000-000000000000",
                "type": "Microsoft.Authorization/roleAssignments",
                "name": "0b1c2d3e-0000-0000-0000-000000000000"
            }
        ]);
        let read: Vec<RoleAssignment> = serde_json::from_value(answers.clone()).unwrap();
        crate::models::tests::assert_written_back(&answers, &read);
        let first = read[0].properties.as_ref().unwrap();
        assert_eq!(first.principal_type, Some(PrincipalType::ServicePrincipal));
        assert!(first.scope.as_deref().unwrap().ends_with("/resourceGroups/rg"));
        let inherited = read[1].properties.as_ref().unwrap();
        assert_eq!(
            inherited.principal_type,
            Some(PrincipalType::Other("ForeignGroup".to_owned()))
        );

        let desired = RoleAssignment {
            properties: Some(RoleAssignmentProperties {
                role_definition_id: first.role_definition_id.clone(),
                principal_id: first.principal_id.clone(),
                principal_type: Some(PrincipalType::ServicePrincipal),
                scope: None,
            }),
            ..RoleAssignment::default()
        };
        let sent = serde_json::to_value(&desired).unwrap();
        assert_eq!(
            sent,
            json!({"properties": {
                "roleDefinitionId": first.role_definition_id,
                "principalId": "90cc53e8-4a6e-45b6-8339-516448218ee0",
                "principalType": "ServicePrincipal"
            }})
        );
    }
}
