"""Images of one's own and reserved capacity through azure-mgmt-compute: a snapshot, a managed
image made from it, a compute gallery with an image definition and a version of that image, a
machine booting from the version; a capacity reservation group holding a machine."""

import uuid

import pytest
from azure.mgmt.compute import models as cm

from support import (
    LOCATION,
    SIZE,
    arm_error,
    assert_gone,
    interface,
    linux_machine,
    names,
    resource_id,
    same_id,
)


@pytest.fixture(scope="module")
def snapshot(compute, group) -> cm.Snapshot:
    body = cm.Snapshot(location=LOCATION, creation_data=cm.CreationData(create_option="Empty"), disk_size_gb=32)
    return compute.snapshots.begin_create_or_update(group, "sdk-snapshot", body).result()


@pytest.fixture(scope="module")
def image(compute, group, snapshot) -> cm.Image:
    os_disk = cm.ImageOSDisk(
        os_type="Linux", os_state="Generalized", snapshot=cm.SubResource(id=snapshot.id)
    )
    body = cm.Image(
        location=LOCATION, hyper_v_generation="V2", storage_profile=cm.ImageStorageProfile(os_disk=os_disk)
    )
    return compute.images.begin_create_or_update(group, "sdk-image", body).result()


@pytest.fixture(scope="module")
def gallery(compute, group) -> cm.Gallery:
    body = cm.Gallery(location=LOCATION, description="images of sdk-test")
    return compute.galleries.begin_create_or_update(group, "sdk_gallery", body).result()


@pytest.fixture(scope="module")
def definition(compute, group, gallery) -> cm.GalleryImage:
    body = cm.GalleryImage(
        location=LOCATION,
        os_type="Linux",
        os_state="Generalized",
        hyper_v_generation="V2",
        identifier=cm.GalleryImageIdentifier(publisher="capz", offer="capi", sku="ubuntu-2404"),
        features=[cm.GalleryImageFeature(name="SecurityType", value="TrustedLaunchSupported")],
    )
    return compute.gallery_images.begin_create_or_update(group, gallery.name, "sdk-def", body).result()


@pytest.fixture(scope="module")
def version(compute, group, gallery, definition, image) -> cm.GalleryImageVersion:
    body = cm.GalleryImageVersion(
        location=LOCATION,
        publishing_profile=cm.GalleryImageVersionPublishingProfile(
            target_regions=[cm.TargetRegion(name=LOCATION, regional_replica_count=2)]
        ),
        storage_profile=cm.GalleryImageVersionStorageProfile(source=cm.GalleryArtifactVersionFullSource(id=image.id)),
    )
    return compute.gallery_image_versions.begin_create_or_update(
        group, gallery.name, definition.name, "1.0.0", body
    ).result()


def test_snapshot_is_written_as_disks_are(compute, group, snapshot):
    assert snapshot.id == resource_id(group, "Microsoft.Compute/snapshots", "sdk-snapshot")
    assert (snapshot.disk_size_gb, snapshot.incremental, snapshot.provisioning_state) == (32, False, "Succeeded")
    assert snapshot.sku.name == "Standard_LRS"
    assert uuid.UUID(snapshot.unique_id)
    assert "sdk-snapshot" in names(compute.snapshots.list_by_resource_group(group))


def test_managed_image_of_the_snapshot(compute, group, image, snapshot):
    assert image.provisioning_state == "Succeeded"
    assert image.hyper_v_generation == "V2"
    os_disk = image.storage_profile.os_disk
    assert same_id(os_disk.snapshot.id, snapshot.id)
    assert (os_disk.disk_size_gb, os_disk.caching, os_disk.storage_account_type) == (32, "None", "Standard_LRS")
    missing = cm.Image(
        location=LOCATION,
        storage_profile=cm.ImageStorageProfile(
            os_disk=cm.ImageOSDisk(
                os_type="Linux",
                os_state="Generalized",
                snapshot=cm.SubResource(id=resource_id(group, "Microsoft.Compute/snapshots", "none")),
            )
        ),
    )
    with arm_error("NotFound", 404):
        compute.images.begin_create_or_update(group, "sdk-image-none", missing).result()


def test_gallery_definition_and_version(compute, group, gallery, definition, version, image):
    assert gallery.identifier.unique_name.endswith("-SDK_GALLERY")
    assert (definition.os_type, definition.hyper_v_generation, definition.architecture) == ("Linux", "V2", "x64")
    assert definition.identifier.sku == "ubuntu-2404"
    assert version.provisioning_state == "Succeeded"
    assert same_id(version.storage_profile.source.id, image.id)
    assert version.storage_profile.os_disk_image.size_in_gb == 32
    assert version.publishing_profile.target_regions[0].regional_replica_count == 2
    assert version.publishing_profile.published_date is not None
    assert version.replication_status is None

    versions = compute.gallery_image_versions
    expanded = versions.get(group, gallery.name, definition.name, "1.0.0", expand="ReplicationStatus")
    assert expanded.replication_status.aggregated_state == "Completed"
    assert "1.0.0" in names(versions.list_by_gallery_image(group, gallery.name, definition.name))
    assert "sdk-def" in names(compute.gallery_images.list_by_gallery(group, gallery.name))


def test_machine_boots_from_the_gallery_version(compute, network, group, nodes_subnet, version):
    nic = network.network_interfaces.begin_create_or_update(
        group, "sdk-gallery-nic", interface(nodes_subnet.id)
    ).result()
    body = linux_machine("sdk-gallery-vm", nic.id)
    body.storage_profile.image_reference = cm.ImageReference(id=version.id)
    machine = compute.virtual_machines.begin_create_or_update(group, "sdk-gallery-vm", body).result()
    assert machine.provisioning_state == "Succeeded"
    disk = compute.disks.get(group, machine.storage_profile.os_disk.name)
    assert disk.hyper_v_generation == "V2"
    assert same_id(disk.creation_data.gallery_image_reference.id, version.id)
    compute.virtual_machines.begin_delete(group, "sdk-gallery-vm").result()


def test_nested_gallery_resources_go_first(compute, group, gallery, definition, version):
    with arm_error("CannotDeleteResource", 409):
        compute.galleries.begin_delete(group, gallery.name).result()
    with arm_error("CannotDeleteResource", 409):
        compute.gallery_images.begin_delete(group, gallery.name, definition.name).result()
    compute.gallery_image_versions.begin_delete(group, gallery.name, definition.name, version.name).result()
    compute.gallery_images.begin_delete(group, gallery.name, definition.name).result()
    compute.galleries.begin_delete(group, gallery.name).result()
    assert_gone(compute.galleries.get, group, gallery.name)


def test_capacity_reservation_group_holds_a_machine(compute, network, group, nodes_subnet):
    groups = compute.capacity_reservation_groups
    crg = groups.create_or_update(group, "sdk-crg", cm.CapacityReservationGroup(location=LOCATION, zones=["1"]))
    assert crg.zones == ["1"]
    reservation = compute.capacity_reservations.begin_create_or_update(
        group,
        "sdk-crg",
        "sdk-d2",
        cm.CapacityReservation(location=LOCATION, zones=["1"], sku=cm.Sku(name=SIZE, capacity=1)),
    ).result()
    assert reservation.provisioning_state == "Succeeded"
    assert uuid.UUID(reservation.reservation_id)

    nic = network.network_interfaces.begin_create_or_update(group, "sdk-crg-nic", interface(nodes_subnet.id)).result()
    body = linux_machine("sdk-crg-vm", nic.id)
    body.zones = ["1"]
    body.capacity_reservation = cm.CapacityReservationProfile(capacity_reservation_group=cm.SubResource(id=crg.id))
    machine = compute.virtual_machines.begin_create_or_update(group, "sdk-crg-vm", body).result()

    read = groups.get(group, "sdk-crg", expand="instanceView")
    assert [same_id(vm.id, machine.id) for vm in read.virtual_machines_associated] == [True]
    assert [same_id(item.id, reservation.id) for item in read.capacity_reservations] == [True]
    (view,) = read.instance_view.capacity_reservations
    assert view.name == "sdk-d2"
    assert view.utilization_info.current_capacity == 1

    compute.virtual_machines.begin_delete(group, "sdk-crg-vm").result()
    compute.capacity_reservations.begin_delete(group, "sdk-crg", "sdk-d2").result()
    groups.begin_delete(group, "sdk-crg").result()
    assert_gone(groups.get, group, "sdk-crg")
