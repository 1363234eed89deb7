//! The ARM protocol for every provider resource type: PUT (create or replace), PATCH, GET, DELETE
//! and lists, with ETag preconditions, long-running operations, referential integrity and
//! back-references. What differs per type is described by its [`ResourceType`].

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use axum::http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::error::ArmError;
use crate::path::{ArmPath, Poll, ResourceId};
use crate::resources::{
    self, Act, Acted, Action, BackReferenceStyle, Catalogue, Concurrency, EtagStyle, Locality, Lookup, Lro,
    OperationsAt, Prepare, ResourceType, Storage, embedded, fields,
};
use crate::state::{Completion, Operation, Outcome, State, StatusStyle, Stored, Target, Unsuccessful};
use crate::{Answer, Emulator};

/// One request to a provider resource or collection.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a Method,
    pub(crate) path: &'a str,
    pub(crate) api_version: &'a str,
    pub(crate) body: &'a [u8],
    pub(crate) if_match: Option<&'a str>,
    pub(crate) if_none_match: Option<&'a str>,
    /// Where a list page starts (`$skiptoken`).
    pub(crate) skip: usize,
    /// `$filter`, for the catalogues and lists that filter.
    pub(crate) filter: Option<&'a str>,
    /// `$expand`: what a read adds (`instanceView`, `ReplicationStatus`).
    pub(crate) expand: Option<&'a str>,
    /// Every query parameter, for actions that take their own (`forceDeletion`).
    pub(crate) query: &'a [(String, String)],
    /// The base URL the client reached the emulator at: what URLs in answers start with.
    pub(crate) base: &'a str,
    /// The object id of the signed-in principal; `None` when the emulator seeds a resource.
    pub(crate) caller: Option<&'a str>,
    pub(crate) now: Instant,
}

/// Where a resource's document is: its own, or an element of its parent's.
struct Place {
    key: String,
    child: Option<(&'static str, String)>,
}

impl Place {
    fn of(id: &ResourceId, resource_type: &ResourceType) -> Self {
        match (resource_type.storage, id.parent()) {
            (Storage::Embedded { property }, Some(parent)) => Self {
                key: parent.key(),
                child: Some((property, id.name().to_ascii_lowercase())),
            },
            _ => Self {
                key: id.key(),
                child: None,
            },
        }
    }

    fn target(&self) -> Target {
        Target {
            key: Arc::from(self.key.as_str()),
            child: self
                .child
                .as_ref()
                .map(|(property, name)| (*property, name.as_str().into())),
        }
    }

    fn find<'a>(&self, state: &'a State) -> Option<Cow<'a, Value>> {
        let body = state.body(&self.key)?;
        let Some((property, name)) = &self.child else {
            return Some(body);
        };
        match body {
            Cow::Borrowed(body) => embedded::find(body, property, name).map(Cow::Borrowed),
            Cow::Owned(mut body) => {
                embedded::find_mut(&mut body, property, name).map(|child| Cow::Owned(child.take()))
            }
        }
    }
}

/// The stored name of the resource group a resource lives in, checking it exists.
fn resource_group(state: &State, id: &ResourceId) -> Result<Option<String>, ArmError> {
    let (Some(subscription), Some(group)) = (&id.subscription, &id.resource_group) else {
        return Ok(None);
    };
    let key = crate::path::resource_group_id(subscription, group).to_ascii_lowercase();
    let stored = state
        .resources
        .get(key.as_str())
        .ok_or_else(|| ArmError::resource_group_not_found(group))?;
    Ok(Some(
        stored.body()["name"]
            .as_str()
            .unwrap_or(group.as_str())
            .to_owned(),
    ))
}

/// Refuses a write into a resource group that is being deleted.
fn check_group_writable(state: &State, id: &ResourceId) -> Result<(), ArmError> {
    let (Some(subscription), Some(group)) = (&id.subscription, &id.resource_group) else {
        return Ok(());
    };
    let key = crate::path::resource_group_id(subscription, group).to_ascii_lowercase();
    match state.body(&key) {
        Some(group) => crate::resource_groups::check_not_deleting(&group),
        None => Ok(()),
    }
}

/// `Microsoft.Network/virtualNetworks/vnet/subnets/a`, as ARM names a resource in messages.
fn type_path(id: &ResourceId) -> String {
    let mut path = id.namespace.clone();
    for (segment, name) in id.types.iter().zip(&id.names) {
        path.push('/');
        path.push_str(segment);
        path.push('/');
        path.push_str(name);
    }
    path
}

fn parent_missing(id: &ResourceId, resource_type: &ResourceType, action: &str) -> ArmError {
    match (resource_type.storage, id.parent()) {
        (Storage::Embedded { .. }, Some(parent)) => {
            ArmError::resource_not_found(&type_path(&parent), id.resource_group.as_deref())
        }
        (_, Some(parent)) => ArmError::parent_not_found(
            action,
            resource_type
                .name
                .split_once('/')
                .map_or(resource_type.name, |(_, t)| t),
            &parent.to_id(),
        ),
        (_, None) => ArmError::resource_not_found(&type_path(id), id.resource_group.as_deref()),
    }
}

fn missing(id: &ResourceId, resource_type: &'static ResourceType, state: &State) -> ArmError {
    if let Some(parent) = id.parent()
        && !state
            .resources
            .contains_key(Place::of(&parent, parent_type(resource_type)).key.as_str())
    {
        return parent_missing(id, resource_type, "read");
    }
    match (resource_type.storage, resource_type.hooks.not_found) {
        (Storage::Embedded { .. }, _) => ArmError::not_found(&id.to_id()),
        (Storage::Document, Some(not_found)) => not_found(id),
        (Storage::Document, None) => {
            ArmError::resource_not_found(&type_path(id), id.resource_group.as_deref())
        }
    }
}

fn parent_type(resource_type: &'static ResourceType) -> &'static ResourceType {
    resources::parent_type(resource_type.name)
        .and_then(resources::find)
        .unwrap_or(resource_type)
}

/// Answers a request to one resource.
pub(crate) fn resource(
    emulator: &Emulator,
    state: &mut State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    let group = resource_group(state, id)?;
    if matches!(*request.method, Method::PUT | Method::PATCH) {
        check_group_writable(state, id)?;
    }
    let id = id.canonical(resource_type.name, group.as_deref());
    if let Some(built_in) = resource_type.hooks.built_in
        && matches!(*request.method, Method::PUT | Method::PATCH | Method::DELETE)
        && Place::of(&id, resource_type)
            .find(state)
            .is_some_and(|current| built_in(&current))
    {
        let verb = if *request.method == Method::DELETE {
            "delete"
        } else {
            "write"
        };
        // Azure owns them: nobody holds the right to change them, whatever their roles.
        return Err(ArmError::new(
            StatusCode::FORBIDDEN,
            "AuthorizationFailed",
            format!(
                "The client does not have authorization to perform action '{}/{verb}' over scope '{}' or the scope is invalid: built-in role definitions cannot be changed.",
                resource_type.name,
                id.to_id()
            ),
        ));
    }
    match *request.method {
        Method::GET => get(state, &id, resource_type, request),
        Method::PUT => {
            let body = parse_object(request.body)?;
            // Names are checked when a resource is created; those Azure made itself stay usable.
            if Place::of(&id, resource_type).find(state).is_none() {
                resource_type.naming.check(id.name())?;
            }
            write(emulator, state, &id, resource_type, request, body, false)
        }
        Method::PATCH => {
            let patch = parse_object(request.body)?;
            let place = Place::of(&id, resource_type);
            let mut merged = place
                .find(state)
                .map(Cow::into_owned)
                .ok_or_else(|| missing(&id, resource_type, state))?;
            merge_patch(&mut merged, &Value::Object(patch));
            let Value::Object(body) = merged else {
                return Err(ArmError::invalid_request_content(
                    "The request content must be a JSON object.",
                ));
            };
            write(emulator, state, &id, resource_type, request, body, true)
        }
        Method::DELETE => delete(emulator, state, &id, resource_type, request),
        _ => Err(ArmError::method_not_allowed(request.method.as_str())),
    }
}

fn get(
    state: &State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    let place = Place::of(id, resource_type);
    let body = place
        .find(state)
        .ok_or_else(|| missing(id, resource_type, state))?;
    let etag = etag_of(resource_type, &body);
    let expanded = resource_type
        .hooks
        .expand
        .as_ref()
        .filter(|expansion| {
            request
                .expand
                .is_some_and(|expand| expand.eq_ignore_ascii_case(expansion.name))
        })
        .map(|expansion| (expansion.property, (expansion.view)(state, &body)));
    let mut rendered = match place.child {
        None => render(state, &id.key(), resource_type, body, request.api_version),
        Some(_) => render_child(state, &id.key(), resource_type, body, request.api_version),
    };
    if let Some((name, view)) = expanded
        && let Some(properties) = rendered.get_mut("properties").and_then(Value::as_object_mut)
    {
        properties.insert(name.into(), view);
    }
    let mut answer = Answer::json(StatusCode::OK, rendered);
    if let Some(etag) = etag {
        answer.headers.push(("etag", etag));
    }
    Ok(answer)
}

/// The ETag header of a resource, for providers that send one.
fn etag_of(resource_type: &ResourceType, body: &Value) -> Option<String> {
    resource_type
        .flavour
        .etag
        .and_then(|_| body.get("etag").and_then(Value::as_str).map(str::to_owned))
}

fn with_etag(mut answer: Answer, resource_type: &ResourceType, body: &Value) -> Answer {
    if let Some(etag) = etag_of(resource_type, body) {
        answer.headers.push(("etag", etag));
    }
    answer
}

/// A resource's body as ARM answers it: the stored document with its back-references.
fn render(
    state: &State,
    key: &str,
    resource_type: &'static ResourceType,
    body: Cow<'_, Value>,
    api_version: &str,
) -> Value {
    let mut body = render_child(state, key, resource_type, body, api_version);
    for (property, child_type) in resources::embedded_children(resource_type.name) {
        if child_type.back_references.is_empty() && child_type.hooks.render.is_none() {
            continue;
        }
        let Some(children) = body
            .pointer_mut(&format!("/properties/{property}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for child in children {
            let child_key = child
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase);
            if let Some(child_key) = child_key {
                add_back_references(state, &child_key, child_type, child);
            }
            if let Some(derive) = child_type.hooks.render {
                derive(state, child);
            }
        }
    }
    body
}

/// Leaves out what the api-version does not know, and the secrets.
fn shape_for(resource_type: &ResourceType, body: &mut Value, api_version: &str) {
    for (property, since) in resource_type.since {
        if api_version < *since {
            resources::remove_shaped(body, property);
        }
    }
    for (property, until) in resource_type.until {
        if api_version >= *until {
            resources::remove_shaped(body, property);
        }
    }
    for secret in resource_type.hooks.secrets {
        resources::remove_shaped(body, secret);
    }
}

fn add_back_references(state: &State, key: &str, resource_type: &ResourceType, body: &mut Value) {
    for back in resource_type.back_references {
        let holders: Vec<Value> = state
            .referrers_of(key)
            .filter(|referrer| {
                referrer.holder_type.is_some_and(|holder_type| {
                    back.from
                        .iter()
                        .any(|from| from.eq_ignore_ascii_case(holder_type))
                })
            })
            .map(|referrer| json!({ "id": referrer.holder }))
            .collect();
        let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) else {
            return;
        };
        match (back.many, holders.first()) {
            (true, None) if resource_type.flavour.back_references == BackReferenceStyle::OnReads => {
                properties.insert(back.property.into(), Value::Array(Vec::new()));
            }
            (_, None) => {
                properties.remove(back.property);
            }
            (true, Some(_)) => {
                properties.insert(back.property.into(), Value::Array(holders));
            }
            (false, Some(first)) => {
                properties.insert(back.property.into(), first.clone());
            }
        }
    }
}

fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ArmError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ArmError::invalid_request_content(
            "The request content is empty; a JSON object is required.",
        ));
    }
    match serde_json::from_slice(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ArmError::invalid_request_content(
            "The request content must be a JSON object.",
        )),
        Err(err) => Err(ArmError::invalid_request_content(format!(
            "The request content was invalid and could not be deserialized: '{err}'."
        ))),
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

fn check_preconditions(current: Option<&Value>, request: &Request<'_>) -> Result<(), ArmError> {
    let etag = current.and_then(|body| body.get("etag")).and_then(Value::as_str);
    if let Some(expected) = request.if_match {
        let matches = match (expected.trim(), current) {
            ("*", Some(_)) => true,
            (expected, Some(_)) => {
                etag.is_some_and(|etag| etag == expected || etag.trim_start_matches("W/") == expected)
            }
            (_, None) => false,
        };
        if !matches {
            return Err(ArmError::precondition_failed(format!(
                "The If-Match precondition '{expected}' does not match the resource's current etag."
            )));
        }
    }
    if request.if_none_match.is_some_and(|value| value.trim() == "*") && current.is_some() {
        return Err(ArmError::precondition_failed(
            "The resource exists and If-None-Match '*' was given.",
        ));
    }
    Ok(())
}

fn new_etag(style: EtagStyle) -> String {
    let uuid = uuid::Uuid::new_v4();
    match style {
        EtagStyle::Weak => format!("W/\"{uuid}\""),
        EtagStyle::Bare => uuid.to_string(),
        EtagStyle::Quoted => format!("\"{uuid}\""),
    }
}

/// The location of resources that live in no region.
const GLOBAL: &str = "global";

/// Normalises a location as Azure does: `West Europe` -> `westeurope`.
pub(crate) fn normalise_location(location: &str) -> String {
    location
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase()
}

fn location_of(
    emulator: &Emulator,
    state: &State,
    id: &ResourceId,
    resource_type: &ResourceType,
    body: &Map<String, Value>,
    existing: Option<&Value>,
) -> Result<String, ArmError> {
    if resource_type.location == Locality::Inherited {
        return Ok(location_of_parent(state, id));
    }
    let Some(requested) = fields::string(body, "location", "")? else {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "LocationRequired",
            "The location property is required for this definition.",
        ));
    };
    let location = normalise_location(requested);
    let known: Vec<&str> = if resource_type.location == Locality::Global {
        vec![GLOBAL]
    } else {
        emulator
            .config
            .locations
            .iter()
            .map(|l| l.name.as_str())
            .collect()
    };
    if !known.contains(&location.as_str()) {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "LocationNotAvailableForResourceType",
            format!(
                "The provided location '{requested}' is not available for resource type '{}'. List of available regions for the resource type is '{}'.",
                resource_type.name,
                known.join(",")
            ),
        ));
    }
    if let Some(current) = existing
        .and_then(|body| body.get("location"))
        .and_then(Value::as_str)
        && current != location
    {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "InvalidResourceLocation",
            format!(
                "The resource '{}' already exists in location '{current}' in resource group '{}'. A resource with the same name cannot be created in location '{location}'. Please select a new resource name.",
                id.name(),
                id.resource_group.as_deref().unwrap_or_default()
            ),
        ));
    }
    Ok(location)
}

/// What every resource built by one write shares.
struct Build<'a> {
    config: &'a Config,
    state: &'a State,
    location: &'a str,
    /// The provisioning state while the write's operation runs; `None` for synchronous writes.
    in_progress: Option<&'a str>,
    caller: Option<&'a str>,
    /// What the enclosing write built before (see [`Prepare::staged`]).
    staged: &'a [Value],
}

/// What building a resource does besides the resource itself.
#[derive(Default)]
struct Effects {
    /// Other documents created or changed with it.
    companions: Vec<Value>,
    /// How its operation ends when Azure accepts the write but cannot carry it out.
    failure: Option<ArmError>,
}

/// Builds the stored form of one resource from its request body.
fn build(
    context: &Build<'_>,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    mut body: Map<String, Value>,
    existing: Option<&Value>,
    effects: &mut Effects,
) -> Result<Value, ArmError> {
    let Build {
        config,
        state,
        location,
        in_progress,
        caller,
        staged,
    } = *context;
    if let Some(tags) = body.get("tags").filter(|tags| !tags.is_null())
        && !tags
            .as_object()
            .is_some_and(|tags| tags.values().all(Value::is_string))
    {
        return Err(fields::wrong_type("tags", "an object whose values are strings"));
    }
    for read_only in ["id", "name", "type", "etag"] {
        body.remove(read_only);
    }
    let mut prepare = Prepare {
        id,
        doc: body,
        existing,
        state,
        config,
        location,
        provisioning_state: in_progress.unwrap_or("Succeeded"),
        caller,
        companions: Vec::new(),
        failure: None,
        staged,
        reported_state: None,
    };
    (resource_type.prepare)(&mut prepare)?;
    effects.companions.append(&mut prepare.companions);
    if let Some(failure) = prepare.failure.take() {
        effects.failure.get_or_insert(failure);
    }
    for (property, child_type) in resources::embedded_children(resource_type.name) {
        let requested = fields::array(prepare.properties()?, property, "properties")?.to_vec();
        let mut children = Vec::with_capacity(requested.len());
        for (index, child) in requested.into_iter().enumerate() {
            let path = format!("properties.{property}[{index}]");
            let Value::Object(child) = child else {
                return Err(fields::wrong_type(&path, "an object"));
            };
            let name = fields::required_string(&child, "name", &path)?.to_owned();
            let segment = child_type.name.rsplit('/').next().unwrap_or_default();
            let child_id = id.child(segment, &name);
            let current = existing.and_then(|existing| embedded::find(existing, property, &name));
            // A new child named in the body must be reachable at a path of its own.
            if current.is_none() {
                child_type.naming.check(&name)?;
            }
            children.push(build(context, &child_id, child_type, child, current, effects)?);
        }
        if let Some(existing) = existing {
            for old in embedded::all(existing, property) {
                let name = old.get("name").and_then(Value::as_str).unwrap_or_default();
                let kept = children.iter().any(|child| {
                    child
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|child_name| child_name.eq_ignore_ascii_case(name))
                });
                if !kept {
                    let old_id = old.get("id").and_then(Value::as_str).unwrap_or_default();
                    check_not_in_use(state, &old_id.to_ascii_lowercase(), old_id)?;
                }
            }
        }
        prepare
            .properties()?
            .insert(property.to_owned(), Value::Array(children));
    }
    let reported_state = prepare.reported_state;
    let mut doc = prepare.doc;
    doc.insert("id".into(), Value::String(id.to_id()));
    let name =
        resources::stored_name(resource_type.name, &id.to_id()).unwrap_or_else(|| id.name().to_owned());
    doc.insert("name".into(), Value::String(name));
    doc.insert("type".into(), Value::String(resource_type.name.to_owned()));
    if resource_type.location != Locality::Inherited {
        doc.insert("location".into(), Value::String(location.to_owned()));
    }
    let mut doc = Value::Object(doc);
    (resource_type.finish)(&mut doc);
    if resource_type.flavour.provisioning_state {
        let state_word = in_progress.map_or("Succeeded", |in_progress| reported_state.unwrap_or(in_progress));
        if let Some(properties) = doc.get_mut("properties").and_then(Value::as_object_mut) {
            properties.insert("provisioningState".into(), Value::String(state_word.to_owned()));
        } else {
            doc["properties"] = json!({ "provisioningState": state_word });
        }
    }
    Ok(doc)
}

/// Builds a document of another type that a write creates or changes with its resource (the
/// scale sets and networks of a managed cluster's node resource group), as a write of its own
/// would build it; what building it creates besides joins the write's companions. `in_progress`
/// is the provisioning state it shows until the write's operation ends (`None`: done at once).
pub(crate) fn build_companion(
    prepare: &mut Prepare<'_>,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    body: Map<String, Value>,
    in_progress: Option<&str>,
) -> Result<Value, ArmError> {
    let existing = prepare.state.body(&id.key()).map(Cow::into_owned);
    if existing.is_none() {
        resource_type.naming.check(id.name())?;
    }
    let staged = std::mem::take(&mut prepare.companions);
    let context = Build {
        config: prepare.config,
        state: prepare.state,
        location: prepare.location,
        in_progress,
        caller: prepare.caller,
        staged: &staged,
    };
    let mut effects = Effects::default();
    let built = build(&context, id, resource_type, body, existing.as_ref(), &mut effects);
    prepare.companions = staged;
    let doc = built?;
    prepare.companions.append(&mut effects.companions);
    if let Some(failure) = effects.failure {
        prepare.failure.get_or_insert(failure);
    }
    Ok(doc)
}

/// Puts `tags` on a stored document; a type with etags gets a new one, as for any write.
pub(crate) fn retag(state: &mut State, key: &str, tags: Map<String, Value>) {
    let Some(stored) = state.resources.get_mut(key) else {
        return;
    };
    let resource_type = resources::find(stored.type_name);
    stored.update(|doc| {
        doc["tags"] = Value::Object(tags);
        if let Some(resource_type) = resource_type {
            stamp_etag(doc, resource_type);
        }
    });
}

/// Gives a document and every part of it with an id of its own one new etag, as
/// Microsoft.Network does.
fn stamp_etag(doc: &mut Value, resource_type: &ResourceType) {
    fn walk(value: &mut Value, own: &str, etag: &Value) {
        match value {
            Value::Object(map) => {
                // Parts have more than an id; `{"id": ...}` alone only refers to one.
                let internal = map.len() > 1
                    && map
                        .get("id")
                        .and_then(Value::as_str)
                        .is_some_and(|id| id.to_ascii_lowercase().starts_with(own));
                if internal {
                    map.insert("etag".into(), etag.clone());
                }
                for (name, item) in map.iter_mut() {
                    if name != "id" && name != "etag" {
                        walk(item, own, etag);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| walk(item, own, etag)),
            _ => {}
        }
    }
    let Some(style) = resource_type.flavour.etag else {
        return;
    };
    let own = doc
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    walk(doc, &own, &Value::String(new_etag(style)));
}

/// Every reference a document makes must name an existing resource, or one of the companions
/// stored with it.
fn check_references(
    config: &Config,
    state: &State,
    key: &str,
    doc: &Value,
    companions: &[Value],
) -> Result<(), ArmError> {
    check_linked_ids(doc, "", None)?;
    for reference in crate::state::references(key, doc) {
        let companion = companions.iter().any(|companion| {
            companion["id"]
                .as_str()
                .is_some_and(|id| id.eq_ignore_ascii_case(&reference.target))
        });
        if !companion && !exists(config, state, &reference.target) {
            let original = find_original(doc, &reference.target).unwrap_or(reference.target);
            return Err(ArmError::not_found(&original));
        }
    }
    Ok(())
}

/// Every `{"id": ...}` in a document (`property` holding it) must be a fully qualified resource
/// id, and of the type its property names when [`resources::REFERENCE_TYPES`] knows it: an id of
/// another type names nothing the property can use, as if it did not exist.
fn check_linked_ids(value: &Value, path: &str, property: Option<&str>) -> Result<(), ArmError> {
    match value {
        Value::Object(object) => {
            if let (Some(property), Some(id)) = (property, object.get("id")) {
                check_linked_id(property, path, id)?;
            }
            for (key, item) in object {
                // Tags are the client's own strings: a tag called `id` is no reference.
                let tags = path.is_empty() && key == "tags";
                if key != "id" && !tags {
                    let at = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    check_linked_ids(item, &at, Some(key))?;
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                check_linked_ids(item, &format!("{path}[{index}]"), property)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_linked_id(property: &str, path: &str, id: &Value) -> Result<(), ArmError> {
    let path = format!("{path}.id");
    let Some(id) = id.as_str() else {
        return if id.is_null() {
            Ok(())
        } else {
            Err(fields::wrong_type(&path, "a string"))
        };
    };
    let lower = id.to_ascii_lowercase();
    if !lower.starts_with("/subscriptions/") && !lower.starts_with("/providers/") {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "LinkedInvalidPropertyId",
            format!(
                "Property id '{id}' at path '{path}' is invalid. Expect fully qualified resource Id that start with '/subscriptions/{{subscriptionId}}' or '/providers/{{resourceProviderNamespace}}/'."
            ),
        ));
    }
    let expected = resources::REFERENCE_TYPES
        .iter()
        .find(|(name, _)| *name == property)
        .map(|(_, segment)| *segment);
    let named = match ArmPath::parse(id) {
        Some(ArmPath::Resource(target)) => target.types.last().cloned(),
        _ => None,
    };
    match (expected, named) {
        (Some(expected), Some(named)) if named.eq_ignore_ascii_case(expected) => Ok(()),
        (Some(_), _) => Err(ArmError::not_found(id)),
        (None, _) => Ok(()),
    }
}

/// Whether a lower-cased id names a stored document, an entry of a catalogue (a marketplace
/// image) or an embedded child of a document.
fn exists(config: &Config, state: &State, key: &str) -> bool {
    if state.resources.contains_key(key) || in_catalogue(config, state, key) {
        return true;
    }
    let Some((rest, name)) = key.rsplit_once('/') else {
        return false;
    };
    let Some((parent, property)) = rest.rsplit_once('/') else {
        return false;
    };
    state
        .resources
        .get(parent)
        .is_some_and(|stored| embedded::find_any_case(&stored.body(), property, name).is_some())
}

fn in_catalogue(config: &Config, state: &State, key: &str) -> bool {
    let Some(ArmPath::Resource(id)) = ArmPath::parse(key) else {
        return false;
    };
    let lookup = Lookup {
        id: &id,
        config,
        state,
        filter: None,
    };
    resources::catalogue(&id.type_name())
        .and_then(|catalogue| catalogue.entry)
        .is_some_and(|entry| entry(&lookup).is_ok())
}

/// The id as the client wrote it, for messages.
fn find_original(value: &Value, lower: &str) -> Option<String> {
    match value {
        Value::Object(map) => map
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| id.eq_ignore_ascii_case(lower))
            .map(str::to_owned)
            .or_else(|| map.values().find_map(|item| find_original(item, lower))),
        Value::Array(items) => items.iter().find_map(|item| find_original(item, lower)),
        _ => None,
    }
}

fn check_not_in_use(state: &State, key: &str, id: &str) -> Result<(), ArmError> {
    match state.first_referrer_into(key) {
        Some((target, holder)) => Err(in_use_error(key, id, target, holder)),
        None => Ok(()),
    }
}

/// What deleting the resource `key` (written `id`) answers while `holder` refers to `target`
/// (the resource itself, or something under it).
pub(crate) fn in_use_error(key: &str, id: &str, target: &str, holder: &str) -> ArmError {
    let target_type = match ArmPath::parse(target) {
        Some(ArmPath::Resource(target)) => resources::find(&target.type_name()),
        _ => None,
    };
    if let Some(in_use) = target_type.and_then(|t| t.hooks.in_use) {
        return in_use(if target == key { id } else { target }, holder);
    }
    let code = target_type.map_or("InUseResourceCannotBeDeleted", |t| t.in_use_code);
    let name = id.rsplit('/').next().unwrap_or(id);
    let message = match code {
        "InUseSubnetCannotBeDeleted" => {
            let subnet = target.rsplit('/').next().unwrap_or(target);
            format!(
                "Subnet {subnet} is in use by {holder} and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet."
            )
        }
        "NicInUse" => format!(
            "Network Interface {id} is used by existing resource {holder}. In order to delete the network interface, it must be dissociated from the resource. To learn more, see aka.ms/deletenic."
        ),
        "PublicIPAddressCannotBeDeleted" => format!(
            "Public IP address {id} can not be deleted since it is still allocated to resource {holder}. In order to delete the public IP, disassociate/detach the Public IP address from the resource."
        ),
        _ => format!("Resource {name} ({id}) is in use by {holder} and cannot be deleted."),
    };
    ArmError::new(StatusCode::BAD_REQUEST, code, message)
}

/// Refuses to write a child resource whose parent does not exist.
fn require_parent(
    state: &State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
) -> Result<(), ArmError> {
    match id.parent() {
        Some(parent)
            if !state
                .resources
                .contains_key(Place::of(&parent, parent_type(resource_type)).key.as_str()) =>
        {
            Err(parent_missing(id, resource_type, "write"))
        }
        _ => Ok(()),
    }
}

fn write(
    emulator: &Emulator,
    state: &mut State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    request: &Request<'_>,
    body: Map<String, Value>,
    patching: bool,
) -> Result<Answer, ArmError> {
    let place = Place::of(id, resource_type);
    require_parent(state, id, resource_type)?;
    let existing = place.find(state).map(Cow::into_owned);
    check_preconditions(existing.as_ref(), request)?;
    check_running(state, id, resource_type, &place, request)?;
    let location = location_of(emulator, state, id, resource_type, &body, existing.as_ref())?;
    let in_progress = match resource_type.put {
        Lro::Sync => None,
        Lro::Async | Lro::Accepted | Lro::AcceptedEmpty | Lro::AcceptedBare if existing.is_some() => {
            Some(resource_type.flavour.updating)
        }
        Lro::Async | Lro::Accepted | Lro::AcceptedEmpty | Lro::AcceptedBare => {
            Some(resource_type.flavour.creating)
        }
    };
    let context = Build {
        config: &emulator.config,
        state,
        location: &location,
        in_progress,
        caller: request.caller,
        staged: &[],
    };
    let echo = (resource_type.put == Lro::Accepted).then(|| body.clone());
    let mut effects = Effects::default();
    let mut doc = build(&context, id, resource_type, body, existing.as_ref(), &mut effects)?;
    let settled = resource_type.flavour.settles_unchanged
        && existing
            .as_ref()
            .is_some_and(|existing| goal_state(existing) == goal_state(&doc));
    if settled {
        resources::set_provisioning_state(&mut doc, "Succeeded", true);
    }
    check_references(&emulator.config, state, &place.key, &doc, &effects.companions)?;
    for companion in effects.companions {
        store_companion(state, companion);
    }
    let mut answer_body = store(state, id, resource_type, &place, doc, request.api_version)?;
    let status = if existing.is_some() || patching {
        StatusCode::OK
    } else {
        resource_type.flavour.create_status
    };
    leave_out_of_write_answer(resource_type, &mut answer_body, existing.is_none());
    if resource_type.put == Lro::Sync {
        return Ok(with_etag(
            Answer::json(status, answer_body.clone()),
            resource_type,
            &answer_body,
        ));
    }
    let done_at = if settled {
        request.now
    } else {
        request.now + emulator.config.latency(resource_type.name)
    };
    let failure = emulator
        .operation_failure(request.method, request.path)
        .or_else(|| effects.failure.map(Unsuccessful::Failed))
        .map(Box::new);
    preempt(state, resource_type, &place);
    let operation_id = state.start_operation(
        Operation::new(
            Completion::Provision {
                target: place.target(),
                failure,
            },
            resource_type.flavour.status,
        ),
        done_at,
    );
    let urls = OperationUrls::new(
        request.base,
        id,
        resource_type,
        &location,
        &operation_id,
        request.api_version,
    );
    let answer = match resource_type.put {
        Lro::Accepted => {
            let echoed = echo.map(|body| echo_request(id, resource_type, body, &location, in_progress));
            accepted(echoed, urls.result)
        }
        Lro::AcceptedEmpty => accepted(Some(json!({})), urls.result),
        Lro::AcceptedBare => accepted(None, urls.result),
        Lro::Sync | Lro::Async => with_etag(
            Answer::json(status, answer_body.clone()),
            resource_type,
            &answer_body,
        ),
    };
    Ok(with_operation(emulator, resource_type, answer, urls.status))
}

/// The headers of a write's answer that name its operation: `Azure-AsyncOperation` (unless the
/// provider answers with `Location` alone) and `Retry-After`.
fn with_operation(
    emulator: &Emulator,
    resource_type: &ResourceType,
    mut answer: Answer,
    status: String,
) -> Answer {
    if resource_type.put != Lro::AcceptedBare {
        answer.headers.push(("azure-asyncoperation", status));
    }
    answer
        .headers
        .push(("retry-after", emulator.config.retry_after_seconds.to_string()));
    answer
}

/// A write accepted for later: 202, the body if the provider sends one, and where to find the
/// result.
fn accepted(body: Option<Value>, result: String) -> Answer {
    let mut answer = body.map_or_else(
        || Answer::empty(StatusCode::ACCEPTED),
        |body| Answer::json(StatusCode::ACCEPTED, body),
    );
    answer.headers.push(("location", result));
    answer
}

/// Leaves out of a write's answer what Azure shows only later: what it assigns while it creates
/// the resource, and back-references of providers that show them on reads only.
fn leave_out_of_write_answer(resource_type: &ResourceType, body: &mut Value, created: bool) {
    if created {
        for property in resource_type.shown_when_provisioned {
            resources::remove_shaped(body, property);
        }
    }
    let Some(properties) = body.get_mut("properties") else {
        return;
    };
    if created && let Some(adjust) = resource_type.hooks.create_answer {
        adjust(properties);
    }
    if resource_type.flavour.back_references == BackReferenceStyle::OnReads {
        for back in resource_type.back_references {
            resources::remove_path(properties, back.property);
        }
    }
}

/// What a document asks for, apart from tags and what the service keeps (etags, provisioning
/// states).
fn goal_state(doc: &Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("etag");
                map.remove("provisioningState");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut goal = doc.clone();
    if let Some(map) = goal.as_object_mut() {
        map.remove("tags");
    }
    strip(&mut goal);
    goal
}

/// What an accepted write answers: the request as sent, named and in progress.
fn echo_request(
    id: &ResourceId,
    resource_type: &ResourceType,
    mut body: Map<String, Value>,
    location: &str,
    in_progress: Option<&str>,
) -> Value {
    for read_only in ["id", "name", "type", "etag"] {
        body.remove(read_only);
    }
    body.insert("name".into(), Value::String(id.name().to_owned()));
    body.insert("id".into(), Value::String(id.to_id()));
    body.insert("type".into(), Value::String(resource_type.name.to_owned()));
    if resource_type.location != Locality::Inherited {
        body.insert("location".into(), Value::String(location.to_owned()));
    }
    let mut body = Value::Object(body);
    if !body["properties"].is_object() {
        body["properties"] = json!({});
    }
    body["properties"]["provisioningState"] = json!(in_progress.unwrap_or("Succeeded"));
    for secret in resource_type.hooks.secrets {
        resources::remove_path(&mut body["properties"], secret);
    }
    body
}

/// Stores a document of its own, keeping whether it was seeded.
fn put_document(state: &mut State, key: &str, resource_type: &'static ResourceType, body: Value) {
    let seeded = state.resources.get(key).is_some_and(|stored| stored.seeded);
    state.put_doc(key, resource_type.name, body, seeded);
}

/// Stores a document another resource's write created or changed (a virtual machine's disk).
fn store_companion(state: &mut State, mut doc: Value) {
    let key = doc["id"].as_str().unwrap_or_default().to_ascii_lowercase();
    if doc["type"].as_str() == Some(crate::resource_groups::TYPE) {
        state.put_doc(&key, crate::resource_groups::TYPE, doc, false);
        return;
    }
    let Some(resource_type) = doc["type"].as_str().and_then(resources::find) else {
        return;
    };
    stamp_etag(&mut doc, resource_type);
    put_document(state, &key, resource_type, doc);
}

/// Stores a built document (or embedded child) and renders the answer body.
fn store(
    state: &mut State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    place: &Place,
    mut doc: Value,
    api_version: &str,
) -> Result<Value, ArmError> {
    Ok(match &place.child {
        None => {
            stamp_etag(&mut doc, resource_type);
            let stored = doc.clone();
            put_document(state, &place.key, resource_type, doc);
            render(state, &place.key, resource_type, Cow::Owned(stored), api_version)
        }
        Some((property, name)) => {
            let parent_type = parent_type(resource_type);
            let child = state
                .change_doc(&place.key, |parent| {
                    embedded::upsert(parent, property, doc);
                    (parent_type.finish)(parent);
                    stamp_etag(parent, parent_type);
                    embedded::find(parent, property, name).cloned()
                })
                .ok_or_else(|| parent_missing(id, resource_type, "write"))?;
            let child = child.unwrap_or(Value::Null);
            render_child(state, &id.key(), resource_type, Cow::Owned(child), api_version)
        }
    })
}

/// One resource's body as ARM answers it, without its embedded children's back-references.
fn render_child(
    state: &State,
    key: &str,
    resource_type: &'static ResourceType,
    child: Cow<'_, Value>,
    api_version: &str,
) -> Value {
    let mut child = child.into_owned();
    // What is derived may read what the answer leaves out (hidden bookkeeping).
    if let Some(derive) = resource_type.hooks.render {
        derive(state, &mut child);
    }
    shape_for(resource_type, &mut child, api_version);
    add_back_references(state, key, resource_type, &mut child);
    child
}

/// The URLs clients poll an operation at.
struct OperationUrls {
    status: String,
    result: String,
}

impl OperationUrls {
    fn new(
        base_url: &str,
        id: &ResourceId,
        resource_type: &ResourceType,
        location: &str,
        operation: &str,
        api_version: &str,
    ) -> Self {
        let status_segment = resource_type.flavour.status_segment;
        let (base, result_segment) = match resource_type.flavour.operations {
            OperationsAt::Location { result } => (
                format!(
                    "{base_url}/subscriptions/{}/providers/{}/locations/{location}",
                    id.subscription.as_deref().unwrap_or_default(),
                    id.namespace,
                ),
                result,
            ),
            OperationsAt::ResourceGroup { result } => (
                format!(
                    "{base_url}{}/providers/{}",
                    crate::path::resource_group_id(
                        id.subscription.as_deref().unwrap_or_default(),
                        id.resource_group.as_deref().unwrap_or_default()
                    ),
                    id.namespace,
                ),
                result,
            ),
        };
        Self {
            status: format!("{base}/{status_segment}/{operation}?api-version={api_version}"),
            result: format!("{base}/{result_segment}/{operation}?api-version={api_version}"),
        }
    }
}

fn delete(
    emulator: &Emulator,
    state: &mut State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    let place = Place::of(id, resource_type);
    // ARM refuses to delete a child of a resource that does not exist, naming the parent.
    if let Some(parent) = id.parent()
        && !state
            .resources
            .contains_key(Place::of(&parent, parent_type(resource_type)).key.as_str())
    {
        return Err(ArmError::resource_not_found(
            &type_path(&parent),
            id.resource_group.as_deref(),
        ));
    }
    let Some(current) = place.find(state).map(Cow::into_owned) else {
        return Ok(Answer::empty(StatusCode::NO_CONTENT));
    };
    check_preconditions(Some(&current), request)?;
    check_running(state, id, resource_type, &place, request)?;
    if let Some(deletable) = resource_type.hooks.deletable {
        deletable(state, &id.key())?;
    }
    // What goes with the resource (a Flexible scale set's machines) does not keep it.
    let members = resource_type
        .hooks
        .members
        .map(|members| members(state, &id.key()))
        .unwrap_or_default();
    if let Some((target, holder)) = state.first_referrer_into_from(&id.key(), |document| {
        !members.iter().any(|member| member == document)
    }) {
        return Err(in_use_error(&id.key(), &id.to_id(), target, holder));
    }
    let target = place.target();
    if resource_type.delete == Lro::Sync {
        finish_delete(state, &place);
        return Ok(if resource_type.delete_echoes {
            Answer::json(StatusCode::OK, current)
        } else {
            Answer::empty(StatusCode::OK)
        });
    }
    let running = state.running_operation(
        |completion| matches!(completion, Completion::Delete { target: t } if *t == target),
    );
    let operation_id = if let Some(running) = running {
        running
    } else {
        preempt(state, resource_type, &place);
        mark_deleting(state, &place);
        let done_at = request.now + emulator.config.latency(resource_type.name);
        state.start_operation(
            Operation::new(Completion::Delete { target }, resource_type.flavour.status),
            done_at,
        )
    };
    let location = current
        .get("location")
        .and_then(Value::as_str)
        .map_or_else(|| location_of_parent(state, id), str::to_owned);
    let urls = OperationUrls::new(
        request.base,
        id,
        resource_type,
        &location,
        &operation_id,
        request.api_version,
    );
    let mut answer = Answer::empty(StatusCode::ACCEPTED);
    answer.headers.push(("azure-asyncoperation", urls.status));
    answer.headers.push(("location", urls.result));
    answer
        .headers
        .push(("retry-after", emulator.config.retry_after_seconds.to_string()));
    Ok(answer)
}

/// The target of an operation's effect.
fn target_of(completion: &Completion) -> Option<&Target> {
    match completion {
        Completion::Provision { target, .. } | Completion::Delete { target } => Some(target),
        Completion::DeleteResourceGroup { .. } => None,
    }
}

/// Refuses a write or delete that meets an operation still running on the resource, as its
/// provider does. A delete meeting the resource's own deletion is no conflict: it answers with
/// the deletion in flight.
fn check_running(
    state: &State,
    id: &ResourceId,
    resource_type: &ResourceType,
    place: &Place,
    request: &Request<'_>,
) -> Result<(), ArmError> {
    let deleting = *request.method == Method::DELETE;
    let own = place.target();
    let same_deletion = |completion: &Completion| {
        deleting && matches!(completion, Completion::Delete { target } if *target == own)
    };
    match resource_type.flavour.concurrency {
        Concurrency::Refused => {
            let Some(running) = state.running_operation(|completion| {
                target_of(completion).is_some_and(|target| *target.key == *place.key)
                    && !same_deletion(completion)
            }) else {
                return Ok(());
            };
            let location = state
                .body(&place.key)
                .and_then(|body| body.get("location").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| location_of_parent(state, id));
            let url = OperationUrls::new(
                request.base,
                id,
                resource_type,
                &location,
                &running,
                request.api_version,
            )
            .status;
            Err(ArmError {
                details: Some(Vec::new()),
                ..ArmError::new(
                    StatusCode::CONFLICT,
                    "AnotherOperationInProgress",
                    format!(
                        "Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: {url}."
                    ),
                )
            })
        }
        Concurrency::Conflict => match state.running_operation(|completion| {
            target_of(completion).is_some_and(|target| *target == own) && !same_deletion(completion)
        }) {
            Some(_) => Err(ArmError::new(
                StatusCode::CONFLICT,
                "Conflict",
                "The request failed due to conflict with a concurrent request. To resolve it, please refer to https://aka.ms/activitylog to get more details on the conflicting requests.",
            )),
            None => Ok(()),
        },
        Concurrency::Busy | Concurrency::Preempted if deleting => Ok(()),
        Concurrency::Busy => {
            // The resource and everything under its top-level resource count as one.
            let top = id.top_level().key();
            let under = format!("{top}/");
            let running = state.running_operation(|completion| {
                target_of(completion)
                    .is_some_and(|target| *target.key == *top || target.key.starts_with(&under))
            });
            match running {
                Some(operation) => Err(ArmError::container_service(
                    StatusCode::CONFLICT,
                    "OperationNotAllowed",
                    format!(
                        "Operation is not allowed because there's an in progress operation ({operation}) on the managed cluster '{}'. Please wait for it to finish before starting a new operation.",
                        id.names.first().map_or("", String::as_str)
                    ),
                )),
                None => Ok(()),
            }
        }
        Concurrency::Preempted => {
            // A machine being deleted takes no more writes, to itself or its extensions.
            let machine = id.top_level().key();
            let marked = state.running_operation(
                |completion| matches!(completion, Completion::Delete { target } if *target.key == *machine),
            );
            match marked {
                Some(_) => Err(ArmError::new(
                    StatusCode::CONFLICT,
                    "OperationNotAllowed",
                    format!(
                        "Operation 'Update VM' is not allowed on VM '{}' since the VM is marked for deletion. You can only retry the Delete operation (or wait for an ongoing one to complete).",
                        id.names.first().map_or("", String::as_str)
                    ),
                )),
                None => Ok(()),
            }
        }
    }
}

/// For providers where a later write or delete takes over, ends the operation it replaces
/// `Canceled`, as Azure reports a preempted operation.
fn preempt(state: &mut State, resource_type: &ResourceType, place: &Place) {
    if resource_type.flavour.concurrency != Concurrency::Preempted {
        return;
    }
    let own = place.target();
    state.cancel_running(
        |completion| matches!(completion, Completion::Provision { target, .. } if *target == own),
        &ArmError::new(
            StatusCode::CONFLICT,
            "OperationPreempted",
            "Operation execution has been preempted by a more recent operation.",
        ),
    );
}

fn location_of_parent(state: &State, id: &ResourceId) -> String {
    id.parent()
        .and_then(|parent| state.body(&parent.key()))
        .and_then(|parent| parent.get("location").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "global".to_owned())
}

fn mark_deleting(state: &mut State, place: &Place) {
    let Some(stored) = state.resources.get_mut(place.key.as_str()) else {
        return;
    };
    stored.update(|body| match &place.child {
        None => resources::set_provisioning_state(body, "Deleting", false),
        Some((property, name)) => {
            if let Some(child) = embedded::find_mut(body, property, name) {
                resources::set_provisioning_state(child, "Deleting", false);
            }
        }
    });
}

fn finish_delete(state: &mut State, place: &Place) {
    match &place.child {
        None => state.remove_resource(&place.key),
        Some((property, name)) => state.remove_embedded(&place.key, property, name),
    }
}

/// Refuses a request of another method than `method`.
fn only(request: &Request<'_>, method: &Method) -> Result<(), ArmError> {
    if request.method == method {
        Ok(())
    } else {
        Err(ArmError::method_not_allowed(request.method.as_str()))
    }
}

/// Answers a list request.
pub(crate) fn collection(
    emulator: &Emulator,
    state: &State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    only(request, &Method::GET)?;
    let group = resource_group(state, id)?;
    if let Some(list) = resource_type.hooks.list {
        let items: Vec<Value> = list(state, &id.scope, request.filter)?
            .iter()
            .filter_map(|key| {
                let body = state.body(key)?;
                Some(render(state, key, resource_type, body, request.api_version))
            })
            .collect();
        return Ok(page(emulator, request, &items));
    }
    let segment = resource_type.name.rsplit('/').next().unwrap_or_default();
    let api_version = request.api_version;
    // Only the items of the requested page are rendered; the others are only counted.
    let render_document =
        |(key, stored): &(&str, &Stored)| render(state, key, resource_type, stored.body(), api_version);
    if let Some(parent) = id.parent_of_collection() {
        let parent = parent.canonical(parent_type(resource_type).name, group.as_deref());
        let parent_key = parent.key();
        let Some(stored) = state.resources.get(parent_key.as_str()) else {
            return Err(parent_missing(&parent.child(segment, "-"), resource_type, "read"));
        };
        return Ok(match resource_type.storage {
            Storage::Embedded { property } => {
                let parent_body = stored.body();
                page_of(
                    emulator,
                    request,
                    embedded::all(&parent_body, property),
                    |child| {
                        let key = child
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_ascii_lowercase();
                        render_child(state, &key, resource_type, Cow::Borrowed(child), api_version)
                    },
                )
            }
            Storage::Document => {
                let prefix = format!("{parent_key}/{}/", segment.to_ascii_lowercase());
                let documents: Vec<_> = documents_under(state, &prefix).collect();
                page_of(emulator, request, &documents, render_document)
            }
        });
    }
    let documents: Vec<_> = if group.is_some() {
        let prefix = format!(
            "{}/providers/{}/",
            id.scope,
            resource_type.name.split('/').next().unwrap_or_default()
        );
        let prefix = format!("{}{}/", prefix.to_ascii_lowercase(), segment.to_ascii_lowercase());
        documents_under(state, &prefix).collect()
    } else {
        let prefix = format!("{}/", id.scope.to_ascii_lowercase());
        state
            .under(&prefix)
            .filter(|(_, stored)| stored.type_name == resource_type.name)
            .collect()
    };
    Ok(page_of(emulator, request, &documents, render_document))
}

/// The documents directly under `prefix` (not those under them).
fn documents_under<'a>(state: &'a State, prefix: &str) -> impl Iterator<Item = (&'a str, &'a Stored)> {
    let start = prefix.len();
    state
        .under(prefix)
        .filter(move |(key, _)| !key[start..].contains('/'))
}

/// One page of a list, with a `nextLink` when more follow.
pub(crate) fn page(emulator: &Emulator, request: &Request<'_>, items: &[Value]) -> Answer {
    page_of(emulator, request, items, Value::clone)
}

/// One page of a list, rendering only the items on it.
fn page_of<T>(
    emulator: &Emulator,
    request: &Request<'_>,
    items: &[T],
    render: impl FnMut(&T) -> Value,
) -> Answer {
    let size = emulator.config.page_size.max(1);
    let end = request.skip.saturating_add(size).min(items.len());
    let value: Vec<Value> = items
        .get(request.skip..end)
        .map(|page| page.iter().map(render).collect())
        .unwrap_or_default();
    let mut body = json!({ "value": value });
    if end < items.len() {
        // The next page keeps the request's filter.
        let filter = request.filter.map_or_else(String::new, |filter| {
            let encoded: String = form_urlencoded::byte_serialize(filter.as_bytes()).collect();
            format!("&$filter={encoded}")
        });
        body["nextLink"] = json!(format!(
            "{}{}?api-version={}{filter}&$skiptoken={end}",
            request.base, request.path, request.api_version
        ));
    }
    Answer::json(StatusCode::OK, body)
}

/// Answers a poll of a provider's long-running operation.
pub(crate) fn poll(
    emulator: &Emulator,
    state: &State,
    operation_id: &str,
    poll: Poll,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    let operation = state
        .operation(operation_id)
        .ok_or_else(|| ArmError::operation_not_found(operation_id))?;
    if poll == Poll::Status {
        let mut body = operation.status_body(operation_id);
        if let (StatusStyle::Accepting { status, result }, Outcome::Running) =
            (operation.style, &operation.outcome)
        {
            // Private DNS answers a running operation 202, with where to poll next.
            let here = format!(
                "{}{}?api-version={}",
                request.base, request.path, request.api_version
            );
            let mut answer = Answer::json(StatusCode::ACCEPTED, body);
            answer.headers.push((
                "location",
                here.replacen(&format!("/{status}/"), &format!("/{result}/"), 1),
            ));
            answer.headers.push(("azure-asyncoperation", here));
            answer
                .headers
                .push(("retry-after", emulator.config.retry_after_seconds.to_string()));
            return Ok(answer);
        }
        if operation.style == StatusStyle::TimedWithOutput
            && matches!(operation.outcome, Outcome::Succeeded)
            && let Completion::Provision { target, .. } = &operation.completion
            && let Some(output) = provisioned(state, target, request.api_version)
        {
            body["properties"] = json!({ "output": output });
        }
        return Ok(Answer::json(StatusCode::OK, body));
    }
    match (&operation.outcome, &operation.completion) {
        (Outcome::Running, _) => {
            let mut answer = Answer::empty(StatusCode::ACCEPTED);
            answer.headers.push((
                "location",
                format!(
                    "{}{}?api-version={}",
                    request.base, request.path, request.api_version
                ),
            ));
            answer
                .headers
                .push(("retry-after", emulator.config.retry_after_seconds.to_string()));
            Ok(answer)
        }
        (Outcome::Failed(error) | Outcome::Canceled(error), _) => Err((**error).clone()),
        (Outcome::Succeeded, Completion::Provision { target, .. }) => {
            let body = provisioned(state, target, request.api_version).unwrap_or(Value::Null);
            Ok(Answer::json(StatusCode::OK, body))
        }
        (Outcome::Succeeded, _) => Ok(Answer::empty(StatusCode::NO_CONTENT)),
    }
}

/// The resource a provisioning operation wrote, as a read answers it.
fn provisioned(state: &State, target: &Target, api_version: &str) -> Option<Value> {
    let stored = state.resources.get(&target.key)?;
    let resource_type = resources::find(stored.type_name)?;
    let Some((property, name)) = &target.child else {
        return Some(render(
            state,
            &target.key,
            resource_type,
            stored.body(),
            api_version,
        ));
    };
    let body = stored.body();
    let child = embedded::find(&body, property, name)?;
    let (_, child_type) =
        resources::embedded_children(resource_type.name).find(|(candidate, _)| candidate == property)?;
    let child_key = child["id"].as_str().unwrap_or_default().to_ascii_lowercase();
    Some(render_child(
        state,
        &child_key,
        child_type,
        Cow::Borrowed(child),
        api_version,
    ))
}

/// Answers `POST {resource}/{action}`: `id` names the collection the path spells, the resource
/// being all of it but the action's segment.
pub(crate) fn action(
    emulator: &Emulator,
    state: &mut State,
    id: &ResourceId,
    resource_type: &'static ResourceType,
    action: &'static Action,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    only(request, &Method::POST)?;
    let group = resource_group(state, id)?;
    check_group_writable(state, id)?;
    let target = ResourceId {
        types: id.types[..id.types.len().saturating_sub(1)].to_vec(),
        ..id.clone()
    }
    .canonical(resource_type.name, group.as_deref());
    let place = Place::of(&target, resource_type);
    let doc = place
        .find(state)
        .map(Cow::into_owned)
        .ok_or_else(|| missing(&target, resource_type, state))?;
    let body = if request.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        Value::Object(parse_object(request.body)?)
    };
    let mut act = Act {
        id: &target,
        doc,
        body,
        query: request.query,
        state,
        companions: Vec::new(),
        failure: None,
    };
    match (action.run)(&mut act)? {
        Acted::Answered(body) => Ok(Answer::json(StatusCode::OK, body)),
        Acted::Started => {
            check_running(state, &target, resource_type, &place, request)?;
            let Act {
                doc,
                companions,
                failure,
                ..
            } = act;
            for companion in companions {
                store_companion(state, companion);
            }
            let location = doc["location"]
                .as_str()
                .map_or_else(|| location_of_parent(state, &target), str::to_owned);
            store(state, &target, resource_type, &place, doc, request.api_version)?;
            let failure = failure.map(|error| Box::new(Unsuccessful::Failed(error)));
            let operation_id = state.start_operation(
                Operation::new(
                    Completion::Provision {
                        target: place.target(),
                        failure,
                    },
                    resource_type.flavour.status,
                ),
                request.now + emulator.config.latency(resource_type.name),
            );
            let urls = OperationUrls::new(
                request.base,
                &target,
                resource_type,
                &location,
                &operation_id,
                request.api_version,
            );
            let mut answer = Answer::empty(StatusCode::ACCEPTED);
            answer.headers.push(("location", urls.result));
            Ok(with_operation(emulator, resource_type, answer, urls.status))
        }
    }
}

/// Answers a request to a catalogue: one of its entries, or its collection.
pub(crate) fn catalogue(
    emulator: &Emulator,
    state: &State,
    catalogue: &Catalogue,
    id: &ResourceId,
    request: &Request<'_>,
    entry: bool,
) -> Result<Answer, ArmError> {
    only(request, &Method::GET)?;
    let answer = if entry {
        catalogue.entry
    } else {
        catalogue.collection
    };
    let answer =
        answer.ok_or_else(|| ArmError::invalid_resource_type(&id.type_name(), request.api_version))?;
    let lookup = Lookup {
        id,
        config: &emulator.config,
        state,
        filter: request.filter,
    };
    Ok(Answer::json(StatusCode::OK, answer(&lookup)?))
}
