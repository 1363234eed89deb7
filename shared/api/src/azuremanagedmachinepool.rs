//! `AzureManagedMachinePool` and `AzureManagedMachinePoolTemplate`: AKS node pools (deprecated in
//! CAPZ in favour of the AzureASOManaged kinds).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Conditions, Futures, Quantity, Tags};

/// The desired state of an AKS node pool.
///
/// A Cluster API `MachinePool` refers to it as its infrastructure; the pool's size is the
/// `MachinePool`'s `replicas` unless `scaling` hands it to the cluster autoscaler.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedMachinePool",
    namespaced,
    status = "AzureManagedMachinePoolStatus",
    category = "cluster-api",
    shortname = "ammp",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A node pool (agent pool) of a workload cluster run by AKS.",
    deprecated = "AzureManagedMachinePool is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it.",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
        description = "The Cluster API cluster the node pool belongs to"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].status",
        description = "Whether the node pool is ready"
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
        description = "Why the node pool is or is not ready"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Ready')].message",
        priority = 1,
        description = "Details about the readiness"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(
        name = "Mode",
        type_ = "string",
        json_path = ".spec.mode",
        description = "System or User pool"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedMachinePoolSpec {
    /// The settings a ClusterClass template may also carry.
    #[serde(flatten)]
    pub class: AzureManagedMachinePoolClassSpec,

    /// The provider IDs of the pool's instances, filled in by the controller from the AKS scale
    /// set.
    #[serde(rename = "providerIDList", default, skip_serializing_if = "Option::is_none")]
    pub provider_id_list: Option<Vec<String>>,
}

/// The settings of an AKS node pool that a ClusterClass template may carry, shared by
/// `AzureManagedMachinePool` and `AzureManagedMachinePoolTemplate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedMachinePoolClassSpec {
    /// Extra Azure tags for the node pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tags: Option<Tags>,

    /// Name of the node pool in AKS; defaults to the object's name. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// `System` pools run the cluster's system pods (at least one is required); `User` pools
    /// run workloads only.
    pub mode: NodePoolMode,

    /// The VM size of the nodes, for example `Standard_D2s_v3`. Immutable.
    pub sku: String,

    /// Size of each node's OS disk in GB. Immutable.
    #[serde(rename = "osDiskSizeGB", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub os_disk_size_gb: Option<i64>,

    /// Availability zones to spread the nodes over, for example `["1", "2", "3"]`. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability_zones: Option<Vec<String>>,

    /// Kubernetes labels for the pool's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_labels: Option<BTreeMap<String, String>>,

    /// Kubernetes taints for the pool's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,

    /// Lets the cluster autoscaler size the pool between the given bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<ManagedMachinePoolScaling>,

    /// The most pods a node runs. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub max_pods: Option<i64>,

    /// `Managed` (the default) or `Ephemeral` OS disks. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Managed"))]
    pub os_disk_type: Option<OsDiskType>,

    /// Allows Ultra SSD data disks on the nodes.
    #[serde(rename = "enableUltraSSD", default, skip_serializing_if = "Option::is_none")]
    pub enable_ultra_ssd: Option<bool>,

    /// The OS of the nodes: `Linux` (the default) or `Windows` (`User` pools with the `azure`
    /// network plugin only). Immutable.
    #[serde(rename = "osType", default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Linux"))]
    pub os_type: Option<OsType>,

    /// Gives each node its own public IP. Immutable.
    #[serde(
        rename = "enableNodePublicIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub enable_node_public_ip: Option<bool>,

    /// Resource ID of the public IP prefix the node public IPs come from. Immutable.
    #[serde(
        rename = "nodePublicIPPrefixID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub node_public_ip_prefix_id: Option<String>,

    /// `Regular` (the default) or `Spot` VMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_set_priority: Option<ScaleSetPriority>,

    /// What happens to nodes removed by scaling down: `Delete` (the default) or `Deallocate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Delete"))]
    pub scale_down_mode: Option<ScaleDownMode>,

    /// For `Spot` pools: the highest hourly price to pay, in US dollars; `-1` (or unset) pays up
    /// to the regular price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::quantity::quantity")]
    pub spot_max_price: Option<Quantity>,

    /// Kubelet settings of the nodes. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_config: Option<KubeletConfig>,

    /// Where kubelet keeps its data: `OS` disk or `Temporary` disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_disk_type: Option<KubeletDiskType>,

    /// Linux OS settings of the nodes. Immutable.
    #[serde(rename = "linuxOSConfig", default, skip_serializing_if = "Option::is_none")]
    pub linux_os_config: Option<LinuxOsConfig>,

    /// The subnet of the cluster's virtual network to place the nodes in; defaults to the
    /// control plane's subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_name: Option<String>,

    /// Uses FIPS-enabled node images.
    #[serde(rename = "enableFIPS", default, skip_serializing_if = "Option::is_none")]
    pub enable_fips: Option<bool>,

    /// Encrypts the nodes' disks and caches on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_encryption_at_host: Option<bool>,

    /// JSON merge patches applied, in order, to the generated ASO `ManagedClustersAgentPool`
    /// before it is sent to Azure; a way to reach AKS settings this API lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aso_managed_clusters_agent_pool_patches: Option<Vec<String>>,
}

/// The role of an AKS node pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum NodePoolMode {
    /// Runs system pods, and workloads unless tainted.
    System,
    /// Runs workloads only.
    User,
}

/// A Kubernetes taint put on the nodes of a pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// What the taint does to pods that do not tolerate it: `NoSchedule`, `PreferNoSchedule`
    /// or `NoExecute`.
    pub effect: TaintEffect,

    /// The taint's key.
    pub key: String,

    /// The taint's value.
    pub value: String,
}

/// The effect of a taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum TaintEffect {
    /// New pods are not scheduled on the node.
    NoSchedule,
    /// Running pods are evicted and new ones are not scheduled.
    NoExecute,
    /// The scheduler avoids the node when it can.
    PreferNoSchedule,
}

/// The bounds of a node pool sized by the cluster autoscaler.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedMachinePoolScaling {
    /// The fewest nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub min_size: Option<i64>,

    /// The most nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub max_size: Option<i64>,
}

/// The kind of OS disk of the nodes: `Managed` (the default) or `Ephemeral`. Immutable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum OsDiskType {
    /// A disk on the host's local storage: faster, but lost when the node is reimaged.
    Ephemeral,
    /// An Azure managed disk.
    Managed,
}

/// The OS of the nodes: `Linux` (the default) or `Windows` (`User` pools with the `azure`
/// network plugin only). Immutable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum OsType {
    /// Linux nodes.
    Linux,
    /// Windows nodes.
    Windows,
}

/// The VM priority of an AKS node pool: `Regular` (the default) or `Spot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ScaleSetPriority {
    /// Regular VMs.
    Regular,
    /// Spot VMs, cheaper but evictable.
    Spot,
}

/// What happens to the nodes removed from an AKS node pool: `Delete` (the default) or
/// `Deallocate`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum ScaleDownMode {
    /// Nodes are stopped and deallocated, and started again on scale-up.
    Deallocate,
    /// Nodes are deleted.
    Delete,
}

/// Where the kubelet of the nodes keeps its data (emptyDir volumes, container images): on the
/// `OS` disk or the `Temporary` disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum KubeletDiskType {
    /// On the OS disk.
    #[serde(rename = "OS")]
    Os,
    /// On the VM's temporary disk.
    Temporary,
}

/// Kubelet settings of AKS nodes. Unset settings keep AKS's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfig {
    /// The CPU manager policy: `none` or `static`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_manager_policy: Option<CpuManagerPolicy>,

    /// Whether CPU limits are enforced with CFS quotas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota: Option<bool>,

    /// The CFS quota period, in milliseconds with an `ms` suffix, for example `"100ms"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_cfs_quota_period: Option<String>,

    /// Disk usage percentage (0 to 100) above which images are always garbage-collected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 0, "maximum" = 100))]
    pub image_gc_high_threshold: Option<i64>,

    /// Disk usage percentage (0 to 100) below which images are never garbage-collected; lower
    /// than the high threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 0, "maximum" = 100))]
    pub image_gc_low_threshold: Option<i64>,

    /// The topology manager policy: `none`, `best-effort`, `restricted` or `single-numa-node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_manager_policy: Option<TopologyManagerPolicy>,

    /// Unsafe sysctls (or patterns such as `net.*`) pods may set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_unsafe_sysctls: Option<Vec<String>>,

    /// Whether kubelet refuses to start when swap is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_swap_on: Option<bool>,

    /// Size in MB a container log reaches before it is rotated.
    #[serde(
        rename = "containerLogMaxSizeMB",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer")]
    pub container_log_max_size_mb: Option<i64>,

    /// How many log files a container keeps, at least 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 2))]
    pub container_log_max_files: Option<i64>,

    /// The most processes a pod may run; `-1` for no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = -1))]
    pub pod_max_pids: Option<i64>,
}

/// The kubelet CPU manager policy: `none` or `static`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum CpuManagerPolicy {
    /// No exclusive CPUs.
    #[serde(rename = "none")]
    None,
    /// Guaranteed pods with whole CPUs get exclusive CPUs.
    #[serde(rename = "static")]
    Static,
}

/// The kubelet topology manager policy: `none`, `best-effort`, `restricted` or
/// `single-numa-node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum TopologyManagerPolicy {
    /// No topology alignment.
    #[serde(rename = "none")]
    None,
    /// Prefers NUMA-aligned resources but admits pods anyway.
    #[serde(rename = "best-effort")]
    BestEffort,
    /// Rejects pods whose resources cannot be NUMA-aligned.
    #[serde(rename = "restricted")]
    Restricted,
    /// Rejects pods whose resources do not fit in one NUMA node.
    #[serde(rename = "single-numa-node")]
    SingleNumaNode,
}

/// Linux OS settings of AKS nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinuxOsConfig {
    /// Size in MB of a swap file created on each node, at least 1; needs `failSwapOn: false` in
    /// the kubelet settings.
    #[serde(rename = "swapFileSizeMB", default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1))]
    pub swap_file_size_mb: Option<i64>,

    /// Kernel settings of the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysctls: Option<SysctlConfig>,

    /// Transparent huge page defragmentation: `always`, `defer`, `defer+madvise`, `madvise` or
    /// `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparent_huge_page_defrag: Option<TransparentHugePageDefrag>,

    /// Transparent huge pages: `always`, `madvise` or `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparent_huge_page_enabled: Option<TransparentHugePageEnabled>,
}

/// When the kernel defragments memory for transparent huge pages: `always`, `defer`,
/// `defer+madvise`, `madvise` or `never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum TransparentHugePageDefrag {
    /// Always, stalling allocations if needed.
    #[serde(rename = "always")]
    Always,
    /// In the background.
    #[serde(rename = "defer")]
    Defer,
    /// In the background, and directly for `madvise` regions.
    #[serde(rename = "defer+madvise")]
    DeferMadvise,
    /// Directly, for `madvise` regions only.
    #[serde(rename = "madvise")]
    Madvise,
    /// Never.
    #[serde(rename = "never")]
    Never,
}

/// Whether the kernel uses transparent huge pages: `always`, `madvise` or `never`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum TransparentHugePageEnabled {
    /// For all memory.
    #[serde(rename = "always")]
    Always,
    /// For `madvise` regions only.
    #[serde(rename = "madvise")]
    Madvise,
    /// Never.
    #[serde(rename = "never")]
    Never,
}

// The allowed ranges are AKS's; the field names keep AKS's irregular casing.
/// Kernel settings (sysctls) of AKS nodes. Each bound is inclusive.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SysctlConfig {
    /// `fs.aio-max-nr`, 65536 to 6553500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 65536, "maximum" = 6_553_500))]
    pub fs_aio_max_nr: Option<i64>,

    /// `fs.file-max`, 8192 to 12000500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 8192, "maximum" = 12_000_500))]
    pub fs_file_max: Option<i64>,

    /// `fs.inotify.max_user_watches`, 781250 to 2097152.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 781_250, "maximum" = 2_097_152))]
    pub fs_inotify_max_user_watches: Option<i64>,

    /// `fs.nr_open`, 8192 to 20000500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 8192, "maximum" = 20_000_500))]
    pub fs_nr_open: Option<i64>,

    /// `kernel.threads-max`, 20 to 513785.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 20, "maximum" = 513_785))]
    pub kernel_threads_max: Option<i64>,

    /// `net.core.netdev_max_backlog`, 1000 to 3240000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1000, "maximum" = 3_240_000))]
    pub net_core_netdev_max_backlog: Option<i64>,

    /// `net.core.optmem_max`, 20480 to 4194304.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 20480, "maximum" = 4_194_304))]
    pub net_core_optmem_max: Option<i64>,

    /// `net.core.rmem_default`, 212992 to 134217728.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 212_992, "maximum" = 134_217_728))]
    pub net_core_rmem_default: Option<i64>,

    /// `net.core.rmem_max`, 212992 to 134217728.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 212_992, "maximum" = 134_217_728))]
    pub net_core_rmem_max: Option<i64>,

    /// `net.core.somaxconn`, 4096 to 3240000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 4096, "maximum" = 3_240_000))]
    pub net_core_somaxconn: Option<i64>,

    /// `net.core.wmem_default`, 212992 to 134217728.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 212_992, "maximum" = 134_217_728))]
    pub net_core_wmem_default: Option<i64>,

    /// `net.core.wmem_max`, 212992 to 134217728.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 212_992, "maximum" = 134_217_728))]
    pub net_core_wmem_max: Option<i64>,

    /// `net.ipv4.ip_local_port_range`: two numbers separated by a space, the first in 1024 to
    /// 60999 and the second in 32768 to 65000, for example `"32000 60000"`.
    #[serde(
        rename = "netIpv4IPLocalPortRange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub net_ipv4_ip_local_port_range: Option<String>,

    /// `net.ipv4.neigh.default.gc_thresh1`, 128 to 80000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 128, "maximum" = 80000))]
    pub net_ipv4_neigh_default_gc_thresh1: Option<i64>,

    /// `net.ipv4.neigh.default.gc_thresh2`, 512 to 90000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 512, "maximum" = 90000))]
    pub net_ipv4_neigh_default_gc_thresh2: Option<i64>,

    /// `net.ipv4.neigh.default.gc_thresh3`, 1024 to 100000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1024, "maximum" = 100_000))]
    pub net_ipv4_neigh_default_gc_thresh3: Option<i64>,

    /// `net.ipv4.tcp_fin_timeout`, 5 to 120.
    #[serde(
        rename = "netIpv4TCPFinTimeout",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 5, "maximum" = 120))]
    pub net_ipv4_tcp_fin_timeout: Option<i64>,

    /// `net.ipv4.tcp_keepalive_probes`, 1 to 15.
    #[serde(
        rename = "netIpv4TCPKeepaliveProbes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1, "maximum" = 15))]
    pub net_ipv4_tcp_keepalive_probes: Option<i64>,

    /// `net.ipv4.tcp_keepalive_time`, 30 to 432000.
    #[serde(
        rename = "netIpv4TCPKeepaliveTime",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 30, "maximum" = 432_000))]
    pub net_ipv4_tcp_keepalive_time: Option<i64>,

    /// `net.ipv4.tcp_max_syn_backlog`, 128 to 3240000.
    #[serde(
        rename = "netIpv4TCPMaxSynBacklog",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 128, "maximum" = 3_240_000))]
    pub net_ipv4_tcp_max_syn_backlog: Option<i64>,

    /// `net.ipv4.tcp_max_tw_buckets`, 8000 to 1440000.
    #[serde(
        rename = "netIpv4TCPMaxTwBuckets",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 8000, "maximum" = 1_440_000))]
    pub net_ipv4_tcp_max_tw_buckets: Option<i64>,

    /// `net.ipv4.tcp_tw_reuse`.
    #[serde(
        rename = "netIpv4TCPTwReuse",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub net_ipv4_tcp_tw_reuse: Option<bool>,

    /// `net.ipv4.tcp_keepalive_intvl`, 1 to 75. Note the lower-case `k` in the field name.
    #[serde(
        rename = "netIpv4TCPkeepaliveIntvl",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1, "maximum" = 75))]
    pub net_ipv4_tcp_keepalive_intvl: Option<i64>,

    /// `net.netfilter.nf_conntrack_buckets`, 65536 to 147456.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 65536, "maximum" = 147_456))]
    pub net_netfilter_nf_conntrack_buckets: Option<i64>,

    /// `net.netfilter.nf_conntrack_max`, 131072 to 1048576.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 131_072, "maximum" = 1_048_576))]
    pub net_netfilter_nf_conntrack_max: Option<i64>,

    /// `vm.max_map_count`, 65530 to 262144.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 65530, "maximum" = 262_144))]
    pub vm_max_map_count: Option<i64>,

    /// `vm.swappiness`, 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 0, "maximum" = 100))]
    pub vm_swappiness: Option<i64>,

    /// `vm.vfs_cache_pressure`, 1 to 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::common::schema::integer", extend("minimum" = 1, "maximum" = 500))]
    pub vm_vfs_cache_pressure: Option<i64>,
}

/// What the controller observed about an AKS node pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedMachinePoolStatus {
    /// Whether the node pool exists and its instances are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,

    /// How many instances the pool's scale set has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// A machine-readable code of a problem that needs a person to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,

    /// A human-readable description of a problem that needs a person to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,

    /// Observations about the node pool.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,

    /// Azure operations in flight for the node pool.
    #[serde(default, skip_serializing_if = "Futures::is_empty")]
    pub long_running_operation_states: Futures,
}

/// The desired state of an AKS node pool template.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedMachinePoolTemplate",
    namespaced,
    category = "cluster-api",
    shortname = "ammpt",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A template of AKS node pools, used by ClusterClasses.",
    deprecated = "AzureManagedMachinePoolTemplate is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it."
)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedMachinePoolTemplateSpec {
    /// What each node pool made from the template looks like.
    pub template: AzureManagedMachinePoolTemplateResource,
}

/// The node pool a template describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedMachinePoolTemplateResource {
    /// The spec of the node pools made from the template.
    pub spec: AzureManagedMachinePoolClassSpec,
}
