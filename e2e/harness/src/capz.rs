//! capz-rs installed the way a user installs it: `clusterctl init --infrastructure azure` applies
//! the components rendered from `deploy/` (see [`crate::clusterctl`]), and the harness then plays
//! the kubelet for the Deployments it created.
//!
//! For each Deployment the harness runs the image it names, as `just images` built it, under runc
//! ([`crate::container`]; the binary built in this workspace as a process where runc cannot run),
//! with the container's arguments and environment as the Pod would get them: plain values, and
//! values from Secrets read from the cluster. Only what a kubelet and a Service would provide
//! differs: ports on loopback, a kubeconfig, and the webhook server's certificate from the plane's
//! CA, with the webhook configurations clusterctl installed pointed at it.
//!
//! Each process talks to the API server with tokens of its Deployment's own ServiceAccount,
//! refreshed in a file as a projected token volume would be, so the RBAC in `deploy/` is what
//! allows or refuses every call. Azure is the ARM emulator, given to every process as a custom
//! cloud.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, EnvVar, Namespace, Secret};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

use crate::cluster_api::admit_through;
use crate::clusterctl::{Clusterctl, PROVIDER};
use crate::container::{ImageReference, Runtime};
use crate::error::{Error, Result};
use crate::plane::{Plane, free_ports};
use crate::process::Launch;
use crate::token::{ProjectedToken, TokenOptions};

/// The namespace capz-rs's components are installed in.
pub const NAMESPACE: &str = "capz-system";
/// The label clusterctl puts on everything it installed for capz-rs.
const SELECTOR: &str = "cluster.x-k8s.io/provider=infrastructure-azure";
/// Where clusterctl checks that cert-manager works.
const CERT_MANAGER_PROBE: &str = "cert-manager-test";
/// How long the API server may take to call the webhook server at its new address.
const ADMISSION_TIMEOUT: Duration = Duration::from_secs(30);

/// The Secret the default flavor's AzureClusterIdentity reads its client secret from (key
/// `clientSecret`), in the cluster's namespace.
pub const IDENTITY_SECRET: &str = "cluster-identity-secret";
/// The Kubernetes version clusters are generated for.
pub const KUBERNETES_VERSION: &str = "v1.33.1";

/// The label that selects a Cluster for the add-ons of [`addons`]: its value is the cluster's name.
pub const ADDONS_LABEL: &str = "addons.capz-rs.io/cluster";

/// The ClusterResourceSets (and their ConfigMaps) that install a cloud controller manager and,
/// with `cni`, a CNI into the cluster `cluster` once it is labelled [`ADDONS_LABEL`]`: cluster`,
/// as CAPZ's quick start installs them; apply them in the cluster's namespace.
#[must_use]
pub fn addons(cluster: &str, cni: bool) -> String {
    include_str!("addons.yaml")
        .split("\n---\n")
        .filter(|document| cni || !document.contains("name: CLUSTER_NAME-flannel"))
        .collect::<Vec<_>>()
        .join("\n---\n")
        .replace("CLUSTER_NAME", cluster)
}

/// The objects the ClusterResourceSets of [`addons`] put into the workload cluster `cluster`
/// (what their ConfigMaps carry), for installing the same add-ons straight into it, as a user
/// does with kubectl.
///
/// # Errors
/// When they do not parse.
pub fn addon_objects(cluster: &str) -> Result<Vec<DynamicObject>> {
    let parse = |yaml: &str| {
        serde_saphyr::from_multiple::<DynamicObject>(yaml).map_err(|err| Error::Manifest {
            path: "the add-ons".into(),
            message: err.to_string(),
        })
    };
    let mut objects = Vec::new();
    for document in parse(&addons(cluster, true))? {
        if document
            .types
            .as_ref()
            .is_some_and(|types| types.kind == "ConfigMap")
        {
            for manifest in document.data["data"]
                .as_object()
                .into_iter()
                .flat_map(|data| data.values())
            {
                objects.extend(parse(manifest.as_str().unwrap_or_default())?);
            }
        }
    }
    Ok(objects)
}
/// A valid OpenSSH public key (ed25519), base64-encoded as the flavors take it.
pub const SSH_PUBLIC_KEY_B64: &str = "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSUFBQkFnTUVCUVlIQ0FrS0N3d05EZzhRRVJJVEZCVVdGeGdaR2hzY0hSNGYgdGVzdA==";

/// The variables `clusterctl generate cluster <name>` needs for the default flavor in `namespace`,
/// signing in as the ARM emulator's default principal (its secret in [`IDENTITY_SECRET`]).
#[must_use]
pub fn flavor_variables(name: &str, namespace: &str) -> Vec<(&'static str, String)> {
    use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
    [
        ("AZURE_SUBSCRIPTION_ID", DEFAULT_SUBSCRIPTION),
        ("AZURE_TENANT_ID", DEFAULT_TENANT),
        ("AZURE_CLIENT_ID", DEFAULT_CLIENT_ID),
        ("AZURE_LOCATION", "westeurope"),
        ("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D2s_v3"),
        ("AZURE_NODE_MACHINE_TYPE", "Standard_D2s_v3"),
        ("AZURE_SSH_PUBLIC_KEY_B64", SSH_PUBLIC_KEY_B64),
        ("AZURE_CLUSTER_IDENTITY_SECRET_NAME", IDENTITY_SECRET),
        ("AZURE_CLUSTER_IDENTITY_SECRET_NAMESPACE", namespace),
    ]
    .into_iter()
    .map(|(variable, value)| (variable, value.to_owned()))
    .chain([
        ("CLUSTER_IDENTITY_NAME", format!("{name}-identity")),
        ("CLUSTER_CLASS_NAME", format!("{name}-class")),
    ])
    .collect()
}

/// The Azure cloud capz-rs is to use: the ARM emulator's base URL, the CA file its certificate
/// is signed by and, for managed identities, its instance metadata endpoint.
#[derive(Debug, Clone)]
pub struct AzureEndpoint {
    pub url: String,
    pub ca_file: PathBuf,
    pub imds_url: Option<String>,
}

impl AzureEndpoint {
    /// The variables that make every capz-rs process use this endpoint as its cloud.
    fn environment(&self) -> Vec<(String, String)> {
        [
            ("CAPZ_CUSTOM_CLOUD_RESOURCE_MANAGER", Some(self.url.clone())),
            ("CAPZ_CUSTOM_CLOUD_AUTHORITY_HOST", Some(self.url.clone())),
            (
                "CAPZ_CUSTOM_CLOUD_CA_FILE",
                Some(self.ca_file.display().to_string()),
            ),
            ("CAPZ_IMDS_ENDPOINT", self.imds_url.clone()),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), value?)))
        .collect()
    }
}

/// capz-rs running beside the plane. Keep it while the processes run: it refreshes their tokens.
pub struct Capz {
    pods: Vec<RunningPod>,
    azure: AzureEndpoint,
    runtime: Runtime,
}

/// The container the harness runs for one Deployment, and what it was started from.
struct RunningPod {
    name: String,
    deployment: String,
    /// The Deployment's uid and Pod template when it started: a change of either restarts it.
    started_from: String,
    metrics_port: Option<u16>,
    diagnostics_port: Option<u16>,
    _token: ProjectedToken,
}

impl Capz {
    /// The names of the processes started, one per Deployment (the binary's name).
    #[must_use]
    pub fn processes(&self) -> Vec<&str> {
        self.pods.iter().map(|pod| pod.name.as_str()).collect()
    }

    /// Where the process `name` serves `/metrics`, if its Deployment asks for a metrics address.
    #[must_use]
    pub fn metrics_address(&self, name: &str) -> Option<std::net::SocketAddr> {
        self.loopback(name, |pod| pod.metrics_port)
    }

    /// Where the process `name` serves CAPZ's diagnostics endpoint, if its Deployment names a
    /// `--diagnostics-address`.
    #[must_use]
    pub fn diagnostics_address(&self, name: &str) -> Option<std::net::SocketAddr> {
        self.loopback(name, |pod| pod.diagnostics_port)
    }

    fn loopback(
        &self,
        name: &str,
        port: impl Fn(&RunningPod) -> Option<u16>,
    ) -> Option<std::net::SocketAddr> {
        self.pods
            .iter()
            .find(|pod| pod.name == name)
            .and_then(port)
            .map(|port| ([127, 0, 0, 1], port).into())
    }

    /// How many service-account tokens are being kept fresh (one per process).
    #[must_use]
    pub fn tokens(&self) -> usize {
        self.pods.len()
    }

    /// What runs the Deployments: their images under runc, or processes (and why).
    #[must_use]
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// How long a stopped container has to finish after SIGTERM, as a Pod's grace period.
const TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// What a Pod started from a Deployment depends on.
fn started_from(deployment: &Deployment) -> String {
    let template = deployment.spec.as_ref().map(|spec| &spec.template);
    format!(
        "{}/{}",
        deployment.metadata.uid.as_deref().unwrap_or_default(),
        serde_json::to_string(&template).unwrap_or_default()
    )
}

impl Plane {
    /// Installs capz-rs with `clusterctl init --infrastructure azure` and runs every Deployment it
    /// created as a local process against `azure`. Returns once each serves its health port and
    /// the API server admits capz-rs's kinds through the webhook server.
    ///
    /// # Errors
    /// When clusterctl fails, a binary is not built, a process stops or does not serve in time.
    pub async fn start_capz(&mut self, clusterctl: &Clusterctl, azure: &AzureEndpoint) -> Result<Capz> {
        self.start_capz_with(clusterctl, azure, &[], &[]).await
    }

    /// [`Plane::start_capz`], with `variables` for `clusterctl init` (such as `("EXP_EDGEZONE",
    /// "true")`), and arguments added to some Deployments' container before they start, as a
    /// user edits a Deployment: `(deployment, argument)` pairs, such as `("capz-compute",
    /// "--sync-period=10s")`.
    ///
    /// # Errors
    /// As [`Plane::start_capz`]; also when a named Deployment does not exist.
    pub async fn start_capz_with(
        &mut self,
        clusterctl: &Clusterctl,
        azure: &AzureEndpoint,
        variables: &[(&str, &str)],
        extra_args: &[(&str, &str)],
    ) -> Result<Capz> {
        let client = self.client().await?;
        settle_cert_manager_probe(&client).await?;
        let provider = format!("{PROVIDER}:{}", clusterctl.capz_version());
        clusterctl
            .run_with_env(&["init", "--infrastructure", &provider], variables)
            .await?;
        add_container_args(&client, extra_args).await?;
        let mut capz = Capz {
            pods: Vec::new(),
            azure: azure.clone(),
            runtime: Runtime::chosen()?,
        };
        eprintln!("harness: capz-rs's Deployments run {}", capz.runtime.describe());
        self.sync_capz(&mut capz).await?;
        Ok(capz)
    }

    /// Plays the kubelet after capz-rs's Deployments changed (`clusterctl upgrade`, an overlay
    /// applied): stops the container of each Deployment deleted, recreated or with a new Pod
    /// template (SIGTERM, as a kubelet stops a Pod), and starts one for each Deployment that has
    /// none. Returns the names of those started, once each serves its health port and, when the
    /// webhooks were among them, the API server admits capz-rs's kinds through them again.
    ///
    /// # Errors
    /// When a container cannot start or does not serve in time.
    pub async fn sync_capz(&mut self, capz: &mut Capz) -> Result<Vec<String>> {
        let client = self.client().await?;
        let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE)
            .list(&ListParams::default().labels(SELECTOR))
            .await?;
        let current = |pod: &RunningPod| {
            deployments.items.iter().any(|deployment| {
                deployment.metadata.name.as_deref() == Some(pod.deployment.as_str())
                    && started_from(deployment) == pod.started_from
            })
        };
        let (kept, stale): (Vec<_>, Vec<_>) = std::mem::take(&mut capz.pods).into_iter().partition(current);
        capz.pods = kept;
        for pod in stale {
            self.stop(&pod.name, TERMINATION_GRACE)?;
        }
        let mut started = Vec::new();
        let mut webhooks = None;
        for deployment in &deployments {
            let name = deployment.metadata.name.as_deref().unwrap_or_default();
            if capz.pods.iter().any(|pod| pod.deployment == name) {
                continue;
            }
            let pod = self.pod(&client, deployment, capz).await?;
            if let Some(port) = pod.webhook_port {
                webhooks = Some(port);
            }
            self.launch(&pod.name, pod.launch)?;
            self.wait_listening(&pod.name, pod.health_port).await?;
            started.push(pod.name.clone());
            capz.pods.push(RunningPod {
                name: pod.name,
                deployment: name.to_owned(),
                started_from: started_from(deployment),
                metrics_port: pod.metrics_port,
                diagnostics_port: pod.diagnostics_port,
                _token: pod.token,
            });
        }
        if let Some(port) = webhooks {
            let ca_bundle = base64::engine::general_purpose::STANDARD.encode(self.authority().cert_pem());
            admit_through(
                &client,
                SELECTOR,
                &format!("https://127.0.0.1:{port}"),
                &ca_bundle,
            )
            .await?;
            wait_admitted(&client).await?;
        }
        Ok(started)
    }

    /// How the kubelet would start the Deployment's container, on loopback ports.
    async fn pod(&self, client: &Client, deployment: &Deployment, capz: &Capz) -> Result<Pod> {
        let deployment_name = deployment.metadata.name.clone().unwrap_or_default();
        let spec = deployment
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref())
            .ok_or_else(|| not_runnable(&deployment_name, "it has no Pod template"))?;
        let container = spec
            .containers
            .first()
            .ok_or_else(|| not_runnable(&deployment_name, "it has no container"))?;
        let image = ImageReference::parse(container.image.as_deref().unwrap_or_default())?;
        let name = image.name().to_owned();
        // Under runc the image's entrypoint runs; the binary built here is needed only as a process.
        let program = match &capz.runtime {
            Runtime::Processes { .. } => built(&name)?,
            Runtime::Runc { .. } => PathBuf::from(&name),
        };
        let dir = self.dir().join(&name);
        std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;

        let service_account = spec.service_account_name.as_deref().unwrap_or("default");
        let token = ProjectedToken::start(
            client,
            NAMESPACE,
            service_account,
            &dir.join("token"),
            TokenOptions {
                audience: self.url().to_owned(),
                ..TokenOptions::default()
            },
        )
        .await?;
        let kubeconfig = self.service_account_kubeconfig(&dir, service_account, token.path())?;

        let ports = free_ports(4)?;
        let mut pod = Pod {
            name,
            health_port: ports[0],
            metrics_port: None,
            webhook_port: None,
            diagnostics_port: None,
            launch: Launch {
                program,
                args: vec![format!("--kubeconfig={}", kubeconfig.display())],
                env: environment(client, container).await?,
                container: None,
            },
            token,
        };
        pod.launch.env.extend(capz.azure.environment());
        // As Cluster API's managers, capz-rs reaches workload clusters (the vmss controller reads
        // their Nodes) through the management cluster's network.
        pod.launch.env.extend(self.workload_proxy_env());
        for arg in container.args.iter().flatten() {
            let (flag, _) = arg.split_once('=').unwrap_or((arg, ""));
            let local = match flag {
                // CAPZ's name for it too: a patch written for CAPZ's manager may add it.
                "--health-probe-bind-address" | "--health-addr" => format!("{flag}=127.0.0.1:{}", ports[0]),
                "--metrics-bind-address" => {
                    pod.metrics_port = Some(ports[1]);
                    format!("{flag}=127.0.0.1:{}", ports[1])
                }
                "--diagnostics-address" => {
                    pod.diagnostics_port = Some(ports[3]);
                    format!("{flag}=127.0.0.1:{}", ports[3])
                }
                "--webhook-port" => {
                    pod.webhook_port = Some(ports[2]);
                    format!("{flag}={}", ports[2])
                }
                "--cert-dir" | "--webhook-cert-dir" => {
                    let certs = dir.join("serving-certs");
                    std::fs::create_dir_all(&certs).map_err(Error::io("create", &certs))?;
                    self.authority().serving(&pod.name, &[])?.write_to(&certs)?;
                    format!("{flag}={}", certs.display())
                }
                _ => arg.clone(),
            };
            pod.launch.args.push(local);
        }
        // What the Pod would have mounted: its own files (token, kubeconfig, certificates) and
        // the CA files they name.
        let binds = [dir, self.ca_file().to_owned(), capz.azure.ca_file.clone()];
        pod.launch = capz
            .runtime
            .launch(self.dir(), &pod.name, &image, pod.launch, &binds)?;
        Ok(pod)
    }

    /// A kubeconfig that reads its token from `token` (re-read as it is refreshed), with the
    /// namespace a Pod of capz-rs would be in.
    fn service_account_kubeconfig(&self, dir: &Path, service_account: &str, token: &Path) -> Result<PathBuf> {
        let kubeconfig = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: plane\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: {service_account}\n  user:\n    tokenFile: {token}\ncontexts:\n- name: plane\n  context:\n    cluster: plane\n    user: {service_account}\n    namespace: {NAMESPACE}\ncurrent-context: plane\n",
            url = self.url(),
            ca = self.ca_file().display(),
            token = token.display(),
        );
        std::fs::write(&kubeconfig, text).map_err(Error::io("write", &kubeconfig))?;
        Ok(kubeconfig)
    }
}

/// A Deployment's container, as a local process.
struct Pod {
    name: String,
    health_port: u16,
    metrics_port: Option<u16>,
    webhook_port: Option<u16>,
    diagnostics_port: Option<u16>,
    launch: Launch,
    token: ProjectedToken,
}

fn not_runnable(deployment: &str, why: &str) -> Error {
    Error::Manifest {
        path: format!("Deployment {NAMESPACE}/{deployment}"),
        message: format!("cannot run it: {why}"),
    }
}

/// Appends each `(deployment, argument)` to the arguments of that Deployment's first container.
async fn add_container_args(client: &Client, extra_args: &[(&str, &str)]) -> Result<()> {
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    for (name, arg) in extra_args {
        let mut deployment = deployments.get(name).await?;
        let container = deployment
            .spec
            .as_mut()
            .and_then(|spec| spec.template.spec.as_mut())
            .and_then(|pod| pod.containers.first_mut())
            .ok_or_else(|| not_runnable(name, "it has no container"))?;
        container
            .args
            .get_or_insert_with(Vec::new)
            .push((*arg).to_owned());
        deployments
            .replace(name, &PostParams::default(), &deployment)
            .await?;
    }
    Ok(())
}

/// The container's environment: plain values, and values from Secrets (an optional reference
/// to a missing key leaves the variable unset, as the kubelet does).
async fn environment(client: &Client, container: &Container) -> Result<Vec<(String, String)>> {
    let secrets = Api::<Secret>::namespaced(client.clone(), NAMESPACE);
    let mut env = Vec::new();
    for EnvVar {
        name,
        value,
        value_from,
    } in container.env.iter().flatten()
    {
        if let Some(value) = value {
            env.push((name.clone(), value.clone()));
            continue;
        }
        let Some(reference) = value_from.as_ref().and_then(|from| from.secret_key_ref.as_ref()) else {
            continue;
        };
        let secret = secrets.get_opt(&reference.name).await?;
        let value = secret
            .and_then(|secret| secret.data)
            .and_then(|data| data.get(&reference.key).cloned());
        match value {
            Some(bytes) => env.push((name.clone(), String::from_utf8_lossy(&bytes.0).into_owned())),
            None if reference.optional == Some(true) => {}
            None => {
                return Err(Error::Manifest {
                    path: format!("Secret {NAMESPACE}/{}", reference.name),
                    message: format!("has no key {} for the variable {name}", reference.key),
                });
            }
        }
    }
    Ok(env)
}

/// One of this workspace's binaries, built next to the running program (a test's binary sits one
/// directory further down, in `deps/`).
///
/// # Errors
/// [`Error::NotBuilt`] when it is in neither place.
pub fn built(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(Error::io("locate", "the running program"))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let candidates = [dir.join(name), dir.parent().unwrap_or(&dir).join(name)];
    candidates
        .iter()
        .find(|candidate| candidate.is_file())
        .cloned()
        .ok_or_else(|| Error::NotBuilt {
            binary: name.to_owned(),
            dir: dir.parent().unwrap_or(&dir).to_path_buf(),
        })
}

/// Waits until the namespace in which an earlier `clusterctl init` probed cert-manager is gone.
/// Each `init` checks cert-manager by creating test objects there; while the last probe's
/// namespace is still terminating that fails, and clusterctl then tries to download cert-manager.
async fn settle_cert_manager_probe(client: &Client) -> Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let started = Instant::now();
    while namespaces.get_opt(CERT_MANAGER_PROBE).await?.is_some() {
        if started.elapsed() > ADMISSION_TIMEOUT {
            return Err(Error::Timeout {
                what: format!("namespace {CERT_MANAGER_PROBE} was not deleted"),
                seconds: ADMISSION_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Waits until the API server calls the webhook server at its new address: a dry-run create of a
/// capz-rs object succeeds only then (the webhooks fail closed).
async fn wait_admitted(client: &Client) -> Result<()> {
    let kind = crate::resource(
        client,
        "infrastructure.cluster.x-k8s.io",
        "v1beta1",
        "AzureClusterIdentity",
    )
    .await?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), NAMESPACE, &kind);
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": "capz-harness-admission-probe"},
        "spec": {
            "type": "ManualServicePrincipal", "clientID": "probe", "tenantID": "probe",
            "clientSecret": {"name": "probe", "namespace": NAMESPACE},
        },
    }))
    .map_err(|err| Error::Manifest {
        path: "the admission probe".into(),
        message: err.to_string(),
    })?;
    let started = Instant::now();
    loop {
        match api
            .create(
                &PostParams {
                    dry_run: true,
                    ..PostParams::default()
                },
                &probe,
            )
            .await
        {
            Ok(_) => return Ok(()),
            Err(err) if started.elapsed() > ADMISSION_TIMEOUT => return Err(err.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_add_ons_carry_a_cloud_controller_manager_and_a_cni_for_their_cluster() {
        let objects = addon_objects("demo").unwrap();
        let kinds: Vec<(String, String)> = objects
            .iter()
            .map(|object| {
                let kind = object
                    .types
                    .as_ref()
                    .map(|types| types.kind.clone())
                    .unwrap_or_default();
                (kind, object.metadata.name.clone().unwrap_or_default())
            })
            .collect();
        assert!(
            kinds.contains(&("Deployment".into(), "cloud-controller-manager".into())),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&("DaemonSet".into(), "kube-flannel-ds".into())),
            "{kinds:?}"
        );
        let text = serde_json::to_string(&objects).unwrap();
        assert!(
            text.contains("--cluster-name=demo") && !text.contains("CLUSTER_NAME"),
            "{text}"
        );
        // Without the CNI, only the cloud provider's set is left.
        let without = addons("demo", false);
        assert!(!without.contains("kube-flannel-ds") && without.contains("cloud-controller-manager"));
    }
}
