//! End-to-end tests of capz-rs: a real kube-apiserver, Cluster API's managers and capz-rs both
//! installed by `clusterctl init`, and the ARM emulator as Azure (in the test's process, so a test
//! reads its request log and state directly). Clusters are written by `clusterctl generate
//! cluster` from capz-rs's own flavors, as a user writes them.
//!
//! The controllers run as the binaries this workspace builds (`cargo build --bins`, which `just
//! e2e` and `cargo test --workspace` do first), each with its own ServiceAccount's tokens.

use std::path::Path;
use std::time::{Duration, Instant};

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use arm_emulator::{Config, Running};
use capz_harness::{AzureEndpoint, Capz, Clusterctl, Plane};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

/// What the tests return: any error, with its message.
pub type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The API group of capz-rs's kinds.
pub const INFRASTRUCTURE: &str = "infrastructure.cluster.x-k8s.io";
/// A valid OpenSSH public key (ed25519), base64-encoded as the flavors take it.
pub const SSH_PUBLIC_KEY_B64: &str =
    "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSURkdmJteDVJR0VnZEdWemRBPT0gdGVzdA==";
/// The Kubernetes version clusters are generated for.
pub const KUBERNETES_VERSION: &str = "v1.33.1";
/// The Secret the flavors' AzureClusterIdentity reads its client secret from.
pub const IDENTITY_SECRET: &str = "cluster-identity-secret";

/// A management cluster with Cluster API and capz-rs, and the emulated Azure they work on.
pub struct Environment {
    pub plane: Plane,
    pub clusterctl: Clusterctl,
    pub azure: Running,
    pub capz: Capz,
    pub client: Client,
}

impl Environment {
    /// Starts the plane, installs and runs Cluster API and then capz-rs with clusterctl, against
    /// an emulator configured by `config`.
    ///
    /// # Errors
    /// When any part does not start; the error says which and where its log is.
    pub async fn start(config: Config) -> TestResult<Self> {
        let started = Instant::now();
        let mut plane = Plane::start().await?;
        let clusterctl = plane.start_cluster_api().await?;
        let tls = arm_emulator::tls::Tls::generate(&[])?;
        let azure = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls).await?;
        let ca_file = plane.dir().join("azure-ca.pem");
        std::fs::write(&ca_file, &tls.ca_pem)?;
        let endpoint = AzureEndpoint {
            url: azure.base_url(),
            ca_file,
        };
        let capz = plane.start_capz(&clusterctl, &endpoint).await?;
        let client = plane.client().await?;
        eprintln!(
            "e2e: Cluster API and capz-rs ({}) serve after {:.1} s; logs in {}",
            capz.processes().join(", "),
            started.elapsed().as_secs_f64(),
            plane.dir().join("logs").display()
        );
        Ok(Self {
            plane,
            clusterctl,
            azure,
            capz,
            client,
        })
    }

    /// `clusterctl generate cluster <name>` of capz-rs's default flavor into `namespace`, signing
    /// in as the emulator's default principal, with `workers` worker machines.
    ///
    /// # Errors
    /// When clusterctl fails.
    pub async fn generate(&self, name: &str, namespace: &str, workers: u32) -> TestResult<String> {
        let workers = workers.to_string();
        let output = self
            .clusterctl
            .run_with_env(
                &[
                    "generate",
                    "cluster",
                    name,
                    "--infrastructure",
                    capz_harness::clusterctl::PROVIDER,
                    "--target-namespace",
                    namespace,
                    "--kubernetes-version",
                    KUBERNETES_VERSION,
                    "--control-plane-machine-count",
                    "1",
                    "--worker-machine-count",
                    &workers,
                ],
                &[
                    ("AZURE_SUBSCRIPTION_ID", DEFAULT_SUBSCRIPTION),
                    ("AZURE_TENANT_ID", DEFAULT_TENANT),
                    ("AZURE_CLIENT_ID", DEFAULT_CLIENT_ID),
                    ("AZURE_LOCATION", "westeurope"),
                    ("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D2s_v3"),
                    ("AZURE_NODE_MACHINE_TYPE", "Standard_D2s_v3"),
                    ("AZURE_SSH_PUBLIC_KEY_B64", SSH_PUBLIC_KEY_B64),
                    ("AZURE_CLUSTER_IDENTITY_SECRET_NAME", IDENTITY_SECRET),
                    ("AZURE_CLUSTER_IDENTITY_SECRET_NAMESPACE", namespace),
                    ("CLUSTER_IDENTITY_NAME", &format!("{name}-identity")),
                ],
            )
            .await?;
        Ok(output.stdout)
    }

    /// Creates the Secret holding the client secret of the emulator's default principal, which
    /// the AzureClusterIdentity of [`Environment::generate`]'s clusters in `namespace` reads.
    ///
    /// # Errors
    /// When the API server refuses it.
    pub async fn create_identity_secret(&self, namespace: &str) -> TestResult {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": IDENTITY_SECRET},
            "stringData": {"clientSecret": DEFAULT_CLIENT_SECRET},
        }))?;
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), &secret)
            .await?;
        Ok(())
    }

    /// The API of a capz-rs kind (v1beta1) in `namespace`.
    ///
    /// # Errors
    /// When the kind is not served.
    pub async fn infrastructure(&self, kind: &str, namespace: &str) -> TestResult<Api<DynamicObject>> {
        let resource = capz_harness::resource(&self.client, INFRASTRUCTURE, "v1beta1", kind).await?;
        Ok(Api::namespaced_with(self.client.clone(), namespace, &resource))
    }

    /// The API of a Cluster API kind (v1beta2) in `namespace`.
    ///
    /// # Errors
    /// When the kind is not served.
    pub async fn cluster_api(&self, kind: &str, namespace: &str) -> TestResult<Api<DynamicObject>> {
        let resource = capz_harness::resource(&self.client, "cluster.x-k8s.io", "v1beta2", kind).await?;
        Ok(Api::namespaced_with(self.client.clone(), namespace, &resource))
    }

    /// The ids of every resource in the emulator that was not seeded (built-in role definitions
    /// and configured resources are), lower-cased.
    #[must_use]
    pub fn created_in_azure(&self) -> Vec<String> {
        let snapshot = self.azure.emulator.snapshot();
        snapshot["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|item| item["seeded"] != true)
            .map(|item| text(&item["body"]["id"]).to_ascii_lowercase())
            .collect()
    }

    /// Waits until the default flavor's cluster in `namespace` has converged: the AzureCluster
    /// Ready with its endpoint, the first control-plane AzureMachine Ready with its VM, and the
    /// `workers` worker AzureMachines waiting for bootstrap data (no workload cluster exists, so
    /// kubeadm never initializes). Prints how long each step took after `applied_at`.
    ///
    /// # Errors
    /// When a step does not happen within `timeout`, with the objects' conditions.
    pub async fn converged(
        &self,
        namespace: &str,
        workers: u32,
        timeout: Duration,
        applied_at: Instant,
    ) -> TestResult {
        let clusters = self.infrastructure("AzureCluster", namespace).await?;
        let ready = wait_list(
            &clusters,
            "",
            "AzureCluster Ready with an endpoint",
            timeout,
            |all| {
                all.iter().any(|cluster| {
                    cluster.data["status"]["ready"] == true
                        && cluster.data["spec"]["controlPlaneEndpoint"]["host"]
                            .as_str()
                            .is_some_and(|host| !host.is_empty())
                })
            },
        )
        .await?;
        eprintln!(
            "e2e: AzureCluster Ready {:.1} s after the apply, endpoint {}",
            applied_at.elapsed().as_secs_f64(),
            ready[0].data["spec"]["controlPlaneEndpoint"]
        );
        let machines = self.infrastructure("AzureMachine", namespace).await?;
        let control_plane = wait_list(
            &machines,
            CONTROL_PLANE,
            "the first control-plane AzureMachine Ready with providerID and addresses",
            timeout,
            |all| all.iter().any(machine_ready),
        )
        .await?;
        eprintln!(
            "e2e: control-plane AzureMachine {} Ready {:.1} s after the apply",
            control_plane[0].name_any(),
            applied_at.elapsed().as_secs_f64()
        );
        wait_list(
            &machines,
            &format!("!{CONTROL_PLANE}"),
            &format!("{workers} worker AzureMachines waiting for bootstrap data"),
            timeout,
            |all| {
                u32::try_from(all.len()) == Ok(workers)
                    && all.iter().all(|machine| {
                        condition(machine, "Ready").is_some_and(|(status, reason)| {
                            status == "False" && reason == "WaitingForBootstrapData"
                        })
                    })
            },
        )
        .await?;
        Ok(())
    }

    /// Where the logs of the plane's processes are.
    #[must_use]
    pub fn logs(&self) -> &Path {
        self.plane.dir()
    }
}

/// The label of control-plane Machines and AzureMachines.
pub const CONTROL_PLANE: &str = "cluster.x-k8s.io/control-plane";

/// Whether an AzureMachine is Ready with its VM: a providerID and addresses.
#[must_use]
pub fn machine_ready(machine: &DynamicObject) -> bool {
    condition(machine, "Ready").is_some_and(|(status, _)| status == "True")
        && machine.data["spec"]["providerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("azure:///subscriptions/"))
        && machine.data["status"]["addresses"]
            .as_array()
            .is_some_and(|addresses| !addresses.is_empty())
}

/// Lists the objects of `api` until `done` holds for the list, or fails after `timeout` with
/// `what` and each object's conditions, so a failure shows where convergence stopped.
///
/// # Errors
/// When the time runs out or a list fails.
pub async fn wait_list(
    api: &Api<DynamicObject>,
    selector: &str,
    what: &str,
    timeout: Duration,
    done: impl Fn(&[DynamicObject]) -> bool,
) -> TestResult<Vec<DynamicObject>> {
    let started = Instant::now();
    loop {
        let objects = api.list(&ListParams::default().labels(selector)).await?.items;
        if done(&objects) {
            return Ok(objects);
        }
        if started.elapsed() > timeout {
            let seen: Vec<String> = objects.iter().map(summary).collect();
            return Err(format!(
                "{what} did not happen in {} s; the objects:\n{}",
                timeout.as_secs(),
                seen.join("\n")
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An object's name and conditions, one line each, for failure messages.
#[must_use]
pub fn summary(object: &DynamicObject) -> String {
    let conditions: Vec<String> = object.data["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|condition| {
            format!(
                "    {}={} {} {}",
                text(&condition["type"]),
                text(&condition["status"]),
                text(&condition["reason"]),
                text(&condition["message"])
            )
        })
        .collect();
    format!("  {}:\n{}", object.name_any(), conditions.join("\n"))
}

/// The condition `type_` of `object`: (status, reason).
#[must_use]
pub fn condition(object: &DynamicObject, type_: &str) -> Option<(String, String)> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_)
        .map(|condition| (text(&condition["status"]), text(&condition["reason"])))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
