//! What CAPZ refuses in a machine pool, on create and again on every update: the VM profile
//! checks it applies to a pool's template (image, OS disk, SSH key, boot diagnostics, the
//! deprecated subnet beside network interfaces), the identities, the termination notice and the
//! rolling-update strategy. And the `MachinePool` gate, without which CAPZ admits no pool at all,
//! and the Kubernetes version a Flexible pool's MachinePool must run.

use capz_api::AzureMachinePoolSpec;
use capz_api::azuremachinepool::{AzureMachinePoolDeploymentStrategy, OrchestrationMode};
use capz_api::common::compute::VmProfile;

use super::values::{Budget, GATE_OFF, TERMINATE_NOTIFICATION_MINUTES, spec_path, template_path};
use crate::azuremachine::profile::{
    check_deprecated_subnet, check_diagnostics, check_identity_role, check_image, check_key_present,
    check_os_disk, check_role_name, check_ssh_key, check_user_assigned_identities, list,
};
use crate::field::{FieldError, FieldPath, Verdict};
use crate::{Features, PoolOwner};

/// Refuses the object when the `MachinePool` gate is off; whether it is on.
pub(super) fn check_machine_pool_gate(features: Features, verdict: &mut Verdict) -> bool {
    if !features.machine_pool {
        verdict.reject(FieldError::forbidden(spec_path(), GATE_OFF));
    }
    features.machine_pool
}

/// The first Kubernetes release whose nodes a Flexible scale set can run: the cloud provider's
/// Helm chart that such pools need starts there.
const FLEXIBLE_FROM: (u64, u64, u64, bool) = (1, 26, 0, true);

/// A Flexible pool's MachinePool runs Kubernetes 1.26.0 or later. The MachinePool is the one
/// whose infrastructure reference names the pool, found by the caller (`owner`); the check is
/// skipped when it was not looked up.
pub(super) fn check_orchestration_mode(
    spec: &AzureMachinePoolSpec,
    owner: &PoolOwner,
    verdict: &mut Verdict,
) {
    if spec.orchestration_mode != Some(OrchestrationMode::Flexible) {
        return;
    }
    let path = spec_path().child("orchestrationMode");
    let (from_major, from_minor, from_patch, _) = FLEXIBLE_FROM;
    let needs =
        format!("Flexible scale sets need Kubernetes {from_major}.{from_minor}.{from_patch} or later");
    match owner {
        PoolOwner::NotLookedUp => {}
        PoolOwner::Missing => verdict.reject(FieldError::forbidden(
            path,
            format!(
                "{needs}, and no MachinePool in the namespace names this pool as its infrastructure, so its version is unknown; create the MachinePool first"
            ),
        )),
        PoolOwner::Found { version: None } => verdict.reject(FieldError::forbidden(
            path,
            format!("{needs}, and the pool's MachinePool names no version (spec.template.spec.version)"),
        )),
        PoolOwner::Found { version: Some(version) } => match kubernetes_version(version) {
            Some(parsed) if parsed >= FLEXIBLE_FROM => {}
            Some(_) => verdict.reject(FieldError::forbidden(
                path,
                format!("{needs}; the pool's MachinePool runs {version}: upgrade it first, or use Uniform"),
            )),
            None => verdict.reject(FieldError::forbidden(
                path,
                format!("{needs}, and the version of the pool's MachinePool, {version:?}, is not a version"),
            )),
        },
    }
}

/// A Kubernetes version as `(major, minor, patch, released)`, read as leniently as Cluster API
/// reads it: an optional `v`, a missing minor or patch counting as 0. A pre-release
/// (`1.26.0-rc.1`, `released` false) comes before its release.
fn kubernetes_version(text: &str) -> Option<(u64, u64, u64, bool)> {
    let text = text.trim().trim_start_matches(['v', 'V']);
    let core = text.split('+').next().unwrap_or_default();
    let (core, released) = match core.split_once('-') {
        Some((core, _)) => (core, false),
        None => (core, true),
    };
    let mut parts = core.split('.').map(str::parse::<u64>);
    let major = parts.next()?.ok()?;
    let minor = parts.next().transpose().ok()?.unwrap_or(0);
    let patch = parts.next().transpose().ok()?.unwrap_or(0);
    parts.next().is_none().then_some((major, minor, patch, released))
}

/// Every check of a pool's spec. `generated`: defaulting could generate the SSH key and the role
/// assignment's name (a real create or update, not a dry run), so they must be there now.
pub(super) fn check_pool(spec: &AzureMachinePoolSpec, generated: bool, verdict: &mut Verdict) {
    let base = spec_path();
    let template = template_path();
    let vm = &spec.template.vm;
    check_image(vm.image.as_ref(), &template.child("image"), verdict);
    check_terminate_notification_timeout(spec.template.terminate_notification_timeout, &template, verdict);
    check_ssh_key(vm, &template, verdict);
    check_key_present(vm, &template, generated, verdict);
    check_user_assigned_identities(&spec.identities, &base.child("userAssignedIdentities"), verdict);
    check_diagnostics(vm.diagnostics.as_ref(), &template.child("diagnostics"), verdict);
    if let Some(strategy) = &spec.strategy {
        check_strategy(strategy, &base.child("strategy"), verdict);
    }
    check_identity_role(&spec.identities, &base, verdict);
    check_role_name(&spec.identities, &base, generated, verdict);
    check_deprecated_subnet(vm, &template, verdict);
    warn_ignored_accelerated_networking(vm, &template, verdict);
    check_os_disk(&vm.os_disk, &template.child("osDisk"), verdict);
}

/// Azure waits 5 to 15 minutes after announcing an instance's deletion.
fn check_terminate_notification_timeout(minutes: Option<i64>, template: &FieldPath, verdict: &mut Verdict) {
    if let Some(minutes) = minutes.filter(|minutes| !TERMINATE_NOTIFICATION_MINUTES.contains(minutes)) {
        verdict.reject(FieldError::invalid(
            template.child("terminateNotificationTimeout"),
            &minutes,
            format!(
                "Azure waits between {} and {} minutes after announcing that an instance will be deleted; leave it out for no notice",
                TERMINATE_NOTIFICATION_MINUTES.start(),
                TERMINATE_NOTIFICATION_MINUTES.end()
            ),
        ));
    }
}

/// A rolling update's budgets are counts or percentages, and not both zero: then no instance
/// could ever be replaced.
fn check_strategy(strategy: &AzureMachinePoolDeploymentStrategy, path: &FieldPath, verdict: &mut Verdict) {
    let Some(rolling) = &strategy.rolling_update else {
        return;
    };
    let path = path.child("rollingUpdate");
    let mut budget = |name: &str, value: Option<&_>| {
        let value = value?;
        Budget::read(value)
            .map_err(|reason| verdict.reject(FieldError::invalid(path.child(name), value, reason)))
            .ok()
    };
    let surge = budget("maxSurge", rolling.max_surge.as_ref());
    let unavailable = budget("maxUnavailable", rolling.max_unavailable.as_ref());
    if let (Some(surge), Some(unavailable)) = (surge, unavailable)
        && surge.is_zero()
        && unavailable.is_zero()
    {
        verdict.reject(FieldError::invalid(
            path.child("maxUnavailable"),
            &rolling.max_unavailable,
            "cannot be 0 while maxSurge is 0 too: no instance could ever be replaced; raise one of them",
        ));
    }
}

/// CAPZ leaves a deprecated `acceleratedNetworking` beside `networkInterfaces` alone, and its
/// controller reads only the interfaces: said, not refused.
fn warn_ignored_accelerated_networking(vm: &VmProfile, template: &FieldPath, verdict: &mut Verdict) {
    if list(vm.network_interfaces.as_ref()).is_some() && vm.accelerated_networking.is_some() {
        verdict.warn(format!(
            "{}: ignored beside networkInterfaces; set networkInterfaces[].acceleratedNetworking instead",
            template.child("acceleratedNetworking")
        ));
    }
}

#[cfg(test)]
mod version_tests {
    use super::{FLEXIBLE_FROM, kubernetes_version};

    #[test]
    fn versions_are_read_as_cluster_api_reads_them() {
        assert_eq!(kubernetes_version("v1.33.2"), Some((1, 33, 2, true)));
        assert_eq!(kubernetes_version("1.26"), Some((1, 26, 0, true)));
        assert_eq!(kubernetes_version("v1.26.0+k3s1"), Some((1, 26, 0, true)));
        assert!(kubernetes_version("v1.26.0-rc.1").unwrap() < FLEXIBLE_FROM);
        assert!(kubernetes_version("v1.25.16").unwrap() < FLEXIBLE_FROM);
        assert!(kubernetes_version("v1.26.1-alpha.0").unwrap() >= FLEXIBLE_FROM);
        assert_eq!(kubernetes_version("latest"), None);
        assert_eq!(kubernetes_version("1.2.3.4"), None);
    }
}
