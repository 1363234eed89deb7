//! A real management plane for capz-rs tests: etcd and kube-apiserver built from their pinned Go
//! modules (`just kube-bins`), started on loopback ports in a directory of their own, with our
//! CRDs and all of Cluster API's installed and served.
//!
//! ```no_run
//! # async fn example() -> capz_harness::Result<()> {
//! let plane = capz_harness::shared();
//! let _side_by_side = plane.namespaced().await;
//! let client = plane.client().await?;
//! capz_harness::with_temp_namespace(&client, async |namespace| {
//!     // create objects in `namespace`
//! })
//! .await?;
//! # Ok(())
//! # }
//! ```

pub mod azure;
mod bins;
pub mod capz;
pub mod cluster_api;
pub mod clusterctl;
pub mod container;
pub mod controller;
mod controller_manager;
pub mod crds;
mod error;
pub mod fixtures;
mod kit;
pub mod peer;
mod pki;
mod plane;
mod process;
mod token;
pub mod webhooks;
pub mod workload;

use std::sync::OnceLock;

pub use azure::EmulatedAzure;
pub use bins::{KubeBinaries, cache_dir};
pub use capz::{AzureEndpoint, Capz};
pub use clusterctl::Clusterctl;
pub use controller::InProcessController;
pub use error::{Error, Result};
pub use kit::{
    TestResult, api_for, apply, apply_and_wait_for_condition, apply_yaml, cluster_condition,
    create_azure_cluster, delete_and_wait, has_condition, http_get, in_namespace, play_controller,
    report_conditions, resource, wait_for, with_temp_namespace,
};
pub use pki::{Authority, KeyAndCert};
pub use plane::{FIELD_MANAGER, Options, Plane, free_ports};
pub use process::{Process, tail};
pub use token::{AZURE_AUDIENCE, ProjectedToken, TokenOptions};
pub use webhooks::{WebhookOptions, Webhooks};

/// The plane every test of this process shares, started by the first caller. It stops when the
/// process exits: the plane's watchdog sees its pipe close and stops etcd and the API server.
///
/// # Panics
/// When the plane cannot start: every test needing it would fail the same way, so the message
/// (which says what to build, or which process failed and why) is given to each.
pub fn shared() -> &'static Plane {
    static SHARED: OnceLock<Result<Plane, String>> = OnceLock::new();
    let started = SHARED.get_or_init(|| {
        // Started on a runtime of its own: a test's runtime ends with the test.
        std::thread::spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|err| err.to_string())?;
            runtime.block_on(Plane::start()).map_err(|err| err.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("starting the plane panicked".to_owned()))
    });
    match started {
        Ok(plane) => plane,
        #[allow(clippy::panic)]
        Err(message) => panic!("the test plane did not start: {message}"),
    }
}
