//! The Azure resources an AzureCluster's network is made of, built once per reconcile from its
//! defaulted spec: what provisioning creates in order and cleanup deletes in reverse.

use std::collections::BTreeSet;

use capz_kit::api::common::network::SubnetSpec;
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_resources::nat_gateway::NatGateway;
use capz_resources::resource_group::ResourceGroup;
use capz_resources::route_table::RouteTable;
use capz_resources::security_group::{LastApplied, SecurityGroup};
use capz_resources::subnet::{Network, Subnet};
use capz_resources::virtual_network::VirtualNetwork;

/// The units of one cluster's network.
pub(crate) struct Plan {
    pub(crate) group: ResourceGroup,
    pub(crate) network: VirtualNetwork,
    pub(crate) security_groups: Vec<SecurityGroup>,
    pub(crate) route_tables: Vec<RouteTable>,
    pub(crate) nat_gateways: Vec<NatGateway>,
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
            subnets,
            scope,
        })
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
