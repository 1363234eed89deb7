//! Why a reconcile failed, and how the loop treats it.

use capz_kit::azure::ArmError;
use capz_kit::conditions::Reason;
use capz_kit::identity::IdentityError;
use capz_kit::policy::{Category, Classify};
use capz_kit::scope::ScopeError;

/// A failed reconcile of the identity controller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error(transparent)]
    Kubernetes(#[from] capz_kit::kube::Error),
    /// The cluster's identity cannot be used.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The AzureCluster does not name valid Azure places.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// Reading a user-assigned identity from Azure failed.
    #[error(transparent)]
    Arm(#[from] ArmError),
    /// The spec asks for something that cannot be written.
    #[error("{0}")]
    InvalidSpec(String),
}

impl Classify for Error {
    fn category(&self) -> Category {
        match self {
            Self::Kubernetes(_) => Category::Transient,
            Self::Identity(error) => error.category(),
            Self::Scope(error) => error.category(),
            Self::Arm(error) => Classify::category(error),
            Self::InvalidSpec(_) => Category::InvalidInput,
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Arm(error) => Classify::retry_after(error),
            _ => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Kubernetes(_) => Reason::KUBERNETES_API_ERROR,
            Self::Identity(error) => Classify::reason(error),
            Self::Scope(error) => error.reason(),
            Self::Arm(error) => Classify::reason(error),
            Self::InvalidSpec(_) => Reason::INVALID_CONFIGURATION,
        }
    }
}
