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

/// A private DNS zone's name, as CAPZ reads one: labels of up to 63 letters, digits, '_' or '-'
/// (not starting with '-'), separated by '.', perhaps with a trailing '.', at most 255 characters
/// besides the dots; an IP address is not a name.
pub(crate) fn private_dns_zone_name(path: FieldPath, name: &str) -> Option<FieldError> {
    let label = |label: &str| {
        label.len() <= 63 && label.starts_with(is_word) && label.chars().all(|c| is_word(c) || c == '-')
    };
    let valid = name.chars().filter(|c| *c != '.').count() <= 255
        && name.parse::<std::net::IpAddr>().is_err()
        && name.strip_suffix('.').unwrap_or(name).split('.').all(label);
    (!valid).then(|| {
        FieldError::invalid(
            path,
            &name,
            "must be a DNS name: labels of letters, digits, '_' and '-' separated by '.', for example cluster.example.internal",
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

/// The resource type of an Azure resource ID such as
/// `/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Compute/virtualMachineScaleSets/<name>`
/// (here `Microsoft.Compute/virtualMachineScaleSets`), read as Azure reads IDs: segment names are
/// case-insensitive, empty segments are skipped, and an `azure://` prefix (as in provider IDs) is
/// dropped. Subscription- and resource-group IDs have the types `Microsoft.Resources/subscriptions`
/// and `Microsoft.Resources/resourceGroups`.
///
/// # Errors
/// Why the text is not a resource ID; the text completes "the ID ...".
pub(crate) fn resource_type_of(text: &str) -> Result<String, String> {
    /// How far down the ID's hierarchy the segments read so far reach.
    #[derive(PartialEq)]
    enum Level {
        Tenant,
        Subscription,
        ResourceGroup,
        Resource,
    }
    const EXAMPLE: &str =
        "/subscriptions/<subscription>/resourceGroups/<group>/providers/<namespace>/<type>/<name>";
    let id = text.strip_prefix("azure://").unwrap_or(text);
    if id.is_empty() {
        return Err(format!("is empty; give an Azure resource ID such as {EXAMPLE}"));
    }
    if !id.starts_with('/') {
        return Err(format!("must start with \"/\", as in {EXAMPLE}"));
    }
    let parts: Vec<&str> = id.split('/').filter(|part| !part.is_empty()).collect();
    let is = |part: &str, key: &str| part.eq_ignore_ascii_case(key);
    let malformed = || format!("is not a well-formed Azure resource ID; expected the shape {EXAMPLE}");
    match parts.first() {
        Some(first) if parts.len() >= 2 && (is(first, "subscriptions") || is(first, "providers")) => {}
        _ => return Err(malformed()),
    }

    let mut level = Level::Tenant;
    let mut resource_type = String::new();
    let mut rest = parts.as_slice();
    while let Some(&key) = rest.first() {
        match rest {
            [_] => {
                // A type without a name, such as a provider's resource-type listing.
                let names_missing = (is(key, "subscriptions") && level == Level::Tenant)
                    || (is(key, "resourceGroups") && level == Level::Subscription);
                if names_missing || level == Level::ResourceGroup {
                    return Err(malformed());
                }
                resource_type = format!("{resource_type}/{key}");
                rest = &[];
            }
            [_, _namespace, more @ ..]
                if is(key, "providers") && more.first().is_none_or(|next| is(next, "providers")) =>
            {
                if !matches!(level, Level::Tenant | Level::Subscription) {
                    return Err(malformed());
                }
                "Microsoft.Resources/providers".clone_into(&mut resource_type);
                level = Level::Resource;
                rest = more;
            }
            [_, namespace, kind, _name, more @ ..] if is(key, "providers") => {
                resource_type = format!("{namespace}/{kind}");
                level = Level::Resource;
                rest = more;
            }
            [_, _name, more @ ..] if !is(key, "providers") => {
                if is(key, "subscriptions") {
                    "Microsoft.Resources/subscriptions".clone_into(&mut resource_type);
                    level = Level::Subscription;
                } else if is(key, "resourceGroups") {
                    "Microsoft.Resources/resourceGroups".clone_into(&mut resource_type);
                    level = Level::ResourceGroup;
                } else {
                    resource_type = format!("{resource_type}/{key}");
                    level = Level::Resource;
                }
                rest = more;
            }
            _ => return Err(malformed()),
        }
    }
    Ok(resource_type)
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
    fn resource_ids_are_read_as_azure_reads_them() {
        let vmss =
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/pool";
        assert_eq!(
            resource_type_of(vmss).unwrap(),
            "Microsoft.Compute/virtualMachineScaleSets"
        );
        assert_eq!(
            resource_type_of(&format!("azure://{vmss}")).unwrap(),
            "Microsoft.Compute/virtualMachineScaleSets"
        );
        assert_eq!(
            resource_type_of("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/galleries/g/images/i/versions/1.0.0")
                .unwrap(),
            "Microsoft.Compute/galleries/images/versions"
        );
        assert_eq!(
            resource_type_of("/subscriptions/s").unwrap(),
            "Microsoft.Resources/subscriptions"
        );
        assert_eq!(
            resource_type_of("/SUBSCRIPTIONS/s/resourcegroups/rg").unwrap(),
            "Microsoft.Resources/resourceGroups"
        );
        assert_eq!(
            resource_type_of("/subscriptions/s/providers/Microsoft.Compute").unwrap(),
            "Microsoft.Resources/providers"
        );
        for bad in [
            "",
            "subscriptions/s",
            "/subscriptions",
            "/resourceGroups/rg",
            "/subscriptions/s/resourceGroups",
            "/subscriptions/s/resourceGroups/rg/vm",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines",
            "just-a-name",
        ] {
            assert!(resource_type_of(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(resource_type_of("x").unwrap_err().contains("must start with"));
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
