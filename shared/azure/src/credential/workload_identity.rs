//! Workload identity: a federated Kubernetes service-account token as the client assertion.

use std::path::PathBuf;
use std::sync::Arc;

use azure_core::error::ErrorKind;
use azure_core::http::ClientMethodOptions;

use super::error::{CredentialError, WORKLOAD_IDENTITY};

/// Why a federated token could not be had.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct FederatedTokenError {
    /// What went wrong, naming what to fix.
    pub message: String,
    /// Whether a later attempt may succeed without a configuration change.
    pub transient: bool,
}

/// Where a workload identity's federated token comes from. It is asked whenever Entra ID needs a
/// new assertion, which is only when the cached Entra token is due for renewal, so a source may
/// fetch a fresh token every time.
#[async_trait::async_trait]
pub trait FederatedTokenSource: Send + Sync + std::fmt::Debug {
    /// A current federated token.
    async fn federated_token(&self) -> Result<String, FederatedTokenError>;

    /// What the source is, for logs and cache keys (no token in it).
    fn describe(&self) -> String;
}

/// A federated token file kept fresh by someone else (a projected service-account token volume),
/// read at every exchange so a rotated token is always picked up.
#[derive(Debug)]
pub struct FederatedTokenFile(PathBuf);

impl FederatedTokenFile {
    /// The token in `path`.
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self(path.into())
    }
}

#[async_trait::async_trait]
impl FederatedTokenSource for FederatedTokenFile {
    async fn federated_token(&self) -> Result<String, FederatedTokenError> {
        let path = self.0.display();
        let unusable = |message: String| FederatedTokenError {
            message,
            transient: false,
        };
        let token = tokio::fs::read_to_string(&self.0)
            .await
            .map_err(|err| unusable(format!("cannot read the federated token file {path}: {err}")))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(unusable(format!("the federated token file {path} is empty")));
        }
        Ok(token.to_owned())
    }

    fn describe(&self) -> String {
        format!("file {}", self.0.display())
    }
}

/// A source as the assertion of azure_identity's client assertion credential.
#[derive(Debug)]
pub(super) struct Assertion(pub(super) Arc<dyn FederatedTokenSource>);

#[async_trait::async_trait]
impl azure_identity::ClientAssertion for Assertion {
    async fn secret(&self, _options: Option<ClientMethodOptions<'_>>) -> azure_core::Result<String> {
        self.0.federated_token().await.map_err(|err| {
            let error = if err.transient {
                CredentialError::Transient {
                    kind: WORKLOAD_IDENTITY,
                    message: err.message,
                }
            } else {
                CredentialError::configuration(WORKLOAD_IDENTITY, err.message)
            };
            azure_core::Error::new(ErrorKind::Credential, error)
        })
    }
}
