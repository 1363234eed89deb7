//! The constants and small readers the rules of a machine pool share.

use std::ops::RangeInclusive;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::field::FieldPath;

/// The minutes Azure may wait between announcing an instance's deletion and deleting it.
pub(super) const TERMINATE_NOTIFICATION_MINUTES: RangeInclusive<i64> = 5..=15;

/// How many instances a rolling update adds above the replicas, unless told.
pub(super) const DEFAULT_MAX_SURGE: i32 = 1;

/// How many instances a rolling update may take away, unless told.
pub(super) const DEFAULT_MAX_UNAVAILABLE: i32 = 0;

/// Where CAPZ's pools and their machines are switched on.
pub(super) const GATE_OFF: &str = "the MachinePool feature gate is off, and capz-rs, like CAPZ, then admits no \
     AzureMachinePool or AzureMachinePoolMachine; start the webhooks with --feature-gates=MachinePool=true \
     (clusterctl: EXP_MACHINE_POOL=true)";

/// `spec`, where a pool's identities, strategy and placement are.
pub(super) fn spec_path() -> FieldPath {
    FieldPath::root("spec")
}

/// `spec.template`, the VM profile of a pool's instances.
pub(super) fn template_path() -> FieldPath {
    spec_path().child("template")
}

/// How many instances a rolling-update budget (`maxSurge`, `maxUnavailable`) allows: a count or
/// a percentage of the replicas, as Cluster API and Kubernetes write them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Budget {
    /// A number of instances.
    Count(i32),
    /// A percentage of the replicas, `25%`.
    Percent(u32),
}

impl Budget {
    /// Reads `value`, or says why it cannot be a budget.
    pub(super) fn read(value: &IntOrString) -> Result<Self, String> {
        match value {
            IntOrString::Int(count) if *count < 0 => {
                Err("is a number of instances and cannot be negative".to_owned())
            }
            IntOrString::Int(count) => Ok(Self::Count(*count)),
            IntOrString::String(text) => text
                .strip_suffix('%')
                .and_then(|digits| digits.parse::<u32>().ok())
                .map(Self::Percent)
                .ok_or_else(|| {
                    "must be a number of instances (such as 1) or a percentage of the replicas (such as \"25%\")"
                        .to_owned()
                }),
        }
    }

    /// Whether it allows no instance at all.
    pub(super) fn is_zero(self) -> bool {
        matches!(self, Self::Count(0) | Self::Percent(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_counts_or_percentages() {
        let read = |value: IntOrString| Budget::read(&value);
        assert_eq!(read(IntOrString::Int(2)), Ok(Budget::Count(2)));
        assert_eq!(
            read(IntOrString::String("25%".to_owned())),
            Ok(Budget::Percent(25))
        );
        assert!(read(IntOrString::Int(0)).unwrap().is_zero());
        assert!(read(IntOrString::String("0%".to_owned())).unwrap().is_zero());
        assert!(!read(IntOrString::String("10%".to_owned())).unwrap().is_zero());
        for bad in ["25", "a%", "-5%", "%", ""] {
            assert!(read(IntOrString::String(bad.to_owned())).is_err(), "{bad}");
        }
        assert!(read(IntOrString::Int(-1)).is_err());
    }
}
