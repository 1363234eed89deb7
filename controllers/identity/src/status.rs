//! What the identity controller writes on an AzureClusterIdentity: `Ready`, whether it signs in.

use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::conditions::Observation;
use capz_kit::kube::api::Api;
use capz_kit::status::{self, Report};

use crate::context::ID;

/// The condition types it owns.
const OWNED: &[ConditionType] = &[ConditionType::READY];

/// Applies `ready` when it changes the identity's status.
pub(crate) async fn publish(
    api: &Api<AzureClusterIdentity>,
    identity: &AzureClusterIdentity,
    ready: Observation,
) -> capz_kit::kube::Result<bool> {
    let report = Report {
        observations: vec![ready],
        operations: None,
        fields: (),
    };
    status::publish(api, &ID.field_manager(), OWNED, identity, report).await
}
