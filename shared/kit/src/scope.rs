//! An AzureCluster as every controller reads it: its defaults filled in, and the names and ids of
//! the Azure resources it describes.
//!
//! The admission webhook stores defaults, but an object written before the webhook ran (or with
//! it switched off) still holds only what the user wrote. Defaulting is deterministic for an
//! AzureCluster, so every controller applies it again in memory and they all see the same spec.

use capz_api::AzureCluster;
use capz_api::azurecluster::AzureClusterSpec;
use capz_api::common::network::{PrivateDnsZoneMode, SubnetSpec, VnetSpec};
use capz_azure::models::ArmModel;
use capz_azure::models::network::VirtualNetwork;
use capz_azure::models::private_dns::PrivateZone;
use capz_azure::{IdError, Location, ResourceGroupName, ResourceId, SubscriptionId};
use capz_rules::Features;
use kube::ResourceExt as _;

use crate::conditions::Reason;
use crate::policy::{Category, Classify};
use crate::tags::{self, Role, Tags};

/// Why an AzureCluster cannot be turned into Azure resource ids.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    /// Neither the spec nor the controller's environment names a subscription.
    #[error(
        "spec.subscriptionID: Required value: name the Azure subscription, or run the controller with AZURE_SUBSCRIPTION_ID"
    )]
    NoSubscription,
    /// A spec field does not hold a valid Azure name or id.
    #[error("{field}: Invalid value: {value:?}: {source}")]
    Invalid {
        /// The field path.
        field: &'static str,
        /// What it holds.
        value: String,
        /// Why it is not valid.
        source: IdError,
    },
}

impl ScopeError {
    /// What turns the refusal of `value`, held by `field`, into a [`ScopeError::Invalid`].
    pub fn invalid(field: &'static str, value: &str) -> impl FnOnce(IdError) -> Self {
        let value = value.to_owned();
        move |source| Self::Invalid { field, value, source }
    }
}

impl Classify for ScopeError {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

fn parse<T: std::str::FromStr<Err = IdError>>(field: &'static str, value: &str) -> Result<T, ScopeError> {
    value.parse().map_err(|source| ScopeError::Invalid {
        field,
        value: value.to_owned(),
        source,
    })
}

/// An AzureCluster with its defaults, and where its resources live.
#[derive(Debug, Clone)]
pub struct ClusterScope {
    /// The Cluster API cluster's name: the `<cluster>` of tags and derived names.
    pub name: String,
    /// The namespace of the AzureCluster.
    pub namespace: String,
    /// The subscription everything is created in.
    pub subscription: SubscriptionId,
    /// The cluster's resource group.
    pub resource_group: ResourceGroupName,
    /// The region.
    pub location: Location,
    /// The defaulted spec.
    pub spec: AzureClusterSpec,
}

impl ClusterScope {
    /// Reads `cluster` with its defaults. `fallback_subscription` is the controller's
    /// `AZURE_SUBSCRIPTION_ID`, used when the spec names none.
    ///
    /// # Errors
    /// When no subscription is known, or the subscription, resource group or location is not a
    /// valid Azure value.
    pub fn new(
        cluster: &AzureCluster,
        features: Features,
        fallback_subscription: Option<&str>,
    ) -> Result<Self, ScopeError> {
        let mut defaulted = cluster.clone();
        capz_rules::azurecluster::default_cluster(&mut defaulted, features);
        let spec = defaulted.spec;
        let subscription = match spec.class.subscription_id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => parse("spec.subscriptionID", id)?,
            None => parse(
                "spec.subscriptionID",
                fallback_subscription
                    .filter(|id| !id.is_empty())
                    .ok_or(ScopeError::NoSubscription)?,
            )?,
        };
        let group = spec.resource_group.clone().unwrap_or_else(|| cluster.name_any());
        Ok(Self {
            name: crate::cluster::cluster_name(cluster).unwrap_or_else(|| cluster.name_any()),
            namespace: cluster.namespace().unwrap_or_default(),
            subscription,
            resource_group: parse("spec.resourceGroup", &group)?,
            location: parse("spec.location", &spec.class.location)?,
            spec,
        })
    }

    /// The cluster's resource group.
    #[must_use]
    pub fn group_id(&self) -> ResourceId {
        ResourceId::resource_group(self.subscription, self.resource_group.clone())
    }

    /// The id of the resource of model `M` named `name` in the cluster's resource group, from
    /// the model's resource type.
    ///
    /// # Errors
    /// When `name` is not a valid name.
    pub fn id_of<M: ArmModel>(&self, name: &str) -> Result<ResourceId, IdError> {
        capz_azure::models::id_of::<M>(&self.group_id(), name)
    }

    /// The virtual network's spec (an empty one when the spec has no network).
    #[must_use]
    pub fn vnet(&self) -> VnetSpec {
        self.spec
            .network_spec
            .as_ref()
            .and_then(|network| network.vnet.clone())
            .unwrap_or_default()
    }

    /// The virtual network's id; it may live in another resource group than the cluster.
    ///
    /// # Errors
    /// When the vnet's group or name is not valid.
    pub fn vnet_id(&self) -> Result<ResourceId, ScopeError> {
        let vnet = self.vnet();
        let group = match vnet.resource_group.as_deref().filter(|group| !group.is_empty()) {
            Some(group) => parse("spec.networkSpec.vnet.resourceGroup", group)?,
            None => self.resource_group.clone(),
        };
        let name = if vnet.name.is_empty() {
            capz_rules::names::vnet(&self.name)
        } else {
            vnet.name
        };
        capz_azure::models::id_of::<VirtualNetwork>(
            &ResourceId::resource_group(self.subscription, group),
            &name,
        )
        .map_err(|source| ScopeError::Invalid {
            field: "spec.networkSpec.vnet.name",
            value: name,
            source,
        })
    }

    /// The id of the subnet named `name` in the cluster's virtual network.
    ///
    /// # Errors
    /// When the vnet or the subnet name is not valid.
    pub fn subnet_id(&self, name: &str) -> Result<ResourceId, ScopeError> {
        self.vnet_id()?
            .child("subnets", name)
            .map_err(|source| ScopeError::Invalid {
                field: "spec.networkSpec.subnets[].name",
                value: name.to_owned(),
                source,
            })
    }

    /// Whether the API server sits behind an internal load balancer only (a private cluster).
    #[must_use]
    pub fn api_server_is_internal(&self) -> bool {
        self.spec
            .network_spec
            .as_ref()
            .and_then(|network| network.api_server_lb.as_ref())
            .and_then(|lb| lb.class.type_.as_deref())
            == Some(capz_rules::azurecluster::LB_INTERNAL)
    }

    /// The private DNS zone that resolves the API server's name, when the cluster has one (its
    /// API server is internal and `privateDNSZone` is not `None`): `privateDNSZoneName`, by
    /// default `<cluster>.capz.io`, in `privateDNSZoneResourceGroup`, by default the cluster's.
    ///
    /// # Errors
    /// When the zone's name or group is not valid.
    pub fn private_dns_zone_id(&self) -> Result<Option<ResourceId>, ScopeError> {
        let network = self.spec.network_spec.clone().unwrap_or_default();
        if !self.api_server_is_internal() || network.private_dns_zone == Some(PrivateDnsZoneMode::None) {
            return Ok(None);
        }
        let group = match network.class.private_dns_zone_resource_group.as_deref() {
            Some(group) if !group.is_empty() => parse("spec.networkSpec.privateDNSZoneResourceGroup", group)?,
            _ => self.resource_group.clone(),
        };
        let name = self.private_dns_zone_name();
        capz_azure::models::id_of::<PrivateZone>(&ResourceId::resource_group(self.subscription, group), &name)
            .map(Some)
            .map_err(|source| ScopeError::Invalid {
                field: "spec.networkSpec.privateDNSZoneName",
                value: name,
                source,
            })
    }

    /// The name of the private DNS zone of a private cluster: `privateDNSZoneName`, by default
    /// `<cluster>.capz.io`; the API server is `apiserver.<zone>` even when the user resolves it
    /// (`privateDNSZone: None`).
    #[must_use]
    pub fn private_dns_zone_name(&self) -> String {
        self.spec
            .network_spec
            .as_ref()
            .and_then(|network| network.class.private_dns_zone_name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| capz_rules::names::private_dns_zone(&self.name))
    }

    /// The networks `spec.networkSpec.vnet.peerings` peers the cluster's with, in the cluster's
    /// subscription (each in its `resourceGroup`, by default the cluster's).
    ///
    /// # Errors
    /// When a peering's group or network name is not valid.
    pub fn peered_vnet_ids(&self) -> Result<Vec<ResourceId>, ScopeError> {
        self.vnet()
            .class
            .peerings
            .unwrap_or_default()
            .iter()
            .map(|peering| {
                let group = match peering.resource_group.as_deref() {
                    Some(group) if !group.is_empty() => {
                        parse("spec.networkSpec.vnet.peerings[].resourceGroup", group)?
                    }
                    _ => self.resource_group.clone(),
                };
                capz_azure::models::id_of::<VirtualNetwork>(
                    &ResourceId::resource_group(self.subscription, group),
                    &peering.remote_vnet_name,
                )
                .map_err(|source| ScopeError::Invalid {
                    field: "spec.networkSpec.vnet.peerings[].remoteVnetName",
                    value: peering.remote_vnet_name.clone(),
                    source,
                })
            })
            .collect()
    }

    /// The subnets of the spec, defaulted.
    #[must_use]
    pub fn subnets(&self) -> &[SubnetSpec] {
        self.spec
            .network_spec
            .as_ref()
            .and_then(|network| network.subnets.as_ref())
            .map_or(&[], |subnets| subnets.0.as_slice())
    }

    /// The tags of a resource this cluster creates in `role`, with the spec's `additionalTags`.
    #[must_use]
    pub fn owned_tags(&self, role: Role) -> Tags {
        tags::owned(&self.name, role, self.spec.class.additional_tags.as_ref())
    }

    /// The `additionalTags` of a machine's resources: the cluster's, then the machine's own
    /// (`own`), and the cloud provider's tag marking them the cluster's.
    #[must_use]
    pub fn machine_additional_tags(&self, own: Option<&Tags>) -> Tags {
        let mut additional = self.spec.class.additional_tags.clone().unwrap_or_default();
        additional.extend(own.cloned().unwrap_or_default());
        additional.insert(
            format!("kubernetes.io_cluster_{}", self.name),
            tags::OWNED.to_owned(),
        );
        additional
    }

    /// The tags of a machine (a VM or a scale set) in `role`, with its `additionalTags` `own`.
    #[must_use]
    pub fn machine_tags(&self, role: Role, own: Option<&Tags>) -> Tags {
        tags::owned(&self.name, role, Some(&self.machine_additional_tags(own)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000001";

    fn cluster(spec: &serde_json::Value) -> AzureCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "az", "namespace": "ns", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn defaults_give_the_derived_names_and_the_environment_subscription() {
        // Like CAPZ, network names and the resource group derive from the AzureCluster's name;
        // ownership tags from the Cluster's.
        let scope = ClusterScope::new(
            &cluster(&serde_json::json!({"location": "westeurope"})),
            Features::default(),
            Some(SUBSCRIPTION),
        )
        .unwrap();
        assert_eq!(scope.name, "c1");
        assert_eq!(scope.resource_group.as_str(), "az");
        assert_eq!(
            scope.subnet_id("az-node-subnet").unwrap().to_string(),
            format!(
                "/subscriptions/{SUBSCRIPTION}/resourceGroups/az/providers/Microsoft.Network/virtualNetworks/az-vnet/subnets/az-node-subnet"
            )
        );
        let names: Vec<_> = scope
            .subnets()
            .iter()
            .map(|subnet| subnet.class.name.clone())
            .collect();
        assert_eq!(names, ["az-controlplane-subnet", "az-node-subnet"]);
        assert_eq!(
            scope.owned_tags(Role::Common)["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"],
            "owned"
        );
    }

    #[test]
    fn a_brought_vnet_keeps_its_own_group_and_the_spec_subscription_wins() {
        let other = "00000000-0000-0000-0000-000000000002";
        let scope = ClusterScope::new(
            &cluster(&serde_json::json!({
                "location": "westeurope",
                "subscriptionID": other,
                "resourceGroup": "rg",
                "networkSpec": {"vnet": {"name": "shared-vnet", "resourceGroup": "net-rg"}},
            })),
            Features::default(),
            Some(SUBSCRIPTION),
        )
        .unwrap();
        assert_eq!(
            scope.vnet_id().unwrap().to_string(),
            format!(
                "/subscriptions/{other}/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/shared-vnet"
            )
        );
        assert_eq!(
            scope.group_id().to_string(),
            format!("/subscriptions/{other}/resourceGroups/rg")
        );
    }

    #[test]
    fn a_missing_or_malformed_subscription_names_the_field() {
        let plain = cluster(&serde_json::json!({"location": "westeurope"}));
        let missing = ClusterScope::new(&plain, Features::default(), None).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("spec.subscriptionID: Required value"),
            "{missing}"
        );
        let malformed = ClusterScope::new(&plain, Features::default(), Some("not-a-uuid")).unwrap_err();
        assert!(
            malformed
                .to_string()
                .starts_with("spec.subscriptionID: Invalid value: \"not-a-uuid\""),
            "{malformed}"
        );
        assert_eq!(malformed.category(), Category::InvalidInput);
    }
}
