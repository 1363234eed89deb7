//! Virtual machine scale sets (`Microsoft.Compute/virtualMachineScaleSets`) of AzureMachinePools:
//! the instance model made from the pool's template (the same VM profile an AzureMachine has:
//! size, image, disks, admin user `capi` with the SSH key, bootstrap data as custom data, spot,
//! security and diagnostics), one interface in the pool's subnet, the zones, identities and the
//! number of instances.
//!
//! Azure never answers a set's custom data or passwords, so a changed model cannot be seen by
//! reading the set. The set carries in a tag ([`MODEL_HASH_TAG`]) two hashes of what it was last
//! written with, `<model>-<data>`: the instances' model (image, size, disks, everything but the
//! bootstrap data), and the bootstrap data. A set is written again only when either differs,
//! instances are to be added, or a tag of ours is missing. Only a new model makes the pool replace
//! its instances: new bootstrap data alone (Cluster API rotates a pool's join token) reaches the
//! instances made from then on. Tags and extensions that others add to the set (Azure Policy
//! does) are kept on every write and never count as a difference.

use capz_api::AzureMachinePoolSpec;
use capz_api::azuremachinepool::OrchestrationMode as SpecMode;
use capz_api::common::compute::VmProfile;
use capz_azure::models::compute::{
    OrchestrationMode, ScaleSetExtension, ScaleSetExtensionProfile, ScaleSetExtensionProperties,
    ScaleSetInstance, ScaleSetIpConfiguration, ScaleSetIpConfigurationProperties, ScaleSetNetworkInterface,
    ScaleSetNetworkInterfaceProperties, ScaleSetNetworkProfile, ScaleSetOsProfile, ScaleSetProperties,
    ScaleSetSku, ScaleSetVmProfile, UpgradeMode, UpgradePolicy, VirtualMachineScaleSet as Model,
};
use capz_azure::models::{Secret, SubResource};
use capz_azure::{IdError, ResourceId};
use capz_kit::resource::{AzureResource, Ownership};
use capz_kit::scope::ClusterScope;
use capz_kit::tags::{self, Tags};

use crate::virtual_machine::profile::{
    diagnostics_profile, identity, os_profile, security_profile, spot, storage_profile, windows,
};
use crate::virtual_machine::{MachineSpecError, Paths, ResolvedImage, Spot, invalid, provider_id};
use crate::vm_extension;

/// The tag holding the hash of the model a set was last written with.
pub const MODEL_HASH_TAG: &str = "sigs.k8s.io_cluster-api-provider-azure_spec-version-hash";

/// The network api-version a Flexible set makes its instances' interfaces with (Azure requires
/// one for Flexible sets).
const FLEXIBLE_NETWORK_API_VERSION: &str = "2020-11-01";

/// The longest computer name prefix Windows takes (Azure adds six characters to it).
const WINDOWS_PREFIX_LIMIT: usize = 9;

/// What a set is built from besides its pool's spec.
#[derive(Debug, Clone)]
pub struct ScaleSetInputs {
    /// The instances' image.
    pub image: ResolvedImage,
    /// The bootstrap data every new instance runs, base64 encoded.
    pub custom_data: capz_azure::models::Secret,
    /// The subnet the instances' interfaces are in.
    pub subnet: ResourceId,
    /// The load balancer backend pools the instances join.
    pub backend_pools: Vec<ResourceId>,
    /// The zones the instances are spread over (the MachinePool's failure domains).
    pub zones: Vec<String>,
    /// How many instances the set makes beyond those it holds when it is written (for a set that
    /// does not exist yet, all of them). Instances are added this way and removed one by one,
    /// never by a lower capacity, so a write never counts from a number that deletions in flight
    /// may have changed since it was read.
    pub add: u64,
    /// The set's tags.
    pub tags: Tags,
}

/// A scale set as its AzureMachinePool wants it.
#[derive(Debug, Clone)]
pub struct ScaleSet {
    id: ResourceId,
    cluster: String,
    /// `None` for a set known only by name, to read or delete.
    body: Option<Model>,
}

impl ScaleSet {
    /// The set `name` in the cluster's resource group, built from its pool's (defaulted) `spec`.
    ///
    /// # Errors
    /// When the spec holds what Azure cannot take.
    pub fn new(
        scope: &ClusterScope,
        name: &str,
        spec: &AzureMachinePoolSpec,
        inputs: ScaleSetInputs,
    ) -> Result<Self, MachineSpecError> {
        let id = scope
            .id_of::<Model>(name)
            .map_err(|err| invalid("metadata.name", err.to_string()))?;
        let paths = Paths::POOL;
        let vm = &spec.template.vm;
        let flexible = spec.orchestration_mode == Some(SpecMode::Flexible);
        let os = os_profile(
            &computer_name_prefix(name, windows(vm)),
            vm,
            inputs.custom_data,
            true,
            paths,
        )?;
        let Spot {
            priority,
            eviction_policy,
            billing_profile,
        } = spot(vm, paths)?;
        let profile = ScaleSetVmProfile {
            os_profile: Some(ScaleSetOsProfile {
                computer_name_prefix: os.computer_name,
                admin_username: os.admin_username,
                admin_password: os.admin_password,
                custom_data: os.custom_data,
                linux_configuration: os.linux_configuration,
                windows_configuration: os.windows_configuration,
                allow_extension_operations: os.allow_extension_operations,
            }),
            storage_profile: Some(storage_profile(None, vm, &inputs.image, paths)?),
            network_profile: Some(network_profile(
                name,
                vm.accelerated_networking,
                &inputs.subnet,
                &inputs.backend_pools,
                flexible,
            )),
            extension_profile: extension_profile(vm, scope.spec.class.azure_environment.as_deref()),
            security_profile: vm.security_profile.as_ref().map(security_profile),
            diagnostics_profile: vm.diagnostics.as_ref().and_then(diagnostics_profile),
            priority,
            eviction_policy,
            billing_profile,
        };
        let fault_domains = spec
            .platform_fault_domain_count
            .map(|count| {
                u32::try_from(count).map_err(|_| {
                    invalid(
                        "spec.platformFaultDomainCount",
                        format!("{count}: must be positive"),
                    )
                })
            })
            .transpose()?;
        let properties = ScaleSetProperties {
            orchestration_mode: Some(if flexible {
                OrchestrationMode::Flexible
            } else {
                OrchestrationMode::Uniform
            }),
            // capz-rs replaces instances itself, in the pool's own batches, after draining them.
            upgrade_policy: (!flexible).then_some(UpgradePolicy {
                mode: Some(UpgradeMode::Manual),
            }),
            virtual_machine_profile: Some(profile),
            overprovision: (!flexible).then_some(false),
            single_placement_group: Some(false),
            platform_fault_domain_count: fault_domains.or(flexible.then_some(1)),
            ..ScaleSetProperties::default()
        };
        let mut body = Model {
            location: Some(scope.location.clone()),
            zones: (!inputs.zones.is_empty()).then_some(inputs.zones),
            sku: Some(ScaleSetSku {
                name: Some(vm.vm_size.clone()),
                tier: None,
                capacity: Some(inputs.add),
            }),
            identity: identity(&spec.identities)?,
            plan: inputs.image.plan,
            properties: Some(properties),
            ..Model::default()
        };
        let mut tags = inputs.tags;
        tags.insert(MODEL_HASH_TAG.to_owned(), hashes(&body));
        body.tags = Some(tags);
        Ok(Self {
            id,
            cluster: scope.name.clone(),
            body: Some(body),
        })
    }

    /// The set `name` in the cluster's resource group, known only by name: it can be read and
    /// deleted, never created.
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

    /// The pool's `providerID`: `azure://` and the set's id, its resource group in lower case.
    #[must_use]
    pub fn provider_id(&self) -> String {
        provider_id(&self.id)
    }

    /// This set, making `add` more instances when it is written (all of them for a new set).
    #[must_use]
    pub fn adding(mut self, add: u64) -> Self {
        if let Some(sku) = self.body.as_mut().and_then(|body| body.sku.as_mut()) {
            sku.capacity = Some(add);
        }
        self
    }

    /// The hash of the instances' model this set is built with (`None` for a set known only by
    /// name): instances made from another model are replaced.
    #[must_use]
    pub fn model_hash(&self) -> Option<&str> {
        self.body.as_ref().and_then(written_model)
    }
}

/// The hash of the instances' model `set` was last written with, from its tag.
#[must_use]
pub fn written_model(set: &Model) -> Option<&str> {
    set.tags
        .as_ref()
        .and_then(|tags| tags.get(MODEL_HASH_TAG))
        .map(|hashes| hashes.split_once('-').map_or(hashes.as_str(), |(model, _)| model))
}

/// One instance of a set, known by its id, to delete: a Uniform set's
/// `virtualMachineScaleSets/{set}/virtualMachines/{instance}` or a Flexible set's virtual machine.
/// It is the pool's because its set is; it is never written.
#[derive(Debug, Clone)]
pub struct ScaleSetMember {
    id: ResourceId,
}

impl ScaleSetMember {
    /// The instance at `id`.
    #[must_use]
    pub fn new(id: ResourceId) -> Self {
        Self { id }
    }
}

impl AzureResource for ScaleSetMember {
    type Model = ScaleSetInstance;
    const SERVICE: &'static str = "scalesetvm";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::OwnedParent
    }

    fn desired(&self, _existing: Option<&ScaleSetInstance>) -> Option<ScaleSetInstance> {
        None
    }
}

impl AzureResource for ScaleSet {
    type Model = Model;
    const SERVICE: &'static str = "scaleset";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        Ownership::Tagged {
            cluster: self.cluster.clone(),
        }
    }

    fn desired(&self, existing: Option<&Model>) -> Option<Model> {
        let wanted = self.body.as_ref()?;
        let Some(existing) = existing else {
            return Some(wanted.clone());
        };
        let capacity = |set: &Model| set.sku.as_ref().and_then(|sku| sku.capacity).unwrap_or(0);
        let tags_missing = !tags::carries(
            existing.tags.as_ref(),
            wanted.tags.as_ref().unwrap_or(&Tags::new()),
        );
        let add = capacity(wanted);
        if add == 0 && !tags_missing {
            return None;
        }
        let mut body = keeping_what_others_added(wanted, existing);
        if let Some(sku) = body.sku.as_mut() {
            sku.capacity = Some(capacity(existing).saturating_add(add));
        }
        Some(body)
    }
}

/// `wanted`, with the tags and extensions others added to `existing` kept: a write must not
/// take away what Azure Policy (or an operator) put on the set.
fn keeping_what_others_added(wanted: &Model, existing: &Model) -> Model {
    let mut body = wanted.clone();
    body.tags = Some(tags::keeping_others(
        existing.tags.as_ref(),
        wanted.tags.as_ref().unwrap_or(&Tags::new()),
    ));
    let foreign: Vec<ScaleSetExtension> = existing
        .properties
        .as_ref()
        .and_then(|properties| properties.virtual_machine_profile.as_ref())
        .and_then(|profile| profile.extension_profile.as_ref())
        .and_then(|profile| profile.extensions.clone())
        .unwrap_or_default();
    if let Some(profile) = body
        .properties
        .as_mut()
        .and_then(|properties| properties.virtual_machine_profile.as_mut())
    {
        let ours: Vec<ScaleSetExtension> = profile
            .extension_profile
            .as_ref()
            .and_then(|profile| profile.extensions.clone())
            .unwrap_or_default();
        let kept = foreign.into_iter().filter(|extension| {
            !ours
                .iter()
                .any(|own| own.name.eq_ignore_ascii_case(&extension.name))
        });
        let extensions: Vec<ScaleSetExtension> = ours.iter().cloned().chain(kept).collect();
        if !extensions.is_empty() {
            profile.extension_profile = Some(ScaleSetExtensionProfile {
                extensions: Some(extensions),
            });
        }
    }
    body
}

/// The tag value of what the set's instances are made from: the hash of the instance model
/// without the bootstrap data (and without the throw-away Windows password, new at every build),
/// the size and the plan; then the hash of the bootstrap data.
fn hashes(body: &Model) -> String {
    let mut profile = body
        .properties
        .as_ref()
        .and_then(|properties| properties.virtual_machine_profile.clone());
    let os = profile.as_mut().and_then(|profile| profile.os_profile.as_mut());
    let data = os.and_then(|os| {
        os.admin_password = None;
        os.custom_data.take()
    });
    let size = body.sku.as_ref().and_then(|sku| sku.name.clone());
    let model = serde_json::to_string(&(profile, size, &body.plan)).unwrap_or_default();
    let data = serde_json::to_string(&data).unwrap_or_default();
    format!("{}-{}", short_hash(&model), short_hash(&data))
}

/// The first 16 bytes of the SHA-256 of `text`, in hex.
fn short_hash(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref()[..16]
        .iter()
        .fold(String::with_capacity(32), |mut hex, byte| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The extensions every instance runs (the template's and the bootstrap check), inline in the
/// set's model as Azure takes them for scale sets; `None` when there are none.
fn extension_profile(vm: &VmProfile, environment: Option<&str>) -> Option<ScaleSetExtensionProfile> {
    let as_object = |settings: &std::collections::BTreeMap<String, String>| {
        serde_json::Value::Object(
            settings
                .iter()
                .map(|(key, value)| (key.clone(), serde_json::Value::String(value.clone())))
                .collect(),
        )
    };
    let extensions: Vec<ScaleSetExtension> = vm_extension::wanted(vm, environment)
        .into_iter()
        .map(|extension| ScaleSetExtension {
            properties: Some(ScaleSetExtensionProperties {
                publisher: Some(extension.publisher),
                // As for machines, the ARM type of an extension is its name in the spec.
                extension_type: Some(extension.name.clone()),
                type_handler_version: Some(extension.version),
                settings: extension.settings.as_ref().map(as_object),
                protected_settings: extension
                    .protected_settings
                    .as_ref()
                    .map(|settings| Secret::new(as_object(settings))),
                ..ScaleSetExtensionProperties::default()
            }),
            name: extension.name,
        })
        .collect();
    (!extensions.is_empty()).then_some(ScaleSetExtensionProfile {
        extensions: Some(extensions),
    })
}

/// The computer name prefix of the pool `name`: its name; for Windows, whose names take 15
/// characters of which Azure's suffix is six, a name longer than 9 becomes `win` and its last
/// five characters, as CAPZ names them.
fn computer_name_prefix(name: &str, windows: bool) -> String {
    let chars: Vec<char> = name.chars().collect();
    if !windows || chars.len() <= WINDOWS_PREFIX_LIMIT {
        return name.to_owned();
    }
    let tail: String = chars[chars.len() - 5..].iter().collect();
    format!("win{tail}")
}

fn network_profile(
    name: &str,
    accelerated: Option<bool>,
    subnet: &ResourceId,
    backend_pools: &[ResourceId],
    flexible: bool,
) -> ScaleSetNetworkProfile {
    let ip_configuration = ScaleSetIpConfiguration {
        name: "ipConfig0".to_owned(),
        properties: Some(ScaleSetIpConfigurationProperties {
            subnet: Some(SubResource::from(subnet.clone())),
            primary: Some(true),
            private_ip_address_version: Some("IPv4".to_owned()),
            load_balancer_backend_address_pools: (!backend_pools.is_empty())
                .then(|| backend_pools.iter().cloned().map(SubResource::from).collect()),
        }),
    };
    ScaleSetNetworkProfile {
        network_interface_configurations: Some(vec![ScaleSetNetworkInterface {
            name: format!("{name}-nic-0"),
            properties: Some(ScaleSetNetworkInterfaceProperties {
                primary: Some(true),
                enable_accelerated_networking: accelerated,
                enable_ip_forwarding: None,
                ip_configurations: Some(vec![ip_configuration]),
            }),
        }]),
        network_api_version: flexible.then(|| FLEXIBLE_NETWORK_API_VERSION.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use capz_kit::tags::Role;
    use capz_rules::Features;
    use serde_json::json;

    use super::*;
    use crate::virtual_machine::{ReferenceOs, resolve_image};

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f test";

    fn scope() -> ClusterScope {
        let cluster = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": {"location": "westeurope", "subscriptionID": "00000000-0000-0000-0000-000000000001", "resourceGroup": "My-RG"},
        }))
        .unwrap();
        ClusterScope::new(&cluster, Features::default(), None).unwrap()
    }

    fn spec(template: &serde_json::Value, pool: &serde_json::Value) -> AzureMachinePoolSpec {
        let mut vm = json!({
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "diskSizeGB": 30, "managedDisk": {"storageAccountType": "Premium_LRS"}},
            "sshPublicKey": STANDARD.encode(KEY),
        });
        if let (Some(vm), Some(extra)) = (vm.as_object_mut(), template.as_object()) {
            vm.extend(extra.clone());
        }
        let mut value = json!({"location": "westeurope", "template": vm});
        if let (Some(value), Some(extra)) = (value.as_object_mut(), pool.as_object()) {
            value.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    fn inputs(scope: &ClusterScope, add: u64, custom_data: &str) -> ScaleSetInputs {
        ScaleSetInputs {
            image: resolve_image(None, Some("v1.33.1"), ReferenceOs::Linux).unwrap(),
            custom_data: Secret::new(STANDARD.encode(custom_data)),
            subnet: scope
                .id_of::<capz_azure::models::network::VirtualNetwork>("c1-vnet")
                .unwrap()
                .child("subnets", "node-subnet")
                .unwrap(),
            backend_pools: Vec::new(),
            zones: vec!["1".to_owned(), "3".to_owned()],
            add,
            tags: scope.owned_tags(Role::Node),
        }
    }

    fn set(spec: &AzureMachinePoolSpec, add: u64, custom_data: &str) -> ScaleSet {
        let scope = scope();
        ScaleSet::new(&scope, "pool0", spec, inputs(&scope, add, custom_data)).unwrap()
    }

    fn body(set: &ScaleSet) -> Model {
        set.desired(None).expect("a new set is written")
    }

    #[test]
    fn a_uniform_set_carries_the_template_and_is_upgraded_by_capz_rs() {
        let pool = set(
            &spec(&json!({"acceleratedNetworking": true}), &json!({})),
            3,
            "#cloud-config\n",
        );
        let model = body(&pool);
        let wire = serde_json::to_value(&model).unwrap();
        assert_eq!(wire["sku"], json!({"name": "Standard_D2s_v3", "capacity": 3}));
        assert_eq!(wire["zones"], json!(["1", "3"]));
        let properties = &wire["properties"];
        assert_eq!(properties["orchestrationMode"], "Uniform");
        assert_eq!(properties["upgradePolicy"], json!({"mode": "Manual"}));
        assert_eq!(properties["overprovision"], false);
        let profile = &properties["virtualMachineProfile"];
        assert_eq!(profile["osProfile"]["computerNamePrefix"], "pool0");
        assert_eq!(profile["osProfile"]["adminUsername"], "capi");
        assert_eq!(
            profile["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"],
            KEY
        );
        assert!(
            profile["storageProfile"]["osDisk"].get("name").is_none(),
            "each instance names its own disk"
        );
        let nic = &profile["networkProfile"]["networkInterfaceConfigurations"][0];
        assert_eq!(nic["properties"]["enableAcceleratedNetworking"], true);
        assert!(
            nic["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"]
                .as_str()
                .unwrap()
                .ends_with("/virtualNetworks/c1-vnet/subnets/node-subnet")
        );
        assert!(
            model
                .tags
                .as_ref()
                .is_some_and(|tags| tags.contains_key(MODEL_HASH_TAG)),
            "the set records the model it was written with"
        );
        assert!(
            !format!("{model:?}").contains(&STANDARD.encode("#cloud-config\n")),
            "the bootstrap data never shows in logs"
        );
        assert!(pool.provider_id().starts_with("azure:///subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/my-rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool0"));
    }

    #[test]
    fn the_template_extensions_and_the_bootstrap_check_are_in_the_model() {
        let template = json!({
            "vmExtensions": [{"name": "CustomScript", "publisher": "Microsoft.Azure.Extensions", "version": "2.1",
                "settings": {"fileUris": "https://example.com/hello.sh"},
                "protectedSettings": {"commandToExecute": "./hello.sh"}}],
            "disableVMBootstrapExtension": false,
        });
        let checked = body(&set(&spec(&template, &json!({})), 1, "#cloud-config\n"));
        let wire = serde_json::to_value(&checked).unwrap();
        let extensions = &wire["properties"]["virtualMachineProfile"]["extensionProfile"]["extensions"];
        assert_eq!(extensions[0]["name"], "CustomScript");
        assert_eq!(
            extensions[0]["properties"]["type"], "CustomScript",
            "the ARM type is the spec's name, as for machines"
        );
        assert_eq!(
            extensions[0]["properties"]["settings"],
            json!({"fileUris": "https://example.com/hello.sh"})
        );
        assert_eq!(
            extensions[0]["properties"]["protectedSettings"],
            json!({"commandToExecute": "./hello.sh"})
        );
        assert_eq!(extensions[1]["name"], vm_extension::LINUX_BOOTSTRAP);
        assert_eq!(
            extensions[1]["properties"]["publisher"],
            "Microsoft.Azure.ContainerUpstream"
        );
        assert!(
            !format!("{checked:?}").contains("./hello.sh"),
            "protected settings never show in logs"
        );
        let plain = body(&set(&spec(&json!({}), &json!({})), 1, "#cloud-config\n"));
        assert!(
            plain
                .properties
                .and_then(|properties| properties.virtual_machine_profile)
                .and_then(|profile| profile.extension_profile)
                .is_none(),
            "no extension unless asked for: the check is off unless explicitly enabled"
        );
        assert_ne!(
            written_model(&checked),
            set(&spec(&json!({}), &json!({})), 1, "#cloud-config\n").model_hash(),
            "another list of extensions is another model"
        );
    }

    #[test]
    fn a_flexible_set_has_no_upgrade_policy_and_one_fault_domain() {
        let model = body(&set(
            &spec(&json!({}), &json!({"orchestrationMode": "Flexible"})),
            1,
            "#cloud-config\n",
        ));
        let wire = serde_json::to_value(&model).unwrap();
        let properties = &wire["properties"];
        assert_eq!(properties["orchestrationMode"], "Flexible");
        assert!(properties.get("upgradePolicy").is_none());
        assert!(properties.get("overprovision").is_none());
        assert_eq!(properties["platformFaultDomainCount"], 1);
        assert_eq!(
            properties["virtualMachineProfile"]["networkProfile"]["networkApiVersion"],
            FLEXIBLE_NETWORK_API_VERSION
        );
    }

    #[test]
    fn a_set_is_written_again_only_for_a_new_model_new_instances_or_a_lost_tag() {
        let pool = spec(&json!({}), &json!({}));
        let written = body(&set(&pool, 2, "#cloud-config\n"));
        // Azure answers neither the custom data nor what was not sent; others add a tag and an
        // extension.
        let mut existing = written.clone();
        if let Some(os) = existing
            .properties
            .as_mut()
            .and_then(|properties| properties.virtual_machine_profile.as_mut())
            .and_then(|profile| profile.os_profile.as_mut())
        {
            os.custom_data = None;
        }
        existing
            .tags
            .get_or_insert_default()
            .insert("CostCenter".to_owned(), "1234".to_owned());
        if let Some(profile) = existing
            .properties
            .as_mut()
            .and_then(|properties| properties.virtual_machine_profile.as_mut())
        {
            profile.extension_profile = Some(ScaleSetExtensionProfile {
                extensions: Some(vec![ScaleSetExtension {
                    name: "AzurePolicyforLinux".to_owned(),
                    properties: None,
                }]),
            });
        }
        assert_eq!(
            set(&pool, 0, "#cloud-config\n").desired(Some(&existing)),
            None,
            "the same model and no instance to add: nothing to write, whatever others added"
        );

        let scaled = set(&pool, 2, "#cloud-config\n")
            .desired(Some(&existing))
            .expect("two more instances are written");
        assert_eq!(scaled.sku.and_then(|sku| sku.capacity), Some(4));
        assert_eq!(
            scaled
                .tags
                .as_ref()
                .and_then(|tags| tags.get("CostCenter"))
                .map(String::as_str),
            Some("1234"),
            "a tag others added is kept"
        );
        let extensions = scaled
            .properties
            .and_then(|properties| properties.virtual_machine_profile)
            .and_then(|profile| profile.extension_profile)
            .and_then(|profile| profile.extensions)
            .unwrap_or_default();
        assert!(
            extensions
                .iter()
                .any(|extension| extension.name == "AzurePolicyforLinux"),
            "an extension others added is kept: {extensions:?}"
        );

        let rejoin = set(&pool, 0, "#cloud-config\n# a new token\n");
        let written = rejoin
            .desired(Some(&existing))
            .expect("new bootstrap data is written");
        assert_eq!(
            written.sku.as_ref().and_then(|sku| sku.capacity),
            Some(2),
            "new bootstrap data alone keeps the capacity"
        );
        assert_ne!(
            written.tags.as_ref().and_then(|tags| tags.get(MODEL_HASH_TAG)),
            existing.tags.as_ref().and_then(|tags| tags.get(MODEL_HASH_TAG))
        );
        assert_eq!(
            rejoin.model_hash(),
            written_model(&existing),
            "new bootstrap data alone is not a new model: no instance is replaced for it"
        );
        let bigger = spec(&json!({"vmSize": "Standard_D4s_v3"}), &json!({}));
        assert_ne!(
            set(&bigger, 0, "#cloud-config\n").model_hash(),
            written_model(&existing),
            "a new size is a new model"
        );
    }

    #[test]
    fn windows_pools_with_long_names_get_a_short_prefix() {
        assert_eq!(computer_name_prefix("pool0", true), "pool0");
        assert_eq!(computer_name_prefix("windows-pool-1", true), "winool-1");
        assert_eq!(computer_name_prefix("windows-pool-1", false), "windows-pool-1");
    }

    #[test]
    fn a_bad_template_field_is_named_under_the_template() {
        let scope = scope();
        let spec = spec(&json!({"sshPublicKey": "not base64!"}), &json!({}));
        let error = ScaleSet::new(&scope, "pool0", &spec, inputs(&scope, 1, "#cloud-config\n")).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("spec.template.sshPublicKey: Invalid value"),
            "{error}"
        );
    }
}
