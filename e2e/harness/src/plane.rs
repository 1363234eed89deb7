//! etcd and kube-apiserver on loopback, in a directory of their own.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::bins::KubeBinaries;
use crate::crds;
use crate::error::{Error, Result};
use crate::pki::{self, Authority};
use crate::process::{Launch, Process, Watchdog};

/// The field manager the harness applies with.
pub const FIELD_MANAGER: &str = "capz-harness";

/// How long the API server may take to become ready.
const START_TIMEOUT: Duration = Duration::from_mins(1);

/// What to start.
#[derive(Debug, Clone)]
pub struct Options {
    /// CRD manifests (files or directories of `*.yaml`) to install and wait for.
    pub crds: Vec<PathBuf>,
    /// Where the plane's files go; a fresh directory under the system's temporary one when empty.
    pub dir: Option<PathBuf>,
    /// The API server's port; a free one when empty.
    pub port: Option<u16>,
    /// Where the API server records every request (who, with which `User-Agent`, verb and
    /// resource) as JSON lines, for benchmarks counting each client's calls; none when empty.
    pub audit_log: Option<PathBuf>,
}

impl Options {
    /// Our CRDs and all of Cluster API's, in a fresh directory on free ports.
    ///
    /// # Errors
    /// When Cluster API's source cannot be located.
    pub fn with_all_crds() -> Result<Self> {
        let mut crds = vec![crds::ours()];
        crds.extend(crds::cluster_api()?);
        Ok(Self {
            crds,
            dir: None,
            port: None,
            audit_log: None,
        })
    }
}

/// A running etcd and kube-apiserver. Dropping it stops both and removes its directory.
pub struct Plane {
    url: String,
    dir: PathBuf,
    owns_dir: bool,
    kubeconfig: PathBuf,
    ca_file: PathBuf,
    authority: Authority,
    // Stopped first when the plane is dropped, so an orderly stop kills the processes itself.
    watchdog: Watchdog,
    processes: Vec<Process>,
    /// Processes [`Plane::kill`] stopped, with how they were started.
    stopped: Vec<(String, Launch)>,
    /// The HTTPS proxy through which Cluster API's managers reach workload clusters.
    workload_proxy: Option<String>,
    tests: RwLock<()>,
}

impl Plane {
    /// Starts a plane with our CRDs and all of Cluster API's installed.
    ///
    /// # Errors
    /// When a binary is missing, a process fails to start, or a CRD is refused.
    pub async fn start() -> Result<Self> {
        Self::start_with(Options::with_all_crds()?).await
    }

    /// Starts a plane as `options` say.
    ///
    /// # Errors
    /// When a binary is missing, a process fails to start, or a CRD is refused.
    pub async fn start_with(options: Options) -> Result<Self> {
        let binaries = KubeBinaries::locate()?;
        let (dir, owns_dir) = match options.dir {
            Some(dir) => (dir, false),
            None => (fresh_dir()?, true),
        };
        for sub in ["etcd", "logs"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(Error::io("create", dir.join(sub)))?;
        }
        let watchdog = Watchdog::start(owns_dir.then_some(dir.as_path()), &dir.join("runc"))?;
        let ports = free_ports(3)?;
        let (etcd_port, etcd_peer_port) = (ports[0], ports[1]);
        let port = options.port.unwrap_or(ports[2]);
        let authority = Authority::new("capz-rs test plane CA")?;
        let mut plane = Self {
            url: format!("https://127.0.0.1:{port}"),
            kubeconfig: dir.join("kubeconfig"),
            ca_file: dir.join("ca.crt"),
            dir,
            owns_dir,
            authority,
            watchdog,
            processes: Vec::new(),
            stopped: Vec::new(),
            workload_proxy: None,
            tests: RwLock::new(()),
        };
        pki::write(&plane.ca_file, plane.authority.cert_pem())?;
        plane.start_etcd(&binaries, etcd_port, etcd_peer_port)?;
        let token = plane.write_api_server_files()?;
        plane.start_api_server(&binaries, etcd_port, port, options.audit_log.as_deref())?;
        plane.write_kubeconfig(&token)?;
        let client = plane.wait_ready().await?;
        allow_anonymous_issuer_discovery(&client).await?;
        crds::install(&client, &options.crds).await?;
        Ok(plane)
    }

    fn start_etcd(&mut self, binaries: &KubeBinaries, port: u16, peer: u16) -> Result<()> {
        let client_url = format!("http://127.0.0.1:{port}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let args = vec![
            format!("--data-dir={}", self.dir.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            // A test plane's data dies with it; syncing to disk would only slow every write.
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        self.spawn("etcd", &binaries.binary("etcd"), &args)
    }

    /// Writes the serving certificate, the token-signing key and the admin's token file; returns
    /// the admin token.
    fn write_api_server_files(&self) -> Result<String> {
        let serving = self.authority.serving(
            "kube-apiserver",
            &["kubernetes", "kubernetes.default", "kubernetes.default.svc"],
        )?;
        serving.write_to(&self.dir)?;
        let (private, public) = pki::signing_key()?;
        pki::write(&self.dir.join("sa.key"), &private)?;
        pki::write(&self.dir.join("sa.pub"), &public)?;
        let token = random_token()?;
        pki::write(
            &self.dir.join("tokens.csv"),
            &format!("{token},admin,admin,\"system:masters\"\n"),
        )?;
        Ok(token)
    }

    fn start_api_server(
        &mut self,
        binaries: &KubeBinaries,
        etcd_port: u16,
        port: u16,
        audit_log: Option<&Path>,
    ) -> Result<()> {
        let file = |name: &str| self.dir.join(name).display().to_string();
        let args = vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={}", file("tls.crt")),
            format!("--tls-private-key-file={}", file("tls.key")),
            format!("--client-ca-file={}", file("ca.crt")),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=RBAC".to_owned(),
            // Workload identity: tokens name this issuer, whose discovery document and keys are
            // served by this API server, so a verifier can fetch them.
            format!("--service-account-issuer={}", self.url),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
            "--service-cluster-ip-range=10.96.0.0/24".to_owned(),
            "--allow-privileged=true".to_owned(),
            format!("--cert-dir={}", self.dir.display()),
        ];
        let args = [args, self.audit_args(audit_log)?].concat();
        self.spawn("kube-apiserver", &binaries.binary("kube-apiserver"), &args)
    }

    /// With `audit_log`, the API server records every request there. Else, with `CAPZ_AUDIT_DIR`
    /// set, it records every request of capz-rs's ServiceAccounts (who, verb, resource,
    /// namespace, answer) in a file of that directory named after the plane, for the check that
    /// `deploy/` grants no more than they use (`just rbac-audit`).
    fn audit_args(&self, audit_log: Option<&Path>) -> Result<Vec<String>> {
        let (log, who) = match (audit_log, std::env::var_os("CAPZ_AUDIT_DIR")) {
            (Some(log), _) => (log.to_owned(), ""),
            (None, Some(audit_dir)) => {
                let audit_dir = PathBuf::from(audit_dir);
                std::fs::create_dir_all(&audit_dir).map_err(Error::io("create", &audit_dir))?;
                let name = self
                    .dir
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (
                    audit_dir.join(format!("{name}.log")),
                    "\n  userGroups: [\"system:serviceaccounts:capz-system\"]\n- level: None",
                )
            }
            (None, None) => return Ok(Vec::new()),
        };
        let policy = self.dir.join("audit-policy.yaml");
        pki::write(
            &policy,
            &format!(
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata{who}\n"
            ),
        )?;
        Ok(vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            "--audit-log-format=json".to_owned(),
            // Never rotated (the default rotates at 100 MB), so that a reader sees every request.
            "--audit-log-maxsize=1000000".to_owned(),
        ])
    }

    /// Starts one more process beside the plane's; it stops with the plane.
    ///
    /// # Errors
    /// When it cannot be started.
    pub fn spawn(&mut self, name: &str, program: &Path, args: &[String]) -> Result<()> {
        self.launch(
            name,
            Launch {
                program: program.to_owned(),
                args: args.to_vec(),
                env: Vec::new(),
                container: None,
            },
        )
    }

    /// Has the Cluster API managers [`Plane::start_cluster_api`] starts reach workload clusters
    /// through the HTTPS proxy at `url` (`http://host:port`), as a management cluster reaches
    /// them through its network: the emulator's proxy routes each control plane endpoint to the
    /// simulated API server behind it. Loopback addresses, the plane's own, are never proxied.
    pub fn reach_workload_clusters_through(&mut self, url: &str) {
        self.workload_proxy = Some(url.to_owned());
    }

    /// The proxy of [`Plane::reach_workload_clusters_through`], as environment variables.
    pub(crate) fn workload_proxy_env(&self) -> Vec<(String, String)> {
        self.workload_proxy
            .iter()
            .flat_map(|url| {
                [
                    ("HTTPS_PROXY".to_owned(), url.clone()),
                    ("NO_PROXY".to_owned(), "127.0.0.1,localhost,::1".to_owned()),
                ]
            })
            .collect()
    }

    pub(crate) fn launch(&mut self, name: &str, launch: Launch) -> Result<()> {
        let log = self.dir.join("logs").join(format!("{name}.log"));
        let process = Process::launch(name, launch, &log, Some(self.watchdog.clone()))?;
        self.processes.push(process);
        Ok(())
    }

    /// Kills the process called `name` at once (`SIGKILL`: no orderly shutdown, as when a node
    /// dies), returning how it was started so that [`Plane::relaunch`] can start it again.
    ///
    /// # Errors
    /// When the plane runs no process of that name.
    pub fn kill(&mut self, name: &str) -> Result<()> {
        let position = self
            .processes
            .iter()
            .position(|process| process.name() == name)
            .ok_or_else(|| Error::NoSuchProcess(name.to_owned()))?;
        let process = self.processes.remove(position);
        self.stopped.push((name.to_owned(), process.launched().clone()));
        drop(process);
        Ok(())
    }

    /// Stops the process called `name` as a kubelet stops a Pod: SIGTERM, and SIGKILL if it has
    /// not exited after `grace`.
    ///
    /// # Errors
    /// When the plane runs no process of that name.
    pub fn stop(&mut self, name: &str, grace: std::time::Duration) -> Result<()> {
        let position = self
            .processes
            .iter()
            .position(|process| process.name() == name)
            .ok_or_else(|| Error::NoSuchProcess(name.to_owned()))?;
        self.processes.remove(position).terminate(grace);
        Ok(())
    }

    /// Starts a process [`Plane::kill`] stopped again, the way it was started first; its log
    /// goes on in the same file.
    ///
    /// # Errors
    /// When no process of that name was killed, or it cannot start.
    pub fn relaunch(&mut self, name: &str) -> Result<()> {
        let position = self
            .stopped
            .iter()
            .position(|(stopped, _)| stopped == name)
            .ok_or_else(|| Error::NoSuchProcess(name.to_owned()))?;
        let (_, launch) = self.stopped.remove(position);
        self.launch(name, launch)
    }

    fn write_kubeconfig(&self, token: &str) -> Result<()> {
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: capz-test\n  cluster:\n    server: {url}\n    certificate-authority: {ca}\nusers:\n- name: admin\n  user:\n    token: {token}\ncontexts:\n- name: capz-test\n  context:\n    cluster: capz-test\n    user: admin\ncurrent-context: capz-test\n",
            url = self.url,
            ca = self.ca_file.display(),
        );
        pki::write(&self.kubeconfig, &kubeconfig)
    }

    /// Polls `/readyz` until the API server says it is ready.
    async fn wait_ready(&mut self) -> Result<Client> {
        let client = self.client().await?;
        self.wait_until(
            "kube-apiserver was not ready",
            async || match http::Request::get("/readyz").body(Vec::new()) {
                Ok(request) => client.request_text(request).await.is_ok(),
                Err(_) => false,
            },
        )
        .await?;
        Ok(client)
    }

    /// Waits until something accepts connections on loopback `port`: how the plane knows a
    /// process it started (`what`) serves.
    ///
    /// # Errors
    /// When one of the plane's processes stops meanwhile, or a minute passes.
    pub async fn wait_listening(&mut self, what: &str, port: u16) -> Result<()> {
        self.wait_until(&format!("{what} did not listen on port {port}"), async || {
            tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok()
        })
        .await
    }

    /// Probes until `ready` holds, failing as soon as a process of the plane stops, or with
    /// `failure` (and where the logs are) after a minute.
    pub(crate) async fn wait_until(
        &mut self,
        failure: &str,
        mut ready: impl AsyncFnMut() -> bool,
    ) -> Result<()> {
        let started = Instant::now();
        while !ready().await {
            self.check_running()?;
            if started.elapsed() > START_TIMEOUT {
                return Err(Error::Timeout {
                    what: format!("{failure} (see {})", self.dir.join("logs").display()),
                    seconds: START_TIMEOUT.as_secs(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The processes running for the plane, in the order they started.
    #[must_use]
    pub fn processes(&self) -> &[Process] {
        &self.processes
    }

    /// Fails with the end of its log when one of the plane's processes has stopped.
    ///
    /// # Errors
    /// [`Error::Exited`] for the first that has.
    pub fn check_running(&mut self) -> Result<()> {
        self.processes.iter().try_for_each(Process::check_running)
    }

    /// A client acting as the cluster's administrator.
    ///
    /// # Errors
    /// When the kubeconfig cannot be read.
    pub async fn client(&self) -> Result<Client> {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }

    /// The API server's URL, also the service-account token issuer.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The administrator's kubeconfig, for kubectl, clusterctl and controllers.
    #[must_use]
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The CA certificate file every server of the plane is signed by.
    #[must_use]
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The CA, to sign serving certificates of webhook servers run beside the plane.
    #[must_use]
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The plane's directory: certificates, kubeconfig, etcd's data and `logs/`.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Held by a test that only touches its own namespace: such tests run side by side.
    pub async fn namespaced(&self) -> RwLockReadGuard<'_, ()> {
        self.tests.read().await
    }

    /// Held by a test that creates cluster-scoped objects (CRDs, webhook configurations): it runs
    /// alone.
    pub async fn cluster_scoped(&self) -> RwLockWriteGuard<'_, ()> {
        self.tests.write().await
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        // The watchdog first: the processes are stopped here, in order.
        self.watchdog.stop();
        // The API server first, so it does not log etcd's disappearance.
        while let Some(process) = self.processes.pop() {
            drop(process);
        }
        if self.owns_dir {
            // To read what happened after a test: its processes' logs, kept where asked.
            if let Some(keep) = std::env::var_os("CAPZ_KEEP_LOGS") {
                let kept = PathBuf::from(keep).join(self.dir.file_name().unwrap_or_default());
                if std::fs::create_dir_all(&kept).is_ok() {
                    let _ = std::fs::rename(self.dir.join("logs"), kept.join("logs"));
                    eprintln!("harness: the plane's logs are kept in {}", kept.display());
                }
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Lets anyone read the issuer's discovery document and signing keys, as a cloud's OIDC issuer
/// does: Azure's token service fetches them without credentials.
async fn allow_anonymous_issuer_discovery(client: &Client) -> Result<()> {
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "capz-harness:service-account-issuer-discovery"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:service-account-issuer-discovery",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}],
    }))
    .map_err(|err| Error::Manifest {
        path: "the issuer discovery binding".into(),
        message: err.to_string(),
    })?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(
            binding.metadata.name.as_deref().unwrap_or_default(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&binding),
        )
        .await?;
    Ok(())
}

/// A new directory for one plane. The directories of planes whose test process has exited
/// without dropping them (a plane held in a `static` never is) are removed first: a plane's data
/// and logs can take a gigabyte.
fn fresh_dir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    remove_abandoned_dirs(&base);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let dir = base.join(format!("capz-plane-{}-{nanos:09}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;
    Ok(dir)
}

/// Removes the `capz-plane-<pid>-*` directories under `base` whose process no longer runs.
fn remove_abandoned_dirs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|name| name.strip_prefix("capz-plane-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Ports nobody listens on now, below the kernel's ephemeral range: ports in that range are also
/// the local ends of outgoing connections, which could take one between this check and the
/// process that is to listen on it. A port is handed out once per test process, so planes started
/// side by side never get the same one. Another process could still take one in between; the
/// process that was to listen on it then fails to start and says so.
///
/// # Errors
/// When no such port can be bound.
pub fn free_ports(count: usize) -> Result<Vec<u16>> {
    use std::sync::{Mutex, PoisonError};
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let (low, high) = below_ephemeral_range();
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    let mut ports = Vec::with_capacity(count);
    let mut candidate = low + random_u16()? % (high - low);
    for _ in low..high {
        if ports.len() == count {
            break;
        }
        candidate = if candidate + 1 >= high { low } else { candidate + 1 };
        if handed_out.contains(&candidate) {
            continue;
        }
        // Some processes listen on every interface: the port must be free on all of them.
        if std::net::TcpListener::bind(("0.0.0.0", candidate)).is_ok() {
            handed_out.push(candidate);
            ports.push(candidate);
        }
    }
    if ports.len() < count {
        return Err(Error::io("bind", "a port below the ephemeral range")(
            std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("fewer than {count} free ports between {low} and {high}"),
            ),
        ));
    }
    Ok(ports)
}

/// The ports to hand out: from 15000 up to where the kernel's ephemeral range starts.
fn below_ephemeral_range() -> (u16, u16) {
    const LOW: u16 = 15_000;
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    (LOW, start.max(LOW + 1_000))
}

fn random_u16() -> Result<u16> {
    Ok(u16::from_le_bytes(random_bytes()?))
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    use ring::rand::SecureRandom;
    let mut bytes = [0_u8; N];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Certificate(rcgen::Error::RingUnspecified))?;
    Ok(bytes)
}

/// 32 random bytes, hex-encoded.
fn random_token() -> Result<String> {
    let bytes: [u8; 32] = random_bytes()?;
    Ok(bytes.iter().fold(String::with_capacity(64), |mut hex, byte| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{byte:02x}");
        hex
    }))
}
