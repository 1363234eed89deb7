//! Types shared by several kinds.

pub mod cluster;
pub mod compute;
pub mod conditions;
pub mod endpoints;
pub mod network;
pub mod operations;
pub(crate) mod quantity;
pub mod references;
pub(crate) mod schema;

pub use cluster::{ApiEndpoint, FailureDomainSpec, FailureDomains, MachineAddress, ObjectMeta, Tags};
pub use conditions::{Condition, ConditionSeverity, ConditionStatus, ConditionType, Conditions};
pub use endpoints::{
    PrivateEndpointSpec, PrivateEndpoints, PrivateLinkServiceConnection, ServiceEndpointSpec,
    ServiceEndpoints,
};
pub use operations::{Future, Futures};
pub use quantity::Quantity;
pub use references::{
    LabelSelector, LabelSelectorRequirement, ObjectReference, SecretKeySelector, SecretReference,
};
