"""Virtual machine scale sets through azure-mgmt-compute: a Uniform set's capacity, instances,
model upgrades and instance actions, and a Flexible set of virtual machines."""

from azure.mgmt.compute import models as cm

from support import CAPZ_IMAGE, LOCATION, SIZE, arm_error, assert_gone, names


def scale_set(subnet_id: str, capacity: int, mode: str = "Uniform", upgrade: str = "Manual") -> cm.VirtualMachineScaleSet:
    publisher, offer, sku = CAPZ_IMAGE
    ssh_key = cm.SshPublicKey(path="/home/capi/.ssh/authorized_keys", key_data="ssh-ed25519 AAAAC3Nza sdk-test")
    ip = cm.VirtualMachineScaleSetIPConfiguration(name="ipconfig", subnet=cm.ApiEntityReference(id=subnet_id))
    nic = cm.VirtualMachineScaleSetNetworkConfiguration(name="nic", primary=True, ip_configurations=[ip])
    return cm.VirtualMachineScaleSet(
        location=LOCATION,
        sku=cm.Sku(name=SIZE, capacity=capacity),
        zones=["1", "2", "3"],
        orchestration_mode=mode,
        upgrade_policy=cm.UpgradePolicy(mode=upgrade),
        virtual_machine_profile=cm.VirtualMachineScaleSetVMProfile(
            os_profile=cm.VirtualMachineScaleSetOSProfile(
                computer_name_prefix="sdk",
                admin_username="capi",
                custom_data="I2Nsb3VkLWNvbmZpZwo=",
                linux_configuration=cm.LinuxConfiguration(
                    disable_password_authentication=True, ssh=cm.SshConfiguration(public_keys=[ssh_key])
                ),
            ),
            storage_profile=cm.VirtualMachineScaleSetStorageProfile(
                image_reference=cm.ImageReference(publisher=publisher, offer=offer, sku=sku, version="latest")
            ),
            network_profile=cm.VirtualMachineScaleSetNetworkProfile(network_interface_configurations=[nic]),
        ),
    )


def test_uniform_scale_set_instances_and_upgrades(compute, group, nodes_subnet):
    sets = compute.virtual_machine_scale_sets
    created = sets.begin_create_or_update(group, "sdk-vmss", scale_set(nodes_subnet.id, 3)).result()
    assert created.provisioning_state == "Succeeded" and created.orchestration_mode == "Uniform"
    assert created.virtual_machine_profile.os_profile.custom_data is None
    vms = compute.virtual_machine_scale_set_vms
    instances = list(vms.list(group, "sdk-vmss"))
    assert names(instances) == {"sdk-vmss_0", "sdk-vmss_1", "sdk-vmss_2"}
    assert sorted(vm.zones[0] for vm in instances) == ["1", "2", "3"]
    assert {vm.os_profile.computer_name for vm in instances} == {"sdk000000", "sdk000001", "sdk000002"}
    assert all(vm.latest_model_applied for vm in instances)
    view = vms.get_instance_view(group, "sdk-vmss", "0")
    assert [status.code for status in view.statuses] == ["ProvisioningState/succeeded", "PowerState/running"]

    # A new model waits for a manual upgrade under the Manual policy.
    changed = scale_set(nodes_subnet.id, 3)
    changed.virtual_machine_profile.os_profile.custom_data = "bmV3Cg=="
    sets.begin_create_or_update(group, "sdk-vmss", changed).result()
    assert not any(vm.latest_model_applied for vm in vms.list(group, "sdk-vmss"))
    sets.begin_update_instances(group, "sdk-vmss", cm.VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=["0", "1", "2"])).result()
    assert all(vm.latest_model_applied for vm in vms.list(group, "sdk-vmss"))

    vms.begin_power_off(group, "sdk-vmss", "1").result()
    assert vms.get_instance_view(group, "sdk-vmss", "1").statuses[1].code == "PowerState/stopped"
    vms.begin_restart(group, "sdk-vmss", "1").result()
    vms.begin_reimage(group, "sdk-vmss", "1").result()
    assert vms.get_instance_view(group, "sdk-vmss", "1").statuses[1].code == "PowerState/running"

    sets.begin_delete_instances(
        group, "sdk-vmss", cm.VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=["2"]), force_deletion=True
    ).result()
    assert names(vms.list(group, "sdk-vmss")) == {"sdk-vmss_0", "sdk-vmss_1"}
    assert sets.get(group, "sdk-vmss").sku.capacity == 2
    vms.begin_delete(group, "sdk-vmss", "1").result()
    assert sets.get(group, "sdk-vmss").sku.capacity == 1
    with arm_error("InvalidParameter", 400):
        sets.begin_delete_instances(
            group, "sdk-vmss", cm.VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=["7"])
        ).result()
    sets.begin_delete(group, "sdk-vmss").result()
    assert_gone(sets.get, group, "sdk-vmss")


def test_rolling_upgrade_and_flexible_set(compute, group, nodes_subnet):
    sets = compute.virtual_machine_scale_sets
    sets.begin_create_or_update(group, "sdk-rolling", scale_set(nodes_subnet.id, 2, upgrade="Rolling")).result()
    resized = scale_set(nodes_subnet.id, 2, upgrade="Rolling")
    resized.sku.name = "Standard_D4s_v3"
    sets.begin_create_or_update(group, "sdk-rolling", resized).result()
    latest = compute.virtual_machine_scale_set_rolling_upgrades.get_latest(group, "sdk-rolling")
    assert latest.running_status.code == "Completed"
    assert latest.progress.successful_instance_count == 2
    sets.begin_delete(group, "sdk-rolling").result()

    flexible = sets.begin_create_or_update(group, "sdk-flex", scale_set(nodes_subnet.id, 2, mode="Flexible")).result()
    assert flexible.orchestration_mode == "Flexible"
    machines = [vm for vm in compute.virtual_machines.list(group) if vm.virtual_machine_scale_set]
    assert len(machines) == 2 and all(vm.name.startswith("sdk-flex_") for vm in machines)
    sets.begin_delete(group, "sdk-flex").result()
    assert not [vm for vm in compute.virtual_machines.list(group) if vm.virtual_machine_scale_set]
