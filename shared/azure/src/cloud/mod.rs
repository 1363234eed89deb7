//! Azure clouds: where Resource Manager and Microsoft Entra ID are, and what token audience ARM
//! accepts. The three national clouds are built in; any other (Azure Stack Hub, the ARM emulator)
//! is a custom cloud given by its endpoints or read from its cloud-metadata document.

pub(crate) mod error;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use azure_core::http::{Method, Request, Url};
use serde::Deserialize;

use crate::http::HttpClient;

pub use error::CloudError;

/// An Azure cloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cloud {
    /// Azure's global cloud.
    AzurePublicCloud,
    /// Azure operated by 21Vianet in China.
    AzureChinaCloud,
    /// Azure Government (United States).
    AzureUSGovernmentCloud,
    /// Any other cloud, given by its endpoints: Azure Stack Hub, or an emulator in tests.
    Custom(Box<CustomCloud>),
}

/// The endpoints of a custom cloud. Build it with [`CustomCloud::new`] (which checks the URLs) or
/// [`Cloud::from_metadata`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCloud {
    resource_manager: Url,
    authority_host: Url,
    token_audience: String,
    ca_bundle: Option<Vec<u8>>,
}

impl CustomCloud {
    /// A custom cloud with its Resource Manager endpoint, Entra authority host, the audience ARM
    /// accepts in tokens (such as `https://management.azure.com/`) and, when its certificates are
    /// not signed by a public root, the PEM bundle of the CAs to trust.
    ///
    /// # Errors
    /// When an endpoint is not HTTPS (tokens and secrets go there), or the CA bundle holds no
    /// certificate.
    pub fn new(
        resource_manager: Url,
        authority_host: Url,
        token_audience: String,
        ca_bundle: Option<Vec<u8>>,
    ) -> Result<Self, CloudError> {
        for (endpoint, url) in [
            ("resource manager endpoint", &resource_manager),
            ("authority host", &authority_host),
        ] {
            if url.scheme() != "https" {
                return Err(CloudError::NotHttps {
                    endpoint,
                    url: url.to_string(),
                });
            }
        }
        if let Some(bundle) = &ca_bundle {
            crate::http::parse_ca_bundle(bundle)?;
        }
        Ok(Self {
            resource_manager,
            authority_host,
            token_audience,
            ca_bundle,
        })
    }
}

/// The part of ARM's cloud-metadata document (api-version 2022-09-01) a custom cloud needs.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    resource_manager: String,
    authentication: MetadataAuthentication,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataAuthentication {
    login_endpoint: String,
    audiences: Vec<String>,
}

impl Cloud {
    /// An HTTP client for this cloud, trusting its CA bundle besides the public roots; each
    /// request must be answered in full within `timeout`.
    ///
    /// # Errors
    /// When the cloud's CA bundle holds no certificate.
    pub fn http_client(&self, timeout: Duration) -> Result<HttpClient, CloudError> {
        HttpClient::new(self.ca_bundle(), timeout)
    }

    /// The Resource Manager endpoint, such as `https://management.azure.com/`.
    #[must_use]
    pub fn resource_manager(&self) -> Url {
        match self {
            Self::Custom(custom) => custom.resource_manager.clone(),
            _ => known_url(self.fixed().0),
        }
    }

    /// The Microsoft Entra authority host, such as `https://login.microsoftonline.com/`.
    #[must_use]
    pub fn authority_host(&self) -> Url {
        match self {
            Self::Custom(custom) => custom.authority_host.clone(),
            _ => known_url(self.fixed().1),
        }
    }

    /// The audience of ARM tokens, such as `https://management.azure.com/`: the `resource` of
    /// managed identity requests.
    #[must_use]
    pub fn token_audience(&self) -> &str {
        match self {
            Self::Custom(custom) => &custom.token_audience,
            _ => self.fixed().2,
        }
    }

    /// The OAuth scope of ARM tokens: the audience with `/.default`.
    #[must_use]
    pub fn arm_scope(&self) -> String {
        format!("{}/.default", self.token_audience().trim_end_matches('/'))
    }

    /// The PEM bundle of extra CAs a custom cloud's endpoints are signed by.
    #[must_use]
    pub fn ca_bundle(&self) -> Option<&[u8]> {
        match self {
            Self::Custom(custom) => custom.ca_bundle.as_deref(),
            _ => None,
        }
    }

    /// Resource manager, authority host and audience of the built-in clouds.
    fn fixed(&self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::AzureChinaCloud => (
                "https://management.chinacloudapi.cn/",
                "https://login.chinacloudapi.cn/",
                "https://management.chinacloudapi.cn/",
            ),
            Self::AzureUSGovernmentCloud => (
                "https://management.usgovcloudapi.net/",
                "https://login.microsoftonline.us/",
                "https://management.usgovcloudapi.net/",
            ),
            Self::AzurePublicCloud | Self::Custom(_) => (
                "https://management.azure.com/",
                "https://login.microsoftonline.com/",
                "https://management.azure.com/",
            ),
        }
    }

    /// Reads a custom cloud from the cloud-metadata document its Resource Manager serves
    /// (`GET {resource_manager}/metadata/endpoints?api-version=2022-09-01`), trusting `ca_bundle`
    /// besides the public roots. The first audience listed becomes the token audience.
    ///
    /// # Errors
    /// When the document cannot be fetched or read, or names endpoints that are not HTTPS.
    pub async fn from_metadata(
        resource_manager: &Url,
        ca_bundle: Option<Vec<u8>>,
    ) -> Result<Self, CloudError> {
        let url = resource_manager
            .join("metadata/endpoints?api-version=2022-09-01")
            .map_err(|_| CloudError::InvalidUrl {
                endpoint: "resource manager endpoint",
                url: resource_manager.to_string(),
            })?;
        let failed = |reason: String| CloudError::Metadata {
            url: url.to_string(),
            reason,
        };
        let http = HttpClient::new(ca_bundle.as_deref(), Duration::from_secs(30))?;
        let request = Request::new(url.clone(), Method::Get);
        let response = azure_core::http::HttpClient::execute_request(&http, &request)
            .await
            .map_err(|err| failed(err.to_string()))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|err| failed(err.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!("it answered {status}")));
        }
        let metadata: Metadata =
            serde_json::from_slice(&body).map_err(|err| failed(format!("unexpected document: {err}")))?;
        let parse = |endpoint: &'static str, text: &str| {
            Url::parse(text).map_err(|_| CloudError::InvalidUrl {
                endpoint,
                url: text.to_owned(),
            })
        };
        let audience = metadata
            .authentication
            .audiences
            .first()
            .ok_or_else(|| failed("it lists no token audience".to_owned()))?
            .clone();
        Ok(Self::Custom(Box::new(CustomCloud::new(
            parse("resource manager endpoint", &metadata.resource_manager)?,
            parse("authority host", &metadata.authentication.login_endpoint)?,
            audience,
            ca_bundle,
        )?)))
    }
}

#[expect(
    clippy::expect_used,
    reason = "the built-in endpoints are constants that parse"
)]
fn known_url(text: &'static str) -> Url {
    Url::parse(text).expect("a built-in cloud endpoint")
}

impl FromStr for Cloud {
    type Err = CloudError;

    /// Parses CAPZ's cloud names (`AzureClusterIdentity` and `AZURE_ENVIRONMENT` use them).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "azurepubliccloud" => Ok(Self::AzurePublicCloud),
            "azurechinacloud" => Ok(Self::AzureChinaCloud),
            "azureusgovernmentcloud" => Ok(Self::AzureUSGovernmentCloud),
            _ => Err(CloudError::UnknownName(name.to_owned())),
        }
    }
}

impl fmt::Display for Cloud {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AzurePublicCloud => f.write_str("AzurePublicCloud"),
            Self::AzureChinaCloud => f.write_str("AzureChinaCloud"),
            Self::AzureUSGovernmentCloud => f.write_str("AzureUSGovernmentCloud"),
            Self::Custom(custom) => write!(f, "custom cloud at {}", custom.resource_manager),
        }
    }
}

#[cfg(test)]
mod tests {
    use azure_core::http::Url;

    use super::{Cloud, CloudError, CustomCloud};

    #[test]
    fn capz_names_parse() {
        assert_eq!(
            "AzurePublicCloud".parse::<Cloud>().unwrap(),
            Cloud::AzurePublicCloud
        );
        assert_eq!(
            "AzureChinaCloud".parse::<Cloud>().unwrap(),
            Cloud::AzureChinaCloud
        );
        let government: Cloud = "AzureUSGovernmentCloud".parse().unwrap();
        assert_eq!(
            government.authority_host().as_str(),
            "https://login.microsoftonline.us/"
        );
        assert_eq!(
            government.arm_scope(),
            "https://management.usgovcloudapi.net/.default"
        );
        let message = "AzureGermanCloud".parse::<Cloud>().unwrap_err().to_string();
        assert!(
            message.contains("AzureGermanCloud") && message.contains("AzurePublicCloud"),
            "{message}"
        );
    }

    #[test]
    fn public_cloud_endpoints() {
        let cloud = Cloud::AzurePublicCloud;
        assert_eq!(cloud.resource_manager().as_str(), "https://management.azure.com/");
        assert_eq!(
            cloud.authority_host().as_str(),
            "https://login.microsoftonline.com/"
        );
        assert_eq!(cloud.arm_scope(), "https://management.azure.com/.default");
        assert!(cloud.ca_bundle().is_none());
    }

    #[test]
    fn custom_clouds_need_https() {
        let https = Url::parse("https://arm.local/").unwrap();
        let http = Url::parse("http://login.local/").unwrap();
        let err = CustomCloud::new(https.clone(), http, "https://arm.local/".into(), None).unwrap_err();
        assert!(
            matches!(
                err,
                CloudError::NotHttps {
                    endpoint: "authority host",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("must use https"));
        let empty = CustomCloud::new(https.clone(), https, "a".into(), Some(b"nothing".to_vec()));
        assert!(matches!(empty, Err(CloudError::EmptyCaBundle)));
    }
}
