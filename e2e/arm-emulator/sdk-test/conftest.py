"""Clients of the official Azure SDK for Python pointed at a running emulator.

The emulator's base URL and the CA certificate to trust come from ARM_EMULATOR_URL and
ARM_EMULATOR_CA (`just sdk-test` sets both).
"""

import os

import pytest
from azure.identity import ClientSecretCredential
from azure.mgmt.authorization import AuthorizationManagementClient
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.containerservice import ContainerServiceClient
from azure.mgmt.msi import ManagedServiceIdentityClient
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.network.models import AddressSpace, Subnet, VirtualNetwork
from azure.mgmt.privatedns import PrivateDnsManagementClient
from azure.mgmt.resource.resources import ResourceManagementClient
from azure.mgmt.storage import StorageManagementClient

from support import CLIENT_ID, CLIENT_SECRET, LOCATION, SUBSCRIPTION, TENANT


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("ARM_EMULATOR_URL")
    if not url:
        pytest.exit("ARM_EMULATOR_URL is not set: run `just sdk-test`", returncode=2)
    return url.rstrip("/")


@pytest.fixture(scope="session")
def ca_file() -> str:
    path = os.environ.get("ARM_EMULATOR_CA")
    if not path:
        pytest.exit("ARM_EMULATOR_CA is not set: run `just sdk-test`", returncode=2)
    return path


@pytest.fixture(scope="session")
def credential(base_url, ca_file):
    # The emulator is its own authority; MSAL's instance discovery would ask Microsoft's servers.
    return ClientSecretCredential(
        TENANT,
        CLIENT_ID,
        CLIENT_SECRET,
        authority=base_url,
        disable_instance_discovery=True,
        connection_verify=ca_file,
    )


@pytest.fixture(scope="session")
def make_client(base_url, ca_file, credential):
    """Builds an ARM client the way a custom cloud is set up: ARM at `base_url`, tokens for it."""

    def make(client_class):
        return client_class(
            credential,
            SUBSCRIPTION,
            base_url=base_url,
            credential_scopes=[f"{base_url}/.default"],
            connection_verify=ca_file,
            # Operations finish at once here; the SDKs' default would wait 30 s between polls.
            polling_interval=0,
        )

    return make


@pytest.fixture(scope="session")
def resources(make_client) -> ResourceManagementClient:
    return make_client(ResourceManagementClient)


@pytest.fixture(scope="session")
def network(make_client) -> NetworkManagementClient:
    return make_client(NetworkManagementClient)


@pytest.fixture(scope="session")
def compute(make_client) -> ComputeManagementClient:
    return make_client(ComputeManagementClient)


@pytest.fixture(scope="session")
def aks(make_client) -> ContainerServiceClient:
    return make_client(ContainerServiceClient)


@pytest.fixture(scope="session")
def private_dns(make_client) -> PrivateDnsManagementClient:
    return make_client(PrivateDnsManagementClient)


@pytest.fixture(scope="session")
def storage(make_client) -> StorageManagementClient:
    return make_client(StorageManagementClient)


@pytest.fixture(scope="session")
def msi(make_client) -> ManagedServiceIdentityClient:
    return make_client(ManagedServiceIdentityClient)


@pytest.fixture(scope="session")
def authorization(make_client) -> AuthorizationManagementClient:
    return make_client(AuthorizationManagementClient)


@pytest.fixture(scope="session")
def group(resources) -> str:
    """A resource group most tests create their resources in."""
    name = "sdk-test"
    resources.resource_groups.create_or_update(name, {"location": LOCATION})
    yield name
    if resources.resource_groups.check_existence(name):
        resources.resource_groups.begin_delete(name).result()


@pytest.fixture(scope="session")
def vnet(network, group) -> VirtualNetwork:
    """A virtual network 10.0.0.0/16 with a subnet `nodes` (10.0.1.0/24)."""
    body = VirtualNetwork(
        location=LOCATION,
        address_space=AddressSpace(address_prefixes=["10.0.0.0/16"]),
        subnets=[Subnet(name="nodes", address_prefix="10.0.1.0/24")],
    )
    return network.virtual_networks.begin_create_or_update(group, "shared-vnet", body).result()


@pytest.fixture(scope="session")
def nodes_subnet(vnet) -> Subnet:
    return next(subnet for subnet in vnet.subnets if subnet.name == "nodes")
