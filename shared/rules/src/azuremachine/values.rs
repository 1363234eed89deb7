//! The constants and small readers the rules of a machine's spec share.

use capz_api::common::compute::{ManagedDiskParameters, VmIdentity, VmIdentityProfile};

/// The built-in Azure role `Contributor`, given to a system-assigned identity by default.
pub(super) const CONTRIBUTOR_ROLE_ID: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// The disk type that only data disks may use and that supports no host caching.
pub(super) const ULTRA_SSD: &str = "UltraSSD_LRS";

/// The storage types Azure accepts for managed disks.
pub(super) const STORAGE_ACCOUNT_TYPES: &[&str] = &[
    "Premium_LRS",
    "Premium_ZRS",
    "PremiumV2_LRS",
    "StandardSSD_LRS",
    "StandardSSD_ZRS",
    "Standard_LRS",
    "UltraSSD_LRS",
];

/// The resource type `virtualMachineScaleSetID` must name.
pub(super) const SCALE_SET_TYPE: &str = "Microsoft.Compute/virtualMachineScaleSets";

/// How to change what an AzureMachine cannot change in place.
pub(super) const REPLACE_MACHINE: &str = "the VM is built from it once: replace the machine instead, for example by rolling out a new AzureMachineTemplate";

/// Where Cluster API explains how to change the machines of a template.
pub(super) const UPDATING_TEMPLATES: &str =
    "https://cluster-api.sigs.k8s.io/tasks/updating-machine-templates";

/// A text field's value when it is set to something; CAPZ's Go types do not tell an empty string
/// from an absent one.
pub(crate) fn text(value: Option<&String>) -> Option<&String> {
    value.filter(|v| !v.is_empty())
}

/// A list field's value when it has elements.
pub(crate) fn list<T>(value: Option<&Vec<T>>) -> Option<&Vec<T>> {
    value.filter(|v| !v.is_empty())
}

/// A flag that CAPZ keeps as a plain bool: false and absent are the same.
pub(crate) fn flag(value: Option<bool>) -> Option<bool> {
    value.filter(|on| *on)
}

/// The identity type; the schema defaults an absent one to `None`.
pub(crate) fn identity_of(identities: &VmIdentityProfile) -> VmIdentity {
    identities.identity.unwrap_or_default()
}

pub(crate) fn is_ultra_ssd(managed_disk: Option<&ManagedDiskParameters>) -> bool {
    managed_disk.and_then(|disk| disk.storage_account_type.as_deref()) == Some(ULTRA_SSD)
}

// ---------------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------------
