//! Everything the emulator remembers: resources, operations in flight and the request log.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ArmError;

/// A stored resource document.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The full resource type, in its canonical casing.
    pub(crate) type_name: &'static str,
    /// The body ARM answers with (embedded child resources included).
    pub(crate) body: Value,
    /// Whether it was seeded at start rather than created through the API.
    pub(crate) seeded: bool,
    /// The other resources this one refers to: they cannot be deleted while it does.
    pub(crate) refs: Vec<Reference>,
}

/// A reference from a stored document to another resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Reference {
    /// The lower-cased id referred to.
    pub(crate) target: String,
    /// The id of the innermost object of the document holding the reference (the document
    /// itself, or an embedded child such as a NIC's IP configuration).
    pub(crate) holder: String,
}

/// The references a document makes: every `{"id": ...}` naming a resource outside the document.
pub(crate) fn references(key: &str, body: &Value) -> Vec<Reference> {
    fn walk(value: &Value, own: &str, holder: &str, out: &mut Vec<Reference>) {
        match value {
            Value::Object(map) => {
                let id = map.get("id").and_then(Value::as_str);
                let lower = id.map(str::to_ascii_lowercase);
                let internal = lower.as_deref().is_some_and(|lower| {
                    lower == own || lower.starts_with(own) && lower[own.len()..].starts_with('/')
                });
                let holder = if internal { id.unwrap_or(holder) } else { holder };
                if let (Some(lower), false) = (lower, internal)
                    && lower.starts_with("/subscriptions/")
                {
                    out.push(Reference {
                        target: lower,
                        holder: holder.to_owned(),
                    });
                }
                for (name, item) in map {
                    if name != "id" {
                        walk(item, own, holder, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, own, holder, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    let holder = body.get("id").and_then(Value::as_str).unwrap_or(key);
    match body {
        // Tags are the client's own strings: a tag called `id` refers to nothing.
        Value::Object(map) => map
            .iter()
            .filter(|(name, _)| *name != "id" && *name != "tags")
            .for_each(|(_, item)| walk(item, key, holder, &mut out)),
        other => walk(other, key, holder, &mut out),
    }
    out.sort();
    out.dedup();
    out
}

/// Where a long-running operation's effect lands: a stored document, or one child embedded in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The key of the stored document.
    pub(crate) key: String,
    /// The array property and lower-cased name of an embedded child.
    pub(crate) child: Option<(String, String)>,
}

/// What a long-running operation does when it completes.
#[derive(Debug, Clone)]
pub(crate) enum Completion {
    /// Remove a resource group and everything whose id lies under it.
    DeleteResourceGroup { key: String },
    /// Finish provisioning a resource: `Succeeded`, or `Failed` with the error.
    Provision {
        target: Target,
        failure: Option<ArmError>,
    },
    /// Remove a resource and everything under it.
    Delete { target: Target },
}

/// How an operation's status document looks, which differs between resource providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusStyle {
    /// `{"status": "..."}` (Microsoft.Network and most providers).
    Plain,
    /// With `name`, `startTime` and `endTime` (Microsoft.Compute).
    Timed,
    /// Timed, and once a write succeeded the resource under `properties.output` (managed disks).
    TimedWithOutput,
}

/// Where an operation stands.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Running,
    Succeeded,
    Failed(ArmError),
}

/// A long-running operation.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) completion: Completion,
    pub(crate) outcome: Outcome,
    pub(crate) style: StatusStyle,
    pub(crate) started: SystemTime,
    pub(crate) ended: Option<SystemTime>,
}

impl Operation {
    pub(crate) fn new(completion: Completion, style: StatusStyle) -> Self {
        Self {
            completion,
            outcome: Outcome::Running,
            style,
            started: SystemTime::now(),
            ended: None,
        }
    }

    /// The operation status document (`Azure-AsyncOperation` polls).
    pub(crate) fn status_body(&self, id: &str) -> Value {
        let mut body = match &self.outcome {
            Outcome::Running => json!({ "status": "InProgress" }),
            Outcome::Succeeded => json!({ "status": "Succeeded" }),
            Outcome::Failed(error) => {
                json!({ "status": "Failed", "error": { "code": error.code, "message": error.message } })
            }
        };
        if self.style != StatusStyle::Plain {
            body["name"] = json!(id);
            body["startTime"] = json!(crate::time::rfc3339(self.started));
            if let Some(ended) = self.ended {
                body["endTime"] = json!(crate::time::rfc3339(ended));
            }
        }
        body
    }
}

/// One answered request, for the request log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedRequest {
    /// HTTP method.
    pub method: String,
    /// Request path, without the query.
    pub path: String,
    /// The resource type the request addressed (`-` when it addressed nothing known).
    pub resource_type: String,
    /// HTTP status of the answer.
    pub status: u16,
    /// Who made the call; absent when it was refused for want of a valid token.
    pub caller: Option<crate::Caller>,
}

/// How many requests the log keeps; older ones only remain in the counters.
const LOG_CAPACITY: usize = 1000;

/// The emulator's whole mutable state.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Resources by lower-cased id: ARM names are case-insensitive.
    pub(crate) resources: BTreeMap<String, Stored>,
    /// Who refers to what: target key -> (holder id, referring document key).
    referrers: BTreeMap<String, BTreeSet<(String, String)>>,
    pub(crate) operations: HashMap<String, Operation>,
    /// Operations still running, by when they are due.
    due: BTreeMap<(Instant, u64), String>,
    sequence: u64,
    pub(crate) log: VecDeque<LoggedRequest>,
    /// Request counts by (method, resource type, status).
    pub(crate) counters: BTreeMap<(String, String, u16), u64>,
}

impl State {
    /// Stores a document (replacing any under the key) and indexes its references.
    pub(crate) fn put_doc(&mut self, key: &str, mut stored: Stored) {
        self.unindex(key);
        stored.refs = references(key, &stored.body);
        for reference in &stored.refs {
            self.referrers
                .entry(reference.target.clone())
                .or_default()
                .insert((reference.holder.clone(), key.to_owned()));
        }
        self.resources.insert(key.to_owned(), stored);
    }

    /// Re-indexes a document after its body changed in place.
    pub(crate) fn reindex(&mut self, key: &str) {
        // The index still holds the references of the document as it was before the change;
        // drop them while the document is there to name them.
        self.unindex(key);
        if let Some(stored) = self.resources.remove(key) {
            self.put_doc(key, stored);
        }
    }

    fn unindex(&mut self, key: &str) {
        let Some(old) = self.resources.get(key) else {
            return;
        };
        for reference in &old.refs {
            if let Some(holders) = self.referrers.get_mut(&reference.target) {
                holders.remove(&(reference.holder.clone(), key.to_owned()));
                if holders.is_empty() {
                    self.referrers.remove(&reference.target);
                }
            }
        }
    }

    /// Removes one document.
    pub(crate) fn remove_doc(&mut self, key: &str) -> Option<Stored> {
        self.unindex(key);
        self.resources.remove(key)
    }

    /// The holders referring to `key` itself.
    pub(crate) fn referrers_of(&self, key: &str) -> impl Iterator<Item = &(String, String)> {
        self.referrers.get(key).into_iter().flatten()
    }

    /// The first reference to `key` or anything under it from a document outside `key`'s tree:
    /// (referred key, holder id).
    pub(crate) fn first_referrer_into(&self, key: &str) -> Option<(&str, &str)> {
        let prefix = format!("{key}/");
        let outside = |document: &str| document != key && !document.starts_with(&prefix);
        let exact = self.referrers.get_key_value(key).into_iter();
        let under = self
            .referrers
            .range(prefix.clone()..)
            .take_while(|(target, _)| target.starts_with(&prefix));
        exact.chain(under).find_map(|(target, holders)| {
            holders
                .iter()
                .find(|(_, document)| outside(document))
                .map(|(holder, _)| (target.as_str(), holder.as_str()))
        })
    }

    /// Starts tracking an operation due at `done_at`; returns its id.
    pub(crate) fn start_operation(&mut self, operation: Operation, done_at: Instant) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.sequence += 1;
        self.due.insert((done_at, self.sequence), id.clone());
        self.operations.insert(id.clone(), operation);
        id
    }

    /// The running operation whose completion matches, if any.
    pub(crate) fn running_operation(&self, matches: impl Fn(&Completion) -> bool) -> Option<&str> {
        self.operations
            .iter()
            .find(|(_, operation)| {
                matches!(operation.outcome, Outcome::Running) && matches(&operation.completion)
            })
            .map(|(id, _)| id.as_str())
    }

    /// Completes every operation whose time has come.
    pub(crate) fn advance(&mut self, now: Instant) {
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let id = entry.remove();
            let Some(operation) = self.operations.get_mut(&id) else {
                continue;
            };
            operation.ended = Some(SystemTime::now());
            let completion = operation.completion.clone();
            operation.outcome = match &completion {
                Completion::Provision {
                    failure: Some(error), ..
                } => Outcome::Failed(error.clone()),
                _ => Outcome::Succeeded,
            };
            self.complete(completion);
        }
    }

    fn complete(&mut self, completion: Completion) {
        match completion {
            Completion::DeleteResourceGroup { key } => self.remove_tree(&key),
            Completion::Delete {
                target: Target { key, child: None },
            } => self.remove_resource(&key),
            Completion::Delete {
                target:
                    Target {
                        key,
                        child: Some((property, name)),
                    },
            } => {
                self.remove_embedded(&key, &property, &name);
            }
            Completion::Provision { target, failure } => {
                let state = if failure.is_some() { "Failed" } else { "Succeeded" };
                if let Some(stored) = self.resources.get_mut(&target.key) {
                    match &target.child {
                        None => crate::resources::set_provisioning_state(&mut stored.body, state, true),
                        Some((property, name)) => {
                            if let Some(child) =
                                crate::resources::embedded::find_mut(&mut stored.body, property, name)
                            {
                                crate::resources::set_provisioning_state(child, state, false);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Removes a child embedded in a document.
    pub(crate) fn remove_embedded(&mut self, key: &str, property: &str, name: &str) {
        if let Some(stored) = self.resources.get_mut(key) {
            crate::resources::embedded::remove(&mut stored.body, property, name);
            if let Some(resource_type) = crate::resources::find(stored.type_name) {
                (resource_type.finish)(&mut stored.body);
            }
            self.reindex(key);
        }
    }

    /// Removes a resource and everything under it, then lets its type release or take along what
    /// it used.
    pub(crate) fn remove_resource(&mut self, key: &str) {
        let removed = self
            .resources
            .get(key)
            .map(|stored| (stored.type_name, stored.body.clone()));
        self.remove_tree(key);
        if let Some((type_name, body)) = removed
            && let Some(on_deleted) =
                crate::resources::find(type_name).and_then(|resource_type| resource_type.hooks.on_deleted)
        {
            on_deleted(self, &body);
        }
    }

    /// Removes a document and every document whose id lies under it.
    pub(crate) fn remove_tree(&mut self, key: &str) {
        self.remove_doc(key);
        let prefix = format!("{key}/");
        let doomed: Vec<String> = self
            .resources
            .range(prefix.clone()..)
            .take_while(|(id, _)| id.starts_with(&prefix))
            .map(|(id, _)| id.clone())
            .collect();
        for id in doomed {
            self.remove_doc(&id);
        }
    }

    pub(crate) fn record(&mut self, entry: LoggedRequest) {
        *self
            .counters
            .entry((entry.method.clone(), entry.resource_type.clone(), entry.status))
            .or_default() += 1;
        if self.log.len() == LOG_CAPACITY {
            self.log.pop_front();
        }
        self.log.push_back(entry);
    }
}
