//! The bastion host of an AzureCluster, built from its defaulted spec once the network controller
//! has built the resource group, the virtual network and the `AzureBastionSubnet`, and the one
//! step that creates it (the public IP, then the host) and deletes it (the other way round).

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::controllers::Family;
use capz_kit::azure::ArmClient;
use capz_kit::azure_cluster::{self, Owned, Planner, Shared};
use capz_kit::filter::Reported as _;
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Step};
use capz_kit::resource::{self, AzureResource as _};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_resources::bastion_host::{BastionHost, BastionIp};

use crate::context::ID;

/// The controller's one step: the host and its address, reported together as CAPZ does.
const HOST: &[Step<()>] = &[Step {
    unit: (),
    condition: ConditionType::BASTION_HOST_READY,
    what: "bastion host",
}];

/// The bastion host of one cluster.
pub(crate) struct Plan(BastionHost);

impl azure_cluster::Plan for Plan {
    type Unit = ();

    async fn converge(
        &self,
        client: &ArmClient,
        (): &(),
        operations: &mut Operations,
        direction: Direction,
    ) -> Outcome {
        let (host, address) = (&self.0, self.0.public_ip());
        let mut outcome = Outcome::Done;
        // The address exists before the host that uses it, and goes after it.
        match direction {
            Direction::Apply => {
                outcome.absorb(resource::reconcile(client, address, operations).await);
                if outcome.is_done() {
                    outcome.absorb(resource::reconcile(client, host, operations).await);
                }
            }
            Direction::Delete => {
                outcome.absorb(resource::delete(client, host, operations).await);
                if outcome.is_done() {
                    outcome.absorb(resource::delete(client, address, operations).await);
                }
            }
        }
        outcome
    }
}

/// The bastion controller's plan and what it waits for.
pub(crate) struct Bastion;

impl Planner for Bastion {
    type Plan = Plan;
    type Error = ScopeError;

    const OWNED: Owned = Owned {
        id: ID,
        conditions: &[ConditionType::BASTION_HOST_READY],
        services: &[BastionIp::SERVICE, BastionHost::SERVICE],
    };
    const ORDER: &'static [Step<()>] = HOST;
    const DELETION: &'static [Step<()>] = HOST;
    const PEERS: &'static [Family] = &[Family::Network];
    const WAITS_ON: &'static [ConditionType] = &[
        ConditionType::RESOURCE_GROUP_READY,
        ConditionType::VNET_READY,
        ConditionType::SUBNETS_READY,
    ];

    fn plan(shared: &Shared, object: &AzureCluster) -> Result<Option<Plan>, ScopeError> {
        let scope = ClusterScope::new(object, shared.features, shared.subscription.as_deref())?;
        Ok(BastionHost::new(&scope)?.map(Plan))
    }

    fn missing(object: &AzureCluster) -> Option<String> {
        [
            (ConditionType::RESOURCE_GROUP_READY, "the resource group"),
            (ConditionType::VNET_READY, "the virtual network"),
            (ConditionType::SUBNETS_READY, "the AzureBastionSubnet"),
        ]
        .into_iter()
        .find(|(condition, _)| !object.holds(condition))
        .map(|(condition, what)| format!("waiting for {what}: {condition} is not True"))
    }
}
