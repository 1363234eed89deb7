//! What the privatedns controller writes on an AzureCluster: its three conditions and its
//! operations in flight.

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::conditions::Observation;
use capz_kit::kube::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};

use crate::context::ID;

/// The condition types it owns.
pub(crate) const OWNED: &[ConditionType] = &[
    ConditionType::PRIVATE_DNS_ZONE_READY,
    ConditionType::PRIVATE_DNS_LINK_READY,
    ConditionType::PRIVATE_DNS_RECORD_READY,
];

/// Applies `observations` and `operations` when they change `object`'s status.
pub(crate) async fn publish(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    observations: Vec<Observation>,
    operations: &Operations,
) -> capz_kit::kube::Result<bool> {
    let report = Report {
        observations,
        operations: Some(operations),
        fields: (),
    };
    status::publish(api, &ID.field_manager(), OWNED, object, report).await
}
