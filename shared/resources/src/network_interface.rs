//! Network interfaces (`Microsoft.Network/networkInterfaces`) of machines: one per entry of an
//! AzureMachine's `spec.networkInterfaces`, in its subnet, with dynamic private addresses, and for
//! the primary interface the load balancer backend pools and inbound NAT rules the machine joins.

use capz_api::common::network::{LoadBalancerSpec, SubnetRole};
use capz_azure::models::network::LoadBalancer as LoadBalancerModel;
use capz_azure::models::network::{
    IpAllocationMethod, IpConfiguration, IpConfigurationProperties, NetworkInterface as Model,
    NetworkInterfaceDnsSettings, NetworkInterfaceProperties,
};
use capz_azure::models::{ChildResource, SubResource};
use capz_azure::{IdError, Location, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::Tags;

use crate::virtual_machine::{MachineSpecError, invalid};

/// The name of a machine's `index`th interface out of `count`: `<vm>-nic` when it has one,
/// `<vm>-nic-<index>` when it has several.
#[must_use]
pub fn name(machine: &str, index: usize, count: usize) -> String {
    if count > 1 {
        format!("{machine}-nic-{index}")
    } else {
        format!("{machine}-nic")
    }
}

/// What an interface is attached to and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attachments {
    /// Load balancer backend pools its primary address joins.
    pub backend_pools: Vec<ResourceId>,
    /// Inbound NAT rules forwarding to its primary address.
    pub nat_rules: Vec<ResourceId>,
}

/// A machine's network interface, as the AzureMachine spec asks for it.
#[derive(Debug, Clone)]
pub struct NetworkInterface {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    subnet: ResourceId,
    private_ip_configs: usize,
    accelerated_networking: Option<bool>,
    ip_forwarding: Option<bool>,
    dns_servers: Option<Vec<String>>,
    attachments: Attachments,
}

impl NetworkInterface {
    /// The interface `name` in the cluster's resource group, in `subnet`, tagged `tags`.
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn new(scope: &ClusterScope, name: &str, subnet: ResourceId, tags: Tags) -> Result<Self, IdError> {
        Ok(Self {
            id: scope.id_of::<Model>(name)?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags,
            subnet,
            private_ip_configs: 1,
            accelerated_networking: None,
            ip_forwarding: None,
            dns_servers: None,
            attachments: Attachments::default(),
        })
    }

    /// With `count` private addresses (at least one).
    #[must_use]
    pub fn private_ip_configs(mut self, count: usize) -> Self {
        self.private_ip_configs = count.max(1);
        self
    }

    /// With accelerated networking on or off; Azure's default (off) when `None`.
    #[must_use]
    pub fn accelerated_networking(mut self, enabled: Option<bool>) -> Self {
        self.accelerated_networking = enabled;
        self
    }

    /// Forwarding traffic not addressed to it, when `Some(true)`.
    #[must_use]
    pub fn ip_forwarding(mut self, enabled: Option<bool>) -> Self {
        self.ip_forwarding = enabled;
        self
    }

    /// With its own DNS servers instead of the virtual network's.
    #[must_use]
    pub fn dns_servers(mut self, servers: Option<Vec<String>>) -> Self {
        self.dns_servers = servers.filter(|servers| !servers.is_empty());
        self
    }

    /// Joined to load balancer pools and NAT rules (the primary interface).
    #[must_use]
    pub fn attached(mut self, attachments: Attachments) -> Self {
        self.attachments = attachments;
        self
    }

    fn ip_configurations(&self) -> Vec<IpConfiguration> {
        (0..self.private_ip_configs)
            .map(|index| {
                let primary = index == 0;
                let references = |ids: &[ResourceId]| {
                    (primary && !ids.is_empty()).then(|| ids.iter().cloned().map(SubResource::from).collect())
                };
                ChildResource {
                    // The first configuration's name is the one CAPZ gives it.
                    name: Some(if primary {
                        "pipConfig".to_owned()
                    } else {
                        format!("{}-{index}", self.id.name())
                    }),
                    properties: Some(IpConfigurationProperties {
                        subnet: Some(self.subnet.clone().into()),
                        primary: Some(primary),
                        private_ip_allocation_method: Some(IpAllocationMethod::Dynamic),
                        load_balancer_backend_address_pools: references(&self.attachments.backend_pools),
                        load_balancer_inbound_nat_rules: references(&self.attachments.nat_rules),
                        ..IpConfigurationProperties::default()
                    }),
                    ..ChildResource::default()
                }
            })
            .collect()
    }

    /// Whether `existing` already has what this unit sets.
    fn matches(&self, existing: &Model) -> bool {
        let Some(properties) = existing.properties.as_ref() else {
            return false;
        };
        let configurations = properties.ip_configurations.as_deref().unwrap_or_default();
        let primary = configurations
            .iter()
            .find(|configuration| {
                configuration
                    .properties
                    .as_ref()
                    .is_some_and(|p| p.primary == Some(true))
            })
            .or_else(|| configurations.first())
            .and_then(|configuration| configuration.properties.as_ref());
        let ids = |references: Option<&Vec<SubResource>>| -> Vec<ResourceId> {
            let mut ids: Vec<ResourceId> = references
                .into_iter()
                .flatten()
                .map(|reference| reference.id.clone())
                .collect();
            ids.sort_by_key(|id| id.to_string().to_ascii_lowercase());
            ids
        };
        let sorted = |ids: &[ResourceId]| {
            let mut ids = ids.to_vec();
            ids.sort_by_key(|id| id.to_string().to_ascii_lowercase());
            ids
        };
        let attached = primary.is_some_and(|primary| {
            primary.subnet.as_ref().map(|subnet| &subnet.id) == Some(&self.subnet)
                && ids(primary.load_balancer_backend_address_pools.as_ref())
                    == sorted(&self.attachments.backend_pools)
                && ids(primary.load_balancer_inbound_nat_rules.as_ref())
                    == sorted(&self.attachments.nat_rules)
        });
        let flag_matches = |wanted: Option<bool>, actual: Option<bool>| {
            wanted.is_none_or(|wanted| actual.unwrap_or(false) == wanted)
        };
        let dns_matches = self.dns_servers.as_ref().is_none_or(|wanted| {
            properties
                .dns_settings
                .as_ref()
                .and_then(|dns| dns.dns_servers.as_ref())
                == Some(wanted)
        });
        existing.tags.as_ref() == Some(&self.tags)
            && attached
            && configurations.len() == self.private_ip_configs
            && flag_matches(
                self.accelerated_networking,
                properties.enable_accelerated_networking,
            )
            && flag_matches(self.ip_forwarding, properties.enable_ip_forwarding)
            && dns_matches
    }
}

impl AzureResource for NetworkInterface {
    type Model = Model;
    const SERVICE: &'static str = "networkinterfaces";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        if existing.is_some_and(|existing| self.matches(existing)) {
            return None;
        }
        Some(Model {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            properties: Some(NetworkInterfaceProperties {
                ip_configurations: Some(self.ip_configurations()),
                enable_accelerated_networking: self.accelerated_networking,
                enable_ip_forwarding: self.ip_forwarding,
                dns_settings: self
                    .dns_servers
                    .as_ref()
                    .map(|servers| NetworkInterfaceDnsSettings {
                        dns_servers: Some(servers.clone()),
                        ..NetworkInterfaceDnsSettings::default()
                    }),
                ..NetworkInterfaceProperties::default()
            }),
            ..Model::default()
        })
    }
}

/// The private addresses of an interface, primary first.
#[must_use]
pub fn private_addresses(model: &Model) -> Vec<String> {
    let mut configurations: Vec<&IpConfigurationProperties> = model
        .properties
        .as_ref()
        .and_then(|properties| properties.ip_configurations.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|configuration| configuration.properties.as_ref())
        .collect();
    configurations.sort_by_key(|properties| properties.primary != Some(true));
    configurations
        .into_iter()
        .filter_map(|properties| properties.private_ip_address.clone())
        .collect()
}

/// The subnet of a machine's interface: the one it names, else the cluster's only subnet of the
/// machine's role (a `cluster` subnet serves both roles).
///
/// # Errors
/// When the cluster has none or several subnets of the role and the machine names none.
pub fn subnet_for_role(
    scope: &ClusterScope,
    named: Option<&str>,
    control_plane: bool,
) -> Result<String, MachineSpecError> {
    if let Some(name) = named.filter(|name| !name.is_empty()) {
        return Ok(name.to_owned());
    }
    let wanted = if control_plane {
        SubnetRole::ControlPlane
    } else {
        SubnetRole::Node
    };
    let candidates: Vec<&str> = scope
        .subnets()
        .iter()
        .filter(|subnet| subnet.class.role == wanted || subnet.class.role == SubnetRole::Cluster)
        .map(|subnet| subnet.class.name.as_str())
        .collect();
    match candidates.as_slice() {
        [only] => Ok((*only).to_owned()),
        [] => Err(invalid(
            "spec.networkInterfaces[].subnetName",
            "the AzureCluster has no subnet for this machine's role; name one",
        )),
        _ => Err(invalid(
            "spec.networkInterfaces[].subnetName",
            "the AzureCluster has several subnets for this machine's role; name one",
        )),
    }
}

/// The load balancer `lb` of the cluster and its backend pool, once both are named.
///
/// # Errors
/// When the names make no valid resource id.
pub fn backend_pool(
    scope: &ClusterScope,
    lb: Option<&LoadBalancerSpec>,
) -> Result<Option<(ResourceId, ResourceId)>, MachineSpecError> {
    let Some(lb) = lb else { return Ok(None) };
    let (Some(lb_name), Some(pool_name)) = (
        lb.name.as_deref(),
        lb.backend_pool.as_ref().and_then(|pool| pool.name.as_deref()),
    ) else {
        return Ok(None);
    };
    scope
        .id_of::<LoadBalancerModel>(lb_name)
        .and_then(|id| id.child("backendAddressPools", pool_name).map(|pool| (id, pool)))
        .map(Some)
        .map_err(|err| invalid("spec.networkSpec.*LB", err.to_string()))
}

#[cfg(test)]
mod tests {
    use capz_kit::tags::Role;
    use capz_rules::Features;

    use super::*;

    fn scope() -> ClusterScope {
        let cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001"},
        }))
        .unwrap();
        ClusterScope::new(&cluster, Features::default(), None).unwrap()
    }

    fn pool(scope: &ClusterScope) -> ResourceId {
        scope
            .id_of::<capz_azure::models::network::LoadBalancer>("c1-public-lb")
            .unwrap()
            .child("backendAddressPools", "c1-public-lb-backendPool")
            .unwrap()
    }

    fn control_plane_nic(scope: &ClusterScope) -> NetworkInterface {
        NetworkInterface::new(
            scope,
            &name("cp-0", 0, 1),
            scope.subnet_id("c1-controlplane-subnet").unwrap(),
            scope.owned_tags(Role::ControlPlane),
        )
        .unwrap()
        .accelerated_networking(Some(true))
        .attached(Attachments {
            backend_pools: vec![pool(scope)],
            nat_rules: Vec::new(),
        })
    }

    #[test]
    fn names_follow_capz() {
        assert_eq!(name("m", 0, 1), "m-nic");
        assert_eq!(name("m", 1, 2), "m-nic-1");
    }

    #[test]
    fn a_new_interface_is_in_its_subnet_and_pool_with_a_dynamic_primary_address() {
        let scope = scope();
        let nic = control_plane_nic(&scope);
        let json = serde_json::to_value(nic.desired(None).unwrap()).unwrap();
        let configuration = &json["properties"]["ipConfigurations"][0];
        assert_eq!(configuration["name"], "pipConfig");
        assert_eq!(configuration["properties"]["primary"], true);
        assert_eq!(
            configuration["properties"]["privateIPAllocationMethod"],
            "Dynamic"
        );
        assert!(
            configuration["properties"]["subnet"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/subnets/c1-controlplane-subnet")
        );
        assert!(
            configuration["properties"]["loadBalancerBackendAddressPools"][0]["id"]
                .as_str()
                .unwrap()
                .ends_with("/backendAddressPools/c1-public-lb-backendPool")
        );
        assert!(
            configuration["properties"]
                .get("loadBalancerInboundNatRules")
                .is_none()
        );
        assert_eq!(json["properties"]["enableAcceleratedNetworking"], true);
        assert!(json["properties"].get("enableIPForwarding").is_none());
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "control-plane"
        );
    }

    #[test]
    fn an_interface_as_wanted_is_not_written_and_a_missing_pool_is() {
        let scope = scope();
        let nic = control_plane_nic(&scope);
        let mut existing = nic.desired(None).unwrap();
        // What Azure adds does not count.
        let properties = existing.properties.as_mut().unwrap();
        properties.mac_address = Some("00-0D-3A-00-00-01".into());
        properties.ip_configurations.as_mut().unwrap()[0]
            .properties
            .as_mut()
            .unwrap()
            .private_ip_address = Some("10.0.0.4".into());
        assert_eq!(nic.desired(Some(&existing)), None);
        assert_eq!(private_addresses(&existing), ["10.0.0.4"]);

        let outside = NetworkInterface::new(
            &scope,
            &name("cp-0", 0, 1),
            scope.subnet_id("c1-controlplane-subnet").unwrap(),
            scope.owned_tags(Role::ControlPlane),
        )
        .unwrap();
        assert!(outside.desired(Some(&existing)).is_some());
    }

    #[test]
    fn several_addresses_give_secondary_configurations_outside_the_pools() {
        let scope = scope();
        let nic = control_plane_nic(&scope).private_ip_configs(2);
        let json = serde_json::to_value(nic.desired(None).unwrap()).unwrap();
        let second = &json["properties"]["ipConfigurations"][1];
        assert_eq!(second["name"], "cp-0-nic-1");
        assert_eq!(second["properties"]["primary"], false);
        assert!(
            second["properties"]
                .get("loadBalancerBackendAddressPools")
                .is_none()
        );
    }
}
