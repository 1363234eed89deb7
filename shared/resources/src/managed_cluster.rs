//! An AKS managed cluster (`Microsoft.ContainerService/managedClusters`) built from an
//! AzureManagedControlPlane, as CAPZ builds it: the pools go inline only while the cluster does
//! not exist (afterwards each is its own `agentPools` resource), the Kubernetes version is never
//! lowered below what AKS runs (an auto-upgrade is not undone), and only the settings the spec
//! makes are compared, so what AKS fills in never causes a write.

use std::collections::BTreeMap;

use base64::Engine as _;
use capz_api::azuremanagedcontrolplane::{
    AzureManagedControlPlaneSkuTier, AzureManagedControlPlaneSpec, ManagedControlPlaneIdentityType,
};
use capz_azure::models::compute::{
    AssignedIdentity, IdentityType, ManagedServiceIdentity, SshConfiguration, SshPublicKey,
};
use capz_azure::models::container_service::{
    AadProfile, AddonProfile, AgentPoolProfile, ApiServerAccessProfile, AutoUpgradeProfile, Enabled,
    HttpProxyConfig, ImageCleaner, LinuxProfile, LoadBalancerProfile, ManagedCluster as ManagedClusterModel,
    ManagedClusterProperties, ManagedClusterSecurityProfile, ManagedClusterSku, ManagedOutboundIps,
    NetworkProfile, OidcIssuerProfile, OutboundIpPrefixes, OutboundIps, ServicePrincipalProfile, SkuTier,
    UserAssignedIdentityReference,
};
use capz_azure::models::{SubResource, id_of};
use capz_azure::{Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::tags::{self, Role, Tags};
use serde_json::{Map, Value};

use crate::{as_value, covers, higher_version};

/// The admin user AKS nodes get, as CAPZ names it.
const ADMIN_USER: &str = "azureuser";

/// The pod and service ranges of the Cluster (`spec.clusterNetwork`); AKS takes one of each.
#[derive(Debug, Clone, Default)]
pub struct ClusterNetwork {
    /// `spec.clusterNetwork.pods.cidrBlocks`.
    pub pods: Vec<String>,
    /// `spec.clusterNetwork.services.cidrBlocks`.
    pub services: Vec<String>,
}

/// Why a control plane's spec gives no managed cluster.
pub type ManagedClusterError = crate::InvalidSpec;

/// The managed cluster of one AzureManagedControlPlane.
#[derive(Debug, Clone)]
pub struct ManagedCluster {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    identity: ManagedServiceIdentity,
    sku: ManagedClusterSku,
    properties: ManagedClusterProperties,
    pools: Vec<AgentPoolProfile>,
}

impl ManagedCluster {
    /// The managed cluster `name` (the control plane's name) in `group`, of the Cluster `cluster`
    /// whose networks are `network`, as the defaulted `spec` describes it; `pools` are the pools
    /// written with it when it is created (every pool of the cluster, each as its own unit would
    /// write it), sorted here by name.
    ///
    /// # Errors
    /// A name Azure would refuse, a user-assigned identity without its id, an SSH key that is
    /// not base64.
    pub fn new(
        group: &ResourceId,
        name: &str,
        cluster: &str,
        spec: &AzureManagedControlPlaneSpec,
        network: &ClusterNetwork,
        mut pools: Vec<AgentPoolProfile>,
    ) -> Result<Self, ManagedClusterError> {
        let class = &spec.class;
        let id = id_of::<ManagedClusterModel>(group, name).map_err(|source| ManagedClusterError::Name {
            field: "metadata.name",
            value: name.to_owned(),
            source,
        })?;
        let location = class
            .location
            .parse::<Location>()
            .map_err(|source| ManagedClusterError::Name {
                field: "spec.location",
                value: class.location.clone(),
                source,
            })?;
        pools.sort_by(|left, right| left.name.cmp(&right.name));
        let mut tags = tags::owned(cluster, Role::Common, class.additional_tags.as_ref());
        tags.insert("Name".to_owned(), name.to_owned());
        Ok(Self {
            id,
            cluster: cluster.to_owned(),
            location,
            tags,
            identity: identity(spec)?,
            sku: ManagedClusterSku {
                name: Some("Base".to_owned()),
                tier: Some(match class.sku.as_ref().map(|sku| &sku.tier) {
                    // `Paid` is the old name of `Standard`.
                    Some(
                        AzureManagedControlPlaneSkuTier::Paid | AzureManagedControlPlaneSkuTier::Standard,
                    ) => SkuTier::Standard,
                    Some(AzureManagedControlPlaneSkuTier::Free) | None => SkuTier::Free,
                }),
            },
            properties: properties(name, spec, network)?,
            pools,
        })
    }
}

fn identity(spec: &AzureManagedControlPlaneSpec) -> Result<ManagedServiceIdentity, ManagedClusterError> {
    let chosen = spec.class.identity.as_ref();
    match chosen.and_then(|identity| identity.type_.as_ref()) {
        Some(ManagedControlPlaneIdentityType::UserAssigned) => {
            let given = chosen
                .and_then(|identity| identity.user_assigned_identity_resource_id.clone())
                .unwrap_or_default();
            let id = resource_id("spec.identity.userAssignedIdentityResourceID", &given)?;
            Ok(ManagedServiceIdentity {
                identity_type: Some(IdentityType::UserAssigned),
                user_assigned_identities: Some([(id, AssignedIdentity::default())].into_iter().collect()),
                ..ManagedServiceIdentity::default()
            })
        }
        Some(ManagedControlPlaneIdentityType::SystemAssigned) | None => Ok(ManagedServiceIdentity {
            identity_type: Some(IdentityType::SystemAssigned),
            ..ManagedServiceIdentity::default()
        }),
    }
}

/// A value of the spec as AKS spells it (the spec's enums serialise to AKS's strings).
fn spelled<T: serde::Serialize>(value: &T) -> Option<String> {
    as_value(value).as_str().map(str::to_owned)
}

fn properties(
    name: &str,
    spec: &AzureManagedControlPlaneSpec,
    network: &ClusterNetwork,
) -> Result<ManagedClusterProperties, ManagedClusterError> {
    let class = &spec.class;
    let aad = class.aad_profile.as_ref();
    Ok(ManagedClusterProperties {
        kubernetes_version: Some(class.version.trim_start_matches('v').to_owned()),
        dns_prefix: Some(spec.dns_prefix.clone().unwrap_or_else(|| name.to_owned())),
        node_resource_group: spec.node_resource_group_name.clone(),
        enable_rbac: Some(true),
        service_principal_profile: Some(ServicePrincipalProfile {
            client_id: Some("msi".to_owned()),
            secret: None,
        }),
        network_profile: Some(network_profile(spec, network)?),
        linux_profile: linux_profile(spec.ssh_public_key.as_deref())?,
        aad_profile: aad.map(|aad| AadProfile {
            managed: Some(aad.managed),
            enable_azure_rbac: Some(aad.managed),
            admin_group_object_ids: Some(aad.admin_group_object_ids.clone()),
            tenant_id: None,
        }),
        // Only with Entra sign-in: without it no one could reach the cluster.
        disable_local_accounts: aad.and(class.disable_local_accounts),
        addon_profiles: class
            .addon_profiles
            .as_ref()
            .filter(|addons| !addons.is_empty())
            .map(|addons| {
                addons
                    .iter()
                    .map(|addon| {
                        let profile = AddonProfile {
                            enabled: addon.enabled,
                            config: addon.config.clone(),
                            identity: None,
                        };
                        (addon.name.clone(), profile)
                    })
                    .collect()
            }),
        auto_scaler_profile: class.autoscaler_profile.as_ref().map(|profile| {
            let Value::Object(fields) = as_value(profile) else {
                return BTreeMap::default();
            };
            fields
                .into_iter()
                .filter_map(|(field, value)| Some((kebab(&field), value.as_str()?.to_owned())))
                .collect()
        }),
        api_server_access_profile: class.api_server_access_profile.as_ref().map(|access| {
            ApiServerAccessProfile {
                authorized_ip_ranges: access.authorized_ip_ranges.clone(),
                enable_private_cluster: access.enable_private_cluster,
                private_dns_zone: access.private_dns_zone.clone(),
                enable_private_cluster_public_fqdn: access.enable_private_cluster_public_fqdn,
            }
        }),
        http_proxy_config: class.http_proxy_config.as_ref().map(|proxy| HttpProxyConfig {
            http_proxy: proxy.http_proxy.clone(),
            https_proxy: proxy.https_proxy.clone(),
            no_proxy: proxy.no_proxy.clone(),
            trusted_ca: proxy.trusted_ca.clone(),
        }),
        oidc_issuer_profile: class.oidc_issuer_profile.as_ref().map(|oidc| OidcIssuerProfile {
            enabled: oidc.enabled,
            issuer_url: None,
        }),
        auto_upgrade_profile: class
            .auto_upgrade_profile
            .as_ref()
            .and_then(|profile| profile.upgrade_channel.as_ref())
            .map(|channel| AutoUpgradeProfile {
                upgrade_channel: spelled(channel),
                node_os_upgrade_channel: None,
            }),
        security_profile: class
            .security_profile
            .as_ref()
            .map(|security| ManagedClusterSecurityProfile {
                workload_identity: security.workload_identity.as_ref().map(|workload| Enabled {
                    enabled: Some(workload.enabled),
                }),
                image_cleaner: security.image_cleaner.as_ref().map(|cleaner| ImageCleaner {
                    enabled: Some(cleaner.enabled),
                    interval_hours: cleaner.interval_hours.and_then(|hours| i32::try_from(hours).ok()),
                }),
                defender: security.defender.as_ref().and_then(object),
                azure_key_vault_kms: security.azure_key_vault_kms.as_ref().and_then(object),
            }),
        identity_profile: match &class.kubelet_user_assigned_identity {
            Some(kubelet) => {
                let identity = UserAssignedIdentityReference {
                    resource_id: Some(resource_id("spec.kubeletUserAssignedIdentity", kubelet)?),
                    ..UserAssignedIdentityReference::default()
                };
                Some([("kubeletidentity".to_owned(), identity)].into_iter().collect())
            }
            None => None,
        },
        ..ManagedClusterProperties::default()
    })
}

/// The id `value` of `field`.
fn resource_id(field: &'static str, value: &str) -> Result<ResourceId, ManagedClusterError> {
    value.parse().map_err(|_| ManagedClusterError::Invalid {
        field,
        value: value.to_owned(),
        why: "it must be an Azure resource id (/subscriptions/<id>/resourceGroups/<group>/providers/...)",
    })
}

/// A spec sub-object whose fields AKS names alike, as AKS takes it.
fn object<T: serde::Serialize>(value: &T) -> Option<Map<String, Value>> {
    match as_value(value) {
        Value::Object(fields) => Some(fields),
        _ => None,
    }
}

/// `scanInterval` as the autoscaler names it: `scan-interval`.
fn kebab(field: &str) -> String {
    let mut name = String::with_capacity(field.len() + 4);
    for c in field.chars() {
        if c.is_ascii_uppercase() {
            name.push('-');
            name.push(c.to_ascii_lowercase());
        } else {
            name.push(c);
        }
    }
    name
}

fn network_profile(
    spec: &AzureManagedControlPlaneSpec,
    network: &ClusterNetwork,
) -> Result<NetworkProfile, ManagedClusterError> {
    let class = &spec.class;
    // AKS takes one range of each; with several, it chooses its own.
    let single = |blocks: &[String]| match blocks {
        [one] => Some(one.clone()),
        _ => None,
    };
    let service_cidr = single(&network.services);
    // The DNS service's address goes with the service range: given, or the range's tenth.
    let dns_service_ip = service_cidr.as_ref().map(|cidr| {
        class.dns_service_ip.clone().unwrap_or_else(|| {
            let base = cidr.split('/').next().unwrap_or_default();
            let mut octets: Vec<&str> = base.split('.').collect();
            if let Some(last) = octets.last_mut() {
                *last = "10";
            }
            octets.join(".")
        })
    });
    Ok(NetworkProfile {
        network_plugin: class.network_plugin.as_ref().and_then(spelled),
        network_plugin_mode: class.network_plugin_mode.as_ref().and_then(spelled),
        network_policy: class.network_policy.as_ref().and_then(spelled),
        network_dataplane: class.network_dataplane.as_ref().and_then(spelled),
        load_balancer_sku: class
            .load_balancer_sku
            .as_ref()
            .and_then(spelled)
            .map(|sku| sku.to_ascii_lowercase()),
        load_balancer_profile: match &class.load_balancer_profile {
            Some(profile) => {
                let references =
                    |field: &'static str, ids: &Option<Vec<String>>| -> Result<_, ManagedClusterError> {
                        let ids = ids.as_deref().unwrap_or_default();
                        let references = ids
                            .iter()
                            .map(|id| resource_id(field, id).map(SubResource::from))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok((!references.is_empty()).then_some(references))
                    };
                Some(LoadBalancerProfile {
                    managed_outbound_ips: profile.managed_outbound_ips.map(|count| ManagedOutboundIps {
                        count: i32::try_from(count).ok(),
                    }),
                    outbound_ips: references("spec.loadBalancerProfile.outboundIPs", &profile.outbound_ips)?
                        .map(|ips| OutboundIps {
                            public_ips: Some(ips),
                        }),
                    outbound_ip_prefixes: references(
                        "spec.loadBalancerProfile.outboundIPPrefixes",
                        &profile.outbound_ip_prefixes,
                    )?
                    .map(|prefixes| OutboundIpPrefixes {
                        public_ip_prefixes: Some(prefixes),
                    }),
                    allocated_outbound_ports: profile
                        .allocated_outbound_ports
                        .and_then(|ports| i32::try_from(ports).ok()),
                    idle_timeout_in_minutes: profile
                        .idle_timeout_in_minutes
                        .and_then(|minutes| i32::try_from(minutes).ok()),
                    effective_outbound_ips: None,
                })
            }
            None => None,
        },
        outbound_type: class.outbound_type.as_ref().and_then(spelled),
        pod_cidr: single(&network.pods),
        service_cidr,
        dns_service_ip,
    })
}

/// The nodes' admin with the spec's key (base64 of the OpenSSH public key), when it has one.
fn linux_profile(key: Option<&str>) -> Result<Option<LinuxProfile>, ManagedClusterError> {
    let Some(key) = key.filter(|key| !key.is_empty()) else {
        return Ok(None);
    };
    let invalid = || ManagedClusterError::Invalid {
        field: "spec.sshPublicKey",
        value: key.to_owned(),
        why: "it must be an OpenSSH public key, base64-encoded",
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(key.trim())
        .map_err(|_| invalid())?;
    let key_data = String::from_utf8(decoded).map_err(|_| invalid())?;
    Ok(Some(LinuxProfile {
        admin_username: Some(ADMIN_USER.to_owned()),
        ssh: Some(SshConfiguration {
            public_keys: Some(vec![SshPublicKey {
                path: None,
                key_data: Some(key_data.trim().to_owned()),
            }]),
        }),
    }))
}

impl AzureResource for ManagedCluster {
    type Model = ManagedClusterModel;
    const SERVICE: &'static str = "managedclusters";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&ManagedClusterModel>) -> Option<ManagedClusterModel> {
        let mut properties = self.properties.clone();
        let Some(existing) = existing else {
            properties.agent_pool_profiles = Some(self.pools.clone());
            return Some(ManagedClusterModel {
                location: Some(self.location.clone()),
                tags: Some(self.tags.clone()),
                identity: Some(self.identity.clone()),
                sku: Some(self.sku.clone()),
                properties: Some(properties),
                ..ManagedClusterModel::default()
            });
        };
        let running = existing
            .properties
            .as_ref()
            .and_then(|found| found.current_kubernetes_version.as_deref());
        if let (Some(wanted), Some(running)) = (properties.kubernetes_version.as_deref(), running) {
            properties.kubernetes_version = Some(higher_version(wanted, running).to_owned());
        }
        let found = as_value(existing);
        let same = covers(&found["properties"], &as_value(&properties))
            && covers(&found["sku"], &as_value(&self.sku))
            && covers(&found["identity"], &as_value(&self.identity))
            && tags::carries(existing.tags.as_ref(), &self.tags);
        (!same).then(|| ManagedClusterModel {
            location: Some(self.location.clone()),
            tags: Some(tags::keeping_others(existing.tags.as_ref(), &self.tags)),
            identity: Some(self.identity.clone()),
            sku: Some(self.sku.clone()),
            // Pools are their own resources once the cluster exists.
            properties: Some(properties),
            ..ManagedClusterModel::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn group() -> ResourceId {
        "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/aks"
            .parse()
            .unwrap()
    }

    fn spec(extra: Value) -> AzureManagedControlPlaneSpec {
        let mut spec = json!({
            "version": "v1.33.5",
            "location": "westeurope",
            "resourceGroupName": "aks",
            "identityRef": {"kind": "AzureClusterIdentity", "name": "id"},
            "sku": {"tier": "Free"},
            "loadBalancerSKU": "Standard",
            "networkPlugin": "azure",
        });
        if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
            spec.extend(extra);
        }
        serde_json::from_value(spec).unwrap()
    }

    fn network() -> ClusterNetwork {
        ClusterNetwork {
            pods: vec!["192.168.0.0/16".into()],
            services: vec!["10.96.0.0/12".into()],
        }
    }

    fn system_pool() -> AgentPoolProfile {
        serde_json::from_value(
            json!({"name": "pool0", "mode": "System", "count": 1, "vmSize": "Standard_D2s_v3"}),
        )
        .unwrap()
    }

    /// A new cluster carries its pools, the spec's settings under AKS's names, CAPZ's tags and
    /// defaults (`msi`, RBAC, the DNS service at the tenth address of the service range).
    #[test]
    fn a_new_cluster_is_written_with_its_pools() {
        let key = base64::engine::general_purpose::STANDARD.encode("ssh-ed25519 AAAA user@host\n");
        let spec = spec(json!({
            "sshPublicKey": key,
            "aadProfile": {"managed": true, "adminGroupObjectIDs": ["g1"]},
            "disableLocalAccounts": true,
            "autoscalerProfile": {"scanInterval": "20s", "balanceSimilarNodeGroups": "true", "expander": "least-waste"},
            "addonProfiles": [{"name": "azurepolicy", "enabled": true}],
        }));
        let cluster =
            ManagedCluster::new(&group(), "aks1", "c1", &spec, &network(), vec![system_pool()]).unwrap();
        let body = as_value(&cluster.desired(None).unwrap());
        assert_eq!(body["sku"], json!({"name": "Base", "tier": "Free"}));
        assert_eq!(body["identity"], json!({"type": "SystemAssigned"}));
        assert_eq!(
            body["tags"]["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
            "owned"
        );
        assert_eq!(body["tags"]["Name"], "aks1");
        let properties = &body["properties"];
        assert_eq!(properties["kubernetesVersion"], "1.33.5");
        assert_eq!(properties["dnsPrefix"], "aks1");
        assert_eq!(properties["enableRBAC"], true);
        assert_eq!(properties["servicePrincipalProfile"], json!({"clientId": "msi"}));
        assert_eq!(
            properties["networkProfile"],
            json!({"networkPlugin": "azure", "loadBalancerSku": "standard", "podCidr": "192.168.0.0/16",
                   "serviceCidr": "10.96.0.0/12", "dnsServiceIP": "10.96.0.10"})
        );
        assert_eq!(
            properties["linuxProfile"],
            json!({"adminUsername": "azureuser", "ssh": {"publicKeys": [{"keyData": "ssh-ed25519 AAAA user@host"}]}})
        );
        assert_eq!(
            properties["aadProfile"],
            json!({"managed": true, "enableAzureRBAC": true, "adminGroupObjectIDs": ["g1"]})
        );
        assert_eq!(properties["disableLocalAccounts"], true);
        assert_eq!(
            properties["autoScalerProfile"],
            json!({"scan-interval": "20s", "balance-similar-node-groups": "true", "expander": "least-waste"})
        );
        assert_eq!(
            properties["addonProfiles"],
            json!({"azurepolicy": {"enabled": true}})
        );
        assert_eq!(properties["agentPoolProfiles"][0]["name"], "pool0");
    }

    /// Once the cluster exists, an answer that matches the spec (with what AKS adds) needs no
    /// write; a change is written without the pools, keeping tags others added; and a version
    /// AKS upgraded past the spec's is not lowered.
    #[test]
    fn an_existing_cluster_is_written_only_when_the_spec_changes_and_never_downgraded() {
        let cluster = ManagedCluster::new(
            &group(),
            "aks1",
            "c1",
            &spec(json!({})),
            &network(),
            vec![system_pool()],
        )
        .unwrap();
        let mut answer = as_value(&cluster.desired(None).unwrap());
        answer["id"] = json!(format!(
            "{}/providers/Microsoft.ContainerService/managedClusters/aks1",
            group()
        ));
        answer["tags"]["team"] = json!("platform");
        answer["identity"]["principalId"] = json!("p");
        answer["properties"]["currentKubernetesVersion"] = json!("1.33.5");
        answer["properties"]["provisioningState"] = json!("Succeeded");
        answer["properties"]["networkProfile"]["outboundType"] = json!("loadBalancer");
        let existing: ManagedClusterModel = serde_json::from_value(answer.clone()).unwrap();
        assert_eq!(
            cluster.desired(Some(&existing)),
            None,
            "AKS's own additions need no write"
        );

        let newer = ManagedCluster::new(
            &group(),
            "aks1",
            "c1",
            &spec(json!({"oidcIssuerProfile": {"enabled": true}})),
            &network(),
            vec![],
        )
        .unwrap();
        let update = as_value(&newer.desired(Some(&existing)).unwrap());
        assert_eq!(
            update["properties"]["oidcIssuerProfile"],
            json!({"enabled": true})
        );
        assert_eq!(update["properties"].get("agentPoolProfiles"), None);
        assert_eq!(update["tags"]["team"], "platform");

        answer["properties"]["currentKubernetesVersion"] = json!("1.34.1");
        answer["properties"]["kubernetesVersion"] = json!("1.34.1");
        let upgraded: ManagedClusterModel = serde_json::from_value(answer).unwrap();
        assert_eq!(
            cluster.desired(Some(&upgraded)),
            None,
            "an auto-upgrade past the spec's version is left alone"
        );
    }

    /// Bad input names its field.
    #[test]
    fn bad_input_names_the_field() {
        let user_assigned = spec(json!({"identity": {"type": "UserAssigned"}}));
        let error =
            ManagedCluster::new(&group(), "aks1", "c1", &user_assigned, &network(), vec![]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("spec.identity.userAssignedIdentityResourceID"),
            "{error}"
        );
        let bad_key = spec(json!({"sshPublicKey": "not base64!"}));
        let error = ManagedCluster::new(&group(), "aks1", "c1", &bad_key, &network(), vec![]).unwrap_err();
        assert!(error.to_string().contains("spec.sshPublicKey"), "{error}");
    }
}
