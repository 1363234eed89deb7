//! Bringing an AzureCluster's public IPs and load balancers to the spec, in [`ORDER`], once the
//! network controller has built what they need; then `spec.controlPlaneEndpoint`, once.

use std::collections::BTreeMap;

use capz_kit::api::common::ApiEndpoint;
use capz_kit::api::common::conditions::ConditionType;
use capz_kit::api::controllers::Family;
use capz_kit::api::{AzureCluster, AzureMachine};
use capz_kit::apply::apply_spec;
use capz_kit::azure::ArmClient;
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::network::{InboundNatRule as RuleModel, PublicIpAddress};
use capz_kit::conditions::Reason;
use capz_kit::error::{Error, Failure};
use capz_kit::filter::Reported as _;
use capz_kit::kube::Api;
use capz_kit::kube::runtime::controller::Action;
use capz_kit::operations::Operations;
use capz_kit::policy::{Category, Classify};
use capz_kit::progress::{Direction, Outcome, Steps, waiting_on};
use capz_kit::resource::{self, AzureResource as _, ResourceError};
use capz_resources::inbound_nat_rule::{ApiServerFrontend, frontend_port};
use capz_resources::load_balancer::{ClusterLoadBalancers, EndpointSource};
use serde::Serialize;

use crate::context::{ID, Machines, Site, State};
use crate::plan::{ORDER, SERVICES, Unit, arm_client, expects, plan, rule_name, rule_of, rule_operations};
use crate::status::{OWNED, publish, report_rule};

/// The spec field this controller writes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnedSpec {
    control_plane_endpoint: ApiEndpoint,
}

/// What the network controller has not provided yet.
fn missing_dependency(object: &AzureCluster, plan: &ClusterLoadBalancers) -> Option<String> {
    if !object.holds(&ConditionType::RESOURCE_GROUP_READY) {
        return Some("waiting for the resource group: ResourceGroupReady is not True".to_owned());
    }
    (plan.needs_subnets && !object.holds(&ConditionType::SUBNETS_READY)).then(|| {
        "waiting for the control-plane subnet of a private frontend: SubnetsReady is not True".to_owned()
    })
}

/// One pass over the balancers of a live AzureCluster.
struct Run<'a> {
    client: &'a ArmClient,
    plan: &'a ClusterLoadBalancers,
    operations: &'a mut Operations,
    /// The public IPs that exist, by name.
    addresses: BTreeMap<String, PublicIpAddress>,
}

impl Run<'_> {
    async fn apply(&mut self, unit: Unit) -> Outcome {
        let mut outcome = Outcome::Done;
        match unit {
            Unit::PublicIps => {
                for (ip, may_be_brought) in &self.plan.public_ips {
                    let result = if *may_be_brought {
                        resource::reconcile_or_use(self.client, ip, self.operations).await
                    } else {
                        resource::reconcile(self.client, ip, self.operations).await
                    };
                    if let Some(address) = outcome.absorb(result) {
                        self.addresses.insert(ip.id().name().into_owned(), address);
                    }
                }
            }
            Unit::LoadBalancers => {
                for balancer in &self.plan.load_balancers {
                    outcome.absorb(resource::reconcile(self.client, balancer, self.operations).await);
                }
            }
        }
        outcome
    }
}

/// Brings the cluster's public IPs and load balancers to the spec, reports them and sets the
/// control plane endpoint.
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureCluster>,
    object: &AzureCluster,
    port: i32,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(object.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(object.conditions(), Direction::Apply);
    let mut host = None;
    match plan(state, object, port) {
        Err(error) => steps.record(
            ConditionType::LOAD_BALANCERS_READY,
            "load balancers",
            Outcome::failed(error),
        ),
        Ok(plan) => {
            let order: Vec<_> = ORDER.iter().filter(|step| expects(&plan, step.unit)).collect();
            if let Some(waiting) = missing_dependency(object, &plan) {
                // The network controller writes what the balancers wait for: is it there?
                let outcome = waiting_on(&state.presence, &[Family::Network], waiting).await;
                steps.hold(order, outcome);
            } else if !order.is_empty() {
                match arm_client(state, object).await {
                    Err(error) => steps.hold(order, Outcome::failed(error)),
                    Ok(client) => {
                        let mut run = Run {
                            client: &client,
                            plan: &plan,
                            operations: &mut operations,
                            addresses: BTreeMap::new(),
                        };
                        for step in order {
                            steps.run(step, run.apply(step.unit)).await;
                        }
                        if !steps.blocked() {
                            host = endpoint_host(plan.endpoint.as_ref(), &run.addresses);
                        }
                    }
                }
            }
        }
    }
    let pass = steps.finish();
    publish(api, object, OWNED, pass.observations.clone(), &operations).await?;
    if let Some(host) = &host {
        set_endpoint(api, object, host, port).await?;
    }
    pass.next()
}

/// The API server's host: its public IP's DNS name (else the address), or its name in the private
/// DNS zone.
fn endpoint_host(
    source: Option<&EndpointSource>,
    addresses: &BTreeMap<String, PublicIpAddress>,
) -> Option<String> {
    match source? {
        EndpointSource::PrivateName(name) => Some(name.clone()),
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

/// No frontend port of the balancer is free for another SSH rule.
#[derive(Debug, thiserror::Error)]
#[error("no frontend port is free for the SSH rule on {balancer}: 22 and 2201 to 2219 are taken")]
pub(crate) struct NoFreePort {
    balancer: String,
}

impl Classify for NoFreePort {
    fn category(&self) -> Category {
        // A port frees when another control-plane machine goes.
        Category::Transient
    }

    fn reason(&self) -> Reason {
        Reason::NO_FREE_FRONTEND_PORT
    }
}

/// Creates the machine's rule once the API server load balancer exists, and reports it.
pub(crate) async fn apply_rule(
    machines: &Machines,
    api: &Api<AzureMachine>,
    machine: &AzureMachine,
    site: &Site,
    target: &ApiServerFrontend,
) -> Result<Action, Error> {
    let mut operations = rule_operations(machine);
    // Once the cluster has been ready its balancer exists, whatever a later check of it says.
    let was_ready = site.azure_cluster.status.as_ref().and_then(|status| status.ready) == Some(true);
    let outcome = if was_ready || site.azure_cluster.holds(&ConditionType::LOAD_BALANCERS_READY) {
        create_rule(machines, machine, site, target, &mut operations)
            .await
            .unwrap_or_else(Outcome::Failed)
    } else {
        Outcome::Waiting(
            "waiting for the API server load balancer: LoadBalancersReady is not True on the AzureCluster"
                .to_owned(),
        )
    };
    report_rule(api, machine, outcome, Direction::Apply, &operations).await
}

pub(crate) async fn create_rule(
    machines: &Machines,
    machine: &AzureMachine,
    site: &Site,
    target: &ApiServerFrontend,
    operations: &mut Operations,
) -> Result<Outcome, Failure> {
    let rule = rule_of(machine, target)?;
    let client = arm_client(&machines.state, &site.azure_cluster).await?;
    let lock = machines.lock_of(&target.load_balancer);
    let _choosing = lock.lock().await;
    let rules: Vec<RuleModel> = client
        .list(
            &target.load_balancer,
            RuleModel::RESOURCE_TYPE,
            &RuleModel::API_VERSION,
        )
        .await
        .map_err(|source| ResourceError::Arm {
            action: "list the inbound NAT rules of",
            id: target.load_balancer.clone(),
            source,
        })?;
    let name = rule_name(machine);
    let Some(port) = frontend_port(&rules, &name) else {
        return Err(NoFreePort {
            balancer: target.load_balancer.name().into_owned(),
        }
        .into());
    };
    let mut outcome = Outcome::Done;
    outcome.absorb(resource::reconcile(&client, &rule.frontend_port(port), operations).await);
    Ok(outcome)
}
