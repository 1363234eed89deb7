//! Deleting an AzureCluster's private DNS ([`DELETION`]): the API server's records, then the
//! links, then the zone. Each goes individually, wherever it lives: the zone may sit in a group
//! the cluster does not own, and a peered network's link is not in the cluster's group at all.
//! Links and a zone without the cluster's tag are the user's and stay.

use capz_kit::api::AzureCluster;
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, each};
use capz_kit::resource;

use crate::context::{ID, State};
use crate::plan::{DELETION, SERVICES, Unit, plan};
use crate::status::publish;

/// Deletes the records, links and zone; `Ok` once they are gone, so that the finalizer goes.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    _port: i32,
) -> Result<Action, Error> {
    let Ok(Some(plan)) = plan(state, object) else {
        // No private DNS, or a spec that never described a valid one: nothing was created.
        return Ok(Action::await_change());
    };
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Delete);
    match state
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await
    {
        Err(error) => steps.hold(DELETION, Outcome::failed(error)),
        Ok(credential) => {
            let client = credential.arm_client(ID.user_agent());
            for step in DELETION {
                let work = async {
                    let mut outcome = Outcome::Done;
                    match step.unit {
                        Unit::Records => {
                            if let Some(a) = &plan.records.a {
                                outcome.absorb(resource::delete(&client, a, &mut operations).await);
                            }
                            if let Some(aaaa) = &plan.records.aaaa {
                                outcome.absorb(resource::delete(&client, aaaa, &mut operations).await);
                            }
                        }
                        Unit::Links => {
                            outcome = each(&client, &plan.links, &mut operations, Direction::Delete).await;
                        }
                        Unit::Zone => {
                            outcome.absorb(resource::delete(&client, &plan.zone, &mut operations).await);
                        }
                    }
                    outcome
                };
                steps.run(step, work).await;
            }
        }
    }
    let pass = steps.finish();
    publish(api, object, pass.observations.clone(), &operations).await?;
    pass.next()
}
