"""Tags at any scope and the generic lists of resources, through azure-mgmt-resource: what CAPZ's
manager patches on every machine, and what `az resource list` reads."""

from azure.mgmt.network import models as net
from azure.mgmt.resource.resources.models import Tags, TagsPatchResource, TagsResource

from support import LOCATION, SUBSCRIPTION_SCOPE, arm_error, group_id, names


def test_tags_at_resource_group_and_subscription_scope(network, resources, group):
    vnet = network.virtual_networks.begin_create_or_update(
        group,
        "sdk-tagged",
        net.VirtualNetwork(location=LOCATION, address_space=net.AddressSpace(address_prefixes=["10.80.0.0/16"])),
    ).result()
    tags = resources.tags
    owned = {"sigs.k8s.io_cluster-api-provider-azure_cluster_demo": "owned"}
    replaced = tags.begin_create_or_update_at_scope(vnet.id, TagsResource(properties=Tags(tags=owned))).result()
    assert replaced.properties.tags == {"sigs.k8s.io_cluster-api-provider-azure_cluster_demo": "owned"}
    merged = tags.begin_update_at_scope(
        vnet.id, TagsPatchResource(operation="Merge", properties=Tags(tags={"Name": "sdk-tagged"}))
    ).result()
    assert set(merged.properties.tags) == {"sigs.k8s.io_cluster-api-provider-azure_cluster_demo", "Name"}
    assert network.virtual_networks.get(group, "sdk-tagged").tags == merged.properties.tags
    deletion = TagsPatchResource(operation="Delete", properties=Tags(tags={"Name": ""}))
    removed = tags.begin_update_at_scope(vnet.id, deletion).result()
    assert list(removed.properties.tags) == ["sigs.k8s.io_cluster-api-provider-azure_cluster_demo"]
    assert tags.get_at_scope(vnet.id).properties.tags == removed.properties.tags
    with arm_error("InvalidTagNameCharacters", 400):
        tags.begin_create_or_update_at_scope(vnet.id, TagsResource(properties=Tags(tags={"a<b": "x"}))).result()

    tags.begin_create_or_update_at_scope(group_id(group), TagsResource(properties=Tags(tags={"stage": "sdk"}))).result()
    assert resources.resource_groups.get(group).tags == {"stage": "sdk"}
    tags.begin_create_or_update_at_scope(SUBSCRIPTION_SCOPE, TagsResource(properties=Tags(tags={"org": "capz"}))).result()
    assert tags.get_at_scope(SUBSCRIPTION_SCOPE).properties.tags == {"org": "capz"}
    tags.begin_delete_at_scope(SUBSCRIPTION_SCOPE).result()
    assert tags.get_at_scope(SUBSCRIPTION_SCOPE).properties.tags == {}
    network.virtual_networks.begin_delete(group, "sdk-tagged").result()


def test_generic_lists_of_resources(network, resources):
    resources.resource_groups.create_or_update("sdk-list", {"location": LOCATION})
    for index in range(3):
        network.network_security_groups.begin_create_or_update(
            "sdk-list", f"nsg-{index}", net.NetworkSecurityGroup(location=LOCATION, tags={"index": str(index)})
        ).result()
    network.virtual_networks.begin_create_or_update(
        "sdk-list",
        "vnet",
        net.VirtualNetwork(location=LOCATION, address_space=net.AddressSpace(address_prefixes=["10.81.0.0/16"])),
    ).result()
    listed = list(resources.resources.list_by_resource_group("sdk-list"))
    assert names(listed) == {"nsg-0", "nsg-1", "nsg-2", "vnet"}
    assert {item.type for item in listed} == {"Microsoft.Network/networkSecurityGroups", "Microsoft.Network/virtualNetworks"}
    groups_only = resources.resources.list_by_resource_group(
        "sdk-list", filter="resourceType eq 'Microsoft.Network/networkSecurityGroups'"
    )
    assert names(groups_only) == {"nsg-0", "nsg-1", "nsg-2"}
    tagged = resources.resources.list(filter="tagName eq 'index' and tagValue eq '1'")
    assert names(tagged) == {"nsg-1"}
    resources.resource_groups.begin_delete("sdk-list").result()
