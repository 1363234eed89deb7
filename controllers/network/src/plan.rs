//! The Azure resources an AzureCluster's network is made of, built once per reconcile from its
//! defaulted spec, and the order of the steps that create them ([`ORDER`]) and delete them
//! ([`DELETION`]).

use std::collections::BTreeSet;

use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::common::network::SubnetSpec;
use capz_kit::progress::Step;
use capz_kit::resource::AzureResource as _;
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_resources::nat_gateway::NatGateway;
use capz_resources::private_endpoint::PrivateEndpoint;
use capz_resources::resource_group::ResourceGroup;
use capz_resources::route_table::RouteTable;
use capz_resources::security_group::{LastApplied, SecurityGroup};
use capz_resources::subnet::{Network, Subnet};
use capz_resources::virtual_network::VirtualNetwork;
use capz_resources::vnet_peering::VnetPeering;

/// The operation services the controller records: one per unit type it reconciles.
pub(crate) const SERVICES: &[&str] = &[
    capz_resources::resource_group::ResourceGroup::SERVICE,
    capz_resources::virtual_network::VirtualNetwork::SERVICE,
    capz_resources::security_group::SecurityGroup::SERVICE,
    capz_resources::route_table::RouteTable::SERVICE,
    capz_resources::nat_gateway::NatGatewayIp::SERVICE,
    capz_resources::nat_gateway::NatGateway::SERVICE,
    capz_resources::subnet::Subnet::SERVICE,
    capz_resources::vnet_peering::VnetPeering::SERVICE,
    capz_resources::private_endpoint::PrivateEndpoint::SERVICE,
];

/// A step of the network's reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    ResourceGroup,
    VirtualNetwork,
    SecurityGroups,
    RouteTables,
    /// The gateways' public IPs, then the gateways.
    NatGateways,
    Subnets,
    /// Both directions of each peering, one at a time.
    Peerings,
    PrivateEndpoints,
}

const fn step(unit: Unit, condition: ConditionType, what: &'static str) -> Step<Unit> {
    Step {
        unit,
        condition,
        what,
    }
}

/// The steps that build the network, in order. The virtual network comes before the security
/// groups and route tables because whether it is the cluster's decides the rest: in a network
/// the user brought, the controller creates neither security groups, route tables nor NAT
/// gateways (the subnets there are the user's, so nothing would use them), and only checks that
/// the subnets the spec names exist. `NetworkInfrastructureReady` sums the steps up: the outcome
/// of the one that holds the network back, else whether the location's zones could be read.
pub(crate) const ORDER: &[Step<Unit>] = &[
    step(
        Unit::ResourceGroup,
        ConditionType::RESOURCE_GROUP_READY,
        "resource group",
    ),
    step(Unit::VirtualNetwork, ConditionType::VNET_READY, "virtual network"),
    step(
        Unit::SecurityGroups,
        ConditionType::SECURITY_GROUPS_READY,
        "security groups",
    ),
    step(
        Unit::RouteTables,
        ConditionType::ROUTE_TABLES_READY,
        "route tables",
    ),
    step(
        Unit::NatGateways,
        ConditionType::NAT_GATEWAYS_READY,
        "NAT gateways",
    ),
    step(Unit::Subnets, ConditionType::SUBNETS_READY, "subnets"),
    PEERINGS,
    PRIVATE_ENDPOINTS,
];

/// The private endpoints' step: in the cluster's resource group, each in one of its subnets.
const PRIVATE_ENDPOINTS: Step<Unit> = step(
    Unit::PrivateEndpoints,
    ConditionType::PRIVATE_ENDPOINTS_READY,
    "private endpoints",
);

/// The peerings' step, also the first of every deletion: the peering back from the remote
/// network is not in the cluster's resource group, so deleting the group would leave it.
pub(crate) const PEERINGS: Step<Unit> = step(
    Unit::Peerings,
    ConditionType::VNET_PEERING_READY,
    "virtual network peerings",
);

/// The steps that delete the network in a resource group the cluster does not own, last created
/// first: a subnet holds on to its private endpoints, security group, route table and NAT
/// gateway. The peerings go before, whoever owns the group.
pub(crate) const DELETION: &[Step<Unit>] = &[
    PRIVATE_ENDPOINTS,
    step(Unit::Subnets, ConditionType::SUBNETS_READY, "subnets"),
    step(
        Unit::NatGateways,
        ConditionType::NAT_GATEWAYS_READY,
        "NAT gateways",
    ),
    step(
        Unit::RouteTables,
        ConditionType::ROUTE_TABLES_READY,
        "route tables",
    ),
    step(
        Unit::SecurityGroups,
        ConditionType::SECURITY_GROUPS_READY,
        "security groups",
    ),
    step(Unit::VirtualNetwork, ConditionType::VNET_READY, "virtual network"),
];

/// The units of one cluster's network.
pub(crate) struct Plan {
    pub(crate) group: ResourceGroup,
    pub(crate) network: VirtualNetwork,
    pub(crate) security_groups: Vec<SecurityGroup>,
    pub(crate) route_tables: Vec<RouteTable>,
    pub(crate) nat_gateways: Vec<NatGateway>,
    pub(crate) peerings: Vec<VnetPeering>,
    pub(crate) private_endpoints: Vec<PrivateEndpoint>,
    subnets: Vec<SubnetSpec>,
    scope: ClusterScope,
}

/// Keeps the first item of each name: subnets may share a security group, table or gateway.
fn first_of_each(names: &mut BTreeSet<String>, name: &str) -> bool {
    !name.is_empty() && names.insert(name.to_ascii_lowercase())
}

impl Plan {
    /// The units of `scope`'s network; `api_server_port` opens the control plane's default rule;
    /// `last_applied` holds the security rules written from the spec before.
    ///
    /// # Errors
    /// When a name in the spec is not a valid Azure name.
    pub(crate) fn new(
        scope: ClusterScope,
        api_server_port: i32,
        last_applied: &LastApplied,
    ) -> Result<Self, ScopeError> {
        let mut subnets = scope.subnets().to_vec();
        // The bastion's subnet is a child of the cluster's network too.
        if let Some(subnet) = scope
            .spec
            .bastion_spec
            .as_ref()
            .and_then(|bastion| bastion.azure_bastion.as_ref())
            .and_then(|bastion| bastion.subnet.clone())
        {
            subnets.push(subnet);
        }
        let (mut groups, mut tables, mut gateways) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        let mut security_groups = Vec::new();
        let mut route_tables = Vec::new();
        let mut nat_gateways = Vec::new();
        for subnet in &subnets {
            if let Some(group) = SecurityGroup::for_subnet(&scope, subnet, api_server_port, last_applied)?
                && subnet
                    .security_group
                    .as_ref()
                    .is_some_and(|spec| first_of_each(&mut groups, &spec.name))
            {
                security_groups.push(group);
            }
            if let Some(table) = subnet.route_table.as_ref()
                && first_of_each(&mut tables, &table.name)
            {
                route_tables.push(RouteTable::new(&scope, &table.name)?);
            }
            if let Some(gateway) = subnet.nat_gateway.as_ref()
                && first_of_each(&mut gateways, &gateway.class.name)
            {
                nat_gateways.push(NatGateway::new(&scope, gateway)?);
            }
        }
        Ok(Self {
            group: ResourceGroup::new(&scope),
            network: VirtualNetwork::new(&scope)?,
            security_groups,
            route_tables,
            nat_gateways,
            peerings: VnetPeering::of_cluster(&scope)?,
            private_endpoints: PrivateEndpoint::of_cluster(&scope)?,
            subnets,
            scope,
        })
    }

    /// Whether the spec calls for the step of `unit`.
    pub(crate) fn expects(&self, unit: Unit) -> bool {
        match unit {
            Unit::RouteTables => !self.route_tables.is_empty(),
            Unit::NatGateways => !self.nat_gateways.is_empty(),
            Unit::Peerings => !self.peerings.is_empty(),
            Unit::PrivateEndpoints => !self.private_endpoints.is_empty(),
            _ => true,
        }
    }

    /// The cluster's scope.
    pub(crate) fn scope(&self) -> &ClusterScope {
        &self.scope
    }

    /// The subnets, written as the spec says in the cluster's network or only read in a brought one.
    ///
    /// # Errors
    /// When a name in the spec is not a valid Azure name.
    pub(crate) fn subnets(&self, network: Network) -> Result<Vec<Subnet>, ScopeError> {
        self.subnets
            .iter()
            .map(|subnet| Subnet::new(&self.scope, subnet, network))
            .collect()
    }
}
