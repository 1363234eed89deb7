//! Virtual machines (`Microsoft.Compute/virtualMachines`) of AzureMachines: size, image, OS and
//! data disks (created with the machine), admin user `capi` (with the spec's SSH key on Linux, a
//! throw-away random password on Windows, whose cloudbase-init sets its own), the bootstrap data
//! as custom data, identities, spot settings, security and diagnostics, a zone or an
//! availability set, and the machine's network interfaces.
//!
//! A machine is written once: like CAPZ, an existing machine is never updated (what it is made
//! of is fixed at creation, and custom data cannot change).

pub(crate) mod profile;

use capz_api::AzureMachineSpec;
use capz_azure::models::compute::{
    HardwareProfile, NetworkInterfaceReference, NetworkInterfaceReferenceProperties, NetworkProfile,
    VirtualMachine as Model, VirtualMachineProperties,
};
use capz_azure::models::{Secret, SubResource};
use capz_azure::{IdError, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::Tags;

pub use crate::image::{
    DEFAULT_WINDOWS_SERVER, ImageError, REFERENCE_GALLERY, REFERENCE_LINUX_IMAGE, ReferenceOs, ResolvedImage,
    resolve as resolve_image,
};
pub use profile::{ADMIN_USER, MachineSpecError, invalid};
pub(crate) use profile::{Paths, Spot};
use profile::{diagnostics_profile, identity, os_profile, security_profile, spot, storage_profile};

/// The longest computer name Windows takes.
const WINDOWS_NAME_LIMIT: usize = 15;

/// Whether the spec's machine runs Windows.
#[must_use]
pub fn is_windows(spec: &AzureMachineSpec) -> bool {
    profile::windows(&spec.vm)
}

/// The name of the VM of the AzureMachine `machine`: its own name, except that a Windows machine
/// whose name is longer than Windows takes is named by the first 9 characters of the name (less a
/// trailing dash) and its last 5, as CAPZ does, so the VM's computer name can be the same.
#[must_use]
pub fn vm_name(machine: &str, windows: bool) -> String {
    let chars: Vec<char> = machine.chars().collect();
    if !windows || chars.len() <= WINDOWS_NAME_LIMIT {
        return machine.to_owned();
    }
    let head: String = chars[..9].iter().collect();
    let tail: String = chars[chars.len() - 5..].iter().collect();
    format!("{}-{tail}", head.trim_end_matches('-'))
}

/// Where a machine is placed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// The availability zone.
    pub zone: Option<String>,
    /// The availability set, in a region without zones.
    pub availability_set: Option<ResourceId>,
}

/// What a machine is built from besides its spec.
#[derive(Debug, Clone)]
pub struct MachineInputs {
    /// Its image.
    pub image: ResolvedImage,
    /// Its bootstrap data, base64 encoded.
    pub custom_data: Secret,
    /// Its network interfaces, the primary first.
    pub network_interfaces: Vec<ResourceId>,
    /// Its zone or availability set.
    pub placement: Placement,
    /// Its tags.
    pub tags: Tags,
}

/// A machine as its AzureMachine wants it.
#[derive(Debug, Clone)]
pub struct VirtualMachine {
    id: ResourceId,
    cluster: String,
    /// `None` for a machine known only by name, to read or delete.
    body: Option<Model>,
}

impl VirtualMachine {
    /// The machine `name` in the cluster's resource group, built from its (defaulted) `spec`.
    ///
    /// # Errors
    /// When the spec holds what Azure cannot take, or what is not supported yet.
    pub fn new(
        scope: &ClusterScope,
        name: &str,
        spec: &AzureMachineSpec,
        inputs: MachineInputs,
    ) -> Result<Self, MachineSpecError> {
        let id = scope
            .id_of::<Model>(name)
            .map_err(|err| invalid("metadata.name", err.to_string()))?;
        let paths = Paths::MACHINE;
        let allow_extensions = !spec.disable_extension_operations.unwrap_or(false);
        let Spot {
            priority,
            eviction_policy,
            billing_profile,
        } = spot(&spec.vm, paths)?;
        let properties = VirtualMachineProperties {
            hardware_profile: Some(HardwareProfile {
                vm_size: Some(spec.vm.vm_size.clone()),
            }),
            storage_profile: Some(storage_profile(Some(name), &spec.vm, &inputs.image, paths)?),
            os_profile: Some(os_profile(
                name,
                &spec.vm,
                inputs.custom_data,
                allow_extensions,
                paths,
            )?),
            network_profile: Some(network_profile(&inputs.network_interfaces)),
            availability_set: inputs.placement.availability_set.map(SubResource::from),
            security_profile: spec.vm.security_profile.as_ref().map(security_profile),
            diagnostics_profile: spec.vm.diagnostics.as_ref().and_then(diagnostics_profile),
            priority,
            eviction_policy,
            billing_profile,
            ..VirtualMachineProperties::default()
        };
        let body = Model {
            location: Some(scope.location.clone()),
            tags: Some(inputs.tags),
            zones: inputs.placement.zone.map(|zone| vec![zone]),
            identity: identity(&spec.identities)?,
            plan: inputs.image.plan,
            properties: Some(properties),
            ..Model::default()
        };
        Ok(Self {
            id,
            cluster: scope.name.clone(),
            body: Some(body),
        })
    }

    /// The machine `name` in the cluster's resource group, known only by name: it can be read
    /// and deleted, never created.
    ///
    /// # Errors
    /// When `name` is not a valid resource name.
    pub fn named(scope: &ClusterScope, name: &str) -> Result<Self, IdError> {
        Ok(Self {
            id: scope.id_of::<Model>(name)?,
            cluster: scope.name.clone(),
            body: None,
        })
    }

    /// The `providerID` of the machine: `azure://` and its id with the resource group in lower
    /// case, as the Azure cloud provider writes it on the Node.
    #[must_use]
    pub fn provider_id(&self) -> String {
        provider_id(&self.id)
    }
}

/// The `providerID` of the machine `id`.
#[must_use]
pub fn provider_id(id: &ResourceId) -> String {
    let text = id.to_string();
    let group = id
        .resource_group_name()
        .map(|group| group.as_str().to_owned())
        .unwrap_or_default();
    let marker = format!("/resourceGroups/{group}/");
    let lowered = text.replacen(
        &marker,
        &format!("/resourceGroups/{}/", group.to_ascii_lowercase()),
        1,
    );
    format!("azure://{lowered}")
}

impl AzureResource for VirtualMachine {
    type Model = Model;
    const SERVICE: &'static str = "virtualmachine";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        self.body.clone().filter(|_| existing.is_none())
    }
}

fn network_profile(interfaces: &[ResourceId]) -> NetworkProfile {
    NetworkProfile {
        network_interfaces: Some(
            interfaces
                .iter()
                .enumerate()
                .map(|(index, id)| NetworkInterfaceReference {
                    id: id.clone(),
                    properties: Some(NetworkInterfaceReferenceProperties {
                        primary: Some(index == 0),
                        delete_option: None,
                    }),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use capz_kit::tags::Role;
    use capz_rules::Features;

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use capz_kit::conditions::Reason;
    use capz_kit::policy::Classify as _;

    use super::*;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f test";

    fn scope() -> ClusterScope {
        let cluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001", "resourceGroup": "My-RG"},
        }))
        .unwrap();
        ClusterScope::new(&cluster, Features::default(), None).unwrap()
    }

    fn spec(extra: &serde_json::Value) -> AzureMachineSpec {
        let mut value = serde_json::json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "diskSizeGB": 128, "cachingType": "ReadWrite",
                "managedDisk": {"storageAccountType": "Premium_LRS"}},
            "sshPublicKey": STANDARD.encode(KEY),
            "dataDisks": [{"nameSuffix": "etcddisk", "diskSizeGB": 256, "lun": 0, "cachingType": "None"}],
        });
        if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            value.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    fn inputs(scope: &ClusterScope, placement: Placement) -> MachineInputs {
        MachineInputs {
            image: resolve_image(None, Some("v1.33.1"), ReferenceOs::Linux).unwrap(),
            custom_data: Secret::new(STANDARD.encode("#cloud-config\n")),
            network_interfaces: vec![
                scope
                    .id_of::<capz_azure::models::network::NetworkInterface>("m-0-nic")
                    .unwrap(),
            ],
            placement,
            tags: scope.owned_tags(Role::Node),
        }
    }

    #[test]
    fn a_machine_body_carries_its_spec_and_is_written_once() {
        let scope = scope();
        let zoned = Placement {
            zone: Some("2".into()),
            availability_set: None,
        };
        let machine = VirtualMachine::new(
            &scope,
            "m-0",
            &spec(&serde_json::json!({})),
            inputs(&scope, zoned),
        )
        .unwrap();
        let body = machine.desired(None).unwrap();
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["zones"], serde_json::json!(["2"]));
        let properties = &json["properties"];
        assert_eq!(properties["hardwareProfile"]["vmSize"], "Standard_D2s_v3");
        let storage = &properties["storageProfile"];
        assert_eq!(storage["osDisk"]["name"], "m-0_OSDisk");
        assert_eq!(storage["osDisk"]["createOption"], "FromImage");
        assert_eq!(storage["osDisk"]["diskSizeGB"], 128);
        assert_eq!(
            storage["osDisk"]["managedDisk"]["storageAccountType"],
            "Premium_LRS"
        );
        assert_eq!(storage["dataDisks"][0]["name"], "m-0_etcddisk");
        assert_eq!(storage["dataDisks"][0]["createOption"], "Empty");
        assert_eq!(storage["dataDisks"][0]["caching"], "None");
        assert!(
            storage["imageReference"]["communityGalleryImageId"]
                .as_str()
                .unwrap()
                .ends_with("/capi-ubun2-2404/Versions/1.33.1")
        );
        let os = &properties["osProfile"];
        assert_eq!(os["adminUsername"], "capi");
        assert_eq!(os["computerName"], "m-0");
        assert_eq!(os["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"], KEY);
        assert_eq!(os["customData"], STANDARD.encode("#cloud-config\n"));
        assert_eq!(os["allowExtensionOperations"], true);
        assert!(os.get("adminPassword").is_none());
        assert!(!format!("{body:?}").contains(&STANDARD.encode("#cloud-config\n")));
        assert_eq!(
            properties["networkProfile"]["networkInterfaces"][0]["properties"]["primary"],
            true
        );
        assert!(json.get("identity").is_none());
        assert_eq!(machine.desired(Some(&body)), None);
        assert_eq!(VirtualMachine::named(&scope, "m-0").unwrap().desired(None), None);
        assert_eq!(
            machine.provider_id(),
            "azure:///subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/my-rg/providers/Microsoft.Compute/virtualMachines/m-0"
        );
    }

    #[test]
    fn spot_identities_and_availability_sets_are_sent_as_asked() {
        let scope = scope();
        let set = scope
            .id_of::<capz_azure::models::compute::AvailabilitySet>("c1_md-0-as")
            .unwrap();
        let placement = Placement {
            zone: None,
            availability_set: Some(set),
        };
        let spec = spec(&serde_json::json!({
            "spotVMOptions": {"maxPrice": "0.05"},
            "identity": "UserAssigned",
            "userAssignedIdentities": [{"providerID": "azure:///subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"}],
            "diagnostics": {"boot": {"storageAccountType": "Managed"}},
        }));
        let machine = VirtualMachine::new(&scope, "m-0", &spec, inputs(&scope, placement)).unwrap();
        let json = serde_json::to_value(machine.desired(None).unwrap()).unwrap();
        assert_eq!(json["properties"]["priority"], "Spot");
        assert_eq!(json["properties"]["evictionPolicy"], "Deallocate");
        assert_eq!(json["properties"]["billingProfile"]["maxPrice"], 0.05);
        assert!(
            json["properties"]["availabilitySet"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/availabilitySets/c1_md-0-as")
        );
        assert_eq!(json["identity"]["type"], "UserAssigned");
        assert_eq!(
            json["properties"]["diagnosticsProfile"]["bootDiagnostics"]["enabled"],
            true
        );
        assert!(json.get("zones").is_none());
    }

    #[test]
    fn a_bad_key_is_named() {
        let scope = scope();
        let bad = spec(&serde_json::json!({"sshPublicKey": "not base64!"}));
        let err = VirtualMachine::new(&scope, "m-0", &bad, inputs(&scope, Placement::default())).unwrap_err();
        assert!(
            err.to_string().starts_with("spec.sshPublicKey: Invalid value"),
            "{err}"
        );
        assert_eq!(err.reason(), Reason::INVALID_CONFIGURATION);
    }

    #[test]
    fn windows_machines_get_a_short_name_a_random_password_and_no_ssh_configuration() {
        assert_eq!(vm_name("capz-md-win-7xk2p-abcde", true), "capz-md-w-abcde");
        assert_eq!(vm_name("c1-md-0-abcde-fghij", true), "c1-md-0-a-fghij");
        // A dash at the cut is not doubled.
        assert_eq!(vm_name("capz-md--xxxxxxxxx", true), "capz-md-xxxxx");
        assert_eq!(vm_name("win-0123456789a", true), "win-0123456789a");
        assert_eq!(
            vm_name("capz-md-win-7xk2p-abcde", false),
            "capz-md-win-7xk2p-abcde"
        );

        let scope = scope();
        let windows = spec(&serde_json::json!({
            "osDisk": {"osType": "Windows", "diskSizeGB": 128},
            "disableExtensionOperations": true,
        }));
        let make = || {
            let machine = VirtualMachine::new(
                &scope,
                "capz-md-w-abcde",
                &windows,
                inputs(&scope, Placement::default()),
            )
            .unwrap();
            serde_json::to_value(machine.desired(None).unwrap()).unwrap()
        };
        let (json, again) = (make(), make());
        let os = &json["properties"]["osProfile"];
        assert_eq!(os["computerName"], "capz-md-w-abcde");
        assert_eq!(os["windowsConfiguration"]["enableAutomaticUpdates"], false);
        assert_eq!(os["allowExtensionOperations"], false);
        assert!(os.get("linuxConfiguration").is_none());
        assert_eq!(
            json["properties"]["storageProfile"]["osDisk"]["osType"],
            "Windows"
        );
        let password = os["adminPassword"].as_str().unwrap();
        assert_eq!(password.len(), 64);
        let classes = [
            password.chars().any(|c| c.is_ascii_uppercase()),
            password.chars().any(|c| c.is_ascii_lowercase()),
            password.chars().any(|c| c.is_ascii_digit()),
            password.chars().any(|c| !c.is_ascii_alphanumeric()),
        ];
        assert_eq!(classes, [true; 4], "{password}");
        assert_ne!(
            again["properties"]["osProfile"]["adminPassword"],
            os["adminPassword"]
        );
    }
}
