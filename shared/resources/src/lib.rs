//! The Azure resources of a cluster, one module per resource type, each named after it.
//!
//! Every unit has the same shape: a struct holding what the CAPZ spec asks for (built by a
//! constructor from the spec, the [`ClusterScope`](capz_kit::scope::ClusterScope) and derived
//! names), and an [`AzureResource`](capz_kit::resource::AzureResource) implementation that gives
//! its id, how ownership is told, and the ARM body wanted given what exists. The controllers call
//! [`capz_kit::resource::reconcile`] and [`capz_kit::resource::delete`] with it; they never build
//! ARM bodies themselves.
//!
//! `desired` compares only the fields the unit sets, so a resource that already matches costs one
//! read and no write, and fields Azure fills in (or a user sets outside the spec) are kept.

#![deny(missing_docs)]

pub mod availability_set;
pub mod disk;
pub mod network_interface;
pub mod public_ip;
pub mod role_assignment;
pub mod virtual_machine;
