//! Bringing a live AzureCluster's network to its spec, in order: resource group, virtual network,
//! security groups, route tables, NAT gateways with their public IPs, subnets. A step that fails
//! or still runs holds back the ones after it, which report that they wait.
//!
//! The virtual network comes before the security groups and route tables because whether it is
//! the cluster's decides the rest: in a network the user brought, the controller creates neither
//! security groups, route tables nor NAT gateways (the subnets there are the user's, so nothing
//! would use them), and only checks that the subnets the spec names exist.

use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType, Conditions};
use capz_kit::api::common::{FailureDomainSpec, FailureDomains};
use capz_kit::apply::apply_annotations;
use capz_kit::azure::{ArmClient, ResourceId};
use capz_kit::conditions::{self, Observation, Reason, unless_held};
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::resource::{self, AzureResource, Progress, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_resources::security_group::{LAST_APPLIED_ANNOTATION, LastApplied};
use capz_resources::subnet::Network;
use capz_rules::support::Kind;

use crate::plan::Plan;
use crate::{
    Context, Error, ID, Report, SERVICES, current_conditions, current_operations, next, publish, rollup,
};

/// How soon a cluster waiting for a controller that does not run is looked at again.
const ABSENT_PEER_RECHECK: Duration = Duration::from_secs(15);

/// A failure that goes into a condition and decides the requeue.
pub(crate) type Failure = Box<dyn Classify + Send + Sync>;

/// How one condition's resources stand after a reconcile.
#[derive(Debug, Default)]
pub(crate) enum Outcome {
    /// All there as wanted.
    #[default]
    Done,
    /// An operation runs; poll after Azure's hint.
    InFlight(Option<Duration>),
    /// Something failed.
    Failed(Failure),
}

impl Outcome {
    /// Folds one resource's result in: a failure outweighs an operation in flight. Gives the
    /// resource when it is done.
    pub(crate) fn absorb<T>(&mut self, result: Result<Progress<T>, ResourceError>) -> Option<T> {
        match result {
            Ok(Progress::Done(model)) => Some(model),
            Ok(Progress::InProgress { retry_after }) => {
                match self {
                    Self::Done => *self = Self::InFlight(retry_after),
                    Self::InFlight(hint) => *hint = (*hint).min(retry_after).or(retry_after),
                    Self::Failed(_) => {}
                }
                None
            }
            Err(error) => {
                self.fail(Box::new(error));
                None
            }
        }
    }

    fn fail(&mut self, failure: Failure) {
        if !matches!(self, Self::Failed(_)) {
            *self = Self::Failed(failure);
        }
    }
}

/// The observation of `type_` from `outcome`; `what` names its resources for people.
pub(crate) fn observation(
    type_: ConditionType,
    what: &str,
    outcome: &Outcome,
    action: Reason,
) -> Observation {
    match outcome {
        Outcome::Done => Observation::holds(type_),
        Outcome::InFlight(_) => Observation::fails(
            type_,
            action,
            ConditionSeverity::Info,
            format!("{what}: an Azure operation is in progress"),
        ),
        Outcome::Failed(failure) => failed(type_, failure.as_ref()),
    }
}

/// Whether the step could not look at its resources because Azure throttled the caller.
fn throttled(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Failed(failure) if failure.category() == Category::Throttled)
}

/// The observation of `type_` from `outcome`, where a throttled step keeps a condition that
/// holds in `current`.
fn checked_observation(
    current: Option<&Conditions>,
    type_: ConditionType,
    what: &str,
    outcome: &Outcome,
) -> Observation {
    let observed = observation(type_, what, outcome, Reason::CREATING);
    if throttled(outcome) {
        unless_held(current, observed)
    } else {
        observed
    }
}

/// The observation of `type_` for `failure`: its reason and message, a warning when retrying
/// soon may help, an error when the user has to act.
pub(crate) fn failed(type_: ConditionType, failure: &(dyn Classify + Send + Sync)) -> Observation {
    Observation::fails(
        type_,
        failure.reason(),
        failure.category().severity(),
        failure.to_string(),
    )
}

/// The conditions of a pipeline of steps, and how the first unfinished step ended.
struct Pipeline<'a> {
    /// The object's conditions before this pass.
    current: Option<&'a Conditions>,
    observations: Vec<Observation>,
    blocker: Option<(ConditionType, Outcome)>,
}

impl<'a> Pipeline<'a> {
    fn new(current: Option<&'a Conditions>) -> Self {
        Self {
            current,
            observations: Vec::new(),
            blocker: None,
        }
    }

    fn blocked(&self) -> bool {
        self.blocker.is_some()
    }

    /// Records a step's outcome; an unfinished one holds back the steps after it.
    fn record(&mut self, type_: ConditionType, what: &str, outcome: Outcome) {
        self.observations
            .push(checked_observation(self.current, type_.clone(), what, &outcome));
        if !matches!(outcome, Outcome::Done) {
            self.blocker = Some((type_, outcome));
        }
    }

    /// Reports a step that cannot run before the one that holds it back.
    fn wait(&mut self, type_: ConditionType) {
        let waiting_for = self
            .blocker
            .as_ref()
            .map(|(blocker, _)| blocker.to_string())
            .unwrap_or_default();
        let waiting = Observation::fails(
            type_,
            Reason::WAITING_FOR_DEPENDENCY,
            ConditionSeverity::Info,
            format!("waiting for {waiting_for}"),
        );
        // Held back by throttling, the step was not looked at: what it was stays.
        let throttled = self
            .blocker
            .as_ref()
            .is_some_and(|(_, outcome)| throttled(outcome));
        self.observations.push(if throttled {
            unless_held(self.current, waiting)
        } else {
            waiting
        });
    }
}

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

/// Reconciles every unit of `units` independently, folding their results into one outcome.
async fn each<R: AzureResource>(client: &ArmClient, units: &[R], operations: &mut Operations) -> Outcome {
    let mut outcome = Outcome::Done;
    for unit in units {
        outcome.absorb(resource::reconcile(client, unit, operations).await);
    }
    outcome
}

/// Whether a unit's resource exists without the cluster's tag: brought by the user.
fn brought<T>(result: Result<Progress<T>, ResourceError>) -> (bool, Result<Progress<T>, ResourceError>) {
    match result {
        Err(ResourceError::NotOwned { .. }) => (true, Ok(Progress::InProgress { retry_after: None })),
        other => (false, other),
    }
}

/// Runs the steps of `plan`; the pipeline says how far they got.
async fn steps<'a>(
    client: &ArmClient,
    plan: &Plan,
    current: Option<&'a Conditions>,
    record: &mut LastApplied,
    operations: &mut Operations,
) -> Pipeline<'a> {
    let mut pipeline = Pipeline::new(current);
    let (group_brought, result) = brought(resource::reconcile(client, &plan.group, operations).await);
    let mut outcome = Outcome::Done;
    if !group_brought {
        outcome.absorb(result);
    }
    pipeline.record(ConditionType::RESOURCE_GROUP_READY, "resource group", outcome);

    let mut network = Network::Owned;
    if pipeline.blocked() {
        pipeline.wait(ConditionType::VNET_READY);
    } else {
        let (vnet_brought, result) = brought(resource::reconcile(client, &plan.network, operations).await);
        let mut outcome = Outcome::Done;
        if vnet_brought {
            network = Network::Brought;
        } else {
            outcome.absorb(result);
        }
        pipeline.record(ConditionType::VNET_READY, "virtual network", outcome);
    }

    let owned = network == Network::Owned;
    if pipeline.blocked() {
        pipeline.wait(ConditionType::SECURITY_GROUPS_READY);
    } else {
        let outcome = if owned {
            security_groups(client, plan, record, operations).await
        } else {
            Outcome::Done
        };
        pipeline.record(ConditionType::SECURITY_GROUPS_READY, "security groups", outcome);
    }
    if !plan.route_tables.is_empty() {
        if pipeline.blocked() {
            pipeline.wait(ConditionType::ROUTE_TABLES_READY);
        } else {
            let outcome = if owned {
                each(client, &plan.route_tables, operations).await
            } else {
                Outcome::Done
            };
            pipeline.record(ConditionType::ROUTE_TABLES_READY, "route tables", outcome);
        }
    }
    if !plan.nat_gateways.is_empty() {
        if pipeline.blocked() {
            pipeline.wait(ConditionType::NAT_GATEWAYS_READY);
        } else {
            let outcome = if owned {
                nat_gateways(client, plan, operations).await
            } else {
                Outcome::Done
            };
            pipeline.record(ConditionType::NAT_GATEWAYS_READY, "NAT gateways", outcome);
        }
    }
    if pipeline.blocked() {
        pipeline.wait(ConditionType::SUBNETS_READY);
    } else {
        let outcome = subnets(client, plan, network, operations).await;
        pipeline.record(ConditionType::SUBNETS_READY, "subnets", outcome);
    }
    pipeline
}

/// The security groups, noting in `record` the rules each holds once Azure has them as wanted (a
/// finished write may be an older one, resumed).
async fn security_groups(
    client: &ArmClient,
    plan: &Plan,
    record: &mut LastApplied,
    operations: &mut Operations,
) -> Outcome {
    let mut outcome = Outcome::Done;
    for group in &plan.security_groups {
        let result = resource::reconcile(client, group, operations).await;
        let holds = matches!(&result, Ok(Progress::Done(model)) if group.desired(Some(model)).is_none());
        record.record(group, holds);
        outcome.absorb(result);
    }
    outcome
}

/// The NAT gateways' public IPs, then the gateways once their addresses exist.
async fn nat_gateways(client: &ArmClient, plan: &Plan, operations: &mut Operations) -> Outcome {
    let addresses: Vec<_> = plan
        .nat_gateways
        .iter()
        .map(|gateway| gateway.public_ip().clone())
        .collect();
    match each(client, &addresses, operations).await {
        Outcome::Done => each(client, &plan.nat_gateways, operations).await,
        unfinished => unfinished,
    }
}

async fn subnets(client: &ArmClient, plan: &Plan, network: Network, operations: &mut Operations) -> Outcome {
    let units = match plan.subnets(network) {
        Ok(units) => units,
        Err(error) => return Outcome::Failed(Box::new(error)),
    };
    let mut outcome = Outcome::Done;
    for unit in &units {
        let result = resource::reconcile(client, unit, operations).await;
        let in_flight = matches!(result, Ok(Progress::InProgress { .. }));
        match result {
            Err(ResourceError::Missing { id }) => outcome.fail(Box::new(missing_subnet(&id))),
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
    let zones = capz_resources::location::zones(client, scope.subscription, &scope.location)
        .await
        .map_err(|error| Box::new(error) as Failure)?;
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
pub(crate) async fn reconcile(
    context: &Context,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    api_server_port: i32,
) -> Result<Action, Error> {
    let fallback = context.settings.environment.subscription_id.as_deref();
    let recorded = LastApplied::from_annotations(object.annotations());
    let plan = match ClusterScope::new(object, context.features, fallback)
        .and_then(|scope| Plan::new(scope, api_server_port, &recorded))
    {
        Ok(plan) => plan,
        Err(error) => {
            let error = Outcome::Failed(Box::new(error));
            let operations = Operations::owned(current_operations(object), ID.name(), SERVICES);
            return unreachable(context, api, object, &operations, error).await;
        }
    };
    let mut operations = Operations::owned(current_operations(object), ID.name(), SERVICES);
    let client = match context
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await
    {
        Ok(credential) => credential.arm_client(ID.user_agent()),
        Err(error) => {
            let error = Outcome::Failed(Box::new(error));
            return unreachable(context, api, object, &operations, error).await;
        }
    };
    let mut record = recorded.clone();
    let pipeline = steps(
        &client,
        &plan,
        current_conditions(object),
        &mut record,
        &mut operations,
    )
    .await;
    if record != recorded {
        let annotations = [(LAST_APPLIED_ANNOTATION.to_owned(), record.to_annotation())].into();
        apply_annotations(api, &ID.field_manager(), object, &annotations).await?;
    }
    let current = object.status.as_ref();
    let mut domains = current.and_then(|status| status.failure_domains.clone());
    let infrastructure = match pipeline.blocker {
        Some((_, outcome)) => outcome,
        None => match failure_domains(&client, plan.scope()).await {
            Ok(found) => {
                domains = found;
                Outcome::Done
            }
            Err(failure) => Outcome::Failed(failure),
        },
    };
    let mut observations = pipeline.observations;
    // What the spec asks for that the controller does not build yet: reported, never ignored.
    observations.extend(conditions::not_yet(Kind::AzureCluster, object, crate::NOT_YET));
    observations.push(checked_observation(
        current_conditions(object),
        ConditionType::NETWORK_INFRASTRUCTURE_READY,
        "network",
        &infrastructure,
    ));
    let spec = &plan.scope().spec;
    let absent = rollup::waiting_for_absent_peers(&context.presence, spec, current_conditions(object)).await;
    let ready = rollup::ready(spec, &observations, current_conditions(object), &absent);
    let latched = current.and_then(|status| status.ready) == Some(true) || rollup::holds(&ready);
    observations.push(ready);
    publish(
        api,
        object,
        Report {
            observations,
            ready: Some(latched),
            failure_domains: domains.as_ref(),
            operations: &operations,
        },
    )
    .await?;
    let action = next(infrastructure)?;
    // A peer that starts writes its conditions, which wakes this controller; looking again after
    // a lease period also notices one whose first write changes nothing.
    Ok(if absent.is_empty() || action != Action::await_change() {
        action
    } else {
        Action::requeue(ABSENT_PEER_RECHECK)
    })
}

/// Reports a cluster whose Azure resources cannot even be looked at: its spec names no valid
/// subscription or names, or its identity cannot be used.
async fn unreachable(
    context: &Context,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    operations: &Operations,
    failure: Outcome,
) -> Result<Action, Error> {
    let mut observations = vec![observation(
        ConditionType::NETWORK_INFRASTRUCTURE_READY,
        "network",
        &failure,
        Reason::CREATING,
    )];
    let absent =
        rollup::waiting_for_absent_peers(&context.presence, &object.spec, current_conditions(object)).await;
    let ready = rollup::ready(&object.spec, &observations, current_conditions(object), &absent);
    observations.push(ready);
    let current = object.status.as_ref();
    publish(
        api,
        object,
        Report {
            observations,
            ready: Some(current.and_then(|status| status.ready) == Some(true)),
            failure_domains: current.and_then(|status| status.failure_domains.as_ref()),
            operations,
        },
    )
    .await?;
    next(failure)
}

#[cfg(test)]
mod tests {
    use capz_kit::api::common::conditions::{ConditionStatus, Conditions};
    use capz_kit::azure::ArmError;
    use capz_kit::conditions::observe;
    use capz_kit::k8s_openapi::jiff::Timestamp;

    use super::*;

    fn failed(error: ArmError) -> Outcome {
        Outcome::Failed(Box::new(error))
    }

    fn status(pipeline: &Pipeline<'_>, type_: &ConditionType) -> ConditionStatus {
        pipeline
            .observations
            .iter()
            .find(|observation| &observation.type_ == type_)
            .map(|observation| observation.status)
            .unwrap()
    }

    #[test]
    fn a_throttled_step_keeps_what_held_and_other_failures_do_not() {
        let current = Conditions(observe(
            None,
            [
                Observation::holds(ConditionType::VNET_READY),
                Observation::holds(ConditionType::SUBNETS_READY),
                Observation::fails(
                    ConditionType::SECURITY_GROUPS_READY,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating",
                ),
            ],
            Timestamp::now(),
        ));
        let mut throttled = Pipeline::new(Some(&current));
        throttled.record(
            ConditionType::VNET_READY,
            "virtual network",
            failed(ArmError::Throttled {
                retry_after: Duration::from_secs(1),
            }),
        );
        throttled.wait(ConditionType::SECURITY_GROUPS_READY);
        throttled.wait(ConditionType::SUBNETS_READY);
        assert!(throttled.blocked());
        assert_eq!(
            status(&throttled, &ConditionType::VNET_READY),
            ConditionStatus::True
        );
        assert_eq!(
            status(&throttled, &ConditionType::SUBNETS_READY),
            ConditionStatus::True
        );
        assert_eq!(
            status(&throttled, &ConditionType::SECURITY_GROUPS_READY),
            ConditionStatus::False
        );

        let mut broken = Pipeline::new(Some(&current));
        let unavailable = ArmError::UnexpectedAnswer("the server failed".into());
        broken.record(ConditionType::VNET_READY, "virtual network", failed(unavailable));
        broken.wait(ConditionType::SUBNETS_READY);
        assert_eq!(
            status(&broken, &ConditionType::VNET_READY),
            ConditionStatus::False
        );
        assert_eq!(
            status(&broken, &ConditionType::SUBNETS_READY),
            ConditionStatus::False
        );
    }
}
