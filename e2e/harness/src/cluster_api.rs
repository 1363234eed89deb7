//! Cluster API's managers as local processes beside the plane: the core manager, the kubeadm
//! bootstrap manager and the kubeadm control-plane manager, built by `just capi-bins`.
//!
//! `clusterctl init` installs them as it would in any management cluster (see
//! [`crate::clusterctl`]): CRDs, RBAC, Deployments, Services, webhook configurations, and its
//! inventory. In a cluster each manager then runs as a Pod behind its Service, and cert-manager
//! gives its webhook server a certificate. Here each runs as a process serving its webhooks on a
//! loopback port with a certificate from the plane's CA, and the harness points the CRDs'
//! conversion (v1beta1 <-> v1beta2) and the webhook configurations clusterctl installed at
//! `https://127.0.0.1:<port>` with that CA instead of the Service.

use std::path::PathBuf;

use base64::Engine as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::bins::{cache_dir, pinned};
use crate::clusterctl::{self, Clusterctl};
use crate::crds;
use crate::error::{Error, Result};
use crate::plane::{Plane, free_ports};
use crate::process::Launch;

const CAPI_GO_MOD: &str = include_str!("../../capi/go.mod");

/// The part of a cluster a provider plays, as clusterctl names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Core,
    Bootstrap,
    ControlPlane,
}

impl Kind {
    /// The `clusterctl init` flag, also the first word of the components file's name.
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Bootstrap => "bootstrap",
            Self::ControlPlane => "control-plane",
        }
    }

    /// The provider type in `clusterctl.yaml` and the inventory.
    pub(crate) fn provider_type(self) -> &'static str {
        match self {
            Self::Core => "CoreProvider",
            Self::Bootstrap => "BootstrapProvider",
            Self::ControlPlane => "ControlPlaneProvider",
        }
    }

    /// The label clusterctl puts on everything it installs for `provider`
    /// (`cluster.x-k8s.io/provider`), also its directory in a local repository.
    pub(crate) fn label(self, provider: &str) -> String {
        match self {
            Self::Core => provider.to_owned(),
            Self::Bootstrap | Self::ControlPlane => format!("{}-{provider}", self.flag()),
        }
    }
}

/// One of Cluster API's managers.
pub(crate) struct Manager {
    /// The binary `just capi-bins` builds, also the process's name.
    pub(crate) binary: &'static str,
    /// The provider's name for clusterctl.
    pub(crate) provider: &'static str,
    pub(crate) kind: Kind,
    /// Its kustomize bases in the module (`default` renders the components).
    pub(crate) config: &'static str,
    /// Its image's name in the release registry.
    pub(crate) image: &'static str,
}

pub(crate) const MANAGERS: [Manager; 3] = [
    Manager {
        binary: "cluster-api-manager",
        provider: "cluster-api",
        kind: Kind::Core,
        config: "core/config",
        image: "cluster-api-controller",
    },
    Manager {
        binary: "kubeadm-bootstrap-manager",
        provider: "kubeadm",
        kind: Kind::Bootstrap,
        config: "bootstrap/kubeadm/config",
        image: "kubeadm-bootstrap-controller",
    },
    Manager {
        binary: "kubeadm-control-plane-manager",
        provider: "kubeadm",
        kind: Kind::ControlPlane,
        config: "controlplane/kubeadm/config",
        image: "kubeadm-control-plane-controller",
    },
];

/// The pinned Cluster API release.
#[must_use]
pub fn version() -> &'static str {
    pinned(CAPI_GO_MOD, crds::CLUSTER_API_MODULE)
}

/// The directory `just capi-bins` builds the managers and clusterctl into.
///
/// # Errors
/// When they have not been built.
pub fn binaries() -> Result<PathBuf> {
    let dir = cache_dir().join("capi-bins").join(version());
    for binary in MANAGERS
        .iter()
        .map(|manager| manager.binary)
        .chain(["clusterctl"])
    {
        if !dir.join(binary).is_file() {
            return Err(Error::MissingBinary {
                binary,
                dir,
                recipe: "capi-bins",
            });
        }
    }
    Ok(dir)
}

impl Plane {
    /// Installs Cluster API with `clusterctl init` from the local repository and runs its
    /// managers as local processes, with the feature gates CAPZ's flavors need (MachinePool,
    /// ClusterTopology). Returns once the API server converts and admits Cluster API's kinds
    /// through them; the returned clusterctl works against this plane.
    ///
    /// kube-controller-manager starts first: clusterctl, like Cluster API, relies on namespaces
    /// being deleted and on garbage collection by owner references.
    ///
    /// # Errors
    /// When a binary is missing, a process stops or does not serve in time, clusterctl fails, or
    /// the API server refuses the webhook settings.
    pub async fn start_cluster_api(&mut self) -> Result<Clusterctl> {
        let bins = binaries()?;
        self.start_controller_manager()?;
        let client = self.client().await?;
        crds::install(&client, &[clusterctl::cert_manager_crds()?]).await?;
        let clusterctl = Clusterctl::new(&bins, self.kubeconfig(), &self.dir().join("clusterctl"))?;
        let mut ports = Vec::new();
        for manager in &MANAGERS {
            let free = free_ports(3)?;
            let (webhook, health, diagnostics) = (free[0], free[1], free[2]);
            let certs = self.dir().join(manager.binary);
            std::fs::create_dir_all(&certs).map_err(Error::io("create", &certs))?;
            self.authority().serving(manager.binary, &[])?.write_to(&certs)?;
            let args = vec![
                format!("--kubeconfig={}", self.kubeconfig().display()),
                format!("--webhook-port={webhook}"),
                format!("--webhook-cert-dir={}", certs.display()),
                format!("--health-addr=127.0.0.1:{health}"),
                format!("--diagnostics-address=127.0.0.1:{diagnostics}"),
                "--insecure-diagnostics=true".to_owned(),
                "--leader-elect=false".to_owned(),
                "--feature-gates=MachinePool=true,ClusterTopology=true".to_owned(),
            ];
            let launch = Launch {
                program: bins.join(manager.binary),
                args,
                env: self.workload_proxy_env(),
                container: None,
            };
            self.launch(manager.binary, launch)?;
            ports.push(webhook);
        }
        // The managers start up while clusterctl installs; they read the stored version
        // (v1beta2), which needs no conversion.
        clusterctl.init().await?;
        for (manager, port) in MANAGERS.iter().zip(&ports) {
            self.wait_listening(manager.binary, *port).await?;
        }
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(self.authority().cert_pem());
        for (manager, port) in MANAGERS.iter().zip(ports) {
            let url = format!("https://127.0.0.1:{port}");
            let selector = format!(
                "cluster.x-k8s.io/provider={}",
                manager.kind.label(manager.provider)
            );
            convert_through(&client, &selector, &url, &ca_bundle).await?;
            admit_through(&client, &selector, &url, &ca_bundle).await?;
        }
        self.wait_controller_manager(&client).await?;
        Ok(clusterctl)
    }
}

/// Points the conversion of the provider's CRDs (those clusterctl labelled with `selector`) at its
/// webhook server instead of its Service.
pub(crate) async fn convert_through(
    client: &kube::Client,
    selector: &str,
    url: &str,
    ca_bundle: &str,
) -> Result<()> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let conversion = json!({"spec": {"conversion": {"webhook": {"clientConfig": {
        "url": format!("{url}/convert"),
        "caBundle": ca_bundle,
        "service": null,
    }}}}});
    for crd in api.list(&ListParams::default().labels(selector)).await? {
        let converts = crd
            .spec
            .conversion
            .as_ref()
            .is_some_and(|conversion| conversion.strategy == "Webhook");
        if converts {
            let name = crd.metadata.name.unwrap_or_default();
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&conversion))
                .await?;
        }
    }
    Ok(())
}

/// Points the provider's admission webhook configurations (those clusterctl labelled with
/// `selector`) at its webhook server instead of its Service.
pub(crate) async fn admit_through(
    client: &kube::Client,
    selector: &str,
    url: &str,
    ca_bundle: &str,
) -> Result<()> {
    let kinds = [
        ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
        ApiResource::erase::<MutatingWebhookConfiguration>(&()),
    ];
    for kind in &kinds {
        let api = Api::<DynamicObject>::all_with(client.clone(), kind);
        for mut configuration in api.list(&ListParams::default().labels(selector)).await? {
            for webhook in configuration.data["webhooks"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                let path = webhook["clientConfig"]["service"]["path"]
                    .as_str()
                    .unwrap_or("/")
                    .to_owned();
                webhook["clientConfig"] = json!({"url": format!("{url}{path}"), "caBundle": ca_bundle});
            }
            let name = configuration.metadata.name.clone().unwrap_or_default();
            api.replace(&name, &PostParams::default(), &configuration).await?;
        }
    }
    Ok(())
}
