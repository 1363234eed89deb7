//! The controller families of capz-rs, as the API sees them: each keeps a finalizer of its own on
//! the objects it reconciles, so peers and users can tell who still holds an object, and each runs
//! as its own Deployment, selected by a kustomize overlay of its name.
//!
//! Every finalizer capz-rs writes is published here; code that looks for a peer's finalizer asks
//! [`Family::from_finalizer`] instead of matching a suffix.

use std::fmt;

/// One controller family: one binary, one Deployment, one finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Resource group, virtual network, subnets, security groups, route tables, NAT gateways,
    /// peerings, private endpoints; the AzureCluster roll-up.
    Network,
    /// Load balancers, their public IPs and inbound NAT rules; the control plane endpoint.
    LoadBalancer,
    /// AzureMachine: VMs with their interfaces, disks, availability sets and extensions.
    Compute,
    /// AzureMachinePool and AzureMachinePoolMachine: scale sets and their instances.
    Vmss,
    /// AzureManagedControlPlane, AzureManagedCluster and AzureManagedMachinePool: AKS.
    Aks,
    /// The bastion host and its public IP.
    Bastion,
    /// The private DNS zone of an internal API server, its links and records.
    PrivateDns,
    /// AzureClusterIdentity checks and the machines' cloud-provider configuration.
    Identity,
}

impl Family {
    /// Every family, in the order the architecture lists them.
    pub const ALL: [Self; 8] = [
        Self::Network,
        Self::LoadBalancer,
        Self::Compute,
        Self::Vmss,
        Self::Aks,
        Self::Bastion,
        Self::PrivateDns,
        Self::Identity,
    ];

    /// The short name, such as `loadbalancer`: the overlay `deploy/<name>` installs it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Network => "network",
            Self::LoadBalancer => "loadbalancer",
            Self::Compute => "compute",
            Self::Vmss => "vmss",
            Self::Aks => "aks",
            Self::Bastion => "bastion",
            Self::PrivateDns => "privatedns",
            Self::Identity => "identity",
        }
    }

    /// `capz-<name>`: the binary, Deployment, ServiceAccount, field manager, event reporter and
    /// leader-election Lease of the family.
    #[must_use]
    pub const fn qualified(self) -> &'static str {
        match self {
            Self::Network => "capz-network",
            Self::LoadBalancer => "capz-loadbalancer",
            Self::Compute => "capz-compute",
            Self::Vmss => "capz-vmss",
            Self::Aks => "capz-aks",
            Self::Bastion => "capz-bastion",
            Self::PrivateDns => "capz-privatedns",
            Self::Identity => "capz-identity",
        }
    }

    /// The finalizer the family keeps on the objects it reconciles.
    #[must_use]
    pub const fn finalizer(self) -> &'static str {
        match self {
            Self::Network => "network.infrastructure.cluster.x-k8s.io",
            Self::LoadBalancer => "loadbalancer.infrastructure.cluster.x-k8s.io",
            Self::Compute => "compute.infrastructure.cluster.x-k8s.io",
            Self::Vmss => "vmss.infrastructure.cluster.x-k8s.io",
            Self::Aks => "aks.infrastructure.cluster.x-k8s.io",
            Self::Bastion => "bastion.infrastructure.cluster.x-k8s.io",
            Self::PrivateDns => "privatedns.infrastructure.cluster.x-k8s.io",
            Self::Identity => "identity.infrastructure.cluster.x-k8s.io",
        }
    }

    /// The family whose finalizer `finalizer` is, if it is one of capz-rs's.
    #[must_use]
    pub fn from_finalizer(finalizer: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|family| family.finalizer() == finalizer)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Family;

    #[test]
    fn names_finalizers_and_leases_follow_one_pattern() {
        for family in Family::ALL {
            assert_eq!(family.qualified(), format!("capz-{}", family.name()));
            assert_eq!(
                family.finalizer(),
                format!("{}.infrastructure.cluster.x-k8s.io", family.name())
            );
            assert_eq!(Family::from_finalizer(family.finalizer()), Some(family));
        }
        assert_eq!(Family::from_finalizer("cluster.cluster.x-k8s.io"), None);
        assert_eq!(
            Family::from_finalizer("other.infrastructure.cluster.x-k8s.io"),
            None
        );
    }
}
