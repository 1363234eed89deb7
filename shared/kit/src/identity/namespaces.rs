//! `allowedNamespaces`: which namespaces' clusters may use an identity, with CAPZ's semantics.
//!
//! | `allowedNamespaces` | allowed |
//! |---|---|
//! | absent | no namespace, not even the identity's own |
//! | `{}` (neither `list` nor `selector`) | every namespace |
//! | `list` | the namespaces named |
//! | `selector` | the namespaces whose labels it matches; an empty selector matches none |
//! | both | a namespace named in `list` or matched by `selector` |

use std::collections::BTreeMap;

use capz_api::azureclusteridentity::AllowedNamespaces;
use capz_api::common::LabelSelector;

/// Whether clusters in `namespace`, labelled `labels`, may use an identity whose
/// `spec.allowedNamespaces` is `allowed`.
#[must_use]
pub fn namespace_allowed(
    allowed: Option<&AllowedNamespaces>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> bool {
    let Some(allowed) = allowed else {
        return false;
    };
    if allowed.list.is_none() && allowed.selector.is_none() {
        return true;
    }
    allowed
        .list
        .as_ref()
        .is_some_and(|list| list.iter().any(|name| name == namespace))
        || allowed
            .selector
            .as_ref()
            .is_some_and(|selector| selects(selector, labels))
}

/// Whether the answer for `namespace` depends on its labels: only then are they read.
pub(super) fn needs_labels(allowed: Option<&AllowedNamespaces>, namespace: &str) -> bool {
    allowed.is_some_and(|allowed| {
        allowed
            .selector
            .as_ref()
            .is_some_and(|selector| !is_empty(selector))
            && !allowed
                .list
                .as_ref()
                .is_some_and(|list| list.iter().any(|name| name == namespace))
    })
}

fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && selector.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// Kubernetes label-selector matching. An empty selector, an unknown operator or a requirement
/// with the wrong number of values selects nothing, as the API machinery rejects such selectors.
fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if is_empty(selector) {
        return false;
    }
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    labels_match
        && selector.match_expressions.iter().flatten().all(|requirement| {
            let values = requirement.values.as_deref().unwrap_or_default();
            let value = labels.get(&requirement.key);
            match requirement.operator.as_str() {
                "In" => !values.is_empty() && value.is_some_and(|value| values.contains(value)),
                "NotIn" => !values.is_empty() && value.is_none_or(|value| !values.contains(value)),
                "Exists" => values.is_empty() && value.is_some(),
                "DoesNotExist" => values.is_empty() && value.is_none(),
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use capz_api::azureclusteridentity::AllowedNamespaces;
    use capz_api::common::{LabelSelector, LabelSelectorRequirement};

    use super::{namespace_allowed, needs_labels};

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn list(names: &[&str]) -> AllowedNamespaces {
        AllowedNamespaces {
            list: Some(names.iter().map(|name| (*name).to_owned()).collect()),
            selector: None,
        }
    }

    fn selector(match_labels: &[(&str, &str)], expressions: &[(&str, &str, &[&str])]) -> AllowedNamespaces {
        AllowedNamespaces {
            list: None,
            selector: Some(LabelSelector {
                match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
                match_expressions: (!expressions.is_empty()).then(|| {
                    expressions
                        .iter()
                        .map(|(key, operator, values)| LabelSelectorRequirement {
                            key: (*key).to_owned(),
                            operator: (*operator).to_owned(),
                            values: (!values.is_empty())
                                .then(|| values.iter().map(|value| (*value).to_owned()).collect()),
                        })
                        .collect()
                }),
            }),
        }
    }

    #[test]
    fn absent_allows_nobody_and_empty_allows_everybody() {
        let none = labels(&[]);
        assert!(!namespace_allowed(None, "default", &none));
        assert!(namespace_allowed(
            Some(&AllowedNamespaces::default()),
            "anything",
            &none
        ));
        assert!(!needs_labels(None, "default"));
        assert!(!needs_labels(Some(&AllowedNamespaces::default()), "default"));
    }

    #[test]
    fn a_list_allows_its_namespaces_only() {
        let allowed = list(&["team-a", "team-b"]);
        assert!(namespace_allowed(Some(&allowed), "team-b", &labels(&[])));
        assert!(!namespace_allowed(Some(&allowed), "team-c", &labels(&[])));
        // `list: []` is not `{}`: it names no namespace.
        assert!(!namespace_allowed(Some(&list(&[])), "team-a", &labels(&[])));
    }

    #[test]
    fn a_selector_matches_labels_and_expressions() {
        let team = selector(&[("team", "a")], &[]);
        assert!(namespace_allowed(
            Some(&team),
            "x",
            &labels(&[("team", "a"), ("env", "dev")])
        ));
        assert!(!namespace_allowed(Some(&team), "x", &labels(&[("team", "b")])));
        assert!(needs_labels(Some(&team), "x"));

        let expressions = selector(
            &[],
            &[
                ("env", "In", &["dev", "test"]),
                ("frozen", "DoesNotExist", &[]),
                ("tier", "NotIn", &["prod"]),
                ("team", "Exists", &[]),
            ],
        );
        let dev = labels(&[("env", "dev"), ("team", "a")]);
        assert!(namespace_allowed(Some(&expressions), "x", &dev));
        let frozen = labels(&[("env", "dev"), ("team", "a"), ("frozen", "yes")]);
        assert!(!namespace_allowed(Some(&expressions), "x", &frozen));
        let prod = labels(&[("env", "test"), ("team", "a"), ("tier", "prod")]);
        assert!(!namespace_allowed(Some(&expressions), "x", &prod));
    }

    #[test]
    fn empty_or_invalid_selectors_select_nothing() {
        let everything = labels(&[("team", "a")]);
        let empty = selector(&[], &[]);
        assert!(!namespace_allowed(Some(&empty), "x", &everything));
        assert!(!needs_labels(Some(&empty), "x"));
        for invalid in [
            selector(&[], &[("team", "Matches", &["a"])]),
            selector(&[], &[("team", "In", &[])]),
            selector(&[], &[("team", "Exists", &["a"])]),
        ] {
            assert!(!namespace_allowed(Some(&invalid), "x", &everything));
        }
    }

    #[test]
    fn list_or_selector() {
        let both = AllowedNamespaces {
            list: Some(vec!["named".into()]),
            selector: selector(&[("team", "a")], &[]).selector,
        };
        assert!(namespace_allowed(Some(&both), "named", &labels(&[])));
        assert!(namespace_allowed(Some(&both), "other", &labels(&[("team", "a")])));
        assert!(!namespace_allowed(Some(&both), "other", &labels(&[])));
        assert!(
            !needs_labels(Some(&both), "named"),
            "listed: no need to read labels"
        );
        assert!(needs_labels(Some(&both), "other"));
    }
}
