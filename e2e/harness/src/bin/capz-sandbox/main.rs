//! The sandbox: a management plane that keeps running for people to use with kubectl and
//! clusterctl: kube-apiserver with every CRD, Cluster API's managers, and the ARM emulator.
//!
//! Usage: `capz-sandbox up|down|status|demo [--dir DIR] [--port PORT] [--emulator-port PORT]
//! [--proxy-port PORT] [--emulator-config FILE] [--name NAME]`
//!
//! - `up` starts it in the background (or says it already runs), waits until it serves, and prints
//!   how to reach it;
//! - `demo` creates a cluster of the default flavor called `--name` (default `demo`) in the running
//!   sandbox and follows it until it converges (see `demo.rs`);
//! - `down` stops it and every process it started;
//! - `status` says what runs, with the log of each process and how often it was restarted (a
//!   process that exits is started again, with the kubelet's backoff);
//! - `--dir`: where its files go: kubeconfig, certificates, `logs/` (default: `sandbox` in the
//!   capz-rs cache directory);
//! - `--port`: the API server's port (default 6443); `--emulator-port`: the ARM emulator's (default
//!   8443); `--proxy-port`: the emulator's HTTPS proxy's (default 8444), through which Cluster
//!   API's managers, and you, reach the workload clusters whose machines boot in the sandbox (the
//!   workload cluster simulator, `e2e/workload`);
//! - `--emulator-config`: the ARM emulator's configuration (its README's `Configure it`):
//!   principals, quotas, SKU restrictions, capacity, latencies, seeded resources. Whatever it says,
//!   the emulator trusts the sandbox's own service-account issuer (its CA among `issuerCas`), so
//!   identities made through ARM with federated credentials for the sandbox's service accounts
//!   sign in, and answers with `Retry-After: 1` unless the file sets `retryAfterSeconds`.
//!
//! `serve` (what `up` runs in the background) holds the processes until it gets SIGTERM or SIGINT.

mod demo;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use capz_harness::{AzureEndpoint, Options, Plane};
use serde::{Deserialize, Serialize};

const USAGE: &str = "usage: capz-sandbox up|down|status|demo [--dir DIR] [--port PORT] [--emulator-port PORT] [--proxy-port PORT] [--emulator-config FILE] [--name NAME]";

struct Args {
    command: String,
    dir: PathBuf,
    port: u16,
    emulator_port: u16,
    proxy_port: u16,
    emulator_config: Option<PathBuf>,
    name: String,
}

/// What a running sandbox writes for `status` and `down`.
#[derive(Serialize, Deserialize)]
struct State {
    pid: u32,
    kubeconfig: PathBuf,
    api_server: String,
    emulator: String,
    emulator_ca: PathBuf,
    /// The emulator's HTTPS proxy, which routes workload clusters' endpoints.
    proxy: String,
    kube_bins: PathBuf,
    capi_bins: PathBuf,
    clusterctl_config: PathBuf,
    processes: Vec<Running>,
}

#[derive(Serialize, Deserialize, PartialEq, Eq)]
struct Running {
    name: String,
    pid: u32,
    log: PathBuf,
    /// How often it was started again after it exited.
    #[serde(default)]
    restarts: u32,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        command: args.next().ok_or("a command is needed")?,
        dir: capz_harness::cache_dir().join("sandbox"),
        port: 6443,
        emulator_port: 8443,
        proxy_port: 8444,
        emulator_config: None,
        name: "demo".to_owned(),
    };
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--dir" => parsed.dir = PathBuf::from(value("--dir")?),
            "--port" => parsed.port = value("--port")?.parse().map_err(|err| format!("--port: {err}"))?,
            "--emulator-port" => {
                parsed.emulator_port = value("--emulator-port")?
                    .parse()
                    .map_err(|err| format!("--emulator-port: {err}"))?;
            }
            "--proxy-port" => {
                parsed.proxy_port = value("--proxy-port")?
                    .parse()
                    .map_err(|err| format!("--proxy-port: {err}"))?;
            }
            "--emulator-config" => parsed.emulator_config = Some(PathBuf::from(value("--emulator-config")?)),
            "--name" => parsed.name = value("--name")?,
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("capz-sandbox: {problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match args.command.as_str() {
        "up" => up(&args),
        "down" => down(&args.dir),
        "status" => {
            status(&args.dir);
            Ok(())
        }
        "serve" => serve(&args),
        "demo" => match running(&args.dir) {
            Some(state) => demo::demo(&state, &args.dir, &args.name),
            None => Err("the sandbox is not running: `just up` starts it".to_owned()),
        },
        other => Err(format!("unknown command {other}\n{USAGE}")),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("capz-sandbox: {problem}");
            ExitCode::FAILURE
        }
    }
}

fn state_file(dir: &Path) -> PathBuf {
    dir.join("sandbox.json")
}

/// The state of the sandbox in `dir` if its supervisor still runs.
fn running(dir: &Path) -> Option<State> {
    let state: State = serde_json::from_slice(&std::fs::read(state_file(dir)).ok()?).ok()?;
    alive(state.pid).then_some(state)
}

fn alive(pid: u32) -> bool {
    // A zombie has finished; only its exit status waits to be collected.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .trim_start()
            .starts_with('Z')
    })
}

fn up(args: &Args) -> Result<(), String> {
    if let Some(state) = running(&args.dir) {
        println!("The sandbox already runs.");
        print_usage(&state);
        return Ok(());
    }
    for (port, what) in [
        (args.port, "--port"),
        (args.emulator_port, "--emulator-port"),
        (args.proxy_port, "--proxy-port"),
    ] {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            return Err(format!(
                "port {port} on 127.0.0.1 is taken by another program; stop it or choose another with {what}"
            ));
        }
    }
    // A configuration that cannot be read stops the start before anything runs.
    let emulator_config = match &args.emulator_config {
        Some(path) => {
            let absolute = std::fs::canonicalize(path)
                .map_err(|err| format!("--emulator-config {}: {err}", path.display()))?;
            emulator_config(Some(&absolute), "")?;
            Some(absolute)
        }
        None => None,
    };
    // A fresh start: what a previous sandbox stored has no processes left to serve it.
    let _ = std::fs::remove_dir_all(&args.dir);
    let logs = args.dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|err| format!("cannot create {}: {err}", logs.display()))?;
    let log = logs.join("sandbox.log");
    let out = std::fs::File::create(&log).map_err(|err| format!("cannot create {}: {err}", log.display()))?;
    let err = out.try_clone().map_err(|err| err.to_string())?;
    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    let mut supervisor = {
        use std::os::unix::process::CommandExt as _;
        Command::new(exe)
            .arg("serve")
            .args(["--dir".as_ref(), args.dir.as_os_str()])
            .args([
                "--port",
                &args.port.to_string(),
                "--emulator-port",
                &args.emulator_port.to_string(),
                "--proxy-port",
                &args.proxy_port.to_string(),
            ])
            .args(
                emulator_config
                    .iter()
                    .flat_map(|path| ["--emulator-config".as_ref(), path.as_os_str()]),
            )
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            // Its own process group: a terminal's hang-up or Ctrl-C is not for it.
            .process_group(0)
            .spawn()
            .map_err(|err| format!("cannot start the sandbox: {err}"))?
    };
    let started = Instant::now();
    loop {
        if let Some(state) = running(&args.dir) {
            println!(
                "The sandbox runs (started in {:.1} s).",
                started.elapsed().as_secs_f64()
            );
            print_usage(&state);
            return Ok(());
        }
        if let Ok(Some(status)) = supervisor.try_wait() {
            return Err(format!(
                "the sandbox stopped while starting ({status}); the end of {}:\n{}",
                log.display(),
                capz_harness::tail(&log, 30)
            ));
        }
        if started.elapsed() > Duration::from_mins(3) {
            return Err(format!(
                "the sandbox did not start in 3 minutes; see {}",
                logs.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn print_usage(state: &State) {
    let kubeconfig = state.kubeconfig.display();
    let config = state.clusterctl_config.display();
    println!(
        "\n  API server:   {}\n  ARM emulator: {} (CA: {})\n  its proxy:    {} (routes workload clusters' endpoints)\n  logs:         {}\n\nUse it with:\n  export KUBECONFIG={kubeconfig} PATH=\"{}:{}:$PATH\" CLUSTERCTL_DISABLE_VERSIONCHECK=true\n  kubectl get crds\n  kubectl get providers -A    # clusterctl's inventory: Cluster API and capz-rs\n  clusterctl generate cluster <name> --infrastructure azure --config {config}\n  kubectl get cluster-api -A\n  clusterctl describe cluster <name>\n  clusterctl upgrade plan --config {config}\n  clusterctl get kubeconfig <name> > <name>.kubeconfig\n  HTTPS_PROXY={} kubectl --kubeconfig <name>.kubeconfig get nodes\n\n`just demo` creates a cluster of the default flavor and follows it until it is Available.\nStop it with `just down`; `just status` shows what runs.",
        state.api_server,
        state.emulator,
        state.emulator_ca.display(),
        state.proxy,
        state.kubeconfig.with_file_name("logs").display(),
        state.kube_bins.display(),
        state.capi_bins.display(),
        state.proxy,
    );
}

fn down(dir: &Path) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(state_file(dir)) else {
        println!("The sandbox is not running.");
        return Ok(());
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|err| err.to_string())?;
    signal("TERM", state.pid);
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(state.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Whatever outlived an orderly stop is killed, so nothing stays behind.
    for pid in std::iter::once(state.pid).chain(state.processes.iter().map(|process| process.pid)) {
        if alive(pid) {
            signal("KILL", pid);
        }
    }
    let _ = std::fs::remove_file(state_file(dir));
    println!("The sandbox is stopped.");
    Ok(())
}

fn signal(name: &str, pid: u32) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status();
}

fn status(dir: &Path) {
    let Some(state) = running(dir) else {
        println!("The sandbox is not running (`just up` starts it).");
        return;
    };
    println!("The sandbox runs (supervisor pid {}):", state.pid);
    for process in &state.processes {
        let health = if alive(process.pid) { "running" } else { "STOPPED" };
        println!(
            "  {:<32} pid {:<8} {health:<8} restarts {:<3} log {}",
            process.name,
            process.pid,
            process.restarts,
            process.log.display()
        );
    }
    print_usage(&state);
}

/// Runs the sandbox in the foreground until SIGTERM or SIGINT.
fn serve(args: &Args) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let mut options = Options::with_all_crds().map_err(|err| err.to_string())?;
        options.dir = Some(args.dir.clone());
        options.port = Some(args.port);
        let started = Instant::now();
        let mut plane = Plane::start_with(options).await.map_err(|err| err.to_string())?;
        eprintln!(
            "capz-sandbox: etcd and kube-apiserver serve every CRD after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let (emulator, emulator_ca) = start_emulator(
            &mut plane,
            args.emulator_port,
            args.proxy_port,
            args.emulator_config.as_deref(),
        )
        .await?;
        let proxy = format!("http://127.0.0.1:{}", args.proxy_port);
        plane.reach_workload_clusters_through(&proxy);
        let clusterctl = plane.start_cluster_api().await.map_err(|err| err.to_string())?;
        eprintln!(
            "capz-sandbox: clusterctl installed Cluster API, its managers serve after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        plane
            .start_workload_simulator(&emulator, &emulator_ca, Duration::from_millis(200))
            .await
            .map_err(|err| err.to_string())?;
        let endpoint = AzureEndpoint {
            url: emulator.clone(),
            ca_file: emulator_ca.clone(),
            imds_url: None,
        };
        // Kept until the end: it refreshes the controllers' tokens.
        let _capz = plane
            .start_capz(&clusterctl, &endpoint)
            .await
            .map_err(|err| err.to_string())?;
        eprintln!(
            "capz-sandbox: clusterctl installed capz-rs, its controllers and webhooks serve after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut state = State {
            pid: std::process::id(),
            kubeconfig: plane.kubeconfig().to_owned(),
            api_server: plane.url().to_owned(),
            emulator,
            emulator_ca,
            proxy,
            kube_bins: capz_harness::KubeBinaries::locate()
                .map(|bins| bins.dir().to_owned())
                .map_err(|err| err.to_string())?,
            capi_bins: capz_harness::cluster_api::binaries().map_err(|err| err.to_string())?,
            clusterctl_config: clusterctl.config().to_owned(),
            processes: running_processes(&plane),
        };
        write_state(&args.dir, &state)?;
        eprintln!("capz-sandbox: serving; SIGTERM or SIGINT stops it");
        // Restarted processes get new ids: `status` and `down` read them from the state file.
        let stop = wait_for_stop();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                stopped = &mut stop => {
                    stopped?;
                    break;
                }
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    let now = running_processes(&plane);
                    if now != state.processes {
                        state.processes = now;
                        write_state(&args.dir, &state)?;
                    }
                }
            }
        }
        drop(plane);
        let _ = std::fs::remove_file(state_file(&args.dir));
        Ok(())
    })
}

/// The plane's processes as the state file lists them.
fn running_processes(plane: &Plane) -> Vec<Running> {
    plane
        .processes()
        .iter()
        .map(|process| Running {
            name: process.name().to_owned(),
            pid: process.id(),
            log: process.log().to_owned(),
            restarts: process.restarts(),
        })
        .collect()
}

fn write_state(dir: &Path, state: &State) -> Result<(), String> {
    let json = serde_json::to_vec_pretty(state).map_err(|err| err.to_string())?;
    std::fs::write(state_file(dir), json).map_err(|err| err.to_string())
}

/// Starts the ARM emulator built beside this program, with its HTTPS proxy on `proxy_port`, the
/// user's configuration (if any) and the sandbox's additions; returns its URL and CA file.
async fn start_emulator(
    plane: &mut Plane,
    port: u16,
    proxy_port: u16,
    user_config: Option<&Path>,
) -> Result<(String, PathBuf), String> {
    let binary = capz_harness::capz::built("arm-emulator").map_err(|err| err.to_string())?;
    let ca = plane.dir().join("arm-emulator-ca.pem");
    let config = plane.dir().join("arm-emulator.yaml");
    let plane_ca = std::fs::read_to_string(plane.ca_file())
        .map_err(|err| format!("cannot read {}: {err}", plane.ca_file().display()))?;
    let merged = emulator_config(user_config, &plane_ca)?;
    std::fs::write(&config, merged).map_err(|err| format!("cannot write {}: {err}", config.display()))?;
    let args = [
        "--listen".to_owned(),
        format!("127.0.0.1:{port}"),
        "--ca-file".to_owned(),
        ca.display().to_string(),
        "--config".to_owned(),
        config.display().to_string(),
        "--proxy-listen".to_owned(),
        format!("127.0.0.1:{proxy_port}"),
    ];
    plane
        .spawn("arm-emulator", &binary, &args)
        .map_err(|err| err.to_string())?;
    plane
        .wait_listening("the ARM emulator", port)
        .await
        .map_err(|err| err.to_string())?;
    Ok((format!("https://127.0.0.1:{port}"), ca))
}

/// The emulator's configuration: the user's file, checked as the emulator reads it, with the
/// sandbox's service-account issuer trusted and operations polled after one second instead of
/// Azure's usual fifteen unless the file says otherwise. Written as JSON, which YAML readers take.
fn emulator_config(user_config: Option<&Path>, plane_ca: &str) -> Result<String, String> {
    let mut config = match user_config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
            arm_emulator::Config::from_yaml(&text)
                .map_err(|err| format!("{} is not an emulator configuration: {err}", path.display()))?;
            if text.trim().is_empty() {
                serde_json::json!({})
            } else {
                serde_saphyr::from_str::<serde_json::Value>(&text)
                    .map_err(|err| format!("{}: {err}", path.display()))?
            }
        }
        None => serde_json::json!({}),
    };
    let Some(fields) = config.as_object_mut() else {
        return Err("the emulator configuration must be a mapping".to_owned());
    };
    fields.entry("retryAfterSeconds").or_insert(serde_json::json!(1));
    let cas = fields.entry("issuerCas").or_insert_with(|| serde_json::json!([]));
    if let Some(cas) = cas.as_array_mut() {
        cas.push(serde_json::json!(plane_ca));
    }
    serde_json::to_string_pretty(&config).map_err(|err| err.to_string())
}

async fn wait_for_stop() -> Result<(), String> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).map_err(|err| err.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|err| err.to_string())?;
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    Ok(())
}
