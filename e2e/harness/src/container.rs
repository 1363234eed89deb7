//! capz-rs's Deployments run from their container images, as a kubelet would run them: the image a
//! Deployment names (by tag, and by digest when it pins one) is looked up in the plane's image
//! store (what [`Plane::load_image`] loaded, as `kind load` fills a node's) and then among those
//! `just images` built (`images/` in the target directory), unpacked with umoci into the plane's
//! directory, and its entrypoint run by runc as the
//! image's user, with the image's environment and the container's arguments and environment, on a
//! read-only root file system with a fresh `/tmp`, in the host's network namespace (as
//! `hostNetwork: true` would), with the files a Pod would have mounted (its token and kubeconfig,
//! the CA files, the webhook server's certificate) bound in at the paths the arguments name.
//!
//! Where containers cannot run (runc or umoci missing, not root, or no image built for this
//! version) the binary built beside the test runs as a process instead, and the harness says why.
//! `CAPZ_HARNESS_RUNTIME=process` asks for processes; `CAPZ_HARNESS_RUNTIME=runc` (what `just e2e`
//! sets) makes a missing runtime an error instead, so that a run cannot pass without the images.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::plane::Plane;
use crate::process::{Container, Launch};

/// The plane's image store, under its directory: what a kind node holds after `kind load`.
const STORE: &str = "images";

/// An image as a Deployment names it: `[registry/]path/name:tag[@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageReference {
    /// Everything before the tag, such as `ghcr.io/capz-rs/capz-compute`.
    pub repository: String,
    pub tag: String,
    /// The manifest's digest (`sha256:...`), when the reference pins one.
    pub digest: Option<String>,
}

impl ImageReference {
    /// Reads a reference; a tag is required (the harness runs nothing by `latest`).
    ///
    /// # Errors
    /// When it has no tag.
    pub fn parse(text: &str) -> Result<Self> {
        let (named, digest) = match text.split_once('@') {
            Some((named, digest)) => (named, Some(digest.to_owned())),
            None => (text, None),
        };
        // A colon after the last slash starts the tag; one before it is a registry's port.
        match named.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') && !tag.is_empty() => Ok(Self {
                repository: repository.to_owned(),
                tag: tag.to_owned(),
                digest,
            }),
            _ => Err(Error::Manifest {
                path: text.to_owned(),
                message: "an image without a tag; name it by tag (and digest)".to_owned(),
            }),
        }
    }

    /// The last part of the repository, which names the image in a store.
    #[must_use]
    pub fn name(&self) -> &str {
        self.repository.rsplit('/').next().unwrap_or_default()
    }
}

impl std::fmt::Display for ImageReference {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}", self.repository, self.tag)?;
        if let Some(digest) = &self.digest {
            write!(formatter, "@{digest}")?;
        }
        Ok(())
    }
}

impl Plane {
    /// Loads the image archive `archive` (OCI, as `just images` and `just release` write them)
    /// into the plane's image store, as `kind load image-archive` loads one into a node; returns
    /// what it is named. Deployments naming it then run it rather than the image built.
    ///
    /// # Errors
    /// When the archive names no image or skopeo cannot copy it.
    pub fn load_image(&self, archive: &Path) -> Result<ImageReference> {
        let output = Command::new("tar")
            .arg("-xOf")
            .arg(archive)
            .arg("index.json")
            .output()
            .map_err(Error::io("read", archive))?;
        let index: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        let named = index["manifests"][0]["annotations"]["io.containerd.image.name"]
            .as_str()
            .ok_or_else(|| Error::Manifest {
                path: archive.display().to_string(),
                message: "names no image (no io.containerd.image.name in its index.json)".to_owned(),
            })?;
        let image = ImageReference::parse(named)?;
        self.copy_image(&format!("oci-archive:{}", archive.display()), &image)?;
        Ok(image)
    }

    /// Tags the image `image` (loaded, or else built) `tag` too in the plane's store, as
    /// `docker tag` and a load would: the same digest under a new tag.
    ///
    /// # Errors
    /// When the image is neither loaded nor built, or skopeo cannot copy it.
    pub fn tag_image(&self, image: &ImageReference, tag: &str) -> Result<ImageReference> {
        let built = images_dir().unwrap_or_default();
        let layout = find(image, &[self.dir().join(STORE), built])?;
        let tagged = ImageReference {
            tag: tag.to_owned(),
            digest: None,
            ..image.clone()
        };
        self.copy_image(&format!("oci:{}:{}", layout.display(), image.tag), &tagged)?;
        Ok(tagged)
    }

    fn copy_image(&self, source: &str, image: &ImageReference) -> Result<()> {
        let store = self.dir().join(STORE);
        std::fs::create_dir_all(&store).map_err(Error::io("create", &store))?;
        let target = format!("oci:{}:{}", store.join(image.name()).display(), image.tag);
        let output = Command::new("skopeo")
            .args(["copy", "--quiet", source, &target])
            .output()
            .map_err(Error::io("run", "skopeo"))?;
        if output.status.success() {
            return Ok(());
        }
        Err(Error::Command {
            command: format!("skopeo copy {source} {target}"),
            problem: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

/// What runs capz-rs's Deployments.
#[derive(Debug, Clone)]
pub enum Runtime {
    /// runc, with the images in `images`.
    Runc { images: PathBuf },
    /// Processes, and why.
    Processes { why: String },
}

impl Runtime {
    /// What `CAPZ_HARNESS_RUNTIME` asks for: [`Runtime::detect`], except that `runc` makes
    /// processes an error.
    ///
    /// # Errors
    /// When runc is required and cannot run, saying why.
    pub fn chosen() -> Result<Self> {
        let runtime = Self::detect();
        match &runtime {
            Self::Processes { why }
                if std::env::var("CAPZ_HARNESS_RUNTIME").is_ok_and(|asked| asked == "runc") =>
            {
                Err(Error::Command {
                    command: "runc".to_owned(),
                    problem: format!("CAPZ_HARNESS_RUNTIME=runc, but containers cannot run: {why}"),
                })
            }
            _ => Ok(runtime),
        }
    }

    /// runc when it can run containers here, else processes.
    #[must_use]
    pub fn detect() -> Self {
        let processes = |why: &str| Self::Processes { why: why.to_owned() };
        if std::env::var("CAPZ_HARNESS_RUNTIME").is_ok_and(|runtime| runtime == "process") {
            return processes("CAPZ_HARNESS_RUNTIME=process");
        }
        let runs = |program: &str| {
            Command::new(program)
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success())
        };
        if !runs("runc") || !runs("umoci") {
            return processes("runc or umoci is not installed (`just image-tools`)");
        }
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|output| output.stdout.starts_with(b"0\n"));
        if !root {
            return processes("runc runs containers only as root here");
        }
        match images_dir() {
            Some(images) => Self::Runc { images },
            None => processes("no images are built (`just images`)"),
        }
    }

    /// How the container of `name`, whose Deployment names `image`, is started: `program` is the
    /// binary it would otherwise run. `dir` is the plane's directory (its image store is
    /// `images/` there, looked in before the images built); `binds` are the host paths the
    /// container needs, bound read-only at the same paths.
    ///
    /// # Errors
    /// When the image is neither loaded nor built (or, run as a process, the binary is of another
    /// version than the tag), or cannot be unpacked or read.
    pub(crate) fn launch(
        &self,
        dir: &Path,
        name: &str,
        image: &ImageReference,
        program: Launch,
        binds: &[PathBuf],
    ) -> Result<Launch> {
        let Self::Runc { images } = self else {
            check_version(&program.program, image)?;
            return Ok(program);
        };
        let layout = find(image, &[dir.join(STORE), images.clone()])?;
        eprintln!("harness: {name} runs {image} from {}", layout.display());
        let tag = &image.tag;
        let config = image_config(&layout, tag).map_err(|message| Error::Manifest {
            path: layout.display().to_string(),
            message: format!("image {image}: {message}"),
        })?;
        let bundle = dir.join("containers").join(name);
        let rootfs = bundle.join("rootfs");
        if rootfs.exists() {
            std::fs::remove_dir_all(&rootfs).map_err(Error::io("remove", &rootfs))?;
        }
        std::fs::create_dir_all(&bundle).map_err(Error::io("create", &bundle))?;
        unpack(&layout, tag, &rootfs)?;
        open_the_way(&rootfs, binds)?;
        let spec = spec(&config, &rootfs, name, &program, binds);
        let file = bundle.join("config.json");
        std::fs::write(&file, spec.to_string()).map_err(Error::io("write", &file))?;
        // runc names the container's cgroup after its id, and cgroups are machine-wide: planes
        // run side by side in one test process, so the id names the plane's directory too (which
        // names the process).
        let plane = dir
            .file_name()
            .map(|plane| plane.to_string_lossy().into_owned())
            .unwrap_or_default();
        let container = Container {
            runc_root: dir.join("runc"),
            id: format!("{name}-{plane}"),
        };
        Ok(Launch {
            program: PathBuf::from("runc"),
            args: vec![
                format!("--root={}", container.runc_root.display()),
                "run".to_owned(),
                format!("--bundle={}", bundle.display()),
                container.id.clone(),
            ],
            env: Vec::new(),
            container: Some(container),
        })
    }

    /// Runs the image of `name` tagged `tag` to its end, with `args` after its entrypoint, as
    /// [`Runtime::launch`] would start it (in `dir`); returns what it printed. `None` when this
    /// runtime runs processes.
    ///
    /// # Errors
    /// When the image cannot be unpacked or read, or the container fails.
    pub fn run_to_end(&self, dir: &Path, name: &str, tag: &str, args: &[&str]) -> Result<Option<String>> {
        if matches!(self, Self::Processes { .. }) {
            return Ok(None);
        }
        let program = Launch {
            program: PathBuf::from(name),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            container: None,
        };
        let image = ImageReference {
            repository: name.to_owned(),
            tag: tag.to_owned(),
            digest: None,
        };
        let launch = self.launch(dir, name, &image, program, &[])?;
        let output = Command::new(&launch.program)
            .args(&launch.args)
            .output()
            .map_err(Error::io("run", "runc"));
        if let Some(container) = &launch.container {
            container.delete();
        }
        let output = output?;
        if !output.status.success() {
            return Err(Error::Command {
                command: format!("{name} {}", args.join(" ")),
                problem: format!("{}: {}", output.status, String::from_utf8_lossy(&output.stderr)),
            });
        }
        Ok(Some(String::from_utf8_lossy(&output.stdout).into_owned()))
    }

    /// One line for the logs: how the Deployments run.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Runc { images } => format!(
                "from their images under runc (those loaded into the plane, else those built in {})",
                images.display()
            ),
            Self::Processes { why } => {
                format!("as processes of the binaries built here, not from images: {why}")
            }
        }
    }
}

/// `images/` beside the binaries this program runs next to.
fn images_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .map(|dir| dir.join("images"))
        .find(|dir| dir.join("capz-compute").join("index.json").is_file())
}

/// The parts of an image's configuration a container is started with.
#[derive(Debug)]
struct ImageConfig {
    entrypoint: Vec<String>,
    user: (u32, u32),
    env: Vec<String>,
    working_dir: String,
}

fn read_json(path: &Path) -> std::result::Result<Value, String> {
    let text = std::fs::read(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    serde_json::from_slice(&text).map_err(|err| format!("{} is not JSON: {err}", path.display()))
}

/// The digest of the manifest tagged `tag` in the OCI layout `layout`.
fn manifest_digest(layout: &Path, tag: &str) -> std::result::Result<String, String> {
    let index = read_json(&layout.join("index.json"))?;
    index["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|manifest| manifest["annotations"]["org.opencontainers.image.ref.name"] == tag)
        .and_then(|manifest| manifest["digest"].as_str().map(str::to_owned))
        .ok_or_else(|| format!("no image is tagged {tag}"))
}

/// The OCI layout holding `image` among `stores` (directories of layouts named after their
/// images), the first whose tag has the digest the reference asks for, if it asks for one.
fn find(image: &ImageReference, stores: &[PathBuf]) -> Result<PathBuf> {
    let mut seen = Vec::new();
    for store in stores {
        let layout = store.join(image.name());
        match manifest_digest(&layout, &image.tag) {
            Ok(digest) if image.digest.as_ref().is_none_or(|wanted| *wanted == digest) => return Ok(layout),
            Ok(digest) => seen.push(format!("{} has it as {digest}", store.display())),
            Err(_) => seen.push(format!("{} has no such tag", store.display())),
        }
    }
    Err(Error::Manifest {
        path: image.to_string(),
        message: format!(
            "cannot run it: {}; load it into the plane or build it (`just images`)",
            seen.join(", ")
        ),
    })
}

/// A binary run in place of `image` must be of the version the image is tagged with.
fn check_version(program: &Path, image: &ImageReference) -> Result<()> {
    let output = Command::new(program)
        .arg("--version")
        .output()
        .map_err(Error::io("run", program))?;
    let printed = String::from_utf8_lossy(&output.stdout);
    let version = printed.split_whitespace().nth(1).unwrap_or_default();
    if image.tag.strip_prefix('v') == Some(version) {
        return Ok(());
    }
    Err(Error::Manifest {
        path: image.to_string(),
        message: format!(
            "cannot run it as a process: {} is version {version:?}, not the image's tag",
            program.display()
        ),
    })
}

/// The configuration of the image tagged `tag` in the OCI layout `layout`.
fn image_config(layout: &Path, tag: &str) -> std::result::Result<ImageConfig, String> {
    let blob = |digest: &Value| -> std::result::Result<Value, String> {
        let hex = digest
            .as_str()
            .and_then(|digest| digest.strip_prefix("sha256:"))
            .ok_or("a descriptor without a sha256 digest")?;
        read_json(&layout.join("blobs").join("sha256").join(hex))
    };
    let manifest = blob(&Value::String(manifest_digest(layout, tag)?))?;
    let config = blob(&manifest["config"]["digest"])?;
    let config = &config["config"];
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect()
    };
    let user = config["User"].as_str().unwrap_or_default();
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    let id = |text: &str| {
        text.parse::<u32>()
            .map_err(|_| format!("the image's user {user:?} is not numeric"))
    };
    Ok(ImageConfig {
        entrypoint: strings(&config["Entrypoint"]),
        user: (id(uid)?, id(gid)?),
        env: strings(&config["Env"]),
        working_dir: config["WorkingDir"].as_str().unwrap_or("/").to_owned(),
    })
}

/// Lets the image's user through the directories of this container's own copy of the image that
/// lead to the bound paths: `/root` is the image's only closed one, and the sandbox's directory
/// may be under it.
fn open_the_way(rootfs: &Path, binds: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    for bind in binds {
        for ancestor in bind.ancestors().skip(1) {
            let inside = rootfs.join(ancestor.strip_prefix("/").unwrap_or(ancestor));
            let Ok(metadata) = std::fs::metadata(&inside) else {
                continue;
            };
            let mode = metadata.permissions().mode();
            if metadata.is_dir() && mode & 0o001 == 0 {
                std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(mode | 0o011))
                    .map_err(Error::io("open up", &inside))?;
            }
        }
    }
    Ok(())
}

fn unpack(layout: &Path, tag: &str, rootfs: &Path) -> Result<()> {
    let output = Command::new("umoci")
        .args(["raw", "unpack", "--image"])
        .arg(format!("{}:{tag}", layout.display()))
        .arg(rootfs)
        .output()
        .map_err(Error::io("run", "umoci"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Command {
        command: format!("umoci raw unpack --image {}:{tag}", layout.display()),
        problem: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// The runtime spec: the image's entrypoint, user and environment; the container's arguments and
/// environment; a read-only root, a fresh `/tmp`, no capabilities, the host's network.
fn spec(config: &ImageConfig, rootfs: &Path, name: &str, program: &Launch, binds: &[PathBuf]) -> Value {
    let args: Vec<String> = config.entrypoint.iter().chain(&program.args).cloned().collect();
    let env: Vec<String> = config
        .env
        .iter()
        .cloned()
        .chain(program.env.iter().map(|(name, value)| format!("{name}={value}")))
        .collect();
    let mut mounts = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc"}),
        json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}),
        json!({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]}),
    ];
    mounts.extend(binds.iter().map(
        |path| json!({"destination": path, "type": "bind", "source": path, "options": ["rbind", "ro"]}),
    ));
    json!({
        "ociVersion": "1.0.2",
        "hostname": name,
        "process": {
            "terminal": false,
            "user": {"uid": config.user.0, "gid": config.user.1},
            "args": args,
            "env": env,
            "cwd": config.working_dir,
            "noNewPrivileges": true,
            "capabilities": {"bounding": [], "effective": [], "permitted": []},
        },
        "root": {"path": rootfs, "readonly": true},
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    })
}
