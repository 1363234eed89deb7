//! What one reconcile did, as the kit's own routines see it: whether it wrote its object's status
//! ([`crate::apply::apply_status`]) and which Azure resources it created, updated or deleted
//! ([`crate::resource`]). The run wrapper ([`crate::reconciler`]) collects both around each
//! reconcile, with a task-local value, so that no controller has to pass them along.

use std::cell::{Cell, RefCell};
use std::future::Future;

use capz_azure::ResourceId;

use crate::conditions::Reason;

/// What happened to Azure in one reconcile: a resource created, updated or deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What was done.
    pub verb: Verb,
    /// To which resource.
    pub id: ResourceId,
}

/// What was done to an Azure resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// It did not exist and now does.
    Created,
    /// It existed and was written.
    Updated,
    /// It was deleted.
    Deleted,
}

impl Verb {
    /// The event's reason.
    pub(crate) fn reason(self) -> Reason {
        match self {
            Self::Created => Reason::CREATED,
            Self::Updated => Reason::UPDATED,
            Self::Deleted => Reason::DELETED,
        }
    }

    /// The event's action.
    pub(crate) fn action(self) -> &'static str {
        match self {
            Self::Created => "Create",
            Self::Updated => "Update",
            Self::Deleted => "Delete",
        }
    }
}

/// What the wrapper learns from the kit while one reconcile runs.
#[derive(Default)]
struct Scope {
    status_written: Cell<bool>,
    changes: RefCell<Vec<Change>>,
}

tokio::task_local! {
    /// Set by the wrapper around each reconcile.
    static SCOPE: Scope;
}

/// Notes that the reconcile running now wrote its object's status (called by the kit's status
/// apply). Outside a wrapped reconcile it does nothing.
pub(crate) fn status_written() {
    let _ = SCOPE.try_with(|scope| scope.status_written.set(true));
}

/// Notes that the reconcile running now changed an Azure resource (called by the kit's resource
/// routine when a write or delete has finished). Outside a wrapped reconcile it does nothing.
pub(crate) fn changed(verb: Verb, id: &ResourceId) {
    let _ = SCOPE.try_with(|scope| {
        scope.changes.borrow_mut().push(Change { verb, id: id.clone() });
    });
}

/// Runs `reconcile` and tells what it did: its output, whether it wrote its object's status, and
/// the Azure resources it changed, in order.
pub async fn observed<T>(reconcile: impl Future<Output = T>) -> (T, bool, Vec<Change>) {
    SCOPE
        .scope(Scope::default(), async {
            let output = reconcile.await;
            SCOPE.with(|scope| (output, scope.status_written.get(), scope.changes.take()))
        })
        .await
}
