//! What Azure would refuse later, refused when a machine or template is admitted: the image, OS
//! and data disks, identities, network interfaces, placement, confidential VMs, diagnostics.

use std::collections::BTreeSet;

use capz_api::AzureMachineSpec;
use capz_api::common::compute::{
    BootDiagnosticsStorageAccountType, CachingType, DataDisk, Diagnostics, Image, ManagedDiskParameters,
    OsDisk, SecurityEncryptionType, SecurityType, VmIdentity, VmIdentityProfile, VmProfile,
};

use super::values::{
    SCALE_SET_TYPE, STORAGE_ACCOUNT_TYPES, ULTRA_SSD, identity_of, is_ultra_ssd, list, text,
};
use crate::checks::resource_type_of;
use crate::field::{FieldError, FieldPath, Verdict};
use crate::{Context, ssh};

/// Every check of a machine spec found at `base` (`spec` or `spec.template.spec`).
pub(super) fn check_spec(spec: &AzureMachineSpec, base: &FieldPath, verdict: &mut Verdict) {
    check_image(spec.vm.image.as_ref(), &base.child("image"), verdict);
    check_os_disk(&spec.vm.os_disk, &base.child("osDisk"), verdict);
    check_confidential_vm(spec, base, verdict);
    check_ssh_key(&spec.vm, base, verdict);
    check_user_assigned_identities(&spec.identities, &base.child("userAssignedIdentities"), verdict);
    if let Some(disks) = spec.vm.data_disks.as_ref() {
        check_data_disks(disks, &base.child("dataDisks"), verdict);
    }
    check_diagnostics(spec.vm.diagnostics.as_ref(), &base.child("diagnostics"), verdict);
    check_network_interfaces(&spec.vm, base, verdict);
    check_identity_role(&spec.identities, base, verdict);
    check_placement_ids(spec, base, verdict);
    let extensions = list(spec.vm.vm_extensions.as_ref()).is_some();
    if extensions && spec.disable_extension_operations == Some(true) {
        verdict.reject(FieldError::forbidden(
            base.child("vmExtensions"),
            "no extension can be installed while disableExtensionOperations is true; remove the extensions or that setting",
        ));
    }
}

/// A key that is set is a usable OpenSSH public key (`base` is the VM profile's path).
pub(crate) fn check_ssh_key(vm: &VmProfile, base: &FieldPath, verdict: &mut Verdict) {
    if let Some(key) = text(vm.ssh_public_key.as_ref())
        && let Err(reason) = ssh::check_encoded(key)
    {
        verdict.reject(FieldError::invalid(base.child("sshPublicKey"), key, reason));
    }
}

/// Exactly one image source, each with what it needs. No image at all is fine: the controller
/// picks a reference image for the Kubernetes version.
pub(crate) fn check_image(image: Option<&Image>, path: &FieldPath, verdict: &mut Verdict) {
    let Some(image) = image else { return };
    let sources = [
        ("id", image.id.is_some()),
        ("marketplace", image.marketplace.is_some()),
        ("sharedGallery", image.shared_gallery.is_some()),
        ("computeGallery", image.compute_gallery.is_some()),
    ];
    let mut given = sources.iter().filter(|(_, set)| *set).map(|(name, _)| *name);
    match given.next() {
        None => verdict.reject(FieldError::required(
            path.clone(),
            "set one of id, marketplace, sharedGallery or computeGallery, or leave image out to use the reference image",
        )),
        Some(first) => {
            for extra in given {
                verdict.reject(FieldError::forbidden(
                    path.child(extra),
                    format!("the image is already given by {first}; set only one of id, marketplace, sharedGallery, computeGallery"),
                ));
            }
        }
    }

    if image.id.as_ref().is_some_and(String::is_empty) {
        verdict.reject(FieldError::required(
            path.child("id"),
            "give the resource ID of a managed image or gallery image version",
        ));
    }
    if let Some(marketplace) = &image.marketplace {
        let path = path.child("marketplace");
        let fields = [
            ("publisher", &marketplace.plan.publisher),
            ("offer", &marketplace.plan.offer),
            ("sku", &marketplace.plan.sku),
            ("version", &marketplace.version),
        ];
        require_all(&path, &fields, "a Marketplace image", verdict);
    }
    if let Some(gallery) = &image.shared_gallery {
        let path = path.child("sharedGallery");
        let fields = [
            ("subscriptionID", &gallery.subscription_id),
            ("resourceGroup", &gallery.resource_group),
            ("gallery", &gallery.gallery),
            ("name", &gallery.name),
            ("version", &gallery.version),
        ];
        require_all(&path, &fields, "a shared gallery image", verdict);
    }
    if let Some(gallery) = &image.compute_gallery {
        let path = path.child("computeGallery");
        let subscription = text(gallery.subscription_id.as_ref()).is_some();
        let group = text(gallery.resource_group.as_ref()).is_some();
        let why =
            "a private gallery needs both subscriptionID and resourceGroup; a community gallery neither";
        if subscription && !group {
            verdict.reject(FieldError::required(path.child("resourceGroup"), why));
        } else if group && !subscription {
            verdict.reject(FieldError::required(path.child("subscriptionID"), why));
        }
    }
}

/// Rejects each empty field of `fields` (children of `path`), all needed by `what`.
pub(super) fn require_all(path: &FieldPath, fields: &[(&str, &String)], what: &str, verdict: &mut Verdict) {
    for (name, value) in fields {
        if value.is_empty() {
            verdict.reject(FieldError::required(
                path.child(name),
                format!("{what} needs {name}"),
            ));
        }
    }
}

pub(crate) fn check_os_disk(disk: &OsDisk, path: &FieldPath, verdict: &mut Verdict) {
    if disk.os_type.is_empty() {
        verdict.reject(FieldError::required(path.child("osType"), "set Linux or Windows"));
    }
    if let Some(size) = disk.disk_size_gb
        && !(1..=2048).contains(&size)
    {
        verdict.reject(FieldError::invalid(
            path.child("diskSizeGB"),
            &size,
            "an OS disk holds between 1 and 2048 GiB; leave it out for the image's size",
        ));
    }
    check_caching(disk.caching_type, disk.managed_disk.as_ref(), path, verdict);
    if let Some(managed) = &disk.managed_disk {
        let managed_path = path.child("managedDisk");
        check_managed_disk(managed, &managed_path, true, verdict);
        if disk.diff_disk_settings.is_some() && managed.disk_encryption_set.is_some() {
            verdict.reject(FieldError::forbidden(
                managed_path.child("diskEncryptionSet"),
                "an ephemeral OS disk (diffDiskSettings) cannot use a disk encryption set; remove one of the two",
            ));
        }
    }
    // `diffDiskSettings.placement` needs option Local: the type admits no other option.
}

/// The storage type of a managed disk, and the guest-state encryption set of an OS disk.
pub(super) fn check_managed_disk(
    disk: &ManagedDiskParameters,
    path: &FieldPath,
    os_disk: bool,
    verdict: &mut Verdict,
) {
    let type_path = path.child("storageAccountType");
    match text(disk.storage_account_type.as_ref()) {
        None => verdict.reject(FieldError::required(
            type_path,
            format!(
                "set the disk's storage type ({}), or leave managedDisk out",
                STORAGE_ACCOUNT_TYPES.join(", ")
            ),
        )),
        Some(kind) if os_disk && kind == ULTRA_SSD => verdict.reject(FieldError::invalid(
            type_path,
            kind,
            "Ultra SSDs can only be data disks; choose another type for the OS disk, such as Premium_LRS",
        )),
        Some(kind) if !STORAGE_ACCOUNT_TYPES.contains(&kind.as_str()) => {
            verdict.reject(FieldError::not_supported(type_path, kind, STORAGE_ACCOUNT_TYPES));
        }
        Some(_) => {}
    }
    if let Some(security) = disk.security_profile.as_ref().filter(|_| os_disk) {
        let full_disk =
            security.security_encryption_type == Some(SecurityEncryptionType::DiskWithVMGuestState);
        if security.disk_encryption_set.is_some() && !full_disk {
            verdict.reject(FieldError::forbidden(
                path.child("securityProfile").child("diskEncryptionSet"),
                "a disk encryption set is only used with securityEncryptionType DiskWithVMGuestState; set that or remove it",
            ));
        }
    }
}

/// Ultra SSDs support no host caching.
pub(super) fn check_caching(
    caching: Option<CachingType>,
    managed_disk: Option<&ManagedDiskParameters>,
    path: &FieldPath,
    verdict: &mut Verdict,
) {
    if let Some(caching) = caching.filter(|c| *c != CachingType::None)
        && is_ultra_ssd(managed_disk)
    {
        verdict.reject(FieldError::invalid(
            path.child("cachingType"),
            &caching,
            "an UltraSSD_LRS disk supports no host caching; set cachingType None or leave it out",
        ));
    }
}

pub(super) fn check_data_disks(disks: &[DataDisk], path: &FieldPath, verdict: &mut Verdict) {
    let mut names = BTreeSet::new();
    let mut luns = BTreeSet::new();
    for (index, disk) in disks.iter().enumerate() {
        let path = path.index(index);
        if !(4..=32767).contains(&disk.disk_size_gb) {
            verdict.reject(FieldError::invalid(
                path.child("diskSizeGB"),
                &disk.disk_size_gb,
                "a data disk holds between 4 and 32767 GiB",
            ));
        }
        if disk.name_suffix.is_empty() {
            verdict.reject(FieldError::required(
                path.child("nameSuffix"),
                "the disk is named <machine>_<nameSuffix>; set a suffix of its own",
            ));
        } else if !names.insert(disk.name_suffix.as_str()) {
            verdict.reject(FieldError {
                detail: "each data disk needs a nameSuffix of its own".to_owned(),
                ..FieldError::duplicate(path.child("nameSuffix"), &disk.name_suffix)
            });
        }
        if let Some(managed) = &disk.managed_disk {
            check_managed_disk(managed, &path.child("managedDisk"), false, verdict);
        }
        match disk.lun {
            None => verdict.reject(FieldError::required(
                path.child("lun"),
                "set a logical unit number from 0 to 63",
            )),
            Some(lun) if !(0..=63).contains(&lun) => verdict.reject(FieldError::invalid(
                path.child("lun"),
                &lun,
                "a logical unit number is between 0 and 63",
            )),
            Some(lun) if !luns.insert(lun) => verdict.reject(FieldError {
                detail: "each data disk needs a LUN of its own; leave lun out to get a free one".to_owned(),
                ..FieldError::duplicate(path.child("lun"), &lun)
            }),
            Some(_) => {}
        }
        check_caching(disk.caching_type, disk.managed_disk.as_ref(), &path, verdict);
    }
}

/// User-assigned identities go with identity UserAssigned, both ways, and are resource IDs.
pub(crate) fn check_user_assigned_identities(
    identities: &VmIdentityProfile,
    path: &FieldPath,
    verdict: &mut Verdict,
) {
    let listed = list(identities.user_assigned_identities.as_ref());
    if identity_of(identities) != VmIdentity::UserAssigned {
        if listed.is_some() {
            verdict.reject(FieldError::forbidden(
                path.clone(),
                "user-assigned identities are only given to the VM with identity UserAssigned; set that identity or remove the list",
            ));
        }
        return;
    }
    let Some(listed) = listed else {
        verdict.reject(FieldError::required(
            path.clone(),
            "identity UserAssigned needs at least one entry: the providerID (resource ID) of each identity",
        ));
        return;
    };
    for (index, identity) in listed.iter().enumerate() {
        if let Err(reason) = resource_type_of(&identity.provider_id) {
            verdict.reject(FieldError::invalid(
                path.index(index).child("providerID"),
                &identity.provider_id,
                format!("the resource ID of a user-assigned identity {reason}"),
            ));
        }
    }
}

/// A system-assigned identity's role assignment: named once, complete, and only with that identity.
pub(crate) fn check_identity_role(identities: &VmIdentityProfile, base: &FieldPath, verdict: &mut Verdict) {
    let path = base.child("systemAssignedIdentityRole");
    let Some(role) = &identities.system_assigned_identity_role else {
        return;
    };
    if let Some(name) = text(role.name.as_ref())
        && text(identities.role_assignment_name.as_ref()).is_some()
    {
        verdict.reject(FieldError::invalid(
            path.child("name"),
            name,
            "the deprecated roleAssignmentName names the role assignment too; remove roleAssignmentName",
        ));
    }
    if identity_of(identities) != VmIdentity::SystemAssigned {
        verdict.reject(FieldError::forbidden(
            path,
            "a role is only assigned to a system-assigned identity; set identity SystemAssigned or remove systemAssignedIdentityRole",
        ));
        return;
    }
    if text(role.definition_id.as_ref()).is_none() {
        verdict.reject(FieldError::required(
            path.child("definitionID"),
            "set the role definition's resource ID, such as /subscriptions/<subscription>/providers/Microsoft.Authorization/roleDefinitions/<role>; AzureMachines and AzureMachinePools of a known cluster get Contributor by default",
        ));
    }
    if text(role.scope.as_ref()).is_none() {
        verdict.reject(FieldError::required(
            path.child("scope"),
            "set the scope of the role assignment, such as /subscriptions/<subscription>/; AzureMachines and AzureMachinePools of a known cluster get their cluster's subscription by default",
        ));
    }
}

/// The deprecated single-interface fields are not mixed with `networkInterfaces`; each interface
/// has at least one private IP.
pub(super) fn check_network_interfaces(vm: &VmProfile, base: &FieldPath, verdict: &mut Verdict) {
    let Some(interfaces) = list(vm.network_interfaces.as_ref()) else {
        return;
    };
    check_deprecated_subnet(vm, base, verdict);
    if vm.accelerated_networking.is_some() {
        verdict.reject(FieldError::forbidden(
            base.child("acceleratedNetworking"),
            "deprecated and not allowed with networkInterfaces; set networkInterfaces[].acceleratedNetworking instead",
        ));
    }
    for (index, interface) in interfaces.iter().enumerate() {
        if let Some(count) = interface.private_ip_configs.filter(|count| *count < 1) {
            verdict.reject(FieldError::invalid(
                base.child("networkInterfaces")
                    .index(index)
                    .child("privateIPConfigs"),
                &count,
                "an interface has at least 1 private IP configuration; leave it out for 1",
            ));
        }
    }
}

/// The deprecated `subnetName` is not set beside `networkInterfaces`.
pub(crate) fn check_deprecated_subnet(vm: &VmProfile, base: &FieldPath, verdict: &mut Verdict) {
    if list(vm.network_interfaces.as_ref()).is_some() && text(vm.subnet_name.as_ref()).is_some() {
        verdict.reject(FieldError::forbidden(
            base.child("subnetName"),
            "deprecated and not allowed with networkInterfaces; set networkInterfaces[0].subnetName instead",
        ));
    }
}

/// The capacity reservation group and the scale set a VM is placed in are resource IDs.
pub(super) fn check_placement_ids(spec: &AzureMachineSpec, base: &FieldPath, verdict: &mut Verdict) {
    if let Some(id) = &spec.capacity_reservation_group_id
        && let Err(reason) = resource_type_of(id)
    {
        verdict.reject(FieldError::invalid(
            base.child("capacityReservationGroupID"),
            id,
            format!("the resource ID of a capacity reservation group {reason}"),
        ));
    }
    if let Some(id) = &spec.virtual_machine_scale_set_id {
        let path = base.child("virtualMachineScaleSetID");
        match resource_type_of(id) {
            Err(reason) => {
                verdict.reject(FieldError::invalid(
                    path,
                    id,
                    format!("the resource ID of a scale set {reason}"),
                ));
            }
            Ok(kind) if !kind.eq_ignore_ascii_case(SCALE_SET_TYPE) => verdict.reject(FieldError::invalid(
                path,
                id,
                format!(
                    "names a {kind}; give the resource ID of a virtual machine scale set ({SCALE_SET_TYPE})"
                ),
            )),
            Ok(_) => {}
        }
    }
}

/// Confidential VMs (a managed OS disk with a security encryption type) need the ConfidentialVM
/// security type and a virtual TPM; encrypting the whole disk also needs secure boot and rules
/// out encryption at host.
pub(super) fn check_confidential_vm(spec: &AzureMachineSpec, base: &FieldPath, verdict: &mut Verdict) {
    let encryption = spec
        .vm
        .os_disk
        .managed_disk
        .as_ref()
        .and_then(|disk| disk.security_profile.as_ref())
        .and_then(|profile| profile.security_encryption_type);
    let Some(encryption) = encryption else { return };
    let full_disk = encryption == SecurityEncryptionType::DiskWithVMGuestState;
    let path = base.child("securityProfile");
    let Some(profile) = &spec.vm.security_profile else {
        verdict.reject(FieldError::required(
            path,
            format!(
                "osDisk.managedDisk.securityProfile.securityEncryptionType {encryption:?} makes a confidential VM; set securityType ConfidentialVM and uefiSettings.vTpmEnabled true"
            ),
        ));
        return;
    };
    if profile.security_type != Some(SecurityType::ConfidentialVM) {
        verdict.reject(FieldError::invalid(
            path.child("securityType"),
            &profile.security_type,
            "must be ConfidentialVM when osDisk.managedDisk.securityProfile.securityEncryptionType is set",
        ));
    }
    let uefi_path = path.child("uefiSettings");
    match &profile.uefi_settings {
        None => verdict.reject(FieldError::required(
            uefi_path,
            "a confidential VM needs uefiSettings with vTpmEnabled true",
        )),
        Some(uefi) => {
            if uefi.v_tpm_enabled != Some(true) {
                verdict.reject(FieldError::invalid(
                    uefi_path.child("vTpmEnabled"),
                    &uefi.v_tpm_enabled,
                    "must be true for a confidential VM",
                ));
            }
            if full_disk && uefi.secure_boot_enabled != Some(true) {
                verdict.reject(FieldError::invalid(
                    uefi_path.child("secureBootEnabled"),
                    &uefi.secure_boot_enabled,
                    "must be true with securityEncryptionType DiskWithVMGuestState",
                ));
            }
        }
    }
    if full_disk && profile.encryption_at_host == Some(true) {
        verdict.reject(FieldError::invalid(
            path.child("encryptionAtHost"),
            &true,
            "cannot be true with securityEncryptionType DiskWithVMGuestState; set it false or use VMGuestStateOnly",
        ));
    }
}

/// A user-managed storage account for boot diagnostics is given exactly with `UserManaged`.
pub(crate) fn check_diagnostics(diagnostics: Option<&Diagnostics>, path: &FieldPath, verdict: &mut Verdict) {
    let Some(boot) = diagnostics.and_then(|d| d.boot.as_ref()) else {
        return;
    };
    let path = path.child("boot");
    let user_path = path.child("userManaged");
    match (boot.storage_account_type, &boot.user_managed) {
        (BootDiagnosticsStorageAccountType::UserManaged, None) => verdict.reject(FieldError::required(
            user_path,
            "storageAccountType UserManaged needs userManaged.storageAccountURI, the blob endpoint of your storage account",
        )),
        (BootDiagnosticsStorageAccountType::UserManaged, Some(user)) if user.storage_account_uri.is_empty() => {
            verdict.reject(FieldError::required(
                user_path.child("storageAccountURI"),
                "storageAccountType UserManaged needs the blob endpoint of your storage account",
            ));
        }
        (kind @ (BootDiagnosticsStorageAccountType::Managed | BootDiagnosticsStorageAccountType::Disabled), Some(user))
            if !user.storage_account_uri.is_empty() =>
        {
            verdict.reject(FieldError::invalid(
                user_path.child("storageAccountURI"),
                &user.storage_account_uri,
                format!("is only used with storageAccountType UserManaged, not {kind:?}; remove userManaged or set UserManaged"),
            ));
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Checks of an AzureMachine only
// ---------------------------------------------------------------------------------------------

/// What a real AzureMachine needs beyond its spec checks: a key, and a GUID naming the role
/// assignment of a system-assigned identity. On dry-run both may still be empty: they are
/// generated only when the machine is created for real.
pub(super) fn check_machine_create(spec: &AzureMachineSpec, ctx: &Context<'_>, verdict: &mut Verdict) {
    let base = FieldPath::root("spec");
    check_key_present(&spec.vm, &base, ctx.may_generate(), verdict);
    check_role_name(&spec.identities, &base, ctx.may_generate(), verdict);
}

/// A generated key is there when `needed` (a real create, once defaulting had its chance).
pub(crate) fn check_key_present(vm: &VmProfile, base: &FieldPath, needed: bool, verdict: &mut Verdict) {
    if needed && text(vm.ssh_public_key.as_ref()).is_none() {
        verdict.reject(FieldError::required(
            base.child("sshPublicKey"),
            "set a base64-encoded OpenSSH public key, or leave it to defaulting to generate one",
        ));
    }
}

/// The role assignment of a system-assigned identity is named by a GUID, which must be there
/// when `needed` (once defaulting could generate it).
pub(crate) fn check_role_name(
    identities: &VmIdentityProfile,
    base: &FieldPath,
    needed: bool,
    verdict: &mut Verdict,
) {
    if identity_of(identities) != VmIdentity::SystemAssigned {
        return;
    }
    let path = base.child("systemAssignedIdentityRole").child("name");
    let name = identities
        .system_assigned_identity_role
        .as_ref()
        .and_then(|role| text(role.name.as_ref()));
    match name {
        Some(name) if uuid::Uuid::try_parse(name).is_err() => verdict.reject(FieldError::invalid(
            path,
            name,
            "must be a GUID such as 6f1c2a43-5b1e-4d8e-9a0b-3c2d1e0f4a5b; leave it out to have one generated",
        )),
        None if needed => verdict.reject(FieldError::required(
            path,
            "the role assignment needs a GUID name; leave it to defaulting to generate one, or set one",
        )),
        _ => {}
    }
}
