//! What a machine is made of, whether a virtual machine of an AzureMachine or the model of an
//! AzureMachinePool's scale set: both specs hold the same VM profile (`VmProfile`) and
//! identities, so both bodies are built here from them.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use capz_api::common::compute::{
    BootDiagnosticsStorageAccountType, CachingType as SpecCaching, DataDisk as SpecDataDisk, Diagnostics,
    ManagedDiskParameters as SpecManagedDisk, SecurityProfile as SpecSecurity,
    SecurityType as SpecSecurityType, SpotEvictionPolicy, VmIdentity, VmIdentityProfile, VmProfile,
};
use capz_azure::ResourceId;
use capz_azure::models::compute::{
    AssignedIdentity, BillingProfile, BootDiagnostics, CachingType, DataDisk, DiagnosticsProfile,
    DiffDiskOption, DiffDiskPlacement, DiffDiskSettings, DiskCreateOption, EvictionPolicy, IdentityType,
    LinuxConfiguration, ManagedDiskParameters, ManagedServiceIdentity, OperatingSystemType, OsDisk,
    OsProfile, Priority, SecurityProfile, SecurityType, SshConfiguration, SshPublicKey, StorageAccountType,
    StorageProfile, UefiSettings, WindowsConfiguration,
};
use capz_azure::models::{Secret, SubResource};
use capz_kit::conditions::Reason;
use capz_kit::policy::{Category, Classify};

use crate::disk::{data_disk_name, os_disk_name};
pub(crate) use crate::image::windows;
use crate::image::{ImageError, ResolvedImage};

/// The admin user of every machine.
pub const ADMIN_USER: &str = "capi";

/// Why a machine's body cannot be made from its spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MachineSpecError {
    /// The image cannot be named.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A field holds what Azure cannot take.
    #[error("{field}: Invalid value: {message}")]
    Invalid {
        /// The field path.
        field: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The system's secure random source failed, so no admin password could be made.
    #[error("no admin password could be made: the system's random source failed")]
    NoRandomness,
}

impl Classify for MachineSpecError {
    fn category(&self) -> Category {
        match self {
            Self::NoRandomness => Category::Transient,
            Self::Image(_) | Self::Invalid { .. } => Category::InvalidInput,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::NoRandomness => Reason::RANDOM_SOURCE_FAILED,
            Self::Image(_) | Self::Invalid { .. } => Reason::INVALID_CONFIGURATION,
        }
    }
}

/// The error for `field` holding what Azure cannot take, and why.
pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> MachineSpecError {
    MachineSpecError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// Where the VM profile's fields are in the object, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paths {
    /// The VM profile's own path: `spec` of an AzureMachine, `spec.template` of a pool.
    pub(crate) vm: &'static str,
}

impl Paths {
    /// An AzureMachine's.
    pub(crate) const MACHINE: Self = Self { vm: "spec" };
    /// An AzureMachinePool's.
    pub(crate) const POOL: Self = Self { vm: "spec.template" };
}

fn storage_type(name: &str) -> StorageAccountType {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .unwrap_or_else(|_| StorageAccountType::Other(name.to_owned()))
}

fn caching(caching: SpecCaching) -> CachingType {
    match caching {
        SpecCaching::None => CachingType::None,
        SpecCaching::ReadOnly => CachingType::ReadOnly,
        SpecCaching::ReadWrite => CachingType::ReadWrite,
    }
}

fn managed_disk(
    disk: Option<&SpecManagedDisk>,
    paths: Paths,
) -> Result<Option<ManagedDiskParameters>, MachineSpecError> {
    let Some(disk) = disk else {
        return Ok(None);
    };
    let encryption = match disk
        .disk_encryption_set
        .as_ref()
        .and_then(|set| set.id.as_deref())
    {
        Some(id) => Some(SubResource::from(id.parse::<ResourceId>().map_err(|err| {
            invalid(
                format!("{}.*.managedDisk.diskEncryptionSet.id", paths.vm),
                format!("{id:?}: {err}"),
            )
        })?)),
        None => None,
    };
    Ok(Some(ManagedDiskParameters {
        id: None,
        storage_account_type: disk.storage_account_type.as_deref().map(storage_type),
        disk_encryption_set: encryption,
    }))
}

fn size_gb(size: Option<i32>, field: String) -> Result<Option<u32>, MachineSpecError> {
    size.map(|size| u32::try_from(size).map_err(|_| invalid(field, format!("{size}: must be positive"))))
        .transpose()
}

/// The image and disks of a machine, or of every instance of a scale set (`name: None`: disks
/// unnamed, as each instance gets its own).
pub(crate) fn storage_profile(
    name: Option<&str>,
    vm: &VmProfile,
    image: &ResolvedImage,
    paths: Paths,
) -> Result<StorageProfile, MachineSpecError> {
    let disk = &vm.os_disk;
    let ephemeral = disk.diff_disk_settings.as_ref().map(|settings| DiffDiskSettings {
        option: Some(DiffDiskOption::Local),
        placement: settings.placement.map(|placement| match placement {
            capz_api::common::compute::DiffDiskPlacement::CacheDisk => DiffDiskPlacement::CacheDisk,
            capz_api::common::compute::DiffDiskPlacement::NvmeDisk => DiffDiskPlacement::NvmeDisk,
            capz_api::common::compute::DiffDiskPlacement::ResourceDisk => DiffDiskPlacement::ResourceDisk,
        }),
    });
    let os_disk = OsDisk {
        name: name.map(os_disk_name),
        os_type: Some(if windows(vm) {
            OperatingSystemType::Windows
        } else {
            OperatingSystemType::Linux
        }),
        create_option: Some(DiskCreateOption::FromImage),
        caching: disk.caching_type.map(caching),
        disk_size_gb: size_gb(disk.disk_size_gb, format!("{}.osDisk.diskSizeGB", paths.vm))?,
        managed_disk: managed_disk(disk.managed_disk.as_ref(), paths)?,
        diff_disk_settings: ephemeral,
        delete_option: None,
    };
    let data_disks = vm
        .data_disks
        .iter()
        .flatten()
        .map(|disk| data_disk(name, disk, paths))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(StorageProfile {
        image_reference: Some(image.reference.clone()),
        os_disk: Some(os_disk),
        data_disks: (!data_disks.is_empty()).then_some(data_disks),
    })
}

fn data_disk(machine: Option<&str>, disk: &SpecDataDisk, paths: Paths) -> Result<DataDisk, MachineSpecError> {
    let lun = disk
        .lun
        .map(|lun| {
            u32::try_from(lun).map_err(|_| {
                invalid(
                    format!("{}.dataDisks[].lun", paths.vm),
                    format!("{lun}: must be 0 to 63"),
                )
            })
        })
        .transpose()?;
    Ok(DataDisk {
        lun,
        name: machine.map(|machine| data_disk_name(machine, &disk.name_suffix)),
        create_option: Some(DiskCreateOption::Empty),
        caching: disk.caching_type.map(caching),
        disk_size_gb: size_gb(
            Some(disk.disk_size_gb),
            format!("{}.dataDisks[].diskSizeGB", paths.vm),
        )?,
        managed_disk: managed_disk(disk.managed_disk.as_ref(), paths)?,
        delete_option: None,
    })
}

/// The OpenSSH line of the spec's base64-encoded key.
fn ssh_key(vm: &VmProfile, paths: Paths) -> Result<String, MachineSpecError> {
    let field = || format!("{}.sshPublicKey", paths.vm);
    let encoded = vm
        .ssh_public_key
        .as_deref()
        .filter(|key| !key.is_empty())
        .ok_or_else(|| {
            invalid(
                field(),
                "empty: set a base64-encoded OpenSSH public key (the admission webhook generates one)",
            )
        })?;
    let bytes = STANDARD
        .decode(encoded.trim())
        .map_err(|_| invalid(field(), "not base64: encode the public key line with base64 -w0"))?;
    let line = String::from_utf8(bytes)
        .map_err(|_| invalid(field(), "does not decode to an OpenSSH public key line"))?;
    Ok(line.trim().to_owned())
}

/// The guest's name, admin account and bootstrap data; a scale set's instances take the name
/// as their prefix.
pub(crate) fn os_profile(
    name: &str,
    vm: &VmProfile,
    custom_data: Secret,
    allow_extensions: bool,
    paths: Paths,
) -> Result<OsProfile, MachineSpecError> {
    let profile = OsProfile {
        computer_name: Some(name.to_owned()),
        admin_username: Some(ADMIN_USER.to_owned()),
        custom_data: Some(custom_data),
        allow_extension_operations: Some(allow_extensions),
        ..OsProfile::default()
    };
    if windows(vm) {
        // Azure wants a password for a Windows admin; cloudbase-init replaces it at first boot,
        // and access is by the SSH key, so this one is never kept.
        return Ok(OsProfile {
            admin_password: Some(random_password().ok_or(MachineSpecError::NoRandomness)?),
            windows_configuration: Some(WindowsConfiguration {
                enable_automatic_updates: Some(false),
                provision_vm_agent: None,
            }),
            ..profile
        });
    }
    Ok(OsProfile {
        linux_configuration: Some(LinuxConfiguration {
            disable_password_authentication: Some(true),
            ssh: Some(SshConfiguration {
                public_keys: Some(vec![SshPublicKey {
                    path: Some(format!("/home/{ADMIN_USER}/.ssh/authorized_keys")),
                    key_data: Some(ssh_key(vm, paths)?),
                }]),
            }),
            provision_vm_agent: None,
        }),
        ..profile
    })
}

/// A password Azure's complexity rules accept (upper and lower case, a digit and a symbol),
/// 64 characters long, from the system's secure random source.
fn random_password() -> Option<Secret> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0_u8; 60];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).ok()?;
    let random: String = bytes
        .iter()
        .map(|byte| char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]))
        .collect();
    Some(Secret::new(format!("Aa1!{random}")))
}

/// The managed identities a machine, or every instance of a scale set, runs as.
pub(crate) fn identity(
    identities: &VmIdentityProfile,
) -> Result<Option<ManagedServiceIdentity>, MachineSpecError> {
    match identities.identity.unwrap_or_default() {
        VmIdentity::None => Ok(None),
        VmIdentity::SystemAssigned => Ok(Some(ManagedServiceIdentity {
            identity_type: Some(IdentityType::SystemAssigned),
            ..ManagedServiceIdentity::default()
        })),
        VmIdentity::UserAssigned => {
            let identities = identities
                .user_assigned_identities
                .iter()
                .flatten()
                .map(|identity| {
                    let id = identity.provider_id.trim_start_matches("azure://");
                    id.parse::<ResourceId>()
                        .map(|id| (id, AssignedIdentity::default()))
                        .map_err(|err| {
                            invalid(
                                "spec.userAssignedIdentities[].providerID",
                                format!("{id:?}: {err}"),
                            )
                        })
                })
                .collect::<Result<HashMap<_, _>, _>>()?;
            if identities.is_empty() {
                return Err(invalid(
                    "spec.userAssignedIdentities",
                    "empty: identity UserAssigned needs at least one identity",
                ));
            }
            Ok(Some(ManagedServiceIdentity {
                identity_type: Some(IdentityType::UserAssigned),
                user_assigned_identities: Some(identities),
                ..ManagedServiceIdentity::default()
            }))
        }
    }
}

/// How a spot machine is bought and taken back.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Spot {
    pub(crate) priority: Option<Priority>,
    pub(crate) eviction_policy: Option<EvictionPolicy>,
    pub(crate) billing_profile: Option<BillingProfile>,
}

/// The spot settings; all empty for a machine that is not spot.
pub(crate) fn spot(vm: &VmProfile, paths: Paths) -> Result<Spot, MachineSpecError> {
    let Some(spot) = vm.spot_vm_options.as_ref() else {
        return Ok(Spot::default());
    };
    let max_price = spot
        .max_price
        .as_ref()
        .map(|price| {
            price.to_string().parse::<f64>().map_err(|_| {
                invalid(
                    format!("{}.spotVMOptions.maxPrice", paths.vm),
                    format!("{price}: a price in US dollars such as 0.05, or -1"),
                )
            })
        })
        .transpose()?;
    Ok(Spot {
        priority: Some(Priority::Spot),
        eviction_policy: Some(match spot.eviction_policy {
            Some(SpotEvictionPolicy::Delete) => EvictionPolicy::Delete,
            Some(SpotEvictionPolicy::Deallocate) | None => EvictionPolicy::Deallocate,
        }),
        billing_profile: max_price.map(|price| BillingProfile {
            max_price: Some(price),
        }),
    })
}

pub(crate) fn security_profile(security: &SpecSecurity) -> SecurityProfile {
    SecurityProfile {
        security_type: security.security_type.map(|kind| match kind {
            SpecSecurityType::TrustedLaunch => SecurityType::TrustedLaunch,
            SpecSecurityType::ConfidentialVM => SecurityType::ConfidentialVm,
        }),
        uefi_settings: security.uefi_settings.as_ref().map(|uefi| UefiSettings {
            secure_boot_enabled: uefi.secure_boot_enabled,
            v_tpm_enabled: uefi.v_tpm_enabled,
        }),
        encryption_at_host: security.encryption_at_host,
    }
}

pub(crate) fn diagnostics_profile(diagnostics: &Diagnostics) -> Option<DiagnosticsProfile> {
    let boot = diagnostics.boot.as_ref()?;
    let boot_diagnostics = match boot.storage_account_type {
        BootDiagnosticsStorageAccountType::Managed => BootDiagnostics {
            enabled: Some(true),
            storage_uri: None,
        },
        BootDiagnosticsStorageAccountType::UserManaged => BootDiagnostics {
            enabled: Some(true),
            storage_uri: boot
                .user_managed
                .as_ref()
                .map(|user| user.storage_account_uri.clone()),
        },
        BootDiagnosticsStorageAccountType::Disabled => BootDiagnostics {
            enabled: Some(false),
            storage_uri: None,
        },
    };
    Some(DiagnosticsProfile {
        boot_diagnostics: Some(boot_diagnostics),
    })
}
