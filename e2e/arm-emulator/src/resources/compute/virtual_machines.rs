//! Virtual machines. A machine needs a known size, network interfaces of its own in its location
//! and an image that exists; it creates its OS disk (and its empty data disks) as managed disks
//! attached to it, and when deleted takes along or releases its disks and interfaces as their
//! `deleteOption`s say. Regional vCPU quotas apply per VM family. Custom data and the admin
//! password are kept but never answered. The power actions (`powerOff`, `deallocate`, `start`,
//! `restart`) show their transition while their operation runs and the power state it leads to
//! once it ends.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::disks::{self, NewDisk};
use super::images::{self, Os};
use super::skus::{self, VmSize};
use super::{API_VERSIONS, COMPUTE, MACHINE_NAMES, availability_sets, document, now, scale_sets, zones};
use crate::config::DEFAULT_TENANT;
use crate::error::ArmError;
use crate::resources::{
    self, Act, Acted, Action, Catalogue, Expansion, Hooks, Lookup, Lro, NO_HOOKS, Prepare, ResourceType,
    fields,
};
use crate::state::State;

pub(crate) static VIRTUAL_MACHINE: ResourceType = ResourceType {
    since: &[
        ("storageProfile.osDisk.deleteOption", "2021-03-01"),
        ("storageProfile.dataDisks.deleteOption", "2021-03-01"),
        (
            "networkProfile.networkInterfaces.properties.deleteOption",
            "2021-03-01",
        ),
        (
            "osProfile.linuxConfiguration.patchSettings.assessmentMode",
            "2021-03-01",
        ),
        (
            "osProfile.windowsConfiguration.patchSettings.assessmentMode",
            "2021-03-01",
        ),
        ("timeCreated", "2021-11-01"),
    ],
    shown_when_provisioned: &[
        "storageProfile.osDisk.name",
        "storageProfile.osDisk.managedDisk.id",
    ],
    naming: &MACHINE_NAMES,
    actions: &[
        Action {
            name: "powerOff",
            run: |act| power(act, Some("skipShutdown"), "stopping"),
        },
        Action {
            name: "deallocate",
            run: |act| power(act, Some("hibernate"), "deallocating"),
        },
        Action {
            name: "start",
            run: |act| power(act, None, "starting"),
        },
        Action {
            name: "restart",
            run: |act| power(act, None, "starting"),
        },
    ],
    hooks: Hooks {
        secrets: &[
            "osProfile.customData",
            "osProfile.adminPassword",
            "userData",
            scale_sets::RUNS,
            scale_sets::FAILS,
            scale_sets::POWER,
            scale_sets::LEAVING,
        ],
        on_settled: Some(settle_power),
        on_deleted: Some(release),
        expand: Some(Expansion::instance_view(instance_view)),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/virtualMachines",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_machine,
    )
};

/// `GET .../virtualMachines/{vm}/instanceView`.
pub(crate) static INSTANCE_VIEW: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachines/instanceView",
    api_versions: API_VERSIONS,
    entry: None,
    collection: Some(instance_view_of),
};

/// User-assigned identities; until the emulator serves them, their ids are taken on trust.
const USER_ASSIGNED_IDENTITIES: &str = "Microsoft.ManagedIdentity/userAssignedIdentities";

/// The longest custom data Azure accepts, in base64 characters.
const MAX_CUSTOM_DATA: usize = 87_380;

/// Fills what `target` lacks from `defaults`, object by object.
pub(crate) fn fill(target: &mut Map<String, Value>, defaults: Value) {
    let Value::Object(defaults) = defaults else {
        return;
    };
    for (key, default) in defaults {
        match target.get_mut(&key) {
            Some(Value::Object(inner)) if default.is_object() => fill(inner, default),
            Some(value) if !value.is_null() => {}
            _ => {
                target.insert(key, default);
            }
        }
    }
}

/// An object property of a request, empty when absent.
fn object_or_empty(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Map<String, Value>, ArmError> {
    Ok(fields::object(object, key, path)?.cloned().unwrap_or_default())
}

fn is_delete(option: Option<&Value>) -> bool {
    option
        .and_then(Value::as_str)
        .is_some_and(|option| option.eq_ignore_ascii_case("Delete"))
}

fn prepare_machine(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let size = machine_size(prepare)?;
    let zones = zones(prepare)?;
    if zones.len() > 1 {
        return Err(ArmError::invalid_parameter(
            "zones",
            "A virtual machine is placed in one zone: 'zones' may name one zone only.",
        ));
    }
    check_restrictions(prepare, size, &zones)?;
    check_quota(prepare, size, 1)?;
    // A new machine in a location or zone without room is accepted, and its creation fails.
    if prepare.existing.is_none() && !scale_sets::fits(prepare, size, zones.first().map(String::as_str), 1) {
        prepare.failure = Some(scale_sets::allocation_failure(
            size,
            zones.first().map(String::as_str),
            prepare.location,
        ));
    }
    network(prepare, size)?;
    availability_set(prepare, &zones)?;
    // Before the storage profile is rebuilt: the OS disk's security profile names the encryption.
    security(prepare, size)?;
    let os = storage(prepare, size, &zones)?;
    os_profile(prepare, os)?;
    identity(prepare)?;
    keep_power(prepare)?;
    prepare.keep("vmId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.keep("timeCreated", || json!(now()))
}

fn machine_size(prepare: &mut Prepare<'_>) -> Result<&'static VmSize, ArmError> {
    let location = prepare.location;
    let hardware = fields::object(prepare.properties()?, "hardwareProfile", "properties")?
        .ok_or_else(|| fields::missing("properties.hardwareProfile.vmSize"))?;
    let name = fields::required_string(hardware, "vmSize", "properties.hardwareProfile")?;
    skus::find(name).ok_or_else(|| size_not_available(name, location))
}

/// A size the emulator does not know, refused as Azure refuses a size without capacity.
pub(super) fn size_not_available(name: &str, location: &str) -> ArmError {
    ArmError::new(
        StatusCode::CONFLICT,
        "SkuNotAvailable",
        format!(
            "The requested VM size for resource 'Following SKUs have failed for Capacity Restrictions: {name}' is currently not available in location '{location}'. Please try another size or deploy to a different location or different zone. See https://aka.ms/azureskunotavailable for details."
        ),
    )
}

/// The size must not be restricted for the subscription in the machine's location or zone. A
/// machine that keeps its size and zones is not checked again: restrictions bar new placements.
fn check_restrictions(prepare: &Prepare<'_>, size: &VmSize, zones: &[String]) -> Result<(), ArmError> {
    let unchanged = prepare.existing.is_some_and(|existing| {
        let kept_size = existing
            .pointer("/properties/hardwareProfile/vmSize")
            .and_then(Value::as_str);
        let kept_zones = existing["zones"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        kept_size.is_some_and(|kept| kept.eq_ignore_ascii_case(size.name))
            && kept_zones
                .iter()
                .map(Value::as_str)
                .eq(zones.iter().map(|zone| Some(zone.as_str())))
    });
    if unchanged || !skus::restricted(prepare.config, size.name, prepare.location, zones) {
        return Ok(());
    }
    Err(sku_restricted(prepare, zones))
}

/// The size is restricted for the subscription where the resource would go.
pub(super) fn sku_restricted(prepare: &Prepare<'_>, zones: &[String]) -> ArmError {
    ArmError::new(
        StatusCode::CONFLICT,
        "SkuNotAvailable",
        format!(
            "The requested size for resource '{}' is currently not available in location '{}' zones '{}' for subscription '{}'. Please try another size or deploy to a different location or zones. See https://aka.ms/azureskunotavailable for details.",
            prepare.id.to_id(),
            prepare.location,
            zones.join(","),
            prepare.id.subscription.as_deref().unwrap_or_default()
        ),
    )
}

/// The security profile: encryption at host and confidential machines need a size that offers
/// them.
fn security(prepare: &mut Prepare<'_>, size: &VmSize) -> Result<(), ArmError> {
    let properties = prepare.properties()?;
    let profile = properties.get("securityProfile");
    if profile.and_then(|profile| profile.get("encryptionAtHost")) == Some(&Value::Bool(true))
        && !size.encryption_at_host
    {
        return Err(unsupported_by_size(
            size.name,
            "properties.securityProfile.encryptionAtHost",
            "'properties.securityProfile.encryptionAtHost'",
        ));
    }
    let security_type = profile
        .and_then(|profile| profile.get("securityType"))
        .and_then(Value::as_str);
    if !security_type.is_some_and(|kind| kind.eq_ignore_ascii_case("ConfidentialVM"))
        || size.confidential.is_some()
    {
        return Ok(());
    }
    // Azure names the OS disk's encryption type too when the request sets one.
    let encryption = properties
        .get("storageProfile")
        .and_then(|storage| storage.pointer("/osDisk/managedDisk/securityProfile/securityEncryptionType"))
        .and_then(Value::as_str)
        .map(|kind| format!(" and managedDisk.securityProfile.securityEncryptionType set as '{kind}'"))
        .unwrap_or_default();
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        format!(
            "The VM size '{}' is not supported for creation of VMs and Virtual Machine Scale Set with 'ConfidentialVM' security type{encryption}",
            size.name
        ),
    ))
}

/// The configured vCPU quotas of the location must hold `count` machines of the size written
/// (a machine, or a scale set's instances) besides the machines and instances already there;
/// family `cores` stands for all families together.
pub(super) fn check_quota(prepare: &Prepare<'_>, size: &VmSize, count: u32) -> Result<(), ArmError> {
    let subscription = prepare.id.subscription.as_deref().unwrap_or_default();
    let prefix = format!("/subscriptions/{}/", subscription.to_ascii_lowercase());
    let own = prepare.id.key();
    let own_id = prepare.id.to_id();
    let needed = size.vcpus.saturating_mul(count);
    for quota in &prepare.config.quotas {
        let total = quota.family.eq_ignore_ascii_case("cores");
        if !quota.location.eq_ignore_ascii_case(prepare.location)
            || !(total || quota.family.eq_ignore_ascii_case(size.family))
        {
            continue;
        }
        let usage: u32 = prepare
            .state
            .under(&prefix)
            .filter(|(key, stored)| {
                (stored.type_name == VIRTUAL_MACHINE.name || stored.type_name == scale_sets::INSTANCE.name)
                    && *key != own
                    && !key.starts_with(&format!("{own}/"))
            })
            .map(|(_, stored)| stored.body())
            .filter(|body| body["location"].as_str() == Some(prepare.location))
            // A Flexible set's machines are counted as the set's.
            .filter(|body| {
                !body
                    .pointer("/properties/virtualMachineScaleSet/id")
                    .and_then(Value::as_str)
                    .is_some_and(|set| set.eq_ignore_ascii_case(&own_id))
            })
            .filter_map(|body| {
                body.pointer("/properties/hardwareProfile/vmSize")
                    .or_else(|| body.pointer("/sku/name"))
                    .and_then(Value::as_str)
                    .and_then(skus::find)
            })
            .filter(|other| total || other.family.eq_ignore_ascii_case(&quota.family))
            .map(|other| other.vcpus)
            .sum();
        if usage + needed > quota.cores {
            let label = if total {
                "Total Regional Cores".to_owned()
            } else {
                format!("{} Cores", size.family)
            };
            return Err(ArmError::new(
                StatusCode::CONFLICT,
                "OperationNotAllowed",
                format!(
                    "Operation could not be completed as it results in exceeding approved {label} quota. Additional details - Deployment Model: Resource Manager, Location: {}, Current Limit: {}, Current Usage: {usage}, Additional Required: {}, (Minimum) New Limit Required: {}. Submit a request for Quota increase at https://aka.ms/ProdportalCRP/#blade/Microsoft_Azure_Capacity/UsageAndQuota.ReactView by specifying parameters listed in the 'Details' section for deployment to succeed. Please read more about quota limits at https://docs.microsoft.com/en-us/azure/azure-supportability/per-vm-quota-requests",
                    prepare.location,
                    quota.cores,
                    needed,
                    usage + needed
                ),
            ));
        }
    }
    Ok(())
}

/// The referred resource must lie in the machine's location.
fn same_location(prepare: &Prepare<'_>, target: &Value, target_id: &str) -> Result<(), ArmError> {
    if target["location"].as_str() == Some(prepare.location) {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        "InvalidResourceReference",
        format!(
            "Resource {target_id} referenced by resource {} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.",
            prepare.id.to_id()
        ),
    ))
}

/// Network interfaces: at least one, one primary among several, each in the machine's location,
/// used by no other machine, and accelerated only where the size allows.
fn network(prepare: &mut Prepare<'_>, size: &VmSize) -> Result<(), ArmError> {
    let path = "properties.networkProfile";
    let list = format!("{path}.networkInterfaces");
    let profile = fields::object(prepare.properties()?, "networkProfile", "properties")?
        .ok_or_else(|| fields::missing(path))?;
    let interfaces = fields::array(profile, "networkInterfaces", path)?.to_vec();
    if interfaces.is_empty() {
        return Err(ArmError::invalid_parameter(
            &list,
            format!("A virtual machine needs at least one network interface in '{list}'."),
        ));
    }
    if interfaces.len() > size.max_nics {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "NetworkInterfaceCountExceeded",
            format!(
                "The number of network interfaces for virtual machine {} exceeds the maximum of {} allowed for the virtual machine size {}.",
                prepare.id.name(),
                size.max_nics,
                size.name
            ),
        ));
    }
    let own = prepare.id.key();
    let mut primaries = 0;
    for (index, interface) in interfaces.iter().enumerate() {
        let item = format!("{list}[{index}]");
        let interface = interface
            .as_object()
            .ok_or_else(|| fields::wrong_type(&item, "an object"))?;
        let nic_id = fields::required_string(interface, "id", &item)?;
        if let Some(properties) = fields::object(interface, "properties", &item)? {
            fields::one_of(
                properties,
                "deleteOption",
                &format!("{item}.properties"),
                &["Delete", "Detach"],
            )?;
            if properties.get("primary") == Some(&Value::Bool(true)) {
                primaries += 1;
            }
        }
        let nic_key = nic_id.to_ascii_lowercase();
        // A missing interface gets the generic answer of the reference check.
        let Some(nic) = prepare.state.body(&nic_key) else {
            continue;
        };
        same_location(prepare, &nic, nic_id)?;
        let other = prepare.state.referrers_of(&nic_key).find(|referrer| {
            referrer.document != own
                && prepare
                    .state
                    .resources
                    .get(referrer.document)
                    .is_some_and(|stored| stored.type_name == VIRTUAL_MACHINE.name)
        });
        if let Some(crate::state::Referrer { holder, .. }) = other {
            return Err(ArmError::new(
                StatusCode::CONFLICT,
                "NicInUse",
                format!(
                    "Network interface {nic_id} is in use by virtual machine {holder}; a network interface belongs to one virtual machine at a time."
                ),
            ));
        }
        let accelerated = nic.pointer("/properties/enableAcceleratedNetworking") == Some(&Value::Bool(true));
        if accelerated && !size.accelerated_networking {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "VMSizeIsNotPermittedToEnableAcceleratedNetworking",
                format!(
                    "Virtual Machine size {} is not in the allowed list of VM sizes for accelerated networking to be enabled on the VM at index {index} for VM {}. Use a size with the AcceleratedNetworkingEnabled capability.",
                    size.name,
                    prepare.id.to_id()
                ),
            ));
        }
    }
    if interfaces.len() > 1 && primaries != 1 {
        return Err(ArmError::invalid_parameter(
            &list,
            format!(
                "A virtual machine with several network interfaces needs exactly one marked 'primary' in '{list}'."
            ),
        ));
    }
    Ok(())
}

/// An availability set must be in the machine's location, hold machines with managed disks
/// (`Aligned`), and excludes zones.
fn availability_set(prepare: &mut Prepare<'_>, zones: &[String]) -> Result<(), ArmError> {
    let path = "properties.availabilitySet";
    let Some(set_id) = fields::reference(prepare.properties()?, "availabilitySet", "properties")? else {
        return Ok(());
    };
    let set_id = set_id.to_owned();
    if !zones.is_empty() {
        return Err(ArmError::invalid_parameter(
            path,
            format!(
                "A virtual machine is either in an availability set ('{path}') or in a zone ('zones'), not both."
            ),
        ));
    }
    let Some(set) = prepare.state.body(&set_id.to_ascii_lowercase()) else {
        return Ok(());
    };
    same_location(prepare, &set, &set_id)?;
    if set.pointer("/sku/name").and_then(Value::as_str) != Some(availability_sets::ALIGNED) {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            "Addition of a VM with managed disks to non-managed Availability Set or addition of a VM with blob based disks to managed Availability Set is not supported.",
        ));
    }
    Ok(())
}

/// What a machine needs to know to build its disks.
struct DiskContext<'a> {
    machine: String,
    location: &'a str,
    zones: &'a [String],
    /// Where new disks go: the machine's resource group.
    scope: &'a str,
}

impl DiskContext<'_> {
    fn disk_id(&self, name: &str) -> String {
        format!("{}/providers/Microsoft.Compute/disks/{name}", self.scope)
    }
}

/// An existing disk a machine attaches: in its location and free (or already its own).
fn attach_existing(
    prepare: &mut Prepare<'_>,
    disk_id: &str,
    machine: &str,
) -> Result<Option<Value>, ArmError> {
    let Some(disk) = prepare.state.body(&disk_id.to_ascii_lowercase()) else {
        // A missing disk gets the generic answer of the reference check.
        return Ok(None);
    };
    let disk = disk.into_owned();
    same_location(prepare, &disk, disk_id)?;
    if let Some(holder) = disk["managedBy"].as_str()
        && !holder.eq_ignore_ascii_case(machine)
    {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            format!(
                "Disk {} cannot be attached to VM {machine}: it is already attached to VM {holder}. A disk is attached to one VM at a time.",
                disk["name"].as_str().unwrap_or(disk_id)
            ),
        ));
    }
    prepare.companions.push(disks::attached(&disk, machine));
    Ok(Some(disk))
}

/// A new disk must not take the name of one that exists.
fn check_free_name(prepare: &Prepare<'_>, disk_id: &str, name: &str) -> Result<(), ArmError> {
    if !prepare
        .state
        .resources
        .contains_key(disk_id.to_ascii_lowercase().as_str())
    {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::CONFLICT,
        "ConflictingUserInput",
        format!(
            "Disk {name} already exists in resource group {}. Only CreateOption.Attach is supported.",
            prepare.id.resource_group.as_deref().unwrap_or_default()
        ),
    ))
}

/// What a machine booting from an image learns from it.
struct Boot {
    os: Os,
    /// The marketplace version `latest` stood for.
    exact_version: Option<String>,
}

/// The storage profile: the image resolved, the OS disk created from it (or attached), the data
/// disks created or attached, and those no longer listed released. Answers the operating system
/// when the machine boots from an image.
fn storage(prepare: &mut Prepare<'_>, size: &VmSize, zones: &[String]) -> Result<Option<Os>, ArmError> {
    let path = "properties.storageProfile";
    let mut profile = fields::object(prepare.properties()?, "storageProfile", "properties")?
        .cloned()
        .ok_or_else(|| fields::missing(path))?;
    let scope = prepare.id.scope.clone();
    let context = DiskContext {
        machine: prepare.id.to_id(),
        location: prepare.location,
        zones,
        scope: &scope,
    };
    let (os_disk, boot) = os_disk(prepare, &profile, size, &context)?;
    if let Some(exact) = boot.as_ref().and_then(|boot| boot.exact_version.clone())
        && let Some(reference) = profile.get_mut("imageReference").and_then(Value::as_object_mut)
    {
        reference.insert("exactVersion".into(), json!(exact));
    }
    profile.insert("osDisk".into(), Value::Object(os_disk));
    let data_disks = data_disks(prepare, &profile, size, &context)?;
    profile.insert("dataDisks".into(), Value::Array(data_disks));
    prepare
        .properties()?
        .insert("storageProfile".into(), Value::Object(profile));
    Ok(boot.map(|boot| boot.os))
}

/// The OS disk, and what the image it boots from tells.
fn os_disk(
    prepare: &mut Prepare<'_>,
    profile: &Map<String, Value>,
    size: &VmSize,
    context: &DiskContext<'_>,
) -> Result<(Map<String, Value>, Option<Boot>), ArmError> {
    let path = "properties.storageProfile.osDisk";
    let mut disk = object_or_empty(profile, "osDisk", "properties.storageProfile")?;
    let create =
        fields::one_of(&disk, "createOption", path, &["FromImage", "Attach"])?.unwrap_or("FromImage");
    let requested_type = fields::one_of(&disk, "osType", path, &["Linux", "Windows"])?;
    let managed = object_or_empty(&disk, "managedDisk", path)?;
    let storage_type = fields::one_of(
        &managed,
        "storageAccountType",
        &format!("{path}.managedDisk"),
        disks::SKUS,
    )?
    .unwrap_or("Standard_LRS");
    fields::one_of(&disk, "deleteOption", path, &["Delete", "Detach"])?;
    if create == "Attach" {
        attach_os_disk(prepare, &mut disk, requested_type, context)?;
        fill(
            &mut disk,
            json!({ "caching": "ReadWrite", "managedDisk": { "storageAccountType": storage_type }, "deleteOption": "Detach" }),
        );
        return Ok((disk, None));
    }
    let reference = fields::object(profile, "imageReference", "properties.storageProfile")?
        .ok_or_else(|| fields::missing("properties.storageProfile.imageReference"))?;
    let subscription = prepare.id.subscription.as_deref().unwrap_or_default();
    let image = images::resolve(reference, prepare.state, subscription, context.location)?;
    let os = match requested_type {
        Some("Windows") => Os::Windows,
        Some(_) => Os::Linux,
        None => image.os,
    };
    let smallest = image.size_gb.unwrap_or_else(|| os.disk_size_gb());
    let size_gb = fields::integer(&disk, "diskSizeGB", path)?.unwrap_or(smallest);
    if size_gb < smallest {
        return Err(ArmError::invalid_parameter(
            "properties.storageProfile.osDisk.diskSizeGB",
            format!(
                "The specified disk size {size_gb} GB is smaller than the size of the corresponding disk in the VM image: {smallest} GB. This is not allowed. Please choose equal or greater size or do not specify an explicit size."
            ),
        ));
    }
    let ephemeral = disk
        .get("diffDiskSettings")
        .is_some_and(|settings| !settings.is_null());
    if ephemeral && !size.ephemeral_os_disk {
        return Err(unsupported_by_size(
            size.name,
            "properties.storageProfile.osDisk.diffDiskSettings",
            "ephemeral OS disks ('diffDiskSettings')",
        ));
    }
    let (name, kept_id) = os_disk_name(prepare, &disk)?;
    let mut managed = json!({ "storageAccountType": storage_type });
    // An ephemeral OS disk lives on the host: there is no disk resource.
    if !ephemeral {
        let disk_id = if let Some(kept_id) = kept_id {
            kept_id
        } else {
            let disk_id = context.disk_id(&name);
            check_free_name(prepare, &disk_id, &name)?;
            let mut creation = image.source.clone();
            creation["createOption"] = json!("FromImage");
            let new_disk = NewDisk {
                id: disk_id.clone(),
                location: context.location,
                zones: context.zones,
                sku: storage_type,
                size_gb,
                creation,
                os_type: Some((os.name(), image.hyper_v)),
                machine: &context.machine,
            };
            prepare.companions.push(new_disk.document());
            disk_id
        };
        managed["id"] = json!(disk_id);
    }
    disk.insert("name".into(), json!(name));
    disk.insert("osType".into(), json!(os.name()));
    disk.insert("createOption".into(), json!("FromImage"));
    disk.insert("diskSizeGB".into(), json!(size_gb));
    disk.insert("managedDisk".into(), managed);
    fill(
        &mut disk,
        json!({ "caching": "ReadWrite", "deleteOption": "Detach" }),
    );
    let boot = Boot {
        os,
        exact_version: image.exact_version,
    };
    Ok((disk, Some(boot)))
}

/// An OS disk the machine attaches instead of creating it from an image.
fn attach_os_disk(
    prepare: &mut Prepare<'_>,
    disk: &mut Map<String, Value>,
    requested_type: Option<&str>,
    context: &DiskContext<'_>,
) -> Result<(), ArmError> {
    let disk_id = fields::reference(disk, "managedDisk", "properties.storageProfile.osDisk")?
        .ok_or_else(|| fields::missing("properties.storageProfile.osDisk.managedDisk.id"))?
        .to_owned();
    let attached = attach_existing(prepare, &disk_id, &context.machine)?;
    let os_type = requested_type
        .or_else(|| attached.as_ref()?.pointer("/properties/osType")?.as_str())
        .unwrap_or("Linux")
        .to_owned();
    disk.insert("osType".into(), json!(os_type));
    if let Some(attached) = attached {
        disk.insert("name".into(), attached["name"].clone());
        disk.insert("diskSizeGB".into(), attached["properties"]["diskSizeGB"].clone());
    }
    Ok(())
}

/// The OS disk's name, and its id when the machine already has it: a machine keeps its OS disk.
fn os_disk_name(
    prepare: &Prepare<'_>,
    disk: &Map<String, Value>,
) -> Result<(String, Option<String>), ArmError> {
    let requested = fields::string(disk, "name", "properties.storageProfile.osDisk")?;
    let kept = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/storageProfile/osDisk"));
    let Some(kept) = kept else {
        let name = requested.map_or_else(
            || format!("{}_OsDisk_1_{}", prepare.id.name(), uuid::Uuid::new_v4().simple()),
            str::to_owned,
        );
        return Ok((name, None));
    };
    let kept_name = kept["name"].as_str().unwrap_or_default();
    if requested.is_some_and(|requested| !requested.eq_ignore_ascii_case(kept_name)) {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "PropertyChangeNotAllowed",
            "Changing property 'osDisk.name' is not allowed.",
        ));
    }
    let kept_id = kept.pointer("/managedDisk/id").and_then(Value::as_str);
    Ok((kept_name.to_owned(), kept_id.map(str::to_owned)))
}

/// Data disks: empty ones are created, `Attach` takes an existing free disk, disks already
/// attached stay as they are, and disks no longer listed are released.
fn data_disks(
    prepare: &mut Prepare<'_>,
    profile: &Map<String, Value>,
    size: &VmSize,
    context: &DiskContext<'_>,
) -> Result<Vec<Value>, ArmError> {
    let requested = fields::array(profile, "dataDisks", "properties.storageProfile")?.to_vec();
    if requested.len() > size.max_data_disks {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "OperationNotAllowed",
            format!(
                "The maximum number of data disks allowed to be attached to a VM of this size is {}.",
                size.max_data_disks
            ),
        ));
    }
    let current: Vec<Value> = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/storageProfile/dataDisks"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut result: Vec<Value> = Vec::new();
    for (index, disk) in requested.into_iter().enumerate() {
        let item = format!("properties.storageProfile.dataDisks[{index}]");
        let Value::Object(disk) = disk else {
            return Err(fields::wrong_type(&item, "an object"));
        };
        let lun =
            fields::integer(&disk, "lun", &item)?.ok_or_else(|| fields::missing(&format!("{item}.lun")))?;
        if !(0..=63).contains(&lun) || result.iter().any(|other| other["lun"].as_i64() == Some(lun)) {
            return Err(ArmError::invalid_parameter(
                &format!("{item}.lun"),
                format!(
                    "The lun {lun} of '{item}.lun' must lie between 0 and 63 and be unique among the data disks."
                ),
            ));
        }
        let kept = current
            .iter()
            .find(|old| old["lun"].as_i64() == Some(lun) && old.pointer("/managedDisk/id").is_some());
        let placed = DataDisk {
            item: &item,
            index,
            lun,
            kept,
        };
        result.push(data_disk(prepare, disk, &placed, size, context)?);
    }
    for old in &current {
        let Some(old_id) = old.pointer("/managedDisk/id").and_then(Value::as_str) else {
            continue;
        };
        let listed = result.iter().any(|disk| {
            disk.pointer("/managedDisk/id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.eq_ignore_ascii_case(old_id))
        });
        if !listed && let Some(disk) = prepare.state.body(&old_id.to_ascii_lowercase()) {
            prepare.companions.push(disks::detached(&disk));
        }
    }
    Ok(result)
}

/// Where a requested data disk stands among the machine's.
struct DataDisk<'a> {
    /// Its path in the request, for messages.
    item: &'a str,
    index: usize,
    lun: i64,
    /// The disk the machine already has at this lun.
    kept: Option<&'a Value>,
}

fn data_disk(
    prepare: &mut Prepare<'_>,
    mut disk: Map<String, Value>,
    placed: &DataDisk<'_>,
    size: &VmSize,
    context: &DiskContext<'_>,
) -> Result<Value, ArmError> {
    let item = placed.item;
    let create = fields::one_of(&disk, "createOption", item, &["Empty", "Attach"])?
        .ok_or_else(|| fields::missing(&format!("{item}.createOption")))?;
    let managed = object_or_empty(&disk, "managedDisk", item)?;
    let storage_type = fields::one_of(
        &managed,
        "storageAccountType",
        &format!("{item}.managedDisk"),
        disks::SKUS,
    )?
    .unwrap_or("Standard_LRS");
    fields::one_of(&disk, "deleteOption", item, &["Delete", "Detach"])?;
    if storage_type == "UltraSSD_LRS" && !size.ultra_ssd {
        return Err(ArmError::invalid_parameter(
            &format!("{item}.managedDisk.storageAccountType"),
            format!(
                "The VM size {} cannot use UltraSSD_LRS disks ('{item}.managedDisk.storageAccountType').",
                size.name
            ),
        ));
    }
    let (disk_id, name, size_gb) = match (placed.kept, create) {
        (Some(kept), _) => (
            kept.pointer("/managedDisk/id").cloned().unwrap_or_default(),
            kept["name"].clone(),
            kept["diskSizeGB"].clone(),
        ),
        (None, "Attach") => {
            let disk_id = fields::reference(&disk, "managedDisk", item)?
                .ok_or_else(|| fields::missing(&format!("{item}.managedDisk.id")))?
                .to_owned();
            let attached = attach_existing(prepare, &disk_id, &context.machine)?.unwrap_or_default();
            (
                json!(disk_id),
                attached["name"].clone(),
                attached["properties"]["diskSizeGB"].clone(),
            )
        }
        (None, _) => {
            let size_gb = fields::integer(&disk, "diskSizeGB", item)?
                .ok_or_else(|| fields::missing(&format!("{item}.diskSizeGB")))?;
            let name = fields::string(&disk, "name", item)?.map_or_else(
                || {
                    format!(
                        "{}_disk{}_{}",
                        prepare.id.name(),
                        placed.index + 2,
                        uuid::Uuid::new_v4().simple()
                    )
                },
                str::to_owned,
            );
            let disk_id = context.disk_id(&name);
            check_free_name(prepare, &disk_id, &name)?;
            let new_disk = NewDisk {
                id: disk_id.clone(),
                location: context.location,
                zones: context.zones,
                sku: storage_type,
                size_gb,
                creation: json!({ "createOption": "Empty" }),
                os_type: None,
                machine: &context.machine,
            };
            prepare.companions.push(new_disk.document());
            (json!(disk_id), json!(name), json!(size_gb))
        }
    };
    disk.insert("lun".into(), json!(placed.lun));
    disk.insert("name".into(), name);
    disk.insert("diskSizeGB".into(), size_gb);
    disk.insert(
        "managedDisk".into(),
        json!({ "storageAccountType": storage_type, "id": disk_id }),
    );
    fill(
        &mut disk,
        json!({ "caching": "None", "writeAcceleratorEnabled": false, "deleteOption": "Detach", "toBeDetached": false }),
    );
    Ok(Value::Object(disk))
}

/// Azure's rule for admin passwords: 8 to 123 characters, no control characters, and three of
/// upper case, lower case, digit and symbol.
fn check_password(password: &str) -> Result<(), ArmError> {
    let length = password.chars().count();
    let classes = [
        password.chars().any(char::is_uppercase),
        password.chars().any(char::is_lowercase),
        password.chars().any(|c| c.is_ascii_digit()),
        password.chars().any(|c| !c.is_alphanumeric() && !c.is_control()),
    ];
    let strong = classes.iter().filter(|held| **held).count() >= 3;
    if (8..=123).contains(&length) && strong && !password.chars().any(char::is_control) {
        return Ok(());
    }
    Err(ArmError::invalid_parameter(
        "adminPassword",
        "The supplied password must be between 8-123 characters long and must satisfy at least 3 of password complexity requirements from the following:\r\n1) Contains an uppercase character\r\n2) Contains a lowercase character\r\n3) Contains a numeric digit\r\n4) Contains a special character\r\n5) Control characters are not allowed",
    ))
}

/// Windows takes computer names of at most 15 characters, not all digits, without punctuation
/// other than dashes.
fn check_windows_computer_name(name: &str) -> Result<(), ArmError> {
    const FORBIDDEN: &str = "`~!@#$%^&*()=+_[]{}\\|;:.'\",<>/?";
    let valid = name.chars().count() <= 15
        && !name.chars().all(|c| c.is_ascii_digit())
        && !name.chars().any(|c| FORBIDDEN.contains(c));
    if valid {
        return Ok(());
    }
    Err(ArmError::invalid_parameter(
        "properties.osProfile.computerName",
        "Windows computer name cannot be more than 15 characters long, be entirely numeric, or contain the following characters: ` ~ ! @ # $ % ^ & * ( ) = + _ [ ] { } \\ | ; : . ' \" , < > / ?.",
    ))
}

/// Whether `text` is base64, as custom data must be.
fn is_base64(text: &str) -> bool {
    let content = text.trim_end_matches('=');
    text.len().is_multiple_of(4)
        && text.len() - content.len() <= 2
        && content
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/')
}

/// The OS profile of a machine booting from an image (an attached OS disk brings its own).
fn os_profile(prepare: &mut Prepare<'_>, os: Option<Os>) -> Result<(), ArmError> {
    let path = "properties.osProfile";
    let requested = fields::object(prepare.properties()?, "osProfile", "properties")?.cloned();
    let Some(os) = os else {
        if requested.is_some() {
            return Err(ArmError::invalid_parameter(
                path,
                format!("'{path}' is not allowed for a virtual machine whose OS disk is attached."),
            ));
        }
        return Ok(());
    };
    let mut profile = requested.ok_or_else(|| fields::missing(path))?;
    let computer_name = fields::required_string(&profile, "computerName", path)?.to_owned();
    fields::required_string(&profile, "adminUsername", path)?;
    if let Some(custom) = fields::string(&profile, "customData", path)?
        && (custom.len() > MAX_CUSTOM_DATA || !is_base64(custom))
    {
        return Err(ArmError::invalid_parameter(
            "properties.osProfile.customData",
            format!(
                "Custom data in OSProfile must be in Base64 encoding and with a maximum length of {MAX_CUSTOM_DATA} characters (property 'properties.osProfile.customData')."
            ),
        ));
    }
    let password = fields::string(&profile, "adminPassword", path)?;
    if let Some(password) = password {
        check_password(password)?;
    }
    let password = password.is_some();
    match os {
        Os::Linux => {
            let config_path = "properties.osProfile.linuxConfiguration";
            let mut linux = object_or_empty(&profile, "linuxConfiguration", path)?;
            let keys = linux
                .get("ssh")
                .and_then(|ssh| ssh.get("publicKeys"))
                .and_then(Value::as_array)
                .is_some_and(|keys| !keys.is_empty());
            let disabled = linux
                .get("disablePasswordAuthentication")
                .and_then(Value::as_bool)
                .unwrap_or(!password);
            if (disabled && !keys) || (!disabled && !password) {
                return Err(ArmError::invalid_parameter(
                    config_path,
                    format!(
                        "Authentication using either SSH or by user name and password must be enabled in Linux profile ('{config_path}')."
                    ),
                ));
            }
            linux.insert("disablePasswordAuthentication".into(), json!(disabled));
            fill(
                &mut linux,
                json!({ "provisionVMAgent": true, "patchSettings": { "patchMode": "ImageDefault", "assessmentMode": "ImageDefault" } }),
            );
            profile.insert("linuxConfiguration".into(), Value::Object(linux));
        }
        Os::Windows => {
            if !password {
                return Err(fields::missing("properties.osProfile.adminPassword"));
            }
            check_windows_computer_name(&computer_name)?;
            let mut windows = object_or_empty(&profile, "windowsConfiguration", path)?;
            fill(
                &mut windows,
                json!({ "provisionVMAgent": true, "enableAutomaticUpdates": true, "patchSettings": { "patchMode": "AutomaticByOS", "assessmentMode": "ImageDefault" } }),
            );
            profile.insert("windowsConfiguration".into(), Value::Object(windows));
        }
    }
    fill(
        &mut profile,
        json!({ "secrets": [], "allowExtensionOperations": true, "requireGuestProvisionSignal": true }),
    );
    prepare
        .properties()?
        .insert("osProfile".into(), Value::Object(profile));
    Ok(())
}

/// Managed identities: a system-assigned one gets a principal in the subscription's tenant;
/// user-assigned ones show the principal and client ids of their identity resources.
pub(crate) fn identity(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let Some(requested) = fields::object(&prepare.doc, "identity", "")?.cloned() else {
        return Ok(());
    };
    let kind = fields::required_string(&requested, "type", "identity")?;
    let parts: Vec<String> = kind
        .split(',')
        .map(|part| part.trim().to_ascii_lowercase())
        .collect();
    let system = parts.iter().any(|part| part == "systemassigned");
    let user = parts.iter().any(|part| part == "userassigned");
    let understood = parts
        .iter()
        .all(|part| part == "systemassigned" || part == "userassigned");
    if parts == ["none"] {
        prepare.doc.remove("identity");
        return Ok(());
    }
    if !understood {
        return Err(ArmError::invalid_parameter(
            "identity.type",
            format!(
                "The value '{kind}' of 'identity.type' is not valid; it must be one of SystemAssigned, UserAssigned, 'SystemAssigned, UserAssigned', None."
            ),
        ));
    }
    let existing = prepare
        .existing
        .and_then(|existing| existing.get("identity"))
        .cloned();
    let mut identity = Map::new();
    let canonical = match (system, user) {
        (true, true) => "SystemAssigned, UserAssigned",
        (true, false) => "SystemAssigned",
        _ => "UserAssigned",
    };
    identity.insert("type".into(), json!(canonical));
    if system {
        let subscription = prepare.id.subscription.as_deref().unwrap_or_default();
        let tenant = prepare
            .config
            .subscriptions
            .iter()
            .find(|known| known.id.eq_ignore_ascii_case(subscription))
            .map_or(DEFAULT_TENANT, |known| known.tenant.as_str());
        let principal = existing
            .as_ref()
            .and_then(|existing| existing.get("principalId"))
            .cloned()
            .unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()));
        identity.insert("principalId".into(), principal);
        identity.insert("tenantId".into(), json!(tenant));
    }
    if user {
        identity.insert(
            "userAssignedIdentities".into(),
            user_assigned(prepare, &requested, existing.as_ref())?,
        );
    }
    prepare.doc.insert("identity".into(), Value::Object(identity));
    Ok(())
}

fn user_assigned(
    prepare: &Prepare<'_>,
    requested: &Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Value, ArmError> {
    let assigned = fields::object(requested, "userAssignedIdentities", "identity")?
        .filter(|assigned| !assigned.is_empty())
        .ok_or_else(|| fields::missing("identity.userAssignedIdentities"))?;
    let served = resources::find(USER_ASSIGNED_IDENTITIES).is_some();
    let mut result = Map::new();
    for id in assigned.keys() {
        let stored = prepare
            .state
            .resources
            .get(id.to_ascii_lowercase().as_str())
            .filter(|stored| stored.type_name == USER_ASSIGNED_IDENTITIES)
            .map(crate::state::Stored::body);
        if served && stored.is_none() {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "FailedIdentityOperation",
                format!(
                    "Identity operation for resource '{}' failed: the user-assigned identity '{id}' was not found.",
                    prepare.id.to_id()
                ),
            ));
        }
        let kept = existing
            .and_then(|existing| existing.get("userAssignedIdentities"))
            .and_then(Value::as_object)
            .and_then(|kept| kept.iter().find(|(key, _)| key.eq_ignore_ascii_case(id)))
            .map(|(_, value)| value);
        let value = |name: &str| {
            stored
                .as_ref()
                .and_then(|stored| stored.get("properties")?.get(name))
                .or_else(|| kept?.get(name))
                .cloned()
                .unwrap_or_else(|| json!(uuid::Uuid::new_v4().to_string()))
        };
        result.insert(
            id.clone(),
            json!({ "principalId": value("principalId"), "clientId": value("clientId") }),
        );
    }
    Ok(Value::Object(result))
}

/// Takes along or releases the disks and network interfaces of a deleted machine.
fn release(state: &mut State, machine: &Value) {
    scale_sets::left(state, machine);
    let storage = &machine["properties"]["storageProfile"];
    let data = storage["dataDisks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for disk in std::iter::once(&storage["osDisk"]).chain(data) {
        let Some(id) = disk.pointer("/managedDisk/id").and_then(Value::as_str) else {
            continue;
        };
        let key = id.to_ascii_lowercase();
        if is_delete(disk.get("deleteOption")) {
            state.remove_resource(&key);
        } else {
            disks::detach(state, &key);
        }
    }
    let interfaces = machine
        .pointer("/properties/networkProfile/networkInterfaces")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for interface in interfaces {
        if is_delete(interface.pointer("/properties/deleteOption"))
            && let Some(id) = interface["id"].as_str()
        {
            state.remove_resource(&id.to_ascii_lowercase());
        }
    }
}

/// The power states a machine reports, with their display statuses.
const POWER_STATES: &[(&str, &str)] = &[
    ("running", "VM running"),
    ("starting", "VM starting"),
    ("stopping", "VM stopping"),
    ("stopped", "VM stopped"),
    ("deallocating", "VM deallocating"),
    ("deallocated", "VM deallocated"),
];

/// Where a power transition in flight ends.
const TRANSITIONS: &[(&str, &str)] = &[
    ("starting", "running"),
    ("stopping", "stopped"),
    ("deallocating", "deallocated"),
];

/// The power state a machine (or scale set instance) reports, from its provisioning state and
/// the hidden power state its power actions keep: one of [`POWER_STATES`], and its display
/// status. A machine being created is starting, a failed one stopped; a running one being
/// deleted is stopping.
pub(super) fn power_state(properties: &Value) -> (&'static str, &'static str) {
    let provisioning = properties["provisioningState"].as_str().unwrap_or("Succeeded");
    let power = properties
        .get(scale_sets::POWER)
        .and_then(Value::as_str)
        .unwrap_or("running");
    let shown = match (provisioning, power) {
        ("Creating", _) => "starting",
        ("Failed", _) => "stopped",
        ("Deleting", "running") => "stopping",
        (_, power) => power,
    };
    POWER_STATES
        .iter()
        .find(|(state, _)| *state == shown)
        .copied()
        .unwrap_or(POWER_STATES[0])
}

/// `powerOff`, `deallocate`, `start` and `restart`: the machine shows `Updating` and the
/// transition `in_flight` until the operation ends (see [`settle_power`]). `flag` names the
/// boolean query parameter the action accepts (`skipShutdown`, `hibernate`), which changes
/// nothing here: shutdown takes no time, and hibernation is not modelled. A deallocated machine
/// keeps its interfaces and disks; its dynamic public addresses are not released.
fn power(act: &mut Act<'_>, flag: Option<&str>, in_flight: &str) -> Result<Acted, ArmError> {
    if let Some(flag) = flag {
        check_flag(act, flag)?;
    }
    act.doc["properties"]["provisioningState"] = json!("Updating");
    act.doc["properties"][scale_sets::POWER] = json!(in_flight);
    Ok(Acted::Started)
}

/// A boolean query parameter of an action must be `true` or `false` when given.
pub(super) fn check_flag(act: &Act<'_>, name: &str) -> Result<(), ArmError> {
    match act.query(name) {
        Some(value) if !matches!(value.to_ascii_lowercase().as_str(), "true" | "false") => Err(
            ArmError::invalid_parameter(name, format!("'{name}' is true or false.")),
        ),
        _ => Ok(()),
    }
}

/// When an operation on the machine ends, a power transition in flight reaches its end.
fn settle_power(state: &mut State, key: &str, _succeeded: bool) {
    let Some(stored) = state.resources.get_mut(key) else {
        return;
    };
    // Most machines were never powered by an action: spare them a parse.
    if stored.body_mentioning(scale_sets::POWER).is_none() {
        return;
    }
    stored.update(|body| {
        let pointer = format!("/properties/{}", scale_sets::POWER);
        if let Some(power) = body.pointer_mut(&pointer)
            && let Some((_, end)) = TRANSITIONS
                .iter()
                .find(|(in_flight, _)| power.as_str() == Some(in_flight))
        {
            *power = json!(end);
        }
    });
}

/// A write neither starts nor stops the machine: the hidden power state is the stored one,
/// never the request's.
fn keep_power(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let kept = prepare
        .existing
        .and_then(|existing| existing.get("properties")?.get(scale_sets::POWER))
        .cloned();
    let properties = prepare.properties()?;
    match kept {
        Some(power) => properties.insert(scale_sets::POWER.to_owned(), power),
        None => properties.remove(scale_sets::POWER),
    };
    Ok(())
}

/// What the machine reports about itself: provisioning and power state, its disks, and the
/// Hyper-V generation its OS disk was made for.
pub(super) fn instance_view(state: &State, machine: &Value) -> Value {
    let properties = &machine["properties"];
    let provisioning = properties["provisioningState"].as_str().unwrap_or("Succeeded");
    let time = properties["timeCreated"].clone();
    let (display, level) = match provisioning {
        "Creating" => ("Creating", "Info"),
        "Deleting" => ("Deleting", "Info"),
        "Failed" => ("Provisioning failed", "Error"),
        "Updating" => ("Updating", "Info"),
        _ => ("Provisioning succeeded", "Info"),
    };
    let (power, power_display) = power_state(properties);
    let provisioning_status = json!({
        "code": format!("ProvisioningState/{}", provisioning.to_ascii_lowercase()),
        "level": level,
        "displayStatus": display,
        "time": time,
    });
    let storage = &properties["storageProfile"];
    let data = storage["dataDisks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let disks: Vec<Value> = std::iter::once(&storage["osDisk"])
        .chain(data)
        .filter_map(|disk| disk["name"].as_str())
        .map(|name| json!({ "name": name, "statuses": [provisioning_status] }))
        .collect();
    // An ephemeral OS disk has no disk resource to ask; such images are V1 here.
    let hyper_v = storage
        .pointer("/osDisk/managedDisk/id")
        .and_then(Value::as_str)
        .and_then(|id| state.body(&id.to_ascii_lowercase()))
        .and_then(|disk| disk.pointer("/properties/hyperVGeneration").cloned())
        .unwrap_or_else(|| json!("V1"));
    let mut view = json!({
        "hyperVGeneration": hyper_v,
        "disks": disks,
        "statuses": [
            provisioning_status,
            { "code": format!("PowerState/{power}"), "level": "Info", "displayStatus": power_display },
        ],
    });
    if let Some(computer) = properties.pointer("/osProfile/computerName") {
        view["computerName"] = computer.clone();
    }
    view
}

fn instance_view_of(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let machine = lookup
        .id
        .parent_of_collection()
        .ok_or_else(|| ArmError::no_route("GET", &lookup.id.to_id()))?;
    if let Some(body) = lookup.state.body(&machine.key()) {
        return Ok(instance_view(lookup.state, &body));
    }
    let group = machine.resource_group.as_deref().unwrap_or_default();
    let group_key =
        crate::path::resource_group_id(machine.subscription.as_deref().unwrap_or_default(), group)
            .to_ascii_lowercase();
    if !lookup.state.resources.contains_key(group_key.as_str()) {
        return Err(ArmError::resource_group_not_found(group));
    }
    Err(ArmError::resource_not_found(
        &format!("Microsoft.Compute/virtualMachines/{}", machine.name()),
        Some(group),
    ))
}

/// A request for a feature the machine's size lacks.
fn unsupported_by_size(size: &str, property: &str, feature: &str) -> ArmError {
    ArmError::invalid_parameter(
        property,
        format!("The VM size {size} does not support {feature}."),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{fill, is_base64};

    #[test]
    fn custom_data_must_be_base64() {
        assert!(is_base64("I2Nsb3VkLWNvbmZpZwo="));
        assert!(is_base64(""));
        assert!(!is_base64("#cloud-config"));
        assert!(!is_base64("abc"));
        assert!(!is_base64("a==="));
    }

    #[test]
    fn defaults_fill_only_what_is_missing() {
        let mut target = json!({"a": 1, "b": {"c": 2}, "n": null});
        let target_map = target.as_object_mut().unwrap();
        fill(target_map, json!({"a": 5, "b": {"c": 6, "d": 7}, "n": 8, "e": 9}));
        assert_eq!(target, json!({"a": 1, "b": {"c": 2, "d": 7}, "n": 8, "e": 9}));
    }
}
