//! AzureManagedControlPlane and AzureManagedControlPlaneTemplate: the defaults, checks and
//! immutability of an AKS cluster's settings, CAPZ's rule by rule.
//!
//! ```text
//!                    AzureManagedControlPlane             AzureManagedControlPlaneTemplate
//!   defaults         v prefix, sku tier, resource group   plugin, LB SKU, preview off, v prefix,
//!                    (cluster label), node resource       network ranges, subnet name, sku tier
//!                    group, network, OIDC profile, DNS
//!                    prefix, fleet member, extension plan
//!                    names, SSH key for ""
//!   create checks    the class checks (version, LB        the class checks, the template's name
//!                    profile, autoscaler, extensions,
//!                    security, network policy and data
//!                    plane, API server, network), name,
//!                    SSH key, identity, plugin mode, DNS
//!                    prefix, local accounts, fleet member;
//!                    with its Cluster: service range, DNS
//!                    service IP, private endpoints
//!   update checks    immutability (update), then the      immutability, then the create checks
//!                    create checks                        (skipped for topology dry runs)
//! ```
//!
//! The update checks compare the new object with the old one as defaulted today, so that an
//! object stored before a default existed is not refused for gaining it.
//!
//! ```text
//!   defaults    what is filled in
//!   validation  what is refused on create and update
//!   update      what may not change
//! ```

mod defaults;
mod update;
mod validation;

use capz_api::{AzureManagedControlPlane, AzureManagedControlPlaneTemplate};

use crate::field::{FieldError, FieldPath, Verdict};
use crate::{ClusterQuery, Context, Operation, Rules};

impl Rules for AzureManagedControlPlane {
    const REQUIRED_EVEN_EMPTY: &'static [&'static str] = &["/spec/resourceGroupName"];

    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        defaults::default_control_plane(self, ctx)
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_control_plane(self, ctx, &mut verdict);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let mut old = old.clone();
        defaults::default_fixed(&mut old);
        update::check_control_plane_update(&old, self, &mut verdict);
        // As CAPZ: the create checks only once nothing immutable changed.
        if verdict.allowed() {
            check_control_plane(self, ctx, &mut verdict);
        }
        verdict
    }

    fn cluster_query(&self, _old: Option<&Self>, operation: Operation) -> Option<ClusterQuery> {
        (operation != Operation::Delete)
            .then(|| validation::cluster_query(self.metadata.labels.as_ref()))
            .flatten()
    }
}

fn check_control_plane(plane: &AzureManagedControlPlane, ctx: &Context<'_>, verdict: &mut Verdict) {
    let at = FieldPath::root("spec");
    validation::check_class(&plane.spec.class, &at, verdict);
    validation::check_control_plane(plane, verdict);
    validation::check_cluster_network(&ctx.cluster, &plane.spec.class, &at, verdict);
}

impl Rules for AzureManagedControlPlaneTemplate {
    // A class leaves the group to each cluster: its control plane defaults it from its name.
    const REQUIRED_EVEN_EMPTY: &'static [&'static str] = &["/spec/template/spec/resourceGroupName"];

    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        defaults::default_template(self);
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_template(self, ctx, &mut verdict);
        if defaults::template_names_network(self) {
            verdict.warn(
                "spec.template.spec.virtualNetwork.name: a virtual network's name cannot be shared by \
                 clusters; leave it out of the template so that each cluster's network is named after it",
            );
        }
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if !ctx.is_topology_dry_run(self) {
            let mut old = old.clone();
            defaults::default_template(&mut old);
            update::check_template_update(&old, self, &mut verdict);
        }
        if verdict.allowed() {
            check_template(self, ctx, &mut verdict);
        }
        verdict
    }

    fn cluster_query(&self, _old: Option<&Self>, operation: Operation) -> Option<ClusterQuery> {
        (operation != Operation::Delete)
            .then(|| validation::cluster_query(self.metadata.labels.as_ref()))
            .flatten()
    }
}

fn check_template(template: &AzureManagedControlPlaneTemplate, ctx: &Context<'_>, verdict: &mut Verdict) {
    let at = FieldPath::root("spec").child("template").child("spec");
    let class = &template.spec.template.spec.class;
    validation::check_class(class, &at, verdict);
    validation::check_name(template.metadata.name.as_deref().unwrap_or_default(), verdict);
    validation::check_cluster_network(&ctx.cluster, class, &at, verdict);
}

#[cfg(test)]
mod tests;
