//! Reading request bodies: typed access to properties, with ARM's 400 answers naming the property
//! when a value has the wrong type or a required one is missing.

use serde_json::{Map, Value};

use crate::error::ArmError;

/// A property whose value has the wrong JSON type.
pub(crate) fn wrong_type(path: &str, expected: &str) -> ArmError {
    ArmError::invalid_request_content(format!(
        "The request content was invalid and could not be deserialized: the property '{path}' must be {expected}."
    ))
}

/// A required property the request lacks.
pub(crate) fn missing(path: &str) -> ArmError {
    ArmError::invalid_parameter(path, format!("The property '{path}' is required."))
}

fn present<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|value| !value.is_null())
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// An optional string.
pub(crate) fn string<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, ArmError> {
    present(object, key)
        .map(|value| {
            value
                .as_str()
                .ok_or_else(|| wrong_type(&join(path, key), "a string"))
        })
        .transpose()
}

/// A required string.
pub(crate) fn required_string<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a str, ArmError> {
    string(object, key, path)?.ok_or_else(|| missing(&join(path, key)))
}

/// An optional integer.
pub(crate) fn integer(object: &Map<String, Value>, key: &str, path: &str) -> Result<Option<i64>, ArmError> {
    present(object, key)
        .map(|value| {
            value
                .as_i64()
                .ok_or_else(|| wrong_type(&join(path, key), "an integer"))
        })
        .transpose()
}

/// An optional object.
pub(crate) fn object<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a Map<String, Value>>, ArmError> {
    present(object, key)
        .map(|value| {
            value
                .as_object()
                .ok_or_else(|| wrong_type(&join(path, key), "an object"))
        })
        .transpose()
}

/// An array; absent means empty.
pub(crate) fn array<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'a [Value], ArmError> {
    present(object, key)
        .map(|value| {
            value
                .as_array()
                .map(Vec::as_slice)
                .ok_or_else(|| wrong_type(&join(path, key), "an array"))
        })
        .transpose()
        .map(Option::unwrap_or_default)
}

/// An array of strings; absent means empty.
pub(crate) fn strings<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Vec<&'a str>, ArmError> {
    array(object, key, path)?
        .iter()
        .map(|item| {
            item.as_str()
                .ok_or_else(|| wrong_type(&join(path, key), "an array of strings"))
        })
        .collect()
}

/// The id of a sub-resource reference `{"id": "..."}`.
pub(crate) fn reference<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, ArmError> {
    let Some(reference) = self::object(object, key, path)? else {
        return Ok(None);
    };
    string(reference, "id", &join(path, key))
}

/// The ids of an array of sub-resource references.
pub(crate) fn references<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Vec<&'a str>, ArmError> {
    let path = join(path, key);
    array(object, key, "")?
        .iter()
        .map(|item| {
            item.as_object()
                .and_then(|item| item.get("id"))
                .and_then(Value::as_str)
                .ok_or_else(|| wrong_type(&path, "an array of objects with an 'id'"))
        })
        .collect()
}

/// An enumerated string: one of `allowed` (any case), answered in its canonical casing.
pub(crate) fn one_of(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
    allowed: &[&'static str],
) -> Result<Option<&'static str>, ArmError> {
    let Some(value) = string(object, key, path)? else {
        return Ok(None);
    };
    allowed
        .iter()
        .find(|candidate| candidate.eq_ignore_ascii_case(value))
        .copied()
        .map(Some)
        .ok_or_else(|| {
            ArmError::invalid_parameter(
                &join(path, key),
                format!(
                    "The value '{value}' of '{}' is not valid; it must be one of {}.",
                    join(path, key),
                    allowed.join(", ")
                ),
            )
        })
}
