//! AKS (`Microsoft.ContainerService`): a managed cluster, whose control plane Azure runs, and its
//! agent pools, the scale sets of its nodes.
//!
//! A managed cluster is created with at least one System pool inline (`agentPoolProfiles`); from
//! then on each pool is its own child resource (`managedClusters/agentPools`), written and
//! deleted on its own. Both are long-running operations, and AKS takes one operation per cluster
//! at a time. Many AKS settings are fixed once the cluster exists; the models do not say which,
//! the admission rules do.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::compute::{ManagedServiceIdentity, SshConfiguration};
use super::{ChildResource, ProvisioningState, Secret, SubResource, Tags};
use crate::id::{ApiVersion, Location, ResourceId};

/// The api-version of the AKS models: the newest GA one AKS's recorded sessions use.
pub const API_VERSION: ApiVersion = ApiVersion::new("2025-08-01");

/// A managed cluster (`Microsoft.ContainerService/managedClusters`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedCluster {
    /// The cluster's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The cluster's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.ContainerService/ManagedClusters` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The cluster's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The cluster's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The identity the control plane acts as: system-assigned, or one user-assigned identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedServiceIdentity>,
    /// The pricing tier of the control plane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<ManagedClusterSku>,
    /// What the cluster is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ManagedClusterProperties>,
}

arm_model!(
    ManagedCluster,
    "Microsoft.ContainerService/managedClusters",
    API_VERSION,
    tagged
);

/// The control plane's SKU: always `Base`, in a tier.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSku {
    /// `Base`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the control plane's availability is backed by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<SkuTier>,
}

lenient_enum! {
    /// A control plane's pricing tier.
    pub enum SkuTier {
        /// No uptime commitment.
        Free = "Free",
        /// An uptime commitment, for production.
        Standard = "Standard",
        /// Standard with long-term support versions.
        Premium = "Premium",
    }
}

/// The settings of a managed cluster and (read-only) where it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterProperties {
    /// The Kubernetes version asked for (`1.33.5`, or a minor such as `1.33`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// The patch version the control plane runs (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_kubernetes_version: Option<String>,
    /// The prefix of the API server's host name; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_prefix: Option<String>,
    /// The API server's public host name (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fqdn: Option<String>,
    /// The API server's host name in the private zone of a private cluster (read-only).
    #[serde(rename = "privateFQDN", skip_serializing_if = "Option::is_none")]
    pub private_fqdn: Option<String>,
    /// The pools written with the cluster: at creation, at least one System pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_pool_profiles: Option<Vec<AgentPoolProfile>>,
    /// The nodes' Linux admin account and SSH key; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linux_profile: Option<LinuxProfile>,
    /// A service principal the cluster acts as instead of a managed identity (`msi` when it has
    /// one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_principal_profile: Option<ServicePrincipalProfile>,
    /// Add-ons by name (`azurepolicy`, `omsagent`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addon_profiles: Option<BTreeMap<String, AddonProfile>>,
    /// The group AKS creates for the nodes and their network pieces; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_resource_group: Option<String>,
    /// Kubernetes RBAC.
    #[serde(rename = "enableRBAC", skip_serializing_if = "Option::is_none")]
    pub enable_rbac: Option<bool>,
    /// Pod and service networking and outbound traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<NetworkProfile>,
    /// Microsoft Entra integration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aad_profile: Option<AadProfile>,
    /// Automatic upgrades of Kubernetes and of node images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_upgrade_profile: Option<AutoUpgradeProfile>,
    /// The cluster autoscaler's settings, by their kebab-case names (`scan-interval`), all strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_scaler_profile: Option<BTreeMap<String, String>>,
    /// Who may reach the API server, and whether it is private.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server_access_profile: Option<ApiServerAccessProfile>,
    /// Whether the static admin credentials are off (Entra sign-in only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_local_accounts: Option<bool>,
    /// The proxy the nodes use; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy_config: Option<HttpProxyConfig>,
    /// Workload identity, Defender, the image cleaner and key management.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<ManagedClusterSecurityProfile>,
    /// The cluster's OIDC issuer, for workload identity federation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc_issuer_profile: Option<OidcIssuerProfile>,
    /// Identities AKS uses for the cluster, by role (`kubeletidentity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity_profile: Option<BTreeMap<String, UserAssignedIdentityReference>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// Whether the cluster runs or is stopped (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_state: Option<PowerState>,
}

/// A pool written inside its cluster's body: the pool's name with its settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPoolProfile {
    /// The pool's name, unique in the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The pool's settings.
    #[serde(flatten)]
    pub properties: AgentPoolProperties,
}

/// An agent pool (`Microsoft.ContainerService/managedClusters/agentPools`).
pub type AgentPool = ChildResource<AgentPoolProperties>;

arm_model!(
    AgentPool,
    "Microsoft.ContainerService/managedClusters/agentPools",
    API_VERSION
);

/// What a pool's nodes are and how many, and (read-only) where it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPoolProperties {
    /// `System` pools run the cluster's own pods; a cluster keeps at least one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<AgentPoolMode>,
    /// How many nodes (the autoscaler's current count when it is on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// The nodes' size, such as `Standard_D2s_v3`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_size: Option<String>,
    /// `VirtualMachineScaleSets`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub pool_type: Option<String>,
    /// The nodes' OS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_type: Option<AgentPoolOsType>,
    /// The OS distribution (`Ubuntu`, `AzureLinux`, `Windows2022`, …).
    #[serde(rename = "osSKU", skip_serializing_if = "Option::is_none")]
    pub os_sku: Option<String>,
    /// The OS disk's size.
    #[serde(rename = "osDiskSizeGB", skip_serializing_if = "Option::is_none")]
    pub os_disk_size_gb: Option<i32>,
    /// `Managed` or `Ephemeral`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_disk_type: Option<String>,
    /// The Kubernetes version the nodes run (a patch, or a minor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestrator_version: Option<String>,
    /// The patch version the nodes run (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_orchestrator_version: Option<String>,
    /// Whether the cluster autoscaler sizes the pool, between `min_count` and `max_count`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_auto_scaling: Option<bool>,
    /// The fewest nodes the autoscaler leaves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_count: Option<i32>,
    /// The most nodes the autoscaler makes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_count: Option<i32>,
    /// Whether a scale-down deletes nodes or deallocates them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_down_mode: Option<String>,
    /// The most pods per node; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_pods: Option<i32>,
    /// Labels on every node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<BTreeMap<String, String>>,
    /// Taints on every node, as `key=value:Effect`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints: Option<Vec<String>>,
    /// The zones the nodes spread over; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability_zones: Option<Vec<String>>,
    /// Whether each node gets a public IP; fixed at creation.
    #[serde(rename = "enableNodePublicIP", skip_serializing_if = "Option::is_none")]
    pub enable_node_public_ip: Option<bool>,
    /// The prefix those addresses come from.
    #[serde(rename = "nodePublicIPPrefixID", skip_serializing_if = "Option::is_none")]
    pub node_public_ip_prefix_id: Option<ResourceId>,
    /// FIPS-enabled node images; fixed at creation.
    #[serde(rename = "enableFIPS", skip_serializing_if = "Option::is_none")]
    pub enable_fips: Option<bool>,
    /// Encryption of the nodes' disks at the host; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_encryption_at_host: Option<bool>,
    /// The subnet the nodes join (a custom network); fixed at creation.
    #[serde(rename = "vnetSubnetID", skip_serializing_if = "Option::is_none")]
    pub vnet_subnet_id: Option<ResourceId>,
    /// `Spot` for nodes Azure may take back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_set_priority: Option<String>,
    /// What happens to a spot node Azure takes back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_set_eviction_policy: Option<String>,
    /// The most a spot node may cost per hour; -1: up to the on-demand price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spot_max_price: Option<f64>,
    /// The kubelet's settings; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_config: Option<KubeletConfig>,
    /// Where the kubelet keeps its data: `OS` or `Temporary`; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_disk_type: Option<String>,
    /// Whether the nodes may attach Ultra SSD disks; fixed at creation.
    #[serde(rename = "enableUltraSSD", skip_serializing_if = "Option::is_none")]
    pub enable_ultra_ssd: Option<bool>,
    /// The nodes' kernel and swap settings; fixed at creation.
    #[serde(rename = "linuxOSConfig", skip_serializing_if = "Option::is_none")]
    pub linux_os_config: Option<LinuxOsConfig>,
    /// How many nodes an upgrade adds at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_settings: Option<UpgradeSettings>,
    /// The node image the pool runs (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_image_version: Option<String>,
    /// The pool's tags, given to its scale set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// Whether the pool runs or is stopped (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_state: Option<PowerState>,
}

lenient_enum! {
    /// What a pool is for.
    pub enum AgentPoolMode {
        /// It runs the cluster's own pods (CoreDNS, metrics).
        System = "System",
        /// It runs workloads only.
        User = "User",
    }
}

lenient_enum! {
    /// A pool's operating system.
    pub enum AgentPoolOsType {
        /// Linux nodes.
        Linux = "Linux",
        /// Windows nodes.
        Windows = "Windows",
    }
}

/// A pool's surge during upgrades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeSettings {
    /// Extra nodes during an upgrade: a count or a percentage (`33%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<String>,
}

/// A pool's kubelet settings, named as AKS names them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfig {
    /// `none` or `static`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<String>,
    /// Whether CPU limits are enforced with CFS quotas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,
    /// The CFS quota period, such as `100ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota_period: Option<String>,
    /// Disk use (percent) above which image garbage collection always runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_gc_high_threshold: Option<i32>,
    /// Disk use (percent) below which it never runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_gc_low_threshold: Option<i32>,
    /// `none`, `best-effort`, `restricted` or `single-numa-node`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_manager_policy: Option<String>,
    /// Unsafe sysctls (or patterns ending in `*`) pods may set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_unsafe_sysctls: Option<Vec<String>>,
    /// Whether the kubelet refuses to start with swap on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_swap_on: Option<bool>,
    /// The largest a container log grows before it is rotated.
    #[serde(rename = "containerLogMaxSizeMB", skip_serializing_if = "Option::is_none")]
    pub container_log_max_size_mb: Option<i32>,
    /// How many rotated logs a container keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_log_max_files: Option<i32>,
    /// The most processes a pod may run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_max_pids: Option<i32>,
}

/// A pool's Linux kernel and swap settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinuxOsConfig {
    /// Kernel parameters by AKS's camel-case names (`netCoreSomaxconn`, `vmMaxMapCount`, …),
    /// kept as given: numbers, and strings for ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sysctls: Option<Map<String, Value>>,
    /// `always`, `madvise` or `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparent_huge_page_enabled: Option<String>,
    /// `always`, `defer`, `defer+madvise`, `madvise` or `never`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transparent_huge_page_defrag: Option<String>,
    /// The size of the swap file on each node.
    #[serde(rename = "swapFileSizeMB", skip_serializing_if = "Option::is_none")]
    pub swap_file_size_mb: Option<i32>,
}

/// The nodes' Linux admin account.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinuxProfile {
    /// The admin user's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_username: Option<String>,
    /// The admin's SSH keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<SshConfiguration>,
}

/// A service principal a cluster acts as.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePrincipalProfile {
    /// Its client id; `msi` for a cluster with a managed identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its secret; never answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<Secret>,
}

/// An add-on: on or off, its settings, and (read-only) the identity AKS made for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonProfile {
    /// Whether it runs.
    pub enabled: bool,
    /// Its settings, all strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,
    /// The identity it runs as (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<UserAssignedIdentityReference>,
}

/// A user-assigned identity AKS made or was given, with its ids.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserAssignedIdentityReference {
    /// The identity's resource id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<ResourceId>,
    /// Its client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its object (principal) id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}

/// Pod and service networking.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkProfile {
    /// `azure`, `kubenet` or `none`; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_plugin: Option<String>,
    /// `overlay` for Azure CNI with pod addresses outside the network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_plugin_mode: Option<String>,
    /// `azure`, `calico`, `cilium` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<String>,
    /// `azure` or `cilium`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_dataplane: Option<String>,
    /// `standard` or `basic`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_sku: Option<String>,
    /// The outbound load balancer's addresses and ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_profile: Option<LoadBalancerProfile>,
    /// How nodes reach the internet: `loadBalancer`, `managedNATGateway`,
    /// `userAssignedNATGateway`, `userDefinedRouting`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_type: Option<String>,
    /// The pods' range (kubenet and overlay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<String>,
    /// The services' range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_cidr: Option<String>,
    /// The cluster DNS service's address, inside the services' range.
    #[serde(rename = "dnsServiceIP", skip_serializing_if = "Option::is_none")]
    pub dns_service_ip: Option<String>,
}

/// The addresses and ports of a cluster's outbound load balancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerProfile {
    /// How many public IPs AKS makes for outbound traffic.
    #[serde(rename = "managedOutboundIPs", skip_serializing_if = "Option::is_none")]
    pub managed_outbound_ips: Option<ManagedOutboundIps>,
    /// Public IPs of the user's to use instead.
    #[serde(rename = "outboundIPs", skip_serializing_if = "Option::is_none")]
    pub outbound_ips: Option<OutboundIps>,
    /// Public IP prefixes of the user's to use instead.
    #[serde(rename = "outboundIPPrefixes", skip_serializing_if = "Option::is_none")]
    pub outbound_ip_prefixes: Option<OutboundIpPrefixes>,
    /// SNAT ports per node; 0 lets Azure choose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_outbound_ports: Option<i32>,
    /// How long an idle outbound flow is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<i32>,
    /// The addresses in use (read-only).
    #[serde(rename = "effectiveOutboundIPs", skip_serializing_if = "Option::is_none")]
    pub effective_outbound_ips: Option<Vec<SubResource>>,
}

/// A count of AKS-made outbound addresses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedOutboundIps {
    /// IPv4 addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
}

/// The user's outbound public IPs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboundIps {
    /// The addresses.
    #[serde(rename = "publicIPs", skip_serializing_if = "Option::is_none")]
    pub public_ips: Option<Vec<SubResource>>,
}

/// The user's outbound public IP prefixes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboundIpPrefixes {
    /// The prefixes.
    #[serde(rename = "publicIPPrefixes", skip_serializing_if = "Option::is_none")]
    pub public_ip_prefixes: Option<Vec<SubResource>>,
}

/// Microsoft Entra integration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AadProfile {
    /// AKS-managed Entra integration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed: Option<bool>,
    /// Azure RBAC for Kubernetes authorization.
    #[serde(rename = "enableAzureRBAC", skip_serializing_if = "Option::is_none")]
    pub enable_azure_rbac: Option<bool>,
    /// Entra groups whose members are cluster admins.
    #[serde(rename = "adminGroupObjectIDs", skip_serializing_if = "Option::is_none")]
    pub admin_group_object_ids: Option<Vec<String>>,
    /// The tenant users sign in to.
    #[serde(rename = "tenantID", skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
}

/// Automatic upgrades.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoUpgradeProfile {
    /// `none`, `patch`, `stable`, `rapid` or `node-image`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_channel: Option<String>,
    /// `None`, `Unmanaged`, `SecurityPatch` or `NodeImage`.
    #[serde(rename = "nodeOSUpgradeChannel", skip_serializing_if = "Option::is_none")]
    pub node_os_upgrade_channel: Option<String>,
}

/// Who may reach the API server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServerAccessProfile {
    /// The ranges allowed to reach a public API server.
    #[serde(rename = "authorizedIPRanges", skip_serializing_if = "Option::is_none")]
    pub authorized_ip_ranges: Option<Vec<String>>,
    /// A private API server, reachable from the cluster's network; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_private_cluster: Option<bool>,
    /// The private zone of a private API server: `system`, `none`, or a zone's id.
    #[serde(rename = "privateDNSZone", skip_serializing_if = "Option::is_none")]
    pub private_dns_zone: Option<String>,
    /// Whether a private cluster also has a public host name.
    #[serde(
        rename = "enablePrivateClusterPublicFQDN",
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_private_cluster_public_fqdn: Option<bool>,
}

/// The proxy a cluster's nodes use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpProxyConfig {
    /// The HTTP proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_proxy: Option<String>,
    /// The HTTPS proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub https_proxy: Option<String>,
    /// Hosts reached directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<Vec<String>>,
    /// A CA certificate (base64 PEM) to trust for the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted_ca: Option<String>,
}

/// A cluster's security features.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSecurityProfile {
    /// Workload identity (needs the OIDC issuer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_identity: Option<Enabled>,
    /// The image cleaner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_cleaner: Option<ImageCleaner>,
    /// Microsoft Defender, as AKS takes it (its workspace and whether it monitors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defender: Option<Map<String, Value>>,
    /// Encryption of Kubernetes secrets with a Key Vault key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_key_vault_kms: Option<Map<String, Value>>,
}

/// A feature that is on or off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enabled {
    /// Whether it is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// The image cleaner: on or off, and how often it runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageCleaner {
    /// Whether it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Hours between runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_hours: Option<i32>,
}

/// A cluster's OIDC issuer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OidcIssuerProfile {
    /// Whether the cluster has one; it cannot be turned off once on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Its URL (read-only).
    #[serde(rename = "issuerURL", skip_serializing_if = "Option::is_none")]
    pub issuer_url: Option<String>,
}

/// Whether a cluster or pool runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PowerState {
    /// `Running` or `Stopped`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::ArmModel;

    /// A managed cluster as AKS answered it in a recorded session reads into the model, and the
    /// fields a controller acts on come out right; what the model leaves out is ignored.
    #[test]
    fn an_answer_of_aks_reads() {
        let answer = json!({
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/rg/providers/Microsoft.ContainerService/managedClusters/mc",
            "location": "westus3",
            "name": "mc",
            "type": "Microsoft.ContainerService/ManagedClusters",
            "kind": "Base",
            "properties": {
                "provisioningState": "Succeeded",
                "powerState": {"code": "Running"},
                "kubernetesVersion": "1.33",
                "currentKubernetesVersion": "1.33.5",
                "dnsPrefix": "aso",
                "fqdn": "aso-tmqalk0n.hcp.westus3.azmk8s.io",
                "agentPoolProfiles": [{
                    "name": "ap1", "count": 1, "vmSize": "Standard_DS2_v2", "osDiskSizeGB": 128,
                    "osDiskType": "Managed", "maxPods": 250, "type": "VirtualMachineScaleSets",
                    "enableAutoScaling": false, "mode": "System", "osType": "Linux", "osSKU": "Ubuntu",
                    "orchestratorVersion": "1.33", "currentOrchestratorVersion": "1.33.5",
                    "upgradeSettings": {"maxSurge": "10%", "maxUnavailable": "0"},
                    "securityProfile": {"sshAccess": "LocalUser"},
                }],
                "servicePrincipalProfile": {"clientId": "msi"},
                "addonProfiles": {"azurepolicy": {"enabled": true, "config": null, "identity": {
                    "resourceId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/MC_rg_mc_westus3/providers/Microsoft.ManagedIdentity/userAssignedIdentities/azurepolicy-mc",
                    "clientId": "b49e5a0a-c5b8-4ace-b9e4-8edd51560be9",
                    "objectId": "22266c8c-486d-4d37-81d5-e8fba38bc951",
                }}},
                "nodeResourceGroup": "MC_rg_mc_westus3",
                "enableRBAC": true,
                "networkProfile": {
                    "networkPlugin": "azure", "networkPluginMode": "overlay", "networkPolicy": "none",
                    "loadBalancerSku": "standard",
                    "loadBalancerProfile": {"managedOutboundIPs": {"count": 1}, "effectiveOutboundIPs": [
                        {"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/MC_rg_mc_westus3/providers/Microsoft.Network/publicIPAddresses/out"}
                    ]},
                    "podCidr": "10.244.0.0/16", "serviceCidr": "10.0.0.0/16", "dnsServiceIP": "10.0.0.10",
                    "outboundType": "loadBalancer",
                },
                "identityProfile": {"kubeletidentity": {"clientId": "cc794003-9d23-4cba-986e-67750aa4c506"}},
                "autoUpgradeProfile": {"nodeOSUpgradeChannel": "NodeImage"},
                "securityProfile": {},
                "oidcIssuerProfile": {"enabled": false},
            },
            "identity": {"type": "SystemAssigned", "principalId": "b32cf722-5e17-4b12-a951-8be97cf121da", "tenantId": "00000000-0000-0000-0000-000000000000"},
            "sku": {"name": "Base", "tier": "Standard"},
        });
        let cluster: ManagedCluster = serde_json::from_value(answer).unwrap();
        assert_eq!(
            cluster.sku.as_ref().and_then(|sku| sku.tier.clone()),
            Some(SkuTier::Standard)
        );
        let properties = cluster.properties.unwrap();
        assert_eq!(properties.current_kubernetes_version.as_deref(), Some("1.33.5"));
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        let pools = properties.agent_pool_profiles.unwrap();
        assert_eq!(pools[0].name.as_deref(), Some("ap1"));
        assert_eq!(pools[0].properties.mode, Some(AgentPoolMode::System));
        assert_eq!(pools[0].properties.os_disk_size_gb, Some(128));
        let network = properties.network_profile.unwrap();
        assert_eq!(network.dns_service_ip.as_deref(), Some("10.0.0.10"));
        assert_eq!(
            network
                .load_balancer_profile
                .and_then(|profile| profile.managed_outbound_ips),
            Some(ManagedOutboundIps { count: Some(1) })
        );
        assert_eq!(
            properties.identity_profile.unwrap()["kubeletidentity"]
                .client_id
                .as_deref(),
            Some("cc794003-9d23-4cba-986e-67750aa4c506")
        );
        assert!(properties.addon_profiles.unwrap()["azurepolicy"].enabled);
    }

    /// A desired pool says only what it sets, under AKS's spellings, and a secret never shows in
    /// a debug print.
    #[test]
    fn a_desired_pool_sends_only_what_it_sets() {
        let pool = AgentPool {
            properties: Some(AgentPoolProperties {
                mode: Some(AgentPoolMode::User),
                count: Some(2),
                vm_size: Some("Standard_D2s_v3".into()),
                os_disk_size_gb: Some(64),
                enable_fips: Some(true),
                node_taints: Some(vec!["dedicated=gpu:NoSchedule".into()]),
                linux_os_config: Some(LinuxOsConfig {
                    swap_file_size_mb: Some(1500),
                    ..LinuxOsConfig::default()
                }),
                ..AgentPoolProperties::default()
            }),
            ..AgentPool::default()
        };
        assert_eq!(
            serde_json::to_value(&pool).unwrap(),
            json!({"properties": {
                "mode": "User", "count": 2, "vmSize": "Standard_D2s_v3", "osDiskSizeGB": 64,
                "enableFIPS": true, "nodeTaints": ["dedicated=gpu:NoSchedule"],
                "linuxOSConfig": {"swapFileSizeMB": 1500},
            }})
        );
        let profile = ServicePrincipalProfile {
            client_id: Some("app".into()),
            secret: Some(Secret::new("hunter2".to_owned())),
        };
        assert!(!format!("{profile:?}").contains("hunter2"));
        assert_eq!(
            <ManagedCluster as ArmModel>::RESOURCE_TYPE,
            "Microsoft.ContainerService/managedClusters"
        );
    }
}
