//! The reconcile kit and controller runtime of capz-rs: what every controller needs once.
//!
//! It re-exports kube, k8s-openapi and schemars, so that every controller builds against one
//! version set and one import path.

#![deny(missing_docs)]

pub mod cli;
pub mod leader;
pub mod metrics;
pub mod runner;
pub mod server;
pub mod telemetry;

pub use capz_api as api;
pub use capz_azure as azure;
pub use k8s_openapi;
pub use kube;
pub use schemars;
