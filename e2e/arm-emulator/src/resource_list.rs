//! The generic lists of resources: `/subscriptions/{id}/resources` and
//! `/subscriptions/{id}/resourceGroups/{group}/resources` (what `az resource list` reads). They
//! show every tracked resource (one with a location) in the scope, in the generic shape ARM
//! answers (no `properties`), filtered by `$filter` and paged.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::engine::Request;
use crate::error::ArmError;
use crate::path::{ArmPath, resource_group_id};
use crate::state::State;
use crate::{Answer, Emulator, resource_groups};

/// The fields of the generic shape, besides `id`, `name` and `type`.
const GENERIC: &[&str] = &[
    "kind",
    "managedBy",
    "location",
    "extendedLocation",
    "tags",
    "sku",
    "plan",
    "identity",
    "zones",
];

/// One condition of a `$filter`.
enum Condition {
    /// `<field> eq '<value>'` on `resourceType`, `name`, `location`, `resourceGroup`,
    /// `tagName` or `tagValue`.
    Equals(String, String),
    /// `substringof('<value>', name)`.
    NameContains(String),
}

fn invalid_filter(filter: &str) -> ArmError {
    ArmError::new(
        StatusCode::BAD_REQUEST,
        "InvalidFilterInQueryString",
        format!(
            "The $filter '{filter}' is not supported: use conditions such as resourceType eq '<type>', name eq '<name>', location eq '<location>', resourceGroup eq '<group>', tagName eq '<name>' (and tagValue eq '<value>'), or substringof('<text>', name), joined with 'and'."
        ),
    )
}

/// A quoted literal: `'x'` (a doubled quote stands for one).
fn literal(text: &str) -> Option<String> {
    let inner = text.trim().strip_prefix('\'')?.strip_suffix('\'')?;
    Some(inner.replace("''", "'"))
}

fn parse(filter: &str) -> Result<Vec<Condition>, ArmError> {
    let lower = filter.to_ascii_lowercase();
    let mut conditions = Vec::new();
    let mut start = 0;
    // Split on ` and ` outside quotes.
    let mut pieces = Vec::new();
    let mut quoted = false;
    for (index, c) in filter.char_indices() {
        if c == '\'' {
            quoted = !quoted;
        } else if !quoted && lower[index..].starts_with(" and ") {
            pieces.push(&filter[start..index]);
            start = index + " and ".len();
        }
    }
    pieces.push(&filter[start..]);
    for piece in pieces
        .iter()
        .map(|piece| piece.trim())
        .filter(|piece| !piece.is_empty())
    {
        let piece_lower = piece.to_ascii_lowercase();
        if piece_lower.starts_with("substringof(") && piece.ends_with(')') {
            let arguments = &piece["substringof(".len()..piece.len() - 1];
            let (text, field) = arguments.rsplit_once(',').ok_or_else(|| invalid_filter(filter))?;
            if !field.trim().eq_ignore_ascii_case("name") {
                return Err(invalid_filter(filter));
            }
            conditions.push(Condition::NameContains(
                literal(text).ok_or_else(|| invalid_filter(filter))?,
            ));
            continue;
        }
        let at = piece_lower.find(" eq ").ok_or_else(|| invalid_filter(filter))?;
        let (field, value) = (&piece[..at], &piece[at + " eq ".len()..]);
        let field = field.trim();
        let known = [
            "resourceType",
            "name",
            "location",
            "resourceGroup",
            "tagName",
            "tagValue",
        ];
        let Some(field) = known.iter().find(|known| known.eq_ignore_ascii_case(field)) else {
            return Err(invalid_filter(filter));
        };
        conditions.push(Condition::Equals(
            (*field).to_owned(),
            literal(value).ok_or_else(|| invalid_filter(filter))?,
        ));
    }
    Ok(conditions)
}

/// Whether a generic item meets every condition. `tagName` and `tagValue` go together: some tag
/// has that name (and that value).
fn meets(item: &Map<String, Value>, group: &str, conditions: &[Condition]) -> bool {
    let text = |field: &str| item.get(field).and_then(Value::as_str).unwrap_or_default();
    let tags = item.get("tags").and_then(Value::as_object);
    let tag_name = conditions.iter().find_map(|condition| match condition {
        Condition::Equals(field, value) if field == "tagName" => Some(value.as_str()),
        _ => None,
    });
    conditions.iter().all(|condition| match condition {
        Condition::NameContains(part) => text("name")
            .to_ascii_lowercase()
            .contains(&part.to_ascii_lowercase()),
        Condition::Equals(field, value) => match field.as_str() {
            "resourceType" => text("type").eq_ignore_ascii_case(value),
            "name" => text("name").eq_ignore_ascii_case(value),
            "location" => text("location").eq_ignore_ascii_case(value),
            "resourceGroup" => group.eq_ignore_ascii_case(value),
            "tagName" => tags.is_some_and(|tags| tags.keys().any(|name| name.eq_ignore_ascii_case(value))),
            "tagValue" => tags.is_some_and(|tags| {
                tags.iter().any(|(name, tag)| {
                    tag_name.is_none_or(|wanted| name.eq_ignore_ascii_case(wanted))
                        && tag.as_str() == Some(value.as_str())
                })
            }),
            _ => false,
        },
    })
}

/// Answers a generic list of the subscription's, or the group's, resources.
pub(crate) fn list(
    emulator: &Emulator,
    state: &State,
    subscription: &str,
    group: Option<&str>,
    request: &Request<'_>,
) -> Result<Answer, ArmError> {
    let prefix = match group {
        Some(group) => {
            let key = resource_group_id(subscription, group).to_ascii_lowercase();
            if !state.resources.contains_key(key.as_str()) {
                return Err(ArmError::resource_group_not_found(group));
            }
            format!("{key}/providers/")
        }
        None => format!("/subscriptions/{subscription}/resourcegroups/").to_ascii_lowercase(),
    };
    let conditions = request.filter.map(parse).transpose()?.unwrap_or_default();
    let items: Vec<Value> = state
        .under(&prefix)
        .filter(|(_, stored)| stored.type_name != resource_groups::TYPE)
        .filter_map(|(key, stored)| {
            // Tracked resources (those with a location, children such as extensions
            // included) of a resource group; not extension resources such as role assignments.
            let Some(ArmPath::Resource(id)) = ArmPath::parse(key) else {
                return None;
            };
            let body = stored.body();
            if !id.scope_is_resource_group() || body.get("location").is_none() {
                return None;
            }
            let mut item = Map::new();
            for field in ["id", "name", "type"].iter().chain(GENERIC) {
                if let Some(value) = body.get(*field).filter(|value| !value.is_null()) {
                    item.insert((*field).to_owned(), value.clone());
                }
            }
            let group = id.resource_group.unwrap_or_default();
            meets(&item, &group, &conditions).then_some(Value::Object(item))
        })
        .collect();
    Ok(crate::engine::page(emulator, request, &items))
}
