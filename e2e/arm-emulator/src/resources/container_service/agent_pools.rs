//! Agent pools (`managedClusters/{cluster}/agentPools/{pool}`): written on their own or as the
//! cluster's `agentPoolProfiles`, each backed by a scale set in the node resource group whose
//! capacity is the pool's `count`. AKS's rules: a cluster keeps at least one System pool;
//! size, OS, disk, subnet, zones and pod limits are fixed once the pool exists; a pool runs no
//! newer a minor than its control plane and moves one minor at a time.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use super::node_resource_group::{Access, NodeGroup};
use super::versions;
use super::{AKS, API_VERSIONS, at, drop_nulls, field, new_etag};
use crate::error::ArmError;
use crate::path::ResourceId;
use crate::resources::compute::fill;
use crate::resources::names::Naming;
use crate::resources::{Hooks, Locality, NO_HOOKS, Prepare, ResourceType, fields, set_provisioning_state};
use crate::state::State;

pub(super) static AGENT_POOL: ResourceType = ResourceType {
    location: Locality::Inherited,
    naming: &POOL_NAMES,
    since: &[
        ("securityProfile.sshAccess", "2025-01-01"),
        ("upgradeSettings.maxUnavailable", "2025-01-01"),
        ("eTag", "2025-10-02-preview"),
        ("upgradeStrategy", "2025-10-02-preview"),
    ],
    hooks: Hooks {
        not_found: Some(|id| ArmError {
            details: Some(vec![json!({
                "code": "Unspecified",
                "message": "rpc error: code = NotFound desc = Agent Pool not found",
            })]),
            ..ArmError::container_service(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!(
                    "Could not find the agentpool: {} in subscription: {}, resourceGroup: {}, resourceName: {}.",
                    id.name(),
                    id.subscription.as_deref().unwrap_or_default(),
                    id.resource_group.as_deref().unwrap_or_default(),
                    id.names.first().map_or("", String::as_str)
                ),
            )
        }),
        deletable: Some(keeps_a_system_pool),
        on_settled: Some(|state, key, succeeded| {
            if let Some((cluster, _)) = key.rsplit_once("/agentpools/") {
                let cluster = cluster.to_owned();
                settle(state, &cluster, key, succeeded);
            }
        }),
        on_deleted: Some(|state, pool| {
            let Some(id) = pool["id"].as_str() else {
                return;
            };
            let Some((cluster, name)) = id
                .to_ascii_lowercase()
                .rsplit_once("/agentpools/")
                .map(|(c, n)| (c.to_owned(), n.to_owned()))
            else {
                return;
            };
            if let Some(group) = state.body(&cluster).and_then(|cluster| NodeGroup::of(&cluster)) {
                group.remove_scale_set(state, &name);
            }
        }),
        ..NO_HOOKS
    },
    ..ResourceType::new(
        "Microsoft.ContainerService/managedClusters/agentPools",
        API_VERSIONS,
        &AKS,
        prepare_pool,
    )
};

fn lowercase_or_digit(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Pool names: 1 to 12 lower-case letters and digits, starting with a letter.
static POOL_NAMES: Naming = Naming {
    min: 1,
    max: 12,
    allowed: lowercase_or_digit,
    first: |c| c.is_ascii_lowercase(),
    last: lowercase_or_digit,
    rule: "An agent pool name has 1 to 12 lower-case letters and digits (6 for Windows pools) and starts with a letter.",
    refuse: crate::resources::names::refuse,
};

/// The pools of a cluster (its key), as (key, document), in order of name.
pub(super) fn pools_of(state: &State, cluster_key: &str) -> Vec<(String, Value)> {
    state
        .under(&format!("{cluster_key}/agentpools/"))
        .filter(|(key, _)| !key[cluster_key.len() + "/agentpools/".len()..].contains('/'))
        .map(|(key, stored)| (key.to_owned(), stored.body().into_owned()))
        .collect()
}

/// What a pool's write takes from its cluster.
pub(super) struct Cluster<'a> {
    pub(super) properties: &'a Map<String, Value>,
    pub(super) group: NodeGroup,
    /// The pool is written with the cluster (its `agentPoolProfiles`).
    pub(super) with_cluster: bool,
}

impl Cluster<'_> {
    fn current_version(&self) -> &str {
        field(self.properties, "currentKubernetesVersion")
            .as_str()
            .unwrap_or_default()
    }
}

/// A pool written on its own: its cluster must exist and have finished creating.
fn prepare_pool(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let cluster_id = prepare.id.parent().unwrap_or_else(|| prepare.id.clone());
    let cluster = prepare
        .state
        .body(&cluster_id.key())
        .map(std::borrow::Cow::into_owned)
        .ok_or_else(|| ArmError::not_found(&cluster_id.to_id()))?;
    let group = NodeGroup::of(&cluster).ok_or_else(|| ArmError::not_found(&cluster_id.to_id()))?;
    let properties = cluster["properties"].as_object().cloned().unwrap_or_default();
    let requested = prepare.properties()?.clone();
    let id = prepare.id.clone();
    let existing = prepare.existing.cloned();
    let context = Cluster {
        properties: &properties,
        group,
        with_cluster: false,
    };
    let written = write(prepare, &context, &id, requested, existing.as_ref())?;
    prepare.reported_state = existing
        .as_ref()
        .and_then(|existing| change_of(existing, &written));
    prepare.doc.insert("properties".into(), Value::Object(written));
    Ok(())
}

/// Checks a pool's requested properties against what it was, completes them as AKS shows
/// them, and writes its scale set; returns the pool's properties.
pub(super) fn write(
    prepare: &mut Prepare<'_>,
    cluster: &Cluster<'_>,
    id: &ResourceId,
    mut requested: Map<String, Value>,
    existing: Option<&Value>,
) -> Result<Map<String, Value>, ArmError> {
    let before = keep_fixed(&mut requested, existing, cluster.with_cluster)?;
    let os_type =
        fields::one_of(&requested, "osType", "properties", &["Linux", "Windows"])?.unwrap_or("Linux");
    if os_type == "Windows" && id.name().len() > 6 {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "InvalidParameter",
            format!(
                "The name of a Windows agent pool has at most 6 characters; '{}' has {}.",
                id.name(),
                id.name().len()
            ),
        ));
    }
    let default_mode = before
        .as_ref()
        .and_then(|before| before.get("mode").cloned())
        .unwrap_or_else(|| json!(if cluster.with_cluster { "System" } else { "User" }));
    let mode = fields::one_of(&requested, "mode", "properties", &["System", "User", "Gateway"])?
        .map_or(default_mode, |mode| json!(mode));
    if before
        .as_ref()
        .is_some_and(|before| field(before, "mode") == "System")
        && mode != "System"
        && !cluster.with_cluster
    {
        only_system_pool_stays(prepare.state, &id.key())?;
    }
    requested.insert("mode".into(), mode);
    check_taints(&requested)?;
    let count = counts(&requested)?;
    requested.insert("count".into(), json!(count));
    let version = pool_version(cluster, &requested, before.as_ref(), prepare.location)?;
    let plugin = at(cluster.properties, "/networkProfile/networkPlugin").and_then(Value::as_str);
    let max_pods = match plugin {
        Some("kubenet") => 110,
        Some("azure") if at(cluster.properties, "/networkProfile/networkPluginMode").is_none() => 30,
        _ => 250,
    };
    let os_sku = if os_type == "Windows" {
        "Windows2022"
    } else {
        "Ubuntu"
    };
    let os_sku = requested
        .get("osSKU")
        .and_then(Value::as_str)
        .unwrap_or(os_sku)
        .to_owned();
    fill(
        &mut requested,
        json!({
            "count": 1,
            "vmSize": "Standard_DS2_v2",
            "osDiskSizeGB": 128,
            "osDiskType": "Managed",
            "kubeletDiskType": "OS",
            "maxPods": max_pods,
            "type": "VirtualMachineScaleSets",
            "scaleDownMode": "Delete",
            "powerState": { "code": "Running" },
            "enableNodePublicIP": false,
            "osType": os_type,
            "osSKU": os_sku,
            "nodeImageVersion": node_image(&os_sku),
            "upgradeSettings": { "maxSurge": "10%", "maxUnavailable": "0" },
            "enableFIPS": false,
            "securityProfile": { "sshAccess": "LocalUser", "enableVTPM": false, "enableSecureBoot": false },
        }),
    );
    // A pool made with its cluster shows the autoscaler's switch once it is first updated; one
    // made on its own at once.
    if before.is_some() || !cluster.with_cluster {
        fill(&mut requested, json!({ "enableAutoScaling": false }));
    }
    if before.is_some() {
        fill(&mut requested, json!({ "upgradeStrategy": "Rolling" }));
    }
    requested.insert("orchestratorVersion".into(), json!(version.0));
    requested.insert("currentOrchestratorVersion".into(), json!(version.1));
    requested.insert("eTag".into(), new_etag());
    let access = Access::of(cluster.properties, os_type == "Windows");
    cluster
        .group
        .write_scale_set(prepare, id.name(), &requested, &access)?;
    Ok(requested)
}

/// Leaves out what is null, or empty when unset, and refuses changing what AKS fixes once the
/// pool exists (what is not asked for again stays); returns the properties before the write.
fn keep_fixed(
    requested: &mut Map<String, Value>,
    existing: Option<&Value>,
    with_cluster: bool,
) -> Result<Option<Map<String, Value>>, ArmError> {
    drop_nulls(requested);
    for empty_when_unset in [
        "tags",
        "nodeLabels",
        "nodeTaints",
        "nodeInitializationTaints",
        "availabilityZones",
    ] {
        // A cluster's write answers the empty maps it was sent; they are gone once it settles.
        let empty = match requested.get(empty_when_unset) {
            Some(Value::Object(map)) => map.is_empty() && !with_cluster,
            Some(Value::Array(items)) => items.is_empty(),
            _ => false,
        };
        if empty {
            requested.remove(empty_when_unset);
        }
    }
    let before = existing
        .and_then(|existing| existing.get("properties"))
        .and_then(Value::as_object)
        .cloned();
    if let Some(before) = &before {
        // Fixed once the pool exists: what was, stays unless asked to change.
        for fixed in FIXED {
            match (requested.get(*fixed), before.get(*fixed)) {
                (Some(now), Some(was)) if now != was => return Err(change_not_allowed(fixed)),
                (None, Some(was)) => {
                    requested.insert((*fixed).to_owned(), was.clone());
                }
                _ => {}
            }
        }
    }
    Ok(before)
}

/// How AKS names a pool's update while it runs: `Upgrading` to a new version, `Scaling` to a
/// new count.
pub(super) fn change_of(existing: &Value, written: &Map<String, Value>) -> Option<&'static str> {
    let was = |property: &str| existing["properties"].get(property);
    if was("currentOrchestratorVersion") != written.get("currentOrchestratorVersion") {
        Some("Upgrading")
    } else if was("count") != written.get("count") {
        Some("Scaling")
    } else {
        None
    }
}

/// Properties AKS does not let a pool change.
const FIXED: &[&str] = &[
    "vmSize",
    "osType",
    "osDiskSizeGB",
    "osDiskType",
    "kubeletDiskType",
    "vnetSubnetID",
    "podSubnetID",
    "maxPods",
    "availabilityZones",
    "enableNodePublicIP",
    "scaleSetPriority",
];

pub(super) fn change_not_allowed(property: &str) -> ArmError {
    ArmError::container_service(
        StatusCode::BAD_REQUEST,
        "PropertyChangeNotAllowed",
        format!("Changing property '{property}' is not allowed."),
    )
}

/// The node image of a pool's OS.
fn node_image(os_sku: &str) -> String {
    match os_sku {
        "Windows2019" | "Windows2022" | "Windows2025" => format!("AKS{os_sku}-containerd-20348.4052.250905"),
        "AzureLinux" | "CBLMariner" => "AKSAzureLinux-V3gen2-202601.13.0".to_owned(),
        _ => "AKSUbuntu-2204gen2containerd-202601.13.0".to_owned(),
    }
}

/// The pool's version: (as asked for, the full version it runs).
fn pool_version(
    cluster: &Cluster<'_>,
    requested: &Map<String, Value>,
    before: Option<&Map<String, Value>>,
    location: &str,
) -> Result<(String, String), ArmError> {
    let asked = requested
        .get("orchestratorVersion")
        .and_then(Value::as_str)
        .or_else(|| before.and_then(|before| field(before, "orchestratorVersion").as_str()))
        .or_else(|| field(cluster.properties, "kubernetesVersion").as_str())
        .unwrap_or(versions::DEFAULT_MINOR)
        .to_owned();
    let full =
        versions::resolve(&asked).ok_or_else(|| versions::pool_version_unsupported(&asked, location))?;
    let current = before.and_then(|before| field(before, "currentOrchestratorVersion").as_str());
    // Asking again for the minor it runs keeps the patch it has.
    let full = match current {
        Some(current) if versions::minor_of(current) == Some(asked.clone()) => current.to_owned(),
        _ => full.to_owned(),
    };
    versions::check_pool_against_control_plane(&full, cluster.current_version())?;
    if let Some(current) = current {
        versions::check_upgrade("node pool", current, &full)?;
    }
    Ok((asked, full))
}

/// `count`, checked against the autoscaler's bounds when it is on.
fn counts(requested: &Map<String, Value>) -> Result<i64, ArmError> {
    let count = fields::integer(requested, "count", "properties")?.unwrap_or(1);
    let invalid =
        |message: String| ArmError::container_service(StatusCode::BAD_REQUEST, "InvalidParameter", message);
    if !(0..=1000).contains(&count) {
        return Err(invalid(format!(
            "'properties.count' is {count}; an agent pool holds 0 to 1000 nodes."
        )));
    }
    if requested.get("enableAutoScaling") == Some(&Value::Bool(true)) {
        let min = fields::integer(requested, "minCount", "properties")?;
        let max = fields::integer(requested, "maxCount", "properties")?;
        let (Some(min), Some(max)) = (min, max) else {
            return Err(invalid(
                "An agent pool with the autoscaler on ('properties.enableAutoScaling') needs 'properties.minCount' and 'properties.maxCount'.".into(),
            ));
        };
        if min > max {
            return Err(invalid(format!(
                "'properties.minCount' ({min}) is larger than 'properties.maxCount' ({max})."
            )));
        }
        if !(min..=max).contains(&count) {
            return Err(invalid(format!(
                "'properties.count' ({count}) is outside the autoscaler's bounds [{min}, {max}]."
            )));
        }
    }
    Ok(count)
}

/// Taints are `key=value:Effect` or `key:Effect`.
fn check_taints(requested: &Map<String, Value>) -> Result<(), ArmError> {
    for property in ["nodeTaints", "nodeInitializationTaints"] {
        for taint in fields::strings(requested, property, "properties")? {
            let effect = taint.rsplit_once(':').map(|(_, effect)| effect);
            if !matches!(effect, Some("NoSchedule" | "PreferNoSchedule" | "NoExecute")) {
                return Err(ArmError::container_service(
                    StatusCode::BAD_REQUEST,
                    "InvalidParameter",
                    format!(
                        "The taint '{taint}' in properties.{property} is not valid: write it as key=value:Effect, the effect one of NoSchedule, PreferNoSchedule, NoExecute."
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn last_system_pool(pool: &str) -> ArmError {
    ArmError::container_service(
        StatusCode::BAD_REQUEST,
        "OperationNotAllowed",
        format!(
            "Agent pool '{pool}' is the cluster's last System pool: a cluster must keep at least one System agent pool. Add another System pool first."
        ),
    )
}

/// Refuses to leave the cluster without a System pool when `pool` (its key) stops being one.
fn only_system_pool_stays(state: &State, pool: &str) -> Result<(), ArmError> {
    let Some((cluster, name)) = pool.rsplit_once("/agentpools/") else {
        return Ok(());
    };
    let others = pools_of(state, cluster)
        .into_iter()
        .any(|(key, body)| key != pool && body.pointer("/properties/mode") == Some(&json!("System")));
    if others {
        Ok(())
    } else {
        Err(last_system_pool(name))
    }
}

/// A deleted pool must not be the last System pool.
fn keeps_a_system_pool(state: &State, key: &str) -> Result<(), ArmError> {
    let system = state
        .body(key)
        .is_some_and(|pool| pool.pointer("/properties/mode") == Some(&json!("System")));
    if system {
        only_system_pool_stays(state, key)
    } else {
        Ok(())
    }
}

/// When a pool's (or its cluster's) operation ends, the pool and its scale set settle.
pub(super) fn settle(state: &mut State, cluster: &str, pool: &str, succeeded: bool) {
    let Some(group) = state.body(cluster).and_then(|cluster| NodeGroup::of(&cluster)) else {
        return;
    };
    let name = pool.rsplit('/').next().unwrap_or_default().to_owned();
    state.change_doc(pool, |body| {
        set_provisioning_state(body, if succeeded { "Succeeded" } else { "Failed" }, false);
        if let Some(properties) = body["properties"].as_object_mut() {
            properties.retain(|_, value| value.as_object().is_none_or(|map| !map.is_empty()));
        }
    });
    group.settle_scale_set(state, &name, succeeded);
}
