//! The network controller: for every AzureCluster, the resource group, virtual network, security
//! groups, route tables, NAT gateways (with their public IPs) and subnets, in that order, and the
//! AzureCluster roll-up (`Ready`, `status.ready`, `status.failureDomains`).
//!
//! ```text
//!   AzureCluster ── externally managed, paused, no Cluster yet ──▶ left alone
//!     │ finalizer network.infrastructure.cluster.x-k8s.io
//!     ├─ live:     provision::provision   one read per resource, a write when it differs
//!     │            rollup::ready          own conditions + peers' + controlPlaneEndpoint
//!     │            status apply           only when something changed
//!     └─ deleted:  cleanup::cleanup       after every other capz-rs finalizer is gone: the owned
//!                                         group in one delete, else our resources in reverse
//! ```

mod cleanup;
mod plan;
mod provision;
mod rollup;

use provision::Failure;

use capz_kit::resource::AzureResource as _;
use capz_resources::nat_gateway::{NatGateway, NatGatewayIp};
use capz_resources::resource_group::ResourceGroup;
use capz_resources::route_table::RouteTable;
use capz_resources::security_group::SecurityGroup;
use capz_resources::subnet::Subnet;
use capz_resources::virtual_network::VirtualNetwork;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};
use std::sync::Arc;
use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::capi::{Cluster, DEFAULT_API_SERVER_PORT};
use capz_kit::api::common::FailureDomains;
use capz_kit::api::common::conditions::{Condition, ConditionType, Conditions};
use capz_kit::api::common::operations::{Future, Futures};
use capz_kit::api::controllers::Family;
use capz_kit::apply::apply_status;
use capz_kit::cluster::{is_externally_managed, is_paused, linked_cluster};
use capz_kit::conditions::{Observation, Reason, differ, observe};
use capz_kit::controller::ControllerId;
use capz_kit::filter::{changes, cluster_changes};
use capz_kit::finalizer::{FinalizerError, finalized};
use capz_kit::identity::{Identities, IdentitySettings};
use capz_kit::kube::api::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::finalizer::Event;
use capz_kit::kube::runtime::reflector::ObjectRef;
use capz_kit::kube::runtime::{PredicateConfig, WatchStreamExt as _, watcher};
use capz_kit::kube::{Client, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::presence::Presence;
use capz_kit::runner::{self, BoxError};
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

/// The controller's names: binary, field manager, finalizer, user agent and Lease.
pub const ID: ControllerId = ControllerId::of(Family::Network);

/// The wait before polling an operation Azure gave no `Retry-After` for.
const POLL: Duration = Duration::from_secs(5);

/// The operation services the controller records: one per unit type it reconciles.
const SERVICES: &[&str] = &[
    ResourceGroup::SERVICE,
    VirtualNetwork::SERVICE,
    SecurityGroup::SERVICE,
    RouteTable::SERVICE,
    NatGatewayIp::SERVICE,
    NatGateway::SERVICE,
    Subnet::SERVICE,
];

/// The condition types the controller writes on AzureClusters.
const OWNED: &[ConditionType] = &[
    ConditionType::RESOURCE_GROUP_READY,
    ConditionType::VNET_READY,
    ConditionType::SECURITY_GROUPS_READY,
    ConditionType::ROUTE_TABLES_READY,
    ConditionType::NAT_GATEWAYS_READY,
    ConditionType::SUBNETS_READY,
    ConditionType::VNET_PEERING_READY,
    ConditionType::PRIVATE_ENDPOINTS_READY,
    ConditionType::BASTION_HOST_READY,
    ConditionType::NETWORK_INFRASTRUCTURE_READY,
    ConditionType::READY,
];

/// The conditions the controller reports the AzureCluster fields on that capz-rs does not act
/// on yet (`capz_rules::support`); they count in `Ready` like its others. No other controller
/// reports on them: `BastionHostReady` is the network controller's until a bastion controller
/// builds bastions.
const NOT_YET: &[ConditionType] = &[
    ConditionType::VNET_PEERING_READY,
    ConditionType::PRIVATE_ENDPOINTS_READY,
    ConditionType::BASTION_HOST_READY,
];

/// Why a reconcile could not finish. Azure's failures are reported in conditions first.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a read or the status apply.
    #[error(transparent)]
    Kube(#[from] capz_kit::kube::Error),
    /// The finalizer could not be added or removed.
    #[error(transparent)]
    Finalizer(#[from] FinalizerError),
    /// An Azure resource, the identity or the spec failed a step.
    #[error("{0}")]
    Azure(Failure),
    /// The cluster's resources are not all deleted yet; the finalizer stays until they are.
    #[error("deleting the cluster's network is not finished")]
    Deleting(Duration),
}

impl Classify for Error {
    fn category(&self) -> Category {
        match self {
            Self::Kube(_) => Category::Transient,
            Self::Finalizer(error) => error.category(),
            Self::Azure(failure) => failure.category(),
            Self::Deleting(_) => Category::Throttled,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Azure(failure) => failure.retry_after(),
            Self::Deleting(wait) => Some(*wait),
            Self::Kube(_) | Self::Finalizer(_) => None,
        }
    }

    fn reason(&self) -> Reason {
        match self {
            Self::Kube(_) => Reason::KUBERNETES_API_ERROR,
            Self::Finalizer(error) => error.reason(),
            Self::Azure(failure) => failure.reason(),
            Self::Deleting(_) => Reason::DELETING,
        }
    }

    fn pending(&self) -> Option<Duration> {
        match self {
            Self::Deleting(wait) => Some(*wait),
            _ => None,
        }
    }
}

/// What every reconcile shares.
struct Context {
    client: Client,
    identities: Identities,
    settings: IdentitySettings,
    features: capz_rules::Features,
    presence: Presence,
}

/// Runs the controller until the runner's shutdown: AzureClusters, woken too by their Cluster
/// (pause, API server port).
///
/// # Errors
/// When the identities' custom cloud cannot be set up.
pub async fn run(ctx: runner::Context, settings: IdentitySettings) -> Result<(), BoxError> {
    let client = ctx.client();
    let identities = Identities::new(client.clone(), settings.clone()).await?;
    let context = Arc::new(Context {
        client,
        identities,
        settings,
        features: ctx.args().feature_gates,
        presence: ctx.presence(),
    });
    let clusters = watcher(ctx.api::<Cluster>(), ctx.watcher_config())
        .default_backoff()
        .touched_objects()
        .predicate_filter(cluster_changes, PredicateConfig::default());
    let controller = ctx
        .filtered_controller(ctx.api::<AzureCluster>(), |object| Some(wakes(object)))
        .watches_stream(clusters, |cluster| {
            let namespace = cluster.namespace().unwrap_or_default();
            cluster
                .spec
                .infrastructure_ref
                .filter(|reference| reference.kind == "AzureCluster")
                .map(|reference| ObjectRef::new(&reference.name).within(&namespace))
        });
    ctx.run(controller, reconcile, context).await;
    Ok(())
}

/// The peers' conditions the roll-up carries into `Ready`.
const PEER_CONDITIONS: &[ConditionType] = &[
    ConditionType::LOAD_BALANCERS_READY,
    ConditionType::PUBLIC_IPS_READY,
    ConditionType::BASTION_HOST_READY,
    ConditionType::PRIVATE_DNS_ZONE_READY,
    ConditionType::PRIVATE_DNS_LINK_READY,
    ConditionType::PRIVATE_DNS_RECORD_READY,
];

/// What wakes the controller on an AzureCluster: what the kit's filter sees, and also a peer's
/// condition changing its reason, severity or message, which `Ready` repeats. Its own status
/// writes do not: they would only read everything in Azure again.
fn wakes(object: &AzureCluster) -> u64 {
    let mut hasher = DefaultHasher::new();
    changes::<AzureCluster>(PEER_CONDITIONS)(object).hash(&mut hasher);
    if let Some(conditions) = current_conditions(object) {
        for condition in PEER_CONDITIONS.iter().filter_map(|type_| conditions.get(type_)) {
            (&condition.reason, condition.severity, &condition.message).hash(&mut hasher);
        }
    }
    hasher.finish()
}

async fn reconcile(object: Arc<AzureCluster>, context: Arc<Context>) -> Result<Action, Error> {
    // Someone else writes an externally managed cluster's status; it gets no finalizer either.
    if is_externally_managed(&*object) {
        return Ok(Action::await_change());
    }
    let owner = linked_cluster(&context.client, &*object).await?;
    if is_paused(owner.as_ref(), &*object) {
        return Ok(Action::await_change());
    }
    // Until a Cluster names or owns the AzureCluster there is nothing to build for; a deletion
    // goes on.
    if owner.is_none() && object.metadata.deletion_timestamp.is_none() {
        return Ok(Action::await_change());
    }
    let namespace = object.namespace().unwrap_or_default();
    let api = Api::<AzureCluster>::namespaced(context.client.clone(), &namespace);
    finalized(&api, ID.finalizer(), object, async |event| match event {
        Event::Apply(object) => {
            let port = owner
                .as_ref()
                .map_or(DEFAULT_API_SERVER_PORT, Cluster::api_server_port);
            provision::reconcile(&context, &api, &object, port).await
        }
        Event::Cleanup(object) => cleanup::cleanup(&context, &api, &object).await,
    })
    .await
}

/// The status fields the controller owns, applied as a whole each time something changed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnedStatus<'a> {
    conditions: Vec<Condition>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ready: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_domains: Option<&'a FailureDomains>,
    long_running_operation_states: &'a [Future],
}

/// What a reconcile concluded, to be applied to the object's status.
struct Report<'a> {
    observations: Vec<Observation>,
    ready: Option<bool>,
    failure_domains: Option<&'a FailureDomains>,
    operations: &'a Operations,
}

fn current_conditions(object: &AzureCluster) -> Option<&Conditions> {
    object.status.as_ref().map(|status| &status.conditions)
}

fn current_operations(object: &AzureCluster) -> Option<&Futures> {
    object
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states)
}

/// Applies `report` when it changes the object's status; a steady state writes nothing. Gives
/// whether it wrote.
async fn publish(api: &Api<AzureCluster>, object: &AzureCluster, report: Report<'_>) -> Result<bool, Error> {
    let current = current_conditions(object);
    let conditions = observe(current, report.observations, Timestamp::now());
    let status = object.status.as_ref();
    let unchanged = !differ(current, OWNED, &conditions)
        && !report.operations.changed()
        && status.and_then(|status| status.ready) == report.ready
        && status.and_then(|status| status.failure_domains.as_ref()) == report.failure_domains;
    if unchanged {
        return Ok(false);
    }
    let owned = OwnedStatus {
        conditions,
        ready: report.ready,
        failure_domains: report.failure_domains,
        long_running_operation_states: report.operations.entries(),
    };
    apply_status(api, &ID.field_manager(), object, &owned).await?;
    Ok(true)
}

/// The action after a reconcile that ended with `outcome`: a failure goes to the kit's wrapper
/// (event and backoff), an operation in flight is polled after Azure's hint.
fn next(outcome: provision::Outcome) -> Result<Action, Error> {
    match outcome {
        provision::Outcome::Failed(failure) => Err(Error::Azure(failure)),
        provision::Outcome::InFlight(retry_after) => Ok(Action::requeue(retry_after.unwrap_or(POLL))),
        provision::Outcome::Done => Ok(Action::await_change()),
    }
}

#[cfg(test)]
mod tests {
    use capz_rules::support::{Kind, Support};

    use super::{NOT_YET, OWNED};

    #[test]
    fn every_condition_the_matrix_names_for_azure_clusters_is_reported_here() {
        for entry in Kind::AzureCluster.entries() {
            if let Support::NotYet(not_yet) = &entry.support
                && let Some(condition) = &not_yet.condition
            {
                assert!(NOT_YET.contains(condition), "{}: {condition}", entry.field);
            }
        }
        assert!(NOT_YET.iter().all(|type_| OWNED.contains(type_)));
    }
}
