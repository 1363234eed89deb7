//! Managed identity through the Instance Metadata Service (IMDS):
//! `GET {endpoint}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=…` with the
//! header `Metadata: true`, plus `client_id` or `msi_res_id` for a user-assigned identity.

use std::fmt;

use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};
use azure_core::error::ErrorKind;
use azure_core::http::{Method, Request, Url};
use azure_core::time::{Duration, OffsetDateTime};
use serde::Deserialize;

use super::error::{CredentialError, MANAGED_IDENTITY, chain};
use crate::http::HttpClient;
use crate::id::ResourceId;

/// Which managed identity of the machine to sign in as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManagedIdentityId {
    /// The machine's system-assigned identity.
    SystemAssigned,
    /// A user-assigned identity, by its client id.
    ClientId(String),
    /// A user-assigned identity, by its ARM resource id.
    ResourceId(ResourceId),
}

impl ManagedIdentityId {
    /// Where IMDS answers on an Azure machine (plain HTTP on a link-local address, reachable only
    /// from the machine itself).
    pub const IMDS_ENDPOINT: &str = "http://169.254.169.254";
}

impl fmt::Display for ManagedIdentityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SystemAssigned => f.write_str("system-assigned"),
            Self::ClientId(client_id) => f.write_str(client_id),
            Self::ResourceId(id) => fmt::Display::fmt(id, f),
        }
    }
}

/// The IMDS client.
#[derive(Debug)]
pub(super) struct ManagedIdentity {
    http: HttpClient,
    endpoint: Url,
    identity: ManagedIdentityId,
}

/// IMDS's answer; it writes every number as a string.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: String,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: String,
}

impl ManagedIdentity {
    pub(super) fn new(http: HttpClient, endpoint: Url, identity: ManagedIdentityId) -> Self {
        Self {
            http,
            endpoint,
            identity,
        }
    }

    async fn fetch(&self, scopes: &[&str]) -> Result<AccessToken, CredentialError> {
        let transient = |message: String| CredentialError::Transient {
            kind: MANAGED_IDENTITY,
            message,
        };
        let [scope] = scopes else {
            return Err(CredentialError::configuration(
                MANAGED_IDENTITY,
                format!("IMDS issues tokens for one resource at a time, not for {scopes:?}"),
            ));
        };
        // IMDS speaks the v1 protocol: the resource, not the v2 scope.
        let resource = scope.strip_suffix("/.default").unwrap_or(scope);
        let mut url = self
            .endpoint
            .join("metadata/identity/oauth2/token")
            .map_err(|err| CredentialError::configuration(MANAGED_IDENTITY, err.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("api-version", "2018-02-01");
            query.append_pair("resource", resource);
            match &self.identity {
                ManagedIdentityId::SystemAssigned => {}
                ManagedIdentityId::ClientId(client_id) => {
                    query.append_pair("client_id", client_id);
                }
                ManagedIdentityId::ResourceId(id) => {
                    query.append_pair("msi_res_id", &id.to_string());
                }
            }
        }
        let mut request = Request::new(url, Method::Get);
        request.insert_header("metadata", "true");
        let answer = azure_core::http::HttpClient::execute_request(&self.http, &request)
            .await
            .map_err(|err| transient(chain(&err)))?;
        let status = u16::from(answer.status());
        let body = answer
            .into_body()
            .collect()
            .await
            .map_err(|err| transient(chain(&err)))?;
        if (200..300).contains(&status) {
            let token: TokenAnswer = serde_json::from_slice(&body)
                .map_err(|err| transient(format!("unexpected answer from IMDS: {err}")))?;
            let lifetime: i64 = token
                .expires_in
                .parse()
                .map_err(|_| transient(format!("IMDS gave the lifetime '{}'", token.expires_in)))?;
            return Ok(AccessToken::new(
                token.access_token,
                OffsetDateTime::now_utc() + Duration::seconds(lifetime),
            ));
        }
        let message = match serde_json::from_slice::<ErrorAnswer>(&body) {
            Ok(error) => format!(
                "IMDS answered {status} {}: {}",
                error.error, error.error_description
            ),
            Err(_) => format!("IMDS answered {status}"),
        };
        // 400 names a request IMDS will never grant (no such identity); 404 and 410 mean IMDS is
        // still starting or updating, and 429 and 5xx are worth another try too.
        if matches!(status, 400 | 401 | 403) {
            Err(CredentialError::Rejected {
                kind: MANAGED_IDENTITY,
                message,
            })
        } else {
            Err(transient(message))
        }
    }
}

#[async_trait::async_trait]
impl TokenCredential for ManagedIdentity {
    async fn get_token(
        &self,
        scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        self.fetch(scopes)
            .await
            .map_err(|err| azure_core::Error::new(ErrorKind::Credential, err))
    }
}
