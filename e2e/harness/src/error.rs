//! What can go wrong while bringing up or using the management plane.

use std::path::PathBuf;
use std::process::ExitStatus;

/// Why the harness could not do what a test asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A binary the plane needs has not been built.
    #[error(
        "{binary} is missing from {dir}: run `just {recipe}` first (or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd)"
    )]
    MissingBinary {
        binary: &'static str,
        dir: PathBuf,
        recipe: &'static str,
    },
    /// One of capz-rs's own binaries has not been built.
    #[error("{binary} is missing from {dir}: run `cargo build --bins` first (`just e2e` does)")]
    NotBuilt { binary: String, dir: PathBuf },
    /// The plane runs no process of that name (or, to start again, killed none).
    #[error("the plane has no process called {0}")]
    NoSuchProcess(String),
    /// A file or directory could not be read, written or made.
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A process stopped while the plane was starting.
    #[error("{process} exited during start-up ({status}); the end of {log}:\n{tail}")]
    Exited {
        process: String,
        status: ExitStatus,
        log: PathBuf,
        tail: String,
    },
    /// Something did not happen in time.
    #[error("{what} after {seconds} s")]
    Timeout { what: String, seconds: u64 },
    /// A manifest is not valid YAML for what it should hold.
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
    /// The Go toolchain could not tell where a module's source is.
    #[error("cannot locate the source of {module}: {message}")]
    GoModule { module: &'static str, message: String },
    /// A command the harness runs (clusterctl, kubectl) failed.
    #[error("{command} failed: {problem}")]
    Command { command: String, problem: String },
    /// capz-rs's webhook server could not start.
    #[error("the webhook server did not start: {0}")]
    Webhooks(String),
    /// A controller run in-process could not start or failed.
    #[error("{name}: {message}")]
    Controller { name: &'static str, message: String },
    /// The ARM emulator, or capz-rs's client of it, failed a test's request.
    #[error("cannot {action}: {message}")]
    Azure { action: &'static str, message: String },
    /// The API server refused or failed a request.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The kubeconfig could not be loaded.
    #[error(transparent)]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// Certificates or keys could not be generated.
    #[error("cannot generate certificates: {0}")]
    Certificate(#[from] rcgen::Error),
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { action, path, source }
    }
}

/// The harness's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
