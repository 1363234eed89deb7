//! Azure credentials for cluster objects, as CAPZ finds them: `spec.identityRef` names an
//! AzureClusterIdentity, whose `allowedNamespaces` must admit the cluster's namespace and whose
//! type says how to sign in; without a reference, the controller's environment credentials
//! (deprecated).
//!
//! ```text
//!   AzureCluster / AzureManagedControlPlane      namespace, spec.identityRef, spec.azureEnvironment
//!     │ identityRef (GET)
//!     ▼
//!   AzureClusterIdentity ── allowedNamespaces refuses the namespace ──▶ NamespaceNotAllowedByIdentity
//!     │ type, tenantID, clientID, clientSecret | certPath
//!     ▼
//!   Secret (GET in its namespace at every build, never watched)
//!     │ cache key: type, tenant, client id, authority host, SHA-256 of the material
//!     ▼
//!   ClusterCredential { credential, cloud, http, source, notices }
//! ```
//!
//! The controller needs `get` on `azureclusteridentities`, on `namespaces` (read only when a
//! label selector decides) and on the `secrets` identities name.
//!
//! | Type | Signs in with |
//! |---|---|
//! | `ServicePrincipal`, `ManualServicePrincipal` | the Secret's `clientSecret` |
//! | `ServicePrincipalCertificate` | the Secret's `certificate` (PEM or PFX; CAPZ's `clientSecret` key also works) and `password`, or the file at `certPath` |
//! | `UserAssignedMSI` | the managed identity endpoint ([`IdentitySettings::imds_endpoint`]), for `clientID` |
//! | `WorkloadIdentity` | a `capz-manager` token from the TokenRequest API, or a token file ([`IdentitySettings::federated_token`]) |
//! | `UserAssignedIdentityCredential` | not supported: [`IdentityError::UnsupportedIdentityType`] |
//!
//! Building a credential fetches no token: tokens are fetched when ARM is first called (or by
//! [`ClusterCredential::arm_token`]), so a refused namespace never reaches Entra ID.

mod cache;
mod error;
mod namespaces;
mod service_account;
mod settings;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use azure_core::credentials::AccessToken;
use capz_api::azureclusteridentity::{AzureClusterIdentity, AzureClusterIdentitySpec, IdentityType};
use capz_api::common::ObjectReference;
use capz_api::{AzureCluster, AzureManagedControlPlane};
use capz_azure::{
    ArmClient, Category as ArmCategory, ClientCertificate, Cloud, Credential, FederatedTokenFile,
    FederatedTokenSource, HttpClient, ManagedIdentityId, ResourceId,
};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::{Api, Client};

use cache::{CacheKey, CredentialCache};

use crate::error::Failure;
use crate::resource::ResourceError;
pub use error::{CredentialRefused, IdentityError, NAMESPACE_NOT_ALLOWED_BY_IDENTITY};
pub use namespaces::namespace_allowed;
use service_account::ServiceAccountToken;
use settings::EnvironmentMethod;
pub use settings::{
    CUSTOM_CLOUD_AUTHORITY_HOST_VAR, CUSTOM_CLOUD_CA_FILE_VAR, CUSTOM_CLOUD_RESOURCE_MANAGER_VAR,
    CUSTOM_CLOUD_TOKEN_AUDIENCE_VAR, CustomCloudSettings, EnvironmentCredentials, FEDERATED_SERVICE_ACCOUNT,
    FEDERATED_TOKEN_FILE_VAR, FederatedToken, IMDS_ENDPOINT_VAR, IdentitySettings, POD_NAMESPACE_VAR,
    SettingsError,
};

/// The Secret key of a service principal's client secret.
pub const CLIENT_SECRET_KEY: &str = "clientSecret";
/// The Secret key of a service principal's certificate, PEM or PFX.
pub const CERTIFICATE_KEY: &str = "certificate";
/// The Secret key of the PFX certificate's password.
pub const CERTIFICATE_PASSWORD_KEY: &str = "password";

/// What the kit needs to know of a cluster object to find its credentials.
#[derive(Debug, Clone, Copy)]
pub struct ClusterIdentityRef<'a> {
    /// The object's namespace.
    pub namespace: &'a str,
    /// Its `spec.identityRef`.
    pub identity_ref: Option<&'a ObjectReference>,
    /// Its `spec.azureEnvironment`.
    pub azure_environment: Option<&'a str>,
}

impl<'a> From<&'a AzureCluster> for ClusterIdentityRef<'a> {
    fn from(cluster: &'a AzureCluster) -> Self {
        Self {
            namespace: cluster.metadata.namespace.as_deref().unwrap_or_default(),
            identity_ref: cluster.spec.class.identity_ref.as_ref(),
            azure_environment: cluster.spec.class.azure_environment.as_deref(),
        }
    }
}

impl<'a> From<&'a AzureManagedControlPlane> for ClusterIdentityRef<'a> {
    fn from(control_plane: &'a AzureManagedControlPlane) -> Self {
        Self {
            namespace: control_plane.metadata.namespace.as_deref().unwrap_or_default(),
            identity_ref: Some(&control_plane.spec.class.identity_ref),
            azure_environment: control_plane.spec.class.azure_environment.as_deref(),
        }
    }
}

/// Where a cluster's credential comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// An AzureClusterIdentity.
    Identity {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its type.
        type_: IdentityType,
        /// The client id it signs in as (empty when its type names none).
        client_id: String,
    },
    /// The controller's environment (no `spec.identityRef`).
    Environment,
}

/// Who signs in, as messages name it: never a secret.
impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Identity {
                namespace,
                name,
                client_id,
                ..
            } if !client_id.is_empty() => {
                write!(
                    f,
                    "AzureClusterIdentity {namespace}/{name} (client id {client_id})"
                )
            }
            Self::Identity { namespace, name, .. } => write!(f, "AzureClusterIdentity {namespace}/{name}"),
            Self::Environment => f.write_str("the controller's own credentials"),
        }
    }
}

/// Something about a cluster's credential the user should hear of, as a warning event: the
/// credential works, but rests on something deprecated or overridden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// No `spec.identityRef`: the controller's own credentials are used, which CAPZ deprecates.
    EnvironmentCredentials,
    /// `ManualServicePrincipal` is deprecated in CAPZ; `ServicePrincipal` does the same.
    ManualServicePrincipal,
    /// `UserAssignedMSI` with the deprecated `spec.resourceID`: `spec.clientID` picks the identity.
    ResourceId {
        /// Whether `resourceID` was used, for want of a `clientID`.
        used: bool,
    },
    /// The controller runs against a custom cloud, which serves every cluster, whatever cloud
    /// `spec.azureEnvironment` names.
    CloudOverridden {
        /// The cloud the cluster names.
        named: String,
    },
}

impl Notice {
    /// The event reason (CamelCase).
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::EnvironmentCredentials => "DeprecatedEnvironmentCredentials",
            Self::ManualServicePrincipal => "DeprecatedIdentityType",
            Self::ResourceId { .. } => "DeprecatedIdentityField",
            Self::CloudOverridden { .. } => "CustomCloudOverride",
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EnvironmentCredentials => f.write_str(
                "no spec.identityRef: using the controller's environment credentials, which are \
                 deprecated; reference an AzureClusterIdentity",
            ),
            Self::ManualServicePrincipal => f.write_str(
                "identity type ManualServicePrincipal is deprecated; ServicePrincipal reads the same Secret",
            ),
            Self::ResourceId { used: true } => {
                f.write_str("spec.resourceID is deprecated; set spec.clientID to the identity's client id")
            }
            Self::ResourceId { used: false } => {
                f.write_str("spec.resourceID is deprecated and not used: spec.clientID picks the identity")
            }
            Self::CloudOverridden { named } => write!(
                f,
                "spec.azureEnvironment names {named}, but the controller is configured for a custom \
                 cloud, which it uses for every cluster"
            ),
        }
    }
}

/// A cluster's credential and the cloud it is for: what an `ArmClient` is made of.
#[derive(Debug, Clone)]
pub struct ClusterCredential {
    /// The credential, shared with every cluster signing in the same way.
    pub credential: Credential,
    /// The cloud.
    pub cloud: Cloud,
    /// The HTTP client for the cloud (trusting its CA when it is a custom one).
    pub http: HttpClient,
    /// Where the credential comes from.
    pub source: CredentialSource,
    /// What to warn the user about.
    pub notices: Vec<Notice>,
}

impl ClusterCredential {
    /// An ARM client signing in with this credential; `controller` goes into its user agent.
    #[must_use]
    pub fn arm_client(&self, controller: &str) -> ArmClient {
        ArmClient::new(&self.cloud, self.credential.clone(), &self.http, controller)
    }

    /// `result` of a call made with this credential, with a failure because Azure refused the
    /// credential (Entra would not sign it in, or ARM answered 401 to its token) told as
    /// [`CredentialRefused`], naming who signs in: the one thing a person must fix.
    ///
    /// # Errors
    /// `result`'s error, as it is or as a [`CredentialRefused`].
    pub fn blame<T>(&self, result: Result<T, ResourceError>) -> Result<T, Failure> {
        result.map_err(|error| match &error {
            ResourceError::Arm { source, .. } if source.category() == ArmCategory::Unauthorized => {
                CredentialRefused {
                    who: self.source.to_string(),
                    error,
                }
                .into()
            }
            _ => error.into(),
        })
    }

    /// A token for ARM, from the credential's cache when still fresh: checks that the credential
    /// signs in.
    ///
    /// # Errors
    /// When Entra ID (or IMDS) refuses the credential or cannot be reached.
    pub async fn arm_token(&self) -> Result<AccessToken, IdentityError> {
        Ok(self.credential.token(&[&self.cloud.arm_scope()]).await?)
    }
}

/// The service principal a workload cluster's cloud provider signs in as (`aadClientId`,
/// `aadClientSecret` and `tenantId` of `azure.json`). `Debug` leaves the secret out.
#[derive(Clone, PartialEq, Eq)]
pub struct CloudProviderCredentials {
    /// The tenant.
    pub tenant_id: String,
    /// The client (application) id.
    pub client_id: String,
    /// The client secret, for identities signing in with one.
    pub client_secret: Option<String>,
}

impl fmt::Debug for CloudProviderCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudProviderCredentials")
            .field("tenant_id", &self.tenant_id)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Builds and caches the credentials of clusters. One per process, shared by its controllers;
/// cloning shares it.
#[derive(Clone)]
pub struct Identities(std::sync::Arc<Inner>);

impl fmt::Debug for Identities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identities")
            .field("settings", &self.0.settings)
            .field(
                "custom_cloud",
                &self.0.custom_cloud.as_ref().map(|(cloud, _)| cloud),
            )
            .finish_non_exhaustive()
    }
}

struct Inner {
    client: Client,
    /// Where WorkloadIdentity identities get their federated token.
    federated: Arc<dyn FederatedTokenSource>,
    settings: IdentitySettings,
    custom_cloud: Option<(Cloud, HttpClient)>,
    http: HttpClient,
    cache: CredentialCache,
}

/// How to sign in, before the credential exists: what the cache key is computed from.
enum Recipe {
    ClientSecret {
        tenant: String,
        client: String,
        secret: String,
    },
    Certificate {
        tenant: String,
        client: String,
        data: Vec<u8>,
        password: String,
    },
    WorkloadIdentity {
        tenant: String,
        client: String,
        source: Arc<dyn FederatedTokenSource>,
    },
    ManagedIdentity(ManagedIdentityId),
}

impl Identities {
    /// Sets up the identities of a process: resolves the custom cloud (reading its CA file and,
    /// when no authority host is given, its metadata).
    ///
    /// # Errors
    /// When the custom cloud cannot be resolved.
    pub async fn new(client: Client, settings: IdentitySettings) -> Result<Self, SettingsError> {
        let custom_cloud = match &settings.custom_cloud {
            Some(custom) => {
                let cloud = custom.resolve().await?;
                let http = cloud.http_client(settings.request_timeout)?;
                Some((cloud, http))
            }
            None => None,
        };
        let http = HttpClient::new(None, settings.request_timeout)?;
        let federated: Arc<dyn FederatedTokenSource> = match &settings.federated_token {
            FederatedToken::File(path) => Arc::new(FederatedTokenFile::new(path)),
            FederatedToken::ServiceAccount { namespace, name } => Arc::new(ServiceAccountToken::new(
                client.clone(),
                namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_owned()),
                name.clone(),
            )),
        };
        Ok(Self(std::sync::Arc::new(Inner {
            client,
            federated,
            settings,
            custom_cloud,
            http,
            cache: CredentialCache::default(),
        })))
    }

    /// The credential of a cluster object. Reads the identity, the cluster's namespace (only when
    /// a label selector decides) and the identity's Secret on demand, each with one GET; fetches
    /// no token.
    ///
    /// # Errors
    /// See [`IdentityError`]: its reason goes into the cluster's condition.
    pub async fn credential(
        &self,
        cluster: ClusterIdentityRef<'_>,
    ) -> Result<ClusterCredential, IdentityError> {
        let mut notices = Vec::new();
        let (cloud, http) = self.cloud(cluster.azure_environment, &mut notices)?;
        let (source, recipe) = match cluster.identity_ref {
            None => {
                notices.push(Notice::EnvironmentCredentials);
                (CredentialSource::Environment, self.environment_recipe().await?)
            }
            Some(reference) => {
                let identity = self.allowed_identity(cluster.namespace, reference).await?;
                let recipe = self.identity_recipe(&identity, &mut notices).await?;
                let source = CredentialSource::Identity {
                    namespace: identity.namespace,
                    name: identity.name,
                    type_: identity.spec.type_,
                    client_id: identity.spec.client_id,
                };
                (source, recipe)
            }
        };
        let credential = self.credential_for(recipe, &cloud, &http)?;
        Ok(ClusterCredential {
            credential,
            cloud,
            http,
            source,
            notices,
        })
    }

    /// The credential of an AzureClusterIdentity itself, whichever clusters use it: what checking
    /// the identity signs in with. `allowedNamespaces` is not consulted (no cluster is involved);
    /// `azure_environment` is the cloud to sign in to, as a cluster's `spec.azureEnvironment`.
    /// Reads the identity's Secret with one GET; fetches no token.
    ///
    /// # Errors
    /// See [`IdentityError`].
    pub async fn identity_credential(
        &self,
        identity: &AzureClusterIdentity,
        azure_environment: Option<&str>,
    ) -> Result<ClusterCredential, IdentityError> {
        let mut notices = Vec::new();
        let (cloud, http) = self.cloud(azure_environment, &mut notices)?;
        let identity = Identity {
            namespace: identity.metadata.namespace.clone().unwrap_or_default(),
            name: identity.metadata.name.clone().unwrap_or_default(),
            spec: identity.spec.clone(),
        };
        let recipe = self.identity_recipe(&identity, &mut notices).await?;
        let credential = self.credential_for(recipe, &cloud, &http)?;
        Ok(ClusterCredential {
            credential,
            cloud,
            http,
            source: CredentialSource::Identity {
                namespace: identity.namespace,
                name: identity.name,
                type_: identity.spec.type_,
                client_id: identity.spec.client_id,
            },
            notices,
        })
    }

    /// The service principal a workload cluster's cloud provider signs in as when its machines
    /// have no managed identity, as CAPZ writes it into `azure.json`: the tenant and client id of
    /// the cluster's identity and, for the client-secret types, the secret. Without
    /// `spec.identityRef`, the controller's environment credentials. The identity must admit the
    /// cluster's namespace, as for [`Self::credential`].
    ///
    /// # Errors
    /// See [`IdentityError`].
    pub async fn cloud_provider_credentials(
        &self,
        cluster: ClusterIdentityRef<'_>,
    ) -> Result<CloudProviderCredentials, IdentityError> {
        let Some(reference) = cluster.identity_ref else {
            let environment = &self.0.settings.environment;
            return Ok(CloudProviderCredentials {
                tenant_id: environment.tenant_id.clone().unwrap_or_default(),
                client_id: environment.client_id.clone().unwrap_or_default(),
                client_secret: environment.client_secret.clone(),
            });
        };
        let identity = self.allowed_identity(cluster.namespace, reference).await?;
        let client_secret = match identity.spec.type_ {
            IdentityType::ServicePrincipal | IdentityType::ManualServicePrincipal => {
                let secret = self.secret(&identity).await?;
                let value = secret
                    .value(CLIENT_SECRET_KEY)
                    .ok_or_else(|| secret.key_missing(CLIENT_SECRET_KEY))?;
                Some(trim_line_end(&String::from_utf8_lossy(value)).to_owned())
            }
            // Certificates and managed identities have no secret a cloud provider could read.
            _ => None,
        };
        Ok(CloudProviderCredentials {
            tenant_id: identity.spec.tenant_id,
            client_id: identity.spec.client_id,
            client_secret,
        })
    }

    /// The cloud a cluster uses: the custom one when configured, else the one it names.
    fn cloud(
        &self,
        named: Option<&str>,
        notices: &mut Vec<Notice>,
    ) -> Result<(Cloud, HttpClient), IdentityError> {
        let named = named.filter(|name| !name.is_empty());
        let stack = named.is_some_and(|name| name.eq_ignore_ascii_case("AzureStackCloud"));
        let parse = |name: &str| {
            name.parse::<Cloud>()
                .map_err(|err| IdentityError::AzureEnvironment(err.to_string()))
        };
        if let Some((cloud, http)) = &self.0.custom_cloud {
            if let Some(name) = named.filter(|_| !stack) {
                parse(name)?;
                notices.push(Notice::CloudOverridden {
                    named: name.to_owned(),
                });
            }
            return Ok((cloud.clone(), http.clone()));
        }
        let cloud = match named {
            None => Cloud::AzurePublicCloud,
            Some(_) if stack => {
                return Err(IdentityError::AzureEnvironment(format!(
                    "AzureStackCloud needs the controller's custom cloud settings ({CUSTOM_CLOUD_RESOURCE_MANAGER_VAR})"
                )));
            }
            Some(name) => parse(name)?,
        };
        Ok((cloud, self.0.http.clone()))
    }

    /// Reads the referenced identity and checks that the cluster's namespace may use it.
    async fn allowed_identity(
        &self,
        cluster_namespace: &str,
        reference: &ObjectReference,
    ) -> Result<Identity, IdentityError> {
        if reference
            .kind
            .as_deref()
            .is_some_and(|kind| kind != "AzureClusterIdentity")
        {
            return Err(IdentityError::InvalidIdentityRef(format!(
                "must name an AzureClusterIdentity, not a {}",
                reference.kind.as_deref().unwrap_or_default()
            )));
        }
        let name = reference
            .name
            .as_deref()
            .filter(|name| !name.is_empty())
            .ok_or_else(|| IdentityError::InvalidIdentityRef("has no name".into()))?;
        // CAPZ: a reference without a namespace points into the cluster's own.
        let namespace = reference
            .namespace
            .as_deref()
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or(cluster_namespace);
        let identity = Api::<AzureClusterIdentity>::namespaced(self.0.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|source| IdentityError::Kubernetes {
                what: format!("AzureClusterIdentity {namespace}/{name}"),
                source,
            })?
            .ok_or_else(|| IdentityError::IdentityNotFound {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })?;
        let allowed = identity.spec.allowed_namespaces.as_ref();
        let labels = if namespaces::needs_labels(allowed, cluster_namespace) {
            Api::<Namespace>::all(self.0.client.clone())
                .get_opt(cluster_namespace)
                .await
                .map_err(|source| IdentityError::Kubernetes {
                    what: format!("Namespace {cluster_namespace}"),
                    source,
                })?
                .and_then(|found| found.metadata.labels)
                .unwrap_or_default()
        } else {
            BTreeMap::new()
        };
        if !namespace_allowed(allowed, cluster_namespace, &labels) {
            return Err(IdentityError::NamespaceNotAllowed {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                cluster_namespace: cluster_namespace.to_owned(),
            });
        }
        Ok(Identity {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            spec: identity.spec,
        })
    }

    async fn identity_recipe(
        &self,
        identity: &Identity,
        notices: &mut Vec<Notice>,
    ) -> Result<Recipe, IdentityError> {
        let spec = &identity.spec;
        let (tenant, client) = (spec.tenant_id.clone(), spec.client_id.clone());
        match spec.type_ {
            IdentityType::ServicePrincipal | IdentityType::ManualServicePrincipal => {
                if spec.type_ == IdentityType::ManualServicePrincipal {
                    notices.push(Notice::ManualServicePrincipal);
                }
                let secret = self.secret(identity).await?;
                let value = secret
                    .value(CLIENT_SECRET_KEY)
                    .ok_or_else(|| secret.key_missing(CLIENT_SECRET_KEY))?;
                Ok(Recipe::ClientSecret {
                    tenant,
                    client,
                    secret: trim_line_end(&String::from_utf8_lossy(value)).to_owned(),
                })
            }
            IdentityType::ServicePrincipalCertificate => {
                let cert_path = spec.cert_path.as_deref().filter(|path| !path.is_empty());
                let (data, password) = if let Some(path) = cert_path {
                    (read_file(Path::new(path)).await?, String::new())
                } else {
                    let secret = self.secret(identity).await?;
                    // The book's key, then the one CAPZ's code reads.
                    let data = secret
                        .value(CERTIFICATE_KEY)
                        .or_else(|| secret.value(CLIENT_SECRET_KEY))
                        .ok_or_else(|| secret.key_missing("certificate (or clientSecret)"))?;
                    let password = secret
                        .value(CERTIFICATE_PASSWORD_KEY)
                        .map(|value| trim_line_end(&String::from_utf8_lossy(value)).to_owned())
                        .unwrap_or_default();
                    (data.to_vec(), password)
                };
                Ok(Recipe::Certificate {
                    tenant,
                    client,
                    data,
                    password,
                })
            }
            IdentityType::WorkloadIdentity => Ok(Recipe::WorkloadIdentity {
                tenant,
                client,
                source: self.0.federated.clone(),
            }),
            IdentityType::UserAssignedMsi => {
                let resource_id = spec.resource_id.as_deref().filter(|id| !id.is_empty());
                if !client.is_empty() {
                    if resource_id.is_some() {
                        notices.push(Notice::ResourceId { used: false });
                    }
                    return Ok(Recipe::ManagedIdentity(ManagedIdentityId::ClientId(client)));
                }
                let id =
                    resource_id.ok_or_else(|| identity.invalid("UserAssignedMSI needs spec.clientID"))?;
                let id: ResourceId = id
                    .parse()
                    .map_err(|err| identity.invalid(&format!("spec.resourceID: {err}")))?;
                notices.push(Notice::ResourceId { used: true });
                Ok(Recipe::ManagedIdentity(ManagedIdentityId::ResourceId(id)))
            }
            IdentityType::UserAssignedIdentityCredential => Err(IdentityError::UnsupportedIdentityType {
                namespace: identity.namespace.clone(),
                name: identity.name.clone(),
                type_: "UserAssignedIdentityCredential",
            }),
        }
    }

    async fn environment_recipe(&self) -> Result<Recipe, IdentityError> {
        let method = self
            .0
            .settings
            .environment
            .method()
            .map_err(IdentityError::EnvironmentCredentials)?;
        Ok(match method {
            EnvironmentMethod::ClientSecret {
                tenant,
                client,
                secret,
            } => Recipe::ClientSecret {
                tenant: tenant.to_owned(),
                client: client.to_owned(),
                secret: secret.to_owned(),
            },
            EnvironmentMethod::Certificate {
                tenant,
                client,
                path,
                password,
            } => Recipe::Certificate {
                tenant: tenant.to_owned(),
                client: client.to_owned(),
                data: read_file(path).await?,
                password: password.to_owned(),
            },
            EnvironmentMethod::WorkloadIdentity {
                tenant,
                client,
                token_file,
            } => Recipe::WorkloadIdentity {
                tenant: tenant.to_owned(),
                client: client.to_owned(),
                source: Arc::new(FederatedTokenFile::new(token_file)),
            },
            EnvironmentMethod::ManagedIdentity(id) => Recipe::ManagedIdentity(id),
        })
    }

    /// The identity's Secret, read with a namespaced GET (never through a cache or watch, so that
    /// controllers hold no Secrets in memory and need no cluster-wide permission on them).
    async fn secret(&self, identity: &Identity) -> Result<IdentitySecret, IdentityError> {
        let reference = identity
            .spec
            .client_secret
            .as_ref()
            .and_then(|secret| Some((secret.name.as_deref().filter(|name| !name.is_empty())?, secret)))
            .ok_or_else(|| {
                identity.invalid("spec.clientSecret must name the Secret holding the credential")
            })?;
        let (name, reference) = reference;
        // A reference without a namespace points into the identity's own.
        let namespace = reference
            .namespace
            .as_deref()
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or(&identity.namespace);
        let secret = Api::<Secret>::namespaced(self.0.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|source| IdentityError::Kubernetes {
                what: format!("Secret {namespace}/{name}"),
                source,
            })?
            .ok_or_else(|| IdentityError::SecretNotFound {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            })?;
        Ok(IdentitySecret {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            data: secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(key, value)| (key, value.0))
                .collect(),
        })
    }

    /// The cached credential for `recipe`, or a new one.
    fn credential_for(
        &self,
        recipe: Recipe,
        cloud: &Cloud,
        http: &HttpClient,
    ) -> Result<Credential, IdentityError> {
        let authority = cloud.authority_host();
        let imds = &self.0.settings.imds_endpoint;
        let key = match &recipe {
            Recipe::ClientSecret {
                tenant,
                client,
                secret,
            } => CacheKey::new(
                "ClientSecret",
                tenant,
                client,
                authority.as_str(),
                &[secret.as_bytes()],
            ),
            Recipe::Certificate {
                tenant,
                client,
                data,
                password,
            } => CacheKey::new(
                "ClientCertificate",
                tenant,
                client,
                authority.as_str(),
                &[data, password.as_bytes()],
            ),
            Recipe::WorkloadIdentity {
                tenant,
                client,
                source,
            } => CacheKey::new(
                "WorkloadIdentity",
                tenant,
                client,
                authority.as_str(),
                &[source.describe().as_bytes()],
            ),
            Recipe::ManagedIdentity(id) => {
                CacheKey::new("ManagedIdentity", "", &id.to_string(), imds.as_str(), &[])
            }
        };
        if let Some(credential) = self.0.cache.get(&key) {
            return Ok(credential);
        }
        let credential = match recipe {
            Recipe::ClientSecret {
                tenant,
                client,
                secret,
            } => Credential::client_secret(cloud, http, &tenant, &client, &secret)?,
            Recipe::Certificate {
                tenant,
                client,
                data,
                password,
            } => {
                let certificate = ClientCertificate::parse_with_password(&data, &password)?;
                Credential::client_certificate(cloud, http, &tenant, &client, certificate)?
            }
            Recipe::WorkloadIdentity {
                tenant,
                client,
                source,
            } => Credential::workload_identity(cloud, http, &tenant, &client, source)?,
            Recipe::ManagedIdentity(id) => Credential::managed_identity(http, imds.clone(), id),
        };
        Ok(self.0.cache.insert(key, credential))
    }
}

/// An identity the cluster may use.
struct Identity {
    namespace: String,
    name: String,
    spec: AzureClusterIdentitySpec,
}

impl Identity {
    fn invalid(&self, message: &str) -> IdentityError {
        IdentityError::InvalidIdentity {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            message: message.to_owned(),
        }
    }
}

/// The data of an identity's Secret.
struct IdentitySecret {
    namespace: String,
    name: String,
    data: BTreeMap<String, Vec<u8>>,
}

impl IdentitySecret {
    fn value(&self, key: &str) -> Option<&[u8]> {
        self.data
            .get(key)
            .map(Vec::as_slice)
            .filter(|value| !value.is_empty())
    }

    fn key_missing(&self, keys: &'static str) -> IdentityError {
        IdentityError::SecretKeyMissing {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            keys,
        }
    }
}

/// A trailing line end, as `kubectl create secret --from-file` keeps it, is never part of a
/// secret or password.
fn trim_line_end(value: &str) -> &str {
    value.trim_end_matches(['\r', '\n'])
}

async fn read_file(path: &Path) -> Result<Vec<u8>, IdentityError> {
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || std::fs::read(&owned))
        .await
        .map_err(std::io::Error::other)
        .and_then(|read| read)
        .map_err(|source| IdentityError::CertificateFile {
            path: path.display().to_string(),
            source,
        })
}
