//! The typed models against the emulator: each resource of a self-managed cluster is written from
//! its model with the model's api-version, its operation followed to the end, and read back as the
//! model, in the order a cluster is built: group, network, security group, route table, NAT
//! gateway, load balancer, interfaces, identity, availability set, disk, machines, role
//! assignments.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use arm_emulator::Config;
use capz_azure::models::compute::{
    AssignedIdentity, AvailabilitySet, AvailabilitySetProperties, AvailabilitySetSkuName, BillingProfile,
    BootDiagnostics, CachingType, CreationData, DataDisk, DeleteOption, DiagnosticsProfile, DiffDiskOption,
    DiffDiskPlacement, DiffDiskSettings, Disk, DiskCreateOption, DiskProperties, DiskState, EvictionPolicy,
    HardwareProfile, IdentityType, ImageReference, LinuxConfiguration, ManagedDiskParameters,
    ManagedServiceIdentity, NetworkInterfaceReference, NetworkInterfaceReferenceProperties, NetworkProfile,
    OrchestrationMode, OsDisk, OsProfile, Priority, ScaleSetInstance, ScaleSetIpConfiguration,
    ScaleSetIpConfigurationProperties, ScaleSetNetworkInterface, ScaleSetNetworkInterfaceProperties,
    ScaleSetNetworkProfile, ScaleSetOsProfile, ScaleSetProperties, ScaleSetSku, ScaleSetVmProfile,
    SecurityProfile, SshConfiguration, SshPublicKey, StorageAccountType, StorageProfile, UpgradeMode,
    UpgradePolicy, VirtualMachine, VirtualMachineProperties, VirtualMachineScaleSet,
};
use capz_azure::models::network::{
    AddressSpace, BackendAddressPool, FrontendIpConfiguration, FrontendIpConfigurationProperties,
    InboundNatRule, InboundNatRuleProperties, IpAllocationMethod, IpConfiguration, IpConfigurationProperties,
    LoadBalancer, LoadBalancerProperties, LoadBalancerSkuName, LoadBalancingRule,
    LoadBalancingRuleProperties, NatGateway, NatGatewayProperties, NatGatewaySkuName, NetworkInterface,
    NetworkInterfaceProperties, NetworkSecurityGroup, NetworkSecurityGroupProperties, NextHopType,
    OutboundRule, OutboundRuleProperties, Probe, ProbeProperties, ProbeProtocol, PublicIpAddress,
    PublicIpAddressDnsSettings, PublicIpAddressProperties, PublicIpSkuName, Route, RouteProperties,
    RouteTable, RouteTableProperties, SecurityRule, SecurityRuleAccess, SecurityRuleDirection,
    SecurityRuleProperties, SecurityRuleProtocol, Subnet, SubnetProperties, TransportProtocol,
    VirtualNetwork, VirtualNetworkProperties,
};
use capz_azure::models::{
    ArmModel, ChildResource, PrincipalType, ProvisioningState, ResourceGroup, RoleAssignment,
    RoleAssignmentProperties, Secret, Sku, SubResource, Tags, UserAssignedIdentity,
};
use capz_azure::{ArmClient, OperationToken, Outcome, PollOutcome, ResourceId};
use common::{LOCATION, SUBSCRIPTION, TestResult, start};

const CLUSTER_TAG: &str = "sigs.k8s.io_cluster-api-provider-azure_cluster_capz";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";
const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
const COMMUNITY_IMAGE: &str = "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.1";

/// Writes `body` at `id` with the model's api-version, polls its operation (if any) to the end as
/// reconciles would, and reads the resource back as the model.
async fn create<M: ArmModel>(client: &ArmClient, id: &ResourceId, body: &M) -> TestResult<M> {
    if let Outcome::InProgress(progress) = client.put::<M, M>(id, &M::API_VERSION, body).await? {
        finish::<M>(client, progress.token).await?;
    }
    Ok(client.get(id, &M::API_VERSION).await?)
}

/// Polls an operation, one request at a time, until it ends.
async fn finish<M: ArmModel>(client: &ArmClient, mut token: OperationToken) -> TestResult {
    for _ in 0..100 {
        match client.poll::<M>(&token).await? {
            PollOutcome::InProgress(progress) => {
                token = progress.token;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            PollOutcome::Succeeded(_) => return Ok(()),
            PollOutcome::Failed(err) => return Err(err.into()),
        }
    }
    Err("the operation did not finish".into())
}

fn group_id(name: &str) -> TestResult<ResourceId> {
    Ok(ResourceId::resource_group(SUBSCRIPTION.parse()?, name.parse()?))
}

fn network_id(group: &ResourceId, resource_type: &str, name: &str) -> TestResult<ResourceId> {
    Ok(group.provider("Microsoft.Network", resource_type, name)?)
}

fn compute_id(group: &ResourceId, resource_type: &str, name: &str) -> TestResult<ResourceId> {
    Ok(group.provider("Microsoft.Compute", resource_type, name)?)
}

fn owned() -> Tags {
    Tags::from([(CLUSTER_TAG.to_owned(), "owned".to_owned())])
}

fn here() -> TestResult<Option<capz_azure::Location>> {
    Ok(Some(LOCATION.parse()?))
}

fn succeeded(state: Option<&ProvisioningState>) -> bool {
    state == Some(&ProvisioningState::Succeeded)
}

/// A resource group named `name`, created.
async fn group(client: &ArmClient, name: &str) -> TestResult<ResourceId> {
    let id = group_id(name)?;
    let body = ResourceGroup {
        location: here()?,
        tags: Some(owned()),
        ..ResourceGroup::default()
    };
    create(client, &id, &body).await?;
    Ok(id)
}

fn subnet(name: &str, prefix: &str, attach: SubnetProperties) -> Subnet {
    Subnet {
        name: Some(name.to_owned()),
        properties: Some(SubnetProperties {
            address_prefix: Some(prefix.to_owned()),
            ..attach
        }),
        ..Subnet::default()
    }
}

/// The virtual network `vnet` (10.0.0.0/16) with `subnets`, created.
async fn network(client: &ArmClient, group: &ResourceId, subnets: Vec<Subnet>) -> TestResult<VirtualNetwork> {
    let body = VirtualNetwork {
        location: here()?,
        tags: Some(owned()),
        properties: Some(VirtualNetworkProperties {
            address_space: Some(AddressSpace {
                address_prefixes: Some(vec!["10.0.0.0/16".to_owned()]),
            }),
            subnets: Some(subnets),
            ..VirtualNetworkProperties::default()
        }),
        ..VirtualNetwork::default()
    };
    create(client, &network_id(group, "virtualNetworks", "vnet")?, &body).await
}

/// A standard, static public IP, created.
async fn public_ip(client: &ArmClient, id: &ResourceId, label: Option<&str>) -> TestResult<PublicIpAddress> {
    let body = PublicIpAddress {
        location: here()?,
        sku: Some(Sku {
            name: Some(PublicIpSkuName::Standard),
            tier: None,
        }),
        properties: Some(PublicIpAddressProperties {
            public_ip_allocation_method: Some(IpAllocationMethod::Static),
            dns_settings: label.map(|label| PublicIpAddressDnsSettings {
                domain_name_label: Some(label.to_owned()),
                fqdn: None,
            }),
            ..PublicIpAddressProperties::default()
        }),
        ..PublicIpAddress::default()
    };
    create(client, id, &body).await
}

#[tokio::test]
async fn a_resource_group_keeps_its_tags_and_reports_its_state() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let id = group(&client, "capz").await?;
    let read: ResourceGroup = client.get(&id, &ResourceGroup::API_VERSION).await?;
    assert_eq!(read.id.as_ref(), Some(&id));
    assert_eq!(read.name.as_deref(), Some("capz"));
    assert_eq!(read.resource_type.as_deref(), Some(ResourceGroup::RESOURCE_TYPE));
    assert_eq!(read.location, here()?);
    assert_eq!(read.tags, Some(owned()));
    assert!(succeeded(
        read.properties
            .as_ref()
            .and_then(|properties| properties.provisioning_state.as_ref())
    ));
    let subscription = ResourceId::subscription_scope(SUBSCRIPTION.parse()?);
    let listed: Vec<ResourceGroup> = client
        .list(
            &subscription,
            ResourceGroup::RESOURCE_TYPE,
            &ResourceGroup::API_VERSION,
        )
        .await?;
    assert_eq!(listed, [read]);
    Ok(())
}

fn rule(name: &str, port: &str, priority: u32) -> SecurityRule {
    SecurityRule {
        name: Some(name.to_owned()),
        properties: Some(SecurityRuleProperties {
            description: Some(format!("{name} for the cluster")),
            protocol: Some(SecurityRuleProtocol::Tcp),
            source_port_range: Some("*".to_owned()),
            destination_port_range: Some(port.to_owned()),
            source_address_prefix: Some("*".to_owned()),
            destination_address_prefix: Some("*".to_owned()),
            access: Some(SecurityRuleAccess::Allow),
            priority: Some(priority),
            direction: Some(SecurityRuleDirection::Inbound),
            ..SecurityRuleProperties::default()
        }),
        ..SecurityRule::default()
    }
}

/// A security group with two rules, created and checked.
async fn security_group(client: &ArmClient, group: &ResourceId) -> TestResult<ResourceId> {
    let nsg_id = network_id(group, "networkSecurityGroups", "capz-node-nsg")?;
    let rules = vec![
        rule("allow_ssh", "22", 2200),
        rule("allow_apiserver", "6443", 2201),
    ];
    let nsg = NetworkSecurityGroup {
        location: here()?,
        tags: Some(owned()),
        properties: Some(NetworkSecurityGroupProperties {
            security_rules: Some(rules.clone()),
            ..NetworkSecurityGroupProperties::default()
        }),
        ..NetworkSecurityGroup::default()
    };
    let read = create(client, &nsg_id, &nsg).await?;
    assert_eq!(read.id.as_ref(), Some(&nsg_id));
    assert!(read.etag.is_some());
    let properties = read.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    let read_rules = properties.security_rules.ok_or("no rules")?;
    for (sent, read) in rules.iter().zip(&read_rules) {
        let (sent, read) = (sent.properties.clone(), read.properties.clone());
        let (sent, read) = (sent.ok_or("no rule")?, read.ok_or("no rule")?);
        assert!(succeeded(read.provisioning_state.as_ref()));
        assert_eq!(
            (
                &read.protocol,
                &read.destination_port_range,
                read.priority,
                &read.direction
            ),
            (
                &sent.protocol,
                &sent.destination_port_range,
                sent.priority,
                &sent.direction
            )
        );
        assert_eq!(
            (&read.access, &read.description),
            (&sent.access, &sent.description)
        );
    }
    assert_eq!(
        read_rules[0].id,
        Some(nsg_id.child("securityRules", "allow_ssh")?)
    );
    assert_eq!(
        properties.default_security_rules.map(|rules| rules.len()),
        Some(6)
    );
    Ok(nsg_id)
}

/// A route table with a route, created and checked.
async fn route_table(client: &ArmClient, group: &ResourceId) -> TestResult<ResourceId> {
    let table_id = network_id(group, "routeTables", "capz-node-routetable")?;
    let route = RouteProperties {
        address_prefix: Some("192.168.0.0/24".to_owned()),
        next_hop_type: Some(NextHopType::VirtualAppliance),
        next_hop_ip_address: Some("10.0.1.4".to_owned()),
        provisioning_state: None,
    };
    let table = RouteTable {
        location: here()?,
        properties: Some(RouteTableProperties {
            routes: Some(vec![Route {
                name: Some("pods-node-0".to_owned()),
                properties: Some(route.clone()),
                ..Route::default()
            }]),
            disable_bgp_route_propagation: Some(true),
            ..RouteTableProperties::default()
        }),
        ..RouteTable::default()
    };
    let read = create(client, &table_id, &table)
        .await?
        .properties
        .ok_or("no properties")?;
    assert_eq!(read.disable_bgp_route_propagation, Some(true));
    let read_route = read
        .routes
        .ok_or("no routes")?
        .remove(0)
        .properties
        .ok_or("no route")?;
    assert!(succeeded(read_route.provisioning_state.as_ref()));
    assert_eq!(
        RouteProperties {
            provisioning_state: None,
            ..read_route
        },
        route
    );
    Ok(table_id)
}

/// A NAT gateway with its public IP, created and checked.
async fn nat_gateway(client: &ArmClient, group: &ResourceId) -> TestResult<ResourceId> {
    let pip_id = network_id(group, "publicIPAddresses", "capz-node-natgw-pip")?;
    public_ip(client, &pip_id, None).await?;
    let gateway_id = network_id(group, "natGateways", "capz-node-natgw")?;
    let gateway = NatGateway {
        location: here()?,
        sku: Some(Sku {
            name: Some(NatGatewaySkuName::Standard),
            tier: None,
        }),
        properties: Some(NatGatewayProperties {
            idle_timeout_in_minutes: Some(10),
            public_ip_addresses: Some(vec![SubResource::from(pip_id.clone())]),
            ..NatGatewayProperties::default()
        }),
        ..NatGateway::default()
    };
    let read = create(client, &gateway_id, &gateway).await?;
    assert_eq!(
        read.sku.and_then(|sku| sku.name),
        Some(NatGatewaySkuName::Standard)
    );
    let read = read.properties.ok_or("no properties")?;
    assert!(succeeded(read.provisioning_state.as_ref()));
    assert_eq!(read.idle_timeout_in_minutes, Some(10));
    assert_eq!(
        read.public_ip_addresses,
        Some(vec![SubResource::from(pip_id.clone())])
    );
    let pip: PublicIpAddress = client.get(&pip_id, &PublicIpAddress::API_VERSION).await?;
    let pip = pip.properties.ok_or("no properties")?;
    assert_eq!(pip.nat_gateway, Some(SubResource::from(gateway_id.clone())));
    assert!(pip.ip_address.is_some());
    Ok(gateway_id)
}

#[tokio::test]
async fn a_network_with_its_security_group_route_table_and_nat_gateway() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let group = group(&client, "capz").await?;
    let nsg = security_group(&client, &group).await?;
    let table = route_table(&client, &group).await?;
    let gateway = nat_gateway(&client, &group).await?;
    let node_attachments = SubnetProperties {
        network_security_group: Some(SubResource::from(nsg.clone())),
        route_table: Some(SubResource::from(table.clone())),
        nat_gateway: Some(SubResource::from(gateway.clone())),
        ..SubnetProperties::default()
    };
    let read = network(
        &client,
        &group,
        vec![
            subnet("control-plane-subnet", "10.0.0.0/24", SubnetProperties::default()),
            subnet("node-subnet", "10.0.1.0/24", node_attachments.clone()),
        ],
    )
    .await?;
    let vnet = network_id(&group, "virtualNetworks", "vnet")?;
    assert_eq!(read.id.as_ref(), Some(&vnet));
    assert_eq!(read.tags, Some(owned()));
    let properties = read.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert!(properties.resource_guid.is_some());
    assert_eq!(
        properties.address_space.and_then(|space| space.address_prefixes),
        Some(vec!["10.0.0.0/16".to_owned()])
    );
    let subnets = properties.subnets.ok_or("no subnets")?;
    let node = subnets[1].properties.clone().ok_or("no subnet properties")?;
    assert_eq!(subnets[1].id, Some(vnet.child("subnets", "node-subnet")?));
    assert_eq!(node.address_prefix.as_deref(), Some("10.0.1.0/24"));
    assert_eq!(
        (&node.network_security_group, &node.route_table, &node.nat_gateway),
        (
            &node_attachments.network_security_group,
            &node_attachments.route_table,
            &node_attachments.nat_gateway
        )
    );

    // The attachments show the subnet from their side.
    let node_subnet = SubResource::from(vnet.child("subnets", "node-subnet")?);
    let nsg: NetworkSecurityGroup = client.get(&nsg, &NetworkSecurityGroup::API_VERSION).await?;
    let nsg_subnets = nsg.properties.and_then(|properties| properties.subnets);
    assert_eq!(nsg_subnets, Some(vec![node_subnet.clone()]));
    let gateway: NatGateway = client.get(&gateway, &NatGateway::API_VERSION).await?;
    let gateway_subnets = gateway.properties.and_then(|properties| properties.subnets);
    assert_eq!(gateway_subnets, Some(vec![node_subnet]));

    // Children written on their own: a subnet, a security rule and a route.
    let extra_id = vnet.child("subnets", "extra-subnet")?;
    let extra = subnet("extra-subnet", "10.0.2.0/24", SubnetProperties::default());
    let read = create(&client, &extra_id, &extra).await?;
    assert_eq!(read.name.as_deref(), Some("extra-subnet"));
    assert_eq!(read.resource_type.as_deref(), Some(Subnet::RESOURCE_TYPE));
    let listed: Vec<Subnet> = client
        .list(&vnet, Subnet::RESOURCE_TYPE, &Subnet::API_VERSION)
        .await?;
    assert_eq!(listed.len(), 3);
    let rule_id = nsg.id.ok_or("no id")?.child("securityRules", "allow_etcd")?;
    let read = create(&client, &rule_id, &rule("allow_etcd", "2379-2380", 2202)).await?;
    let read = read.properties.ok_or("no rule")?;
    assert_eq!(read.destination_port_range.as_deref(), Some("2379-2380"));
    let route_id = table.child("routes", "pods-node-1")?;
    let route = Route {
        properties: Some(RouteProperties {
            address_prefix: Some("192.168.1.0/24".to_owned()),
            next_hop_type: Some(NextHopType::VirtualAppliance),
            next_hop_ip_address: Some("10.0.1.5".to_owned()),
            provisioning_state: None,
        }),
        ..Route::default()
    };
    let read = create(&client, &route_id, &route).await?;
    assert_eq!(read.id, Some(route_id));
    let table: RouteTable = client.get(&table, &RouteTable::API_VERSION).await?;
    let routes = table.properties.and_then(|properties| properties.routes);
    assert_eq!(routes.map(|routes| routes.len()), Some(2));
    Ok(())
}

/// The API server's public load balancer, with every kind of part.
fn api_balancer(id: &ResourceId, pip: &ResourceId) -> TestResult<LoadBalancer> {
    let part =
        |kind: &str, name: &str| -> TestResult<SubResource> { Ok(SubResource::from(id.child(kind, name)?)) };
    let frontend = part("frontendIPConfigurations", "api-frontend")?;
    let pool = part("backendAddressPools", "api-backend")?;
    Ok(LoadBalancer {
        location: here()?,
        tags: Some(owned()),
        sku: Some(Sku {
            name: Some(LoadBalancerSkuName::Standard),
            tier: None,
        }),
        properties: Some(LoadBalancerProperties {
            frontend_ip_configurations: Some(vec![FrontendIpConfiguration {
                name: Some("api-frontend".to_owned()),
                properties: Some(FrontendIpConfigurationProperties {
                    public_ip_address: Some(SubResource::from(pip.clone())),
                    ..FrontendIpConfigurationProperties::default()
                }),
                ..FrontendIpConfiguration::default()
            }]),
            backend_address_pools: Some(vec![BackendAddressPool {
                name: Some("api-backend".to_owned()),
                ..BackendAddressPool::default()
            }]),
            load_balancing_rules: Some(vec![LoadBalancingRule {
                name: Some("LBRuleHTTPS".to_owned()),
                properties: Some(LoadBalancingRuleProperties {
                    frontend_ip_configuration: Some(frontend.clone()),
                    backend_address_pool: Some(pool.clone()),
                    probe: Some(part("probes", "HTTPSProbe")?),
                    protocol: Some(TransportProtocol::Tcp),
                    frontend_port: Some(6443),
                    backend_port: Some(6443),
                    idle_timeout_in_minutes: Some(4),
                    enable_floating_ip: Some(false),
                    enable_tcp_reset: Some(true),
                    disable_outbound_snat: Some(true),
                    load_distribution: Some(capz_azure::models::network::LoadDistribution::Default),
                    provisioning_state: None,
                }),
                ..LoadBalancingRule::default()
            }]),
            probes: Some(vec![Probe {
                name: Some("HTTPSProbe".to_owned()),
                properties: Some(ProbeProperties {
                    protocol: Some(ProbeProtocol::Https),
                    port: Some(6443),
                    request_path: Some("/readyz".to_owned()),
                    interval_in_seconds: Some(15),
                    number_of_probes: Some(4),
                    ..ProbeProperties::default()
                }),
                ..Probe::default()
            }]),
            outbound_rules: Some(vec![OutboundRule {
                name: Some("OutboundNATAllProtocols".to_owned()),
                properties: Some(OutboundRuleProperties {
                    frontend_ip_configurations: Some(vec![frontend.clone()]),
                    backend_address_pool: Some(pool),
                    protocol: Some(TransportProtocol::All),
                    idle_timeout_in_minutes: Some(4),
                    ..OutboundRuleProperties::default()
                }),
                ..OutboundRule::default()
            }]),
            inbound_nat_rules: Some(vec![InboundNatRule {
                name: Some("ssh-cp-0".to_owned()),
                properties: Some(InboundNatRuleProperties {
                    frontend_ip_configuration: Some(frontend),
                    protocol: Some(TransportProtocol::Tcp),
                    frontend_port: Some(22),
                    backend_port: Some(22),
                    ..InboundNatRuleProperties::default()
                }),
                ..InboundNatRule::default()
            }]),
            ..LoadBalancerProperties::default()
        }),
        ..LoadBalancer::default()
    })
}

/// An interface in `subnet`, joining `pools` and `nat_rules` when given.
fn interface(
    subnet: &ResourceId,
    pools: Vec<SubResource>,
    nat_rules: Vec<SubResource>,
) -> TestResult<NetworkInterface> {
    Ok(NetworkInterface {
        location: here()?,
        tags: Some(owned()),
        properties: Some(NetworkInterfaceProperties {
            ip_configurations: Some(vec![IpConfiguration {
                name: Some("pipConfig".to_owned()),
                properties: Some(IpConfigurationProperties {
                    subnet: Some(SubResource::from(subnet.clone())),
                    primary: Some(true),
                    private_ip_allocation_method: Some(IpAllocationMethod::Dynamic),
                    load_balancer_backend_address_pools: Some(pools).filter(|pools| !pools.is_empty()),
                    load_balancer_inbound_nat_rules: Some(nat_rules).filter(|rules| !rules.is_empty()),
                    ..IpConfigurationProperties::default()
                }),
                ..IpConfiguration::default()
            }]),
            enable_ip_forwarding: Some(true),
            ..NetworkInterfaceProperties::default()
        }),
        ..NetworkInterface::default()
    })
}

/// The properties of the first of `children`.
fn first<P>(children: Option<Vec<ChildResource<P>>>) -> TestResult<P> {
    let child = children.and_then(|children| children.into_iter().next());
    Ok(child.and_then(|child| child.properties).ok_or("no such part")?)
}

/// The API server's public IP and load balancer, created and checked; returns the balancer's id.
async fn public_balancer(client: &ArmClient, group: &ResourceId) -> TestResult<ResourceId> {
    let pip_id = network_id(group, "publicIPAddresses", "capz-api-pip")?;
    let pip = public_ip(client, &pip_id, Some("capz-api")).await?;
    let fqdn = pip
        .properties
        .and_then(|properties| properties.dns_settings?.fqdn);
    let expected = format!("capz-api.{LOCATION}.cloudapp.azure.com");
    assert_eq!(fqdn, Some(expected));

    let lb_id = network_id(group, "loadBalancers", "capz-public-lb")?;
    let desired = api_balancer(&lb_id, &pip_id)?;
    let read = create(client, &lb_id, &desired).await?;
    assert_eq!(
        read.sku.and_then(|sku| sku.name),
        Some(LoadBalancerSkuName::Standard)
    );
    let sent = desired.properties.ok_or("no properties")?;
    let properties = read.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    let frontend_id = lb_id.child("frontendIPConfigurations", "api-frontend")?;
    let frontends = properties.frontend_ip_configurations.ok_or("no frontends")?;
    assert_eq!(frontends[0].id.as_ref(), Some(&frontend_id));
    let frontend = first(Some(frontends))?;
    assert_eq!(
        frontend.public_ip_address,
        Some(SubResource::from(pip_id.clone()))
    );
    let rule_id = lb_id.child("loadBalancingRules", "LBRuleHTTPS")?;
    assert_eq!(
        frontend.load_balancing_rules,
        Some(vec![SubResource::from(rule_id)])
    );
    // The parts read back as they were sent, with the provisioning state Azure adds.
    let rule = first(properties.load_balancing_rules)?;
    assert!(succeeded(rule.provisioning_state.as_ref()));
    let unprovisioned = LoadBalancingRuleProperties {
        provisioning_state: None,
        ..rule
    };
    assert_eq!(unprovisioned, first(sent.load_balancing_rules)?);
    let (probe, sent_probe) = (first(properties.probes)?, first(sent.probes)?);
    assert!(succeeded(probe.provisioning_state.as_ref()));
    assert_eq!(
        (&probe.protocol, probe.port),
        (&sent_probe.protocol, sent_probe.port)
    );
    assert_eq!(probe.request_path, sent_probe.request_path);
    assert_eq!(
        (probe.interval_in_seconds, probe.number_of_probes),
        (sent_probe.interval_in_seconds, sent_probe.number_of_probes)
    );
    let (outbound, sent_outbound) = (first(properties.outbound_rules)?, first(sent.outbound_rules)?);
    assert_eq!(
        outbound.frontend_ip_configurations,
        sent_outbound.frontend_ip_configurations
    );
    assert_eq!(outbound.backend_address_pool, sent_outbound.backend_address_pool);
    assert_eq!(outbound.protocol, Some(TransportProtocol::All));
    let pip: PublicIpAddress = client.get(&pip_id, &PublicIpAddress::API_VERSION).await?;
    let pip_user = pip.properties.and_then(|properties| properties.ip_configuration);
    assert_eq!(pip_user, Some(SubResource::from(frontend_id)));
    Ok(lb_id)
}

/// An interface joining the balancer's pool and NAT rule from its side, created and checked
/// from both sides.
async fn interface_in_pool(
    client: &ArmClient,
    group: &ResourceId,
    lb_id: &ResourceId,
    subnet_id: &ResourceId,
) -> TestResult {
    let pool = SubResource::from(lb_id.child("backendAddressPools", "api-backend")?);
    let nat_rule = SubResource::from(lb_id.child("inboundNatRules", "ssh-cp-0")?);
    let nic_id = network_id(group, "networkInterfaces", "capz-cp-0-nic")?;
    let body = interface(subnet_id, vec![pool.clone()], vec![nat_rule.clone()])?;
    let read = create(client, &nic_id, &body).await?;
    let properties = read.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert_eq!(properties.enable_ip_forwarding, Some(true));
    let configurations = properties.ip_configurations.ok_or("no configurations")?;
    let configuration_id = configurations[0].id.clone().ok_or("no id")?;
    assert_eq!(configuration_id, nic_id.child("ipConfigurations", "pipConfig")?);
    let configuration = first(Some(configurations))?;
    let address = configuration.private_ip_address.ok_or("no private address")?;
    assert!(address.starts_with("10.0.0."), "{address}");
    let method = configuration.private_ip_allocation_method;
    assert_eq!(method, Some(IpAllocationMethod::Dynamic));
    assert_eq!(
        configuration.load_balancer_backend_address_pools,
        Some(vec![pool])
    );
    assert_eq!(
        configuration.load_balancer_inbound_nat_rules,
        Some(vec![nat_rule])
    );

    let balancer: LoadBalancer = client.get(lb_id, &LoadBalancer::API_VERSION).await?;
    let properties = balancer.properties.ok_or("no properties")?;
    let member = SubResource::from(configuration_id);
    let pool = first(properties.backend_address_pools)?;
    assert_eq!(pool.backend_ip_configurations, Some(vec![member.clone()]));
    let nat = first(properties.inbound_nat_rules)?;
    assert_eq!(nat.backend_ip_configuration, Some(member));
    assert_eq!((nat.frontend_port, nat.backend_port), (Some(22), Some(22)));
    Ok(())
}

/// An internal balancer asking for its private address, created and checked.
async fn internal_balancer(client: &ArmClient, group: &ResourceId, subnet_id: &ResourceId) -> TestResult {
    let internal_id = network_id(group, "loadBalancers", "capz-internal-lb")?;
    let internal = LoadBalancer {
        location: here()?,
        sku: Some(Sku {
            name: Some(LoadBalancerSkuName::Standard),
            tier: None,
        }),
        properties: Some(LoadBalancerProperties {
            frontend_ip_configurations: Some(vec![FrontendIpConfiguration {
                name: Some("api-internal".to_owned()),
                properties: Some(FrontendIpConfigurationProperties {
                    subnet: Some(SubResource::from(subnet_id.clone())),
                    private_ip_address: Some("10.0.0.100".to_owned()),
                    private_ip_allocation_method: Some(IpAllocationMethod::Static),
                    ..FrontendIpConfigurationProperties::default()
                }),
                ..FrontendIpConfiguration::default()
            }]),
            ..LoadBalancerProperties::default()
        }),
        ..LoadBalancer::default()
    };
    let read = create(client, &internal_id, &internal).await?;
    let frontend = first(
        read.properties
            .and_then(|properties| properties.frontend_ip_configurations),
    )?;
    assert_eq!(frontend.private_ip_address.as_deref(), Some("10.0.0.100"));
    assert_eq!(
        frontend.private_ip_allocation_method,
        Some(IpAllocationMethod::Static)
    );
    Ok(())
}

#[tokio::test]
async fn a_load_balancer_and_an_interface_in_its_backend_pool() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let group = group(&client, "capz").await?;
    let subnets = vec![subnet(
        "control-plane-subnet",
        "10.0.0.0/24",
        SubnetProperties::default(),
    )];
    network(&client, &group, subnets).await?;
    let subnet_id =
        network_id(&group, "virtualNetworks", "vnet")?.child("subnets", "control-plane-subnet")?;
    let lb_id = public_balancer(&client, &group).await?;
    interface_in_pool(&client, &group, &lb_id, &subnet_id).await?;
    internal_balancer(&client, &group, &subnet_id).await
}

/// The ids a machine needs.
struct MachineParts {
    group: ResourceId,
    nics: [ResourceId; 2],
    identity: UserAssignedIdentity,
    availability_set: ResourceId,
    disk: ResourceId,
}

/// A group with a network, two interfaces, a user-assigned identity, an availability set and a
/// free data disk, each created and checked.
async fn machine_parts(client: &ArmClient) -> TestResult<MachineParts> {
    let group = group(client, "capz").await?;
    network(
        client,
        &group,
        vec![subnet("node-subnet", "10.0.1.0/24", SubnetProperties::default())],
    )
    .await?;
    let subnet_id = network_id(&group, "virtualNetworks", "vnet")?.child("subnets", "node-subnet")?;
    let mut nics = Vec::new();
    for name in ["capz-cp-0-nic", "capz-md-0-nic"] {
        let id = network_id(&group, "networkInterfaces", name)?;
        create(client, &id, &interface(&subnet_id, Vec::new(), Vec::new())?).await?;
        nics.push(id);
    }
    let nics: [ResourceId; 2] = nics.try_into().map_err(|_| "two interfaces")?;

    let identity_id = group.provider("Microsoft.ManagedIdentity", "userAssignedIdentities", "capz-cp")?;
    let identity = UserAssignedIdentity {
        location: here()?,
        tags: Some(owned()),
        ..UserAssignedIdentity::default()
    };
    let identity = create(client, &identity_id, &identity).await?;
    assert_eq!(identity.id.as_ref(), Some(&identity_id));
    let ids = identity.properties.clone().ok_or("no properties")?;
    assert!(ids.principal_id.is_some() && ids.client_id.is_some() && ids.tenant_id.is_some());

    let availability_set = compute_id(&group, "availabilitySets", "capz-cp-as")?;
    let set = AvailabilitySet {
        location: here()?,
        sku: Some(Sku {
            name: Some(AvailabilitySetSkuName::Aligned),
            tier: None,
        }),
        properties: Some(AvailabilitySetProperties {
            platform_fault_domain_count: Some(2),
            platform_update_domain_count: Some(5),
            virtual_machines: None,
        }),
        ..AvailabilitySet::default()
    };
    let read = create(client, &availability_set, &set).await?;
    assert_eq!(read.sku, set.sku);
    let properties = read.properties.ok_or("no properties")?;
    assert_eq!(
        (
            properties.platform_fault_domain_count,
            properties.platform_update_domain_count
        ),
        (Some(2), Some(5))
    );
    assert_eq!(properties.virtual_machines, Some(Vec::new()));

    let disk = compute_id(&group, "disks", "capz-cp-0-scratch")?;
    let body = Disk {
        location: here()?,
        sku: Some(Sku {
            name: Some(StorageAccountType::PremiumLrs),
            tier: None,
        }),
        properties: Some(DiskProperties {
            creation_data: Some(CreationData {
                create_option: Some(DiskCreateOption::Empty),
            }),
            disk_size_gb: Some(64),
            ..DiskProperties::default()
        }),
        ..Disk::default()
    };
    let read = create(client, &disk, &body).await?;
    assert_eq!(
        read.sku.and_then(|sku| sku.name),
        Some(StorageAccountType::PremiumLrs)
    );
    let properties = read.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert_eq!(properties.disk_size_gb, Some(64));
    assert_eq!(properties.disk_size_bytes, Some(64 << 30));
    assert_eq!(properties.disk_state, Some(DiskState::Unattached));
    Ok(MachineParts {
        group,
        nics,
        identity,
        availability_set,
        disk,
    })
}

fn linux_profile(name: &str) -> OsProfile {
    OsProfile {
        computer_name: Some(name.to_owned()),
        admin_username: Some("capi".to_owned()),
        custom_data: Some(Secret::new("I2Nsb3VkLWNvbmZpZwo=".to_owned())),
        linux_configuration: Some(LinuxConfiguration {
            disable_password_authentication: Some(true),
            ssh: Some(SshConfiguration {
                public_keys: Some(vec![SshPublicKey {
                    path: Some("/home/capi/.ssh/authorized_keys".to_owned()),
                    key_data: Some("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests capi".to_owned()),
                }]),
            }),
            ..LinuxConfiguration::default()
        }),
        ..OsProfile::default()
    }
}

fn nic_reference(id: &ResourceId) -> NetworkProfile {
    NetworkProfile {
        network_interfaces: Some(vec![NetworkInterfaceReference {
            id: id.clone(),
            properties: Some(NetworkInterfaceReferenceProperties {
                primary: Some(true),
                delete_option: Some(DeleteOption::Delete),
            }),
        }]),
    }
}

/// A control-plane machine: marketplace image, availability set, both kinds of identity, an
/// etcd disk created with it and an existing disk attached.
fn control_plane_machine(parts: &MachineParts) -> TestResult<VirtualMachine> {
    let identity_id = parts.identity.id.clone().ok_or("no identity id")?;
    Ok(VirtualMachine {
        location: here()?,
        tags: Some(owned()),
        identity: Some(ManagedServiceIdentity {
            identity_type: Some(IdentityType::SystemAssignedUserAssigned),
            user_assigned_identities: Some(HashMap::from([(identity_id, AssignedIdentity::default())])),
            ..ManagedServiceIdentity::default()
        }),
        properties: Some(VirtualMachineProperties {
            hardware_profile: Some(HardwareProfile {
                vm_size: Some("Standard_D2s_v3".to_owned()),
            }),
            storage_profile: Some(StorageProfile {
                image_reference: Some(ImageReference {
                    publisher: Some("cncf-upstream".to_owned()),
                    offer: Some("capi".to_owned()),
                    sku: Some("ubuntu-2204-gen1".to_owned()),
                    version: Some("latest".to_owned()),
                    ..ImageReference::default()
                }),
                os_disk: Some(OsDisk {
                    name: Some("capz-cp-0_OSDisk".to_owned()),
                    os_type: Some(capz_azure::models::compute::OperatingSystemType::Linux),
                    create_option: Some(DiskCreateOption::FromImage),
                    caching: Some(CachingType::ReadWrite),
                    disk_size_gb: Some(128),
                    managed_disk: Some(ManagedDiskParameters {
                        storage_account_type: Some(StorageAccountType::PremiumLrs),
                        ..ManagedDiskParameters::default()
                    }),
                    delete_option: Some(DeleteOption::Delete),
                    ..OsDisk::default()
                }),
                data_disks: Some(vec![
                    DataDisk {
                        lun: Some(0),
                        name: Some("capz-cp-0_etcddisk".to_owned()),
                        create_option: Some(DiskCreateOption::Empty),
                        caching: Some(CachingType::None),
                        disk_size_gb: Some(256),
                        delete_option: Some(DeleteOption::Delete),
                        ..DataDisk::default()
                    },
                    DataDisk {
                        lun: Some(1),
                        create_option: Some(DiskCreateOption::Attach),
                        managed_disk: Some(ManagedDiskParameters {
                            id: Some(parts.disk.clone()),
                            ..ManagedDiskParameters::default()
                        }),
                        ..DataDisk::default()
                    },
                ]),
            }),
            os_profile: Some(linux_profile("capz-cp-0")),
            network_profile: Some(nic_reference(&parts.nics[0])),
            availability_set: Some(SubResource::from(parts.availability_set.clone())),
            diagnostics_profile: Some(DiagnosticsProfile {
                boot_diagnostics: Some(BootDiagnostics {
                    enabled: Some(true),
                    storage_uri: None,
                }),
            }),
            ..VirtualMachineProperties::default()
        }),
        ..VirtualMachine::default()
    })
}

/// A worker: community gallery image, a zone, spot capacity and an ephemeral OS disk.
fn spot_worker(parts: &MachineParts) -> TestResult<VirtualMachine> {
    Ok(VirtualMachine {
        location: here()?,
        zones: Some(vec!["1".to_owned()]),
        properties: Some(VirtualMachineProperties {
            hardware_profile: Some(HardwareProfile {
                vm_size: Some("Standard_D4s_v3".to_owned()),
            }),
            storage_profile: Some(StorageProfile {
                image_reference: Some(ImageReference {
                    community_gallery_image_id: Some(COMMUNITY_IMAGE.to_owned()),
                    ..ImageReference::default()
                }),
                os_disk: Some(OsDisk {
                    create_option: Some(DiskCreateOption::FromImage),
                    caching: Some(CachingType::ReadOnly),
                    diff_disk_settings: Some(DiffDiskSettings {
                        option: Some(DiffDiskOption::Local),
                        placement: Some(DiffDiskPlacement::ResourceDisk),
                    }),
                    ..OsDisk::default()
                }),
                data_disks: None,
            }),
            os_profile: Some(linux_profile("capz-md-0")),
            network_profile: Some(nic_reference(&parts.nics[1])),
            priority: Some(Priority::Spot),
            eviction_policy: Some(EvictionPolicy::Delete),
            billing_profile: Some(BillingProfile {
                max_price: Some(-1.0),
            }),
            security_profile: Some(SecurityProfile {
                encryption_at_host: Some(true),
                ..SecurityProfile::default()
            }),
            ..VirtualMachineProperties::default()
        }),
        ..VirtualMachine::default()
    })
}

/// The control-plane machine, created and checked; returns it as read.
async fn control_plane(
    client: &ArmClient,
    parts: &MachineParts,
    vm_id: &ResourceId,
) -> TestResult<VirtualMachine> {
    let desired = control_plane_machine(parts)?;
    let read = create(client, vm_id, &desired).await?;
    assert_eq!(read.id.as_ref(), Some(vm_id));
    assert_eq!(read.tags, Some(owned()));
    let identity = read.identity.clone().ok_or("no identity")?;
    assert_eq!(
        identity.identity_type,
        Some(IdentityType::SystemAssignedUserAssigned)
    );
    assert!(identity.principal_id.is_some());
    let identity_id = parts.identity.id.clone().ok_or("no identity id")?;
    let assigned = identity
        .user_assigned_identities
        .ok_or("no user-assigned identities")?;
    let ids = parts
        .identity
        .properties
        .clone()
        .ok_or("no identity properties")?;
    assert_eq!(assigned[&identity_id].client_id, ids.client_id);
    assert_eq!(assigned[&identity_id].principal_id, ids.principal_id);

    let properties = read.properties.clone().ok_or("no properties")?;
    let sent = desired.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert!(properties.vm_id.is_some() && properties.time_created.is_some());
    assert_eq!(properties.hardware_profile, sent.hardware_profile);
    assert_eq!(properties.availability_set, sent.availability_set);
    assert_eq!(properties.diagnostics_profile, sent.diagnostics_profile);
    assert_eq!(properties.network_profile, sent.network_profile);
    assert_eq!(properties.instance_view, None, "only with $expand");
    // Azure keeps the bootstrap data to itself.
    let os_profile = properties.os_profile.ok_or("no OS profile")?;
    assert_eq!(os_profile.custom_data, None);
    let sent_os_profile = sent.os_profile.ok_or("no OS profile")?;
    assert_eq!(os_profile.computer_name, sent_os_profile.computer_name);
    let ssh = |profile: OsProfile| profile.linux_configuration.and_then(|linux| linux.ssh);
    assert_eq!(ssh(os_profile), ssh(sent_os_profile));

    let storage = properties.storage_profile.ok_or("no storage profile")?;
    let image = storage.image_reference.ok_or("no image")?;
    assert_eq!(image.publisher.as_deref(), Some("cncf-upstream"));
    assert_eq!(image.version.as_deref(), Some("latest"));
    assert!(image.exact_version.is_some());
    let os_disk = storage.os_disk.ok_or("no OS disk")?;
    assert_eq!(os_disk.name.as_deref(), Some("capz-cp-0_OSDisk"));
    assert_eq!(os_disk.disk_size_gb, Some(128));
    assert_eq!(os_disk.delete_option, Some(DeleteOption::Delete));
    let os_managed = os_disk.managed_disk.ok_or("no managed disk")?;
    let os_disk_id = compute_id(&parts.group, "disks", "capz-cp-0_OSDisk")?;
    assert_eq!(os_managed.id, Some(os_disk_id));
    assert_eq!(
        os_managed.storage_account_type,
        Some(StorageAccountType::PremiumLrs)
    );
    let data = storage.data_disks.ok_or("no data disks")?;
    let disk_id = |disk: &DataDisk| disk.managed_disk.as_ref().and_then(|managed| managed.id.clone());
    let etcd = compute_id(&parts.group, "disks", "capz-cp-0_etcddisk")?;
    assert_eq!(disk_id(&data[0]), Some(etcd));
    assert_eq!(data[0].caching, Some(CachingType::None));
    assert_eq!(data[0].disk_size_gb, Some(256));
    assert_eq!(disk_id(&data[1]), Some(parts.disk.clone()));
    assert_eq!(data[1].disk_size_gb, Some(64));
    Ok(read)
}

/// What the machine holds shows from the other side: the set lists it, the disk and the
/// interface name it.
async fn held_by(client: &ArmClient, parts: &MachineParts, vm_id: &ResourceId) -> TestResult {
    let availability_set: AvailabilitySet = client
        .get(&parts.availability_set, &AvailabilitySet::API_VERSION)
        .await?;
    let members = availability_set
        .properties
        .and_then(|properties| properties.virtual_machines);
    assert_eq!(members, Some(vec![SubResource::from(vm_id.clone())]));
    let disk: Disk = client.get(&parts.disk, &Disk::API_VERSION).await?;
    assert_eq!(disk.managed_by.as_ref(), Some(vm_id));
    let state = disk.properties.and_then(|properties| properties.disk_state);
    assert_eq!(state, Some(DiskState::Attached));
    let nic: NetworkInterface = client.get(&parts.nics[0], &NetworkInterface::API_VERSION).await?;
    let user = nic.properties.and_then(|properties| properties.virtual_machine);
    assert_eq!(user, Some(SubResource::from(vm_id.clone())));
    Ok(())
}

/// The spot worker, created and checked.
async fn worker(client: &ArmClient, parts: &MachineParts) -> TestResult {
    let worker_id = compute_id(&parts.group, "virtualMachines", "capz-md-0")?;
    let worker = create(client, &worker_id, &spot_worker(parts)?).await?;
    assert_eq!(worker.zones, Some(vec!["1".to_owned()]));
    let properties = worker.properties.ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert_eq!(properties.priority, Some(Priority::Spot));
    assert_eq!(properties.eviction_policy, Some(EvictionPolicy::Delete));
    let max_price = properties.billing_profile.and_then(|billing| billing.max_price);
    assert_eq!(max_price, Some(-1.0));
    let encryption = properties
        .security_profile
        .and_then(|security| security.encryption_at_host);
    assert_eq!(encryption, Some(true));
    let storage = properties.storage_profile.ok_or("no storage profile")?;
    let image = storage.image_reference.ok_or("no image")?;
    assert_eq!(image.community_gallery_image_id.as_deref(), Some(COMMUNITY_IMAGE));
    let os_disk = storage.os_disk.ok_or("no OS disk")?;
    let placement = os_disk.diff_disk_settings.and_then(|settings| settings.placement);
    assert_eq!(placement, Some(DiffDiskPlacement::ResourceDisk));
    // An ephemeral OS disk lives on the host: there is no disk resource behind it.
    assert_eq!(os_disk.managed_disk.and_then(|disk| disk.id), None);
    Ok(())
}

#[tokio::test]
async fn machines_with_their_disks_identities_and_availability_set() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let parts = machine_parts(&client).await?;
    let vm_id = compute_id(&parts.group, "virtualMachines", "capz-cp-0")?;
    let machine = control_plane(&client, &parts, &vm_id).await?;

    let expanded: VirtualMachine = client
        .get_expanded(&vm_id, &VirtualMachine::API_VERSION, "instanceView")
        .await?;
    let view = expanded
        .properties
        .and_then(|properties| properties.instance_view);
    let view = view.ok_or("no instance view")?;
    assert_eq!(view.power_state(), Some("running"));
    assert_eq!(view.computer_name.as_deref(), Some("capz-cp-0"));

    held_by(&client, &parts, &vm_id).await?;
    worker(&client, &parts).await?;
    let listed: Vec<VirtualMachine> = client
        .list(
            &parts.group,
            VirtualMachine::RESOURCE_TYPE,
            &VirtualMachine::API_VERSION,
        )
        .await?;
    assert_eq!(listed.len(), 2);
    role_assignments(&client, &parts, &machine).await
}

/// Contributor on the group for the machine's system-assigned identity, Reader for the
/// user-assigned one; both read back and listed.
async fn role_assignments(client: &ArmClient, parts: &MachineParts, machine: &VirtualMachine) -> TestResult {
    let role = |guid: &str| {
        format!("/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{guid}")
    };
    let system = machine
        .identity
        .as_ref()
        .and_then(|identity| identity.principal_id.clone())
        .ok_or("no principal")?;
    let user = parts
        .identity
        .properties
        .as_ref()
        .and_then(|ids| ids.principal_id.clone())
        .ok_or("no principal")?;
    let mut created = Vec::new();
    for (name, guid, principal) in [
        ("0f6c1a52-7b7e-4d8a-9a43-3a4bd0d0c001", CONTRIBUTOR, system),
        ("0f6c1a52-7b7e-4d8a-9a43-3a4bd0d0c002", READER, user),
    ] {
        let id = parts
            .group
            .provider("Microsoft.Authorization", "roleAssignments", name)?;
        let body = RoleAssignment {
            properties: Some(RoleAssignmentProperties {
                role_definition_id: Some(role(guid)),
                principal_id: Some(principal.clone()),
                principal_type: Some(PrincipalType::ServicePrincipal),
                scope: None,
            }),
            ..RoleAssignment::default()
        };
        let read = create(client, &id, &body).await?;
        assert_eq!(read.id.as_deref(), Some(id.to_string().as_str()));
        assert_eq!(read.name.as_deref(), Some(name));
        let properties = read.properties.clone().ok_or("no properties")?;
        assert_eq!(properties.role_definition_id, Some(role(guid)));
        assert_eq!(properties.principal_id, Some(principal));
        assert_eq!(properties.principal_type, Some(PrincipalType::ServicePrincipal));
        assert_eq!(properties.scope, Some(parts.group.to_string()));
        created.push(read);
    }
    let mut listed: Vec<RoleAssignment> = client
        .list(
            &parts.group,
            RoleAssignment::RESOURCE_TYPE,
            &RoleAssignment::API_VERSION,
        )
        .await?;
    // Assignments inherited from above the group are listed too; ours are those at the group.
    let group = parts.group.to_string();
    listed.retain(|assignment| {
        assignment.properties.as_ref().and_then(|p| p.scope.as_deref()) == Some(group.as_str())
    });
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(listed, created);
    Ok(())
}

/// A Uniform scale set from its model: its instances listed under it, a larger capacity adding
/// instances on the current model, a new model (under the `Manual` upgrade policy) leaving the
/// existing instances on the old one until they are replaced.
#[tokio::test]
async fn a_scale_set_and_its_instances() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let group = group(&client, "pool").await?;
    network(
        &client,
        &group,
        vec![subnet("node-subnet", "10.0.1.0/24", SubnetProperties::default())],
    )
    .await?;
    let subnet_id = network_id(&group, "virtualNetworks", "vnet")?.child("subnets", "node-subnet")?;
    let set_id = compute_id(&group, "virtualMachineScaleSets", "pool")?;
    let mut set = scale_set(&subnet_id, 2);
    let read = create(&client, &set_id, &set).await?;
    let properties = read.properties.clone().ok_or("no properties")?;
    assert!(succeeded(properties.provisioning_state.as_ref()));
    assert_eq!(properties.orchestration_mode, Some(OrchestrationMode::Uniform));
    assert_eq!(read.sku.as_ref().and_then(|sku| sku.capacity), Some(2));
    let instances = scale_set_instances(&client, &set_id).await?;
    assert_eq!(instances.len(), 2, "{instances:?}");

    if let Some(sku) = set.sku.as_mut() {
        sku.capacity = Some(3);
    }
    create(&client, &set_id, &set).await?;
    let instances = scale_set_instances(&client, &set_id).await?;
    assert_eq!(instances.len(), 3);
    assert!(
        instances
            .iter()
            .all(|instance| latest_model(instance) == Some(true))
    );

    let os = set
        .properties
        .as_mut()
        .and_then(|properties| properties.virtual_machine_profile.as_mut())
        .and_then(|profile| profile.os_profile.as_mut())
        .ok_or("no OS profile")?;
    os.custom_data = Some(Secret::new("I2Nsb3VkLWNvbmZpZwojIG5ldwo=".to_owned()));
    create(&client, &set_id, &set).await?;
    let instances = scale_set_instances(&client, &set_id).await?;
    assert!(
        instances
            .iter()
            .all(|instance| latest_model(instance) == Some(false)),
        "a Manual set leaves its instances on the old model: {instances:?}"
    );
    let names: Vec<Option<String>> = instances
        .iter()
        .map(|instance| {
            instance
                .properties
                .as_ref()
                .and_then(|properties| properties.os_profile.as_ref())
                .and_then(|profile| profile.computer_name.clone())
        })
        .collect();
    assert!(
        names
            .iter()
            .all(|name| name.as_deref().is_some_and(|name| name.starts_with("pool"))),
        "{names:?}"
    );
    Ok(())
}

fn scale_set(subnet: &ResourceId, capacity: u64) -> VirtualMachineScaleSet {
    let interface = ScaleSetNetworkInterface {
        name: "pool-nic".to_owned(),
        properties: Some(ScaleSetNetworkInterfaceProperties {
            primary: Some(true),
            ip_configurations: Some(vec![ScaleSetIpConfiguration {
                name: "ipconfig1".to_owned(),
                properties: Some(ScaleSetIpConfigurationProperties {
                    subnet: Some(SubResource::from(subnet.clone())),
                    primary: Some(true),
                    ..ScaleSetIpConfigurationProperties::default()
                }),
            }]),
            ..ScaleSetNetworkInterfaceProperties::default()
        }),
    };
    let profile = linux_profile("pool");
    VirtualMachineScaleSet {
        location: here().ok().flatten(),
        tags: Some(owned()),
        sku: Some(ScaleSetSku {
            name: Some("Standard_D2s_v3".to_owned()),
            tier: None,
            capacity: Some(capacity),
        }),
        properties: Some(ScaleSetProperties {
            orchestration_mode: Some(OrchestrationMode::Uniform),
            upgrade_policy: Some(UpgradePolicy {
                mode: Some(UpgradeMode::Manual),
            }),
            overprovision: Some(false),
            virtual_machine_profile: Some(ScaleSetVmProfile {
                os_profile: Some(ScaleSetOsProfile {
                    computer_name_prefix: Some("pool".to_owned()),
                    admin_username: profile.admin_username,
                    custom_data: profile.custom_data,
                    linux_configuration: profile.linux_configuration,
                    ..ScaleSetOsProfile::default()
                }),
                storage_profile: Some(StorageProfile {
                    image_reference: Some(ImageReference {
                        community_gallery_image_id: Some(COMMUNITY_IMAGE.to_owned()),
                        ..ImageReference::default()
                    }),
                    os_disk: Some(OsDisk {
                        create_option: Some(DiskCreateOption::FromImage),
                        disk_size_gb: Some(30),
                        ..OsDisk::default()
                    }),
                    data_disks: None,
                }),
                network_profile: Some(ScaleSetNetworkProfile {
                    network_interface_configurations: Some(vec![interface]),
                    network_api_version: None,
                }),
                ..ScaleSetVmProfile::default()
            }),
            ..ScaleSetProperties::default()
        }),
        ..VirtualMachineScaleSet::default()
    }
}

async fn scale_set_instances(client: &ArmClient, set: &ResourceId) -> TestResult<Vec<ScaleSetInstance>> {
    Ok(client
        .list(
            set,
            ScaleSetInstance::RESOURCE_TYPE,
            &ScaleSetInstance::API_VERSION,
        )
        .await?)
}

fn latest_model(instance: &ScaleSetInstance) -> Option<bool> {
    instance
        .properties
        .as_ref()
        .and_then(|properties| properties.latest_model_applied)
}
