//! Bringing a live AzureCluster's network to its spec, step by step in [`plan::ORDER`]; a step
//! that fails or still runs holds back the ones after it, which report that they wait. Then the
//! roll-up: `Ready` from the controller's conditions, its peers' and the endpoint.

use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::common::{FailureDomainSpec, FailureDomains};
use capz_kit::apply::apply_annotations;
use capz_kit::azure::{ArmClient, ResourceId};
use capz_kit::conditions::Reason;
use capz_kit::error::{Error, Failure};
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::{Direction, Outcome, Steps, each, in_turn};
use capz_kit::resource::{self, AzureResource, Progress, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_resources::security_group::{LAST_APPLIED_ANNOTATION, LastApplied};
use capz_resources::subnet::Network;

use crate::context::{ID, State};
use crate::plan::{ORDER, Plan, SERVICES, Unit};
use crate::status::{self, publish};

/// How soon a cluster waiting for a controller that does not run is looked at again.
const ABSENT_PEER_RECHECK: Duration = Duration::from_secs(15);

/// A subnet the spec names is missing from the virtual network the user brought.
#[derive(Debug, thiserror::Error)]
#[error(
    "subnet {subnet} does not exist in the brought virtual network {network}: create it there, or name an \
     existing subnet in spec.networkSpec.subnets"
)]
struct SubnetMissing {
    subnet: String,
    network: String,
}

impl Classify for SubnetMissing {
    fn category(&self) -> Category {
        // The fix happens in Azure, not in the object: look again after a while.
        Category::Terminal
    }

    fn reason(&self) -> Reason {
        Reason::SUBNET_NOT_FOUND
    }
}

/// One pass over the network of a live AzureCluster.
struct Run<'a> {
    client: ArmClient,
    plan: &'a Plan,
    operations: &'a mut Operations,
    /// The security rules written from the spec, as Azure holds them.
    record: LastApplied,
    /// Whether the virtual network is the cluster's; known after its step.
    network: Network,
    failure_domains: Option<FailureDomains>,
}

impl Run<'_> {
    async fn apply(&mut self, unit: Unit) -> Outcome {
        let owned = self.network == Network::Owned;
        match unit {
            Unit::ResourceGroup => {
                brought(resource::reconcile(&self.client, &self.plan.group, self.operations).await).1
            }
            Unit::VirtualNetwork => {
                let (is_brought, outcome) =
                    brought(resource::reconcile(&self.client, &self.plan.network, self.operations).await);
                if is_brought {
                    self.network = Network::Brought;
                }
                outcome
            }
            Unit::SecurityGroups if owned => self.security_groups().await,
            Unit::RouteTables if owned => {
                each(
                    &self.client,
                    &self.plan.route_tables,
                    self.operations,
                    Direction::Apply,
                )
                .await
            }
            Unit::NatGateways if owned => self.nat_gateways().await,
            Unit::SecurityGroups | Unit::RouteTables | Unit::NatGateways => Outcome::Done,
            Unit::Subnets => self.subnets().await,
            Unit::Peerings => {
                in_turn(
                    &self.client,
                    &self.plan.peerings,
                    self.operations,
                    Direction::Apply,
                )
                .await
            }
            Unit::PrivateEndpoints => {
                each(
                    &self.client,
                    &self.plan.private_endpoints,
                    self.operations,
                    Direction::Apply,
                )
                .await
            }
        }
    }

    /// The failure domains of the location, once the network stands.
    async fn failure_domains(&mut self) -> Outcome {
        match failure_domains(&self.client, self.plan.scope()).await {
            Ok(found) => {
                self.failure_domains = found;
                Outcome::Done
            }
            Err(failure) => Outcome::Failed(failure),
        }
    }

    /// The security groups, noting the rules each holds once Azure has them as wanted (a
    /// finished write may be an older one, resumed).
    async fn security_groups(&mut self) -> Outcome {
        let mut outcome = Outcome::Done;
        for group in &self.plan.security_groups {
            let result = resource::reconcile(&self.client, group, self.operations).await;
            let holds = matches!(&result, Ok(Progress::Done(model)) if group.desired(Some(model)).is_none());
            self.record.record(group, holds);
            outcome.absorb(result);
        }
        outcome
    }

    /// The NAT gateways' public IPs, then the gateways once their addresses exist.
    async fn nat_gateways(&mut self) -> Outcome {
        let addresses: Vec<_> = self
            .plan
            .nat_gateways
            .iter()
            .map(|gateway| gateway.public_ip().clone())
            .collect();
        match each(&self.client, &addresses, self.operations, Direction::Apply).await {
            Outcome::Done => {
                each(
                    &self.client,
                    &self.plan.nat_gateways,
                    self.operations,
                    Direction::Apply,
                )
                .await
            }
            unfinished => unfinished,
        }
    }

    async fn subnets(&mut self) -> Outcome {
        let units = match self.plan.subnets(self.network) {
            Ok(units) => units,
            Err(error) => return Outcome::failed(error),
        };
        let mut outcome = Outcome::Done;
        for unit in &units {
            let result = resource::reconcile(&self.client, unit, self.operations).await;
            let in_flight = matches!(result, Ok(Progress::InProgress { .. }));
            match result {
                Err(ResourceError::Missing { id }) => outcome.fail(missing_subnet(&id)),
                other => {
                    outcome.absorb(other);
                }
            }
            // Azure runs one operation at a time on a virtual network and its subnets and refuses
            // another meanwhile (AnotherOperationInProgress), so the next subnet waits its turn.
            if in_flight {
                break;
            }
        }
        outcome
    }
}

/// Whether a unit's resource exists without the cluster's tag (brought by the user, which
/// counts as done), and the outcome.
fn brought<T>(result: Result<Progress<T>, ResourceError>) -> (bool, Outcome) {
    let mut outcome = Outcome::Done;
    match result {
        Err(ResourceError::NotOwned { .. }) => (true, outcome),
        other => {
            outcome.absorb(other);
            (false, outcome)
        }
    }
}

fn missing_subnet(id: &ResourceId) -> SubnetMissing {
    SubnetMissing {
        subnet: id.name().into_owned(),
        network: id.parent().map(|network| network.to_string()).unwrap_or_default(),
    }
}

/// The failure domains of the cluster's location: every zone, usable by the control plane unless
/// `spec.failureDomains` says otherwise; none for an extended location.
async fn failure_domains(
    client: &ArmClient,
    scope: &ClusterScope,
) -> Result<Option<FailureDomains>, Failure> {
    if scope.spec.class.extended_location.is_some() {
        return Ok(None);
    }
    let zones = capz_resources::location::zones(client, scope.subscription, &scope.location).await?;
    let overrides = scope.spec.class.failure_domains.as_ref();
    let domains: FailureDomains = zones
        .into_iter()
        .map(|zone| {
            let control_plane = overrides
                .and_then(|overrides| overrides.get(&zone))
                .and_then(|spec| spec.control_plane)
                .unwrap_or(true);
            (
                zone,
                FailureDomainSpec {
                    control_plane: Some(control_plane),
                    attributes: None,
                },
            )
        })
        .collect();
    Ok((!domains.is_empty()).then_some(domains))
}

/// Reconciles a live AzureCluster and applies its status when it changed.
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    api_server_port: i32,
) -> Result<Action, Error> {
    let fallback = state.settings.environment.subscription_id.as_deref();
    let recorded = LastApplied::from_annotations(object.annotations());
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Apply);
    let mut failure_domains = object
        .status
        .as_ref()
        .and_then(|status| status.failure_domains.clone());
    // A spec naming no valid subscription or names, or an identity that cannot be used: the
    // resources cannot even be looked at.
    let plan = match ClusterScope::new(object, state.features, fallback)
        .and_then(|scope| Plan::new(scope, api_server_port, &recorded))
    {
        Ok(plan) => Some(plan),
        Err(error) => {
            steps.record(
                ConditionType::NETWORK_INFRASTRUCTURE_READY,
                "network",
                Outcome::failed(error),
            );
            None
        }
    };
    if let Some(plan) = &plan {
        match state
            .identities
            .credential(ClusterIdentityRef::from(object))
            .await
        {
            Err(error) => steps.record(
                ConditionType::NETWORK_INFRASTRUCTURE_READY,
                "network",
                Outcome::failed(error),
            ),
            Ok(credential) => {
                let mut run = Run {
                    client: credential.arm_client(ID.user_agent()),
                    plan,
                    operations: &mut operations,
                    record: recorded.clone(),
                    network: Network::Owned,
                    failure_domains: None,
                };
                for step in ORDER.iter().filter(|step| plan.expects(step.unit)) {
                    steps.run(step, run.apply(step.unit)).await;
                }
                let infrastructure = ConditionType::NETWORK_INFRASTRUCTURE_READY;
                steps
                    .conclude(infrastructure, "network", run.failure_domains())
                    .await;
                if run.record != recorded {
                    let annotations =
                        [(LAST_APPLIED_ANNOTATION.to_owned(), run.record.to_annotation())].into();
                    apply_annotations(api, &ID.field_manager(), object, &annotations).await?;
                }
                if !steps.blocked() {
                    failure_domains = run.failure_domains;
                }
            }
        }
    }
    let spec = plan.as_ref().map_or(&object.spec, |plan| &plan.scope().spec);
    let absent = status::waiting_for_absent_peers(&state.presence, spec, object.conditions()).await;
    let mut pass = steps.finish();
    let ready = status::ready(spec, &pass.observations, object.conditions(), &absent);
    let was_ready = object.status.as_ref().and_then(|status| status.ready) == Some(true);
    let latched = was_ready || status::holds(&ready);
    pass.observations.push(ready);
    let observations = std::mem::take(&mut pass.observations);
    publish(
        api,
        object,
        observations,
        &operations,
        latched,
        failure_domains.as_ref(),
    )
    .await?;
    let action = pass.next()?;
    // A peer that starts writes its conditions, which wakes this controller; looking again after
    // a lease period also notices one whose first write changes nothing.
    Ok(if absent.is_empty() || action != Action::await_change() {
        action
    } else {
        Action::requeue(ABSENT_PEER_RECHECK)
    })
}
