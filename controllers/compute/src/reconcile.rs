//! One reconcile of an AzureMachine: find its Machine, Cluster and AzureCluster, skip what is
//! not ours to do yet, then bring Azure to the spec or, once it is deleted, clean up.

use std::sync::Arc;
use std::time::Duration;

use capz_api::capi::{Cluster, Machine};
use capz_api::common::conditions::{ConditionSeverity, ConditionType, Conditions};
use capz_api::controllers::Family;
use capz_api::{AzureCluster, AzureMachine};
use capz_kit::cluster::{is_externally_managed, is_paused, owner_cluster, owner_machine};
use capz_kit::conditions::Reason;
use capz_kit::finalizer::finalized;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::policy::Classify;
use capz_kit::resource::AzureResource;
use capz_kit::scope::ClusterScope;
use capz_resources::availability_set::AvailabilitySet;
use capz_resources::disk::Disk;
use capz_resources::network_interface::NetworkInterface;
use capz_resources::role_assignment::RoleAssignment;
use capz_resources::virtual_machine::VirtualMachine;
use capz_resources::vm_extension::VmExtension;

use crate::status::{Report, publish};
use crate::{Error, ID, Shared, converge, delete};

/// The services whose operations compute records on an AzureMachine.
pub(crate) const SERVICES: &[&str] = &[
    AvailabilitySet::SERVICE,
    NetworkInterface::SERVICE,
    VirtualMachine::SERVICE,
    Disk::SERVICE,
    RoleAssignment::SERVICE,
    VmExtension::SERVICE,
];

/// The wait before looking again at an operation that gave no hint.
pub(crate) const POLL: Duration = Duration::from_secs(5);

/// What an AzureMachine belongs to.
pub(crate) struct Found {
    pub(crate) machine: Machine,
    pub(crate) cluster: Cluster,
    pub(crate) azure_cluster: Option<AzureCluster>,
}

/// A step that failed, with the condition it reports on.
pub(crate) struct Failed {
    pub(crate) condition: ConditionType,
    pub(crate) error: Error,
}

impl<E: Into<Error>> From<E> for Failed {
    fn from(error: E) -> Self {
        Self {
            condition: ConditionType::VM_RUNNING,
            error: error.into(),
        }
    }
}

/// Maps an error of a step to the step's condition.
pub(crate) fn on<E: Into<Error>>(condition: ConditionType) -> impl FnOnce(E) -> Failed {
    move |error| Failed {
        condition,
        error: error.into(),
    }
}

/// The reconcile of one AzureMachine.
pub(crate) async fn reconcile(machine: Arc<AzureMachine>, shared: Arc<Shared>) -> Result<Action, Error> {
    Box::pin(reconcile_machine(machine, &shared)).await
}

async fn reconcile_machine(machine: Arc<AzureMachine>, shared: &Shared) -> Result<Action, Error> {
    let client = &shared.client;
    let cluster = owner_cluster(client, machine.as_ref()).await?;
    if is_paused(cluster.as_ref(), machine.as_ref()) {
        return Ok(Action::await_change());
    }
    let owner = owner_machine(client, machine.as_ref()).await?;
    let (Some(cluster), Some(owner)) = (cluster, owner) else {
        // Cluster API has not linked the machine yet (an owner reference change wakes it), or
        // the owners went before it: without them nothing can be found to clean up.
        let ours = machine
            .finalizers()
            .iter()
            .any(|finalizer| finalizer == ID.finalizer());
        if machine.metadata.deletion_timestamp.is_some() && ours {
            return Err(Error::Orphaned(format!(
                "the Machine or Cluster of AzureMachine {} is gone; its Azure resources cannot be found",
                machine.name_any()
            )));
        }
        return Ok(Action::await_change());
    };
    let namespace = machine.namespace().unwrap_or_default();
    let azure_cluster = azure_cluster_of(shared, &cluster, &namespace).await?;
    let found = Found {
        machine: owner,
        cluster,
        azure_cluster,
    };
    let api = Api::<AzureMachine>::namespaced(client.clone(), &namespace);
    finalized(&api, ID.finalizer(), machine, async |event| match event {
        Event::Apply(machine) => apply(shared, &api, &machine, &found).await,
        Event::Cleanup(machine) => delete::cleanup(shared, &api, &machine, &found).await,
    })
    .await
}

/// The AzureCluster the Cluster names as its infrastructure.
async fn azure_cluster_of(
    shared: &Shared,
    cluster: &Cluster,
    namespace: &str,
) -> Result<Option<AzureCluster>, Error> {
    let Some(reference) = cluster.spec.infrastructure_ref.as_ref() else {
        return Ok(None);
    };
    if reference.kind != "AzureCluster" {
        return Ok(None);
    }
    Ok(Api::<AzureCluster>::namespaced(shared.client.clone(), namespace)
        .get_opt(&reference.name)
        .await?)
}

/// Why the machine cannot be built yet, if it cannot.
fn gate(found: &Found) -> Option<(Reason, String)> {
    if !found.cluster.infrastructure_provisioned() {
        return Some((
            Reason::WAITING_FOR_CLUSTER_INFRASTRUCTURE,
            format!(
                "waiting for Cluster {} to have its infrastructure provisioned",
                found.cluster.name_any()
            ),
        ));
    }
    if found.machine.bootstrap_data_secret_name().is_none() {
        return Some((
            Reason::WAITING_FOR_BOOTSTRAP_DATA,
            format!(
                "waiting for Machine {} to have spec.bootstrap.dataSecretName",
                found.machine.name_any()
            ),
        ));
    }
    if found.azure_cluster.is_none() {
        return Some((
            Reason::WAITING_FOR_DEPENDENCY,
            format!(
                "waiting for the AzureCluster that Cluster {} names in spec.infrastructureRef",
                found.cluster.name_any()
            ),
        ));
    }
    None
}

/// What a machine waits for: a sentence for people, and the families whose controllers write
/// the conditions it waits on.
pub(crate) struct Wait {
    pub(crate) message: String,
    pub(crate) on: Vec<Family>,
}

/// Why the machine waits for peers' work: the subnets and the load balancers its interface joins.
/// An externally managed AzureCluster has no such conditions: Cluster API's gate is all there is.
/// Once the AzureCluster has been Ready (`status.ready` stays true) they exist: a peer's later
/// check that failed (a throttled read, say) turns its condition False for a while, and must not
/// hold machines back, as CAPZ's machines only wait for the cluster's infrastructure once.
pub(crate) fn dependencies(
    scope: &ClusterScope,
    azure_cluster: &AzureCluster,
    control_plane: bool,
) -> Option<Wait> {
    let was_ready = azure_cluster.status.as_ref().and_then(|status| status.ready) == Some(true);
    if was_ready || is_externally_managed(azure_cluster) {
        return None;
    }
    let holds = |conditions: Option<&Conditions>, type_: &ConditionType| {
        conditions.is_some_and(|conditions| conditions.is_true(type_))
    };
    let cluster_conditions = azure_cluster.status.as_ref().map(|status| &status.conditions);
    let network = scope.spec.network_spec.as_ref();
    let joins_pool = if control_plane {
        network.is_some_and(|network| {
            network.api_server_lb.is_some() || network.control_plane_outbound_lb.is_some()
        })
    } else {
        network.is_some_and(|network| network.node_outbound_lb.is_some())
    };
    let mut waiting = Vec::new();
    let mut on = Vec::new();
    if !holds(cluster_conditions, &ConditionType::SUBNETS_READY) {
        waiting.push("SubnetsReady on the AzureCluster");
        on.push(Family::Network);
    }
    if joins_pool && !holds(cluster_conditions, &ConditionType::LOAD_BALANCERS_READY) {
        waiting.push("LoadBalancersReady on the AzureCluster");
        on.push(Family::LoadBalancer);
    }
    (!waiting.is_empty()).then(|| Wait {
        message: format!("waiting for {}", waiting.join(", ")),
        on,
    })
}

/// Why a machine that gets an SSH inbound NAT rule waits for it: its interface is then created
/// once, with the rule, instead of being updated when the rule comes. A machine already past
/// that point (its interface or VM exists) is not held back; its interface joins the rule when
/// the loadbalancer controller reports it.
pub(crate) fn awaits_ssh_rule(machine: &AzureMachine, ssh_rule: bool) -> Option<Wait> {
    let conditions = machine.status.as_ref().map(|status| &status.conditions);
    let holds = |type_: &ConditionType| conditions.is_some_and(|conditions| conditions.is_true(type_));
    let vm_recorded = machine
        .spec
        .provider_id
        .as_deref()
        .is_some_and(|id| !id.is_empty());
    let past = vm_recorded || holds(&ConditionType::NETWORK_INTERFACES_READY);
    (ssh_rule && !past && !holds(&ConditionType::INBOUND_NAT_RULES_READY)).then(|| Wait {
        message: "waiting for InboundNATRulesReady on the AzureMachine: its SSH inbound NAT rule, which the \
                  loadbalancer controller creates"
            .to_owned(),
        on: vec![Family::LoadBalancer],
    })
}

/// Brings Azure to the spec of a live AzureMachine and reports where it stands.
async fn apply(
    shared: &Shared,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    found: &Found,
) -> Result<Action, Error> {
    let recorded = machine
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states);
    let mut operations = Operations::owned(recorded, ID.name(), SERVICES);
    if machine
        .status
        .as_ref()
        .is_some_and(|status| status.failure_reason.is_some())
    {
        // A machine that failed for good waits for a person (or a MachineHealthCheck).
        return Ok(Action::await_change());
    }
    let mut report = Report::default();
    report.not_yet(machine);
    if let Some((reason, message)) = gate(found) {
        report.fails(
            ConditionType::VM_RUNNING,
            reason,
            ConditionSeverity::Info,
            message,
        );
        publish(api, machine, &report, &operations).await?;
        return Ok(Action::await_change());
    }
    let outcome = match found.azure_cluster.as_ref() {
        Some(azure_cluster) => {
            let mut run = converge::Run {
                shared,
                api,
                machine,
                found,
                azure_cluster,
                report: &mut report,
                operations: &mut operations,
            };
            Box::pin(run.converge()).await
        }
        None => Ok(Action::await_change()),
    };
    settle(api, machine, report, &operations, outcome).await
}

/// Reports the outcome of a reconcile in status; a failure then goes on to the kit's wrapper.
pub(crate) async fn settle(
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    mut report: Report,
    operations: &Operations,
    outcome: Result<Action, Failed>,
) -> Result<Action, Error> {
    match outcome {
        Ok(action) => {
            publish(api, machine, &report, operations).await?;
            Ok(action)
        }
        Err(Failed { condition, error }) => {
            report.fails(
                condition,
                error.reason(),
                error.category().severity(),
                error.to_string(),
            );
            publish(api, machine, &report, operations).await?;
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use capz_api::AzureCluster;
    use capz_kit::scope::ClusterScope;
    use serde_json::json;

    use super::{awaits_ssh_rule, dependencies};

    fn cluster(ready: Option<bool>, subnets: &str) -> AzureCluster {
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c", "namespace": "n"},
            "spec": {
                "subscriptionID": "00000000-0000-0000-0000-000000000000",
                "location": "westeurope",
            },
            "status": {
                "ready": ready,
                "conditions": [
                    {"type": "SubnetsReady", "status": subnets, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "LoadBalancersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                ],
            },
        }))
        .unwrap()
    }

    #[test]
    fn machines_wait_for_subnets_only_until_the_cluster_was_ready() {
        let waiting = cluster(None, "False");
        let scope = ClusterScope::new(&waiting, capz_rules::Features::default(), None).unwrap();
        let wait = dependencies(&scope, &waiting, true).unwrap();
        assert_eq!(wait.message, "waiting for SubnetsReady on the AzureCluster");
        assert_eq!(wait.on, [capz_api::controllers::Family::Network]);
        assert!(dependencies(&scope, &cluster(None, "True"), true).is_none());
        // A failed check after the cluster was built does not hold the machine back.
        assert!(dependencies(&scope, &cluster(Some(true), "False"), true).is_none());
    }

    fn machine(provider_id: Option<&str>, conditions: &[(&str, &str)]) -> capz_api::AzureMachine {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(type_, status)| json!({"type": type_, "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"}))
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureMachine",
            "metadata": {"name": "cp-0", "namespace": "n"},
            "spec": {"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux"}, "providerID": provider_id},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn a_machine_with_an_ssh_rule_waits_for_it_only_before_its_interface_exists() {
        let fresh = machine(None, &[]);
        let waiting = awaits_ssh_rule(&fresh, true).unwrap().message;
        assert!(waiting.contains("InboundNATRulesReady"), "{waiting}");
        assert!(awaits_ssh_rule(&fresh, false).is_none(), "no rule to wait for");
        let reported = machine(None, &[("InboundNATRulesReady", "True")]);
        assert!(awaits_ssh_rule(&reported, true).is_none());
        let not_yet = machine(None, &[("InboundNATRulesReady", "False")]);
        assert!(awaits_ssh_rule(&not_yet, true).is_some());
        // Machines built before the rule came (or whose rule check fails later) go on.
        let with_interface = machine(None, &[("NetworkInterfacesReady", "True")]);
        assert!(awaits_ssh_rule(&with_interface, true).is_none());
        let with_vm = machine(
            Some(
                "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/cp-0",
            ),
            &[],
        );
        assert!(awaits_ssh_rule(&with_vm, true).is_none());
    }
}
