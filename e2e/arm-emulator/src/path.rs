//! The ARM URL layout: which resource, collection or operation a request path names.

/// What a request path addresses. Names keep the case the client sent; comparisons ignore case,
/// as Azure does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArmPath {
    /// `/tenants`: the tenants the caller can see.
    Tenants,
    /// `/subscriptions`: the subscriptions the caller can see.
    Subscriptions,
    /// `/subscriptions/{sub}`: one subscription.
    Subscription { subscription: String },
    /// `/subscriptions/{sub}/locations`: the locations a subscription can use.
    Locations { subscription: String },
    /// `/subscriptions/{sub}/resourcegroups`: the resource groups of a subscription.
    ResourceGroups { subscription: String },
    /// `/subscriptions/{sub}/resourcegroups/{name}`: one resource group.
    ResourceGroup { subscription: String, name: String },
    /// `/subscriptions/{sub}/operationresults/{id}`: the result of a resource group deletion.
    OperationResult { subscription: String, id: String },
    /// `/subscriptions/{sub}/providers/{ns}/locations/{location}/{operations|operationResults}/{id}`
    /// (or, for private DNS, `{resource group}/providers/{ns}/privateDnsOperation{Statuses|Results}/{id}`):
    /// a resource provider's long-running operation.
    ProviderOperation {
        namespace: String,
        id: String,
        poll: Poll,
    },
    /// `{scope}/providers/Microsoft.Resources/tags/default`: the tags of a subscription, a
    /// resource group or a resource.
    Tags { scope: String },
    /// `/subscriptions/{sub}[/resourceGroups/{group}]/resources`: the generic list of resources.
    GenericResources {
        subscription: String,
        group: Option<String>,
    },
    /// A resource: `{scope}/providers/{ns}/{type}/{name}[/{type}/{name}]...`.
    Resource(ResourceId),
    /// A collection to list: like a resource, without the last name.
    Collection(ResourceId),
}

/// How a client polls a long-running operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Poll {
    /// The `Azure-AsyncOperation` URL: 200 with `{"status": ...}` until the end.
    Status,
    /// The `Location` URL: 202 while running, then the outcome.
    Result,
}

/// A resource (or, for collections, its parent and type) as a path names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceId {
    /// What the resource lives under: empty (tenant), a subscription, a resource group, or another
    /// resource (extension resources such as role assignments).
    pub(crate) scope: String,
    pub(crate) subscription: Option<String>,
    pub(crate) resource_group: Option<String>,
    /// The provider namespace, for example `Microsoft.Network`.
    pub(crate) namespace: String,
    /// The type chain, for example `["virtualNetworks", "subnets"]`.
    pub(crate) types: Vec<String>,
    /// The names, one per type (one fewer for a collection).
    pub(crate) names: Vec<String>,
}

impl ResourceId {
    /// The full resource type, for example `Microsoft.Network/virtualNetworks/subnets`.
    pub(crate) fn type_name(&self) -> String {
        let mut name = self.namespace.clone();
        for segment in &self.types {
            name.push('/');
            name.push_str(segment);
        }
        name
    }

    /// The ARM id, with the casing of this value.
    pub(crate) fn to_id(&self) -> String {
        let mut id = format!("{}/providers/{}", self.scope, self.namespace);
        for (segment, name) in self.types.iter().zip(&self.names) {
            id.push('/');
            id.push_str(segment);
            id.push('/');
            id.push_str(name);
        }
        id
    }

    /// The lower-cased id the state is keyed by.
    pub(crate) fn key(&self) -> String {
        self.to_id().to_ascii_lowercase()
    }

    /// The last name.
    pub(crate) fn name(&self) -> &str {
        self.names.last().map_or("", String::as_str)
    }

    /// The parent resource of a child resource.
    pub(crate) fn parent(&self) -> Option<Self> {
        (self.types.len() > 1).then(|| Self {
            types: self.types[..self.types.len() - 1].to_vec(),
            names: self.names[..self.types.len() - 1].to_vec(),
            ..self.clone()
        })
    }

    /// The top-level resource a child resource lies under (itself for a top-level one).
    pub(crate) fn top_level(&self) -> Self {
        Self {
            types: self.types.iter().take(1).cloned().collect(),
            names: self.names.iter().take(1).cloned().collect(),
            ..self.clone()
        }
    }

    /// For a collection of child resources, the parent resource.
    pub(crate) fn parent_of_collection(&self) -> Option<Self> {
        (self.types.len() > 1 && self.names.len() + 1 == self.types.len()).then(|| Self {
            types: self.types[..self.types.len() - 1].to_vec(),
            ..self.clone()
        })
    }

    /// A named child of this resource.
    pub(crate) fn child(&self, segment: &str, name: &str) -> Self {
        let mut child = self.clone();
        child.types.push(segment.to_owned());
        child.names.push(name.to_owned());
        child
    }

    /// The same resource with the type's canonical casing and the resource group's stored name.
    pub(crate) fn canonical(&self, type_name: &str, resource_group: Option<&str>) -> Self {
        let mut parts = type_name.split('/');
        let namespace = parts.next().unwrap_or_default().to_owned();
        let types: Vec<String> = parts.map(str::to_owned).collect();
        let scope = match (&self.subscription, resource_group) {
            (Some(subscription), Some(group)) if self.scope_is_resource_group() => {
                resource_group_id(subscription, group)
            }
            _ => self.scope.clone(),
        };
        Self {
            scope,
            namespace,
            types,
            resource_group: resource_group
                .map(str::to_owned)
                .or_else(|| self.resource_group.clone()),
            ..self.clone()
        }
    }

    /// Whether the scope is exactly a resource group (not a resource in one).
    pub(crate) fn scope_is_resource_group(&self) -> bool {
        self.scope.trim_matches('/').split('/').count() == 4 && self.resource_group.is_some()
    }
}

impl ArmPath {
    /// Parses a request path, or `None` when it names nothing the emulator serves.
    pub(crate) fn parse(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        if segments.iter().any(|segment| segment.is_empty()) {
            return None;
        }
        let is = |index: usize, expected: &str| {
            segments
                .get(index)
                .is_some_and(|segment| segment.eq_ignore_ascii_case(expected))
        };
        let providers = segments.iter().rposition(|s| s.eq_ignore_ascii_case("providers"));
        let Some(providers) = providers else {
            if segments.len() == 1 && is(0, "tenants") {
                return Some(Self::Tenants);
            }
            if !is(0, "subscriptions") {
                return None;
            }
            let Some(subscription) = segments.get(1).map(|s| (*s).to_owned()) else {
                return Some(Self::Subscriptions);
            };
            return match segments.len() {
                2 => Some(Self::Subscription { subscription }),
                3 if is(2, "locations") => Some(Self::Locations { subscription }),
                3 if is(2, "resources") => Some(Self::GenericResources {
                    subscription,
                    group: None,
                }),
                5 if is(2, "resourcegroups") && is(4, "resources") => Some(Self::GenericResources {
                    subscription,
                    group: Some(segments[3].to_owned()),
                }),
                3 if is(2, "resourcegroups") => Some(Self::ResourceGroups { subscription }),
                4 if is(2, "resourcegroups") => Some(Self::ResourceGroup {
                    subscription,
                    name: segments[3].to_owned(),
                }),
                4 if is(2, "operationresults") => Some(Self::OperationResult {
                    subscription,
                    id: segments[3].to_owned(),
                }),
                _ => None,
            };
        };
        let scope = &segments[..providers];
        let (subscription, resource_group) = match scope {
            [] => (None, None),
            [s, subscription, rest @ ..] if s.eq_ignore_ascii_case("subscriptions") => match rest {
                [] => (Some(*subscription), None),
                [g, group, ..] if g.eq_ignore_ascii_case("resourcegroups") => {
                    (Some(*subscription), Some(*group))
                }
                _ => return None,
            },
            _ => return None,
        };
        let (namespace, rest) = segments[providers + 1..].split_first()?;
        if rest.is_empty() {
            return None;
        }
        if let Some(operation) = Self::provider_operation(namespace, rest, subscription, resource_group) {
            return Some(operation);
        }
        if let [tags, default] = rest
            && namespace.eq_ignore_ascii_case("Microsoft.Resources")
            && tags.eq_ignore_ascii_case("tags")
            && default.eq_ignore_ascii_case("default")
            && subscription.is_some()
        {
            return Some(Self::Tags {
                scope: format!("/{}", scope.join("/")),
            });
        }
        let id = ResourceId {
            scope: if scope.is_empty() {
                String::new()
            } else {
                format!("/{}", scope.join("/"))
            },
            subscription: subscription.map(str::to_owned),
            resource_group: resource_group.map(str::to_owned),
            namespace: (*namespace).to_owned(),
            types: rest.iter().step_by(2).map(|s| (*s).to_owned()).collect(),
            names: rest.iter().skip(1).step_by(2).map(|s| (*s).to_owned()).collect(),
        };
        Some(if rest.len() % 2 == 0 {
            Self::Resource(id)
        } else {
            Self::Collection(id)
        })
    }

    /// A provider's operation URL: under a location of the subscription
    /// (`locations/{location}/{operations|operationResults|...}/{id}`), or, for private DNS,
    /// under the resource group (`privateDnsOperation{Statuses|Results}/{id}`).
    fn provider_operation(
        namespace: &str,
        rest: &[&str],
        subscription: Option<&str>,
        resource_group: Option<&str>,
    ) -> Option<Self> {
        let is = |segment: &str, kinds: &[&str]| kinds.iter().any(|kind| segment.eq_ignore_ascii_case(kind));
        let (poll, id) = match rest {
            [locations, _, kind, id]
                if subscription.is_some() && locations.eq_ignore_ascii_case("locations") =>
            {
                if is(kind, &["operationresults", "asyncoperations"]) {
                    (Poll::Result, id)
                } else if is(kind, &["operations", "diskoperations"]) {
                    (Poll::Status, id)
                } else {
                    return None;
                }
            }
            [kind, id] if resource_group.is_some() => {
                if is(kind, &["privateDnsOperationResults"]) {
                    (Poll::Result, id)
                } else if is(kind, &["privateDnsOperationStatuses"]) {
                    (Poll::Status, id)
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        Some(Self::ProviderOperation {
            namespace: namespace.to_owned(),
            id: (*id).to_owned(),
            poll,
        })
    }

    /// The subscription the path lies in, if any.
    pub(crate) fn subscription(&self) -> Option<&str> {
        match self {
            Self::ResourceGroups { subscription }
            | Self::ResourceGroup { subscription, .. }
            | Self::OperationResult { subscription, .. }
            | Self::Subscription { subscription }
            | Self::Locations { subscription }
            | Self::GenericResources { subscription, .. } => Some(subscription),
            Self::Tags { scope } => scope.split('/').nth(2),
            Self::ProviderOperation { .. } | Self::Tenants | Self::Subscriptions => None,
            Self::Resource(id) | Self::Collection(id) => id.subscription.as_deref(),
        }
    }

    /// The resource type whose api-versions apply to the request.
    pub(crate) fn resource_type(&self) -> String {
        match self {
            Self::ResourceGroups { .. } | Self::ResourceGroup { .. } => {
                "Microsoft.Resources/resourceGroups".into()
            }
            Self::OperationResult { .. } => "Microsoft.Resources/operationresults".into(),
            Self::Tenants => "Microsoft.Resources/tenants".into(),
            Self::Subscriptions | Self::Subscription { .. } => "Microsoft.Resources/subscriptions".into(),
            Self::Locations { .. } => "Microsoft.Resources/subscriptions/locations".into(),
            Self::Tags { .. } => "Microsoft.Resources/tags".into(),
            Self::GenericResources { group: None, .. } => {
                "Microsoft.Resources/subscriptions/resources".into()
            }
            Self::GenericResources { group: Some(_), .. } => {
                "Microsoft.Resources/subscriptions/resourceGroups/resources".into()
            }
            Self::ProviderOperation { namespace, .. } => format!("{namespace}/locations/operations"),
            Self::Resource(id) | Self::Collection(id) => id.type_name(),
        }
    }
}

/// The canonical ARM id of a resource group.
pub(crate) fn resource_group_id(subscription: &str, name: &str) -> String {
    format!("/subscriptions/{subscription}/resourceGroups/{name}")
}

#[cfg(test)]
mod tests {
    use super::{ArmPath, Poll};

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
    fn provider_paths_name_resources_collections_and_operations() {
        let Some(ArmPath::Resource(subnet)) = ArmPath::parse(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/a",
        ) else {
            panic!("not a resource");
        };
        assert_eq!(subnet.type_name(), "Microsoft.Network/virtualNetworks/subnets");
        assert_eq!(subnet.resource_group.as_deref(), Some("rg"));
        assert_eq!(subnet.name(), "a");
        assert_eq!(
            subnet.parent().map(|p| p.to_id()).as_deref(),
            Some("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v")
        );
        let Some(ArmPath::Collection(list)) =
            ArmPath::parse("/subscriptions/s/providers/Microsoft.Compute/skus")
        else {
            panic!("not a collection");
        };
        assert_eq!(list.type_name(), "Microsoft.Compute/skus");
        assert_eq!(list.resource_group, None);
        assert_eq!(
            ArmPath::parse("/subscriptions/s/providers/Microsoft.Network/locations/westus2/operations/abc"),
            Some(ArmPath::ProviderOperation {
                namespace: "Microsoft.Network".into(),
                id: "abc".into(),
                poll: Poll::Status
            })
        );
        let Some(ArmPath::Resource(assignment)) = ArmPath::parse(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a/providers/Microsoft.Authorization/roleAssignments/r",
        ) else {
            panic!("not a resource");
        };
        assert_eq!(
            assignment.scope,
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a"
        );
        assert!(!assignment.scope_is_resource_group());
    }

    #[test]
    fn unknown_layouts_are_not_served() {
        for path in [
            "/",
            "/subscriptions//resourceGroups",
            "/tenants/t/x",
            "/subscriptions/s/foo/bar",
            "/subscriptions/s/providers/Microsoft.Network",
            "/foo/providers/Microsoft.Network/virtualNetworks",
        ] {
            assert_eq!(ArmPath::parse(path), None, "{path}");
        }
    }

    #[test]
    fn tenant_and_subscription_reads_are_recognised() {
        assert_eq!(ArmPath::parse("/tenants"), Some(ArmPath::Tenants));
        assert_eq!(ArmPath::parse("/subscriptions"), Some(ArmPath::Subscriptions));
        assert_eq!(
            ArmPath::parse("/subscriptions/s1/Locations"),
            Some(ArmPath::Locations {
                subscription: "s1".into()
            })
        );
    }
}
