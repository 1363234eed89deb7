//! What may not change on an AzureMachine once it exists: CAPZ's list, field by field.

use capz_api::AzureMachineSpec;
use capz_api::common::compute::NetworkInterface;

use super::defaults::default_network_interfaces;
use super::values::{REPLACE_MACHINE, flag, identity_of, list, text};
use crate::field::{FieldError, FieldPath, Verdict};
use crate::immutable::{unchanged, unchanged_once_set};

/// The fields of an AzureMachine that cannot change once it exists (CAPZ's list).
pub(super) fn check_machine_update(old: &AzureMachineSpec, new: &AzureMachineSpec, verdict: &mut Verdict) {
    let spec = FieldPath::root("spec");
    let errors = [
        unchanged(spec.child("image"), old.vm.image.as_ref(), new.vm.image.as_ref()),
        unchanged(
            spec.child("identity"),
            Some(&identity_of(&old.identities)),
            Some(&identity_of(&new.identities)),
        ),
        unchanged(
            spec.child("systemAssignedIdentityRole"),
            old.identities.system_assigned_identity_role.as_ref(),
            new.identities.system_assigned_identity_role.as_ref(),
        ),
        unchanged(
            spec.child("userAssignedIdentities"),
            list(old.identities.user_assigned_identities.as_ref()),
            list(new.identities.user_assigned_identities.as_ref()),
        ),
        unchanged(
            spec.child("roleAssignmentName"),
            text(old.identities.role_assignment_name.as_ref()),
            text(new.identities.role_assignment_name.as_ref()),
        ),
        unchanged(spec.child("osDisk"), Some(&old.vm.os_disk), Some(&new.vm.os_disk)),
        unchanged(
            spec.child("dataDisks"),
            list(old.vm.data_disks.as_ref()),
            list(new.vm.data_disks.as_ref()),
        ),
        unchanged(
            spec.child("sshPublicKey"),
            text(old.vm.ssh_public_key.as_ref()),
            text(new.vm.ssh_public_key.as_ref()),
        ),
        unchanged(
            spec.child("allocatePublicIP"),
            flag(old.allocate_public_ip).as_ref(),
            flag(new.allocate_public_ip).as_ref(),
        ),
        unchanged(
            spec.child("enableIPForwarding"),
            flag(old.enable_ip_forwarding).as_ref(),
            flag(new.enable_ip_forwarding).as_ref(),
        ),
        // The deprecated field may be cleared (defaulting moves it into networkInterfaces).
        new.vm.accelerated_networking.and_then(|_| {
            unchanged(
                spec.child("acceleratedNetworking"),
                old.vm.accelerated_networking.as_ref(),
                new.vm.accelerated_networking.as_ref(),
            )
        }),
        unchanged(
            spec.child("spotVMOptions"),
            old.vm.spot_vm_options.as_ref(),
            new.vm.spot_vm_options.as_ref(),
        ),
        unchanged(
            spec.child("securityProfile"),
            old.vm.security_profile.as_ref(),
            new.vm.security_profile.as_ref(),
        ),
        unchanged_once_set(
            spec.child("diagnostics"),
            old.vm.diagnostics.as_ref(),
            new.vm.diagnostics.as_ref(),
        ),
        check_network_interfaces_update(old, new, &spec),
        unchanged(
            spec.child("capacityReservationGroupID"),
            old.capacity_reservation_group_id.as_ref(),
            new.capacity_reservation_group_id.as_ref(),
        ),
        unchanged(
            spec.child("virtualMachineScaleSetID"),
            old.virtual_machine_scale_set_id.as_ref(),
            new.virtual_machine_scale_set_id.as_ref(),
        ),
        unchanged(
            spec.child("disableExtensionOperations"),
            old.disable_extension_operations.as_ref(),
            new.disable_extension_operations.as_ref(),
        ),
        // Explicitly set values stay; an absent one may be set (machines made before its default).
        unchanged_once_set(
            spec.child("disableVMBootstrapExtension"),
            old.vm.disable_vm_bootstrap_extension.as_ref(),
            new.vm.disable_vm_bootstrap_extension.as_ref(),
        ),
    ];
    for mut error in errors.into_iter().flatten() {
        error.detail = format!("{}; {REPLACE_MACHINE}", error.detail);
        verdict.reject(error);
    }
}

/// The interfaces as compared for immutability: an empty subnet name is no subnet name.
pub(super) fn comparable(interfaces: Option<&Vec<NetworkInterface>>) -> Vec<NetworkInterface> {
    interfaces
        .into_iter()
        .flatten()
        .map(|interface| NetworkInterface {
            subnet_name: text(interface.subnet_name.as_ref()).cloned(),
            private_ip_configs: interface.private_ip_configs.filter(|count| *count != 0),
            accelerated_networking: interface.accelerated_networking,
        })
        .collect()
}

/// Network interfaces are immutable, but the old object may predate the move of the deprecated
/// fields into them, and the controller fills in the first interface's subnet when it was empty.
pub(super) fn check_network_interfaces_update(
    old: &AzureMachineSpec,
    new: &AzureMachineSpec,
    spec: &FieldPath,
) -> Option<FieldError> {
    let new_interfaces = comparable(new.vm.network_interfaces.as_ref());
    if comparable(old.vm.network_interfaces.as_ref()) == new_interfaces {
        return None;
    }
    let mut migrated = old.vm.clone();
    default_network_interfaces(&mut migrated);
    let mut old_interfaces = comparable(migrated.network_interfaces.as_ref());
    if let (Some(first_old), Some(first_new)) = (old_interfaces.first_mut(), new_interfaces.first())
        && first_old.subnet_name.is_none()
    {
        first_old.subnet_name.clone_from(&first_new.subnet_name);
    }
    (old_interfaces != new_interfaces).then(|| {
        FieldError::invalid(
            spec.child("networkInterfaces"),
            &new.vm.network_interfaces,
            "field is immutable; only an empty subnetName of the first interface may be filled in",
        )
    })
}

// ---------------------------------------------------------------------------------------------
// The two kinds
// ---------------------------------------------------------------------------------------------
