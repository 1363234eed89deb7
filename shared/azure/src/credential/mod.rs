//! Credentials for Microsoft Entra ID: how a controller gets the bearer tokens ARM wants.
//!
//! Four kinds, matching CAPZ's `AzureClusterIdentity` types:
//!
//! | Kind | Constructor | Token source |
//! |---|---|---|
//! | client secret | [`Credential::client_secret`] | azure_identity's `ClientSecretCredential` |
//! | client certificate | [`Credential::client_certificate`] | azure_identity's `ClientAssertionCredential`, with a JWT we sign (RS256) from a PEM or PKCS#12 certificate |
//! | workload identity | [`Credential::workload_identity`] | `ClientAssertionCredential` with a federated token from a [`FederatedTokenSource`] (a file, or the caller's own) at every exchange |
//! | managed identity | [`Credential::managed_identity`] | our IMDS client, with a configurable endpoint |
//!
//! Every credential sends its requests through the given [`HttpClient`] with no SDK retries, and
//! sits behind a token cache: a token is reused until five minutes before it expires, and
//! concurrent callers wait for a single refresh. Failures are [`CredentialError`]s that tell a
//! rejected credential (terminal: a wrong secret stays wrong) from a transient failure. A 429 from
//! the identity provider holds the credential's sign-ins back until its `Retry-After` has passed.
//! Sign-ins name the program (`capz-network`) in their `User-Agent`.

mod cache;
mod certificate;
mod error;
mod managed_identity;
mod workload_identity;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use azure_core::cloud::{CloudConfiguration, CustomConfiguration};
use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};
use azure_core::error::ErrorKind;
use azure_core::http::{ClientOptions, RetryOptions, Transport, Url, UserAgentOptions};
use azure_identity::{ClientAssertionCredential, ClientAssertionCredentialOptions};

pub use certificate::ClientCertificate;
pub use error::CredentialError;
pub(crate) use error::chain;
use error::{CLIENT_CERTIFICATE, CLIENT_SECRET, MANAGED_IDENTITY, WORKLOAD_IDENTITY};
pub use managed_identity::ManagedIdentityId;
pub use workload_identity::{FederatedTokenError, FederatedTokenFile, FederatedTokenSource};

use crate::cloud::Cloud;
use crate::http::HttpClient;

/// A token credential with a cache in front. Cloning shares the cache.
#[derive(Debug, Clone)]
pub struct Credential(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    kind: &'static str,
    principal: String,
    source: Arc<dyn TokenCredential>,
    cache: cache::TokenCache,
    /// Until when the identity provider asked (429 `Retry-After`) not to be asked again.
    throttled_until: Mutex<Option<Instant>>,
}

/// How long to hold sign-ins back after a 429 that names no wait, as for ARM.
const DEFAULT_THROTTLE_WAIT: Duration = Duration::from_mins(1);

impl Inner {
    fn throttled(&self) -> bool {
        self.throttled_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|until| Instant::now() < until)
    }

    fn throttle_for(&self, wait: Duration) {
        let until = Instant::now() + wait;
        let mut throttled_until = self
            .throttled_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *throttled_until = Some(throttled_until.map_or(until, |earlier| earlier.max(until)));
    }
}

impl Credential {
    /// A service principal signing in with a client secret.
    ///
    /// # Errors
    /// When the tenant id, client id or secret is empty or malformed.
    pub fn client_secret(
        cloud: &Cloud,
        http: &HttpClient,
        tenant_id: &str,
        client_id: &str,
        secret: &str,
    ) -> Result<Self, CredentialError> {
        let source = azure_identity::ClientSecretCredential::new(
            tenant_id,
            client_id.to_owned(),
            secret.to_owned().into(),
            Some(azure_identity::ClientSecretCredentialOptions {
                client_options: client_options(cloud, http),
            }),
        )
        .map_err(|err| CredentialError::configuration(CLIENT_SECRET, err.to_string()))?;
        Ok(Self::new(CLIENT_SECRET, client_id, source))
    }

    /// A service principal signing in with a certificate: each token request carries a client
    /// assertion JWT signed with the certificate's key.
    ///
    /// # Errors
    /// When the tenant id or client id is empty or malformed.
    pub fn client_certificate(
        cloud: &Cloud,
        http: &HttpClient,
        tenant_id: &str,
        client_id: &str,
        certificate: ClientCertificate,
    ) -> Result<Self, CredentialError> {
        let audience = token_endpoint(cloud, tenant_id)
            .map_err(|message| CredentialError::configuration(CLIENT_CERTIFICATE, message))?;
        let assertion = certificate::Assertion::new(certificate, client_id.to_owned(), audience.to_string());
        let source = assertion_credential(CLIENT_CERTIFICATE, cloud, http, tenant_id, client_id, assertion)?;
        Ok(Self::new(CLIENT_CERTIFICATE, client_id, source))
    }

    /// A workload identity: a federated token from `source` (a Kubernetes service-account token)
    /// is exchanged for an Entra token. The source is asked at every exchange, so a rotated token
    /// is always used.
    ///
    /// # Errors
    /// When the tenant id or client id is empty or malformed.
    pub fn workload_identity(
        cloud: &Cloud,
        http: &HttpClient,
        tenant_id: &str,
        client_id: &str,
        source: Arc<dyn FederatedTokenSource>,
    ) -> Result<Self, CredentialError> {
        let assertion = workload_identity::Assertion(source);
        let source = assertion_credential(WORKLOAD_IDENTITY, cloud, http, tenant_id, client_id, assertion)?;
        Ok(Self::new(WORKLOAD_IDENTITY, client_id, source))
    }

    /// A managed identity of the machine, through the Instance Metadata Service at `endpoint`
    /// ([`ManagedIdentityId::IMDS_ENDPOINT`] on Azure).
    #[must_use]
    pub fn managed_identity(http: &HttpClient, endpoint: Url, identity: ManagedIdentityId) -> Self {
        let principal = identity.to_string();
        let source = managed_identity::ManagedIdentity::new(http.clone(), endpoint, identity);
        Self::new(MANAGED_IDENTITY, &principal, Arc::new(source))
    }

    fn new(kind: &'static str, principal: &str, source: Arc<dyn TokenCredential>) -> Self {
        Self(Arc::new(Inner {
            kind,
            principal: principal.to_ascii_lowercase(),
            source,
            cache: cache::TokenCache::default(),
            throttled_until: Mutex::new(None),
        }))
    }

    /// Who the credential signs in as: the client id, or for a managed identity how it is picked
    /// (`system-assigned`, a client id or a resource id). It keys the throttle gate.
    #[must_use]
    pub fn principal(&self) -> &str {
        &self.0.principal
    }

    /// A token for `scopes`, from the cache when it is not about to expire.
    ///
    /// # Errors
    /// When the identity provider rejects the credential or cannot be reached.
    pub async fn token(&self, scopes: &[&str]) -> Result<AccessToken, CredentialError> {
        let inner = &self.0;
        inner
            .cache
            .get(scopes, || async {
                // Asking while the identity provider throttles would only draw more 429s, as
                // with ARM (see the throttle gate); every caller of the credential waits.
                if inner.throttled() {
                    return Err(CredentialError::Transient {
                        kind: inner.kind,
                        message: "the identity provider is throttling sign-ins; not asking until the wait \
                                  it asked for is over"
                            .to_owned(),
                    });
                }
                let token = inner.source.get_token(scopes, None).await.map_err(|err| {
                    if let Some(wait) = throttled_for(&err) {
                        inner.throttle_for(wait);
                    }
                    classify(inner.kind, &err)
                });
                let outcome = match &token {
                    Ok(_) => "success",
                    Err(CredentialError::Rejected { .. }) => "rejected",
                    Err(CredentialError::Transient { .. }) => "transient",
                    Err(CredentialError::Configuration { .. }) => "misconfigured",
                };
                crate::metrics::token_refresh(metric_label(inner.kind), outcome);
                token
            })
            .await
    }
}

#[async_trait::async_trait]
impl TokenCredential for Credential {
    async fn get_token(
        &self,
        scopes: &[&str],
        _options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        self.token(scopes)
            .await
            .map_err(|err| azure_core::Error::new(ErrorKind::Credential, err))
    }
}

/// A credential kind as a metric label.
fn metric_label(kind: &'static str) -> &'static str {
    match kind {
        CLIENT_SECRET => "client_secret",
        CLIENT_CERTIFICATE => "client_certificate",
        WORKLOAD_IDENTITY => "workload_identity",
        MANAGED_IDENTITY => "managed_identity",
        _ => "other",
    }
}

/// Client options for azure_identity's credentials: our transport, no retries, our authority.
fn client_options(cloud: &Cloud, http: &HttpClient) -> ClientOptions {
    let configuration = match cloud {
        Cloud::AzurePublicCloud => CloudConfiguration::AzurePublic,
        Cloud::AzureChinaCloud => CloudConfiguration::AzureChina,
        Cloud::AzureUSGovernmentCloud => CloudConfiguration::AzureGovernment,
        Cloud::Custom(_) => {
            let mut custom = CustomConfiguration::default();
            custom.authority_host = cloud.authority_host().to_string();
            CloudConfiguration::Custom(custom)
        }
    };
    ClientOptions {
        transport: Some(Transport::new(Arc::new(http.clone()))),
        retry: RetryOptions::none(),
        cloud: Some(Arc::new(configuration)),
        user_agent: UserAgentOptions {
            application_id: application_id(),
        },
        ..ClientOptions::default()
    }
}

/// The program's name (`capz-network`) as the application id of sign-ins' `User-Agent`, so that
/// the identity provider's logs tell apart the controllers signing in as one principal; none when
/// the SDK would refuse it (more than 24 characters, or not printable ASCII).
fn application_id() -> Option<String> {
    let program = std::env::args_os().next()?;
    let name = std::path::Path::new(&program).file_name()?.to_str()?;
    (!name.is_empty() && name.len() <= 24 && name.chars().all(|c| c.is_ascii_graphic()))
        .then(|| name.to_owned())
}

/// The v2.0 token endpoint of a tenant, as azure_identity builds it: the audience of client
/// assertions must be exactly the URL they are posted to.
fn token_endpoint(cloud: &Cloud, tenant_id: &str) -> Result<Url, String> {
    cloud
        .authority_host()
        .join(&format!("/{tenant_id}/oauth2/v2.0/token"))
        .map_err(|_| format!("'{tenant_id}' is not a valid tenant id"))
}

fn assertion_credential<A: azure_identity::ClientAssertion + 'static>(
    kind: &'static str,
    cloud: &Cloud,
    http: &HttpClient,
    tenant_id: &str,
    client_id: &str,
    assertion: A,
) -> Result<Arc<dyn TokenCredential>, CredentialError> {
    let credential = ClientAssertionCredential::new(
        tenant_id.to_owned(),
        client_id.to_owned(),
        assertion,
        Some(ClientAssertionCredentialOptions {
            client_options: client_options(cloud, http),
        }),
    )
    .map_err(|err| CredentialError::configuration(kind, err.to_string()))?;
    Ok(credential)
}

/// How long a token source's failure asks to wait: a 429's `Retry-After`, if it was a 429.
fn throttled_for(err: &azure_core::Error) -> Option<Duration> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(error) = current {
        if let Some(ErrorKind::HttpResponse {
            status, raw_response, ..
        }) = error
            .downcast_ref::<azure_core::Error>()
            .map(azure_core::Error::kind)
            && u16::from(*status) == 429
        {
            let asked = raw_response
                .as_ref()
                .and_then(|response| crate::arm::retry_after(response.headers()));
            return Some(asked.unwrap_or(DEFAULT_THROTTLE_WAIT));
        }
        current = error.source();
    }
    None
}

/// Turns a token source's failure into a [`CredentialError`]: one of ours passes through; an HTTP
/// answer from the identity provider is a rejection unless it is throttling or a server error;
/// anything else (connection, timeout, garbled answer) is transient.
fn classify(kind: &'static str, err: &azure_core::Error) -> CredentialError {
    let mut status = None;
    let mut message = None;
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(error) = current {
        if let Some(ours) = error.downcast_ref::<CredentialError>() {
            return ours.clone();
        }
        if let Some(azure) = error.downcast_ref::<azure_core::Error>() {
            match azure.kind() {
                ErrorKind::HttpResponse { status: found, .. } => {
                    status = Some(u16::from(*found));
                    message = Some(azure.to_string());
                }
                // azure_identity wraps every failure in a Credential error whose message adds only
                // a troubleshooting link; the cause below it is what to report.
                ErrorKind::Credential => {}
                _ if message.is_none() => message = Some(chain(azure)),
                _ => {}
            }
        }
        current = error.source();
    }
    let message = message.unwrap_or_else(|| chain(err));
    match status {
        Some(status) if status != 429 && status < 500 => CredentialError::Rejected { kind, message },
        _ => CredentialError::Transient { kind, message },
    }
}

#[cfg(test)]
mod tests {
    use azure_core::error::{Error, ErrorKind};
    use azure_core::http::StatusCode;

    use super::{CredentialError, classify};

    fn entra_answer(status: StatusCode) -> Error {
        let answer = Error::with_message(
            ErrorKind::HttpResponse {
                status,
                error_code: Some("7000215".into()),
                raw_response: None,
            },
            "AADSTS7000215: Invalid client secret provided.",
        );
        Error::with_error(
            ErrorKind::Credential,
            answer,
            "ClientSecretCredential authentication failed.",
        )
    }

    #[test]
    fn refusals_are_terminal_and_name_the_aadsts_code() {
        let err = classify("client secret", &entra_answer(StatusCode::Unauthorized));
        assert!(err.is_terminal());
        assert_eq!(
            err.to_string(),
            "the client secret credential was rejected: AADSTS7000215: Invalid client secret provided."
        );
    }

    #[test]
    fn throttling_server_errors_and_transport_failures_are_transient() {
        for status in [StatusCode::TooManyRequests, StatusCode::ServiceUnavailable] {
            assert!(!classify("client secret", &entra_answer(status)).is_terminal());
        }
        let io = Error::with_error(
            ErrorKind::Credential,
            Error::with_message(ErrorKind::Connection, "POST login: request failed"),
            "ClientSecretCredential authentication failed.",
        );
        let err = classify("client secret", &io);
        assert!(matches!(err, CredentialError::Transient { .. }), "{err}");
        assert!(err.to_string().contains("request failed"), "{err}");
    }

    #[test]
    fn our_own_errors_pass_through() {
        let ours = CredentialError::configuration("workload identity", "cannot read /token");
        let wrapped = Error::with_error(
            ErrorKind::Credential,
            Error::new(ErrorKind::Credential, ours),
            "WorkloadIdentityCredential authentication failed.",
        );
        let err = classify("workload identity", &wrapped);
        assert!(matches!(err, CredentialError::Configuration { .. }), "{err}");
    }

    /// A token source Entra throttles once, with `Retry-After: 1`, then serves.
    #[derive(Debug, Default)]
    struct ThrottledOnce(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl azure_core::credentials::TokenCredential for ThrottledOnce {
        async fn get_token(
            &self,
            _: &[&str],
            _: Option<azure_core::credentials::TokenRequestOptions<'_>>,
        ) -> azure_core::Result<azure_core::credentials::AccessToken> {
            if self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
                let expires =
                    azure_core::time::OffsetDateTime::now_utc() + azure_core::time::Duration::hours(1);
                return Ok(azure_core::credentials::AccessToken::new("token", expires));
            }
            let mut headers = azure_core::http::headers::Headers::new();
            headers.insert("retry-after", "1");
            let response =
                azure_core::http::RawResponse::from_bytes(StatusCode::TooManyRequests, headers, "{}");
            let answer = Error::new(
                ErrorKind::HttpResponse {
                    status: StatusCode::TooManyRequests,
                    error_code: None,
                    raw_response: Some(Box::new(response)),
                },
                "throttled",
            );
            Err(Error::with_error(ErrorKind::Credential, answer, "sign-in failed"))
        }
    }

    #[tokio::test]
    async fn a_throttled_sign_in_is_not_retried_before_its_retry_after() {
        let source = std::sync::Arc::new(ThrottledOnce::default());
        let credential = super::Credential::new("client secret", "client", source.clone());
        for _ in 0..3 {
            let err = credential.token(&["scope"]).await.unwrap_err();
            assert!(matches!(err, CredentialError::Transient { .. }), "{err}");
        }
        assert_eq!(source.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        credential.token(&["scope"]).await.unwrap();
        assert_eq!(source.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
