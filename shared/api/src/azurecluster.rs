//! `AzureCluster` and `AzureClusterTemplate`: the Azure infrastructure of a self-managed cluster.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::network::{
    NetworkSpec, NetworkTemplateSpec, PublicIpSpec, SubnetSpec, SubnetTemplateSpec,
};
use crate::common::{ApiEndpoint, Conditions, FailureDomains, Futures, ObjectReference, Quantity, Tags};

/// The settings of an AzureCluster that a ClusterClass template may carry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterClassSpec {
    /// The Azure subscription the cluster's resources live in.
    #[serde(rename = "subscriptionID", default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,

    /// The Azure region of the cluster, for example `westeurope`.
    pub location: String,

    /// An edge zone to place the cluster's resources in, instead of the region itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_location: Option<ExtendedLocationSpec>,

    /// Extra Azure tags for every resource created for the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tags: Option<Tags>,

    /// The AzureClusterIdentity the controllers authenticate as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_ref: Option<ObjectReference>,

    /// The Azure cloud: `AzurePublicCloud` (default), `AzureChinaCloud` or
    /// `AzureUSGovernmentCloud`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_environment: Option<String>,

    /// Rate-limit and back-off settings written into the workload cluster's cloud provider
    /// configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_provider_config_overrides: Option<CloudProviderConfigOverrides>,

    /// Settings of the location's failure domains, for example to keep control-plane machines out
    /// of one zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domains: Option<FailureDomains>,
}

/// The desired Azure infrastructure of a self-managed workload cluster.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureCluster",
    namespaced,
    status = "AzureClusterStatus",
    category = "cluster-api",
    shortname = "azc",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "The Azure infrastructure (resource group, network, load balancers) of a self-managed cluster.",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = ".metadata.labels.cluster\\.x-k8s\\.io/cluster-name",
        description = "The Cluster this belongs to"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].status",
        description = "Whether the infrastructure is ready"
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
        name = "Resource Group",
        type_ = "string",
        json_path = ".spec.resourceGroup",
        description = "The Azure resource group",
        priority = "1"
    ),
    printcolumn(
        name = "SubscriptionID",
        type_ = "string",
        json_path = ".spec.subscriptionID",
        description = "The Azure subscription",
        priority = "1"
    ),
    printcolumn(
        name = "Location",
        type_ = "string",
        json_path = ".spec.location",
        description = "The Azure region",
        priority = "1"
    ),
    printcolumn(
        name = "Endpoint",
        type_ = "string",
        json_path = ".spec.controlPlaneEndpoint.host",
        description = "The API server endpoint",
        priority = "1"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterSpec {
    /// The settings a template may carry too.
    #[serde(flatten)]
    pub class: AzureClusterClassSpec,

    /// The cluster's network: virtual network, subnets, security groups, load balancers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_spec: Option<NetworkSpec>,

    /// The resource group of the cluster; defaults to the cluster's name. A group that exists
    /// already is used but never deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,

    /// An Azure Bastion host for SSH access to the machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bastion_spec: Option<BastionSpec>,

    /// Where the workload cluster's API server is reached. Set by the controller from the API
    /// server load balancer unless given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,

    /// Whether the cluster's control plane runs on machines of this provider. When false (an
    /// externally managed control plane), no API server load balancer is created and the user
    /// sets `controlPlaneEndpoint`. Defaults to true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub control_plane_enabled: Option<bool>,
}

/// What the controllers observed about an AzureCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterStatus {
    /// Whether the infrastructure is ready for machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// The failure domains (availability zones) machines may be placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domains: Option<FailureDomains>,

    /// Observations about the infrastructure, one per condition type.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight, resumed after a controller restart.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,
}

/// A template of AzureClusters, used by ClusterClass.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureClusterTemplate",
    namespaced,
    category = "cluster-api",
    shortname = "azct",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A template from which Cluster API creates AzureClusters, for example in a ClusterClass."
)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterTemplateSpec {
    /// The AzureCluster to create.
    pub template: AzureClusterTemplateResource,
}

/// The AzureCluster a template describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterTemplateResource {
    /// The spec of the AzureClusters created from the template.
    pub spec: AzureClusterTemplateResourceSpec,
}

/// The spec of AzureClusters created from a template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterTemplateResourceSpec {
    /// The settings shared with AzureCluster.
    #[serde(flatten)]
    pub class: AzureClusterClassSpec,

    /// The network of clusters created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_spec: Option<NetworkTemplateSpec>,

    /// The bastion host of clusters created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bastion_spec: Option<BastionTemplateSpec>,
}

/// An edge zone (extended location).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedLocationSpec {
    /// Name of the edge zone.
    pub name: String,
    /// Kind of extended location; only `EdgeZone`.
    #[serde(rename = "type")]
    pub type_: ExtendedLocationType,
}

/// The kinds of extended location.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ExtendedLocationType {
    /// An Azure edge zone.
    EdgeZone,
}

/// Bastion hosts of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BastionSpec {
    /// An Azure Bastion host in the cluster's virtual network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_bastion: Option<AzureBastion>,
}

/// An Azure Bastion host.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureBastion {
    /// Name of the bastion host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// The subnet of the bastion host; Azure requires the name `AzureBastionSubnet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubnetSpec>,

    /// The public IP of the bastion host.
    #[serde(rename = "publicIP", default, skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<PublicIpSpec>,

    /// SKU of the bastion host: `Basic` (default) or `Standard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Basic"))]
    pub sku: Option<BastionHostSku>,

    /// Whether native-client tunneling is enabled; needs the `Standard` SKU. Defaults to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enable_tunneling: Option<bool>,
}

/// The SKUs of Azure Bastion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum BastionHostSku {
    /// The basic feature set.
    Basic,
    /// Adds native-client tunneling, scaling and more.
    Standard,
}

/// Bastion hosts of clusters created from a template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BastionTemplateSpec {
    /// The Azure Bastion host of clusters created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_bastion: Option<AzureBastionTemplateSpec>,
}

/// An Azure Bastion host as a template describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureBastionTemplateSpec {
    /// The subnet of the bastion host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubnetTemplateSpec>,
}

/// Overrides of the workload cluster's cloud provider rate limits and back-off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloudProviderConfigOverrides {
    /// Rate limits, per Azure client of the cloud provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limits: Option<Vec<RateLimitSpec>>,

    /// Back-off settings for retried Azure calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_offs: Option<BackOffConfig>,
}

/// A rate limit of one Azure client of the cloud provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitSpec {
    /// Which client the limit applies to; `defaultRateLimit` applies to all without their own.
    pub name: RateLimitName,

    /// The limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<RateLimitConfig>,
}

/// The Azure clients of the cloud provider that take their own rate limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[expect(missing_docs, reason = "each variant is the client named by its wire form")]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum RateLimitName {
    DefaultRateLimit,
    RouteRateLimit,
    SubnetsRateLimit,
    InterfaceRateLimit,
    RouteTableRateLimit,
    LoadBalancerRateLimit,
    #[serde(rename = "publicIPAddressRateLimit")]
    PublicIpAddressRateLimit,
    SecurityGroupRateLimit,
    VirtualMachineRateLimit,
    StorageAccountRateLimit,
    DiskRateLimit,
    SnapshotRateLimit,
    VirtualMachineScaleSetRateLimit,
    VirtualMachineSizesRateLimit,
    AvailabilitySetRateLimit,
}

/// A token-bucket rate limit for read and write calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitConfig {
    /// Whether rate limiting is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_provider_rate_limit: Option<bool>,

    /// Read calls per second.
    #[serde(
        rename = "cloudProviderRateLimitQPS",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub cloud_provider_rate_limit_qps: Option<Quantity>,

    /// Burst size of read calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub cloud_provider_rate_limit_bucket: Option<i64>,

    /// Write calls per second.
    #[serde(
        rename = "cloudProviderRateLimitQPSWrite",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub cloud_provider_rate_limit_qps_write: Option<Quantity>,

    /// Burst size of write calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub cloud_provider_rate_limit_bucket_write: Option<i64>,
}

/// Back-off settings of retried Azure calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackOffConfig {
    /// Whether failed calls are retried with back-off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_provider_backoff: Option<bool>,

    /// How many times a call is retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub cloud_provider_backoff_retries: Option<i64>,

    /// Growth factor of the delay between retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub cloud_provider_backoff_exponent: Option<Quantity>,

    /// Initial delay between retries, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub cloud_provider_backoff_duration: Option<i64>,

    /// Random jitter added to the delay, as a fraction of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub cloud_provider_backoff_jitter: Option<Quantity>,
}
