//! The flags every controller takes, parsed once here so that all controllers share their names,
//! defaults and validation. Names and defaults follow Cluster API's managers where they have one
//! (`--namespace`, `--watch-filter`, `--sync-period`, `--leader-elect*`, the bind addresses).
//!
//! Durations are written as Go writes them (`90s`, `10m`, `1h30m`, `500ms`); bind addresses as
//! `host:port`, `:port` (every interface) or `0` (disabled). Every flag of CAPZ's manager is
//! accepted too ([`manager_flags`]): those that carry behaviour are declared here, under CAPZ's
//! names or as aliases, and the rest are reported as having no effect.

pub mod manager_flags;

use std::path::PathBuf;
use std::time::Duration;

use capz_rules::Features;
use clap::Parser;

use crate::telemetry::LogFormat;

fn parse_features(text: &str) -> Result<Features, String> {
    text.parse()
        .map_err(|err: capz_rules::features::FeaturesError| err.to_string())
}

/// The label Cluster API's `--watch-filter` selects on.
pub const WATCH_FILTER_LABEL: &str = "cluster.x-k8s.io/watch-filter";

/// The command line of a controller.
#[derive(Debug, Clone, Parser)]
// A flag given twice takes its last value, as with CAPZ's manager: patches append arguments.
#[command(version, about = "A capz-rs controller", long_about = None, args_override_self = true)]
pub struct Args {
    /// Path to a kubeconfig file. Without it the KUBECONFIG variable is used, then
    /// ~/.kube/config, then the Pod's service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Watch and reconcile objects of this namespace only; all namespaces when unset or empty.
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Reconcile only objects labelled `cluster.x-k8s.io/watch-filter=<VALUE>`; all objects when
    /// unset or empty.
    #[arg(long, value_name = "VALUE", value_parser = parse_label_value)]
    pub watch_filter: Option<String>,

    /// How many objects of one kind are reconciled at the same time, unless --kind-concurrency
    /// says otherwise for that kind.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,

    /// The concurrency of one kind, as `KIND=N` (such as `AzureMachine=20`); repeatable, or
    /// comma-separated. It wins over CAPZ's per-kind flags below.
    #[arg(long, value_name = "KIND=N", value_delimiter = ',', value_parser = parse_kind_concurrency)]
    pub kind_concurrency: Vec<KindConcurrency>,

    /// CAPZ's flag: the concurrency of AzureCluster, AzureManagedCluster and
    /// AzureManagedControlPlane.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub azurecluster_concurrency: Option<u16>,

    /// CAPZ's flag: the concurrency of AzureMachine and AzureMachineTemplate.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub azuremachine_concurrency: Option<u16>,

    /// CAPZ's flag: the concurrency of AzureMachinePool and AzureManagedMachinePool.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub azuremachinepool_concurrency: Option<u16>,

    /// CAPZ's flag: the concurrency of AzureMachinePoolMachine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub azuremachinepoolmachine_concurrency: Option<u16>,

    /// How often every watched object is reconciled again when nothing changed, which notices
    /// drift in Azure.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub sync_period: Duration,

    /// Run only while holding the leader-election lease, so that one replica of several works
    /// (`--leader-elect` or `--leader-elect=true|false`).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub leader_elect: bool,

    /// The name of the leader-election Lease; `capz-<controller>` when unset.
    #[arg(long, value_name = "NAME")]
    pub leader_election_id: Option<String>,

    /// The namespace of the leader-election Lease; the Pod's own namespace (or the kubeconfig
    /// context's) when unset.
    #[arg(long, value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// How long a lease lasts after its last renewal: other replicas wait this long after they
    /// last saw it change before taking it over.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it gives up leadership and stops.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,

    /// The interval between attempts to acquire or renew the lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,

    /// Where /metrics is served (plain HTTP); `0` turns it off.
    #[arg(long, value_name = "ADDRESS", default_value = ":8080", value_parser = parse_bind_address)]
    pub metrics_bind_address: BindAddress,

    /// CAPZ's diagnostics endpoint.
    #[command(flatten)]
    pub diagnostics: Diagnostics,

    /// CAPZ's tracing flag.
    #[command(flatten)]
    pub tracing: Tracing,

    /// The TLS settings of the diagnostics endpoint.
    #[command(flatten)]
    pub tls: Tls,

    /// Where /healthz and /readyz are served (plain HTTP); `0` turns it off.
    #[arg(long, visible_alias = "health-addr", value_name = "ADDRESS", default_value = ":9440",
          value_parser = parse_bind_address)]
    pub health_probe_bind_address: BindAddress,

    /// CAPZ's feature gates, as `Gate=true,Other=false` (the value CAPZ's manager takes); the
    /// gates that change what a controller builds (such as `APIServerILB`) are read from here.
    #[arg(long, value_name = "GATES", default_value = "", value_parser = parse_features)]
    pub feature_gates: Features,

    /// The format of log lines.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Which log lines to write, in RUST_LOG's syntax (`info`, `info,kube=warn,capz_kit=debug`);
    /// RUST_LOG when unset, else `info`.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
}

impl Args {
    /// The namespace to watch; `None` for all.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.namespace
            .as_deref()
            .filter(|namespace| !namespace.is_empty())
    }

    /// The label selector of `--watch-filter`; `None` when every object is reconciled.
    #[must_use]
    pub fn watch_filter_selector(&self) -> Option<String> {
        self.watch_filter
            .as_deref()
            .filter(|value| !value.is_empty())
            .map(|value| format!("{WATCH_FILTER_LABEL}={value}"))
    }

    /// The concurrency of `kind` (matched without regard to case): `--kind-concurrency`, else
    /// CAPZ's flag for its kind, else `--concurrency`.
    #[must_use]
    pub fn concurrency_for(&self, kind: &str) -> u16 {
        let capz = match kind.to_ascii_lowercase().as_str() {
            "azurecluster" | "azuremanagedcluster" | "azuremanagedcontrolplane" => {
                self.azurecluster_concurrency
            }
            "azuremachine" | "azuremachinetemplate" => self.azuremachine_concurrency,
            "azuremachinepool" | "azuremanagedmachinepool" => self.azuremachinepool_concurrency,
            "azuremachinepoolmachine" => self.azuremachinepoolmachine_concurrency,
            _ => None,
        };
        self.kind_concurrency
            .iter()
            .rev()
            .find(|entry| entry.kind.eq_ignore_ascii_case(kind))
            .map(|entry| entry.concurrency)
            .or(capz)
            .unwrap_or(self.concurrency)
    }

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

/// CAPZ's `--enable-tracing`, for every binary (see [`crate::telemetry::Telemetry::with_tracing`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct Tracing {
    /// Export traces over OTLP: to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT names, else to CAPZ's
    /// collector, `http://opentelemetry-collector:4318`.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub enable_tracing: bool,
}

/// The diagnostics flags of Cluster API's manager options (see [`crate::diagnostics`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Diagnostics {
    /// CAPZ's diagnostics endpoint: /metrics over HTTPS, answered to callers the API server
    /// authenticates and authorizes to get it (with --insecure-diagnostics, over plain HTTP to
    /// anyone). Unlike CAPZ's manager, which serves it on :8443 unless told otherwise, served only
    /// when given.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_bind_address)]
    pub diagnostics_address: Option<BindAddress>,

    /// Serve the diagnostics endpoint over plain HTTP without authentication or authorization.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          default_value_t = false, action = clap::ArgAction::Set)]
    pub insecure_diagnostics: bool,
}

/// The TLS flags of Cluster API's manager options, for the HTTPS servers.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct Tls {
    /// The lowest TLS version accepted. CAPZ's VersionTLS10 and VersionTLS11 are read as
    /// VersionTLS12, the lowest rustls speaks.
    #[arg(long, value_enum, value_name = "VERSION", default_value_t = TlsVersion::Tls12)]
    pub tls_min_version: TlsVersion,

    /// The TLS 1.2 cipher suites offered, by IANA name, comma-separated; all that rustls
    /// implements when unset. As in Go, TLS 1.3's suites are always offered.
    #[arg(long, value_name = "SUITES", value_delimiter = ',', value_parser = parse_cipher_suite)]
    pub tls_cipher_suites: Vec<String>,
}

impl Tls {
    /// The protocol versions accepted.
    #[must_use]
    pub fn versions(&self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        static FROM_TLS12: [&rustls::SupportedProtocolVersion; 2] =
            [&rustls::version::TLS13, &rustls::version::TLS12];
        static TLS13_ONLY: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
        match self.tls_min_version {
            TlsVersion::Tls12 => &FROM_TLS12,
            TlsVersion::Tls13 => &TLS13_ONLY,
        }
    }

    /// ring's crypto provider with its TLS 1.2 suites cut to `--tls-cipher-suites`, and the
    /// suites named there that rustls does not implement (CBC, RC4 and 3DES ones), to report.
    #[must_use]
    pub fn provider(&self) -> (rustls::crypto::CryptoProvider, Vec<String>) {
        let mut provider = rustls::crypto::ring::default_provider();
        if self.tls_cipher_suites.is_empty() {
            return (provider, Vec::new());
        }
        let name = |suite: &rustls::SupportedCipherSuite| format!("{:?}", suite.suite());
        provider.cipher_suites.retain(|suite| {
            matches!(suite, rustls::SupportedCipherSuite::Tls13(_))
                || self.tls_cipher_suites.contains(&name(suite))
        });
        let implemented: Vec<String> = rustls::crypto::ring::default_provider()
            .cipher_suites
            .iter()
            .map(|suite| name(suite).replacen("TLS13_", "TLS_", 1))
            .collect();
        let unavailable = self
            .tls_cipher_suites
            .iter()
            .filter(|suite| !implemented.contains(suite))
            .cloned()
            .collect();
        (provider, unavailable)
    }
}

/// The lowest TLS version an HTTPS server accepts, as Cluster API's managers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3.
    #[default]
    #[value(name = "VersionTLS12", alias = "VersionTLS10", alias = "VersionTLS11")]
    Tls12,
    /// TLS 1.3 only.
    #[value(name = "VersionTLS13")]
    Tls13,
}

/// The cipher suites Go knows by name (those `--tls-cipher-suites` of Cluster API's managers
/// takes), TLS 1.3's included.
const CIPHER_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_RC4_128_SHA",
];

/// A cipher suite's IANA name, as Go spells it (`..._CHACHA20_POLY1305` is Go's older name of
/// `..._CHACHA20_POLY1305_SHA256`).
fn parse_cipher_suite(text: &str) -> Result<String, String> {
    let name = text.trim();
    if !CIPHER_SUITES.contains(&name) {
        return Err(format!(
            "'{name}' is not a TLS cipher suite; use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        ));
    }
    Ok(name
        .strip_suffix("_POLY1305")
        .map_or_else(|| name.to_owned(), |stem| format!("{stem}_POLY1305_SHA256")))
}

/// The concurrency of one kind, from `--kind-concurrency KIND=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindConcurrency {
    /// The kind, such as `AzureMachine`.
    pub kind: String,
    /// How many of its objects are reconciled at the same time.
    pub concurrency: u16,
}

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindAddress {
    /// Not served.
    Disabled,
    /// `host:port`, as given or with `0.0.0.0` for an empty host.
    Address(String),
}

fn parse_kind_concurrency(text: &str) -> Result<KindConcurrency, String> {
    let (kind, count) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not KIND=N, such as AzureMachine=20"))?;
    let kind = kind.trim();
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("'{kind}' is not a kind, such as AzureMachine"));
    }
    let concurrency = count
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|count| *count > 0)
        .ok_or_else(|| format!("the concurrency of {kind} must be a whole number from 1 to 65535"))?;
    Ok(KindConcurrency {
        kind: kind.to_owned(),
        concurrency,
    })
}

/// A duration in Go's notation: one or more numbers, each with a unit of `h`, `m`, `s` or `ms`.
/// Zero is refused: every duration flag is a period or a timeout. Other binaries' duration flags
/// parse with it too.
///
/// # Errors
/// When the text is not such a duration, saying what is expected.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid =
        || format!("'{text}' is not a duration: use a number with a unit, such as 90s, 10m or 1h30m");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(invalid)?;
        let number: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let part = match &rest[..unit] {
            "h" => Duration::from_secs(number.saturating_mul(3600)),
            "m" => Duration::from_secs(number.saturating_mul(60)),
            "s" => Duration::from_secs(number),
            "ms" => Duration::from_millis(number),
            _ => return Err(invalid()),
        };
        total = total.saturating_add(part);
        rest = &rest[unit..];
    }
    if total.is_zero() {
        return Err(format!("'{text}' must be longer than zero"));
    }
    Ok(total)
}

/// A bind address flag: `host:port`, `:port` (every interface) or `0` (disabled). Other binaries'
/// address flags parse with it too.
///
/// # Errors
/// When the text is none of these, saying what is expected.
pub fn parse_bind_address(text: &str) -> Result<BindAddress, String> {
    if text == "0" {
        return Ok(BindAddress::Disabled);
    }
    let (host, port) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}' is not an address: use host:port, :port, or 0 to turn it off"))?;
    port.parse::<u16>()
        .map_err(|_| format!("'{port}' in '{text}' is not a port number"))?;
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    Ok(BindAddress::Address(format!("{host}:{port}")))
}

/// A label value as Kubernetes allows it: up to 63 characters of letters, digits, `-`, `_` and
/// `.`, starting and ending with a letter or digit; empty means no filter.
fn parse_label_value(text: &str) -> Result<String, String> {
    let valid_chars = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let valid_ends = text.is_empty()
        || (text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if text.len() > 63 || !valid_chars || !valid_ends {
        return Err(format!(
            "'{text}' is not a label value: at most 63 letters, digits, '-', '_' or '.', \
             starting and ending with a letter or digit"
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::{Args, BindAddress, KindConcurrency, parse_duration};
    use crate::telemetry::LogFormat;

    fn parse(flags: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("capz-test").chain(flags.iter().copied()))
    }

    #[test]
    fn defaults_follow_cluster_api_managers() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.kubeconfig, None);
        assert_eq!(args.namespace(), None);
        assert_eq!(args.watch_filter_selector(), None);
        assert_eq!(args.concurrency_for("AzureMachine"), 10);
        assert_eq!(args.sync_period, Duration::from_mins(10));
        assert!(!args.leader_elect);
        assert_eq!(args.leader_election_id, None);
        assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(args.leader_elect_renew_deadline, Duration::from_secs(10));
        assert_eq!(args.leader_elect_retry_period, Duration::from_secs(2));
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
    fn every_flag_is_read() {
        let args = parse(&[
            "--kubeconfig=/tmp/kubeconfig",
            "--namespace=capz-system",
            "--watch-filter=team-a",
            "--concurrency=3",
            "--kind-concurrency=AzureMachine=20,AzureMachinePool=5",
            "--kind-concurrency",
            "azuremachine=7",
            "--sync-period=1h30m",
            "--leader-elect",
            "--leader-election-id=capz-network-lease",
            "--leader-election-namespace=capz-system",
            "--leader-elect-lease-duration=30s",
            "--leader-elect-renew-deadline=20s",
            "--leader-elect-retry-period=500ms",
            "--metrics-bind-address=127.0.0.1:18080",
            "--health-probe-bind-address=0",
            "--log-format=json",
            "--log-level=debug,kube=warn",
        ])
        .unwrap();
        assert_eq!(args.kubeconfig.as_deref(), Some("/tmp/kubeconfig".as_ref()));
        assert_eq!(args.namespace(), Some("capz-system"));
        assert_eq!(
            args.watch_filter_selector().as_deref(),
            Some("cluster.x-k8s.io/watch-filter=team-a")
        );
        assert_eq!(
            args.kind_concurrency[..2],
            [
                KindConcurrency {
                    kind: "AzureMachine".into(),
                    concurrency: 20
                },
                KindConcurrency {
                    kind: "AzureMachinePool".into(),
                    concurrency: 5
                }
            ]
        );
        // The last entry for a kind wins; other kinds take --concurrency.
        assert_eq!(args.concurrency_for("AzureMachine"), 7);
        assert_eq!(args.concurrency_for("AzureMachinePool"), 5);
        assert_eq!(args.concurrency_for("AzureCluster"), 3);
        assert_eq!(args.sync_period, Duration::from_mins(90));
        assert!(args.leader_elect);
        assert_eq!(args.leader_election_id.as_deref(), Some("capz-network-lease"));
        assert_eq!(args.leader_election_namespace.as_deref(), Some("capz-system"));
        assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(30));
        assert_eq!(args.leader_elect_renew_deadline, Duration::from_secs(20));
        assert_eq!(args.leader_elect_retry_period, Duration::from_millis(500));
        assert_eq!(
            args.metrics_bind_address,
            BindAddress::Address("127.0.0.1:18080".into())
        );
        assert_eq!(args.health_probe_bind_address, BindAddress::Disabled);
        assert_eq!(args.log_format, LogFormat::Json);
        assert_eq!(args.log_filter(), "debug,kube=warn");
    }

    #[test]
    fn every_flag_of_capzs_manager_is_accepted_and_those_acted_on_apply() {
        use super::manager_flags::{MANAGER_FLAGS, without_inert_flags};
        let line = without_inert_flags(
            std::iter::once("capz-test".to_owned())
                .chain(
                    MANAGER_FLAGS
                        .iter()
                        .map(super::manager_flags::ManagerFlag::with_example),
                )
                .chain([
                    "--azuremachine-concurrency=5".to_owned(),
                    "--leader-elect=false".to_owned(),
                ])
                .map(std::ffi::OsString::from),
            &<Args as clap::CommandFactory>::command(),
        );
        let args = Args::try_parse_from(line.args).unwrap();
        assert_eq!(args.concurrency_for("AzureMachine"), 5);
        assert_eq!(args.concurrency_for("AzureManagedControlPlane"), 10);
        assert!(!args.leader_elect, "the last --leader-elect wins");
        assert_eq!(args.leader_election_namespace.as_deref(), Some("capz-system"));
        assert_eq!(args.sync_period, Duration::from_mins(10));
        assert_eq!(
            args.health_probe_bind_address,
            BindAddress::Address("0.0.0.0:9440".into())
        );
        assert_eq!(
            args.diagnostics.diagnostics_address,
            Some(BindAddress::Address("0.0.0.0:8443".into()))
        );
        assert!(args.diagnostics.insecure_diagnostics);
        assert!(args.tracing.enable_tracing);
        assert_eq!(args.tls.tls_min_version, super::TlsVersion::Tls12);
        assert_eq!(
            args.kubeconfig.as_deref(),
            Some("/etc/kubernetes/kubeconfig".as_ref())
        );
        assert_eq!(
            line.without_effect,
            [
                "profiler-address",
                "debouncing-timer",
                "webhook-port",
                "webhook-cert-dir",
                "reconcile-timeout",
                "service-reconcile-timeout",
                "api-call-timeout",
                "reconciler-requeue",
                "bootstrap-config-gvk",
                "disable-controllers-or-webhooks",
                "v",
                "vmodule",
                "logtostderr",
                "alsologtostderr",
                "stderrthreshold",
                "log_dir",
                "log_file",
                "log_file_max_size",
                "log_backtrace_at",
                "add_dir_header",
                "skip_headers",
                "skip_log_headers",
                "one_output",
            ]
        );
    }

    #[test]
    fn capzs_concurrency_flags_cover_their_kinds_and_kind_concurrency_wins() {
        let args = parse(&[
            "--concurrency=3",
            "--azurecluster-concurrency=4",
            "--azuremachinepool-concurrency=6",
            "--azuremachinepoolmachine-concurrency=7",
            "--kind-concurrency=AzureManagedCluster=8",
        ])
        .unwrap();
        assert_eq!(args.concurrency_for("AzureCluster"), 4);
        assert_eq!(args.concurrency_for("AzureManagedControlPlane"), 4);
        assert_eq!(args.concurrency_for("AzureManagedCluster"), 8);
        assert_eq!(args.concurrency_for("AzureManagedMachinePool"), 6);
        assert_eq!(args.concurrency_for("AzureMachinePoolMachine"), 7);
        assert_eq!(args.concurrency_for("AzureMachine"), 3);
        assert_eq!(args.concurrency_for("AzureClusterIdentity"), 3);
        assert!(parse(&["--azuremachine-concurrency=0"]).is_err());
        assert!(parse(&["--leader-elect"]).unwrap().leader_elect);
        assert!(parse(&["--leader-elect=true"]).unwrap().leader_elect);
    }

    #[test]
    fn empty_namespace_and_filter_mean_all() {
        let args = parse(&["--namespace=", "--watch-filter="]).unwrap();
        assert_eq!(args.namespace(), None);
        assert_eq!(args.watch_filter_selector(), None);
    }

    #[test]
    fn bad_values_are_refused_naming_the_flag() {
        for (flag, expected) in [
            ("--watch-filter=-team", "is not a label value"),
            ("--watch-filter=team a", "is not a label value"),
            ("--concurrency=0", "--concurrency"),
            ("--kind-concurrency=AzureMachine", "is not KIND=N"),
            ("--kind-concurrency=AzureMachine=0", "must be a whole number"),
            ("--sync-period=10", "is not a duration"),
            ("--sync-period=0s", "must be longer than zero"),
            ("--leader-elect-retry-period=2 s", "is not a duration"),
            ("--metrics-bind-address=8080", "is not an address"),
            ("--health-probe-bind-address=:http", "is not a port number"),
            ("--log-format=yaml", "--log-format"),
        ] {
            let message = parse(&[flag]).unwrap_err().to_string();
            assert!(message.contains(expected), "{flag}: {message}");
            let name = flag.split('=').next().unwrap();
            assert!(message.contains(name), "{flag}: {message}");
        }
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        for (text, expected) in [
            ("90s", Duration::from_secs(90)),
            ("10m", Duration::from_mins(10)),
            ("1h30m", Duration::from_mins(90)),
            ("1m30s500ms", Duration::from_millis(90_500)),
            ("250ms", Duration::from_millis(250)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
        for bad in ["", "s", "1d", "1.5s", "-1s", "m10"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
