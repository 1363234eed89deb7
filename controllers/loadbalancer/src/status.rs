//! What the loadbalancer controller writes: its conditions and operations in flight, on
//! AzureClusters and on the AzureMachines that get an SSH rule.

use std::fmt::Debug;

use capz_kit::api::AzureMachine;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::conditions::{Observation, unless_held};
use capz_kit::error::Error;
use capz_kit::filter::Reported;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::Category;
use capz_kit::progress::{Direction, Outcome};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::ID;

use capz_kit::status::{self, Report};

/// The condition types it owns on AzureClusters.
pub(crate) const OWNED: &[ConditionType] = &[
    ConditionType::PUBLIC_IPS_READY,
    ConditionType::LOAD_BALANCERS_READY,
];

/// The condition type it owns on AzureMachines.
pub(crate) const OWNED_ON_MACHINES: &[ConditionType] = &[ConditionType::INBOUND_NAT_RULES_READY];

/// Applies `observations` and `operations` when they change `object`'s status, among `owned`.
pub(crate) async fn publish<K>(
    api: &Api<K>,
    object: &K,
    owned: &[ConditionType],
    observations: Vec<Observation>,
    operations: &Operations,
) -> capz_kit::kube::Result<bool>
where
    K: Reported<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let report = Report {
        observations,
        operations: Some(operations),
        fields: (),
    };
    status::publish(api, &ID.field_manager(), owned, object, report).await
}

/// How people call what this controller keeps on machines.
pub(crate) const RULE: &str = "SSH inbound NAT rule";

/// Publishes `InboundNATRulesReady` on `machine` as a pass in `direction` found it, and tells
/// what to do next. Compute joins the interface to the rule while the condition holds: a check
/// that failed for a while says nothing about a rule that existed, and must not detach it.
pub(crate) async fn report_rule(
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    outcome: Outcome,
    direction: Direction,
    operations: &Operations,
) -> Result<Action, Error> {
    let observed = outcome.observation(ConditionType::INBOUND_NAT_RULES_READY, RULE, direction);
    let passing = matches!(&outcome, Outcome::Failed(failure)
        if matches!(failure.category(), Category::Transient | Category::Throttled));
    let observed = if passing && direction == Direction::Apply {
        unless_held(machine.conditions(), observed)
    } else {
        observed
    };
    publish(api, machine, OWNED_ON_MACHINES, vec![observed], operations).await?;
    outcome.next(direction)
}
