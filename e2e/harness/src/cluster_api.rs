//! Cluster API's managers as local processes beside the plane: the core manager, the kubeadm
//! bootstrap manager and the kubeadm control-plane manager, built by `just capi-bins`.
//!
//! In a cluster each runs as a Pod behind a Service, and cert-manager gives its webhook server a
//! certificate. Here each serves its webhooks on a loopback port with a certificate from the
//! plane's CA, and the plane's CRDs (for conversion between v1beta1 and v1beta2) and Cluster API's
//! webhook configurations name `https://127.0.0.1:<port>` with that CA instead of the Service.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::bins::{cache_dir, pinned};
use crate::crds;
use crate::error::{Error, Result};
use crate::plane::{Plane, free_ports};

const CAPI_GO_MOD: &str = include_str!("../../capi/go.mod");

/// One of Cluster API's managers.
struct Manager {
    /// The binary `just capi-bins` builds, also the process's name.
    binary: &'static str,
    /// Its kustomize base in the module, holding `crd/bases` and `webhook/manifests.yaml`.
    config: &'static str,
    /// What its release's kustomization puts before the webhook configurations' names.
    name_prefix: &'static str,
}

const MANAGERS: [Manager; 3] = [
    Manager {
        binary: "cluster-api-manager",
        config: "core/config",
        name_prefix: "capi-",
    },
    Manager {
        binary: "kubeadm-bootstrap-manager",
        config: "bootstrap/kubeadm/config",
        name_prefix: "capi-kubeadm-bootstrap-",
    },
    Manager {
        binary: "kubeadm-control-plane-manager",
        config: "controlplane/kubeadm/config",
        name_prefix: "capi-kubeadm-control-plane-",
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
    /// Starts Cluster API's managers against this plane, with the feature gates CAPZ's flavors
    /// need (MachinePool, ClusterTopology), and returns once the API server converts and admits
    /// Cluster API's kinds through them.
    ///
    /// # Errors
    /// When a binary is missing, a manager stops or does not serve in time, or the API server
    /// refuses the webhook settings.
    pub async fn start_cluster_api(&mut self) -> Result<()> {
        let bins = binaries()?;
        let source = crds::cluster_api_source()?;
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
            self.spawn(manager.binary, &bins.join(manager.binary), &args)?;
            ports.push(webhook);
        }
        for (manager, port) in MANAGERS.iter().zip(&ports) {
            self.wait_listening(manager.binary, *port).await?;
        }
        let client = self.client().await?;
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(self.authority().cert_pem());
        for (manager, port) in MANAGERS.iter().zip(ports) {
            let url = format!("https://127.0.0.1:{port}");
            convert_through(&client, &source.join(manager.config), &url, &ca_bundle).await?;
            admit_through(
                &client,
                &source.join(manager.config),
                manager.name_prefix,
                &url,
                &ca_bundle,
            )
            .await?;
        }
        Ok(())
    }
}

/// Points the conversion of the manager's multi-version CRDs at its webhook server.
async fn convert_through(client: &kube::Client, config: &Path, url: &str, ca_bundle: &str) -> Result<()> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let conversion = json!({"spec": {"conversion": {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("{url}/convert"), "caBundle": ca_bundle},
        },
    }}});
    for crd in crds::load(&[config.join("crd").join("bases")])? {
        if crd.spec.versions.len() > 1 {
            let name = crd.metadata.name.unwrap_or_default();
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&conversion))
                .await?;
        }
    }
    Ok(())
}

/// Installs the manager's admission webhook configurations, calling its webhook server.
async fn admit_through(
    client: &kube::Client,
    config: &Path,
    name_prefix: &str,
    url: &str,
    ca_bundle: &str,
) -> Result<()> {
    let file = config.join("webhook").join("manifests.yaml");
    let text = std::fs::read_to_string(&file).map_err(Error::io("read", &file))?;
    let configurations: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|err| Error::Manifest {
        path: file.display().to_string(),
        message: err.to_string(),
    })?;
    for mut configuration in configurations.into_iter().filter(|document| !document.is_null()) {
        let name = format!(
            "{name_prefix}{}",
            configuration["metadata"]["name"].as_str().unwrap_or_default()
        );
        configuration["metadata"]["name"] = json!(name);
        for webhook in configuration["webhooks"].as_array_mut().into_iter().flatten() {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or("/")
                .to_owned();
            webhook["clientConfig"] = json!({"url": format!("{url}{path}"), "caBundle": ca_bundle});
        }
        let object: DynamicObject = serde_json::from_value(configuration).map_err(|err| Error::Manifest {
            path: file.display().to_string(),
            message: err.to_string(),
        })?;
        crate::kit::apply(client, "", &object).await?;
    }
    Ok(())
}
