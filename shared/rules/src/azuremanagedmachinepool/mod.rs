//! AzureManagedMachinePool and AzureManagedMachinePoolTemplate: an AKS node pool's defaults,
//! checks and immutability, and the rule that a cluster keeps a System pool.
//!
//! ```text
//!                    AzureManagedMachinePool              AzureManagedMachinePoolTemplate
//!   defaults         the agent pool mode label, the pool's name, Linux   (the same, on the template)
//!   create checks    max pods, System pools on Linux,     the same but the subnet name
//!                    name, node labels, public IP prefix,
//!                    kubelet and Linux OS settings, subnet
//!   update checks    immutability, node labels; no        the same (skipped for topology dry
//!                    leaving System mode as the last       runs), but not encryption at host
//!                    System pool
//!   delete checks    not the last System pool             not the last System pool of the
//!                                                         cluster its node labels name
//! ```
//!
//! The last-System-pool rule needs the pool's Cluster and how many System pools it has, which
//! the webhook server looks up ([`Rules::cluster_query`]); the rule is skipped when the pool names
//! no cluster, carries clusterctl's delete-for-move annotation, or its Cluster is gone or being
//! deleted.
//!
//! ```text
//!   validation  what is refused on create
//!   update      what may not change; the last System pool
//! ```

mod update;
mod validation;

use std::collections::BTreeMap;

use capz_api::azuremanagedmachinepool::{AzureManagedMachinePoolClassSpec, NodePoolMode, OsType};
use capz_api::{AzureManagedMachinePool, AzureManagedMachinePoolTemplate};
use kube::Resource as _;

use crate::field::{FieldError, FieldPath, Verdict};
use crate::{ClusterQuery, Context, Operation, Rules};
pub use update::{AGENT_POOL_MODE_LABEL, DELETE_FOR_MOVE_ANNOTATION};
use update::{Differences, LAST_SYSTEM_POOL, is_last_system_pool, leaves_system, system_pools_query};

/// The name of a mode as the label carries it.
fn mode_name(mode: NodePoolMode) -> &'static str {
    match mode {
        NodePoolMode::System => "System",
        NodePoolMode::User => "User",
    }
}

/// The defaults of a pool's spec and of the labels of the object holding it (named `name`).
fn default_pool(
    spec: &mut AzureManagedMachinePoolClassSpec,
    labels: &mut Option<BTreeMap<String, String>>,
    name: &str,
) {
    labels
        .get_or_insert_with(BTreeMap::new)
        .insert(AGENT_POOL_MODE_LABEL.to_owned(), mode_name(spec.mode).to_owned());
    if spec.name.as_deref().is_none_or(str::is_empty) {
        spec.name = Some(name.to_owned());
    }
    spec.os_type.get_or_insert(OsType::Linux);
}

fn spec_path() -> FieldPath {
    FieldPath::root("spec")
}

fn template_path() -> FieldPath {
    FieldPath::root("spec").child("template").child("spec")
}

/// The refusal of taking the pool at `at` out of the System pools, when it is the last one.
fn last_system_pool(ctx: &Context<'_>, at: &FieldPath, detail: &str, verdict: &mut Verdict) {
    if is_last_system_pool(&ctx.cluster) {
        verdict.reject(FieldError::forbidden(at.child("mode"), detail));
    }
}

const MODE_CHANGE: &str =
    "Cannot change node pool mode to User, you must have at least one System node pool in your cluster";

fn delete_refusal() -> String {
    format!(
        "{LAST_SYSTEM_POOL}; if the delete is triggered via owner MachinePool please refer to trouble shooting \
         section in https://capz.sigs.k8s.io/topics/managedcluster.html"
    )
}

impl Rules for AzureManagedMachinePool {
    const VALIDATES_DELETE: bool = true;

    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        let name = self.metadata.name.clone().unwrap_or_default();
        default_pool(&mut self.spec.class, &mut self.metadata.labels, &name);
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let name = self.metadata.name.as_deref().unwrap_or_default();
        validation::check_pool(&self.spec.class, name, &spec_path(), true, &mut verdict);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let mut old = old.clone();
        let name = old.metadata.name.clone().unwrap_or_default();
        default_pool(&mut old.spec.class, &mut old.metadata.labels, &name);
        let differences = Differences {
            encryption_at_host: true,
        };
        update::check_pool_update(
            &old.spec.class,
            &self.spec.class,
            &spec_path(),
            differences,
            &mut verdict,
        );
        if leaves_system(&old.spec.class, &self.spec.class) {
            last_system_pool(ctx, &spec_path(), MODE_CHANGE, &mut verdict);
        }
        verdict
    }

    fn validate_delete(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if self.spec.class.mode == NodePoolMode::System {
            last_system_pool(ctx, &spec_path(), &delete_refusal(), &mut verdict);
        }
        verdict
    }

    fn cluster_query(&self, old: Option<&Self>, operation: Operation) -> Option<ClusterQuery> {
        let asks = match (operation, old) {
            (Operation::Update, Some(old)) => leaves_system(&old.spec.class, &self.spec.class),
            (Operation::Delete, _) => self.spec.class.mode == NodePoolMode::System,
            _ => false,
        };
        asks.then(|| system_pools_query(self.meta().labels.as_ref(), self.meta().annotations.as_ref()))
            .flatten()
    }
}

impl Rules for AzureManagedMachinePoolTemplate {
    const VALIDATES_DELETE: bool = true;

    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        let name = self.metadata.name.clone().unwrap_or_default();
        default_pool(&mut self.spec.template.spec, &mut self.metadata.labels, &name);
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        let name = self.metadata.name.as_deref().unwrap_or_default();
        validation::check_pool(
            &self.spec.template.spec,
            name,
            &template_path(),
            false,
            &mut verdict,
        );
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if ctx.is_topology_dry_run(self) {
            return verdict;
        }
        let mut old = old.clone();
        let name = old.metadata.name.clone().unwrap_or_default();
        default_pool(&mut old.spec.template.spec, &mut old.metadata.labels, &name);
        let differences = Differences {
            encryption_at_host: false,
        };
        let (before, after) = (&old.spec.template.spec, &self.spec.template.spec);
        update::check_pool_update(before, after, &template_path(), differences, &mut verdict);
        if leaves_system(before, after) {
            last_system_pool(ctx, &template_path(), MODE_CHANGE, &mut verdict);
        }
        verdict
    }

    fn validate_delete(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if self.spec.template.spec.mode == NodePoolMode::System {
            last_system_pool(ctx, &template_path(), &delete_refusal(), &mut verdict);
        }
        verdict
    }

    /// As CAPZ: a template's cluster is the one its node labels name (which they rarely do).
    fn cluster_query(&self, old: Option<&Self>, operation: Operation) -> Option<ClusterQuery> {
        let spec = &self.spec.template.spec;
        let asks = match (operation, old) {
            (Operation::Update, Some(old)) => leaves_system(&old.spec.template.spec, spec),
            (Operation::Delete, _) => spec.mode == NodePoolMode::System,
            _ => false,
        };
        asks.then(|| system_pools_query(spec.node_labels.as_ref(), self.meta().annotations.as_ref()))
            .flatten()
    }
}

#[cfg(test)]
mod tests;
