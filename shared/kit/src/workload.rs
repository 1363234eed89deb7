//! Clients of workload clusters: the API server of a cluster Cluster API built, reached with the
//! kubeconfig Cluster API keeps in the Secret `<cluster>-kubeconfig` (key `value`), through the
//! HTTPS proxy of the environment as Go's clients reach it.
//!
//! A client is built once per cluster and kept while the Secret's resource version stays the same,
//! so that a steady state costs one cached Secret read per pass and no new connection.
//!
//! A workload cluster's Nodes are read here as the few fields a controller weighs (name, provider
//! ID, readiness, cordon, kubelet version) a page at a time, so that a pass over a cluster of
//! 1,000 Nodes holds a few bytes per Node rather than whole objects.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use capz_api::common::ObjectReference;
use k8s_openapi::api::core::v1::{Node as FullNode, Secret};
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::object::Object;
use kube::discovery::ApiResource;
use kube::{Api, Client, Config, ResourceExt as _};
use serde::Deserialize;

/// Why a workload cluster cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The management cluster's API server refused or failed the Secret read.
    #[error("reading the kubeconfig Secret {secret}: {source}")]
    Read {
        /// The Secret.
        secret: String,
        /// The API server's error.
        source: kube::Error,
    },
    /// The Secret holds no usable kubeconfig.
    #[error("the kubeconfig in Secret {secret} cannot be used: {reason}")]
    Unusable {
        /// The Secret.
        secret: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl crate::policy::Classify for WorkloadError {
    fn category(&self) -> crate::policy::Category {
        crate::policy::Category::Transient
    }

    fn reason(&self) -> crate::conditions::Reason {
        crate::conditions::Reason::WAITING_FOR_DEPENDENCY
    }
}

/// The workload clusters' clients, one per cluster.
pub struct Workloads {
    client: Client,
    /// Per `namespace/cluster`: the Secret's resource version and the client built from it.
    clients: Mutex<HashMap<String, (String, Client)>>,
}

impl Workloads {
    /// Clients built from the Secrets `client` reads.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            clients: Mutex::default(),
        }
    }

    /// The client of the workload cluster `cluster` in `namespace`; `None` while Cluster API has
    /// not written its kubeconfig.
    ///
    /// # Errors
    /// When the Secret cannot be read or holds no usable kubeconfig.
    pub async fn client(&self, namespace: &str, cluster: &str) -> Result<Option<Client>, WorkloadError> {
        let name = format!("{cluster}-kubeconfig");
        let secret_path = format!("{namespace}/{name}");
        let secret = Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get_opt(&name)
            .await
            .map_err(|source| WorkloadError::Read {
                secret: secret_path.clone(),
                source,
            })?;
        let Some(secret) = secret else {
            return Ok(None);
        };
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        if let Some((built_from, client)) = self.cached(&secret_path)
            && built_from == version
        {
            return Ok(Some(client));
        }
        let unusable = |reason: String| WorkloadError::Unusable {
            secret: secret_path.clone(),
            reason,
        };
        let value = secret
            .data
            .as_ref()
            .and_then(|data| data.get("value"))
            .ok_or_else(|| unusable("it has no key value".to_owned()))?;
        let text = std::str::from_utf8(&value.0).map_err(|err| unusable(err.to_string()))?;
        let kubeconfig = Kubeconfig::from_yaml(text).map_err(|err| unusable(err.to_string()))?;
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|err| unusable(err.to_string()))?;
        config.proxy_url = proxy_for(&config.cluster_url, &Environment::read());
        let client = Client::try_from(config).map_err(|err| unusable(err.to_string()))?;
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(secret_path, (version, client.clone()));
        Ok(Some(client))
    }

    fn cached(&self, key: &str) -> Option<(String, Client)> {
        self.clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }
}

/// The proxy settings of the process: `HTTPS_PROXY` and `NO_PROXY` (or their lower-case names).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The proxy's URL.
    pub https_proxy: Option<String>,
    /// Hosts reached directly: names (a leading dot or none: the domain and its subdomains),
    /// addresses, `*` for all.
    pub no_proxy: Option<String>,
}

impl Environment {
    /// The process's settings.
    #[must_use]
    pub fn read() -> Self {
        let var = |upper: &str, lower: &str| {
            std::env::var(upper)
                .ok()
                .or_else(|| std::env::var(lower).ok())
                .filter(|value| !value.trim().is_empty())
        };
        Self {
            https_proxy: var("HTTPS_PROXY", "https_proxy"),
            no_proxy: var("NO_PROXY", "no_proxy"),
        }
    }
}

/// The proxy through which `target` is reached, as Go's `http.ProxyFromEnvironment` decides:
/// `HTTPS_PROXY`, unless `NO_PROXY` names the target's host (or a domain it is in), or the
/// target is a loopback address.
#[must_use]
pub fn proxy_for(target: &http::Uri, environment: &Environment) -> Option<http::Uri> {
    let proxy = environment.https_proxy.as_deref()?.parse::<http::Uri>().ok()?;
    let host = target
        .host()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    let excluded = environment
        .no_proxy
        .iter()
        .flat_map(|list| list.split(','))
        .map(|entry| entry.trim().to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .any(|entry| {
            let entry = entry.split_once(':').map_or(entry.as_str(), |(name, _)| name);
            let domain = entry.trim_start_matches('.');
            entry == "*" || host == domain || host.ends_with(&format!(".{domain}"))
        });
    (!loopback && !excluded).then_some(proxy)
}

/// How many Nodes one list request asks for.
const NODE_PAGE: u32 = 200;

/// One Node of the workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: Option<String>,
    /// `spec.providerID`: the Azure instance it runs on.
    pub provider_id: Option<String>,
    /// Its `Ready` condition is true.
    pub ready: bool,
    /// It is cordoned.
    pub unschedulable: bool,
    /// `status.nodeInfo.kubeletVersion`.
    pub kubelet_version: Option<String>,
}

impl Node {
    /// Ready and taking Pods.
    #[must_use]
    pub fn available(&self) -> bool {
        self.ready && !self.unschedulable
    }

    /// A reference to it, for a machine's `status.nodeRef`.
    #[must_use]
    pub fn reference(&self) -> ObjectReference {
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

/// The Nodes `client` reaches, listed a page at a time and kept as the few fields a pass weighs.
///
/// # Errors
/// The workload API server's refusal or silence.
pub async fn nodes(client: Client) -> kube::Result<Vec<Node>> {
    let api = Api::<Object<Spec, Status>>::all_with(client, &ApiResource::erase::<FullNode>(&()));
    let mut nodes = Vec::new();
    let mut params = ListParams::default().limit(NODE_PAGE);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(no_proxy: &str) -> Environment {
        Environment {
            https_proxy: Some("http://127.0.0.1:3128".to_owned()),
            no_proxy: Some(no_proxy.to_owned()).filter(|list| !list.is_empty()),
        }
    }

    fn proxied(target: &str, no_proxy: &str) -> bool {
        proxy_for(&target.parse().unwrap(), &environment(no_proxy)).is_some()
    }

    #[test]
    fn targets_go_through_the_proxy_unless_no_proxy_or_loopback_names_them() {
        assert!(proxied("https://c1-abcd.westeurope.cloudapp.azure.com:6443", ""));
        assert!(proxied("https://10.0.0.4:6443", "127.0.0.1,localhost"));
        assert!(!proxied("https://127.0.0.1:6443", ""));
        assert!(!proxied("https://[::1]:6443", ""));
        assert!(!proxied("https://localhost:6443", ""));
        assert!(!proxied("https://10.0.0.4:6443", "10.0.0.4"));
        assert!(!proxied(
            "https://c1.westeurope.cloudapp.azure.com",
            ".cloudapp.azure.com"
        ));
        assert!(!proxied(
            "https://c1.westeurope.cloudapp.azure.com",
            "azure.com:443"
        ));
        assert!(!proxied("https://anything.example", "*"));
        assert!(proxied("https://notazure.com", "azure.com"));
        let none = Environment::default();
        assert!(proxy_for(&"https://10.0.0.4".parse().unwrap(), &none).is_none());
    }
}
