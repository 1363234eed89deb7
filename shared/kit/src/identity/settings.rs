//! The process-wide settings behind every credential: where the managed identity endpoint and the
//! federated token are, an optional custom cloud, and the deprecated environment credentials. A
//! plain struct: the controller runner fills it from flags or, with [`IdentitySettings::from_env`],
//! from the environment.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use azure_core::http::Url;
use capz_azure::{Cloud, CloudError, CustomCloud, ManagedIdentityId};

/// The managed identity endpoint (IMDS); default [`ManagedIdentityId::IMDS_ENDPOINT`].
pub const IMDS_ENDPOINT_VAR: &str = "CAPZ_IMDS_ENDPOINT";
/// A federated token file for `WorkloadIdentity` (a projected service-account token, as Azure
/// Workload Identity's webhook mounts it); when unset, tokens of [`FEDERATED_SERVICE_ACCOUNT`]
/// are requested instead.
pub const FEDERATED_TOKEN_FILE_VAR: &str = "AZURE_FEDERATED_TOKEN_FILE";
/// The namespace the controller runs in (the downward API's `metadata.namespace`); the
/// kubeconfig's namespace when unset.
pub const POD_NAMESPACE_VAR: &str = "POD_NAMESPACE";
/// The ServiceAccount whose tokens `WorkloadIdentity` identities exchange: the subject existing
/// CAPZ federations name (`system:serviceaccount:capz-system:capz-manager`).
pub const FEDERATED_SERVICE_ACCOUNT: &str = "capz-manager";

/// Where `WorkloadIdentity` identities get the service-account token they exchange with Entra ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FederatedToken {
    /// A token file someone else keeps fresh.
    File(PathBuf),
    /// A token of ServiceAccount `name`, requested through the TokenRequest API at each exchange;
    /// in the controller's own namespace when `namespace` is unset.
    ServiceAccount {
        /// Its namespace.
        namespace: Option<String>,
        /// Its name.
        name: String,
    },
}
/// The Resource Manager endpoint of a custom cloud; setting it turns the custom cloud on.
pub const CUSTOM_CLOUD_RESOURCE_MANAGER_VAR: &str = "CAPZ_CUSTOM_CLOUD_RESOURCE_MANAGER";
/// The Entra authority host of the custom cloud; read from the cloud's metadata when unset.
pub const CUSTOM_CLOUD_AUTHORITY_HOST_VAR: &str = "CAPZ_CUSTOM_CLOUD_AUTHORITY_HOST";
/// The audience ARM accepts in tokens of the custom cloud.
pub const CUSTOM_CLOUD_TOKEN_AUDIENCE_VAR: &str = "CAPZ_CUSTOM_CLOUD_TOKEN_AUDIENCE";
/// A PEM file of CA certificates the custom cloud's endpoints are signed by.
pub const CUSTOM_CLOUD_CA_FILE_VAR: &str = "CAPZ_CUSTOM_CLOUD_CA_FILE";

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A setting that must be a URL is not one.
    #[error("{setting} '{value}' is not an absolute URL")]
    InvalidUrl {
        /// The environment variable or field.
        setting: &'static str,
        /// The value given.
        value: String,
    },
    /// The custom cloud's CA file cannot be read.
    #[error("cannot read the custom cloud's CA file {path}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The custom cloud or its HTTP client cannot be set up.
    #[error("the custom cloud cannot be used")]
    Cloud(#[from] CloudError),
}

/// The settings of [`Identities`](super::Identities).
#[derive(Debug, Clone)]
pub struct IdentitySettings {
    /// The managed identity endpoint that `UserAssignedMSI` identities get tokens from.
    pub imds_endpoint: Url,
    /// The federated service-account token `WorkloadIdentity` identities exchange.
    pub federated_token: FederatedToken,
    /// A cloud given by its endpoints (Azure Stack Hub, the ARM emulator). When set, every cluster
    /// uses it: the process talks to one set of endpoints.
    pub custom_cloud: Option<CustomCloudSettings>,
    /// What clusters without `spec.identityRef` sign in with (deprecated, as in CAPZ).
    pub environment: EnvironmentCredentials,
    /// The time limit of each request to Entra ID, IMDS or the cloud metadata endpoint.
    pub request_timeout: Duration,
}

impl IdentitySettings {
    /// The settings from the process environment (the variables named by the `*_VAR` constants
    /// of this module and [`EnvironmentCredentials::from_lookup`]).
    ///
    /// # Errors
    /// When a URL does not parse.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings from `lookup`, which gives the value of an environment variable.
    ///
    /// # Errors
    /// When a URL does not parse.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let value = |name: &str| {
            lookup(name)
                .map(|value| value.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let url = |setting: &'static str, text: String| {
            Url::parse(&text).map_err(|_| SettingsError::InvalidUrl { setting, value: text })
        };
        let imds_endpoint = url(
            IMDS_ENDPOINT_VAR,
            value(IMDS_ENDPOINT_VAR).unwrap_or_else(|| ManagedIdentityId::IMDS_ENDPOINT.to_owned()),
        )?;
        let custom_cloud = match value(CUSTOM_CLOUD_RESOURCE_MANAGER_VAR) {
            None => None,
            Some(resource_manager) => Some(CustomCloudSettings {
                resource_manager: url(CUSTOM_CLOUD_RESOURCE_MANAGER_VAR, resource_manager)?,
                authority_host: value(CUSTOM_CLOUD_AUTHORITY_HOST_VAR)
                    .map(|host| url(CUSTOM_CLOUD_AUTHORITY_HOST_VAR, host))
                    .transpose()?,
                token_audience: value(CUSTOM_CLOUD_TOKEN_AUDIENCE_VAR),
                ca_file: value(CUSTOM_CLOUD_CA_FILE_VAR).map(PathBuf::from),
            }),
        };
        Ok(Self {
            imds_endpoint,
            federated_token: match value(FEDERATED_TOKEN_FILE_VAR) {
                Some(file) => FederatedToken::File(file.into()),
                None => FederatedToken::ServiceAccount {
                    namespace: value(POD_NAMESPACE_VAR),
                    name: FEDERATED_SERVICE_ACCOUNT.to_owned(),
                },
            },
            custom_cloud,
            environment: EnvironmentCredentials::from_lookup(&lookup),
            request_timeout: Duration::from_secs(30),
        })
    }
}

/// A custom cloud given by its endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCloudSettings {
    /// The Resource Manager endpoint, HTTPS.
    pub resource_manager: Url,
    /// The Entra authority host, HTTPS. When absent it is read from the cloud metadata document
    /// the Resource Manager serves (`/metadata/endpoints`), as Azure Stack Hub publishes it.
    pub authority_host: Option<Url>,
    /// The audience of ARM tokens; by default the metadata's, or else the Resource Manager URL.
    pub token_audience: Option<String>,
    /// A PEM file of CAs to trust besides the public roots.
    pub ca_file: Option<PathBuf>,
}

impl CustomCloudSettings {
    /// The cloud these settings describe: reads the CA file and, without an authority host, the
    /// cloud metadata.
    ///
    /// # Errors
    /// When the CA file cannot be read, an endpoint is not HTTPS, or the metadata cannot be had.
    pub async fn resolve(&self) -> Result<Cloud, SettingsError> {
        let ca_bundle = match &self.ca_file {
            None => None,
            Some(path) => Some(
                tokio::fs::read(path)
                    .await
                    .map_err(|source| SettingsError::CaFile {
                        path: path.clone(),
                        source,
                    })?,
            ),
        };
        let custom = if let Some(authority_host) = &self.authority_host {
            CustomCloud::new(
                self.resource_manager.clone(),
                authority_host.clone(),
                self.token_audience
                    .clone()
                    .unwrap_or_else(|| self.resource_manager.to_string()),
                ca_bundle,
            )?
        } else {
            let read = Cloud::from_metadata(&self.resource_manager, ca_bundle.clone()).await?;
            CustomCloud::new(
                read.resource_manager(),
                read.authority_host(),
                self.token_audience
                    .clone()
                    .unwrap_or_else(|| read.token_audience().to_owned()),
                ca_bundle,
            )?
        };
        Ok(Cloud::Custom(Box::new(custom)))
    }
}

/// The controller's own credentials from its environment, which CAPZ uses for clusters without
/// `spec.identityRef` (deprecated there, and here reported as such). Its `Debug` hides secrets.
///
/// Which one is used, first match wins, as the Azure SDKs' default credential chain picks:
/// a client secret, a client certificate, a federated token file (each with tenant and client
/// id), else the machine's managed identity (user-assigned when `AZURE_CLIENT_ID` is set).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvironmentCredentials {
    /// `AZURE_TENANT_ID`.
    pub tenant_id: Option<String>,
    /// `AZURE_CLIENT_ID`.
    pub client_id: Option<String>,
    /// `AZURE_CLIENT_SECRET`.
    pub client_secret: Option<String>,
    /// `AZURE_CLIENT_CERTIFICATE_PATH` (or CAPZ's older `AZURE_CERTIFICATE_PATH`): PEM or PFX.
    pub certificate_path: Option<PathBuf>,
    /// `AZURE_CLIENT_CERTIFICATE_PASSWORD` (or `AZURE_CERTIFICATE_PASSWORD`), for a PFX.
    pub certificate_password: Option<String>,
    /// `AZURE_FEDERATED_TOKEN_FILE`, when set explicitly.
    pub federated_token_file: Option<PathBuf>,
    /// `AZURE_USERNAME`: a user's password sign-in, which is not supported.
    pub username: Option<String>,
    /// `AZURE_SUBSCRIPTION_ID`: CAPZ's subscription for clusters that name none.
    pub subscription_id: Option<String>,
}

impl EnvironmentCredentials {
    /// Reads the variables through `lookup`. Trailing newlines (left by `base64` or files) and
    /// empty values are dropped.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let value = |names: &[&str]| {
            names.iter().find_map(|name| {
                lookup(name)
                    .map(|value| value.trim_end_matches(['\r', '\n']).to_owned())
                    .filter(|value| !value.is_empty())
            })
        };
        Self {
            tenant_id: value(&["AZURE_TENANT_ID"]),
            client_id: value(&["AZURE_CLIENT_ID"]),
            client_secret: value(&["AZURE_CLIENT_SECRET"]),
            certificate_path: value(&["AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_CERTIFICATE_PATH"])
                .map(PathBuf::from),
            certificate_password: value(&["AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_CERTIFICATE_PASSWORD"]),
            federated_token_file: value(&[FEDERATED_TOKEN_FILE_VAR]).map(PathBuf::from),
            username: value(&["AZURE_USERNAME"]),
            subscription_id: value(&["AZURE_SUBSCRIPTION_ID"]),
        }
    }

    /// How to sign in, or what is missing.
    pub(super) fn method(&self) -> Result<EnvironmentMethod<'_>, String> {
        let principal = |what: &str| match (&self.tenant_id, &self.client_id) {
            (Some(tenant), Some(client)) => Ok((tenant.as_str(), client.as_str())),
            _ => Err(format!(
                "{what} is set but AZURE_TENANT_ID or AZURE_CLIENT_ID is not"
            )),
        };
        if let Some(secret) = &self.client_secret {
            let (tenant, client) = principal("AZURE_CLIENT_SECRET")?;
            return Ok(EnvironmentMethod::ClientSecret {
                tenant,
                client,
                secret,
            });
        }
        if let Some(path) = &self.certificate_path {
            let (tenant, client) = principal("AZURE_CLIENT_CERTIFICATE_PATH")?;
            let password = self.certificate_password.as_deref().unwrap_or_default();
            return Ok(EnvironmentMethod::Certificate {
                tenant,
                client,
                path,
                password,
            });
        }
        if self.username.is_some() {
            return Err(
                "AZURE_USERNAME is set: signing in with a user's password is not supported; \
                        use a service principal or a managed identity"
                    .into(),
            );
        }
        if let Some(token_file) = &self.federated_token_file {
            let (tenant, client) = principal("AZURE_FEDERATED_TOKEN_FILE")?;
            return Ok(EnvironmentMethod::WorkloadIdentity {
                tenant,
                client,
                token_file,
            });
        }
        Ok(EnvironmentMethod::ManagedIdentity(match &self.client_id {
            Some(client) => ManagedIdentityId::ClientId(client.clone()),
            None => ManagedIdentityId::SystemAssigned,
        }))
    }
}

impl fmt::Debug for EnvironmentCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |value: &Option<String>| value.as_ref().map(|_| "<hidden>");
        f.debug_struct("EnvironmentCredentials")
            .field("tenant_id", &self.tenant_id)
            .field("client_id", &self.client_id)
            .field("client_secret", &hidden(&self.client_secret))
            .field("certificate_path", &self.certificate_path)
            .field("certificate_password", &hidden(&self.certificate_password))
            .field("federated_token_file", &self.federated_token_file)
            .field("username", &self.username)
            .field("subscription_id", &self.subscription_id)
            .finish()
    }
}

/// How the environment credentials sign in.
#[derive(PartialEq, Eq)]
pub(super) enum EnvironmentMethod<'a> {
    ClientSecret {
        tenant: &'a str,
        client: &'a str,
        secret: &'a str,
    },
    Certificate {
        tenant: &'a str,
        client: &'a str,
        path: &'a PathBuf,
        password: &'a str,
    },
    WorkloadIdentity {
        tenant: &'a str,
        client: &'a str,
        token_file: &'a PathBuf,
    },
    ManagedIdentity(ManagedIdentityId),
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{EnvironmentCredentials, EnvironmentMethod, FederatedToken, IdentitySettings, SettingsError};
    use capz_azure::ManagedIdentityId;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn defaults_point_at_azure() {
        let settings = IdentitySettings::from_lookup(lookup(&[])).unwrap();
        assert_eq!(settings.imds_endpoint.as_str(), "http://169.254.169.254/");
        // Without a token file, capz-manager's tokens in the controller's own namespace.
        assert_eq!(
            settings.federated_token,
            FederatedToken::ServiceAccount {
                namespace: None,
                name: "capz-manager".to_owned()
            }
        );
        let in_pod = IdentitySettings::from_lookup(lookup(&[("POD_NAMESPACE", "capz-system")])).unwrap();
        assert_eq!(
            in_pod.federated_token,
            FederatedToken::ServiceAccount {
                namespace: Some("capz-system".to_owned()),
                name: "capz-manager".to_owned()
            }
        );
        assert!(settings.custom_cloud.is_none());
        assert_eq!(settings.environment, EnvironmentCredentials::default());
    }

    #[test]
    fn the_custom_cloud_and_endpoints_come_from_variables() {
        let settings = IdentitySettings::from_lookup(lookup(&[
            ("CAPZ_IMDS_ENDPOINT", "http://127.0.0.1:8080"),
            ("AZURE_FEDERATED_TOKEN_FILE", "/tmp/token"),
            ("CAPZ_CUSTOM_CLOUD_RESOURCE_MANAGER", "https://arm.local/"),
            ("CAPZ_CUSTOM_CLOUD_CA_FILE", "/etc/ca.pem"),
        ]))
        .unwrap();
        assert_eq!(settings.imds_endpoint.as_str(), "http://127.0.0.1:8080/");
        let custom = settings.custom_cloud.unwrap();
        assert_eq!(custom.resource_manager.as_str(), "https://arm.local/");
        assert!(custom.authority_host.is_none(), "read from the cloud metadata");
        assert_eq!(custom.ca_file.unwrap().to_str(), Some("/etc/ca.pem"));
        assert_eq!(
            settings.federated_token,
            FederatedToken::File("/tmp/token".into())
        );
        // An explicitly set token file is also the environment credentials' workload identity.
        assert_eq!(
            settings.environment.federated_token_file.unwrap().to_str(),
            Some("/tmp/token")
        );

        let err = IdentitySettings::from_lookup(lookup(&[("CAPZ_CUSTOM_CLOUD_AUTHORITY_HOST", "x")]));
        assert!(
            err.is_ok(),
            "an authority host alone does not turn the custom cloud on"
        );
        let err =
            IdentitySettings::from_lookup(lookup(&[("CAPZ_CUSTOM_CLOUD_RESOURCE_MANAGER", "arm.local")]))
                .unwrap_err();
        assert!(matches!(err, SettingsError::InvalidUrl { .. }));
        assert_eq!(
            err.to_string(),
            "CAPZ_CUSTOM_CLOUD_RESOURCE_MANAGER 'arm.local' is not an absolute URL"
        );
    }

    #[test]
    fn environment_credentials_pick_the_first_complete_method() {
        let secret = EnvironmentCredentials::from_lookup(lookup(&[
            ("AZURE_TENANT_ID", "t\n"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_CLIENT_SECRET", "s3cret\n"),
            ("AZURE_CERTIFICATE_PATH", "/cert.pem"),
        ]));
        assert!(matches!(
            secret.method(),
            Ok(EnvironmentMethod::ClientSecret {
                tenant: "t",
                client: "c",
                secret: "s3cret"
            })
        ));
        let debug = format!("{secret:?}");
        assert!(!debug.contains("s3cret") && debug.contains("<hidden>"), "{debug}");

        let certificate = EnvironmentCredentials::from_lookup(lookup(&[
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_CERTIFICATE_PATH", "/cert.pfx"),
            ("AZURE_CERTIFICATE_PASSWORD", "pw"),
        ]));
        assert!(matches!(
            certificate.method(),
            Ok(EnvironmentMethod::Certificate { password: "pw", .. })
        ));

        let federated = EnvironmentCredentials::from_lookup(lookup(&[
            ("AZURE_TENANT_ID", "t"),
            ("AZURE_CLIENT_ID", "c"),
            ("AZURE_FEDERATED_TOKEN_FILE", "/token"),
        ]));
        assert!(matches!(
            federated.method(),
            Ok(EnvironmentMethod::WorkloadIdentity { .. })
        ));

        let user_assigned = EnvironmentCredentials::from_lookup(lookup(&[("AZURE_CLIENT_ID", "c")]));
        assert!(
            user_assigned.method()
                == Ok(EnvironmentMethod::ManagedIdentity(ManagedIdentityId::ClientId(
                    "c".into()
                )))
        );
        let nothing = EnvironmentCredentials::default();
        assert!(
            nothing.method()
                == Ok(EnvironmentMethod::ManagedIdentity(
                    ManagedIdentityId::SystemAssigned
                ))
        );
    }

    #[test]
    fn incomplete_or_unsupported_environment_credentials_are_named() {
        let half = EnvironmentCredentials::from_lookup(lookup(&[("AZURE_CLIENT_SECRET", "s")]));
        assert_eq!(
            half.method().err().unwrap(),
            "AZURE_CLIENT_SECRET is set but AZURE_TENANT_ID or AZURE_CLIENT_ID is not"
        );
        let user = EnvironmentCredentials::from_lookup(lookup(&[
            ("AZURE_USERNAME", "me"),
            ("AZURE_PASSWORD", "pw"),
        ]));
        assert!(user.method().err().unwrap().contains("not supported"));
    }
}
