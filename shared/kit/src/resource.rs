//! One Azure resource owned by a custom resource: the same reconcile and delete routine for every
//! kind, so that a controller only says what it wants.
//!
//! A controller describes each resource with an [`AzureResource`]: its id, how to tell it is ours,
//! and the body it wants given what exists. [`reconcile`] then resumes an operation in flight or
//! reads the resource, and writes only when the wanted body differs (tags included), so a steady
//! state costs one read and no write. A resource of ours that Azure left `Failed` is written
//! again even when its body is as wanted: that is Azure's remedy, and a `Failed` resource may not
//! work. [`delete`] removes the resource only when it is ours; a delete that ended `Failed` leaves
//! the resource there, so the next delete finds it and tries again.
//! Neither ever waits for a long-running operation: it is recorded in [`Operations`], and the
//! next reconcile polls it once. A write or delete that has finished is told to the controller's
//! run wrapper, which publishes it as an event on the object (`Created`, `Updated`, `Deleted`).

use std::time::Duration;

use capz_azure::models::{ArmModel, ProvisioningState};
use capz_azure::{
    ArmClient, ArmError, Category as ArmCategory, OperationMethod, Outcome, PollOutcome, ResourceId,
};

use crate::conditions::Reason;
use crate::observed::{Verb, changed};
use crate::operations::Operations;
use crate::policy::{Category, Classify};
use crate::tags;

/// How a controller knows that the resource at an id is its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// It carries the cluster's `owned` tag.
    Tagged {
        /// The cluster's name.
        cluster: String,
    },
    /// It takes no tags; it is ours because its parent is (checked by the caller) and its name
    /// is the one we derive.
    OwnedParent,
    /// It was brought by the user: read, never written or deleted.
    Shared,
}

/// An Azure resource as a controller wants it.
pub trait AzureResource: Sync {
    /// The ARM body, as sent and as answered; it gives the api-version of every call and the
    /// tags that tell whether an existing resource is ours.
    type Model: ArmModel + Send + Sync;

    /// The service its operations are recorded under; one controller owns each service.
    const SERVICE: &'static str;

    /// Whether a resource Azure left `Failed` is written again, as Azure's remedy is. A kind
    /// whose failure is itself the answer (a VM extension whose script failed: writing it again
    /// would run the script again on a node that did not join) sets it to false and reads the
    /// state from the resource.
    const REPAIR_FAILED: bool = true;

    /// Where it is.
    fn id(&self) -> &ResourceId;

    /// How to tell it is ours.
    fn ownership(&self) -> Ownership;

    /// The body to write given what exists (`None`: nothing yet), or `None` when what exists is
    /// already as wanted.
    fn desired(&self, existing: Option<&Self::Model>) -> Option<Self::Model>;
}

/// Where a resource stands after one reconcile step.
#[derive(Debug, PartialEq)]
pub enum Progress<T> {
    /// Done: the resource as Azure has it (nothing after a delete).
    Done(T),
    /// An operation runs; reconcile again after `retry_after` (Azure's hint) or a short wait.
    InProgress {
        /// Azure's hint for the next poll.
        retry_after: Option<Duration>,
    },
}

/// Why a resource could not be reconciled.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// A call to Azure failed.
    #[error("{action} {id}: {source}")]
    Arm {
        /// What the call was for.
        action: &'static str,
        /// The resource.
        id: ResourceId,
        /// ARM's error.
        source: ArmError,
    },
    /// A resource exists where ours should be, without our tag; it is left alone.
    #[error("{id} exists and is not owned by cluster {cluster}; give the resource another name or remove it")]
    NotOwned {
        /// The resource.
        id: ResourceId,
        /// The cluster whose tag it lacks.
        cluster: String,
    },
    /// A resource the spec brings does not exist.
    #[error("{id} does not exist; create it or correct the spec")]
    Missing {
        /// The resource.
        id: ResourceId,
    },
}

impl Classify for ResourceError {
    fn category(&self) -> Category {
        match self {
            Self::Arm { source, .. } => Classify::category(source),
            Self::NotOwned { .. } => Category::InvalidInput,
            // Users create brought resources outside the object; a slow retry notices them.
            Self::Missing { .. } => Category::Terminal,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Arm { source, .. } => Classify::retry_after(source),
            Self::NotOwned { .. } | Self::Missing { .. } => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Arm { source, .. } => Classify::reason(source),
            Self::NotOwned { .. } => Reason::NOT_OWNED,
            Self::Missing { .. } => Reason::NOT_FOUND,
        }
    }
}

fn failed(action: &'static str, id: &ResourceId) -> impl FnOnce(ArmError) -> ResourceError {
    let id = id.clone();
    move |source| ResourceError::Arm { action, id, source }
}

/// Brings the resource to what `resource` wants: resumes a recorded operation, or reads it and
/// writes when it differs. Never adopts a resource that is not ours.
///
/// # Errors
/// A failed call or operation, a resource that is not ours, a brought resource that is missing.
pub async fn reconcile<R: AzureResource>(
    client: &ArmClient,
    resource: &R,
    operations: &mut Operations,
) -> Result<Progress<R::Model>, ResourceError> {
    reconcile_finding(client, resource, operations, Foreign::Refuse).await
}

/// What a reconcile does with a resource found under our name without our tag.
#[derive(Clone, Copy)]
enum Foreign {
    /// Fails with [`ResourceError::NotOwned`].
    Refuse,
    /// Takes it as the user's, as it is.
    Use,
}

async fn reconcile_finding<R: AzureResource>(
    client: &ArmClient,
    resource: &R,
    operations: &mut Operations,
    foreign: Foreign,
) -> Result<Progress<R::Model>, ResourceError> {
    let id = resource.id();
    // A write in flight: poll it once instead of writing again. A token we cannot read is
    // dropped; the read below finds out where the resource stands.
    for method in [OperationMethod::Put, OperationMethod::Patch] {
        match resume::<R>(client, operations, id, method, "finish writing").await? {
            Some(Progress::Done(Some(model))) => return Ok(Progress::Done(model)),
            Some(Progress::InProgress { retry_after }) => return Ok(Progress::InProgress { retry_after }),
            Some(Progress::Done(None)) | None => {}
        }
    }
    let (existing, state) = match read::<R>(client, id).await? {
        Some(read) => (Some(read.model), Some((read.state, read.body))),
        None => (None, None),
    };
    let settled = state.as_ref().is_none_or(|(state, _)| state.settled());
    let existing = match (existing, resource.ownership()) {
        (None, Ownership::Shared) => return Err(ResourceError::Missing { id: id.clone() }),
        (Some(model), Ownership::Shared) => return Ok(Progress::Done(model)),
        (Some(model), Ownership::Tagged { cluster }) if !tags::is_owned(model.tags(), &cluster) => {
            return match foreign {
                Foreign::Refuse => Err(ResourceError::NotOwned {
                    id: id.clone(),
                    cluster,
                }),
                Foreign::Use => Ok(Progress::Done(model)),
            };
        }
        // An operation runs that this reconcile has no record of (its record was lost, or it
        // is another's): writing now would be refused or would preempt it, so wait for it.
        (Some(_), _) if !settled => return Ok(Progress::InProgress { retry_after: None }),
        (existing, _) => existing,
    };
    let outcome = match (resource.desired(existing.as_ref()), state) {
        (Some(body), _) => {
            client
                .put::<R::Model, R::Model>(id, &R::Model::API_VERSION, &body)
                .await
        }
        (None, Some((State::Failed, body))) if R::REPAIR_FAILED => {
            tracing::info!(%id, "writing again a resource Azure left Failed");
            client
                .put::<serde_json::Value, R::Model>(id, &R::Model::API_VERSION, &body)
                .await
        }
        (None, _) => {
            return match existing {
                Some(model) => Ok(Progress::Done(model)),
                None => Err(ResourceError::Missing { id: id.clone() }),
            };
        }
    }
    .map_err(failed("write", id))?;
    let verb = if existing.is_some() {
        Verb::Updated
    } else {
        Verb::Created
    };
    let progress = follow(outcome, operations, R::SERVICE, id, verb);
    // Finished without the resource: the next reconcile reads it.
    poll_now::<R, _>(client, operations, id, progress, OperationMethod::Put, |model| {
        model
    })
    .await
}

/// Like [`reconcile`], except that a resource found under the name without the cluster's tag is
/// the user's and is used as it is, never written (one read, as for ours). For resources a user
/// may bring by naming them in the spec (an API server IP, a private DNS zone or link).
///
/// # Errors
/// As [`reconcile`], but never [`ResourceError::NotOwned`].
pub async fn reconcile_or_use<R: AzureResource>(
    client: &ArmClient,
    resource: &R,
    operations: &mut Operations,
) -> Result<Progress<R::Model>, ResourceError> {
    reconcile_finding(client, resource, operations, Foreign::Use).await
}

/// Deletes the resource if it exists and is ours; a resource that is not ours is left as it is.
///
/// # Errors
/// A failed call or operation.
pub async fn delete<R: AzureResource>(
    client: &ArmClient,
    resource: &R,
    operations: &mut Operations,
) -> Result<Progress<()>, ResourceError> {
    let id = resource.id();
    let name = id.name().into_owned();
    if let Some(progress) =
        resume::<R>(client, operations, id, OperationMethod::Delete, "finish deleting").await?
    {
        return Ok(match progress {
            Progress::Done(_) => Progress::Done(()),
            Progress::InProgress { retry_after } => Progress::InProgress { retry_after },
        });
    }
    // A write still in flight is abandoned: the delete supersedes it.
    operations.forget(R::SERVICE, &name);
    let Some(Read {
        model: existing,
        body,
        ..
    }) = read::<R>(client, id).await?
    else {
        return Ok(Progress::Done(()));
    };
    let ours = match resource.ownership() {
        Ownership::Tagged { cluster } => tags::is_owned(existing.tags(), &cluster),
        Ownership::OwnedParent => true,
        Ownership::Shared => false,
    };
    if !ours {
        return Ok(Progress::Done(()));
    }
    if body
        .pointer("/properties/provisioningState")
        .and_then(serde_json::Value::as_str)
        == Some("Deleting")
    {
        // Azure is deleting it already: a delete whose operation was never recorded (the process
        // stopped between asking and recording). Asking again changes nothing; wait for it to go.
        return Ok(Progress::InProgress { retry_after: None });
    }
    let outcome = client
        .delete(id, &R::Model::API_VERSION)
        .await
        .map_err(failed("delete", id))?;
    let progress = follow(outcome, operations, R::SERVICE, id, Verb::Deleted);
    poll_now::<R, _>(client, operations, id, progress, OperationMethod::Delete, |_| {
        Some(())
    })
    .await
}

/// Polls the operation a write just recorded once more, at once. `finished` turns what the
/// operation ended with into the caller's result; `None` leaves it to the next reconcile.
async fn poll_now<R: AzureResource, T>(
    client: &ArmClient,
    operations: &mut Operations,
    id: &ResourceId,
    progress: Progress<T>,
    method: OperationMethod,
    finished: impl FnOnce(Option<R::Model>) -> Option<T>,
) -> Result<Progress<T>, ResourceError> {
    let Progress::InProgress { retry_after } = progress else {
        return Ok(progress);
    };
    let action = if method == OperationMethod::Delete {
        "finish deleting"
    } else {
        "finish writing"
    };
    Ok(match resume::<R>(client, operations, id, method, action).await? {
        Some(Progress::Done(model)) => {
            finished(model).map_or(Progress::InProgress { retry_after }, Progress::Done)
        }
        Some(Progress::InProgress { retry_after }) => Progress::InProgress { retry_after },
        None => Progress::InProgress { retry_after },
    })
}

/// Polls the recorded operation `method` on the resource once, if there is one we can read:
/// still running (recorded again), or ended (with the resource, when ARM answered it).
async fn resume<R: AzureResource>(
    client: &ArmClient,
    operations: &mut Operations,
    id: &ResourceId,
    method: OperationMethod,
    action: &'static str,
) -> Result<Option<Progress<Option<R::Model>>>, ResourceError> {
    let name = id.name().into_owned();
    let Some(Ok(token)) = operations.take(R::SERVICE, &name, method) else {
        return Ok(None);
    };
    let outcome = client
        .poll::<R::Model>(&token)
        .await
        .map_err(failed("poll", id))?;
    match outcome {
        PollOutcome::InProgress(progress) => {
            operations.record(R::SERVICE, &name, &progress.token);
            Ok(Some(Progress::InProgress {
                retry_after: progress.retry_after,
            }))
        }
        PollOutcome::Succeeded(model) => {
            operations.ended(R::SERVICE, &token);
            let verb = match (token.method, token.creates) {
                (OperationMethod::Delete, _) => Verb::Deleted,
                (_, true) => Verb::Created,
                (_, false) => Verb::Updated,
            };
            changed(verb, id);
            Ok(Some(Progress::Done(model)))
        }
        PollOutcome::Failed(error) => {
            operations.ended(R::SERVICE, &token);
            Err(failed(action, id)(error))
        }
    }
}

/// What a write's answer means for the reconcile: done (`verb` happened to the resource), or an
/// operation to record, marked with whether it creates the resource. The callers poll a recorded
/// operation once at once: Azure finishes many writes within moments, and CAPZ also polls before
/// it leaves an operation to a later reconcile.
fn follow<T>(
    outcome: Outcome<T>,
    operations: &mut Operations,
    service: &'static str,
    id: &ResourceId,
    verb: Verb,
) -> Progress<T> {
    match outcome {
        Outcome::Done(model) => {
            changed(verb, id);
            Progress::Done(model)
        }
        Outcome::InProgress(mut progress) => {
            progress.token.creates = verb == Verb::Created;
            operations.record(service, &id.name(), &progress.token);
            Progress::InProgress {
                retry_after: progress.retry_after,
            }
        }
    }
}

/// Where a resource's last operation left it, from ARM's `provisioningState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Succeeded, Canceled, or no state at all (a kind that reports none).
    Settled,
    /// Failed: the resource may not work until it is written again.
    Failed,
    /// Creating, Updating, Deleting or another sign of an operation still running.
    Busy,
}

impl State {
    fn of(body: &serde_json::Value) -> Self {
        match body
            .pointer("/properties/provisioningState")
            .and_then(|state| serde_json::from_value::<ProvisioningState>(state.clone()).ok())
        {
            None | Some(ProvisioningState::Succeeded | ProvisioningState::Canceled) => Self::Settled,
            Some(ProvisioningState::Failed) => Self::Failed,
            Some(_) => Self::Busy,
        }
    }

    fn settled(self) -> bool {
        self != Self::Busy
    }
}

/// A resource as Azure has it: typed, as answered, and its state.
struct Read<M> {
    model: M,
    body: serde_json::Value,
    state: State,
}

/// The resource as Azure has it, or `None` when ARM says it does not exist.
async fn read<R: AzureResource>(
    client: &ArmClient,
    id: &ResourceId,
) -> Result<Option<Read<R::Model>>, ResourceError> {
    let body = match client.get::<serde_json::Value>(id, &R::Model::API_VERSION).await {
        Ok(body) => body,
        Err(error) if error.category() == ArmCategory::NotFound => return Ok(None),
        Err(error) => return Err(failed("read", id)(error)),
    };
    let state = State::of(&body);
    let model = serde_json::from_value(body.clone())
        .map_err(|error| failed("read", id)(ArmError::UnexpectedAnswer(format!("{id}: {error}"))))?;
    Ok(Some(Read { model, body, state }))
}
