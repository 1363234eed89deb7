//! Building a machine in order: availability set, network interfaces, virtual machine, role
//! assignment, VM extensions. Each step reads its resource once, writes only when it differs, and
//! stops the reconcile while an operation runs.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use capz_api::common::MachineAddress;
use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_api::{AzureCluster, AzureMachine};
use capz_azure::models::ArmModel as _;
use capz_azure::models::compute::VirtualMachine as VmModel;
use capz_azure::models::{ProvisioningState, Secret};
use capz_azure::{ArmClient, Category as ArmCategory};
use capz_kit::apply::apply_spec;
use capz_kit::conditions::Reason;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::presence::not_running;
use capz_kit::resource::{self, AzureResource, Progress, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_resources::network_interface::private_addresses;
use capz_resources::virtual_machine::{
    MachineInputs, ReferenceOs, VirtualMachine, is_windows, provider_id, resolve_image,
};
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use serde::Serialize;

use crate::plan::{self, Plan};
use crate::reconcile::{Failed, Found, POLL, awaits_ssh_rule, dependencies, on};
use crate::status::{Failure, Report};
use crate::{Error, ID, Shared};

/// How soon a machine that is not running yet is looked at again.
const NOT_RUNNING: Duration = Duration::from_secs(15);

/// The annotation naming a Windows machine's container runtime (CAPZ's).
const RUNTIME_ANNOTATION: &str = "runtime";
/// The annotation naming a Windows machine's Windows Server release (CAPZ's).
const WINDOWS_SERVER_ANNOTATION: &str = "windowsServerVersion";

/// The spec field compute writes.
#[derive(Debug, Serialize)]
struct OwnedSpec<'a> {
    #[serde(rename = "providerID")]
    provider_id: &'a str,
}

/// Where the virtual machine stands.
enum Machine {
    /// It exists, as read with its instance view.
    Found(Box<VmModel>),
    /// Its creation runs.
    Creating(Option<Duration>),
    /// It existed and is gone.
    Gone,
}

fn requeue(retry_after: Option<Duration>) -> Action {
    Action::requeue(retry_after.unwrap_or(POLL))
}

/// One converging reconcile of a live AzureMachine.
pub(crate) struct Run<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) api: &'a Api<AzureMachine>,
    pub(crate) machine: &'a AzureMachine,
    pub(crate) found: &'a Found,
    pub(crate) azure_cluster: &'a AzureCluster,
    pub(crate) report: &'a mut Report,
    pub(crate) operations: &'a mut Operations,
}

impl Run<'_> {
    /// Brings the machine's resources to its spec, step by step.
    pub(crate) async fn converge(&mut self) -> Result<Action, Failed> {
        let shared = self.shared;
        let scope = ClusterScope::new(
            self.azure_cluster,
            shared.features,
            shared.fallback_subscription.as_deref(),
        )?;
        let spec = plan::defaulted(self.machine, &scope, shared.features);
        let plan = Plan::new(
            &scope,
            self.azure_cluster,
            self.machine,
            &self.found.machine,
            &spec,
        )?;
        if let Some(wait) = dependencies(&scope, self.azure_cluster, plan.control_plane)
            .or_else(|| awaits_ssh_rule(self.machine, plan.ssh_rule))
        {
            // A wait for a controller that does not run says so.
            for family in wait.on {
                if !shared.presence.running(family).await {
                    self.report
                        .observe(not_running(ConditionType::VM_RUNNING, family));
                    return Ok(Action::await_change());
                }
            }
            self.report.fails(
                ConditionType::VM_RUNNING,
                Reason::WAITING_FOR_DEPENDENCY,
                ConditionSeverity::Info,
                wait.message,
            );
            return Ok(Action::await_change());
        }
        let credential = shared
            .identities
            .credential(ClusterIdentityRef::from(self.azure_cluster))
            .await?;
        let client = credential.arm_client(ID.user_agent());
        if let Some(action) = self.availability_set(&client, &plan).await? {
            return Ok(action);
        }
        let addresses = match self.interfaces(&client, &plan).await? {
            Ok(addresses) => addresses,
            Err(action) => return Ok(action),
        };
        let vm = match self.virtual_machine(&client, &scope, &plan, &spec).await? {
            Machine::Found(vm) => vm,
            Machine::Creating(retry_after) => {
                self.report.fails(
                    ConditionType::VM_RUNNING,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    format!("creating VM {}", plan.name),
                );
                return Ok(requeue(retry_after));
            }
            Machine::Gone => {
                self.gone(&plan);
                return Ok(Action::await_change());
            }
        };
        self.record_provider_id(&plan).await?;
        let mut listed = vec![MachineAddress {
            type_: "InternalDNS".to_owned(),
            address: plan.name.clone(),
        }];
        listed.extend(addresses.into_iter().map(|address| MachineAddress {
            type_: "InternalIP".to_owned(),
            address,
        }));
        self.report.addresses = Some(listed);
        let running = self.observe_vm(&vm);
        if let Some(action) = self.role_assignment(&client, &plan, &vm).await? {
            return Ok(action);
        }
        if let Some(action) = self.extensions(&client, &plan).await? {
            return Ok(action);
        }
        Ok(if running {
            Action::await_change()
        } else {
            Action::requeue(NOT_RUNNING)
        })
    }

    async fn availability_set(&mut self, client: &ArmClient, plan: &Plan) -> Result<Option<Action>, Failed> {
        let Some(set) = plan.availability_set.as_ref() else {
            return Ok(None);
        };
        let ready = ConditionType::AVAILABILITY_SET_READY;
        match resource::reconcile(client, set, self.operations)
            .await
            .map_err(on(ready.clone()))?
        {
            Progress::Done(_) => {
                self.report.holds(ready);
                Ok(None)
            }
            Progress::InProgress { retry_after } => {
                self.report.fails(
                    ready,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    format!("creating availability set {}", set.id().name()),
                );
                Ok(Some(requeue(retry_after)))
            }
        }
    }

    /// The interfaces, and their private addresses once all exist.
    async fn interfaces(
        &mut self,
        client: &ArmClient,
        plan: &Plan,
    ) -> Result<Result<Vec<String>, Action>, Failed> {
        let ready = ConditionType::NETWORK_INTERFACES_READY;
        let mut addresses = Vec::new();
        for interface in &plan.interfaces {
            match resource::reconcile(client, interface, self.operations)
                .await
                .map_err(on(ready.clone()))?
            {
                Progress::Done(model) => addresses.extend(private_addresses(&model)),
                Progress::InProgress { retry_after } => {
                    self.report.fails(
                        ready,
                        Reason::CREATING,
                        ConditionSeverity::Info,
                        format!("creating network interface {}", interface.id().name()),
                    );
                    return Ok(Err(requeue(retry_after)));
                }
            }
        }
        self.report.holds(ready);
        Ok(Ok(addresses))
    }

    /// The machine: read directly once it is recorded (a machine gone since is never made
    /// again), else created from the spec.
    async fn virtual_machine(
        &mut self,
        client: &ArmClient,
        scope: &ClusterScope,
        plan: &Plan,
        spec: &capz_api::AzureMachineSpec,
    ) -> Result<Machine, Failed> {
        let id = plan.vm.id();
        let recorded = self
            .machine
            .spec
            .provider_id
            .as_deref()
            .is_some_and(|id| !id.is_empty());
        if !recorded || self.operations.in_flight(VirtualMachine::SERVICE) > 0 {
            let vm = self.buildable_vm(scope, plan, spec).await?;
            if let Progress::InProgress { retry_after } =
                resource::reconcile(client, &vm, self.operations).await?
            {
                return Ok(Machine::Creating(retry_after));
            }
        }
        match client
            .get_expanded::<VmModel>(id, &VmModel::API_VERSION, "instanceView")
            .await
        {
            Ok(vm) => Ok(Machine::Found(Box::new(vm))),
            // Only a direct read saying so tells the machine is gone; anything else may pass.
            Err(error)
                if error.category() == ArmCategory::NotFound && error.code() == Some("ResourceNotFound") =>
            {
                Ok(Machine::Gone)
            }
            Err(source) => Err(ResourceError::Arm {
                action: "read",
                id: id.clone(),
                source,
            }
            .into()),
        }
    }

    /// The machine with everything it is created from: image, bootstrap data, interfaces.
    async fn buildable_vm(
        &self,
        scope: &ClusterScope,
        plan: &Plan,
        spec: &capz_api::AzureMachineSpec,
    ) -> Result<VirtualMachine, Failed> {
        let annotations = self.machine.annotations();
        let os = if is_windows(spec) {
            ReferenceOs::Windows {
                runtime: annotations.get(RUNTIME_ANNOTATION).map(String::as_str),
                server: annotations.get(WINDOWS_SERVER_ANNOTATION).map(String::as_str),
            }
        } else {
            ReferenceOs::Linux
        };
        let image = resolve_image(
            spec.vm.image.as_ref(),
            self.found.machine.spec.version.as_deref(),
            os,
        )
        .map_err(capz_resources::virtual_machine::MachineSpecError::from)?;
        let custom_data = self.bootstrap_data().await?;
        let inputs = MachineInputs {
            image,
            custom_data,
            network_interfaces: plan.interfaces.iter().map(|nic| nic.id().clone()).collect(),
            placement: plan.placement.clone(),
            tags: plan.tags.clone(),
        };
        Ok(VirtualMachine::new(scope, &plan.name, spec, inputs)?)
    }

    /// The bootstrap data of the Machine, base64 encoded as custom data. Never logged.
    async fn bootstrap_data(&self) -> Result<Secret, Error> {
        let name = self
            .found
            .machine
            .bootstrap_data_secret_name()
            .unwrap_or_default();
        let namespace = self.machine.namespace().unwrap_or_default();
        let secret = Api::<KubeSecret>::namespaced(self.shared.client.clone(), &namespace)
            .get_opt(name)
            .await?
            .ok_or_else(|| Error::Bootstrap(format!("the bootstrap data Secret {name} does not exist")))?;
        let value = secret
            .data
            .as_ref()
            .and_then(|data| data.get("value"))
            .ok_or_else(|| Error::Bootstrap(format!("the bootstrap data Secret {name} has no key value")))?;
        Ok(Secret::new(STANDARD.encode(&value.0)))
    }

    /// A machine gone after it existed is a failure for a person: it is not made again.
    fn gone(&mut self, plan: &Plan) {
        let message = format!(
            "VM {} was deleted outside of Cluster API; it is not recreated: delete the Machine to replace it",
            plan.name
        );
        self.report.fails(
            ConditionType::VM_RUNNING,
            Reason::VM_NOT_FOUND,
            ConditionSeverity::Error,
            message.clone(),
        );
        self.report.vm_state = Some("Deleted".to_owned());
        self.report.failure = Some(Failure {
            reason: "UpdateError".to_owned(),
            message,
        });
    }

    async fn record_provider_id(&self, plan: &Plan) -> Result<(), Failed> {
        let wanted = provider_id(plan.vm.id());
        if self.machine.spec.provider_id.as_deref() != Some(wanted.as_str()) {
            apply_spec(
                self.api,
                &ID.field_manager(),
                self.machine,
                &OwnedSpec { provider_id: &wanted },
            )
            .await
            .map_err(Error::from)?;
        }
        Ok(())
    }

    /// Reports the machine's state; whether it runs.
    fn observe_vm(&mut self, vm: &VmModel) -> bool {
        let properties = vm.properties.as_ref();
        let state = properties.and_then(|properties| properties.provisioning_state.clone());
        self.report.vm_state = state.as_ref().map(|state| state.as_str().to_owned());
        let power = properties
            .and_then(|properties| properties.instance_view.as_ref())
            .and_then(|view| view.power_state().map(str::to_owned));
        let running = ConditionType::VM_RUNNING;
        let disks = ConditionType::DISKS_READY;
        match state {
            Some(ProvisioningState::Succeeded) => self.report.holds(disks),
            Some(ProvisioningState::Failed) => {
                self.report.fails(
                    disks,
                    Reason::FAILED,
                    ConditionSeverity::Warning,
                    "the VM's provisioning failed",
                );
            }
            _ => self.report.fails(
                disks,
                Reason::CREATING,
                ConditionSeverity::Info,
                "the VM's disks are being created",
            ),
        }
        match (state, power.as_deref()) {
            (Some(ProvisioningState::Failed), _) => {
                self.report.fails(
                    running,
                    Reason::VM_PROVISION_FAILED,
                    ConditionSeverity::Error,
                    "the VM's provisioning failed; see its activity log in Azure",
                );
                false
            }
            (_, Some("running")) => {
                self.report.holds(running);
                true
            }
            (Some(ProvisioningState::Creating | ProvisioningState::Updating) | None, power) => {
                self.report.fails(
                    running,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    format!(
                        "the VM is being created (power state {})",
                        power.unwrap_or("unknown")
                    ),
                );
                false
            }
            (_, power) => {
                self.report.fails(
                    running,
                    Reason::VM_NOT_RUNNING,
                    ConditionSeverity::Warning,
                    format!("the VM's power state is {}", power.unwrap_or("unknown")),
                );
                false
            }
        }
    }

    /// The role assignment of a system-assigned identity, once the machine's identity exists.
    async fn role_assignment(
        &mut self,
        client: &ArmClient,
        plan: &Plan,
        vm: &VmModel,
    ) -> Result<Option<Action>, Failed> {
        let Some(role) = plan.role.as_ref() else {
            return Ok(None);
        };
        let ready = ConditionType::ROLE_ASSIGNMENT_READY;
        let principal = vm
            .identity
            .as_ref()
            .and_then(|identity| identity.principal_id.clone());
        if principal.is_none() {
            self.report.fails(
                ready,
                Reason::WAITING_FOR_DEPENDENCY,
                ConditionSeverity::Info,
                "waiting for the VM's system-assigned identity",
            );
            return Ok(Some(Action::requeue(POLL)));
        }
        let assignment = role.assignment(principal).map_err(on(ready.clone()))?;
        match resource::reconcile(client, &assignment, self.operations)
            .await
            .map_err(on(ready.clone()))?
        {
            Progress::Done(_) => {
                self.report.holds(ready);
                Ok(None)
            }
            Progress::InProgress { retry_after } => {
                self.report.fails(
                    ready,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating the role assignment",
                );
                Ok(Some(requeue(retry_after)))
            }
        }
    }

    /// The VM's extensions. `BootstrapSucceeded` reports them all, as in CAPZ: it holds once
    /// every one is installed, and an extension that failed (the bootstrap check does when the
    /// node never finished joining) is left for a person, without writing it again.
    async fn extensions(&mut self, client: &ArmClient, plan: &Plan) -> Result<Option<Action>, Failed> {
        let condition = ConditionType::BOOTSTRAP_SUCCEEDED;
        let mut installing = None;
        for extension in &plan.extensions {
            let name = extension.id().name().into_owned();
            let state = match resource::reconcile(client, extension, self.operations)
                .await
                .map_err(on(condition.clone()))?
            {
                Progress::Done(model) => model
                    .properties
                    .and_then(|properties| properties.provisioning_state),
                Progress::InProgress { retry_after } => {
                    installing.get_or_insert((name, retry_after));
                    continue;
                }
            };
            match state {
                Some(ProvisioningState::Succeeded) | None => {}
                Some(ProvisioningState::Failed) => {
                    let hint = if extension.is_bootstrap_check() {
                        ": the node did not report that it finished bootstrapping; see the VM's boot diagnostics"
                    } else {
                        "; see the extension's status on the VM in Azure"
                    };
                    self.report.fails(
                        condition,
                        Reason::BOOTSTRAP_FAILED,
                        ConditionSeverity::Error,
                        format!("VM extension {name} failed{hint}"),
                    );
                    return Ok(Some(Action::await_change()));
                }
                Some(_) => {
                    installing.get_or_insert((name, None));
                }
            }
        }
        if let Some((name, retry_after)) = installing {
            self.report.fails(
                condition,
                Reason::BOOTSTRAP_IN_PROGRESS,
                ConditionSeverity::Info,
                format!("installing VM extension {name}"),
            );
            return Ok(Some(requeue(retry_after)));
        }
        if !plan.extensions.is_empty() {
            self.report.holds(condition);
        }
        Ok(None)
    }
}
