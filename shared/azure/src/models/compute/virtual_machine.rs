//! Virtual machines: the cluster's control-plane and worker nodes.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::API_VERSION;
use super::disk::{DiskCreateOption, HyperVGeneration, OperatingSystemType, StorageAccountType};
use crate::id::{Location, ResourceId};
use crate::models::{ProvisioningState, Secret, SubResource, Tags};

/// A virtual machine (`Microsoft.Compute/virtualMachines`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachine {
    /// The machine's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The machine's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Compute/virtualMachines` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The machine's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The machine's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The one zone the machine runs in; fixed at creation, and excludes an availability set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// The managed identities the machine runs as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedServiceIdentity>,
    /// The marketplace plan of a third-party image, which Azure requires with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The machine's profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<VirtualMachineProperties>,
}

/// What a machine is made of, and (read-only) where it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineProperties {
    /// The machine's size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware_profile: Option<HardwareProfile>,
    /// The machine's image and disks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_profile: Option<StorageProfile>,
    /// The guest's name, admin account and bootstrap data; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_profile: Option<OsProfile>,
    /// The machine's network interfaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfile>,
    /// The availability set the machine is placed in; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_set: Option<SubResource>,
    /// `Spot` for cheap capacity Azure may take back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// What happens to a spot machine Azure takes back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_policy: Option<EvictionPolicy>,
    /// The most a spot machine may cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing_profile: Option<BillingProfile>,
    /// Trusted launch, confidential computing and host encryption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<SecurityProfile>,
    /// Boot diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics_profile: Option<DiagnosticsProfile>,
    /// The machine's power and provisioning state; only in answers to a GET with
    /// `$expand=instanceView` (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_view: Option<InstanceView>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// The machine's unique id, also seen from inside the guest (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_id: Option<String>,
    /// When the machine was created, RFC 3339 (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_created: Option<String>,
}

/// The size of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HardwareProfile {
    /// The size, such as `Standard_D2s_v3`. A string: Azure adds sizes all the time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_size: Option<String>,
}

/// The image and disks of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageProfile {
    /// The image the OS disk is made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_reference: Option<ImageReference>,
    /// The OS disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_disk: Option<OsDisk>,
    /// The data disks, such as etcd's on a control-plane machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_disks: Option<Vec<DataDisk>>,
}

/// An image, named one of four ways: a marketplace image (`publisher`, `offer`, `sku`,
/// `version`), an image or gallery image version by resource `id`, or a community or shared
/// gallery image version by its gallery id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageReference {
    /// The marketplace publisher, such as `cncf-upstream`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The marketplace offer, such as `capi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer: Option<String>,
    /// The marketplace SKU, such as `ubuntu-2204-gen1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<String>,
    /// The marketplace version, or `latest`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The version `latest` stood for when the machine was created (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_version: Option<String>,
    /// A managed image or a gallery image (version) in a subscription.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// A community gallery image version:
    /// `/CommunityGalleries/{gallery}/Images/{image}/Versions/{version}` (not an ARM id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub community_gallery_image_id: Option<String>,
    /// A gallery image version shared with the subscription:
    /// `/SharedGalleries/{gallery}/Images/{image}/Versions/{version}` (not an ARM id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_gallery_image_id: Option<String>,
}

/// The OS disk of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsDisk {
    /// The disk's name; Azure makes one up when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The operating system; Azure takes the image's when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_type: Option<OperatingSystemType>,
    /// `FromImage`, or `Attach` for an existing disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_option: Option<DiskCreateOption>,
    /// The host's caching of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caching: Option<CachingType>,
    /// The size in GiB; at least the image's.
    #[serde(rename = "diskSizeGB", skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<u32>,
    /// The managed disk behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_disk: Option<ManagedDiskParameters>,
    /// Set for an ephemeral OS disk, kept on the host instead of in a managed disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_disk_settings: Option<DiffDiskSettings>,
    /// Whether deleting the machine deletes the disk; Azure's default keeps it (`Detach`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
}

/// A data disk of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataDisk {
    /// The disk's slot, unique on the machine; how the guest finds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lun: Option<u32>,
    /// The disk's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Empty` for a new disk, `Attach` for an existing one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_option: Option<DiskCreateOption>,
    /// The host's caching of the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caching: Option<CachingType>,
    /// The size in GiB of a new disk.
    #[serde(rename = "diskSizeGB", skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<u32>,
    /// The managed disk behind it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_disk: Option<ManagedDiskParameters>,
    /// Whether deleting the machine deletes the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
}

/// The managed disk behind a machine's disk.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedDiskParameters {
    /// The disk's id: sent to attach an existing disk, answered for a created one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The disk's storage type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_account_type: Option<StorageAccountType>,
    /// The disk encryption set holding a customer-managed key for the disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_encryption_set: Option<SubResource>,
}

/// Where an ephemeral OS disk lives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffDiskSettings {
    /// `Local`: on the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option: Option<DiffDiskOption>,
    /// Which of the host's storage holds it; the size must offer that storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<DiffDiskPlacement>,
}

/// The guest's name, admin account and bootstrap data. Azure never answers the password or the
/// custom data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OsProfile {
    /// The guest's host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computer_name: Option<String>,
    /// The admin account's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_username: Option<String>,
    /// The admin account's password; a Linux machine signing in with SSH keys still gets a
    /// random one, as Azure requires a credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_password: Option<Secret>,
    /// Base64 of the bootstrap data (cloud-init or Ignition) the guest runs at first boot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_data: Option<Secret>,
    /// How a Linux guest is signed into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linux_configuration: Option<LinuxConfiguration>,
    /// How a Windows guest is run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_configuration: Option<WindowsConfiguration>,
    /// Whether extensions may be installed on the machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_extension_operations: Option<bool>,
}

/// How a Windows guest is run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowsConfiguration {
    /// Whether Windows Update patches the guest on its own schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_automatic_updates: Option<bool>,
    /// Whether Azure's guest agent is installed; extensions need it.
    #[serde(rename = "provisionVMAgent", skip_serializing_if = "Option::is_none")]
    pub provision_vm_agent: Option<bool>,
}

/// How a Linux guest is signed into.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinuxConfiguration {
    /// Whether only SSH keys sign in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_password_authentication: Option<bool>,
    /// The SSH keys of the admin account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshConfiguration>,
    /// Whether Azure's guest agent is installed; extensions need it.
    #[serde(rename = "provisionVMAgent", skip_serializing_if = "Option::is_none")]
    pub provision_vm_agent: Option<bool>,
}

/// The SSH keys of a Linux guest's admin account.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SshConfiguration {
    /// The keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_keys: Option<Vec<SshPublicKey>>,
}

/// An SSH public key and where the guest keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SshPublicKey {
    /// The file in the guest, `/home/{admin}/.ssh/authorized_keys`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The key in OpenSSH form (`ssh-rsa AAAA…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_data: Option<String>,
}

/// The network interfaces of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkProfile {
    /// The interfaces; with several, one is primary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interfaces: Option<Vec<NetworkInterfaceReference>>,
}

/// A machine's reference to one of its interfaces. Like [`SubResource`] it has no `Default`: it
/// names an interface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterfaceReference {
    /// The interface.
    pub id: ResourceId,
    /// How the machine uses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<NetworkInterfaceReferenceProperties>,
}

/// How a machine uses one of its interfaces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkInterfaceReferenceProperties {
    /// Whether it is the machine's primary interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// Whether deleting the machine deletes the interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
}

/// The managed identities of a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedServiceIdentity {
    /// Which kinds of identity the resource has.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub identity_type: Option<IdentityType>,
    /// The object id of the system-assigned identity, what role assignments name (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
    /// The tenant of the system-assigned identity (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// The user-assigned identities, by id; sent with empty values. Keys compare ignoring case,
    /// as Azure answers them in its own spelling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_assigned_identities: Option<HashMap<ResourceId, AssignedIdentity>>,
}

/// What Azure reports of a user-assigned identity on a resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssignedIdentity {
    /// The identity's object id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal_id: Option<String>,
    /// The identity's application id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// The marketplace plan of an image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The plan's name: the image's SKU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The image's publisher.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The product: the image's offer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
}

/// The price limit of a spot machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingProfile {
    /// The most per hour, in US dollars; -1 for up to the regular price (never evicted for
    /// price).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_price: Option<f64>,
}

/// The security features of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityProfile {
    /// Trusted launch or confidential computing; a generation 2 image is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_type: Option<SecurityType>,
    /// Secure boot and the virtual TPM of a trusted launch or confidential machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uefi_settings: Option<UefiSettings>,
    /// Whether the host encrypts temporary and cached disk data; the subscription must allow it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_at_host: Option<bool>,
}

/// Secure boot and virtual TPM.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UefiSettings {
    /// Whether only signed boot loaders and kernels start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_boot_enabled: Option<bool>,
    /// Whether the machine has a virtual TPM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub v_tpm_enabled: Option<bool>,
}

/// The diagnostics of a machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticsProfile {
    /// The serial console log and screenshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot_diagnostics: Option<BootDiagnostics>,
}

/// Where boot diagnostics go.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootDiagnostics {
    /// Whether they are kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// A storage account's blob endpoint of the user's; Azure's own storage when left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_uri: Option<String>,
}

/// What a machine reports about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceView {
    /// The guest's host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computer_name: Option<String>,
    /// The guest's operating system, as its agent reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_name: Option<String>,
    /// The guest's operating system version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_version: Option<String>,
    /// The Hyper-V generation the machine runs as.
    #[serde(rename = "hyperVGeneration", skip_serializing_if = "Option::is_none")]
    pub hyper_v_generation: Option<HyperVGeneration>,
    /// The provisioning and power states, as codes such as `PowerState/running`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statuses: Option<Vec<InstanceViewStatus>>,
}

impl InstanceView {
    /// The power state: `running`, `starting`, `stopping`, `stopped`, `deallocating` or
    /// `deallocated`, from the `PowerState/…` status; `None` when Azure reports none, which it
    /// may not while the machine is being created.
    #[must_use]
    pub fn power_state(&self) -> Option<&str> {
        self.statuses
            .as_deref()?
            .iter()
            .find_map(|status| status.code.as_deref()?.strip_prefix("PowerState/"))
    }
}

/// One status of an instance view.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceViewStatus {
    /// What the status says, as `{kind}/{state}`: `ProvisioningState/succeeded`,
    /// `PowerState/running`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `Info`, `Warning` or `Error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// The status for people, such as `VM running`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_status: Option<String>,
    /// Details, such as why provisioning failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status was recorded, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

lenient_enum! {
    /// The host's caching of a disk.
    pub enum CachingType {
        /// No caching, as etcd's disk wants.
        None = "None",
        /// Reads are cached.
        ReadOnly = "ReadOnly",
        /// Reads and writes are cached; the default of OS disks.
        ReadWrite = "ReadWrite",
    }
}

lenient_enum! {
    /// What deleting a machine does to one of its disks or interfaces.
    pub enum DeleteOption {
        /// Deletes it with the machine.
        Delete = "Delete",
        /// Keeps it, detached.
        Detach = "Detach",
    }
}

lenient_enum! {
    /// Where an ephemeral OS disk is kept.
    pub enum DiffDiskOption {
        /// On the host.
        Local = "Local",
    }
}

lenient_enum! {
    /// Which of the host's storage holds an ephemeral OS disk.
    pub enum DiffDiskPlacement {
        /// The host's cache.
        CacheDisk = "CacheDisk",
        /// The machine's temporary disk.
        ResourceDisk = "ResourceDisk",
        /// The machine's local NVMe disk.
        NvmeDisk = "NvmeDisk",
    }
}

lenient_enum! {
    /// Which kinds of managed identity a resource has.
    pub enum IdentityType {
        /// One Azure creates with the resource and deletes with it.
        SystemAssigned = "SystemAssigned",
        /// Identities that exist on their own.
        UserAssigned = "UserAssigned",
        /// Both.
        SystemAssignedUserAssigned = "SystemAssigned, UserAssigned",
        /// None: removes the resource's identities.
        None = "None",
    }
}

lenient_enum! {
    /// How a machine's capacity is held.
    pub enum Priority {
        /// Kept until deleted.
        Regular = "Regular",
        /// Spare capacity Azure may take back at any time.
        Spot = "Spot",
    }
}

lenient_enum! {
    /// What happens to a spot machine Azure takes back.
    pub enum EvictionPolicy {
        /// Stopped and deallocated; its disks stay (and cost).
        Deallocate = "Deallocate",
        /// Deleted.
        Delete = "Delete",
    }
}

lenient_enum! {
    /// The security type of a machine.
    pub enum SecurityType {
        /// Secure boot and a virtual TPM.
        TrustedLaunch = "TrustedLaunch",
        /// Memory encrypted by the hardware.
        ConfidentialVm = "ConfidentialVM",
    }
}

arm_model!(
    VirtualMachine,
    "Microsoft.Compute/virtualMachines",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::{
        AssignedIdentity, CachingType, DataDisk, DeleteOption, HardwareProfile, IdentityType, ImageReference,
        LinuxConfiguration, ManagedDiskParameters, ManagedServiceIdentity, NetworkInterfaceReference,
        NetworkInterfaceReferenceProperties, NetworkProfile, OsDisk, OsProfile, Priority, SshConfiguration,
        SshPublicKey, StorageProfile, VirtualMachine, VirtualMachineProperties,
    };
    use crate::models::compute::{
        DiskCreateOption, HyperVGeneration, OperatingSystemType, StorageAccountType,
    };
    use crate::models::{ProvisioningState, Secret};

    const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    fn expanded_answer() -> serde_json::Value {
        json!({
            "name": "cp-0",
            "id": format!("{RG}/providers/Microsoft.Compute/virtualMachines/cp-0"),
            "type": "Microsoft.Compute/virtualMachines",
            "location": "westus2",
            "zones": ["1"],
            "plan": {"name": "capi-flatcar", "publisher": "kinvolk", "product": "flatcar-container-linux"},
            "identity": {
                "type": "SystemAssigned, UserAssigned",
                "principalId": "2b0b6a9e-0000-4000-8000-000000000001",
                "tenantId": "00000000-0000-0000-0000-000000000000",
                "userAssignedIdentities": {
                    format!("{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp"): {
                        "principalId": "2b0b6a9e-0000-4000-8000-000000000002",
                        "clientId": "2b0b6a9e-0000-4000-8000-000000000003"
                    }
                }
            },
            "properties": {
                "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
                "provisioningState": "Succeeded",
                "vmId": "1923b5ab-b512-452c-9a77-84cda1279e59",
                "storageProfile": {
                    "imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest", "exactVersion": "130.3.20240717"},
                    "osDisk": {
                        "osType": "Linux",
                        "name": "cp-0_OSDisk",
                        "createOption": "FromImage",
                        "caching": "ReadWrite",
                        "managedDisk": {"storageAccountType": "Premium_LRS", "id": format!("{RG}/providers/Microsoft.Compute/disks/cp-0_OSDisk")},
                        "deleteOption": "Delete",
                        "diskSizeGB": 128
                    },
                    "dataDisks": [{
                        "lun": 0, "name": "cp-0_etcddisk", "createOption": "Empty", "caching": "None",
                        "writeAcceleratorEnabled": false, "toBeDetached": false,
                        "managedDisk": {"storageAccountType": "PremiumV2_LRS", "id": format!("{RG}/providers/Microsoft.Compute/disks/cp-0_etcddisk")},
                        "deleteOption": "Delete", "diskSizeGB": 256
                    }],
                    "diskControllerType": "SCSI"
                },
                "osProfile": {
                    "computerName": "cp-0",
                    "adminUsername": "capi",
                    "linuxConfiguration": {
                        "disablePasswordAuthentication": true,
                        "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]},
                        "provisionVMAgent": true,
                        "patchSettings": {"patchMode": "ImageDefault", "assessmentMode": "ImageDefault"}
                    },
                    "secrets": [],
                    "allowExtensionOperations": true,
                    "requireGuestProvisionSignal": true
                },
                "networkProfile": {"networkInterfaces": [{"id": format!("{RG}/providers/Microsoft.Network/networkInterfaces/cp-0-nic"), "properties": {"primary": true}}]},
                "priority": "Regular",
                "instanceView": {
                    "computerName": "cp-0",
                    "osName": "ubuntu",
                    "osVersion": "22.04",
                    "vmAgent": {"vmAgentVersion": "2.11.1.4", "statuses": []},
                    "hyperVGeneration": "V1",
                    "statuses": [
                        {"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Provisioning succeeded", "time": "2024-12-13T00:38:33.6197886+00:00"},
                        {"code": "PowerState/deallocated", "level": "Info", "displayStatus": "VM deallocated"}
                    ]
                },
                "timeCreated": "2024-12-13T00:37:56.838514+00:00"
            }
        })
    }

    #[test]
    fn an_expanded_answer_is_read_with_its_instance_view() {
        let answer = expanded_answer();
        let machine: VirtualMachine = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &machine);
        let identity = machine.identity.unwrap();
        assert_eq!(
            identity.identity_type,
            Some(IdentityType::SystemAssignedUserAssigned)
        );
        // Azure's spelling of the key does not matter.
        let key = format!("{RG}/providers/microsoft.managedidentity/userassignedidentities/CP")
            .parse()
            .unwrap();
        let assigned = &identity.user_assigned_identities.unwrap()[&key];
        assert_eq!(
            assigned.client_id.as_deref(),
            Some("2b0b6a9e-0000-4000-8000-000000000003")
        );
        let properties = machine.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        let storage = properties.storage_profile.unwrap();
        assert_eq!(
            storage.image_reference.unwrap().exact_version.as_deref(),
            Some("130.3.20240717")
        );
        let os_disk = storage.os_disk.unwrap();
        assert_eq!(os_disk.delete_option, Some(DeleteOption::Delete));
        assert_eq!(os_disk.managed_disk.unwrap().id.unwrap().name(), "cp-0_OSDisk");
        let data = &storage.data_disks.unwrap()[0];
        assert_eq!(
            (data.lun, data.caching.clone()),
            (Some(0), Some(CachingType::None))
        );
        assert_eq!(
            data.managed_disk.as_ref().unwrap().storage_account_type,
            Some(StorageAccountType::PremiumV2Lrs)
        );
        let view = properties.instance_view.unwrap();
        assert_eq!(view.power_state(), Some("deallocated"));
        assert_eq!(view.hyper_v_generation, Some(HyperVGeneration::V1));
        let plan = machine.plan.unwrap();
        assert_eq!(plan.publisher.as_deref(), Some("kinvolk"));
        let linux = properties.os_profile.unwrap().linux_configuration.unwrap();
        assert_eq!(linux.provision_vm_agent, Some(true));
        assert_eq!(properties.priority, Some(Priority::Regular));
    }

    #[test]
    fn images_are_named_four_ways() {
        let gallery =
            format!("{RG}/providers/Microsoft.Compute/galleries/capz/images/ubuntu/versions/1.33.1");
        let answer = json!([
            {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "130.3.20240717"},
            {"id": gallery},
            {"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.1"},
            {"sharedGalleryImageId": "/SharedGalleries/0000-capz/Images/ubuntu/Versions/latest"}
        ]);
        let images: Vec<ImageReference> = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &images);
        assert_eq!(images[0].sku.as_deref(), Some("ubuntu-2204-gen1"));
        assert_eq!(
            images[1].id.as_ref().unwrap().resource_type(),
            "Microsoft.Compute/galleries/images/versions"
        );
        assert!(
            images[2]
                .community_gallery_image_id
                .as_deref()
                .unwrap()
                .ends_with("/1.33.1")
        );
        assert!(
            images[3]
                .shared_gallery_image_id
                .as_deref()
                .unwrap()
                .starts_with("/SharedGalleries/")
        );
    }

    #[test]
    fn unknown_values_are_kept_and_a_machine_without_a_power_state_says_so() {
        let answer = json!({
            "properties": {
                "provisioningState": "Migrating",
                "priority": "Low",
                "securityProfile": {"securityType": "ConfidentialVMv2", "uefiSettings": {"secureBootEnabled": true, "vTpmEnabled": true}},
                "storageProfile": {"osDisk": {"caching": "WriteThrough", "diffDiskSettings": {"option": "Local", "placement": "FutureDisk"}}},
                "instanceView": {"statuses": [{"code": "ProvisioningState/creating"}]}
            }
        });
        let machine: VirtualMachine = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &machine);
        let properties = machine.properties.unwrap();
        assert_eq!(
            properties.provisioning_state,
            Some(ProvisioningState::Other("Migrating".to_owned()))
        );
        assert_eq!(properties.priority, Some(Priority::Other("Low".to_owned())));
        let security = properties.security_profile.unwrap();
        assert_eq!(security.security_type.unwrap().as_str(), "ConfidentialVMv2");
        assert_eq!(security.uefi_settings.unwrap().v_tpm_enabled, Some(true));
        let os_disk = properties.storage_profile.unwrap().os_disk.unwrap();
        assert_eq!(os_disk.caching.unwrap().as_str(), "WriteThrough");
        assert_eq!(
            os_disk.diff_disk_settings.unwrap().placement.unwrap().as_str(),
            "FutureDisk"
        );
        assert_eq!(properties.instance_view.unwrap().power_state(), None);
    }

    fn desired_machine(identity: &str, nic: &str) -> VirtualMachine {
        VirtualMachine {
            location: Some("westus2".parse().unwrap()),
            zones: Some(vec!["1".to_owned()]),
            identity: Some(ManagedServiceIdentity {
                identity_type: Some(IdentityType::UserAssigned),
                user_assigned_identities: Some(HashMap::from([(
                    identity.parse().unwrap(),
                    AssignedIdentity::default(),
                )])),
                ..ManagedServiceIdentity::default()
            }),
            properties: Some(VirtualMachineProperties {
                hardware_profile: Some(HardwareProfile {
                    vm_size: Some("Standard_D2s_v3".to_owned()),
                }),
                storage_profile: Some(StorageProfile {
                    image_reference: Some(ImageReference {
                        community_gallery_image_id: Some(
                            "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.1".to_owned(),
                        ),
                        ..ImageReference::default()
                    }),
                    os_disk: Some(OsDisk {
                        name: Some("cp-0_OSDisk".to_owned()),
                        os_type: Some(OperatingSystemType::Linux),
                        create_option: Some(DiskCreateOption::FromImage),
                        caching: Some(CachingType::ReadWrite),
                        disk_size_gb: Some(128),
                        managed_disk: Some(ManagedDiskParameters {
                            storage_account_type: Some(StorageAccountType::PremiumLrs),
                            ..ManagedDiskParameters::default()
                        }),
                        delete_option: Some(DeleteOption::Delete),
                        ..OsDisk::default()
                    }),
                    data_disks: Some(vec![DataDisk {
                        lun: Some(0),
                        name: Some("cp-0_etcddisk".to_owned()),
                        create_option: Some(DiskCreateOption::Empty),
                        disk_size_gb: Some(256),
                        ..DataDisk::default()
                    }]),
                }),
                os_profile: Some(OsProfile {
                    computer_name: Some("cp-0".to_owned()),
                    admin_username: Some("capi".to_owned()),
                    custom_data: Some(Secret::new("I2Nsb3VkLWNvbmZpZwo=".to_owned())),
                    linux_configuration: Some(LinuxConfiguration {
                        disable_password_authentication: Some(true),
                        ssh: Some(SshConfiguration {
                            public_keys: Some(vec![SshPublicKey {
                                path: Some("/home/capi/.ssh/authorized_keys".to_owned()),
                                key_data: Some("ssh-ed25519 AAAA".to_owned()),
                            }]),
                        }),
                        ..LinuxConfiguration::default()
                    }),
                    ..OsProfile::default()
                }),
                network_profile: Some(NetworkProfile {
                    network_interfaces: Some(vec![NetworkInterfaceReference {
                        id: nic.parse().unwrap(),
                        properties: Some(NetworkInterfaceReferenceProperties {
                            primary: Some(true),
                            delete_option: None,
                        }),
                    }]),
                }),
                ..VirtualMachineProperties::default()
            }),
            ..VirtualMachine::default()
        }
    }

    #[test]
    fn a_desired_machine_sends_what_it_sets_and_no_read_only_field() {
        let identity = format!("{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/cp");
        let nic = format!("{RG}/providers/Microsoft.Network/networkInterfaces/cp-0-nic");
        let desired = desired_machine(&identity, &nic);
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "zones": ["1"],
                "identity": {"type": "UserAssigned", "userAssignedIdentities": {identity: {}}},
                "properties": {
                    "hardwareProfile": {"vmSize": "Standard_D2s_v3"},
                    "storageProfile": {
                        "imageReference": {"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.1"},
                        "osDisk": {
                            "name": "cp-0_OSDisk", "osType": "Linux", "createOption": "FromImage",
                            "caching": "ReadWrite", "diskSizeGB": 128,
                            "managedDisk": {"storageAccountType": "Premium_LRS"},
                            "deleteOption": "Delete"
                        },
                        "dataDisks": [{"lun": 0, "name": "cp-0_etcddisk", "createOption": "Empty", "diskSizeGB": 256}]
                    },
                    "osProfile": {
                        "computerName": "cp-0",
                        "adminUsername": "capi",
                        "customData": "I2Nsb3VkLWNvbmZpZwo=",
                        "linuxConfiguration": {
                            "disablePasswordAuthentication": true,
                            "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}
                        }
                    },
                    "networkProfile": {"networkInterfaces": [{"id": nic, "properties": {"primary": true}}]}
                }
            })
        );
        assert!(
            !format!("{desired:?}").contains("I2Nsb3Vk"),
            "custom data in Debug output"
        );
    }
}
