//! Load balancers: the API server's (public or internal) and the outbound ones of nodes and
//! control plane, with their frontends, backend pools, rules, probes and NAT rules.

use serde::{Deserialize, Serialize};

use super::{API_VERSION, IpAllocationMethod, IpVersion};
use crate::id::{Location, ResourceId};
use crate::models::{ChildResource, ProvisioningState, Sku, SubResource, Tags};

/// A load balancer (`Microsoft.Network/loadBalancers`). Its parts live in its body and are
/// written with it; they refer to each other by the ids they will have
/// (`{balancer}/frontendIPConfigurations/{name}`, …), which a new balancer can name in advance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancer {
    /// The balancer's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The balancer's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Network/loadBalancers` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Changes with every write (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The balancer's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The balancer's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The balancer's SKU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<Sku<LoadBalancerSkuName>>,
    /// The balancer's parts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<LoadBalancerProperties>,
}

/// The parts of a load balancer. A PUT replaces each list with what it carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerProperties {
    /// The addresses the balancer receives on.
    #[serde(rename = "frontendIPConfigurations", skip_serializing_if = "Option::is_none")]
    pub frontend_ip_configurations: Option<Vec<FrontendIpConfiguration>>,
    /// The pools of backends; interfaces join a pool from their IP configurations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_address_pools: Option<Vec<BackendAddressPool>>,
    /// Which frontend port goes to which backend port of a pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing_rules: Option<Vec<LoadBalancingRule>>,
    /// Health checks deciding which backends get traffic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<Probe>>,
    /// How a pool's backends reach the internet through the frontends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_rules: Option<Vec<OutboundRule>>,
    /// Frontend ports forwarded to one backend each, such as SSH to a control-plane machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbound_nat_rules: Option<Vec<InboundNatRule>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// A GUID that stays with the balancer for its life (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_guid: Option<String>,
}

/// A frontend (`…/loadBalancers/frontendIPConfigurations`).
pub type FrontendIpConfiguration = ChildResource<FrontendIpConfigurationProperties>;

/// The address of a frontend: a public IP, or a private address in a subnet for an internal
/// balancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontendIpConfigurationProperties {
    /// The public IP of a public frontend.
    #[serde(rename = "publicIPAddress", skip_serializing_if = "Option::is_none")]
    pub public_ip_address: Option<SubResource>,
    /// The subnet of an internal frontend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubResource>,
    /// The private address of an internal frontend: asked for with `Static`, assigned with
    /// `Dynamic`.
    #[serde(rename = "privateIPAddress", skip_serializing_if = "Option::is_none")]
    pub private_ip_address: Option<String>,
    /// How the private address is chosen.
    #[serde(rename = "privateIPAllocationMethod", skip_serializing_if = "Option::is_none")]
    pub private_ip_allocation_method: Option<IpAllocationMethod>,
    /// The version of the private address.
    #[serde(rename = "privateIPAddressVersion", skip_serializing_if = "Option::is_none")]
    pub private_ip_address_version: Option<IpVersion>,
    /// The balancing rules using the frontend (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing_rules: Option<Vec<SubResource>>,
    /// The inbound NAT rules using the frontend (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbound_nat_rules: Option<Vec<SubResource>>,
    /// The outbound rules using the frontend (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_rules: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A backend pool (`…/loadBalancers/backendAddressPools`).
pub type BackendAddressPool = ChildResource<BackendAddressPoolProperties>;

/// What a backend pool holds. Members join from their side (an interface's IP configuration
/// names the pool), so everything here is read-only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendAddressPoolProperties {
    /// The interface IP configurations in the pool (read-only).
    #[serde(rename = "backendIPConfigurations", skip_serializing_if = "Option::is_none")]
    pub backend_ip_configurations: Option<Vec<SubResource>>,
    /// The balancing rules sending to the pool (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing_rules: Option<Vec<SubResource>>,
    /// The outbound rules of the pool (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outbound_rules: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A balancing rule (`…/loadBalancers/loadBalancingRules`).
pub type LoadBalancingRule = ChildResource<LoadBalancingRuleProperties>;

/// Which frontend port a balancing rule spreads over which backend port of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancingRuleProperties {
    /// The frontend receiving the traffic.
    #[serde(rename = "frontendIPConfiguration", skip_serializing_if = "Option::is_none")]
    pub frontend_ip_configuration: Option<SubResource>,
    /// The pool the traffic is spread over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_address_pool: Option<SubResource>,
    /// The probe deciding which backends are healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<SubResource>,
    /// The protocol balanced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<TransportProtocol>,
    /// The port received on; 0 with protocol `All` for every port of an internal balancer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_port: Option<u16>,
    /// The port sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_port: Option<u16>,
    /// Minutes an idle TCP flow is kept, 4 to 30.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<u32>,
    /// Whether backends see the frontend's address as destination (direct server return).
    #[serde(rename = "enableFloatingIP", skip_serializing_if = "Option::is_none")]
    pub enable_floating_ip: Option<bool>,
    /// Whether idle flows are ended with a TCP reset instead of silently.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_tcp_reset: Option<bool>,
    /// Whether the rule's frontend is kept out of the backends' outbound traffic; needed when
    /// outbound rules give the pool its outbound addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable_outbound_snat: Option<bool>,
    /// How flows stick to a backend.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_distribution: Option<LoadDistribution>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// A health probe (`…/loadBalancers/probes`).
pub type Probe = ChildResource<ProbeProperties>;

/// How a probe checks a backend.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeProperties {
    /// How the backend is asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProbeProtocol>,
    /// The port asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The path asked, for HTTP and HTTPS probes (such as `/readyz`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_path: Option<String>,
    /// Seconds between two checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_in_seconds: Option<u32>,
    /// Unanswered checks before a backend is taken out of rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_of_probes: Option<u32>,
    /// Checks in a row that must agree before a backend is put in or taken out of rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_threshold: Option<u32>,
    /// The balancing rules using the probe (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancing_rules: Option<Vec<SubResource>>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// An outbound rule (`…/loadBalancers/outboundRules`).
pub type OutboundRule = ChildResource<OutboundRuleProperties>;

/// Which frontends a pool's backends reach the internet from, with how many ports each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboundRuleProperties {
    /// The frontends whose addresses outbound traffic leaves from.
    #[serde(rename = "frontendIPConfigurations", skip_serializing_if = "Option::is_none")]
    pub frontend_ip_configurations: Option<Vec<SubResource>>,
    /// The pool whose backends the rule serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_address_pool: Option<SubResource>,
    /// The protocols translated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<TransportProtocol>,
    /// SNAT ports per backend; 0 lets Azure divide them by pool size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_outbound_ports: Option<u32>,
    /// Minutes an idle flow is kept, 4 to 120.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<u32>,
    /// Whether idle flows are ended with a TCP reset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_tcp_reset: Option<bool>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// An inbound NAT rule (`…/loadBalancers/inboundNatRules`).
pub type InboundNatRule = ChildResource<InboundNatRuleProperties>;

/// A frontend port forwarded to one backend. The backend joins from its side (an interface's IP
/// configuration names the rule).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboundNatRuleProperties {
    /// The frontend receiving the traffic.
    #[serde(rename = "frontendIPConfiguration", skip_serializing_if = "Option::is_none")]
    pub frontend_ip_configuration: Option<SubResource>,
    /// The protocol forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<TransportProtocol>,
    /// The port received on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_port: Option<u16>,
    /// The backend's port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_port: Option<u16>,
    /// Minutes an idle TCP flow is kept, 4 to 30.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_in_minutes: Option<u32>,
    /// Whether the backend sees the frontend's address as destination.
    #[serde(rename = "enableFloatingIP", skip_serializing_if = "Option::is_none")]
    pub enable_floating_ip: Option<bool>,
    /// Whether idle flows are ended with a TCP reset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_tcp_reset: Option<bool>,
    /// The interface IP configuration the rule forwards to (read-only).
    #[serde(rename = "backendIPConfiguration", skip_serializing_if = "Option::is_none")]
    pub backend_ip_configuration: Option<SubResource>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

lenient_enum! {
    /// The SKU of a load balancer.
    pub enum LoadBalancerSkuName {
        /// Zone-aware, secure by default; what clusters use.
        Standard = "Standard",
        /// Being retired by Azure.
        Basic = "Basic",
    }
}

lenient_enum! {
    /// The protocol of a balancing, outbound or NAT rule.
    pub enum TransportProtocol {
        /// TCP.
        Tcp = "Tcp",
        /// UDP.
        Udp = "Udp",
        /// Both.
        All = "All",
    }
}

lenient_enum! {
    /// How a probe asks a backend.
    pub enum ProbeProtocol {
        /// A TCP connection.
        Tcp = "Tcp",
        /// An HTTP GET of the request path, answered 200.
        Http = "Http",
        /// An HTTPS GET of the request path, answered 200.
        Https = "Https",
    }
}

lenient_enum! {
    /// How flows stick to a backend.
    pub enum LoadDistribution {
        /// By source and destination address, port and protocol.
        Default = "Default",
        /// By source and destination address.
        SourceIp = "SourceIP",
        /// By source and destination address and protocol.
        SourceIpProtocol = "SourceIPProtocol",
    }
}

arm_model!(
    LoadBalancer,
    "Microsoft.Network/loadBalancers",
    API_VERSION,
    tagged
);

arm_model!(
    InboundNatRule,
    "Microsoft.Network/loadBalancers/inboundNatRules",
    API_VERSION
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{
        BackendAddressPool, FrontendIpConfiguration, FrontendIpConfigurationProperties, LoadBalancer,
        LoadBalancerProperties, LoadBalancerSkuName, LoadBalancingRule, LoadBalancingRuleProperties,
        LoadDistribution, Probe, ProbeProperties, ProbeProtocol, TransportProtocol,
    };
    use crate::models::{ProvisioningState, Sku, SubResource};

    const LB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/api";

    fn part(kind: &str, name: &str) -> SubResource {
        SubResource {
            id: format!("{LB}/{kind}/{name}").parse().unwrap(),
        }
    }

    fn answer() -> serde_json::Value {
        json!({
            "name": "api",
            "id": LB,
            "etag": "W/\"9952656b-2af0-4d25-9dd5-e4d2f13d83ef\"",
            "type": "Microsoft.Network/loadBalancers",
            "location": "westus2",
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": "1a0614a7-6452-4203-9328-fdc348015426",
                "frontendIPConfigurations": [{
                    "name": "api-frontend",
                    "id": format!("{LB}/frontendIPConfigurations/api-frontend"),
                    "etag": "W/\"9952656b-2af0-4d25-9dd5-e4d2f13d83ef\"",
                    "type": "Microsoft.Network/loadBalancers/frontendIPConfigurations",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "privateIPAllocationMethod": "Dynamic",
                        "publicIPAddress": {"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/api-pip"},
                        "loadBalancingRules": [{"id": format!("{LB}/loadBalancingRules/apiserver")}],
                        "inboundNatPools": []
                    }
                }],
                "backendAddressPools": [{
                    "name": "api-backend",
                    "id": format!("{LB}/backendAddressPools/api-backend"),
                    "properties": {
                        "provisioningState": "Succeeded",
                        "backendIPConfigurations": [{"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/cp-0-nic/ipConfigurations/pipConfig"}],
                        "loadBalancingRules": [{"id": format!("{LB}/loadBalancingRules/apiserver")}],
                        "loadBalancerBackendAddresses": []
                    }
                }],
                "loadBalancingRules": [{
                    "name": "apiserver",
                    "id": format!("{LB}/loadBalancingRules/apiserver"),
                    "properties": {
                        "provisioningState": "Succeeded",
                        "frontendIPConfiguration": {"id": format!("{LB}/frontendIPConfigurations/api-frontend")},
                        "backendAddressPool": {"id": format!("{LB}/backendAddressPools/api-backend")},
                        "backendAddressPools": [{"id": format!("{LB}/backendAddressPools/api-backend")}],
                        "probe": {"id": format!("{LB}/probes/api-probe")},
                        "protocol": "Tcp",
                        "frontendPort": 6443,
                        "backendPort": 6443,
                        "idleTimeoutInMinutes": 4,
                        "enableFloatingIP": false,
                        "enableTcpReset": false,
                        "disableOutboundSnat": true,
                        "loadDistribution": "SourceIPProtocol"
                    }
                }],
                "probes": [{
                    "name": "api-probe",
                    "id": format!("{LB}/probes/api-probe"),
                    "properties": {
                        "provisioningState": "Succeeded",
                        "protocol": "Https",
                        "port": 6443,
                        "requestPath": "/readyz",
                        "intervalInSeconds": 15,
                        "numberOfProbes": 4,
                        "probeThreshold": 1,
                        "noHealthyBackendsBehavior": "AllProbedDown"
                    }
                }],
                "outboundRules": [{
                    "name": "OutboundNATAllProtocols",
                    "id": format!("{LB}/outboundRules/OutboundNATAllProtocols"),
                    "properties": {
                        "provisioningState": "Succeeded",
                        "allocatedOutboundPorts": 1024,
                        "protocol": "All",
                        "enableTcpReset": true,
                        "idleTimeoutInMinutes": 4,
                        "backendAddressPool": {"id": format!("{LB}/backendAddressPools/api-backend")},
                        "frontendIPConfigurations": [{"id": format!("{LB}/frontendIPConfigurations/api-frontend")}]
                    }
                }],
                "inboundNatRules": [{
                    "name": "ssh-cp-0",
                    "id": format!("{LB}/inboundNatRules/ssh-cp-0"),
                    "properties": {
                        "provisioningState": "Succeeded",
                        "frontendIPConfiguration": {"id": format!("{LB}/frontendIPConfigurations/api-frontend")},
                        "frontendPort": 22,
                        "backendPort": 22,
                        "enableFloatingIP": false,
                        "idleTimeoutInMinutes": 4,
                        "protocol": "Tcp",
                        "enableDestinationServiceEndpoint": false,
                        "enableTcpReset": false,
                        "allowBackendPortConflict": false,
                        "backendIPConfiguration": {"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/cp-0-nic/ipConfigurations/pipConfig"}
                    }
                }],
                "inboundNatPools": []
            },
            "sku": {"name": "Gateway", "tier": "Regional"}
        })
    }

    #[test]
    fn an_answer_is_read_with_its_parts() {
        let answer = answer();
        let balancer: LoadBalancer = serde_json::from_value(answer.clone()).unwrap();
        crate::models::tests::assert_written_back(&answer, &balancer);
        assert_eq!(
            balancer.sku.unwrap().name,
            Some(LoadBalancerSkuName::Other("Gateway".to_owned()))
        );
        let properties = balancer.properties.unwrap();
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        let frontend = properties.frontend_ip_configurations.unwrap()[0]
            .properties
            .clone()
            .unwrap();
        assert_eq!(frontend.public_ip_address.unwrap().id.name(), "api-pip");
        let pool = properties.backend_address_pools.unwrap()[0]
            .properties
            .clone()
            .unwrap();
        assert_eq!(pool.backend_ip_configurations.unwrap()[0].id.name(), "pipConfig");
        let rule = properties.load_balancing_rules.unwrap()[0]
            .properties
            .clone()
            .unwrap();
        assert_eq!(
            (
                rule.frontend_port,
                rule.disable_outbound_snat,
                rule.load_distribution
            ),
            (Some(6443), Some(true), Some(LoadDistribution::SourceIpProtocol))
        );
        let probe = properties.probes.unwrap()[0].properties.clone().unwrap();
        assert_eq!(probe.protocol, Some(ProbeProtocol::Https));
        assert_eq!(probe.request_path.as_deref(), Some("/readyz"));
        let frontend = part("frontendIPConfigurations", "api-frontend");
        assert_eq!(rule.frontend_ip_configuration, Some(frontend.clone()));
        assert_eq!(rule.enable_floating_ip, Some(false));
        let outbound = properties.outbound_rules.unwrap()[0].properties.clone().unwrap();
        assert_eq!(outbound.frontend_ip_configurations, Some(vec![frontend]));
        assert_eq!(
            (outbound.protocol, outbound.allocated_outbound_ports),
            (Some(TransportProtocol::All), Some(1024))
        );
        let nat = properties.inbound_nat_rules.unwrap()[0]
            .properties
            .clone()
            .unwrap();
        assert_eq!(nat.backend_ip_configuration.unwrap().id.name(), "pipConfig");
    }

    #[test]
    fn a_desired_balancer_sends_only_what_it_sets() {
        let desired = LoadBalancer {
            location: Some("westus2".parse().unwrap()),
            sku: Some(Sku {
                name: Some(LoadBalancerSkuName::Standard),
                tier: None,
            }),
            properties: Some(LoadBalancerProperties {
                frontend_ip_configurations: Some(vec![FrontendIpConfiguration {
                    name: Some("api-frontend".to_owned()),
                    properties: Some(FrontendIpConfigurationProperties {
                        public_ip_address: Some(SubResource { id: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/api-pip"
                                .parse()
                                .unwrap() }),
                        ..FrontendIpConfigurationProperties::default()
                    }),
                    ..FrontendIpConfiguration::default()
                }]),
                backend_address_pools: Some(vec![BackendAddressPool {
                    name: Some("api-backend".to_owned()),
                    ..BackendAddressPool::default()
                }]),
                load_balancing_rules: Some(vec![LoadBalancingRule {
                    name: Some("apiserver".to_owned()),
                    properties: Some(LoadBalancingRuleProperties {
                        frontend_ip_configuration: Some(part("frontendIPConfigurations", "api-frontend")),
                        backend_address_pool: Some(part("backendAddressPools", "api-backend")),
                        probe: Some(part("probes", "api-probe")),
                        protocol: Some(TransportProtocol::Tcp),
                        frontend_port: Some(6443),
                        backend_port: Some(6443),
                        enable_floating_ip: Some(false),
                        ..LoadBalancingRuleProperties::default()
                    }),
                    ..LoadBalancingRule::default()
                }]),
                probes: Some(vec![Probe {
                    name: Some("api-probe".to_owned()),
                    properties: Some(ProbeProperties {
                        protocol: Some(ProbeProtocol::Https),
                        port: Some(6443),
                        request_path: Some("/readyz".to_owned()),
                        ..ProbeProperties::default()
                    }),
                    ..Probe::default()
                }]),
                ..LoadBalancerProperties::default()
            }),
            ..LoadBalancer::default()
        };
        assert_eq!(
            serde_json::to_value(&desired).unwrap(),
            json!({
                "location": "westus2",
                "sku": {"name": "Standard"},
                "properties": {
                    "frontendIPConfigurations": [{"name": "api-frontend", "properties": {
                        "publicIPAddress": {"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/api-pip"}
                    }}],
                    "backendAddressPools": [{"name": "api-backend"}],
                    "loadBalancingRules": [{"name": "apiserver", "properties": {
                        "frontendIPConfiguration": {"id": format!("{LB}/frontendIPConfigurations/api-frontend")},
                        "backendAddressPool": {"id": format!("{LB}/backendAddressPools/api-backend")},
                        "probe": {"id": format!("{LB}/probes/api-probe")},
                        "protocol": "Tcp",
                        "frontendPort": 6443,
                        "backendPort": 6443,
                        "enableFloatingIP": false
                    }}],
                    "probes": [{"name": "api-probe", "properties": {
                        "protocol": "Https", "port": 6443, "requestPath": "/readyz"
                    }}]
                }
            })
        );
    }
}
