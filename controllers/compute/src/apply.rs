//! Building a live AzureMachine, step by step in [`ORDER`]: availability set, network
//! interfaces, virtual machine, role assignment, VM extensions. Each step reads its resources
//! once, writes only when they differ, and holds back the steps after it while it is not done.

use std::time::Duration;

use capz_api::common::MachineAddress;
use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_api::controllers::Family;
use capz_api::{AzureCluster, AzureMachine, AzureMachineSpec};
use capz_azure::models::ArmModel as _;
use capz_azure::models::compute::VirtualMachine as VmModel;
use capz_azure::models::{ProvisioningState, Secret};
use capz_azure::{ArmClient, Category as ArmCategory};
use capz_kit::apply::apply_spec;
use capz_kit::azure_cluster::{Wait, dependencies};
use capz_kit::bootstrap;
use capz_kit::cluster::build_gate;
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::{Error, Failure};
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::{Direction, Outcome, Steps, waiting_on};
use capz_kit::resource::{self, AzureResource, Progress, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_resources::network_interface::private_addresses;
use capz_resources::virtual_machine::{
    MachineInputs, MachineSpecError, ReferenceOs, VirtualMachine, provider_id, resolve_image,
};
use serde::Serialize;

use crate::context::{Found, ID, State};
use crate::plan::{self, ORDER, Plan, SERVICES, Unit};
use crate::status::{self, Fields};

/// How soon a machine that is not running yet is looked at again.
const NOT_RUNNING: Duration = Duration::from_secs(15);

/// The spec field compute writes.
#[derive(Debug, Serialize)]
struct OwnedSpec<'a> {
    #[serde(rename = "providerID")]
    provider_id: &'a str,
}

/// Why a machine stopped short of being built, for a person to act on.
#[derive(Debug, thiserror::Error)]
enum Stopped {
    /// The machine existed and is gone: it is not made again.
    #[error(
        "VM {0} was deleted outside of Cluster API; it is not recreated: delete the Machine to replace it"
    )]
    Gone(String),
    /// An extension ended Failed; it is not written again.
    #[error("VM extension {name} failed{hint}")]
    Extension { name: String, hint: &'static str },
}

impl Classify for Stopped {
    fn category(&self) -> Category {
        Category::Terminal
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Gone(_) => Reason::VM_NOT_FOUND,
            Self::Extension { .. } => Reason::BOOTSTRAP_FAILED,
        }
    }
}

/// Why the machine cannot be built yet, if it cannot.
fn gate(found: &Found) -> Option<(Reason, String)> {
    let missing_bootstrap = found.machine.bootstrap_data_secret_name().is_none().then(|| {
        format!(
            "Machine {} to have spec.bootstrap.dataSecretName",
            found.machine.name_any()
        )
    });
    build_gate(&found.cluster, missing_bootstrap, found.azure_cluster.is_some())
}

/// Why a machine that gets an SSH inbound NAT rule waits for it: its interface is then created
/// once, with the rule, instead of being updated when the rule comes. A machine already past
/// that point (its interface or VM exists) is not held back; its interface joins the rule when
/// the loadbalancer controller reports it.
pub(crate) fn awaits_ssh_rule(machine: &AzureMachine, ssh_rule: bool) -> Option<Wait> {
    let conditions = machine.conditions();
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
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    found: &Found,
) -> Result<Action, Error> {
    if machine
        .status
        .as_ref()
        .is_some_and(|status| status.failure_reason.is_some())
    {
        // A machine that failed for good waits for a person (or a MachineHealthCheck).
        return Ok(Action::await_change());
    }
    let mut operations = Operations::owned(machine.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(machine.conditions(), Direction::Apply);
    let mut fields = Fields::default();
    let mut running = true;
    if let Some((reason, message)) = gate(found) {
        steps.observe(Observation::fails(
            ConditionType::VM_RUNNING,
            reason,
            ConditionSeverity::Info,
            message,
        ));
    } else if let Some(azure_cluster) = found.azure_cluster.as_ref() {
        let mut run = Run {
            state,
            api,
            machine,
            found,
            operations: &mut operations,
            fields: &mut fields,
            overrides: Vec::new(),
            addresses: Vec::new(),
            running: true,
            vm: None,
        };
        Box::pin(run.converge(azure_cluster, &mut steps)).await;
        running = run.running;
    }
    let pass = steps.finish();
    status::publish(api, machine, pass.observations.clone(), &operations, &fields).await?;
    let action = pass.next()?;
    Ok(if running || action != Action::await_change() {
        action
    } else {
        Action::requeue(NOT_RUNNING)
    })
}

/// One converging pass over a live AzureMachine.
struct Run<'a> {
    state: &'a State,
    api: &'a Api<AzureMachine>,
    machine: &'a AzureMachine,
    found: &'a Found,
    operations: &'a mut Operations,
    fields: &'a mut Fields,
    /// What a step observed beyond its own outcome, reported after it.
    overrides: Vec<Observation>,
    /// The interfaces' private addresses, reported once the machine exists.
    addresses: Vec<MachineAddress>,
    /// Whether the VM runs, as far as the pass got.
    running: bool,
    vm: Option<Box<VmModel>>,
}

/// The machine's plan and the ARM client, the inputs of its steps.
struct Inputs {
    scope: ClusterScope,
    spec: AzureMachineSpec,
    plan: Plan,
}

impl Run<'_> {
    /// Brings the machine's resources to its spec, reporting into `steps`.
    async fn converge(&mut self, azure_cluster: &AzureCluster, steps: &mut Steps<'_>) {
        let vm_step = |outcome| (ConditionType::VM_RUNNING, "virtual machine", outcome);
        let inputs = match self.inputs(azure_cluster) {
            Ok(inputs) => inputs,
            Err(failure) => {
                let (type_, what, outcome) = vm_step(Outcome::Failed(failure));
                return steps.record(type_, what, outcome);
            }
        };
        if let Some(wait) = dependencies(&inputs.scope, azure_cluster, inputs.plan.control_plane)
            .or_else(|| awaits_ssh_rule(self.machine, inputs.plan.ssh_rule))
        {
            // A wait for a controller that does not run says so.
            let (type_, what, outcome) =
                vm_step(waiting_on(&self.state.presence, &wait.on, wait.message).await);
            return steps.record(type_, what, outcome);
        }
        let client = match self
            .state
            .identities
            .credential(ClusterIdentityRef::from(azure_cluster))
            .await
        {
            Ok(credential) => credential.arm_client(ID.user_agent()),
            Err(error) => {
                let (type_, what, outcome) = vm_step(Outcome::failed(error));
                return steps.record(type_, what, outcome);
            }
        };
        for step in ORDER.iter().filter(|step| inputs.plan.expects(step.unit)) {
            steps
                .run(step, Box::pin(self.apply(&client, &inputs, step.unit)))
                .await;
            for observation in self.overrides.drain(..) {
                steps.observe(observation);
            }
        }
    }

    fn inputs(&self, azure_cluster: &AzureCluster) -> Result<Inputs, Failure> {
        let state = self.state;
        let scope = ClusterScope::new(
            azure_cluster,
            state.features,
            state.fallback_subscription.as_deref(),
        )?;
        let spec = plan::defaulted(self.machine, &scope, state.features);
        let plan = Plan::new(&scope, azure_cluster, self.machine, &self.found.machine, &spec)?;
        Ok(Inputs { scope, spec, plan })
    }

    async fn apply(&mut self, client: &ArmClient, inputs: &Inputs, unit: Unit) -> Outcome {
        let plan = &inputs.plan;
        let mut outcome = Outcome::Done;
        match unit {
            Unit::AvailabilitySet => {
                if let Some(set) = plan.availability_set.as_ref() {
                    outcome.absorb(resource::reconcile(client, set, self.operations).await);
                }
            }
            Unit::NetworkInterfaces => {
                for interface in &plan.interfaces {
                    if let Some(model) =
                        outcome.absorb(resource::reconcile(client, interface, self.operations).await)
                    {
                        self.addresses
                            .extend(
                                private_addresses(&model)
                                    .into_iter()
                                    .map(|address| MachineAddress {
                                        type_: "InternalIP".to_owned(),
                                        address,
                                    }),
                            );
                    }
                }
            }
            Unit::VirtualMachine => return self.virtual_machine(client, inputs).await,
            Unit::RoleAssignment => return self.role_assignment(client, plan).await,
            Unit::Extensions => return self.extensions(client, plan).await,
            Unit::Disks => {}
        }
        outcome
    }

    /// The machine: read directly once it is recorded (a machine gone since is never made
    /// again), else created from the spec.
    async fn virtual_machine(&mut self, client: &ArmClient, inputs: &Inputs) -> Outcome {
        let plan = &inputs.plan;
        let id = plan.vm.id();
        let recorded = self
            .machine
            .spec
            .provider_id
            .as_deref()
            .is_some_and(|id| !id.is_empty());
        if !recorded || self.operations.in_flight(VirtualMachine::SERVICE) > 0 {
            let vm = match self.buildable_vm(inputs).await {
                Ok(vm) => vm,
                Err(failure) => return Outcome::Failed(failure),
            };
            let mut outcome = Outcome::Done;
            outcome.absorb(resource::reconcile(client, &vm, self.operations).await);
            if !outcome.is_done() {
                return outcome;
            }
        }
        let vm = match client
            .get_expanded::<VmModel>(id, &VmModel::API_VERSION, "instanceView")
            .await
        {
            Ok(vm) => vm,
            // Only a direct read saying so tells the machine is gone; anything else may pass.
            Err(error)
                if error.category() == ArmCategory::NotFound && error.code() == Some("ResourceNotFound") =>
            {
                return self.gone(plan);
            }
            Err(source) => {
                return Outcome::failed(ResourceError::Arm {
                    action: "read",
                    id: id.clone(),
                    source,
                });
            }
        };
        if let Err(error) = self.record_provider_id(plan).await {
            return Outcome::failed(error);
        }
        // The machine's addresses: its name, then its interfaces' private addresses.
        let mut addresses = vec![MachineAddress {
            type_: "InternalDNS".to_owned(),
            address: plan.name.clone(),
        }];
        addresses.append(&mut self.addresses);
        self.fields.addresses = Some(addresses);
        self.observe_vm(&vm);
        self.vm = Some(Box::new(vm));
        Outcome::Done
    }

    /// The machine with everything it is created from: image, bootstrap data, interfaces.
    async fn buildable_vm(&self, inputs: &Inputs) -> Result<VirtualMachine, Failure> {
        let (plan, spec) = (&inputs.plan, &inputs.spec);
        let os = ReferenceOs::of(&spec.vm, self.machine.annotations());
        let image = resolve_image(
            spec.vm.image.as_ref(),
            self.found.machine.spec.version.as_deref(),
            os,
        )
        .map_err(MachineSpecError::from)?;
        let custom_data = self.bootstrap_data().await?;
        let inputs_of_vm = MachineInputs {
            image,
            custom_data,
            network_interfaces: plan.interfaces.iter().map(|nic| nic.id().clone()).collect(),
            placement: plan.placement.clone(),
            tags: plan.tags.clone(),
        };
        Ok(VirtualMachine::new(
            &inputs.scope,
            &plan.name,
            spec,
            inputs_of_vm,
        )?)
    }

    /// The bootstrap data of the Machine, base64 encoded as custom data. Never logged.
    async fn bootstrap_data(&self) -> Result<Secret, Failure> {
        let name = self
            .found
            .machine
            .bootstrap_data_secret_name()
            .unwrap_or_default();
        let namespace = self.machine.namespace().unwrap_or_default();
        Ok(bootstrap::custom_data(&self.state.client, &namespace, name).await?)
    }

    /// A machine gone after it existed is a failure for a person: it is not made again.
    fn gone(&mut self, plan: &Plan) -> Outcome {
        let stopped = Stopped::Gone(plan.name.clone());
        self.fields.vm_state = Some("Deleted".to_owned());
        self.fields.failure = Some(status::Failure {
            reason: "UpdateError".to_owned(),
            message: stopped.to_string(),
        });
        self.running = false;
        Outcome::failed(stopped)
    }

    async fn record_provider_id(&self, plan: &Plan) -> Result<(), Error> {
        let wanted = provider_id(plan.vm.id());
        if self.machine.spec.provider_id.as_deref() != Some(wanted.as_str()) {
            apply_spec(
                self.api,
                &ID.field_manager(),
                self.machine,
                &OwnedSpec { provider_id: &wanted },
            )
            .await?;
        }
        Ok(())
    }

    /// Reports the machine's state and whether it runs, beyond the step's outcome (the machine
    /// exists, so the steps after it go on).
    fn observe_vm(&mut self, vm: &VmModel) {
        let properties = vm.properties.as_ref();
        let state = properties.and_then(|properties| properties.provisioning_state.clone());
        self.fields.vm_state = state.as_ref().map(|state| state.as_str().to_owned());
        let power = properties
            .and_then(|properties| properties.instance_view.as_ref())
            .and_then(|view| view.power_state().map(str::to_owned));
        let running = ConditionType::VM_RUNNING;
        let disks = ConditionType::DISKS_READY;
        self.overrides.push(match state {
            Some(ProvisioningState::Succeeded) => Observation::holds(disks),
            Some(ProvisioningState::Failed) => Observation::fails(
                disks,
                Reason::FAILED,
                ConditionSeverity::Warning,
                "the VM's provisioning failed",
            ),
            _ => Observation::fails(
                disks,
                Reason::CREATING,
                ConditionSeverity::Info,
                "the VM's disks are being created",
            ),
        });
        let (observation, is_running) = match (state, power.as_deref()) {
            (Some(ProvisioningState::Failed), _) => (
                Observation::fails(
                    running,
                    Reason::VM_PROVISION_FAILED,
                    ConditionSeverity::Error,
                    "the VM's provisioning failed; see its activity log in Azure",
                ),
                false,
            ),
            (_, Some("running")) => (Observation::holds(running), true),
            (Some(ProvisioningState::Creating | ProvisioningState::Updating) | None, power) => (
                Observation::fails(
                    running,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    format!(
                        "the VM is being created (power state {})",
                        power.unwrap_or("unknown")
                    ),
                ),
                false,
            ),
            (_, power) => (
                Observation::fails(
                    running,
                    Reason::VM_NOT_RUNNING,
                    ConditionSeverity::Warning,
                    format!("the VM's power state is {}", power.unwrap_or("unknown")),
                ),
                false,
            ),
        };
        self.overrides.push(observation);
        self.running = is_running;
    }

    /// The role assignment of a system-assigned identity, once the machine's identity exists.
    async fn role_assignment(&mut self, client: &ArmClient, plan: &Plan) -> Outcome {
        let Some(role) = plan.role.as_ref() else {
            return Outcome::Done;
        };
        let principal = self
            .vm
            .as_ref()
            .and_then(|vm| vm.identity.as_ref())
            .and_then(|identity| identity.principal_id.clone());
        if principal.is_none() {
            self.overrides.push(Observation::fails(
                ConditionType::ROLE_ASSIGNMENT_READY,
                Reason::WAITING_FOR_DEPENDENCY,
                ConditionSeverity::Info,
                "waiting for the VM's system-assigned identity",
            ));
            // Azure gives the identity while it creates the machine: look again soon.
            return Outcome::InFlight(None);
        }
        let assignment = match role.assignment(principal) {
            Ok(assignment) => assignment,
            Err(error) => return Outcome::failed(error),
        };
        let mut outcome = Outcome::Done;
        outcome.absorb(resource::reconcile(client, &assignment, self.operations).await);
        outcome
    }

    /// The VM's extensions. `BootstrapSucceeded` reports them all, as in CAPZ: it holds once
    /// every one is installed, and an extension that failed (the bootstrap check does when the
    /// node never finished joining) is left for a person, without writing it again.
    async fn extensions(&mut self, client: &ArmClient, plan: &Plan) -> Outcome {
        let mut outcome = Outcome::Done;
        let mut installing = None;
        for extension in &plan.extensions {
            let name = extension.id().name().into_owned();
            let result = resource::reconcile(client, extension, self.operations).await;
            let in_flight = matches!(result, Ok(Progress::InProgress { .. }));
            let state = outcome
                .absorb(result)
                .and_then(|model| model.properties)
                .and_then(|properties| properties.provisioning_state);
            match state {
                _ if in_flight => {
                    installing.get_or_insert(name);
                }
                Some(ProvisioningState::Failed) => {
                    let hint = if extension.is_bootstrap_check() {
                        ": the node did not report that it finished bootstrapping; see the VM's boot diagnostics"
                    } else {
                        "; see the extension's status on the VM in Azure"
                    };
                    return Outcome::failed(Stopped::Extension { name, hint });
                }
                Some(ProvisioningState::Succeeded) | None => {}
                Some(_) => {
                    installing.get_or_insert(name);
                    outcome.absorb::<(), capz_kit::resource::ResourceError>(Ok(Progress::InProgress {
                        retry_after: None,
                    }));
                }
            }
        }
        if let (Some(name), Outcome::InFlight(_)) = (installing, &outcome) {
            self.overrides.push(Observation::fails(
                ConditionType::BOOTSTRAP_SUCCEEDED,
                Reason::BOOTSTRAP_IN_PROGRESS,
                ConditionSeverity::Info,
                format!("installing VM extension {name}"),
            ));
        }
        outcome
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
