"""Microsoft.ManagedIdentity through azure-mgmt-msi: user-assigned identities and their federated
identity credentials."""

import uuid

from azure.mgmt.msi.models import FederatedIdentityCredential, Identity, IdentityUpdate

from support import LOCATION, TENANT, assert_gone, ids, names, pages, resource_id

ISSUER = "https://oidc.example.com/cluster"


def credential(subject: str) -> FederatedIdentityCredential:
    return FederatedIdentityCredential(issuer=ISSUER, subject=subject, audiences=["api://AzureADTokenExchange"])


def test_user_assigned_identity_lifecycle(msi, group):
    identities = msi.user_assigned_identities
    created = identities.create_or_update(group, "sdk-identity", Identity(location=LOCATION, tags={"stage": "created"}))
    assert created.id == resource_id(group, "Microsoft.ManagedIdentity/userAssignedIdentities", "sdk-identity")
    assert created.tenant_id == TENANT
    assert uuid.UUID(created.principal_id) != uuid.UUID(created.client_id)

    read = identities.get(group, "sdk-identity")
    assert (read.principal_id, read.client_id, read.tags) == (
        created.principal_id,
        created.client_id,
        {"stage": "created"},
    )
    assert "sdk-identity" in names(identities.list_by_resource_group(group))
    assert created.id.lower() in ids(identities.list_by_subscription())

    patched = identities.update(group, "sdk-identity", IdentityUpdate(tags={"stage": "patched"}))
    assert (patched.tags, patched.principal_id) == ({"stage": "patched"}, created.principal_id)
    # A second PUT keeps the identity's principal.
    replaced = identities.create_or_update(
        group, "sdk-identity", Identity(location=LOCATION, tags={"stage": "replaced"})
    )
    assert (replaced.tags, replaced.client_id) == ({"stage": "replaced"}, created.client_id)

    identities.delete(group, "sdk-identity")
    assert_gone(identities.get, group, "sdk-identity")


def test_federated_identity_credentials(msi, group):
    msi.user_assigned_identities.create_or_update(group, "sdk-workload", Identity(location=LOCATION))
    credentials = msi.federated_identity_credentials
    subjects = {f"system:serviceaccount:ns:account-{index}" for index in range(3)}
    for index, subject in enumerate(sorted(subjects)):
        created = credentials.create_or_update(group, "sdk-workload", f"fic-{index}", credential(subject))
        assert (created.issuer, created.subject, created.audiences) == (ISSUER, subject, ["api://AzureADTokenExchange"])
        assert created.type == "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials"

    read = credentials.get(group, "sdk-workload", "fic-0")
    assert read.id == resource_id(
        group, "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials", "sdk-workload", "fic-0"
    )
    listed = pages(credentials.list(group, "sdk-workload"))
    assert len(listed) == 2
    assert {item.subject for page in listed for item in page} == subjects

    updated = credentials.create_or_update(group, "sdk-workload", "fic-0", credential("system:serviceaccount:ns:moved"))
    assert (
        credentials.get(group, "sdk-workload", "fic-0").subject == updated.subject == "system:serviceaccount:ns:moved"
    )

    credentials.delete(group, "sdk-workload", "fic-0")
    assert_gone(credentials.get, group, "sdk-workload", "fic-0")
    # Deleting the identity takes its credentials along.
    msi.user_assigned_identities.delete(group, "sdk-workload")
    assert_gone(credentials.get, group, "sdk-workload", "fic-1")
