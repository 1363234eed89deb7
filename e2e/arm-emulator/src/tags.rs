//! Tags at any scope: `{scope}/providers/Microsoft.Resources/tags/default`, on a subscription, a
//! resource group or a resource. GET reads them, PUT replaces them, PATCH merges, replaces or
//! deletes some (`operation`), DELETE removes them all. Tags of a group or resource are its own
//! `tags`, as its reads show them.

use axum::http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::error::ArmError;
use crate::path::ArmPath;
use crate::state::State;
use crate::{Answer, engine, resource_groups, resources};

/// Characters Azure refuses in tag names.
const FORBIDDEN: &[char] = &['<', '>', '%', '&', '\\', '?', '/'];

/// What tags may be put on.
enum Target {
    Subscription(String),
    /// The stored document's key.
    Document(String),
}

/// Where the scope's tags live, checking that it exists.
fn target(state: &State, scope: &str) -> Result<Target, ArmError> {
    let trimmed = scope.trim_matches('/');
    let segments: Vec<&str> = trimmed.split('/').collect();
    if let [keyword, subscription] = segments.as_slice()
        && keyword.eq_ignore_ascii_case("subscriptions")
    {
        return Ok(Target::Subscription(subscription.to_ascii_lowercase()));
    }
    let key = format!("/{trimmed}").to_ascii_lowercase();
    if let Some(stored) = state.resources.get(key.as_str()) {
        if stored.type_name == resource_groups::TYPE {
            resource_groups::check_not_deleting(&stored.body())?;
        }
        return Ok(Target::Document(key));
    }
    Err(match (segments.as_slice(), ArmPath::parse(scope)) {
        ([_, _, _, group], _) => ArmError::resource_group_not_found(group),
        (_, Some(ArmPath::Resource(id))) if resources::find(&id.type_name()).is_some() => {
            ArmError::not_found(scope)
        }
        _ => ArmError::new(
            StatusCode::BAD_REQUEST,
            "InvalidScope",
            format!(
                "The scope '{scope}' names nothing that can hold tags: a subscription, a resource group or a resource."
            ),
        ),
    })
}

/// The tags of a request body's `properties.tags`, checked as Azure checks them.
fn requested(body: &Value) -> Result<Map<String, Value>, ArmError> {
    let tags = body
        .pointer("/properties/tags")
        .ok_or_else(|| crate::resources::fields::missing("properties.tags"))?;
    let Some(tags) = tags
        .as_object()
        .filter(|tags| tags.values().all(Value::is_string))
    else {
        return Err(crate::resources::fields::wrong_type(
            "properties.tags",
            "an object whose values are strings",
        ));
    };
    if let Some(name) = tags.keys().find(|name| name.contains(FORBIDDEN)) {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "InvalidTagNameCharacters",
            format!(
                "The tag name '{name}' has characters that are not allowed: '{}'.",
                FORBIDDEN.iter().collect::<String>()
            ),
        ));
    }
    Ok(tags.clone())
}

fn current(state: &State, target: &Target) -> Map<String, Value> {
    match target {
        Target::Subscription(subscription) => state
            .subscription_tags
            .get(subscription)
            .cloned()
            .unwrap_or_default(),
        Target::Document(key) => state
            .body(key)
            .and_then(|body| body.get("tags").and_then(Value::as_object).cloned())
            .unwrap_or_default(),
    }
}

fn store(state: &mut State, target: &Target, tags: Map<String, Value>) {
    match target {
        Target::Subscription(subscription) => {
            state.subscription_tags.insert(subscription.clone(), tags);
        }
        Target::Document(key) => engine::retag(state, key, tags),
    }
}

/// Answers a request to the tags of `scope`.
pub(crate) fn answer(
    state: &mut State,
    scope: &str,
    method: &Method,
    body: &[u8],
) -> Result<Answer, ArmError> {
    let target = target(state, scope)?;
    let tags = match *method {
        Method::GET => current(state, &target),
        Method::PUT => {
            let tags = requested(&parse(body)?)?;
            store(state, &target, tags.clone());
            tags
        }
        Method::PATCH => {
            let body = parse(body)?;
            let operation = body
                .get("operation")
                .and_then(Value::as_str)
                .ok_or_else(|| crate::resources::fields::missing("operation"))?;
            let given = requested(&body)?;
            let mut tags = current(state, &target);
            if operation.eq_ignore_ascii_case("Merge") {
                tags.extend(given);
            } else if operation.eq_ignore_ascii_case("Replace") {
                tags = given;
            } else if operation.eq_ignore_ascii_case("Delete") {
                // A name alone deletes the tag; with a value, only when the value matches.
                tags.retain(|name, value| {
                    given
                        .get(name)
                        .is_none_or(|wanted| wanted.as_str().is_some_and(|w| !w.is_empty() && w != value))
                });
            } else {
                return Err(ArmError::invalid_parameter(
                    "operation",
                    format!("The tag operation '{operation}' is not one of Merge, Replace, Delete."),
                ));
            }
            store(state, &target, tags.clone());
            tags
        }
        Method::DELETE => {
            store(state, &target, Map::new());
            return Ok(Answer::empty(StatusCode::OK));
        }
        _ => return Err(ArmError::method_not_allowed(method.as_str())),
    };
    Ok(Answer::json(
        StatusCode::OK,
        json!({
            "id": format!("{}/providers/Microsoft.Resources/tags/default", scope.trim_end_matches('/')),
            "name": "default",
            "type": "Microsoft.Resources/tags",
            "properties": { "tags": tags },
        }),
    ))
}

fn parse(body: &[u8]) -> Result<Value, ArmError> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| ArmError::invalid_request_content("The request content must be a JSON object."))
}
