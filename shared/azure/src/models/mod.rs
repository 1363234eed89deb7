//! Typed ARM bodies of the Azure resources a self-managed or managed (AKS) cluster is made of,
//! each pinned to the api-version it was written against.
//!
//! | Resource type | Model | api-version |
//! |---|---|---|
//! | `Microsoft.Resources/resourceGroups` | [`ResourceGroup`] | 2024-03-01 |
//! | `Microsoft.Network/virtualNetworks` | [`network::VirtualNetwork`] | 2024-05-01 |
//! | `Microsoft.Network/virtualNetworks/subnets` | [`network::Subnet`] | 2024-05-01 |
//! | `Microsoft.Network/networkSecurityGroups` | [`network::NetworkSecurityGroup`] | 2024-05-01 |
//! | `Microsoft.Network/networkSecurityGroups/securityRules` | [`network::SecurityRule`] | 2024-05-01 |
//! | `Microsoft.Network/routeTables` | [`network::RouteTable`] | 2024-05-01 |
//! | `Microsoft.Network/routeTables/routes` | [`network::Route`] | 2024-05-01 |
//! | `Microsoft.Network/natGateways` | [`network::NatGateway`] | 2024-05-01 |
//! | `Microsoft.Network/publicIPAddresses` | [`network::PublicIpAddress`] | 2024-05-01 |
//! | `Microsoft.Network/loadBalancers` | [`network::LoadBalancer`] | 2024-05-01 |
//! | `Microsoft.Network/networkInterfaces` | [`network::NetworkInterface`] | 2024-05-01 |
//! | `Microsoft.Network/privateDnsZones` | [`private_dns::PrivateZone`] | 2024-06-01 |
//! | `Microsoft.Network/privateDnsZones/virtualNetworkLinks` | [`private_dns::VirtualNetworkLink`] | 2024-06-01 |
//! | `Microsoft.Network/privateDnsZones/A`, `…/AAAA` | [`private_dns::RecordSet`] | 2024-06-01 |
//! | `Microsoft.Compute/virtualMachines` | [`compute::VirtualMachine`] | 2024-07-01 |
//! | `Microsoft.Compute/virtualMachines/extensions` | [`compute::VirtualMachineExtension`] | 2024-07-01 |
//! | `Microsoft.Compute/availabilitySets` | [`compute::AvailabilitySet`] | 2024-07-01 |
//! | `Microsoft.Compute/disks` | [`compute::Disk`] | 2024-03-02 |
//! | `Microsoft.ContainerService/managedClusters` | [`container_service::ManagedCluster`] | 2025-08-01 |
//! | `Microsoft.ContainerService/managedClusters/agentPools` | [`container_service::AgentPool`] | 2025-08-01 |
//! | `Microsoft.Authorization/roleAssignments` | [`RoleAssignment`] | 2022-04-01 |
//! | `Microsoft.ManagedIdentity/userAssignedIdentities` | [`UserAssignedIdentity`] | 2023-01-31 |
//!
//! Every model implements [`ArmModel`], which carries its resource type and api-version, and is
//! sent and read with [`ArmClient`](crate::ArmClient) as it is:
//!
//! ```no_run
//! # async fn example(client: &capz_azure::ArmClient, id: &capz_azure::ResourceId) -> Result<(), capz_azure::ArmError> {
//! use capz_azure::models::{ArmModel, network::VirtualNetwork};
//! let network: VirtualNetwork = client.get(id, &VirtualNetwork::API_VERSION).await?;
//! # Ok(()) }
//! ```
//!
//! The models cover what the controllers write and read, not Azure's whole API. Conventions:
//! - every field is an `Option` and absent ones are not sent, so a desired body says only what it
//!   sets; read-only fields (`id`, `etag`, `provisioningState`, addresses Azure assigns, …) are
//!   parsed from answers and simply left `None` in a desired body;
//! - fields Azure adds are ignored on reading, so a newer answer still parses;
//! - every enum keeps a value it does not know in its `Other` variant and reads known values in any
//!   case: Azure adds values to sets that look closed (public IPs and NAT gateways gained a
//!   `StandardV2` SKU), and a read must never fail on one;
//! - references are [`SubResource`]s holding a [`ResourceId`](crate::ResourceId), which compares
//!   ids as Azure does, ignoring case.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::id::{ApiVersion, IdError, ResourceId};

/// Declares an enum of Azure string values with an `Other(String)` fallback: serialised as the
/// given spelling, read in any case, unknown values kept as Azure sent them.
macro_rules! lenient_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )+
            /// A value this model does not know, as Azure spelled it.
            Other(String),
        }

        impl $name {
            /// The value as Azure spells it.
            #[must_use]
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Other(text) => text,
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
                $(
                    if text.eq_ignore_ascii_case($text) {
                        return Ok(Self::$variant);
                    }
                )+
                Ok(Self::Other(text.into_owned()))
            }
        }
    };
}

/// Implements [`ArmModel`] for a model: its resource type and api-version, and, for a type that
/// takes tags (`tagged`), its `tags` field.
macro_rules! arm_model {
    ($model:ty, $resource_type:literal, $api_version:expr) => {
        impl $crate::models::ArmModel for $model {
            const RESOURCE_TYPE: &'static str = $resource_type;
            const API_VERSION: $crate::id::ApiVersion = $api_version;
        }
    };
    ($model:ty, $resource_type:literal, $api_version:expr, tagged) => {
        impl $crate::models::ArmModel for $model {
            const RESOURCE_TYPE: &'static str = $resource_type;
            const API_VERSION: $crate::id::ApiVersion = $api_version;

            fn tags(&self) -> Option<&$crate::models::Tags> {
                self.tags.as_ref()
            }
        }
    };
}

mod common;
pub mod compute;
pub mod container_service;
pub mod network;
pub mod private_dns;
mod resource_group;
mod role_assignment;
mod user_assigned_identity;

pub use common::{ChildResource, ProvisioningState, Secret, Sku, SubResource, Tags, TrackedResource};
pub use resource_group::{ResourceGroup, ResourceGroupProperties};
pub use role_assignment::{PrincipalType, RoleAssignment, RoleAssignmentProperties};
pub use user_assigned_identity::{UserAssignedIdentity, UserAssignedIdentityProperties};

/// An ARM resource body: the resource type it describes and the api-version it follows. Every call
/// about the resource uses this api-version, so that what is sent and what is read back have the
/// shape of the model.
pub trait ArmModel: Serialize + DeserializeOwned {
    /// The full resource type, as it appears in ids and lists, such as
    /// `Microsoft.Network/virtualNetworks/subnets`.
    const RESOURCE_TYPE: &'static str;

    /// The api-version the model was written against.
    const API_VERSION: ApiVersion;

    /// Its tags; `None` for a type that takes none (a child resource, a role assignment).
    fn tags(&self) -> Option<&Tags> {
        None
    }
}

/// The id of the resource of model `M` named `name` under `parent`: a resource of `M`'s provider
/// in the scope `parent` (a resource group, a subscription) when `M` is a top-level type, else
/// the child of the resource `parent`.
///
/// # Errors
/// When `name` is not a valid name segment, or a child type has no resource as parent.
pub fn id_of<M: ArmModel>(parent: &ResourceId, name: &str) -> Result<ResourceId, IdError> {
    let mut segments = M::RESOURCE_TYPE.split('/');
    let namespace = segments.next().unwrap_or_default();
    let types: Vec<&str> = segments.collect();
    match types.as_slice() {
        [resource_type] => parent.provider(namespace, resource_type, name),
        [.., child] => parent.child(child, name),
        [] => parent.provider(namespace, "", name),
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::Value;

    /// Checks that a model read from `answer` writes back only what the answer said, spelt and
    /// valued as Azure did (ids compare ignoring case, as Azure compares them): what a model
    /// keeps of an answer survives a round trip.
    pub(super) fn assert_written_back(answer: &Value, model: &impl Serialize) {
        let written = serde_json::to_value(model).unwrap();
        assert_within(&written, answer, "");
    }

    fn assert_within(written: &Value, answer: &Value, path: &str) {
        match (written, answer) {
            (Value::Object(written), Value::Object(answer)) => {
                for (key, value) in written {
                    let inner = format!("{path}/{key}");
                    let said = answer
                        .iter()
                        .find(|(said, _)| said.eq_ignore_ascii_case(key))
                        .map(|(_, value)| value);
                    assert!(said.is_some(), "{inner} is written back but not in the answer");
                    assert_within(value, said.unwrap_or(&Value::Null), &inner);
                }
            }
            (Value::Array(written), Value::Array(answer)) => {
                assert_eq!(written.len(), answer.len(), "{path}");
                for (index, (value, said)) in written.iter().zip(answer).enumerate() {
                    assert_within(value, said, &format!("{path}/{index}"));
                }
            }
            (Value::String(written), Value::String(said)) => {
                assert!(written.eq_ignore_ascii_case(said), "{path}: {written} for {said}");
            }
            _ => assert_eq!(written, answer, "{path}"),
        }
    }

    #[test]
    fn a_round_trip_keeps_what_the_model_knows_as_azure_spelt_it() {
        let answer = serde_json::json!({
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/RG",
            "location": "westus2",
            "properties": {"provisioningState": "Succeeded", "unknown": [1, 2]}
        });
        let group: super::ResourceGroup = serde_json::from_value(answer.clone()).unwrap();
        assert_written_back(&answer, &group);
        assert_eq!(
            serde_json::to_value(&group).unwrap()["properties"],
            serde_json::json!({"provisioningState": "Succeeded"})
        );
    }
}
