//! `AzureMachinePool` and `AzureMachinePoolMachine`: a virtual machine scale set behind a Cluster
//! API MachinePool, and one object per instance of it.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::compute::{Image, VmIdentityProfile, VmProfile};
use crate::common::{Conditions, Futures, ObjectReference, Tags};

/// The desired virtual machine scale set of a Cluster API MachinePool.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureMachinePool",
    namespaced,
    status = "AzureMachinePoolStatus",
    category = "cluster-api",
    shortname = "amp",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "An Azure virtual machine scale set that runs the machines of one Cluster API MachinePool.",
    printcolumn(
        name = "Replicas",
        type_ = "string",
        json_path = ".status.replicas",
        description = "Number of instances"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.ready",
        description = "Whether the scale set is ready"
    ),
    printcolumn(
        name = "Severity",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].severity",
        description = "How serious it is when not ready",
        priority = "1"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].reason",
        description = "Why it is not ready",
        priority = "1"
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.provisioningState",
        description = "Provisioning state of the scale set"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
        description = "The Cluster this belongs to",
        priority = "1"
    ),
    printcolumn(
        name = "MachinePool",
        type_ = "string",
        json_path = ".metadata.ownerReferences[?(@.kind==\"MachinePool\")].name",
        description = "The MachinePool this belongs to",
        priority = "1"
    ),
    printcolumn(
        name = "VMSS ID",
        type_ = "string",
        json_path = ".spec.providerID",
        description = "Provider ID of the scale set",
        priority = "1"
    ),
    printcolumn(
        name = "VM Size",
        type_ = "string",
        json_path = ".spec.template.vmSize",
        description = "Size of the instances",
        priority = "1"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolSpec {
    /// The Azure region of the scale set.
    pub location: String,

    /// The instances of the scale set.
    pub template: AzureMachinePoolMachineTemplate,

    /// Extra Azure tags for the scale set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tags: Option<Tags>,

    /// The scale set's provider ID, set by the controller.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,

    /// Provider IDs of the scale set's instances, set by the controller.
    #[serde(rename = "providerIDList", default, skip_serializing_if = "Option::is_none")]
    pub provider_id_list: Option<Vec<String>>,

    /// The managed identities of the instances.
    #[serde(flatten)]
    pub identities: VmIdentityProfile,

    /// How instances are replaced when the model changes. Defaults to a rolling update with
    /// `maxSurge: 1`, `maxUnavailable: 0` and `deletePolicy: Oldest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {
        "type": "RollingUpdate",
        "rollingUpdate": { "deletePolicy": "Oldest", "maxSurge": 1, "maxUnavailable": 0 }
    }))]
    pub strategy: Option<AzureMachinePoolDeploymentStrategy>,

    /// Scale set orchestration: `Uniform` (default) or `Flexible`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Uniform"))]
    pub orchestration_mode: Option<OrchestrationMode>,

    /// Number of fault domains the instances are spread over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_fault_domain_count: Option<i32>,

    /// Whether instances are spread evenly over the availability zones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_balance: Option<bool>,
}

/// The virtual machine settings of a scale set's instances.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolMachineTemplate {
    /// The virtual machine settings of every instance.
    #[serde(flatten)]
    pub vm: VmProfile,

    /// Minutes Azure waits, after announcing that an instance will be deleted, before deleting it
    /// (5 to 15). Absent: no termination notice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub terminate_notification_timeout: Option<i64>,
}

/// How a scale set's instances are replaced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolDeploymentStrategy {
    /// The kind of strategy; only `RollingUpdate`. Defaults to it.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "RollingUpdate"))]
    pub type_: Option<DeploymentStrategyType>,

    /// Settings of the rolling update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<MachineRollingUpdateDeployment>,
}

/// Kinds of replacement strategy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum DeploymentStrategyType {
    /// Replace instances a few at a time.
    #[default]
    RollingUpdate,
}

/// Settings of a rolling update of a scale set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineRollingUpdateDeployment {
    /// How many instances (a number or a percentage of the replicas) may be unavailable during
    /// the update. Defaults to 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::int_or_string", extend("default" = 0))]
    pub max_unavailable: Option<IntOrString>,

    /// How many instances (a number or a percentage) may be created above the desired replicas
    /// during the update. Defaults to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::int_or_string", extend("default" = 1))]
    pub max_surge: Option<IntOrString>,

    /// Which instances go first when scaling down: `Oldest` (default), `Newest` or `Random`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Oldest"))]
    pub delete_policy: Option<DeletePolicy>,
}

/// Order in which instances are deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum DeletePolicy {
    /// Any instance.
    Random,
    /// The most recently created first.
    Newest,
    /// The least recently created first.
    Oldest,
}

/// Orchestration modes of a scale set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum OrchestrationMode {
    /// Instances are full virtual machines managed through the scale set.
    Flexible,
    /// Identical instances managed through the scale set's model.
    Uniform,
}

/// What the controllers observed about an AzureMachinePool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolStatus {
    /// Whether the scale set exists and is usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// Number of instances of the scale set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// The instances of the scale set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<Vec<AzureMachinePoolInstanceStatus>>,

    /// The image the scale set's model uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,

    /// The Kubernetes version the scale set's model runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// The provisioning state of the scale set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<String>,

    /// A short code for a failure that needs a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,

    /// A description of a failure that needs a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,

    /// Observations about the scale set, one per condition type.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight, resumed after a controller restart.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,

    /// The kind of the per-instance objects: `AzureMachinePoolMachine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_machine_kind: Option<String>,

    /// The replica count at the last reconcile, to tell scaling from model changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconciled_replicas: Option<i32>,
}

/// One instance of a scale set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolInstanceStatus {
    /// Kubernetes version of the instance's node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// Provisioning state of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<String>,

    /// Provider ID of the instance.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,

    /// Instance ID within the scale set.
    #[serde(rename = "instanceID", default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,

    /// Computer name of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_name: Option<String>,

    /// Whether the instance runs the scale set's latest model.
    pub latest_model_applied: bool,
}

/// One instance of an AzureMachinePool's scale set.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureMachinePoolMachine",
    namespaced,
    status = "AzureMachinePoolMachineStatus",
    category = "cluster-api",
    shortname = "ampm",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "One instance of an AzureMachinePool's scale set, created by the controller.",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.version",
        description = "Kubernetes version of the node"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.ready",
        description = "Whether the instance is ready"
    ),
    printcolumn(
        name = "State",
        type_ = "string",
        json_path = ".status.provisioningState",
        description = "Provisioning state of the instance"
    ),
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
        description = "The Cluster this belongs to",
        priority = "1"
    ),
    printcolumn(
        name = "VMSS VM ID",
        type_ = "string",
        json_path = ".spec.providerID",
        description = "Provider ID of the instance",
        priority = "1"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolMachineSpec {
    /// Provider ID of the instance.
    #[serde(rename = "providerID")]
    pub provider_id: String,

    /// Instance ID within the scale set.
    #[serde(rename = "instanceID", default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
}

/// What the controllers observed about one scale set instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureMachinePoolMachineStatus {
    /// The workload cluster's Node of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<ObjectReference>,

    /// Kubernetes version of the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// Provisioning state of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<String>,

    /// Computer name of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_name: Option<String>,

    /// A short code for a failure that needs a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,

    /// A description of a failure that needs a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,

    /// Observations about the instance, one per condition type.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight, resumed after a controller restart.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,

    /// Whether the instance and its Node are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// Whether the instance runs the scale set's latest model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_model_applied: Option<bool>,
}
