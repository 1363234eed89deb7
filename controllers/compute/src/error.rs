//! Why a reconcile of an AzureMachine stopped, and what the loop does about it.

use std::time::Duration;

use capz_kit::conditions::Reason;
use capz_kit::finalizer::FinalizerError;
use capz_kit::identity::IdentityError;
use capz_kit::policy::{Category, Classify};
use capz_kit::resource::ResourceError;
use capz_kit::scope::ScopeError;
use capz_resources::virtual_machine::MachineSpecError;

/// A reconcile that could not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server failed a read or write.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] capz_kit::kube::Error),
    /// The finalizer could not be added or removed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
    /// The AzureCluster does not give valid Azure ids.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// The cluster's credentials cannot be used.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The AzureMachine's spec cannot be turned into a machine.
    #[error(transparent)]
    Spec(#[from] MachineSpecError),
    /// An Azure resource could not be reconciled or deleted.
    #[error(transparent)]
    Resource(#[from] ResourceError),
    /// The objects a deletion needs are gone.
    #[error("{0}")]
    Orphaned(String),
    /// A deletion runs; look again after the wait. Not a failure.
    #[error("deletion in progress")]
    Pending(Duration),
    /// The Machine's bootstrap data cannot be read.
    #[error("{0}")]
    Bootstrap(String),
}

impl Classify for Error {
    fn category(&self) -> Category {
        match self {
            // The Secret is not watched: look again after a backoff.
            Self::Kube(_) | Self::Bootstrap(_) => Category::Transient,
            Self::Finalizer(error) => Classify::category(error),
            Self::Scope(error) => Classify::category(error),
            Self::Identity(error) => Classify::category(error),
            Self::Spec(error) => Classify::category(error),
            Self::Resource(error) => Classify::category(error),
            Self::Orphaned(_) => Category::Terminal,
            Self::Pending(_) => Category::Throttled,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Resource(error) => error.retry_after(),
            Self::Pending(wait) => Some(*wait),
            _ => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Kube(_) => Reason::FAILED,
            Self::Finalizer(error) => Classify::reason(error),
            Self::Scope(error) => Classify::reason(error),
            Self::Identity(error) => Classify::reason(error),
            Self::Spec(error) => Classify::reason(error),
            Self::Resource(error) => Classify::reason(error),
            Self::Orphaned(_) => Reason::WAITING_FOR_DEPENDENCY,
            Self::Bootstrap(_) => Reason::WAITING_FOR_BOOTSTRAP_DATA,
            Self::Pending(_) => Reason::DELETING,
        }
    }

    fn pending(&self) -> Option<Duration> {
        match self {
            Self::Pending(wait) => Some(*wait),
            _ => None,
        }
    }
}
