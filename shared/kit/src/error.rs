//! Why a reconcile stopped: one error type for every controller, classified for the run wrapper.
//!
//! Each controller's own failures (a spec that cannot be built, a missing bootstrap Secret) are
//! types of its own implementing [`Classify`]; they travel here as a [`Failure`], with the
//! condition of the step that met them already written.

use std::time::Duration;

use crate::conditions::Reason;
use crate::finalizer::FinalizerError;
use crate::identity::IdentityError;
use crate::policy::{Category, Classify};
use crate::resource::ResourceError;
use crate::scope::ScopeError;

/// A failure of a step, with what the loop needs to act on it.
pub type Failure = Box<dyn Classify + Send + Sync>;

impl<E: Classify + Send + Sync + 'static> From<E> for Failure {
    fn from(error: E) -> Self {
        Box::new(error)
    }
}

/// A reconcile that could not finish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server failed a read or a write.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The finalizer could not be added or removed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
    /// A step failed: an Azure resource, the credentials, the spec.
    #[error("{0}")]
    Failed(Failure),
    /// Not a failure: a delete runs, or waits for a peer; look again after the wait. Only an
    /// error keeps kube-runtime from removing the finalizer, so cleanup reports this one.
    #[error("deleting is not finished")]
    Pending(Duration),
}

impl Error {
    /// A step's failure.
    pub fn failed(error: impl Into<Failure>) -> Self {
        Self::Failed(error.into())
    }
}

macro_rules! failures {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Self::Failed(Box::new(error))
            }
        }
    )*};
}

failures!(ResourceError, IdentityError, ScopeError, capz_azure::ArmError);

impl Classify for Error {
    fn category(&self) -> Category {
        match self {
            Self::Kube(_) => Category::Transient,
            Self::Finalizer(error) => error.category(),
            Self::Failed(failure) => failure.category(),
            // A wait of a known length, as throttling is.
            Self::Pending(_) => Category::Throttled,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Failed(failure) => failure.retry_after(),
            Self::Pending(wait) => Some(*wait),
            Self::Kube(_) | Self::Finalizer(_) => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Kube(_) => Reason::KUBERNETES_API_ERROR,
            Self::Finalizer(error) => error.reason(),
            Self::Failed(failure) => failure.reason(),
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

/// The objects a deletion needs are gone (a machine's Cluster or AzureCluster): its Azure
/// resources cannot be found. It waits for a person, without a retry storm.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Orphaned(pub String);

impl crate::policy::Classify for Orphaned {
    fn category(&self) -> crate::policy::Category {
        crate::policy::Category::Terminal
    }

    fn reason(&self) -> crate::conditions::Reason {
        crate::conditions::Reason::WAITING_FOR_DEPENDENCY
    }
}
