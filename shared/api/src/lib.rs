//! The Kubernetes API of capz-rs.
//!
//! It holds the thirteen CAPZ kinds of `infrastructure.cluster.x-k8s.io/v1beta1`, with schemas
//! compatible with CAPZ's so that CAPZ manifests apply unchanged, and read-only views of the Cluster
//! API objects the controllers read (`cluster.x-k8s.io/v1beta2`, module [`capi`]).
//!
//! The CRDs in `deploy/crds` are generated from these types ([`crd::all`]); doc comments on the
//! types are what `kubectl explain` shows. Sub-types used by several kinds live once in
//! [`common`].
//!
//! v1beta1 is the only served version and the storage version, so the kinds sit at the crate root.
//! A later served version (Cluster API's v1beta2 contract) gets a module of its own and conversions
//! to and from these types.

#![deny(missing_docs)]

pub mod azurecluster;
pub mod azureclusteridentity;
pub mod azuremachine;
pub mod azuremachinepool;
pub mod azuremanagedcluster;
pub mod azuremanagedcontrolplane;
pub mod azuremanagedmachinepool;
pub mod capi;
pub mod common;
pub mod controllers;
pub mod crd;

pub use azurecluster::{
    AzureCluster, AzureClusterSpec, AzureClusterStatus, AzureClusterTemplate, AzureClusterTemplateSpec,
};
pub use azureclusteridentity::{AzureClusterIdentity, AzureClusterIdentitySpec, AzureClusterIdentityStatus};
pub use azuremachine::{
    AzureMachine, AzureMachineSpec, AzureMachineStatus, AzureMachineTemplate, AzureMachineTemplateSpec,
};
pub use azuremachinepool::{
    AzureMachinePool, AzureMachinePoolMachine, AzureMachinePoolMachineSpec, AzureMachinePoolMachineStatus,
    AzureMachinePoolSpec, AzureMachinePoolStatus,
};
pub use azuremanagedcluster::{
    AzureManagedCluster, AzureManagedClusterSpec, AzureManagedClusterStatus, AzureManagedClusterTemplate,
    AzureManagedClusterTemplateSpec,
};
pub use azuremanagedcontrolplane::{
    AzureManagedControlPlane, AzureManagedControlPlaneSpec, AzureManagedControlPlaneStatus,
    AzureManagedControlPlaneTemplate, AzureManagedControlPlaneTemplateSpec,
};
pub use azuremanagedmachinepool::{
    AzureManagedMachinePool, AzureManagedMachinePoolSpec, AzureManagedMachinePoolStatus,
    AzureManagedMachinePoolTemplate, AzureManagedMachinePoolTemplateSpec,
};

/// The API group of every CAPZ kind.
pub const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The served (and stored) version of every CAPZ kind.
pub const VERSION: &str = "v1beta1";
