//! The `capz-webhooks` command: its flags and its `main`.
//!
//! Flags follow CAPZ's manager where it has one (`--webhook-port`, `--feature-gates`,
//! `--tls-min-version`, `--tls-cipher-suites`; `--webhook-cert-dir` is accepted for `--cert-dir`,
//! `--health-addr` for `--health-probe-bind-address`) and the capz-rs controllers for the rest
//! (`--kubeconfig`, the metrics address, `--log-format`, `--log-level`), with the same names,
//! defaults and parsing. CAPZ's other manager flags are accepted and reported as having no
//! effect.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use capz_kit::cli::{BindAddress, Diagnostics, Tls, Tracing, parse_bind_address};
use capz_kit::runner::Shutdown;
use capz_kit::server::{Readiness, Servers};
use capz_kit::telemetry::{LogFormat, Telemetry};
use capz_rules::Features;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::routes;
use crate::server::{Config, Server, StartError};

/// Where controller-runtime's webhook servers, CAPZ's among them, look for their certificate.
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
/// How long to wait before asking an unreachable API server again.
const CONNECT_RETRY: Duration = Duration::from_secs(5);

/// The command line of the webhook server.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "capz-webhooks",
    version,
    about = "The admission webhooks of capz-rs: defaulting and validation of the CAPZ kinds",
    long_about = None,
    // A flag given twice takes its last value, as with CAPZ's manager: patches append arguments.
    args_override_self = true
)]
pub struct Args {
    /// Path to a kubeconfig file, for the lookups defaulting makes. Without it the KUBECONFIG
    /// variable is used, then ~/.kube/config, then the Pod's service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The port admission webhooks are served on, over HTTPS on every interface.
    #[arg(long, value_name = "PORT", default_value_t = 9443)]
    pub webhook_port: u16,

    /// The directory holding the serving certificate (`tls.crt`) and its key (`tls.key`), as a
    /// cert-manager Secret is mounted; changed files are served without a restart.
    #[arg(long, visible_alias = "webhook-cert-dir", value_name = "DIR", default_value = DEFAULT_CERT_DIR)]
    pub cert_dir: PathBuf,

    /// CAPZ's feature gates, as `Gate=true,Other=false` (the value given to CAPZ's manager
    /// works unchanged); those that change admission are APIServerILB, EdgeZone and MachinePool
    /// (on unless turned off).
    #[arg(long, value_name = "GATES", default_value = "", value_parser = parse_features)]
    pub feature_gates: Features,

    /// The lowest TLS version and the TLS 1.2 cipher suites accepted.
    #[command(flatten)]
    pub tls: Tls,

    /// Where /metrics is served (plain HTTP); `0` turns it off.
    #[arg(long, value_name = "ADDRESS", default_value = ":8080", value_parser = parse_bind_address)]
    pub metrics_bind_address: BindAddress,

    /// CAPZ's diagnostics endpoint (its TLS settings are those of the webhooks).
    #[command(flatten)]
    pub diagnostics: Diagnostics,

    /// Where /healthz and /readyz are served (plain HTTP); `0` turns it off.
    #[arg(
        long,
        visible_alias = "health-addr",
        value_name = "ADDRESS",
        default_value = ":9440",
        value_parser = parse_bind_address
    )]
    pub health_probe_bind_address: BindAddress,

    /// The format of log lines.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// CAPZ's tracing flag.
    #[command(flatten)]
    pub tracing: Tracing,

    /// Which log lines to write, in RUST_LOG's syntax (`info`, `info,capz_webhooks=debug`);
    /// RUST_LOG when unset, else `info`.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
}

impl Args {
    /// The log filter: `--log-level`, else RUST_LOG, else `info`.
    #[must_use]
    pub fn log_filter(&self) -> String {
        self.log_level
            .clone()
            .or_else(|| std::env::var("RUST_LOG").ok())
            .filter(|filter| !filter.trim().is_empty())
            .unwrap_or_else(|| "info".to_owned())
    }
}

fn parse_features(text: &str) -> Result<Features, String> {
    text.parse()
        .map_err(|err: capz_rules::features::FeaturesError| err.to_string())
}

/// Why the webhook server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No client could be built.
    #[error(transparent)]
    Client(#[from] capz_kit::runner::RunError),
    /// The Prometheus recorder could not be installed.
    #[error("cannot set up metrics: {0}")]
    Metrics(#[from] metrics_exporter_prometheus::BuildError),
    /// The probe or metrics server could not listen, or failed.
    #[error("{0}")]
    Serve(#[from] std::io::Error),
    /// The webhook server could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The diagnostics endpoint could not start.
    #[error(transparent)]
    Diagnostics(#[from] capz_kit::diagnostics::DiagnosticsError),
}

/// The whole `main`: parses the flags, sets up telemetry, serves until SIGTERM or SIGINT, and
/// turns the outcome into the exit code.
#[must_use]
pub fn main() -> ExitCode {
    let command = <Args as clap::CommandFactory>::command();
    let (args, without_effect) = capz_kit::cli::manager_flags::parse::<Args>(command);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("capz-webhooks: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let telemetry = runtime.block_on(async {
        Telemetry::new("capz-webhooks", args.log_format, &args.log_filter())
            .with_tracing(args.tracing.enable_tracing)
            .init()
    });
    let _telemetry = match telemetry {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("capz-webhooks: {err}");
            return ExitCode::FAILURE;
        }
    };
    capz_kit::cli::manager_flags::warn_without_effect("capz-webhooks", &without_effect);
    let result = runtime.block_on(async {
        let shutdown = Shutdown::new();
        shutdown.on_signals()?;
        run(args, shutdown).await
    });
    match result {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!(error = %err, "stopped");
            ExitCode::FAILURE
        }
    }
}

/// Serves the webhooks, the probes and the metrics as `args` say until `shutdown` is triggered.
/// `/readyz` answers 200 once the webhooks are served and the API server has answered.
///
/// # Errors
/// See [`RunError`].
pub async fn run(args: Args, shutdown: Shutdown) -> Result<(), RunError> {
    let prometheus = capz_kit::metrics::install()?;
    let readiness = Readiness::default();
    let stop_probes = CancellationToken::new();
    let mut probes = Servers::start(
        &args.health_probe_bind_address,
        &args.metrics_bind_address,
        readiness.clone(),
        prometheus.clone(),
        stop_probes.clone(),
    )
    .await?;
    probes
        .serve_diagnostics(
            &args.diagnostics,
            &args.tls,
            capz_kit::runner::client(args.kubeconfig.as_deref()).await?,
            prometheus,
            &stop_probes,
        )
        .await?;
    tracing::info!(
        health = ?probes.health_address(),
        metrics = ?probes.metrics_address(),
        diagnostics = ?probes.diagnostics_address(),
        "serving probes and metrics"
    );
    let result = serve(&args, &shutdown, &readiness).await;
    // The probes answer until the webhooks have drained.
    stop_probes.cancel();
    let served = probes.wait().await;
    result?;
    Ok(served?)
}

async fn serve(args: &Args, shutdown: &Shutdown, readiness: &Readiness) -> Result<(), RunError> {
    let client = capz_kit::runner::client(args.kubeconfig.as_deref()).await?;
    let routes = routes::all();
    let server = Server::start(
        Config {
            address: SocketAddr::from((Ipv4Addr::UNSPECIFIED, args.webhook_port)),
            cert_dir: args.cert_dir.clone(),
            features: args.feature_gates,
            tls: args.tls.clone(),
            client: Some(client.clone()),
        },
        &routes,
    )
    .await?;
    let kinds: Vec<&str> = routes.iter().map(crate::routes::Route::kind).collect();
    tracing::info!(
        address = %server.address(),
        cert_dir = %args.cert_dir.display(),
        features = ?args.feature_gates,
        ?kinds,
        "serving admission webhooks"
    );
    tokio::select! {
        () = shutdown.triggered() => {}
        () = connect(&client, readiness) => shutdown.triggered().await,
    }
    server.shutdown().await;
    Ok(())
}

/// Asks the API server for its version until it answers, then marks the server ready.
async fn connect(client: &kube::Client, readiness: &Readiness) {
    loop {
        match client.apiserver_version().await {
            Ok(version) => {
                tracing::info!(server = %version.git_version, "connected to the API server");
                readiness.connected();
                return;
            }
            Err(err) => tracing::warn!(error = %err, "the API server does not answer yet; not ready"),
        }
        tokio::time::sleep(CONNECT_RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("capz-webhooks").chain(flags.iter().copied()))
    }

    #[test]
    fn defaults_follow_capz() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.webhook_port, 9443);
        assert_eq!(args.cert_dir, PathBuf::from(DEFAULT_CERT_DIR));
        assert_eq!(args.feature_gates, Features::default());
        assert_eq!(args.tls, Tls::default());
        assert_eq!(
            args.metrics_bind_address,
            BindAddress::Address("0.0.0.0:8080".into())
        );
        assert_eq!(
            args.health_probe_bind_address,
            BindAddress::Address("0.0.0.0:9440".into())
        );
        assert_eq!(args.log_format, LogFormat::Text);
    }

    #[test]
    fn every_flag_is_read_and_capzs_names_are_accepted() {
        let args = parse(&[
            "--kubeconfig=/tmp/kubeconfig",
            "--webhook-port=10443",
            "--webhook-cert-dir=/certs",
            "--feature-gates=MachinePool=true,EdgeZone=true,APIServerILB=false",
            "--tls-min-version=VersionTLS13",
            "--metrics-bind-address=0",
            "--health-addr=127.0.0.1:19440",
            "--log-format=json",
            "--log-level=debug",
        ])
        .unwrap();
        assert_eq!(args.kubeconfig, Some(PathBuf::from("/tmp/kubeconfig")));
        assert_eq!(args.webhook_port, 10443);
        assert_eq!(args.cert_dir, PathBuf::from("/certs"));
        assert!(args.feature_gates.edge_zone && !args.feature_gates.api_server_ilb);
        assert_eq!(args.tls.tls_min_version, capz_kit::cli::TlsVersion::Tls13);
        assert_eq!(args.metrics_bind_address, BindAddress::Disabled);
        assert_eq!(
            args.health_probe_bind_address,
            BindAddress::Address("127.0.0.1:19440".into())
        );
        assert_eq!(args.log_format, LogFormat::Json);
        assert_eq!(args.log_filter(), "debug");
        assert_eq!(
            parse(&["--cert-dir=/other"]).unwrap().cert_dir,
            PathBuf::from("/other")
        );
    }

    #[test]
    fn every_flag_of_capzs_manager_is_accepted_and_those_acted_on_apply() {
        use capz_kit::cli::manager_flags::{MANAGER_FLAGS, ManagerFlag, without_inert_flags};
        let line = without_inert_flags(
            std::iter::once("capz-webhooks".to_owned())
                .chain(MANAGER_FLAGS.iter().map(ManagerFlag::with_example))
                .map(std::ffi::OsString::from),
            &<Args as clap::CommandFactory>::command(),
        );
        let args = Args::try_parse_from(line.args).unwrap();
        assert_eq!(args.webhook_port, 9443);
        assert_eq!(
            args.cert_dir,
            PathBuf::from("/tmp/k8s-webhook-server/serving-certs/")
        );
        assert_eq!(args.tls.tls_cipher_suites.len(), 2);
        assert_eq!(args.kubeconfig, Some(PathBuf::from("/etc/kubernetes/kubeconfig")));
        let acted_on: Vec<&str> = MANAGER_FLAGS
            .iter()
            .map(|flag| flag.name)
            .filter(|name| !line.without_effect.contains(name))
            .collect();
        assert_eq!(
            acted_on,
            [
                "health-addr",
                "webhook-port",
                "webhook-cert-dir",
                "enable-tracing",
                "tls-min-version",
                "tls-cipher-suites",
                "diagnostics-address",
                "insecure-diagnostics",
                "feature-gates",
                "kubeconfig"
            ]
        );
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        for (flag, expected) in [
            ("--feature-gates=Nope=true", "unknown feature gate"),
            ("--feature-gates=EdgeZone=yes", "neither true nor false"),
            ("--webhook-port=70000", "--webhook-port"),
            ("--tls-min-version=VersionTLS9", "--tls-min-version"),
            ("--tls-cipher-suites=TLS_NOPE", "is not a TLS cipher suite"),
            ("--health-probe-bind-address=9440", "is not an address"),
        ] {
            let message = parse(&[flag]).unwrap_err().to_string();
            assert!(message.contains(expected), "{flag}: {message}");
        }
    }
}
