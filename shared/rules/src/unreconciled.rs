//! The kinds this release serves but no controller of it reconciles yet: scale-set machine pools
//! and AKS. Their objects are stored as CAPZ would store them, and each creation is answered with
//! a warning that says so, which `kubectl` prints: nothing happens in Azure until the family's
//! controller is released. They have no defaults or checks of their own yet; the CRD schema
//! still applies.

use capz_api::controllers::Family;

use crate::{Context, FieldError, Rules, Verdict};

/// Every kind without a controller, with the family whose controller will reconcile it.
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

macro_rules! unreconciled {
    ($($kind:ident),* $(,)?) => {$(
        impl Rules for capz_api::$kind {
            fn default(&mut self, _: &Context<'_>) -> Result<(), FieldError> {
                Ok(())
            }

            fn validate_create(&self, _: &Context<'_>) -> Verdict {
                let mut verdict = Verdict::default();
                if let Some((kind, family)) = KINDS.iter().find(|(kind, _)| *kind == stringify!($kind)) {
                    verdict.warn(warning(kind, *family));
                }
                verdict
            }

            fn validate_update(&self, _: &Self, _: &Context<'_>) -> Verdict {
                Verdict::default()
            }
        }
    )*};
}

unreconciled!(
    AzureMachinePool,
    AzureMachinePoolMachine,
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
    fn every_kind_waits_for_an_unreleased_family_and_says_so() {
        for (kind, family) in KINDS {
            assert!(
                !family.released(),
                "{kind} has a controller: take it off the list"
            );
            let text = warning(kind, family);
            assert!(text.starts_with(kind) && text.contains(family.name()), "{text}");
        }
    }
}
