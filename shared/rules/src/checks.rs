//! Checks shared by several kinds: Azure's naming rules, DNS names, resource IDs, tags.

use std::collections::BTreeMap;

use crate::field::{FieldError, FieldPath};

/// Go's `\w`: ASCII letters, digits and underscore.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A resource group name: 1–90 of `[-\w._()]`, not ending in a period.
pub(crate) fn resource_group_name(path: FieldPath, name: &str) -> Option<FieldError> {
    let valid = !name.is_empty()
        && name.len() <= 90
        && name.chars().all(|c| is_word(c) || "-._()".contains(c))
        && !name.ends_with('.');
    (!valid).then(|| {
        FieldError::invalid(
            path,
            &name,
            "a resource group name has 1 to 90 letters, digits, '_', '-', '.', '(' or ')' and does not end with '.'",
        )
    })
}

/// The name of a network resource (subnet, security group, route table, NAT gateway, load balancer,
/// public IP, rule): `min`..=`max` of `[\w.-]`, starting with a letter or digit and ending with a
/// letter, digit or underscore, as Azure requires.
pub(crate) fn network_name(path: FieldPath, name: &str, min: usize, max: usize) -> Option<FieldError> {
    if name.len() > max {
        return Some(FieldError::too_long(path, max));
    }
    let valid = name.len() >= min
        && name.chars().all(|c| is_word(c) || c == '.' || c == '-')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(is_word);
    (!valid).then(|| {
        FieldError::invalid(
            path,
            &name,
            format!(
                "Azure needs {min} to {max} letters, digits, '_', '.' or '-', starting with a letter or digit and ending with a letter, digit or '_'"
            ),
        )
    })
}

/// One DNS label: 1–63 lower-case letters, digits or '-', starting and ending with a letter or digit.
fn is_dns_label(label: &str) -> bool {
    !label.is_empty()
        && label.len() <= 63
        && label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// A DNS name (RFC 1123 subdomain): dot-separated labels, at most 253 characters.
pub(crate) fn dns_name(path: FieldPath, name: &str) -> Option<FieldError> {
    let valid = name.len() <= 253 && name.split('.').all(is_dns_label);
    (!valid).then(|| {
        FieldError::invalid(
            path,
            &name,
            "must be a lower-case DNS name: labels of letters, digits and '-' separated by '.', for example my-cluster.example.com",
        )
    })
}

/// A public IP's DNS name: Azure takes its first label as the domain name label, which must be 3–63
/// characters starting with a letter.
pub(crate) fn public_ip_dns_name(path: FieldPath, name: &str) -> Option<FieldError> {
    if let Some(error) = dns_name(path.clone(), name) {
        return Some(error);
    }
    let label = name.split('.').next().unwrap_or_default();
    let valid = label.len() >= 3 && label.starts_with(|c: char| c.is_ascii_lowercase());
    (!valid).then(|| {
        FieldError::invalid(
            path,
            &name,
            "Azure needs the first label to have 3 to 63 characters and start with a letter",
        )
    })
}

/// A resource ID such as `/subscriptions/<id>/resourceGroups/<group>/providers/<namespace>/<type>/<name>`;
/// `kind` (for example `Microsoft.Compute/virtualMachineScaleSets`) narrows the accepted type.
pub(crate) fn resource_id(path: FieldPath, id: &str, kind: Option<&str>) -> Option<FieldError> {
    let segments: Vec<&str> = id.split('/').collect();
    let shaped = segments.len() >= 9
        && segments.len() % 2 == 1
        && segments[0].is_empty()
        && segments[1].eq_ignore_ascii_case("subscriptions")
        && segments[3].eq_ignore_ascii_case("resourceGroups")
        && segments[5].eq_ignore_ascii_case("providers")
        && segments[1..].iter().all(|s| !s.is_empty());
    let example = kind.unwrap_or("<namespace>/<type>");
    if !shaped {
        return Some(FieldError::invalid(
            path,
            &id,
            format!(
                "must be an Azure resource ID: /subscriptions/<id>/resourceGroups/<group>/providers/{example}/<name>"
            ),
        ));
    }
    let type_matches = kind.is_none_or(|kind| {
        let (namespace, ty) = kind.split_once('/').unwrap_or((kind, ""));
        segments[6].eq_ignore_ascii_case(namespace) && segments[7].eq_ignore_ascii_case(ty)
    });
    (!type_matches).then(|| FieldError::invalid(path, &id, format!("must be the ID of a {example}")))
}

/// Azure allows 50 tags per resource; capz-rs adds up to three of its own (ownership, role, and
/// the cloud provider's cluster tag).
pub(crate) const MAX_USER_TAGS: usize = 47;

/// User tags: how many, how long, and the characters Azure refuses in names.
pub(crate) fn tags(path: &FieldPath, tags: &BTreeMap<String, String>, errors: &mut Vec<FieldError>) {
    if tags.len() > MAX_USER_TAGS {
        errors.push(FieldError::invalid(
            path.clone(),
            &tags.len(),
            format!(
                "Azure allows 50 tags per resource and capz-rs adds up to 3; give at most {MAX_USER_TAGS}"
            ),
        ));
    }
    for (name, value) in tags {
        let at = path.key(name);
        if name.is_empty() || name.len() > 512 {
            errors.push(FieldError::invalid(
                at.clone(),
                name,
                "a tag name has 1 to 512 characters",
            ));
        } else if name.contains(['<', '>', '%', '&', '\\', '?', '/']) {
            errors.push(FieldError::invalid(
                at.clone(),
                name,
                "a tag name cannot contain < > % & \\ ? or /",
            ));
        }
        if value.len() > 256 {
            errors.push(FieldError::too_long(at, 256));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> FieldPath {
        FieldPath::root("spec").child("x")
    }

    #[test]
    fn azure_names() {
        assert!(resource_group_name(path(), "my-rg_(1).x").is_none());
        assert!(resource_group_name(path(), "rg.").is_some());
        assert!(resource_group_name(path(), "rg!").is_some());
        assert!(resource_group_name(path(), &"r".repeat(91)).is_some());
        assert!(network_name(path(), "node-subnet_1", 1, 80).is_none());
        assert!(
            network_name(path(), "-subnet", 1, 80)
                .unwrap()
                .to_string()
                .contains("starting with a letter or digit")
        );
        assert!(network_name(path(), "subnet-", 1, 80).is_some());
        assert!(network_name(path(), "a", 2, 64).is_some());
        assert!(
            network_name(path(), &"a".repeat(81), 1, 80)
                .unwrap()
                .to_string()
                .contains("Too long: may not be more than 80 bytes")
        );
    }

    #[test]
    fn dns_names() {
        assert!(dns_name(path(), "c1.capz.io").is_none());
        assert!(dns_name(path(), "C1.capz.io").is_some());
        assert!(dns_name(path(), "c1..io").is_some());
        assert!(public_ip_dns_name(path(), "my-cluster.westeurope.cloudapp.azure.com").is_none());
        assert!(public_ip_dns_name(path(), "1cluster.westeurope.cloudapp.azure.com").is_some());
        assert!(public_ip_dns_name(path(), "ab.westeurope.cloudapp.azure.com").is_some());
    }

    #[test]
    fn resource_ids() {
        let vmss =
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ss";
        assert!(resource_id(path(), vmss, None).is_none());
        assert!(resource_id(path(), vmss, Some("Microsoft.Compute/virtualMachineScaleSets")).is_none());
        assert!(
            resource_id(path(), vmss, Some("Microsoft.Network/virtualNetworks"))
                .unwrap()
                .to_string()
                .contains("must be the ID of a Microsoft.Network/virtualNetworks")
        );
        assert!(resource_id(path(), "/subscriptions/s/resourceGroups/rg", None).is_some());
        assert!(
            resource_id(
                path(),
                "subscriptions/s/resourceGroups/rg/providers/A.B/c/d",
                None
            )
            .is_some()
        );
    }

    #[test]
    fn tag_limits() {
        let mut errors = Vec::new();
        let many: BTreeMap<String, String> = (0..48).map(|i| (format!("t{i}"), String::new())).collect();
        tags(&path(), &many, &mut errors);
        assert_eq!(errors.len(), 1);
        errors.clear();
        let bad = BTreeMap::from([("a/b".to_owned(), "v".repeat(257))]);
        tags(&path(), &bad, &mut errors);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].path.as_str(), "spec.x[a/b]");
    }
}
