//! The workload cluster's Nodes as a pool's pass weighs them: name, provider ID, readiness,
//! whether Pods may be scheduled, kubelet version. Nodes are listed a page at a time and each is
//! kept only as these fields, so a pass over a pool of a large cluster holds a few bytes per Node
//! rather than whole objects (a cluster of 1,000 Nodes is read by each of its pools' passes).

use capz_api::common::ObjectReference;
use capz_kit::kube::api::{Api, ListParams};
use capz_kit::kube::core::object::Object;
use capz_kit::kube::discovery::ApiResource;
use capz_kit::kube::{Client, ResourceExt as _};
use k8s_openapi::api::core::v1::Node as FullNode;
use serde::Deserialize;

/// How many Nodes one list request asks for.
const PAGE: u32 = 200;

/// One Node of the workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) uid: Option<String>,
    pub(crate) provider_id: Option<String>,
    /// Its `Ready` condition is true.
    pub(crate) ready: bool,
    /// It is cordoned.
    pub(crate) unschedulable: bool,
    pub(crate) kubelet_version: Option<String>,
}

impl Node {
    /// Ready and taking Pods.
    pub(crate) fn available(&self) -> bool {
        self.ready && !self.unschedulable
    }

    /// A reference to it, for a machine's `status.nodeRef`.
    pub(crate) fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Node".to_owned()),
            name: Some(self.name.clone()),
            uid: self.uid.clone(),
            ..ObjectReference::default()
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(rename = "providerID")]
    provider_id: Option<String>,
    unschedulable: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    #[serde(default)]
    conditions: Vec<Condition>,
    node_info: Option<NodeInfo>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeInfo {
    kubelet_version: String,
}

/// The Nodes `client` reaches.
///
/// # Errors
/// The workload API server's refusal or silence.
pub(crate) async fn list(client: Client) -> capz_kit::kube::Result<Vec<Node>> {
    let api = Api::<Object<Spec, Status>>::all_with(client, &ApiResource::erase::<FullNode>(&()));
    let mut nodes = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api.list(&params).await?;
        nodes.extend(page.items.into_iter().map(|node| {
            Node {
                name: node.name_any(),
                uid: node.metadata.uid.clone(),
                provider_id: node.spec.provider_id,
                ready: node.status.as_ref().is_some_and(|status| {
                    status
                        .conditions
                        .iter()
                        .any(|condition| condition.type_ == "Ready" && condition.status == "True")
                }),
                unschedulable: node.spec.unschedulable.unwrap_or(false),
                kubelet_version: node
                    .status
                    .and_then(|status| status.node_info)
                    .map(|info| info.kubelet_version),
            }
        }));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(nodes),
        }
    }
}
