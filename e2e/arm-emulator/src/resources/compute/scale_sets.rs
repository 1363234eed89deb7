//! Virtual machine scale sets. A set's write makes its capacity true: new instances are created,
//! balanced across the set's zones, and instances past the capacity are deleted as its scale-in
//! policy says, all settling when the write's operation ends. A Uniform set keeps its instances
//! as `virtualMachines/{instanceId}` (named `<set>_<instanceId>`, computer names
//! `<prefix><instanceId in 6 base-36 digits>`); a Flexible set's instances are virtual machines of
//! their own (`<set>_<8 hex digits>`) with their interfaces and OS disks. A change of the
//! instance model reaches the instances at once under the `Automatic` and `Rolling` upgrade
//! policies (the latter reported at `rollingUpgrades/latest`), and under `Manual` only through
//! `manualUpgrade` or a reimage; instances report `latestModelApplied`.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::skus::{self, VmSize};
use super::{
    API_VERSIONS, COMPUTE, EXTENSION_NAMES, MACHINE_NAMES, document, extensions, now, virtual_machines, zones,
};
use crate::error::ArmError;
use crate::resources::network::Addresses;
use crate::resources::{
    Act, Acted, Action, Catalogue, Expansion, Hooks, Locality, Lookup, Lro, NO_HOOKS, Prepare, ResourceType,
    fields,
};
use crate::state::State;

/// Hidden bookkeeping on a set: the next instance id, and the generation of its instance model.
const NEXT_INSTANCE: &str = "nextInstanceId";
const GENERATION: &str = "modelGeneration";
/// Hidden bookkeeping on an instance: the model generation it runs, whether its allocation
/// fails, its power state.
pub(super) const RUNS: &str = "runsGeneration";
pub(super) const FAILS: &str = "allocationFails";
pub(super) const POWER: &str = "powerState";
/// Hidden on a Uniform instance: its interfaces, with their addresses (read through the
/// interfaces' own paths).
pub(super) const INTERFACES: &str = "interfaces";
/// Hidden on an instance whose removal the set's capacity already counts.
pub(super) const LEAVING: &str = "leaving";
/// The status of the last rolling upgrade, kept on the set.
const ROLLING: &str = "rollingUpgrade";

pub(crate) static SCALE_SET: ResourceType = ResourceType {
    since: &[
        ("timeCreated", "2021-11-01"),
        (
            "virtualMachineProfile.osProfile.linuxConfiguration.enableVMAgentPlatformUpdates",
            "2022-03-01",
        ),
        (
            "virtualMachineProfile.osProfile.windowsConfiguration.enableVMAgentPlatformUpdates",
            "2022-03-01",
        ),
    ],
    naming: &MACHINE_NAMES,
    actions: &[
        Action {
            name: "delete",
            run: delete_instances,
        },
        Action {
            name: "manualUpgrade",
            run: manual_upgrade,
        },
        Action {
            name: "reimage",
            run: reimage,
        },
        Action {
            name: "restart",
            run: |act| power(act, "running"),
        },
        Action {
            name: "start",
            run: |act| power(act, "running"),
        },
        Action {
            name: "powerOff",
            run: |act| power(act, "stopped"),
        },
    ],
    hooks: Hooks {
        secrets: &[
            "virtualMachineProfile.osProfile.customData",
            "virtualMachineProfile.osProfile.adminPassword",
            "virtualMachineProfile.userData",
            NEXT_INSTANCE,
            GENERATION,
            ROLLING,
        ],
        on_settled: Some(settle),
        on_deleted: Some(remove_instances),
        members: Some(|state, key| {
            let flexible_set = state.body(key).is_some_and(|set| flexible(&set));
            let id = state
                .body(key)
                .and_then(|set| set["id"].as_str().map(str::to_owned))
                .unwrap_or_default();
            instances(state, &id, flexible_set)
                .into_iter()
                .map(|(member, _)| member)
                .collect()
        }),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/virtualMachineScaleSets",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_set,
    )
};

/// A Uniform set's instance.
pub(crate) static INSTANCE: ResourceType = ResourceType {
    actions: &[
        Action {
            name: "restart",
            run: |act| Ok(instance_power(act, "running")),
        },
        Action {
            name: "start",
            run: |act| Ok(instance_power(act, "running")),
        },
        Action {
            name: "powerOff",
            run: |act| Ok(instance_power(act, "stopped")),
        },
        Action {
            name: "reimage",
            run: |act| Ok(reimage_instance(act)),
        },
    ],
    hooks: Hooks {
        secrets: &[
            "osProfile.customData",
            "osProfile.adminPassword",
            RUNS,
            FAILS,
            POWER,
            LEAVING,
            INTERFACES,
        ],
        render: Some(show_instance),
        expand: Some(Expansion::instance_view(virtual_machines::instance_view)),
        on_deleted: Some(instance_deleted),
        list: None,
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_instance,
    )
};

pub(crate) static SET_EXTENSION: ResourceType = ResourceType {
    location: Locality::Inherited,
    naming: &EXTENSION_NAMES,
    hooks: Hooks {
        secrets: &["protectedSettings", "protectedSettingsFromKeyVault"],
        // The compute provider answers for a set's missing extension itself.
        not_found: Some(|_| {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                "The entity was not found in this Azure location.",
            )
        }),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/virtualMachineScaleSets/extensions",
        API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        extensions::prepare_properties,
    )
};

/// `GET .../virtualMachineScaleSets/{set}/rollingUpgrades/latest`.
pub(crate) static ROLLING_UPGRADE: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachineScaleSets/rollingUpgrades",
    api_versions: API_VERSIONS,
    entry: Some(latest_rolling_upgrade),
    collection: None,
};

/// `GET .../virtualMachineScaleSets/{set}/instanceView`.
pub(crate) static SET_INSTANCE_VIEW: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachineScaleSets/instanceView",
    api_versions: API_VERSIONS,
    entry: None,
    collection: Some(set_instance_view),
};

/// `GET .../virtualMachineScaleSets/{set}/virtualMachines/{id}/instanceView`.
pub(crate) static INSTANCE_INSTANCE_VIEW: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/instanceView",
    api_versions: API_VERSIONS,
    entry: None,
    collection: Some(instance_instance_view),
};

/// `.../virtualMachines/{id}/networkInterfaces[/{name}]`: a Uniform instance's interfaces, served
/// by Microsoft.Network under the scale set's path.
pub(crate) static INSTANCE_INTERFACES: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces",
    api_versions: crate::resources::network::INTERFACE_API_VERSIONS,
    entry: Some(instance_interface),
    collection: Some(instance_interfaces),
};

/// `.../virtualMachineScaleSets/{set}/networkInterfaces`: every instance's interfaces.
pub(crate) static SET_INTERFACES: Catalogue = Catalogue {
    name: "Microsoft.Compute/virtualMachineScaleSets/networkInterfaces",
    api_versions: crate::resources::network::INTERFACE_API_VERSIONS,
    entry: None,
    collection: Some(set_interfaces),
};

const MODES: &[&str] = &["Uniform", "Flexible"];
const UPGRADE_MODES: &[&str] = &["Manual", "Automatic", "Rolling"];

fn flexible(set: &Value) -> bool {
    set.pointer("/properties/orchestrationMode")
        .and_then(Value::as_str)
        == Some("Flexible")
}

fn set_key(set_id: &str) -> String {
    set_id.to_ascii_lowercase()
}

/// The instances of a set (Uniform: its instance documents; Flexible: the virtual machines that
/// name it), as (key, body), in order of creation.
pub(super) fn instances(state: &State, set_id: &str, flexible: bool) -> Vec<(String, Value)> {
    let key = set_key(set_id);
    let mut found: Vec<(String, Value)> = if flexible {
        let group = key.split("/providers/").next().unwrap_or_default();
        state
            .under(&format!("{group}/providers/microsoft.compute/virtualmachines/"))
            .filter_map(|(machine, stored)| {
                let body = stored.body_mentioning("virtualMachineScaleSet")?;
                let owner = body.pointer("/properties/virtualMachineScaleSet/id")?.as_str()?;
                owner
                    .eq_ignore_ascii_case(set_id)
                    .then(|| (machine.to_owned(), body.into_owned()))
            })
            .collect()
    } else {
        let prefix = format!("{key}/virtualmachines/");
        state
            .under(&prefix)
            .filter(|(instance, _)| !instance[prefix.len()..].contains('/'))
            .map(|(instance, stored)| (instance.to_owned(), stored.body().into_owned()))
            .collect()
    };
    found.sort_by(|(_, a), (_, b)| {
        let created = |body: &Value| {
            body.pointer("/properties/timeCreated")
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        created(a)
            .cmp(&created(b))
            .then_with(|| instance_number(a).cmp(&instance_number(b)))
    });
    found
}

fn instance_number(body: &Value) -> u64 {
    body["instanceId"]
        .as_str()
        .and_then(|id| id.parse().ok())
        .unwrap_or(u64::MAX)
}

fn state_of(body: &Value) -> &str {
    body.pointer("/properties/provisioningState")
        .and_then(Value::as_str)
        .unwrap_or("Succeeded")
}

/// `<prefix>` and the instance id in six base-36 digits, as Azure names a Uniform instance.
fn computer_name(prefix: &str, instance: u64) -> String {
    let mut digits = Vec::new();
    let mut rest = instance;
    for _ in 0..6 {
        let digit = u32::try_from(rest % 36).unwrap_or_default();
        digits.push(char::from_digit(digit, 36).unwrap_or('0'));
        rest /= 36;
    }
    digits.reverse();
    format!("{prefix}{}", digits.into_iter().collect::<String>())
}

/// The zone a new instance goes to: the set's zone holding the fewest.
fn next_zone(zones: &[String], placed: &[Option<String>]) -> Option<String> {
    zones
        .iter()
        .min_by_key(|zone| {
            placed
                .iter()
                .filter(|placed| placed.as_deref() == Some(zone.as_str()))
                .count()
        })
        .cloned()
}

fn zone_of(body: &Value) -> Option<String> {
    body["zones"].get(0).and_then(Value::as_str).map(str::to_owned)
}

/// Whether a placement fits the configured capacity: machines of the size already in the
/// location (or zone), plus those placed by this write.
pub(super) fn fits(prepare: &Prepare<'_>, size: &VmSize, zone: Option<&str>, placing: u32) -> bool {
    let limits: Vec<u32> = prepare
        .config
        .capacity
        .iter()
        .filter(|limit| {
            limit.location.eq_ignore_ascii_case(prepare.location)
                && limit.zone.as_deref() == zone
                && limit
                    .size
                    .as_deref()
                    .is_none_or(|wanted| wanted.eq_ignore_ascii_case(size.name))
        })
        .map(|limit| limit.machines)
        .collect();
    if limits.is_empty() {
        return true;
    }
    let running = prepare
        .state
        .resources
        .iter()
        .filter(|(_, stored)| {
            stored.type_name == INSTANCE.name || stored.type_name == virtual_machines::VIRTUAL_MACHINE.name
        })
        .map(|(_, stored)| stored.body())
        .filter(|body| {
            body["location"].as_str() == Some(prepare.location)
                && zone_of(body).as_deref() == zone
                && state_of(body) != "Failed"
                && machine_size(body).is_some_and(|other| other.eq_ignore_ascii_case(size.name))
        })
        .count();
    let running = u32::try_from(running).unwrap_or(u32::MAX);
    limits
        .iter()
        .all(|limit| running.saturating_add(placing) <= *limit)
}

fn machine_size(body: &Value) -> Option<&str> {
    body.pointer("/properties/hardwareProfile/vmSize")
        .or_else(|| body.pointer("/sku/name"))
        .and_then(Value::as_str)
}

/// What a set's write asks for.
struct Spec {
    size: &'static VmSize,
    capacity: u64,
    zones: Vec<String>,
    flexible: bool,
    upgrade_mode: &'static str,
    model: Map<String, Value>,
    generation: u64,
}

fn prepare_set(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let spec = set_spec(prepare)?;
    let properties = prepare.properties()?.clone();
    let fault_domains = if spec.flexible { 1 } else { 5 };
    prepare.default("platformFaultDomainCount", json!(fault_domains))?;
    prepare.default(
        "singlePlacementGroup",
        json!(!spec.flexible && spec.zones.is_empty()),
    )?;
    if !spec.flexible {
        prepare.default("overprovision", json!(true))?;
        prepare.default("doNotRunExtensionsOnOverprovisionedVMs", json!(false))?;
    }
    prepare.keep("uniqueId", || json!(uuid::Uuid::new_v4().to_string()))?;
    prepare.keep("timeCreated", || json!(now()))?;
    virtual_machines::identity(prepare)?;
    let current = instances(prepare.state, &prepare.id.to_id(), spec.flexible);
    let live: Vec<&(String, Value)> = current
        .iter()
        .filter(|(_, body)| state_of(body) != "Deleting")
        .collect();
    virtual_machines::check_quota(
        prepare,
        spec.size,
        u32::try_from(spec.capacity).unwrap_or(u32::MAX),
    )?;
    let next = scale_out(prepare, &spec, &live)?;
    let surplus = (live.len() as u64).saturating_sub(spec.capacity);
    for (_, body) in scale_in_order(&live, &properties)
        .into_iter()
        .take(usize::try_from(surplus).unwrap_or(0))
    {
        let mut body = body.clone();
        set_instance_state(&mut body, "Deleting");
        prepare.companions.push(body);
    }
    // A new model reaches the instances at once unless the policy is Manual.
    let model_changed = prepare.existing.is_some_and(|existing| {
        existing
            .pointer(&format!("/properties/{GENERATION}"))
            .and_then(Value::as_u64)
            != Some(spec.generation)
    });
    if model_changed && spec.upgrade_mode != "Manual" {
        let upgraded = upgrade_instances(&live, spec.generation);
        if spec.upgrade_mode == "Rolling" {
            let status = rolling_status(upgraded.len(), "RollingForward");
            prepare.properties()?.insert(ROLLING.into(), status);
        }
        prepare.companions.extend(upgraded);
    }
    let properties = prepare.properties()?;
    properties.insert(NEXT_INSTANCE.into(), json!(next));
    properties.insert(GENERATION.into(), json!(spec.generation));
    Ok(())
}

/// Reads and checks what the write asks for (size, capacity, zones, mode, upgrade policy and
/// instance model), and writes it back completed.
fn set_spec(prepare: &mut Prepare<'_>) -> Result<Spec, ArmError> {
    let requested = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let size_name = fields::required_string(&requested, "name", "sku")?.to_owned();
    let size = skus::find(&size_name)
        .ok_or_else(|| virtual_machines::size_not_available(&size_name, prepare.location))?;
    let capacity = fields::integer(&requested, "capacity", "sku")?.unwrap_or(0);
    let capacity = u64::try_from(capacity).map_err(|_| {
        ArmError::invalid_parameter("sku.capacity", "The capacity of a scale set cannot be negative.")
    })?;
    if capacity > 1000 {
        return Err(ArmError::invalid_parameter(
            "sku.capacity",
            format!("The capacity {capacity} is more than the 1000 instances a scale set can hold."),
        ));
    }
    prepare.doc.insert(
        "sku".into(),
        json!({ "name": size_name, "tier": "Standard", "capacity": capacity }),
    );
    let zones = zones(prepare)?;
    let properties = prepare.properties()?.clone();
    let mode = fields::one_of(&properties, "orchestrationMode", "properties", MODES)?.unwrap_or("Uniform");
    if let Some(existing) = prepare.existing
        && existing
            .pointer("/properties/orchestrationMode")
            .and_then(Value::as_str)
            != Some(mode)
    {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "PropertyChangeNotAllowed",
            "Changing property 'orchestrationMode' is not allowed.",
        ));
    }
    let mut upgrade = fields::object(&properties, "upgradePolicy", "properties")?
        .cloned()
        .unwrap_or_default();
    let upgrade_mode =
        fields::one_of(&upgrade, "mode", "properties.upgradePolicy", UPGRADE_MODES)?.unwrap_or("Manual");
    if mode == "Flexible" && upgrade_mode == "Automatic" {
        return Err(ArmError::invalid_parameter(
            "properties.upgradePolicy.mode",
            "A Flexible scale set takes the Manual or Rolling upgrade policy.",
        ));
    }
    let model = fields::object(&properties, "virtualMachineProfile", "properties")?
        .cloned()
        .ok_or_else(|| fields::missing("properties.virtualMachineProfile"))?;
    let model = complete_model(prepare, model, size)?;
    let restricted = skus::restricted(prepare.config, size.name, prepare.location, &zones);
    if restricted && prepare.existing.is_none() {
        return Err(virtual_machines::sku_restricted(prepare, &zones));
    }
    let properties = prepare.properties()?;
    properties.insert("orchestrationMode".into(), json!(mode));
    upgrade.insert("mode".into(), json!(upgrade_mode));
    properties.insert("upgradePolicy".into(), Value::Object(upgrade));
    properties.insert("virtualMachineProfile".into(), Value::Object(model.clone()));
    Ok(Spec {
        size,
        capacity,
        generation: next_generation(prepare.existing, &model, &size_name),
        zones,
        flexible: mode == "Flexible",
        upgrade_mode,
        model,
    })
}

/// Creates the instances the capacity lacks, each in the zone holding the fewest, failing those
/// the zone has no room for; returns the next instance id.
fn scale_out(prepare: &mut Prepare<'_>, spec: &Spec, live: &[&(String, Value)]) -> Result<u64, ArmError> {
    let mut next = prepare
        .existing
        .and_then(|existing| existing.pointer(&format!("/properties/{NEXT_INSTANCE}")))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut placed: Vec<Option<String>> = live.iter().map(|(_, body)| zone_of(body)).collect();
    let mut new_in_zone: Map<String, Value> = Map::new();
    let mut addresses = Addresses::default();
    for _ in 0..spec.capacity.saturating_sub(live.len() as u64) {
        let zone = next_zone(&spec.zones, &placed);
        let key = zone.clone().unwrap_or_default();
        let count = new_in_zone.get(&key).and_then(Value::as_u64).unwrap_or(0) + 1;
        new_in_zone.insert(key, json!(count));
        let fails = !fits(
            prepare,
            spec.size,
            zone.as_deref(),
            u32::try_from(count).unwrap_or(u32::MAX),
        );
        if fails && prepare.failure.is_none() {
            prepare.failure = Some(allocation_failure(spec.size, zone.as_deref(), prepare.location));
        }
        let placement = Placement {
            zone: zone.as_deref(),
            generation: spec.generation,
            fails,
        };
        let instance = if spec.flexible {
            flexible_machine(prepare, &spec.model, spec.size, &placement, &mut addresses)?
        } else {
            uniform_instance(prepare, &spec.model, spec.size, next, &placement, &mut addresses)?
        };
        prepare.companions.extend(instance);
        placed.push(zone);
        next += 1;
    }
    Ok(next)
}

/// Where a new instance goes, the model it runs, and whether it finds room.
struct Placement<'a> {
    zone: Option<&'a str>,
    generation: u64,
    fails: bool,
}

/// Completes the instance model as Azure shows it, and checks what it names.
fn complete_model(
    prepare: &Prepare<'_>,
    mut model: Map<String, Value>,
    size: &VmSize,
) -> Result<Map<String, Value>, ArmError> {
    let path = "properties.virtualMachineProfile";
    let mut os = fields::object(&model, "osProfile", path)?
        .cloned()
        .unwrap_or_default();
    let prefix = fields::required_string(&os, "computerNamePrefix", &format!("{path}.osProfile"))?;
    if prefix.len() > 58 {
        return Err(ArmError::invalid_parameter(
            &format!("{path}.osProfile.computerNamePrefix"),
            "The computer name prefix of a scale set can be up to 58 characters long.",
        ));
    }
    fields::required_string(&os, "adminUsername", &format!("{path}.osProfile"))?;
    let mut storage = fields::object(&model, "storageProfile", path)?
        .cloned()
        .ok_or_else(|| fields::missing(&format!("{path}.storageProfile")))?;
    let reference = fields::object(&storage, "imageReference", &format!("{path}.storageProfile"))?
        .cloned()
        .ok_or_else(|| fields::missing(&format!("{path}.storageProfile.imageReference")))?;
    let image = super::images::resolve(
        &reference,
        prepare.state,
        prepare.id.subscription.as_deref().unwrap_or_default(),
        prepare.location,
    )?;
    let windows = matches!(image.os, super::images::Os::Windows);
    let configuration = if windows {
        "windowsConfiguration"
    } else {
        "linuxConfiguration"
    };
    virtual_machines::fill(
        &mut os,
        json!({
            configuration: {"provisionVMAgent": true, "enableVMAgentPlatformUpdates": !windows},
            "secrets": [],
            "allowExtensionOperations": true,
            "requireGuestProvisionSignal": true,
        }),
    );
    model.insert("osProfile".into(), Value::Object(os));
    let mut os_disk = fields::object(&storage, "osDisk", &format!("{path}.storageProfile"))?
        .cloned()
        .unwrap_or_default();
    virtual_machines::fill(
        &mut os_disk,
        json!({
            "osType": if windows { "Windows" } else { "Linux" },
            "createOption": "FromImage",
            "caching": "None",
            "managedDisk": {"storageAccountType": if size.premium_io { "Premium_LRS" } else { "Standard_LRS" }},
            "diskSizeGB": if windows { 127 } else { 30 },
        }),
    );
    storage.insert("osDisk".into(), Value::Object(os_disk));
    model.insert("storageProfile".into(), Value::Object(storage));
    complete_network(&mut model, path)?;
    if let Some(priority) = fields::one_of(&model, "priority", path, &["Regular", "Low", "Spot"])? {
        model.insert("priority".into(), json!(priority));
        if priority != "Regular" {
            virtual_machines::fill(
                &mut model,
                json!({"evictionPolicy": "Deallocate", "billingProfile": {"maxPrice": -1}}),
            );
        }
    }
    Ok(model)
}

/// The model's network profile, completed with Azure's defaults.
fn complete_network(model: &mut Map<String, Value>, path: &str) -> Result<(), ArmError> {
    let mut network = fields::object(model, "networkProfile", path)?
        .cloned()
        .unwrap_or_default();
    let mut configurations = fields::array(
        &network,
        "networkInterfaceConfigurations",
        &format!("{path}.networkProfile"),
    )?
    .to_vec();
    if configurations.is_empty() {
        return Err(fields::missing(&format!(
            "{path}.networkProfile.networkInterfaceConfigurations"
        )));
    }
    for configuration in &mut configurations {
        let Some(properties) = configuration.get_mut("properties").and_then(Value::as_object_mut) else {
            return Err(fields::missing(&format!(
                "{path}.networkProfile.networkInterfaceConfigurations.properties"
            )));
        };
        virtual_machines::fill(
            properties,
            json!({"enableAcceleratedNetworking": false, "disableTcpStateTracking": false, "dnsSettings": {"dnsServers": []}, "enableIPForwarding": false}),
        );
        if let Some(ip_configurations) = properties
            .get_mut("ipConfigurations")
            .and_then(Value::as_array_mut)
        {
            for ip in ip_configurations {
                if let Some(ip) = ip.get_mut("properties").and_then(Value::as_object_mut) {
                    virtual_machines::fill(ip, json!({"privateIPAddressVersion": "IPv4"}));
                }
            }
        }
    }
    network.insert(
        "networkInterfaceConfigurations".into(),
        Value::Array(configurations),
    );
    model.insert("networkProfile".into(), Value::Object(network));
    Ok(())
}

/// The model's generation: the stored one while the instance model (profile and size) is
/// unchanged, the next otherwise.
fn next_generation(existing: Option<&Value>, model: &Map<String, Value>, size: &str) -> u64 {
    let Some(existing) = existing else {
        return 0;
    };
    let generation = existing
        .pointer(&format!("/properties/{GENERATION}"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let same_profile =
        existing.pointer("/properties/virtualMachineProfile") == Some(&Value::Object(model.clone()));
    let same_size = existing.pointer("/sku/name").and_then(Value::as_str) == Some(size);
    if same_profile && same_size {
        generation
    } else {
        generation + 1
    }
}

pub(super) fn allocation_failure(size: &VmSize, zone: Option<&str>, location: &str) -> ArmError {
    match zone {
        Some(zone) => ArmError::new(
            StatusCode::CONFLICT,
            "ZonalAllocationFailed",
            format!(
                "Allocation failed. We do not have sufficient capacity for the requested VM size {} in zone {zone} of {location}. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance",
                size.name
            ),
        ),
        None => ArmError::new(
            StatusCode::CONFLICT,
            "AllocationFailed",
            format!(
                "Allocation failed. We do not have sufficient capacity for the requested VM size {} in {location}. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance",
                size.name
            ),
        ),
    }
}

/// A Uniform instance (and its OS disk), being created.
fn uniform_instance(
    prepare: &Prepare<'_>,
    model: &Map<String, Value>,
    size: &VmSize,
    number: u64,
    placement: &Placement<'_>,
    addresses: &mut Addresses,
) -> Result<Vec<Value>, ArmError> {
    let Placement {
        zone,
        generation,
        fails,
    } = *placement;
    let set_id = prepare.id.to_id();
    let set_name = prepare.id.name();
    let id = format!("{set_id}/virtualMachines/{number}");
    let prefix = model["osProfile"]["computerNamePrefix"]
        .as_str()
        .unwrap_or(set_name);
    let mut os = model["osProfile"].clone();
    if let Some(os) = os.as_object_mut() {
        os.remove("computerNamePrefix");
        os.insert("computerName".into(), json!(computer_name(prefix, number)));
    }
    let disk_name = format!("{set_name}_{number}_OsDisk_1_{}", uuid::Uuid::new_v4().simple());
    let disk_id = format!(
        "{}/providers/Microsoft.Compute/disks/{disk_name}",
        prepare.id.scope
    );
    let mut storage = model["storageProfile"].clone();
    storage["osDisk"]["name"] = json!(disk_name);
    storage["osDisk"]["managedDisk"]["id"] = json!(disk_id);
    storage["dataDisks"] = json!([]);
    let mut instance = json!({
        "id": id,
        "name": format!("{set_name}_{number}"),
        "type": INSTANCE.name,
        "location": prepare.location,
        "instanceId": number.to_string(),
        "sku": { "name": size.name, "tier": "Standard" },
        "properties": {
            "provisioningState": "Creating",
            "latestModelApplied": true,
            "modelDefinitionApplied": "VirtualMachineScaleSet",
            "vmId": uuid::Uuid::new_v4().to_string(),
            "timeCreated": now(),
            "hardwareProfile": {},
            "storageProfile": storage,
            "osProfile": os,
            "networkProfile": {"networkInterfaces": nic_references(&id, model)},
            "networkProfileConfiguration": model["networkProfile"].clone(),
            INTERFACES: uniform_interfaces(prepare, &id, model, addresses)?,
            RUNS: generation,
            FAILS: fails,
        },
        "resources": installed_extensions(&id, model, EXTENSIONS_OF_INSTANCES),
    });
    if let Some(zone) = zone {
        instance["zones"] = json!([zone]);
    }
    if let Some(identity) = prepare.doc.get("identity") {
        instance["identity"] = identity.clone();
    }
    let disk = os_disk(&disk_id, &disk_name, prepare.location, zone, &id, model);
    Ok(vec![instance, disk])
}

/// The ARM type of the extensions installed on a Uniform set's instances.
const EXTENSIONS_OF_INSTANCES: &str = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/extensions";

/// The extensions of the model an instance is made from, as the instance answers them in its
/// `resources`: installing (`Creating`) until the instance settles, without protected settings.
fn installed_extensions(instance: &str, model: &Map<String, Value>, type_: &str) -> Value {
    let extensions = model
        .get("extensionProfile")
        .and_then(|profile| profile.get("extensions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|extension| {
            let name = extension["name"].as_str()?;
            let mut properties = extension["properties"].as_object().cloned().unwrap_or_default();
            properties.remove("protectedSettings");
            properties.remove("protectedSettingsFromKeyVault");
            properties.insert("provisioningState".into(), json!("Creating"));
            Some(json!({
                "id": format!("{instance}/extensions/{name}"),
                "name": name,
                "type": type_,
                "properties": properties,
            }))
        })
        .collect();
    Value::Array(extensions)
}

/// A Uniform instance's interfaces, kept inside it (`{instance}/networkInterfaces/{name}`), with
/// addresses from their subnets.
fn uniform_interfaces(
    prepare: &Prepare<'_>,
    instance: &str,
    model: &Map<String, Value>,
    addresses: &mut Addresses,
) -> Result<Vec<Value>, ArmError> {
    let configurations = model["networkProfile"]["networkInterfaceConfigurations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    configurations
        .iter()
        .map(|configuration| {
            let name = configuration["name"].as_str().unwrap_or("nic");
            let nic_id = format!("{instance}/networkInterfaces/{name}");
            Ok(json!({
                "id": nic_id,
                "name": name,
                "properties": {
                    "primary": configuration["properties"]["primary"].clone(),
                    "ipConfigurations": ip_configurations(prepare, configuration, &nic_id, addresses)?,
                },
            }))
        })
        .collect()
}

/// The IP configurations of an interface made from a model's configuration, each with an
/// address of its subnet.
fn ip_configurations(
    prepare: &Prepare<'_>,
    configuration: &Value,
    nic_id: &str,
    addresses: &mut Addresses,
) -> Result<Vec<Value>, ArmError> {
    let mut built = Vec::new();
    for ip in configuration["properties"]["ipConfigurations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let ip_name = ip["name"].as_str().unwrap_or("ipconfig");
        let subnet = ip
            .pointer("/properties/subnet/id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let address = addresses.next(prepare.state, prepare.staged, subnet, nic_id)?;
        let mut properties = ip["properties"].as_object().cloned().unwrap_or_default();
        properties.insert("privateIPAddress".into(), json!(address));
        properties.insert("privateIPAllocationMethod".into(), json!("Dynamic"));
        properties.insert("provisioningState".into(), json!("Succeeded"));
        built.push(json!({
            "name": ip_name,
            "id": format!("{nic_id}/ipConfigurations/{ip_name}"),
            "properties": properties,
        }));
    }
    Ok(built)
}

/// The interfaces an instance has from its model, as references.
fn nic_references(instance: &str, model: &Map<String, Value>) -> Vec<Value> {
    model["networkProfile"]["networkInterfaceConfigurations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|configuration| configuration["name"].as_str())
        .map(|name| json!({ "id": format!("{instance}/networkInterfaces/{name}") }))
        .collect()
}

/// An instance's OS disk, managed by it.
fn os_disk(
    id: &str,
    name: &str,
    location: &str,
    zone: Option<&str>,
    owner: &str,
    model: &Map<String, Value>,
) -> Value {
    let os_disk = &model["storageProfile"]["osDisk"];
    let mut disk = json!({
        "id": id,
        "name": name,
        "type": super::disks::DISK.name,
        "location": location,
        "managedBy": owner,
        "sku": { "name": os_disk["managedDisk"]["storageAccountType"].clone() },
        "properties": {
            "osType": os_disk["osType"].clone(),
            "creationData": {"createOption": "FromImage"},
            "diskSizeGB": os_disk["diskSizeGB"].clone(),
            "diskState": "Attached",
            "provisioningState": "Succeeded",
            "timeCreated": now(),
            "uniqueId": uuid::Uuid::new_v4().to_string(),
        },
    });
    if let Some(zone) = zone {
        disk["zones"] = json!([zone]);
    }
    disk
}

/// A Flexible set's machine's interfaces, one per configuration of the model, with addresses from
/// their subnets; and the machine's references to them.
fn flexible_interfaces(
    prepare: &Prepare<'_>,
    name: &str,
    model: &Map<String, Value>,
    addresses: &mut Addresses,
) -> Result<(Vec<Value>, Vec<Value>), ArmError> {
    let scope = &prepare.id.scope;
    let mut companions = Vec::new();
    let mut interfaces = Vec::new();
    let configurations = model["networkProfile"]["networkInterfaceConfigurations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for configuration in configurations {
        let config_name = configuration["name"].as_str().unwrap_or("nic");
        let nic_name = format!("{name}-{config_name}");
        let nic_id = format!("{scope}/providers/Microsoft.Network/networkInterfaces/{nic_name}");
        let ip_configurations = ip_configurations(prepare, &configuration, &nic_id, addresses)?;
        companions.push(json!({
            "id": nic_id,
            "name": nic_name,
            "type": "Microsoft.Network/networkInterfaces",
            "location": prepare.location,
            "properties": {
                "provisioningState": "Succeeded",
                "resourceGuid": uuid::Uuid::new_v4().to_string(),
                "ipConfigurations": ip_configurations,
                "primary": configuration["properties"]["primary"].clone(),
                "enableAcceleratedNetworking": configuration["properties"]["enableAcceleratedNetworking"].clone(),
                "enableIPForwarding": false,
                "nicType": "Standard",
            },
        }));
        interfaces.push(json!({ "id": nic_id, "properties": { "primary": configuration["properties"]["primary"].clone(), "deleteOption": "Delete" } }));
    }
    Ok((companions, interfaces))
}

/// A Flexible set's virtual machine, with its interfaces (addresses from their subnets) and OS
/// disk, all deleted with it.
fn flexible_machine(
    prepare: &Prepare<'_>,
    model: &Map<String, Value>,
    size: &VmSize,
    placement: &Placement<'_>,
    addresses: &mut Addresses,
) -> Result<Vec<Value>, ArmError> {
    let Placement {
        zone,
        generation,
        fails,
    } = *placement;
    let scope = &prepare.id.scope;
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let name = format!("{}_{suffix}", prepare.id.name());
    let id = format!("{scope}/providers/Microsoft.Compute/virtualMachines/{name}");
    let (mut companions, interfaces) = flexible_interfaces(prepare, &name, model, addresses)?;
    let disk_name = format!("{name}_OsDisk_1_{}", uuid::Uuid::new_v4().simple());
    let disk_id = format!("{scope}/providers/Microsoft.Compute/disks/{disk_name}");
    companions.push(os_disk(&disk_id, &disk_name, prepare.location, zone, &id, model));
    let mut storage = model["storageProfile"].clone();
    storage["osDisk"]["name"] = json!(disk_name);
    storage["osDisk"]["managedDisk"]["id"] = json!(disk_id);
    storage["osDisk"]["deleteOption"] = json!("Delete");
    storage["dataDisks"] = json!([]);
    let mut os = model["osProfile"].clone();
    let prefix = os["computerNamePrefix"]
        .as_str()
        .unwrap_or(prepare.id.name())
        .to_owned();
    if let Some(os) = os.as_object_mut() {
        os.remove("computerNamePrefix");
        os.insert(
            "computerName".into(),
            json!(format!(
                "{prefix}{}",
                &uuid::Uuid::new_v4().simple().to_string()[..6]
            )),
        );
    }
    let mut machine = json!({
        "id": id,
        "name": name,
        "type": virtual_machines::VIRTUAL_MACHINE.name,
        "location": prepare.location,
        "properties": {
            "provisioningState": "Creating",
            "vmId": uuid::Uuid::new_v4().to_string(),
            "timeCreated": now(),
            "virtualMachineScaleSet": {"id": prepare.id.to_id()},
            "hardwareProfile": {"vmSize": size.name},
            "storageProfile": storage,
            "osProfile": os,
            "networkProfile": {"networkInterfaces": interfaces},
            RUNS: generation,
            FAILS: fails,
        },
        "resources": installed_extensions(&id, model, extensions::EXTENSION.name),
    });
    if let Some(zone) = zone {
        machine["zones"] = json!([zone]);
    }
    if let Some(priority) = model.get("priority") {
        machine["properties"]["priority"] = priority.clone();
    }
    companions.push(machine);
    Ok(companions)
}

/// The instances a scale-in removes first, as the set's policy orders them: by default from the
/// zones holding the most, the highest instance first; `OldestVM` and `NewestVM` by age.
fn scale_in_order<'a>(
    live: &[&'a (String, Value)],
    properties: &Map<String, Value>,
) -> Vec<&'a (String, Value)> {
    let rule = properties
        .get("scaleInPolicy")
        .and_then(|policy| policy["rules"].get(0))
        .and_then(Value::as_str)
        .unwrap_or("Default");
    let mut order: Vec<&(String, Value)> = live.to_vec();
    if rule.eq_ignore_ascii_case("OldestVM") {
        return order;
    }
    order.reverse();
    if rule.eq_ignore_ascii_case("NewestVM") {
        return order;
    }
    // `order` runs from the highest instance to the lowest: take, from the zones holding the
    // most, the highest instance.
    let mut picked = Vec::with_capacity(order.len());
    while !order.is_empty() {
        let count = |zone: &Option<String>| order.iter().filter(|(_, body)| zone_of(body) == *zone).count();
        let fullest = order
            .iter()
            .map(|(_, body)| count(&zone_of(body)))
            .max()
            .unwrap_or(0);
        let at = order
            .iter()
            .position(|(_, body)| count(&zone_of(body)) == fullest)
            .unwrap_or(0);
        picked.push(order.remove(at));
    }
    picked
}

fn set_instance_state(body: &mut Value, state: &str) {
    body["properties"]["provisioningState"] = json!(state);
    if state == "Deleting" {
        // The set's capacity already counts the instance gone.
        body["properties"][LEAVING] = json!(true);
    }
}

/// The live instances moved to the model of `generation`.
fn upgrade_instances(live: &[&(String, Value)], generation: u64) -> Vec<Value> {
    live.iter()
        .map(|(_, body)| {
            let mut body = body.clone();
            set_instance_state(&mut body, "Updating");
            body["properties"][RUNS] = json!(generation);
            body
        })
        .collect()
}

fn rolling_status(instances: usize, code: &str) -> Value {
    let done = code == "Completed";
    json!({
        "runningStatus": {"code": code, "startTime": now(), "lastAction": "Start"},
        "progress": {
            "successfulInstanceCount": if done { instances } else { 0 },
            "failedInstanceCount": 0,
            "inProgressInstanceCount": if done { 0 } else { instances },
            "pendingInstanceCount": 0,
        },
    })
}

/// When a set's operation ends, its instances settle: created and updated ones succeed (or
/// fail, when there was no room for them), deleted ones go.
fn settle(state: &mut State, key: &str, _succeeded: bool) {
    let Some(set) = state.body(key).map(std::borrow::Cow::into_owned) else {
        return;
    };
    let set_id = set["id"].as_str().unwrap_or_default().to_owned();
    for (instance, body) in instances(state, &set_id, flexible(&set)) {
        match state_of(&body) {
            "Deleting" => state.remove_resource(&instance),
            "Creating" | "Updating" => {
                let fails = body.pointer(&format!("/properties/{FAILS}")) == Some(&Value::Bool(true));
                state.change_doc(&instance, |body| {
                    let settled = if fails { "Failed" } else { "Succeeded" };
                    set_instance_state(body, settled);
                    if let Some(properties) = body["properties"].as_object_mut() {
                        properties.remove(FAILS);
                    }
                    // Its extensions ran with it (a machine that never started runs none).
                    for extension in body["resources"].as_array_mut().into_iter().flatten() {
                        extension["properties"]["provisioningState"] = json!(settled);
                    }
                });
            }
            _ => {}
        }
    }
    let rolling = set
        .pointer(&format!("/properties/{ROLLING}/progress/inProgressInstanceCount"))
        .and_then(Value::as_u64);
    if let Some(count) = rolling {
        state.change_doc(key, |body| {
            body["properties"][ROLLING] = rolling_status(usize::try_from(count).unwrap_or(0), "Completed");
        });
    }
}

/// A deleted set takes its instances along: a Flexible set's machines, and the OS disks of a
/// Uniform set's instances (the instances themselves lie under the set and went with it).
fn remove_instances(state: &mut State, set: &Value) {
    let set_id = set["id"].as_str().unwrap_or_default();
    for (instance, _) in instances(state, set_id, flexible(set)) {
        state.remove_resource(&instance);
    }
    let owner = format!("{}/virtualmachines/", set_key(set_id));
    let group = set_key(set_id)
        .split("/providers/")
        .next()
        .unwrap_or_default()
        .to_owned();
    let disks: Vec<String> = state
        .under(&format!("{group}/providers/microsoft.compute/disks/"))
        .filter(|(_, stored)| {
            stored
                .body_mentioning("managedBy")
                .and_then(|disk| {
                    disk["managedBy"]
                        .as_str()
                        .map(|by| by.to_ascii_lowercase().starts_with(&owner))
                })
                .unwrap_or(false)
        })
        .map(|(disk, _)| disk.to_owned())
        .collect();
    for disk in disks {
        state.remove_resource(&disk);
    }
}

/// A deleted instance takes its OS disk along and leaves the set one smaller.
fn instance_deleted(state: &mut State, instance: &Value) {
    if let Some(disk) = instance
        .pointer("/properties/storageProfile/osDisk/managedDisk/id")
        .and_then(Value::as_str)
    {
        state.remove_resource(&disk.to_ascii_lowercase());
    }
    let set = instance["id"].as_str().and_then(|id| {
        id.to_ascii_lowercase()
            .rsplit_once("/virtualmachines/")
            .map(|(set, _)| set.to_owned())
    });
    if let Some(set) = set
        && instance.pointer(&format!("/properties/{LEAVING}")) != Some(&Value::Bool(true))
    {
        shrink(state, &set);
    }
}

/// A Flexible set's machine deleted on its own leaves the set one smaller.
pub(super) fn left(state: &mut State, machine: &Value) {
    let leaving = machine.pointer(&format!("/properties/{LEAVING}")) == Some(&Value::Bool(true));
    if let Some(set) = machine
        .pointer("/properties/virtualMachineScaleSet/id")
        .and_then(Value::as_str)
        && !leaving
    {
        shrink(state, &set.to_ascii_lowercase());
    }
}

/// One instance fewer in the set's capacity.
fn shrink(state: &mut State, set: &str) {
    state.change_doc(set, |body| {
        if let Some(capacity) = body.pointer_mut("/sku/capacity")
            && let Some(count) = capacity.as_u64()
        {
            *capacity = json!(count.saturating_sub(1));
        }
    });
}

/// An instance shows whether it runs the set's latest model, and settles with the set.
fn show_instance(state: &State, instance: &mut Value) {
    if let Some(id) = instance["id"].as_str().map(str::to_owned)
        && let Some((set, _)) = id.to_ascii_lowercase().rsplit_once("/virtualmachines/")
        && let Some(set) = state.body(set)
    {
        let current = set
            .pointer(&format!("/properties/{GENERATION}"))
            .and_then(Value::as_u64);
        let runs = instance
            .pointer(&format!("/properties/{RUNS}"))
            .and_then(Value::as_u64);
        instance["properties"]["latestModelApplied"] = json!(current == runs);
    }
}

/// Instance writes are the set's; a client may only change an instance's protection policy.
fn prepare_instance(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let Some(existing) = prepare.existing.cloned() else {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!(
                "The instance {} of the scale set does not exist; the set's capacity creates instances.",
                prepare.id.name()
            ),
        ));
    };
    let policy = prepare.properties()?.get("protectionPolicy").cloned();
    let mut doc = existing.as_object().cloned().unwrap_or_default();
    if let Some(policy) = policy {
        doc.entry("properties").or_insert_with(|| json!({}))["protectionPolicy"] = policy;
    }
    for read_only in ["id", "name", "type", "etag"] {
        doc.remove(read_only);
    }
    prepare.doc = doc;
    Ok(())
}

/// The instance ids an action names (`instanceIds`); all when it names none and `all_by_default`.
fn named_instances(act: &Act<'_>, all_by_default: bool) -> Result<Vec<(String, Value)>, ArmError> {
    let set_id = act.id.to_id();
    let current = instances(act.state, &set_id, flexible(&act.doc));
    let requested: Vec<String> = act.body["instanceIds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if requested.is_empty() {
        return if all_by_default {
            Ok(current)
        } else {
            Err(fields::missing("instanceIds"))
        };
    }
    requested
        .iter()
        .map(|wanted| {
            current
                .iter()
                .find(|(_, body)| {
                    body["instanceId"]
                        .as_str()
                        .or(body["name"].as_str())
                        .is_some_and(|id| id.eq_ignore_ascii_case(wanted))
                })
                .cloned()
                .ok_or_else(|| {
                    ArmError::invalid_parameter(
                        "instanceIds",
                        format!(
                            "The instance id '{wanted}' is not an instance of scale set '{}'.",
                            act.id.name()
                        ),
                    )
                })
        })
        .collect()
}

/// `delete` with `instanceIds` (the SDKs' `deleteInstances`; `forceDeletion` skips the graceful
/// shutdown, which the emulator does not wait for anyway): the instances go when the operation
/// ends, and the capacity shrinks.
fn delete_instances(act: &mut Act<'_>) -> Result<Acted, ArmError> {
    virtual_machines::check_flag(act, "forceDeletion")?;
    let doomed = named_instances(act, false)?;
    let removed = doomed.len() as u64;
    for (_, mut body) in doomed {
        set_instance_state(&mut body, "Deleting");
        act.companions.push(body);
    }
    if let Some(capacity) = act.doc.pointer_mut("/sku/capacity")
        && let Some(count) = capacity.as_u64()
    {
        *capacity = json!(count.saturating_sub(removed));
    }
    Ok(Acted::Started)
}

/// `manualupgrade`: the named instances take the set's latest model.
fn manual_upgrade(act: &mut Act<'_>) -> Result<Acted, ArmError> {
    upgrade_named(act, false)
}

/// `reimage`: the named instances (all by default) boot afresh from the latest model.
fn reimage(act: &mut Act<'_>) -> Result<Acted, ArmError> {
    upgrade_named(act, true)
}

/// Moves the named instances (all, when none are named and `all_by_default`) to the set's
/// latest model.
fn upgrade_named(act: &mut Act<'_>, all_by_default: bool) -> Result<Acted, ArmError> {
    let generation = act
        .doc
        .pointer(&format!("/properties/{GENERATION}"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let named = named_instances(act, all_by_default)?;
    let refs: Vec<&(String, Value)> = named.iter().collect();
    act.companions.extend(upgrade_instances(&refs, generation));
    Ok(Acted::Started)
}

/// Power actions of the set: every named instance (all by default) ends in `power`.
fn power(act: &mut Act<'_>, power: &str) -> Result<Acted, ArmError> {
    for (_, mut body) in named_instances(act, true)? {
        body["properties"][POWER] = json!(power);
        act.companions.push(body);
    }
    Ok(Acted::Started)
}

fn instance_power(act: &mut Act<'_>, power: &str) -> Acted {
    act.doc["properties"][POWER] = json!(power);
    Acted::Started
}

fn reimage_instance(act: &mut Act<'_>) -> Acted {
    let set = act.id.parent().and_then(|set| act.state.body(&set.key()));
    let generation = set.and_then(|set| {
        set.pointer(&format!("/properties/{GENERATION}"))
            .and_then(Value::as_u64)
    });
    set_instance_state(&mut act.doc, "Updating");
    if let Some(generation) = generation {
        act.doc["properties"][RUNS] = json!(generation);
    }
    Acted::Started
}

/// The set's stored document, for its catalogues.
fn set_of<'a>(lookup: &'a Lookup<'_>) -> Result<std::borrow::Cow<'a, Value>, ArmError> {
    let mut set = lookup.id.clone();
    set.types.truncate(1);
    set.names.truncate(1);
    lookup.state.body(&set.key()).ok_or_else(|| {
        ArmError::resource_not_found(
            &format!("Microsoft.Compute/virtualMachineScaleSets/{}", set.name()),
            set.resource_group.as_deref(),
        )
    })
}

fn latest_rolling_upgrade(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let set = set_of(lookup)?;
    let Some(status) = set.pointer(&format!("/properties/{ROLLING}")) else {
        return Err(ArmError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!(
                "The scale set {} has had no rolling upgrade.",
                set["name"].as_str().unwrap_or_default()
            ),
        ));
    };
    Ok(json!({
        "location": set["location"],
        "properties": {
            "policy": set.pointer("/properties/upgradePolicy/rollingUpgradePolicy").cloned().unwrap_or_else(|| json!({})),
            "runningStatus": status["runningStatus"],
            "progress": status["progress"],
        },
    }))
}

fn set_instance_view(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let set = set_of(lookup)?;
    let set_id = set["id"].as_str().unwrap_or_default();
    let members = instances(lookup.state, set_id, flexible(&set));
    let mut counts: Map<String, Value> = Map::new();
    for (_, body) in &members {
        let code = format!("ProvisioningState/{}", state_of(body).to_ascii_lowercase());
        let count = counts.get(&code).and_then(Value::as_u64).unwrap_or(0) + 1;
        counts.insert(code, json!(count));
    }
    let statuses: Vec<Value> = counts
        .into_iter()
        .map(|(code, count)| json!({ "code": code, "count": count }))
        .collect();
    let state = state_of(&set);
    Ok(json!({
        "virtualMachine": { "statusesSummary": statuses },
        "statuses": [{
            "code": format!("ProvisioningState/{}", state.to_ascii_lowercase()),
            "level": if state == "Failed" { "Error" } else { "Info" },
            "displayStatus": state,
            "time": set.pointer("/properties/timeCreated").cloned().unwrap_or(Value::Null),
        }],
    }))
}

fn instance_instance_view(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let instance = lookup
        .id
        .parent_of_collection()
        .ok_or_else(|| ArmError::no_route("GET", &lookup.id.to_id()))?;
    let body = lookup
        .state
        .body(&instance.key())
        .ok_or_else(|| ArmError::not_found(&instance.to_id()))?;
    Ok(virtual_machines::instance_view(lookup.state, &body))
}

/// An instance's interfaces as Microsoft.Network answers them.
fn interfaces_of(instance: &Value) -> Vec<Value> {
    let location = instance["location"].clone();
    instance
        .pointer(&format!("/properties/{INTERFACES}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|nic| {
            let mut properties = nic["properties"].clone();
            properties["provisioningState"] = json!("Succeeded");
            properties["virtualMachine"] = json!({ "id": instance["id"] });
            properties["enableAcceleratedNetworking"] = json!(false);
            properties["enableIPForwarding"] = json!(false);
            json!({
                "id": nic["id"],
                "name": nic["name"],
                "type": "Microsoft.Network/networkInterfaces",
                "location": location,
                "properties": properties,
            })
        })
        .collect()
}

/// The instance a path under `.../virtualMachines/{id}` names.
fn instance_of<'a>(lookup: &'a Lookup<'_>) -> Result<std::borrow::Cow<'a, Value>, ArmError> {
    let mut instance = lookup.id.clone();
    instance.types.truncate(2);
    instance.names.truncate(2);
    lookup
        .state
        .body(&instance.key())
        .ok_or_else(|| ArmError::not_found(&instance.to_id()))
}

fn instance_interface(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let instance = instance_of(lookup)?;
    let wanted = lookup.id.name();
    interfaces_of(&instance)
        .into_iter()
        .find(|nic| {
            nic["name"]
                .as_str()
                .is_some_and(|name| name.eq_ignore_ascii_case(wanted))
        })
        .ok_or_else(|| ArmError::not_found(&lookup.id.to_id()))
}

fn instance_interfaces(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let instance = instance_of(lookup)?;
    Ok(json!({ "value": interfaces_of(&instance) }))
}

fn set_interfaces(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let set = set_of(lookup)?;
    let set_id = set["id"].as_str().unwrap_or_default();
    let all: Vec<Value> = instances(lookup.state, set_id, false)
        .iter()
        .flat_map(|(_, instance)| interfaces_of(instance))
        .collect();
    Ok(json!({ "value": all }))
}
