//! `AzureMachine` and `AzureMachineTemplate`: the virtual machine behind a Cluster API Machine.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::compute::{VmIdentityProfile, VmProfile};
use crate::common::{Conditions, Futures, MachineAddress, ObjectMeta, Quantity, Tags};

/// The desired virtual machine of a Cluster API Machine.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureMachine",
    namespaced,
    status = "AzureMachineStatus",
    category = "cluster-api",
    shortname = "azm",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "An Azure virtual machine that runs one Cluster API Machine.",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
        description = "The Cluster this belongs to",
        priority = "1"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].status",
        description = "Whether the VM is ready"
    ),
    printcolumn(
        name = "Severity",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].severity",
        description = "How serious it is when not ready"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].reason",
        description = "Why it is not ready"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].message",
        description = "Details about the Ready condition",
        priority = "1"
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.vmState",
        description = "Provisioning state of the VM"
    ),
    printcolumn(
        name = "Machine",
        type_ = "string",
        json_path = ".metadata.ownerReferences[?(@.kind==\"Machine\")].name",
        description = "The Machine this belongs to",
        priority = "1"
    ),
    printcolumn(
        name = "VM ID",
        type_ = "string",
        json_path = ".spec.providerID",
        description = "Provider ID of the VM",
        priority = "1"
    ),
    printcolumn(
        name = "VM Size",
        type_ = "string",
        json_path = ".spec.vmSize",
        description = "Size of the VM",
        priority = "1"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachineSpec {
    /// The VM's provider ID (`azure:///subscriptions/.../virtualMachines/<name>`), set by the
    /// controller once the VM exists.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,

    /// The virtual machine: size, image, disks, network and security settings.
    #[serde(flatten)]
    pub vm: VmProfile,

    /// The managed identities of the VM.
    #[serde(flatten)]
    pub identities: VmIdentityProfile,

    /// Deprecated: use the Machine's `spec.failureDomain`. Availability zone of the VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,

    /// Extra Azure tags for the VM and the resources created with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tags: Option<Tags>,

    /// Whether the VM gets a public IP of its own.
    #[serde(rename = "allocatePublicIP", default, skip_serializing_if = "Option::is_none")]
    pub allocate_public_ip: Option<bool>,

    /// Whether the VM's network interface may forward traffic not addressed to it.
    #[serde(
        rename = "enableIPForwarding",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_ip_forwarding: Option<bool>,

    /// DNS servers of the VM's network interfaces, instead of the virtual network's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_servers: Option<Vec<String>>,

    /// Azure resource ID of a capacity reservation group to allocate the VM from.
    #[serde(
        rename = "capacityReservationGroupID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub capacity_reservation_group_id: Option<String>,

    /// Azure resource ID of a flexible scale set to place the VM in.
    #[serde(
        rename = "virtualMachineScaleSetID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub virtual_machine_scale_set_id: Option<String>,

    /// Whether VM extensions are disallowed on the VM (including the bootstrap extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_extension_operations: Option<bool>,
}

/// What the controllers observed about an AzureMachine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachineStatus {
    /// Whether the VM exists and is running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// The VM's addresses: its host name and private and public IPs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<MachineAddress>>,

    /// The provisioning state of the VM, for example `Creating`, `Succeeded` or `Failed`.
    #[serde(rename = "vmState", default, skip_serializing_if = "Option::is_none")]
    pub vm_state: Option<String>,

    /// A short code for a failure that needs a person, such as `CreateError`. Kept for parity with
    /// CAPZ; the `Ready` condition carries the same information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,

    /// A description of a failure that needs a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,

    /// Observations about the VM, one per condition type.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight, resumed after a controller restart.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,
}

/// A template of AzureMachines, used by MachineDeployments and KubeadmControlPlanes.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureMachineTemplate",
    namespaced,
    status = "AzureMachineTemplateStatus",
    category = "cluster-api",
    shortname = "azmt",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A template from which Cluster API creates AzureMachines."
)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachineTemplateSpec {
    /// The AzureMachine to create.
    pub template: AzureMachineTemplateResource,
}

/// The AzureMachine a template describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachineTemplateResource {
    /// Labels and annotations of the AzureMachines created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,

    /// The spec of the AzureMachines created from the template.
    pub spec: AzureMachineSpec,
}

/// What the controllers report about the machines of a template, for autoscaling from zero.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachineTemplateStatus {
    /// Resources (cpu, memory, ...) a machine of this template offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::common::quantity::QuantityMap>")]
    pub capacity: Option<std::collections::BTreeMap<String, Quantity>>,

    /// The node a machine of this template becomes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_info: Option<NodeInfo>,
}

/// The architecture and operating system of a template's nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    /// CPU architecture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<Architecture>,

    /// Operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operating_system: Option<OperatingSystem>,
}

/// CPU architectures of nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum Architecture {
    /// 64-bit x86.
    Amd64,
    /// 64-bit ARM.
    Arm64,
}

/// Operating systems of nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum OperatingSystem {
    /// Linux.
    Linux,
    /// Windows.
    Windows,
}
