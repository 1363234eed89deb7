//! The pieces every model shares: tags, references, child resources, the provisioning state, SKUs
//! and secrets.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::id::{Location, ResourceId};

/// The tags of a resource. Ordered, so that two sets of tags compare and print the same way.
pub type Tags = BTreeMap<String, String>;

/// A reference to another resource by its id, as ARM writes them: `{"id": "/subscriptions/…"}`.
///
/// Unlike the models it has no `Default`: a reference without an id means nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SubResource {
    /// The referenced resource.
    pub id: ResourceId,
}

impl From<ResourceId> for SubResource {
    fn from(id: ResourceId) -> Self {
        Self { id }
    }
}

/// A top-level resource with a region and tags: the envelope ARM puts around every such
/// resource's properties. Resources with more at the top (a SKU, zones, an identity) have models
/// of their own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrackedResource<Properties> {
    /// The resource's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The resource's name (read-only: the id names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The resource's full type, such as `Microsoft.Network/routeTables` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// Changes with every write (read-only; not every type has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The resource's region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The resource's tags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Tags>,
    /// What the resource is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<Properties>,
}

/// A child resource, written inside its parent's body or on its own: a subnet, a security rule, a
/// route, a part of a load balancer, an interface's IP configuration. Azure keeps children in
/// their parent's document, so they carry its etag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildResource<Properties> {
    /// The child's id (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ResourceId>,
    /// The child's name, unique in its parent; needed when it is written inside its parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The child's full type, such as `Microsoft.Network/virtualNetworks/subnets` (read-only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
    /// The parent's etag (read-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// What the child is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<Properties>,
}

lenient_enum! {
    /// Where the last write of a resource stands. Controllers act on a resource only once it is
    /// `Succeeded` (or write again after `Failed`); the other values are transitions.
    pub enum ProvisioningState {
        /// The last write is done.
        Succeeded = "Succeeded",
        /// The last write failed; the resource may be partly built.
        Failed = "Failed",
        /// The last write was canceled.
        Canceled = "Canceled",
        /// Being created (Compute).
        Creating = "Creating",
        /// Being created or changed (Network says `Updating` for both).
        Updating = "Updating",
        /// Being deleted.
        Deleting = "Deleting",
    }
}

/// The SKU of a resource: a name from the resource's own set, and a tier Azure derives from it
/// (answered, rarely sent).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sku<Name> {
    /// The SKU's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    /// The tier, such as `Regional` for network SKUs or `Premium` for disks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
}

/// A value sent to Azure that must not show in logs, such as a machine's custom data (which holds
/// its bootstrap token), an admin password or an extension's protected settings. Azure never
/// answers these, so they are only ever written.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret<T = String>(T);

impl<T> Secret<T> {
    /// Wraps `value`.
    #[must_use]
    pub fn new(value: T) -> Self {
        Self(value)
    }

    /// The value itself.
    #[must_use]
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::{ProvisioningState, Secret, Sku};

    #[test]
    fn known_values_are_read_in_any_case_and_unknown_ones_kept() {
        let read: Vec<ProvisioningState> =
            serde_json::from_str(r#"["Succeeded", "succeeded", "UPDATING", "Migrating"]"#).unwrap();
        assert_eq!(
            read,
            [
                ProvisioningState::Succeeded,
                ProvisioningState::Succeeded,
                ProvisioningState::Updating,
                ProvisioningState::Other("Migrating".to_owned()),
            ]
        );
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"["Succeeded","Succeeded","Updating","Migrating"]"#
        );
        assert!(serde_json::from_str::<ProvisioningState>("42").is_err());
    }

    #[test]
    fn a_sku_without_a_tier_sends_only_its_name() {
        let sku = Sku {
            name: Some("Standard".to_owned()),
            tier: None,
        };
        assert_eq!(serde_json::to_string(&sku).unwrap(), r#"{"name":"Standard"}"#);
    }

    #[test]
    fn secrets_are_sent_as_is_and_never_printed() {
        let secret = Secret::new("I2Nsb3VkLWNvbmZpZwo=".to_owned());
        assert_eq!(
            serde_json::to_string(&secret).unwrap(),
            r#""I2Nsb3VkLWNvbmZpZwo=""#
        );
        assert_eq!(secret.expose(), "I2Nsb3VkLWNvbmZpZwo=");
        assert!(!format!("{secret:?}").contains("I2Nsb3Vk"));
    }
}
