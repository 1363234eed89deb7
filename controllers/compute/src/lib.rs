//! The compute controller of capz-rs: for each AzureMachine, its virtual machine in Azure with
//! the network interfaces, disks, availability set and role assignment it needs.
//!
//! ```text
//!   AzureMachine ── owner Machine (bootstrap data, failure domain, version)
//!        │          owner Cluster (pause, infrastructure provisioned)
//!        │          AzureCluster (subnets and load balancers ready; names, ids, credentials)
//!        │          InboundNATRulesReady (a control-plane machine's SSH rule, from loadbalancer)
//!        ▼
//!   availability set ─▶ network interfaces ─▶ virtual machine ─▶ role assignment
//!        ▼
//!   spec.providerID, status.{ready, addresses, vmState}, conditions
//! ```
//!
//! Deletion goes the other way: the machine, its interfaces, its disks, the role assignment, and
//! the availability set once no machine uses it; then the finalizer goes.

#![deny(missing_docs)]

mod apply;
mod cleanup;
mod context;
mod plan;
mod reconcile;
mod status;

pub use context::ID;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use capz_api::capi::{Cluster, Machine, MachineSpec};
use capz_api::common::conditions::ConditionType;
use capz_api::{AzureCluster, AzureMachine, AzureMachineSpec};
use capz_kit::cluster::Owners;
use capz_kit::filter::{changes, hash_ownership};
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::runtime::reflector::ObjectRef;
use capz_kit::kube::runtime::{Controller, WatchStreamExt as _, predicates};
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::queue::counted;
use capz_kit::runner::{self, BoxError};
use capz_kit::watch::cached;

use crate::context::State;

/// Runs the controller until the runner's shutdown signal.
///
/// # Errors
/// When the identities cannot be set up (a custom cloud that cannot be resolved).
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let fallback_subscription = settings.environment.subscription_id.clone();
    let (controller, owners) = controller(&ctx);
    let state = Arc::new(State {
        identities: Identities::new(client.clone(), settings).await?,
        features: ctx.args().feature_gates,
        presence: ctx.presence(),
        fallback_subscription,
        client,
        owners,
    });
    ctx.run(controller, reconcile::reconcile, state).await;
    Ok(())
}

/// The AzureCluster conditions compute waits on.
const CLUSTER_DEPENDS_ON: &[ConditionType] =
    &[ConditionType::SUBNETS_READY, ConditionType::LOAD_BALANCERS_READY];

/// The controller of AzureMachines with its secondary watches, whose stores hold the owners its
/// reconciles read: every pass needs the machine's Machine, Cluster and AzureCluster.
fn controller(ctx: &runner::Context) -> (Controller<AzureMachine>, Owners) {
    let controller = ctx.filtered_controller(ctx.api::<AzureMachine>(), |machine: &AzureMachine| {
        Some(azure_machine_changes(machine))
    });
    let store = controller.store();
    let (machine_store, machines) = cached(ctx.api::<Machine>(), ctx.watcher_config());
    let machines = machines.touched_objects().predicate_filter(
        |machine: &Machine| Some(machine_changes(machine)),
        predicates_config(),
    );
    let (controller, owners) = ctx.wake_cluster_members_with_owners(
        controller.watches_stream(
            machines,
            counted(store, |machine: Machine| infrastructure_of(&machine)),
        ),
        |cluster: &Cluster| Some(cluster_changes(cluster)),
        changes::<AzureCluster>(CLUSTER_DEPENDS_ON),
    );
    (controller, owners.with_machines(machine_store))
}

fn predicates_config() -> capz_kit::kube::runtime::PredicateConfig {
    capz_kit::kube::runtime::PredicateConfig::default()
}

/// An AzureMachine matters for everything but its status and what compute writes itself, and for
/// the loadbalancer controller's `InboundNATRulesReady` changing status (a control-plane
/// interface waits for its SSH rule). Compute's own finalizer and `spec.providerID` are written
/// by a pass that goes on with what they allow: were they to wake it, every machine would cost
/// two more passes over its resources.
fn azure_machine_changes(machine: &AzureMachine) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_ownership(machine, Some(ID.finalizer()), &mut hasher);
    machine.labels().hash(&mut hasher);
    machine.annotations().hash(&mut hasher);
    let spec = AzureMachineSpec {
        provider_id: None,
        ..machine.spec.clone()
    };
    // The spec has no Hash of its own; its JSON is what the API server compares too.
    serde_json::to_vec(&spec).unwrap_or_default().hash(&mut hasher);
    machine
        .status
        .as_ref()
        .and_then(|status| status.conditions.get(&ConditionType::INBOUND_NAT_RULES_READY))
        .map(|condition| condition.status)
        .hash(&mut hasher);
    hasher.finish()
}

/// A Machine matters for the spec fields compute reads (bootstrap data, failure domain,
/// version), its deletion and its labels (control plane, deployment). Not for `spec.providerID`,
/// which Cluster API copies from the AzureMachine once compute has built it: waking on it (or on
/// the generation it bumps) would cost every machine one more pass over its resources.
fn machine_changes(machine: &Machine) -> u64 {
    let mut hasher = DefaultHasher::new();
    let spec = MachineSpec {
        provider_id: None,
        ..machine.spec.clone()
    };
    serde_json::to_vec(&spec).unwrap_or_default().hash(&mut hasher);
    machine.meta().deletion_timestamp.is_some().hash(&mut hasher);
    machine.labels().hash(&mut hasher);
    hasher.finish()
}

/// A Cluster matters for pause and for its infrastructure becoming provisioned.
fn cluster_changes(cluster: &Cluster) -> u64 {
    let mut hasher = DefaultHasher::new();
    predicates::generation(cluster).hash(&mut hasher);
    cluster.infrastructure_provisioned().hash(&mut hasher);
    cluster
        .annotations()
        .get(capz_kit::cluster::PAUSED_ANNOTATION)
        .hash(&mut hasher);
    hasher.finish()
}

/// The AzureMachine a Machine names as its infrastructure.
fn infrastructure_of(machine: &Machine) -> Option<ObjectRef<AzureMachine>> {
    let reference = machine.spec.infrastructure_ref.as_ref()?;
    reference
        .is(&AzureMachine::group(&()), &AzureMachine::kind(&()))
        .then(|| ObjectRef::new(&reference.name).within(&machine.namespace().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn machine(conditions: &[(&str, &str)]) -> AzureMachine {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(type_, status)| {
                json!({"type": type_, "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": {"name": "cp-0", "namespace": "n", "generation": 1},
            "spec": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn compute_is_not_woken_by_what_it_writes_itself_but_by_others_changes() {
        let base = machine(&[]);
        let hash = azure_machine_changes(&base);
        let mut own = base.clone();
        own.metadata.finalizers = Some(vec![ID.finalizer().to_owned()]);
        own.spec.provider_id = Some(
            "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/cp-0"
                .to_owned(),
        );
        own.metadata.generation = Some(2);
        assert_eq!(azure_machine_changes(&own), hash);

        let mut others = own.clone();
        others.metadata.finalizers = Some(vec![ID.finalizer().to_owned(), "other/finalizer".to_owned()]);
        assert_ne!(azure_machine_changes(&others), hash);
        let mut resized = own.clone();
        resized.spec.vm.vm_size = "Standard_D4s_v3".to_owned();
        assert_ne!(azure_machine_changes(&resized), hash);
        let mut deleted = own;
        deleted.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert_ne!(azure_machine_changes(&deleted), hash);
    }

    #[test]
    fn a_machine_wakes_compute_for_what_it_reads_and_not_for_the_provider_id_copied_back() {
        let machine: Machine = serde_json::from_value(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {"name": "m-0", "namespace": "n", "generation": 1},
            "spec": {"clusterName": "c", "bootstrap": {}, "version": "v1.34.1"},
        }))
        .unwrap();
        let hash = machine_changes(&machine);
        let mut copied = machine.clone();
        copied.spec.provider_id = Some(
            "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/m-0"
                .to_owned(),
        );
        copied.metadata.generation = Some(2);
        assert_eq!(machine_changes(&copied), hash);

        let mut bootstrapped = copied.clone();
        bootstrapped.spec.bootstrap.data_secret_name = Some("m-0-bootstrap".to_owned());
        assert_ne!(machine_changes(&bootstrapped), hash);
        let mut upgraded = copied;
        upgraded.spec.version = Some("v1.35.0".to_owned());
        assert_ne!(machine_changes(&upgraded), hash);
    }

    #[test]
    fn the_ssh_rule_condition_wakes_compute_and_its_own_status_writes_do_not() {
        let base = azure_machine_changes(&machine(&[("InboundNATRulesReady", "False")]));
        let own = machine(&[("InboundNATRulesReady", "False"), ("VMRunning", "True")]);
        assert_eq!(azure_machine_changes(&own), base);
        let rule = machine(&[("InboundNATRulesReady", "True")]);
        assert_ne!(azure_machine_changes(&rule), base);
    }
}
