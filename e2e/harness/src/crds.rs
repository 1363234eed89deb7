//! Installing CRDs and waiting until the API server serves them.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use crate::error::{Error, Result};
use crate::plane::FIELD_MANAGER;

/// How long a CRD may take to be established and served.
const ESTABLISH_TIMEOUT: Duration = Duration::from_mins(1);

/// The module Cluster API's managers, clusterctl and CRDs come from.
pub const CLUSTER_API_MODULE: &str = "sigs.k8s.io/cluster-api";

/// `deploy/crds`: the CRDs of capz-rs.
#[must_use]
pub fn ours() -> PathBuf {
    repository().join("deploy").join("crds")
}

/// The clone under test: the workspace root above the package cargo runs the test of, else the
/// one this crate was built from. Clones may share a build directory, so the path compiled in can
/// name another clone.
pub(crate) fn repository() -> PathBuf {
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|package| {
            package
                .ancestors()
                .find(|dir| dir.join("Cargo.lock").is_file())
                .map(Path::to_path_buf)
        })
        .unwrap_or(built)
}

/// Cluster API's own CRD directories for the pinned version: core (with MachinePool,
/// ClusterClass, IPAM and runtime extensions), kubeadm bootstrap and kubeadm control plane.
///
/// # Errors
/// When the module's source cannot be located.
pub fn cluster_api() -> Result<Vec<PathBuf>> {
    let source = cluster_api_source()?;
    Ok([
        "core/config",
        "bootstrap/kubeadm/config",
        "controlplane/kubeadm/config",
    ]
    .iter()
    .map(|dir| source.join(dir).join("crd").join("bases"))
    .collect())
}

/// Where the Go module cache holds the pinned Cluster API source: `CAPZ_CAPI_SOURCE` when set,
/// else what `go mod download` in `e2e/capi` says (downloading it the first time).
///
/// # Errors
/// When `go` fails or does not name a directory.
pub fn cluster_api_source() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("CAPZ_CAPI_SOURCE") {
        return Ok(PathBuf::from(dir));
    }
    module_source(CLUSTER_API_MODULE, None)
}

/// Where the Go module cache holds `module`, at `version` or else at the version `e2e/capi`
/// pins, downloading it the first time.
///
/// # Errors
/// When `go` fails or does not name a directory.
pub(crate) fn module_source(module: &'static str, version: Option<&str>) -> Result<PathBuf> {
    let failed = |message: String| Error::GoModule { module, message };
    let query = version.map_or_else(|| module.to_owned(), |version| format!("{module}@{version}"));
    let output = std::process::Command::new("go")
        .args(["mod", "download", "-json", &query])
        .current_dir(repository().join("e2e").join("capi"))
        .output()
        .map_err(|err| failed(format!("cannot run go: {err}")))?;
    let described: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    match described["Dir"].as_str() {
        Some(dir) if output.status.success() => Ok(PathBuf::from(dir)),
        _ => Err(failed(format!(
            "`go mod download` said: {}{}",
            String::from_utf8_lossy(&output.stderr).trim(),
            described["Error"].as_str().unwrap_or_default()
        ))),
    }
}

/// The CRDs in `paths` (files, or directories whose `*.yaml` files are read), sorted by name.
///
/// # Errors
/// When a file cannot be read or is not a CRD.
pub fn load(paths: &[PathBuf]) -> Result<Vec<CustomResourceDefinition>> {
    let mut crds = Vec::new();
    for path in paths {
        let files = if path.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(Error::io("read", path))?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|file| file.extension().is_some_and(|ext| ext == "yaml"))
                // A directory of CRDs may also hold the kustomization that lists them.
                .filter(|file| !file.ends_with("kustomization.yaml"))
                .collect();
            files.sort();
            files
        } else {
            vec![path.clone()]
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(Error::io("read", &file))?;
            let documents: Vec<CustomResourceDefinition> =
                serde_saphyr::from_multiple(&text).map_err(|err| Error::Manifest {
                    path: file.display().to_string(),
                    message: err.to_string(),
                })?;
            crds.extend(documents);
        }
    }
    crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(crds)
}

/// Applies the CRDs in `paths` and waits until each is established and every served version
/// answers a list.
///
/// # Errors
/// When a CRD is refused or not served in time.
pub async fn install(client: &Client, paths: &[PathBuf]) -> Result<Vec<String>> {
    install_crds(client, &load(paths)?).await
}

/// Applies `crds` and waits until each is established and every served version answers a list.
///
/// # Errors
/// When a CRD is refused or not served in time.
pub async fn install_crds(client: &Client, crds: &[CustomResourceDefinition]) -> Result<Vec<String>> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    // All at once: each apply waits mostly on the API server building the CRD's schema.
    futures_util::future::try_join_all(crds.iter().map(|crd| {
        let (api, params) = (&api, &params);
        async move { api.patch(name(crd), params, &Patch::Apply(crd)).await }
    }))
    .await?;
    let started = Instant::now();
    futures_util::future::try_join_all(crds.iter().map(|crd| wait_served(client, &api, crd, started)))
        .await?;
    Ok(crds.iter().map(|crd| name(crd).to_owned()).collect())
}

fn name(crd: &CustomResourceDefinition) -> &str {
    crd.metadata.name.as_deref().unwrap_or_default()
}

async fn wait_served(
    client: &Client,
    api: &Api<CustomResourceDefinition>,
    crd: &CustomResourceDefinition,
    started: Instant,
) -> Result<()> {
    let spec = &crd.spec;
    let lists: Vec<String> = spec
        .versions
        .iter()
        .filter(|version| version.served)
        .map(|version| {
            format!(
                "/apis/{}/{}/{}?limit=1",
                spec.group, version.name, spec.names.plural
            )
        })
        .collect();
    loop {
        let established = api.get_status(name(crd)).await?.status.is_some_and(|status| {
            status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|condition| condition.type_ == "Established" && condition.status == "True")
        });
        let mut served = established;
        for list in lists.iter().filter(|_| established) {
            let request = http::Request::get(list.as_str()).body(Vec::new());
            served &= match request {
                Ok(request) => client.request_text(request).await.is_ok(),
                Err(_) => false,
            };
        }
        if served {
            return Ok(());
        }
        if started.elapsed() > ESTABLISH_TIMEOUT {
            return Err(Error::Timeout {
                what: format!("the CRD {} was not established and served", name(crd)),
                seconds: ESTABLISH_TIMEOUT.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
