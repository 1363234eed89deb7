//! What may not change on a machine pool once it exists (CAPZ's list is short: a pool's instances
//! are rolled onto a changed model), and on the object of one of its instances.

use capz_api::common::compute::VmIdentity;
use capz_api::{AzureMachinePoolMachineSpec, AzureMachinePoolSpec};

use super::values::{spec_path, template_path};
use crate::azuremachine::profile::text;
use crate::field::{FieldError, Verdict};
use crate::immutable::unchanged_once_set;

/// The role assignment keeps its name, and `disableVMBootstrapExtension` its value once set (a
/// pool made before the field existed may still set it, in either direction).
pub(super) fn check_pool_update(
    old: &AzureMachinePoolSpec,
    new: &AzureMachinePoolSpec,
    verdict: &mut Verdict,
) {
    let role_name = |spec: &AzureMachinePoolSpec| {
        spec.identities
            .system_assigned_identity_role
            .as_ref()
            .and_then(|role| text(role.name.as_ref()))
            .cloned()
    };
    let system_assigned = new.identities.identity == Some(VmIdentity::SystemAssigned);
    if let (true, Some(old_name)) = (system_assigned, role_name(old))
        && role_name(new).as_ref() != Some(&old_name)
    {
        verdict.reject(FieldError::invalid(
            spec_path().child("systemAssignedIdentityRole").child("name"),
            &role_name(new),
            format!("field is immutable: the role is assigned under the name {old_name:?}; set it back"),
        ));
    }
    let bootstrap = unchanged_once_set(
        template_path().child("disableVMBootstrapExtension"),
        old.template.vm.disable_vm_bootstrap_extension.as_ref(),
        new.template.vm.disable_vm_bootstrap_extension.as_ref(),
    );
    if let Some(error) = bootstrap {
        verdict.reject(error);
    }
}

/// An instance's object keeps naming the instance it stands for.
pub(super) fn check_pool_machine_update(
    old: &AzureMachinePoolMachineSpec,
    new: &AzureMachinePoolMachineSpec,
    verdict: &mut Verdict,
) {
    if !old.provider_id.is_empty() && new.provider_id != old.provider_id {
        verdict.reject(FieldError::invalid(
            spec_path().child("providerID"),
            &new.provider_id,
            format!(
                "field is immutable: this object stands for the instance {:?}",
                old.provider_id
            ),
        ));
    }
}
