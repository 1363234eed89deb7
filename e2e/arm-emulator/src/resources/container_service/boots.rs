//! Managed clusters as a stand-in for their Kubernetes sees them (`/_emulator/boots`): where the
//! API server is reached, its version and state, the nodes (the instances of the pools' scale
//! sets in the node resource group), how its API server signs callers in and, asked for, the
//! cluster's CA to serve with. A stopped cluster runs nothing and is left out.

use serde_json::{Map, Value, json};

use super::agent_pools::pools_of;
use super::managed_clusters::{AUTHORITY, MANAGED_CLUSTER};
use super::node_resource_group::NodeGroup;
use crate::config::Config;
use crate::resources::compute::{SCALE_SET, uniform_instances};
use crate::resources::{power_state, private_addresses};
use crate::state::State;

/// The tag AKS puts on a pool's scale set, naming the pool.
const POOL_TAG: &str = "aks-managed-poolName";

/// Every managed cluster that is not stopped: `{"id", "name", "endpoint", "kubernetesVersion",
/// "powerState", "provisioningState", "localAccountsDisabled", "tenantId", "nodes"}`, and with
/// `reveal` its CA as `keys` (`ca.crt`, `ca.key`).
pub(crate) fn managed_clusters(state: &State, config: &Config, reveal: bool) -> Vec<Value> {
    state
        .resources
        .iter()
        .filter(|(_, stored)| stored.type_name == MANAGED_CLUSTER.name)
        .filter_map(|(key, stored)| {
            let cluster = stored.body();
            let properties = &cluster["properties"];
            let power = properties
                .pointer("/powerState/code")
                .and_then(Value::as_str)
                .unwrap_or("Running");
            if power == "Stopped" {
                return None;
            }
            let host = properties["fqdn"]
                .as_str()
                .or_else(|| properties["privateFQDN"].as_str())
                .unwrap_or_default();
            let version = properties["currentKubernetesVersion"]
                .as_str()
                .or_else(|| properties["kubernetesVersion"].as_str())
                .unwrap_or_default();
            // With Entra integration and no local account, AKS's API server takes only Entra
            // tokens, of the cluster's tenant.
            let local_accounts_disabled = properties["disableLocalAccounts"] == json!(true)
                && properties.pointer("/aadProfile/managed") == Some(&json!(true));
            let tenant = properties
                .pointer("/aadProfile/tenantID")
                .and_then(Value::as_str)
                .filter(|tenant| !tenant.is_empty())
                .or_else(|| config.subscription_tenant(subscription_of(key)?));
            let mut entry = json!({
                "id": cluster["id"],
                "name": cluster["name"],
                "endpoint": format!("{host}:443"),
                "kubernetesVersion": with_v(version),
                "powerState": power,
                "provisioningState": properties["provisioningState"],
                "localAccountsDisabled": local_accounts_disabled,
                "tenantId": tenant,
                "nodes": nodes(state, key, &cluster, version),
            });
            if reveal {
                let authority = &properties[AUTHORITY];
                let mut keys = Map::new();
                for (file, field) in [("ca.crt", "certificate"), ("ca.key", "key")] {
                    if let Some(pem) = authority.get(field).filter(|pem| pem.is_string()) {
                        keys.insert(file.into(), pem.clone());
                    }
                }
                entry["keys"] = Value::Object(keys);
            }
            Some(entry)
        })
        .collect()
}

/// The cluster's nodes: the instances of the scale sets in its node resource group that AKS
/// tagged with a pool's name, each with its pool's mode and version.
fn nodes(state: &State, cluster_key: &str, cluster: &Value, cluster_version: &str) -> Vec<Value> {
    let Some(group) = NodeGroup::of(cluster) else {
        return Vec::new();
    };
    let pools = pools_of(state, cluster_key);
    let sets = format!(
        "{}/providers/microsoft.compute/virtualmachinescalesets/",
        group.key()
    );
    let mut nodes = Vec::new();
    for (set_key, stored) in state.under(&sets) {
        if set_key[sets.len()..].contains('/') || stored.type_name != SCALE_SET.name {
            continue;
        }
        let set = stored.body();
        let Some(pool_name) = set.pointer(&format!("/tags/{POOL_TAG}")).and_then(Value::as_str) else {
            continue;
        };
        let pool = pools.iter().map(|(_, pool)| pool).find(|pool| {
            pool["name"]
                .as_str()
                .is_some_and(|name| name.eq_ignore_ascii_case(pool_name))
        });
        let pool_properties = pool.map(|pool| &pool["properties"]);
        let mode = pool_properties.map_or(&Value::Null, |properties| &properties["mode"]);
        let version = pool_properties
            .and_then(|properties| {
                properties["currentOrchestratorVersion"]
                    .as_str()
                    .or_else(|| properties["orchestratorVersion"].as_str())
            })
            .unwrap_or(cluster_version);
        for instance in uniform_instances(state, set_key) {
            nodes.push(json!({
                "id": instance["id"],
                "computerName": instance.pointer("/properties/osProfile/computerName").cloned().unwrap_or(Value::Null),
                "pool": pool_name,
                "mode": mode,
                "powerState": power_state(&instance),
                "privateIpAddresses": private_addresses(state, &instance),
                "kubernetesVersion": with_v(version),
            }));
        }
    }
    nodes
}

/// The subscription id in a resource's key, `/subscriptions/{id}/...`.
fn subscription_of(key: &str) -> Option<&str> {
    key.strip_prefix("/subscriptions/")?.split('/').next()
}

/// A version as Kubernetes reports it, `v1.33.6`.
fn with_v(version: &str) -> String {
    if version.starts_with('v') {
        version.to_owned()
    } else {
        format!("v{version}")
    }
}
