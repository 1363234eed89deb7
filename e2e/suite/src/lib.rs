//! End-to-end tests of capz-rs: a real kube-apiserver, Cluster API's managers and capz-rs both
//! installed by `clusterctl init`, and the ARM emulator as Azure (in the test's process, so a test
//! reads its request log and state directly). Clusters are written by `clusterctl generate
//! cluster` from capz-rs's own flavors, as a user writes them.
//!
//! The controllers run from the container images `just images` builds (which `just e2e` does
//! first) under runc, each with its own ServiceAccount's tokens; where runc cannot run, the
//! binaries this workspace builds run as processes, and the output says so.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use arm_emulator::proxy::RunningProxy;
use arm_emulator::{Config, LoggedRequest, Running, RunningImds};
use base64::Engine as _;
use capz_harness::container::Runtime;
use capz_harness::peer::{Peer, PeerOptions};
use capz_harness::{AzureEndpoint, Capz, Clusterctl, Plane};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::config::Kubeconfig;
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use tower::ServiceExt as _;

pub mod bench;
pub use bench::{Memory, bench_flags, bench_main, process_memory};

/// What the tests return: any error, with its message.
pub type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The id of the user-assigned identity [`Environment::workload_identity_through_arm`] makes.
#[must_use]
pub fn workload_identity() -> String {
    format!(
        "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/identities/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"
    )
}

/// An emulator that enforces RBAC, where the default principal owns the subscription (so it can
/// make identities and grant them roles, as the user setting up a management cluster does), and
/// which trusts the service-account issuers of `planes` (their CAs among `issuerCas`) as the
/// sandbox's emulator trusts its plane's. Federations are only what ARM makes.
#[must_use]
pub fn rbac_trusting(planes: &[&Plane]) -> Config {
    let subscription = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}");
    let owner = format!(
        "{subscription}/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
    );
    Config {
        retry_after_seconds: 1,
        rbac: true,
        issuer_cas: planes
            .iter()
            .filter_map(|plane| std::fs::read_to_string(plane.ca_file()).ok())
            .collect(),
        resources: vec![arm_emulator::config::SeedResource {
            id: format!(
                "{subscription}/providers/Microsoft.Authorization/roleAssignments/3f2504e0-4f89-11d3-9a0c-0305e82c3301"
            ),
            body: json!({"properties": {
                "roleDefinitionId": owner,
                "principalId": arm_emulator::config::derived_object_id(DEFAULT_CLIENT_ID),
            }}),
        }],
        ..Config::default()
    }
}

/// The API group of capz-rs's kinds.
pub const INFRASTRUCTURE: &str = "infrastructure.cluster.x-k8s.io";
pub use capz_harness::capz::{IDENTITY_SECRET, KUBERNETES_VERSION, SSH_PUBLIC_KEY_B64};

/// Where the capz-rs an environment installs comes from.
enum Source<'a> {
    /// This clone's `deploy/all`.
    Clone,
    /// This clone's base, CRDs and the named controllers of `deploy/`.
    Controllers(&'a [&'a str]),
    /// A release `just release` wrote: its repository and version.
    Release(&'a Path, &'a str),
}

/// The emulated Azure: ARM, its instance metadata endpoint and its proxy, the CA of their
/// certificates and, once one runs, the status URL of the simulator booting its machines.
#[derive(Clone)]
struct Azure {
    arm: Arc<Running>,
    imds: Arc<RunningImds>,
    proxy: Arc<RunningProxy>,
    ca_pem: String,
    workloads: Option<String>,
}

impl Azure {
    async fn start(config: Config) -> TestResult<Self> {
        // Valid for Azure's own host names too, which the proxy answers for clients that know no
        // other cloud (CAPZ, beside capz-rs).
        let names: Vec<String> = arm_emulator::proxy::AZURE_HOSTS
            .iter()
            .map(ToString::to_string)
            .collect();
        let tls = arm_emulator::tls::Tls::generate(&names)?;
        let arm = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls).await?;
        let imds = arm_emulator::start_imds(([127, 0, 0, 1], 0).into(), &arm.emulator).await?;
        let proxy = arm_emulator::proxy::start_proxy(([127, 0, 0, 1], 0).into(), &arm.emulator, &tls).await?;
        Ok(Self {
            arm: Arc::new(arm),
            imds: Arc::new(imds),
            proxy: Arc::new(proxy),
            ca_pem: tls.ca_pem,
            workloads: None,
        })
    }
}

/// Writes the emulator's CA into the plane's directory, then installs and runs Cluster API,
/// reaching workload clusters as it would on Azure, at their endpoints (through the emulator's
/// proxy); returns the CA file and clusterctl.
async fn start_cluster_api(plane: &mut Plane, azure: &Azure) -> TestResult<(std::path::PathBuf, Clusterctl)> {
    let ca_file = plane.dir().join("azure-ca.pem");
    std::fs::write(&ca_file, &azure.ca_pem)?;
    plane.reach_workload_clusters_through(&format!("http://{}", azure.proxy.address));
    let clusterctl = plane.start_cluster_api().await?;
    Ok((ca_file, clusterctl))
}

/// Runs the workload cluster simulator booting `azure`'s machines; returns its status URL.
async fn start_simulator(plane: &mut Plane, azure: &Azure, ca_file: &Path) -> TestResult<String> {
    Ok(plane
        .start_workload_simulator(&azure.arm.base_url(), ca_file, Duration::from_millis(200))
        .await?)
}

/// A management cluster with Cluster API and the provider capz-rs replaces, CAPZ with the Azure
/// Service Operator (see [`capz_harness::peer`]), and an emulated Azure of its own: the other
/// side of the benchmarks that compare the two. Its plane has Cluster API's CRDs only, since
/// CAPZ's have capz-rs's names.
pub struct PeerEnvironment {
    pub plane: Plane,
    /// clusterctl knowing CAPZ as the `azure` provider.
    pub clusterctl: Clusterctl,
    pub azure: Arc<Running>,
    /// The emulator's HTTPS proxy, which answers for Azure's host names and routes workload
    /// clusters' endpoints to their API servers.
    pub proxy: Arc<RunningProxy>,
    /// The status endpoint of the workload cluster simulator.
    pub workloads: String,
    pub peer: Peer,
    pub client: Client,
}

impl PeerEnvironment {
    /// Starts the plane (recording every request in `audit_log`, if given), installs and runs
    /// Cluster API, then CAPZ and ASO as `options` say, against an emulator configured by
    /// `config`.
    ///
    /// # Errors
    /// When any part does not start; the error says which and where its log is.
    pub async fn start(
        config: Config,
        options: &PeerOptions,
        audit_log: Option<std::path::PathBuf>,
    ) -> TestResult<Self> {
        let started = Instant::now();
        let mut plane = Plane::start_with(capz_harness::Options {
            crds: capz_harness::crds::cluster_api()?,
            dir: None,
            port: None,
            audit_log,
        })
        .await?;
        let azure = Azure::start(config).await?;
        let (ca_file, clusterctl) = start_cluster_api(&mut plane, &azure).await?;
        let workloads = start_simulator(&mut plane, &azure, &ca_file).await?;
        let (clusterctl, peer) = plane.start_peer(&clusterctl, &ca_file, options).await?;
        let client = plane.client().await?;
        eprintln!(
            "e2e: Cluster API, CAPZ {} and ASO {} serve after {:.1} s; logs in {}",
            capz_harness::peer::capz_version(),
            capz_harness::peer::aso_version(),
            started.elapsed().as_secs_f64(),
            plane.dir().join("logs").display()
        );
        Ok(Self {
            plane,
            clusterctl,
            azure: azure.arm,
            proxy: azure.proxy,
            workloads,
            peer,
            client,
        })
    }
}

/// A management cluster with Cluster API and capz-rs, and the emulated Azure they work on (which
/// two management clusters share in [`Environment::start_pair`]).
pub struct Environment {
    pub plane: Plane,
    pub clusterctl: Clusterctl,
    pub azure: Arc<Running>,
    /// The emulator's instance metadata endpoint, where managed identities get tokens.
    pub imds: Arc<RunningImds>,
    /// The emulator's HTTPS proxy, which routes workload clusters' endpoints to their API servers.
    pub proxy: Arc<RunningProxy>,
    /// The status endpoint of the workload cluster simulator (`GET {workloads}/status`).
    pub workloads: String,
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
        Self::start_with(|_| config).await
    }

    /// Adds the controller `name` (a directory of `deploy/`) to this environment's capz-rs as a
    /// user adds it to a management cluster that ran without it (docs/deploy.md, "Choosing
    /// controllers"): its rendered manifest applied server-side, then its Deployment run.
    ///
    /// # Errors
    /// When rendering or applying fails, or its Deployment does not start and serve.
    pub async fn add_controller(&mut self, name: &str) -> TestResult {
        let manifest = self.clusterctl.render_controller(name).await?;
        capz_harness::apply_yaml(&self.client, capz_harness::capz::NAMESPACE, &manifest).await?;
        let started = self.plane.sync_capz(&mut self.capz).await?;
        let expected = format!("capz-{name}");
        if started != [expected.as_str()] {
            return Err(format!("adding {name} started {started:?}, not {expected} alone").into());
        }
        Ok(())
    }

    /// As [`Environment::start`], with the emulator's configuration made from the plane (for
    /// federations that trust the plane's service-account issuer).
    ///
    /// # Errors
    /// When any part does not start; the error says which and where its log is.
    pub async fn start_with(config: impl FnOnce(&Plane) -> Config) -> TestResult<Self> {
        Self::start_with_args(config, &[], &[]).await
    }

    /// [`Environment::start_with`], with `variables` given to `clusterctl init` (such as
    /// `("EXP_EDGEZONE", "true")`) and `(deployment, argument)` pairs added to capz-rs's
    /// Deployments before their processes start, as a user edits a Deployment: for example
    /// `("capz-compute", "--sync-period=10s")`.
    ///
    /// # Errors
    /// As [`Environment::start`].
    pub async fn start_with_args(
        config: impl FnOnce(&Plane) -> Config,
        variables: &[(&str, &str)],
        capz_args: &[(&str, &str)],
    ) -> TestResult<Self> {
        Self::install(config, variables, capz_args, Source::Clone).await
    }

    /// [`Environment::start`], with only `controllers` of capz-rs (directories of `deploy/`, such
    /// as `network` or `webhooks`) installed besides the base and the CRDs.
    ///
    /// # Errors
    /// As [`Environment::start`]; also when a controller is unknown.
    pub async fn start_with_controllers(config: Config, controllers: &[&str]) -> TestResult<Self> {
        Self::start_with_controllers_and_args(config, controllers, &[]).await
    }

    /// [`Environment::start_with_controllers`], with `(deployment, argument)` pairs added to
    /// capz-rs's Deployments as [`Environment::start_with_args`] adds them.
    ///
    /// # Errors
    /// As [`Environment::start_with_controllers`].
    pub async fn start_with_controllers_and_args(
        config: Config,
        controllers: &[&str],
        capz_args: &[(&str, &str)],
    ) -> TestResult<Self> {
        Self::install(|_| config, &[], capz_args, Source::Controllers(controllers)).await
    }

    /// [`Environment::start`], with capz-rs installed from the release `version` in the
    /// clusterctl repository `repository` (as `just release` writes it) instead of from this
    /// clone's `deploy/`: its image archives are loaded into the plane first, as a user loads
    /// them into kind, so its Deployments run the release's images by their digests.
    ///
    /// # Errors
    /// As [`Environment::start`]; also when the release or its images cannot be read.
    pub async fn start_from_release(config: Config, repository: &Path, version: &str) -> TestResult<Self> {
        Self::install(|_| config, &[], &[], Source::Release(repository, version)).await
    }

    /// Two management clusters, each with its own service-account issuer, Cluster API and
    /// capz-rs installed from this clone, working on one emulated Azure (whose configuration
    /// `config` makes from both planes) where one simulator boots their machines: the source and
    /// the target of a `clusterctl move`.
    ///
    /// # Errors
    /// As [`Environment::start`].
    pub async fn start_pair(config: impl FnOnce(&Plane, &Plane) -> Config) -> TestResult<(Self, Self)> {
        let (first, second) = tokio::try_join!(Plane::start(), Plane::start())?;
        let azure = Azure::start(config(&first, &second)).await?;
        let first = Self::install_on(first, azure.clone(), &[], &[], Source::Clone).await?;
        let azure = Azure {
            workloads: Some(first.workloads.clone()),
            ..azure
        };
        let second = Self::install_on(second, azure, &[], &[], Source::Clone).await?;
        Ok((first, second))
    }

    /// [`Environment::start_with_args`] on `plane`, started by the caller, with only the
    /// `controllers` (directories of `deploy/`, such as `webhooks`) when given, else all of them.
    ///
    /// # Errors
    /// As [`Environment::start`].
    pub async fn start_on(
        plane: Plane,
        config: Config,
        controllers: Option<&[&str]>,
        capz_args: &[(&str, &str)],
    ) -> TestResult<Self> {
        let azure = Azure::start(config).await?;
        let source = controllers.map_or(Source::Clone, Source::Controllers);
        Self::install_on(plane, azure, &[], capz_args, source).await
    }

    async fn install(
        config: impl FnOnce(&Plane) -> Config,
        variables: &[(&str, &str)],
        capz_args: &[(&str, &str)],
        source: Source<'_>,
    ) -> TestResult<Self> {
        let plane = Plane::start().await?;
        let azure = Azure::start(config(&plane)).await?;
        Self::install_on(plane, azure, variables, capz_args, source).await
    }

    async fn install_on(
        mut plane: Plane,
        azure: Azure,
        variables: &[(&str, &str)],
        capz_args: &[(&str, &str)],
        source: Source<'_>,
    ) -> TestResult<Self> {
        let started = Instant::now();
        let (ca_file, mut clusterctl) = start_cluster_api(&mut plane, &azure).await?;
        match source {
            Source::Clone => {}
            Source::Controllers(controllers) => clusterctl = clusterctl.with_controllers(controllers)?,
            Source::Release(repository, version) => {
                clusterctl = clusterctl.from_release(repository, version)?;
                load_release_images(&plane, repository, version)?;
            }
        }
        let workloads = match azure.workloads {
            Some(workloads) => workloads,
            None => start_simulator(&mut plane, &azure, &ca_file).await?,
        };
        let endpoint = AzureEndpoint {
            url: azure.arm.base_url(),
            ca_file,
            imds_url: Some(format!("http://{}", azure.imds.address)),
        };
        let capz = plane
            .start_capz_with(&clusterctl, &endpoint, variables, capz_args)
            .await?;
        let client = plane.client().await?;
        eprintln!(
            "e2e: Cluster API and capz-rs ({}, run {}) serve after {:.1} s; logs in {}",
            capz.processes().join(", "),
            capz.runtime().describe(),
            started.elapsed().as_secs_f64(),
            plane.dir().join("logs").display()
        );
        Ok(Self {
            plane,
            clusterctl,
            azure: azure.arm,
            imds: azure.imds,
            proxy: azure.proxy,
            workloads,
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
        self.generate_flavor(None, name, namespace, workers, overrides)
            .await
    }

    /// [`Environment::generate_with`] of the flavor `flavor` (`--flavor`; `None`: the default).
    ///
    /// # Errors
    /// When clusterctl fails.
    pub async fn generate_flavor(
        &self,
        flavor: Option<&str>,
        name: &str,
        namespace: &str,
        workers: u32,
        overrides: &[(&str, &str)],
    ) -> TestResult<String> {
        let workers = workers.to_string();
        let defaults = capz_harness::capz::flavor_variables(name, namespace);
        let mut variables: Vec<(&str, &str)> = defaults
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
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
                ]
                .into_iter()
                .chain(flavor.into_iter().flat_map(|flavor| ["--flavor", flavor]))
                .collect::<Vec<_>>(),
                &variables,
            )
            .await?;
        Ok(output.stdout)
    }

    /// Creates a cluster of the default flavor as a user would: the identity's Secret, the
    /// add-ons (a cloud controller manager, and a CNI when `cni`; see
    /// [`capz_harness::capz::addons`]), then the manifest `clusterctl generate cluster` writes,
    /// with `control_planes` control-plane and `workers` worker machines, its Cluster labelled
    /// for the add-ons. Returns when it was applied.
    ///
    /// # Errors
    /// When clusterctl fails or the API server refuses an object.
    pub async fn create_cluster(
        &self,
        name: &str,
        namespace: &str,
        control_planes: u32,
        workers: u32,
        cni: bool,
    ) -> TestResult<Instant> {
        self.create_cluster_with(name, namespace, (control_planes, workers), cni, |_| Ok(()))
            .await
    }

    /// [`Environment::create_cluster`] of `(control planes, workers)` machines, with the generated
    /// objects changed by `edit` before they are applied (as a user edits the manifest).
    ///
    /// # Errors
    /// When clusterctl fails, `edit` does, or the API server refuses an object.
    pub async fn create_cluster_with(
        &self,
        name: &str,
        namespace: &str,
        machines: (u32, u32),
        cni: bool,
        edit: impl FnOnce(&mut [DynamicObject]) -> TestResult,
    ) -> TestResult<Instant> {
        self.create_cluster_of(None, name, namespace, machines, cni, edit)
            .await
    }

    /// [`Environment::create_cluster_with`] of the flavor `flavor` (`None`: the default).
    ///
    /// # Errors
    /// When clusterctl fails, `edit` does, or the API server refuses an object.
    pub async fn create_cluster_of(
        &self,
        flavor: Option<&str>,
        name: &str,
        namespace: &str,
        (control_planes, workers): (u32, u32),
        cni: bool,
        edit: impl FnOnce(&mut [DynamicObject]) -> TestResult,
    ) -> TestResult<Instant> {
        self.create_identity_secret(namespace).await?;
        capz_harness::apply_yaml(&self.client, namespace, &capz_harness::capz::addons(name, cni)).await?;
        let generated = self
            .generate_flavor(flavor, name, namespace, workers, &[])
            .await?;
        let mut objects = manifest(&generated)?;
        document(&mut objects, "KubeadmControlPlane")?.data["spec"]["replicas"] = json!(control_planes);
        document(&mut objects, "Cluster")?
            .labels_mut()
            .insert(capz_harness::capz::ADDONS_LABEL.to_owned(), name.to_owned());
        edit(&mut objects)?;
        let applied_at = Instant::now();
        self.apply(namespace, &objects).await?;
        Ok(applied_at)
    }

    /// Waits until the Cluster `name` in `namespace` is `Available`; prints how long that took
    /// after `applied_at`.
    ///
    /// # Errors
    /// When it is not within `timeout`, with the objects' conditions.
    pub async fn available(
        &self,
        name: &str,
        namespace: &str,
        timeout: Duration,
        applied_at: Instant,
    ) -> TestResult {
        let clusters = self.cluster_api("Cluster", namespace).await?;
        wait_list(
            &clusters,
            "",
            &format!("the Cluster {name} Available"),
            timeout,
            |all| {
                all.iter().any(|cluster| {
                    cluster.name_any() == name
                        && condition(cluster, "Available").is_some_and(|(status, _)| status == "True")
                })
            },
        )
        .await?;
        eprintln!(
            "e2e: the Cluster {name} is Available {:.1} s after the apply",
            applied_at.elapsed().as_secs_f64()
        );
        Ok(())
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
        create_identity_secret(&self.client, namespace, client_secret).await
    }

    /// Writes the `<cluster>-kubeconfig` Secret Cluster API reaches a workload cluster with,
    /// pointing at the management cluster's own API server: without machines that boot, it is the
    /// only real API server there is, and Cluster API's node and health checks then work on Node
    /// objects the test creates there.
    ///
    /// # Errors
    /// When the plane's kubeconfig cannot be read or the API server refuses the Secret.
    pub async fn create_workload_kubeconfig(&self, cluster: &str, namespace: &str) -> TestResult {
        let mut kubeconfig = Kubeconfig::read_from(self.plane.kubeconfig())?;
        // Self-contained, as kubeconfigs in Secrets are: the CA inline instead of a file path.
        let ca = base64::engine::general_purpose::STANDARD.encode(std::fs::read(self.plane.ca_file())?);
        for named in &mut kubeconfig.clusters {
            if let Some(cluster) = named.cluster.as_mut() {
                cluster.certificate_authority = None;
                cluster.certificate_authority_data = Some(ca.clone());
            }
        }
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {
                "name": format!("{cluster}-kubeconfig"),
                "labels": {"cluster.x-k8s.io/cluster-name": cluster},
            },
            "type": "cluster.x-k8s.io/secret",
            "stringData": {"value": serde_json::to_string(&kubeconfig)?},
        }))?;
        Api::<Secret>::namespaced(self.client.clone(), namespace)
            .create(&PostParams::default(), &secret)
            .await?;
        Ok(())
    }

    /// A client of the workload cluster `cluster` in `namespace` with the kubeconfig Cluster API
    /// wrote for it (`<cluster>-kubeconfig`), connected where the emulator's proxy routes the
    /// cluster's endpoint (the test's own process has no proxy to go through), and checking the
    /// API server's certificate against the endpoint's host name as a client through the proxy
    /// would.
    ///
    /// # Errors
    /// When the Secret is missing or unreadable, or no machine serves the endpoint yet.
    pub async fn workload_client(&self, cluster: &str, namespace: &str) -> TestResult<Client> {
        self.workload_client_with(cluster, namespace, |_| {}).await
    }

    /// [`Environment::workload_client`] with its configuration changed by `change` (to sign in
    /// otherwise, say).
    ///
    /// # Errors
    /// As [`Environment::workload_client`].
    pub async fn workload_client_with(
        &self,
        cluster: &str,
        namespace: &str,
        change: impl FnOnce(&mut kube::Config),
    ) -> TestResult<Client> {
        let secret = Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get(&format!("{cluster}-kubeconfig"))
            .await?;
        let value = secret
            .data
            .and_then(|data| data.get("value").cloned())
            .ok_or_else(|| format!("{cluster}-kubeconfig has no value"))?;
        let kubeconfig = Kubeconfig::from_yaml(std::str::from_utf8(&value.0)?)?;
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                .await?;
        let host = config
            .cluster_url
            .host()
            .ok_or("the kubeconfig's server has no host")?
            .to_owned();
        let port = config.cluster_url.port_u16().unwrap_or(443);
        let route = self
            .azure
            .emulator
            .routes()
            .into_iter()
            .find(|route| route.host.eq_ignore_ascii_case(&host) && route.port == port)
            .ok_or_else(|| format!("no API server answers at {host}:{port} yet"))?;
        config.cluster_url = format!("https://{}", route.target).parse()?;
        config.tls_server_name = Some(host);
        change(&mut config);
        Ok(Client::try_from(config)?)
    }

    /// What the workload cluster simulator reports: each cluster with its endpoint, add-ons and
    /// machines (joined, waiting or failed, and why), and the machines in no cluster.
    ///
    /// # Errors
    /// When the simulator does not answer.
    pub async fn workload_status(&self) -> TestResult<Value> {
        let address = self.workloads.trim_start_matches("http://").parse()?;
        let (status, body) = capz_harness::http_get(address, "/status").await?;
        if status != 200 {
            return Err(format!("the workload cluster simulator answered {status}: {body}").into());
        }
        Ok(serde_json::from_str(&body)?)
    }

    /// Sends an ARM request to the emulator signed in as its default principal, as a user of the
    /// subscription would outside Cluster API; returns the answer's status.
    ///
    /// # Errors
    /// When the principal has no token or the request cannot be built.
    pub async fn arm(&self, method: &str, path_and_query: &str) -> TestResult<u16> {
        Ok(self.arm_json(method, path_and_query, None).await?.0)
    }

    /// As [`Environment::arm`], with a JSON body; returns the status and the JSON answer (`null`
    /// when there is none).
    ///
    /// # Errors
    /// As [`Environment::arm`].
    pub async fn arm_json(
        &self,
        method: &str,
        path_and_query: &str,
        body: Option<serde_json::Value>,
    ) -> TestResult<(u16, serde_json::Value)> {
        arm_request(&self.azure.emulator, method, path_and_query, body).await
    }

    /// CAPZ's workload identity setup done through ARM as the default principal, as its book
    /// does it with `az`: a user-assigned identity `capz` in the group `identities`, a federated
    /// credential trusting this plane's issuer for `capz-manager` tokens (see
    /// [`Environment::federate_through_arm`]) and Contributor on the subscription for the
    /// identity. Returns the identity's client id.
    ///
    /// # Errors
    /// When ARM refuses a step.
    pub async fn workload_identity_through_arm(&self) -> TestResult<String> {
        let subscription = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}");
        let contributor = format!(
            "{subscription}/providers/Microsoft.Authorization/roleDefinitions/b24988ac-6180-42a0-ab88-20f7382dd24c"
        );
        let group = format!("{subscription}/resourceGroups/identities");
        let identity = format!("{}?api-version=2023-01-31", workload_identity());
        for path in [format!("{group}?api-version=2021-04-01"), identity.clone()] {
            self.arm_put(&path, json!({"location": "westeurope"})).await?;
        }
        let (_, made) = self.arm_json("GET", &identity, None).await?;
        let property = |name: &str| {
            made["properties"][name]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("the identity has no {name}: {made}"))
        };
        let (client_id, principal_id) = (property("clientId")?, property("principalId")?);
        self.federate_through_arm("capz").await?;
        self.arm_put(
            &format!("{subscription}/providers/Microsoft.Authorization/roleAssignments/7b83888d-03fb-55bb-8209-aec4e36328a8?api-version=2022-04-01"),
            json!({"properties": {"roleDefinitionId": contributor, "principalId": principal_id}}),
        )
        .await?;
        Ok(client_id)
    }

    /// Adds the federated credential `name` to [`Environment::workload_identity_through_arm`]'s
    /// identity, trusting this plane's service-account issuer for `capz-manager` tokens: what a
    /// user adds for each management cluster whose controllers sign in as that identity.
    ///
    /// # Errors
    /// When ARM refuses it.
    pub async fn federate_through_arm(&self, name: &str) -> TestResult {
        self.arm_put(
            &format!(
                "{}/federatedIdentityCredentials/{name}?api-version=2023-01-31",
                workload_identity()
            ),
            json!({"properties": {
                "issuer": self.plane.url(),
                "subject": "system:serviceaccount:capz-system:capz-manager",
                "audiences": [capz_harness::AZURE_AUDIENCE],
            }}),
        )
        .await
    }

    async fn arm_put(&self, path_and_query: &str, body: Value) -> TestResult {
        let (status, answer) = self.arm_json("PUT", path_and_query, Some(body)).await?;
        if status == 200 || status == 201 {
            Ok(())
        } else {
            Err(format!("PUT {path_and_query}: {status} {answer}").into())
        }
    }

    /// The ids of the resources [`Environment::created_in_azure`] lists whose type is `type_`
    /// (such as `microsoft.compute/virtualmachines`, lower-cased); not their child resources.
    #[must_use]
    pub fn created_of_type(&self, type_: &str) -> Vec<String> {
        self.created_in_azure()
            .into_iter()
            .filter(|id| {
                id.split_once("/providers/")
                    .and_then(|(_, typed)| typed.rsplit_once('/'))
                    .is_some_and(|(type_of_id, _)| type_of_id == type_)
            })
            .collect()
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
        created_in(&self.azure)
    }

    /// Deletes the Cluster `name` in `namespace`, waits until every AzureMachine, AzureMachinePool
    /// (and its machines), AzureCluster and AzureManaged* object there is gone (each controller released its finalizer),
    /// and checks that nothing capz-rs created for it is left in Azure (in its resource group, or
    /// outside any group); returns how long the deletion took.
    ///
    /// # Errors
    /// When nothing was created before, the deletion is refused or does not finish within
    /// `timeout`, or something is left in Azure.
    pub async fn delete_cluster_without_leftovers(
        &self,
        name: &str,
        namespace: &str,
        timeout: Duration,
    ) -> TestResult<Duration> {
        if self.created_in_azure().is_empty() {
            return Err(format!("nothing was created in Azure for {name}").into());
        }
        let deleted_at = Instant::now();
        self.cluster_api("Cluster", namespace)
            .await?
            .delete(name, &DeleteParams::default())
            .await?;
        for kind in [
            "AzureMachine",
            "AzureMachinePool",
            "AzureMachinePoolMachine",
            "AzureCluster",
            "AzureManagedMachinePool",
            "AzureManagedControlPlane",
            "AzureManagedCluster",
        ] {
            let api = self.infrastructure(kind, namespace).await?;
            wait_list(&api, "", &format!("every {kind} gone"), timeout, <[_]>::is_empty).await?;
        }
        // Clusters side by side on one emulator each have their own resource group; what is
        // outside any group (role assignments at the subscription) is counted for every cluster.
        let group = format!("/resourcegroups/{}", name.to_ascii_lowercase());
        let left: Vec<String> = self
            .created_in_azure()
            .into_iter()
            .filter(|id| {
                let in_group = id.ends_with(&group) || id.contains(&format!("{group}/"));
                in_group || !id.contains("/resourcegroups/")
            })
            .collect();
        if !left.is_empty() {
            return Err(format!("left in Azure after deleting {name}: {left:?}").into());
        }
        Ok(deleted_at.elapsed())
    }

    /// The resource version of every object of the infrastructure `kinds` in `namespace`, by
    /// `<kind>/<name>`: two snapshots that differ tell something was written in between.
    ///
    /// # Errors
    /// When a kind is not served or cannot be listed.
    pub async fn resource_versions(
        &self,
        namespace: &str,
        kinds: &[&str],
    ) -> TestResult<BTreeMap<String, String>> {
        let mut versions = BTreeMap::new();
        for kind in kinds {
            for object in self
                .infrastructure(kind, namespace)
                .await?
                .list(&ListParams::default())
                .await?
                .items
            {
                versions.insert(
                    format!("{kind}/{}", object.name_any()),
                    object.resource_version().unwrap_or_default(),
                );
            }
        }
        Ok(versions)
    }

    /// Prints the peak resident set of each capz-rs process, with the current one split into
    /// anonymous and file-backed memory, in MiB, and the CPU time each used so far.
    pub fn print_capz_memory(&self) {
        println!("capz-rs processes:");
        bench::print_usage(
            self.plane
                .processes()
                .iter()
                .filter(|process| process.name().starts_with("capz-"))
                .map(|process| (process.name(), process.program_id())),
        );
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

    /// Waits until the MachinePool `name` in `namespace` has `nodes` Nodes.
    ///
    /// # Errors
    /// When it has not within `timeout`, or the API server cannot be asked.
    pub async fn machine_pool_nodes(
        &self,
        namespace: &str,
        name: &str,
        nodes: usize,
        timeout: Duration,
    ) -> TestResult {
        let pools = self.cluster_api("MachinePool", namespace).await?;
        wait_list(
            &pools,
            "",
            &format!("{name} with {nodes} Nodes"),
            timeout,
            |all| {
                all.iter().any(|pool| {
                    pool.metadata.name.as_deref() == Some(name)
                        && pool.data["status"]["nodeRefs"].as_array().map(Vec::len) == Some(nodes)
                })
            },
        )
        .await?;
        Ok(())
    }

    /// Waits until `count` AzureManagedControlPlanes in `namespace` are ready and initialized.
    ///
    /// # Errors
    /// When they are not within `timeout`, or the API server cannot be asked.
    pub async fn managed_control_planes_ready(
        &self,
        namespace: &str,
        count: usize,
        timeout: Duration,
    ) -> TestResult {
        let planes = self.infrastructure("AzureManagedControlPlane", namespace).await?;
        wait_list(
            &planes,
            "",
            &format!("{count} control planes ready and initialized"),
            timeout,
            |all| {
                all.len() == count
                    && all.iter().all(|plane| {
                        plane.data["status"]["ready"] == true && plane.data["status"]["initialized"] == true
                    })
            },
        )
        .await?;
        Ok(())
    }

    /// The requests the emulator answered at or after `since`, oldest first (of the last thousand
    /// it keeps).
    #[must_use]
    pub fn requests_since(&self, since: SystemTime) -> Vec<LoggedRequest> {
        self.azure
            .emulator
            .requests()
            .into_iter()
            .filter(|request| request.answered >= since)
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

    /// Waits until the AzureCluster in `namespace` is Ready with its control-plane endpoint;
    /// prints how long that took after `applied_at`.
    ///
    /// # Errors
    /// When it is not within `timeout`, with the objects' conditions.
    pub async fn cluster_ready(&self, namespace: &str, timeout: Duration, applied_at: Instant) -> TestResult {
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
        Ok(())
    }

    /// Waits until the default flavor's cluster in `namespace` has converged in Azure: the
    /// AzureCluster Ready with its endpoint, the first control-plane AzureMachine Ready with its
    /// VM, and, once that VM has initialized the workload cluster (so the workers get their
    /// bootstrap data), the `workers` worker AzureMachines Ready with theirs. Prints how long each
    /// step took after `applied_at`.
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
        self.cluster_ready(namespace, timeout, applied_at).await?;
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
            &format!("{workers} worker AzureMachines Ready with their VMs"),
            timeout,
            |all| u32::try_from(all.len()) == Ok(workers) && all.iter().all(machine_ready),
        )
        .await?;
        eprintln!(
            "e2e: {workers} worker AzureMachines Ready {:.1} s after the apply",
            applied_at.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// Where the logs of the plane's processes are.
    #[must_use]
    pub fn logs(&self) -> &Path {
        self.plane.dir()
    }

    /// What the process `name` (such as `capz-compute`) has logged so far.
    ///
    /// # Errors
    /// When its log cannot be read.
    pub fn log_of(&self, name: &str) -> TestResult<String> {
        Ok(std::fs::read_to_string(
            self.plane.dir().join("logs").join(format!("{name}.log")),
        )?)
    }

    /// Whether admission lets an AzureCluster in an edge zone through, asked with a dry-run
    /// create in `namespace`: `Err` with the refusal when it does not.
    ///
    /// # Errors
    /// When the API server cannot be asked.
    pub async fn admits_edge_zone_cluster(&self, namespace: &str) -> TestResult<Result<(), String>> {
        let mut objects = manifest(&cluster_manifest("edge-zone", "edge-zone-identity"))?;
        let cluster = document(&mut objects, "AzureCluster")?;
        cluster.data["spec"]["extendedLocation"] =
            json!({"name": "microsoftlosangeles1", "type": "EdgeZone"});
        let api = self.infrastructure("AzureCluster", namespace).await?;
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        match api.create(&dry_run, cluster).await {
            Ok(_) => Ok(Ok(())),
            Err(kube::Error::Api(status)) => Ok(Err(status.message)),
            Err(err) => Err(err.into()),
        }
    }
}

/// The label of control-plane Machines and AzureMachines.
pub const CONTROL_PLANE: &str = "cluster.x-k8s.io/control-plane";

/// Creates the Secret the identities [`service_principal_identity`] writes read in `namespace`,
/// holding `client_secret`.
///
/// # Errors
/// When the API server refuses it.
pub async fn create_identity_secret(client: &Client, namespace: &str, client_secret: &str) -> TestResult {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": IDENTITY_SECRET},
        "stringData": {"clientSecret": client_secret},
    }))?;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The ids of every resource in `azure` that was not seeded (built-in role definitions and
/// configured resources are), lower-cased.
#[must_use]
pub fn created_in(azure: &Running) -> Vec<String> {
    let snapshot = azure.emulator.snapshot();
    snapshot["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["seeded"] != true)
        .map(|item| text(&item["body"]["id"]).to_ascii_lowercase())
        .collect()
}

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

/// An object's name, owners, finalizers and conditions, for failure messages: a missing owner
/// says Cluster API has not linked the object yet, a missing finalizer that capz-rs never got to it.
#[must_use]
pub fn summary(object: &DynamicObject) -> String {
    // Cluster API's objects keep their former conditions beside the new ones, often the more
    // telling of the two.
    let status = &object.data["status"];
    let current = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|condition| ("", condition));
    let former = status["deprecated"]["v1beta1"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|condition| ("v1beta1 ", condition));
    let conditions: Vec<String> = current
        .chain(former)
        .map(|(version, condition)| {
            format!(
                "    {version}{}={} {} {}",
                text(&condition["type"]),
                text(&condition["status"]),
                text(&condition["reason"]),
                text(&condition["message"])
            )
        })
        .collect();
    let owners: Vec<String> = object
        .owner_references()
        .iter()
        .map(|owner| format!("{}/{}", owner.kind, owner.name))
        .collect();
    format!(
        "  {} (owners [{}], finalizers [{}]):\n{}",
        object.name_any(),
        owners.join(", "),
        object.finalizers().join(", "),
        conditions.join("\n")
    )
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

/// A Node's `Ready` condition, if it has one.
#[must_use]
pub fn node_ready(
    node: &k8s_openapi::api::core::v1::Node,
) -> Option<k8s_openapi::api::core::v1::NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == "Ready")
        .cloned()
}

/// Creates `objects` (each in its own namespace, if it names one) as `kubectl create` would, where
/// server-side apply is not served (the simulated workload clusters' API servers).
///
/// # Errors
/// When the API server refuses one.
pub async fn create_all(client: &Client, objects: &[DynamicObject]) -> TestResult {
    for object in objects {
        let types = object
            .types
            .as_ref()
            .ok_or("an object without apiVersion and kind")?;
        let gvk = kube::api::GroupVersionKind::try_from(types)?;
        let resource = kube::api::ApiResource::from_gvk(&gvk);
        let api: Api<DynamicObject> = match object.metadata.namespace.as_deref() {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        api.create(&PostParams::default(), object).await?;
    }
    Ok(())
}

/// Sends an ARM request to `emulator` in process, signed in as its default principal; returns
/// the status and the JSON answer (`null` when there is none).
///
/// # Errors
/// When the principal has no token or the request cannot be built.
pub async fn arm_request(
    emulator: &arm_emulator::Emulator,
    method: &str,
    path_and_query: &str,
    body: Option<Value>,
) -> TestResult<(u16, Value)> {
    let token = emulator
        .access_token(DEFAULT_CLIENT_ID)
        .ok_or("the emulator's default principal has no token")?;
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(body.map_or_else(axum::body::Body::empty, |body| {
            axum::body::Body::from(body.to_string())
        }))?;
    let response = emulator.router().oneshot(request).await?;
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await?;
    Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

/// Whether a request changes what it addresses.
#[must_use]
pub fn is_write(request: &LoggedRequest) -> bool {
    matches!(request.method.as_str(), "PUT" | "PATCH" | "DELETE" | "POST")
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// A Cluster without a control-plane provider and its AzureCluster (westeurope, a resource group
/// of the cluster's name, the default flavor's two subnets) signing in as the AzureClusterIdentity
/// `identity`.
///
/// The Cluster is written in Cluster API's stored version, v1beta2, as is
/// [`machine_deployment`]'s MachineDeployment. Applied in v1beta1, they would keep a field manager
/// of that version, and the API server would then call Cluster API's conversion webhook on every
/// later write to them, Cluster API's own status updates included: at 100 clusters that was more
/// than 11,000 conversions in the first 160 s.
#[must_use]
pub fn cluster_manifest(name: &str, identity: &str) -> String {
    format!(
        r"apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: {name}
spec:
  clusterNetwork:
    pods:
      cidrBlocks:
      - 192.168.0.0/16
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: AzureCluster
    name: {name}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: {name}
spec:
  identityRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: AzureClusterIdentity
    name: {identity}
  location: westeurope
  networkSpec:
    subnets:
    - name: control-plane-subnet
      role: control-plane
    - name: node-subnet
      role: node
    vnet:
      name: {name}-vnet
  resourceGroup: {name}
  subscriptionID: {DEFAULT_SUBSCRIPTION}
"
    )
}

/// An AzureClusterIdentity `name` of the emulator's default principal, its client secret in the
/// Secret [`Environment::create_identity_secret`] makes in `namespace`.
#[must_use]
pub fn service_principal_identity(name: &str, namespace: &str) -> String {
    service_principal_identity_of(name, namespace, DEFAULT_CLIENT_ID)
}

/// [`service_principal_identity`] for the principal `client_id`, which the emulator must know
/// with the default client secret.
#[must_use]
pub fn service_principal_identity_of(name: &str, namespace: &str, client_id: &str) -> String {
    format!(
        r"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata:
  name: {name}
spec:
  allowedNamespaces: {{}}
  clientID: {client_id}
  clientSecret:
    name: {IDENTITY_SECRET}
    namespace: {namespace}
  tenantID: {DEFAULT_TENANT}
  type: ServicePrincipal
"
    )
}

/// The Secret `name` holding bootstrap data a user wrote, for `bootstrap.dataSecretName`.
#[must_use]
pub fn bootstrap_secret(name: &str) -> String {
    format!(
        r"apiVersion: v1
kind: Secret
metadata:
  name: {name}
type: cluster.x-k8s.io/secret
stringData:
  format: cloud-config
  value: |
    #cloud-config
    runcmd:
    - echo booted by a bootstrap Secret the user wrote
"
    )
}

/// An AzureMachineTemplate `name` and a MachineDeployment of the same name with `replicas`
/// machines of cluster `cluster`, bootstrapped from the Secret `bootstrap`.
#[must_use]
pub fn machine_deployment(name: &str, cluster: &str, replicas: u32, bootstrap: &str) -> String {
    format!(
        r"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureMachineTemplate
metadata:
  name: {name}
spec:
  template:
    spec:
      osDisk:
        diskSizeGB: 128
        osType: Linux
      sshPublicKey: {SSH_PUBLIC_KEY_B64}
      vmSize: Standard_D2s_v3
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: {name}
spec:
  clusterName: {cluster}
  replicas: {replicas}
  selector:
    matchLabels: null
  template:
    spec:
      clusterName: {cluster}
      version: {KUBERNETES_VERSION}
      bootstrap:
        dataSecretName: {bootstrap}
      infrastructureRef:
        apiGroup: infrastructure.cluster.x-k8s.io
        kind: AzureMachineTemplate
        name: {name}
"
    )
}

/// Loads the image archives of the release `version` in the clusterctl repository `repository`
/// into the plane, as a user loads them into kind before installing or upgrading to it (where
/// containers run at all).
///
/// # Errors
/// When an archive cannot be read or loaded.
pub fn load_release_images(plane: &Plane, repository: &Path, version: &str) -> TestResult {
    if matches!(Runtime::detect(), Runtime::Runc { .. }) {
        let images = repository
            .join("infrastructure-azure")
            .join(version)
            .join("images");
        for entry in std::fs::read_dir(&images)? {
            plane.load_image(&entry?.path())?;
        }
    }
    Ok(())
}

/// Where `just images` wrote the images: `images/` in the target directory this test runs from.
///
/// # Errors
/// When none are built.
pub fn images_dir() -> TestResult<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    let target = exe
        .ancestors()
        .find(|dir| dir.join("images").is_dir())
        .ok_or("no images beside the build: run `just images` (`just e2e` does) first")?;
    Ok(target.join("images"))
}

/// Runs a tool the user would run (skopeo, umoci, python3, ...) to its end; returns what it printed.
///
/// # Errors
/// When it cannot start or fails, with its standard error.
pub fn run(program: &str, args: &[&str]) -> TestResult<String> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(|err| format!("cannot run {program} ({err}); Debian's package `{program}` provides it"))?;
    if !output.status.success() {
        return Err(format!(
            "{program} {}: {}\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// An empty directory of this test process's own for `purpose`, under the system's temporary one.
///
/// # Errors
/// When it cannot be made.
pub fn scratch(purpose: &str) -> TestResult<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("capz-e2e-{purpose}-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
