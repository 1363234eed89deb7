//! Microsoft.ContainerService: AKS managed clusters, their agent pools and maintenance
//! configurations, and the Kubernetes versions AKS offers. A cluster owns a node resource group
//! (`MC_<group>_<cluster>_<location>` unless named) holding what AKS builds for it: the kubelet's
//! identity, a virtual network for pools that bring none, the outbound public address, and one
//! Uniform scale set per pool (`aks-<pool>-<8 digits>-vmss`), whose instances are the nodes.

mod agent_pools;
mod boots;
mod maintenance_configurations;
mod managed_clusters;
mod node_resource_group;
mod versions;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::{BackReferenceStyle, Catalogue, Concurrency, Flavour, OperationsAt, ResourceType};
use crate::state::StatusStyle;

/// api-versions of the recorded sessions (2024-09-01, 2025-08-01, 2025-10-02-preview and the
/// credential listings' 2022-04-01), of ASO's and CAPZ's AKS resources, of the Go SDK
/// (armcontainerservice v6 to v8) and of azure-mgmt-containerservice (40 and 41: 2026-08-01).
pub(crate) const API_VERSIONS: &[&str] = &[
    "2022-04-01",
    "2023-02-01",
    "2023-08-01",
    "2023-10-01",
    "2023-11-01",
    "2024-01-01",
    "2024-02-01",
    "2024-04-02-preview",
    "2024-05-01",
    "2024-07-01",
    "2024-08-01",
    "2024-09-01",
    "2024-10-01",
    "2025-01-01",
    "2025-02-01",
    "2025-03-01",
    "2025-04-01",
    "2025-05-01",
    "2025-06-02-preview",
    "2025-07-01",
    "2025-08-01",
    "2025-09-01",
    "2025-10-01",
    "2025-10-02-preview",
    "2026-01-01",
    "2026-03-01",
    "2026-05-01",
    "2026-08-01",
];

/// Clusters and pools: `Creating` / `Updating` while written, operations polled at
/// `locations/{location}/operations/{id}` with their start and end times, and one operation at a
/// time per cluster.
static AKS: Flavour = Flavour {
    status: StatusStyle::Timed,
    creating: "Creating",
    updating: "Updating",
    status_segment: "operations",
    operations: OperationsAt::Location {
        result: "operationresults",
    },
    etag: None,
    provisioning_state: true,
    create_status: StatusCode::CREATED,
    back_references: BackReferenceStyle::WhenPresent,
    settles_unchanged: false,
    concurrency: Concurrency::Busy,
};

pub(crate) use boots::managed_clusters;
pub(crate) use managed_clusters::MANAGED_CLUSTER;

pub(crate) static TYPES: &[&ResourceType] = &[
    &managed_clusters::MANAGED_CLUSTER,
    &agent_pools::AGENT_POOL,
    &maintenance_configurations::MAINTENANCE_CONFIGURATION,
];

pub(crate) static CATALOGUES: &[&Catalogue] = &[
    &versions::KUBERNETES_VERSIONS,
    &versions::ORCHESTRATORS,
    &versions::CLUSTER_UPGRADE_PROFILE,
    &versions::POOL_UPGRADE_PROFILE,
];

/// Leaves out what a request sets to `null`, as AKS stores it: absent.
fn drop_nulls(object: &mut Map<String, Value>) {
    object.retain(|_, value| !value.is_null());
    for value in object.values_mut() {
        if let Value::Object(inner) = value {
            drop_nulls(inner);
        }
    }
}

/// A new `eTag`, which AKS puts in the body of clusters and pools.
fn new_etag() -> Value {
    Value::String(uuid::Uuid::new_v4().to_string())
}

/// The value at a `/`-separated path inside an object.
fn at<'a>(object: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.trim_start_matches('/').split('/');
    let first = object.get(parts.next()?)?;
    parts.try_fold(first, |value, part| value.get(part))
}

/// A property of an object, `null` when absent.
fn field<'a>(object: &'a Map<String, Value>, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    object.get(key).unwrap_or(&NULL)
}
