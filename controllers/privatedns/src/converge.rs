//! How each step of a cluster's private DNS is brought to the spec or deleted. A zone or link
//! that exists without the cluster's tag is the user's: it is used as it is and never deleted.

use capz_kit::azure::ArmClient;
use capz_kit::azure_cluster;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, each, fold_each};
use capz_kit::resource;

use crate::plan::{Plan, Unit};

impl azure_cluster::Plan for Plan {
    type Unit = Unit;

    async fn converge(
        &self,
        client: &ArmClient,
        unit: &Unit,
        operations: &mut Operations,
        direction: Direction,
    ) -> Outcome {
        let mut outcome = Outcome::Done;
        match (unit, direction) {
            (Unit::Zone, Direction::Apply) => {
                let zone = &self.zone;
                outcome.absorb(
                    resource::reconcile_or_use(client, zone, || zone.clone().brought(), operations).await,
                );
            }
            (Unit::Links, Direction::Apply) => {
                for link in &self.links {
                    outcome.absorb(
                        resource::reconcile_or_use(client, link, || link.clone().brought(), operations).await,
                    );
                }
            }
            (Unit::Zone, Direction::Delete) => {
                outcome.absorb(resource::delete(client, &self.zone, operations).await);
            }
            (Unit::Links, Direction::Delete) => {
                outcome = each(client, &self.links, operations, direction).await;
            }
            // An A set, an AAAA set, or both.
            (Unit::Records, _) => {
                let records = &self.records;
                fold_each(client, records.a.as_slice(), operations, direction, &mut outcome).await;
                fold_each(
                    client,
                    records.aaaa.as_slice(),
                    operations,
                    direction,
                    &mut outcome,
                )
                .await;
            }
        }
        outcome
    }
}
