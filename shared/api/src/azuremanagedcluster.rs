//! `AzureManagedCluster` and `AzureManagedClusterTemplate`: the infrastructure object of an AKS
//! workload cluster (deprecated in CAPZ in favour of the AzureASOManaged kinds).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::ApiEndpoint;

/// The desired state of the infrastructure of an AKS cluster.
///
/// Everything about the AKS cluster is set on its `AzureManagedControlPlane`; this object only
/// mirrors the control plane's endpoint for Cluster API.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedCluster",
    namespaced,
    status = "AzureManagedClusterStatus",
    category = "cluster-api",
    shortname = "amc",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "The Cluster API infrastructure of a workload cluster run by AKS.",
    deprecated = "AzureManagedCluster is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it.",
    printcolumn(
        name = "Cluster",
        type_ = "string",
        json_path = r".metadata.labels.cluster\.x-k8s\.io/cluster-name",
        description = "The Cluster API cluster this object belongs to"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.ready",
        description = "Whether the infrastructure is ready"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
// kube-derive makes `spec` required at the root, but CAPZ's own examples create this kind with no
// spec at all. Defaulting `spec` to `{}` lets the API server accept them and means every stored
// object has a spec, so reading it into this type cannot fail.
#[schemars(extend("default" = {}))]
pub struct AzureManagedClusterSpec {
    /// Where the API server of the AKS cluster is reached; copied by the controller from the
    /// `AzureManagedControlPlane`, not set by users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
}

/// What the controller observed about the infrastructure of an AKS cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedClusterStatus {
    /// Whether the infrastructure is ready, that is the control plane's endpoint is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
}

/// The desired state of an AKS cluster infrastructure template.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureManagedClusterTemplate",
    namespaced,
    category = "cluster-api",
    shortname = "amct",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    doc = "A template of AKS cluster infrastructure objects, used by ClusterClasses.",
    deprecated = "AzureManagedClusterTemplate is deprecated in CAPZ, which moves AKS support to its AzureASOManaged kinds; capz-rs keeps serving it."
)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedClusterTemplateSpec {
    /// What each object made from the template looks like.
    pub template: AzureManagedClusterTemplateResource,
}

/// The infrastructure object a template describes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureManagedClusterTemplateResource {
    /// The spec of the objects made from the template.
    pub spec: AzureManagedClusterClassSpec,
}

// CAPZ's template spec is an empty struct too: the only field of the full spec, the endpoint,
// is filled in by the controller. It is kept as a type so that fields can be added.
/// The settings of an AKS cluster infrastructure object that a template may carry: none, since
/// all AKS settings live on the control plane.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AzureManagedClusterClassSpec {}
