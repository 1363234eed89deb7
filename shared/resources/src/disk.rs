//! Managed disks (`Microsoft.Compute/disks`) of machines: the OS disk `<vm>_OSDisk` and the data
//! disks `<vm>_<nameSuffix>`. Azure creates them with the machine (the machine's body describes
//! them), and keeps them when the machine is deleted; this unit only deletes them afterwards, as
//! CAPZ's disks service does.

use capz_azure::models::compute::Disk as Model;
use capz_azure::{IdError, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;

/// The name of a machine's OS disk.
#[must_use]
pub fn os_disk_name(machine: &str) -> String {
    format!("{machine}_OSDisk")
}

/// The name of a machine's data disk with `suffix`.
#[must_use]
pub fn data_disk_name(machine: &str, suffix: &str) -> String {
    format!("{machine}_{suffix}")
}

/// A disk made with one of the cluster's machines. It carries no tags of ours (Azure makes it
/// from the machine's body): it is ours because its machine is and its name is the one derived
/// from the machine's.
#[derive(Debug, Clone)]
pub struct Disk {
    id: ResourceId,
}

impl Disk {
    /// The disk `name` in the cluster's resource group.
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn new(scope: &ClusterScope, name: &str) -> Result<Self, IdError> {
        Ok(Self {
            id: scope.id_of::<Model>(name)?,
        })
    }
}

impl AzureResource for Disk {
    type Model = Model;
    const SERVICE: &'static str = "disks";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    /// Never written on its own: the machine creates it.
    fn desired(&self, _existing: Option<&Model>) -> Option<Model> {
        None
    }
}

#[cfg(test)]
mod tests {
    use capz_rules::Features;

    use super::*;

    #[test]
    fn disks_are_named_after_their_machine_and_never_written() {
        let cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001"},
        }))
        .unwrap();
        let scope = ClusterScope::new(&cluster, Features::default(), None).unwrap();
        assert_eq!(os_disk_name("m-0"), "m-0_OSDisk");
        assert_eq!(data_disk_name("m-0", "etcddisk"), "m-0_etcddisk");
        let disk = Disk::new(&scope, &os_disk_name("m-0")).unwrap();
        assert_eq!(disk.id().resource_type(), "Microsoft.Compute/disks");
        assert_eq!(disk.desired(None), None);
        assert_eq!(disk.desired(Some(&Model::default())), None);
    }
}
