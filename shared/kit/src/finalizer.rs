//! A controller's finalizer: kube-runtime's `finalizer()` as the single top-level step of a
//! reconcile, with its errors folded into the controller's own error type.
//!
//! kube-runtime adds the finalizer before the first apply and removes it after a successful
//! cleanup, with JSON patches that test the list first, so a controller only ever touches its own
//! name among the finalizers of its peers.

use std::fmt::Debug;
use std::sync::Arc;

use kube::Resource;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::conditions::Reason;
use crate::policy::{Category, Classify};

/// The finalizer could not be added or removed.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError {
    /// The API server refused or failed the patch.
    #[error("cannot {action} the finalizer: {source}")]
    Patch {
        /// `add` or `remove`.
        action: &'static str,
        /// The API server's error.
        source: kube::Error,
    },
    /// The object has no name (never one read from the API server).
    #[error("the object has no name")]
    Unnamed,
}

impl Classify for FinalizerError {
    fn category(&self) -> Category {
        match self {
            Self::Patch { .. } => Category::Transient,
            Self::Unnamed => Category::InvalidInput,
        }
    }

    fn reason(&self) -> Reason {
        Reason::new("FinalizerUpdateFailed")
    }
}

/// Runs `reconcile` with `name` as `object`'s finalizer: [`Event::Apply`] while the object lives
/// (after the finalizer is in place), [`Event::Cleanup`] once it is being deleted (the finalizer
/// goes when cleanup succeeds).
///
/// # Errors
/// The reconcile's own error, or a [`FinalizerError`] converted into it.
pub async fn finalized<K, E, Fut>(
    api: &Api<K>,
    name: &str,
    object: Arc<K>,
    reconcile: impl FnOnce(Event<K>) -> Fut,
) -> Result<Action, E>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    E: std::error::Error + From<FinalizerError> + 'static,
    Fut: Future<Output = Result<Action, E>>,
{
    finalizer::finalizer(api, name, object, reconcile)
        .await
        .map_err(|error| match error {
            finalizer::Error::ApplyFailed(error) | finalizer::Error::CleanupFailed(error) => error,
            finalizer::Error::AddFinalizer(source) => FinalizerError::Patch {
                action: "add",
                source,
            }
            .into(),
            finalizer::Error::RemoveFinalizer(source) => FinalizerError::Patch {
                action: "remove",
                source,
            }
            .into(),
            finalizer::Error::UnnamedObject | finalizer::Error::InvalidFinalizer => {
                FinalizerError::Unnamed.into()
            }
        })
}
