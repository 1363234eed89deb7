//! The reconcile kit and controller runtime of capz-rs: what every controller needs once.
//!
//! A controller on the kit is a [`controller::ControllerId`], a few kube-runtime `Controller`s
//! (watches and [`filter`]s) and one reconcile function per kind, run by
//! [`runner::Context::run`]. A reconcile reads as a pipeline:
//!
//! ```text
//!   watch event ── filter::changes ──> reconciler: leadership, span, metrics   (every controller)
//!     cluster::{owner_cluster, is_paused, is_externally_managed}   skip what is not ours to do
//!     finalizer::finalized                                         Apply | Cleanup
//!       operations::Operations::owned(status)                      operations in flight
//!       resource::{reconcile, delete} per Azure resource           one read, a write if needed
//!       presence::Presence::running(peer)                          a peer we wait on runs
//!       conditions::observe(observations)                          keep lastTransitionTime
//!       apply::apply_status(owned fields)  if conditions::differ or operations changed
//!   reconciler: events for what changed in Azure (observed), warning and backoff on failure
//! ```
//!
//! It re-exports kube, k8s-openapi and schemars, so that every controller builds against one
//! version set and one import path.

#![deny(missing_docs)]

pub mod apply;
pub mod cli;
pub mod cluster;
pub mod conditions;
pub mod controller;
pub mod filter;
pub mod finalizer;
pub mod identity;
pub mod leader;
pub mod metrics;
pub mod observed;
pub mod operations;
pub mod policy;
pub mod presence;
pub mod reconciler;
pub mod report;
pub mod resource;
pub mod runner;
pub mod scope;
pub mod server;
pub mod tags;
pub mod telemetry;

pub use capz_api as api;
pub use capz_azure as azure;
pub use k8s_openapi;
pub use kube;
pub use schemars;
