//! Field errors in the shape Kubernetes reports them: a JSON path into the object, a kind, and a
//! message a user can act on.
//!
//! The rendering follows the API server's own (`spec.x: Invalid value: "v": why`), so users read
//! our rejections exactly like those of built-in validation.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// A path to a field, as written in error messages: `spec.networkSpec.subnets[0].name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// The path of a top-level field such as `spec` or `metadata`.
    #[must_use]
    pub fn root(name: &str) -> Self {
        Self(name.to_owned())
    }

    /// The path of a field of this one.
    #[must_use]
    pub fn child(&self, name: &str) -> Self {
        Self(format!("{}.{name}", self.0))
    }

    /// The path of an element of this list.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }

    /// The path of an entry of this map.
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{key}]", self.0))
    }

    /// The path as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What is wrong with a field.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// It must be set.
    Required,
    /// Its value is wrong.
    Invalid(Value),
    /// It must not be set, or not in this combination.
    Forbidden,
    /// Its value is already used by a sibling.
    Duplicate(Value),
    /// Its value is not one of a closed set.
    NotSupported {
        /// The value given.
        value: Value,
        /// The values accepted.
        supported: Vec<String>,
    },
    /// It is longer than allowed.
    TooLong {
        /// The longest value accepted, in bytes.
        max: usize,
    },
}

impl ErrorKind {
    /// The cause type the API server reports for this kind in a Status's details.
    #[must_use]
    pub fn cause(&self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid(_) => "FieldValueInvalid",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate(_) => "FieldValueDuplicate",
            Self::NotSupported { .. } => "FieldValueNotSupported",
            Self::TooLong { .. } => "FieldValueTooLong",
        }
    }
}

/// One rejected field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Where.
    pub path: FieldPath,
    /// What is wrong.
    pub kind: ErrorKind,
    /// Why, and how to fix it; may be empty for self-explaining kinds.
    pub detail: String,
}

/// The value of a field as shown in a message; falls back to null for values JSON cannot hold.
fn shown(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl FieldError {
    /// A field that must be set.
    #[must_use]
    pub fn required(path: FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Required,
            detail: detail.into(),
        }
    }

    /// A field whose value is wrong.
    #[must_use]
    pub fn invalid(path: FieldPath, value: &impl Serialize, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Invalid(shown(value)),
            detail: detail.into(),
        }
    }

    /// A field that must not be set here.
    #[must_use]
    pub fn forbidden(path: FieldPath, detail: impl Into<String>) -> Self {
        Self {
            path,
            kind: ErrorKind::Forbidden,
            detail: detail.into(),
        }
    }

    /// A value a sibling already uses.
    #[must_use]
    pub fn duplicate(path: FieldPath, value: &impl Serialize) -> Self {
        Self {
            path,
            kind: ErrorKind::Duplicate(shown(value)),
            detail: String::new(),
        }
    }

    /// A value outside a closed set.
    #[must_use]
    pub fn not_supported(path: FieldPath, value: &impl Serialize, supported: &[&str]) -> Self {
        let supported = supported.iter().map(|s| (*s).to_owned()).collect();
        Self {
            path,
            kind: ErrorKind::NotSupported {
                value: shown(value),
                supported,
            },
            detail: String::new(),
        }
    }

    /// A value longer than `max` bytes.
    #[must_use]
    pub fn too_long(path: FieldPath, max: usize) -> Self {
        Self {
            path,
            kind: ErrorKind::TooLong { max },
            detail: String::new(),
        }
    }

    /// The message without the path, as the API server puts it in a Status cause.
    #[must_use]
    pub fn body(&self) -> String {
        let value = |v: &Value| v.to_string();
        let with_detail = |head: String| {
            if self.detail.is_empty() {
                head
            } else {
                format!("{head}: {}", self.detail)
            }
        };
        match &self.kind {
            ErrorKind::Required => with_detail("Required value".to_owned()),
            ErrorKind::Invalid(v) => with_detail(format!("Invalid value: {}", value(v))),
            ErrorKind::Forbidden => with_detail("Forbidden".to_owned()),
            ErrorKind::Duplicate(v) => with_detail(format!("Duplicate value: {}", value(v))),
            ErrorKind::NotSupported { value: v, supported } => {
                let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
                with_detail(format!(
                    "Unsupported value: {}: supported values: {}",
                    value(v),
                    list.join(", ")
                ))
            }
            ErrorKind::TooLong { max } => with_detail(format!("Too long: may not be more than {max} bytes")),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

/// What admission decided about an object: the fields it rejects and the warnings it returns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Rejected fields; the object is admitted only when there are none.
    pub errors: Vec<FieldError>,
    /// Shown to the user by kubectl even when the object is admitted.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Whether the object is admitted.
    #[must_use]
    pub fn allowed(&self) -> bool {
        self.errors.is_empty()
    }

    /// Records a rejected field.
    pub fn reject(&mut self, error: FieldError) {
        self.errors.push(error);
    }

    /// Records a warning.
    pub fn warn(&mut self, warning: impl Into<String>) {
        self.warnings.push(warning.into());
    }

    /// Takes over another verdict's errors and warnings.
    pub fn merge(&mut self, other: Verdict) {
        self.errors.extend(other.errors);
        self.warnings.extend(other.warnings);
    }

    /// The message the API server would give for these errors on object `name` of `kind` (for
    /// example `AzureCluster.infrastructure.cluster.x-k8s.io "c1" is invalid: spec.location: Required
    /// value`); one error is shown bare, several in brackets.
    #[must_use]
    pub fn message(&self, kind: &str, group: &str, name: &str) -> String {
        let errors: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        let list = if errors.len() == 1 {
            errors.join("")
        } else {
            format!("[{}]", errors.join(", "))
        };
        format!("{kind}.{group} {name:?} is invalid: {list}")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_the_api_servers() {
        let spec = FieldPath::root("spec");
        let name = spec.child("networkSpec").child("subnets").index(0).child("name");
        assert_eq!(name.as_str(), "spec.networkSpec.subnets[0].name");
        assert_eq!(
            FieldError::invalid(name.clone(), &"a b", "must match ^[-\\w\\._]+$").to_string(),
            r#"spec.networkSpec.subnets[0].name: Invalid value: "a b": must match ^[-\w\._]+$"#
        );
        assert_eq!(
            FieldError::required(spec.child("location"), "").to_string(),
            "spec.location: Required value"
        );
        assert_eq!(
            FieldError::not_supported(spec.child("type"), &"Basic", &["Standard"]).to_string(),
            r#"spec.type: Unsupported value: "Basic": supported values: "Standard""#
        );
        assert_eq!(
            FieldError::too_long(FieldPath::root("metadata").child("name"), 44).to_string(),
            "metadata.name: Too long: may not be more than 44 bytes"
        );
        assert_eq!(
            FieldError::duplicate(spec.key("x"), &3).to_string(),
            "spec[x]: Duplicate value: 3"
        );
    }

    #[test]
    fn one_error_is_shown_bare_and_several_in_brackets() {
        let mut verdict = Verdict::default();
        verdict.reject(FieldError::forbidden(
            FieldPath::root("spec").child("a"),
            "not with b",
        ));
        assert_eq!(
            verdict.message("AzureCluster", "infrastructure.cluster.x-k8s.io", "c1"),
            r#"AzureCluster.infrastructure.cluster.x-k8s.io "c1" is invalid: spec.a: Forbidden: not with b"#
        );
        verdict.reject(FieldError::required(FieldPath::root("spec").child("b"), "set it"));
        assert!(
            verdict
                .message("K", "g", "n")
                .ends_with("[spec.a: Forbidden: not with b, spec.b: Required value: set it]")
        );
        assert!(!verdict.allowed());
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
}
