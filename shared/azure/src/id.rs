//! Typed Azure identifiers: ARM resource ids, subscription ids, resource group names, locations and
//! api-versions. Each is parsed once at the boundary and carried as its type from then on.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a string is not a valid identifier; the message names the input and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Not a subscription id.
    #[error("'{0}' is not a subscription id: expected a GUID such as 00000000-0000-0000-0000-000000000000")]
    Subscription(String),
    /// Not a valid resource group name.
    #[error("'{name}' is not a valid resource group name: {reason}")]
    ResourceGroup {
        /// The rejected name.
        name: String,
        /// Which of Azure's naming rules it breaks.
        reason: &'static str,
    },
    /// Not a location name.
    #[error("'{0}' is not a location name: use the lower-case name without spaces, such as westeurope")]
    Location(String),
    /// Not an api-version.
    #[error(
        "'{0}' is not an api-version: expected a date such as 2024-07-01, optionally followed by -preview"
    )]
    ApiVersion(String),
    /// Not an ARM resource id.
    #[error("'{id}' is not an ARM resource id: {reason}")]
    ResourceId {
        /// The rejected id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A segment given to a builder method cannot be part of an id.
    #[error(
        "'{segment}' cannot be used as a {what} in a resource id: it must be non-empty and contain no '/'"
    )]
    Segment {
        /// The rejected segment.
        segment: String,
        /// What it was meant to be: a namespace, a type or a name.
        what: &'static str,
    },
}

/// An Azure subscription id: a GUID, displayed in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriptionId(uuid::Uuid);

impl SubscriptionId {
    /// The subscription id as a GUID.
    #[must_use]
    pub fn as_uuid(&self) -> &uuid::Uuid {
        &self.0
    }
}

impl FromStr for SubscriptionId {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // Only the hyphenated form: the braced and URN forms uuid also accepts never appear in ids.
        if text.len() != 36 {
            return Err(IdError::Subscription(text.to_owned()));
        }
        uuid::Uuid::try_parse(text)
            .map(Self)
            .map_err(|_| IdError::Subscription(text.to_owned()))
    }
}

impl fmt::Display for SubscriptionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

/// A resource group name, following Azure's rules: 1 to 90 characters, letters, digits and
/// `-_.()`, not ending in a period. Names compare case-insensitively, as Azure compares them.
#[derive(Debug, Clone)]
pub struct ResourceGroupName(String);

impl ResourceGroupName {
    /// The name as given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ResourceGroupName {
    type Err = IdError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let reason = if name.is_empty() {
            Some("it is empty")
        } else if name.chars().count() > 90 {
            Some("it is longer than 90 characters")
        } else if !name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '(' | ')'))
        {
            Some("only letters, digits, '-', '_', '.', '(' and ')' are allowed")
        } else if name.ends_with('.') {
            Some("it must not end with a period")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(IdError::ResourceGroup {
                name: name.to_owned(),
                reason,
            }),
            None => Ok(Self(name.to_owned())),
        }
    }
}

impl PartialEq for ResourceGroupName {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl Eq for ResourceGroupName {}

impl Hash for ResourceGroupName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_folded(&self.0, state);
    }
}

impl fmt::Display for ResourceGroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An Azure location (region) by its programmatic name, such as `westeurope`: lower case, no
/// spaces. Input is accepted in any case and lower-cased.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location(String);

impl Location {
    /// Where resources that belong to no region live, such as private DNS zones.
    #[must_use]
    pub fn global() -> Self {
        Self("global".to_owned())
    }

    /// The lower-case name.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Location {
    type Err = IdError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(IdError::Location(name.to_owned()));
        }
        Ok(Self(name.to_ascii_lowercase()))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `api-version` of an ARM request, such as `2024-07-01` or `2023-10-01-preview`. Resource
/// models pin theirs as constants with [`ApiVersion::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiVersion(Cow<'static, str>);

impl ApiVersion {
    /// An api-version known at compile time. It is not checked: constants are written once next
    /// to the model they belong to; parse untrusted input with [`str::parse`] instead.
    #[must_use]
    pub const fn new(version: &'static str) -> Self {
        Self(Cow::Borrowed(version))
    }

    /// The api-version as sent in the query string.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for ApiVersion {
    type Err = IdError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bytes = text.as_bytes();
        let date_ok = bytes.len() >= 10
            && bytes.iter().take(10).enumerate().all(|(at, byte)| {
                if at == 4 || at == 7 {
                    *byte == b'-'
                } else {
                    byte.is_ascii_digit()
                }
            });
        let suffix_ok = text.get(10..).is_some_and(|suffix| {
            suffix.is_empty()
                || suffix.strip_prefix('-').is_some_and(|label| {
                    !label.is_empty() && label.chars().all(|c| c.is_ascii_alphanumeric())
                })
        });
        if date_ok && suffix_ok {
            Ok(Self(Cow::Owned(text.to_owned())))
        } else {
            Err(IdError::ApiVersion(text.to_owned()))
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One `/providers/{namespace}/{type}/{name}[/{type}/{name}]...` run of a resource id. An id has
/// more than one when it names an extension resource (a role assignment or tags on a resource).
#[derive(Debug, Clone)]
struct Provider {
    namespace: String,
    /// (type, name) pairs, outermost first; never empty.
    resources: Vec<(String, String)>,
}

/// An ARM resource id: a subscription, a resource group in it, or a provider resource (with its
/// child resources and extension resources) at either scope.
///
/// ```
/// # use capz_azure::ResourceId;
/// let subnet: ResourceId = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg\
///     /providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes".parse()?;
/// assert_eq!(subnet.resource_type(), "Microsoft.Network/virtualNetworks/subnets");
/// assert_eq!(subnet.name(), "nodes");
/// assert_eq!(subnet.parent().map(|vnet| vnet.name().into_owned()).as_deref(), Some("vnet"));
/// # Ok::<(), capz_azure::IdError>(())
/// ```
///
/// Ids compare and hash case-insensitively (ASCII), as Azure compares them; [`fmt::Display`] gives
/// the canonical spelling (`/subscriptions/…/resourceGroups/…/providers/…`) with names and types
/// as given. Serde reads and writes the string form.
#[derive(Debug, Clone)]
pub struct ResourceId {
    subscription: SubscriptionId,
    resource_group: Option<ResourceGroupName>,
    providers: Vec<Provider>,
}

impl ResourceId {
    /// The id of a subscription.
    #[must_use]
    pub fn subscription_scope(subscription: SubscriptionId) -> Self {
        Self {
            subscription,
            resource_group: None,
            providers: Vec::new(),
        }
    }

    /// The id of a resource group.
    #[must_use]
    pub fn resource_group(subscription: SubscriptionId, name: ResourceGroupName) -> Self {
        Self {
            subscription,
            resource_group: Some(name),
            providers: Vec::new(),
        }
    }

    /// The id of a provider resource in this scope, such as
    /// `rg.provider("Microsoft.Network", "virtualNetworks", "vnet")`. On a provider resource this
    /// names an extension resource of it (`…/providers/Microsoft.Authorization/roleAssignments/x`).
    ///
    /// # Errors
    /// When a segment is empty or contains `/`.
    pub fn provider(&self, namespace: &str, resource_type: &str, name: &str) -> Result<Self, IdError> {
        let mut id = self.clone();
        id.providers.push(Provider {
            namespace: segment(namespace, "namespace")?,
            resources: vec![(segment(resource_type, "type")?, segment(name, "name")?)],
        });
        Ok(id)
    }

    /// The id of a child resource of this provider resource, such as
    /// `vnet.child("subnets", "nodes")`.
    ///
    /// # Errors
    /// When this id names no provider resource (a subscription or resource group has no child
    /// resources, only provider resources: see [`Self::provider`]), or a segment is empty or
    /// contains `/`.
    pub fn child(&self, resource_type: &str, name: &str) -> Result<Self, IdError> {
        let mut id = self.clone();
        let pair = (segment(resource_type, "type")?, segment(name, "name")?);
        match id.providers.last_mut() {
            Some(provider) => provider.resources.push(pair),
            None => {
                return Err(IdError::ResourceId {
                    id: self.to_string(),
                    reason: format!(
                        "a child resource '{resource_type}/{name}' needs a provider resource as parent"
                    ),
                });
            }
        }
        Ok(id)
    }

    /// The subscription the id belongs to (for a subscription id, itself).
    #[must_use]
    pub fn subscription(&self) -> &SubscriptionId {
        &self.subscription
    }

    /// The resource group the id belongs to; `None` at subscription scope.
    #[must_use]
    pub fn resource_group_name(&self) -> Option<&ResourceGroupName> {
        self.resource_group.as_ref()
    }

    /// The provider namespace of the resource, such as `Microsoft.Network`; `None` for a
    /// subscription or resource group.
    #[must_use]
    pub fn provider_namespace(&self) -> Option<&str> {
        self.providers.last().map(|provider| provider.namespace.as_str())
    }

    /// The full resource type, such as `Microsoft.Network/virtualNetworks/subnets`;
    /// `Microsoft.Resources/resourceGroups` and `Microsoft.Resources/subscriptions` for the scopes.
    #[must_use]
    pub fn resource_type(&self) -> String {
        match self.providers.last() {
            Some(provider) => {
                let mut full = provider.namespace.clone();
                for (resource_type, _) in &provider.resources {
                    full.push('/');
                    full.push_str(resource_type);
                }
                full
            }
            None if self.resource_group.is_some() => "Microsoft.Resources/resourceGroups".to_owned(),
            None => "Microsoft.Resources/subscriptions".to_owned(),
        }
    }

    /// The resource's own name (for a resource group its name, for a subscription its id).
    #[must_use]
    pub fn name(&self) -> Cow<'_, str> {
        match (self.providers.last(), &self.resource_group) {
            (Some(provider), _) => provider
                .resources
                .last()
                .map_or(Cow::Borrowed(""), |(_, name)| Cow::Borrowed(name)),
            (None, Some(group)) => Cow::Borrowed(group.as_str()),
            (None, None) => Cow::Owned(self.subscription.to_string()),
        }
    }

    /// Whether this id names a provider resource (not a subscription or resource group).
    #[must_use]
    pub fn is_provider_resource(&self) -> bool {
        !self.providers.is_empty()
    }

    /// The id one level up: a child resource's parent resource, an extension resource's scope, a
    /// top-level resource's resource group (or subscription), a resource group's subscription;
    /// `None` for a subscription.
    #[must_use]
    pub fn parent(&self) -> Option<Self> {
        let mut parent = self.clone();
        match parent.providers.last_mut() {
            Some(provider) if provider.resources.len() > 1 => {
                provider.resources.pop();
            }
            Some(_) => {
                parent.providers.pop();
            }
            None if parent.resource_group.is_some() => parent.resource_group = None,
            None => return None,
        }
        Some(parent)
    }

    /// The segments that decide equality, in order, for comparing and hashing.
    fn segments(&self) -> impl Iterator<Item = &str> {
        self.resource_group
            .iter()
            .map(ResourceGroupName::as_str)
            .chain(self.providers.iter().flat_map(|provider| {
                std::iter::once(provider.namespace.as_str()).chain(
                    provider
                        .resources
                        .iter()
                        .flat_map(|(resource_type, name)| [resource_type.as_str(), name.as_str()]),
                )
            }))
    }
}

fn segment(text: &str, what: &'static str) -> Result<String, IdError> {
    if text.is_empty() || text.contains('/') {
        return Err(IdError::Segment {
            segment: text.to_owned(),
            what,
        });
    }
    Ok(text.to_owned())
}

fn hash_folded<H: Hasher>(text: &str, state: &mut H) {
    for byte in text.bytes() {
        state.write_u8(byte.to_ascii_lowercase());
    }
    // A separator keeps ("ab", "c") and ("a", "bc") apart.
    state.write_u8(0xff);
}

impl PartialEq for ResourceId {
    fn eq(&self, other: &Self) -> bool {
        self.subscription == other.subscription
            && self.resource_group.is_some() == other.resource_group.is_some()
            && self.providers.len() == other.providers.len()
            && self
                .providers
                .iter()
                .zip(&other.providers)
                .all(|(mine, theirs)| mine.resources.len() == theirs.resources.len())
            && self
                .segments()
                .zip(other.segments())
                .all(|(mine, theirs)| mine.eq_ignore_ascii_case(theirs))
    }
}

impl Eq for ResourceId {}

impl Hash for ResourceId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.subscription.hash(state);
        self.resource_group.is_some().hash(state);
        for provider in &self.providers {
            provider.resources.len().hash(state);
        }
        for part in self.segments() {
            hash_folded(part, state);
        }
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/subscriptions/{}", self.subscription)?;
        if let Some(group) = &self.resource_group {
            write!(f, "/resourceGroups/{group}")?;
        }
        for provider in &self.providers {
            write!(f, "/providers/{}", provider.namespace)?;
            for (resource_type, name) in &provider.resources {
                write!(f, "/{resource_type}/{name}")?;
            }
        }
        Ok(())
    }
}

impl FromStr for ResourceId {
    type Err = IdError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| IdError::ResourceId {
            id: id.to_owned(),
            reason: reason.to_owned(),
        };
        let rest = id
            .strip_prefix('/')
            .ok_or_else(|| invalid("it must start with /subscriptions/"))?;
        let segments: Vec<&str> = rest.split('/').collect();
        if segments.iter().any(|segment| segment.is_empty()) {
            return Err(invalid("it has an empty segment (a doubled or trailing '/')"));
        }
        let mut segments = segments.into_iter().peekable();
        match segments.next() {
            Some(keyword) if keyword.eq_ignore_ascii_case("subscriptions") => {}
            _ => return Err(invalid("it must start with /subscriptions/")),
        }
        let subscription: SubscriptionId = segments
            .next()
            .ok_or_else(|| invalid("the subscription id is missing"))?
            .parse()?;
        let mut parsed = Self::subscription_scope(subscription);
        if segments
            .peek()
            .is_some_and(|keyword| keyword.eq_ignore_ascii_case("resourceGroups"))
        {
            segments.next();
            let group = segments
                .next()
                .ok_or_else(|| invalid("the resource group name is missing"))?;
            parsed.resource_group = Some(group.parse()?);
        }
        while let Some(keyword) = segments.next() {
            if !keyword.eq_ignore_ascii_case("providers") {
                return Err(invalid(&format!("expected 'providers' where it has '{keyword}'")));
            }
            let namespace = segments
                .next()
                .ok_or_else(|| invalid("a provider namespace is missing after 'providers'"))?;
            let mut resources = Vec::new();
            while segments
                .peek()
                .is_some_and(|next| !next.eq_ignore_ascii_case("providers"))
            {
                let resource_type = segments.next().unwrap_or_default();
                let name = segments.next().ok_or_else(|| {
                    invalid(&format!(
                        "the resource type '{resource_type}' has no name after it"
                    ))
                })?;
                resources.push((resource_type.to_owned(), name.to_owned()));
            }
            if resources.is_empty() {
                return Err(invalid(&format!(
                    "the provider namespace '{namespace}' names no resource type and name"
                )));
            }
            parsed.providers.push(Provider {
                namespace: namespace.to_owned(),
                resources,
            });
        }
        Ok(parsed)
    }
}

macro_rules! serde_as_string {
    ($($type:ty),*) => {$(
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = Cow::<str>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}

serde_as_string!(
    ResourceId,
    SubscriptionId,
    ResourceGroupName,
    Location,
    ApiVersion
);

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::{ApiVersion, IdError, Location, ResourceGroupName, ResourceId, SubscriptionId};

    const SUB: &str = "00000000-0000-0000-0000-0000000000aa";

    fn sub() -> SubscriptionId {
        SUB.parse().unwrap()
    }

    #[test]
    fn provider_ids_parse_into_their_parts() {
        let id: ResourceId = format!(
            "/subscriptions/{SUB}/resourceGroups/my-rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
        )
        .parse()
        .unwrap();
        assert_eq!(id.subscription(), &sub());
        assert_eq!(id.resource_group_name().unwrap().as_str(), "my-rg");
        assert_eq!(id.provider_namespace(), Some("Microsoft.Network"));
        assert_eq!(id.resource_type(), "Microsoft.Network/virtualNetworks/subnets");
        assert_eq!(id.name(), "nodes");
        let vnet = id.parent().unwrap();
        assert_eq!(vnet.resource_type(), "Microsoft.Network/virtualNetworks");
        let group = vnet.parent().unwrap();
        assert_eq!(group.resource_type(), "Microsoft.Resources/resourceGroups");
        assert_eq!(group.name(), "my-rg");
        let subscription = group.parent().unwrap();
        assert_eq!(subscription.name(), SUB);
        assert_eq!(subscription.resource_type(), "Microsoft.Resources/subscriptions");
        assert!(subscription.parent().is_none());
    }

    #[test]
    fn builders_give_the_canonical_spelling() {
        let group = ResourceId::resource_group(sub(), "RG".parse().unwrap());
        let subnet = group
            .provider("Microsoft.Network", "virtualNetworks", "vnet")
            .unwrap()
            .child("subnets", "nodes")
            .unwrap();
        assert_eq!(
            subnet.to_string(),
            format!(
                "/subscriptions/{SUB}/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"
            )
        );
        let parsed: ResourceId = format!(
            "/SUBSCRIPTIONS/{}/resourcegroups/RG/PROVIDERS/Microsoft.Network/virtualNetworks/vnet/subnets/nodes",
            SUB.to_uppercase()
        )
        .parse()
        .unwrap();
        assert_eq!(parsed.to_string(), subnet.to_string());
        assert!(group.child("subnets", "x").is_err());
        assert!(matches!(
            group.provider("Microsoft.Network", "virtualNetworks", "a/b"),
            Err(IdError::Segment { what: "name", .. })
        ));
    }

    #[test]
    fn extension_resources_keep_their_scope() {
        let id: ResourceId = format!(
            "/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm/providers/Microsoft.Resources/tags/default"
        )
        .parse()
        .unwrap();
        assert_eq!(id.resource_type(), "Microsoft.Resources/tags");
        assert_eq!(
            id.parent().unwrap().resource_type(),
            "Microsoft.Compute/virtualMachines"
        );
        let at_subscription: ResourceId =
            format!("/subscriptions/{SUB}/providers/Microsoft.Authorization/roleAssignments/a")
                .parse()
                .unwrap();
        assert!(at_subscription.resource_group_name().is_none());
        assert_eq!(
            at_subscription.parent().unwrap(),
            ResourceId::subscription_scope(sub())
        );
    }

    #[test]
    fn ids_compare_and_hash_ignoring_case() {
        let lower: ResourceId = format!(
            "/subscriptions/{SUB}/resourceGroups/rg/providers/microsoft.network/virtualnetworks/vnet"
        )
        .parse()
        .unwrap();
        let upper: ResourceId = format!(
            "/subscriptions/{SUB}/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET"
        )
        .parse()
        .unwrap();
        assert_eq!(lower, upper);
        assert_eq!(HashSet::from([lower.clone(), upper]).len(), 1);
        let other = lower
            .parent()
            .unwrap()
            .provider("Microsoft.Network", "virtualNetworks", "vnet2")
            .unwrap();
        assert_ne!(lower, other);
    }

    #[test]
    fn bad_ids_say_what_is_wrong() {
        let cases = [
            ("subscriptions/x", "must start with /subscriptions/"),
            ("/tenants/x", "must start with /subscriptions/"),
            ("/subscriptions/abc", "is not a subscription id"),
            (
                &format!("/subscriptions/{SUB}/resourceGroups"),
                "resource group name is missing",
            ),
            (
                &format!("/subscriptions/{SUB}/resourceGroups/rg/"),
                "empty segment",
            ),
            (
                &format!("/subscriptions/{SUB}/resourceGroups/rg./"),
                "empty segment",
            ),
            (
                &format!("/subscriptions/{SUB}/resourceGroups/rg./x"),
                "must not end with a period",
            ),
            (
                &format!("/subscriptions/{SUB}/resourceGroups/rg/things/x"),
                "expected 'providers'",
            ),
            (
                &format!("/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Network"),
                "names no resource",
            ),
            (
                &format!(
                    "/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks"
                ),
                "has no name",
            ),
        ];
        for (input, expected) in cases {
            let message = input.parse::<ResourceId>().unwrap_err().to_string();
            assert!(message.contains(expected), "{input}: {message}");
        }
    }

    #[test]
    fn serde_uses_the_string_form() {
        let id: ResourceId = format!("/subscriptions/{SUB}/resourceGroups/rg").parse().unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"/subscriptions/{SUB}/resourceGroups/rg\""));
        assert_eq!(serde_json::from_str::<ResourceId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<ResourceId>("\"/nope\"").is_err());
    }

    #[test]
    fn resource_group_names_follow_azure_rules() {
        for good in ["a", "my-rg_1.(x)", &"a".repeat(90), "grüße"] {
            assert!(good.parse::<ResourceGroupName>().is_ok(), "{good}");
        }
        for (bad, reason) in [
            ("", "empty"),
            (&"a".repeat(91) as &str, "longer than 90"),
            ("a b", "only letters"),
            ("rg.", "period"),
        ] {
            let message = bad.parse::<ResourceGroupName>().unwrap_err().to_string();
            assert!(message.contains(reason), "{bad}: {message}");
        }
        assert_eq!("RG".parse::<ResourceGroupName>().unwrap(), "rg".parse().unwrap());
    }

    #[test]
    fn subscription_ids_are_guids() {
        assert_eq!(
            SUB.to_uppercase().parse::<SubscriptionId>().unwrap().to_string(),
            SUB
        );
        assert!(
            "{00000000-0000-0000-0000-0000000000aa}"
                .parse::<SubscriptionId>()
                .is_err()
        );
        assert!("not-a-guid".parse::<SubscriptionId>().is_err());
    }

    #[test]
    fn locations_are_lower_case_without_spaces() {
        assert_eq!("WestEurope".parse::<Location>().unwrap().as_str(), "westeurope");
        let message = "West Europe".parse::<Location>().unwrap_err().to_string();
        assert!(message.contains("without spaces"), "{message}");
    }

    #[test]
    fn api_versions_are_dates_with_an_optional_label() {
        const PINNED: ApiVersion = ApiVersion::new("2024-07-01");
        assert_eq!("2024-07-01".parse::<ApiVersion>().unwrap(), PINNED);
        assert!("2023-10-02-preview".parse::<ApiVersion>().is_ok());
        for bad in ["2024-7-01", "latest", "2024-07-01-", "2024-07-01preview"] {
            assert!(bad.parse::<ApiVersion>().is_err(), "{bad}");
        }
    }
}
