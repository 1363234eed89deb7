//! What may not change on an AKS node pool once it exists (AKS cannot change it in place), and
//! the cluster's last System pool, which may neither become a User pool nor be deleted.

use std::collections::BTreeMap;

use capz_api::azuremanagedmachinepool::{AzureManagedMachinePoolClassSpec, NodePoolMode};
use capz_api::capi::CLUSTER_NAME_LABEL;
use serde::Serialize;

use super::validation::check_node_labels;
use crate::field::{FieldError, FieldPath, Verdict};
use crate::immutable::{unchanged, unchanged_once_set};
use crate::{ClusterQuery, OwnerCluster};

/// The label the defaults copy `spec.mode` into, by which the System pools of a cluster are found.
pub const AGENT_POOL_MODE_LABEL: &str =
    "azuremanagedmachinepool.infrastructure.cluster.x-k8s.io/agentpoolmode";
/// The annotation clusterctl puts on the objects it deletes after moving them elsewhere.
pub const DELETE_FOR_MOVE_ANNOTATION: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";

/// Which checks differ between a pool and its template.
#[derive(Clone, Copy)]
pub(super) struct Differences {
    /// Whether `enableEncryptionAtHost` is checked (CAPZ checks it on pools only).
    pub(super) encryption_at_host: bool,
}

/// The immutable fields and the node labels of a pool's spec at `at`; `old` is already
/// re-defaulted.
pub(super) fn check_pool_update(
    old: &AzureManagedMachinePoolClassSpec,
    new: &AzureManagedMachinePoolClassSpec,
    at: &FieldPath,
    differences: Differences,
    verdict: &mut Verdict,
) {
    fn fixed<T: PartialEq + Serialize>(
        at: &FieldPath,
        name: &str,
        old: Option<&T>,
        new: Option<&T>,
        verdict: &mut Verdict,
    ) {
        verdict.errors.extend(unchanged(at.child(name), old, new));
    }
    fn once_set<T: PartialEq + Serialize>(
        at: &FieldPath,
        name: &str,
        old: Option<&T>,
        new: Option<&T>,
        verdict: &mut Verdict,
    ) {
        verdict
            .errors
            .extend(unchanged_once_set(at.child(name), old, new));
    }
    fixed(at, "name", old.name.as_ref(), new.name.as_ref(), verdict);
    if let Some(error) = check_node_labels(new, &at.child("nodeLabels")) {
        verdict.reject(error);
    }
    fixed(at, "osType", old.os_type.as_ref(), new.os_type.as_ref(), verdict);
    let sku = |spec: &AzureManagedMachinePoolClassSpec| (!spec.sku.is_empty()).then(|| spec.sku.clone());
    fixed(at, "sku", sku(old).as_ref(), sku(new).as_ref(), verdict);
    fixed(
        at,
        "osDiskSizeGB",
        old.os_disk_size_gb.as_ref(),
        new.os_disk_size_gb.as_ref(),
        verdict,
    );
    once_set(
        at,
        "subnetName",
        old.subnet_name.as_ref(),
        new.subnet_name.as_ref(),
        verdict,
    );
    once_set(
        at,
        "enableFIPS",
        old.enable_fips.as_ref(),
        new.enable_fips.as_ref(),
        verdict,
    );
    if differences.encryption_at_host {
        once_set(
            at,
            "enableEncryptionAtHost",
            old.enable_encryption_at_host.as_ref(),
            new.enable_encryption_at_host.as_ref(),
            verdict,
        );
    }
    check_placement_update(old, new, at, verdict);
}

/// The zones (in any order), pod density, disks, priority, public IPs and node settings.
fn check_placement_update(
    old: &AzureManagedMachinePoolClassSpec,
    new: &AzureManagedMachinePoolClassSpec,
    at: &FieldPath,
    verdict: &mut Verdict,
) {
    fn fixed<T: PartialEq + Serialize>(
        at: &FieldPath,
        name: &str,
        old: Option<&T>,
        new: Option<&T>,
        verdict: &mut Verdict,
    ) {
        verdict.errors.extend(unchanged(at.child(name), old, new));
    }
    let zones = |spec: &AzureManagedMachinePoolClassSpec| {
        let mut zones = spec.availability_zones.clone().unwrap_or_default();
        zones.sort();
        zones
    };
    if zones(old) != zones(new) {
        verdict.reject(FieldError::invalid(
            at.child("availabilityZones"),
            &new.availability_zones,
            "field is immutable",
        ));
    }
    fixed(
        at,
        "maxPods",
        old.max_pods.as_ref(),
        new.max_pods.as_ref(),
        verdict,
    );
    fixed(
        at,
        "osDiskType",
        old.os_disk_type.as_ref(),
        new.os_disk_type.as_ref(),
        verdict,
    );
    fixed(
        at,
        "scaleSetPriority",
        old.scale_set_priority.as_ref(),
        new.scale_set_priority.as_ref(),
        verdict,
    );
    fixed(
        at,
        "enableUltraSSD",
        old.enable_ultra_ssd.as_ref(),
        new.enable_ultra_ssd.as_ref(),
        verdict,
    );
    fixed(
        at,
        "enableNodePublicIP",
        old.enable_node_public_ip.as_ref(),
        new.enable_node_public_ip.as_ref(),
        verdict,
    );
    fixed(
        at,
        "nodePublicIPPrefixID",
        old.node_public_ip_prefix_id.as_ref(),
        new.node_public_ip_prefix_id.as_ref(),
        verdict,
    );
    fixed(
        at,
        "kubeletConfig",
        old.kubelet_config.as_ref(),
        new.kubelet_config.as_ref(),
        verdict,
    );
    fixed(
        at,
        "kubeletDiskType",
        old.kubelet_disk_type.as_ref(),
        new.kubelet_disk_type.as_ref(),
        verdict,
    );
    fixed(
        at,
        "linuxOSConfig",
        old.linux_os_config.as_ref(),
        new.linux_os_config.as_ref(),
        verdict,
    );
}

/// Whether the pool leaves the System mode: a change from `old` to `new`.
pub(super) fn leaves_system(
    old: &AzureManagedMachinePoolClassSpec,
    new: &AzureManagedMachinePoolClassSpec,
) -> bool {
    old.mode == NodePoolMode::System && new.mode != NodePoolMode::System
}

/// What to look up for the last-System-pool rule of a pool whose cluster is named by
/// `labels[cluster-name]`: nothing when unlabelled or being moved by clusterctl.
pub(super) fn system_pools_query(
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Option<ClusterQuery> {
    if annotations.is_some_and(|annotations| annotations.contains_key(DELETE_FOR_MOVE_ANNOTATION)) {
        return None;
    }
    labels
        .and_then(|labels| labels.get(CLUSTER_NAME_LABEL))
        .map(|name| ClusterQuery {
            name: name.clone(),
            system_pools: true,
        })
}

/// Whether taking one System pool away leaves the cluster without one. The rule holds only when
/// the Cluster was found, is not being deleted and its System pools were counted (the pool itself
/// among them); a pool clusterctl deletes after a move never gets here ([`system_pools_query`]).
pub(super) fn is_last_system_pool(cluster: &OwnerCluster) -> bool {
    match cluster {
        OwnerCluster::Found(facts) => !facts.deleting && facts.system_pools.is_some_and(|count| count <= 1),
        OwnerCluster::NotLookedUp | OwnerCluster::Missing => false,
    }
}

/// The message of a refused deletion.
pub(super) const LAST_SYSTEM_POOL: &str = "AKS Cluster must have at least one system pool";
