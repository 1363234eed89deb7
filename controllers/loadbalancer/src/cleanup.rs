//! Deleting an AzureCluster's load balancers, then their public IPs ([`DELETION`]).
//!
//! Each balancer and IP goes individually, whether or not the resource group is ours. Leaving
//! them to the network controller's group delete would save a few calls, but the individual
//! deletes are correct in every case — a brought group, a group that is not deleted because
//! something else keeps it — and cost nothing once the group is gone (a missing resource counts
//! as deleted).

use capz_kit::api::AzureCluster;
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, each};

use crate::context::{ID, State};
use crate::plan::{DELETION, SERVICES, Unit, arm_client, expects, plan};
use crate::status::{OWNED, publish};

/// Deletes the load balancers, then their public IPs; `Ok` once both are gone, so that the
/// finalizer goes.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    port: i32,
) -> Result<Action, Error> {
    let Ok(plan) = plan(state, object, port) else {
        // A spec that never described valid load balancers created none.
        return Ok(Action::await_change());
    };
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Delete);
    let order: Vec<_> = DELETION.iter().filter(|step| expects(&plan, step.unit)).collect();
    match arm_client(state, object).await {
        Err(error) => steps.hold(order, Outcome::failed(error)),
        Ok(client) => {
            for step in order {
                let work = async {
                    match step.unit {
                        Unit::LoadBalancers => {
                            each(&client, &plan.load_balancers, &mut operations, Direction::Delete).await
                        }
                        Unit::PublicIps => {
                            let ips: Vec<_> = plan.public_ips.iter().map(|(ip, _)| ip.clone()).collect();
                            each(&client, &ips, &mut operations, Direction::Delete).await
                        }
                    }
                };
                steps.run(step, work).await;
            }
        }
    }
    let pass = steps.finish();
    publish(api, object, OWNED, pass.observations.clone(), &operations).await?;
    pass.next()
}
