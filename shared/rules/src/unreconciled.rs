//! The kinds whose controller family this release may not ship yet: scale-set machine pools and
//! AKS. While a family is not released ([`Family::released`]), its objects are stored as CAPZ
//! would store them and each creation is answered with a warning that says so, which `kubectl`
//! prints: nothing happens in Azure until the family's controller is released. Once it is, the
//! warning goes away by itself.
//!
//! The AKS kinds have no defaults or checks of their own yet (the CRD schema still applies);
//! AzureMachinePool and AzureMachinePoolMachine have theirs (`crate::azuremachinepool`) and add
//! this warning to them.

use capz_api::controllers::Family;

use crate::{Context, FieldError, Rules, Verdict};

/// Every kind that needs one of these families, with the family whose controller reconciles it.
pub const KINDS: [(&str, Family); 8] = [
    ("AzureMachinePool", Family::Vmss),
    ("AzureMachinePoolMachine", Family::Vmss),
    ("AzureManagedControlPlane", Family::Aks),
    ("AzureManagedControlPlaneTemplate", Family::Aks),
    ("AzureManagedCluster", Family::Aks),
    ("AzureManagedClusterTemplate", Family::Aks),
    ("AzureManagedMachinePool", Family::Aks),
    ("AzureManagedMachinePoolTemplate", Family::Aks),
];

/// The kinds of [`KINDS`] whose family this release does not ship.
pub fn unreleased() -> impl Iterator<Item = (&'static str, Family)> {
    KINDS.into_iter().filter(|(_, family)| !family.released())
}

/// The warning a new object of `kind`, reconciled by `family`, is admitted with.
#[must_use]
pub fn warning(kind: &str, family: Family) -> String {
    let what = if kind.ends_with("Template") {
        "the objects made from it are"
    } else {
        "it is"
    };
    format!(
        "{kind}: capz-rs does not reconcile this kind yet: {what} stored, but nothing is built in Azure \
         until the {family} controller is released"
    )
}

/// The warning for a new object of `kind`, while no released controller reconciles it.
#[must_use]
pub fn warning_for(kind: &str) -> Option<String> {
    unreleased()
        .find(|(name, _)| *name == kind)
        .map(|(name, family)| warning(name, family))
}

macro_rules! unreconciled {
    ($($kind:ident),* $(,)?) => {$(
        impl Rules for capz_api::$kind {
            fn default(&mut self, _: &Context<'_>) -> Result<(), FieldError> {
                Ok(())
            }

            fn validate_create(&self, _: &Context<'_>) -> Verdict {
                let mut verdict = Verdict::default();
                verdict.warnings.extend(warning_for(stringify!($kind)));
                verdict
            }

            fn validate_update(&self, _: &Self, _: &Context<'_>) -> Verdict {
                Verdict::default()
            }
        }
    )*};
}

unreconciled!(
    AzureManagedControlPlane,
    AzureManagedControlPlaneTemplate,
    AzureManagedCluster,
    AzureManagedClusterTemplate,
    AzureManagedMachinePool,
    AzureManagedMachinePoolTemplate,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_warned_about_exactly_while_its_family_is_unreleased() {
        for (kind, family) in KINDS {
            let text = warning(kind, family);
            assert!(text.starts_with(kind) && text.contains(family.name()), "{text}");
            assert_eq!(warning_for(kind), (!family.released()).then_some(text), "{kind}");
        }
        assert_eq!(warning_for("AzureMachine"), None);
    }

    #[test]
    fn the_aks_kinds_are_admitted_with_the_warning_only() {
        let ctx = Context {
            operation: crate::Operation::Create,
            dry_run: false,
            features: crate::Features::default(),
            entropy: &crate::SystemEntropy,
            cluster_subscription_id: None,
            machine_pool: crate::PoolOwner::NotLookedUp,
        };
        let plane: capz_api::AzureManagedCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureManagedCluster",
            "metadata": {"name": "c"},
            "spec": {},
        }))
        .unwrap();
        let verdict = plane.validate_create(&ctx);
        assert!(verdict.allowed());
        assert_eq!(
            verdict.warnings,
            Vec::from_iter(warning_for("AzureManagedCluster"))
        );
    }
}
