"""Resource groups: the lifecycle, paged lists, and deleting a group with everything in it."""

import uuid

from azure.mgmt.authorization.models import RoleAssignmentCreateParameters
from azure.mgmt.compute import models as cm
from azure.mgmt.msi.models import FederatedIdentityCredential, Identity
from azure.mgmt.network import models as net
from azure.mgmt.resource.resources.models import ResourceGroup, ResourceGroupPatchable

from support import (
    LOCATION,
    READER,
    SUBSCRIPTION_SCOPE,
    arm_error,
    group_id,
    interface,
    linux_machine,
    names,
    pages,
    role_definition_id,
    standard_public_ip,
)


def test_resource_group_lifecycle(resources):
    created = resources.resource_groups.create_or_update(
        "sdk-rg-life", ResourceGroup(location=LOCATION, tags={"stage": "created"})
    )
    assert created.id == f"{SUBSCRIPTION_SCOPE}/resourceGroups/sdk-rg-life"
    assert created.properties.provisioning_state == "Succeeded"

    read = resources.resource_groups.get("sdk-rg-life")
    assert (read.name, read.location, read.tags) == ("sdk-rg-life", LOCATION, {"stage": "created"})
    assert resources.resource_groups.check_existence("sdk-rg-life")

    patched = resources.resource_groups.update("sdk-rg-life", ResourceGroupPatchable(tags={"stage": "patched"}))
    assert patched.tags == {"stage": "patched"}
    replaced = resources.resource_groups.create_or_update(
        "sdk-rg-life", ResourceGroup(location=LOCATION, tags={"stage": "replaced"})
    )
    assert resources.resource_groups.get("sdk-rg-life").tags == replaced.tags == {"stage": "replaced"}

    resources.resource_groups.begin_delete("sdk-rg-life").result()
    assert not resources.resource_groups.check_existence("sdk-rg-life")
    with arm_error("ResourceGroupNotFound", 404):
        resources.resource_groups.get("sdk-rg-life")


def test_resource_group_list_follows_next_links(resources):
    wanted = {f"sdk-rg-page-{index}" for index in range(5)}
    for name in wanted:
        resources.resource_groups.create_or_update(name, ResourceGroup(location=LOCATION))

    listed = pages(resources.resource_groups.list())

    # The emulator under test serves two items a page.
    assert len(listed) >= 3
    assert all(len(page) <= 2 for page in listed)
    assert wanted <= names(item for page in listed for item in page)
    for name in wanted:
        resources.resource_groups.begin_delete(name).result()
    assert not wanted & names(resources.resource_groups.list())


def test_a_missing_location_is_refused(resources):
    with arm_error("LocationNotAvailableForResourceGroup", 400):
        resources.resource_groups.create_or_update("sdk-rg-nowhere", ResourceGroup(location="atlantis"))


def populate(group, network, compute, msi, authorization) -> str:
    """Puts a resource of every type into `group`; answers the name of its role assignment."""
    vnet_body = net.VirtualNetwork(
        location=LOCATION,
        address_space=net.AddressSpace(address_prefixes=["10.20.0.0/16"]),
        subnets=[net.Subnet(name="nodes", address_prefix="10.20.1.0/24")],
    )
    vnet = network.virtual_networks.begin_create_or_update(group, "vnet", vnet_body).result()
    nsg = net.NetworkSecurityGroup(location=LOCATION)
    network.network_security_groups.begin_create_or_update(group, "nsg", nsg).result()
    network.public_ip_addresses.begin_create_or_update(group, "ip", standard_public_ip()).result()
    nic = network.network_interfaces.begin_create_or_update(group, "nic", interface(vnet.subnets[0].id)).result()

    compute.virtual_machines.begin_create_or_update(group, "vm", linux_machine("vm", nic.id)).result()
    extension = cm.VirtualMachineExtension(
        location=LOCATION,
        properties=cm.VirtualMachineExtensionProperties(
            publisher="Microsoft.Azure.Extensions", type="CustomScript", type_handler_version="2.1"
        ),
    )
    compute.virtual_machine_extensions.begin_create_or_update(group, "vm", "script", extension).result()
    disk = cm.Disk(location=LOCATION, creation_data=cm.CreationData(create_option="Empty"), disk_size_gb=8)
    compute.disks.begin_create_or_update(group, "disk", disk).result()
    compute.availability_sets.create_or_update(group, "set", cm.AvailabilitySet(location=LOCATION))

    identity = msi.user_assigned_identities.create_or_update(group, "identity", Identity(location=LOCATION))
    federated = FederatedIdentityCredential(
        issuer="https://issuer", subject="s", audiences=["api://AzureADTokenExchange"]
    )
    msi.federated_identity_credentials.create_or_update(group, "identity", "fic", federated)
    grant = RoleAssignmentCreateParameters(
        role_definition_id=role_definition_id(READER), principal_id=identity.principal_id
    )
    return authorization.role_assignments.create(group_id(group), str(uuid.uuid4()), grant).name


def test_deleting_a_group_deletes_everything_in_it(resources, network, compute, msi, authorization):
    group = "sdk-rg-doomed"
    resources.resource_groups.create_or_update(group, ResourceGroup(location=LOCATION))
    assignment = populate(group, network, compute, msi, authorization)
    os_disk = compute.virtual_machines.get(group, "vm").storage_profile.os_disk.name

    resources.resource_groups.begin_delete(group).result()

    reads = [
        (network.virtual_networks.get, "vnet"),
        (network.network_security_groups.get, "nsg"),
        (network.public_ip_addresses.get, "ip"),
        (network.network_interfaces.get, "nic"),
        (compute.virtual_machines.get, "vm"),
        (compute.disks.get, os_disk),
        (compute.disks.get, "disk"),
        (compute.availability_sets.get, "set"),
        (msi.user_assigned_identities.get, "identity"),
    ]
    for read, name in reads:
        with arm_error("ResourceGroupNotFound", 404):
            read(group, name)
    with arm_error("ResourceGroupNotFound", 404):
        compute.virtual_machine_extensions.get(group, "vm", "script")
    with arm_error("ResourceGroupNotFound", 404):
        msi.federated_identity_credentials.get(group, "identity", "fic")
    with arm_error("ResourceGroupNotFound", 404):
        list(network.virtual_networks.list(group))

    # Nothing of the group is left anywhere in the subscription, role assignments included.
    everything = [
        *network.virtual_networks.list_all(),
        *network.network_interfaces.list_all(),
        *network.public_ip_addresses.list_all(),
        *compute.virtual_machines.list_all(),
        *compute.disks.list(),
        *compute.availability_sets.list_by_subscription(),
        *msi.user_assigned_identities.list_by_subscription(),
        *authorization.role_assignments.list_for_subscription(),
    ]
    assert not [item.id for item in everything if f"/resourcegroups/{group}/" in item.id.lower()]
    assert assignment not in names(authorization.role_assignments.list_for_subscription())
