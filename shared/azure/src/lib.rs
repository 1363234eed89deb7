//! The Azure layer of capz-rs: everything a controller needs to talk to Azure Resource Manager,
//! and nothing of Kubernetes.
//!
//! ```text
//!   id          ResourceId, SubscriptionId, ResourceGroupName, Location, ApiVersion
//!   models      typed ARM bodies on top of id, each pinned to its api-version (ArmModel): resource
//!               group, networking, load balancer, interface, machine, disk, identity, role assignment
//!   cloud       Cloud: public, China, US Government, or custom (Azure Stack Hub, the emulator)
//!     │
//!   http        HttpClient: hyper + rustls (ring), pooled connections, per-request timeout
//!     │
//!   credential  Credential: client secret, client certificate, workload identity, managed
//!     │         identity; a token cache in front of each
//!     │
//!   arm         ArmClient: get / put / patch / delete / list, one-step polling of operations
//!               (OperationToken), ArmError with its Category, the process-wide throttle gate
//! ```
//!
//! A controller builds one [`HttpClient`] per cloud, one [`Credential`] per identity and one
//! [`ArmClient`] per (credential, controller), and shares them across reconciles. Resource models
//! are plain serde types pinned to an [`ApiVersion`] ([`models`]); the client is generic over them.
//!
//! Every ARM request, reported request budget and token refresh is recorded through the `metrics`
//! facade ([`metrics`]), for whichever recorder the process installs.

#![deny(missing_docs)]

pub mod arm;
pub mod cloud;
pub mod credential;
pub mod http;
pub mod id;
pub mod metrics;
pub mod models;

pub use arm::{
    ArmClient, ArmError, Category, ErrorBody, InProgress, OperationMethod, OperationToken, Outcome, PollKind,
    PollOutcome, RateLimitBudget, UnknownTokenError,
};
pub use cloud::{Cloud, CloudError, CustomCloud};
pub use credential::{
    ClientCertificate, Credential, CredentialError, FederatedTokenError, FederatedTokenFile,
    FederatedTokenSource, ManagedIdentityId,
};
pub use http::HttpClient;
pub use id::{ApiVersion, IdError, Location, ResourceGroupName, ResourceId, SubscriptionId};
