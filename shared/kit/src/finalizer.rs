//! A controller's finalizer: kube-runtime's `finalizer()` as the single top-level step of a
//! reconcile, with its errors folded into the controller's own error type.
//!
//! The finalizer is added here, before kube-runtime sees the object: several controllers add
//! theirs to one new AzureCluster at the same moment (and Cluster API its owner reference), so an
//! add guarded by the object's `resourceVersion` would often meet a newer object. Only the first
//! entry of the list is added that way; the others are appended to the list as stored, which no
//! concurrent change refuses. A refused add is retried at once (after reading the object again
//! only when appending cannot work), instead of failing the reconcile into a backoff. The object
//! that comes back carries the finalizer, so the first apply runs in the same reconcile. kube-runtime removes
//! the finalizer after a successful cleanup, with a JSON patch that tests the list first, so a
//! controller only ever touches its own name among the finalizers of its peers. Before it does,
//! the events for what the cleanup deleted are published: the object may be gone right after.

use std::fmt::Debug;
use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event};
use kube::{Resource, ResourceExt as _};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

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
        Reason::FINALIZER_UPDATE_FAILED
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
    let object = with_finalizer(api, name, object).await?;
    finalizer::finalizer(api, name, object, async |event| {
        let cleanup = matches!(event, Event::Cleanup(_));
        // Boxed: a controller's reconcile is a large future, too large to move on the stack.
        let result = Box::pin(reconcile(event)).await;
        if cleanup && result.is_ok() {
            // The object may vanish with the finalizer: what the cleanup deleted is told first.
            crate::observed::announce().await;
        }
        result
    })
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

/// How often an add that met a newer object is tried again.
const ADD_ATTEMPTS: u32 = 4;

/// `object` with the finalizer `name`: as it is when it has it or is being deleted, else as the
/// API server answers the add.
///
/// A list that already has entries gets `name` appended by a JSON patch, which the API server
/// applies to the object as stored, whatever changed since it was read: no conflict however many
/// peers add theirs at once. Only the list's first entry is written with the object's
/// `resourceVersion`, so that two controllers creating the list cannot overwrite each other; the
/// one refused appends instead.
async fn with_finalizer<K>(api: &Api<K>, name: &str, object: Arc<K>) -> Result<Arc<K>, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let settled = |object: &K| {
        object.meta().deletion_timestamp.is_some() || object.finalizers().iter().any(|held| held == name)
    };
    if settled(&object) {
        return Ok(object);
    }
    let object_name = object.meta().name.clone().ok_or(FinalizerError::Unnamed)?;
    let failed = |source| FinalizerError::Patch {
        action: "add",
        source,
    };
    let mut current = object;
    for attempt in 1..=ADD_ATTEMPTS {
        let added = if current.finalizers().is_empty() {
            match api
                .patch(
                    &object_name,
                    &PatchParams::default(),
                    &Patch::Merge(first_of(&*current, name)),
                )
                .await
            {
                // Another controller created the list meanwhile (or the object changed otherwise).
                Err(kube::Error::Api(response)) if response.code == 409 => {
                    api.patch(&object_name, &PatchParams::default(), &append(&*current, name))
                        .await
                }
                added => added,
            }
        } else {
            api.patch(&object_name, &PatchParams::default(), &append(&*current, name))
                .await
        };
        match added {
            Ok(updated) => return Ok(Arc::new(updated)),
            // The list is not as read (emptied, or never created), or the object was replaced.
            Err(kube::Error::Api(response))
                if matches!(response.code, 409 | 422 | 500) && attempt < ADD_ATTEMPTS =>
            {
                match api.get_opt(&object_name).await.map_err(failed)? {
                    Some(fresh) if settled(&fresh) => return Ok(Arc::new(fresh)),
                    Some(fresh) => current = Arc::new(fresh),
                    // Gone: nothing to guard; kube-runtime sees the object as it was.
                    None => return Ok(current),
                }
            }
            Err(source) => return Err(failed(source)),
        }
    }
    Ok(current)
}

/// The merge patch making `name` the first finalizer of `object`, refused (409) when the object
/// changed since it was read.
fn first_of(object: &impl Resource, name: &str) -> serde_json::Value {
    json!({"metadata": {
        "finalizers": [name],
        "resourceVersion": object.resource_version(),
    }})
}

/// The JSON patch appending `name` to the finalizers of `object` as stored, refused when the
/// object has no finalizer list or is another object of the same name.
fn append(object: &impl Resource, name: &str) -> Patch<()> {
    use json_patch::jsonptr::PointerBuf;
    use json_patch::{AddOperation, PatchOperation, TestOperation};
    Patch::Json(json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: PointerBuf::from_tokens(["metadata", "uid"]),
            value: json!(object.meta().uid),
        }),
        PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["metadata", "finalizers", "-"]),
            value: json!(name),
        }),
    ]))
}
