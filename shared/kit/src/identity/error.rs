//! Why a cluster's credentials cannot be had, with the condition reason to show and whether
//! retrying can help. Messages name objects and fields, never secret values.

use capz_azure::CredentialError;

use crate::conditions::Reason;
use crate::policy::{Category, Classify, credential_reason};
use crate::resource::ResourceError;

/// The condition reason of an identity the cluster's namespace may not use (CAPZ's).
pub const NAMESPACE_NOT_ALLOWED_BY_IDENTITY: &str = "NamespaceNotAllowedByIdentity";

/// Why the credentials of a cluster cannot be built or cannot sign in.
///
/// Terminal errors are wrong input: retrying changes nothing until an object, the controller's
/// settings or the Entra registration changes. Transient ones (an object not created yet, the
/// API server or Entra unreachable) are worth retrying with backoff.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// `spec.identityRef` does not name an AzureClusterIdentity.
    #[error("spec.identityRef {0}")]
    InvalidIdentityRef(String),
    /// The AzureClusterIdentity does not exist (yet).
    #[error("AzureClusterIdentity {namespace}/{name} not found")]
    IdentityNotFound {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The identity's `allowedNamespaces` does not admit the cluster's namespace.
    #[error(
        "AzureClusterIdentity {namespace}/{name} may not be used by clusters in namespace \
         {cluster_namespace}: its spec.allowedNamespaces does not include it"
    )]
    NamespaceNotAllowed {
        /// The identity's namespace.
        namespace: String,
        /// The identity's name.
        name: String,
        /// The cluster's namespace.
        cluster_namespace: String,
    },
    /// The identity's spec lacks what its type needs.
    #[error("AzureClusterIdentity {namespace}/{name}: {message}")]
    InvalidIdentity {
        /// The identity's namespace.
        namespace: String,
        /// The identity's name.
        name: String,
        /// What is missing or wrong, naming the field.
        message: String,
    },
    /// The identity's type is not one capz-rs can sign in with.
    #[error("AzureClusterIdentity {namespace}/{name}: identity type {type_} is not supported")]
    UnsupportedIdentityType {
        /// The identity's namespace.
        namespace: String,
        /// The identity's name.
        name: String,
        /// The type.
        type_: &'static str,
    },
    /// The Secret the identity names does not exist (yet).
    #[error("Secret {namespace}/{name}, named by the identity's spec.clientSecret, not found")]
    SecretNotFound {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The Secret lacks the key the identity's type reads.
    #[error("Secret {namespace}/{name} has no key {keys}")]
    SecretKeyMissing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key or keys looked for.
        keys: &'static str,
    },
    /// The certificate file of `spec.certPath` or of the environment cannot be read.
    #[error("cannot read the certificate file {path}")]
    CertificateFile {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `spec.azureEnvironment` names no cloud the controller can reach.
    #[error("spec.azureEnvironment: {0}")]
    AzureEnvironment(String),
    /// The controller's environment credentials, used without `spec.identityRef`, are incomplete.
    #[error("no spec.identityRef, and the controller's environment credentials are unusable: {0}")]
    EnvironmentCredentials(String),
    /// The credential was refused or could not sign in.
    #[error(transparent)]
    Credential(#[from] CredentialError),
    /// The API server did not answer a read.
    #[error("reading {what} failed")]
    Kubernetes {
        /// What was read.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Azure refused a cluster's credential during a call: Entra would not sign it in, or ARM
/// refused the token it holds (a disabled or deleted principal, a revoked secret). Waits for a
/// person, like every refused credential.
#[derive(Debug, thiserror::Error)]
#[error("Azure refused the credentials of {who}: {error}")]
pub struct CredentialRefused {
    /// Who signs in (see [`super::CredentialSource`]).
    pub who: String,
    /// The call that was refused.
    #[source]
    pub error: ResourceError,
}

impl Classify for CredentialRefused {
    fn category(&self) -> Category {
        Category::Terminal
    }

    fn reason(&self) -> Reason {
        Reason::new("CredentialRejected")
    }
}

impl IdentityError {
    /// The condition reason (CamelCase) to report the error under.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidIdentityRef(_) => "InvalidIdentityRef",
            Self::IdentityNotFound { .. } => "IdentityNotFound",
            Self::NamespaceNotAllowed { .. } => NAMESPACE_NOT_ALLOWED_BY_IDENTITY,
            Self::InvalidIdentity { .. } => "InvalidIdentity",
            Self::UnsupportedIdentityType { .. } => "UnsupportedIdentityType",
            Self::SecretNotFound { .. } => "IdentitySecretNotFound",
            Self::SecretKeyMissing { .. } => "InvalidIdentitySecret",
            Self::CertificateFile { .. } => "CertificateUnreadable",
            Self::AzureEnvironment(_) => "InvalidAzureEnvironment",
            Self::EnvironmentCredentials(_) => "InvalidEnvironmentCredentials",
            Self::Credential(error) => credential_reason(error),
            Self::Kubernetes { .. } => "KubernetesApiError",
        }
    }

    /// Whether retrying without a change is pointless.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        match self {
            // Objects applied together arrive in any order; the API server may be restarting.
            Self::IdentityNotFound { .. } | Self::SecretNotFound { .. } | Self::Kubernetes { .. } => false,
            Self::Credential(err) => err.is_terminal(),
            _ => true,
        }
    }
}

impl Classify for IdentityError {
    fn category(&self) -> Category {
        match self {
            Self::Credential(CredentialError::Transient { .. }) => Category::Transient,
            _ if self.is_terminal() => Category::Terminal,
            _ => Category::Transient,
        }
    }

    fn reason(&self) -> Reason {
        Reason::new(IdentityError::reason(self))
    }
}

#[cfg(test)]
mod tests {
    use capz_azure::CredentialError;

    use super::IdentityError;

    #[test]
    fn a_refused_credential_names_who_signs_in_never_a_secret_and_waits() {
        use capz_api::azureclusteridentity::IdentityType;

        use super::super::CredentialSource;
        use super::CredentialRefused;
        use crate::policy::{Category, Classify};
        use crate::resource::ResourceError;

        let source = CredentialSource::Identity {
            namespace: "capz".into(),
            name: "sp".into(),
            type_: IdentityType::ServicePrincipal,
            client_id: "1234".into(),
        };
        let id = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";
        let refused = CredentialRefused {
            who: source.to_string(),
            error: ResourceError::Arm {
                action: "read",
                id: id.parse().unwrap(),
                source: capz_azure::ArmError::Status {
                    status: 401,
                    error: capz_azure::ErrorBody {
                        code: "InvalidAuthenticationToken".into(),
                        message: "The access token is invalid.".into(),
                        target: None,
                        details: Vec::new(),
                    },
                    retry_after: None,
                },
            },
        };
        assert_eq!(
            refused.to_string(),
            format!(
                "Azure refused the credentials of AzureClusterIdentity capz/sp (client id 1234): read {id}: \
                 ARM answered 401 InvalidAuthenticationToken: The access token is invalid."
            )
        );
        assert_eq!(refused.category(), Category::Terminal);
        assert_eq!(Classify::reason(&refused).as_str(), "CredentialRejected");
        assert_eq!(
            CredentialSource::Environment.to_string(),
            "the controller's own credentials"
        );
    }

    #[test]
    fn reasons_and_retry_decisions() {
        let rejected = IdentityError::from(CredentialError::Rejected {
            kind: "client secret",
            message: "AADSTS7000215: Invalid client secret provided.".into(),
        });
        assert_eq!(rejected.reason(), "CredentialRejected");
        assert!(rejected.is_terminal());
        assert_eq!(
            rejected.to_string(),
            "the client secret credential was rejected: AADSTS7000215: Invalid client secret provided."
        );
        let unavailable = IdentityError::from(CredentialError::Transient {
            kind: "managed identity",
            message: "IMDS answered 503".into(),
        });
        assert_eq!(unavailable.reason(), "CredentialUnavailable");
        assert!(!unavailable.is_terminal());

        let denied = IdentityError::NamespaceNotAllowed {
            namespace: "identities".into(),
            name: "prod".into(),
            cluster_namespace: "dev".into(),
        };
        assert_eq!(denied.reason(), "NamespaceNotAllowedByIdentity");
        assert!(denied.is_terminal());
        let missing = IdentityError::SecretNotFound {
            namespace: "identities".into(),
            name: "sp".into(),
        };
        assert_eq!(missing.reason(), "IdentitySecretNotFound");
        assert!(
            !missing.is_terminal(),
            "the Secret may be applied after the identity"
        );
        let unsupported = IdentityError::UnsupportedIdentityType {
            namespace: "identities".into(),
            name: "uai".into(),
            type_: "UserAssignedIdentityCredential",
        };
        assert_eq!(unsupported.reason(), "UnsupportedIdentityType");
        assert!(unsupported.is_terminal());
    }
}
