//! Why a credential could not produce a token, and the kinds of credential the messages name.

/// The kinds of credential, as messages and metrics name them.
pub(super) const CLIENT_SECRET: &str = "client secret";
pub(super) const CLIENT_CERTIFICATE: &str = "client certificate";
pub(super) const WORKLOAD_IDENTITY: &str = "workload identity";
pub(super) const MANAGED_IDENTITY: &str = "managed identity";

/// Why a credential could not produce a token. Messages never contain secrets.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CredentialError {
    /// The identity provider refused the credential: wrong secret, unknown client or tenant,
    /// unregistered certificate, untrusted federated token. Retrying does not help; the
    /// credential's configuration must change. The message carries Entra's `AADSTS` code.
    #[error("the {kind} credential was rejected: {message}")]
    Rejected {
        /// The kind of credential.
        kind: &'static str,
        /// What the identity provider said.
        message: String,
    },
    /// The identity provider could not be reached or failed; a later attempt may succeed.
    #[error("the {kind} credential could not get a token: {message}")]
    Transient {
        /// The kind of credential.
        kind: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The credential's own material is unusable: an unreadable token file, a certificate without
    /// its key, a malformed tenant id.
    #[error("the {kind} credential is misconfigured: {message}")]
    Configuration {
        /// The kind of credential.
        kind: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl CredentialError {
    /// Whether retrying without a configuration change is pointless.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        !matches!(self, Self::Transient { .. })
    }

    pub(super) fn configuration(kind: &'static str, message: impl Into<String>) -> Self {
        Self::Configuration {
            kind,
            message: message.into(),
        }
    }
}

/// An error with its causes, `: `-separated, each once.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(err);
    while let Some(error) = current {
        let text = error.to_string();
        if !parts.iter().any(|part| part.contains(&text)) {
            parts.push(text);
        }
        current = error.source();
    }
    parts.join(": ")
}
