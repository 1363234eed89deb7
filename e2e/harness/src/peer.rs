//! The provider capz-rs replaces, run beside it for comparison: CAPZ's manager and the Azure
//! Service Operator (ASO) controller CAPZ drives, as `just peer-bins` builds them (see
//! `e2e/peer/README.md`).
//!
//! CAPZ's CRDs have the names of capz-rs's, so CAPZ gets a plane of its own with only Cluster
//! API's CRDs. `clusterctl init --infrastructure azure` installs CAPZ from a local repository
//! holding its release layout rendered from the module's `config/capz` (its `config/default`
//! adds ASO's release bundle, a download from GitHub; the harness installs ASO's CRDs and webhook
//! configurations from what `just peer-bins` generated instead). Both run as processes with
//! leader election off, their webhooks served on loopback ports with certificates from the
//! plane's CA, as Cluster API's managers are ([`crate::cluster_api`]).
//!
//! CAPZ and ASO know only Azure's named clouds, so they reach the emulator the way an unmodified
//! Azure client does: through its HTTPS proxy, which answers for `management.azure.com` and
//! `login.microsoftonline.com` with certificates from the emulator's CA. Credentials come from
//! each cluster's `AzureClusterIdentity`: CAPZ copies them into the Secret each ASO object names,
//! so ASO is given no subscription or principal of its own (one would have it probe for a managed
//! identity at an address that is not here).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, WebhookClientConfig, WebhookConversion,
};
use kube::api::DynamicObject;
use serde_json::json;

use crate::bins::{cache_dir, pinned};
use crate::cluster_api::{admit_through, convert_through};
use crate::clusterctl::{Clusterctl, PROVIDER, kustomize};
use crate::crds;
use crate::error::{Error, Result};
use crate::plane::{Plane, free_ports};
use crate::process::Launch;

const CAPZ_GO_MOD: &str = include_str!("../../peer/capz/go.mod");
const ASO_GO_MOD: &str = include_str!("../../peer/aso/go.mod");
const CAPZ_MODULE: &str = "sigs.k8s.io/cluster-api-provider-azure";
const ASO_MODULE: &str = "github.com/Azure/azure-service-operator/v2";

/// The process names, also the binaries' names.
pub const CAPZ_MANAGER: &str = "capz-manager";
pub const ASO_CONTROLLER: &str = "aso-controller";

/// The namespace CAPZ installs into, where ASO runs too (its `POD_NAMESPACE`).
const NAMESPACE: &str = "capz-system";

/// The feature gates CAPZ's release manifest sets, with its defaults.
const FEATURE_GATES: &str = "MachinePool=true,AKSResourceHealth=false,EdgeZone=false,ASOAPI=true,\
                             APIServerILB=false,SkipMachinePoolModelReconciliation=false";

/// The pinned CAPZ release.
#[must_use]
pub fn capz_version() -> &'static str {
    pinned(CAPZ_GO_MOD, CAPZ_MODULE)
}

/// The pinned ASO release.
#[must_use]
pub fn aso_version() -> &'static str {
    pinned(ASO_GO_MOD, ASO_MODULE)
}

/// The directory `just peer-bins` builds into.
///
/// # Errors
/// When something it builds is missing.
pub fn binaries() -> Result<PathBuf> {
    let dir = cache_dir()
        .join("peer-bins")
        .join(format!("{}-{}", capz_version(), aso_version()));
    for binary in [CAPZ_MANAGER, ASO_CONTROLLER, "crds", "webhooks.yaml"] {
        if !dir.join(binary).exists() {
            return Err(Error::MissingBinary {
                binary,
                dir,
                recipe: "peer-bins",
            });
        }
    }
    Ok(dir)
}

/// How CAPZ and ASO are run; `None` keeps a release's default.
#[derive(Debug, Clone, Default)]
pub struct PeerOptions {
    /// CAPZ's `--sync-period` (its default is 10 minutes).
    pub capz_sync_period: Option<Duration>,
    /// ASO's `AZURE_SYNC_PERIOD` (its default is an hour).
    pub aso_sync_period: Option<Duration>,
    /// More flags for CAPZ's manager (`--azuremachine-concurrency=30`, say).
    pub capz_flags: Vec<String>,
}

/// CAPZ and ASO running beside a plane.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Where CAPZ serves `/metrics` (plain HTTP).
    pub capz_metrics: SocketAddr,
    /// Where ASO serves `/metrics` (plain HTTP).
    pub aso_metrics: SocketAddr,
}

impl Plane {
    /// Installs CAPZ with `clusterctl init` (next to the Cluster API `clusterctl` installed) and
    /// ASO's CRDs and webhook configurations, then runs both. `azure_ca` is the emulator's CA,
    /// which the plane's workload proxy (the emulator's) presents for Azure's host names. Returns
    /// once the API server converts and admits CAPZ's and ASO's kinds through them, with the
    /// clusterctl that knows CAPZ as the `azure` provider.
    ///
    /// # Errors
    /// When something is not built, clusterctl fails, a process stops or does not serve in time,
    /// or the API server refuses a CRD or webhook setting.
    pub async fn start_peer(
        &mut self,
        clusterctl: &Clusterctl,
        azure_ca: &Path,
        options: &PeerOptions,
    ) -> Result<(Clusterctl, Peer)> {
        let bins = binaries()?;
        let client = self.client().await?;
        let ports = free_ports(6)?;
        let (capz_webhook, capz_health, capz_metrics) = (ports[0], ports[1], ports[2]);
        let (aso_webhook, aso_health, aso_metrics) = (ports[3], ports[4], ports[5]);
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(self.authority().cert_pem());
        let aso_url = format!("https://127.0.0.1:{aso_webhook}");

        // ASO's kinds first: with its ASO API on (the default), CAPZ watches managed clusters and
        // agent pools from the start, even for self-managed clusters.
        let aso_crds = aso_crds(&bins.join("crds"), &aso_url, &ca_bundle)?;
        crds::install_crds(&client, &aso_crds).await?;

        let clusterctl = capz_clusterctl(clusterctl)?;
        clusterctl
            .run(&[
                "init",
                "--infrastructure",
                &format!("{PROVIDER}:{}", capz_version()),
            ])
            .await?;

        let mut env = self.workload_proxy_env();
        env.push(("SSL_CERT_FILE".to_owned(), azure_ca.display().to_string()));
        let aso_certs = self.serving_dir(ASO_CONTROLLER)?;
        let mut aso_env = env.clone();
        aso_env.extend(
            [
                ("KUBECONFIG", self.kubeconfig().display().to_string()),
                ("POD_NAMESPACE", NAMESPACE.to_owned()),
                // What CAPZ's install sets: ASO's requests then tell whose they are.
                (
                    "AZURE_USER_AGENT_SUFFIX",
                    format!("cluster-api-provider-azure/{}", capz_version()),
                ),
            ]
            .map(|(name, value)| (name.to_owned(), value)),
        );
        if let Some(period) = options.aso_sync_period {
            aso_env.push(("AZURE_SYNC_PERIOD".to_owned(), format!("{}s", period.as_secs())));
        }
        self.launch(
            ASO_CONTROLLER,
            Launch {
                program: bins.join(ASO_CONTROLLER),
                args: vec![
                    format!("--webhook-port={aso_webhook}"),
                    format!("--webhook-cert-dir={}", aso_certs.display()),
                    format!("--health-addr=127.0.0.1:{aso_health}"),
                    format!("--metrics-addr=127.0.0.1:{aso_metrics}"),
                    "--secure-metrics=false".to_owned(),
                    // The CRDs are installed above, as a release's would be.
                    "--crd-management=none".to_owned(),
                    // The verbosity CAPZ's install gives ASO.
                    "--v=2".to_owned(),
                ],
                env: aso_env,
                container: None,
            },
        )?;

        let capz_certs = self.serving_dir(CAPZ_MANAGER)?;
        let mut args = vec![
            format!("--kubeconfig={}", self.kubeconfig().display()),
            format!("--webhook-port={capz_webhook}"),
            format!("--webhook-cert-dir={}", capz_certs.display()),
            format!("--health-addr=127.0.0.1:{capz_health}"),
            format!("--diagnostics-address=127.0.0.1:{capz_metrics}"),
            "--insecure-diagnostics=true".to_owned(),
            "--leader-elect=false".to_owned(),
            format!("--feature-gates={FEATURE_GATES}"),
            "--v=0".to_owned(),
        ];
        if let Some(period) = options.capz_sync_period {
            args.push(format!("--sync-period={}s", period.as_secs()));
        }
        args.extend(options.capz_flags.iter().cloned());
        self.launch(
            CAPZ_MANAGER,
            Launch {
                program: bins.join(CAPZ_MANAGER),
                args,
                env,
                container: None,
            },
        )?;

        self.wait_listening(ASO_CONTROLLER, aso_webhook).await?;
        self.wait_listening(CAPZ_MANAGER, capz_webhook).await?;
        let capz_url = format!("https://127.0.0.1:{capz_webhook}");
        let selector = format!("cluster.x-k8s.io/provider=infrastructure-{PROVIDER}");
        convert_through(&client, &selector, &capz_url, &ca_bundle).await?;
        admit_through(&client, &selector, &capz_url, &ca_bundle).await?;
        let plurals: Vec<(String, String)> = aso_crds
            .iter()
            .map(|crd| (crd.spec.group.clone(), crd.spec.names.plural.clone()))
            .collect();
        for configuration in aso_webhooks(&bins.join("webhooks.yaml"), &plurals, &aso_url, &ca_bundle)? {
            crate::apply(&client, NAMESPACE, &configuration).await?;
        }
        Ok((
            clusterctl,
            Peer {
                capz_metrics: ([127, 0, 0, 1], capz_metrics).into(),
                aso_metrics: ([127, 0, 0, 1], aso_metrics).into(),
            },
        ))
    }

    /// A directory holding a serving certificate for `name` from the plane's CA.
    fn serving_dir(&self, name: &str) -> Result<PathBuf> {
        let dir = self.dir().join(name);
        std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;
        self.authority().serving(name, &[])?.write_to(&dir)?;
        Ok(dir)
    }
}

/// `clusterctl` knowing CAPZ as the `azure` provider: the module's `config/capz` rendered into a
/// local repository in the release layout, with the release's image and `metadata.yaml`.
fn capz_clusterctl(clusterctl: &Clusterctl) -> Result<Clusterctl> {
    let version = capz_version();
    let source = crds::module_source(CAPZ_MODULE, Some(version))?;
    let kubectl = crate::KubeBinaries::locate()?.binary("kubectl");
    let rendered = kustomize(&kubectl, &source.join("config").join("capz"))?;
    let image = format!("registry.k8s.io/cluster-api-azure/cluster-api-azure-controller:{version}");
    let components: String = rendered
        .lines()
        .map(|line| {
            let field = line.trim_start();
            if field.starts_with("image: ") && field.ends_with("/cluster-api-azure-controller:main") {
                format!("{}image: {image}\n", &line[..line.len() - field.len()])
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    let release = clusterctl
        .home()
        .join("peer-repository")
        .join(format!("infrastructure-{PROVIDER}"))
        .join(version);
    std::fs::create_dir_all(&release).map_err(Error::io("create", &release))?;
    let file = release.join("infrastructure-components.yaml");
    std::fs::write(&file, components).map_err(Error::io("write", &file))?;
    let metadata = source.join("metadata.yaml");
    std::fs::copy(&metadata, release.join("metadata.yaml")).map_err(Error::io("copy", &metadata))?;
    clusterctl.with_azure_provider(&file, version, "peer")
}

/// ASO's CRDs from `dir`, converted by ASO's webhook server at `url`, as a release's install
/// sets them up.
fn aso_crds(dir: &Path, url: &str, ca_bundle: &str) -> Result<Vec<CustomResourceDefinition>> {
    let mut crds = crds::load(&[dir.to_owned()])?;
    let ca = k8s_openapi::ByteString(
        base64::engine::general_purpose::STANDARD
            .decode(ca_bundle)
            .unwrap_or_default(),
    );
    for crd in &mut crds {
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "Webhook".to_owned(),
            webhook: Some(WebhookConversion {
                conversion_review_versions: vec!["v1".to_owned()],
                client_config: Some(WebhookClientConfig {
                    url: Some(format!("{url}/convert")),
                    ca_bundle: Some(ca.clone()),
                    service: None,
                }),
            }),
        });
    }
    Ok(crds)
}

/// ASO's admission webhook configurations from `file` (what controller-gen writes), holding only
/// the webhooks for `plurals` (group, resource) and sending them to `url`, named as ASO's
/// release names them.
fn aso_webhooks(
    file: &Path,
    plurals: &[(String, String)],
    url: &str,
    ca_bundle: &str,
) -> Result<Vec<DynamicObject>> {
    let text = std::fs::read_to_string(file).map_err(Error::io("read", file))?;
    let mut configurations: Vec<DynamicObject> =
        serde_saphyr::from_multiple(&text).map_err(|err| Error::Manifest {
            path: file.display().to_string(),
            message: err.to_string(),
        })?;
    let installed = |webhook: &serde_json::Value| {
        webhook["rules"].as_array().into_iter().flatten().all(|rule| {
            let groups = rule["apiGroups"].as_array().into_iter().flatten();
            let resources: Vec<&serde_json::Value> =
                rule["resources"].as_array().into_iter().flatten().collect();
            groups.into_iter().all(|group| {
                resources.iter().all(|resource| {
                    plurals
                        .iter()
                        .any(|(g, plural)| group.as_str() == Some(g) && resource.as_str() == Some(plural))
                })
            })
        })
    };
    for configuration in &mut configurations {
        let kind = configuration
            .types
            .as_ref()
            .map(|types| types.kind.clone())
            .unwrap_or_default();
        configuration.metadata.name = Some(if kind.starts_with("Mutating") {
            "azureserviceoperator-mutating-webhook-configuration".to_owned()
        } else {
            "azureserviceoperator-validating-webhook-configuration".to_owned()
        });
        let mut kept = Vec::new();
        for mut webhook in configuration.data["webhooks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            if !installed(&webhook) {
                continue;
            }
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or("/")
                .to_owned();
            webhook["clientConfig"] = json!({"url": format!("{url}{path}"), "caBundle": ca_bundle});
            kept.push(webhook);
        }
        configuration.data["webhooks"] = json!(kept);
    }
    Ok(configurations)
}
