//! Immutability checks, with the messages CAPZ gives for each way a field can change.

use serde::Serialize;

use crate::field::{FieldError, FieldPath};

/// Rejects any change of an optional field: setting, clearing or changing it.
pub(crate) fn unchanged<T: PartialEq + Serialize>(
    path: FieldPath,
    old: Option<&T>,
    new: Option<&T>,
) -> Option<FieldError> {
    match (old, new) {
        (old, new) if old == new => None,
        (None, Some(new)) => Some(FieldError::invalid(
            path,
            new,
            "field is immutable, unable to assign a value if it was already empty",
        )),
        (Some(_), None) => Some(FieldError::invalid(
            path,
            &(),
            "field is immutable, unable to set an empty value if it was already set",
        )),
        (_, new) => Some(FieldError::invalid(path, &new, "field is immutable")),
    }
}

/// Rejects changing or clearing a field once it is set; setting it the first time is allowed.
pub(crate) fn unchanged_once_set<T: PartialEq + Serialize>(
    path: FieldPath,
    old: Option<&T>,
    new: Option<&T>,
) -> Option<FieldError> {
    if old.is_none() {
        None
    } else {
        unchanged(path, old, new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_change_is_named() {
        let path = || FieldPath::root("spec").child("location");
        let (a, b) = ("westeurope".to_owned(), "northeurope".to_owned());
        assert_eq!(unchanged(path(), Some(&a), Some(&a)), None);
        assert_eq!(unchanged::<String>(path(), None, None), None);
        assert!(
            unchanged(path(), None, Some(&a))
                .unwrap()
                .to_string()
                .ends_with("unable to assign a value if it was already empty")
        );
        assert!(
            unchanged(path(), Some(&a), None)
                .unwrap()
                .to_string()
                .ends_with("unable to set an empty value if it was already set")
        );
        assert_eq!(
            unchanged(path(), Some(&a), Some(&b)).unwrap().to_string(),
            r#"spec.location: Invalid value: "northeurope": field is immutable"#
        );
        assert_eq!(unchanged_once_set(path(), None, Some(&a)), None);
        assert!(unchanged_once_set(path(), Some(&a), Some(&b)).is_some());
    }
}
