//! Kubernetes names, label keys and values, and label selectors, checked as the API machinery
//! checks them (`k8s.io/apimachinery/pkg/util/validation`, `metav1validation.ValidateLabelSelector`)
//! and with its wording, so a rejection reads like one of the API server's.

use capz_api::common::LabelSelector;

use crate::field::{FieldError, FieldPath};

/// The longest DNS-1123 label: a namespace name, a label name.
const LABEL_MAX: usize = 63;
/// The longest DNS-1123 subdomain: most object names, a label key's prefix.
const SUBDOMAIN_MAX: usize = 253;

/// The selector operators Kubernetes knows.
const OPERATORS: &[&str] = &["In", "NotIn", "Exists", "DoesNotExist"];

fn is_lower_alphanumeric(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Why `text` is not a DNS-1123 label (a namespace name), if it is not.
#[must_use]
pub fn dns1123_label_problem(text: &str) -> Option<String> {
    if text.len() > LABEL_MAX {
        return Some(format!("must be no more than {LABEL_MAX} characters"));
    }
    let shape = !text.is_empty()
        && text.starts_with(is_lower_alphanumeric)
        && text.ends_with(is_lower_alphanumeric)
        && text.chars().all(|c| is_lower_alphanumeric(c) || c == '-');
    (!shape).then(|| {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
         must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')"
            .to_owned()
    })
}

/// Why `text` is not a DNS-1123 subdomain (the name of a Secret, say), if it is not.
#[must_use]
pub fn dns1123_subdomain_problem(text: &str) -> Option<String> {
    if text.len() > SUBDOMAIN_MAX {
        return Some(format!("must be no more than {SUBDOMAIN_MAX} characters"));
    }
    let shape = !text.is_empty()
        && text.split('.').all(|part| {
            !part.is_empty()
                && part.starts_with(is_lower_alphanumeric)
                && part.ends_with(is_lower_alphanumeric)
                && part.chars().all(|c| is_lower_alphanumeric(c) || c == '-')
        });
    (!shape).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
         '.', and must start and end with an alphanumeric character (e.g. 'example.com')"
            .to_owned()
    })
}

/// Whether `text` is a label value or the name part of a label key: up to 63 letters, digits,
/// `-`, `_` and `.`, starting and ending with a letter or digit (empty only for values).
fn is_label_name(text: &str) -> bool {
    text.len() <= LABEL_MAX
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Why `text` is not a label key (`[prefix/]name`), if it is not.
#[must_use]
pub fn label_key_problem(text: &str) -> Option<String> {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    if let Some(prefix) = prefix
        && let Some(problem) = dns1123_subdomain_problem(prefix)
    {
        return Some(format!("prefix part {problem}"));
    }
    if name.contains('/') || !is_label_name(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and \
             end with an alphanumeric character, at most 63 of them (e.g. 'MyName', or \
             'my.name', or '123-abc'), with an optional DNS subdomain prefix and '/' (e.g. \
             'example.com/MyName')"
                .to_owned(),
        );
    }
    None
}

/// Why `text` is not a label value, if it is not.
#[must_use]
pub fn label_value_problem(text: &str) -> Option<String> {
    (!text.is_empty() && !is_label_name(text)).then(|| {
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or \
         '.', and must start and end with an alphanumeric character, at most 63 of them (e.g. \
         'MyValue', or 'my_value', or '12345')"
            .to_owned()
    })
}

/// The errors of a label selector at `path`, as the API server reports them.
#[must_use]
pub fn validate_label_selector(selector: &LabelSelector, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let labels = path.child("matchLabels");
    for (key, value) in selector.match_labels.iter().flatten() {
        if let Some(problem) = label_key_problem(key) {
            errors.push(FieldError::invalid(labels.clone(), key, problem));
        }
        if let Some(problem) = label_value_problem(value) {
            errors.push(FieldError::invalid(labels.key(key), value, problem));
        }
    }
    let expressions = path.child("matchExpressions");
    for (index, requirement) in selector.match_expressions.iter().flatten().enumerate() {
        let at = expressions.index(index);
        if let Some(problem) = label_key_problem(&requirement.key) {
            errors.push(FieldError::invalid(at.child("key"), &requirement.key, problem));
        }
        let values = requirement.values.as_deref().unwrap_or_default();
        match requirement.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                at.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                at.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            operator if !OPERATORS.contains(&operator) => errors.push(FieldError::not_supported(
                at.child("operator"),
                &requirement.operator,
                OPERATORS,
            )),
            _ => {}
        }
        for (value_index, value) in values.iter().enumerate() {
            if let Some(problem) = label_value_problem(value) {
                errors.push(FieldError::invalid(
                    at.child("values").index(value_index),
                    value,
                    problem,
                ));
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use capz_api::common::LabelSelectorRequirement;

    use super::*;

    #[test]
    fn names_follow_rfc_1123() {
        for good in ["default", "team-a", "0", "a1-b2"] {
            assert_eq!(dns1123_label_problem(good), None, "{good}");
        }
        for bad in ["", "Team", "-a", "a-", "a.b", "a_b", &"a".repeat(64)] {
            assert!(dns1123_label_problem(bad).is_some(), "{bad}");
        }
        for good in ["secret", "my.secret-1", "a"] {
            assert_eq!(dns1123_subdomain_problem(good), None, "{good}");
        }
        for bad in ["", "a..b", ".a", "A", "a_b", &"a".repeat(254)] {
            assert!(dns1123_subdomain_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn label_keys_and_values_follow_the_api_machinery() {
        for good in ["team", "example.com/Team_1", "a.b-c"] {
            assert_eq!(label_key_problem(good), None, "{good}");
        }
        for bad in ["", "/team", "Example.com/team", "a/b/c", "-team", &"a".repeat(64)] {
            assert!(label_key_problem(bad).is_some(), "{bad}");
        }
        for good in ["", "v1", "A_b.c-d"] {
            assert_eq!(label_value_problem(good), None, "{good}");
        }
        for bad in ["-v", "v ", "a/b", &"a".repeat(64)] {
            assert!(label_value_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn selectors_are_checked_field_by_field() {
        let requirement = |key: &str, operator: &str, values: &[&str]| LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        };
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([("bad key".to_owned(), "ok".to_owned())])),
            match_expressions: Some(vec![
                requirement("team", "In", &[]),
                requirement("team", "Exists", &["a"]),
                requirement("team", "Equals", &["a"]),
                requirement("team", "NotIn", &["a", "b c"]),
                requirement("team", "DoesNotExist", &[]),
            ]),
        };
        let path = FieldPath::root("spec").child("selector");
        let errors: Vec<String> = validate_label_selector(&selector, &path)
            .iter()
            .map(ToString::to_string)
            .collect();
        let expected = [
            "spec.selector.matchLabels: Invalid value: \"bad key\": name part must consist",
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when",
            "spec.selector.matchExpressions[2].operator: Unsupported value: \"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
            "spec.selector.matchExpressions[3].values[1]: Invalid value: \"b c\": a valid label must be",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, expected) in errors.iter().zip(expected) {
            assert!(
                error.starts_with(expected),
                "{error}\ndoes not start with\n{expected}"
            );
        }
        assert!(validate_label_selector(&LabelSelector::default(), &path).is_empty());
    }
}
