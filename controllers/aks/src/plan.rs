//! Spec → units, without a client: the Azure resources an AzureManagedControlPlane asks for (its
//! resource groups, virtual network and subnet, the managed cluster with the pools it is created
//! with) and the agent pool of an AzureManagedMachinePool, with the step tables that order them.

use capz_api::azuremanagedmachinepool::NodePoolMode;
use capz_api::capi::{Cluster, MachinePool};
use capz_api::common::conditions::ConditionType;
use capz_api::{AzureManagedControlPlane, AzureManagedMachinePool};
use capz_azure::models::container_service::ManagedCluster as ManagedClusterModel;
use capz_azure::models::id_of;
use capz_azure::models::network::{Subnet as SubnetModel, VirtualNetwork as VirtualNetworkModel};
use capz_azure::{IdError, Location, ResourceId, SubscriptionId};
use capz_kit::conditions::Reason;
use capz_kit::kube::ResourceExt as _;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::Step;
use capz_kit::resource::AzureResource as _;
use capz_kit::tags::{self, Role};
use capz_resources::agent_pool::{AgentPool, AgentPoolError, PoolContext};
use capz_resources::managed_cluster::{ClusterNetwork, ManagedCluster, ManagedClusterError};
use capz_resources::resource_group::ResourceGroup;
use capz_resources::subnet::{Network, Subnet};
use capz_resources::virtual_network::VirtualNetwork;

/// What a step of the control plane works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// The cluster's resource group, and the network's when it is another.
    Groups,
    /// The virtual network.
    Network,
    /// The nodes' subnet.
    Subnet,
    /// The managed cluster.
    ManagedCluster,
}

/// The step of the resource groups.
const GROUPS: Step<Unit> = Step {
    unit: Unit::Groups,
    condition: ConditionType::RESOURCE_GROUP_READY,
    what: "resource group",
};
/// The step of the virtual network.
const NETWORK: Step<Unit> = Step {
    unit: Unit::Network,
    condition: ConditionType::VNET_READY,
    what: "virtual network",
};
/// The step of the managed cluster.
const CLUSTER: Step<Unit> = Step {
    unit: Unit::ManagedCluster,
    condition: ConditionType::MANAGED_CLUSTER_RUNNING,
    what: "managed cluster",
};

/// The control plane's steps, in the order they are built.
pub(crate) const ORDER: &[Step<Unit>] = &[
    GROUPS,
    NETWORK,
    Step {
        unit: Unit::Subnet,
        condition: ConditionType::SUBNETS_READY,
        what: "subnet",
    },
    CLUSTER,
];

/// The control plane's steps, in the order they are deleted: the cluster (AKS deletes its pools
/// and node resource group with it), then the network (its subnet with it), then the groups.
pub(crate) const DELETION: &[Step<Unit>] = &[CLUSTER, NETWORK, GROUPS];

/// The services of the control plane's operations.
pub(crate) const SERVICES: &[&str] = &[
    ResourceGroup::SERVICE,
    VirtualNetwork::SERVICE,
    Subnet::SERVICE,
    ManagedCluster::SERVICE,
];

/// A pool's one step.
pub(crate) const POOL_ORDER: &[Step<()>] = &[Step {
    unit: (),
    condition: ConditionType::AGENT_POOLS_READY,
    what: "agent pool",
}];

/// The service of a pool's operations.
pub(crate) const POOL_SERVICES: &[&str] = &[AgentPool::SERVICE];

/// Why a spec gives no plan.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// No subscription: neither `spec.subscriptionID` nor the controller's default.
    #[error("spec.subscriptionID: Required value: set it, or give the controller AZURE_SUBSCRIPTION_ID")]
    NoSubscription,
    /// A name Azure would refuse.
    #[error("{field}: Invalid value: {value:?}: {source}")]
    Name {
        field: &'static str,
        value: String,
        source: IdError,
    },
    /// The managed cluster cannot be built from the spec.
    #[error(transparent)]
    ManagedCluster(#[from] ManagedClusterError),
    /// A pool cannot be built from its spec.
    #[error("AzureManagedMachinePool {pool}: {source}")]
    Pool { pool: String, source: AgentPoolError },
    /// AKS needs a System pool to create a cluster (reported by the apply pass).
    #[error(
        "no AzureManagedMachinePool of this cluster with mode System belongs to a MachinePool: AKS needs at least one System pool to create the cluster; add one (or wait for Cluster API to link it)"
    )]
    NoSystemPool,
}

impl Classify for PlanError {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

/// What the control plane builds for one cluster.
pub(crate) struct Plan {
    /// Whether a pool of the cluster has mode System, without which AKS creates no cluster.
    pub(crate) has_system_pool: bool,
    pub(crate) groups: Vec<ResourceGroup>,
    pub(crate) network: VirtualNetwork,
    pub(crate) subnet_id: ResourceId,
    subnet_prefixes: Vec<String>,
    subnet_endpoints: Vec<(String, Vec<String>)>,
    pub(crate) cluster: ManagedCluster,
}

impl Plan {
    /// The subnet, as written in an owned network or read in a brought one.
    pub(crate) fn subnet(&self, network: Network) -> Subnet {
        Subnet::plain(
            self.subnet_id.clone(),
            self.subnet_prefixes.clone(),
            self.subnet_endpoints.clone(),
            network,
        )
    }
}

/// The subscription of the control plane's resources.
fn subscription(
    plane: &AzureManagedControlPlane,
    fallback: Option<&str>,
) -> Result<SubscriptionId, PlanError> {
    let subscription = plane
        .spec
        .class
        .subscription_id
        .as_deref()
        .filter(|id| !id.is_empty())
        .or(fallback)
        .ok_or(PlanError::NoSubscription)?;
    subscription.parse().map_err(|source| PlanError::Name {
        field: "spec.subscriptionID",
        value: subscription.to_owned(),
        source,
    })
}

/// The resource group `name` of the subscription `subscription`.
fn group(subscription: &SubscriptionId, field: &'static str, name: &str) -> Result<ResourceId, PlanError> {
    let name = name.parse().map_err(|source| PlanError::Name {
        field,
        value: name.to_owned(),
        source,
    })?;
    Ok(ResourceId::resource_group(*subscription, name))
}

/// The managed cluster's id: named after the control plane, in its resource group.
pub(crate) fn cluster_id(
    plane: &AzureManagedControlPlane,
    fallback: Option<&str>,
) -> Result<ResourceId, PlanError> {
    let subscription = subscription(plane, fallback)?;
    let group = group(
        &subscription,
        "spec.resourceGroupName",
        &plane.spec.class.resource_group_name,
    )?;
    id_of::<ManagedClusterModel>(&group, &plane.name_any()).map_err(|source| PlanError::Name {
        field: "metadata.name",
        value: plane.name_any(),
        source,
    })
}

/// The id of the nodes' subnet.
pub(crate) fn subnet_id(
    plane: &AzureManagedControlPlane,
    fallback: Option<&str>,
) -> Result<ResourceId, PlanError> {
    let subscription = subscription(plane, fallback)?;
    let network = plane.spec.defaulted_virtual_network(&plane.name_any());
    let subnet = network.subnet.unwrap_or_default();
    let group = group(
        &subscription,
        "spec.virtualNetwork.resourceGroup",
        network.resource_group.as_deref().unwrap_or_default(),
    )?;
    id_of::<VirtualNetworkModel>(&group, &network.name)
        .and_then(|vnet| id_of::<SubnetModel>(&vnet, &subnet.name))
        .map_err(|source| PlanError::Name {
            field: "spec.virtualNetwork",
            value: format!("{}/{}", network.name, subnet.name),
            source,
        })
}

/// The node resource group AKS makes for the cluster.
pub(crate) fn node_group(
    plane: &AzureManagedControlPlane,
    fallback: Option<&str>,
) -> Result<ResourceId, PlanError> {
    let subscription = subscription(plane, fallback)?;
    group(
        &subscription,
        "spec.nodeResourceGroupName",
        &plane.spec.defaulted_node_resource_group(&plane.name_any()),
    )
}

/// The plan of `plane`, of the Cluster `cluster`, whose pools are `pools` (each with its
/// MachinePool when Cluster API has linked it): those linked are written with the managed
/// cluster when it is created. One not linked yet is left to its own PUT, as CAPZ leaves it:
/// its node count and version come from the MachinePool, and guessing them would cost a second
/// write to correct.
pub(crate) fn control_plane(
    plane: &AzureManagedControlPlane,
    cluster: &Cluster,
    pools: &[(AzureManagedMachinePool, Option<MachinePool>)],
    fallback: Option<&str>,
) -> Result<Plan, PlanError> {
    let class = &plane.spec.class;
    let name = plane.name_any();
    let cluster_name = cluster.name_any();
    let subscription = subscription(plane, fallback)?;
    let location = class
        .location
        .parse::<Location>()
        .map_err(|source| PlanError::Name {
            field: "spec.location",
            value: class.location.clone(),
            source,
        })?;
    let owned = tags::owned(&cluster_name, Role::Common, class.additional_tags.as_ref());
    let network = plane.spec.defaulted_virtual_network(&name);
    let cluster_group = group(
        &subscription,
        "spec.resourceGroupName",
        &class.resource_group_name,
    )?;
    let mut groups = vec![ResourceGroup::named(
        cluster_group.clone(),
        &cluster_name,
        location.clone(),
        owned.clone(),
    )];
    let network_group_name = network.resource_group.clone().unwrap_or_default();
    let network_group = group(
        &subscription,
        "spec.virtualNetwork.resourceGroup",
        &network_group_name,
    )?;
    if network_group != cluster_group {
        groups.push(ResourceGroup::named(
            network_group.clone(),
            &cluster_name,
            location.clone(),
            owned.clone(),
        ));
    }
    let vnet_id =
        id_of::<VirtualNetworkModel>(&network_group, &network.name).map_err(|source| PlanError::Name {
            field: "spec.virtualNetwork.name",
            value: network.name.clone(),
            source,
        })?;
    let subnet = network.subnet.clone().unwrap_or_default();
    let subnet_id = id_of::<SubnetModel>(&vnet_id, &subnet.name).map_err(|source| PlanError::Name {
        field: "spec.virtualNetwork.subnet.name",
        value: subnet.name.clone(),
        source,
    })?;
    let subnet_endpoints = subnet
        .service_endpoints
        .iter()
        .flat_map(|endpoints| &endpoints.0)
        .map(|endpoint| (endpoint.service.clone(), endpoint.locations.clone()))
        .collect();
    let cluster_network = cluster.spec.cluster_network.as_ref();
    let blocks = |ranges: Option<&capz_api::capi::NetworkRanges>| {
        ranges
            .map(|ranges| ranges.cidr_blocks.clone())
            .unwrap_or_default()
    };
    let ranges = ClusterNetwork {
        pods: blocks(cluster_network.and_then(|network| network.pods.as_ref())),
        services: blocks(cluster_network.and_then(|network| network.services.as_ref())),
    };
    let id = cluster_id(plane, fallback)?;
    let mut profiles = Vec::with_capacity(pools.len());
    let mut has_system_pool = false;
    for (pool, machine_pool) in pools {
        let Some(machine_pool) = machine_pool else {
            continue;
        };
        has_system_pool |= pool.spec.class.mode == NodePoolMode::System;
        profiles.push(agent_pool(plane, pool, Some(machine_pool), &id, &subnet_id)?.profile());
    }
    Ok(Plan {
        has_system_pool,
        groups,
        network: VirtualNetwork::named(vnet_id, &cluster_name, location, owned, vec![network.cidr_block]),
        subnet_id,
        subnet_prefixes: vec![subnet.cidr_block],
        subnet_endpoints,
        cluster: ManagedCluster::new(
            &cluster_group,
            &name,
            &cluster_name,
            &plane.spec,
            &ranges,
            profiles,
        )?,
    })
}

/// The agent pool of `pool` in the managed cluster `cluster`, whose nodes join `subnet`.
pub(crate) fn agent_pool(
    plane: &AzureManagedControlPlane,
    pool: &AzureManagedMachinePool,
    machine_pool: Option<&MachinePool>,
    cluster: &ResourceId,
    subnet: &ResourceId,
) -> Result<AgentPool, PlanError> {
    let wanted = machine_pool.and_then(|machine_pool| machine_pool.spec.template.spec.version.clone());
    let upgraded = plane
        .status
        .as_ref()
        .and_then(|status| status.auto_upgrade_version.clone());
    let version = match (wanted, upgraded) {
        (Some(wanted), Some(upgraded)) => Some(capz_resources::higher_version(&wanted, &upgraded).to_owned()),
        (wanted, upgraded) => wanted.or(upgraded),
    };
    // The control plane goes first: a pool never asks for more than the control plane runs (AKS
    // refuses it), and follows once the control plane's upgrade is done.
    let running = plane.status.as_ref().and_then(|status| status.version.as_deref());
    let version = match (version, running) {
        (Some(version), Some(running)) if capz_resources::compare_versions(&version, running).is_gt() => {
            Some(running.to_owned())
        }
        (version, _) => version,
    };
    let context = PoolContext {
        replicas: machine_pool.and_then(|machine_pool| machine_pool.spec.replicas),
        version,
        subnet: Some(subnet.clone()),
    };
    AgentPool::new(cluster, &pool.name_any(), &pool.spec.class, context).map_err(|source| PlanError::Pool {
        pool: pool.name_any(),
        source,
    })
}
