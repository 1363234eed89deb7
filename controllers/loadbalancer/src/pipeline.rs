//! One pass over an AzureCluster: its public IPs, then its load balancers, then the control plane
//! endpoint; or, when it is deleted, the load balancers and then their IPs.
//!
//! Deletion removes each balancer and IP individually, whether or not the resource group is
//! ours. Leaving them to the network controller's group delete would save a few calls, but the
//! individual deletes are correct in every case — a brought group, a group that is not deleted
//! because something else keeps it — and cost nothing once the group is gone (a missing resource
//! counts as deleted).

use std::collections::BTreeMap;
use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::capi::{Cluster, DEFAULT_API_SERVER_PORT};
use capz_kit::api::common::ApiEndpoint;
use capz_kit::api::common::conditions::{Condition, ConditionSeverity, ConditionType, Conditions};
use capz_kit::api::common::operations::Future;
use capz_kit::api::controllers::Family;
use capz_kit::apply::{apply_spec, apply_status};
use capz_kit::azure::ArmClient;
use capz_kit::azure::models::network::PublicIpAddress;
use capz_kit::conditions::{Observation, Reason, differ, observe, unless_held};
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::k8s_openapi::jiff::Timestamp;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify as _};
use capz_kit::presence::not_running;
use capz_kit::resource::{self, AzureResource as _, Progress, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_resources::load_balancer::{ClusterLoadBalancers, EndpointSource, LoadBalancer, PlanError};
use capz_resources::public_ip::PublicIp;
use serde::Serialize;

use crate::{Error, ID, OWNED, State};

/// The services whose operations this controller records.
const SERVICES: &[&str] = &[PublicIp::SERVICE, LoadBalancer::SERVICE];
/// The wait before polling an operation Azure gave no `Retry-After` for.
pub(crate) const POLL: Duration = Duration::from_secs(5);

/// The status fields this controller owns, on AzureClusters and on AzureMachines.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnedStatus<'a> {
    pub(crate) conditions: Vec<Condition>,
    pub(crate) long_running_operation_states: &'a [Future],
}

/// The spec field this controller writes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnedSpec {
    control_plane_endpoint: ApiEndpoint,
}

/// Where the resources behind one condition stand.
#[derive(Debug)]
enum Stage {
    Done,
    Busy(Option<Duration>),
    Waiting(String),
    /// Waiting for a condition whose controller does not run.
    PeerNotRunning(Family),
    Deleting(Option<Duration>),
    Deleted,
    Failed {
        reason: Reason,
        severity: ConditionSeverity,
        message: String,
        /// Azure throttled the caller: the resources were not looked at.
        throttled: bool,
    },
}

impl Stage {
    fn failed(error: &Error, deleting: bool) -> Self {
        let severity = error.category().severity();
        let reason = match error {
            Error::Resource(resource) if deleting && matches!(**resource, ResourceError::Arm { .. }) => {
                Reason::DELETION_FAILED
            }
            _ => error.reason(),
        };
        Self::Failed {
            reason,
            severity,
            message: error.to_string(),
            throttled: error.category() == Category::Throttled,
        }
    }

    fn observe(&self, type_: ConditionType, what: &str) -> Observation {
        use ConditionSeverity::Info;
        match self {
            Self::Done => Observation::holds(type_),
            Self::Busy(_) => Observation::fails(
                type_,
                Reason::CREATING,
                Info,
                format!("{what} creating or updating"),
            ),
            Self::PeerNotRunning(family) => not_running(type_, *family),
            Self::Waiting(message) => {
                Observation::fails(type_, Reason::WAITING_FOR_DEPENDENCY, Info, message.clone())
            }
            Self::Deleting(_) => {
                Observation::fails(type_, Reason::DELETING, Info, format!("{what} deleting"))
            }
            Self::Deleted => Observation::fails(type_, Reason::DELETED, Info, format!("{what} deleted")),
            Self::Failed {
                reason,
                severity,
                message,
                ..
            } => Observation::fails(type_, reason.clone(), *severity, message.clone()),
        }
    }

    fn retry(&self) -> Option<Duration> {
        match self {
            Self::Busy(after) | Self::Deleting(after) => Some(after.unwrap_or(POLL)),
            _ => None,
        }
    }
}

/// What a pass found: one stage per expected condition (`None`: the spec asks for nothing of
/// the kind, so the condition is not reported), the first error, and the endpoint host.
#[derive(Debug, Default)]
struct Pass {
    public_ips: Option<Stage>,
    load_balancers: Option<Stage>,
    error: Option<Error>,
    host: Option<String>,
}

impl Pass {
    fn expecting(plan: &ClusterLoadBalancers) -> Self {
        Self {
            public_ips: (!plan.public_ips.is_empty()).then_some(Stage::Done),
            load_balancers: (!plan.load_balancers.is_empty()).then_some(Stage::Done),
            ..Self::default()
        }
    }

    /// Every expected condition says `stage`.
    fn all(mut self, stage: impl Fn() -> Stage) -> Self {
        for slot in [&mut self.public_ips, &mut self.load_balancers] {
            if slot.is_some() {
                *slot = Some(stage());
            }
        }
        self
    }

    /// Every expected condition (`LoadBalancersReady` at least) reports `error`.
    fn failed(mut self, error: Error, deleting: bool) -> Self {
        self.load_balancers.get_or_insert(Stage::Done);
        self = self.all(|| Stage::failed(&error, deleting));
        self.error = Some(error);
        self
    }

    /// The observations of the pass, where a throttled stage keeps a condition that holds in
    /// `current`.
    fn observations(&self, current: Option<&Conditions>) -> Vec<Observation> {
        [
            (&self.public_ips, ConditionType::PUBLIC_IPS_READY, "publicips"),
            (
                &self.load_balancers,
                ConditionType::LOAD_BALANCERS_READY,
                "loadbalancers",
            ),
        ]
        .into_iter()
        .filter_map(|(stage, type_, what)| {
            let observed = stage.as_ref()?.observe(type_, what);
            Some(match stage {
                Some(Stage::Failed { throttled: true, .. }) => unless_held(current, observed),
                _ => observed,
            })
        })
        .collect()
    }

    /// The next reconcile: after the error policy's wait, when an operation is due, or on the
    /// next change (a dependency's condition, the spec) or resync.
    fn finish(self) -> Result<Action, Error> {
        let due = self.due();
        match self.error {
            Some(error) => Err(error),
            None => Ok(due.map_or_else(Action::await_change, Action::requeue)),
        }
    }

    /// When the soonest operation in flight is due for a poll.
    fn due(&self) -> Option<Duration> {
        [&self.public_ips, &self.load_balancers]
            .into_iter()
            .flatten()
            .filter_map(Stage::retry)
            .min()
    }
}

/// Counts the outcomes of one kind of resource.
#[derive(Default)]
struct Tally {
    busy: bool,
    /// The soonest `Retry-After` of the operations in flight.
    retry_after: Option<Duration>,
    error: Option<ResourceError>,
}

impl Tally {
    fn add<T>(&mut self, result: Result<Progress<T>, ResourceError>) -> Option<T> {
        match result {
            Ok(Progress::Done(model)) => return Some(model),
            Ok(Progress::InProgress { retry_after }) => {
                self.busy = true;
                self.retry_after = match (self.retry_after, retry_after) {
                    (Some(known), Some(after)) => Some(known.min(after)),
                    (known, after) => known.or(after),
                };
            }
            Err(error) => {
                self.error.get_or_insert(error);
            }
        }
        None
    }

    fn is_done(&self) -> bool {
        !self.busy && self.error.is_none()
    }

    /// The stage, and the error to return; `deleting` says which words apply.
    fn finish(self, deleting: bool) -> (Stage, Option<Error>) {
        match (self.error, self.busy) {
            (Some(error), _) => {
                let error = Error::from(error);
                (Stage::failed(&error, deleting), Some(error))
            }
            (None, true) if deleting => (Stage::Deleting(self.retry_after), None),
            (None, true) => (Stage::Busy(self.retry_after), None),
            (None, false) if deleting => (Stage::Deleted, None),
            (None, false) => (Stage::Done, None),
        }
    }
}

fn plan(state: &State, object: &AzureCluster, port: i32) -> Result<ClusterLoadBalancers, Error> {
    let scope =
        ClusterScope::new(object, state.features, state.subscription.as_deref()).map_err(PlanError::from)?;
    Ok(ClusterLoadBalancers::of(&scope, state.features, port)?)
}

pub(crate) fn holds(object: &AzureCluster, type_: &ConditionType) -> bool {
    object
        .status
        .as_ref()
        .is_some_and(|status| Conditions::is_true(&status.conditions, type_))
}

/// What the network controller has not provided yet.
fn missing_dependency(object: &AzureCluster, plan: &ClusterLoadBalancers) -> Option<String> {
    if !holds(object, &ConditionType::RESOURCE_GROUP_READY) {
        return Some("waiting for the resource group: ResourceGroupReady is not True".to_owned());
    }
    (plan.needs_subnets && !holds(object, &ConditionType::SUBNETS_READY)).then(|| {
        "waiting for the control-plane subnet of a private frontend: SubnetsReady is not True".to_owned()
    })
}

pub(crate) async fn arm_client(state: &State, object: &AzureCluster) -> Result<ArmClient, Error> {
    let credential = state
        .identities
        .credential(ClusterIdentityRef::from(object))
        .await?;
    Ok(credential.arm_client(ID.user_agent()))
}

fn operations_of(object: &AzureCluster) -> Operations {
    let states = object
        .status
        .as_ref()
        .map(|status| &status.long_running_operation_states);
    Operations::owned(states, ID.name(), SERVICES)
}

fn conditions(object: &AzureCluster) -> Option<&Conditions> {
    object.status.as_ref().map(|status| &status.conditions)
}

fn api_server_port(cluster: Option<&Cluster>) -> i32 {
    cluster.map_or(DEFAULT_API_SERVER_PORT, Cluster::api_server_port)
}

/// Brings the cluster's public IPs and load balancers to the spec, reports them and sets the
/// control plane endpoint.
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureCluster>,
    cluster: Option<&Cluster>,
    object: &AzureCluster,
) -> Result<Action, Error> {
    let port = api_server_port(cluster);
    let mut operations = operations_of(object);
    let pass = converge(state, object, port, &mut operations).await;
    write_status(api, object, &pass, &operations).await?;
    if let Some(host) = &pass.host {
        set_endpoint(api, object, host, port).await?;
    }
    pass.finish()
}

async fn converge(state: &State, object: &AzureCluster, port: i32, operations: &mut Operations) -> Pass {
    let plan = match plan(state, object, port) {
        Ok(plan) => plan,
        Err(error) => return Pass::default().failed(error, false),
    };
    let pass = Pass::expecting(&plan);
    if pass.public_ips.is_none() && pass.load_balancers.is_none() {
        return pass;
    }
    if let Some(waiting) = missing_dependency(object, &plan) {
        // The network controller writes what the balancers wait for: is it there to write it?
        if !state.presence.running(Family::Network).await {
            return pass.all(|| Stage::PeerNotRunning(Family::Network));
        }
        return pass.all(|| Stage::Waiting(waiting.clone()));
    }
    let client = match arm_client(state, object).await {
        Ok(client) => client,
        Err(error) => return pass.failed(error, false),
    };
    let (ips, addresses) = reconcile_ips(&client, &plan, operations).await;
    let ips_done = ips.is_done();
    let (ips_stage, ips_error) = ips.finish(false);
    let mut pass = Pass {
        public_ips: pass.public_ips.map(|_| ips_stage),
        error: ips_error,
        ..pass
    };
    if !ips_done {
        pass.load_balancers = pass
            .load_balancers
            .map(|_| Stage::Waiting("waiting for the public IPs of the load balancers".to_owned()));
        return pass;
    }
    let mut balancers = Tally::default();
    for balancer in &plan.load_balancers {
        balancers.add(resource::reconcile(&client, balancer, operations).await);
    }
    let balancers_done = balancers.is_done();
    let (balancers_stage, error) = balancers.finish(false);
    pass.load_balancers = Some(balancers_stage);
    pass.error = pass.error.or(error);
    if balancers_done {
        pass.host = endpoint_host(plan.endpoint.as_ref(), &addresses);
    }
    pass
}

/// Reconciles the public IPs in order; the addresses that exist, by name.
async fn reconcile_ips(
    client: &ArmClient,
    plan: &ClusterLoadBalancers,
    operations: &mut Operations,
) -> (Tally, BTreeMap<String, PublicIpAddress>) {
    let mut tally = Tally::default();
    let mut addresses = BTreeMap::new();
    for (ip, may_be_brought) in &plan.public_ips {
        let mut result = resource::reconcile(client, ip, operations).await;
        if *may_be_brought && matches!(result, Err(ResourceError::NotOwned { .. })) {
            result = resource::reconcile(client, &ip.clone().brought(), operations).await;
        }
        if let Some(address) = tally.add(result) {
            addresses.insert(ip.id().name().into_owned(), address);
        }
    }
    (tally, addresses)
}

/// The API server's host: its public IP's DNS name (else the address), or the private address.
fn endpoint_host(
    source: Option<&EndpointSource>,
    addresses: &BTreeMap<String, PublicIpAddress>,
) -> Option<String> {
    match source? {
        EndpointSource::PrivateIp(address) => Some(address.clone()),
        EndpointSource::PublicIp(name) => {
            let properties = addresses.get(name)?.properties.as_ref()?;
            properties
                .dns_settings
                .as_ref()
                .and_then(|dns| dns.fqdn.clone())
                .or_else(|| properties.ip_address.clone())
        }
    }
}

/// Sets `spec.controlPlaneEndpoint` where it is empty; a value already there (the user's, or
/// set before) is kept.
async fn set_endpoint(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    host: &str,
    port: i32,
) -> Result<(), Error> {
    let current = object.spec.control_plane_endpoint.clone().unwrap_or_default();
    let host_set = current.host.as_deref().is_some_and(|host| !host.is_empty());
    let port_set = current.port.is_some_and(|port| port != 0);
    if host_set && port_set {
        return Ok(());
    }
    let endpoint = ApiEndpoint {
        host: Some(
            current
                .host
                .filter(|_| host_set)
                .unwrap_or_else(|| host.to_owned()),
        ),
        port: Some(current.port.filter(|_| port_set).unwrap_or(port)),
    };
    apply_spec(
        api,
        &ID.field_manager(),
        object,
        &OwnedSpec {
            control_plane_endpoint: endpoint,
        },
    )
    .await?;
    Ok(())
}

/// Applies the pass's conditions and operations when they differ from what the object holds.
async fn write_status(
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    pass: &Pass,
    operations: &Operations,
) -> Result<(), Error> {
    let current = object.status.as_ref().map(|status| &status.conditions);
    let observations = pass.observations(conditions(object));
    let conditions = observe(current, observations, Timestamp::now());
    if !differ(current, OWNED, &conditions) && !operations.changed() {
        return Ok(());
    }
    let status = OwnedStatus {
        conditions,
        long_running_operation_states: operations.entries(),
    };
    apply_status(api, &ID.field_manager(), object, &status).await?;
    Ok(())
}

/// Deletes the load balancers, then their public IPs; done when both are gone.
pub(crate) async fn cleanup(
    state: &State,
    api: &Api<AzureCluster>,
    cluster: Option<&Cluster>,
    object: &AzureCluster,
) -> Result<Action, Error> {
    let Ok(plan) = plan(state, object, api_server_port(cluster)) else {
        // A spec that never described valid load balancers created none.
        return Ok(Action::await_change());
    };
    let mut operations = operations_of(object);
    let pass = match arm_client(state, object).await {
        Ok(client) => remove(&client, &plan, &mut operations).await,
        Err(error) => Pass::expecting(&plan).failed(error, true),
    };
    write_status(api, object, &pass, &operations).await?;
    // Returning normally would let the finalizer go with deletes still running.
    match pass.due() {
        Some(retry_after) if pass.error.is_none() => Err(Error::StillDeleting {
            what: "deleting the load balancers and their public IPs",
            retry_after,
        }),
        _ => pass.finish(),
    }
}

async fn remove(client: &ArmClient, plan: &ClusterLoadBalancers, operations: &mut Operations) -> Pass {
    let mut pass = Pass::expecting(plan);
    let mut balancers = Tally::default();
    for balancer in &plan.load_balancers {
        balancers.add(resource::delete(client, balancer, operations).await);
    }
    let balancers_done = balancers.is_done();
    let (stage, error) = balancers.finish(true);
    pass.load_balancers = pass.load_balancers.map(|_| stage);
    pass.error = error;
    // An IP cannot be deleted while a balancer uses it.
    if !balancers_done {
        pass.public_ips = pass.public_ips.map(|_| Stage::Deleting(None));
        return pass;
    }
    let mut ips = Tally::default();
    for (ip, _) in &plan.public_ips {
        ips.add(resource::delete(client, ip, operations).await);
    }
    let (stage, error) = ips.finish(true);
    pass.public_ips = pass.public_ips.map(|_| stage);
    pass.error = pass.error.or(error);
    pass
}

#[cfg(test)]
mod tests {
    use capz_kit::api::common::conditions::ConditionStatus;
    use capz_kit::azure::{ArmError, ResourceId};

    use super::*;

    fn failure(source: ArmError) -> Error {
        let id: ResourceId = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/g/providers/Microsoft.Network/loadBalancers/lb"
            .parse()
            .unwrap();
        ResourceError::Arm {
            action: "read",
            id,
            source,
        }
        .into()
    }

    fn pass() -> Pass {
        Pass {
            public_ips: Some(Stage::Done),
            load_balancers: Some(Stage::Done),
            ..Pass::default()
        }
    }

    #[test]
    fn a_throttled_pass_keeps_what_held_and_other_failures_do_not() {
        let current = Conditions(observe(
            None,
            [
                Observation::holds(ConditionType::LOAD_BALANCERS_READY),
                Observation::fails(
                    ConditionType::PUBLIC_IPS_READY,
                    Reason::CREATING,
                    ConditionSeverity::Info,
                    "creating",
                ),
            ],
            Timestamp::now(),
        ));
        let statuses = |pass: Pass| -> Vec<(ConditionType, ConditionStatus)> {
            pass.observations(Some(&current))
                .into_iter()
                .map(|observation| (observation.type_, observation.status))
                .collect()
        };
        let throttled = pass().failed(
            failure(ArmError::Throttled {
                retry_after: Duration::from_secs(1),
            }),
            false,
        );
        assert_eq!(
            statuses(throttled),
            [
                (ConditionType::PUBLIC_IPS_READY, ConditionStatus::False),
                (ConditionType::LOAD_BALANCERS_READY, ConditionStatus::True),
            ]
        );
        let broken = pass().failed(failure(ArmError::UnexpectedAnswer("garbled".into())), false);
        assert_eq!(
            statuses(broken),
            [
                (ConditionType::PUBLIC_IPS_READY, ConditionStatus::False),
                (ConditionType::LOAD_BALANCERS_READY, ConditionStatus::False),
            ]
        );
    }
}
