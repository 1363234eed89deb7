"""Microsoft.Network through azure-mgmt-network: virtual networks and subnets, security groups,
route tables, NAT gateways, public IP addresses and prefixes, network interfaces."""

import ipaddress

from azure.mgmt.network import models as net

from support import (
    LOCATION,
    arm_error,
    assert_gone,
    ids,
    interface,
    names,
    pages,
    ref,
    resource_id,
    same_id,
    standard_public_ip,
)


def test_virtual_network_and_subnet_lifecycle(network, group):
    vnets = network.virtual_networks
    body = net.VirtualNetwork(
        location=LOCATION,
        tags={"stage": "created"},
        address_space=net.AddressSpace(address_prefixes=["10.10.0.0/16"]),
        subnets=[net.Subnet(name=f"inline-{index}", address_prefix=f"10.10.{index}.0/24") for index in range(3)],
    )
    created = vnets.begin_create_or_update(group, "sdk-vnet-life", body).result()
    assert created.id == resource_id(group, "Microsoft.Network/virtualNetworks", "sdk-vnet-life")
    assert created.provisioning_state == "Succeeded"
    assert created.etag and created.resource_guid
    assert created.address_space.address_prefixes == ["10.10.0.0/16"]

    read = vnets.get(group, "sdk-vnet-life")
    assert read.etag == created.etag
    assert {(subnet.name, subnet.address_prefix) for subnet in read.subnets} == {
        (f"inline-{index}", f"10.10.{index}.0/24") for index in range(3)
    }
    assert "sdk-vnet-life" in names(vnets.list(group))
    assert created.id.lower() in ids(vnets.list_all())

    tagged = vnets.update_tags(group, "sdk-vnet-life", net.TagsObject(tags={"stage": "tagged"}))
    assert tagged.tags == {"stage": "tagged"}
    assert tagged.etag != created.etag

    subnets = network.subnets
    added = subnets.begin_create_or_update(
        group, "sdk-vnet-life", "added", net.Subnet(address_prefix="10.10.9.0/24")
    ).result()
    assert added.id == created.id + "/subnets/added"
    assert added.provisioning_state == "Succeeded"
    listed = pages(subnets.list(group, "sdk-vnet-life"))
    assert len(listed) == 2  # four subnets, two a page
    assert names(subnet for page in listed for subnet in page) == {"inline-0", "inline-1", "inline-2", "added"}
    with arm_error("NetcfgSubnetRangeOutsideVnet", 400):
        subnets.begin_create_or_update(
            group, "sdk-vnet-life", "outside", net.Subnet(address_prefix="192.168.0.0/24")
        ).result()

    subnets.begin_delete(group, "sdk-vnet-life", "added").result()
    assert_gone(subnets.get, group, "sdk-vnet-life", "added")
    vnets.begin_delete(group, "sdk-vnet-life").result()
    assert_gone(vnets.get, group, "sdk-vnet-life")
    assert_gone(subnets.get, group, "sdk-vnet-life", "inline-0")


def test_security_group_and_its_rules(network, group):
    rule = net.SecurityRule(
        name="allow-ssh",
        protocol="Tcp",
        access="Allow",
        direction="Inbound",
        priority=100,
        source_address_prefix="*",
        source_port_range="*",
        destination_address_prefix="*",
        destination_port_range="22",
    )
    created = network.network_security_groups.begin_create_or_update(
        group, "sdk-nsg-rules", net.NetworkSecurityGroup(location=LOCATION, security_rules=[rule])
    ).result()
    assert [r.name for r in created.security_rules] == ["allow-ssh"]
    # Azure adds its default rules to every group.
    assert "DenyAllInBound" in names(created.default_security_rules)

    rules = network.security_rules
    https = rules.begin_create_or_update(
        group,
        "sdk-nsg-rules",
        "allow-https",
        net.SecurityRule(
            protocol="Tcp",
            access="Allow",
            direction="Inbound",
            priority=110,
            source_address_prefix="*",
            source_port_range="*",
            destination_address_prefix="*",
            destination_port_range="443",
        ),
    ).result()
    assert (https.priority, https.destination_port_range, https.provisioning_state) == (110, "443", "Succeeded")
    assert rules.get(group, "sdk-nsg-rules", "allow-ssh").destination_port_range == "22"
    assert names(rules.list(group, "sdk-nsg-rules")) == {"allow-ssh", "allow-https"}

    rules.begin_delete(group, "sdk-nsg-rules", "allow-ssh").result()
    assert_gone(rules.get, group, "sdk-nsg-rules", "allow-ssh")
    tagged = network.network_security_groups.update_tags(group, "sdk-nsg-rules", net.TagsObject(tags={"owner": "sdk"}))
    assert tagged.tags == {"owner": "sdk"}
    assert names(tagged.security_rules) == {"allow-https"}
    network.network_security_groups.begin_delete(group, "sdk-nsg-rules").result()
    assert_gone(network.network_security_groups.get, group, "sdk-nsg-rules")


def test_route_table_and_its_routes(network, group):
    tables, routes = network.route_tables, network.routes
    created = tables.begin_create_or_update(
        group,
        "sdk-routes",
        net.RouteTable(
            location=LOCATION,
            routes=[
                net.Route(
                    name="to-firewall",
                    address_prefix="0.0.0.0/0",
                    next_hop_type="VirtualAppliance",
                    next_hop_ip_address="10.0.0.4",
                )
            ],
        ),
    ).result()
    assert created.routes[0].next_hop_ip_address == "10.0.0.4"

    internet = routes.begin_create_or_update(
        group, "sdk-routes", "to-internet", net.Route(address_prefix="20.0.0.0/8", next_hop_type="Internet")
    ).result()
    assert (internet.next_hop_type, internet.provisioning_state) == ("Internet", "Succeeded")
    assert names(routes.list(group, "sdk-routes")) == {"to-firewall", "to-internet"}
    assert "sdk-routes" in names(tables.list(group))
    assert created.id.lower() in ids(tables.list_all())

    routes.begin_delete(group, "sdk-routes", "to-firewall").result()
    assert names(tables.get(group, "sdk-routes").routes) == {"to-internet"}
    assert tables.update_tags(group, "sdk-routes", net.TagsObject(tags={"a": "b"})).tags == {"a": "b"}
    tables.begin_delete(group, "sdk-routes").result()
    assert_gone(tables.get, group, "sdk-routes")


def test_subnet_with_security_group_route_table_and_nat_gateway(network, group, vnet):
    nsg = network.network_security_groups.begin_create_or_update(
        group, "sdk-assoc-nsg", net.NetworkSecurityGroup(location=LOCATION)
    ).result()
    table = network.route_tables.begin_create_or_update(
        group, "sdk-assoc-routes", net.RouteTable(location=LOCATION)
    ).result()
    outbound_ip = network.public_ip_addresses.begin_create_or_update(
        group, "sdk-assoc-nat-ip", standard_public_ip()
    ).result()
    nat = network.nat_gateways.begin_create_or_update(
        group,
        "sdk-assoc-nat",
        net.NatGateway(
            location=LOCATION,
            sku=net.NatGatewaySku(name="Standard"),
            idle_timeout_in_minutes=10,
            public_ip_addresses=[ref(outbound_ip.id)],
        ),
    ).result()
    assert nat.provisioning_state == "Succeeded"
    assert ids(nat.public_ip_addresses) == {outbound_ip.id.lower()}
    assert "sdk-assoc-nat" in names(network.nat_gateways.list(group))
    assert nat.id.lower() in ids(network.nat_gateways.list_all())

    subnet = network.subnets.begin_create_or_update(
        group,
        vnet.name,
        "associated",
        net.Subnet(
            address_prefix="10.0.2.0/24",
            network_security_group=net.NetworkSecurityGroup(id=nsg.id),
            route_table=net.RouteTable(id=table.id),
            nat_gateway=ref(nat.id),
        ),
    ).result()
    assert same_id(subnet.network_security_group.id, nsg.id)
    assert same_id(subnet.route_table.id, table.id)
    assert same_id(subnet.nat_gateway.id, nat.id)

    # Each associated resource lists the subnet.
    assert ids(network.network_security_groups.get(group, nsg.name).subnets) == {subnet.id.lower()}
    assert ids(network.route_tables.get(group, table.name).subnets) == {subnet.id.lower()}
    assert ids(network.nat_gateways.get(group, nat.name).subnets) == {subnet.id.lower()}
    assert same_id(network.public_ip_addresses.get(group, outbound_ip.name).nat_gateway.id, nat.id)

    with arm_error("InUseNetworkSecurityGroupCannotBeDeleted", 400):
        network.network_security_groups.begin_delete(group, nsg.name).result()
    with arm_error("InUseRouteTableCannotBeDeleted", 400):
        network.route_tables.begin_delete(group, table.name).result()
    with arm_error("InUseNatGatewayCannotBeDeleted", 400):
        network.nat_gateways.begin_delete(group, nat.name).result()

    tagged = network.nat_gateways.update_tags(group, nat.name, net.TagsObject(tags={"role": "egress"}))
    assert tagged.tags == {"role": "egress"}
    assert tagged.idle_timeout_in_minutes == 10

    network.subnets.begin_delete(group, vnet.name, "associated").result()
    assert not network.network_security_groups.get(group, nsg.name).subnets
    network.nat_gateways.begin_delete(group, nat.name).result()
    network.network_security_groups.begin_delete(group, nsg.name).result()
    network.route_tables.begin_delete(group, table.name).result()
    network.public_ip_addresses.begin_delete(group, outbound_ip.name).result()
    assert_gone(network.nat_gateways.get, group, nat.name)
    assert_gone(network.public_ip_addresses.get, group, outbound_ip.name)


def test_public_ip_address_from_a_prefix(network, group):
    prefixes, addresses = network.public_ip_prefixes, network.public_ip_addresses
    prefix = prefixes.begin_create_or_update(
        group,
        "sdk-prefix",
        net.PublicIPPrefix(location=LOCATION, sku=net.PublicIPPrefixSku(name="Standard"), prefix_length=30),
    ).result()
    block = ipaddress.ip_network(prefix.ip_prefix)
    assert block.prefixlen == 30
    assert "sdk-prefix" in names(prefixes.list(group))
    assert prefix.id.lower() in ids(prefixes.list_all())

    address = addresses.begin_create_or_update(
        group,
        "sdk-ip",
        standard_public_ip(
            public_ip_prefix=ref(prefix.id),
            dns_settings=net.PublicIPAddressDnsSettings(domain_name_label="sdk-test-ip"),
            tags={"stage": "created"},
        ),
    ).result()
    assert ipaddress.ip_address(address.ip_address) in block
    assert address.dns_settings.fqdn == f"sdk-test-ip.{LOCATION}.cloudapp.azure.com"
    assert (address.sku.name, address.public_ip_allocation_method) == ("Standard", "Static")
    assert ids(prefixes.get(group, "sdk-prefix").public_ip_addresses) == {address.id.lower()}
    assert "sdk-ip" in names(addresses.list(group))
    assert address.id.lower() in ids(addresses.list_all())

    tagged = addresses.update_tags(group, "sdk-ip", net.TagsObject(tags={"stage": "tagged"}))
    assert (tagged.tags, tagged.ip_address) == ({"stage": "tagged"}, address.ip_address)
    assert prefixes.update_tags(group, "sdk-prefix", net.TagsObject(tags={"x": "y"})).tags == {"x": "y"}

    with arm_error("PublicIpPrefixInUseCannotBeDeleted", 400):
        prefixes.begin_delete(group, "sdk-prefix").result()
    addresses.begin_delete(group, "sdk-ip").result()
    prefixes.begin_delete(group, "sdk-prefix").result()
    assert_gone(addresses.get, group, "sdk-ip")
    assert_gone(prefixes.get, group, "sdk-prefix")


def test_network_interface_takes_an_address_of_its_subnet(network, group, vnet):
    subnet = network.subnets.begin_create_or_update(
        group, vnet.name, "interfaces", net.Subnet(address_prefix="10.0.3.0/24")
    ).result()
    interfaces = network.network_interfaces

    def create(name: str, **ip_properties) -> net.NetworkInterface:
        return interfaces.begin_create_or_update(group, name, interface(subnet.id, **ip_properties)).result()

    dynamic = create("sdk-nic-dynamic")
    static = create("sdk-nic-static", private_ip_allocation_method="Static", private_ip_address="10.0.3.50")
    dynamic_ip = dynamic.ip_configurations[0]
    # Azure keeps the first four addresses of a subnet for itself.
    assert (dynamic_ip.private_ip_address, dynamic_ip.private_ip_allocation_method) == ("10.0.3.4", "Dynamic")
    assert dynamic_ip.primary is True
    assert static.ip_configurations[0].private_ip_address == "10.0.3.50"
    assert dynamic.mac_address is None and dynamic.virtual_machine is None
    assert ids(network.subnets.get(group, vnet.name, "interfaces").ip_configurations) == {
        dynamic_ip.id.lower(),
        static.ip_configurations[0].id.lower(),
    }
    assert {"sdk-nic-dynamic", "sdk-nic-static"} <= names(interfaces.list(group))
    assert dynamic.id.lower() in ids(interfaces.list_all())
    assert interfaces.update_tags(group, "sdk-nic-static", net.TagsObject(tags={"t": "1"})).tags == {"t": "1"}

    with arm_error("PrivateIPAddressInUse", 400):
        create("sdk-nic-clash", private_ip_allocation_method="Static", private_ip_address="10.0.3.50")
    with arm_error("InUseSubnetCannotBeDeleted", 400):
        network.subnets.begin_delete(group, vnet.name, "interfaces").result()

    for name in ("sdk-nic-dynamic", "sdk-nic-static"):
        interfaces.begin_delete(group, name).result()
        assert_gone(interfaces.get, group, name)
    network.subnets.begin_delete(group, vnet.name, "interfaces").result()
    assert_gone(network.subnets.get, group, vnet.name, "interfaces")
