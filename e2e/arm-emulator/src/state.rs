//! Everything the emulator remembers: resources, operations in flight and the request log.
//!
//! Memory matters as much as speed here (scale tests store tens of thousands of resources), so
//! documents are kept as compact JSON text and parsed when read, and the reverse index of
//! references shares its strings with the documents' keys.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ArmError;
use crate::path::ArmPath;

/// Documents whose compact JSON is at least this long stay parsed. There are few of them (a
/// virtual network with many subnets, a load balancer with many rules), and parsing one for every
/// read or write of one of its embedded children would cost more than the memory it saves.
const PARSED_FROM: usize = 8 * 1024;

/// A document's body: compact JSON text (a fraction of the size of the parsed tree), or, for
/// large documents, the parsed tree itself.
#[derive(Debug, Clone)]
enum Body {
    Text(Box<str>),
    Parsed(Box<Value>),
}

impl Body {
    fn new(type_name: &str, value: Value) -> Self {
        if crate::resources::kept_parsed(type_name) {
            return Self::Parsed(Box::new(value));
        }
        let text = value.to_string();
        if text.len() >= PARSED_FROM {
            Self::Parsed(Box::new(value))
        } else {
            Self::Text(text.into_boxed_str())
        }
    }

    fn get(&self) -> Cow<'_, Value> {
        match self {
            Self::Text(text) => Cow::Owned(parse(text)),
            Self::Parsed(value) => Cow::Borrowed(value),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Self::Text(text) => parse(&text),
            Self::Parsed(value) => *value,
        }
    }
}

fn parse(text: &str) -> Value {
    // The text is what `Body::new` wrote, so it parses.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A stored resource document.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The full resource type, in its canonical casing.
    pub(crate) type_name: &'static str,
    /// The body ARM answers with (embedded child resources included).
    body: Body,
    /// Whether it was seeded at start rather than created through the API.
    pub(crate) seeded: bool,
}

impl Stored {
    /// The body ARM answers with (embedded child resources included).
    pub(crate) fn body(&self) -> Cow<'_, Value> {
        self.body.get()
    }

    /// The body, when its text names `needle` (a JSON key, quoted) or it is kept parsed; a
    /// cheap filter for scans that only care about documents with a given property.
    pub(crate) fn body_mentioning(&self, needle: &str) -> Option<Cow<'_, Value>> {
        match &self.body {
            Body::Text(text) if !text.contains(needle) => None,
            body => Some(body.get()),
        }
    }

    /// Changes the body in a way that leaves its references alone (provisioning states, etags,
    /// tags); [`State::change_doc`] re-indexes the references after other changes.
    pub(crate) fn update<R>(&mut self, change: impl FnOnce(&mut Value) -> R) -> R {
        match &mut self.body {
            // A large document stays parsed until it is replaced.
            Body::Parsed(value) => change(value),
            Body::Text(text) => {
                let mut value = parse(text);
                let result = change(&mut value);
                self.body = Body::new(self.type_name, value);
                result
            }
        }
    }
}

/// A reference from a stored document to another resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Reference {
    /// The lower-cased id referred to.
    pub(crate) target: String,
    /// The id of the innermost object of the document holding the reference (the document
    /// itself, or an embedded child such as a NIC's IP configuration).
    pub(crate) holder: String,
    /// The private IP address of the holder (`properties.privateIPAddress`), if it has one: a
    /// subnet's allocated addresses are read from the references to it.
    pub(crate) address: Option<IpAddr>,
}

/// The references a document makes: every `{"id": ...}` naming a resource outside the document.
pub(crate) fn references(key: &str, body: &Value) -> Vec<Reference> {
    /// The object holding references found under it: its id and private address.
    #[derive(Clone, Copy)]
    struct Holder<'a> {
        id: &'a str,
        address: Option<IpAddr>,
    }
    fn walk<'a>(value: &'a Value, own: &str, holder: Holder<'a>, out: &mut Vec<Reference>) {
        match value {
            Value::Object(map) => {
                let id = map.get("id").and_then(Value::as_str);
                let lower = id.map(str::to_ascii_lowercase);
                let internal = lower.as_deref().is_some_and(|lower| {
                    lower == own || lower.starts_with(own) && lower[own.len()..].starts_with('/')
                });
                let holder = match id {
                    Some(id) if internal => Holder {
                        id,
                        address: map
                            .get("properties")
                            .and_then(|properties| properties.get("privateIPAddress"))
                            .and_then(Value::as_str)
                            .and_then(|address| address.parse().ok()),
                    },
                    _ => holder,
                };
                if let (Some(lower), false) = (lower, internal)
                    && lower.starts_with("/subscriptions/")
                {
                    out.push(Reference {
                        target: lower,
                        holder: holder.id.to_owned(),
                        address: holder.address,
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
    let holder = Holder {
        id: body.get("id").and_then(Value::as_str).unwrap_or(key),
        address: None,
    };
    match body {
        // Tags are the client's own strings: a tag called `id` refers to nothing.
        Value::Object(map) => map
            .iter()
            .filter(|(name, _)| *name != "id" && *name != "tags")
            .for_each(|(_, item)| walk(item, key, holder, &mut out)),
        other => walk(other, key, holder, &mut out),
    }
    out.sort();
    out.dedup_by(|a, b| a.target == b.target && a.holder == b.holder);
    out
}

/// One entry of the reverse index: `document` refers to `target` from the object `holder`.
/// Ordered by target first, so the references to one resource (or to anything under it) are
/// neighbours.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Referral {
    target: Box<str>,
    holder: Arc<str>,
    document: Arc<str>,
}

/// What the reverse index keeps about a holder, so reads need not parse ids or documents.
#[derive(Debug, Clone, Copy)]
struct HolderFacts {
    /// The resource type of the holder, when the emulator serves it.
    holder_type: Option<&'static str>,
    /// Whether the reference leaves its target free to be deleted.
    weak: bool,
    address: Option<IpAddr>,
}

/// A document referring to a resource.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Referrer<'a> {
    /// The id of the innermost object holding the reference, as written.
    pub(crate) holder: &'a str,
    /// The key of the document holding it.
    pub(crate) document: &'a str,
    /// The resource type of the holder, when the emulator serves it.
    pub(crate) holder_type: Option<&'static str>,
    /// The holder's private IP address, if it has one.
    pub(crate) address: Option<IpAddr>,
}

/// Where a long-running operation's effect lands: a stored document, or one child embedded in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The key of the stored document.
    pub(crate) key: Arc<str>,
    /// The array property and lower-cased name of an embedded child.
    pub(crate) child: Option<(&'static str, Box<str>)>,
}

/// How an operation ends when it does not succeed.
#[derive(Debug, Clone)]
pub(crate) enum Unsuccessful {
    Failed(ArmError),
    Canceled(ArmError),
}

/// What a long-running operation does when it completes.
#[derive(Debug, Clone)]
pub(crate) enum Completion {
    /// Remove a resource group and everything whose id lies under it (unless something outside
    /// the group still refers into it).
    DeleteResourceGroup { key: Arc<str> },
    /// Finish provisioning a resource: `Succeeded`, or `Failed` / `Canceled` with the error
    /// (boxed: those are rare, and every finished operation is kept).
    Provision {
        target: Target,
        failure: Option<Box<Unsuccessful>>,
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
    /// Plain, but a running operation is answered 202 with its status and result URLs, the
    /// path segments named here (private DNS).
    Accepting {
        status: &'static str,
        result: &'static str,
    },
}

/// Where an operation stands.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Running,
    Succeeded,
    Failed(Box<ArmError>),
    Canceled(Box<ArmError>),
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
            Outcome::Canceled(error) => {
                json!({ "status": "Canceled", "error": { "code": error.code, "message": error.message } })
            }
        };
        if matches!(self.style, StatusStyle::Timed | StatusStyle::TimedWithOutput) {
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
    /// The client's `User-Agent`, which tells apart processes signing in as one principal.
    pub user_agent: Option<String>,
    /// The `Retry-After` of the answer, in seconds.
    pub retry_after: Option<u64>,
    /// The request budgets (token buckets) it was counted against: its principal's
    /// `<object id>/reads`, `/writes` or `/deletes`, and for a virtual machine write
    /// Microsoft.Compute's `Microsoft.Compute/<operation><scope>/<subscription or machine id>`
    /// (`PutVMSubscriptionMaximum`, `PutVMResource`, ...). Empty for sign-ins, refused tokens and
    /// injected faults.
    pub budgets: Vec<String>,
    /// Of `budgets`, those that were empty: why the request was answered 429. A client that
    /// sends another request drawing on one of them before the `Retry-After` has passed is
    /// coming back early.
    pub throttled_by: Vec<String>,
    /// When the request arrived, by the real clock (`Emulator::advance_clock` does not move it).
    #[serde(serialize_with = "serialize_time")]
    pub received: SystemTime,
    /// When it was answered, by the real clock.
    #[serde(serialize_with = "serialize_time")]
    pub answered: SystemTime,
}

fn serialize_time<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&crate::time::rfc3339(*time))
}

/// The emulator's whole mutable state.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Resources by lower-cased id: ARM names are case-insensitive.
    pub(crate) resources: BTreeMap<Arc<str>, Stored>,
    /// Who refers to what, by target: every reference every document makes.
    referrers: BTreeMap<Referral, HolderFacts>,
    operations: HashMap<uuid::Uuid, Operation>,
    /// Operations still running, by when they are due.
    due: BTreeMap<(Instant, u64), uuid::Uuid>,
    sequence: u64,
    pub(crate) log: VecDeque<LoggedRequest>,
    /// Request counts by (method, resource type, status).
    pub(crate) counters: BTreeMap<(String, String, u16), u64>,
    /// The tags of subscriptions, by lower-cased subscription id (groups and resources keep
    /// theirs in their documents).
    pub(crate) subscription_tags: BTreeMap<String, serde_json::Map<String, Value>>,
}

/// The operation an id names: ids are the hyphenated lower-case UUIDs the emulator hands out,
/// kept as numbers.
fn operation_key(id: &str) -> Option<uuid::Uuid> {
    let key = uuid::Uuid::try_parse(id).ok()?;
    (key.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()) == id).then_some(key)
}

impl State {
    /// A stored document's body.
    pub(crate) fn body(&self, key: &str) -> Option<Cow<'_, Value>> {
        self.resources.get(key).map(Stored::body)
    }

    /// The documents whose keys start with `prefix`, in key order.
    pub(crate) fn under<'a>(&'a self, prefix: &str) -> impl Iterator<Item = (&'a str, &'a Stored)> {
        self.resources
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |(key, _)| key.starts_with(prefix))
            .map(|(key, stored)| (&**key, stored))
    }

    /// The key as stored, shared rather than copied.
    fn shared_key(&self, key: &str) -> Arc<str> {
        self.resources
            .get_key_value(key)
            .map_or_else(|| Arc::from(key), |(shared, _)| shared.clone())
    }

    /// Stores a document (replacing any under the key) and indexes its references.
    pub(crate) fn put_doc(&mut self, key: &str, type_name: &'static str, body: Value, seeded: bool) {
        self.unindex(key);
        let key: Arc<str> = Arc::from(key);
        self.index(&key, &body);
        self.resources.insert(
            key,
            Stored {
                type_name,
                body: Body::new(type_name, body),
                seeded,
            },
        );
    }

    /// Changes a document and re-indexes its references.
    pub(crate) fn change_doc<R>(&mut self, key: &str, change: impl FnOnce(&mut Value) -> R) -> Option<R> {
        self.unindex(key);
        let (key, stored) = self.resources.remove_entry(key)?;
        let Stored {
            type_name,
            body,
            seeded,
        } = stored;
        // A large document stays parsed until it is replaced, as in `Stored::update`.
        let parsed = matches!(body, Body::Parsed(_));
        let mut body = body.into_value();
        let result = change(&mut body);
        self.index(&key, &body);
        let body = if parsed {
            Body::Parsed(Box::new(body))
        } else {
            Body::new(type_name, body)
        };
        self.resources.insert(
            key,
            Stored {
                type_name,
                body,
                seeded,
            },
        );
        Some(result)
    }

    fn index(&mut self, key: &Arc<str>, body: &Value) {
        // References from one holder share its id.
        let mut holder: Option<Arc<str>> = None;
        for reference in references(key, body) {
            let shared = match holder.take() {
                Some(shared) if *shared == reference.holder => shared,
                _ => Arc::from(reference.holder.as_str()),
            };
            let holder_type = match ArmPath::parse(&shared) {
                Some(ArmPath::Resource(id)) => crate::resources::find(&id.type_name()),
                _ => None,
            };
            self.referrers.insert(
                Referral {
                    target: reference.target.into_boxed_str(),
                    holder: shared.clone(),
                    document: key.clone(),
                },
                HolderFacts {
                    holder_type: holder_type.map(|resource_type| resource_type.name),
                    weak: holder_type.is_some_and(|resource_type| resource_type.weak_references),
                    address: reference.address,
                },
            );
            holder = Some(shared);
        }
    }

    fn unindex(&mut self, key: &str) {
        let Some((document, stored)) = self.resources.get_key_value(key) else {
            return;
        };
        let document = document.clone();
        for reference in references(key, &stored.body()) {
            self.referrers.remove(&Referral {
                target: reference.target.into_boxed_str(),
                holder: Arc::from(reference.holder.as_str()),
                document: document.clone(),
            });
        }
    }

    /// Removes one document.
    pub(crate) fn remove_doc(&mut self, key: &str) -> Option<Stored> {
        self.unindex(key);
        self.resources.remove(key)
    }

    /// The references from index entries whose target starts at `target`, in order.
    fn referrals_from<'a>(
        &'a self,
        target: &str,
    ) -> impl Iterator<Item = (&'a Referral, &'a HolderFacts)> + 'a {
        let empty: Arc<str> = Arc::from("");
        let start = Referral {
            target: target.into(),
            holder: empty.clone(),
            document: empty,
        };
        self.referrers.range((Bound::Included(start), Bound::Unbounded))
    }

    /// Every reference to an id starting with `prefix` that keeps its target from being deleted:
    /// (referred key, referring document).
    pub(crate) fn references_under<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.referrals_from(prefix)
            .take_while(move |(referral, _)| referral.target.starts_with(prefix))
            .filter(|(_, facts)| !facts.weak)
            .map(|(referral, _)| (&*referral.target, &*referral.document))
    }

    /// The key of the stored document holding a lower-cased id: its own, or the nearest one
    /// above it (a child kept inside its parent's document).
    pub(crate) fn document_of(&self, id: &str) -> Option<&str> {
        let mut candidate = id;
        loop {
            if let Some((key, _)) = self.resources.get_key_value(candidate) {
                return Some(key);
            }
            candidate = candidate.rsplit_once('/')?.0;
        }
    }

    /// Who refers to `key` itself, ordered by holder.
    pub(crate) fn referrers_of<'a>(&'a self, key: &'a str) -> impl Iterator<Item = Referrer<'a>> + 'a {
        self.referrals_from(key)
            .take_while(move |(referral, _)| &*referral.target == key)
            .map(|(referral, facts)| Referrer {
                holder: &referral.holder,
                document: &referral.document,
                holder_type: facts.holder_type,
                address: facts.address,
            })
    }

    /// The first reference to `key` or anything under it from a document outside `key`'s tree
    /// that keeps it from being deleted: (referred key, holder id).
    pub(crate) fn first_referrer_into(&self, key: &str) -> Option<(&str, &str)> {
        self.first_referrer_into_from(key, |_| true)
    }

    /// As [`Self::first_referrer_into`], counting only documents `counts` accepts.
    pub(crate) fn first_referrer_into_from(
        &self,
        key: &str,
        counts: impl Fn(&str) -> bool,
    ) -> Option<(&str, &str)> {
        let prefix = format!("{key}/");
        let exact = self
            .referrals_from(key)
            .take_while(|(referral, _)| *referral.target == *key);
        // Ids such as `{key}-2` sort between `{key}` and `{key}/...`: a range of its own.
        let under = self
            .referrals_from(&prefix)
            .take_while(|(referral, _)| referral.target.starts_with(&prefix));
        exact
            .chain(under)
            .filter(|(_, facts)| !facts.weak)
            .map(|(referral, _)| referral)
            .find(|referral| {
                *referral.document != *key
                    && !referral.document.starts_with(&prefix)
                    && counts(&referral.document)
            })
            .map(|referral| (&*referral.target, &*referral.holder))
    }

    /// Starts tracking an operation due at `done_at`; returns its id.
    pub(crate) fn start_operation(&mut self, mut operation: Operation, done_at: Instant) -> String {
        // The target's key is shared with the document's.
        match &mut operation.completion {
            Completion::DeleteResourceGroup { key }
            | Completion::Provision {
                target: Target { key, .. },
                ..
            }
            | Completion::Delete {
                target: Target { key, .. },
            } => *key = self.shared_key(key),
        }
        let id = uuid::Uuid::new_v4();
        self.sequence += 1;
        self.due.insert((done_at, self.sequence), id);
        self.operations.insert(id, operation);
        id.hyphenated().to_string()
    }

    /// The operation with this id.
    pub(crate) fn operation(&self, id: &str) -> Option<&Operation> {
        self.operations.get(&operation_key(id)?)
    }

    /// The running operation whose completion matches, if any.
    pub(crate) fn running_operation(&self, matches: impl Fn(&Completion) -> bool) -> Option<String> {
        // Running operations are exactly those still due.
        self.due
            .values()
            .find(|id| {
                self.operations.get(id).is_some_and(|operation| {
                    matches!(operation.outcome, Outcome::Running) && matches(&operation.completion)
                })
            })
            .map(|id| id.hyphenated().to_string())
    }

    /// Ends every running operation whose completion matches, `Canceled` with `error`, without
    /// its effect: a later request took its place.
    pub(crate) fn cancel_running(&mut self, matches: impl Fn(&Completion) -> bool, error: &ArmError) {
        let canceled: Vec<(Instant, u64)> = self
            .due
            .iter()
            .filter(|(_, id)| {
                self.operations
                    .get(id)
                    .is_some_and(|operation| matches(&operation.completion))
            })
            .map(|(due, _)| *due)
            .collect();
        for due in canceled {
            let Some(id) = self.due.remove(&due) else {
                continue;
            };
            if let Some(operation) = self.operations.get_mut(&id) {
                operation.ended = Some(SystemTime::now());
                operation.outcome = Outcome::Canceled(Box::new(error.clone()));
            }
        }
    }

    /// Completes every operation whose time has come.
    pub(crate) fn advance(&mut self, now: Instant) {
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let id = entry.remove();
            let Some(completion) = self
                .operations
                .get(&id)
                .map(|operation| operation.completion.clone())
            else {
                continue;
            };
            let outcome = self.complete(completion);
            if let Some(operation) = self.operations.get_mut(&id) {
                operation.ended = Some(SystemTime::now());
                operation.outcome = outcome;
            }
        }
    }

    fn complete(&mut self, completion: Completion) -> Outcome {
        match completion {
            Completion::DeleteResourceGroup { key } => crate::resource_groups::remove(self, &key),
            Completion::Delete {
                target: Target { key, child: None },
            } => {
                self.remove_resource(&key);
                Outcome::Succeeded
            }
            Completion::Delete {
                target:
                    Target {
                        key,
                        child: Some((property, name)),
                    },
            } => {
                self.remove_embedded(&key, property, &name);
                Outcome::Succeeded
            }
            Completion::Provision { target, failure } => {
                let (outcome, state) = match failure.map(|failure| *failure) {
                    None => (Outcome::Succeeded, "Succeeded"),
                    Some(Unsuccessful::Failed(error)) => (Outcome::Failed(Box::new(error)), "Failed"),
                    // The resource is left as Azure leaves it after a canceled operation.
                    Some(Unsuccessful::Canceled(error)) => (Outcome::Canceled(Box::new(error)), "Canceled"),
                };
                let mut settled = None;
                if let Some(stored) = self.resources.get_mut(&target.key) {
                    stored.update(|body| match &target.child {
                        None => crate::resources::set_provisioning_state(body, state, true),
                        Some((property, name)) => {
                            if let Some(child) = crate::resources::embedded::find_mut(body, property, name) {
                                crate::resources::set_provisioning_state(child, state, false);
                            }
                        }
                    });
                    if target.child.is_none() {
                        settled =
                            crate::resources::find(stored.type_name).and_then(|found| found.hooks.on_settled);
                    }
                }
                if let Some(on_settled) = settled {
                    on_settled(self, &target.key, matches!(outcome, Outcome::Succeeded));
                }
                outcome
            }
        }
    }

    /// Removes a child embedded in a document.
    pub(crate) fn remove_embedded(&mut self, key: &str, property: &str, name: &str) {
        let finish = self
            .resources
            .get(key)
            .and_then(|stored| crate::resources::find(stored.type_name))
            .map(|resource_type| resource_type.finish);
        self.change_doc(key, |body| {
            crate::resources::embedded::remove(body, property, name);
            if let Some(finish) = finish {
                finish(body);
            }
        });
    }

    /// Removes a resource and everything under it, then lets its type release or take along what
    /// it used.
    pub(crate) fn remove_resource(&mut self, key: &str) {
        let removed = self
            .resources
            .get(key)
            .map(|stored| (stored.type_name, stored.body().into_owned()));
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
        let doomed: Vec<Arc<str>> = self.under(&prefix).map(|(id, _)| Arc::from(id)).collect();
        for id in doomed {
            self.remove_doc(&id);
        }
    }

    /// Logs and counts a request; the log keeps the last `capacity`.
    pub(crate) fn record(&mut self, entry: LoggedRequest, capacity: usize) {
        *self
            .counters
            .entry((entry.method.clone(), entry.resource_type.clone(), entry.status))
            .or_default() += 1;
        while self.log.len() >= capacity.max(1) {
            self.log.pop_front();
        }
        self.log.push_back(entry);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::{Body, Completion, Operation, State, StatusStyle, Target};

    const GROUP: &str = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network";

    fn key(id: &str) -> String {
        id.to_ascii_lowercase()
    }

    fn nic(name: &str, subnet: &str, address: &str) -> serde_json::Value {
        let id = format!("{GROUP}/networkInterfaces/{name}");
        json!({
            "id": id,
            "properties": {"ipConfigurations": [{
                "id": format!("{id}/ipConfigurations/ipconfig1"),
                "name": "ipconfig1",
                "properties": {"privateIPAddress": address, "subnet": {"id": subnet}}
            }]}
        })
    }

    #[test]
    fn documents_read_back_as_stored_whether_text_or_parsed() {
        let mut state = State::default();
        let small = json!({"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/d", "properties": {"ratio": 0.300_000_000_000_000_04, "size": u64::MAX}});
        let large = json!({"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/e", "tags": {"padding": "x".repeat(10_000)}});
        for (body, text) in [(&small, true), (&large, false)] {
            let key = key(body["id"].as_str().unwrap());
            state.put_doc(&key, "Microsoft.Compute/disks", body.clone(), false);
            let stored = &state.resources[key.as_str()];
            assert_eq!(matches!(stored.body, Body::Text(_)), text);
            assert_eq!(*stored.body(), *body);
        }
        // Resource groups are read on every call and stay parsed, however small.
        state.put_doc(
            "/subscriptions/s/resourcegroups/rg",
            "Microsoft.Resources/resourceGroups",
            json!({"name": "rg"}),
            false,
        );
        assert!(matches!(
            state.resources["/subscriptions/s/resourcegroups/rg"].body,
            Body::Parsed(_)
        ));
        let stored = state
            .resources
            .get_mut(key(small["id"].as_str().unwrap()).as_str())
            .unwrap();
        stored.update(|body| body["properties"]["size"] = json!(1));
        assert_eq!(stored.body()["properties"]["size"], 1);
        assert_eq!(stored.body()["properties"]["ratio"], 0.300_000_000_000_000_04);
    }

    #[test]
    fn the_reverse_index_follows_writes_changes_and_deletions() {
        let mut state = State::default();
        let subnet_a = format!("{GROUP}/virtualNetworks/v/subnets/a");
        let subnet_b = format!("{GROUP}/virtualNetworks/v/subnets/b");
        let nic_key = key(&format!("{GROUP}/networkInterfaces/nic0"));
        state.put_doc(
            &nic_key,
            "Microsoft.Network/networkInterfaces",
            nic("nic0", &subnet_a, "10.0.0.4"),
            false,
        );
        let subnet_a_key = key(&subnet_a);
        let referrers: Vec<_> = state.referrers_of(&subnet_a_key).collect();
        assert_eq!(referrers.len(), 1);
        assert_eq!(
            referrers[0].holder,
            format!("{GROUP}/networkInterfaces/nic0/ipConfigurations/ipconfig1")
        );
        assert_eq!(referrers[0].document, nic_key);
        assert_eq!(
            referrers[0].holder_type,
            Some("Microsoft.Network/networkInterfaces/ipConfigurations")
        );
        assert_eq!(referrers[0].address, Some("10.0.0.4".parse().unwrap()));

        state.change_doc(&nic_key, |body| {
            body["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"] = json!(subnet_b);
        });
        assert_eq!(state.referrers_of(&key(&subnet_a)).count(), 0);
        assert_eq!(state.referrers_of(&key(&subnet_b)).count(), 1);
        state.put_doc(
            &nic_key,
            "Microsoft.Network/networkInterfaces",
            nic("nic0", &subnet_a, "10.0.0.5"),
            false,
        );
        assert_eq!(state.referrers_of(&key(&subnet_b)).count(), 0);
        assert_eq!(
            state
                .referrers_of(&key(&subnet_a))
                .next()
                .and_then(|referrer| referrer.address),
            Some("10.0.0.5".parse().unwrap())
        );
        state.remove_doc(&nic_key);
        assert_eq!(state.referrers_of(&key(&subnet_a)).count(), 0);
    }

    #[test]
    fn references_into_a_tree_are_found_past_siblings_that_sort_between() {
        let mut state = State::default();
        let network = key(&format!("{GROUP}/virtualNetworks/v"));
        // `v-2` sorts between `v` and `v/subnets/a`.
        state.put_doc(
            &key(&format!("{GROUP}/networkInterfaces/other")),
            "Microsoft.Network/networkInterfaces",
            nic(
                "other",
                &format!("{GROUP}/virtualNetworks/v-2/subnets/a"),
                "10.1.0.4",
            ),
            false,
        );
        assert_eq!(state.first_referrer_into(&network), None);
        state.put_doc(
            &key(&format!("{GROUP}/networkInterfaces/nic0")),
            "Microsoft.Network/networkInterfaces",
            nic(
                "nic0",
                &format!("{GROUP}/virtualNetworks/v/subnets/a"),
                "10.0.0.4",
            ),
            false,
        );
        let (target, holder) = state.first_referrer_into(&network).unwrap();
        assert_eq!(target, format!("{network}/subnets/a"));
        assert!(holder.ends_with("nic0/ipConfigurations/ipconfig1"));
    }

    #[test]
    fn operations_are_found_by_the_id_handed_out() {
        let mut state = State::default();
        let target = Target {
            key: "/subscriptions/s/x".into(),
            child: None,
        };
        let id = state.start_operation(
            Operation::new(Completion::Delete { target }, StatusStyle::Plain),
            Instant::now(),
        );
        assert!(state.operation(&id).is_some());
        assert!(state.operation(&id.to_ascii_uppercase()).is_none());
        assert!(state.operation("not-an-id").is_none());
        assert_eq!(state.running_operation(|_| true), Some(id.clone()));
        state.advance(Instant::now());
        assert_eq!(state.running_operation(|_| true), None);
        assert!(state.operation(&id).is_some());
    }
}
