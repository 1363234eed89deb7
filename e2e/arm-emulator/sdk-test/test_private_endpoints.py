"""Private endpoints through azure-mgmt-network, to a storage account made with azure-mgmt-storage:
the interface Azure makes for the endpoint, the connection the account lists, and a DNS zone group
writing the account's record into a private DNS zone."""

from azure.mgmt.network import models as net
from azure.mgmt.privatedns import models as dns
from azure.mgmt.storage import models as st

from support import LOCATION, arm_error, assert_gone, resource_id


def test_private_endpoint_to_a_storage_account(network, storage, private_dns, resources, group):
    network.virtual_networks.begin_create_or_update(
        group,
        "sdk-pe-vnet",
        net.VirtualNetwork(
            location=LOCATION,
            address_space=net.AddressSpace(address_prefixes=["10.70.0.0/16"]),
            subnets=[net.Subnet(name="endpoints", address_prefix="10.70.1.0/24")],
        ),
    ).result()
    account = storage.storage_accounts.begin_create(
        group,
        "sdkteststore",
        st.StorageAccountCreateParameters(
            location=LOCATION, kind="StorageV2", sku=st.Sku(name="Standard_LRS")
        ),
    ).result()
    assert account.provisioning_state == "Succeeded"
    assert account.primary_endpoints.blob == "https://sdkteststore.blob.core.windows.net/"
    # Account names are global.
    resources.resource_groups.create_or_update("sdk-other", {"location": LOCATION})
    with arm_error("StorageAccountAlreadyTaken", 409):
        storage.storage_accounts.begin_create(
            "sdk-other",
            "sdkteststore",
            st.StorageAccountCreateParameters(location=LOCATION, kind="StorageV2", sku=st.Sku(name="Standard_LRS")),
        ).result()
    resources.resource_groups.begin_delete("sdk-other").result()

    subnet_id = resource_id(group, "Microsoft.Network/virtualNetworks/subnets", "sdk-pe-vnet", "endpoints")
    endpoint = network.private_endpoints.begin_create_or_update(
        group,
        "sdk-pe",
        net.PrivateEndpoint(
            location=LOCATION,
            subnet=net.Subnet(id=subnet_id),
            private_link_service_connections=[
                net.PrivateLinkServiceConnection(name="blob", private_link_service_id=account.id, group_ids=["blob"])
            ],
        ),
    ).result()
    assert endpoint.provisioning_state == "Succeeded"
    state = endpoint.private_link_service_connections[0].private_link_service_connection_state
    assert state.status == "Approved"
    address = endpoint.custom_dns_configs[0].ip_addresses[0]
    assert endpoint.custom_dns_configs[0].fqdn == "sdkteststore.blob.core.windows.net"
    nic_name = endpoint.network_interfaces[0].id.rsplit("/", 1)[1]
    nic = network.network_interfaces.get(group, nic_name)
    assert nic.ip_configurations[0].private_ip_address == address
    assert nic.private_endpoint.id.lower() == endpoint.id.lower()
    listed = storage.storage_accounts.get_properties(group, "sdkteststore").private_endpoint_connections
    assert [c.private_endpoint.id.lower() for c in listed] == [endpoint.id.lower()]

    zone = private_dns.private_zones.begin_create_or_update(
        group, "privatelink.blob.core.windows.net", dns.PrivateZone(location="global")
    ).result()
    network.private_dns_zone_groups.begin_create_or_update(
        group,
        "sdk-pe",
        "default",
        net.PrivateDnsZoneGroup(
            private_dns_zone_configs=[net.PrivateDnsZoneConfig(name="blob", private_dns_zone_id=zone.id)]
        ),
    ).result()
    record = private_dns.record_sets.get(group, "privatelink.blob.core.windows.net", "A", "sdkteststore")
    assert record.a_records[0].ipv4_address == address

    network.private_dns_zone_groups.begin_delete(group, "sdk-pe", "default").result()
    assert_gone(private_dns.record_sets.get, group, "privatelink.blob.core.windows.net", "A", "sdkteststore")
    network.private_endpoints.begin_delete(group, "sdk-pe").result()
    assert_gone(network.network_interfaces.get, group, nic_name)
    private_dns.private_zones.begin_delete(group, "privatelink.blob.core.windows.net").result()
    storage.storage_accounts.delete(group, "sdkteststore")
    assert_gone(storage.storage_accounts.get_properties, group, "sdkteststore")
    network.virtual_networks.begin_delete(group, "sdk-pe-vnet").result()
