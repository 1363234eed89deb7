"""What private clusters are built from, through azure-mgmt-network and azure-mgmt-privatedns:
virtual network peerings, bastion hosts, private DNS zones with their links and record sets."""

from azure.mgmt.network import models as net
from azure.mgmt.privatedns import models as dns

from support import LOCATION, arm_error, assert_gone, names, ref, resource_id, standard_public_ip


def network_body(prefix: str, *subnets: net.Subnet) -> net.VirtualNetwork:
    return net.VirtualNetwork(
        location=LOCATION, address_space=net.AddressSpace(address_prefixes=[prefix]), subnets=list(subnets)
    )


def test_peerings_in_both_directions(network, resources, group):
    resources.resource_groups.create_or_update("sdk-spoke", {"location": LOCATION})
    hub = network.virtual_networks.begin_create_or_update(group, "sdk-hub", network_body("10.40.0.0/16")).result()
    spoke = network.virtual_networks.begin_create_or_update(
        "sdk-spoke", "sdk-spoke", network_body("10.41.0.0/16")
    ).result()
    peerings = network.virtual_network_peerings

    there = peerings.begin_create_or_update(
        group, "sdk-hub", "to-spoke", net.VirtualNetworkPeering(remote_virtual_network=ref(spoke.id))
    ).result()
    assert there.peering_state == "Initiated"
    assert there.remote_address_space.address_prefixes == ["10.41.0.0/16"]
    assert there.allow_virtual_network_access is True and there.allow_forwarded_traffic is False

    back = peerings.begin_create_or_update(
        "sdk-spoke",
        "sdk-spoke",
        "to-hub",
        net.VirtualNetworkPeering(remote_virtual_network=ref(hub.id), allow_forwarded_traffic=True),
    ).result()
    assert back.peering_state == "Connected" and back.peering_sync_level == "FullyInSync"
    assert peerings.get(group, "sdk-hub", "to-spoke").peering_state == "Connected"
    assert names(peerings.list(group, "sdk-hub")) == {"to-spoke"}
    # The network shows its peering; a PUT of the network without it keeps it.
    assert [p.name for p in network.virtual_networks.get(group, "sdk-hub").virtual_network_peerings] == ["to-spoke"]
    network.virtual_networks.begin_create_or_update(group, "sdk-hub", network_body("10.40.0.0/16")).result()
    assert peerings.get(group, "sdk-hub", "to-spoke").peering_state == "Connected"

    overlapping = network.virtual_networks.begin_create_or_update(
        group, "sdk-overlap", network_body("10.40.128.0/17")
    ).result()
    with arm_error("VnetAddressSpacesOverlap", 400):
        peerings.begin_create_or_update(
            group, "sdk-hub", "to-overlap", net.VirtualNetworkPeering(remote_virtual_network=ref(overlapping.id))
        ).result()

    # Deleting the spoke's group leaves the hub's side disconnected: the peering is the hub's.
    resources.resource_groups.begin_delete("sdk-spoke").result()
    assert peerings.get(group, "sdk-hub", "to-spoke").peering_state == "Disconnected"
    peerings.begin_delete(group, "sdk-hub", "to-spoke").result()
    assert_gone(peerings.get, group, "sdk-hub", "to-spoke")
    network.virtual_networks.begin_delete(group, "sdk-hub").result()
    network.virtual_networks.begin_delete(group, "sdk-overlap").result()


def test_bastion_host_in_its_subnet(network, group):
    network.virtual_networks.begin_create_or_update(
        group,
        "sdk-bastion-vnet",
        network_body("10.50.0.0/16", net.Subnet(name="AzureBastionSubnet", address_prefix="10.50.0.0/27")),
    ).result()
    address = network.public_ip_addresses.begin_create_or_update(
        group, "sdk-bastion-ip", standard_public_ip()
    ).result()
    subnet_id = resource_id(group, "Microsoft.Network/virtualNetworks/subnets", "sdk-bastion-vnet", "AzureBastionSubnet")
    body = net.BastionHost(
        location=LOCATION,
        sku=net.Sku(name="Standard"),
        scale_units=2,
        ip_configurations=[
            net.BastionHostIPConfiguration(name="default", subnet=ref(subnet_id), public_ip_address=ref(address.id))
        ],
    )
    host = network.bastion_hosts.begin_create_or_update(group, "sdk-bastion", body).result()
    assert host.provisioning_state == "Succeeded"
    assert host.dns_name.endswith(".bastion.azure.com")
    assert host.sku.name == "Standard" and host.scale_units == 2
    assert host.ip_configurations[0].subnet.id.lower() == subnet_id.lower()
    assert "sdk-bastion" in names(network.bastion_hosts.list_by_resource_group(group))

    # Scaling past two units needs a /26.
    body.scale_units = 4
    with arm_error("AzureBastionSubnetPrefixTooSmall", 400):
        network.bastion_hosts.begin_create_or_update(group, "sdk-bastion", body).result()

    network.bastion_hosts.begin_delete(group, "sdk-bastion").result()
    assert_gone(network.bastion_hosts.get, group, "sdk-bastion")
    network.public_ip_addresses.begin_delete(group, "sdk-bastion-ip").result()
    network.virtual_networks.begin_delete(group, "sdk-bastion-vnet").result()


def test_private_dns_zone_links_and_records(private_dns, network, group):
    vnet = network.virtual_networks.begin_create_or_update(
        group, "sdk-dns-vnet", network_body("10.60.0.0/16")
    ).result()
    zone_name = "sdk-cluster.capz.io"
    zone = private_dns.private_zones.begin_create_or_update(
        group, zone_name, dns.PrivateZone(location="global")
    ).result()
    assert zone.location == "global" and zone.provisioning_state == "Succeeded"
    assert zone.number_of_record_sets == 1  # the SOA record set
    assert zone_name in names(private_dns.private_zones.list_by_resource_group(group))

    link = private_dns.virtual_network_links.begin_create_or_update(
        group,
        zone_name,
        "sdk-dns-vnet",
        dns.VirtualNetworkLink(location="global", virtual_network=dns.SubResource(id=vnet.id), registration_enabled=False),
    ).result()
    assert link.virtual_network_link_state == "Completed" and link.provisioning_state == "Succeeded"

    record = private_dns.record_sets.create_or_update(
        group,
        zone_name,
        "A",
        "apiserver",
        dns.RecordSet(ttl=300, a_records=[dns.ARecord(ipv4_address="10.60.0.100")]),
    )
    assert record.fqdn == f"apiserver.{zone_name}."
    assert private_dns.record_sets.get(group, zone_name, "A", "apiserver").a_records[0].ipv4_address == "10.60.0.100"
    aaaa = private_dns.record_sets.create_or_update(
        group, zone_name, "AAAA", "apiserver", dns.RecordSet(ttl=300, aaaa_records=[dns.AaaaRecord(ipv6_address="fd00::100")])
    )
    assert aaaa.aaaa_records[0].ipv6_address == "fd00::100"
    assert {r.name for r in private_dns.record_sets.list_by_type(group, zone_name, "A")} == {"apiserver"}
    zone = private_dns.private_zones.get(group, zone_name)
    assert (zone.number_of_record_sets, zone.number_of_virtual_network_links) == (3, 1)

    # A zone with links cannot be deleted; records go with it.
    with arm_error("CannotDeleteResource", 409):
        private_dns.private_zones.begin_delete(group, zone_name).result()
    private_dns.virtual_network_links.begin_delete(group, zone_name, "sdk-dns-vnet").result()
    private_dns.private_zones.begin_delete(group, zone_name).result()
    assert_gone(private_dns.private_zones.get, group, zone_name)
    assert_gone(private_dns.record_sets.get, group, zone_name, "A", "apiserver")
    network.virtual_networks.begin_delete(group, "sdk-dns-vnet").result()
