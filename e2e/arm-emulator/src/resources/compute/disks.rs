//! Managed disks and snapshots. A PUT is accepted (202) and answered with the request as sent; the
//! operation's status carries the resource. A disk's performance (IOPS, throughput, premium tier)
//! follows from its SKU and size; a snapshot has none. A disk a virtual machine uses names it in
//! `managedBy` and cannot be deleted.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::{DISK_API_VERSIONS, DISK_NAMES, DISKS, document, now, zones};
use crate::error::ArmError;
use crate::path::ResourceId;
use crate::resources::{Hooks, Lro, NO_HOOKS, Prepare, ResourceType, fields};
use crate::state::State;

pub(crate) static DISK: ResourceType = ResourceType {
    since: &[("tier", "2020-12-01"), ("publicNetworkAccess", "2021-04-01")],
    naming: &DISK_NAMES,
    hooks: Hooks {
        not_found: Some(not_found),
        in_use: Some(in_use),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/disks",
        DISK_API_VERSIONS,
        &DISKS,
        Lro::Accepted,
        prepare_disk,
    )
};

/// Snapshots: point-in-time copies of disks, written as disks are.
pub(crate) static SNAPSHOT: ResourceType = ResourceType {
    since: &[("publicNetworkAccess", "2021-04-01")],
    naming: &DISK_NAMES,
    hooks: Hooks {
        not_found: Some(not_found),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/snapshots",
        DISK_API_VERSIONS,
        &DISKS,
        Lro::Accepted,
        prepare_snapshot,
    )
};

/// What a request writes: a managed disk or a snapshot, which share their creation and size rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Disk,
    Snapshot,
}

impl Kind {
    const fn skus(self) -> &'static [&'static str] {
        match self {
            Self::Disk => SKUS,
            Self::Snapshot => SNAPSHOT_SKUS,
        }
    }

    /// The largest size a disk of a SKU may have.
    fn largest_gb(self, sku: &str) -> i64 {
        if self == Self::Disk && provisioned_performance(sku) {
            65_536
        } else {
            32_767
        }
    }
}

/// The disk SKUs (storage account types).
pub(super) const SKUS: &[&str] = &[
    "Standard_LRS",
    "Premium_LRS",
    "StandardSSD_LRS",
    "UltraSSD_LRS",
    "Premium_ZRS",
    "StandardSSD_ZRS",
    "PremiumV2_LRS",
];

/// The storage a snapshot is kept on.
const SNAPSHOT_SKUS: &[&str] = &["Standard_LRS", "Premium_LRS", "Standard_ZRS"];

const CREATE_OPTIONS: &[&str] = &["Empty", "FromImage", "Copy", "Restore", "Import", "Upload"];

/// The sizes an upload may announce: 20 MiB to 32 TiB of content, plus the 512-byte VHD footer.
const MIN_UPLOAD_BYTES: i64 = (20 << 20) + 512;
const MAX_UPLOAD_BYTES: i64 = (32 << 40) + 512;

/// Premium SSD tiers: (largest size in GiB, tier, IOPS, MB/s).
const PREMIUM_TIERS: &[(i64, &str, i64, i64)] = &[
    (4, "P1", 120, 25),
    (8, "P2", 120, 25),
    (16, "P3", 120, 25),
    (32, "P4", 120, 25),
    (64, "P6", 240, 50),
    (128, "P10", 500, 100),
    (256, "P15", 1100, 125),
    (512, "P20", 2300, 150),
    (1024, "P30", 5000, 200),
    (2048, "P40", 7500, 250),
    (4096, "P50", 7500, 250),
    (8192, "P60", 16_000, 500),
    (16_384, "P70", 18_000, 750),
    (32_767, "P80", 20_000, 900),
];

fn not_found(id: &ResourceId) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("Disk {} is not found.", id.name()),
    )
}

fn in_use(id: &str, holder: &str) -> ArmError {
    let name = id.rsplit('/').next().unwrap_or(id);
    ArmError::new(
        StatusCode::CONFLICT,
        "OperationNotAllowed",
        format!("Disk {name} is attached to VM {holder}."),
    )
}

/// The SKU tier Azure shows beside a disk SKU.
fn sku_tier(sku: &str) -> &'static str {
    match sku {
        "Premium_LRS" | "Premium_ZRS" => "Premium",
        "UltraSSD_LRS" => "Ultra",
        "PremiumV2_LRS" => "PremiumV2",
        _ => "Standard",
    }
}

/// Whether the client sets the performance itself.
fn provisioned_performance(sku: &str) -> bool {
    matches!(sku, "UltraSSD_LRS" | "PremiumV2_LRS")
}

/// Baseline (IOPS, MB/s) and premium tier of a disk.
fn performance(sku: &str, size_gb: i64) -> (i64, i64, Option<&'static str>) {
    match sku {
        "Premium_LRS" | "Premium_ZRS" => PREMIUM_TIERS
            .iter()
            .find(|(largest, ..)| size_gb <= *largest)
            .map_or((20_000, 900, Some("P80")), |&(_, tier, iops, mbps)| {
                (iops, mbps, Some(tier))
            }),
        "StandardSSD_LRS" | "StandardSSD_ZRS" => match size_gb {
            ..=4096 => (500, 60, None),
            4097..=8192 => (2000, 400, None),
            8193..=16_384 => (4000, 600, None),
            _ => (6000, 750, None),
        },
        // Ultra and Premium SSD v2 start from the v2 baseline unless the client sets both.
        "UltraSSD_LRS" | "PremiumV2_LRS" => (3000, 125, None),
        _ => match size_gb {
            ..=4096 => (500, 60, None),
            4097..=8192 => (1300, 300, None),
            _ => (2000, 500, None),
        },
    }
}

/// Fills the properties Azure derives from SKU and size, and the defaults of a new disk or
/// snapshot.
fn complete(properties: &mut Map<String, Value>, kind: Kind, sku: &str, size_gb: i64) {
    properties.insert("diskSizeGB".into(), json!(size_gb));
    properties.insert("diskSizeBytes".into(), json!(size_gb << 30));
    for (name, default) in [
        ("encryption", json!({ "type": "EncryptionAtRestWithPlatformKey" })),
        ("networkAccessPolicy", json!("AllowAll")),
        ("publicNetworkAccess", json!("Enabled")),
    ] {
        if properties.get(name).is_none_or(Value::is_null) {
            properties.insert(name.into(), default);
        }
    }
    match kind {
        Kind::Disk => complete_performance(properties, sku, size_gb),
        Kind::Snapshot => {
            properties.entry("incremental").or_insert_with(|| json!(false));
        }
    }
}

/// A disk's performance: from its SKU and size, or as the client set it where the SKU lets it.
fn complete_performance(properties: &mut Map<String, Value>, sku: &str, size_gb: i64) {
    let (iops, mbps, tier) = performance(sku, size_gb);
    if !provisioned_performance(sku) || !properties.contains_key("diskIOPSReadWrite") {
        properties.insert("diskIOPSReadWrite".into(), json!(iops));
    }
    if !provisioned_performance(sku) || !properties.contains_key("diskMBpsReadWrite") {
        properties.insert("diskMBpsReadWrite".into(), json!(mbps));
    }
    match tier {
        // A premium disk may run at a higher tier than its size gives.
        Some(baseline) => {
            let requested = properties.get("tier").and_then(Value::as_str);
            let rank = |tier: &str| PREMIUM_TIERS.iter().position(|(_, name, ..)| *name == tier);
            let tier = requested
                .filter(|requested| rank(requested) >= rank(baseline))
                .unwrap_or(baseline)
                .to_owned();
            properties.insert("tier".into(), json!(tier));
        }
        None => {
            properties.remove("tier");
        }
    }
}

/// The disk size a request asks for, checking what its create option needs.
fn requested_size(prepare: &Prepare<'_>, properties: &Map<String, Value>) -> Result<i64, ArmError> {
    let path = "properties.creationData";
    let creation =
        fields::object(properties, "creationData", "properties")?.ok_or_else(|| fields::missing(path))?;
    let option = fields::one_of(creation, "createOption", path, CREATE_OPTIONS)?
        .ok_or_else(|| fields::missing("properties.creationData.createOption"))?;
    let requested = fields::integer(properties, "diskSizeGB", "properties")?;
    Ok(match option {
        "Empty" => requested.ok_or_else(|| fields::missing("properties.diskSizeGB"))?,
        "Copy" | "Restore" => {
            let source = fields::required_string(creation, "sourceResourceId", path)?;
            let copied = prepare
                .state
                .body(&source.to_ascii_lowercase())
                .and_then(|body| body.pointer("/properties/diskSizeGB").and_then(Value::as_i64));
            // Restore points are not served: only disks and snapshots can be copied here.
            let copied = copied.ok_or_else(|| ArmError::not_found(source))?;
            requested.unwrap_or(copied)
        }
        "Import" => {
            fields::required_string(creation, "sourceUri", path)?;
            requested.unwrap_or(30)
        }
        "Upload" => {
            let property = "properties.creationData.uploadSizeBytes";
            let bytes = fields::integer(creation, "uploadSizeBytes", path)?
                .ok_or_else(|| fields::missing(property))?;
            if !(MIN_UPLOAD_BYTES..=MAX_UPLOAD_BYTES).contains(&bytes) {
                return Err(ArmError::invalid_parameter(
                    property,
                    format!(
                        "The value {bytes} of '{property}' must lie between {MIN_UPLOAD_BYTES} and {MAX_UPLOAD_BYTES} bytes (20 MiB to 32 TiB, with the 512-byte VHD footer)."
                    ),
                ));
            }
            // The upload holds a 512-byte footer beyond the disk's content.
            requested.unwrap_or_else(|| (bytes - 512 + (1 << 30) - 1) >> 30)
        }
        _ => {
            if creation.get("imageReference").is_none() && creation.get("galleryImageReference").is_none() {
                return Err(fields::missing("properties.creationData.imageReference"));
            }
            requested.unwrap_or(30)
        }
    })
}

/// A copy shows the unique id of the disk or snapshot it copies.
fn record_source(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let state = prepare.state;
    let Some(creation) = prepare
        .properties()?
        .get_mut("creationData")
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    let unique = creation
        .get("sourceResourceId")
        .and_then(Value::as_str)
        .and_then(|source| state.body(&source.to_ascii_lowercase()))
        .and_then(|source| source.pointer("/properties/uniqueId").cloned());
    if let Some(unique) = unique {
        creation.insert("sourceUniqueId".into(), unique);
    }
    Ok(())
}

fn prepare_disk(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare_as(prepare, Kind::Disk)
}

fn prepare_snapshot(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    prepare_as(prepare, Kind::Snapshot)
}

fn prepare_as(prepare: &mut Prepare<'_>, kind: Kind) -> Result<(), ArmError> {
    let requested_sku = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let sku = fields::one_of(&requested_sku, "name", "sku", kind.skus())?.unwrap_or("Standard_LRS");
    prepare
        .doc
        .insert("sku".into(), json!({ "name": sku, "tier": sku_tier(sku) }));
    zones(prepare)?;
    let properties = prepare.properties()?.clone();
    let size = requested_size(prepare, &properties)?;
    record_source(prepare)?;
    let largest = kind.largest_gb(sku);
    if !(1..=largest).contains(&size) {
        return Err(ArmError::invalid_parameter(
            "properties.diskSizeGB",
            format!(
                "The disk size {size} GB of 'properties.diskSizeGB' must lie between 1 and {largest} GB for {sku}."
            ),
        ));
    }
    let upload = properties
        .get("creationData")
        .and_then(|creation| creation.get("createOption"))
        .and_then(Value::as_str)
        .is_some_and(|option| option.eq_ignore_ascii_case("Upload"));
    // Only a virtual machine attaches and detaches a disk; a snapshot is never attached.
    match prepare
        .existing
        .and_then(|existing| existing.get("managedBy"))
        .filter(|_| kind == Kind::Disk)
    {
        Some(machine) => prepare.doc.insert("managedBy".into(), machine.clone()),
        None => prepare.doc.remove("managedBy"),
    };
    prepare.keep("diskState", || {
        json!(if upload { "ReadyToUpload" } else { "Unattached" })
    })?;
    prepare.keep("uniqueId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.keep("timeCreated", || json!(now()))?;
    complete(prepare.properties()?, kind, sku, size);
    Ok(())
}

/// A disk a virtual machine creates for itself: an OS disk from its image, or an empty data disk.
pub(super) struct NewDisk<'a> {
    pub(super) id: String,
    pub(super) location: &'a str,
    pub(super) zones: &'a [String],
    pub(super) sku: &'a str,
    pub(super) size_gb: i64,
    /// `properties.creationData`.
    pub(super) creation: Value,
    /// For an OS disk: `Linux` or `Windows`, and the Hyper-V generation of its image.
    pub(super) os_type: Option<(&'a str, &'a str)>,
    /// The virtual machine it is attached to.
    pub(super) machine: &'a str,
}

impl NewDisk<'_> {
    /// The stored document.
    pub(super) fn document(self) -> Value {
        let name = self.id.rsplit('/').next().unwrap_or_default().to_owned();
        let mut properties = Map::new();
        if let Some((os_type, hyper_v)) = self.os_type {
            properties.insert("osType".into(), json!(os_type));
            properties.insert("hyperVGeneration".into(), json!(hyper_v));
        }
        properties.insert("creationData".into(), self.creation);
        complete(&mut properties, Kind::Disk, self.sku, self.size_gb);
        properties.insert("timeCreated".into(), json!(now()));
        properties.insert("provisioningState".into(), json!("Succeeded"));
        properties.insert("diskState".into(), json!("Attached"));
        properties.insert("uniqueId".into(), json!(uuid::Uuid::new_v4().to_string()));
        let mut disk = json!({
            "id": self.id,
            "name": name,
            "type": DISK.name,
            "location": self.location,
            "managedBy": self.machine,
            "sku": { "name": self.sku, "tier": sku_tier(self.sku) },
            "properties": properties,
        });
        if !self.zones.is_empty() {
            disk["zones"] = json!(self.zones);
        }
        disk
    }
}

/// The document of an existing disk once attached to `machine`.
pub(super) fn attached(disk: &Value, machine: &str) -> Value {
    let mut disk = disk.clone();
    disk["managedBy"] = json!(machine);
    disk["properties"]["diskState"] = json!("Attached");
    disk
}

/// The document of a disk once released by its virtual machine.
pub(super) fn detached(disk: &Value) -> Value {
    let mut disk = disk.clone();
    if let Some(object) = disk.as_object_mut() {
        object.remove("managedBy");
    }
    disk["properties"]["diskState"] = json!("Unattached");
    disk
}

/// Releases a disk whose virtual machine is gone.
pub(super) fn detach(state: &mut State, key: &str) {
    if let Some(stored) = state.resources.get_mut(key) {
        stored.update(|body| *body = detached(body));
    }
}

#[cfg(test)]
mod tests {
    use super::performance;

    #[test]
    fn premium_disks_take_the_tier_of_their_size() {
        assert_eq!(performance("Premium_ZRS", 500), (2300, 150, Some("P20")));
        assert_eq!(performance("Premium_LRS", 1024), (5000, 200, Some("P30")));
        assert_eq!(performance("Standard_LRS", 500), (500, 60, None));
    }
}
