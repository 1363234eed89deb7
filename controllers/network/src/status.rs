//! What the network controller writes on an AzureCluster: its conditions (and `Ready`), its
//! operations in flight, `status.ready` and `status.failureDomains`.

use capz_kit::api::AzureCluster;
use capz_kit::api::common::FailureDomains;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::conditions::Observation;
use capz_kit::kube::api::Api;
use capz_kit::operations::Operations;
use capz_kit::status::{self, Report};
use serde::Serialize;

use crate::context::ID;

/// The condition types the controller writes on AzureClusters.
pub(crate) const OWNED: &[ConditionType] = &[
    ConditionType::RESOURCE_GROUP_READY,
    ConditionType::VNET_READY,
    ConditionType::SECURITY_GROUPS_READY,
    ConditionType::ROUTE_TABLES_READY,
    ConditionType::NAT_GATEWAYS_READY,
    ConditionType::SUBNETS_READY,
    ConditionType::VNET_PEERING_READY,
    ConditionType::PRIVATE_ENDPOINTS_READY,
    ConditionType::BASTION_HOST_READY,
    ConditionType::NETWORK_INFRASTRUCTURE_READY,
    ConditionType::READY,
];

/// The conditions the controller reports the AzureCluster fields on that capz-rs does not act
/// on yet (`capz_rules::support`); they count in `Ready` like its others. No other controller
/// reports on them: `BastionHostReady` is the network controller's until a bastion controller
/// builds bastions.
pub(crate) const NOT_YET: &[ConditionType] = &[
    ConditionType::VNET_PEERING_READY,
    ConditionType::PRIVATE_ENDPOINTS_READY,
    ConditionType::BASTION_HOST_READY,
];

/// The status fields beside conditions and operations.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Fields<'a> {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_domains: Option<&'a FailureDomains>,
}

/// Applies `observations`, `operations`, `ready` and `failure_domains` when they change the
/// object's status; a steady state writes nothing.
pub(crate) async fn publish(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    observations: Vec<Observation>,
    operations: &Operations,
    ready: bool,
    failure_domains: Option<&FailureDomains>,
) -> capz_kit::kube::Result<bool> {
    let report = Report {
        observations,
        operations: Some(operations),
        fields: Fields {
            ready,
            failure_domains,
        },
    };
    status::publish(api, &ID.field_manager(), OWNED, object, report).await
}

#[cfg(test)]
mod tests {
    use capz_rules::support::{Kind, Support};

    use super::{NOT_YET, OWNED};

    #[test]
    fn every_condition_the_matrix_names_for_azure_clusters_is_reported_here() {
        for entry in Kind::AzureCluster.entries() {
            if let Support::NotYet(not_yet) = &entry.support
                && let Some(condition) = &not_yet.condition
            {
                assert!(NOT_YET.contains(condition), "{}: {condition}", entry.field);
            }
        }
        assert!(NOT_YET.iter().all(|type_| OWNED.contains(type_)));
    }
}
