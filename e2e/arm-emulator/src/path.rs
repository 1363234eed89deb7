//! The ARM URL layout: which resource or collection a request path names.

/// What a request path addresses. Names keep the case the client sent; comparisons ignore case,
/// as Azure does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArmPath {
    /// `/subscriptions/{sub}/resourcegroups`: the resource groups of a subscription.
    ResourceGroups { subscription: String },
    /// `/subscriptions/{sub}/resourcegroups/{name}`: one resource group.
    ResourceGroup { subscription: String, name: String },
    /// `/subscriptions/{sub}/operationresults/{id}`: the result of a long-running operation.
    OperationResult { subscription: String, id: String },
}

impl ArmPath {
    /// Parses a request path, or `None` when it names nothing the emulator serves.
    pub(crate) fn parse(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let keyword = |index: usize, expected: &str| {
            segments
                .get(index)
                .is_some_and(|segment| segment.eq_ignore_ascii_case(expected))
        };
        if !keyword(0, "subscriptions") || segments.get(1).is_none_or(|s| s.is_empty()) {
            return None;
        }
        let subscription = segments[1].to_owned();
        match segments.len() {
            3 if keyword(2, "resourcegroups") => Some(Self::ResourceGroups { subscription }),
            4 if keyword(2, "resourcegroups") && !segments[3].is_empty() => Some(Self::ResourceGroup {
                subscription,
                name: segments[3].to_owned(),
            }),
            4 if keyword(2, "operationresults") && !segments[3].is_empty() => Some(Self::OperationResult {
                subscription,
                id: segments[3].to_owned(),
            }),
            _ => None,
        }
    }

    /// The resource type whose api-versions apply to the request.
    pub(crate) fn resource_type(&self) -> &'static str {
        match self {
            Self::ResourceGroups { .. } | Self::ResourceGroup { .. } => "resourceGroups",
            Self::OperationResult { .. } => "operationresults",
        }
    }
}

/// The canonical ARM id of a resource group.
pub(crate) fn resource_group_id(subscription: &str, name: &str) -> String {
    format!("/subscriptions/{subscription}/resourceGroups/{name}")
}

#[cfg(test)]
mod tests {
    use super::ArmPath;

    #[test]
    fn keywords_are_case_insensitive_and_names_keep_their_case() {
        assert_eq!(
            ArmPath::parse("/subscriptions/s1/resourceGroups/My-RG"),
            Some(ArmPath::ResourceGroup {
                subscription: "s1".into(),
                name: "My-RG".into()
            })
        );
        assert_eq!(
            ArmPath::parse("/SUBSCRIPTIONS/s1/RESOURCEGROUPS"),
            Some(ArmPath::ResourceGroups {
                subscription: "s1".into()
            })
        );
    }

    #[test]
    fn unknown_layouts_are_not_served() {
        for path in [
            "/",
            "/subscriptions",
            "/subscriptions//resourceGroups",
            "/tenants/t/x",
            "/subscriptions/s/foo/bar",
        ] {
            assert_eq!(ArmPath::parse(path), None, "{path}");
        }
    }
}
