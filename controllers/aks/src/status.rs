//! What aks writes: on an AzureManagedControlPlane its conditions, `Ready` summing them up, the
//! control-plane contract's fields (`ready`, `initialized`, `version`) and what AKS reports
//! (the version it upgraded to, the OIDC issuer); on an AzureManagedMachinePool `AgentPoolsReady`,
//! `Ready` and the replicas; on an AzureManagedCluster `ready`. Each is applied only when it
//! changes the object.

use capz_api::azuremanagedcontrolplane::OidcIssuerProfileStatus;
use capz_api::common::conditions::{ConditionStatus, ConditionType};
use capz_api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
use capz_kit::conditions::{self, Observation};
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};
use serde::Serialize;

use crate::context::ID;

/// Every condition type aks writes on an AzureManagedControlPlane.
const PLANE_OWNED: &[ConditionType] = &[
    ConditionType::READY,
    ConditionType::RESOURCE_GROUP_READY,
    ConditionType::VNET_READY,
    ConditionType::SUBNETS_READY,
    ConditionType::MANAGED_CLUSTER_RUNNING,
];

/// Every condition type aks writes on an AzureManagedMachinePool.
const POOL_OWNED: &[ConditionType] = &[ConditionType::READY, ConditionType::AGENT_POOLS_READY];

/// What a pass found of the managed cluster, for the control plane's status.
#[derive(Debug, Default)]
pub(crate) struct PlaneFields {
    /// The API server can be reached: the cluster is built and its kubeconfig written.
    pub(crate) initialized: bool,
    pub(crate) version: Option<String>,
    pub(crate) auto_upgrade_version: Option<String>,
    pub(crate) issuer_url: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PlaneApplied<'a> {
    ready: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    initialized: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_upgrade_version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    oidc_issuer_profile: Option<OidcIssuerProfileStatus>,
}

/// Applies a control plane's `observations` with `Ready`, `fields` and `operations` when they
/// change its status; gives whether it wrote.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish_plane(
    api: &Api<AzureManagedControlPlane>,
    plane: &AzureManagedControlPlane,
    mut observations: Vec<Observation>,
    operations: &Operations,
    fields: &PlaneFields,
) -> capz_kit::kube::Result<bool> {
    let ready = conditions::ready(&observations);
    let applied = PlaneApplied {
        ready: ready.status == ConditionStatus::True && fields.initialized,
        initialized: fields.initialized,
        version: fields.version.as_deref(),
        auto_upgrade_version: fields.auto_upgrade_version.as_deref(),
        oidc_issuer_profile: fields
            .issuer_url
            .clone()
            .map(|issuer_url| OidcIssuerProfileStatus {
                issuer_url: Some(issuer_url),
            }),
    };
    observations.push(ready);
    let report = Report {
        observations,
        operations: Some(operations),
        fields: applied,
    };
    status::publish(api, &ID.field_manager(), PLANE_OWNED, plane, report).await
}

#[derive(Debug, Serialize)]
struct PoolApplied {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
}

/// Applies a pool's `observations` with `Ready`, its `replicas` and `operations` when they
/// change its status; gives whether it wrote.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish_pool(
    api: &Api<AzureManagedMachinePool>,
    pool: &AzureManagedMachinePool,
    mut observations: Vec<Observation>,
    operations: &Operations,
    replicas: Option<i32>,
) -> capz_kit::kube::Result<bool> {
    let ready = conditions::ready(&observations);
    let applied = PoolApplied {
        ready: ready.status == ConditionStatus::True && replicas.is_some(),
        replicas,
    };
    observations.push(ready);
    let report = Report {
        observations,
        operations: Some(operations),
        fields: applied,
    };
    status::publish(api, &ID.field_manager(), POOL_OWNED, pool, report).await
}

#[derive(Debug, Serialize)]
struct ClusterApplied {
    ready: bool,
}

/// Applies `ready` to an AzureManagedCluster's status when it changes it.
///
/// # Errors
/// The API server's refusal.
pub(crate) async fn publish_cluster(
    api: &Api<AzureManagedCluster>,
    cluster: &AzureManagedCluster,
    ready: bool,
) -> capz_kit::kube::Result<bool> {
    let report = Report {
        observations: Vec::new(),
        operations: None,
        fields: ClusterApplied { ready },
    };
    status::publish(api, &ID.field_manager(), &[], cluster, report).await
}
