//! Child resources kept inside their parent's document, in an array under `properties`.

use serde_json::Value;

fn items<'a>(body: &'a Value, property: &str) -> Option<&'a Vec<Value>> {
    body.get("properties")?.get(property)?.as_array()
}

fn items_mut<'a>(body: &'a mut Value, property: &str) -> Option<&'a mut Vec<Value>> {
    body.get_mut("properties")?.get_mut(property)?.as_array_mut()
}

fn named(item: &Value, name: &str) -> bool {
    item.get("name")
        .and_then(Value::as_str)
        .is_some_and(|item_name| item_name.eq_ignore_ascii_case(name))
}

/// The child called `name` (any case).
pub(crate) fn find<'a>(body: &'a Value, property: &str, name: &str) -> Option<&'a Value> {
    items(body, property)?.iter().find(|item| named(item, name))
}

/// The child called `name` (any case), to change it.
pub(crate) fn find_mut<'a>(body: &'a mut Value, property: &str, name: &str) -> Option<&'a mut Value> {
    items_mut(body, property)?
        .iter_mut()
        .find(|item| named(item, name))
}

/// Removes the child called `name`; whether there was one.
pub(crate) fn remove(body: &mut Value, property: &str, name: &str) -> bool {
    let Some(items) = items_mut(body, property) else {
        return false;
    };
    let before = items.len();
    items.retain(|item| !named(item, name));
    items.len() != before
}

/// Puts `child` in place of the child of the same name, or appends it.
pub(crate) fn upsert(body: &mut Value, property: &str, child: Value) {
    let Some(name) = child.get("name").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    let Some(properties) = body.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    let items = properties
        .entry(property)
        .or_insert_with(|| Value::Array(Vec::new()));
    if !items.is_array() {
        *items = Value::Array(Vec::new());
    }
    if let Some(items) = items.as_array_mut() {
        match items.iter_mut().find(|item| named(item, &name)) {
            Some(slot) => *slot = child,
            None => items.push(child),
        }
    }
}

/// Every child in the array.
pub(crate) fn all<'a>(body: &'a Value, property: &str) -> &'a [Value] {
    items(body, property).map_or(&[], Vec::as_slice)
}

/// The child called `name` in the array property whose name matches `property` in any case (ids
/// are compared lower-cased).
pub(crate) fn find_any_case<'a>(body: &'a Value, property: &str, name: &str) -> Option<&'a Value> {
    body.get("properties")?
        .as_object()?
        .iter()
        .find(|(candidate, _)| candidate.eq_ignore_ascii_case(property))?
        .1
        .as_array()?
        .iter()
        .find(|item| named(item, name))
}
