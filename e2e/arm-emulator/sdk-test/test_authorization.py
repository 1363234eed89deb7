"""Microsoft.Authorization through azure-mgmt-authorization: built-in role definitions and role
assignments at resource group and subscription scope."""

import uuid

import pytest
from azure.mgmt.authorization.models import RoleAssignmentCreateParameters
from azure.mgmt.msi.models import Identity

from support import (
    CONTRIBUTOR,
    LOCATION,
    READER,
    SUBSCRIPTION_SCOPE,
    arm_error,
    assert_gone,
    group_id,
    role_definition_id,
)


@pytest.fixture(scope="module")
def principal(msi, group) -> str:
    """The principal id of an identity to grant roles to."""
    return msi.user_assigned_identities.create_or_update(group, "sdk-grantee", Identity(location=LOCATION)).principal_id


def test_built_in_roles_are_found_by_name(authorization):
    (contributor,) = authorization.role_definitions.list(SUBSCRIPTION_SCOPE, filter="roleName eq 'Contributor'")
    assert contributor.name == CONTRIBUTOR
    assert contributor.id == role_definition_id(CONTRIBUTOR)
    assert contributor.role_type == "BuiltInRole"
    (permissions,) = contributor.permissions
    assert permissions.actions == ["*"]
    assert "Microsoft.Authorization/*/Write" in permissions.not_actions

    every = {role.role_name for role in authorization.role_definitions.list(SUBSCRIPTION_SCOPE)}
    assert {"Owner", "Contributor", "Reader"} <= every
    assert authorization.role_definitions.get(SUBSCRIPTION_SCOPE, READER).role_name == "Reader"


@pytest.mark.parametrize("at_group", [True, False], ids=["resource-group", "subscription"])
def test_role_assignment_lifecycle(authorization, group, principal, at_group):
    assignments = authorization.role_assignments
    scope = group_id(group) if at_group else SUBSCRIPTION_SCOPE
    name = str(uuid.uuid4())
    grant = RoleAssignmentCreateParameters(
        role_definition_id=role_definition_id(CONTRIBUTOR), principal_id=principal, principal_type="ServicePrincipal"
    )
    created = assignments.create(scope, name, grant)
    assert created.id == f"{scope}/providers/Microsoft.Authorization/roleAssignments/{name}"
    assert (created.scope, created.principal_id, created.principal_type) == (scope, principal, "ServicePrincipal")
    assert created.role_definition_id.lower() == role_definition_id(CONTRIBUTOR).lower()

    assert assignments.get(scope, name).principal_id == principal
    assert name in {item.name for item in assignments.list_for_scope(scope)}
    listed = assignments.list_for_resource_group(group) if at_group else assignments.list_for_subscription()
    assert name in {item.name for item in listed}
    mine = assignments.list_for_scope(scope, filter=f"assignedTo('{principal}')")
    assert {item.name for item in mine} == {name}

    # The same grant under another name is refused.
    with arm_error("RoleAssignmentExists", 409):
        assignments.create(scope, str(uuid.uuid4()), grant)

    deleted = assignments.delete(scope, name)
    assert deleted.name == name
    assert_gone(assignments.get, scope, name)


def test_at_scope_leaves_out_assignments_below(authorization, group, principal):
    assignments = authorization.role_assignments
    name = str(uuid.uuid4())
    grant = RoleAssignmentCreateParameters(role_definition_id=role_definition_id(READER), principal_id=principal)
    assignments.create(group_id(group), name, grant)

    assert name in {item.name for item in assignments.list_for_subscription()}
    assert name not in {item.name for item in assignments.list_for_subscription(filter="atScope()")}
    by_principal = assignments.list_for_subscription(filter=f"principalId eq '{principal}'")
    assert [item.name for item in by_principal] == [name]
    assignments.delete(group_id(group), name)


def test_unknown_principals_and_roles_are_refused(authorization, group, principal):
    scope = group_id(group)
    stranger = RoleAssignmentCreateParameters(
        role_definition_id=role_definition_id(READER), principal_id=str(uuid.uuid4())
    )
    with arm_error("PrincipalNotFound", 400):
        authorization.role_assignments.create(scope, str(uuid.uuid4()), stranger)
    no_role = RoleAssignmentCreateParameters(
        role_definition_id=role_definition_id(str(uuid.uuid4())), principal_id=principal
    )
    with arm_error("RoleDefinitionDoesNotExist", 400):
        authorization.role_assignments.create(scope, str(uuid.uuid4()), no_role)
