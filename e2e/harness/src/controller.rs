//! A capz-rs controller run inside the test process, watching one namespace of the plane, so a
//! test can start it, look at what it does and stop it like a Deployment would.

use std::future::Future;

use capz_kit::cli::Args;
use capz_kit::controller::ControllerId;
use capz_kit::runner::{self, BoxError, Context, RunError, Shutdown};
use clap::Parser as _;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::plane::Plane;

/// A controller running in-process.
pub struct InProcessController {
    name: &'static str,
    shutdown: Shutdown,
    run: JoinHandle<std::result::Result<(), RunError>>,
}

impl InProcessController {
    /// Runs the controller `id` against `plane`, watching `namespace`, with its command-line
    /// `flags` (sync period, probe addresses, feature gates) and `build`, which starts its
    /// reconcilers as its `main` does.
    ///
    /// # Errors
    /// When the flags do not parse.
    pub fn start<F, Fut>(
        id: ControllerId,
        plane: &Plane,
        namespace: &str,
        flags: impl IntoIterator<Item = impl Into<String>>,
        build: F,
    ) -> Result<Self>
    where
        F: FnOnce(Context) -> Fut + Send + 'static,
        Fut: Future<Output = std::result::Result<(), BoxError>> + Send + 'static,
    {
        let name = id.name();
        let mut args = vec![
            name.to_owned(),
            format!("--kubeconfig={}", plane.kubeconfig().display()),
            format!("--namespace={namespace}"),
        ];
        args.extend(flags.into_iter().map(Into::into));
        let args = Args::try_parse_from(args).map_err(|error| Error::Controller {
            name,
            message: error.to_string(),
        })?;
        let shutdown = Shutdown::new();
        let run = tokio::spawn(runner::run(id, args, shutdown.clone(), build));
        Ok(Self { name, shutdown, run })
    }

    /// Stops the controller as SIGTERM would and waits for it to finish.
    ///
    /// # Errors
    /// When it ended with an error or panicked.
    pub async fn stop(self) -> Result<()> {
        self.shutdown.trigger();
        let ended = self.run.await.map_err(|error| error.to_string());
        match ended {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(error) => Err(error),
        }
        .map_err(|message| Error::Controller {
            name: self.name,
            message,
        })
    }
}
