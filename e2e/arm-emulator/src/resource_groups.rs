//! `Microsoft.Resources/resourceGroups`: create, read, update tags, list and delete (as an LRO that
//! deletes everything in the group, with the groups its resources manage, unless something
//! outside it still refers into it).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::config::Location;
use crate::engine::normalise_location;
use crate::error::ArmError;
use crate::path::resource_group_id;
use crate::state::{Completion, Operation, Outcome, State, StatusStyle, references};
use crate::{Answer, Emulator};

pub(crate) const TYPE: &str = "Microsoft.Resources/resourceGroups";

fn key(subscription: &str, name: &str) -> String {
    resource_group_id(subscription, name).to_ascii_lowercase()
}

/// The tags of a request body: absent, or an object of strings.
fn tags(body: &Map<String, Value>) -> Result<Option<Map<String, Value>>, ArmError> {
    match body.get("tags") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(tags)) if tags.values().all(Value::is_string) => Ok(Some(tags.clone())),
        Some(_) => Err(ArmError::invalid_request_content(
            "The property 'tags' must be an object whose values are strings.",
        )),
    }
}

/// Refuses a write while the group is being deleted, as ARM refuses it.
pub(crate) fn check_not_deleting(group: &Value) -> Result<(), ArmError> {
    if group["properties"]["provisioningState"] != "Deleting" {
        return Ok(());
    }
    Err(ArmError::new(
        StatusCode::CONFLICT,
        "ResourceGroupBeingDeleted",
        format!(
            "The resource group '{}' is in deprovisioning state and cannot perform this operation.",
            group["name"].as_str().unwrap_or_default()
        ),
    ))
}

fn object(body: &Value) -> Result<&Map<String, Value>, ArmError> {
    body.as_object()
        .ok_or_else(|| ArmError::invalid_request_content("The request content must be a JSON object."))
}

pub(crate) fn get(state: &State, subscription: &str, name: &str) -> Result<Answer, ArmError> {
    state
        .body(&key(subscription, name))
        .map(|body| Answer::json(StatusCode::OK, body.into_owned()))
        .ok_or_else(|| ArmError::resource_group_not_found(name))
}

pub(crate) fn head(state: &State, subscription: &str, name: &str) -> Answer {
    let status = if state.resources.contains_key(key(subscription, name).as_str()) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    };
    Answer::empty(status)
}

pub(crate) fn put(
    state: &mut State,
    locations: &[Location],
    subscription: &str,
    name: &str,
    body: &Value,
) -> Result<Answer, ArmError> {
    let body = object(body)?;
    crate::resources::names::check_resource_group(name)?;
    let location = match body.get("location") {
        Some(Value::String(location)) if !location.is_empty() => location.clone(),
        None | Some(Value::String(_) | Value::Null) => {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "LocationRequired",
                "The location property is required for this definition.",
            ));
        }
        Some(_) => {
            return Err(ArmError::invalid_request_content(
                "The property 'location' must be a string.",
            ));
        }
    };
    let tags = tags(body)?;
    // Malformed content is refused before the location is looked at, as ARM does.
    let location = known_location(locations, &location)?;
    let key = key(subscription, name);
    let existing = state
        .resources
        .get(key.as_str())
        .map(|stored| (stored.body().into_owned(), stored.seeded));
    if let Some((existing, _)) = &existing {
        check_not_deleting(existing)?;
        let current = existing["location"].as_str().unwrap_or_default();
        if !current.eq_ignore_ascii_case(&location) {
            return Err(ArmError::new(
                StatusCode::CONFLICT,
                "InvalidResourceGroupLocation",
                format!(
                    "Invalid resource group location '{location}'. The Resource group already exists in location '{current}'."
                ),
            ));
        }
    }
    // The group keeps the name and location it was created with.
    let (stored_name, stored_location) =
        existing
            .as_ref()
            .map_or((name.to_owned(), location.clone()), |(existing, _)| {
                (
                    existing["name"].as_str().unwrap_or(name).to_owned(),
                    existing["location"].as_str().unwrap_or(&location).to_owned(),
                )
            });
    let mut group = json!({
        "id": resource_group_id(subscription, &stored_name),
        "name": stored_name,
        "type": TYPE,
        "location": stored_location,
    });
    if let Some(tags) = tags {
        group["tags"] = Value::Object(tags);
    }
    if let Some(managed_by) = body.get("managedBy").and_then(Value::as_str) {
        group["managedBy"] = Value::String(managed_by.to_owned());
    }
    group["properties"] = json!({ "provisioningState": "Succeeded" });
    let status = if existing.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let seeded = existing.is_some_and(|(_, seeded)| seeded);
    state.put_doc(&key, TYPE, group.clone(), seeded);
    Ok(Answer::json(status, group))
}

/// A requested location in Azure's spelling (`West US 2` -> `westus2`); one the emulator does not
/// serve is refused as ARM refuses a region it does not have.
fn known_location(locations: &[Location], requested: &str) -> Result<String, ArmError> {
    let location = normalise_location(requested);
    if locations.iter().any(|known| known.name == location) {
        return Ok(location);
    }
    let known: Vec<&str> = locations.iter().map(|known| known.name.as_str()).collect();
    Err(ArmError::new(
        StatusCode::BAD_REQUEST,
        "LocationNotAvailableForResourceGroup",
        format!(
            "The provided location '{requested}' is not available for resource group. List of available regions is '{}'.",
            known.join(",")
        ),
    ))
}

pub(crate) fn patch(
    state: &mut State,
    subscription: &str,
    name: &str,
    body: &Value,
) -> Result<Answer, ArmError> {
    let tags = tags(object(body)?)?;
    let stored = state
        .resources
        .get_mut(key(subscription, name).as_str())
        .ok_or_else(|| ArmError::resource_group_not_found(name))?;
    check_not_deleting(&stored.body())?;
    let body = match tags {
        Some(tags) => stored.update(|body| {
            body["tags"] = Value::Object(tags);
            body.clone()
        }),
        None => stored.body().into_owned(),
    };
    Ok(Answer::json(StatusCode::OK, body))
}

pub(crate) fn list(
    emulator: &Emulator,
    state: &State,
    subscription: &str,
    request: &crate::engine::Request<'_>,
) -> Answer {
    let prefix = format!("/subscriptions/{subscription}/resourcegroups/").to_ascii_lowercase();
    let value: Vec<Value> = state
        .under(&prefix)
        .filter(|(id, _)| !id[prefix.len()..].contains('/'))
        .map(|(_, stored)| stored.body().into_owned())
        .collect();
    crate::engine::page(emulator, request, &value)
}

pub(crate) fn delete(
    emulator: &Emulator,
    state: &mut State,
    subscription: &str,
    name: &str,
    request: &crate::engine::Request<'_>,
) -> Answer {
    let key = key(subscription, name);
    let Some(stored) = state.resources.get_mut(key.as_str()) else {
        // Deleting a group that does not exist succeeds without an operation, as in Azure.
        return Answer::empty(StatusCode::NO_CONTENT);
    };
    stored.update(|body| body["properties"]["provisioningState"] = json!("Deleting"));
    let retry_after = emulator.config.retry_after_seconds;
    // A group already being deleted is accepted again, with the operation in flight.
    let in_flight = state
        .running_operation(|completion| matches!(completion, Completion::DeleteResourceGroup { key: deleting } if **deleting == *key));
    let id = in_flight.unwrap_or_else(|| {
        state.start_operation(
            Operation::new(
                Completion::DeleteResourceGroup { key: Arc::from(key) },
                StatusStyle::Plain,
            ),
            request.now + emulator.config.latency(TYPE),
        )
    });
    Answer::accepted(
        Emulator::operation_result_url(request.base, subscription, &id),
        retry_after,
    )
}

/// The status of a subscription-level operation result: 202 while it runs, 200 when done.
pub(crate) fn operation_result(
    emulator: &Emulator,
    state: &State,
    subscription: &str,
    id: &str,
    request: &crate::engine::Request<'_>,
) -> Result<Answer, ArmError> {
    let operation = state
        .operation(id)
        .ok_or_else(|| ArmError::operation_not_found(id))?;
    match &operation.outcome {
        Outcome::Running => Ok(Answer::accepted(
            Emulator::operation_result_url(request.base, subscription, id),
            emulator.config.retry_after_seconds,
        )),
        Outcome::Failed(error) | Outcome::Canceled(error) => Err((**error).clone()),
        Outcome::Succeeded => Ok(Answer::empty(StatusCode::OK)),
    }
}

/// Completes a group's deletion. Resources managing another group go first, with that group;
/// then everything in it goes, unless a resource outside the group still refers into it: then,
/// as in Azure, what is referred to stays with what it needs in the group, the rest goes, the
/// group is `Succeeded` again and the operation fails with `ResourceGroupDeletionBlocked`,
/// telling why each remaining resource could not be deleted.
pub(crate) fn remove(state: &mut State, key: &str) -> Outcome {
    remove_managers(state, key);
    let kept = kept_in_group(state, key);
    if kept.is_empty() {
        state.remove_tree(key);
        return Outcome::Succeeded;
    }
    let error = deletion_blocked(state, key, &kept);
    let prefix = format!("{key}/");
    let doomed: Vec<Arc<str>> = state
        .under(&prefix)
        .filter(|(id, _)| !kept.contains(*id))
        .map(|(id, _)| Arc::from(id))
        .collect();
    for id in doomed {
        state.remove_doc(&id);
    }
    if let Some(group) = state.resources.get_mut(key) {
        group.update(|body| body["properties"]["provisioningState"] = json!("Succeeded"));
    }
    Outcome::Failed(Box::new(error))
}

/// Deletes first the resources in the group that manage a group elsewhere (an AKS cluster and
/// its node resource group), as Azure does: their delete takes the managed group along, so what
/// it holds (a node pool's scale set in a subnet of this group) no longer keeps this group's
/// resources from going.
fn remove_managers(state: &mut State, key: &str) {
    let prefix = format!("{key}/");
    let managers: Vec<(String, String)> = state
        .resources
        .iter()
        .filter(|(_, stored)| stored.type_name == TYPE)
        .filter_map(|(group, stored)| {
            let manager = stored.body()["managedBy"].as_str()?.to_ascii_lowercase();
            // Only a manager that is still there: a group it was not deleted with stays put.
            (manager.starts_with(&prefix) && state.resources.contains_key(manager.as_str()))
                .then(|| (group.to_string(), manager))
        })
        .collect();
    for (group, manager) in managers {
        state.remove_resource(&manager);
        // A manager whose type does not take its group along: the group goes the same way.
        if state.resources.contains_key(group.as_str()) {
            remove(state, &group);
        }
    }
}

/// The documents of the group that a deletion must leave: those a resource outside the group
/// refers to, and with each of them what lies under it, what holds it, and what it refers to in
/// the group, so that no reference is left dangling.
fn kept_in_group(state: &State, key: &str) -> BTreeSet<String> {
    let prefix = format!("{key}/");
    let mut pending: Vec<String> = state
        .references_under(&prefix)
        .filter(|(_, document)| !document.starts_with(&prefix))
        .filter_map(|(target, _)| state.document_of(target))
        .map(str::to_owned)
        .collect();
    let mut kept = BTreeSet::new();
    while let Some(document) = pending.pop() {
        if !document.starts_with(&prefix) || kept.contains(&document) {
            continue;
        }
        pending.extend(state.under(&format!("{document}/")).map(|(id, _)| id.to_owned()));
        if let Some((above, _)) = document.rsplit_once('/')
            && let Some(holder) = state.document_of(above)
        {
            pending.push(holder.to_owned());
        }
        if let Some(body) = state.body(&document) {
            pending.extend(
                references(&document, &body)
                    .iter()
                    .filter_map(|reference| state.document_of(&reference.target))
                    .map(str::to_owned),
            );
        }
        kept.insert(document);
    }
    kept
}

/// The error a blocked group deletion ends with: ARM's, naming the resources that stay, with the
/// in-use error of each that something left standing refers to.
fn deletion_blocked(state: &State, key: &str, kept: &BTreeSet<String>) -> ArmError {
    let prefix = format!("{key}/");
    let stays = |document: &str| !document.starts_with(&prefix) || kept.contains(document);
    let mut identifiers = Vec::new();
    let mut details = Vec::new();
    for document in kept {
        let id = state
            .body(document)
            .and_then(|body| body.get("id").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| document.clone());
        identifiers.push(
            id.split_once("/providers/")
                .map_or(id.as_str(), |(_, typed)| typed)
                .to_owned(),
        );
        if let Some((target, holder)) = state.first_referrer_into_from(document, stays) {
            let in_use = crate::engine::in_use_error(document, &id, target, holder);
            let inner = json!({ "error": { "code": in_use.code, "message": in_use.message, "details": [] } });
            details.push(json!({ "target": id, "message": inner.to_string() }));
        }
    }
    let name = state
        .body(key)
        .and_then(|group| group.get("name").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    ArmError {
        details: Some(details),
        ..ArmError::new(
            StatusCode::CONFLICT,
            "ResourceGroupDeletionBlocked",
            format!(
                "Deletion of resource group '{name}' failed as resources with identifiers '{}' could not be deleted. The provisioning state of the resource group will be rolled back. The tracking Id is '{}'. Please check audit logs for more details.",
                identifiers.join(","),
                uuid::Uuid::new_v4()
            ),
        )
    }
}
