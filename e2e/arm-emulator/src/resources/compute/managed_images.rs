//! Managed images: an OS disk (and data disks) captured from a snapshot, a managed disk, a VHD
//! blob or a virtual machine, which machines and gallery image versions are made from. Written as
//! virtual machines are (201 `Creating`, then an operation); the source must exist, as Azure
//! checks before answering. The image copies its source: the source may be deleted afterwards.

use serde_json::{Map, Value, json};

use super::images::{Os, Resolved};
use super::{API_VERSIONS, COMPUTE, DISK_NAMES, disks, document, required_choice, source, virtual_machines};
use crate::error::ArmError;
use crate::resources::{Lro, Prepare, ResourceType, fields};
use crate::state::State;

pub(crate) static IMAGE: ResourceType = ResourceType {
    naming: &DISK_NAMES,
    weak_references: true,
    ..document(
        "Microsoft.Compute/images",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_image,
    )
};

pub(super) const OS_TYPES: &[&str] = &["Linux", "Windows"];
pub(super) const OS_STATES: &[&str] = &["Generalized", "Specialized"];
pub(super) const HYPER_V_GENERATIONS: &[&str] = &["V1", "V2"];
const CACHING: &[&str] = &["None", "ReadOnly", "ReadWrite"];

/// Completes one disk of the storage profile: its source exists, its size defaults to the
/// source's, and caching and storage type take Azure's defaults.
fn image_disk(state: &State, disk: &mut Map<String, Value>, path: &str) -> Result<(), ArmError> {
    let snapshot = fields::reference(disk, "snapshot", path)?;
    let managed = fields::reference(disk, "managedDisk", path)?;
    let blob = fields::string(disk, "blobUri", path)?;
    let copied = match (snapshot, managed, blob) {
        (Some(id), None, None) => Some(source(state, id, &[disks::SNAPSHOT.name])?),
        (None, Some(id), None) => Some(source(state, id, &[disks::DISK.name])?),
        (None, None, Some(_)) => None,
        (None, None, None) => {
            return Err(ArmError::invalid_parameter(
                path,
                format!("One of 'snapshot', 'managedDisk' or 'blobUri' of '{path}' is required."),
            ));
        }
        _ => {
            return Err(ArmError::invalid_parameter(
                path,
                format!("Only one of 'snapshot', 'managedDisk' or 'blobUri' of '{path}' may be set."),
            ));
        }
    };
    fields::one_of(disk, "caching", path, CACHING)?;
    fields::one_of(disk, "storageAccountType", path, disks::SKUS)?;
    let size = copied
        .as_ref()
        .and_then(|copied| copied.pointer("/properties/diskSizeGB").cloned());
    let mut defaults = json!({ "caching": "None", "storageAccountType": "Standard_LRS" });
    if let Some(size) = size {
        defaults["diskSizeGB"] = size;
    }
    virtual_machines::fill(disk, defaults);
    Ok(())
}

/// The storage profile of an image captured from a virtual machine: its disks as they are.
fn from_machine(state: &State, id: &str) -> Result<Value, ArmError> {
    let machine = source(state, id, &[virtual_machines::VIRTUAL_MACHINE.name])?;
    let profile = &machine["properties"]["storageProfile"];
    let disk = |disk: &Value| {
        json!({
            "managedDisk": { "id": disk["managedDisk"]["id"] },
            "diskSizeGB": disk["diskSizeGB"],
            "caching": disk["caching"],
            "storageAccountType": disk["managedDisk"]["storageAccountType"],
        })
    };
    let mut os_disk = disk(&profile["osDisk"]);
    os_disk["osType"] = profile["osDisk"]["osType"].clone();
    os_disk["osState"] = json!("Generalized");
    let data_disks: Vec<Value> = profile["dataDisks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|data| {
            let mut captured = disk(data);
            captured["lun"] = data["lun"].clone();
            captured
        })
        .collect();
    Ok(json!({ "osDisk": os_disk, "dataDisks": data_disks }))
}

fn prepare_image(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let path = "properties.storageProfile";
    let properties = prepare.properties()?;
    let hyper_v =
        fields::one_of(properties, "hyperVGeneration", "properties", HYPER_V_GENERATIONS)?.unwrap_or("V1");
    let machine = fields::reference(properties, "sourceVirtualMachine", "properties")?.map(str::to_owned);
    let mut profile = match &machine {
        // What the client says of the disks gives way to the machine's.
        Some(machine) => from_machine(prepare.state, machine)?
            .as_object()
            .cloned()
            .unwrap_or_default(),
        None => fields::object(properties, "storageProfile", "properties")?
            .cloned()
            .ok_or_else(|| fields::missing(path))?,
    };
    let mut os_disk = fields::object(&profile, "osDisk", path)?
        .cloned()
        .ok_or_else(|| fields::missing("properties.storageProfile.osDisk"))?;
    let os_path = "properties.storageProfile.osDisk";
    required_choice(&mut os_disk, "osType", os_path, OS_TYPES)?;
    required_choice(&mut os_disk, "osState", os_path, OS_STATES)?;
    if machine.is_none() {
        image_disk(prepare.state, &mut os_disk, os_path)?;
    }
    let mut data_disks = fields::array(&profile, "dataDisks", path)?.to_vec();
    let mut luns = Vec::new();
    for (index, data) in data_disks.iter_mut().enumerate() {
        let at = format!("{path}.dataDisks[{index}]");
        let data = data
            .as_object_mut()
            .ok_or_else(|| fields::wrong_type(&at, "an object"))?;
        let lun = fields::integer(data, "lun", &at)?.ok_or_else(|| fields::missing(&format!("{at}.lun")))?;
        if luns.contains(&lun) {
            return Err(ArmError::invalid_parameter(
                &format!("{at}.lun"),
                format!("The lun {lun} of '{at}.lun' is used by another data disk of the image."),
            ));
        }
        luns.push(lun);
        if machine.is_none() {
            image_disk(prepare.state, data, &at)?;
        }
    }
    profile.insert("osDisk".into(), Value::Object(os_disk));
    profile.insert("dataDisks".into(), Value::Array(data_disks));
    let properties = prepare.properties()?;
    properties.insert("storageProfile".into(), Value::Object(profile));
    properties.insert("hyperVGeneration".into(), json!(hyper_v));
    Ok(())
}

/// What a machine booting from a stored image (`id`) learns of it.
pub(super) fn boot(image: &Value, id: &str) -> Resolved {
    let properties = &image["properties"];
    let os_disk = &properties["storageProfile"]["osDisk"];
    let hyper_v = HYPER_V_GENERATIONS
        .iter()
        .copied()
        .find(|generation| properties["hyperVGeneration"] == *generation)
        .unwrap_or("V1");
    Resolved {
        os: Os::of(&os_disk["osType"]),
        size_gb: os_disk["diskSizeGB"].as_i64(),
        hyper_v,
        exact_version: None,
        source: json!({ "imageReference": { "id": id } }),
    }
}
