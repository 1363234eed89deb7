//! Clients of workload clusters: the API server of a cluster Cluster API built, reached with the
//! kubeconfig Cluster API keeps in the Secret `<cluster>-kubeconfig` (key `value`), through the
//! HTTPS proxy of the environment as Go's clients reach it.
//!
//! A client is built once per cluster and kept while the Secret's resource version stays the same.
//! Its Nodes are followed by one watch, listed a page at a time and kept as the few fields a
//! controller weighs (name, provider ID, readiness, cordon, kubelet version). A pass then costs
//! one Secret read and no request to the workload cluster, and a cluster of 1,000 Nodes is held
//! once, in a few hundred bytes per Node, however many pools read it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use capz_api::common::ObjectReference;
use k8s_openapi::api::core::v1::{Node as FullNode, Secret};
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

/// How long the first read of a cluster's Nodes waits for its watch to list them.
const FIRST_LIST: Duration = Duration::from_secs(5);

/// The workload clusters, each reached with a client built from its kubeconfig and its Nodes
/// followed by one watch.
pub struct Workloads {
    client: Client,
    /// Per kubeconfig Secret (`namespace/name`).
    clusters: Mutex<HashMap<String, Workload>>,
    /// Told of every cluster whose Nodes changed.
    changes: tokio::sync::broadcast::Sender<WorkloadCluster>,
}

/// A workload cluster: its Cluster's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkloadCluster {
    /// The Cluster's namespace.
    pub namespace: String,
    /// The Cluster's name.
    pub name: String,
}

/// How many changes [`Workloads::changes`] holds for a slow reader; it misses the older ones.
const CHANGES_BACKLOG: usize = 1024;

/// A workload cluster as [`Workloads`] keep it.
struct Workload {
    /// The resource version of the kubeconfig Secret its client was built from.
    version: String,
    nodes: Arc<NodeCache>,
    /// The task watching its Nodes, stopped when the entry goes.
    watch: tokio::task::AbortHandle,
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.watch.abort();
    }
}

impl Workloads {
    /// Workload clusters reached through the kubeconfig Secrets `client` reads.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Self {
            client,
            clusters: Mutex::default(),
            changes: tokio::sync::broadcast::channel(CHANGES_BACKLOG).0,
        }
    }

    /// The Nodes of the workload cluster `cluster` in `namespace`; `None` while Cluster API has
    /// not written its kubeconfig. The first read of a cluster starts the watch of its Nodes and
    /// waits a little for its first list; Nodes not yet listed, or of a cluster that cannot be
    /// reached, are not there.
    ///
    /// # Errors
    /// When the Secret cannot be read or holds no usable kubeconfig.
    pub async fn nodes(&self, namespace: &str, cluster: &str) -> Result<Option<Nodes>, WorkloadError> {
        let name = format!("{cluster}-kubeconfig");
        let key = format!("{namespace}/{name}");
        let secret = Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get_opt(&name)
            .await
            .map_err(|source| WorkloadError::Read {
                secret: key.clone(),
                source,
            })?;
        let Some(secret) = secret else {
            self.clusters().remove(&key);
            return Ok(None);
        };
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        if let Some(nodes) = self.current(&key, &version) {
            return Ok(Some(nodes));
        }
        let client = connect(&secret, &key).await?;
        let cache = {
            let mut clusters = self.clusters();
            match clusters.get(&key) {
                // Another pass connected meanwhile.
                Some(known) if known.version == version => return Ok(Some(Nodes(known.nodes.clone()))),
                _ => {
                    let cache = Arc::new(NodeCache::new(
                        WorkloadCluster {
                            namespace: namespace.to_owned(),
                            name: cluster.to_owned(),
                        },
                        self.changes.clone(),
                    ));
                    let watch = tokio::spawn(cache.clone().follow(client)).abort_handle();
                    let nodes = cache.clone();
                    // A new kubeconfig replaces the client and stops the old watch.
                    clusters.insert(
                        key,
                        Workload {
                            version,
                            nodes,
                            watch,
                        },
                    );
                    cache
                }
            }
        };
        {
            // Asked for before the flag is read, so that a list done in between is not missed.
            let listed = cache.listed.notified();
            if !cache.synced.load(std::sync::atomic::Ordering::Acquire) {
                _ = tokio::time::timeout(FIRST_LIST, listed).await;
            }
        }
        Ok(Some(Nodes(cache)))
    }

    /// The clusters whose Nodes change from now on: one is added, deleted, or changes in what
    /// [`Node`] keeps of it (a status heartbeat is no change), or all are listed anew. A reader
    /// slower than [`CHANGES_BACKLOG`] changes misses the older ones.
    pub fn changes(&self) -> impl futures_util::Stream<Item = WorkloadCluster> + Send + 'static {
        futures_util::stream::unfold(self.changes.subscribe(), |mut receiver| async move {
            loop {
                match receiver.recv().await {
                    Ok(cluster) => return Some((cluster, receiver)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
    }

    /// Stops following the workload cluster `cluster` in `namespace` (its last pool is gone); a
    /// later read starts again.
    pub fn forget(&self, namespace: &str, cluster: &str) {
        self.clusters()
            .remove(&format!("{namespace}/{cluster}-kubeconfig"));
    }

    /// The Nodes of the cluster whose kubeconfig is `key`, when they are followed with the
    /// Secret's `version`.
    fn current(&self, key: &str, version: &str) -> Option<Nodes> {
        self.clusters()
            .get(key)
            .filter(|known| known.version == version)
            .map(|known| Nodes(known.nodes.clone()))
    }

    fn clusters(&self) -> std::sync::MutexGuard<'_, HashMap<String, Workload>> {
        self.clusters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A client of the cluster whose kubeconfig `secret` (`key`) holds, through the proxy of the
/// environment.
async fn connect(secret: &Secret, key: &str) -> Result<Client, WorkloadError> {
    let unusable = |reason: String| WorkloadError::Unusable {
        secret: key.to_owned(),
        reason,
    };
    let value = secret
        .data
        .as_ref()
        .and_then(|data| data.get("value"))
        .ok_or_else(|| unusable("it has no key value".to_owned()))?;
    let text = std::str::from_utf8(&value.0).map_err(|err| unusable(err.to_string()))?;
    client_of(text).await.map_err(unusable)
}

/// A client of the cluster the kubeconfig `text` reaches (its current context), through the
/// proxy of the environment.
///
/// # Errors
/// Says why the kubeconfig cannot be used.
pub async fn client_of(text: &str) -> Result<Client, String> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|err| err.to_string())?;
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|err| err.to_string())?;
    config.proxy_url = proxy_for(&config.cluster_url, &Environment::read());
    Client::try_from(config).map_err(|err| err.to_string())
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
const NODE_PAGE: u32 = 100;

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

/// A Node of the watch, as the few fields kept of it.
fn slim(node: Object<Spec, Status>) -> Node {
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
}

/// The Nodes of one workload cluster as its watch last saw them.
struct NodeCache {
    cluster: WorkloadCluster,
    /// Where changes are told.
    changes: tokio::sync::broadcast::Sender<WorkloadCluster>,
    /// Per Node name.
    nodes: Mutex<HashMap<String, Node>>,
    /// Whether the watch has listed every Node at least once.
    synced: std::sync::atomic::AtomicBool,
    /// Told when the first list is complete.
    listed: tokio::sync::Notify,
}

impl NodeCache {
    fn new(cluster: WorkloadCluster, changes: tokio::sync::broadcast::Sender<WorkloadCluster>) -> Self {
        Self {
            cluster,
            changes,
            nodes: Mutex::default(),
            synced: std::sync::atomic::AtomicBool::default(),
            listed: tokio::sync::Notify::new(),
        }
    }

    /// Tells the readers of [`Workloads::changes`], if any, that the Nodes changed.
    fn changed(&self) {
        _ = self.changes.send(self.cluster.clone());
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, HashMap<String, Node>> {
        self.nodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows the Nodes `client` reaches until the task is aborted. After any error (an API
    /// server not up yet or gone, an answer that cannot be read) the Nodes are listed anew once a
    /// backoff has passed, so what is kept is never older than the last error; errors are logged
    /// at debug level only: an unreachable workload cluster leaves its instances unready, which
    /// their conditions report.
    async fn follow(self: Arc<Self>, client: Client) {
        use futures_util::StreamExt as _;
        use kube::runtime::watcher::{self, DefaultBackoff, Event};
        let api = Api::<Object<Spec, Status>>::all_with(client, &ApiResource::erase::<FullNode>(&()));
        let mut backoff = DefaultBackoff::default();
        loop {
            let mut events =
                watcher::watcher(api.clone(), watcher::Config::default().page_size(NODE_PAGE)).boxed();
            let mut listing: Option<HashMap<String, Node>> = None;
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Init) => listing = Some(HashMap::new()),
                    Ok(Event::InitApply(node)) => {
                        let node = slim(node);
                        listing.get_or_insert_default().insert(node.name.clone(), node);
                    }
                    Ok(Event::InitDone) => {
                        *self.nodes() = listing.take().unwrap_or_default();
                        self.synced.store(true, std::sync::atomic::Ordering::Release);
                        self.listed.notify_waiters();
                        self.changed();
                        kube::runtime::utils::Backoff::reset(&mut backoff);
                    }
                    Ok(Event::Apply(node)) => {
                        let node = slim(node);
                        let before = self.nodes().insert(node.name.clone(), node.clone());
                        if before.as_ref() != Some(&node) {
                            self.changed();
                        }
                    }
                    Ok(Event::Delete(node)) => {
                        if self.nodes().remove(&node.name_any()).is_some() {
                            self.changed();
                        }
                    }
                    Err(error) => {
                        let cluster = &self.cluster;
                        tracing::debug!(%error, ?cluster, "watching the workload cluster's Nodes; listing them again");
                        break;
                    }
                }
            }
            tokio::time::sleep(backoff.next().unwrap_or(Duration::from_secs(30))).await;
        }
    }
}

/// The Nodes of a workload cluster, kept current by a watch.
#[derive(Clone)]
pub struct Nodes(Arc<NodeCache>);

impl Nodes {
    /// The Node whose provider ID is `provider_id` (Azure's IDs compare without case).
    #[must_use]
    pub fn by_provider_id(&self, provider_id: &str) -> Option<Node> {
        self.0
            .nodes()
            .values()
            .find(|node| {
                node.provider_id
                    .as_deref()
                    .is_some_and(|id| id.eq_ignore_ascii_case(provider_id))
            })
            .cloned()
    }

    /// Whether every Node has been listed at least once.
    #[must_use]
    pub fn synced(&self) -> bool {
        self.0.synced.load(std::sync::atomic::Ordering::Acquire)
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
