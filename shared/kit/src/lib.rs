//! The reconcile kit and controller runtime of capz-rs: what every controller needs once.
//!
//! A controller on the kit is a [`controller::ControllerId`], a few kube-runtime `Controller`s
//! (watches and [`filter`]s) and one reconcile function per kind, run by
//! [`runner::Context::run`]. Every controller crate has the same files (docs/architecture.md);
//! a reconcile reads as a pipeline:
//!
//! ```text
//!   watch event ── filter::changes ── queue (workqueue_* series) ──> reconciler: leadership,
//!                                                                    span, metrics, events
//!     azure_cluster::reconcile, or the kind's own rules            skip what is not ours to do
//!     finalizer::finalized                                         Apply | Cleanup
//!       operations::Operations::owned(status)                      operations in flight
//!       progress::Steps over the controller's step table           in order; the first step
//!         resource::{reconcile, delete} per Azure resource         not done holds back the rest
//!         progress::Outcome folds their results                    one read, a write if needed
//!         presence::Presence::running(peer)                        a peer we wait on runs
//!       status::publish(observations, operations, fields)          only when something differs
//!   reconciler: events for what changed in Azure (observed), warning and backoff on failure
//! ```
//!
//! It re-exports kube, k8s-openapi and schemars, so that every controller builds against one
//! version set and one import path.

#![deny(missing_docs)]

pub mod abandon;
pub mod apply;
pub mod azure_cluster;
pub mod bootstrap;
pub mod cli;
pub mod cluster;
pub mod conditions;
pub mod controller;
pub mod diagnostics;
pub mod error;
pub mod filter;
pub mod finalizer;
pub mod https;
pub mod identity;
pub mod leader;
pub mod metrics;
pub mod observed;
pub mod operations;
pub mod policy;
pub mod presence;
pub mod progress;
pub mod queue;
pub mod reconciler;
pub mod report;
pub mod resource;
pub mod runner;
pub mod scope;
pub mod server;
pub mod status;
pub mod tags;
pub mod telemetry;
pub mod watch;
pub mod workload;

pub use capz_api as api;
pub use capz_azure as azure;
pub use k8s_openapi;
pub use kube;
pub use schemars;
