//! AzureMachine and AzureMachineTemplate: the defaults, checks and immutability of a virtual
//! machine's spec.
//!
//! Both kinds carry the same [`AzureMachineSpec`] (a template under `spec.template.spec`), so the
//! spec checks are written once against a base path. What differs:
//!
//! ```text
//!                      AzureMachine                      AzureMachineTemplate
//!   defaults           SSH key, role assignment, spot,   SSH key, data disks, network
//!                      diagnostics, data disks, NICs     interfaces
//!   create checks      spec checks + role name is GUID   spec checks + no role-assignment name
//!   update checks      field by field (CAPZ's list)      whole spec.template.spec frozen
//! ```
//!
//! Random values are generated only for a real create. A template gets an SSH key, which its
//! machines share (as with CAPZ), but never a role-assignment name: every machine made from it
//! would then assign its role under the same name.
//!
//! ```text
//!   values      constants and readers the others share
//!   defaults    what is filled in
//!   validation  what is refused on create
//!   update      what may not change
//!   profile     the defaults and checks of a VM profile that AzureMachinePool reuses
//! ```

mod defaults;
mod update;
mod validation;
mod values;

/// The defaults and checks of a VM profile, shared with AzureMachinePool, whose `spec.template`
/// is the same profile (with the identities directly under `spec`).
pub(crate) mod profile {
    pub(crate) use super::defaults::{
        default_diagnostics, default_identity_role, default_network_interfaces, default_spot_eviction_policy,
        default_ssh_key, identity_role_needs_subscription,
    };
    pub(crate) use super::validation::{
        check_deprecated_subnet, check_diagnostics, check_identity_role, check_image, check_key_present,
        check_os_disk, check_role_name, check_ssh_key, check_user_assigned_identities,
    };
    pub(crate) use super::values::{list, text};
}

use capz_api::{AzureMachine, AzureMachineTemplate};
use kube::ResourceExt as _;

use crate::field::{FieldError, FieldPath, Verdict};
use crate::{Context, Rules};
use defaults::{
    default_data_disks, default_diagnostics, default_identity_role, default_network_interfaces,
    default_spot_eviction_policy, default_ssh_key, default_template_spec, identity_role_needs_subscription,
};
use update::check_machine_update;
use validation::{check_machine_create, check_spec};
use values::{UPDATING_TEMPLATES, text};

impl Rules for AzureMachine {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        let spec = &mut self.spec;
        default_ssh_key(&mut spec.vm, ctx, ctx.may_generate(), &FieldPath::root("spec"))?;
        default_data_disks(&mut spec.vm);
        default_identity_role(&mut spec.identities, ctx, ctx.may_generate());
        default_spot_eviction_policy(&mut spec.vm);
        default_diagnostics(&mut spec.vm);
        default_network_interfaces(&mut spec.vm);
        Ok(())
    }

    fn needs_cluster_subscription(&self) -> bool {
        identity_role_needs_subscription(&self.spec.identities)
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_cluster_label(self, &mut verdict);
        check_spec(&self.spec, &FieldPath::root("spec"), &mut verdict);
        check_machine_create(&self.spec, ctx, &mut verdict);
        verdict
    }

    fn validate_update(&self, old: &Self, _ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_machine_update(&old.spec, &self.spec, &mut verdict);
        verdict
    }
}

/// A machine belongs to a cluster by its `cluster.x-k8s.io/cluster-name` label: the controllers
/// and defaulting find its Cluster, AzureCluster and subscription through it. CAPZ's defaulting
/// refuses a machine without it; Cluster API sets it on the machines it makes.
fn check_cluster_label(machine: &AzureMachine, verdict: &mut Verdict) {
    let labelled = machine
        .labels()
        .get(capz_api::capi::CLUSTER_NAME_LABEL)
        .is_some_and(|name| !name.is_empty());
    if !labelled {
        verdict.reject(FieldError::required(
            FieldPath::root("metadata")
                .child("labels")
                .key(capz_api::capi::CLUSTER_NAME_LABEL),
            "label the machine with the name of its Cluster (Cluster API does so for the machines it creates)",
        ));
    }
}

impl Rules for AzureMachineTemplate {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        let at = FieldPath::root("spec").child("template").child("spec");
        default_ssh_key(&mut self.spec.template.spec.vm, ctx, ctx.may_generate(), &at)?;
        default_template_spec(&mut self.spec.template.spec);
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let spec = &self.spec.template.spec;
        let base = FieldPath::root("spec").child("template").child("spec");
        check_spec(spec, &base, &mut verdict);
        let shared = "every machine made from the template would reuse it; remove it and each AzureMachine gets a generated name";
        if text(spec.identities.role_assignment_name.as_ref()).is_some() {
            verdict.reject(FieldError::forbidden(
                base.child("roleAssignmentName"),
                format!("a template cannot name the role assignment: {shared}"),
            ));
        }
        if spec
            .identities
            .system_assigned_identity_role
            .as_ref()
            .and_then(|role| text(role.name.as_ref()))
            .is_some()
        {
            verdict.reject(FieldError::forbidden(
                base.child("systemAssignedIdentityRole").child("name"),
                format!("a template cannot name the role assignment: {shared}"),
            ));
        }
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let new_spec = &self.spec.template.spec;
        if ctx.is_topology_dry_run(self) || *new_spec == old.spec.template.spec {
            return verdict;
        }
        // The old object may have been stored before today's defaults: compare it defaulted. Its
        // key is taken from the new object when it had none, as CAPZ does.
        let mut old_spec = old.spec.template.spec.clone();
        if text(old_spec.vm.ssh_public_key.as_ref()).is_none() {
            old_spec.vm.ssh_public_key.clone_from(&new_spec.vm.ssh_public_key);
        }
        default_template_spec(&mut old_spec);
        if without_empty_values(new_spec) != without_empty_values(&old_spec) {
            verdict.reject(FieldError::invalid(
                FieldPath::root("spec").child("template").child("spec"),
                new_spec,
                format!(
                    "field is immutable; create a new AzureMachineTemplate and point the MachineDeployment or KubeadmControlPlane at it ({UPDATING_TEMPLATES})"
                ),
            ));
        }
        verdict
    }
}

/// `spec` as JSON without the values that say nothing: `false`, empty strings, and the objects and
/// lists that hold nothing else. CAPZ compares templates as Go structs, where `false` and `""` are
/// the same as a field left out, so a template re-applied with or without them is no change.
fn without_empty_values(spec: &capz_api::AzureMachineSpec) -> serde_json::Value {
    fn prune(value: serde_json::Value) -> Option<serde_json::Value> {
        use serde_json::Value;
        match value {
            Value::Null | Value::Bool(false) => None,
            Value::String(text) if text.is_empty() => None,
            Value::Object(map) => {
                let map: serde_json::Map<String, Value> = map
                    .into_iter()
                    .filter_map(|(key, value)| Some((key, prune(value)?)))
                    .collect();
                (!map.is_empty()).then_some(Value::Object(map))
            }
            Value::Array(items) => {
                let items: Vec<Value> = items
                    .into_iter()
                    .map(|item| prune(item).unwrap_or_default())
                    .collect();
                (!items.is_empty()).then_some(Value::Array(items))
            }
            other => Some(other),
        }
    }
    prune(serde_json::to_value(spec).unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use capz_api::AzureMachineSpec;
    use capz_api::common::compute::{
        BootDiagnostics, BootDiagnosticsStorageAccountType, CachingType, NetworkInterface, SpotEvictionPolicy,
    };

    use super::*;
    use crate::Operation;
    use crate::testing::{
        BrokenEntropy, Case, GENERATED_NAME, GUID, IDENTITY_INVALID, SUBSCRIPTION, context, create, dry_run,
        failures, merge, mismatch, rejected, test_key, update,
    };

    /// A minimal valid spec with `patch` (JSON text) merged in.
    fn spec(patch: &str) -> Result<Value, String> {
        let mut spec = json!({ "vmSize": "Standard_D2s_v3", "osDisk": { "osType": "Linux" }, "sshPublicKey": test_key(1) });
        merge(
            &mut spec,
            &serde_json::from_str(patch).map_err(|err| format!("patch {patch}: {err}"))?,
        );
        Ok(spec)
    }

    fn machine(patch: &str) -> Result<AzureMachine, String> {
        let object = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": { "name": "m", "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": "c1"} },
            "spec": spec(patch)?,
        });
        serde_json::from_value(object).map_err(|err| format!("patch {patch}: {err}"))
    }

    fn template(patch: &str) -> Result<AzureMachineTemplate, String> {
        let object = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachineTemplate",
            "metadata": { "name": "t", "namespace": "default" },
            "spec": { "template": { "spec": spec(patch)? } },
        });
        serde_json::from_value(object).map_err(|err| format!("patch {patch}: {err}"))
    }

    const CONFIDENTIAL_DISK: &str = r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS",
        "securityProfile": {"securityEncryptionType": "DiskWithVMGuestState"}}}}"#;

    /// Manifests both kinds accept (checked without defaulting, on dry-run).
    const VALID: &[(&str, &str)] = &[
        ("no image: the reference image", "{}"),
        (
            "image by ID",
            r#"{"image": {"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/images/i"}}"#,
        ),
        (
            "marketplace image",
            r#"{"image": {"marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "latest"}}}"#,
        ),
        (
            "shared gallery image",
            r#"{"image": {"sharedGallery": {"subscriptionID": "s", "resourceGroup": "rg", "gallery": "g", "name": "n", "version": "1"}}}"#,
        ),
        (
            "community gallery image",
            r#"{"image": {"computeGallery": {"gallery": "g", "name": "n", "version": "1"}}}"#,
        ),
        (
            "private gallery image",
            r#"{"image": {"computeGallery": {"gallery": "g", "name": "n", "version": "1", "subscriptionID": "s", "resourceGroup": "rg"}}}"#,
        ),
        (
            "OS disk at its largest",
            r#"{"osDisk": {"diskSizeGB": 2048, "managedDisk": {"storageAccountType": "Premium_LRS"}}}"#,
        ),
        (
            "ephemeral OS disk",
            r#"{"osDisk": {"diffDiskSettings": {"option": "Local", "placement": "ResourceDisk"}, "cachingType": "ReadOnly"}}"#,
        ),
        (
            "data disks",
            r#"{"dataDisks": [{"nameSuffix": "etcd", "diskSizeGB": 256, "lun": 0, "managedDisk": {"storageAccountType": "Standard_LRS"}},
                              {"nameSuffix": "data", "diskSizeGB": 4, "lun": 63, "cachingType": "ReadOnly"}]}"#,
        ),
        (
            "ultra disk without caching",
            r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 32767, "lun": 0, "cachingType": "None", "managedDisk": {"storageAccountType": "UltraSSD_LRS"}},
                              {"nameSuffix": "b", "diskSizeGB": 8, "lun": 1, "managedDisk": {"storageAccountType": "UltraSSD_LRS"}}]}"#,
        ),
        (
            "user-assigned identity with provider prefix",
            r#"{"identity": "UserAssigned", "userAssignedIdentities": [{"providerID":
                "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id"}]}"#,
        ),
        (
            "system-assigned identity, role by default",
            r#"{"identity": "SystemAssigned"}"#,
        ),
        (
            "system-assigned identity with its role",
            r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/subscriptions/s/resourceGroups/rg",
                "definitionID": "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635"}}"#,
        ),
        (
            "confidential VM, whole disk",
            r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "DiskWithVMGuestState",
                "diskEncryptionSet": {"id": "des"}}}}, "securityProfile": {"securityType": "ConfidentialVM", "encryptionAtHost": false,
                "uefiSettings": {"vTpmEnabled": true, "secureBootEnabled": true}}}"#,
        ),
        (
            "confidential VM, guest state only",
            r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}},
                "securityProfile": {"securityType": "ConfidentialVM", "encryptionAtHost": true, "uefiSettings": {"vTpmEnabled": true}}}"#,
        ),
        (
            "trusted launch",
            r#"{"securityProfile": {"securityType": "TrustedLaunch", "uefiSettings": {"secureBootEnabled": true}}}"#,
        ),
        (
            "user-managed boot diagnostics",
            r#"{"diagnostics": {"boot": {"storageAccountType": "UserManaged", "userManaged": {"storageAccountURI": "https://a.blob.core.windows.net/"}}}}"#,
        ),
        (
            "disabled boot diagnostics",
            r#"{"diagnostics": {"boot": {"storageAccountType": "Disabled"}}}"#,
        ),
        (
            "deprecated network fields alone",
            r#"{"subnetName": "node", "acceleratedNetworking": true}"#,
        ),
        (
            "two network interfaces",
            r#"{"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 2}, {"subnetName": "b", "acceleratedNetworking": false}]}"#,
        ),
        (
            "placement IDs",
            r#"{"capacityReservationGroupID": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/c",
                "virtualMachineScaleSetID": "/subscriptions/s/resourceGroups/rg/providers/microsoft.compute/VirtualMachineScaleSets/v"}"#,
        ),
        (
            "extensions disabled, none listed",
            r#"{"disableExtensionOperations": true}"#,
        ),
        (
            "extensions enabled",
            r#"{"disableExtensionOperations": false, "vmExtensions": [{"name": "n", "publisher": "p", "version": "1"}]}"#,
        ),
    ];

    /// One case per spec rule (§6 items 37-46), rejected by both kinds at the same relative path.
    const INVALID: &[Case] = &[
        Case {
            rule: "37 image without source",
            patch: r#"{"image": {}}"#,
            path: "image",
            message: "Required value: set one of id",
        },
        Case {
            rule: "37 image with two sources",
            patch: r#"{"image": {"id": "/i", "marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "v"}}}"#,
            path: "image.marketplace",
            message: "already given by id",
        },
        Case {
            rule: "37 empty image ID",
            patch: r#"{"image": {"id": ""}}"#,
            path: "image.id",
            message: "managed image",
        },
        Case {
            rule: "37 marketplace without sku",
            patch: r#"{"image": {"marketplace": {"publisher": "p", "offer": "o", "sku": "", "version": "v"}}}"#,
            path: "image.marketplace.sku",
            message: "a Marketplace image needs sku",
        },
        Case {
            rule: "37 shared gallery without resource group",
            patch: r#"{"image": {"sharedGallery": {"subscriptionID": "s", "resourceGroup": "", "gallery": "g", "name": "n", "version": "1"}}}"#,
            path: "image.sharedGallery.resourceGroup",
            message: "needs resourceGroup",
        },
        Case {
            rule: "37 compute gallery subscription without group",
            patch: r#"{"image": {"computeGallery": {"gallery": "g", "name": "n", "version": "1", "subscriptionID": "s"}}}"#,
            path: "image.computeGallery.resourceGroup",
            message: "both subscriptionID and resourceGroup",
        },
        Case {
            rule: "37 compute gallery group without subscription",
            patch: r#"{"image": {"computeGallery": {"gallery": "g", "name": "n", "version": "1", "resourceGroup": "rg"}}}"#,
            path: "image.computeGallery.subscriptionID",
            message: "both subscriptionID and resourceGroup",
        },
        Case {
            rule: "38 OS type",
            patch: r#"{"osDisk": {"osType": ""}}"#,
            path: "osDisk.osType",
            message: "set Linux or Windows",
        },
        Case {
            rule: "38 OS disk too small",
            patch: r#"{"osDisk": {"diskSizeGB": 0}}"#,
            path: "osDisk.diskSizeGB",
            message: "between 1 and 2048",
        },
        Case {
            rule: "38 OS disk too big",
            patch: r#"{"osDisk": {"diskSizeGB": 2049}}"#,
            path: "osDisk.diskSizeGB",
            message: "2049",
        },
        Case {
            rule: "38 OS disk without storage type",
            patch: r#"{"osDisk": {"managedDisk": {}}}"#,
            path: "osDisk.managedDisk.storageAccountType",
            message: "set the disk's storage type",
        },
        Case {
            rule: "38 Ultra SSD OS disk",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "UltraSSD_LRS"}}}"#,
            path: "osDisk.managedDisk.storageAccountType",
            message: "only be data disks",
        },
        Case {
            rule: "38 unknown storage type",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "StandardSSDLRS"}}}"#,
            path: "osDisk.managedDisk.storageAccountType",
            message: r#"Unsupported value: "StandardSSDLRS": supported values: "Premium_LRS""#,
        },
        Case {
            rule: "38 ephemeral OS disk with encryption set",
            patch: r#"{"osDisk": {"diffDiskSettings": {"option": "Local"},
                "managedDisk": {"storageAccountType": "Standard_LRS", "diskEncryptionSet": {"id": "des"}}}}"#,
            path: "osDisk.managedDisk.diskEncryptionSet",
            message: "ephemeral OS disk",
        },
        Case {
            rule: "38 guest-state encryption set without full-disk encryption",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "VMGuestStateOnly",
                "diskEncryptionSet": {"id": "des"}}}}, "securityProfile": {"securityType": "ConfidentialVM", "uefiSettings": {"vTpmEnabled": true}}}"#,
            path: "osDisk.managedDisk.securityProfile.diskEncryptionSet",
            message: "only used with securityEncryptionType DiskWithVMGuestState",
        },
        Case {
            rule: "39 data disk too small",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 3, "lun": 0}]}"#,
            path: "dataDisks[0].diskSizeGB",
            message: "between 4 and 32767",
        },
        Case {
            rule: "39 data disk too big",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 32768, "lun": 0}]}"#,
            path: "dataDisks[0].diskSizeGB",
            message: "between 4 and 32767",
        },
        Case {
            rule: "39 data disk without name suffix",
            patch: r#"{"dataDisks": [{"nameSuffix": "", "diskSizeGB": 8, "lun": 0}]}"#,
            path: "dataDisks[0].nameSuffix",
            message: "Required value",
        },
        Case {
            rule: "39 repeated name suffix",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0}, {"nameSuffix": "a", "diskSizeGB": 8, "lun": 1}]}"#,
            path: "dataDisks[1].nameSuffix",
            message: r#"Duplicate value: "a""#,
        },
        Case {
            rule: "39 data disk without LUN",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}]}"#,
            path: "dataDisks[0].lun",
            message: "from 0 to 63",
        },
        Case {
            rule: "39 LUN out of range",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 64}]}"#,
            path: "dataDisks[0].lun",
            message: "between 0 and 63",
        },
        Case {
            rule: "39 negative LUN",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": -1}]}"#,
            path: "dataDisks[0].lun",
            message: "between 0 and 63",
        },
        Case {
            rule: "39 repeated LUN",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0}, {"nameSuffix": "b", "diskSizeGB": 8, "lun": 0}]}"#,
            path: "dataDisks[1].lun",
            message: "Duplicate value: 0",
        },
        Case {
            rule: "39 caching of an Ultra SSD",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0, "cachingType": "ReadWrite",
                "managedDisk": {"storageAccountType": "UltraSSD_LRS"}}]}"#,
            path: "dataDisks[0].cachingType",
            message: "supports no host caching",
        },
        Case {
            rule: "39 data disk storage type",
            patch: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0, "managedDisk": {"storageAccountType": "Fast"}}]}"#,
            path: "dataDisks[0].managedDisk.storageAccountType",
            message: "Unsupported value",
        },
        Case {
            rule: "40 SSH key not base64",
            patch: r#"{"sshPublicKey": "not base64!"}"#,
            path: "sshPublicKey",
            message: "base64",
        },
        Case {
            rule: "40 SSH key of an unknown type",
            patch: r#"{"sshPublicKey": "c3NoLWRzcyBBQUFB"}"#,
            path: "sshPublicKey",
            message: "ssh-dss",
        },
        Case {
            rule: "43 confidential disk without security profile",
            patch: CONFIDENTIAL_DISK,
            path: "securityProfile",
            message: "confidential VM",
        },
        Case {
            rule: "43 confidential disk on trusted launch",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}},
                "securityProfile": {"securityType": "TrustedLaunch", "uefiSettings": {"vTpmEnabled": true}}}"#,
            path: "securityProfile.securityType",
            message: "must be ConfidentialVM",
        },
        Case {
            rule: "43 confidential VM without UEFI settings",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}},
                "securityProfile": {"securityType": "ConfidentialVM"}}"#,
            path: "securityProfile.uefiSettings",
            message: "vTpmEnabled true",
        },
        Case {
            rule: "43 confidential VM without vTPM",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "VMGuestStateOnly"}}},
                "securityProfile": {"securityType": "ConfidentialVM", "uefiSettings": {"vTpmEnabled": false}}}"#,
            path: "securityProfile.uefiSettings.vTpmEnabled",
            message: "must be true",
        },
        Case {
            rule: "43 full-disk confidential VM without secure boot",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "DiskWithVMGuestState"}}},
                "securityProfile": {"securityType": "ConfidentialVM", "uefiSettings": {"vTpmEnabled": true}}}"#,
            path: "securityProfile.uefiSettings.secureBootEnabled",
            message: "must be true with securityEncryptionType DiskWithVMGuestState",
        },
        Case {
            rule: "43 full-disk confidential VM with encryption at host",
            patch: r#"{"osDisk": {"managedDisk": {"storageAccountType": "Premium_LRS", "securityProfile": {"securityEncryptionType": "DiskWithVMGuestState"}}},
                "securityProfile": {"securityType": "ConfidentialVM", "encryptionAtHost": true, "uefiSettings": {"vTpmEnabled": true, "secureBootEnabled": true}}}"#,
            path: "securityProfile.encryptionAtHost",
            message: "use VMGuestStateOnly",
        },
        Case {
            rule: "44 user-managed diagnostics without account",
            patch: r#"{"diagnostics": {"boot": {"storageAccountType": "UserManaged"}}}"#,
            path: "diagnostics.boot.userManaged",
            message: "needs userManaged.storageAccountURI",
        },
        Case {
            rule: "44 user-managed diagnostics with empty URI",
            patch: r#"{"diagnostics": {"boot": {"storageAccountType": "UserManaged", "userManaged": {"storageAccountURI": ""}}}}"#,
            path: "diagnostics.boot.userManaged.storageAccountURI",
            message: "blob endpoint",
        },
        Case {
            rule: "44 managed diagnostics with an account",
            patch: r#"{"diagnostics": {"boot": {"storageAccountType": "Managed", "userManaged": {"storageAccountURI": "https://a"}}}}"#,
            path: "diagnostics.boot.userManaged.storageAccountURI",
            message: "not Managed",
        },
        Case {
            rule: "44 disabled diagnostics with an account",
            patch: r#"{"diagnostics": {"boot": {"storageAccountType": "Disabled", "userManaged": {"storageAccountURI": "https://a"}}}}"#,
            path: "diagnostics.boot.userManaged.storageAccountURI",
            message: "not Disabled",
        },
        Case {
            rule: "45 interfaces with the deprecated subnet",
            patch: r#"{"subnetName": "node", "networkInterfaces": [{"subnetName": "node"}]}"#,
            path: "subnetName",
            message: "set networkInterfaces[0].subnetName instead",
        },
        Case {
            rule: "45 interfaces with deprecated accelerated networking",
            patch: r#"{"acceleratedNetworking": false, "networkInterfaces": [{"subnetName": "node"}]}"#,
            path: "acceleratedNetworking",
            message: "networkInterfaces[].acceleratedNetworking",
        },
        Case {
            rule: "45 interface without private IP",
            patch: r#"{"networkInterfaces": [{"subnetName": "node", "privateIPConfigs": 1}, {"privateIPConfigs": -1}]}"#,
            path: "networkInterfaces[1].privateIPConfigs",
            message: "at least 1",
        },
        Case {
            rule: "46 capacity reservation group",
            patch: r#"{"capacityReservationGroupID": "crg"}"#,
            path: "capacityReservationGroupID",
            message: "capacity reservation group must start with",
        },
        Case {
            rule: "46 scale set ID malformed",
            patch: r#"{"virtualMachineScaleSetID": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute"}"#,
            path: "virtualMachineScaleSetID",
            message: "not a well-formed",
        },
        Case {
            rule: "46 scale set ID of another type",
            patch: r#"{"virtualMachineScaleSetID": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm"}"#,
            path: "virtualMachineScaleSetID",
            message: "names a Microsoft.Compute/virtualMachines",
        },
        Case {
            rule: "46 extensions while extension operations are disabled",
            patch: r#"{"disableExtensionOperations": true, "vmExtensions": [{"name": "n", "publisher": "p", "version": "1"}]}"#,
            path: "vmExtensions",
            message: "Forbidden: no extension can be installed",
        },
    ];

    #[test]
    fn both_kinds_accept_valid_specs() {
        let ctx = dry_run();
        let mut problems = rejected(VALID, |patch| Ok(machine(patch)?.validate_create(&ctx)));
        problems.extend(rejected(
            VALID,
            |patch| Ok(template(patch)?.validate_create(&ctx)),
        ));
        assert!(
            problems.is_empty(),
            "valid specs rejected:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn both_kinds_reject_each_invalid_spec_at_its_path() {
        let ctx = dry_run();
        let mut problems = Vec::new();
        for cases in [INVALID, IDENTITY_INVALID] {
            problems.extend(failures(cases, "spec", |patch| {
                Ok(machine(patch)?.validate_create(&ctx))
            }));
            problems.extend(failures(cases, "spec.template.spec", |patch| {
                Ok(template(patch)?.validate_create(&ctx))
            }));
        }
        assert!(
            problems.is_empty(),
            "{} mismatches:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }

    /// Rules of a real AzureMachine create only.
    const MACHINE_INVALID: &[Case] = &[
        Case {
            rule: "10 key missing after defaulting",
            patch: r#"{"sshPublicKey": ""}"#,
            path: "sshPublicKey",
            message: "OpenSSH public key",
        },
        Case {
            rule: "42 role name that is no GUID",
            patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"name": "my-role", "scope": "/s", "definitionID": "/d"}}"#,
            path: "systemAssignedIdentityRole.name",
            message: "must be a GUID",
        },
        Case {
            rule: "42 role name missing after defaulting",
            patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/s", "definitionID": "/d"}}"#,
            path: "systemAssignedIdentityRole.name",
            message: "needs a GUID name",
        },
        Case {
            rule: "42 role named twice",
            patch: r#"{"identity": "SystemAssigned", "roleAssignmentName": "9f8e7d6c-5b4a-4321-8fed-cba987654321",
                "systemAssignedIdentityRole": {"name": "9f8e7d6c-5b4a-4321-8fed-cba987654321", "scope": "/s", "definitionID": "/d"}}"#,
            path: "systemAssignedIdentityRole.name",
            message: "remove roleAssignmentName",
        },
    ];

    /// Rules of a template create only.
    const TEMPLATE_INVALID: &[Case] = &[
        Case {
            rule: "48 template names the role assignment (deprecated field)",
            patch: r#"{"identity": "SystemAssigned", "roleAssignmentName": "9f8e7d6c-5b4a-4321-8fed-cba987654321"}"#,
            path: "roleAssignmentName",
            message: "a template cannot name the role assignment",
        },
        Case {
            rule: "48 template names the role assignment",
            patch: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"name": "9f8e7d6c-5b4a-4321-8fed-cba987654321", "scope": "/s", "definitionID": "/d"}}"#,
            path: "systemAssignedIdentityRole.name",
            message: "every machine made from the template would reuse it",
        },
    ];

    #[test]
    fn a_real_machine_create_needs_its_generated_values() {
        let ctx = create();
        let problems = failures(MACHINE_INVALID, "spec", |patch| {
            Ok(machine(patch)?.validate_create(&ctx))
        });
        assert!(problems.is_empty(), "{}", problems.join("\n"));

        // On dry-run nothing is generated, so nothing generated is required.
        let dry = dry_run();
        let pending = [
            r#"{"sshPublicKey": null}"#,
            r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/s", "definitionID": "/d"}}"#,
        ];
        assert!(
            rejected(&pending.map(|patch| ("dry-run", patch)), |patch| Ok(machine(
                patch
            )?
            .validate_create(&dry)))
            .is_empty()
        );
        let named = format!(
            r#"{{"identity": "SystemAssigned", "systemAssignedIdentityRole": {{"name": "{GUID}", "scope": "/s", "definitionID": "/d"}}}}"#
        );
        assert!(machine(&named).unwrap().validate_create(&ctx).allowed());
    }

    #[test]
    fn a_template_names_no_role_assignment_and_needs_no_key() {
        let ctx = create();
        let problems = failures(TEMPLATE_INVALID, "spec.template.spec", |patch| {
            Ok(template(patch)?.validate_create(&ctx))
        });
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert!(
            template(r#"{"sshPublicKey": null, "identity": "SystemAssigned"}"#)
                .unwrap()
                .validate_create(&ctx)
                .allowed()
        );
    }

    // -----------------------------------------------------------------------------------------
    // Defaulting
    // -----------------------------------------------------------------------------------------

    fn defaulted(patch: &str, ctx: &Context<'_>) -> Result<AzureMachineSpec, String> {
        let mut machine = machine(patch)?;
        machine.default(ctx).map_err(|err| err.to_string())?;
        Ok(machine.spec)
    }

    /// CAPZ `SetDefaultsAzureMachine`: a machine without its cluster's label is refused.
    #[test]
    fn a_machine_without_its_cluster_label_is_refused() {
        let mut unlabelled = machine("{}").unwrap();
        unlabelled.metadata.labels = None;
        unlabelled.default(&create()).unwrap();
        let errors: Vec<String> = unlabelled
            .validate_create(&create())
            .errors
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("metadata.labels[cluster.x-k8s.io/cluster-name]: Required value"),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn the_ssh_key_is_generated_on_a_real_create_only() {
        let keyless = r#"{"sshPublicKey": null}"#;
        let created = defaulted(keyless, &create()).unwrap();
        assert_eq!(created.vm.ssh_public_key, Some(test_key(7)));
        assert!(
            machine(keyless)
                .map(|mut m| {
                    m.spec = created;
                    m
                })
                .unwrap()
                .validate_create(&create())
                .allowed()
        );

        assert_eq!(defaulted(keyless, &dry_run()).unwrap().vm.ssh_public_key, None);
        assert_eq!(defaulted(keyless, &update()).unwrap().vm.ssh_public_key, None);
        assert_eq!(
            defaulted(r#"{"sshPublicKey": ""}"#, &create())
                .unwrap()
                .vm
                .ssh_public_key,
            Some(test_key(7))
        );
        // A given key is kept.
        assert_eq!(
            defaulted("{}", &create()).unwrap().vm.ssh_public_key,
            Some(test_key(1))
        );

        // CAPZ's template defaulting gives a template a key too, which its machines share; not in
        // a dry run (the topology controller's), which stores nothing.
        let mut created = template(keyless).unwrap();
        created.default(&create()).unwrap();
        assert_eq!(created.spec.template.spec.vm.ssh_public_key, Some(test_key(7)));
        let mut tried = template(keyless).unwrap();
        tried.default(&dry_run()).unwrap();
        assert_eq!(tried.spec.template.spec.vm.ssh_public_key, None);
    }

    #[test]
    fn a_failing_random_source_fails_defaulting() {
        let ctx = Context {
            entropy: &BrokenEntropy,
            ..create()
        };
        let err = machine(r#"{"sshPublicKey": null}"#)
            .unwrap()
            .default(&ctx)
            .unwrap_err();
        assert_eq!(err.path.as_str(), "spec.sshPublicKey");
        assert!(err.to_string().contains("no entropy"), "{err}");
    }

    #[test]
    fn data_disks_get_the_lowest_free_lun_and_a_caching_type() {
        let spec = defaulted(
            r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}, {"nameSuffix": "b", "diskSizeGB": 8, "lun": 0},
                {"nameSuffix": "c", "diskSizeGB": 8, "managedDisk": {"storageAccountType": "UltraSSD_LRS"}},
                {"nameSuffix": "d", "diskSizeGB": 8, "lun": 2, "cachingType": "ReadOnly"}]}"#,
            &create(),
        )
        .unwrap();
        let disks = spec.vm.data_disks.unwrap();
        let luns: Vec<Option<i32>> = disks.iter().map(|disk| disk.lun).collect();
        assert_eq!(luns, [Some(1), Some(0), Some(3), Some(2)]);
        let caching: Vec<Option<CachingType>> = disks.iter().map(|disk| disk.caching_type).collect();
        assert_eq!(
            caching,
            [
                Some(CachingType::ReadWrite),
                Some(CachingType::ReadWrite),
                Some(CachingType::None),
                Some(CachingType::ReadOnly)
            ]
        );
    }

    #[test]
    fn a_system_assigned_identity_gets_contributor_on_the_cluster_subscription() {
        let role = defaulted(r#"{"identity": "SystemAssigned"}"#, &create())
            .unwrap()
            .identities
            .system_assigned_identity_role
            .unwrap();
        assert_eq!(role.name.as_deref(), Some(GENERATED_NAME));
        assert_eq!(role.scope, Some(format!("/subscriptions/{SUBSCRIPTION}/")));
        assert_eq!(
            role.definition_id,
            Some(format!(
                "/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
            ))
        );

        // Without the cluster's subscription only the name is filled in; validation asks for the rest.
        let unknown = context(Operation::Create, false, None);
        let mut orphan = machine(r#"{"identity": "SystemAssigned"}"#).unwrap();
        orphan.default(&unknown).unwrap();
        let role = orphan
            .spec
            .identities
            .system_assigned_identity_role
            .clone()
            .unwrap();
        assert_eq!(
            (role.name.as_deref(), role.scope, role.definition_id),
            (Some(GENERATED_NAME), None, None)
        );
        let paths: Vec<String> = orphan
            .validate_create(&unknown)
            .errors
            .iter()
            .map(|e| e.path.to_string())
            .collect();
        assert_eq!(
            paths,
            [
                "spec.systemAssignedIdentityRole.definitionID",
                "spec.systemAssignedIdentityRole.scope"
            ]
        );

        // On dry-run no name is generated; what the user set is kept.
        let role = defaulted(
            r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/subscriptions/x/resourceGroups/rg"}}"#,
            &dry_run(),
        )
        .unwrap()
        .identities
        .system_assigned_identity_role
        .unwrap();
        assert_eq!(role.name, None);
        assert_eq!(role.scope.as_deref(), Some("/subscriptions/x/resourceGroups/rg"));

        // Other identities get no role.
        assert_eq!(
            defaulted("{}", &create())
                .unwrap()
                .identities
                .system_assigned_identity_role,
            None
        );
    }

    #[test]
    fn the_cluster_subscription_is_needed_only_where_defaulting_uses_it() {
        let full = r#""systemAssignedIdentityRole": {"scope": "/subscriptions/x/", "definitionID": "/subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/r"}"#;
        let cases = [
            ("{}".to_owned(), false),
            (r#"{"identity": "UserAssigned"}"#.to_owned(), false),
            (r#"{"identity": "SystemAssigned"}"#.to_owned(), true),
            (
                r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/subscriptions/x/"}}"#
                    .to_owned(),
                true,
            ),
            (format!(r#"{{"identity": "SystemAssigned", {full}}}"#), false),
        ];
        let unknown = context(Operation::Create, false, None);
        for (patch, needed) in cases {
            let object = machine(&patch).unwrap();
            assert_eq!(object.needs_cluster_subscription(), needed, "{patch}");
            // Needed exactly when knowing the subscription changes what defaulting gives.
            let with = defaulted(&patch, &create()).unwrap();
            let mut without = object.clone();
            without.default(&unknown).unwrap();
            assert_eq!(with != without.spec, needed, "{patch}");
        }
    }

    #[test]
    fn the_deprecated_role_assignment_name_moves_into_the_role() {
        let patch = format!(r#"{{"identity": "SystemAssigned", "roleAssignmentName": "{GUID}"}}"#);
        let identities = defaulted(&patch, &create()).unwrap().identities;
        assert_eq!(identities.role_assignment_name, None);
        assert_eq!(
            identities.system_assigned_identity_role.unwrap().name.as_deref(),
            Some(GUID)
        );

        // Both names set: left as they are, for validation to reject.
        let both = format!(
            r#"{{"identity": "SystemAssigned", "roleAssignmentName": "{GUID}", "systemAssignedIdentityRole": {{"name": "{GENERATED_NAME}"}}}}"#
        );
        let identities = defaulted(&both, &create()).unwrap().identities;
        assert_eq!(identities.role_assignment_name.as_deref(), Some(GUID));
        assert_eq!(identities.system_assigned_identity_role.unwrap().scope, None);
    }

    #[test]
    fn spot_vms_are_deallocated_unless_their_os_disk_is_ephemeral() {
        let policy = |patch: &str| {
            defaulted(patch, &create())
                .unwrap()
                .vm
                .spot_vm_options
                .and_then(|spot| spot.eviction_policy)
        };
        assert_eq!(
            policy(r#"{"spotVMOptions": {}}"#),
            Some(SpotEvictionPolicy::Deallocate)
        );
        assert_eq!(
            policy(r#"{"spotVMOptions": {}, "osDisk": {"diffDiskSettings": {"option": "Local"}}}"#),
            Some(SpotEvictionPolicy::Delete)
        );
        assert_eq!(
            policy(r#"{"spotVMOptions": {"evictionPolicy": "Delete"}}"#),
            Some(SpotEvictionPolicy::Delete)
        );
        assert_eq!(policy("{}"), None);
    }

    #[test]
    fn boot_diagnostics_default_to_managed_storage() {
        let boot = |patch: &str| {
            defaulted(patch, &create())
                .unwrap()
                .vm
                .diagnostics
                .and_then(|d| d.boot)
        };
        let managed = BootDiagnostics {
            storage_account_type: BootDiagnosticsStorageAccountType::Managed,
            user_managed: None,
        };
        assert_eq!(boot("{}"), Some(managed.clone()));
        assert_eq!(boot(r#"{"diagnostics": {}}"#), Some(managed));
        assert_eq!(
            boot(r#"{"diagnostics": {"boot": {"storageAccountType": "Disabled"}}}"#)
                .map(|b| b.storage_account_type),
            Some(BootDiagnosticsStorageAccountType::Disabled)
        );
    }

    #[test]
    fn deprecated_network_fields_move_into_one_interface() {
        let interfaces = |patch: &str| defaulted(patch, &create()).unwrap().vm;
        let vm = interfaces(r#"{"subnetName": "node", "acceleratedNetworking": true}"#);
        assert_eq!((vm.subnet_name, vm.accelerated_networking), (None, None));
        assert_eq!(
            vm.network_interfaces,
            Some(vec![NetworkInterface {
                subnet_name: Some("node".to_owned()),
                private_ip_configs: Some(1),
                accelerated_networking: Some(true)
            }])
        );
        let vm = interfaces("{}");
        assert_eq!(
            vm.network_interfaces,
            Some(vec![NetworkInterface {
                subnet_name: None,
                private_ip_configs: Some(1),
                accelerated_networking: None
            }])
        );
        let vm = interfaces(
            r#"{"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 3}, {"subnetName": "b", "privateIPConfigs": 0}]}"#,
        );
        let counts: Vec<Option<i64>> = vm
            .network_interfaces
            .unwrap()
            .iter()
            .map(|nic| nic.private_ip_configs)
            .collect();
        assert_eq!(counts, [Some(3), Some(1)]);
        // Both forms: left for validation to reject.
        let vm = interfaces(r#"{"subnetName": "node", "networkInterfaces": [{"subnetName": "other"}]}"#);
        assert_eq!(vm.subnet_name.as_deref(), Some("node"));
        assert_eq!(vm.network_interfaces.unwrap()[0].private_ip_configs, None);
    }

    /// CAPZ compares templates as Go structs: `false` and `""` are no different from left out.
    #[test]
    fn a_template_re_applied_with_or_without_empty_values_is_no_change() {
        let mut stored = template(r#"{"allocatePublicIP": false, "subnetName": ""}"#).unwrap();
        stored.default(&create()).unwrap();
        let mut again = stored.clone();
        again.spec.template.spec.allocate_public_ip = None;
        assert!(again.validate_update(&stored, &update()).allowed());
        again.spec.template.spec.allocate_public_ip = Some(true);
        assert!(!again.validate_update(&stored, &update()).allowed());
    }

    #[test]
    fn templates_default_their_key_disks_and_interfaces_only() {
        let mut template = template(
            r#"{"sshPublicKey": null, "identity": "SystemAssigned", "spotVMOptions": {}, "subnetName": "node",
                "dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}]}"#,
        )
        .unwrap();
        template.default(&create()).unwrap();
        let spec = template.spec.template.spec;
        assert_eq!(spec.vm.ssh_public_key, Some(test_key(7)));
        assert_eq!(spec.identities.system_assigned_identity_role, None);
        assert_eq!(spec.vm.spot_vm_options.unwrap().eviction_policy, None);
        assert_eq!(spec.vm.diagnostics, None);
        assert_eq!(spec.vm.data_disks.unwrap()[0].lun, Some(0));
        assert_eq!(
            spec.vm.network_interfaces.unwrap()[0].subnet_name.as_deref(),
            Some("node")
        );
    }

    #[test]
    fn defaulting_twice_changes_nothing_more() {
        let patch = r#"{"sshPublicKey": null, "identity": "SystemAssigned", "spotVMOptions": {}, "subnetName": "node",
            "dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}, {"nameSuffix": "b", "diskSizeGB": 8}]}"#;
        let mut machine = machine(patch).unwrap();
        machine.default(&create()).unwrap();
        let once = machine.clone();
        machine.default(&update()).unwrap();
        assert_eq!(machine.spec, once.spec);
        assert!(
            once.validate_create(&create()).allowed(),
            "{:?}",
            once.validate_create(&create())
        );
    }

    // -----------------------------------------------------------------------------------------
    // Immutability
    // -----------------------------------------------------------------------------------------

    /// A change of an existing AzureMachine: the patches of the old and the new object, and where
    /// a rejection points (empty: allowed).
    struct Change {
        rule: &'static str,
        old: &'static str,
        new: &'static str,
        path: &'static str,
    }

    const CHANGES: &[Change] = &[
        Change {
            rule: "image set",
            old: "{}",
            new: r#"{"image": {"id": "/i"}}"#,
            path: "image",
        },
        Change {
            rule: "identity",
            old: "{}",
            new: r#"{"identity": "SystemAssigned"}"#,
            path: "identity",
        },
        Change {
            rule: "role",
            old: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/a"}}"#,
            new: r#"{"identity": "SystemAssigned", "systemAssignedIdentityRole": {"scope": "/b"}}"#,
            path: "systemAssignedIdentityRole",
        },
        Change {
            rule: "user-assigned identities",
            old: r#"{"userAssignedIdentities": [{"providerID": "/a"}]}"#,
            new: r#"{"userAssignedIdentities": [{"providerID": "/b"}]}"#,
            path: "userAssignedIdentities",
        },
        Change {
            rule: "role assignment name",
            old: "{}",
            new: r#"{"roleAssignmentName": "x"}"#,
            path: "roleAssignmentName",
        },
        Change {
            rule: "OS disk",
            old: "{}",
            new: r#"{"osDisk": {"diskSizeGB": 64}}"#,
            path: "osDisk",
        },
        Change {
            rule: "data disks",
            old: "{}",
            new: r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0}]}"#,
            path: "dataDisks",
        },
        Change {
            rule: "SSH key",
            old: "{}",
            new: r#"{"sshPublicKey": "c3NoLWVkMjU1MTkgQUFBQQ=="}"#,
            path: "sshPublicKey",
        },
        Change {
            rule: "public IP",
            old: "{}",
            new: r#"{"allocatePublicIP": true}"#,
            path: "allocatePublicIP",
        },
        Change {
            rule: "IP forwarding",
            old: r#"{"enableIPForwarding": true}"#,
            new: "{}",
            path: "enableIPForwarding",
        },
        Change {
            rule: "accelerated networking changed",
            old: r#"{"acceleratedNetworking": false}"#,
            new: r#"{"acceleratedNetworking": true}"#,
            path: "acceleratedNetworking",
        },
        Change {
            rule: "accelerated networking set",
            old: "{}",
            new: r#"{"acceleratedNetworking": true}"#,
            path: "acceleratedNetworking",
        },
        Change {
            rule: "spot",
            old: "{}",
            new: r#"{"spotVMOptions": {}}"#,
            path: "spotVMOptions",
        },
        Change {
            rule: "security profile",
            old: r#"{"securityProfile": {"encryptionAtHost": true}}"#,
            new: "{}",
            path: "securityProfile",
        },
        Change {
            rule: "diagnostics once set",
            old: r#"{"diagnostics": {"boot": {"storageAccountType": "Managed"}}}"#,
            new: r#"{"diagnostics": {"boot": {"storageAccountType": "Disabled"}}}"#,
            path: "diagnostics",
        },
        Change {
            rule: "interfaces",
            old: r#"{"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 1}]}"#,
            new: r#"{"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 2}]}"#,
            path: "networkInterfaces",
        },
        Change {
            rule: "subnet of the first interface changed",
            old: r#"{"networkInterfaces": [{"subnetName": "a", "privateIPConfigs": 1}]}"#,
            new: r#"{"networkInterfaces": [{"subnetName": "b", "privateIPConfigs": 1}]}"#,
            path: "networkInterfaces",
        },
        Change {
            rule: "capacity reservation",
            old: "{}",
            new: r#"{"capacityReservationGroupID": "/c"}"#,
            path: "capacityReservationGroupID",
        },
        Change {
            rule: "scale set",
            old: r#"{"virtualMachineScaleSetID": "/a"}"#,
            new: "{}",
            path: "virtualMachineScaleSetID",
        },
        Change {
            rule: "extension operations",
            old: "{}",
            new: r#"{"disableExtensionOperations": false}"#,
            path: "disableExtensionOperations",
        },
        Change {
            rule: "bootstrap extension once set",
            old: r#"{"disableVMBootstrapExtension": true}"#,
            new: r#"{"disableVMBootstrapExtension": false}"#,
            path: "disableVMBootstrapExtension",
        },
        // Allowed changes.
        Change {
            rule: "nothing",
            old: "{}",
            new: "{}",
            path: "",
        },
        Change {
            rule: "tags and size",
            old: "{}",
            new: r#"{"additionalTags": {"a": "b"}, "vmSize": "Standard_D4s_v3"}"#,
            path: "",
        },
        Change {
            rule: "diagnostics first set",
            old: "{}",
            new: r#"{"diagnostics": {"boot": {"storageAccountType": "Managed"}}}"#,
            path: "",
        },
        Change {
            rule: "bootstrap extension first set",
            old: "{}",
            new: r#"{"disableVMBootstrapExtension": true}"#,
            path: "",
        },
        Change {
            rule: "accelerated networking cleared",
            old: r#"{"acceleratedNetworking": true}"#,
            new: "{}",
            path: "",
        },
        Change {
            rule: "false is unset",
            old: "{}",
            new: r#"{"allocatePublicIP": false, "enableIPForwarding": false}"#,
            path: "",
        },
        Change {
            rule: "empty lists are unset",
            old: "{}",
            new: r#"{"dataDisks": [], "userAssignedIdentities": []}"#,
            path: "",
        },
        Change {
            rule: "first subnet filled in",
            old: r#"{"networkInterfaces": [{"privateIPConfigs": 1}]}"#,
            new: r#"{"networkInterfaces": [{"subnetName": "node", "privateIPConfigs": 1}]}"#,
            path: "",
        },
        Change {
            rule: "deprecated fields migrated",
            old: r#"{"subnetName": "node", "acceleratedNetworking": true}"#,
            new: r#"{"networkInterfaces": [{"subnetName": "node", "acceleratedNetworking": true, "privateIPConfigs": 1}]}"#,
            path: "",
        },
    ];

    #[test]
    fn machine_fields_are_immutable_as_capz_lists_them() {
        let ctx = update();
        let mut problems = Vec::new();
        for change in CHANGES {
            let verdict = match (machine(change.old), machine(change.new)) {
                (Ok(old), Ok(new)) => new.validate_update(&old, &ctx),
                (Err(err), _) | (_, Err(err)) => {
                    problems.push(format!("{}: {err}", change.rule));
                    continue;
                }
            };
            let problem = if change.path.is_empty() {
                (!verdict.allowed()).then(|| format!("rejected: {:?}", verdict.errors))
            } else {
                mismatch(&verdict, &format!("spec.{}", change.path), "field is immutable")
            };
            problems.extend(problem.map(|problem| format!("{}: {problem}", change.rule)));
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn template_specs_are_frozen() {
        let ctx = update();
        let old = template(r#"{"dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0}]}"#).unwrap();
        assert!(old.validate_update(&old, &ctx).allowed());
        // Metadata may change.
        let mut relabelled = old.clone();
        relabelled.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
        assert!(relabelled.validate_update(&old, &ctx).allowed());

        let resized = template(
            r#"{"vmSize": "Standard_D8s_v3", "dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8, "lun": 0}]}"#,
        )
        .unwrap();
        let verdict = resized.validate_update(&old, &ctx);
        assert!(
            mismatch(
                &verdict,
                "spec.template.spec",
                "field is immutable; create a new AzureMachineTemplate"
            )
            .is_none(),
            "{verdict:?}"
        );

        // Cluster API's topology controller dry-runs changes; those pass.
        let mut dry = resized.clone();
        dry.metadata.annotations =
            Some([(crate::TOPOLOGY_DRY_RUN_ANNOTATION.to_owned(), String::new())].into());
        assert!(dry.validate_update(&old, &dry_run()).allowed());
        assert!(
            !dry.validate_update(&old, &ctx).allowed(),
            "the annotation alone is no dry-run"
        );
    }

    #[test]
    fn a_template_is_compared_with_its_old_self_defaulted() {
        let ctx = update();
        // Stored before defaulting: no LUN, deprecated subnet, no key.
        let old = template(r#"{"sshPublicKey": null, "subnetName": "node", "dataDisks": [{"nameSuffix": "a", "diskSizeGB": 8}]}"#).unwrap();
        let mut new = old.clone();
        new.default(&ctx).unwrap();
        assert_ne!(new.spec, old.spec);
        assert!(new.validate_update(&old, &ctx).allowed());
        // A key may be added to a template that had none, as CAPZ allows.
        let mut keyed = new.clone();
        keyed.spec.template.spec.vm.ssh_public_key = Some(test_key(3));
        assert!(keyed.validate_update(&old, &ctx).allowed());
        // Anything else is still frozen.
        let mut moved = new.clone();
        moved.spec.template.spec.vm.data_disks = None;
        assert!(!moved.validate_update(&old, &ctx).allowed());
    }
}
