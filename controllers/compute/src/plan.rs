//! The Azure resources of one AzureMachine, derived from its spec, its Machine and its cluster
//! without calling anything (names, subnets, pools, placement, tags), and the order of the steps
//! that create them ([`ORDER`]) and delete them ([`DELETION`]).

use capz_api::capi::Machine;
use capz_api::common::conditions::ConditionType;
use capz_api::{AzureCluster, AzureMachine, AzureMachineSpec};
use capz_kit::cluster::is_control_plane;
use capz_kit::kube::ResourceExt as _;
use capz_kit::progress::Step;
use capz_kit::resource::AzureResource as _;
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{Role, Tags};
use capz_resources::availability_set::{self, AvailabilitySet};
use capz_resources::disk::{self, Disk};
use capz_resources::inbound_nat_rule::gets_rule;
use capz_resources::network_interface::{self, Attachments, NetworkInterface, backend_pool, subnet_for_role};
use capz_resources::role_assignment::{IdentityRole, RoleAssignment};
use capz_resources::virtual_machine::{self, MachineSpecError, Placement, VirtualMachine, invalid};
use capz_resources::vm_extension::{self, VmExtension};
use capz_rules::{Context, Entropy, Features, Operation, Rules as _};

/// The services whose operations compute records on an AzureMachine.
pub(crate) const SERVICES: &[&str] = &[
    AvailabilitySet::SERVICE,
    NetworkInterface::SERVICE,
    VirtualMachine::SERVICE,
    Disk::SERVICE,
    RoleAssignment::SERVICE,
    VmExtension::SERVICE,
];

/// A step of a machine's reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    AvailabilitySet,
    NetworkInterfaces,
    VirtualMachine,
    /// The OS and data disks, created with the machine and deleted after it.
    Disks,
    RoleAssignment,
    Extensions,
}

const fn step(unit: Unit, condition: ConditionType, what: &'static str) -> Step<Unit> {
    Step {
        unit,
        condition,
        what,
    }
}

const AVAILABILITY_SET: Step<Unit> = step(
    Unit::AvailabilitySet,
    ConditionType::AVAILABILITY_SET_READY,
    "availability set",
);
const NETWORK_INTERFACES: Step<Unit> = step(
    Unit::NetworkInterfaces,
    ConditionType::NETWORK_INTERFACES_READY,
    "network interfaces",
);
const VIRTUAL_MACHINE: Step<Unit> = step(Unit::VirtualMachine, ConditionType::VM_RUNNING, "virtual machine");
const DISKS: Step<Unit> = step(Unit::Disks, ConditionType::DISKS_READY, "disks");
const ROLE_ASSIGNMENT: Step<Unit> = step(
    Unit::RoleAssignment,
    ConditionType::ROLE_ASSIGNMENT_READY,
    "role assignment",
);
const EXTENSIONS: Step<Unit> = step(
    Unit::Extensions,
    ConditionType::BOOTSTRAP_SUCCEEDED,
    "VM extensions",
);

/// The steps that build a machine, in order: the interfaces join the availability set's
/// machine, the role assignment needs the machine's identity, the extensions run on it.
pub(crate) const ORDER: &[Step<Unit>] = &[
    AVAILABILITY_SET,
    NETWORK_INTERFACES,
    VIRTUAL_MACHINE,
    ROLE_ASSIGNMENT,
    EXTENSIONS,
];

/// The steps that delete it: the machine first (it holds its interfaces and disks), its
/// availability set last, once no other machine is in it.
pub(crate) const DELETION: &[Step<Unit>] = &[
    VIRTUAL_MACHINE,
    NETWORK_INTERFACES,
    DISKS,
    ROLE_ASSIGNMENT,
    AVAILABILITY_SET,
];

/// The label naming a Machine's MachineDeployment.
const DEPLOYMENT_LABEL: &str = "cluster.x-k8s.io/deployment-name";
/// The label naming a Machine's MachineSet.
const SET_LABEL: &str = "cluster.x-k8s.io/set-name";

/// A source of randomness that is never asked: defaulting in the controller generates nothing.
struct NoEntropy;

impl Entropy for NoEntropy {
    fn ssh_public_key(&self) -> Result<String, String> {
        Err("the controller generates no keys".to_owned())
    }

    fn uuid(&self) -> String {
        String::new()
    }
}

/// The spec of `machine` with the defaults admission gives (those that need no randomness),
/// so that a machine stored without the webhook means the same.
pub(crate) fn defaulted(
    machine: &AzureMachine,
    scope: &ClusterScope,
    features: Features,
) -> AzureMachineSpec {
    let mut defaulted = machine.clone();
    let context = Context {
        operation: Operation::Update,
        dry_run: true,
        features,
        entropy: &NoEntropy,
        cluster_subscription_id: Some(scope.subscription.to_string()),
        machine_pool: capz_rules::PoolOwner::NotLookedUp,
        cluster: capz_rules::OwnerCluster::NotLookedUp,
    };
    // Defaulting fails only when it must generate a value, which it may not do here.
    if defaulted.default(&context).is_err() {
        return machine.spec.clone();
    }
    defaulted.spec
}

/// Everything of one machine but its VM body, which needs the bootstrap data and image.
pub(crate) struct Plan {
    /// The VM's name, from which its interfaces and disks are named.
    pub(crate) name: String,
    pub(crate) control_plane: bool,
    /// Whether the machine gets an SSH inbound NAT rule (from the loadbalancer controller).
    pub(crate) ssh_rule: bool,
    pub(crate) tags: Tags,
    pub(crate) availability_set: Option<AvailabilitySet>,
    pub(crate) interfaces: Vec<NetworkInterface>,
    pub(crate) vm: VirtualMachine,
    pub(crate) disks: Vec<Disk>,
    pub(crate) role: Option<IdentityRole>,
    pub(crate) extensions: Vec<VmExtension>,
    pub(crate) placement: Placement,
}

impl Plan {
    /// Whether the machine has resources of the step of `unit`.
    pub(crate) fn expects(&self, unit: Unit) -> bool {
        match unit {
            Unit::AvailabilitySet => self.availability_set.is_some(),
            Unit::NetworkInterfaces | Unit::VirtualMachine => true,
            Unit::Disks => !self.disks.is_empty(),
            Unit::RoleAssignment => self.role.is_some(),
            Unit::Extensions => !self.extensions.is_empty(),
        }
    }

    /// The plan of `azure_machine`, owned by `machine`, in the cluster of `scope`.
    pub(crate) fn new(
        scope: &ClusterScope,
        azure_cluster: &AzureCluster,
        azure_machine: &AzureMachine,
        machine: &Machine,
        spec: &AzureMachineSpec,
    ) -> Result<Self, MachineSpecError> {
        let name = vm_name(azure_machine, spec);
        let control_plane = is_control_plane(azure_machine, machine);
        let role = if control_plane {
            Role::ControlPlane
        } else {
            Role::Node
        };
        let tags = scope.machine_tags(role, spec.additional_tags.as_ref());
        let placement = placement(scope, azure_cluster, azure_machine, machine, spec)?;
        let availability_set = placement
            .availability_set
            .as_ref()
            .map(|set| {
                AvailabilitySet::new(
                    scope,
                    &set.name(),
                    &scope.machine_additional_tags(spec.additional_tags.as_ref()),
                )
            })
            .transpose()
            .map_err(|err| invalid("metadata.labels", err.to_string()))?;
        // The SSH NAT rule is the loadbalancer controller's to create; the interface refers to it
        // only once that controller reports it on the machine.
        let ssh_rule = gets_rule(azure_cluster, scope, control_plane);
        let nat_rule = ssh_rule
            && azure_machine.status.as_ref().is_some_and(|status| {
                status
                    .conditions
                    .is_true(&capz_api::common::conditions::ConditionType::INBOUND_NAT_RULES_READY)
            });
        let interfaces = interfaces(scope, &name, spec, control_plane, nat_rule, &tags)?;
        let vm =
            VirtualMachine::named(scope, &name).map_err(|err| invalid("metadata.name", err.to_string()))?;
        let disk_names = std::iter::once(disk::os_disk_name(&name)).chain(
            spec.vm
                .data_disks
                .iter()
                .flatten()
                .map(|data| disk::data_disk_name(&name, &data.name_suffix)),
        );
        let disks = disk_names
            .map(|disk_name| Disk::new(scope, &disk_name))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| invalid("spec.dataDisks[].nameSuffix", err.to_string()))?;
        let role = IdentityRole::of(&spec.identities, capz_kit::resource::AzureResource::id(&vm));
        let extensions = vm_extension::for_machine(
            capz_kit::resource::AzureResource::id(&vm),
            &scope.location,
            spec,
            scope.spec.class.azure_environment.as_deref(),
        )
        .map_err(|err| invalid("spec.vmExtensions[].name", err.to_string()))?;
        Ok(Self {
            name,
            control_plane,
            ssh_rule,
            tags,
            availability_set,
            interfaces,
            vm,
            disks,
            role,
            extensions,
            placement,
        })
    }
}

/// The VM's name: the one recorded in `spec.providerID` once there is one (CAPZ's naming rules
/// changed over time, and a machine keeps the VM it has), else derived from the AzureMachine's.
fn vm_name(azure_machine: &AzureMachine, spec: &AzureMachineSpec) -> String {
    let recorded = spec
        .provider_id
        .as_deref()
        .and_then(|id| id.rsplit_once("/virtualMachines/"))
        .map(|(_, name)| name)
        .filter(|name| !name.is_empty() && !name.contains('/'));
    recorded.map_or_else(
        || virtual_machine::vm_name(&azure_machine.name_any(), virtual_machine::is_windows(spec)),
        str::to_owned,
    )
}

/// A zone when the Machine (or, deprecated, the AzureMachine) names a failure domain; else an
/// availability set when the region has no zones and the machine belongs to a group.
fn placement(
    scope: &ClusterScope,
    azure_cluster: &AzureCluster,
    azure_machine: &AzureMachine,
    machine: &Machine,
    spec: &AzureMachineSpec,
) -> Result<Placement, MachineSpecError> {
    let zone = machine
        .spec
        .failure_domain
        .clone()
        .or_else(|| spec.failure_domain.clone())
        .filter(|zone| !zone.is_empty());
    if zone.is_some() {
        return Ok(Placement {
            zone,
            availability_set: None,
        });
    }
    let region_has_zones = azure_cluster
        .status
        .as_ref()
        .and_then(|status| status.failure_domains.as_ref())
        .is_some_and(|domains| !domains.is_empty());
    if region_has_zones || spec.vm.spot_vm_options.is_some() {
        return Ok(Placement::default());
    }
    let group = if is_control_plane(azure_machine, machine) {
        Some(availability_set::CONTROL_PLANE_GROUP.to_owned())
    } else {
        let labels = machine.labels();
        labels
            .get(DEPLOYMENT_LABEL)
            .or_else(|| labels.get(SET_LABEL))
            .cloned()
    };
    let availability_set = group
        .map(|group| {
            scope.id_of::<capz_azure::models::compute::AvailabilitySet>(&availability_set::name(
                &scope.name,
                &group,
            ))
        })
        .transpose()
        .map_err(|err| invalid("metadata.labels", err.to_string()))?;
    Ok(Placement {
        zone: None,
        availability_set,
    })
}

/// The load balancer pools and NAT rules the primary interface joins: the API server load
/// balancer's pool (and the control-plane outbound one) for the control plane, with its SSH NAT
/// rule once `nat_rule` says it exists; the node outbound pool for other machines.
fn attachments(
    scope: &ClusterScope,
    machine: &str,
    control_plane: bool,
    nat_rule: bool,
) -> Result<Attachments, MachineSpecError> {
    let network = scope.spec.network_spec.as_ref();
    let pool = |lb| backend_pool(scope, lb);
    let mut attachments = Attachments::default();
    if control_plane {
        let api = network.and_then(|network| network.api_server_lb.as_ref());
        if let Some((lb, backend)) = pool(api)? {
            attachments.backend_pools.push(backend);
            if nat_rule {
                let rule = lb
                    .child("inboundNatRules", machine)
                    .map_err(|err| invalid("metadata.name", err.to_string()))?;
                attachments.nat_rules.push(rule);
            }
        }
        if let Some((_, backend)) =
            pool(network.and_then(|network| network.control_plane_outbound_lb.as_ref()))?
        {
            attachments.backend_pools.push(backend);
        }
    } else if let Some((_, backend)) = pool(network.and_then(|network| network.node_outbound_lb.as_ref()))? {
        attachments.backend_pools.push(backend);
    }
    Ok(attachments)
}

fn interfaces(
    scope: &ClusterScope,
    machine: &str,
    spec: &AzureMachineSpec,
    control_plane: bool,
    nat_rule: bool,
    tags: &Tags,
) -> Result<Vec<NetworkInterface>, MachineSpecError> {
    let listed = spec.vm.network_interfaces.clone().unwrap_or_default();
    let count = listed.len().max(1);
    let listed = if listed.is_empty() {
        vec![capz_api::common::compute::NetworkInterface::default()]
    } else {
        listed
    };
    listed
        .iter()
        .enumerate()
        .map(
            |(index, interface): (usize, &capz_api::common::compute::NetworkInterface)| {
                let subnet = subnet_for_role(scope, interface.subnet_name.as_deref(), control_plane)?;
                let subnet_id = scope
                    .subnet_id(&subnet)
                    .map_err(|err| invalid("spec.networkInterfaces[].subnetName", err.to_string()))?;
                let name = network_interface::name(machine, index, count);
                let nic = NetworkInterface::new(scope, &name, subnet_id, tags.clone())
                    .map_err(|err| invalid("metadata.name", err.to_string()))?
                    .private_ip_configs(
                        usize::try_from(interface.private_ip_configs.unwrap_or(1)).unwrap_or(1),
                    )
                    .accelerated_networking(interface.accelerated_networking)
                    .ip_forwarding(spec.enable_ip_forwarding)
                    .dns_servers(spec.dns_servers.clone());
                Ok(if index == 0 {
                    nic.attached(attachments(scope, machine, control_plane, nat_rule)?)
                } else {
                    nic
                })
            },
        )
        .collect()
}
