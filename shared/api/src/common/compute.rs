//! Virtual machine settings shared by AzureMachine and AzureMachinePool: image, disks, security,
//! spot, diagnostics, extensions, network interfaces and identities.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Quantity;

/// The operating system image of a virtual machine. Set exactly one of the sources; when none is
/// set, capz-rs picks a reference image for the machine's Kubernetes version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Azure resource ID of a managed image or gallery image version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,

    /// An image version in a gallery shared with the subscription through Azure RBAC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_gallery: Option<AzureSharedGalleryImage>,

    /// An Azure Marketplace image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marketplace: Option<AzureMarketplaceImage>,

    /// An image version in an Azure Compute Gallery, private or community.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_gallery: Option<AzureComputeGalleryImage>,
}

/// Purchase plan of an image that needs one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePlan {
    /// Publisher of the plan.
    #[schemars(length(min = 1))]
    pub publisher: String,
    /// Offer of the plan.
    #[schemars(length(min = 1))]
    pub offer: String,
    /// SKU of the plan.
    #[schemars(length(min = 1))]
    pub sku: String,
}

/// An image version in an Azure Compute Gallery.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureComputeGalleryImage {
    /// Name of the gallery (for a community gallery, its public name).
    #[schemars(length(min = 1))]
    pub gallery: String,

    /// Name of the image definition.
    #[schemars(length(min = 1))]
    pub name: String,

    /// Version of the image, for example `1.31.1` or `latest`.
    #[schemars(length(min = 1))]
    pub version: String,

    /// Subscription of a private gallery; leave empty for a community gallery.
    #[serde(rename = "subscriptionID", default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,

    /// Resource group of a private gallery; leave empty for a community gallery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,

    /// Purchase plan, for images built from a Marketplace image that has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ImagePlan>,
}

/// An image version in a gallery shared through Azure RBAC.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureSharedGalleryImage {
    /// Subscription of the gallery.
    #[serde(rename = "subscriptionID")]
    #[schemars(length(min = 1))]
    pub subscription_id: String,

    /// Resource group of the gallery.
    #[schemars(length(min = 1))]
    pub resource_group: String,

    /// Name of the gallery.
    #[schemars(length(min = 1))]
    pub gallery: String,

    /// Name of the image definition.
    #[schemars(length(min = 1))]
    pub name: String,

    /// Version of the image.
    #[schemars(length(min = 1))]
    pub version: String,

    /// Publisher of the purchase plan, for images that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,

    /// Offer of the purchase plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<String>,

    /// SKU of the purchase plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
}

/// An Azure Marketplace image.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMarketplaceImage {
    /// Publisher, offer and SKU of the image.
    #[serde(flatten)]
    pub plan: ImagePlan,

    /// Version of the image, or `latest`.
    #[schemars(length(min = 1))]
    pub version: String,

    /// Whether the image is published by a third party and needs its purchase plan accepted.
    /// Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub third_party_image: Option<bool>,
}

/// How a disk is cached on the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum CachingType {
    /// No host caching.
    None,
    /// Reads are cached.
    ReadOnly,
    /// Reads and writes are cached.
    ReadWrite,
}

/// The operating-system disk of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OsDisk {
    /// The operating system on the disk: `Linux` (default) or `Windows`.
    #[serde(rename = "osType")]
    #[schemars(extend("default" = "Linux"))]
    pub os_type: String,

    /// Size of the disk in GiB. Defaults to 128 (30 for ephemeral disks follows the VM size).
    #[serde(rename = "diskSizeGB", default, skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<i32>,

    /// Settings of the managed disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_disk: Option<ManagedDiskParameters>,

    /// Ephemeral OS disk settings: the disk lives on the host and is lost when the VM is
    /// deallocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_disk_settings: Option<DiffDiskSettings>,

    /// Host caching of the disk. Defaults to `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub caching_type: Option<CachingType>,
}

/// A data disk of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataDisk {
    /// Suffix of the disk's name: the disk is named `<machine>_<suffix>`.
    pub name_suffix: String,

    /// Size of the disk in GiB.
    #[serde(rename = "diskSizeGB")]
    pub disk_size_gb: i32,

    /// Settings of the managed disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_disk: Option<ManagedDiskParameters>,

    /// Logical unit number of the disk, unique per machine. Defaults to the disk's position.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lun: Option<i32>,

    /// Host caching of the disk; admission sets `ReadWrite` (`None` on Ultra SSDs) when it is left
    /// out or empty.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "empty_as_none"
    )]
    pub caching_type: Option<CachingType>,
}

/// Reads an empty string as no value: CAPZ's defaulting replaces an empty data disk caching type
/// before the API server checks it against the enumeration.
fn empty_as_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    use serde::de::IntoDeserializer as _;
    match Option::<String>::deserialize(deserializer)?.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => T::deserialize(text.to_owned().into_deserializer()).map(Some),
    }
}

/// Settings of a managed disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedDiskParameters {
    /// Storage type, for example `Premium_LRS`, `StandardSSD_LRS` or `UltraSSD_LRS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_account_type: Option<String>,

    /// A disk encryption set with customer-managed keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption_set: Option<DiskEncryptionSetParameters>,

    /// Encryption settings of a confidential VM's disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<VmDiskSecurityProfile>,
}

/// A reference to a disk encryption set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiskEncryptionSetParameters {
    /// Azure resource ID of the disk encryption set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Encryption of a confidential VM's managed disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VmDiskSecurityProfile {
    /// A disk encryption set for the guest state with customer-managed keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_encryption_set: Option<DiskEncryptionSetParameters>,

    /// What is encrypted: the VM guest state only, or the disk with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_encryption_type: Option<SecurityEncryptionType>,
}

/// What confidential-VM encryption covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SecurityEncryptionType {
    /// Only the VM guest state blob.
    VMGuestStateOnly,
    /// The OS disk together with the VM guest state.
    DiskWithVMGuestState,
}

/// Settings of an ephemeral OS disk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiffDiskSettings {
    /// Where the disk lives: only `Local` (on the host).
    pub option: DiffDiskOption,

    /// Which host storage holds the disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<DiffDiskPlacement>,
}

/// Kinds of ephemeral OS disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum DiffDiskOption {
    /// Stored on the host.
    #[default]
    Local,
}

/// Host storage for an ephemeral OS disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum DiffDiskPlacement {
    /// The host's cache disk.
    CacheDisk,
    /// The host's NVMe disk.
    NvmeDisk,
    /// The host's temporary (resource) disk.
    ResourceDisk,
}

/// Extra capabilities of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalCapabilities {
    /// Whether Ultra SSD data disks can be attached.
    #[serde(rename = "ultraSSDEnabled", default, skip_serializing_if = "Option::is_none")]
    pub ultra_ssd_enabled: Option<bool>,
}

/// Security settings of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityProfile {
    /// Whether disks and caches are encrypted on the host as well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_at_host: Option<bool>,

    /// `TrustedLaunch` or `ConfidentialVM`; needs `uefiSettings`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_type: Option<SecurityType>,

    /// Secure boot and virtual TPM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uefi_settings: Option<UefiSettings>,
}

/// Kinds of hardened virtual machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SecurityType {
    /// A confidential VM, with memory encrypted by the hardware.
    ConfidentialVM,
    /// A VM with secure boot and a virtual TPM available.
    TrustedLaunch,
}

/// Secure boot and virtual TPM settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UefiSettings {
    /// Whether secure boot is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_boot_enabled: Option<bool>,

    /// Whether a virtual TPM is enabled.
    #[serde(rename = "vTpmEnabled", default, skip_serializing_if = "Option::is_none")]
    pub v_tpm_enabled: Option<bool>,
}

/// Settings of a spot virtual machine, which Azure may evict when it needs the capacity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpotVmOptions {
    /// Highest price per hour, in US dollars, you accept; `-1` or absent means up to the
    /// on-demand price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub max_price: Option<Quantity>,

    /// What happens on eviction: `Deallocate` (default) or `Delete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_policy: Option<SpotEvictionPolicy>,
}

/// What Azure does with an evicted spot VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum SpotEvictionPolicy {
    /// Stop and deallocate it; its disks are kept.
    Deallocate,
    /// Delete it with its disks.
    Delete,
}

/// Diagnostics of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostics {
    /// Boot diagnostics: serial console output and screenshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootDiagnostics>,
}

/// Boot diagnostics settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BootDiagnostics {
    /// Where boot diagnostics are stored: `Managed` by Azure, a `UserManaged` storage account, or
    /// `Disabled`.
    pub storage_account_type: BootDiagnosticsStorageAccountType,

    /// The storage account used with `UserManaged`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_managed: Option<UserManagedBootDiagnostics>,
}

/// Storage of boot diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum BootDiagnosticsStorageAccountType {
    /// A storage account managed by Azure.
    #[default]
    Managed,
    /// A storage account of the user's.
    UserManaged,
    /// No boot diagnostics.
    Disabled,
}

/// A user's storage account for boot diagnostics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserManagedBootDiagnostics {
    /// The HTTPS blob endpoint of the storage account.
    #[serde(rename = "storageAccountURI")]
    #[schemars(length(max = 1024), pattern(r"^https://"))]
    pub storage_account_uri: String,
}

/// A virtual machine extension to install.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VmExtension {
    /// Name of the extension.
    pub name: String,
    /// Publisher of the extension.
    pub publisher: String,
    /// Version of the extension.
    pub version: String,
    /// Public settings of the extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<BTreeMap<String, String>>,
    /// Settings of the extension that Azure stores encrypted, such as keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_settings: Option<BTreeMap<String, String>>,
}

/// A network interface of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterface {
    /// The subnet the interface is placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_name: Option<String>,

    /// Number of private IP addresses of the interface. Defaults to 1.
    #[serde(rename = "privateIPConfigs", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub private_ip_configs: Option<i64>,

    /// Whether accelerated networking is enabled; by default it is when the VM size supports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerated_networking: Option<bool>,
}

/// Which managed identities a virtual machine has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum VmIdentity {
    /// No managed identity.
    #[default]
    None,
    /// An identity Azure creates for the VM and deletes with it.
    SystemAssigned,
    /// The user-assigned identities listed in `userAssignedIdentities`.
    UserAssigned,
}

/// A user-assigned managed identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserAssignedIdentity {
    /// Azure resource ID of the identity, optionally prefixed with `azure:///`.
    #[serde(rename = "providerID")]
    pub provider_id: String,
}

/// The role assignment given to a system-assigned identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemAssignedIdentityRole {
    /// Name (a UUID) of the role assignment; generated when the machine is created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// Scope of the role assignment; defaults to the cluster's resource group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,

    /// Resource ID of the role definition; defaults to the built-in Contributor role.
    #[serde(rename = "definitionID", default, skip_serializing_if = "Option::is_none")]
    pub definition_id: Option<String>,
}

/// The virtual machine settings AzureMachine and AzureMachinePool have in common (for a pool, they
/// apply to every instance).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VmProfile {
    /// The VM size, for example `Standard_D2s_v3`.
    pub vm_size: String,

    /// The operating system image. When absent, a reference image for the Kubernetes version of
    /// the Machine (or MachinePool) is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,

    /// The operating-system disk.
    #[serde(rename = "osDisk")]
    pub os_disk: OsDisk,

    /// Data disks attached to the VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_disks: Option<Vec<DataDisk>>,

    /// OpenSSH public key (base64-encoded) for the VM's admin user. Generated when absent.
    #[serde(rename = "sshPublicKey", default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,

    /// Deprecated: use `networkInterfaces[].acceleratedNetworking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerated_networking: Option<bool>,

    /// Extra capabilities of the VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_capabilities: Option<AdditionalCapabilities>,

    /// Diagnostics of the VM. Boot diagnostics default to Azure-managed storage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,

    /// Security settings of the VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<SecurityProfile>,

    /// Run the VM as a spot VM, which Azure may evict.
    #[serde(rename = "spotVMOptions", default, skip_serializing_if = "Option::is_none")]
    pub spot_vm_options: Option<SpotVmOptions>,

    /// Deprecated: use `networkInterfaces[].subnetName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_name: Option<String>,

    /// VM extensions to install.
    #[serde(rename = "vmExtensions", default, skip_serializing_if = "Option::is_none")]
    pub vm_extensions: Option<Vec<VmExtension>>,

    /// Network interfaces of the VM. Defaults to one interface in the machine's subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<NetworkInterface>>,

    /// Whether the extension that reports bootstrap success is left out. Set to false to install
    /// it (Azure public cloud only).
    #[serde(
        rename = "disableVMBootstrapExtension",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_vm_bootstrap_extension: Option<bool>,
}

/// The managed identities of a virtual machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VmIdentityProfile {
    /// Managed identities of the VM: `None` (default), `SystemAssigned` or `UserAssigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub identity: Option<VmIdentity>,

    /// The user-assigned identities of the VM, with `identity: UserAssigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_assigned_identities: Option<Vec<UserAssignedIdentity>>,

    /// The role assignment given to the system-assigned identity, with `identity: SystemAssigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_assigned_identity_role: Option<SystemAssignedIdentityRole>,

    /// Deprecated: use `systemAssignedIdentityRole.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_assignment_name: Option<String>,
}
