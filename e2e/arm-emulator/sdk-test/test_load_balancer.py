"""A load balancer with every part a self-managed cluster uses, and a network interface in its
backend pool."""

import pytest
from azure.mgmt.network import models as net

from support import (
    LOCATION,
    arm_error,
    assert_gone,
    ids,
    interface,
    names,
    ref,
    resource_id,
    same_id,
    standard_public_ip,
)

LB = "sdk-lb"


def part(group: str, kind: str, name: str) -> str:
    return resource_id(group, f"Microsoft.Network/loadBalancers/{kind}", LB, name)


@pytest.fixture(scope="module")
def frontend_ip(network, group):
    return network.public_ip_addresses.begin_create_or_update(group, "sdk-lb-frontend", standard_public_ip()).result()


@pytest.fixture(scope="module")
def balancer(network, group, frontend_ip):
    frontend = part(group, "frontendIPConfigurations", "public")
    body = net.LoadBalancer(
        location=LOCATION,
        sku=net.LoadBalancerSku(name="Standard"),
        frontend_ip_configurations=[
            net.FrontendIPConfiguration(name="public", public_ip_address=net.PublicIPAddress(id=frontend_ip.id))
        ],
        backend_address_pools=[net.BackendAddressPool(name="nodes"), net.BackendAddressPool(name="egress")],
        probes=[net.Probe(name="apiserver", protocol="Tcp", port=6443, interval_in_seconds=5, number_of_probes=2)],
        load_balancing_rules=[
            net.LoadBalancingRule(
                name="apiserver",
                protocol="Tcp",
                frontend_port=6443,
                backend_port=6443,
                idle_timeout_in_minutes=4,
                enable_floating_ip=False,
                disable_outbound_snat=True,
                frontend_ip_configuration=ref(frontend),
                backend_address_pool=ref(part(group, "backendAddressPools", "nodes")),
                probe=ref(part(group, "probes", "apiserver")),
            )
        ],
        inbound_nat_rules=[
            net.InboundNatRule(
                name="ssh", protocol="Tcp", frontend_port=22, backend_port=22, frontend_ip_configuration=ref(frontend)
            )
        ],
        outbound_rules=[
            net.OutboundRule(
                name="egress",
                protocol="All",
                allocated_outbound_ports=1024,
                idle_timeout_in_minutes=4,
                frontend_ip_configurations=[ref(frontend)],
                backend_address_pool=ref(part(group, "backendAddressPools", "egress")),
            )
        ],
    )
    created = network.load_balancers.begin_create_or_update(group, LB, body).result()
    yield created
    network.load_balancers.begin_delete(group, LB).result()
    assert_gone(network.load_balancers.get, group, LB)
    # Released by the deletion, the frontend's address can go too.
    network.public_ip_addresses.begin_delete(group, frontend_ip.name).result()


def test_every_part_is_created_and_cross_referenced(network, group, balancer, frontend_ip):
    assert balancer.provisioning_state == "Succeeded"
    assert balancer.sku.name == "Standard"
    read = network.load_balancers.get(group, LB)
    assert read.etag == balancer.etag

    (frontend,) = read.frontend_ip_configurations
    assert same_id(frontend.public_ip_address.id, frontend_ip.id)
    assert ids(frontend.load_balancing_rules) == {part(group, "loadBalancingRules", "apiserver").lower()}
    assert ids(frontend.inbound_nat_rules) == {part(group, "inboundNatRules", "ssh").lower()}
    assert ids(frontend.outbound_rules) == {part(group, "outboundRules", "egress").lower()}
    assert same_id(network.public_ip_addresses.get(group, frontend_ip.name).ip_configuration.id, frontend.id)

    pools = {pool.name: pool for pool in read.backend_address_pools}
    assert ids(pools["nodes"].load_balancing_rules) == {part(group, "loadBalancingRules", "apiserver").lower()}
    assert ids(pools["egress"].outbound_rules) == {part(group, "outboundRules", "egress").lower()}
    (probe,) = read.probes
    assert (probe.port, probe.protocol) == (6443, "Tcp")
    assert ids(probe.load_balancing_rules) == {part(group, "loadBalancingRules", "apiserver").lower()}
    (rule,) = read.load_balancing_rules
    assert (rule.frontend_port, rule.backend_port, rule.disable_outbound_snat) == (6443, 6443, True)
    assert same_id(rule.probe.id, probe.id)
    (outbound,) = read.outbound_rules
    assert (outbound.allocated_outbound_ports, outbound.protocol) == (1024, "All")


def test_parts_are_served_as_child_resources(network, group, balancer):
    frontends = network.load_balancer_frontend_ip_configurations
    assert names(frontends.list(group, LB)) == {"public"}
    assert frontends.get(group, LB, "public").provisioning_state == "Succeeded"
    assert names(network.load_balancer_backend_address_pools.list(group, LB)) == {"nodes", "egress"}
    assert network.load_balancer_probes.get(group, LB, "apiserver").interval_in_seconds == 5
    assert names(network.load_balancer_load_balancing_rules.list(group, LB)) == {"apiserver"}
    assert network.load_balancer_load_balancing_rules.get(group, LB, "apiserver").idle_timeout_in_minutes == 4
    assert names(network.load_balancer_outbound_rules.list(group, LB)) == {"egress"}
    assert network.load_balancer_outbound_rules.get(group, LB, "egress").allocated_outbound_ports == 1024

    rules = network.inbound_nat_rules
    assert rules.get(group, LB, "ssh").frontend_port == 22
    https = net.InboundNatRule(
        protocol="Tcp",
        frontend_port=8443,
        backend_port=443,
        frontend_ip_configuration=ref(part(group, "frontendIPConfigurations", "public")),
    )
    created = rules.begin_create_or_update(group, LB, "https", https).result()
    assert (created.frontend_port, created.provisioning_state) == (8443, "Succeeded")
    assert names(rules.list(group, LB)) == {"ssh", "https"}
    rules.begin_delete(group, LB, "https").result()
    assert_gone(rules.get, group, LB, "https")

    pools = network.load_balancer_backend_address_pools
    pools.begin_create_or_update(group, LB, "spare", net.BackendAddressPool()).result()
    assert names(pools.list(group, LB)) == {"nodes", "egress", "spare"}
    pools.begin_delete(group, LB, "spare").result()
    assert_gone(pools.get, group, LB, "spare")


def test_lists_and_tags(network, group, balancer):
    assert LB in names(network.load_balancers.list(group))
    assert balancer.id.lower() in ids(network.load_balancers.list_all())
    tagged = network.load_balancers.update_tags(group, LB, net.TagsObject(tags={"tier": "control-plane"}))
    assert tagged.tags == {"tier": "control-plane"}
    assert len(tagged.backend_address_pools) == 2


def test_network_interface_in_a_backend_pool(network, group, balancer, nodes_subnet, frontend_ip):
    nodes_pool = part(group, "backendAddressPools", "nodes")
    ssh = part(group, "inboundNatRules", "ssh")
    body = interface(
        nodes_subnet.id,
        load_balancer_backend_address_pools=[net.BackendAddressPool(id=nodes_pool)],
        load_balancer_inbound_nat_rules=[net.InboundNatRule(id=ssh)],
    )
    nic = network.network_interfaces.begin_create_or_update(group, "sdk-lb-member", body).result()
    member = nic.ip_configurations[0]
    assert ids(member.load_balancer_backend_address_pools) == {nodes_pool.lower()}
    assert ids(member.load_balancer_inbound_nat_rules) == {ssh.lower()}

    pool = network.load_balancer_backend_address_pools.get(group, LB, "nodes")
    assert ids(pool.backend_ip_configurations) == {member.id.lower()}
    assert same_id(network.inbound_nat_rules.get(group, LB, "ssh").backend_ip_configuration.id, member.id)

    # The frontend's public address cannot go while the load balancer holds it.
    with arm_error("PublicIPAddressCannotBeDeleted", 400):
        network.public_ip_addresses.begin_delete(group, frontend_ip.name).result()

    network.network_interfaces.begin_delete(group, "sdk-lb-member").result()
    assert not network.load_balancer_backend_address_pools.get(group, LB, "nodes").backend_ip_configurations
    assert network.inbound_nat_rules.get(group, LB, "ssh").backend_ip_configuration is None
