//! The Azure resources of a cluster, one module per resource type, each named after it.
//!
//! Every unit has the same shape: a struct holding what the CAPZ spec asks for (built by a
//! constructor from the spec, the [`ClusterScope`](capz_kit::scope::ClusterScope) and derived
//! names), and an [`AzureResource`](capz_kit::resource::AzureResource) implementation that gives
//! its id, how ownership is told, and the ARM body wanted given what exists. The controllers call
//! [`capz_kit::resource::reconcile`] and [`capz_kit::resource::delete`] with it; they never build
//! ARM bodies themselves.
//!
//! `desired` compares only the fields the unit sets, so a resource that already matches costs one
//! read and no write, and fields Azure fills in (or a user sets outside the spec) are kept.

#![deny(missing_docs)]

use serde::Serialize;
use serde_json::Value;

pub mod agent_pool;
pub mod availability_set;
pub mod bastion_host;
pub mod disk;
pub mod image;
pub mod inbound_nat_rule;
pub mod load_balancer;
pub mod location;
pub mod managed_cluster;
pub mod nat_gateway;
pub mod network_interface;
pub mod private_dns_link;
pub mod private_dns_record;
pub mod private_dns_zone;
pub mod private_endpoint;
pub mod public_ip;
pub mod resource_group;
pub mod role_assignment;
pub mod route_table;
pub mod scale_set;
pub mod security_group;
pub mod subnet;
pub mod virtual_machine;
pub mod virtual_network;
pub mod vm_extension;
pub mod vnet_peering;

/// The subscription of the units' tests.
#[cfg(test)]
const TEST_SUBSCRIPTION: &str = "00000000-0000-0000-0000-000000000001";

/// The scope of an AzureCluster `c1` in `westeurope` whose spec adds `spec` to the location and
/// subscription.
#[cfg(test)]
fn test_scope(spec: &serde_json::Value) -> capz_kit::scope::ClusterScope {
    let mut full = serde_json::json!({"location": "westeurope", "subscriptionID": TEST_SUBSCRIPTION});
    if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
        full.extend(extra.clone());
    }
    let cluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": full,
    }))
    .unwrap();
    capz_kit::scope::ClusterScope::new(&cluster, capz_rules::Features::default(), None).unwrap()
}

/// Whether `existing` holds everything `wanted` sets (Azure compares names and enum values without
/// regard to case).
pub(crate) fn covers(existing: &Value, wanted: &Value) -> bool {
    match (existing, wanted) {
        // Nothing wanted: whatever is there will do.
        (_, Value::Null) => true,
        (Value::Object(existing), Value::Object(wanted)) => wanted
            .iter()
            .all(|(key, value)| existing.get(key).is_some_and(|found| covers(found, value))),
        (Value::Array(existing), Value::Array(wanted)) => {
            existing.len() == wanted.len() && existing.iter().zip(wanted).all(|(e, w)| covers(e, w))
        }
        (Value::String(existing), Value::String(wanted)) => existing.eq_ignore_ascii_case(wanted),
        (existing, wanted) => existing == wanted,
    }
}

/// A model as JSON, for [`covers`].
pub(crate) fn as_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// How two Kubernetes versions (`1.33.5`, `v1.33`) compare, by their numbers.
#[must_use]
pub fn compare_versions(left: &str, right: &str) -> std::cmp::Ordering {
    let numbers = |version: &str| -> Vec<u64> {
        version
            .trim_start_matches('v')
            .split('.')
            .map(|part| part.parse().unwrap_or(0))
            .collect()
    };
    numbers(left).cmp(&numbers(right))
}

/// The higher of two Kubernetes versions: AKS upgrades on its own, and an upgrade is never
/// undone.
#[must_use]
pub fn higher_version<'a>(wanted: &'a str, running: &'a str) -> &'a str {
    if compare_versions(running, wanted).is_gt() {
        running
    } else {
        wanted
    }
}

/// A spec field whose value Azure would refuse, or that cannot be sent as it is.
#[derive(Debug, thiserror::Error)]
pub enum InvalidSpec {
    /// A name Azure would refuse.
    #[error("{field}: Invalid value: {value:?}: {source}")]
    Name {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why.
        source: capz_azure::IdError,
    },
    /// A field whose value cannot be sent.
    #[error("{field}: Invalid value: {value:?}: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why, and what to do.
        why: &'static str,
    },
}
