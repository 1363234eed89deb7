//! End-to-end tests of capz-rs: a real kube-apiserver, Cluster API's managers and capz-rs both
//! installed by `clusterctl init`, and the ARM emulator as Azure (in the test's process, so a test
//! reads its request log and state directly). Clusters are written by `clusterctl generate
//! cluster` from capz-rs's own flavors, as a user writes them.
//!
//! The controllers run as the binaries this workspace builds (`cargo build --bins`, which `just
//! e2e` and `cargo test --workspace` do first), each with its own ServiceAccount's tokens.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use arm_emulator::{Config, LoggedRequest, Running};
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
        self.generate_with(name, namespace, workers, &[]).await
    }

    /// [`Environment::generate`] with some of its variables (`AZURE_LOCATION`,
    /// `AZURE_CONTROL_PLANE_MACHINE_TYPE`, ...) given other values.
    ///
    /// # Errors
    /// When clusterctl fails.
    pub async fn generate_with(
        &self,
        name: &str,
        namespace: &str,
        workers: u32,
        overrides: &[(&str, &str)],
    ) -> TestResult<String> {
        let workers = workers.to_string();
        let identity = format!("{name}-identity");
        let mut variables = vec![
            ("AZURE_SUBSCRIPTION_ID", DEFAULT_SUBSCRIPTION),
            ("AZURE_TENANT_ID", DEFAULT_TENANT),
            ("AZURE_CLIENT_ID", DEFAULT_CLIENT_ID),
            ("AZURE_LOCATION", "westeurope"),
            ("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D2s_v3"),
            ("AZURE_NODE_MACHINE_TYPE", "Standard_D2s_v3"),
            ("AZURE_SSH_PUBLIC_KEY_B64", SSH_PUBLIC_KEY_B64),
            ("AZURE_CLUSTER_IDENTITY_SECRET_NAME", IDENTITY_SECRET),
            ("AZURE_CLUSTER_IDENTITY_SECRET_NAMESPACE", namespace),
            ("CLUSTER_IDENTITY_NAME", identity.as_str()),
        ];
        for (name, value) in overrides {
            variables.retain(|(variable, _)| variable != name);
            variables.push((name, value));
        }
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
                &variables,
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
        self.create_identity_secret_holding(namespace, DEFAULT_CLIENT_SECRET)
            .await
    }

    /// Creates the Secret [`Environment::generate`]'s identity in `namespace` reads, holding
    /// `client_secret`.
    ///
    /// # Errors
    /// When the API server refuses it.
    pub async fn create_identity_secret_holding(&self, namespace: &str, client_secret: &str) -> TestResult {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": IDENTITY_SECRET},
            "stringData": {"clientSecret": client_secret},
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

    /// The body of the resource `id` as the emulator holds it, `None` when there is none.
    #[must_use]
    pub fn azure_resource(&self, id: &str) -> Option<Value> {
        self.azure.emulator.snapshot()["resources"]
            .as_array()?
            .iter()
            .find(|item| text(&item["body"]["id"]).eq_ignore_ascii_case(id))
            .map(|item| item["body"].clone())
    }

    /// The requests the emulator answered at or after `since`, oldest first (of the last thousand
    /// it keeps).
    #[must_use]
    pub fn requests_since(&self, since: SystemTime) -> Vec<LoggedRequest> {
        self.azure
            .emulator
            .requests()
            .into_iter()
            .filter(|request| request.at >= since)
            .collect()
    }

    /// Server-side applies `objects` into `namespace`, in their order.
    ///
    /// # Errors
    /// When the API server refuses one.
    pub async fn apply(&self, namespace: &str, objects: &[DynamicObject]) -> TestResult {
        for object in objects {
            capz_harness::apply(&self.client, namespace, object).await?;
        }
        Ok(())
    }

    /// Where the logs of the plane's processes are.
    #[must_use]
    pub fn logs(&self) -> &Path {
        self.plane.dir()
    }
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

/// The message of the condition `type_` of `object`.
#[must_use]
pub fn condition_message(object: &DynamicObject, type_: &str) -> Option<String> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_)
        .map(|condition| text(&condition["message"]))
}

/// The documents of a manifest, to change before they are applied.
///
/// # Errors
/// When a document is not a Kubernetes object.
pub fn manifest(yaml: &str) -> TestResult<Vec<DynamicObject>> {
    Ok(serde_saphyr::from_multiple(yaml)?)
}

/// The document of `kind` in `objects`.
///
/// # Errors
/// When there is none.
pub fn document<'a>(objects: &'a mut [DynamicObject], kind: &str) -> TestResult<&'a mut DynamicObject> {
    objects
        .iter_mut()
        .find(|object| object.types.as_ref().is_some_and(|types| types.kind == kind))
        .ok_or_else(|| format!("the manifest has no {kind}").into())
}

/// Whether a request changes what it addresses.
#[must_use]
pub fn is_write(request: &LoggedRequest) -> bool {
    matches!(request.method.as_str(), "PUT" | "PATCH" | "DELETE" | "POST")
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
