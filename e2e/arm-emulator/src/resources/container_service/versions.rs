//! The Kubernetes releases AKS offers, and the rules for moving between them: a version is named
//! by its minor (`1.33`, the latest patch) or in full (`1.33.6`); an upgrade moves at most one
//! minor at a time and never back; a pool runs no newer a minor than its control plane. Served
//! as `locations/{location}/kubernetesVersions`, the older `locations/{location}/orchestrators`,
//! and a cluster's and a pool's `upgradeProfiles/default`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::API_VERSIONS;
use crate::error::ArmError;
use crate::resources::{Catalogue, Lookup};

/// One Kubernetes minor release and its patches, oldest first.
struct Release {
    minor: (u32, u32),
    patches: &'static [&'static str],
    preview: bool,
}

const RELEASES: &[Release] = &[
    Release {
        minor: (1, 31),
        patches: &["1.31.10", "1.31.11"],
        preview: false,
    },
    Release {
        minor: (1, 32),
        patches: &["1.32.7", "1.32.9"],
        preview: false,
    },
    Release {
        minor: (1, 33),
        patches: &["1.33.5", "1.33.6"],
        preview: false,
    },
    Release {
        minor: (1, 34),
        patches: &["1.34.1", "1.34.2"],
        preview: false,
    },
    Release {
        minor: (1, 35),
        patches: &["1.35.0"],
        preview: true,
    },
];

/// The minor a cluster gets when it names none.
pub(super) const DEFAULT_MINOR: &str = "1.33";

/// A Kubernetes version as AKS reads it: `major.minor[.patch]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Version {
    pub(super) major: u32,
    pub(super) minor: u32,
    patch: Option<u32>,
}

impl Version {
    pub(super) fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim_start_matches('v').split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(patch) => Some(patch.parse().ok()?),
            None => None,
        };
        parts.next().is_none().then_some(Self { major, minor, patch })
    }

    fn minor_text(self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

/// The full version a requested one runs (`1.33` -> its latest patch), when AKS offers it.
pub(super) fn resolve(requested: &str) -> Option<&'static str> {
    let version = Version::parse(requested)?;
    let release = RELEASES
        .iter()
        .find(|release| release.minor == (version.major, version.minor))?;
    match version.patch {
        None => release.patches.last().copied(),
        Some(_) => release
            .patches
            .iter()
            .copied()
            .find(|patch| Version::parse(patch) == Some(version)),
    }
}

/// A cluster's version that AKS does not offer.
pub(super) fn cluster_version_unsupported(cluster: &str, requested: &str, location: &str) -> ArmError {
    ArmError::container_service(
        StatusCode::BAD_REQUEST,
        "K8sVersionNotSupported",
        format!(
            "Managed cluster {cluster} is on version {requested}, which is not supported in region {location}. The supported versions are {}; see them with 'az aks get-versions'.",
            offered().join(", ")
        ),
    )
}

/// A pool's version that AKS does not offer.
pub(super) fn pool_version_unsupported(requested: &str, location: &str) -> ArmError {
    ArmError::container_service(
        StatusCode::BAD_REQUEST,
        "AgentPoolK8sVersionNotSupported",
        format!(
            "Version {requested} is not supported in region {location}. The supported versions are {}.",
            offered().join(", ")
        ),
    )
}

fn offered() -> Vec<&'static str> {
    RELEASES
        .iter()
        .flat_map(|release| release.patches.iter().copied())
        .collect()
}

/// Refuses moving from `current` to `target` unless it stays on the minor or goes one up.
pub(super) fn check_upgrade(what: &str, current: &str, target: &str) -> Result<(), ArmError> {
    let (Some(from), Some(to)) = (Version::parse(current), Version::parse(target)) else {
        return Ok(());
    };
    if to < from {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "OperationNotAllowed",
            format!("Downgrading the {what} from Kubernetes version {current} to {target} is not allowed."),
        ));
    }
    if to.major != from.major || to.minor > from.minor + 1 {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "OperationNotAllowed",
            format!(
                "Upgrading the {what} from Kubernetes version {current} to {target} is not allowed. Available upgrades: [{}]. Kubernetes minor versions cannot be skipped.",
                upgrades(current).join(" ")
            ),
        ));
    }
    Ok(())
}

/// Refuses a pool newer (by minor) than its control plane.
pub(super) fn check_pool_against_control_plane(pool: &str, control_plane: &str) -> Result<(), ArmError> {
    let (Some(pool_version), Some(plane)) = (Version::parse(pool), Version::parse(control_plane)) else {
        return Ok(());
    };
    if (pool_version.major, pool_version.minor) > (plane.major, plane.minor) {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "NodePoolMcVersionIncompatible",
            format!(
                "Node pool version {pool} and control plane version {control_plane} are incompatible: a node pool cannot run a newer minor version than its control plane."
            ),
        ));
    }
    Ok(())
}

/// The versions a cluster on `current` may move to: later patches of its minor and the patches
/// of the next.
fn upgrades(current: &str) -> Vec<&'static str> {
    let Some(from) = Version::parse(current) else {
        return Vec::new();
    };
    offered()
        .into_iter()
        .filter(|patch| {
            Version::parse(patch)
                .is_some_and(|to| to > from && to.major == from.major && to.minor <= from.minor + 1)
        })
        .collect()
}

pub(super) static KUBERNETES_VERSIONS: Catalogue = Catalogue {
    name: "Microsoft.ContainerService/locations/kubernetesVersions",
    api_versions: API_VERSIONS,
    entry: None,
    collection: Some(|lookup| Ok(kubernetes_versions(lookup))),
};

pub(super) static ORCHESTRATORS: Catalogue = Catalogue {
    name: "Microsoft.ContainerService/locations/orchestrators",
    api_versions: API_VERSIONS,
    entry: None,
    collection: Some(|lookup| Ok(orchestrators(lookup))),
};

pub(super) static CLUSTER_UPGRADE_PROFILE: Catalogue = Catalogue {
    name: "Microsoft.ContainerService/managedClusters/upgradeProfiles",
    api_versions: API_VERSIONS,
    entry: Some(cluster_upgrade_profile),
    collection: None,
};

pub(super) static POOL_UPGRADE_PROFILE: Catalogue = Catalogue {
    name: "Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles",
    api_versions: API_VERSIONS,
    entry: Some(pool_upgrade_profile),
    collection: None,
};

/// `GET .../locations/{location}/kubernetesVersions`.
fn kubernetes_versions(_: &Lookup<'_>) -> Value {
    let values: Vec<Value> = RELEASES
        .iter()
        .map(|release| {
            let patches: serde_json::Map<String, Value> = release
                .patches
                .iter()
                .map(|patch| ((*patch).to_owned(), json!({ "upgrades": upgrades(patch) })))
                .collect();
            let minor = format!("{}.{}", release.minor.0, release.minor.1);
            let mut value = json!({
                "version": minor,
                "capabilities": { "supportPlan": ["KubernetesOfficial"] },
                "patchVersions": patches,
            });
            if release.preview {
                value["isPreview"] = json!(true);
            }
            if minor == DEFAULT_MINOR {
                value["isDefault"] = json!(true);
            }
            value
        })
        .collect();
    json!({ "values": values })
}

/// `GET .../locations/{location}/orchestrators?resource-type=managedClusters`.
fn orchestrators(lookup: &Lookup<'_>) -> Value {
    let default = resolve(DEFAULT_MINOR).unwrap_or_default();
    let orchestrators: Vec<Value> = RELEASES
        .iter()
        .flat_map(|release| release.patches.iter().map(move |patch| (release, *patch)))
        .map(|(release, patch)| {
            let upgrades: Vec<Value> = upgrades(patch)
                .into_iter()
                .map(|to| json!({ "orchestratorType": "Kubernetes", "orchestratorVersion": to }))
                .collect();
            let mut value = json!({
                "orchestratorType": "Kubernetes",
                "orchestratorVersion": patch,
                "upgrades": upgrades,
            });
            if release.preview {
                value["isPreview"] = json!(true);
            }
            if patch == default {
                value["default"] = json!(true);
            }
            value
        })
        .collect();
    json!({
        "id": format!("{}/providers/Microsoft.ContainerService/locations/{}/orchestrators", lookup.id.scope, lookup.id.names.first().map_or("", String::as_str)),
        "name": "default",
        "type": "Microsoft.ContainerService/locations/orchestrators",
        "properties": { "orchestrators": orchestrators },
    })
}

/// The stored document of the cluster (or pool) a profile path names, and the profile's name.
fn owner<'a>(lookup: &'a Lookup<'_>) -> Result<std::borrow::Cow<'a, Value>, ArmError> {
    if !lookup.id.name().eq_ignore_ascii_case("default") {
        return Err(ArmError::not_found(&lookup.id.to_id()));
    }
    let owner = lookup.id.parent().unwrap_or_else(|| lookup.id.clone());
    lookup
        .state
        .body(&owner.key())
        .ok_or_else(|| ArmError::not_found(&owner.to_id()))
}

fn upgrade_choices(current: &str) -> Vec<Value> {
    upgrades(current)
        .into_iter()
        .map(|to| {
            let preview = RELEASES.iter().any(|release| {
                release.preview && Version::parse(to).is_some_and(|v| (v.major, v.minor) == release.minor)
            });
            let mut choice = json!({ "kubernetesVersion": to });
            if preview {
                choice["isPreview"] = json!(true);
            }
            choice
        })
        .collect()
}

/// `GET {cluster}/upgradeProfiles/default`.
fn cluster_upgrade_profile(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let cluster = owner(lookup)?;
    let current = cluster
        .pointer("/properties/currentKubernetesVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let pools: Vec<Value> = super::agent_pools::pools_of(
        lookup.state,
        &lookup.id.parent().map(|p| p.key()).unwrap_or_default(),
    )
    .into_iter()
    .map(|(_, pool)| {
        let version = pool
            .pointer("/properties/currentOrchestratorVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        json!({
            "name": pool["name"],
            "kubernetesVersion": version,
            "osType": pool.pointer("/properties/osType").cloned().unwrap_or(json!("Linux")),
            "upgrades": upgrade_choices(version),
        })
    })
    .collect();
    Ok(json!({
        "id": lookup.id.to_id(),
        "name": "default",
        "type": "Microsoft.ContainerService/managedClusters/upgradeprofiles",
        "properties": {
            "controlPlaneProfile": {
                "kubernetesVersion": current,
                "osType": "Linux",
                "upgrades": upgrade_choices(current),
            },
            "agentPoolProfiles": pools,
        },
    }))
}

/// `GET {cluster}/agentPools/{pool}/upgradeProfiles/default`.
fn pool_upgrade_profile(lookup: &Lookup<'_>) -> Result<Value, ArmError> {
    let pool = owner(lookup)?;
    let version = pool
        .pointer("/properties/currentOrchestratorVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(json!({
        "id": lookup.id.to_id(),
        "name": "default",
        "type": "Microsoft.ContainerService/managedClusters/agentPools/upgradeProfiles",
        "properties": {
            "kubernetesVersion": version,
            "osType": pool.pointer("/properties/osType").cloned().unwrap_or(json!("Linux")),
            "upgrades": upgrade_choices(version),
            "latestNodeImageVersion": pool.pointer("/properties/nodeImageVersion").cloned().unwrap_or(Value::Null),
        },
    }))
}

/// The minor of a version as AKS shows `orchestratorVersion` when only a minor was asked for.
pub(super) fn minor_of(version: &str) -> Option<String> {
    Version::parse(version).map(Version::minor_text)
}

#[cfg(test)]
mod tests {
    use super::{check_pool_against_control_plane, check_upgrade, resolve};

    #[test]
    fn a_minor_runs_its_latest_patch_and_unknown_versions_are_refused() {
        assert_eq!(resolve("1.33"), Some("1.33.6"));
        assert_eq!(resolve("1.33.5"), Some("1.33.5"));
        assert_eq!(resolve("v1.33.5"), Some("1.33.5"));
        assert_eq!(resolve("1.33.4"), None);
        assert_eq!(resolve("1.20"), None);
        assert_eq!(resolve("banana"), None);
    }

    #[test]
    fn upgrades_go_one_minor_at_a_time_and_never_back() {
        assert!(check_upgrade("cluster", "1.32.9", "1.33.6").is_ok());
        assert!(check_upgrade("cluster", "1.33.5", "1.33.6").is_ok());
        let skip = check_upgrade("cluster", "1.32.9", "1.34.1").unwrap_err();
        assert_eq!(skip.code, "OperationNotAllowed");
        assert!(skip.message.contains("1.33.6"), "{}", skip.message);
        assert!(check_upgrade("cluster", "1.33.6", "1.33.5").is_err());
        assert!(check_pool_against_control_plane("1.33.6", "1.33.5").is_ok());
        assert_eq!(
            check_pool_against_control_plane("1.34.1", "1.33.6")
                .unwrap_err()
                .code,
            "NodePoolMcVersionIncompatible"
        );
    }
}
