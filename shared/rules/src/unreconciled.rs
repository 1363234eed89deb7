//! The kinds whose controller family this release may not ship yet: scale-set machine pools and
//! AKS. While a family is not released ([`Family::released`]), its objects are stored as CAPZ
//! would store them and each creation is answered with a warning that says so, which `kubectl`
//! prints: nothing happens in Azure until the family's controller is released. Once it is, the
//! warning goes away by itself.
//!
//! Every kind here has rules of its own (`crate::azuremachinepool`,
//! `crate::azuremanagedcontrolplane`, `crate::azuremanagedcluster`,
//! `crate::azuremanagedmachinepool`), which add this warning to a creation.

use capz_api::controllers::Family;

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
}
