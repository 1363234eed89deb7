"""Constants, request bodies and assertions shared by the tests."""

import contextlib

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.compute import models as cm
from azure.mgmt.network import models as net

# The emulator's built-in principal and subscription.
TENANT = "00000000-0000-0000-0000-000000000000"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
CLIENT_ID = "11111111-1111-1111-1111-111111111111"
CLIENT_SECRET = "emulator-client-secret"

LOCATION = "westus2"
SUBSCRIPTION_SCOPE = f"/subscriptions/{SUBSCRIPTION}"

# CAPZ's reference marketplace image (publisher, offer, SKU) and a size it runs on.
CAPZ_IMAGE = ("cncf-upstream", "capi", "ubuntu-2204-gen1")
SIZE = "Standard_D2s_v3"

# Built-in role definitions have the same GUID in every tenant.
CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"


def group_id(group: str) -> str:
    return f"{SUBSCRIPTION_SCOPE}/resourceGroups/{group}"


def resource_id(group: str, provider_type: str, *names: str) -> str:
    """The ARM id of a resource: `provider_type` as `Microsoft.Network/virtualNetworks/subnets`
    with one name per type segment."""
    namespace, *types = provider_type.split("/")
    path = "/".join(f"{kind}/{name}" for kind, name in zip(types, names, strict=True))
    return f"{group_id(group)}/providers/{namespace}/{path}"


def role_definition_id(role: str) -> str:
    return f"{SUBSCRIPTION_SCOPE}/providers/Microsoft.Authorization/roleDefinitions/{role}"


def same_id(left: str | None, right: str) -> bool:
    """ARM ids compare without regard to case (Azure returns some segments upper-cased)."""
    return left is not None and left.lower() == right.lower()


def ids(items) -> set[str]:
    """The lower-cased ids of listed resources or sub-resource references."""
    return {item.id.lower() for item in items or []}


def names(items) -> set[str]:
    return {item.name for item in items}


def pages(pager) -> list[list]:
    """A list's items page by page, following every `nextLink`."""
    return [list(page) for page in pager.by_page()]


@contextlib.contextmanager
def arm_error(code: str, status: int):
    """Expects the block to fail with ARM's error `code` and HTTP `status`."""
    with pytest.raises(HttpResponseError) as caught:
        yield caught
    error = caught.value
    assert error.status_code == status, error
    assert error.error is not None and error.error.code == code, error


def assert_gone(read, *args) -> None:
    """A read of a deleted resource answers 404."""
    with pytest.raises(ResourceNotFoundError):
        read(*args)


def ref(target: str) -> net.SubResource:
    """A reference to another network resource by id."""
    return net.SubResource(id=target)


def standard_public_ip(**properties) -> net.PublicIPAddress:
    """A static Standard public IP address, as load balancers and NAT gateways take."""
    return net.PublicIPAddress(
        location=LOCATION,
        sku=net.PublicIPAddressSku(name="Standard"),
        public_ip_allocation_method="Static",
        **properties,
    )


def interface(subnet_id: str, **ip_properties) -> net.NetworkInterface:
    """A network interface with one IP configuration, `ipconfig1`, in the subnet."""
    config = net.NetworkInterfaceIPConfiguration(name="ipconfig1", subnet=net.Subnet(id=subnet_id), **ip_properties)
    return net.NetworkInterface(location=LOCATION, ip_configurations=[config])


def linux_machine(name: str, nic_id: str) -> cm.VirtualMachine:
    """A Linux machine booting CAPZ's image, signed in to with an SSH key; its OS disk goes with it."""
    publisher, offer, sku = CAPZ_IMAGE
    ssh_key = cm.SshPublicKey(path="/home/capi/.ssh/authorized_keys", key_data="ssh-ed25519 AAAAC3Nza sdk-test")
    return cm.VirtualMachine(
        location=LOCATION,
        hardware_profile=cm.HardwareProfile(vm_size=SIZE),
        storage_profile=cm.StorageProfile(
            image_reference=cm.ImageReference(publisher=publisher, offer=offer, sku=sku, version="latest"),
            os_disk=cm.OSDisk(
                create_option="FromImage",
                delete_option="Delete",
                managed_disk=cm.ManagedDiskParameters(storage_account_type="Premium_LRS"),
            ),
        ),
        os_profile=cm.OSProfile(
            computer_name=name,
            admin_username="capi",
            linux_configuration=cm.LinuxConfiguration(
                disable_password_authentication=True, ssh=cm.SshConfiguration(public_keys=[ssh_key])
            ),
        ),
        network_profile=cm.NetworkProfile(network_interfaces=[cm.NetworkInterfaceReference(id=nic_id, primary=True)]),
    )
