//! An AKS agent pool (`Microsoft.ContainerService/managedClusters/agentPools`) built from an
//! AzureManagedMachinePool and its MachinePool, as CAPZ builds it: the same settings go inline
//! in the managed cluster while it does not exist ([`AgentPool::profile`]), and to the pool's own
//! resource afterwards. The version is never lowered below what the pool runs, an autoscaled pool
//! keeps the count the autoscaler chose, and the labels AKS adds to a pool are kept.

use std::collections::BTreeMap;

use capz_api::azuremanagedmachinepool::{AzureManagedMachinePoolClassSpec, NodePoolMode, OsType};
use capz_azure::ResourceId;
use capz_azure::models::container_service::{
    AgentPool as AgentPoolModel, AgentPoolMode, AgentPoolOsType, AgentPoolProfile, AgentPoolProperties,
    KubeletConfig, LinuxOsConfig,
};
use capz_azure::models::id_of;
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::tags::Tags;
use serde_json::{Map, Value};

use crate::{as_value, covers, higher_version};

/// The prefix of the node labels AKS sets itself; a user may not set them, and they are kept.
const AKS_LABEL_PREFIX: &str = "kubernetes.azure.com";

/// Why a pool's spec gives no agent pool.
pub type AgentPoolError = crate::InvalidSpec;

/// What a pool takes from its MachinePool and its control plane.
#[derive(Debug, Clone, Default)]
pub struct PoolContext {
    /// `MachinePool.spec.replicas` (1 when unset).
    pub replicas: Option<i32>,
    /// The version the pool is to run: the higher of the MachinePool's and the version AKS
    /// auto-upgraded the control plane to.
    pub version: Option<String>,
    /// The subnet the nodes join (`vnetSubnetID`), when the cluster's network is custom.
    pub subnet: Option<ResourceId>,
}

/// The agent pool of one AzureManagedMachinePool.
#[derive(Debug, Clone)]
pub struct AgentPool {
    id: ResourceId,
    name: String,
    autoscaling: bool,
    properties: AgentPoolProperties,
}

impl AgentPool {
    /// The pool of the managed cluster `cluster` that `spec` describes (named `spec.name`, else
    /// `object`, the AzureManagedMachinePool's name), with what `context` gives.
    ///
    /// # Errors
    /// A name Azure would refuse, a price or an id that is not one.
    pub fn new(
        cluster: &ResourceId,
        object: &str,
        spec: &AzureManagedMachinePoolClassSpec,
        context: PoolContext,
    ) -> Result<Self, AgentPoolError> {
        let name = spec.name.clone().unwrap_or_else(|| object.to_owned());
        let id = id_of::<AgentPoolModel>(cluster, &name).map_err(|source| AgentPoolError::Name {
            field: "spec.name",
            value: name.clone(),
            source,
        })?;
        let scaling = spec.scaling.as_ref();
        let count = |size: Option<i64>| size.and_then(|size| i32::try_from(size).ok());
        let properties = AgentPoolProperties {
            mode: Some(match spec.mode {
                NodePoolMode::System => AgentPoolMode::System,
                NodePoolMode::User => AgentPoolMode::User,
            }),
            count: Some(context.replicas.unwrap_or(1)),
            vm_size: Some(spec.sku.clone()).filter(|sku| !sku.is_empty()),
            pool_type: Some("VirtualMachineScaleSets".to_owned()),
            os_type: Some(match spec.os_type {
                Some(OsType::Windows) => AgentPoolOsType::Windows,
                Some(OsType::Linux) | None => AgentPoolOsType::Linux,
            }),
            // Always sent, 0 when unset: AKS then picks its default size.
            os_disk_size_gb: Some(count(spec.os_disk_size_gb).unwrap_or(0)),
            os_disk_type: spec.os_disk_type.as_ref().and_then(spelled),
            kubelet_disk_type: spec.kubelet_disk_type.as_ref().and_then(spelled),
            orchestrator_version: context
                .version
                .as_deref()
                .map(|version| version.trim_start_matches('v').to_owned()),
            enable_auto_scaling: Some(scaling.is_some()),
            min_count: scaling.and_then(|scaling| count(scaling.min_size)),
            max_count: scaling.and_then(|scaling| count(scaling.max_size)),
            scale_down_mode: spec.scale_down_mode.as_ref().and_then(spelled),
            max_pods: count(spec.max_pods),
            node_labels: spec.node_labels.clone().filter(|labels| !labels.is_empty()),
            node_taints: spec
                .taints
                .as_ref()
                .filter(|taints| !taints.is_empty())
                .map(|taints| {
                    taints
                        .iter()
                        .map(|taint| {
                            let effect = spelled(&taint.effect).unwrap_or_default();
                            format!("{}={}:{effect}", taint.key, taint.value)
                        })
                        .collect()
                }),
            availability_zones: spec.availability_zones.clone().filter(|zones| !zones.is_empty()),
            enable_node_public_ip: spec.enable_node_public_ip,
            node_public_ip_prefix_id: spec
                .node_public_ip_prefix_id
                .as_deref()
                .map(|prefix| {
                    prefix.parse().map_err(|_| AgentPoolError::Invalid {
                        field: "spec.nodePublicIPPrefixID",
                        value: prefix.to_owned(),
                        why: "it must be the id of a public IP prefix (/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Network/publicIPPrefixes/<name>)",
                    })
                })
                .transpose()?,
            enable_ultra_ssd: spec.enable_ultra_ssd,
            enable_fips: spec.enable_fips,
            enable_encryption_at_host: spec.enable_encryption_at_host,
            vnet_subnet_id: context.subnet,
            scale_set_priority: spec.scale_set_priority.as_ref().and_then(spelled),
            spot_max_price: spec
                .spot_max_price
                .as_ref()
                .map(|price| {
                    price.to_string().parse::<f64>().map_err(|_| AgentPoolError::Invalid {
                        field: "spec.spotMaxPrice",
                        value: price.to_string(),
                        why: "it must be a price in US dollars such as 0.05, or -1 for up to the regular price",
                    })
                })
                .transpose()?,
            kubelet_config: spec
                .kubelet_config
                .as_ref()
                .and_then(|config| serde_json::from_value::<KubeletConfig>(as_value(config)).ok()),
            linux_os_config: spec.linux_os_config.as_ref().map(|config| {
                let mut fields = as_value(config);
                if let Some(sysctls) = fields.get_mut("sysctls") {
                    *sysctls = Value::Object(aks_sysctls(sysctls));
                }
                serde_json::from_value::<LinuxOsConfig>(fields).unwrap_or_default()
            }),
            tags: spec.additional_tags.clone().filter(|tags| !tags.is_empty()),
            ..AgentPoolProperties::default()
        };
        Ok(Self {
            id,
            name,
            autoscaling: scaling.is_some(),
            properties,
        })
    }

    /// The pool's name in AKS.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pool as it is written inline in a managed cluster that does not exist yet.
    #[must_use]
    pub fn profile(&self) -> AgentPoolProfile {
        AgentPoolProfile {
            name: Some(self.name.clone()),
            properties: self.properties.clone(),
        }
    }

    fn body(properties: AgentPoolProperties) -> AgentPoolModel {
        AgentPoolModel {
            properties: Some(properties),
            ..AgentPoolModel::default()
        }
    }
}

/// A value of the spec as AKS spells it (the spec's enums serialise to AKS's strings).
fn spelled<T: serde::Serialize>(value: &T) -> Option<String> {
    as_value(value).as_str().map(str::to_owned)
}

/// The spec's sysctls under AKS's names: CAPZ writes `netIpv4TCPFinTimeout` and
/// `netIpv4IPLocalPortRange` where AKS reads `netIpv4TcpFinTimeout` and `netIpv4IpLocalPortRange`.
fn aks_sysctls(sysctls: &Value) -> Map<String, Value> {
    sysctls
        .as_object()
        .map(|fields| {
            fields
                .iter()
                .map(|(name, value)| (name.replace("TCP", "Tcp").replace("IP", "Ip"), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The labels a user set: those AKS sets itself are left out.
fn users_labels(labels: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    labels
        .into_iter()
        .flatten()
        .filter(|(key, _)| !key.starts_with(AKS_LABEL_PREFIX))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

impl AzureResource for AgentPool {
    type Model = AgentPoolModel;
    const SERVICE: &'static str = "agentpools";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        // Pools take no ownership tags in CAPZ: one is ours when its cluster is.
        Ownership::OwnedParent
    }

    fn desired(&self, existing: Option<&AgentPoolModel>) -> Option<AgentPoolModel> {
        let Some(found) = existing.and_then(|existing| existing.properties.as_ref()) else {
            return Some(Self::body(self.properties.clone()));
        };
        let mut wanted = self.properties.clone();
        wanted.orchestrator_version = match (wanted.orchestrator_version, &found.orchestrator_version) {
            (Some(wanted), Some(running)) => Some(higher_version(&wanted, running).to_owned()),
            (None, running) => running.clone(),
            (wanted, None) => wanted,
        };
        if self.autoscaling {
            // The autoscaler's count stands.
            wanted.count = found.count;
        }
        // Labels, taints and tags are compared whole, so that removing one is a change.
        let labels = wanted.node_labels.take().unwrap_or_default();
        let taints = wanted.node_taints.take().unwrap_or_default();
        let tags = wanted.tags.take().unwrap_or_default();
        let same = covers(&as_value(found), &as_value(&wanted))
            && users_labels(found.node_labels.as_ref()) == labels
            && found.node_taints.clone().unwrap_or_default() == taints
            && found.tags.clone().unwrap_or_default() == tags;
        if same {
            return None;
        }
        let mut labels_sent = labels;
        labels_sent.extend(
            found
                .node_labels
                .iter()
                .flatten()
                .filter(|(key, _)| key.starts_with(AKS_LABEL_PREFIX))
                .map(|(key, value)| (key.clone(), value.clone())),
        );
        wanted.node_labels = Some(labels_sent);
        wanted.node_taints = Some(taints);
        wanted.tags = Some(Tags::from_iter(tags));
        Some(Self::body(wanted))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster() -> ResourceId {
        "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/aks/providers/Microsoft.ContainerService/managedClusters/aks1"
            .parse()
            .unwrap()
    }

    fn spec(extra: Value) -> AzureManagedMachinePoolClassSpec {
        let mut spec = json!({"mode": "System", "sku": "Standard_D2s_v3"});
        if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
            spec.extend(extra);
        }
        serde_json::from_value(spec).unwrap()
    }

    fn context() -> PoolContext {
        PoolContext {
            replicas: Some(2),
            version: Some("v1.33.5".to_owned()),
            subnet: None,
        }
    }

    /// A new pool carries CAPZ's fixed fields and the spec's settings under AKS's names.
    #[test]
    fn a_new_pool_is_written_as_capz_writes_it() {
        let spec = spec(json!({
            "name": "pool0",
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            "nodeLabels": {"team": "a"},
            "scaling": {"minSize": 1, "maxSize": 5},
            "spotMaxPrice": "0.5",
            "scaleSetPriority": "Spot",
            "kubeletDiskType": "Temporary",
            "linuxOSConfig": {"swapFileSizeMB": 1500, "sysctls": {"netIpv4TCPFinTimeout": 30, "netIpv4IPLocalPortRange": "32000 60000"}},
            "kubeletConfig": {"cpuManagerPolicy": "static", "containerLogMaxSizeMB": 50},
            "additionalTags": {"env": "dev"},
        }));
        let pool = AgentPool::new(&cluster(), "ignored", &spec, context()).unwrap();
        assert_eq!(pool.name(), "pool0");
        assert_eq!(pool.id().to_string(), format!("{}/agentPools/pool0", cluster()));
        let body = as_value(&pool.desired(None).unwrap());
        let properties = &body["properties"];
        assert_eq!(properties["type"], "VirtualMachineScaleSets");
        assert_eq!(properties["mode"], "System");
        assert_eq!(properties["osType"], "Linux");
        assert_eq!(properties["osDiskSizeGB"], 0, "always sent");
        assert_eq!(properties["count"], 2);
        assert_eq!(properties["orchestratorVersion"], "1.33.5");
        assert_eq!(properties["enableAutoScaling"], true);
        assert_eq!(
            (properties["minCount"].clone(), properties["maxCount"].clone()),
            (json!(1), json!(5))
        );
        assert_eq!(properties["nodeTaints"], json!(["dedicated=gpu:NoSchedule"]));
        assert_eq!(properties["spotMaxPrice"], 0.5);
        assert_eq!(properties["scaleSetPriority"], "Spot");
        assert_eq!(properties["kubeletDiskType"], "Temporary");
        assert_eq!(
            properties["linuxOSConfig"],
            json!({"swapFileSizeMB": 1500, "sysctls": {"netIpv4TcpFinTimeout": 30, "netIpv4IpLocalPortRange": "32000 60000"}})
        );
        assert_eq!(
            properties["kubeletConfig"],
            json!({"cpuManagerPolicy": "static", "containerLogMaxSizeMB": 50})
        );
        assert_eq!(properties["tags"], json!({"env": "dev"}));
        let inline = as_value(&pool.profile());
        assert_eq!(inline["name"], "pool0");
        assert_eq!(inline["vmSize"], "Standard_D2s_v3");
    }

    fn answered(pool: &AgentPool, change: impl FnOnce(&mut Value)) -> AgentPoolModel {
        let mut answer = as_value(&pool.desired(None).unwrap());
        answer["id"] = json!(pool.id().to_string());
        answer["properties"]["provisioningState"] = json!("Succeeded");
        answer["properties"]["currentOrchestratorVersion"] = json!("1.33.5");
        answer["properties"]["nodeLabels"] = json!({"kubernetes.azure.com/mode": "system"});
        change(&mut answer);
        serde_json::from_value(answer).unwrap()
    }

    /// What AKS adds needs no write; the autoscaler's count and AKS's upgrades stand; removing a
    /// label or a taint is a change, sent with AKS's own labels kept.
    #[test]
    fn an_existing_pool_is_written_only_for_a_change() {
        let autoscaled = spec(
            json!({"scaling": {"minSize": 1, "maxSize": 5}, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}),
        );
        let pool = AgentPool::new(&cluster(), "pool0", &autoscaled, context()).unwrap();
        let existing = answered(&pool, |answer| {
            answer["properties"]["count"] = json!(4);
            answer["properties"]["orchestratorVersion"] = json!("1.34.0");
        });
        assert_eq!(pool.desired(Some(&existing)), None);

        let untainted = spec(json!({"scaling": {"minSize": 1, "maxSize": 5}, "nodeLabels": {"team": "b"}}));
        let changed = AgentPool::new(&cluster(), "pool0", &untainted, context()).unwrap();
        let update = as_value(&changed.desired(Some(&existing)).unwrap());
        let properties = &update["properties"];
        assert_eq!(properties["nodeTaints"], json!([]));
        assert_eq!(
            properties["nodeLabels"],
            json!({"team": "b", "kubernetes.azure.com/mode": "system"})
        );
        assert_eq!(properties["count"], 4, "the autoscaler's count is kept");
        assert_eq!(properties["orchestratorVersion"], "1.34.0", "never lowered");
        assert_eq!(properties["tags"], json!({}), "removed tags are cleared");
    }

    /// Bad input names its field.
    #[test]
    fn bad_input_names_the_field() {
        let error =
            AgentPool::new(&cluster(), "p", &spec(json!({"spotMaxPrice": "lots"})), context()).unwrap_err();
        assert!(error.to_string().contains("spec.spotMaxPrice"), "{error}");
        let error = AgentPool::new(
            &cluster(),
            "p",
            &spec(json!({"nodePublicIPPrefixID": "prefix"})),
            context(),
        )
        .unwrap_err();
        assert!(error.to_string().contains("spec.nodePublicIPPrefixID"), "{error}");
    }
}
