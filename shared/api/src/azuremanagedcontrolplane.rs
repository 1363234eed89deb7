//! `AzureManagedControlPlane` and `AzureManagedControlPlaneTemplate`: the AKS managed cluster of a
//! workload cluster (deprecated in CAPZ in favour of the AzureASOManaged kinds).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{
    ApiEndpoint, Conditions, Futures, ObjectReference, PrivateEndpoints, ServiceEndpoints, Tags,
};

/// The desired state of an AKS managed cluster.
///
/// Together with an `AzureManagedCluster` it makes one AKS cluster; the cluster's node pools are
/// `AzureManagedMachinePool` objects.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedControlPlane",
    namespaced,
    status = "AzureManagedControlPlaneStatus",
    category = "cluster-api",
    shortname = "amcp",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "The control plane of a workload cluster run by Azure Kubernetes Service (AKS).",
    deprecated = "AzureManagedControlPlane is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it.",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
        description = "The Cluster API cluster the control plane belongs to"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].status",
        description = "Whether the AKS cluster is ready"
    ),
    printcolumn(
        name = "Severity",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].severity",
        description = "How serious the problem is when not ready"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].reason",
        description = "Why the control plane is or is not ready"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].message",
        priority = 1,
        description = "Details about the readiness"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedControlPlaneSpec {
    /// The settings a ClusterClass template may also carry.
    #[serde(flatten)]
    pub class: AzureManagedControlPlaneClassSpec,

    /// The resource group AKS creates for the cluster's nodes. Defaults to AKS's own
    /// `MC_<resource group>_<cluster>_<location>`. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_resource_group_name: Option<String>,

    /// Where the API server of the AKS cluster is reached; filled in by the controller from the
    /// cluster's FQDN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,

    /// A base64-encoded SSH public key for the nodes' admin user. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_public_key: Option<String>,

    /// The DNS prefix of the cluster's FQDN; defaults to the object's name. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_prefix: Option<String>,

    /// Joins the AKS cluster to an Azure Kubernetes Fleet Manager.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleets_member: Option<FleetsMember>,
}

// CAPZ's class spec also holds `fleetsMember`, but the full spec shadows it with a variant that
// adds `name`; serde cannot flatten two fields of the same name, so the class spec here leaves
// it out and each of the two specs declares its own.
/// The settings of an AKS cluster that a ClusterClass template may carry, shared by
/// `AzureManagedControlPlane` and `AzureManagedControlPlaneTemplate`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::common::schema::resource_group_name_required)]
pub struct AzureManagedControlPlaneClassSpec {
    /// Reserved for Cluster API's machine template contract; it has no fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_template: Option<AzureManagedControlPlaneMachineTemplate>,

    /// The Kubernetes version of the control plane, for example `v1.30.2`.
    #[schemars(length(min = 2))]
    pub version: String,

    /// The virtual network the nodes join. Without it, a network is created for the cluster.
    /// Immutable, except for the subnet's service endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_network: Option<ManagedControlPlaneVirtualNetwork>,

    /// The Azure subscription to create the cluster in. Immutable.
    #[serde(rename = "subscriptionID", default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,

    /// The Azure region of the cluster, for example `westeurope`. Immutable.
    pub location: String,

    /// The resource group the AKS cluster is created in. Immutable.
    // Read as empty when missing: a control plane Cluster API makes from a ClusterClass has none
    // until admission defaults it from its cluster's name.
    #[serde(default)]
    pub resource_group_name: String,

    /// Extra Azure tags for the resources created for the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tags: Option<Tags>,

    /// The `AzureClusterIdentity` the controller authenticates to Azure with.
    pub identity_ref: ObjectReference,

    /// The network plugin of the cluster: `azure` (the default), `kubenet` or `none`. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "azure"))]
    pub network_plugin: Option<NetworkPlugin>,

    /// The mode of the `azure` network plugin; `overlay` gives pods addresses outside the
    /// virtual network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_plugin_mode: Option<NetworkPluginMode>,

    /// The network policy engine: `azure`, `calico` or `cilium`. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicy>,

    /// The network data plane: `azure` or `cilium`. `cilium` needs the `azure` plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_dataplane: Option<NetworkDataplane>,

    /// How nodes reach the internet: `loadBalancer`, `managedNATGateway`,
    /// `userAssignedNATGateway` or `userDefinedRouting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbound_type: Option<ManagedControlPlaneOutboundType>,

    /// The IP address of the cluster DNS service, inside the service CIDR. Immutable.
    #[serde(rename = "dnsServiceIP", default, skip_serializing_if = "Option::is_none")]
    pub dns_service_ip: Option<String>,

    /// The SKU of the cluster's load balancer: `Standard` (the default) or `Basic`. Immutable.
    #[serde(rename = "loadBalancerSKU", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Standard"))]
    pub load_balancer_sku: Option<LoadBalancerSku>,

    /// Microsoft Entra ID (AAD) integration, managed by AKS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aad_profile: Option<AadProfile>,

    /// AKS add-ons to enable or disable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addon_profiles: Option<Vec<AddonProfile>>,

    /// The pricing tier of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku: Option<AksSku>,

    /// The outbound settings of the cluster's load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_profile: Option<LoadBalancerProfile>,

    /// Who may reach the API server, and whether the cluster is private.
    #[serde(
        rename = "apiServerAccessProfile",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_access_profile: Option<ApiServerAccessProfile>,

    /// Settings of the cluster autoscaler; unset settings keep AKS's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaler_profile: Option<AutoScalerProfile>,

    /// The Azure cloud to use, for example `AzurePublicCloud` (the default) or
    /// `AzureUSGovernmentCloud`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_environment: Option<String>,

    /// The managed identity of the AKS control plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedControlPlaneIdentity>,

    /// Resource ID of a user-assigned identity for the kubelets of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_user_assigned_identity: Option<String>,

    /// An HTTP proxy for the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy_config: Option<HttpProxyConfig>,

    /// The OIDC issuer of the cluster, used by workload identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_issuer_profile: Option<OidcIssuerProfile>,

    /// Disables the cluster's local accounts, so that only Microsoft Entra ID users can log in.
    /// Needs `aadProfile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_local_accounts: Option<bool>,

    /// AKS cluster extensions to install, for example Flux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<AksExtension>>,

    /// How AKS upgrades the cluster by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_upgrade_profile: Option<ManagedClusterAutoUpgradeProfile>,

    /// Security features of the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<ManagedClusterSecurityProfile>,

    /// JSON merge patches applied, in order, to the generated ASO `ManagedCluster` before it is
    /// sent to Azure; a way to reach AKS settings this API lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aso_managed_cluster_patches: Option<Vec<String>>,

    /// Uses the preview AKS API version, for fields only it has. Defaults to `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enable_preview_features: Option<bool>,
}

/// Reserved for Cluster API's machine template contract of control planes; it has no fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AzureManagedControlPlaneMachineTemplate {}

/// The virtual network of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedControlPlaneVirtualNetwork {
    /// Name of the virtual network.
    pub name: String,

    /// The address space of the virtual network. Defaults to `10.0.0.0/8`.
    #[schemars(extend("default" = "10.0.0.0/8"))]
    pub cidr_block: String,

    /// The subnet the nodes are placed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<ManagedControlPlaneSubnet>,

    /// The resource group of the virtual network; defaults to the cluster's. May differ from it
    /// for a pre-existing network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

impl AzureManagedControlPlaneSpec {
    /// The virtual network of the cluster named `name` (the control plane's name), with CAPZ's
    /// defaults for what the spec leaves out: named after the cluster, in its resource group,
    /// `10.0.0.0/8` with the subnet `10.240.0.0/16` (with the `overlay` plugin mode,
    /// `10.224.0.0/12` and `10.224.0.0/16`).
    #[must_use]
    pub fn defaulted_virtual_network(&self, name: &str) -> ManagedControlPlaneVirtualNetwork {
        let overlay = self.class.network_plugin_mode == Some(NetworkPluginMode::Overlay);
        let (vnet_cidr, subnet_cidr) = if overlay {
            ("10.224.0.0/12", "10.224.0.0/16")
        } else {
            ("10.0.0.0/8", "10.240.0.0/16")
        };
        let mut network = self.class.virtual_network.clone().unwrap_or_default();
        if network.name.is_empty() {
            name.clone_into(&mut network.name);
        }
        if network.cidr_block.is_empty() {
            vnet_cidr.clone_into(&mut network.cidr_block);
        }
        if network.resource_group.as_deref().is_none_or(str::is_empty) {
            network.resource_group = Some(self.class.resource_group_name.clone());
        }
        let subnet = network
            .subnet
            .get_or_insert_with(ManagedControlPlaneSubnet::default);
        if subnet.name.is_empty() {
            name.clone_into(&mut subnet.name);
        }
        if subnet.cidr_block.is_empty() {
            subnet_cidr.clone_into(&mut subnet.cidr_block);
        }
        network
    }

    /// The node resource group AKS creates for the cluster named `name`: the spec's, else
    /// CAPZ's default `MC_<resourceGroupName>_<name>_<location>`.
    #[must_use]
    pub fn defaulted_node_resource_group(&self, name: &str) -> String {
        self.node_resource_group_name
            .clone()
            .filter(|group| !group.is_empty())
            .unwrap_or_else(|| {
                format!(
                    "MC_{}_{name}_{}",
                    self.class.resource_group_name, self.class.location
                )
            })
    }
}

/// The subnet of an AKS cluster's nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedControlPlaneSubnet {
    /// Name of the subnet.
    pub name: String,

    /// The address range of the subnet. Defaults to `10.240.0.0/16`.
    #[schemars(extend("default" = "10.240.0.0/16"))]
    pub cidr_block: String,

    /// Service endpoints of the subnet; the only part of the network that may change later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_endpoints: Option<ServiceEndpoints>,

    /// Private endpoints to create in the subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_endpoints: Option<PrivateEndpoints>,
}

/// The network plugin of an AKS cluster: `azure` (the default), `kubenet`, or `none` to bring
/// your own CNI. Immutable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum NetworkPlugin {
    /// Azure CNI: pods get addresses from the virtual network (or an overlay).
    #[serde(rename = "azure")]
    Azure,
    /// Kubenet: pods get addresses from a separate range, routed by route tables.
    #[serde(rename = "kubenet")]
    Kubenet,
    /// No plugin: bring your own CNI.
    #[serde(rename = "none")]
    None,
}

/// The mode of the `azure` network plugin; `overlay` gives pods addresses outside the virtual
/// network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum NetworkPluginMode {
    /// Pods get addresses from a private range outside the virtual network.
    #[serde(rename = "overlay")]
    Overlay,
}

/// The network policy engine of an AKS cluster: `azure`, `calico` or `cilium`. Immutable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum NetworkPolicy {
    /// Azure network policy manager.
    #[serde(rename = "azure")]
    Azure,
    /// Calico.
    #[serde(rename = "calico")]
    Calico,
    /// Cilium (needs the `cilium` data plane).
    #[serde(rename = "cilium")]
    Cilium,
}

/// The network data plane of an AKS cluster: `azure` or `cilium` (which needs the `azure`
/// plugin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum NetworkDataplane {
    /// The Azure data plane.
    #[serde(rename = "azure")]
    Azure,
    /// The Cilium (eBPF) data plane.
    #[serde(rename = "cilium")]
    Cilium,
}

/// How the nodes of an AKS cluster reach the internet: `loadBalancer`, `managedNATGateway`,
/// `userAssignedNATGateway` or `userDefinedRouting`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ManagedControlPlaneOutboundType {
    /// Through the cluster's load balancer.
    #[serde(rename = "loadBalancer")]
    LoadBalancer,
    /// Through a NAT gateway that AKS manages.
    #[serde(rename = "managedNATGateway")]
    ManagedNatGateway,
    /// Through a NAT gateway the user attached to the subnet.
    #[serde(rename = "userAssignedNATGateway")]
    UserAssignedNatGateway,
    /// Through routes the user defined on the subnet.
    #[serde(rename = "userDefinedRouting")]
    UserDefinedRouting,
}

/// The SKU of an AKS cluster's load balancer: `Standard` (the default) or `Basic`. Immutable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum LoadBalancerSku {
    /// Basic load balancer.
    Basic,
    /// Standard load balancer.
    Standard,
}

/// Microsoft Entra ID (AAD) integration managed by AKS.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AadProfile {
    /// Whether the integration is managed by AKS; must be `true`.
    pub managed: bool,

    /// Object IDs of the Entra ID groups whose members are cluster administrators.
    #[serde(rename = "adminGroupObjectIDs")]
    pub admin_group_object_ids: Vec<String>,
}

/// An AKS add-on and whether it is on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonProfile {
    /// The add-on's name as AKS spells it, for example `azurepolicy` or `omsagent`.
    pub name: String,

    /// Settings of the add-on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,

    /// Whether the add-on is on.
    pub enabled: bool,
}

/// The pricing tier of an AKS cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AksSku {
    /// `Free` (the default), `Standard` (with an uptime SLA) or `Paid` (the older name of
    /// `Standard`).
    #[schemars(extend("default" = "Free"))]
    pub tier: AzureManagedControlPlaneSkuTier,
}

/// The tier of an AKS cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum AzureManagedControlPlaneSkuTier {
    /// No uptime SLA.
    Free,
    /// The former name of `Standard`.
    Paid,
    /// With an uptime SLA.
    Standard,
}

/// The outbound settings of an AKS cluster's load balancer. At most one of `managedOutboundIPs`,
/// `outboundIPPrefixes` and `outboundIPs` may be set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerProfile {
    /// How many outbound public IPs AKS creates and manages (1 to 100).
    #[serde(
        rename = "managedOutboundIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub managed_outbound_ips: Option<i64>,

    /// Resource IDs of public IP prefixes to use for outbound traffic.
    #[serde(
        rename = "outboundIPPrefixes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub outbound_ip_prefixes: Option<Vec<String>>,

    /// Resource IDs of public IP addresses to use for outbound traffic.
    #[serde(rename = "outboundIPs", default, skip_serializing_if = "Option::is_none")]
    pub outbound_ips: Option<Vec<String>>,

    /// SNAT ports per node (0 to 64000; 0 lets Azure choose).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub allocated_outbound_ports: Option<i64>,

    /// Idle timeout of outbound flows in minutes (4 to 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub idle_timeout_in_minutes: Option<i64>,
}

/// Access to the API server of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerAccessProfile {
    /// Address ranges (CIDRs) allowed to reach a public API server; the only setting here that
    /// may change later.
    #[serde(
        rename = "authorizedIPRanges",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub authorized_ip_ranges: Option<Vec<String>>,

    /// Makes the API server reachable only from the virtual network. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_private_cluster: Option<bool>,

    /// For a private cluster: `System`, `None`, or the resource ID of a private DNS zone.
    /// Immutable.
    #[serde(rename = "privateDNSZone", default, skip_serializing_if = "Option::is_none")]
    pub private_dns_zone: Option<String>,

    /// For a private cluster: also publish a public FQDN for the API server. Immutable.
    #[serde(
        rename = "enablePrivateClusterPublicFQDN",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_private_cluster_public_fqdn: Option<bool>,
}

// All cluster-autoscaler settings are strings on the wire, as AKS takes them.
/// Settings of the AKS cluster autoscaler, all written as strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoScalerProfile {
    /// Balances node pools of the same size and labels: `"true"` or `"false"` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "false"))]
    pub balance_similar_node_groups: Option<StringBool>,

    /// How to pick the pool to grow: `least-waste`, `most-pods`, `priority` or `random` (the
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "random"))]
    pub expander: Option<Expander>,

    /// How many empty nodes may be removed at once. Defaults to `"10"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "10"))]
    pub max_empty_bulk_delete: Option<String>,

    /// Seconds to wait for pods to end when scaling a node down. Defaults to `"600"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)$"), extend("default" = "600"))]
    pub max_graceful_termination_sec: Option<String>,

    /// How long to wait for a new node, in minutes with an `m` suffix. Defaults to `"15m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)m$"), extend("default" = "15m"))]
    pub max_node_provision_time: Option<String>,

    /// Percentage of unready nodes above which the autoscaler stops. Defaults to `"45"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 3), pattern(r"^(\d+)$"), extend("default" = "45"))]
    pub max_total_unready_percentage: Option<String>,

    /// How old a pending pod must be before it triggers a scale-up, for example `"10s"`.
    /// Defaults to `"0s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "0s"))]
    pub new_pod_scale_up_delay: Option<String>,

    /// Number of unready nodes tolerated regardless of the percentage. Defaults to `"3"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)$"), extend("default" = "3"))]
    pub ok_total_unready_count: Option<String>,

    /// How long after a scale-up scale-down checks resume, in minutes. Defaults to `"10m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)m$"), extend("default" = "10m"))]
    pub scale_down_delay_after_add: Option<String>,

    /// How long after a node removal scale-down checks resume, in seconds. Defaults to `"10s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)s$"), extend("default" = "10s"))]
    pub scale_down_delay_after_delete: Option<String>,

    /// How long after a failed scale-down checks resume, in minutes. Defaults to `"3m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)m$"), extend("default" = "3m"))]
    pub scale_down_delay_after_failure: Option<String>,

    /// How long a node must be unneeded before it is removed, in minutes. Defaults to `"10m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)m$"), extend("default" = "10m"))]
    pub scale_down_unneeded_time: Option<String>,

    /// How long an unready node must be unneeded before it is removed, in minutes. Defaults to
    /// `"20m"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)m$"), extend("default" = "20m"))]
    pub scale_down_unready_time: Option<String>,

    /// Requested-to-capacity ratio under which a node may be removed. Defaults to `"0.5"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "0.5"))]
    pub scale_down_utilization_threshold: Option<String>,

    /// How often the autoscaler re-evaluates the cluster, in seconds. Defaults to `"10s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^(\d+)s$"), extend("default" = "10s"))]
    pub scan_interval: Option<String>,

    /// Never removes nodes with pods using local storage: `"true"` or `"false"` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "false"))]
    pub skip_nodes_with_local_storage: Option<StringBool>,

    /// Never removes nodes running `kube-system` pods: `"true"` (the default) or `"false"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "true"))]
    pub skip_nodes_with_system_pods: Option<StringBool>,
}

/// A boolean written as the string `"true"` or `"false"`, as AKS's autoscaler settings are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum StringBool {
    /// `"true"`.
    #[serde(rename = "true")]
    True,
    /// `"false"`.
    #[serde(rename = "false")]
    False,
}

/// How the cluster autoscaler picks the node pool to grow: `least-waste`, `most-pods`,
/// `priority` or `random` (the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum Expander {
    /// The pool that leaves the least CPU (then memory) unused.
    #[serde(rename = "least-waste")]
    LeastWaste,
    /// The pool that can schedule the most pods.
    #[serde(rename = "most-pods")]
    MostPods,
    /// The pool with the highest priority set by the user.
    #[serde(rename = "priority")]
    Priority,
    /// Any pool.
    #[serde(rename = "random")]
    Random,
}

/// The managed identity of an AKS control plane.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedControlPlaneIdentity {
    /// `SystemAssigned` (the default) or `UserAssigned`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "SystemAssigned"))]
    pub type_: Option<ManagedControlPlaneIdentityType>,

    /// For `UserAssigned`: the resource ID of the identity.
    #[serde(
        rename = "userAssignedIdentityResourceID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub user_assigned_identity_resource_id: Option<String>,
}

/// The kind of managed identity of an AKS control plane: `SystemAssigned` (the default) or
/// `UserAssigned`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ManagedControlPlaneIdentityType {
    /// An identity AKS creates and deletes with the cluster.
    SystemAssigned,
    /// An existing user-assigned identity.
    UserAssigned,
}

/// An HTTP proxy for the nodes of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpProxyConfig {
    /// The proxy for HTTP connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,

    /// The proxy for HTTPS connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,

    /// Hosts, domains and ranges reached without the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<Vec<String>>,

    /// A CA certificate (base64 PEM) to trust for the proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<String>,
}

/// The OIDC issuer of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcIssuerProfile {
    /// Whether the issuer is on. Defaults to `false`; once on it cannot be turned off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub enabled: Option<bool>,
}

/// Membership of an AKS cluster in a fleet, as the template may give it (no member name).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetsMemberClassSpec {
    /// The fleet group to join. Defaults to `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "default"))]
    pub group: Option<String>,

    /// Name of the fleet manager.
    pub manager_name: String,

    /// Resource group of the fleet manager.
    pub manager_resource_group: String,
}

/// Membership of an AKS cluster in an Azure Kubernetes Fleet Manager.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetsMember {
    /// Name of the fleet member; defaults to the cluster's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// The fleet and group to join.
    #[serde(flatten)]
    pub class: FleetsMemberClassSpec,
}

/// An AKS cluster extension.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AksExtension {
    /// Name of the extension instance.
    pub name: String,

    /// The kind of extension, for example `microsoft.flux`.
    pub extension_type: String,

    /// The kind of identity AKS gives the extension: `SystemAssigned` or `UserAssigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aks_assigned_identity_type: Option<AksAssignedIdentity>,

    /// Whether minor versions are upgraded automatically. Defaults to `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub auto_upgrade_minor_version: Option<bool>,

    /// Settings of the extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration_settings: Option<BTreeMap<String, String>>,

    /// The release train to follow when minor versions are upgraded automatically, for example
    /// `Stable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_train: Option<String>,

    /// A fixed version; only when minor versions are not upgraded automatically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// The Marketplace plan of a third-party extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ExtensionPlan>,

    /// Whether the extension is installed cluster-wide or in one namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ExtensionScope>,

    /// The identity of the extension: only `SystemAssigned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<ExtensionIdentity>,
}

/// The kind of identity AKS gives an extension: `SystemAssigned` or `UserAssigned`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum AksAssignedIdentity {
    /// An identity created for the extension.
    SystemAssigned,
    /// A user-assigned identity.
    UserAssigned,
}

/// The identity of an AKS extension: only `SystemAssigned`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ExtensionIdentity {
    /// An identity created for the extension.
    SystemAssigned,
}

/// The Marketplace plan of an AKS extension.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionPlan {
    /// Name of the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// The offer the plan belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,

    /// A promotion code for the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion_code: Option<String>,

    /// The publisher of the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,

    /// Version of the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Where an AKS extension is installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionScope {
    /// `Cluster` or `Namespace`.
    pub scope_type: ExtensionScopeType,

    /// For `Cluster`: the namespace the extension's resources go into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_namespace: Option<String>,

    /// For `Namespace`: the namespace the extension is installed in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
}

/// The scope of an AKS extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ExtensionScopeType {
    /// Installed once for the whole cluster.
    Cluster,
    /// Installed in one namespace.
    Namespace,
}

/// How AKS upgrades a cluster by itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterAutoUpgradeProfile {
    /// The upgrade channel: `none`, `patch`, `stable`, `rapid` or `node-image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_channel: Option<UpgradeChannel>,
}

/// The channel AKS upgrades the cluster by itself on: `none`, `patch`, `stable`, `rapid` or
/// `node-image`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum UpgradeChannel {
    /// Only node images are upgraded.
    #[serde(rename = "node-image")]
    NodeImage,
    /// No automatic upgrades.
    #[serde(rename = "none")]
    None,
    /// The latest patch of the current minor version.
    #[serde(rename = "patch")]
    Patch,
    /// The latest supported version.
    #[serde(rename = "rapid")]
    Rapid,
    /// The latest patch of the previous minor version.
    #[serde(rename = "stable")]
    Stable,
}

/// Security features of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfile {
    /// Encrypts Kubernetes secrets at rest with a key from Azure Key Vault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_key_vault_kms: Option<AzureKeyVaultKms>,

    /// Microsoft Defender for the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defender: Option<ManagedClusterSecurityProfileDefender>,

    /// Removes unused, vulnerable images from the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_cleaner: Option<ManagedClusterSecurityProfileImageCleaner>,

    /// Lets pods use Microsoft Entra workload identities (needs the OIDC issuer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_identity: Option<ManagedClusterSecurityProfileWorkloadIdentity>,
}

/// Key Vault key management for the secrets of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureKeyVaultKms {
    /// Whether secrets are encrypted with the key.
    pub enabled: bool,

    /// The identifier of the Key Vault key, including its version.
    #[serde(rename = "keyID")]
    pub key_id: String,

    /// Whether the key vault is reached over the `Public` network (the default) or a `Private`
    /// link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Public"))]
    pub key_vault_network_access: Option<String>,

    /// For `Private` access: the resource ID of the key vault.
    #[serde(
        rename = "keyVaultResourceID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub key_vault_resource_id: Option<String>,
}

/// Microsoft Defender settings of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfileDefender {
    /// Resource ID of the Log Analytics workspace Defender reports to.
    #[serde(rename = "logAnalyticsWorkspaceResourceID")]
    pub log_analytics_workspace_resource_id: String,

    /// Threat detection on the cluster.
    pub security_monitoring: ManagedClusterSecurityProfileDefenderSecurityMonitoring,
}

/// Defender threat detection on an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfileDefenderSecurityMonitoring {
    /// Whether threat detection is on.
    pub enabled: bool,
}

/// The image cleaner of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfileImageCleaner {
    /// Whether the image cleaner runs.
    pub enabled: bool,

    /// Hours between scans, 24 to 2160; AKS defaults to one week.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 24, "maximum" = 2160))]
    pub interval_hours: Option<i64>,
}

/// Workload identity on an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfileWorkloadIdentity {
    /// Whether workload identity is on.
    pub enabled: bool,
}

/// What the controller observed about an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedControlPlaneStatus {
    /// Whether the AKS cluster exists and its API server can be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// Whether the API server has accepted requests at least once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialized: Option<bool>,

    /// The Kubernetes version the control plane runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// The version AKS upgraded the cluster to by itself, when an upgrade channel is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2))]
    pub auto_upgrade_version: Option<String>,

    /// The OIDC issuer of the cluster, once enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_issuer_profile: Option<OidcIssuerProfileStatus>,

    /// Observations about the AKS cluster.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight for the cluster.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,
}

/// The observed OIDC issuer of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OidcIssuerProfileStatus {
    /// The URL of the issuer, for federated credentials.
    #[serde(rename = "issuerURL", default, skip_serializing_if = "Option::is_none")]
    pub issuer_url: Option<String>,
}

/// The desired state of an AKS control plane template.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedControlPlaneTemplate",
    namespaced,
    category = "cluster-api",
    shortname = "amcpt",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A template of AKS control planes, used by ClusterClasses.",
    deprecated = "AzureManagedControlPlaneTemplate is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it."
)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedControlPlaneTemplateSpec {
    /// What each control plane made from the template looks like.
    pub template: AzureManagedControlPlaneTemplateResource,
}

/// The control plane a template describes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedControlPlaneTemplateResource {
    /// The spec of the control planes made from the template.
    pub spec: AzureManagedControlPlaneTemplateResourceSpec,
}

/// The spec of a control plane made from a template: the class settings plus fleet membership
/// without a member name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedControlPlaneTemplateResourceSpec {
    /// The settings shared with `AzureManagedControlPlane`.
    #[serde(flatten)]
    pub class: AzureManagedControlPlaneClassSpec,

    /// Joins the AKS clusters to an Azure Kubernetes Fleet Manager; each member is named after
    /// its cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleets_member: Option<FleetsMemberClassSpec>,
}
