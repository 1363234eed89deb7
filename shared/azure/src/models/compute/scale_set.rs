//! Virtual machine scale sets: the machines of an AzureMachinePool, made from one model and
//! counted by the set's capacity. A Uniform set's instances live under the set
//! (`virtualMachineScaleSets/{set}/virtualMachines/{instanceId}`); a Flexible set's are virtual
//! machines of their own that name the set.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::API_VERSION;
use super::virtual_machine::{
    BillingProfile, DiagnosticsProfile, EvictionPolicy, InstanceView, LinuxConfiguration,
    ManagedServiceIdentity, Plan, Priority, SecurityProfile, StorageProfile, WindowsConfiguration,
};
use crate::id::{Location, ResourceId};
use crate::models::{ProvisioningState, Secret, SubResource, Tags};

/// A virtual machine scale set (`Microsoft.Compute/virtualMachineScaleSets`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VirtualMachineScaleSet {
    /// The set's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The set's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Microsoft.Compute/virtualMachineScaleSets` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The set's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The set's tags (its instances' are their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// The zones the instances are spread over; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// The size of the instances and how many there are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sku: Option<ScaleSetSku>,
    /// The managed identities every instance runs as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<ManagedServiceIdentity>,
    /// The marketplace plan of a third-party image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// The instance model and the set's policies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ScaleSetProperties>,
}

/// The size of a set's instances and their number.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetSku {
    /// The instances' size, such as `Standard_D2s_v3` (Azure may answer it in capitals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `Standard` (answered, not sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// How many instances the set keeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u64>,
}

/// A set's instance model, policies and (read-only) state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetProperties {
    /// `Uniform` or `Flexible`; fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orchestration_mode: Option<OrchestrationMode>,
    /// How a change of the model reaches existing instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_policy: Option<UpgradePolicy>,
    /// What every instance is made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machine_profile: Option<ScaleSetVmProfile>,
    /// Whether Azure creates extra instances while scaling out (Uniform only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overprovision: Option<bool>,
    /// Whether the set is limited to one placement group of 100 instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub single_placement_group: Option<bool>,
    /// Fault domains per zone (Flexible sets require it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_fault_domain_count: Option<u32>,
    /// Which instances go first when the capacity shrinks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_in_policy: Option<ScaleInPolicy>,
    /// Where the last write stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// The set's unique id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_id: Option<String>,
    /// When the set was created, RFC 3339 (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_created: Option<String>,
}

lenient_enum! {
    /// How a set keeps its instances.
    pub enum OrchestrationMode {
        /// Identical instances under the set, made and removed by its capacity.
        Uniform = "Uniform",
        /// Instances that are virtual machines of their own, which name the set.
        Flexible = "Flexible",
    }
}

/// How a change of a set's model reaches its instances.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradePolicy {
    /// `Manual`, `Automatic` or `Rolling`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<UpgradeMode>,
}

lenient_enum! {
    /// When instances move to a new model.
    pub enum UpgradeMode {
        /// Only when asked (`manualUpgrade`, a reimage) or replaced: the controller decides.
        Manual = "Manual",
        /// At once, all together.
        Automatic = "Automatic",
        /// In batches Azure chooses.
        Rolling = "Rolling",
    }
}

/// Which instances a shrinking capacity removes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleInPolicy {
    /// The rules, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<ScaleInRule>>,
}

lenient_enum! {
    /// One way of choosing the instances a scale-in removes.
    pub enum ScaleInRule {
        /// Balanced across zones and fault domains, highest instance id first.
        Default = "Default",
        /// The oldest instances first.
        OldestVm = "OldestVM",
        /// The newest instances first.
        NewestVm = "NewestVM",
    }
}

/// What every instance of a set is made from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetVmProfile {
    /// The guests' name prefix, admin account and bootstrap data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_profile: Option<ScaleSetOsProfile>,
    /// The image and disks (the OS disk unnamed: each instance gets its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_profile: Option<StorageProfile>,
    /// The interfaces each instance gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_profile: Option<ScaleSetNetworkProfile>,
    /// The extensions each instance runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extension_profile: Option<ScaleSetExtensionProfile>,
    /// Trusted launch, confidential computing and host encryption.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_profile: Option<SecurityProfile>,
    /// Boot diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics_profile: Option<DiagnosticsProfile>,
    /// `Spot` for cheap capacity Azure may take back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// What happens to a spot instance Azure takes back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eviction_policy: Option<EvictionPolicy>,
    /// The most a spot instance may cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing_profile: Option<BillingProfile>,
}

/// The guests' name prefix, admin account and bootstrap data. Azure never answers the password
/// or the custom data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetOsProfile {
    /// Each instance's host name begins with this; Azure adds a suffix of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computer_name_prefix: Option<String>,
    /// The admin account's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_username: Option<String>,
    /// The admin account's password (Windows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_password: Option<Secret>,
    /// Base64 of the bootstrap data every new instance runs at first boot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_data: Option<Secret>,
    /// How a Linux guest is signed into.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linux_configuration: Option<LinuxConfiguration>,
    /// How a Windows guest is run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_configuration: Option<WindowsConfiguration>,
    /// Whether extensions may be installed on the instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_extension_operations: Option<bool>,
}

/// The interfaces each instance of a set gets.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetNetworkProfile {
    /// One configuration per interface, the primary first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_interface_configurations: Option<Vec<ScaleSetNetworkInterface>>,
    /// The network api-version a Flexible set creates its instances' interfaces with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_api_version: Option<String>,
}

/// One interface of each instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetNetworkInterface {
    /// The configuration's name, unique in the set.
    pub name: String,
    /// Its settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ScaleSetNetworkInterfaceProperties>,
}

/// The settings of one interface of each instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetNetworkInterfaceProperties {
    /// Whether this is the instances' primary interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// Whether the interface bypasses the host's virtual switch (the size must support it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_accelerated_networking: Option<bool>,
    /// Whether the interface forwards traffic not addressed to it.
    #[serde(rename = "enableIPForwarding", skip_serializing_if = "Option::is_none")]
    pub enable_ip_forwarding: Option<bool>,
    /// The interface's addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_configurations: Option<Vec<ScaleSetIpConfiguration>>,
}

/// One address configuration of each instance's interface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetIpConfiguration {
    /// The configuration's name.
    pub name: String,
    /// Its settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ScaleSetIpConfigurationProperties>,
}

/// The settings of one address configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetIpConfigurationProperties {
    /// The subnet the address is taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<SubResource>,
    /// Whether this is the interface's primary address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// `IPv4` or `IPv6`.
    #[serde(rename = "privateIPAddressVersion", skip_serializing_if = "Option::is_none")]
    pub private_ip_address_version: Option<String>,
    /// The load balancer backend pools the instances join.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_backend_address_pools: Option<Vec<SubResource>>,
}

/// The extensions each instance of a set runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetExtensionProfile {
    /// The extensions, by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<ScaleSetExtension>>,
}

/// One extension of a set's model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetExtension {
    /// The extension's name, unique in the set.
    pub name: String,
    /// What runs, and with which settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ScaleSetExtensionProperties>,
}

/// What an extension of a set installs. Its settings are kept as Azure answers them: extensions
/// others add to the model (monitoring agents added by policy, say) take settings of any shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetExtensionProperties {
    /// Who publishes the extension, such as `Microsoft.Azure.Extensions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The extension's type within its publisher, such as `CustomScript`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub extension_type: Option<String>,
    /// The extension's version (major.minor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_handler_version: Option<String>,
    /// Whether Azure may move the extension to a newer minor version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_upgrade_minor_version: Option<bool>,
    /// Settings the extension reads, readable by anyone who can read the set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
    /// Settings Azure keeps encrypted and hands only to the guest (never answered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected_settings: Option<Secret<Value>>,
    /// Where the extension's installation stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// An instance of a Uniform set (`Microsoft.Compute/virtualMachineScaleSets/virtualMachines`),
/// as the set's instance list answers it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetInstance {
    /// The instance's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// `<set>_<instanceId>` (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The instance's number in the set, the last segment of its id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The instance's zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<Vec<String>>,
    /// The instance's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// Where the instance stands (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<ScaleSetInstanceProperties>,
    /// The extensions installed on the instance, each with where its installation stands
    /// (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<InstanceExtension>>,
}

/// An extension as installed on one instance: its name and how its installation went. Only
/// these are read, so that extensions others add, whatever their settings, never fail a list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceExtension {
    /// The extension's name, as the set's model names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where its installation stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<InstanceExtensionProperties>,
}

/// Where an extension's installation on one instance stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceExtensionProperties {
    /// `Creating` while it runs, then `Succeeded` or `Failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
}

/// Where an instance of a Uniform set stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleSetInstanceProperties {
    /// Whether the instance runs the set's current model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_model_applied: Option<bool>,
    /// Where the instance's last change stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioning_state: Option<ProvisioningState>,
    /// The machine's unique id, also seen from inside the guest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vm_id: Option<String>,
    /// The guest's host name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_profile: Option<InstanceOsProfile>,
    /// The instance's power state; only with `$expand=instanceView`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_view: Option<InstanceView>,
    /// When the instance was created, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_created: Option<String>,
    /// The set a Flexible set's virtual machine belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machine_scale_set: Option<SubResource>,
}

/// The part of an instance's OS profile that tells it apart: its host name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceOsProfile {
    /// The guest's host name, which its Node is named after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computer_name: Option<String>,
}

arm_model!(
    VirtualMachineScaleSet,
    "Microsoft.Compute/virtualMachineScaleSets",
    API_VERSION,
    tagged
);
arm_model!(
    ScaleSetInstance,
    "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
    API_VERSION,
    tagged
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{OrchestrationMode, ScaleInRule, ScaleSetInstance, UpgradeMode, VirtualMachineScaleSet};
    use crate::models::ProvisioningState;

    const SET: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool";

    /// A set as Azure answers it, with an extension someone else added whose settings are not
    /// strings.
    #[test]
    fn a_set_is_read_with_extensions_of_any_settings() {
        let answer = json!({
            "id": SET,
            "name": "pool",
            "type": "Microsoft.Compute/virtualMachineScaleSets",
            "location": "westeurope",
            "sku": {"name": "STANDARD_D2s_v3", "tier": "Standard", "capacity": 3},
            "zones": ["1", "2"],
            "properties": {
                "orchestrationMode": "Uniform",
                "upgradePolicy": {"mode": "Manual"},
                "scaleInPolicy": {"rules": ["OldestVM"], "forceDeletion": false},
                "singlePlacementGroup": false,
                "overprovision": false,
                "virtualMachineProfile": {
                    "osProfile": {"computerNamePrefix": "pool", "adminUsername": "capi", "secrets": []},
                    "networkProfile": {"networkInterfaceConfigurations": [{
                        "name": "pool-nic-0",
                        "properties": {"primary": true, "enableAcceleratedNetworking": true,
                            "ipConfigurations": [{"name": "ipconfig1", "properties": {
                                "subnet": {"id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/node"},
                                "primary": true, "privateIPAddressVersion": "IPv4"}}]}
                    }]},
                    "extensionProfile": {"extensions": [{
                        "name": "Monitor",
                        "properties": {"publisher": "Microsoft.Azure.Monitor", "type": "AzureMonitorLinuxAgent",
                            "typeHandlerVersion": "1.0", "settings": {"GCS_AUTO_CONFIG": true}}
                    }]}
                },
                "provisioningState": "Succeeded",
                "uniqueId": "f166fd2d-2f0b-49d1-88c0-19262879e4f6"
            }
        });
        let set: VirtualMachineScaleSet = serde_json::from_value(answer).expect("a set");
        let properties = set.properties.as_ref().expect("properties");
        assert_eq!(properties.orchestration_mode, Some(OrchestrationMode::Uniform));
        assert_eq!(
            properties
                .upgrade_policy
                .as_ref()
                .and_then(|policy| policy.mode.clone()),
            Some(UpgradeMode::Manual)
        );
        assert_eq!(
            properties
                .scale_in_policy
                .as_ref()
                .and_then(|policy| policy.rules.clone()),
            Some(vec![ScaleInRule::OldestVm])
        );
        assert_eq!(properties.provisioning_state, Some(ProvisioningState::Succeeded));
        assert_eq!(set.sku.as_ref().and_then(|sku| sku.capacity), Some(3));
        let extension = &properties
            .virtual_machine_profile
            .as_ref()
            .and_then(|profile| profile.extension_profile.as_ref())
            .and_then(|profile| profile.extensions.as_ref())
            .expect("extensions")[0];
        assert_eq!(
            extension.properties.as_ref().and_then(|p| p.settings.clone()),
            Some(json!({"GCS_AUTO_CONFIG": true}))
        );
    }

    /// What is written is only what was set: no read-only field, no empty list.
    #[test]
    fn a_new_set_is_written_with_only_what_was_set() {
        let set = VirtualMachineScaleSet {
            sku: Some(super::ScaleSetSku {
                name: Some("Standard_D2s_v3".into()),
                tier: None,
                capacity: Some(2),
            }),
            properties: Some(super::ScaleSetProperties {
                orchestration_mode: Some(OrchestrationMode::Flexible),
                platform_fault_domain_count: Some(1),
                ..super::ScaleSetProperties::default()
            }),
            ..VirtualMachineScaleSet::default()
        };
        assert_eq!(
            serde_json::to_value(&set).expect("serializes"),
            json!({
                "sku": {"name": "Standard_D2s_v3", "capacity": 2},
                "properties": {"orchestrationMode": "Flexible", "platformFaultDomainCount": 1}
            })
        );
    }

    #[test]
    fn an_instance_says_whether_it_runs_the_latest_model() {
        let instance: ScaleSetInstance = serde_json::from_value(json!({
            "id": format!("{SET}/virtualMachines/3"),
            "name": "pool_3",
            "instanceId": "3",
            "zones": ["2"],
            "properties": {
                "latestModelApplied": false,
                "provisioningState": "Succeeded",
                "vmId": "0c6d1f4a-7a8e-4a43-9c4e-4f4b3a3f3f3f",
                "osProfile": {"computerName": "pool000003"}
            }
        }))
        .expect("an instance");
        let properties = instance.properties.expect("properties");
        assert_eq!(properties.latest_model_applied, Some(false));
        assert_eq!(
            properties
                .os_profile
                .and_then(|profile| profile.computer_name)
                .as_deref(),
            Some("pool000003")
        );
    }
}
