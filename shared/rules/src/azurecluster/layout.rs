//! The constants of an AzureCluster's defaults and where default subnet ranges come from.

use crate::cidr::Cidr;

/// The address space of a virtual network given none.
pub const DEFAULT_VNET_CIDR: &str = "10.0.0.0/8";
/// The subnet Azure Bastion requires, by name.
pub const BASTION_SUBNET_NAME: &str = "AzureBastionSubnet";
/// The range of the bastion subnet given none, in the default address space.
pub const DEFAULT_BASTION_SUBNET_CIDR: &str = "10.255.255.224/27";
/// The private IP of an internal API server load balancer given none.
pub const DEFAULT_INTERNAL_LB_IP: &str = "10.0.0.100";
/// The idle timeout of load balancers given none, in minutes.
pub const DEFAULT_IDLE_TIMEOUT_MINUTES: i32 = 4;
/// The cloud of a cluster given none.
pub const DEFAULT_AZURE_ENVIRONMENT: &str = "AzurePublicCloud";
/// The only load balancer SKU capz-rs creates.
pub const LB_SKU_STANDARD: &str = "Standard";
/// A load balancer reachable from the internet.
pub const LB_PUBLIC: &str = "Public";
/// A load balancer reachable from the virtual network only.
pub const LB_INTERNAL: &str = "Internal";
/// The longest cluster name: it names the resource group and prefixes every resource name.
pub const MAX_CLUSTER_NAME: usize = 44;
/// How many public IPs an outbound load balancer may have.
pub const MAX_OUTBOUND_FRONTENDS: i32 = 16;

/// Where default subnet ranges come from: blocks of the virtual network's first IPv4 range, 8 bits
/// longer (at most /29). The control-plane (or `cluster`) subnet takes block 0 and node subnet
/// `n` block `n`; the bastion takes the last /27. With CAPZ's default address space 10.0.0.0/8
/// this is CAPZ's layout exactly (10.0.0.0/16, 10.<n>.0.0/16, 10.255.255.224/27); with a custom
/// address space the defaults still fall inside it.
#[derive(Clone, Copy, Debug)]
pub struct SubnetLayout(Option<Cidr>);

impl SubnetLayout {
    /// The layout of a virtual network with `cidrs`.
    #[must_use]
    pub fn of(cidrs: Option<&Vec<String>>) -> Self {
        Self(
            cidrs
                .into_iter()
                .flatten()
                .filter_map(|c| c.parse::<Cidr>().ok())
                .find(|c| !c.is_ipv6()),
        )
    }

    /// The default range of block `index`, CAPZ's fixed default when the space has no such block.
    #[must_use]
    pub fn block(&self, index: usize) -> String {
        self.0
            .filter(|vnet| vnet.prefix() < 29)
            .and_then(|vnet| vnet.subrange((vnet.prefix() + 8).min(29), u128::try_from(index).ok()?))
            .map_or_else(|| format!("10.{index}.0.0/16"), |c| c.to_string())
    }

    /// The default range of the bastion subnet.
    #[must_use]
    pub fn bastion(&self) -> String {
        self.0
            .and_then(|vnet| vnet.subrange(27, vnet.count(27).checked_sub(1)?))
            .map_or_else(|| DEFAULT_BASTION_SUBNET_CIDR.to_owned(), |c| c.to_string())
    }
}
