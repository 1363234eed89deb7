//! What the benchmark programs (`benches/`) share: reading their command line and running them,
//! a management plane with capz-rs or with CAPZ and ASO, counting ARM calls, waiting out the
//! steady state, and the memory and CPU time of processes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use arm_emulator::{Config, LoggedRequest, Running};
use capz_harness::Plane;
use capz_harness::peer::{ASO_CONTROLLER, CAPZ_MANAGER, PeerOptions};
use kube::Client;

use crate::{Environment, PeerEnvironment, TestResult};

/// capz-rs's Deployments that reconcile (the webhook server does not): those a benchmark gives
/// its `--sync-period`.
pub const CONTROLLERS: [&str; 8] = [
    "capz-network",
    "capz-loadbalancer",
    "capz-privatedns",
    "capz-bastion",
    "capz-compute",
    "capz-vmss",
    "capz-aks",
    "capz-identity",
];

/// Which implementation a management plane runs.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub enum Side {
    #[default]
    CapzRs,
    Capz,
    /// No provider but capz-webhooks: the benchmark itself marks each AzureCluster and
    /// AzureMachine ready with the fewest writes a provider makes, to show what the rest of the
    /// plane takes on its own.
    StandIn,
}

impl Side {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::CapzRs => "capz-rs",
            Self::Capz => "CAPZ + ASO",
            Self::StandIn => "stand-in provider",
        }
    }

    /// Whether the plane's process `name` is this side's provider.
    #[must_use]
    pub fn is_provider(self, name: &str) -> bool {
        match self {
            Self::CapzRs => name.starts_with("capz-"),
            Self::Capz => name == CAPZ_MANAGER || name == ASO_CONTROLLER,
            Self::StandIn => name == "capz-webhooks",
        }
    }
}

/// A management plane running one side, against an emulator of its own.
pub enum Management {
    CapzRs(Box<Environment>),
    Capz(Box<PeerEnvironment>),
    StandIn(Box<Environment>),
}

impl Management {
    /// Starts `side` against an emulator configured by `config`, every controller with
    /// `sync_period` (seconds) if given and with `flags` (of CAPZ's manager's flag set, which
    /// capz-rs's controllers accept too), the API server recording every request in `audit_log`
    /// if given.
    ///
    /// # Errors
    /// When any part does not start.
    pub async fn start(
        side: Side,
        config: Config,
        sync_period: Option<u64>,
        flags: &[String],
        audit_log: Option<&Path>,
    ) -> TestResult<Self> {
        Ok(match side {
            Side::CapzRs | Side::StandIn => {
                let mut plane_options = capz_harness::Options::with_all_crds()?;
                plane_options.audit_log = audit_log.map(Path::to_owned);
                let plane = Plane::start_with(plane_options).await?;
                if side == Side::StandIn {
                    return Ok(Self::StandIn(Box::new(
                        Environment::start_on(plane, config, Some(&["webhooks"]), &[]).await?,
                    )));
                }
                let period = sync_period.map(|seconds| format!("--sync-period={seconds}s"));
                let arguments: Vec<&String> = period.iter().chain(flags).collect();
                let args: Vec<(&str, &str)> = CONTROLLERS
                    .iter()
                    .flat_map(|controller| arguments.iter().map(|argument| (*controller, argument.as_str())))
                    .collect();
                Self::CapzRs(Box::new(Environment::start_on(plane, config, None, &args).await?))
            }
            Side::Capz => {
                let period = sync_period.map(Duration::from_secs);
                let options = PeerOptions {
                    capz_sync_period: period,
                    aso_sync_period: period,
                    capz_flags: flags.to_vec(),
                };
                Self::Capz(Box::new(
                    PeerEnvironment::start(config, &options, audit_log.map(Path::to_owned)).await?,
                ))
            }
        })
    }

    #[must_use]
    pub fn side(&self) -> Side {
        match self {
            Self::CapzRs(_) => Side::CapzRs,
            Self::Capz(_) => Side::Capz,
            Self::StandIn(_) => Side::StandIn,
        }
    }

    /// The plane, its client and the emulator, whichever side runs.
    fn parts(&self) -> (&Plane, &Client, &Running) {
        match self {
            Self::CapzRs(environment) | Self::StandIn(environment) => {
                (&environment.plane, &environment.client, &environment.azure)
            }
            Self::Capz(environment) => (&environment.plane, &environment.client, &environment.azure),
        }
    }

    #[must_use]
    pub fn plane(&self) -> &Plane {
        self.parts().0
    }

    #[must_use]
    pub fn client(&self) -> &Client {
        self.parts().1
    }

    #[must_use]
    pub fn azure(&self) -> &Running {
        self.parts().2
    }

    /// Where each provider process serves `/metrics`.
    #[must_use]
    pub fn metrics(&self) -> Vec<(String, std::net::SocketAddr)> {
        match self {
            Self::CapzRs(environment) | Self::StandIn(environment) => environment
                .capz
                .processes()
                .into_iter()
                .filter_map(|name| Some((name.to_owned(), environment.capz.metrics_address(name)?)))
                .collect(),
            Self::Capz(environment) => vec![
                (CAPZ_MANAGER.to_owned(), environment.peer.capz_metrics),
                (ASO_CONTROLLER.to_owned(), environment.peer.aso_metrics),
            ],
        }
    }
}

/// Who made a request: ASO says so in its User-Agent (`aso-controller/...`), CAPZ with
/// `cluster-api-provider-azure/...`, capz-rs with `capz-rs/<version> <controller>`.
#[must_use]
pub fn caller(request: &LoggedRequest) -> String {
    let agent = request.user_agent.as_deref().unwrap_or("-");
    if agent.starts_with("capz-rs/") {
        return agent.split_whitespace().nth(1).unwrap_or("capz-rs").to_owned();
    }
    for (mark, name) in [
        ("aso-controller/", ASO_CONTROLLER),
        ("cluster-api-provider-azure/", CAPZ_MANAGER),
    ] {
        if agent.contains(mark) {
            return name.to_owned();
        }
    }
    agent.split('/').next().unwrap_or("-").to_owned()
}

/// Calls counted by kind: ARM calls by method, Kubernetes API requests by verb and resource.
pub type Calls = BTreeMap<String, usize>;

/// `requests` counted by method.
#[must_use]
pub fn by_method<'a>(requests: impl IntoIterator<Item = &'a LoggedRequest>) -> Calls {
    let mut calls = Calls::new();
    for request in requests {
        *calls.entry(request.method.clone()).or_default() += 1;
    }
    calls
}

/// Every call of `calls`, whatever its method.
#[must_use]
pub fn total(calls: &Calls) -> usize {
    calls.values().sum()
}

/// The calls of `calls` with `method`.
#[must_use]
pub fn count(calls: &Calls, method: &str) -> usize {
    calls.get(method).copied().unwrap_or_default()
}

/// `count` shared out over `of` (machines, clusters, sync periods).
#[must_use]
#[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
pub fn per(count: usize, of: u64) -> f64 {
    count as f64 / of.max(1) as f64
}

/// Kubernetes API requests by client, each counted by verb and resource
/// (`patch azuremachines/status`), from the API server's audit log `log` past its first `skip`
/// lines. A client is a ServiceAccount by its name (capz-rs's controllers), else its `User-Agent`
/// up to the first `/` (client-go names a client after its binary).
#[must_use]
pub fn kube_calls(log: &Path, skip: usize) -> BTreeMap<String, Calls> {
    use std::io::BufRead as _;

    let mut clients: BTreeMap<String, Calls> = BTreeMap::new();
    let Ok(file) = std::fs::File::open(log) else {
        return clients;
    };
    let events = std::io::BufReader::new(file)
        .lines()
        .skip(skip)
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(&line).ok())
        .filter(|event| event["stage"] == "ResponseComplete");
    for event in events {
        let user = event["user"]["username"].as_str().unwrap_or_default();
        let client = match user.strip_prefix("system:serviceaccount:") {
            Some(account) => account.rsplit(':').next().unwrap_or(account),
            None => event["userAgent"]
                .as_str()
                .and_then(|agent| agent.split('/').next())
                .unwrap_or("-"),
        };
        let object = &event["objectRef"];
        let resource = match (object["resource"].as_str(), object["subresource"].as_str()) {
            (Some(resource), Some(subresource)) => format!("{resource}/{subresource}"),
            (Some(resource), None) => resource.to_owned(),
            (None, _) => event["requestURI"].as_str().unwrap_or("-").to_owned(),
        };
        let verb = event["verb"].as_str().unwrap_or("-");
        *clients
            .entry(client.to_owned())
            .or_default()
            .entry(format!("{verb} {resource}"))
            .or_default() += 1;
    }
    clients
}

/// How many lines the file at `path` has (none if it cannot be read).
#[must_use]
pub fn line_count(path: &Path) -> usize {
    use std::io::BufRead as _;

    std::fs::File::open(path).map_or(0, |file| std::io::BufReader::new(file).lines().count())
}

/// The workers of the cluster `cluster` as the convergence benchmarks write them: a
/// MachineDeployment `<cluster>-workers` of `machines` machines (and its AzureMachineTemplate)
/// taking its bootstrap data from the Secret `<cluster>-bootstrap` (`dataSecretName`), which comes
/// first, so that every machine gets its VM without a control plane to bootstrap from.
#[must_use]
pub fn workers_from_secret(cluster: &str, machines: u32) -> String {
    let bootstrap = format!("{cluster}-bootstrap");
    [
        crate::bootstrap_secret(&bootstrap),
        crate::machine_deployment(&format!("{cluster}-workers"), cluster, machines, &bootstrap),
    ]
    .join("---\n")
}

/// Waits one sync period for what converged to settle (the passes still running when the last
/// object turned Ready, and their requeues), takes `mark` (the time, or the emulator's counts) at
/// the start of the steady state, and returns it once `periods` more sync periods have passed:
/// what happened since `mark` is the cost of that many periods.
pub async fn steady_state<T>(sync_period: Duration, periods: u32, mark: impl FnOnce() -> T) -> T {
    tokio::time::sleep(sync_period).await;
    let start = mark();
    tokio::time::sleep(sync_period * periods).await;
    start
}

/// A bench program's `--flag value` pairs.
pub type Flags = Vec<(String, u32)>;

/// The `--flag value` pairs of a bench program's command line, each value a number (Cargo's own
/// `--bench` left out), in their order.
///
/// # Errors
/// When a flag has no value or its value is not a number.
pub fn bench_flags() -> Result<Flags, String> {
    bench_args(&[]).map(|(flags, _)| flags)
}

/// [`bench_flags`], where the flags among `switches` take no value: those given are returned
/// apart.
///
/// # Errors
/// As [`bench_flags`].
pub fn bench_args(switches: &[&str]) -> Result<(Flags, Vec<String>), String> {
    let mut flags = Vec::new();
    let mut given = Vec::new();
    let mut args = std::env::args().skip(1).filter(|arg| arg != "--bench");
    while let Some(flag) = args.next() {
        if switches.contains(&flag.as_str()) {
            given.push(flag);
            continue;
        }
        let value = args
            .next()
            .ok_or(format!("{flag} needs a value"))?
            .parse()
            .map_err(|err| format!("{flag}: {err}"))?;
        flags.push((flag, value));
    }
    Ok((flags, given))
}

/// The `main` of a bench program `name`: reads its options with `options`, then runs `bench` with
/// them on a multi-threaded runtime; a problem is printed after the name, and a bad command line
/// exits with 2.
pub fn bench_main<O>(
    name: &str,
    options: impl FnOnce() -> Result<O, String>,
    bench: impl AsyncFnOnce(O) -> TestResult,
) -> std::process::ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(problem) => {
            eprintln!("{name}: {problem}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("{name}: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name}: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A process's resident set, in MiB, as `/proc` tells it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// The peak resident set (`VmHWM`).
    pub peak: f64,
    /// The resident set now (`VmRSS`).
    pub current: f64,
    /// Of the current, anonymous memory (heap and stacks).
    pub anonymous: f64,
    /// Of the current, pages of files (the executable and its libraries).
    pub file: f64,
}

/// The resident set of process `pid`; zeros for a process that is gone.
#[must_use]
pub fn process_memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    Memory {
        peak: field("VmHWM:"),
        current: field("VmRSS:"),
        anonymous: field("RssAnon:"),
        file: field("RssFile:"),
    }
}

/// The CPU time process `pid` has used so far, user and system, in seconds (its threads
/// included, not its children); zero for a process that is gone.
#[must_use]
pub fn process_cpu_seconds(pid: u32) -> f64 {
    // `/proc/<pid>/stat` counts in clock ticks, which Linux fixes at 100 a second for user space
    // (`USER_HZ`) whatever the kernel's own tick rate.
    const TICKS_PER_SECOND: f64 = 100.0;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name (field 2) is in parentheses and may hold spaces; utime and stime are
    // fields 14 and 15, the 12th and 13th after it.
    let Some((_, after_name)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let mut fields = after_name.split_whitespace().skip(11);
    let mut ticks = || {
        fields
            .next()
            .and_then(|ticks| ticks.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks() + ticks()) / TICKS_PER_SECOND
}

/// Prints a row per `(name, pid)`: peak resident set, the current one split into anonymous and
/// file-backed memory (MiB), and the CPU seconds used so far.
pub fn print_usage<'a>(processes: impl IntoIterator<Item = (&'a str, u32)>) {
    println!(
        "  {:<28} {:>9} {:>26} {:>9}",
        "process", "peak MiB", "now MiB (anon + file)", "CPU s"
    );
    for (name, pid) in processes {
        let memory = process_memory(pid);
        println!(
            "  {name:<28} {:>9.1} {:>26} {:>9.1}",
            memory.peak,
            format!(
                "{:.1} ({:.1} + {:.1})",
                memory.current, memory.anonymous, memory.file
            ),
            process_cpu_seconds(pid)
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_memory_and_cpu_time() {
        let me = std::process::id();
        // Spin until the tick counter has moved at least once.
        let started = std::time::Instant::now();
        while super::process_cpu_seconds(me) <= 0.0 && started.elapsed().as_secs() < 5 {
            std::hint::spin_loop();
        }
        assert!(super::process_cpu_seconds(me) > 0.0);
        assert!(super::process_memory(me).peak > 0.0);
        assert!(super::process_cpu_seconds(u32::MAX) <= 0.0);
    }
}
