//! What CAPZ fills in on a machine's spec: the SSH key, the role assignment of a system-assigned
//! identity, spot eviction, boot diagnostics, data disk LUNs and caching, network interfaces.

use std::collections::BTreeSet;

use capz_api::AzureMachineSpec;
use capz_api::common::compute::{
    BootDiagnostics, BootDiagnosticsStorageAccountType, CachingType, Diagnostics, NetworkInterface,
    SpotEvictionPolicy, VmIdentity, VmIdentityProfile, VmProfile,
};

use super::values::{CONTRIBUTOR_ROLE_ID, identity_of, is_ultra_ssd, list, text};
use crate::Context;
use crate::field::{FieldError, FieldPath};

/// A new SSH key for a VM profile without one, when `generate` (see [`Context::may_generate`]).
/// `at` is the path of the profile: `spec`, `spec.template.spec` in a template (whose machines
/// then share the key, as CAPZ has it), or a pool's `spec.template`.
pub(crate) fn default_ssh_key(
    vm: &mut VmProfile,
    ctx: &Context<'_>,
    generate: bool,
    at: &FieldPath,
) -> Result<(), FieldError> {
    if text(vm.ssh_public_key.as_ref()).is_none() && generate {
        let key = ctx.entropy.ssh_public_key().map_err(|err| {
            FieldError::required(
                at.child("sshPublicKey"),
                format!("no key was given and none could be generated ({err}); set a base64-encoded OpenSSH public key"),
            )
        })?;
        vm.ssh_public_key = Some(key);
    }
    Ok(())
}

/// Each data disk without a LUN gets the lowest free one; host caching defaults to ReadWrite, or
/// None for Ultra SSDs, which support no caching.
pub(super) fn default_data_disks(vm: &mut VmProfile) {
    let Some(disks) = vm.data_disks.as_mut() else {
        return;
    };
    let mut taken: BTreeSet<i32> = disks.iter().filter_map(|disk| disk.lun).collect();
    for disk in disks.iter_mut() {
        if disk.lun.is_none() {
            // At most len-1 other disks hold a LUN, so one of 0..len is free.
            if let Some(lun) = (0..=i32::MAX).find(|lun| !taken.contains(lun)) {
                taken.insert(lun);
                disk.lun = Some(lun);
            }
        }
        if disk.caching_type.is_none() {
            let ultra = is_ultra_ssd(disk.managed_disk.as_ref());
            disk.caching_type = Some(if ultra {
                CachingType::None
            } else {
                CachingType::ReadWrite
            });
        }
    }
}

/// Whether [`default_identity_role`] would fill in a scope or role from the cluster's
/// subscription: a system-assigned identity's role missing either.
pub(crate) fn identity_role_needs_subscription(identities: &VmIdentityProfile) -> bool {
    let role = identities.system_assigned_identity_role.as_ref();
    identity_of(identities) == VmIdentity::SystemAssigned
        && (role.and_then(|role| text(role.scope.as_ref())).is_none()
            || role.and_then(|role| text(role.definition_id.as_ref())).is_none())
}

/// The role assignment of a system-assigned identity: a name, generated when `generate` (or the
/// deprecated `roleAssignmentName`), and Contributor on the cluster's subscription.
pub(crate) fn default_identity_role(identities: &mut VmIdentityProfile, ctx: &Context<'_>, generate: bool) {
    let deprecated_name = text(identities.role_assignment_name.as_ref()).is_some();
    let role_name = identities
        .system_assigned_identity_role
        .as_ref()
        .and_then(|role| text(role.name.as_ref()));
    if deprecated_name && role_name.is_some() {
        // Both names given: left alone for validation to reject.
        return;
    }
    if identity_of(identities) != VmIdentity::SystemAssigned {
        return;
    }
    let role = identities
        .system_assigned_identity_role
        .get_or_insert_with(Default::default);
    if deprecated_name {
        role.name = identities.role_assignment_name.take();
    } else if text(role.name.as_ref()).is_none() && generate {
        role.name = Some(ctx.entropy.uuid());
    }
    if let Some(subscription) = text(ctx.cluster_subscription_id.as_ref()) {
        if text(role.scope.as_ref()).is_none() {
            role.scope = Some(format!("/subscriptions/{subscription}/"));
        }
        if text(role.definition_id.as_ref()).is_none() {
            role.definition_id = Some(format!(
                "/subscriptions/{subscription}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR_ROLE_ID}"
            ));
        }
    }
}

/// Spot VMs are deallocated on eviction, except with an ephemeral OS disk, which cannot be kept.
pub(crate) fn default_spot_eviction_policy(vm: &mut VmProfile) {
    let ephemeral = vm.os_disk.diff_disk_settings.is_some();
    if let Some(spot) = vm.spot_vm_options.as_mut() {
        spot.eviction_policy.get_or_insert(if ephemeral {
            SpotEvictionPolicy::Delete
        } else {
            SpotEvictionPolicy::Deallocate
        });
    }
}

/// Boot diagnostics go to Azure-managed storage unless told otherwise.
pub(crate) fn default_diagnostics(vm: &mut VmProfile) {
    let diagnostics = vm.diagnostics.get_or_insert_with(Diagnostics::default);
    diagnostics.boot.get_or_insert(BootDiagnostics {
        storage_account_type: BootDiagnosticsStorageAccountType::Managed,
        user_managed: None,
    });
}

/// Moves the deprecated `subnetName` / `acceleratedNetworking` into a single interface when none
/// is listed, and gives every interface one private IP by default.
pub(crate) fn default_network_interfaces(vm: &mut VmProfile) {
    let interfaces_given = list(vm.network_interfaces.as_ref()).is_some();
    let deprecated_given = text(vm.subnet_name.as_ref()).is_some() || vm.accelerated_networking.is_some();
    if interfaces_given && deprecated_given {
        // Both forms given: left alone for validation to reject.
        return;
    }
    if !interfaces_given {
        vm.network_interfaces = Some(vec![NetworkInterface {
            subnet_name: vm.subnet_name.take().filter(|name| !name.is_empty()),
            private_ip_configs: None,
            accelerated_networking: vm.accelerated_networking.take(),
        }]);
    }
    for interface in vm.network_interfaces.iter_mut().flatten() {
        if interface.private_ip_configs.is_none_or(|count| count == 0) {
            interface.private_ip_configs = Some(1);
        }
    }
}

/// What CAPZ defaults in a template: nothing random, nothing that depends on the cluster.
pub(super) fn default_template_spec(spec: &mut AzureMachineSpec) {
    default_data_disks(&mut spec.vm);
    default_network_interfaces(&mut spec.vm);
}

// ---------------------------------------------------------------------------------------------
// Validation of a spec, shared by both kinds
// ---------------------------------------------------------------------------------------------
