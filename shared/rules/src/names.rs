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

/// The `n`th (1-based) of several names derived from `base`.
#[must_use]
pub fn indexed(base: &str, n: usize) -> String {
    format!("{base}-{n}")
}
