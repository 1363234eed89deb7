//! The admission webhook server of capz-rs: defaulting and validation of the CAPZ kinds, served
//! over HTTPS to the Kubernetes API server, with CAPZ's paths and webhook names so that CAPZ's
//! webhook configurations keep working.
//!
//! ```text
//!   routes         the route table: each admitted kind and its paths
//!   hook           a kind's two webhooks, and what its defaulting looks up first
//!   review         one AdmissionReview of a kind with capz-rules' Rules: default or validate
//!   lookup         the subscription of a machine's AzureCluster, for defaulting
//!   server         HTTPS (rustls, ring) with per-route metrics; configuration from the flags
//!   tls            the serving certificate, reloaded when its files change
//!   configuration  the Mutating/ValidatingWebhookConfigurations, from the route table
//!   cli            the `capz-webhooks` binary: flags, probes, metrics, shutdown
//! ```
//!
//! The rules themselves live in `capz-rules`, pure functions shared with the controllers; this
//! crate only carries them to and from the API server.

#![deny(missing_docs)]

pub mod cli;
pub mod configuration;
pub mod hook;
pub mod lookup;
pub mod review;
pub mod routes;
pub mod server;
pub mod tls;

pub use hook::{Hook, ValidationLookup};
pub use routes::{Route, Routes};
pub use server::{Config, Server};
