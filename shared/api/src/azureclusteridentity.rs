//! `AzureClusterIdentity`: the Azure principal a cluster acts as.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Conditions, LabelSelector, SecretReference};

/// The Azure identity that the controllers use to manage a cluster's Azure resources.
///
/// Clusters refer to it through `spec.identityRef`; `allowedNamespaces` says which namespaces may.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "infrastructure.cluster.x-k8s.io",
    version = "v1beta1",
    kind = "AzureClusterIdentity",
    namespaced,
    status = "AzureClusterIdentityStatus",
    category = "cluster-api",
    shortname = "aci",
    label("cluster.x-k8s.io/v1beta1", "v1beta1"),
    printcolumn(
        name = "Type",
        type_ = "string",
        json_path = ".spec.type",
        description = "How the identity authenticates"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterIdentitySpec {
    /// How the identity authenticates to Azure.
    #[serde(rename = "type")]
    pub type_: IdentityType,

    /// Deprecated: the Azure resource ID of a user-assigned managed identity. Use `clientID`.
    #[serde(rename = "resourceID", default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,

    /// The client (application) ID of the service principal or managed identity.
    #[serde(rename = "clientID")]
    pub client_id: String,

    /// The Secret holding the service principal's client secret (key `clientSecret`), or its
    /// certificate for `ServicePrincipalCertificate` (key `certificate`, PEM or PFX, and the PFX's
    /// password under `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretReference>,

    /// For `ServicePrincipalCertificate`: a path inside the controller's container where the
    /// certificate is mounted, used instead of the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_path: Option<String>,

    /// The Microsoft Entra tenant the identity belongs to.
    #[serde(rename = "tenantID")]
    pub tenant_id: String,

    /// The namespaces whose clusters may use this identity. Absent: no namespace, not even the
    /// identity's own. Present but empty (`{}`): every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<AllowedNamespaces>,

    /// For `UserAssignedIdentityCredential`: path of the credentials file mounted into the
    /// controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_assigned_identity_credentials_path: Option<String>,

    /// For `UserAssignedIdentityCredential`: the cloud the credentials file is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_assigned_identity_credentials_cloud_type: Option<String>,
}

/// How an identity authenticates to Azure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = crate::common::schema::keep_field_description)]
pub enum IdentityType {
    /// A service principal with a client secret.
    ServicePrincipal,
    /// A user-assigned managed identity of the machine the controller runs on.
    #[serde(rename = "UserAssignedMSI")]
    UserAssignedMsi,
    /// A service principal with a client secret, whose credentials are also handed to the
    /// workload cluster's cloud provider by the user rather than by the controller.
    ManualServicePrincipal,
    /// A service principal with a certificate.
    ServicePrincipalCertificate,
    /// A federated identity: the controller's Kubernetes service-account token is exchanged
    /// for an Azure token.
    WorkloadIdentity,
    /// A user-assigned identity whose credentials file is provided by the platform.
    UserAssignedIdentityCredential,
}

/// The namespaces allowed to use an identity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllowedNamespaces {
    /// Namespaces allowed by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<String>>,

    /// Namespaces allowed by their labels. An empty selector allows every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// What the controllers observed about an identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AzureClusterIdentityStatus {
    /// Observations about the identity.
    #[serde(default, skip_serializing_if = "Conditions::is_empty")]
    pub conditions: Conditions,
}
