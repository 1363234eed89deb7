//! What the network controller writes on an AzureCluster: its conditions, its operations in
//! flight, `status.ready` and `status.failureDomains`, and the roll-up into `Ready`.
//!
//! `Ready` sums up the controller's own conditions and those the other
//! cluster-level controllers publish, counting only the ones the spec calls for, plus the control
//! plane endpoint. When it does not hold it carries the most severe reason among them. A peer's
//! condition that does not hold while its controller does not run (or this release has none)
//! counts as `ControllerNotRunning`, naming the controller, rather than as a silent wait.

use capz_kit::api::AzureCluster;
use capz_kit::api::azurecluster::AzureClusterSpec;
use capz_kit::api::common::FailureDomains;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionStatus, ConditionType, Conditions};
use capz_kit::api::common::network::PrivateDnsZoneMode;
use capz_kit::api::controllers::Family;
use capz_kit::conditions::{Observation, Reason};
use capz_kit::kube::api::Api;
use capz_kit::operations::Operations;
use capz_kit::presence::{Presence, not_running};
use capz_kit::status::{self, Report};
use serde::Serialize;

use crate::context::ID;

const PUBLIC: &str = "Public";
const INTERNAL: &str = "Internal";

/// The peers' condition types `spec` calls for, with the family whose controller sets each.
fn expected_from_peers(spec: &AzureClusterSpec) -> Vec<(ConditionType, Family)> {
    let network = spec.network_spec.as_ref();
    let api_server = network.and_then(|network| network.api_server_lb.as_ref());
    let outbound = network.is_some_and(|network| {
        network.node_outbound_lb.is_some() || network.control_plane_outbound_lb.is_some()
    });
    let api_type = api_server.and_then(|lb| lb.class.type_.as_deref());
    let mut expected = Vec::new();
    if api_server.is_some() || outbound {
        expected.push((ConditionType::LOAD_BALANCERS_READY, Family::LoadBalancer));
    }
    if api_type == Some(PUBLIC) || outbound {
        expected.push((ConditionType::PUBLIC_IPS_READY, Family::LoadBalancer));
    }
    if spec
        .bastion_spec
        .as_ref()
        .is_some_and(|bastion| bastion.azure_bastion.is_some())
    {
        expected.push((ConditionType::BASTION_HOST_READY, Family::Bastion));
    }
    let private_dns = network.and_then(|network| network.private_dns_zone.as_ref());
    if api_type == Some(INTERNAL) && private_dns != Some(&PrivateDnsZoneMode::None) {
        expected.extend(
            [
                ConditionType::PRIVATE_DNS_ZONE_READY,
                ConditionType::PRIVATE_DNS_LINK_READY,
                ConditionType::PRIVATE_DNS_RECORD_READY,
            ]
            .map(|type_| (type_, Family::PrivateDns)),
        );
    }
    expected
}

/// The peers' conditions `spec` calls for that do not hold in `current` while the controller
/// that sets them does not run.
pub(crate) async fn waiting_for_absent_peers(
    presence: &Presence,
    spec: &AzureClusterSpec,
    current: Option<&Conditions>,
) -> Vec<(ConditionType, Family)> {
    let mut absent = Vec::new();
    for (type_, family) in expected_from_peers(spec) {
        let holds = current.is_some_and(|conditions| conditions.is_true(&type_));
        if !holds && !presence.running(family).await {
            absent.push((type_, family));
        }
    }
    absent
}

/// How much a condition that does not hold weighs: errors before warnings before progress.
fn weight(severity: Option<ConditionSeverity>) -> u8 {
    match severity {
        Some(ConditionSeverity::Error) => 3,
        Some(ConditionSeverity::Warning) => 2,
        Some(ConditionSeverity::Info) => 1,
        None => 0,
    }
}

/// Whether an observation says its condition holds.
pub(crate) fn holds(observation: &Observation) -> bool {
    observation.status == ConditionStatus::True
}

/// `Ready` from the controller's own observations of this reconcile and the peers' conditions
/// on the object; `absent` are the peers' conditions whose controller does not run. `spec` is
/// the defaulted spec.
pub(crate) fn ready(
    spec: &AzureClusterSpec,
    own: &[Observation],
    current: Option<&Conditions>,
    absent: &[(ConditionType, Family)],
) -> Observation {
    let missing = |type_: &ConditionType| absent.iter().find(|(absent, _)| absent == type_);
    let peers = expected_from_peers(spec).into_iter().map(|(type_, _)| {
        if let Some((_, family)) = missing(&type_) {
            return not_running(type_, *family);
        }
        match current.and_then(|conditions| conditions.get(&type_)) {
            Some(condition) => Observation {
                type_,
                status: condition.status,
                severity: condition.severity,
                reason: condition.reason.clone().map(Into::into),
                message: condition.message.clone(),
            },
            None => Observation::fails(
                type_.clone(),
                Reason::WAITING_FOR_DEPENDENCY,
                ConditionSeverity::Info,
                format!("waiting for {type_}"),
            ),
        }
    });
    // A peer's condition this controller reports on in the peer's stead (a field not acted on
    // yet) counts once, as the peer's.
    let all: Vec<Observation> = own
        .iter()
        .filter(|observation| {
            observation.type_ != ConditionType::READY && missing(&observation.type_).is_none()
        })
        .cloned()
        .chain(peers)
        .collect();
    let worst = all.iter().filter(|observation| !holds(observation)).fold(
        None::<&Observation>,
        |worst, candidate| match worst {
            Some(worst) if weight(worst.severity) >= weight(candidate.severity) => Some(worst),
            _ => Some(candidate),
        },
    );
    if let Some(worst) = worst {
        return Observation {
            type_: ConditionType::READY,
            status: ConditionStatus::False,
            severity: worst.severity.or(Some(ConditionSeverity::Info)),
            reason: worst.reason.clone().or(Some(Reason::WAITING_FOR_DEPENDENCY)),
            message: worst
                .message
                .clone()
                .or_else(|| Some(format!("{} is {:?}", worst.type_, worst.status))),
        };
    }
    let endpoint = spec.control_plane_endpoint.as_ref();
    let endpoint_set = endpoint.is_some_and(|endpoint| {
        endpoint.host.as_deref().is_some_and(|host| !host.is_empty())
            && endpoint.port.is_some_and(|port| port > 0)
    });
    if !endpoint_set {
        return Observation::fails(
            ConditionType::READY,
            Reason::WAITING_FOR_CONTROL_PLANE_ENDPOINT,
            ConditionSeverity::Info,
            "waiting for spec.controlPlaneEndpoint: set by the loadbalancer controller, or by the user when \
             controlPlaneEnabled is false",
        );
    }
    Observation::holds(ConditionType::READY)
}

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
    ConditionType::NETWORK_INFRASTRUCTURE_READY,
    ConditionType::READY,
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
    use capz_kit::api::common::conditions::Condition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn spec(json: &serde_json::Value) -> AzureClusterSpec {
        let mut cluster: capz_kit::api::AzureCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": "c1", "namespace": "default"},
            "spec": json,
        }))
        .unwrap();
        capz_rules::azurecluster::default_cluster(&mut cluster, capz_rules::Features::default());
        cluster.spec
    }

    fn peer(type_: ConditionType, status: ConditionStatus) -> Condition {
        Condition {
            type_,
            status,
            severity: (status != ConditionStatus::True).then_some(ConditionSeverity::Warning),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            reason: (status != ConditionStatus::True).then(|| "Failed".to_owned()),
            message: None,
        }
    }

    #[test]
    fn ready_needs_the_peers_the_spec_calls_for_and_the_endpoint() {
        let own = [Observation::holds(ConditionType::VNET_READY)];
        let public = spec(&serde_json::json!({"location": "westeurope"}));
        let waiting = ready(&public, &own, None, &[]);
        assert_eq!(waiting.reason, Some(Reason::WAITING_FOR_DEPENDENCY));
        assert_eq!(waiting.message.as_deref(), Some("waiting for LoadBalancersReady"));

        let failing = Conditions(vec![
            peer(ConditionType::LOAD_BALANCERS_READY, ConditionStatus::True),
            peer(ConditionType::PUBLIC_IPS_READY, ConditionStatus::False),
        ]);
        let worst = ready(&public, &own, Some(&failing), &[]);
        assert_eq!(worst.severity, Some(ConditionSeverity::Warning));
        assert_eq!(worst.reason, Some(Reason::FAILED));

        let peers_ok = Conditions(vec![
            peer(ConditionType::LOAD_BALANCERS_READY, ConditionStatus::True),
            peer(ConditionType::PUBLIC_IPS_READY, ConditionStatus::True),
        ]);
        let no_endpoint = ready(&public, &own, Some(&peers_ok), &[]);
        assert_eq!(
            no_endpoint.reason,
            Some(Reason::WAITING_FOR_CONTROL_PLANE_ENDPOINT)
        );
        let mut with_endpoint = public.clone();
        with_endpoint.control_plane_endpoint = Some(capz_kit::api::common::ApiEndpoint {
            host: Some("c1.westeurope.cloudapp.azure.com".into()),
            port: Some(6443),
        });
        assert!(holds(&ready(&with_endpoint, &own, Some(&peers_ok), &[])));
    }

    #[test]
    fn an_own_error_outweighs_a_peer_in_progress_and_private_clusters_expect_dns() {
        let own = [Observation::fails(
            ConditionType::SUBNETS_READY,
            Reason::SUBNET_NOT_FOUND,
            ConditionSeverity::Error,
            "missing",
        )];
        let worst = ready(
            &spec(&serde_json::json!({"location": "westeurope"})),
            &own,
            None,
            &[],
        );
        assert_eq!(worst.reason, Some(Reason::SUBNET_NOT_FOUND));

        let internal = spec(&serde_json::json!({
            "location": "westeurope",
            "networkSpec": {"apiServerLB": {"type": "Internal"}},
            "bastionSpec": {"azureBastion": {}},
        }));
        let expected: Vec<ConditionType> = expected_from_peers(&internal)
            .into_iter()
            .map(|(type_, _)| type_)
            .collect();
        assert!(expected.contains(&ConditionType::PRIVATE_DNS_RECORD_READY));
        assert!(expected.contains(&ConditionType::BASTION_HOST_READY));
        assert!(!expected.contains(&ConditionType::PUBLIC_IPS_READY));
        let external = spec(&serde_json::json!({"location": "westeurope", "controlPlaneEnabled": false}));
        assert!(expected_from_peers(&external).is_empty());
    }

    #[test]
    fn a_peer_that_does_not_run_is_named_instead_of_waited_for() {
        let own = [
            Observation::holds(ConditionType::VNET_READY),
            Observation::fails(
                ConditionType::BASTION_HOST_READY,
                Reason::NOT_SUPPORTED,
                ConditionSeverity::Warning,
                "not acted on",
            ),
        ];
        let internal = spec(&serde_json::json!({
            "location": "westeurope",
            "networkSpec": {"apiServerLB": {"type": "Internal"}},
        }));
        let absent = [(ConditionType::PRIVATE_DNS_ZONE_READY, Family::PrivateDns)];
        let blocked = ready(&internal, &own[..1], None, &absent);
        assert_eq!(blocked.reason, Some(Reason::CONTROLLER_NOT_RUNNING));
        assert!(blocked.message.unwrap().contains("privatedns"));
        // A peer's condition the controller reports in the peer's stead counts as the peer's.
        let bastion =
            spec(&serde_json::json!({"location": "westeurope", "bastionSpec": {"azureBastion": {}}}));
        let absent = [(ConditionType::BASTION_HOST_READY, Family::Bastion)];
        let blocked = ready(&bastion, &own, None, &absent);
        assert_eq!(
            blocked.reason,
            Some(Reason::CONTROLLER_NOT_RUNNING),
            "{blocked:?}"
        );
    }

    use capz_rules::support::{Kind, Support};

    #[test]
    fn no_azure_cluster_field_waits_on_a_condition_nobody_reports() {
        // The network controller reports no field of the matrix on a condition of its own: one
        // added there must be reported here too (`capz_kit::conditions::not_yet`).
        for entry in Kind::AzureCluster.entries() {
            if let Support::NotYet(not_yet) = &entry.support {
                assert_eq!(not_yet.condition, None, "{}", entry.field);
            }
        }
    }
}
