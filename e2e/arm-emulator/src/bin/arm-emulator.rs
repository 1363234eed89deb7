//! Serves the ARM emulator until interrupted.
//!
//! Usage: `arm-emulator [--listen ADDRESS] [--ca-file PATH] [--name DNS-NAME]... [--plain-http]
//! [--config PATH] [--imds-listen ADDRESS] [--proxy-listen ADDRESS] [--state-file PATH]`
//!
//! - `--listen`: the address to serve on (default `127.0.0.1:8443`);
//! - `--ca-file`: where to write the PEM certificate of the CA clients must trust (default
//!   `arm-emulator-ca.pem` in the current directory);
//! - `--name`: an extra host name the server certificate is valid for (besides `localhost`,
//!   `127.0.0.1` and `::1`); repeatable;
//! - `--plain-http`: serve HTTP instead of HTTPS (clients that insist on HTTPS will refuse it);
//! - `--config`: a YAML (or JSON) configuration file: tenants, subscriptions, principals, managed
//!   identities and the rest of [`Config`] (default: the built-in configuration);
//! - `--imds-listen`: also serve the managed identity endpoint of IMDS over plain HTTP on this
//!   address, as Azure does at `169.254.169.254:80`;
//! - `--proxy-listen`: also serve an HTTPS proxy on this address that answers for Azure's own
//!   host names (`management.azure.com`, `login.microsoftonline.com` and the other clouds'), so a
//!   client given only `HTTPS_PROXY` and the CA reaches the emulator, and joins routed hosts of
//!   emulated resources to their listeners (`/_emulator/routes`); not with `--plain-http`;
//! - `--state-file`: restore the resources from this file at start when it exists, and save them
//!   there when stopped with Ctrl-C (SIGINT) or SIGTERM, so the emulated Azure survives a restart.
//!
//! It runs until it gets SIGINT or SIGTERM.
//!
//! When it serves, it prints one line: its base URL.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use arm_emulator::{Config, tls::Tls};

struct Options {
    listen: SocketAddr,
    ca_file: PathBuf,
    names: Vec<String>,
    plain_http: bool,
    config: Option<PathBuf>,
    imds_listen: Option<SocketAddr>,
    proxy_listen: Option<SocketAddr>,
    state_file: Option<PathBuf>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        listen: ([127, 0, 0, 1], 8443).into(),
        ca_file: PathBuf::from("arm-emulator-ca.pem"),
        names: Vec::new(),
        plain_http: false,
        config: None,
        imds_listen: None,
        proxy_listen: None,
        state_file: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--listen" => {
                let raw = value("--listen")?;
                options.listen = raw.parse().map_err(|err| format!("--listen {raw}: {err}"))?;
            }
            "--ca-file" => options.ca_file = PathBuf::from(value("--ca-file")?),
            "--name" => options.names.push(value("--name")?),
            "--plain-http" => options.plain_http = true,
            "--config" => options.config = Some(PathBuf::from(value("--config")?)),
            "--imds-listen" => {
                let raw = value("--imds-listen")?;
                options.imds_listen = Some(raw.parse().map_err(|err| format!("--imds-listen {raw}: {err}"))?);
            }
            "--proxy-listen" => {
                let raw = value("--proxy-listen")?;
                options.proxy_listen = Some(
                    raw.parse()
                        .map_err(|err| format!("--proxy-listen {raw}: {err}"))?,
                );
            }
            "--state-file" => options.state_file = Some(PathBuf::from(value("--state-file")?)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("arm-emulator {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(problem) => {
            eprintln!(
                "arm-emulator: {problem}\nusage: arm-emulator [--listen ADDRESS] [--ca-file PATH] [--name DNS-NAME]... \
                 [--plain-http] [--config PATH] [--imds-listen ADDRESS] [--proxy-listen ADDRESS] [--state-file PATH] | --version"
            );
            return ExitCode::from(2);
        }
    };
    let config = match &options.config {
        None => Config::default(),
        Some(path) => match std::fs::read_to_string(path)
            .map_err(|err| err.to_string())
            .and_then(|text| Config::from_yaml(&text).map_err(|err| err.to_string()))
        {
            Ok(config) => config,
            Err(err) => {
                eprintln!("arm-emulator: {}: {err}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    // Kept until the end of `main`: dropping them stops their listeners.
    let (running, _imds, _proxy) = match serve(&options, config).await {
        Ok(served) => served,
        Err(problem) => {
            eprintln!("arm-emulator: {problem}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = options.state_file.as_ref().filter(|path| path.exists()) {
        let restored = std::fs::read(path)
            .map_err(|err| err.to_string())
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|err| err.to_string()))
            .and_then(|snapshot| running.emulator.restore(&snapshot).map_err(|err| err.to_string()));
        if let Err(err) = restored {
            eprintln!("arm-emulator: cannot restore {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("{}", running.base_url());
    if let Err(err) = stopped().await {
        eprintln!("arm-emulator: cannot wait for a stop signal: {err}");
        return ExitCode::FAILURE;
    }
    if let Some(path) = &options.state_file
        && let Err(err) = save(path, &running.emulator.snapshot())
    {
        eprintln!("arm-emulator: cannot save the state to {}: {err}", path.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Starts the emulator, and IMDS and the proxy when asked for, as the options say.
async fn serve(
    options: &Options,
    config: Config,
) -> Result<
    (
        arm_emulator::Running,
        Option<arm_emulator::RunningImds>,
        Option<arm_emulator::proxy::RunningProxy>,
    ),
    String,
> {
    if options.plain_http && options.proxy_listen.is_some() {
        return Err(
            "--proxy-listen answers for Azure's hosts over HTTPS; it does not go with --plain-http".into(),
        );
    }
    let mut names = options.names.clone();
    if options.proxy_listen.is_some() {
        names.extend(
            arm_emulator::proxy::AZURE_HOSTS
                .iter()
                .map(|host| (*host).to_owned()),
        );
    }
    let (started, tls) = if options.plain_http {
        (arm_emulator::start(options.listen, config).await, None)
    } else {
        let tls = Tls::generate(&names).map_err(|err| err.to_string())?;
        std::fs::write(&options.ca_file, &tls.ca_pem).map_err(|err| {
            format!(
                "cannot write the CA certificate to {}: {err}",
                options.ca_file.display()
            )
        })?;
        (
            arm_emulator::start_tls(options.listen, config, &tls).await,
            Some(tls),
        )
    };
    let running = started.map_err(|err| format!("cannot listen on {}: {err}", options.listen))?;
    let imds = match options.imds_listen {
        None => None,
        Some(address) => Some(
            arm_emulator::start_imds(address, &running.emulator)
                .await
                .map_err(|err| format!("cannot serve IMDS on {address}: {err}"))?,
        ),
    };
    let proxy = match (options.proxy_listen, &tls) {
        (Some(address), Some(tls)) => Some(
            arm_emulator::proxy::start_proxy(address, &running.emulator, tls)
                .await
                .map_err(|err| format!("cannot serve the proxy on {address}: {err}"))?,
        ),
        _ => None,
    };
    Ok((running, imds, proxy))
}

/// Waits for Ctrl-C (SIGINT) or SIGTERM: `kill`, `just down` and process managers stop it with
/// the latter.
#[cfg(unix)]
async fn stopped() -> std::io::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        interrupted = tokio::signal::ctrl_c() => interrupted,
        _ = terminate.recv() => Ok(()),
    }
}

/// Waits for Ctrl-C, the only stop signal there is.
#[cfg(not(unix))]
async fn stopped() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}

/// Writes the state beside the file, then moves it into place, so that a stop cut short leaves
/// the previous state whole.
fn save(path: &std::path::Path, snapshot: &serde_json::Value) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, snapshot.to_string())?;
    std::fs::rename(&partial, path)
}
