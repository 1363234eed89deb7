//! Azure Compute Galleries: a gallery, its image definitions (what the images are: OS, state,
//! publisher/offer/SKU, generation, features) and their versions (the images themselves, made from
//! a managed image, a snapshot or disk, a virtual machine or another version, replicated to target
//! regions). Written as virtual machines are (201 `Creating`, then an operation). A gallery that
//! still has definitions, and a definition that still has versions, cannot be deleted. A version
//! copies its source, which may be deleted afterwards; replication completes with the write.
//! Versions of a gallery shared with groups are read under `sharedGalleries` by the gallery's
//! unique name, in the regions they are replicated to; who the gallery is shared with is not
//! modelled: every subscription sees it.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::images::{Os, Resolved};
use super::managed_images::{HYPER_V_GENERATIONS, IMAGE, OS_STATES, OS_TYPES};
use super::{
    COMPUTE, GALLERY_API_VERSIONS, disks, document, now, refuse_while_nested, required_choice, source,
    virtual_machines,
};
use crate::error::ArmError;
use crate::resources::names::{Naming, alphanumeric, refuse};
use crate::resources::{Catalogue, Expansion, Hooks, Lookup, Lro, NO_HOOKS, Prepare, ResourceType, fields};
use crate::state::State;

pub(crate) static GALLERY: ResourceType = ResourceType {
    naming: &GALLERY_NAMES,
    hooks: Hooks {
        deletable: Some(refuse_while_nested),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/galleries",
        GALLERY_API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_gallery,
    )
};

pub(crate) static DEFINITION: ResourceType = ResourceType {
    naming: &DEFINITION_NAMES,
    hooks: Hooks {
        deletable: Some(refuse_while_nested),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/galleries/images",
        GALLERY_API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_definition,
    )
};

pub(crate) static VERSION: ResourceType = ResourceType {
    naming: &VERSION_NAMES,
    weak_references: true,
    hooks: Hooks {
        expand: Some(Expansion {
            name: "ReplicationStatus",
            property: "replicationStatus",
            view: replication_status,
        }),
        ..NO_HOOKS
    },
    ..document(
        "Microsoft.Compute/galleries/images/versions",
        GALLERY_API_VERSIONS,
        &COMPUTE,
        Lro::Async,
        prepare_version,
    )
};

fn alphanumeric_underscore_or_period(c: char) -> bool {
    alphanumeric(c) || c == '_' || c == '.'
}

fn definition_character(c: char) -> bool {
    alphanumeric_underscore_or_period(c) || c == '-'
}

fn version_character(c: char) -> bool {
    c.is_ascii_digit() || c == '.'
}

/// Galleries: up to 80 letters, digits, underscores and periods, starting and ending with a
/// letter or digit.
static GALLERY_NAMES: Naming = Naming {
    min: 1,
    max: 80,
    allowed: alphanumeric_underscore_or_period,
    first: alphanumeric,
    last: alphanumeric,
    rule: "A gallery name has 1 to 80 letters, digits, underscores and periods; it starts and ends with a letter or digit.",
    refuse,
};

/// Image definitions: as galleries, hyphens allowed.
static DEFINITION_NAMES: Naming = Naming {
    allowed: definition_character,
    rule: "An image definition name has 1 to 80 letters, digits, underscores, hyphens and periods; it starts and ends with a letter or digit.",
    ..GALLERY_NAMES
};

/// Versions: `Major.Minor.Patch`, each a 32-bit integer.
static VERSION_NAMES: Naming = Naming {
    min: 5,
    max: 32,
    allowed: version_character,
    first: |c| c.is_ascii_digit(),
    last: |c| c.is_ascii_digit(),
    rule: "An image version name has the form Major.Minor.Patch, each part a 32-bit integer.",
    refuse,
};

const ARCHITECTURES: &[&str] = &["x64", "Arm64"];
const PERMISSIONS: &[&str] = &["Private", "Groups", "Community"];
/// The storage a version's replicas are kept on.
const REPLICA_STORAGE: &[&str] = &["Standard_LRS", "Standard_ZRS", "Premium_LRS", "PremiumV2_LRS"];

/// A property the client may not change once set.
fn immutable(prepare: &Prepare<'_>, property: &str) -> Result<(), ArmError> {
    let Some(existing) = prepare
        .existing
        .and_then(|existing| existing["properties"].get(property))
    else {
        return Ok(());
    };
    let requested = prepare
        .doc
        .get("properties")
        .and_then(|properties| properties.get(property));
    if requested.is_none_or(|requested| requested == existing) {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::CONFLICT,
        "PropertyChangeNotAllowed",
        format!("Changing property '{property}' is not allowed."),
    ))
}

fn prepare_gallery(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let subscription = prepare.id.subscription.clone().unwrap_or_default();
    let unique = format!("{subscription}-{}", prepare.id.name().to_ascii_uppercase());
    let properties = prepare.properties()?;
    fields::string(properties, "description", "properties")?;
    properties.insert("identifier".into(), json!({ "uniqueName": unique }));
    let existing_names = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/sharingProfile/communityGalleryInfo/publicNames"))
        .cloned();
    let properties = prepare.properties()?;
    let Some(sharing) = fields::object(properties, "sharingProfile", "properties")?.cloned() else {
        return Ok(());
    };
    let path = "properties.sharingProfile";
    let mut sharing = sharing;
    let permissions = fields::one_of(&sharing, "permissions", path, PERMISSIONS)?.unwrap_or("Private");
    sharing.insert("permissions".into(), json!(permissions));
    if permissions == "Community" {
        let info_path = "properties.sharingProfile.communityGalleryInfo";
        let mut info = fields::object(&sharing, "communityGalleryInfo", path)?
            .cloned()
            .ok_or_else(|| fields::missing(info_path))?;
        for required in ["publisherUri", "publisherContact", "eula"] {
            fields::required_string(&info, required, info_path)?;
        }
        let prefix = fields::required_string(&info, "publicNamePrefix", info_path)?.to_owned();
        // The public name is Azure's: the prefix and a GUID, kept across updates.
        let names = existing_names.unwrap_or_else(|| json!([format!("{prefix}-{}", uuid::Uuid::new_v4())]));
        info.insert("publicNames".into(), names);
        info.insert("communityGalleryEnabled".into(), json!(true));
        sharing.insert("communityGalleryInfo".into(), Value::Object(info));
    }
    prepare
        .properties()?
        .insert("sharingProfile".into(), Value::Object(sharing));
    Ok(())
}

fn prepare_definition(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?;
    required_choice(properties, "osType", "properties", OS_TYPES)?;
    required_choice(properties, "osState", "properties", OS_STATES)?;
    for property in ["osType", "osState", "identifier", "hyperVGeneration"] {
        immutable(prepare, property)?;
    }
    let properties = prepare.properties()?;
    let identifier = fields::object(properties, "identifier", "properties")?
        .ok_or_else(|| fields::missing("properties.identifier"))?;
    for required in ["publisher", "offer", "sku"] {
        fields::required_string(identifier, required, "properties.identifier")?;
    }
    let hyper_v =
        fields::one_of(properties, "hyperVGeneration", "properties", HYPER_V_GENERATIONS)?.unwrap_or("V1");
    let architecture =
        fields::one_of(properties, "architecture", "properties", ARCHITECTURES)?.unwrap_or("x64");
    for (index, feature) in fields::array(properties, "features", "properties")?
        .iter()
        .enumerate()
    {
        let at = format!("properties.features[{index}]");
        let feature = feature
            .as_object()
            .ok_or_else(|| fields::wrong_type(&at, "an object"))?;
        fields::required_string(feature, "name", &at)?;
        fields::required_string(feature, "value", &at)?;
    }
    properties.insert("hyperVGeneration".into(), json!(hyper_v));
    properties.insert("architecture".into(), json!(architecture));
    Ok(())
}

/// What a version learns of what it is made from.
struct Source {
    /// The size of its OS disk.
    os_size: Value,
    data_images: Vec<Value>,
    /// Its Hyper-V generation, when it has one.
    hyper_v: Option<String>,
}

/// What a version is made from: a managed image, a snapshot or disk, a machine or another version.
fn source_images(state: &State, id: &str) -> Result<Source, ArmError> {
    let types = [
        IMAGE.name,
        disks::SNAPSHOT.name,
        disks::DISK.name,
        virtual_machines::VIRTUAL_MACHINE.name,
        VERSION.name,
    ];
    let found = source(state, id, &types)?;
    let properties = &found["properties"];
    let generation = |document: &Value| {
        document["properties"]["hyperVGeneration"]
            .as_str()
            .map(str::to_owned)
    };
    let data_disks = |disks: &Value| -> Vec<Value> {
        disks
            .as_array()
            .into_iter()
            .flatten()
            .map(|disk| json!({ "lun": disk["lun"], "sizeInGB": disk["diskSizeGB"], "hostCaching": "None" }))
            .collect()
    };
    let profile = &properties["storageProfile"];
    Ok(if found["type"] == VERSION.name {
        let key = id.to_ascii_lowercase();
        let definition = key
            .rsplit_once("/versions/")
            .and_then(|(definition, _)| state.body(definition));
        Source {
            os_size: profile["osDiskImage"]["sizeInGB"].clone(),
            data_images: profile["dataDiskImages"].as_array().cloned().unwrap_or_default(),
            hyper_v: definition.and_then(|definition| generation(&definition)),
        }
    } else if found["type"] == virtual_machines::VIRTUAL_MACHINE.name {
        // A machine's generation is its OS disk's.
        let disk = profile["osDisk"]["managedDisk"]["id"]
            .as_str()
            .and_then(|disk| state.body(&disk.to_ascii_lowercase()));
        Source {
            os_size: profile["osDisk"]["diskSizeGB"].clone(),
            data_images: data_disks(&profile["dataDisks"]),
            hyper_v: disk.and_then(|disk| generation(&disk)),
        }
    } else if found["type"] == IMAGE.name {
        Source {
            os_size: profile["osDisk"]["diskSizeGB"].clone(),
            data_images: data_disks(&profile["dataDisks"]),
            hyper_v: generation(&found),
        }
    } else {
        Source {
            os_size: properties["diskSizeGB"].clone(),
            data_images: Vec::new(),
            hyper_v: generation(&found),
        }
    })
}

/// Azure takes a version whose source is of another Hyper-V generation than its definition, then
/// fails its operation.
fn check_generation(prepare: &mut Prepare<'_>, id: &str, found: Option<&str>) {
    let expected = prepare
        .id
        .parent()
        .and_then(|definition| prepare.state.body(&definition.key()))
        .and_then(|definition| {
            definition["properties"]["hyperVGeneration"]
                .as_str()
                .map(str::to_owned)
        });
    if let (Some(expected), Some(found)) = (expected, found)
        && !expected.eq_ignore_ascii_case(found)
    {
        prepare.failure = Some(ArmError::new(
            StatusCode::CONFLICT,
            "Conflict",
            format!(
                "The resource with id '{id}' has a different Hypervisor generation ['{found}'] than the parent gallery image Hypervisor generation ['{expected}']."
            ),
        ));
    }
}

/// The publishing profile: replica counts and storage per target region (the version's own
/// region by default), each a known region, and the publishing date.
fn publishing_profile(prepare: &mut Prepare<'_>) -> Result<Map<String, Value>, ArmError> {
    let location = prepare.location.to_owned();
    let publishing_path = "properties.publishingProfile";
    let properties = prepare.properties()?;
    let mut publishing = fields::object(properties, "publishingProfile", "properties")?
        .cloned()
        .unwrap_or_default();
    let replicas = fields::integer(&publishing, "replicaCount", publishing_path)?.unwrap_or(1);
    if replicas < 1 {
        return Err(ArmError::invalid_parameter(
            "properties.publishingProfile.replicaCount",
            format!(
                "The replica count {replicas} of 'properties.publishingProfile.replicaCount' must be at least 1."
            ),
        ));
    }
    let storage_type = fields::one_of(
        &publishing,
        "storageAccountType",
        publishing_path,
        REPLICA_STORAGE,
    )?
    .unwrap_or("Standard_LRS");
    let mut regions = fields::array(&publishing, "targetRegions", publishing_path)?.to_vec();
    if regions.is_empty() {
        regions.push(json!({ "name": location }));
    }
    for (index, region) in regions.iter_mut().enumerate() {
        let at = format!("{publishing_path}.targetRegions[{index}]");
        let region = region
            .as_object_mut()
            .ok_or_else(|| fields::wrong_type(&at, "an object"))?;
        let name = fields::required_string(region, "name", &at)?;
        let known = prepare
            .config
            .locations
            .iter()
            .any(|candidate| same_region(&candidate.name, name));
        if !known {
            return Err(ArmError::invalid_parameter(
                &format!("{at}.name"),
                format!("The region '{name}' of '{at}.name' is not available to this subscription."),
            ));
        }
        fields::one_of(region, "storageAccountType", &at, REPLICA_STORAGE)?;
        virtual_machines::fill(
            region,
            json!({ "regionalReplicaCount": replicas, "storageAccountType": storage_type }),
        );
    }
    publishing.insert("targetRegions".into(), Value::Array(regions));
    virtual_machines::fill(
        &mut publishing,
        json!({ "replicaCount": replicas, "excludeFromLatest": false, "storageAccountType": storage_type }),
    );
    let published = prepare
        .existing
        .and_then(|existing| existing.pointer("/properties/publishingProfile/publishedDate"))
        .cloned()
        .unwrap_or_else(|| json!(now()));
    publishing.insert("publishedDate".into(), published);
    Ok(publishing)
}

fn prepare_version(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    check_version_name(prepare.id.name())?;
    let properties = prepare.properties()?;
    let storage_path = "properties.storageProfile";
    let mut storage = fields::object(properties, "storageProfile", "properties")?
        .cloned()
        .ok_or_else(|| fields::missing(storage_path))?;
    let source_path = "properties.storageProfile.source";
    let mut os_image = fields::object(&storage, "osDiskImage", storage_path)?
        .cloned()
        .unwrap_or_default();
    let whole = match fields::object(&storage, "source", storage_path)? {
        Some(source) => fields::string(source, "id", source_path)?
            .or(fields::string(source, "virtualMachineId", source_path)?)
            .map(str::to_owned),
        None => None,
    };
    let disk_source =
        fields::reference(&os_image, "source", "properties.storageProfile.osDiskImage")?.map(str::to_owned);
    let (id, source) = match (whole, disk_source) {
        (Some(id), _) | (None, Some(id)) => {
            let source = source_images(prepare.state, &id)?;
            (id, source)
        }
        (None, None) => return Err(fields::missing("properties.storageProfile.source.id")),
    };
    check_generation(prepare, &id, source.hyper_v.as_deref());
    let Source {
        os_size, data_images, ..
    } = source;
    os_image.insert("sizeInGB".into(), os_size);
    os_image
        .entry("hostCaching")
        .or_insert_with(|| json!("ReadWrite"));
    storage.insert("osDiskImage".into(), Value::Object(os_image));
    storage
        .entry("dataDiskImages")
        .or_insert_with(|| Value::Array(data_images));

    let publishing = publishing_profile(prepare)?;
    let properties = prepare.properties()?;
    properties.insert("storageProfile".into(), Value::Object(storage));
    properties.insert("publishingProfile".into(), Value::Object(publishing));
    // Replication is read with `$expand=ReplicationStatus` only.
    properties.remove("replicationStatus");
    prepare.default(
        "safetyProfile",
        json!({ "allowDeletionOfReplicatedLocations": false, "reportedForPolicyViolation": false }),
    )
}

/// Whether two spellings name one region (`West US 2`, `westus2`).
fn same_region(a: &str, b: &str) -> bool {
    let plain = |name: &str| -> String {
        name.chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect()
    };
    plain(a) == plain(b)
}

/// Every target region holds its replicas once the version is written.
fn replication_status(_: &State, version: &Value) -> Value {
    let summary: Vec<Value> = version
        .pointer("/properties/publishingProfile/targetRegions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|region| json!({ "region": region["name"], "state": "Completed", "details": "", "progress": 100 }))
        .collect();
    json!({ "aggregatedState": "Completed", "summary": summary })
}

/// What a machine booting from a gallery image learns of it (OS, Hyper-V generation, OS disk
/// size), given the stored version or definition it names: the version must be replicated to
/// the machine's location, and a definition boots its latest version.
pub(super) fn boot(state: &State, id: &str, location: &str) -> Result<Option<Resolved>, ArmError> {
    let key = id.to_ascii_lowercase();
    let key = key.as_str();
    let Some(stored) = state.resources.get(key) else {
        return Ok(None);
    };
    let (definition_key, version) = if stored.type_name == VERSION.name {
        let parent = key.rsplit_once("/versions/").map_or(key, |(parent, _)| parent);
        (parent.to_owned(), Some(stored.body().into_owned()))
    } else if stored.type_name == DEFINITION.name {
        let latest = state
            .under(&format!("{key}/versions/"))
            .map(|(_, stored)| stored.body().into_owned())
            .filter(|version| {
                version.pointer("/properties/publishingProfile/excludeFromLatest") != Some(&json!(true))
            })
            .max_by(version_order);
        (key.to_owned(), latest)
    } else {
        return Ok(None);
    };
    let not_available = || {
        ArmError::new(
            StatusCode::NOT_FOUND,
            "GalleryImageNotFound",
            format!(
                "The gallery image {key} is not available in {location} region. Please contact image owner to replicate to this region, or change your requested region."
            ),
        )
    };
    let version = version.ok_or_else(not_available)?;
    let replicated = version
        .pointer("/properties/publishingProfile/targetRegions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|region| region["name"].as_str())
        .any(|region| same_region(region, location));
    if !replicated {
        return Err(not_available());
    }
    let definition = state.body(&definition_key).ok_or_else(not_available)?;
    let os = Os::of(&definition["properties"]["osType"]);
    let hyper_v = HYPER_V_GENERATIONS
        .iter()
        .copied()
        .find(|generation| definition["properties"]["hyperVGeneration"] == *generation)
        .unwrap_or("V1");
    let size_gb = version
        .pointer("/properties/storageProfile/osDiskImage/sizeInGB")
        .and_then(Value::as_i64);
    Ok(Some(Resolved {
        os,
        size_gb,
        hyper_v,
        exact_version: None,
        source: json!({ "galleryImageReference": { "id": id } }),
    }))
}

/// Versions by number, part by part.
fn version_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let parts = |version: &Value| -> Vec<u64> {
        version["name"]
            .as_str()
            .unwrap_or_default()
            .split('.')
            .map(|part| part.parse().unwrap_or_default())
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// Checks a version's name has three parts, each a 32-bit integer.
fn check_version_name(name: &str) -> Result<(), ArmError> {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() == 3 && parts.iter().all(|part| part.parse::<i32>().is_ok()) {
        return Ok(());
    }
    Err(refuse(&VERSION_NAMES, name))
}

/// Versions of galleries shared with groups, read by their unique name:
/// `.../locations/{loc}/sharedGalleries/{unique name}/images/{i}/versions[/{v}]`.
pub(crate) static SHARED_VERSIONS: Catalogue = Catalogue {
    name: "Microsoft.Compute/locations/sharedGalleries/images/versions",
    api_versions: GALLERY_API_VERSIONS,
    entry: Some(shared_version),
    collection: Some(shared_versions),
};

/// The key of the definition `image` of the gallery shared as `unique` (its `uniqueName`).
fn shared_definition(state: &State, unique: &str, image: &str) -> Option<String> {
    let gallery = state.resources.iter().find_map(|(key, stored)| {
        if stored.type_name != GALLERY.name {
            return None;
        }
        let body = stored.body();
        let properties = &body["properties"];
        let shared = properties["sharingProfile"]["permissions"] == "Groups"
            && properties["identifier"]["uniqueName"]
                .as_str()
                .is_some_and(|name| name.eq_ignore_ascii_case(unique));
        shared.then(|| key.to_string())
    })?;
    let definition = format!("{gallery}/images/{}", image.to_ascii_lowercase());
    state
        .resources
        .contains_key(definition.as_str())
        .then_some(definition)
}

fn shared_not_found(lookup: &Lookup<'_>) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "GalleryImageNotFound",
        format!("The gallery image {} is not available.", lookup.id.to_id()),
    )
}

/// A version as a shared gallery shows it, when it is replicated to `location`.
fn shared_entry(version: &Value, unique: &str, image: &str, location: &str) -> Option<Value> {
    let properties = &version["properties"];
    let replicated = properties["publishingProfile"]["targetRegions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|region| region["name"].as_str())
        .any(|region| same_region(region, location));
    let name = version["name"].as_str()?;
    replicated.then(|| {
        json!({
            "name": name,
            "location": location,
            "identifier": { "uniqueId": format!("/SharedGalleries/{unique}/Images/{image}/Versions/{name}") },
            "properties": {
                "publishedDate": properties["publishingProfile"]["publishedDate"],
                "excludeFromLatest": properties["publishingProfile"]["excludeFromLatest"],
                "storageProfile": {
                    "osDiskImage": {
                        "diskSizeGB": properties["storageProfile"]["osDiskImage"]["sizeInGB"],
                        "hostCaching": properties["storageProfile"]["osDiskImage"]["hostCaching"],
                    },
                    "dataDiskImages": [],
                },
            },
        })
    })
}

/// The shared versions a path names (names are `[location, gallery, image, version?]`).
fn shared_entries(lookup: &Lookup<'_>) -> Result<Vec<Value>, ArmError> {
    let names = &lookup.id.names;
    let (Some(location), Some(unique), Some(image)) = (names.first(), names.get(1), names.get(2)) else {
        return Err(shared_not_found(lookup));
    };
    let definition =
        shared_definition(lookup.state, unique, image).ok_or_else(|| shared_not_found(lookup))?;
    Ok(lookup
        .state
        .under(&format!("{definition}/versions/"))
        .filter_map(|(_, stored)| shared_entry(&stored.body(), unique, image, location))
        .collect())
}

fn shared_version(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    shared_entries(lookup)?
        .into_iter()
        .find(|entry| entry["name"] == lookup.id.name())
        .ok_or_else(|| shared_not_found(lookup))
}

fn shared_versions(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    Ok(json!({ "value": shared_entries(lookup)? }))
}

/// The id of the gallery image a `sharedGalleryImageId`
/// (`/SharedGalleries/{g}/Images/{i}[/Versions/{v}]`) names, when it is shared.
pub(super) fn shared_image(state: &State, unique_id: &str) -> Option<String> {
    let parts: Vec<&str> = unique_id.trim_matches('/').split('/').collect();
    let (unique, image, version) = match parts.as_slice() {
        [galleries, unique, images, image] if layout(galleries, images, None) => (unique, image, None),
        [galleries, unique, images, image, versions, version]
            if layout(galleries, images, Some(versions)) =>
        {
            (unique, image, Some(version))
        }
        _ => return None,
    };
    let definition = shared_definition(state, unique, image)?;
    let key = match version {
        Some(version) => format!("{definition}/versions/{version}"),
        None => definition,
    };
    state
        .body(&key)
        .and_then(|body| body["id"].as_str().map(str::to_owned))
}

fn layout(galleries: &str, images: &str, versions: Option<&&str>) -> bool {
    galleries.eq_ignore_ascii_case("SharedGalleries")
        && images.eq_ignore_ascii_case("Images")
        && versions.is_none_or(|versions| versions.eq_ignore_ascii_case("Versions"))
}

#[cfg(test)]
mod tests {
    use super::same_region;

    #[test]
    fn regions_compare_by_their_plain_names() {
        assert!(same_region("West US 2", "westus2"));
        assert!(!same_region("westus", "westus2"));
    }
}
