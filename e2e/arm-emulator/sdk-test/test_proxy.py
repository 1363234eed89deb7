"""A client that knows only Azure's own host names reaches the emulator through its proxy: the
Azure SDK for Python with no authority, no base URL and no credential scopes set, given only
`HTTPS_PROXY` and the emulator's CA, signs in at login.microsoftonline.com and manages resources at
management.azure.com, long-running operations and paged lists included."""

import os

import pytest
from azure.identity import ClientSecretCredential
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network import models as net
from azure.mgmt.resource.resources import ResourceManagementClient

from support import CLIENT_ID, CLIENT_SECRET, LOCATION, SUBSCRIPTION, TENANT, names


@pytest.fixture
def through_proxy(monkeypatch, ca_file):
    proxy = os.environ.get("ARM_EMULATOR_PROXY")
    if not proxy:
        pytest.exit("ARM_EMULATOR_PROXY is not set: run `just sdk-test`", returncode=2)
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "")
    return ca_file


def test_unconfigured_clients_reach_the_emulator_through_its_proxy(through_proxy):
    credential = ClientSecretCredential(TENANT, CLIENT_ID, CLIENT_SECRET, connection_verify=through_proxy)
    resources = ResourceManagementClient(credential, SUBSCRIPTION, connection_verify=through_proxy, polling_interval=0)
    network = NetworkManagementClient(credential, SUBSCRIPTION, connection_verify=through_proxy, polling_interval=0)
    group = resources.resource_groups.create_or_update("sdk-proxy", {"location": LOCATION})
    assert group.id.endswith("/resourceGroups/sdk-proxy")
    for index in range(3):
        network.network_security_groups.begin_create_or_update(
            "sdk-proxy", f"nsg-{index}", net.NetworkSecurityGroup(location=LOCATION)
        ).result()
    # Two to a page: the nextLink names management.azure.com, reached through the proxy again.
    assert names(network.network_security_groups.list("sdk-proxy")) == {"nsg-0", "nsg-1", "nsg-2"}
    resources.resource_groups.begin_delete("sdk-proxy").result()
    assert not resources.resource_groups.check_existence("sdk-proxy")
