"""Microsoft.Compute through azure-mgmt-compute: what clients read before creating machines
(resource SKUs, marketplace and community gallery images), managed disks, availability sets,
and a virtual machine with identities, disks and an extension."""

import base64
import uuid

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.mgmt.compute import models as cm
from azure.mgmt.msi.models import Identity

from support import (
    CAPZ_IMAGE,
    LOCATION,
    SIZE,
    arm_error,
    assert_gone,
    ids,
    interface,
    linux_machine,
    names,
    pages,
    resource_id,
    same_id,
)

CAPZ_GALLERY = "ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019"
CUSTOM_DATA = base64.b64encode(b"#cloud-config\nruncmd: [kubeadm init]\n").decode()


def test_resource_skus_of_a_location(compute):
    skus = list(compute.resource_skus.list(filter=f"location eq '{LOCATION}'"))
    assert skus
    assert all(LOCATION in [location.lower() for location in sku.locations] for sku in skus)

    size = next(sku for sku in skus if sku.resource_type == "virtualMachines" and sku.name == SIZE)
    assert (size.tier, size.family) == ("Standard", "standardDSv3Family")
    capabilities = {capability.name: capability.value for capability in size.capabilities}
    assert (capabilities["vCPUs"], capabilities["MemoryGB"], capabilities["PremiumIO"]) == ("2", "8", "True")
    (where,) = size.location_info
    assert where.location.lower() == LOCATION
    assert sorted(where.zones) == ["1", "2", "3"]
    assert not size.restrictions

    aligned = next(sku for sku in skus if sku.resource_type == "availabilitySets" and sku.name == "Aligned")
    fault_domains = {capability.name: capability.value for capability in aligned.capabilities}
    assert fault_domains["MaximumPlatformFaultDomainCount"] == "3"


def test_marketplace_image_versions(compute):
    images = compute.virtual_machine_images
    versions = images.list(LOCATION, *CAPZ_IMAGE)
    assert "130.3.20240717" in names(versions)
    assert all(version.location.lower() == LOCATION for version in versions)

    image = images.get(LOCATION, *CAPZ_IMAGE, "130.3.20240717")
    assert image.name == "130.3.20240717"
    assert image.os_disk_image.operating_system == "Linux"
    assert image.hyper_v_generation == "V1"
    assert image.architecture == "x64"
    with pytest.raises(ResourceNotFoundError):
        images.get(LOCATION, *CAPZ_IMAGE, "1.0.0")


def test_community_gallery_image_versions(compute):
    gallery = compute.community_gallery_image_versions
    version = gallery.get(LOCATION, CAPZ_GALLERY, "capi-ubun2-2404", "1.33.5")
    assert version.name == "1.33.5"
    assert version.identifier.unique_id == f"/CommunityGalleries/{CAPZ_GALLERY}/Images/capi-ubun2-2404/Versions/1.33.5"
    # The model's flattened shortcuts look in `identifier`, so read the properties directly.
    assert version.properties.storage_profile.os_disk_image.disk_size_gb == 30
    assert version.properties.exclude_from_latest is False

    listed = pages(gallery.list(LOCATION, CAPZ_GALLERY, "capi-ubun2-2404"))
    assert {"1.30.0", "1.34.1"} <= {item.name for page in listed for item in page}
    with arm_error("GalleryImageNotFound", 404):
        gallery.get(LOCATION, CAPZ_GALLERY, "capi-ubun2-2404", "1.99.0")


def empty_disk(size_gb: int, **extra) -> cm.Disk:
    return cm.Disk(
        location=LOCATION,
        sku=cm.DiskSku(name="Premium_LRS"),
        creation_data=cm.CreationData(create_option="Empty"),
        disk_size_gb=size_gb,
        **extra,
    )


def test_managed_disk_lifecycle(compute, group):
    disks = compute.disks
    created = disks.begin_create_or_update(group, "sdk-disk", empty_disk(32, tags={"stage": "created"})).result()
    assert created.id == resource_id(group, "Microsoft.Compute/disks", "sdk-disk")
    assert (created.disk_size_gb, created.sku.name, created.disk_state) == (32, "Premium_LRS", "Unattached")
    assert created.provisioning_state == "Succeeded"
    assert created.managed_by is None
    assert uuid.UUID(created.unique_id)

    read = disks.get(group, "sdk-disk")
    assert (read.tags, read.time_created) == ({"stage": "created"}, created.time_created)
    assert "sdk-disk" in names(disks.list_by_resource_group(group))
    assert created.id.lower() in ids(disks.list())

    grown = disks.begin_update(group, "sdk-disk", cm.DiskUpdate(disk_size_gb=64, tags={"stage": "grown"})).result()
    assert (grown.disk_size_gb, grown.tags) == (64, {"stage": "grown"})
    disks.begin_delete(group, "sdk-disk").result()
    assert_gone(disks.get, group, "sdk-disk")


def test_availability_set_lifecycle(compute, group):
    sets = compute.availability_sets
    body = cm.AvailabilitySet(
        location=LOCATION,
        sku=cm.Sku(name="Aligned"),
        platform_fault_domain_count=2,
        platform_update_domain_count=5,
    )
    created = sets.create_or_update(group, "sdk-avset-life", body)
    assert (created.platform_fault_domain_count, created.platform_update_domain_count) == (2, 5)
    assert created.sku.name == "Aligned"
    # As in Azure, reads list the member machines and the answer to the write does not.
    assert created.virtual_machines is None
    read = sets.get(group, "sdk-avset-life")
    assert (read.id, read.virtual_machines) == (created.id, [])
    assert "sdk-avset-life" in names(sets.list(group))
    assert created.id.lower() in ids(sets.list_by_subscription())

    assert sets.update(group, "sdk-avset-life", cm.AvailabilitySetUpdate(tags={"a": "1"})).tags == {"a": "1"}
    with arm_error("InvalidParameter", 400):
        sets.create_or_update(
            group,
            "sdk-avset-wide",
            cm.AvailabilitySet(location=LOCATION, sku=cm.Sku(name="Aligned"), platform_fault_domain_count=4),
        )
    sets.delete(group, "sdk-avset-life")
    assert_gone(sets.get, group, "sdk-avset-life")


@pytest.fixture(scope="module")
def vm_identity(msi, group) -> Identity:
    return msi.user_assigned_identities.create_or_update(group, "sdk-vm-identity", Identity(location=LOCATION))


@pytest.fixture(scope="module")
def vm_nic(network, group, nodes_subnet):
    return network.network_interfaces.begin_create_or_update(group, "sdk-vm-nic", interface(nodes_subnet.id)).result()


@pytest.fixture(scope="module")
def vm_set(compute, group):
    body = cm.AvailabilitySet(location=LOCATION, sku=cm.Sku(name="Aligned"), platform_fault_domain_count=2)
    return compute.availability_sets.create_or_update(group, "sdk-vm-set", body)


@pytest.fixture(scope="module")
def machine(compute, group, vm_identity, vm_nic, vm_set):
    body = linux_machine("sdk-vm", vm_nic.id)
    body.tags = {"role": "control-plane"}
    body.identity = cm.VirtualMachineIdentity(
        type="SystemAssigned, UserAssigned",
        user_assigned_identities={vm_identity.id: cm.UserAssignedIdentitiesValue()},
    )
    body.storage_profile.os_disk.name = "sdk-vm-os"
    body.storage_profile.os_disk.disk_size_gb = 128
    body.os_profile.custom_data = CUSTOM_DATA
    body.availability_set = cm.SubResource(id=vm_set.id)
    return compute.virtual_machines.begin_create_or_update(group, "sdk-vm", body).result()


def test_machine_is_provisioned_from_the_image(compute, group, machine):
    assert machine.id == resource_id(group, "Microsoft.Compute/virtualMachines", "sdk-vm")
    assert machine.provisioning_state == "Succeeded"
    assert uuid.UUID(machine.vm_id)
    assert machine.hardware_profile.vm_size == SIZE
    image = machine.storage_profile.image_reference
    assert (image.version, image.exact_version) == ("latest", "130.3.20240717")
    os_disk = machine.storage_profile.os_disk
    assert (os_disk.name, os_disk.os_type, os_disk.disk_size_gb) == ("sdk-vm-os", "Linux", 128)
    disk = compute.disks.get(group, "sdk-vm-os")
    assert same_id(disk.managed_by, machine.id)
    assert disk.disk_state == "Attached"
    assert same_id(os_disk.managed_disk.id, disk.id)


def test_machine_identities(machine, vm_identity):
    identity = machine.identity
    assert identity.type == "SystemAssigned, UserAssigned"
    assert uuid.UUID(identity.principal_id)
    assert uuid.UUID(identity.tenant_id)
    ((assigned_id, assigned),) = identity.user_assigned_identities.items()
    assert same_id(assigned_id, vm_identity.id)
    assert (assigned.principal_id, assigned.client_id) == (vm_identity.principal_id, vm_identity.client_id)


def test_custom_data_is_never_echoed(compute, group, machine):
    assert machine.os_profile.computer_name == "sdk-vm"
    assert machine.os_profile.linux_configuration.disable_password_authentication is True
    assert machine.os_profile.custom_data is None
    assert compute.virtual_machines.get(group, "sdk-vm").os_profile.custom_data is None
    listed = next(vm for vm in compute.virtual_machines.list(group) if vm.name == "sdk-vm")
    assert listed.os_profile.custom_data is None


def test_instance_view(compute, group, machine):
    def status_codes(view) -> set[str]:
        return {status.code for status in view.statuses}

    view = compute.virtual_machines.instance_view(group, "sdk-vm")
    assert {"ProvisioningState/succeeded", "PowerState/running"} <= status_codes(view)
    assert view.computer_name == "sdk-vm"
    assert "sdk-vm-os" in names(view.disks)

    assert view.hyper_v_generation == "V1"

    expanded = compute.virtual_machines.get(group, "sdk-vm", expand="instanceView")
    assert status_codes(expanded.instance_view) == status_codes(view)
    assert compute.virtual_machines.get(group, "sdk-vm").instance_view is None


def test_a_generation_2_image_makes_a_generation_2_machine(network, compute, group, nodes_subnet):
    nic = network.network_interfaces.begin_create_or_update(group, "sdk-gen2-nic", interface(nodes_subnet.id)).result()
    body = linux_machine("sdk-gen2", nic.id)
    body.storage_profile.image_reference = cm.ImageReference(
        publisher="Canonical", offer="ubuntu-24_04-lts", sku="server", version="latest"
    )
    image = compute.virtual_machine_images.get(LOCATION, "Canonical", "ubuntu-24_04-lts", "server", "24.04.202501140")
    assert image.hyper_v_generation == "V2"

    machine = compute.virtual_machines.begin_create_or_update(group, "sdk-gen2", body).result()
    os_disk = compute.disks.get(group, machine.storage_profile.os_disk.name)
    assert os_disk.hyper_v_generation == "V2"
    assert compute.virtual_machines.instance_view(group, "sdk-gen2").hyper_v_generation == "V2"

    compute.virtual_machines.begin_delete(group, "sdk-gen2").result()
    assert_gone(compute.disks.get, group, os_disk.name)
    network.network_interfaces.begin_delete(group, "sdk-gen2-nic").result()


def test_machine_references_are_mirrored(network, compute, group, machine, vm_nic, vm_set):
    assert same_id(network.network_interfaces.get(group, vm_nic.name).virtual_machine.id, machine.id)
    assert ids(compute.availability_sets.get(group, vm_set.name).virtual_machines) == {machine.id.lower()}
    assert same_id(machine.availability_set.id, vm_set.id)


def test_machine_lists_and_tags(compute, group, machine):
    assert "sdk-vm" in names(compute.virtual_machines.list(group))
    assert machine.id.lower() in ids(compute.virtual_machines.list_all())
    tagged = compute.virtual_machines.begin_update(
        group, "sdk-vm", cm.VirtualMachineUpdate(tags={"role": "worker"})
    ).result()
    assert tagged.tags == {"role": "worker"}
    assert tagged.hardware_profile.vm_size == SIZE


def set_data_disks(compute, group, disks: list[cm.DataDisk]) -> cm.VirtualMachine:
    update = cm.VirtualMachineUpdate(storage_profile=cm.StorageProfile(data_disks=disks))
    return compute.virtual_machines.begin_update(group, "sdk-vm", update).result()


def test_data_disk_attach_and_detach(compute, group, machine):
    disk = compute.disks.begin_create_or_update(group, "sdk-vm-data", empty_disk(16)).result()

    attached = set_data_disks(
        compute,
        group,
        [cm.DataDisk(lun=0, create_option="Attach", managed_disk=cm.ManagedDiskParameters(id=disk.id))],
    )
    (data,) = attached.storage_profile.data_disks
    assert (data.lun, data.name, data.disk_size_gb) == (0, "sdk-vm-data", 16)
    assert same_id(data.managed_disk.id, disk.id)
    held = compute.disks.get(group, "sdk-vm-data")
    assert (held.disk_state, held.managed_by) == ("Attached", attached.id)
    with arm_error("OperationNotAllowed", 409):
        compute.disks.begin_delete(group, "sdk-vm-data").result()

    detached = set_data_disks(compute, group, [])
    assert detached.storage_profile.data_disks == []
    assert same_id(detached.storage_profile.os_disk.managed_disk.id, machine.storage_profile.os_disk.managed_disk.id)
    released = compute.disks.get(group, "sdk-vm-data")
    assert (released.disk_state, released.managed_by) == ("Unattached", None)
    compute.disks.begin_delete(group, "sdk-vm-data").result()
    assert_gone(compute.disks.get, group, "sdk-vm-data")


def test_extension_lifecycle(compute, group, machine):
    extensions = compute.virtual_machine_extensions
    # The extension's own `type` would clash with the resource type, so the properties are
    # given whole.
    properties = cm.VirtualMachineExtensionProperties(
        publisher="Microsoft.Azure.Extensions",
        type="CustomScript",
        type_handler_version="2.1",
        auto_upgrade_minor_version=True,
        settings={"commandToExecute": "echo bootstrapped"},
        protected_settings={"token": "never-shown"},
    )
    body = cm.VirtualMachineExtension(location=LOCATION, properties=properties)
    created = extensions.begin_create_or_update(group, "sdk-vm", "bootstrap", body).result()
    assert created.id == machine.id + "/extensions/bootstrap"
    assert (created.type, created.properties.type) == ("Microsoft.Compute/virtualMachines/extensions", "CustomScript")
    assert (created.publisher, created.type_handler_version) == ("Microsoft.Azure.Extensions", "2.1")
    assert created.provisioning_state == "Succeeded"
    assert created.protected_settings is None

    read = extensions.get(group, "sdk-vm", "bootstrap")
    assert read.settings == {"commandToExecute": "echo bootstrapped"}
    assert read.protected_settings is None
    assert names(extensions.list(group, "sdk-vm").value) == {"bootstrap"}

    updated = extensions.begin_update(
        group, "sdk-vm", "bootstrap", cm.VirtualMachineExtensionUpdate(settings={"commandToExecute": "echo again"})
    ).result()
    assert updated.settings == {"commandToExecute": "echo again"}
    extensions.begin_delete(group, "sdk-vm", "bootstrap").result()
    assert_gone(extensions.get, group, "sdk-vm", "bootstrap")


def test_deleting_the_machine_takes_its_os_disk_and_releases_the_rest(network, compute, group, machine, vm_nic, vm_set):
    compute.virtual_machines.begin_delete(group, "sdk-vm").result()
    assert_gone(compute.virtual_machines.get, group, "sdk-vm")
    assert_gone(compute.disks.get, group, "sdk-vm-os")
    # The interface's delete option is the default, Detach: it stays, free.
    assert network.network_interfaces.get(group, vm_nic.name).virtual_machine is None
    assert compute.availability_sets.get(group, vm_set.name).virtual_machines == []
