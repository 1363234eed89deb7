//! What CAPZ fills in on a machine pool: the instances' SSH key and OS disk, the role assignment
//! of a system-assigned identity, boot diagnostics, network interfaces, spot eviction, and the
//! rolling-update strategy the schema defaults.

use capz_api::AzureMachinePoolSpec;
use capz_api::azuremachinepool::{
    AzureMachinePoolDeploymentStrategy, DeletePolicy, DeploymentStrategyType, MachineRollingUpdateDeployment,
};
use capz_api::common::compute::{CachingType, VmProfile};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::values::{DEFAULT_MAX_SURGE, DEFAULT_MAX_UNAVAILABLE};

/// An OS disk without a type runs Linux, and without a caching type has none.
pub(super) fn default_os_disk(vm: &mut VmProfile) {
    let disk = &mut vm.os_disk;
    if disk.os_type.is_empty() {
        "Linux".clone_into(&mut disk.os_type);
    }
    disk.caching_type.get_or_insert(CachingType::None);
}

/// A rolling update replacing one instance at a time above the replicas, never below them, the
/// oldest first: the schema's defaults, also for a strategy given in part.
pub(super) fn default_strategy(spec: &mut AzureMachinePoolSpec) {
    let strategy = spec
        .strategy
        .get_or_insert_with(|| AzureMachinePoolDeploymentStrategy {
            type_: None,
            rolling_update: Some(MachineRollingUpdateDeployment::default()),
        });
    strategy
        .type_
        .get_or_insert(DeploymentStrategyType::RollingUpdate);
    if let Some(rolling) = strategy.rolling_update.as_mut() {
        rolling
            .max_surge
            .get_or_insert(IntOrString::Int(DEFAULT_MAX_SURGE));
        rolling
            .max_unavailable
            .get_or_insert(IntOrString::Int(DEFAULT_MAX_UNAVAILABLE));
        rolling.delete_policy.get_or_insert(DeletePolicy::Oldest);
    }
}
