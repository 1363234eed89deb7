//! Bringing an AzureCluster's private DNS to the spec, in [`ORDER`], once the network controller
//! has built the resource group and the virtual network the zone and its first link need. A zone
//! or link that exists without the cluster's tag is the user's and is used as it is.

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::controllers::Family;
use capz_kit::azure::ArmClient;
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, waiting_on};
use capz_kit::resource;

use crate::context::{ID, State};
use crate::plan::{ORDER, Plan, SERVICES, Unit, plan};
use crate::status::publish;

/// What the network controller has not provided yet.
fn missing_dependency(object: &AzureCluster) -> Option<String> {
    if !object.holds(&ConditionType::RESOURCE_GROUP_READY) {
        return Some("waiting for the resource group: ResourceGroupReady is not True".to_owned());
    }
    (!object.holds(&ConditionType::VNET_READY))
        .then(|| "waiting for the virtual network to link: VNetReady is not True".to_owned())
}

/// Brings one step's units to the spec.
async fn apply_step(client: &ArmClient, plan: &Plan, unit: Unit, operations: &mut Operations) -> Outcome {
    match unit {
        Unit::Zone => {
            let zone = &plan.zone;
            let mut outcome = Outcome::Done;
            outcome.absorb(
                resource::reconcile_or_use(client, zone, || zone.clone().brought(), operations).await,
            );
            outcome
        }
        Unit::Links => {
            let mut outcome = Outcome::Done;
            for link in &plan.links {
                outcome.absorb(
                    resource::reconcile_or_use(client, link, || link.clone().brought(), operations).await,
                );
            }
            outcome
        }
        Unit::Records => {
            let mut outcome = Outcome::Done;
            if let Some(a) = &plan.records.a {
                outcome.absorb(resource::reconcile(client, a, operations).await);
            }
            if let Some(aaaa) = &plan.records.aaaa {
                outcome.absorb(resource::reconcile(client, aaaa, operations).await);
            }
            outcome
        }
    }
}

/// Brings the cluster's private DNS to the spec and reports each step.
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    _port: i32,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Apply);
    match plan(state, object) {
        Err(error) => steps.hold(ORDER, Outcome::failed(error)),
        // A public API server, or resolution the user provides: nothing to do.
        Ok(None) => {}
        Ok(Some(plan)) => {
            if let Some(waiting) = missing_dependency(object) {
                let outcome = waiting_on(&state.presence, &[Family::Network], waiting).await;
                steps.hold(ORDER, outcome);
            } else {
                match state
                    .identities
                    .credential(ClusterIdentityRef::from(object))
                    .await
                {
                    Err(error) => steps.hold(ORDER, Outcome::failed(error)),
                    Ok(credential) => {
                        let client = credential.arm_client(ID.user_agent());
                        for step in ORDER {
                            steps
                                .run(step, apply_step(&client, &plan, step.unit, &mut operations))
                                .await;
                        }
                    }
                }
            }
        }
    }
    let pass = steps.finish();
    publish(api, object, pass.observations.clone(), &operations).await?;
    pass.next()
}
