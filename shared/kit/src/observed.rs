//! What one reconcile did, as the kit's own routines see it: whether it wrote its object's status
//! ([`crate::apply::apply_status`]) and which Azure resources it created, updated or deleted
//! ([`crate::resource`]). The run wrapper ([`crate::reconciler`]) collects both around each
//! reconcile, with a task-local value, so that no controller has to pass them along.
//!
//! Each change becomes a Normal event on the object. The wrapper publishes them when the reconcile
//! ends; a cleanup publishes its own before the finalizer goes ([`announce`]), as the object may
//! vanish with it and whoever waits for that should find the events already there.

use std::cell::RefCell;
use std::future::Future;

use capz_azure::ResourceId;
use k8s_openapi::api::core::v1::ObjectReference;

use crate::conditions::Reason;
use crate::report::Reporter;

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
    status_written: RefCell<Option<String>>,
    changes: RefCell<Vec<Change>>,
    /// Where the changes are published: none outside the wrapper.
    announcer: Option<(Reporter, ObjectReference)>,
}

tokio::task_local! {
    /// Set by the wrapper around each reconcile.
    static SCOPE: Scope;
}

/// Notes that the reconcile running now wrote the status of the object `uid`, which the API
/// server then stored as `resource_version` (called by the kit's status apply). Only a write to
/// the reconciled object itself counts: a reconcile may also write the status of others (a
/// pool's machines), whose versions say nothing of its own object. Outside a wrapped reconcile it
/// does nothing.
pub(crate) fn status_written(uid: Option<&str>, resource_version: Option<&str>) {
    let _ = SCOPE.try_with(|scope| {
        let reconciled = scope
            .announcer
            .as_ref()
            .and_then(|(_, regarding)| regarding.uid.as_deref());
        if reconciled.is_none_or(|reconciled| uid == Some(reconciled)) {
            *scope.status_written.borrow_mut() = Some(resource_version.unwrap_or_default().to_owned());
        }
    });
}

/// Notes that the reconcile running now changed an Azure resource (called by the kit's resource
/// routine when a write or delete has finished). Outside a wrapped reconcile it does nothing.
pub(crate) fn changed(verb: Verb, id: &ResourceId) {
    let _ = SCOPE.try_with(|scope| {
        scope.changes.borrow_mut().push(Change { verb, id: id.clone() });
    });
}

/// Publishes a Warning event on the object of the reconcile running now, at once (not when the
/// reconcile ends: the object may be gone by then). Outside a wrapped reconcile it does nothing.
pub(crate) async fn warn(reason: &Reason, action: &str, note: String) {
    let announcer = SCOPE.try_with(|scope| scope.announcer.clone()).ok().flatten();
    if let Some((reporter, regarding)) = announcer {
        reporter.warning(&regarding, reason, action, note).await;
    }
}

/// What one reconcile did, as [`observed`] tells it.
#[derive(Debug)]
pub struct Observed<T> {
    /// What the reconcile returned.
    pub output: T,
    /// The resource version the API server gave the object at the reconcile's last status
    /// write; `None` when it wrote no status.
    pub status_written: Option<String>,
    /// The Azure resources it changed, in order.
    pub changes: Vec<Change>,
}

/// Runs `reconcile` and tells what it did.
pub async fn observed<T>(reconcile: impl Future<Output = T>) -> Observed<T> {
    observed_in(Scope::default(), reconcile).await
}

/// Runs `reconcile` as [`observed`] does; the changes that [`announce`] publishes go to
/// `regarding`, through `reporter`, and [`Observed::changes`] holds those not yet published.
pub(crate) async fn announced<T>(
    reporter: Reporter,
    regarding: ObjectReference,
    reconcile: impl Future<Output = T>,
) -> Observed<T> {
    let scope = Scope {
        announcer: Some((reporter, regarding)),
        ..Scope::default()
    };
    observed_in(scope, reconcile).await
}

async fn observed_in<T>(scope: Scope, reconcile: impl Future<Output = T>) -> Observed<T> {
    SCOPE
        .scope(scope, async {
            let output = reconcile.await;
            SCOPE.with(|scope| Observed {
                output,
                status_written: scope.status_written.take(),
                changes: scope.changes.take(),
            })
        })
        .await
}

/// Publishes the changes the reconcile running now has made so far, one Normal event each.
/// Outside [`announced`] it does nothing.
pub(crate) async fn announce() {
    let Ok(Some((reporter, regarding, changes))) = SCOPE.try_with(|scope| {
        scope
            .announcer
            .clone()
            .map(|(reporter, regarding)| (reporter, regarding, scope.changes.take()))
    }) else {
        return;
    };
    publish(&reporter, &regarding, changes).await;
}

/// Publishes `changes` as Normal events on `regarding`.
pub(crate) async fn publish(reporter: &Reporter, regarding: &ObjectReference, changes: Vec<Change>) {
    for change in changes {
        let note = format!(
            "{} {} {}",
            change.verb.reason(),
            change.id.resource_type(),
            change.id
        );
        // The recorder aggregates events by object, reason and action: the action names the
        // resource, so that each resource gets an event of its own (and its repeats none).
        let action = event_action(change.verb.action(), &change.id);
        reporter
            .normal(regarding, &change.verb.reason(), &action, note)
            .await;
    }
}

/// An event's action for `verb` on the resource `id`: `Create Microsoft.Network/virtualNetworks/vnet`,
/// within the 128 characters Kubernetes allows.
fn event_action(verb: &str, id: &ResourceId) -> String {
    const LONGEST: usize = 128;
    let mut action = format!("{verb} {}/{}", id.resource_type(), id.name());
    if action.len() > LONGEST {
        let mut end = LONGEST;
        while !action.is_char_boundary(end) {
            end -= 1;
        }
        action.truncate(end);
    }
    action
}

#[cfg(test)]
mod tests {
    use super::{ObjectReference, Reporter, announced, event_action, status_written};

    /// A pool's reconcile writes its machines' status too: only its own write tells the version
    /// its cache must reach.
    #[tokio::test]
    async fn only_the_reconciled_objects_own_status_write_counts() {
        let client =
            kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let pool = ObjectReference {
            uid: Some("pool".to_owned()),
            ..ObjectReference::default()
        };
        let observed = announced(Reporter::new(client.clone(), "capz-test"), pool.clone(), async {
            status_written(Some("member-0"), Some("7"));
            status_written(Some("pool"), Some("5"));
            status_written(Some("member-1"), Some("9"));
        })
        .await;
        assert_eq!(observed.status_written.as_deref(), Some("5"));
        let others_only = announced(Reporter::new(client, "capz-test"), pool, async {
            status_written(Some("member-0"), Some("7"));
        })
        .await;
        assert_eq!(others_only.status_written, None);
    }

    #[test]
    fn an_event_action_names_its_resource_within_the_limit() {
        let id: capz_azure::ResourceId =
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/node-subnet"
                .parse()
                .unwrap();
        assert_eq!(
            event_action("Create", &id),
            "Create Microsoft.Network/virtualNetworks/subnets/node-subnet"
        );
        let long: capz_azure::ResourceId = format!(
            "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/{}",
            "v".repeat(120)
        )
        .parse()
        .unwrap();
        let action = event_action("Delete", &long);
        assert_eq!(action.len(), 128);
        assert!(
            action.starts_with("Delete Microsoft.Network/virtualNetworks/vvv"),
            "{action}"
        );
    }
}
