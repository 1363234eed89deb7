//! CAPZ's tags on Azure resources: who owns a resource, and which role it plays in the cluster.
//! Resources created by capz-rs and by CAPZ carry the same tags, so either recognises the other's.

use std::collections::BTreeMap;

/// Tags of an Azure resource.
pub type Tags = BTreeMap<String, String>;

const CLUSTER_PREFIX: &str = "sigs.k8s.io_cluster-api-provider-azure_cluster_";
const ROLE: &str = "sigs.k8s.io_cluster-api-provider-azure_role";
/// The value of the cluster tag on resources the cluster created and may delete.
pub const OWNED: &str = "owned";

/// The part a resource plays in a cluster (the role tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The public API server load balancer and its IP.
    ApiServer,
    /// The internal API server frontend.
    ApiServerInternal,
    /// The nodes' outbound load balancer.
    NodeOutbound,
    /// The control plane's outbound load balancer.
    ControlPlaneOutbound,
    /// The bastion host.
    Bastion,
    /// Resources every part of the cluster shares (resource group, virtual network).
    Common,
    /// A control-plane machine.
    ControlPlane,
    /// A worker machine.
    Node,
}

impl Role {
    /// The tag's value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiServer => "apiserver",
            Self::ApiServerInternal => "apiserver-internal",
            Self::NodeOutbound => "nodeOutbound",
            Self::ControlPlaneOutbound => "controlPlaneOutbound",
            Self::Bastion => "bastion",
            Self::Common => "common",
            Self::ControlPlane => "control-plane",
            Self::Node => "node",
        }
    }
}

/// The tags of a resource `cluster` creates: ownership, role, and the spec's `additionalTags`
/// (which cannot override the first two).
#[must_use]
pub fn owned(cluster: &str, role: Role, additional: Option<&Tags>) -> Tags {
    let mut tags = additional.cloned().unwrap_or_default();
    tags.insert(format!("{CLUSTER_PREFIX}{cluster}"), OWNED.to_owned());
    tags.insert(ROLE.to_owned(), role.as_str().to_owned());
    tags
}

/// Whether `tags` say `cluster` owns the resource.
#[must_use]
pub fn is_owned(tags: Option<&Tags>, cluster: &str) -> bool {
    tags.and_then(|tags| tags.get(&format!("{CLUSTER_PREFIX}{cluster}")))
        .is_some_and(|value| value == OWNED)
}

/// Whether a resource tagged `existing` carries every one of `wanted`; tags others added (Azure
/// Policy's, an operator's) do not count against it.
#[must_use]
pub fn carries(existing: Option<&Tags>, wanted: &Tags) -> bool {
    wanted
        .iter()
        .all(|(key, value)| existing.and_then(|tags| tags.get(key)) == Some(value))
}

/// `wanted` laid over the tags a resource has: what a write sends so as to take nothing away
/// that others added.
#[must_use]
pub fn keeping_others(existing: Option<&Tags>, wanted: &Tags) -> Tags {
    let mut tags = existing.cloned().unwrap_or_default();
    tags.extend(wanted.iter().map(|(key, value)| (key.clone(), value.clone())));
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_tags_mark_the_cluster_and_role_and_keep_additional_ones() {
        let additional = Tags::from([
            ("team".to_owned(), "a".to_owned()),
            (ROLE.to_owned(), "sneaky".to_owned()),
        ]);
        let tags = owned("c1", Role::Common, Some(&additional));
        assert_eq!(tags["sigs.k8s.io_cluster-api-provider-azure_cluster_c1"], "owned");
        assert_eq!(tags[ROLE], "common");
        assert_eq!(tags["team"], "a");
        assert!(is_owned(Some(&tags), "c1"));
        assert!(!is_owned(Some(&tags), "c2"));
        assert!(!is_owned(None, "c1"));
        let shared = Tags::from([(format!("{CLUSTER_PREFIX}c1"), "shared".to_owned())]);
        assert!(!is_owned(Some(&shared), "c1"));
    }
}
