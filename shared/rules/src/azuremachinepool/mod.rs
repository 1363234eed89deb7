//! AzureMachinePool and AzureMachinePoolMachine: the defaults, checks and immutability of a
//! virtual machine scale set's spec, and of the objects that stand for its instances.
//!
//! A pool's `spec.template` is the VM profile an AzureMachine has, so its defaults and checks are
//! the AzureMachine's ([`crate::azuremachine`]'s profile rules), found under `spec.template`; the
//! identities sit directly under `spec`. CAPZ applies fewer of them to a pool than to a machine
//! (no data disk or confidential VM checks, no data disk defaults), and so does capz-rs.
//!
//! ```text
//!                    AzureMachinePool                        AzureMachinePoolMachine
//!   gate             MachinePool off: refused, as CAPZ then serves no webhook for either
//!   defaults         SSH key, role assignment, diagnostics,  none
//!                    NICs, OS disk, spot eviction, strategy
//!   create checks    image, OS disk, key, identities and     none
//!                    role, diagnostics, subnet, termination
//!                    notice, strategy
//!   update checks    the create checks again, role name,     providerID once set
//!                    disableVMBootstrapExtension once set
//! ```
//!
//! Unlike a machine, a pool may change its key and identity, so as with CAPZ a pool gets its SSH
//! key and its role assignment's name whenever they are missing on a real create or update
//! (never on a dry run).
//!
//! ```text
//!   values      constants and readers the others share
//!   defaults    what is filled in besides the VM profile's defaults
//!   validation  what is refused on create and update, and the gate
//!   update      what may not change
//! ```

mod defaults;
mod update;
mod validation;
mod values;

use capz_api::{AzureMachinePool, AzureMachinePoolMachine};

use crate::azuremachine::profile::{
    default_diagnostics, default_identity_role, default_network_interfaces, default_spot_eviction_policy,
    default_ssh_key, identity_role_needs_subscription,
};
use crate::field::{FieldError, Verdict};
use crate::{Context, Features, Rules};
use defaults::{default_os_disk, default_strategy};
use update::{check_pool_machine_update, check_pool_update};
use validation::{check_machine_pool_gate, check_orchestration_mode, check_pool};
use values::template_path;

impl Rules for AzureMachinePool {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        if !ctx.features.machine_pool {
            // Validation refuses the pool; there is nothing to fill in.
            return Ok(());
        }
        let generate = !ctx.dry_run;
        let spec = &mut self.spec;
        let vm = &mut spec.template.vm;
        default_ssh_key(vm, ctx, generate, &template_path())?;
        default_diagnostics(vm);
        default_network_interfaces(vm);
        default_os_disk(vm);
        // CAPZ has this default for pools but leaves it to Azure, which deallocates; stating it
        // changes nothing but the Delete an ephemeral OS disk needs.
        default_spot_eviction_policy(vm);
        default_identity_role(&mut spec.identities, ctx, generate);
        default_strategy(spec);
        Ok(())
    }

    fn needs_cluster_subscription(&self) -> bool {
        identity_role_needs_subscription(&self.spec.identities)
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if check_machine_pool_gate(ctx.features, &mut verdict) {
            check_pool(&self.spec, !ctx.dry_run, &mut verdict);
            check_orchestration_mode(&self.spec, &ctx.machine_pool, &mut verdict);
        }
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if gate_refuses_update(ctx.features, self.spec != old.spec, &mut verdict) {
            return verdict;
        }
        check_pool(&self.spec, !ctx.dry_run, &mut verdict);
        // Only when the spec changes: metadata updates (a finalizer going while the MachinePool is
        // already deleted) must go through.
        if self.spec != old.spec {
            check_orchestration_mode(&self.spec, &ctx.machine_pool, &mut verdict);
        }
        check_pool_update(&old.spec, &self.spec, &mut verdict);
        verdict
    }
}

impl Rules for AzureMachinePoolMachine {
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        Ok(())
    }

    fn validate_create(&self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        check_machine_pool_gate(ctx.features, &mut verdict);
        verdict
    }

    fn validate_update(&self, old: &Self, ctx: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if !gate_refuses_update(ctx.features, self.spec != old.spec, &mut verdict) {
            check_pool_machine_update(&old.spec, &self.spec, &mut verdict);
        }
        verdict
    }
}

/// With the `MachinePool` gate off, a change of the spec is refused; the metadata may still
/// change (a finalizer removed), so that an object from before can go. Whether the update is
/// decided.
fn gate_refuses_update(features: Features, spec_changed: bool, verdict: &mut Verdict) -> bool {
    if features.machine_pool {
        return false;
    }
    if spec_changed {
        check_machine_pool_gate(features, verdict);
    }
    true
}

#[cfg(test)]
mod tests;
