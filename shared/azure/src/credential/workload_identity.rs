//! Workload identity: the federated token file as a client assertion.

use std::path::PathBuf;

use azure_core::error::ErrorKind;
use azure_core::http::ClientMethodOptions;

use super::{CredentialError, WORKLOAD_IDENTITY};

/// A federated token file, read whenever an assertion is needed. Assertions are only needed when
/// the cached Entra token is due for renewal, so reading every time costs little and always sees
/// the token the kubelet last rotated in.
#[derive(Debug)]
pub(super) struct TokenFile(PathBuf);

impl TokenFile {
    pub(super) fn new(path: PathBuf) -> Self {
        Self(path)
    }
}

#[async_trait::async_trait]
impl azure_identity::ClientAssertion for TokenFile {
    async fn secret(&self, _options: Option<ClientMethodOptions<'_>>) -> azure_core::Result<String> {
        let path = self.0.display();
        let unusable = |message: String| {
            azure_core::Error::new(
                ErrorKind::Credential,
                CredentialError::configuration(WORKLOAD_IDENTITY, message),
            )
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
}
