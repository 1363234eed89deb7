//! The rules of AzureCluster and AzureClusterTemplate: the network CAPZ fills in (virtual
//! network, subnets with their security groups, route tables and NAT gateways, the load
//! balancers and their public IPs, the bastion), what Azure would refuse later, and what cannot
//! change once the cluster exists.
//!
//! ```text
//!   layout      the defaults' constants and the subnet ranges they come from
//!   defaults    what is filled in
//!   validation  what is refused on create (and again on update)
//!   update      what may not change
//! ```

mod defaults;
mod layout;
mod update;
mod validation;

use capz_api::{AzureCluster, AzureClusterTemplate};

use crate::field::{FieldError, FieldPath, Verdict};
use crate::{Context, Rules};

pub use defaults::{default_cluster, default_template, is_ipv6};
pub use layout::*;
pub(crate) use validation::check_private_endpoints;

impl Rules for AzureCluster {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        defaults::default_cluster(self, ctx.features);
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        validation::check_cluster(self, ctx.features, &mut verdict.errors);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = self.validate_create(ctx);
        update::check_cluster_update(self, old, &mut verdict.errors);
        verdict
    }
}

impl Rules for AzureClusterTemplate {
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        defaults::default_template(self);
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let spec = &self.spec.template.spec;
        let at = FieldPath::root("spec").child("template").child("spec");
        validation::check_class(&spec.class, &at, ctx.features, true, &mut verdict.errors);
        validation::check_network(
            &validation::NetworkView::of_template(spec),
            &at,
            true,
            &mut verdict.errors,
        );
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = self.validate_create(ctx);
        if ctx.is_topology_dry_run(self) {
            return verdict;
        }
        // Objects stored before a default was introduced compare as if they had it.
        let mut old = old.clone();
        defaults::default_template(&mut old);
        if old.spec.template.spec != self.spec.template.spec {
            verdict.reject(FieldError::forbidden(
                FieldPath::root("spec").child("template").child("spec"),
                "AzureClusterTemplate spec.template.spec field is immutable: create a new template and point the ClusterClass at it",
            ));
        }
        verdict
    }
}
