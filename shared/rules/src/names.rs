//! The names capz-rs derives for the Azure resources of a cluster when the spec leaves them out.
//!
//! They are CAPZ's names, so a cluster moved between the two providers finds its resources, and
//! the controllers use the same functions when they look for what they created.

/// The virtual network of cluster `c`.
#[must_use]
pub fn vnet(c: &str) -> String {
    format!("{c}-vnet")
}

/// The control-plane subnet.
#[must_use]
pub fn control_plane_subnet(c: &str) -> String {
    format!("{c}-controlplane-subnet")
}

/// The first node subnet.
#[must_use]
pub fn node_subnet(c: &str) -> String {
    format!("{c}-node-subnet")
}

/// The one subnet of a cluster whose machines all share a subnet (role `cluster`).
#[must_use]
pub fn cluster_subnet(c: &str) -> String {
    format!("{c}-subnet")
}

/// The security group of the control-plane subnet.
#[must_use]
pub fn control_plane_security_group(c: &str) -> String {
    format!("{c}-controlplane-nsg")
}

/// The security group of the node subnets.
#[must_use]
pub fn node_security_group(c: &str) -> String {
    format!("{c}-node-nsg")
}

/// The security group of a `cluster` subnet.
#[must_use]
pub fn cluster_security_group(c: &str) -> String {
    format!("{c}-nsg")
}

/// The route table of the node subnets.
#[must_use]
pub fn node_route_table(c: &str) -> String {
    format!("{c}-node-routetable")
}

/// The route table of a `cluster` subnet.
#[must_use]
pub fn cluster_route_table(c: &str) -> String {
    format!("{c}-routetable")
}

/// The NAT gateway of the node subnets.
#[must_use]
pub fn node_nat_gateway(c: &str) -> String {
    format!("{c}-node-natgw")
}

/// The NAT gateway of a `cluster` subnet.
#[must_use]
pub fn cluster_nat_gateway(c: &str) -> String {
    format!("{c}-natgw")
}

/// The public IP of NAT gateway `gateway`.
#[must_use]
pub fn nat_gateway_ip(gateway: &str) -> String {
    format!("pip-{gateway}")
}

/// A public API server load balancer.
#[must_use]
pub fn public_load_balancer(c: &str) -> String {
    format!("{c}-public-lb")
}

/// An internal API server load balancer.
#[must_use]
pub fn internal_load_balancer(c: &str) -> String {
    format!("{c}-internal-lb")
}

/// The control-plane outbound load balancer.
#[must_use]
pub fn control_plane_outbound_load_balancer(c: &str) -> String {
    format!("{c}-outbound-lb")
}

/// The public IP of the API server.
#[must_use]
pub fn api_server_ip(c: &str) -> String {
    format!("pip-{c}-apiserver")
}

/// The public IPs of the node outbound load balancer.
#[must_use]
pub fn node_outbound_ip(c: &str) -> String {
    format!("pip-{c}-node-outbound")
}

/// The public IPs of the control-plane outbound load balancer.
#[must_use]
pub fn control_plane_outbound_ip(c: &str) -> String {
    format!("pip-{c}-controlplane-outbound")
}

/// The frontend IP configuration of load balancer `lb`.
#[must_use]
pub fn frontend_ip(lb: &str) -> String {
    format!("{lb}-frontEnd")
}

/// The internal frontend IP configuration beside a public one (feature gate `APIServerILB`).
#[must_use]
pub fn internal_frontend_ip(lb: &str) -> String {
    format!("{lb}-frontEnd-internal-ip")
}

/// The backend pool of the API server load balancer `lb`.
#[must_use]
pub fn backend_pool(lb: &str) -> String {
    format!("{lb}-backendPool")
}

/// The internal load balancer beside the public API server load balancer `lb` (feature gate
/// `APIServerILB`): machines of the cluster reach the API server through it without leaving the
/// virtual network.
#[must_use]
pub fn internal_api_server_load_balancer(lb: &str) -> String {
    format!("{lb}-internal")
}

/// The backend pool of the internal load balancer beside the public API server pool `pool`.
#[must_use]
pub fn internal_backend_pool(pool: &str) -> String {
    format!("{pool}-internal")
}

/// The DNS label CAPZ gives the API server's public IP `ip` when the spec names no DNS name:
/// `<cluster>-<hash>`, the hash (32-bit FNV-1a, in hex) of `<subscription>/<group>/<ip>`, so that
/// it is stable for the cluster and unique across subscriptions and groups. The IP's DNS name is
/// then `<label>.<region>.cloudapp.azure.com` (or the sovereign cloud's suffix).
#[must_use]
pub fn api_server_dns_label(cluster: &str, subscription: &str, group: &str, ip: &str) -> String {
    let hash = fnv1a32(format!("{subscription}/{group}/{ip}").as_bytes());
    format!("{cluster}-{hash:x}").to_lowercase()
}

/// 32-bit FNV-1a, the hash Go's `hash/fnv` gives CAPZ.
fn fnv1a32(bytes: &[u8]) -> u32 {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    bytes
        .iter()
        .fold(OFFSET, |hash, byte| (hash ^ u32::from(*byte)).wrapping_mul(PRIME))
}

/// The backend pool of an outbound load balancer `lb`.
#[must_use]
pub fn outbound_backend_pool(lb: &str) -> String {
    format!("{lb}-outboundBackendPool")
}

/// The Azure Bastion host.
#[must_use]
pub fn bastion(c: &str) -> String {
    format!("{c}-azure-bastion")
}

/// The public IP of the Azure Bastion host.
#[must_use]
pub fn bastion_ip(c: &str) -> String {
    format!("{c}-azure-bastion-pip")
}

/// The peering from the virtual network `from` to `to`.
#[must_use]
pub fn vnet_peering(from: &str, to: &str) -> String {
    format!("{from}-To-{to}")
}

/// The private DNS zone of a cluster whose API server is internal, when the spec names none.
#[must_use]
pub fn private_dns_zone(c: &str) -> String {
    format!("{c}.capz.io")
}

/// A private DNS zone's link to the virtual network `vnet`.
#[must_use]
pub fn private_dns_link(vnet: &str) -> String {
    format!("{vnet}-link")
}

/// The record, in a cluster's private DNS zone, that names its API server.
pub const API_SERVER_RECORD: &str = "apiserver";

/// The API server's name in the private DNS zone `zone`: the endpoint of a private cluster.
#[must_use]
pub fn private_api_server(zone: &str) -> String {
    format!("{API_SERVER_RECORD}.{zone}")
}

/// The `n`th (1-based) of several names derived from `base`.
#[must_use]
pub fn indexed(base: &str, n: usize) -> String {
    format!("{base}-{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dns_label_hash_is_fnv1a_as_capz_computes_it() {
        // Reference values of 32-bit FNV-1a.
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
        let label = api_server_dns_label("My-Cluster", "sub", "rg", "pip-my-cluster-apiserver");
        let hash = fnv1a32(b"sub/rg/pip-my-cluster-apiserver");
        assert_eq!(label, format!("my-cluster-{hash:x}"));
        assert_ne!(
            label,
            api_server_dns_label("My-Cluster", "sub", "other-rg", "pip-my-cluster-apiserver")
        );
    }
}
