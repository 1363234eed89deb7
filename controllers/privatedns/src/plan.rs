//! The private DNS of an AzureCluster, built from its defaulted spec: the zone, its links to the
//! cluster's network and to every network peered with it, and the API server's records; and the
//! order of the steps that create them ([`ORDER`]) and delete them ([`DELETION`]: records and
//! links before the zone, which Azure refuses to delete while it has links); and how each step is
//! brought to the spec or deleted. A zone or link that exists without the cluster's tag is the
//! user's: it is used as it is and never deleted.

use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::controllers::Family;
use capz_kit::azure::models::private_dns::A;
use capz_kit::azure::{ArmClient, IdError};
use capz_kit::azure_cluster::{self, Owned, Planner, Shared};
use capz_kit::conditions::Reason;
use capz_kit::filter::Reported as _;
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::{Direction, Outcome, Step, each, fold_each};
use capz_kit::resource::{self, AzureResource as _};
use capz_kit::scope::{ClusterScope, ScopeError};
use capz_kit::tags::Role;
use capz_resources::private_dns_link::PrivateDnsLink;
use capz_resources::private_dns_record::{
    ApiServerRecords, PrivateDnsRecord, RecordError, api_server_records,
};
use capz_resources::private_dns_zone::PrivateDnsZone;

use crate::context::ID;

/// A step of the controller's reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Zone,
    Links,
    Records,
}

const ZONE: Step<Unit> = Step {
    unit: Unit::Zone,
    condition: ConditionType::PRIVATE_DNS_ZONE_READY,
    what: "private DNS zone",
};

const LINKS: Step<Unit> = Step {
    unit: Unit::Links,
    condition: ConditionType::PRIVATE_DNS_LINK_READY,
    what: "private DNS zone's virtual network links",
};

const RECORDS: Step<Unit> = Step {
    unit: Unit::Records,
    condition: ConditionType::PRIVATE_DNS_RECORD_READY,
    what: "API server's DNS record",
};

/// The steps that build the private DNS, in order.
const ORDER: &[Step<Unit>] = &[ZONE, LINKS, RECORDS];

/// The steps that delete it.
const DELETION: &[Step<Unit>] = &[RECORDS, LINKS, ZONE];

/// The private DNS of one cluster.
pub(crate) struct Plan {
    pub(crate) zone: PrivateDnsZone,
    /// The cluster's network's link first, then the peered networks'.
    pub(crate) links: Vec<PrivateDnsLink>,
    pub(crate) records: ApiServerRecords,
}

/// Why a spec's private DNS cannot be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// A name or group Azure would refuse.
    #[error(transparent)]
    Scope(#[from] ScopeError),
    /// An API server address that is not one.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A network whose name gives no valid link name.
    #[error("spec.networkSpec.vnet: Invalid value: {network:?}: its link's name is not valid: {source}")]
    Link { network: String, source: IdError },
}

impl Classify for PlanError {
    fn category(&self) -> Category {
        Category::InvalidInput
    }

    fn reason(&self) -> Reason {
        Reason::INVALID_CONFIGURATION
    }
}

/// The privatedns controller's plan and what it waits for.
pub(crate) struct PrivateDns;

impl Planner for PrivateDns {
    type Plan = Plan;
    type Error = PlanError;

    const OWNED: Owned = Owned {
        id: ID,
        conditions: &[
            ConditionType::PRIVATE_DNS_ZONE_READY,
            ConditionType::PRIVATE_DNS_LINK_READY,
            ConditionType::PRIVATE_DNS_RECORD_READY,
        ],
        services: &[
            PrivateDnsZone::SERVICE,
            PrivateDnsLink::SERVICE,
            PrivateDnsRecord::<A>::SERVICE,
        ],
    };
    const ORDER: &'static [Step<Unit>] = ORDER;
    const DELETION: &'static [Step<Unit>] = DELETION;
    const PEERS: &'static [Family] = &[Family::Network];
    const WAITS_ON: &'static [ConditionType] =
        &[ConditionType::RESOURCE_GROUP_READY, ConditionType::VNET_READY];

    /// `None` when the cluster has no private DNS: its API server is public, or
    /// `privateDNSZone: None` leaves resolution to the user.
    fn plan(shared: &Shared, object: &AzureCluster) -> Result<Option<Plan>, PlanError> {
        plan(shared, object)
    }

    fn missing(object: &AzureCluster) -> Option<String> {
        if !object.holds(&ConditionType::RESOURCE_GROUP_READY) {
            return Some("waiting for the resource group: ResourceGroupReady is not True".to_owned());
        }
        (!object.holds(&ConditionType::VNET_READY))
            .then(|| "waiting for the virtual network to link: VNetReady is not True".to_owned())
    }
}

fn plan(state: &Shared, object: &AzureCluster) -> Result<Option<Plan>, PlanError> {
    let scope = ClusterScope::new(object, state.features, state.subscription.as_deref())?;
    let Some(zone) = PrivateDnsZone::new(&scope)? else {
        return Ok(None);
    };
    let tags = scope.owned_tags(Role::Common);
    let mut networks = vec![scope.vnet_id()?];
    networks.extend(scope.peered_vnet_ids()?);
    let links = networks
        .into_iter()
        .map(|network| {
            let name = network.to_string();
            PrivateDnsLink::new(&zone, network, &scope.name, tags.clone()).map_err(|source| PlanError::Link {
                network: name,
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    let records = api_server_records(&scope, &zone)?;
    Ok(Some(Plan { zone, links, records }))
}

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
                outcome.absorb(resource::reconcile_or_use(client, zone, operations).await);
            }
            (Unit::Links, Direction::Apply) => {
                for link in &self.links {
                    outcome.absorb(resource::reconcile_or_use(client, link, operations).await);
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
