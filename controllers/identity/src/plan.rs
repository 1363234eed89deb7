//! The Azure cloud provider's configuration file (`/etc/kubernetes/azure.json`) of a workload
//! cluster's machines, as CAPZ writes it: names derived from the AzureCluster, the credentials of
//! its identity (or the machines' managed identity), and the spec's rate-limit and back-off
//! overrides.
//!
//! CAPZ writes the same file for control-plane and worker machines: both name the first node
//! subnet with its security group and route table, since the cloud provider places service load
//! balancers and routes for worker nodes.

use capz_kit::api::azurecluster::{
    BackOffConfig, CloudProviderConfigOverrides, RateLimitConfig, RateLimitName,
};
use capz_kit::api::common::Quantity;
use capz_kit::api::common::network::{SubnetRole, SubnetSpec};
use capz_kit::conditions::Reason;
use capz_kit::identity::CloudProviderCredentials;
use capz_kit::policy::{Category, Classify};
use capz_kit::scope::ClusterScope;
use serde::Serialize;

/// The Secret keys of the file: one per machine role, and CAPZ's older single key (the
/// control plane's file).
pub const CONTROL_PLANE_KEY: &str = "control-plane-azure.json";
/// See [`CONTROL_PLANE_KEY`].
pub const WORKER_NODE_KEY: &str = "worker-node-azure.json";
/// See [`CONTROL_PLANE_KEY`].
pub const LEGACY_KEY: &str = "azure.json";

/// The spec asks for something that cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSpec(pub String);

impl Classify for InvalidSpec {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

/// How the machines' cloud provider signs in to Azure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostIdentity {
    /// With the cluster identity's service principal, written into the file.
    ServicePrincipal,
    /// With the machine's system-assigned managed identity.
    SystemAssigned,
    /// With a user-assigned managed identity, by its client id.
    UserAssigned(String),
}

/// The cloud provider's configuration, with CAPZ's key names and order. Empty optional values are
/// left out as CAPZ leaves them out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CloudProviderConfig {
    cloud: String,
    tenant_id: String,
    subscription_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    aad_client_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    aad_client_secret: String,
    resource_group: String,
    security_group_name: String,
    security_group_resource_group: String,
    location: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    extended_location_type: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    extended_location_name: String,
    vm_type: &'static str,
    vnet_name: String,
    vnet_resource_group: String,
    subnet_name: String,
    route_table_name: String,
    load_balancer_sku: &'static str,
    load_balancer_name: String,
    maximum_load_balancer_rule_count: u32,
    use_managed_identity_extension: bool,
    use_instance_metadata: bool,
    #[serde(skip_serializing_if = "is_false")]
    enable_vmss_flex_nodes: bool,
    #[serde(rename = "userAssignedIdentityID", skip_serializing_if = "String::is_empty")]
    user_assigned_identity_id: String,
    #[serde(flatten)]
    rate_limits: RateLimits,
    #[serde(flatten)]
    back_off: BackOff,
}

/// The default rate limit (flattened into the file) and the per-client ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct RateLimits {
    #[serde(flatten)]
    default: RateLimit,
    #[serde(skip_serializing_if = "Option::is_none")]
    route_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subnets_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interface_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    route_table_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load_balancer_rate_limit: Option<RateLimit>,
    #[serde(rename = "publicIPAddressRateLimit", skip_serializing_if = "Option::is_none")]
    public_ip_address_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    security_group_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_machine_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    storage_account_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disk_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_machine_scale_set_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_machine_sizes_rate_limit: Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    availability_set_rate_limit: Option<RateLimit>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct RateLimit {
    #[serde(skip_serializing_if = "is_false")]
    cloud_provider_rate_limit: bool,
    #[serde(rename = "cloudProviderRateLimitQPS", skip_serializing_if = "is_zero_f32")]
    cloud_provider_rate_limit_qps: f32,
    #[serde(skip_serializing_if = "is_zero_i64")]
    cloud_provider_rate_limit_bucket: i64,
    #[serde(
        rename = "cloudProviderRateLimitQPSWrite",
        skip_serializing_if = "is_zero_f32"
    )]
    cloud_provider_rate_limit_qps_write: f32,
    #[serde(skip_serializing_if = "is_zero_i64")]
    cloud_provider_rate_limit_bucket_write: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct BackOff {
    #[serde(skip_serializing_if = "is_false")]
    cloud_provider_backoff: bool,
    #[serde(skip_serializing_if = "is_zero_i64")]
    cloud_provider_backoff_retries: i64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    cloud_provider_backoff_exponent: f64,
    #[serde(skip_serializing_if = "is_zero_i64")]
    cloud_provider_backoff_duration: i64,
    #[serde(skip_serializing_if = "is_zero_f64")]
    cloud_provider_backoff_jitter: f64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_false(value: &bool) -> bool {
    !*value
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero_i64(value: &i64) -> bool {
    *value == 0
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero_f32(value: &f32) -> bool {
    *value == 0.0
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero_f64(value: &f64) -> bool {
    *value == 0.0
}

/// The subnet whose names go into the file: the first node subnet, else the single subnet of
/// both roles.
fn node_subnet(scope: &ClusterScope) -> Option<&SubnetSpec> {
    let subnets = scope.subnets();
    subnets
        .iter()
        .find(|subnet| subnet.class.role == SubnetRole::Node)
        .or_else(|| {
            subnets
                .iter()
                .find(|subnet| subnet.class.role == SubnetRole::Cluster)
        })
}

impl CloudProviderConfig {
    /// The file for the machines of the cluster `scope`, signing in as `host` says.
    #[must_use]
    pub fn new(scope: &ClusterScope, credentials: &CloudProviderCredentials, host: &HostIdentity) -> Self {
        let spec = &scope.spec;
        let vnet = scope.vnet();
        let vnet_group = vnet
            .resource_group
            .filter(|group| !group.is_empty())
            .unwrap_or_else(|| scope.resource_group.to_string());
        let subnet = node_subnet(scope);
        let extended = spec.class.extended_location.as_ref();
        let (aad_client_id, aad_client_secret, managed, user_assigned) = match host {
            HostIdentity::ServicePrincipal => (
                credentials.client_id.clone(),
                credentials.client_secret.clone().unwrap_or_default(),
                false,
                String::new(),
            ),
            HostIdentity::SystemAssigned => (String::new(), String::new(), true, String::new()),
            HostIdentity::UserAssigned(client_id) => (String::new(), String::new(), true, client_id.clone()),
        };
        let mut config = Self {
            cloud: spec
                .class
                .azure_environment
                .clone()
                .filter(|cloud| !cloud.is_empty())
                .unwrap_or_else(|| "AzurePublicCloud".to_owned()),
            tenant_id: credentials.tenant_id.clone(),
            subscription_id: scope.subscription.to_string(),
            aad_client_id,
            aad_client_secret,
            resource_group: scope.resource_group.to_string(),
            security_group_name: subnet
                .and_then(|subnet| subnet.security_group.as_ref())
                .map(|group| group.name.clone())
                .unwrap_or_default(),
            security_group_resource_group: vnet_group.clone(),
            location: scope.location.to_string(),
            extended_location_type: extended
                .and_then(|location| serde_json::to_value(location.type_).ok())
                .and_then(|value| value.as_str().map(str::to_owned))
                .unwrap_or_default(),
            extended_location_name: extended.map(|location| location.name.clone()).unwrap_or_default(),
            // CAPZ names scale sets for every cluster, and with Cluster API's MachinePool feature
            // (on by default) lets the cloud provider manage flexible scale-set nodes too.
            vm_type: "vmss",
            vnet_name: vnet.name,
            vnet_resource_group: vnet_group,
            subnet_name: subnet.map(|subnet| subnet.class.name.clone()).unwrap_or_default(),
            route_table_name: subnet
                .and_then(|subnet| subnet.route_table.as_ref())
                .map(|table| table.name.clone())
                .unwrap_or_default(),
            load_balancer_sku: "Standard",
            load_balancer_name: spec
                .network_spec
                .as_ref()
                .and_then(|network| network.node_outbound_lb.as_ref())
                .and_then(|lb| lb.name.clone())
                .unwrap_or_default(),
            maximum_load_balancer_rule_count: 250,
            use_managed_identity_extension: managed,
            use_instance_metadata: true,
            enable_vmss_flex_nodes: true,
            user_assigned_identity_id: user_assigned,
            rate_limits: RateLimits::default(),
            back_off: BackOff::default(),
        };
        if let Some(overrides) = &spec.class.cloud_provider_config_overrides {
            config.apply_overrides(overrides);
        }
        config
    }

    fn apply_overrides(&mut self, overrides: &CloudProviderConfigOverrides) {
        let limits = &mut self.rate_limits;
        for limit in overrides.rate_limits.iter().flatten() {
            let value = limit.config.as_ref().map(RateLimit::from).unwrap_or_default();
            let slot = match limit.name {
                RateLimitName::DefaultRateLimit => {
                    limits.default = value;
                    continue;
                }
                RateLimitName::RouteRateLimit => &mut limits.route_rate_limit,
                RateLimitName::SubnetsRateLimit => &mut limits.subnets_rate_limit,
                RateLimitName::InterfaceRateLimit => &mut limits.interface_rate_limit,
                RateLimitName::RouteTableRateLimit => &mut limits.route_table_rate_limit,
                RateLimitName::LoadBalancerRateLimit => &mut limits.load_balancer_rate_limit,
                RateLimitName::PublicIpAddressRateLimit => &mut limits.public_ip_address_rate_limit,
                RateLimitName::SecurityGroupRateLimit => &mut limits.security_group_rate_limit,
                RateLimitName::VirtualMachineRateLimit => &mut limits.virtual_machine_rate_limit,
                RateLimitName::StorageAccountRateLimit => &mut limits.storage_account_rate_limit,
                RateLimitName::DiskRateLimit => &mut limits.disk_rate_limit,
                RateLimitName::SnapshotRateLimit => &mut limits.snapshot_rate_limit,
                RateLimitName::VirtualMachineScaleSetRateLimit => {
                    &mut limits.virtual_machine_scale_set_rate_limit
                }
                RateLimitName::VirtualMachineSizesRateLimit => &mut limits.virtual_machine_sizes_rate_limit,
                RateLimitName::AvailabilitySetRateLimit => &mut limits.availability_set_rate_limit,
            };
            *slot = Some(value);
        }
        self.back_off = overrides
            .back_offs
            .as_ref()
            .map(BackOff::from)
            .unwrap_or_default();
    }

    /// The file's bytes: JSON indented by four spaces, as CAPZ writes it.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        // Plain strings, numbers and booleans always serialize.
        if self.serialize(&mut serializer).is_err() {
            out.clear();
        }
        out
    }
}

impl From<&RateLimitConfig> for RateLimit {
    fn from(config: &RateLimitConfig) -> Self {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the cloud provider reads QPS as float32"
        )]
        let qps = |quantity: Option<&Quantity>| quantity.and_then(quantity_value).unwrap_or_default() as f32;
        Self {
            cloud_provider_rate_limit: config.cloud_provider_rate_limit.unwrap_or_default(),
            cloud_provider_rate_limit_qps: qps(config.cloud_provider_rate_limit_qps.as_ref()),
            cloud_provider_rate_limit_bucket: config.cloud_provider_rate_limit_bucket.unwrap_or_default(),
            cloud_provider_rate_limit_qps_write: qps(config.cloud_provider_rate_limit_qps_write.as_ref()),
            cloud_provider_rate_limit_bucket_write: config
                .cloud_provider_rate_limit_bucket_write
                .unwrap_or_default(),
        }
    }
}

impl From<&BackOffConfig> for BackOff {
    fn from(config: &BackOffConfig) -> Self {
        let value = |quantity: Option<&Quantity>| quantity.and_then(quantity_value).unwrap_or_default();
        Self {
            cloud_provider_backoff: config.cloud_provider_backoff.unwrap_or_default(),
            cloud_provider_backoff_retries: config.cloud_provider_backoff_retries.unwrap_or_default(),
            cloud_provider_backoff_exponent: value(config.cloud_provider_backoff_exponent.as_ref()),
            cloud_provider_backoff_duration: config.cloud_provider_backoff_duration.unwrap_or_default(),
            cloud_provider_backoff_jitter: value(config.cloud_provider_backoff_jitter.as_ref()),
        }
    }
}

/// A Kubernetes quantity as a number: `1.5`, `100m`, `2k`, `1Ki`, `5e-1`. `None` when it is not
/// one (the API server's schema refuses those anyway).
fn quantity_value(quantity: &Quantity) -> Option<f64> {
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    let text = match quantity {
        #[expect(clippy::cast_precision_loss, reason = "rates and factors are small")]
        Quantity::Integer(value) => return Some(*value as f64),
        Quantity::Text(text) => text.trim(),
    };
    for (suffix, factor) in SUFFIXES {
        if let Some(number) = text.strip_suffix(suffix)
            && let Ok(value) = number.parse::<f64>()
        {
            return Some(value * factor);
        }
    }
    // Plain decimals and the exponent form (`5e-1`).
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use capz_kit::api::AzureCluster;
    use serde_json::{Value, json};

    use super::*;

    const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000001";

    fn scope(spec: &Value) -> ClusterScope {
        let cluster: AzureCluster = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "az", "namespace": "ns", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
            "spec": spec,
        }))
        .unwrap();
        ClusterScope::new(&cluster, capz_rules::Features::default(), Some(SUBSCRIPTION)).unwrap()
    }

    fn credentials() -> CloudProviderCredentials {
        CloudProviderCredentials {
            tenant_id: "tenant".into(),
            client_id: "client".into(),
            client_secret: Some("s3cret".into()),
        }
    }

    fn file(config: &CloudProviderConfig) -> Value {
        serde_json::from_slice(&config.to_bytes()).unwrap()
    }

    #[test]
    fn a_default_cluster_names_its_node_subnet_and_the_service_principal() {
        let config = CloudProviderConfig::new(
            &scope(&json!({"location": "westeurope"})),
            &credentials(),
            &HostIdentity::ServicePrincipal,
        );
        assert_eq!(
            file(&config),
            json!({
                "cloud": "AzurePublicCloud",
                "tenantId": "tenant",
                "subscriptionId": SUBSCRIPTION,
                "aadClientId": "client",
                "aadClientSecret": "s3cret",
                // The resource group defaults to the AzureCluster's name, as CAPZ's does.
                "resourceGroup": "az",
                "securityGroupName": "az-node-nsg",
                "securityGroupResourceGroup": "az",
                "location": "westeurope",
                "vmType": "vmss",
                "vnetName": "az-vnet",
                "vnetResourceGroup": "az",
                "subnetName": "az-node-subnet",
                "routeTableName": "az-node-routetable",
                "loadBalancerSku": "Standard",
                "loadBalancerName": "",
                "maximumLoadBalancerRuleCount": 250,
                "useManagedIdentityExtension": false,
                "useInstanceMetadata": true,
                "enableVmssFlexNodes": true,
            })
        );
        // Four-space indentation and CAPZ's key order.
        let text = String::from_utf8(config.to_bytes()).unwrap();
        assert!(
            text.starts_with("{\n    \"cloud\": \"AzurePublicCloud\",\n    \"tenantId\""),
            "{text}"
        );
    }

    #[test]
    fn managed_identities_leave_the_service_principal_out() {
        let scope = scope(&json!({"location": "westeurope"}));
        let system = file(&CloudProviderConfig::new(
            &scope,
            &credentials(),
            &HostIdentity::SystemAssigned,
        ));
        assert_eq!(system.get("aadClientId"), None);
        assert_eq!(system.get("aadClientSecret"), None);
        assert_eq!(system["useManagedIdentityExtension"], json!(true));
        assert_eq!(system.get("userAssignedIdentityID"), None);
        let user = file(&CloudProviderConfig::new(
            &scope,
            &credentials(),
            &HostIdentity::UserAssigned("uai-client".into()),
        ));
        assert_eq!(user.get("aadClientSecret"), None);
        assert_eq!(user["userAssignedIdentityID"], json!("uai-client"));
    }

    #[test]
    fn a_brought_network_and_overrides_go_into_the_file() {
        let config = CloudProviderConfig::new(
            &scope(&json!({
                "location": "westeurope",
                "azureEnvironment": "AzureUSGovernmentCloud",
                "networkSpec": {
                    "vnet": {"name": "shared-vnet", "resourceGroup": "net-rg"},
                    "subnets": [
                        {"name": "cp", "role": "control-plane"},
                        {"name": "workers", "role": "node", "securityGroup": {"name": "workers-nsg"},
                         "routeTable": {"name": "workers-rt"}},
                    ],
                    "nodeOutboundLB": {"name": "outbound"},
                },
                "cloudProviderConfigOverrides": {
                    "rateLimits": [
                        {"name": "defaultRateLimit", "config": {"cloudProviderRateLimit": true,
                         "cloudProviderRateLimitQPS": "1.5", "cloudProviderRateLimitBucket": 5}},
                        {"name": "loadBalancerRateLimit", "config": {"cloudProviderRateLimitQPSWrite": "100m",
                         "cloudProviderRateLimitBucketWrite": 3}},
                        {"name": "publicIPAddressRateLimit"},
                    ],
                    "backOffs": {"cloudProviderBackoff": true, "cloudProviderBackoffRetries": 4,
                                 "cloudProviderBackoffExponent": "1.5", "cloudProviderBackoffJitter": "1"},
                },
            })),
            &credentials(),
            &HostIdentity::ServicePrincipal,
        );
        let file = file(&config);
        assert_eq!(file["cloud"], json!("AzureUSGovernmentCloud"));
        assert_eq!(file["vnetName"], json!("shared-vnet"));
        assert_eq!(file["vnetResourceGroup"], json!("net-rg"));
        assert_eq!(file["securityGroupResourceGroup"], json!("net-rg"));
        assert_eq!(file["subnetName"], json!("workers"));
        assert_eq!(file["securityGroupName"], json!("workers-nsg"));
        assert_eq!(file["routeTableName"], json!("workers-rt"));
        assert_eq!(file["loadBalancerName"], json!("outbound"));
        assert_eq!(file["cloudProviderRateLimit"], json!(true));
        assert_eq!(file["cloudProviderRateLimitQPS"], json!(1.5));
        assert_eq!(file["cloudProviderRateLimitBucket"], json!(5));
        assert_eq!(
            file["loadBalancerRateLimit"],
            json!({"cloudProviderRateLimitQPSWrite": 0.1, "cloudProviderRateLimitBucketWrite": 3})
        );
        assert_eq!(file["publicIPAddressRateLimit"], json!({}));
        assert_eq!(file.get("routeRateLimit"), None);
        assert_eq!(file["cloudProviderBackoff"], json!(true));
        assert_eq!(file["cloudProviderBackoffRetries"], json!(4));
        assert_eq!(file["cloudProviderBackoffExponent"], json!(1.5));
        assert_eq!(file["cloudProviderBackoffJitter"], json!(1.0));
        assert_eq!(file.get("cloudProviderBackoffDuration"), None);
    }

    #[test]
    fn quantities_read_as_numbers() {
        let text = |value: &str| quantity_value(&Quantity::Text(value.into()));
        assert_eq!(text("1.5"), Some(1.5));
        assert_eq!(text("250m"), Some(0.25));
        assert_eq!(text("2k"), Some(2000.0));
        assert_eq!(text("1Ki"), Some(1024.0));
        assert_eq!(text("5e-1"), Some(0.5));
        assert_eq!(quantity_value(&Quantity::Integer(3)), Some(3.0));
        assert_eq!(text("fast"), None);
    }
}
