//! The workload cluster simulator (`e2e/workload`): what boots on the emulator's machines. `just
//! workload-bins` builds it into the cache; a plane runs it beside the emulator.

use std::path::{Path, PathBuf};

use crate::bins::cache_dir;
use crate::error::{Error, Result};
use crate::plane::{Plane, free_ports};

/// The simulator's binary, as `just workload-bins` leaves it.
///
/// # Errors
/// When it has not been built.
pub fn simulator_binary() -> Result<PathBuf> {
    let dir = cache_dir().join("workload-bins");
    let binary = dir.join("workload-simulator");
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(Error::MissingBinary {
            binary: "workload-simulator",
            dir,
            recipe: "workload-bins",
        })
    }
}

impl Plane {
    /// Runs the workload cluster simulator against the emulator at `emulator_url` (whose CA is
    /// `emulator_ca`), polling it every `interval`; returns the URL of its status endpoint
    /// (`GET /status`) once it serves.
    ///
    /// # Errors
    /// When the binary is missing or the process does not serve.
    pub async fn start_workload_simulator(
        &mut self,
        emulator_url: &str,
        emulator_ca: &Path,
        interval: std::time::Duration,
    ) -> Result<String> {
        let binary = simulator_binary()?;
        let port = free_ports(1)?[0];
        let args = vec![
            format!("--emulator={emulator_url}"),
            format!("--emulator-ca={}", emulator_ca.display()),
            format!("--listen=127.0.0.1:{port}"),
            format!("--interval={}ms", interval.as_millis()),
        ];
        self.spawn("workload-simulator", &binary, &args)?;
        self.wait_listening("workload-simulator", port).await?;
        Ok(format!("http://127.0.0.1:{port}"))
    }
}
