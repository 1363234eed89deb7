//! Load balancers (`Microsoft.Network/loadBalancers`): the API server's (public or internal, and
//! with the `APIServerILB` gate an internal one beside a public one) and the outbound ones of
//! nodes and control plane, laid out as CAPZ lays them out so that clusters move between the two
//! providers unchanged:
//!
//! | Part | API server | Outbound |
//! |---|---|---|
//! | frontends | the spec's, public IP or private address in the control-plane subnet | one per public IP |
//! | backend pool | `<lb>-backendPool` | `<lb>-outboundBackendPool` |
//! | probe | `HTTPSProbe`: HTTPS `/readyz` on the API server port, every 15 s | none |
//! | rules | `LBRuleHTTPS` on the API server port, one per additional port, outbound SNAT off | none |
//! | outbound rule | `OutboundNATAllProtocols` for a public one (control-plane egress) | `OutboundNATAllProtocols` |
//!
//! Children take no tags: they are ours because the balancer is and their names are CAPZ's.
//! An existing balancer keeps the parts it has beyond ours (inbound NAT rules of machines, parts
//! a user added); ours are added when missing and rewritten when they differ.

use capz_api::common::network::{FrontendIp, LoadBalancerSpec, SubnetRole};
use capz_azure::models::network::{
    BackendAddressPool, FrontendIpConfiguration, FrontendIpConfigurationProperties, IpAllocationMethod,
    LoadBalancer as Model, LoadBalancerProperties, LoadBalancerSkuName, LoadBalancingRule,
    LoadBalancingRuleProperties, LoadDistribution, OutboundRule, OutboundRuleProperties, Probe,
    ProbeProperties, ProbeProtocol, TransportProtocol,
};
use capz_azure::models::{ChildResource, Sku, SubResource};
use capz_azure::{IdError, Location, ResourceId};
use capz_kit::conditions::Reason;
use capz_kit::policy::{Category, Classify};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::{Role, Tags};
use capz_rules::{Features, names};
use serde::Serialize;

use crate::public_ip::PublicIp;
use crate::{as_value, covers};

/// The API server's health probe.
pub const HTTPS_PROBE: &str = "HTTPSProbe";
/// The path the API server probe asks.
pub const HTTPS_PROBE_PATH: &str = "/readyz";
/// The balancing rule of the API server port.
pub const API_SERVER_RULE: &str = "LBRuleHTTPS";
/// The outbound rule of public balancers.
pub const OUTBOUND_RULE: &str = "OutboundNATAllProtocols";

/// Where a frontend receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontendAddress {
    /// On a public IP.
    Public(ResourceId),
    /// On a static private address of a subnet.
    Private {
        /// The subnet.
        subnet: ResourceId,
        /// The address.
        address: String,
    },
}

/// One frontend of a balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontend {
    /// Its name, unique in the balancer.
    pub name: String,
    /// Where it receives.
    pub address: FrontendAddress,
}

/// The API server traffic a balancer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ApiServerTraffic {
    port: u16,
    /// `additionalAPIServerLBPorts`: rule name and port.
    additional: Vec<(String, u16)>,
}

/// A load balancer the cluster owns.
#[derive(Debug, Clone)]
pub struct LoadBalancer {
    id: ResourceId,
    cluster: String,
    location: Location,
    tags: Tags,
    frontends: Vec<Frontend>,
    backend_pool: String,
    idle_timeout: Option<u32>,
    api_server: Option<ApiServerTraffic>,
    outbound: bool,
}

impl LoadBalancer {
    /// The balancer `name` in the cluster's resource group, tagged with `role`, with its backend
    /// pool `backend_pool` and an outbound rule when `outbound`.
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn new(
        scope: &ClusterScope,
        name: &str,
        role: Role,
        frontends: Vec<Frontend>,
        backend_pool: &str,
        outbound: bool,
    ) -> Result<Self, IdError> {
        Ok(Self {
            id: scope.id_of::<Model>(name)?,
            cluster: scope.name.clone(),
            location: scope.location.clone(),
            tags: scope.owned_tags(role),
            frontends,
            backend_pool: backend_pool.to_owned(),
            idle_timeout: None,
            api_server: None,
            outbound,
        })
    }

    /// Carries the API server's traffic on `port` (and the `additional` named ports): the HTTPS
    /// probe and one balancing rule per port, on the first frontend.
    #[must_use]
    pub fn api_server(mut self, port: u16, additional: Vec<(String, u16)>) -> Self {
        self.api_server = Some(ApiServerTraffic { port, additional });
        self
    }

    /// Keeps idle TCP flows this many minutes (rules and outbound rule).
    #[must_use]
    pub fn idle_timeout(mut self, minutes: Option<u32>) -> Self {
        self.idle_timeout = minutes;
        self
    }

    /// Its frontends.
    #[must_use]
    pub fn frontends(&self) -> &[Frontend] {
        &self.frontends
    }

    fn part(&self, kind: &str, name: &str) -> Option<SubResource> {
        self.id.child(kind, name).ok().map(SubResource::from)
    }

    fn frontend_configurations(&self) -> Vec<FrontendIpConfiguration> {
        self.frontends
            .iter()
            .map(|frontend| {
                let properties = match &frontend.address {
                    FrontendAddress::Public(ip) => FrontendIpConfigurationProperties {
                        public_ip_address: Some(ip.clone().into()),
                        ..FrontendIpConfigurationProperties::default()
                    },
                    FrontendAddress::Private { subnet, address } => FrontendIpConfigurationProperties {
                        subnet: Some(subnet.clone().into()),
                        private_ip_address: Some(address.clone()),
                        private_ip_allocation_method: Some(IpAllocationMethod::Static),
                        ..FrontendIpConfigurationProperties::default()
                    },
                };
                child(&frontend.name, properties)
            })
            .collect()
    }

    fn rules(&self, traffic: &ApiServerTraffic) -> Vec<LoadBalancingRule> {
        let frontend = self
            .frontends
            .first()
            .and_then(|frontend| self.part("frontendIPConfigurations", &frontend.name));
        let rule = |name: &str, port: u16| {
            child(
                name,
                LoadBalancingRuleProperties {
                    // Outbound traffic goes through the outbound rule instead.
                    disable_outbound_snat: Some(true),
                    protocol: Some(TransportProtocol::Tcp),
                    frontend_port: Some(port),
                    backend_port: Some(port),
                    idle_timeout_in_minutes: self.idle_timeout,
                    enable_floating_ip: Some(false),
                    load_distribution: Some(LoadDistribution::Default),
                    frontend_ip_configuration: frontend.clone(),
                    backend_address_pool: self.part("backendAddressPools", &self.backend_pool),
                    probe: self.part("probes", HTTPS_PROBE),
                    ..LoadBalancingRuleProperties::default()
                },
            )
        };
        std::iter::once(rule(API_SERVER_RULE, traffic.port))
            .chain(traffic.additional.iter().map(|(name, port)| rule(name, *port)))
            .collect()
    }

    fn probes(traffic: &ApiServerTraffic) -> Vec<Probe> {
        vec![child(
            HTTPS_PROBE,
            ProbeProperties {
                protocol: Some(ProbeProtocol::Https),
                port: Some(traffic.port),
                request_path: Some(HTTPS_PROBE_PATH.to_owned()),
                interval_in_seconds: Some(15),
                probe_threshold: Some(1),
                ..ProbeProperties::default()
            },
        )]
    }

    fn outbound_rules(&self) -> Vec<OutboundRule> {
        // Azure refuses an outbound rule without frontends (`frontendIPsCount: 0`).
        if !self.outbound || self.frontends.is_empty() {
            return Vec::new();
        }
        vec![child(
            OUTBOUND_RULE,
            OutboundRuleProperties {
                frontend_ip_configurations: Some(
                    self.frontends
                        .iter()
                        .filter_map(|frontend| self.part("frontendIPConfigurations", &frontend.name))
                        .collect(),
                ),
                backend_address_pool: self.part("backendAddressPools", &self.backend_pool),
                protocol: Some(TransportProtocol::All),
                idle_timeout_in_minutes: self.idle_timeout,
                ..OutboundRuleProperties::default()
            },
        )]
    }

    /// The whole body of a new balancer.
    fn body(&self) -> Model {
        let (rules, probes) = match &self.api_server {
            Some(traffic) => (self.rules(traffic), Self::probes(traffic)),
            None => (Vec::new(), Vec::new()),
        };
        Model {
            location: Some(self.location.clone()),
            tags: Some(self.tags.clone()),
            sku: Some(Sku {
                name: Some(LoadBalancerSkuName::Standard),
                tier: None,
            }),
            properties: Some(LoadBalancerProperties {
                frontend_ip_configurations: Some(self.frontend_configurations()),
                backend_address_pools: Some(vec![BackendAddressPool {
                    name: Some(self.backend_pool.clone()),
                    ..BackendAddressPool::default()
                }]),
                load_balancing_rules: Some(rules),
                probes: Some(probes),
                outbound_rules: Some(self.outbound_rules()),
                ..LoadBalancerProperties::default()
            }),
            ..Model::default()
        }
    }
}

fn child<P>(name: &str, properties: P) -> ChildResource<P> {
    ChildResource {
        id: None,
        name: Some(name.to_owned()),
        resource_type: None,
        etag: None,
        properties: Some(properties),
    }
}

/// Adds each wanted part missing from `existing` (by name) and replaces each that differs from
/// what is wanted; other parts stay. Whether anything changed.
fn merge<P: Serialize>(existing: &mut Option<Vec<ChildResource<P>>>, wanted: Vec<ChildResource<P>>) -> bool {
    let parts = existing.get_or_insert_with(Vec::new);
    let mut changed = false;
    for part in wanted {
        let same_name = |found: &ChildResource<P>| {
            found
                .name
                .as_deref()
                .zip(part.name.as_deref())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
        };
        match parts.iter_mut().find(|found| same_name(found)) {
            Some(found) if covers(&as_value(&found.properties), &as_value(&part.properties)) => {}
            Some(found) => {
                *found = part;
                changed = true;
            }
            None => {
                parts.push(part);
                changed = true;
            }
        }
    }
    changed
}

impl AzureResource for LoadBalancer {
    type Model = Model;
    const SERVICE: &'static str = "loadbalancers";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        let wanted = self.body();
        let Some(existing) = existing else {
            return Some(wanted);
        };
        let wanted_parts = wanted.properties.unwrap_or_default();
        let mut parts = existing.properties.clone().unwrap_or_default();
        // Every part is merged, so none may short-circuit the others.
        let changed = [
            merge(
                &mut parts.frontend_ip_configurations,
                wanted_parts.frontend_ip_configurations.unwrap_or_default(),
            ),
            merge(
                &mut parts.backend_address_pools,
                wanted_parts.backend_address_pools.unwrap_or_default(),
            ),
            merge(&mut parts.probes, wanted_parts.probes.unwrap_or_default()),
            merge(
                &mut parts.load_balancing_rules,
                wanted_parts.load_balancing_rules.unwrap_or_default(),
            ),
            merge(
                &mut parts.outbound_rules,
                wanted_parts.outbound_rules.unwrap_or_default(),
            ),
        ];
        if !changed.contains(&true) && existing.tags == wanted.tags {
            return None;
        }
        // What Azure reports about the balancer itself is not sent back.
        parts.provisioning_state = None;
        parts.resource_guid = None;
        Some(Model {
            location: existing.location.clone().or(wanted.location),
            tags: wanted.tags,
            sku: wanted.sku,
            properties: Some(parts),
            ..Model::default()
        })
    }
}

/// What the API server endpoint is once the API server balancer exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointSource {
    /// The DNS name (else the address) of this public IP.
    PublicIp(String),
    /// This name in the cluster's private DNS zone.
    PrivateName(String),
}

/// The load balancers an AzureCluster asks for and the public IPs of their frontends, in the
/// order they are created (IPs first: balancers name them).
#[derive(Debug, Clone, Default)]
pub struct ClusterLoadBalancers {
    /// The public IPs, each with whether the spec may bring it (a user-named API server IP that
    /// exists and is not ours is used as it is, never written or deleted, as CAPZ does).
    pub public_ips: Vec<(PublicIp, bool)>,
    /// The balancers.
    pub load_balancers: Vec<LoadBalancer>,
    /// Where `spec.controlPlaneEndpoint.host` comes from; `None` without an API server balancer.
    pub endpoint: Option<EndpointSource>,
    /// Whether a frontend sits in a subnet, which must exist first.
    pub needs_subnets: bool,
}

/// Why the spec's load balancers cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A name Azure would refuse.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// A port outside 1 to 65535.
    #[error("{field}: Invalid value: {value}: a TCP port is 1 to 65535")]
    Port {
        /// The field path.
        field: &'static str,
        /// What it holds.
        value: i32,
    },
}

impl Classify for PlanError {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

fn invalid(field: &'static str, value: &str) -> impl FnOnce(IdError) -> PlanError {
    let value = value.to_owned();
    move |source| ScopeError::Invalid { field, value, source }.into()
}

fn tcp_port(value: i32, field: &'static str) -> Result<u16, PlanError> {
    u16::try_from(value)
        .ok()
        .filter(|port| *port != 0)
        .ok_or(PlanError::Port { field, value })
}

impl ClusterLoadBalancers {
    /// The balancers of `scope`'s (defaulted) spec; `api_server_port` is the Cluster's
    /// `spec.clusterNetwork.apiServerPort`.
    ///
    /// # Errors
    /// A name or port in the spec that Azure would refuse.
    pub fn of(scope: &ClusterScope, features: Features, api_server_port: i32) -> Result<Self, PlanError> {
        let mut plan = Self::default();
        let network = scope.spec.network_spec.clone().unwrap_or_default();
        if let Some(lb) = &network.api_server_lb {
            let port = tcp_port(api_server_port, "Cluster spec.clusterNetwork.apiServerPort")?;
            let additional = network
                .additional_api_server_lb_ports
                .iter()
                .flatten()
                .map(|extra| {
                    tcp_port(extra.port, "spec.networkSpec.additionalAPIServerLBPorts[].port")
                        .map(|port| (extra.name.clone(), port))
                })
                .collect::<Result<Vec<_>, _>>()?;
            plan.add_api_server(scope, features, lb, port, &additional)?;
        }
        for (lb, role, default_name) in [
            (&network.node_outbound_lb, Role::NodeOutbound, scope.name.clone()),
            (
                &network.control_plane_outbound_lb,
                Role::ControlPlaneOutbound,
                names::control_plane_outbound_load_balancer(&scope.name),
            ),
        ] {
            if let Some(lb) = lb {
                plan.add_outbound(scope, lb, role, &default_name)?;
            }
        }
        Ok(plan)
    }

    fn add_api_server(
        &mut self,
        scope: &ClusterScope,
        features: Features,
        lb: &LoadBalancerSpec,
        port: u16,
        additional: &[(String, u16)],
    ) -> Result<(), PlanError> {
        let internal = lb.class.type_.as_deref() == Some(capz_rules::azurecluster::LB_INTERNAL);
        let name = lb.name.clone().unwrap_or_else(|| {
            if internal {
                names::internal_load_balancer(&scope.name)
            } else {
                names::public_load_balancer(&scope.name)
            }
        });
        let pool = pool_name(lb, || names::backend_pool(&name));
        let idle = idle_timeout(lb);
        let (private, public): (Vec<&FrontendIp>, Vec<&FrontendIp>) = lb
            .frontend_ips
            .iter()
            .flatten()
            .partition(|frontend| frontend.public_ip.is_none());
        let private = self.private_frontends(scope, &private)?;
        if internal {
            // As CAPZ names it, whether capz-rs or the user keeps the zone's record.
            let zone = scope.private_dns_zone_name();
            self.endpoint = Some(EndpointSource::PrivateName(names::private_api_server(&zone)));
            let balancer = LoadBalancer::new(scope, &name, Role::ApiServer, private, &pool, false)
                .map_err(invalid("spec.networkSpec.apiServerLB.name", &name))?;
            self.load_balancers
                .push(balancer.api_server(port, additional.to_vec()).idle_timeout(idle));
            return Ok(());
        }
        let frontends = self.public_frontends(scope, &public, Role::ApiServer, true)?;
        self.endpoint = public
            .first()
            .and_then(|frontend| frontend.public_ip.as_ref())
            .map(|ip| EndpointSource::PublicIp(ip.name.clone()));
        let balancer = LoadBalancer::new(scope, &name, Role::ApiServer, frontends, &pool, true)
            .map_err(invalid("spec.networkSpec.apiServerLB.name", &name))?;
        self.load_balancers
            .push(balancer.api_server(port, additional.to_vec()).idle_timeout(idle));
        // With APIServerILB, machines reach the API server on a private address through a
        // balancer of its own beside the public one, as in CAPZ.
        if features.api_server_ilb && !private.is_empty() {
            let internal_name = names::internal_api_server_load_balancer(&name);
            let balancer = LoadBalancer::new(
                scope,
                &internal_name,
                Role::ApiServerInternal,
                private,
                &names::internal_backend_pool(&pool),
                false,
            )
            .map_err(invalid("spec.networkSpec.apiServerLB.name", &internal_name))?;
            self.load_balancers
                .push(balancer.api_server(port, additional.to_vec()).idle_timeout(idle));
        }
        Ok(())
    }

    fn add_outbound(
        &mut self,
        scope: &ClusterScope,
        lb: &LoadBalancerSpec,
        role: Role,
        default_name: &str,
    ) -> Result<(), PlanError> {
        let name = lb.name.clone().unwrap_or_else(|| default_name.to_owned());
        let pool = pool_name(lb, || names::outbound_backend_pool(&name));
        let public: Vec<&FrontendIp> = lb
            .frontend_ips
            .iter()
            .flatten()
            .filter(|frontend| frontend.public_ip.is_some())
            .collect();
        let frontends = self.public_frontends(scope, &public, role, false)?;
        let balancer = LoadBalancer::new(scope, &name, role, frontends, &pool, true)
            .map_err(invalid("spec.networkSpec.nodeOutboundLB.name", &name))?;
        self.load_balancers.push(balancer.idle_timeout(idle_timeout(lb)));
        Ok(())
    }

    /// Frontends on the public IPs the spec names; the API server's IP gets a DNS label.
    fn public_frontends(
        &mut self,
        scope: &ClusterScope,
        frontends: &[&FrontendIp],
        role: Role,
        api_server: bool,
    ) -> Result<Vec<Frontend>, PlanError> {
        let mut out = Vec::new();
        for frontend in frontends {
            let Some(spec) = &frontend.public_ip else { continue };
            let label = api_server.then(|| match spec.dns_name.as_deref().filter(|d| !d.is_empty()) {
                Some(dns) => dns.split('.').next().unwrap_or(dns).to_owned(),
                None => names::api_server_dns_label(
                    &scope.name,
                    &scope.subscription.to_string(),
                    scope.resource_group.as_str(),
                    &spec.name,
                ),
            });
            let ip = PublicIp::new(scope, &spec.name, role, label.as_deref()).map_err(invalid(
                "spec.networkSpec.*.frontendIPs[].publicIP.name",
                &spec.name,
            ))?;
            out.push(Frontend {
                name: frontend.name.clone(),
                address: FrontendAddress::Public(ip.id().clone()),
            });
            // Only a user-named API server IP may be brought; the names we derive are ours.
            let brought = api_server && spec.name != names::api_server_ip(&scope.name);
            if !self.public_ips.iter().any(|(known, _)| known.id() == ip.id()) {
                self.public_ips.push((ip, brought));
            }
        }
        Ok(out)
    }

    /// Frontends on private addresses of the control-plane subnet.
    fn private_frontends(
        &mut self,
        scope: &ClusterScope,
        frontends: &[&FrontendIp],
    ) -> Result<Vec<Frontend>, PlanError> {
        if frontends.is_empty() {
            return Ok(Vec::new());
        }
        self.needs_subnets = true;
        let subnet = scope
            .subnets()
            .iter()
            .find(|subnet| subnet.class.role == SubnetRole::ControlPlane)
            .or_else(|| {
                scope
                    .subnets()
                    .iter()
                    .find(|subnet| subnet.class.role == SubnetRole::Cluster)
            })
            .map_or_else(
                || names::control_plane_subnet(&scope.name),
                |subnet| subnet.class.name.clone(),
            );
        let subnet = scope.subnet_id(&subnet)?;
        Ok(frontends
            .iter()
            .map(|frontend| Frontend {
                name: frontend.name.clone(),
                address: FrontendAddress::Private {
                    subnet: subnet.clone(),
                    address: frontend
                        .private_ip
                        .clone()
                        .unwrap_or_else(|| capz_rules::azurecluster::DEFAULT_INTERNAL_LB_IP.to_owned()),
                },
            })
            .collect())
    }
}

fn pool_name(lb: &LoadBalancerSpec, default: impl FnOnce() -> String) -> String {
    lb.backend_pool
        .as_ref()
        .and_then(|pool| pool.name.clone())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(default)
}

fn idle_timeout(lb: &LoadBalancerSpec) -> Option<u32> {
    lb.class
        .idle_timeout_in_minutes
        .and_then(|minutes| u32::try_from(minutes).ok())
}

#[cfg(test)]
mod tests {
    use capz_azure::models::network::InboundNatRule;
    use serde_json::json;

    use super::*;

    const SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000001";

    fn scope(spec: &serde_json::Value, features: Features) -> ClusterScope {
        let mut spec = spec.clone();
        spec["location"] = json!("westeurope");
        spec["subscriptionID"] = json!(SUBSCRIPTION);
        let cluster = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": spec,
        }))
        .unwrap();
        ClusterScope::new(&cluster, features, None).unwrap()
    }

    fn plan(spec: &serde_json::Value, features: Features) -> ClusterLoadBalancers {
        ClusterLoadBalancers::of(&scope(spec, features), features, 6443).unwrap()
    }

    fn body(lb: &LoadBalancer) -> serde_json::Value {
        serde_json::to_value(lb.desired(None).unwrap()).unwrap()
    }

    fn lb_id(name: &str) -> String {
        format!(
            "/subscriptions/{SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network/loadBalancers/{name}"
        )
    }

    #[test]
    fn a_public_api_server_balancer_has_capz_layout() {
        let plan = plan(&json!({}), Features::default());
        let names: Vec<String> = plan
            .load_balancers
            .iter()
            .map(|lb| lb.id().name().into_owned())
            .collect();
        assert_eq!(names, ["c1-public-lb"]);
        assert_eq!(
            plan.endpoint,
            Some(EndpointSource::PublicIp("pip-c1-apiserver".into()))
        );
        assert!(!plan.needs_subnets);
        let (ip, brought) = &plan.public_ips[0];
        assert!(!brought);
        let ip = serde_json::to_value(ip.desired(None).unwrap()).unwrap();
        let label = names::api_server_dns_label("c1", SUBSCRIPTION, "c1", "pip-c1-apiserver");
        assert_eq!(ip["properties"]["dnsSettings"]["domainNameLabel"], label);

        let lb = lb_id("c1-public-lb");
        let json = body(&plan.load_balancers[0]);
        assert_eq!(json["sku"]["name"], "Standard");
        assert_eq!(
            json["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "apiserver"
        );
        let properties = &json["properties"];
        assert_eq!(
            properties["frontendIPConfigurations"],
            json!([{"name": "c1-public-lb-frontEnd", "properties": {"publicIPAddress": {"id": format!("/subscriptions/{SUBSCRIPTION}/resourceGroups/c1/providers/Microsoft.Network/publicIPAddresses/pip-c1-apiserver")}}}])
        );
        assert_eq!(
            properties["backendAddressPools"],
            json!([{"name": "c1-public-lb-backendPool"}])
        );
        assert_eq!(
            properties["probes"],
            json!([{"name": "HTTPSProbe", "properties": {"protocol": "Https", "port": 6443, "requestPath": "/readyz", "intervalInSeconds": 15, "probeThreshold": 1}}])
        );
        assert_eq!(
            properties["loadBalancingRules"],
            json!([{"name": "LBRuleHTTPS", "properties": {
                "frontendIPConfiguration": {"id": format!("{lb}/frontendIPConfigurations/c1-public-lb-frontEnd")},
                "backendAddressPool": {"id": format!("{lb}/backendAddressPools/c1-public-lb-backendPool")},
                "probe": {"id": format!("{lb}/probes/HTTPSProbe")},
                "protocol": "Tcp", "frontendPort": 6443, "backendPort": 6443, "idleTimeoutInMinutes": 4,
                "enableFloatingIP": false, "disableOutboundSnat": true, "loadDistribution": "Default"
            }}])
        );
        assert_eq!(
            properties["outboundRules"],
            json!([{"name": "OutboundNATAllProtocols", "properties": {
                "frontendIPConfigurations": [{"id": format!("{lb}/frontendIPConfigurations/c1-public-lb-frontEnd")}],
                "backendAddressPool": {"id": format!("{lb}/backendAddressPools/c1-public-lb-backendPool")},
                "protocol": "All", "idleTimeoutInMinutes": 4
            }}])
        );
    }

    #[test]
    fn an_internal_balancer_sits_in_the_control_plane_subnet_and_has_no_outbound_rule() {
        let plan = plan(
            &json!({"networkSpec": {"apiServerLB": {"type": "Internal"}}}),
            Features::default(),
        );
        assert_eq!(
            plan.endpoint,
            Some(EndpointSource::PrivateName("apiserver.c1.capz.io".into()))
        );
        assert!(plan.needs_subnets);
        assert!(
            plan.public_ips.is_empty(),
            "no node outbound LB for a private cluster by default"
        );
        let json = body(&plan.load_balancers[0]);
        let frontend = &json["properties"]["frontendIPConfigurations"][0];
        assert_eq!(frontend["name"], "c1-internal-lb-frontEnd");
        assert_eq!(frontend["properties"]["privateIPAddress"], "10.0.0.100");
        assert_eq!(frontend["properties"]["privateIPAllocationMethod"], "Static");
        assert!(
            frontend["properties"]["subnet"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/virtualNetworks/c1-vnet/subnets/c1-controlplane-subnet")
        );
        assert_eq!(json["properties"]["outboundRules"], json!([]));
        assert_eq!(json["properties"]["loadBalancingRules"][0]["name"], "LBRuleHTTPS");
    }

    #[test]
    fn the_ilb_gate_adds_an_internal_balancer_beside_the_public_one() {
        let features = Features {
            api_server_ilb: true,
            ..Features::default()
        };
        let plan = plan(&json!({}), features);
        let names: Vec<String> = plan
            .load_balancers
            .iter()
            .map(|lb| lb.id().name().into_owned())
            .collect();
        assert_eq!(names, ["c1-public-lb", "c1-public-lb-internal"]);
        let public = body(&plan.load_balancers[0]);
        assert_eq!(
            public["properties"]["frontendIPConfigurations"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let internal = body(&plan.load_balancers[1]);
        assert_eq!(
            internal["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "apiserver-internal"
        );
        assert_eq!(
            internal["properties"]["frontendIPConfigurations"][0]["name"],
            "c1-public-lb-frontEnd-internal-ip"
        );
        assert_eq!(
            internal["properties"]["backendAddressPools"][0]["name"],
            "c1-public-lb-backendPool-internal"
        );
        assert!(plan.needs_subnets);
    }

    #[test]
    fn outbound_balancers_have_one_public_ip_per_frontend_and_an_outbound_rule_only() {
        let plan = plan(
            &json!({"networkSpec": {
                "apiServerLB": {"type": "Internal"},
                "nodeOutboundLB": {"frontendIPsCount": 2},
                "controlPlaneOutboundLB": {"frontendIPsCount": 1}
            }}),
            Features::default(),
        );
        let names: Vec<String> = plan
            .load_balancers
            .iter()
            .map(|lb| lb.id().name().into_owned())
            .collect();
        assert_eq!(names, ["c1-internal-lb", "c1", "c1-outbound-lb"]);
        let ips: Vec<String> = plan
            .public_ips
            .iter()
            .map(|(ip, _)| ip.id().name().into_owned())
            .collect();
        assert_eq!(
            ips,
            [
                "pip-c1-node-outbound-1",
                "pip-c1-node-outbound-2",
                "pip-c1-controlplane-outbound"
            ]
        );
        let node = body(&plan.load_balancers[1]);
        assert_eq!(
            node["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
            "nodeOutbound"
        );
        assert_eq!(
            node["properties"]["backendAddressPools"][0]["name"],
            "c1-outboundBackendPool"
        );
        assert_eq!(node["properties"]["probes"], json!([]));
        assert_eq!(node["properties"]["loadBalancingRules"], json!([]));
        let rule = &node["properties"]["outboundRules"][0]["properties"];
        assert_eq!(rule["frontendIPConfigurations"].as_array().unwrap().len(), 2);
        let ip = serde_json::to_value(plan.public_ips[0].0.desired(None).unwrap()).unwrap();
        assert!(ip["properties"].get("dnsSettings").is_none());
    }

    #[test]
    fn a_user_named_api_server_ip_keeps_its_dns_label_and_may_be_brought() {
        let plan = plan(
            &json!({"networkSpec": {"apiServerLB": {"frontendIPs": [{"name": "fe", "publicIP": {"name": "my-ip", "dnsName": "my-api.westeurope.cloudapp.azure.com"}}]}}}),
            Features::default(),
        );
        let (ip, brought) = &plan.public_ips[0];
        assert!(brought);
        let ip = serde_json::to_value(ip.desired(None).unwrap()).unwrap();
        assert_eq!(ip["properties"]["dnsSettings"]["domainNameLabel"], "my-api");
    }

    /// The balancer as Azure answers it: the body with read-only fields and defaults filled in.
    fn as_answered(lb: &LoadBalancer) -> Model {
        let mut json = body(lb);
        json["id"] = json!(lb.id().to_string());
        json["etag"] = json!("W/\"1\"");
        json["properties"]["provisioningState"] = json!("Succeeded");
        json["properties"]["probes"][0]["properties"]["numberOfProbes"] = json!(2);
        json["properties"]["loadBalancingRules"][0]["properties"]["enableTcpReset"] = json!(false);
        json["properties"]["backendAddressPools"][0]["properties"] =
            json!({"provisioningState": "Succeeded"});
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_balancer_as_wanted_is_not_written_and_foreign_parts_are_kept() {
        let scope = scope(&json!({}), Features::default());
        let plan = ClusterLoadBalancers::of(&scope, Features::default(), 6443).unwrap();
        let lb = &plan.load_balancers[0];
        let mut existing = as_answered(lb);
        assert_eq!(lb.desired(Some(&existing)), None);

        // A machine's NAT rule is kept while a changed port is written back.
        let nat: InboundNatRule =
            serde_json::from_value(json!({"name": "ssh-0", "properties": {"frontendPort": 22}})).unwrap();
        let properties = existing.properties.as_mut().unwrap();
        properties.inbound_nat_rules = Some(vec![nat]);
        properties.load_balancing_rules.as_mut().unwrap()[0]
            .properties
            .as_mut()
            .unwrap()
            .frontend_port = Some(443);
        let written = serde_json::to_value(lb.desired(Some(&existing)).unwrap()).unwrap();
        assert_eq!(written["properties"]["inboundNatRules"][0]["name"], "ssh-0");
        assert_eq!(
            written["properties"]["loadBalancingRules"][0]["properties"]["frontendPort"],
            6443
        );
        assert!(written["properties"].get("provisioningState").is_none());
        assert!(written.get("id").is_none());

        // Lost tags are written back.
        let mut untagged = as_answered(lb);
        untagged.tags = None;
        assert!(lb.desired(Some(&untagged)).is_some());
    }

    #[test]
    fn a_port_out_of_range_is_invalid_input() {
        let scope = scope(&json!({}), Features::default());
        let error = ClusterLoadBalancers::of(&scope, Features::default(), 70000).unwrap_err();
        assert_eq!(error.category(), Category::InvalidInput);
        assert!(error.to_string().contains("apiServerPort"), "{error}");
    }
}
