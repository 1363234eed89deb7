//! Managed disks: machines' OS and data disks, which outlive a machine unless it deletes them.
//! Disks have an api-version of their own, apart from the compute one.

use serde::{Deserialize, Serialize};

use crate::id::{ApiVersion, Location, ResourceId};
use crate::models::{ProvisioningState, Sku, Tags};

/// A managed disk (`Microsoft.Compute/disks`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    /// The disk's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The disk's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Compute/disks` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The disk's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The disk's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The disk's storage type; Azure adds the tier (`Premium`, `Standard`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<StorageAccountType>>,
    /// The one zone of a zonal disk, which only machines in that zone can attach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// The machine the disk is attached to (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<ResourceId>,
    /// How the disk was made and where it stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<DiskProperties>,
}

/// How a disk was made, its size and its state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiskProperties {
    /// How the disk is made; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_data: Option<CreationData>,
    /// The size in GiB; it can grow, never shrink.
    #[serde(rename = "diskSizeGB", skip_serializing_if = "Option::is_none")]
    pub disk_size_gb: Option<u32>,
    /// The size in bytes (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_size_bytes: Option<u64>,
    /// The operating system of an OS disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_type: Option<OperatingSystemType>,
    /// The Hyper-V generation of an OS disk: which machines can boot it.
    #[serde(rename = "hyperVGeneration", skip_serializing_if = "Option::is_none")]
    pub hyper_v_generation: Option<HyperVGeneration>,
    /// Whether the disk is attached (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_state: Option<DiskState>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the disk for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_id: Option<String>,
    /// When the disk was created, RFC 3339 (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_created: Option<String>,
}

/// How a disk is made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreationData {
    /// Empty, from an image, a copy, an upload…
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_option: Option<DiskCreateOption>,
}

lenient_enum! {
    /// The storage type of a managed disk: its SKU, and what a machine's disk asks for.
    pub enum StorageAccountType {
        /// HDD, locally redundant.
        StandardLrs = "Standard_LRS",
        /// SSD for production load, locally redundant.
        PremiumLrs = "Premium_LRS",
        /// SSD for production load, copied across zones.
        PremiumZrs = "Premium_ZRS",
        /// Premium SSD v2, with IOPS and throughput set apart from size; data disks only.
        PremiumV2Lrs = "PremiumV2_LRS",
        /// Entry-level SSD, locally redundant.
        StandardSsdLrs = "StandardSSD_LRS",
        /// Entry-level SSD, copied across zones.
        StandardSsdZrs = "StandardSSD_ZRS",
        /// Ultra disk; data disks only, on machines that enable it.
        UltraSsdLrs = "UltraSSD_LRS",
    }
}

lenient_enum! {
    /// The operating system on an OS disk.
    pub enum OperatingSystemType {
        /// Linux.
        Linux = "Linux",
        /// Windows.
        Windows = "Windows",
    }
}

lenient_enum! {
    /// How a disk, or a machine's disk, is made.
    pub enum DiskCreateOption {
        /// From the machine's image (an OS disk).
        FromImage = "FromImage",
        /// Blank (a data disk).
        Empty = "Empty",
        /// An existing managed disk, attached as it is.
        Attach = "Attach",
        /// A copy of another disk or a snapshot.
        Copy = "Copy",
        /// Empty, to be filled by an upload.
        Upload = "Upload",
    }
}

lenient_enum! {
    /// The Hyper-V generation of an image, an OS disk or a machine.
    pub enum HyperVGeneration {
        /// BIOS boot.
        V1 = "V1",
        /// UEFI boot, needed for trusted launch.
        V2 = "V2",
    }
}

lenient_enum! {
    /// Whether a disk is attached.
    pub enum DiskState {
        /// Free: it can be attached or deleted.
        Unattached = "Unattached",
        /// Attached to a running machine.
        Attached = "Attached",
        /// Attached to a stopped and deallocated machine.
        Reserved = "Reserved",
        /// Open for upload.
        ReadyToUpload = "ReadyToUpload",
    }
}

arm_model!(
    Disk,
    "Microsoft.Compute/disks",
    ApiVersion::new("2024-03-02"),
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{CreationData, Disk, DiskCreateOption, DiskProperties, DiskState, StorageAccountType};
    use crate::models::{ProvisioningState, Sku};

    #[test]
    fn an_answer_is_read_and_a_desired_disk_sends_only_what_it_sets() {
        let answer = json!({
            "name": "etcd",
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/disks/etcd",
            "type": "Microsoft.Compute/disks",
            "location": "westus2",
            "managedBy": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/cp-0",
            "sku": {"name": "Premium_ZRS", "tier": "Premium"},
            "properties": {
                "creationData": {"createOption": "Empty"},
                "diskSizeGB": 256,
                "diskIOPSReadWrite": 1100,
                "diskMBpsReadWrite": 125,
                "encryption": {"type": "EncryptionAtRestWithPlatformKey"},
                "networkAccessPolicy": "AllowAll",
                "timeCreated": "2024-07-30T18:52:26.179654+00:00",
                "provisioningState": "Succeeded",
                "diskState": "ActiveSAS",
                "diskSizeBytes": 274_877_906_944_u64,
                "uniqueId": "f868b238-5f80-4cf5-832e-8490f2cdf630",
                "tier": "P15"
            }
        });
        let disk: Disk = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &disk);
        assert_eq!(disk.sku.unwrap().name, Some(StorageAccountType::PremiumZrs));
        assert_eq!(disk.managed_by.unwrap().name(), "cp-0");
        let properties = disk.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        assert_eq!(properties.disk_size_bytes, Some(274_877_906_944));
        assert_eq!(
            properties.disk_state,
            Some(DiskState::Other("ActiveSAS".to_owned()))
        );

        let desired = Disk {
            location: Some("westus2".parse().unwrap()),
            sku: Some(Sku {
                name: Some(StorageAccountType::PremiumLrs),
                tier: None,
            }),
            properties: Some(DiskProperties {
                creation_data: Some(CreationData {
                    create_option: Some(DiskCreateOption::Empty),
                }),
                disk_size_gb: Some(256),
                ..DiskProperties::default()
            }),
            ..Disk::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "sku": {"name": "Premium_LRS"},
                "properties": {"creationData": {"createOption": "Empty"}, "diskSizeGB": 256}
            })
        );
    }
}
