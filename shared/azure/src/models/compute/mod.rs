//! Microsoft.Compute: virtual machines, their extensions and managed disks, availability sets,
//! and virtual machine scale sets.
//!
//! Virtual machines, their extensions, scale sets and availability sets follow the compute api-version [`API_VERSION`]; managed
//! disks are versioned on their own (see [`Disk`]).

mod availability_set;
mod disk;
mod scale_set;
mod virtual_machine;
mod virtual_machine_extension;

pub use availability_set::{AvailabilitySet, AvailabilitySetProperties, AvailabilitySetSkuName};
pub use disk::{
    CreationData, Disk, DiskCreateOption, DiskProperties, DiskState, HyperVGeneration, OperatingSystemType,
    StorageAccountType,
};
pub use scale_set::{
    InstanceExtension, InstanceExtensionProperties, InstanceOsProfile, OrchestrationMode, ScaleInPolicy,
    ScaleInRule, ScaleSetExtension, ScaleSetExtensionProfile, ScaleSetExtensionProperties, ScaleSetInstance,
    ScaleSetInstanceProperties, ScaleSetIpConfiguration, ScaleSetIpConfigurationProperties,
    ScaleSetNetworkInterface, ScaleSetNetworkInterfaceProperties, ScaleSetNetworkProfile, ScaleSetOsProfile,
    ScaleSetProperties, ScaleSetSku, ScaleSetVmProfile, UpgradeMode, UpgradePolicy, VirtualMachineScaleSet,
};
pub use virtual_machine::{
    AssignedIdentity, BillingProfile, BootDiagnostics, CachingType, DataDisk, DeleteOption,
    DiagnosticsProfile, DiffDiskOption, DiffDiskPlacement, DiffDiskSettings, EvictionPolicy, HardwareProfile,
    IdentityType, ImageReference, InstanceView, InstanceViewStatus, LinuxConfiguration,
    ManagedDiskParameters, ManagedServiceIdentity, NetworkInterfaceReference,
    NetworkInterfaceReferenceProperties, NetworkProfile, OsDisk, OsProfile, Plan, Priority, SecurityProfile,
    SecurityType, SshConfiguration, SshPublicKey, StorageProfile, UefiSettings, VirtualMachine,
    VirtualMachineProperties, WindowsConfiguration,
};
pub use virtual_machine_extension::{VirtualMachineExtension, VirtualMachineExtensionProperties};

use crate::id::ApiVersion;

/// The api-version of virtual machines, their extensions, scale sets and availability sets.
pub const API_VERSION: ApiVersion = ApiVersion::new("2024-07-01");
