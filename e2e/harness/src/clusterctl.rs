//! clusterctl against the plane, from a local provider repository.
//!
//! Cluster API publishes each release's providers as `*-components.yaml` files on GitHub, which
//! build machines cannot reach. The same files come out of the release's kustomize bases, which
//! the Go module holds, so the harness renders them (`kubectl kustomize`, with the release's image
//! names) into a repository laid out the way clusterctl reads local ones:
//! `<repository>/<provider label>/<version>/<components file>` beside `metadata.yaml`, named by a
//! `clusterctl.yaml` of its own. It is built once per version in the cache directory.
//!
//! `clusterctl init` then installs the providers for real and records them in its inventory
//! (`providers.clusterctl.cluster.x-k8s.io`). What it cannot do here is run them: there is no
//! kubelet, so its Deployments stay at zero replicas while the harness runs the same managers as
//! local processes (see [`crate::cluster_api`]). cert-manager is the other piece clusterctl
//! expects: the harness installs its API (the CRDs, at the version clusterctl would install), so
//! `init` finds it; no cert-manager controller runs, since the harness issues the managers'
//! certificates itself.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bins::KubeBinaries;
use crate::cluster_api::{MANAGERS, Manager, version};
use crate::crds;
use crate::error::{Error, Result};

/// The module cert-manager's CRDs come from.
const CERT_MANAGER_MODULE: &str = "github.com/cert-manager/cert-manager";

/// The clusterctl binary set up for one plane: its repository, its kubeconfig, and a
/// configuration directory of its own so nothing is read from or written to the user's.
#[derive(Debug, Clone)]
pub struct Clusterctl {
    binary: PathBuf,
    config: PathBuf,
    home: PathBuf,
    kubeconfig: PathBuf,
    /// The version of capz-rs's provider `init` installs.
    capz_version: String,
}

impl Clusterctl {
    /// clusterctl for the cluster of `kubeconfig`, its own files under `home`, the providers
    /// from the local repository (rendered first if this version has none yet).
    ///
    /// # Errors
    /// When a binary or Cluster API's source is missing, or rendering fails.
    pub fn new(binaries: &Path, kubeconfig: &Path, home: &Path) -> Result<Self> {
        std::fs::create_dir_all(home).map_err(Error::io("create", home))?;
        let deploy = crds::repository().join("deploy");
        let components = render_capz(&deploy.join("all"), &home.join("repository"))?;
        let config = home.join("clusterctl.yaml");
        name_capz(&repository(binaries)?, &components, &config)?;
        Ok(Self {
            binary: binaries.join("clusterctl"),
            config,
            home: home.to_owned(),
            kubeconfig: kubeconfig.to_owned(),
            capz_version: provider_version(),
        })
    }

    /// This clusterctl with capz-rs's provider taken from the release repository `repository`
    /// (as `just release VERSION REPOSITORY` writes it), installing `version`; Cluster API's
    /// providers stay as they are.
    ///
    /// # Errors
    /// When the release is not in the repository or the configuration cannot be written.
    pub fn from_release(&self, repository: &Path, version: &str) -> Result<Self> {
        let release = repository.join(format!("infrastructure-{PROVIDER}"));
        let components = release.join(version).join("infrastructure-components.yaml");
        if !components.is_file() {
            return Err(Error::Manifest {
                path: components.display().to_string(),
                message: format!("is missing: release {version} is not in {}", repository.display()),
            });
        }
        // `latest` lets `clusterctl upgrade` find releases written to the repository later.
        let latest = release.join("latest").join("infrastructure-components.yaml");
        self.with_azure_provider(&latest, version, "release")
    }

    /// This clusterctl with the `azure` infrastructure provider's `version` read from the
    /// components file `components` (the release layout: `<provider>/<version>/<file>` beside
    /// `metadata.yaml`), its configuration written as `clusterctl-<name>.yaml`; Cluster API's
    /// providers stay as they are.
    ///
    /// # Errors
    /// When the configuration cannot be written.
    pub fn with_azure_provider(&self, components: &Path, version: &str, name: &str) -> Result<Self> {
        let config = self.home.join(format!("clusterctl-{name}.yaml"));
        let capi = self.binary.parent().map(repository_config).unwrap_or_default();
        name_capz(&capi, components, &config)?;
        Ok(Self {
            config,
            capz_version: version.to_owned(),
            ..self.clone()
        })
    }

    /// The directory clusterctl keeps its files in.
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// This clusterctl with capz-rs's provider holding only `controllers` (directories of
    /// `deploy/`, such as `network`) besides the base and the CRDs, as a user's overlay choosing
    /// them installs it (docs/deploy.md, "Choosing controllers").
    ///
    /// # Errors
    /// When a controller has no directory, or rendering fails.
    pub fn with_controllers(&self, controllers: &[&str]) -> Result<Self> {
        let deploy = crds::repository().join("deploy");
        let deploy = deploy.canonicalize().map_err(Error::io("find", &deploy))?;
        let selection = self.home.join("selection");
        std::fs::create_dir_all(&selection).map_err(Error::io("create", &selection))?;
        let selection = selection.canonicalize().map_err(Error::io("find", &selection))?;
        // kustomize takes no absolute paths: the way up to the root and down to deploy/.
        let up = "../".repeat(selection.components().count() - 1);
        let down = deploy.strip_prefix("/").unwrap_or(&deploy).display().to_string();
        let mut kustomization =
            String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
        for directory in ["base", "crds"].iter().chain(controllers) {
            if !deploy.join(directory).join("kustomization.yaml").is_file() {
                return Err(Error::Manifest {
                    path: deploy.join(directory).display().to_string(),
                    message: format!("is no overlay: deploy/ has no controller {directory}"),
                });
            }
            let _ = writeln!(kustomization, "- {up}{down}/{directory}");
        }
        let file = selection.join("kustomization.yaml");
        std::fs::write(&file, kustomization).map_err(Error::io("write", &file))?;
        let components = render_capz(&selection, &self.home.join("selected"))?;
        self.with_azure_provider(&components, &self.capz_version, "selected")
    }

    /// The manifest of one controller of this clone (a directory of `deploy/`, such as
    /// `privatedns`), as docs/deploy.md tells a user to make it for a management cluster that
    /// runs without it so far: its overlay rendered by kustomize, then clusterctl's variables
    /// filled in by `clusterctl generate yaml`.
    ///
    /// # Errors
    /// When the directory is no overlay, or kustomize or clusterctl fails.
    pub async fn render_controller(&self, controller: &str) -> Result<String> {
        let overlay = crds::repository().join("deploy").join(controller);
        if !overlay.join("kustomization.yaml").is_file() {
            return Err(Error::Manifest {
                path: overlay.display().to_string(),
                message: format!("is no overlay: deploy/ has no controller {controller}"),
            });
        }
        let kubectl = KubeBinaries::locate()?.binary("kubectl");
        let rendered = kustomize(&kubectl, &overlay)?;
        let file = self.home.join(format!("{controller}-kustomized.yaml"));
        std::fs::write(&file, rendered).map_err(Error::io("write", &file))?;
        let output = self
            .run(&["generate", "yaml", "--from", &file.display().to_string()])
            .await?;
        Ok(output.stdout)
    }

    /// The version of capz-rs's provider `clusterctl init` installs.
    #[must_use]
    pub fn capz_version(&self) -> &str {
        &self.capz_version
    }

    /// The `clusterctl.yaml` naming the local repository: give it as `--config` to `init`,
    /// `generate` and `upgrade`.
    #[must_use]
    pub fn config(&self) -> &Path {
        &self.config
    }

    /// A clusterctl command against the plane, ready for its arguments.
    #[must_use]
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .env("XDG_CONFIG_HOME", &self.home)
            // It would ask GitHub for a newer release, which cannot be reached from here.
            .env("CLUSTERCTL_DISABLE_VERSIONCHECK", "true")
            // Every command that talks to a cluster reads it; only some take a flag for it.
            .env("KUBECONFIG", &self.kubeconfig)
            .arg("--config")
            .arg(&self.config);
        command
    }

    /// Runs clusterctl with `args`; returns what it wrote: results go to standard output, its
    /// progress log to standard error.
    ///
    /// # Errors
    /// When it cannot start or fails, with what it wrote.
    pub async fn run(&self, args: &[&str]) -> Result<Output> {
        self.run_with_env(args, &[]).await
    }

    /// Runs clusterctl with `args` and the variables `env` (the values templates take).
    ///
    /// # Errors
    /// When it cannot start or fails, with what it wrote.
    pub async fn run_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let mut command = self.command();
        command.args(args).envs(env.iter().copied());
        let shown = format!("clusterctl {}", args.join(" "));
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .map_err(|err| Error::Command {
                command: shown.clone(),
                problem: err.to_string(),
            })?
            .map_err(|err| Error::Command {
                command: shown.clone(),
                problem: format!("cannot start: {err}"),
            })?;
        if !output.status.success() {
            return Err(Error::Command {
                command: shown,
                problem: format!(
                    "{}:\n{}{}",
                    output.status,
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ),
            });
        }
        Ok(Output {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// `clusterctl init` with Cluster API's three providers at the pinned version.
    ///
    /// # Errors
    /// When clusterctl fails.
    pub async fn init(&self) -> Result<Output> {
        let mut args = vec!["init".to_owned()];
        for manager in &MANAGERS {
            args.push(format!("--{}", manager.kind.flag()));
            args.push(format!("{}:{}", manager.provider, version()));
        }
        self.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .await
    }
}

/// What a clusterctl command wrote.
#[derive(Debug, Clone)]
pub struct Output {
    /// Its results (manifests, tables).
    pub stdout: String,
    /// Its progress log.
    pub stderr: String,
}

/// The directory of cert-manager's CRDs, at the version the pinned clusterctl installs.
///
/// # Errors
/// When the version cannot be read from Cluster API's source or the module cannot be fetched.
pub fn cert_manager_crds() -> Result<PathBuf> {
    let file = crds::cluster_api_source()?.join("cmd/clusterctl/client/config/cert_manager_client.go");
    let text = std::fs::read_to_string(&file).map_err(Error::io("read", &file))?;
    let version = text
        .lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix("CertManagerDefaultVersion")?;
            Some(value.trim_start_matches([' ', '=']).trim_matches('"'))
        })
        .ok_or_else(|| Error::Manifest {
            path: file.display().to_string(),
            message: "names no CertManagerDefaultVersion".to_owned(),
        })?;
    Ok(crds::module_source(CERT_MANAGER_MODULE, Some(version))?.join("deploy/crds"))
}

/// capz-rs's provider name for clusterctl (`--infrastructure azure`), as CAPZ's.
pub const PROVIDER: &str = "azure";

/// The version capz-rs's provider has in the local repository.
#[must_use]
pub fn provider_version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// capz-rs's provider rendered from the kustomization `overlay` (of this clone's `deploy/`) into
/// the clusterctl repository `repository` as a release would publish it:
/// `infrastructure-components.yaml`, `metadata.yaml` and the flavors' `cluster-template*.yaml`;
/// returns the components' path. It is rendered again for every clusterctl, so it always matches
/// the clone.
fn render_capz(overlay: &Path, repository: &Path) -> Result<PathBuf> {
    let deploy = crds::repository().join("deploy");
    let release = repository
        .join(format!("infrastructure-{PROVIDER}"))
        .join(provider_version());
    std::fs::create_dir_all(&release).map_err(Error::io("create", &release))?;
    let kubectl = KubeBinaries::locate()?.binary("kubectl");
    let components = kustomize(&kubectl, overlay)?;
    let file = release.join("infrastructure-components.yaml");
    std::fs::write(&file, components).map_err(Error::io("write", &file))?;
    let mut copies = vec![deploy.join("metadata.yaml")];
    let templates = deploy.join("templates");
    for entry in std::fs::read_dir(&templates).map_err(Error::io("read", &templates))? {
        copies.push(entry.map_err(Error::io("read", &templates))?.path());
    }
    for source in copies {
        let target = release.join(source.file_name().unwrap_or_default());
        std::fs::copy(&source, &target).map_err(Error::io("copy", &source))?;
    }
    Ok(file)
}

/// Writes `config`: Cluster API's providers (from `capi_config`) and the `azure` infrastructure
/// provider (capz-rs, or CAPZ beside it) at `components`.
fn name_capz(capi_config: &Path, components: &Path, config: &Path) -> Result<()> {
    let mut text = std::fs::read_to_string(capi_config).map_err(Error::io("read", capi_config))?;
    let _ = write!(
        text,
        "  - name: {PROVIDER}\n    type: InfrastructureProvider\n    url: {}\n",
        components.display()
    );
    std::fs::write(config, text).map_err(Error::io("write", config))
}

/// Where the local repository of Cluster API's providers names them, beside `binaries`.
fn repository_config(binaries: &Path) -> PathBuf {
    binaries.join("repository").join("clusterctl.yaml")
}

/// The local repository of the pinned release's providers, rendered into the cache on first use;
/// returns its `clusterctl.yaml`.
fn repository(binaries: &Path) -> Result<PathBuf> {
    let dir = binaries.join("repository");
    let config = repository_config(binaries);
    if config.is_file() {
        return Ok(config);
    }
    let source = crds::cluster_api_source()?;
    let kubectl = KubeBinaries::locate()?.binary("kubectl");
    // Rendered beside its place and moved in at once, so a half-written repository is never used.
    let staging = binaries.join(format!("repository.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let mut providers = String::from("providers:\n");
    for manager in &MANAGERS {
        let release = staging.join(manager.kind.label(manager.provider)).join(version());
        std::fs::create_dir_all(&release).map_err(Error::io("create", &release))?;
        let components = render(&kubectl, &source.join(manager.config).join("default"), manager)?;
        let file = release.join(format!("{}-components.yaml", manager.kind.flag()));
        std::fs::write(&file, components).map_err(Error::io("write", &file))?;
        let metadata = source.join("metadata.yaml");
        std::fs::copy(&metadata, release.join("metadata.yaml")).map_err(Error::io("copy", &metadata))?;
        let _ = write!(
            providers,
            "  - name: {}\n    type: {}\n    url: {}\n",
            manager.provider,
            manager.kind.provider_type(),
            dir.join(manager.kind.label(manager.provider))
                .join(version())
                .join(file.file_name().unwrap_or_default())
                .display()
        );
    }
    let staged_config = staging.join("clusterctl.yaml");
    std::fs::write(&staged_config, providers).map_err(Error::io("write", &staged_config))?;
    // Another plane may have finished the same repository meanwhile; either copy serves.
    if std::fs::rename(&staging, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    if config.is_file() {
        Ok(config)
    } else {
        Err(Error::Io {
            action: "create",
            path: config,
            source: std::io::ErrorKind::NotFound.into(),
        })
    }
}

/// What `kubectl kustomize dir` renders.
pub(crate) fn kustomize(kubectl: &Path, dir: &Path) -> Result<String> {
    let output = Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(Error::io("start", kubectl))?;
    if !output.status.success() {
        return Err(Error::Command {
            command: format!("kubectl kustomize {}", dir.display()),
            problem: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    String::from_utf8(output.stdout).map_err(|err| Error::Command {
        command: format!("kubectl kustomize {}", dir.display()),
        problem: format!("wrote no UTF-8: {err}"),
    })
}

/// A provider's components as its release publishes them: the kustomize base rendered, with the
/// release's image and pull policy.
fn render(kubectl: &Path, base: &Path, manager: &Manager) -> Result<String> {
    let rendered = kustomize(kubectl, base)?;
    let suffix = format!("/{}:main", manager.image);
    let image = format!("registry.k8s.io/cluster-api/{}:{}", manager.image, version());
    let mut components = String::new();
    let mut images = 0;
    for line in rendered.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let field = line.trim_start();
        components.push_str(indent);
        if field.starts_with("image: ") && field.ends_with(&suffix) {
            components.push_str("image: ");
            components.push_str(&image);
            images += 1;
        } else if field == "imagePullPolicy: Always" {
            components.push_str("imagePullPolicy: IfNotPresent");
        } else {
            components.push_str(field);
        }
        components.push('\n');
    }
    if images != 1 {
        return Err(Error::Manifest {
            path: base.display().to_string(),
            message: format!("expected one manager image ending in {suffix}, found {images}"),
        });
    }
    Ok(components)
}
