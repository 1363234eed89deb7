//! Bringing Azure to the spec: for a live AzureManagedControlPlane, its groups, network, subnet
//! and managed cluster in [`ORDER`], then what Cluster API reads of a control plane (the
//! endpoint, the kubeconfig Secrets, `ready`, `initialized`, `version`); for a live
//! AzureManagedMachinePool, its agent pool and the MachinePool contract (the sorted
//! `providerIDList` of the pool's scale-set instances, replicas, readiness); for an
//! AzureManagedCluster, the endpoint its control plane has.

use capz_api::capi::{Cluster, MachinePool};
use capz_api::common::ApiEndpoint;
use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_api::{AzureManagedCluster, AzureManagedControlPlane, AzureManagedMachinePool};
use capz_azure::models::ArmModel as _;
use capz_azure::models::compute::{ScaleSetInstance, VirtualMachineScaleSet};
use capz_azure::models::container_service::ManagedCluster as ManagedClusterModel;
use capz_azure::{ArmClient, ResourceId};
use capz_kit::apply::apply_spec;
use capz_kit::cluster::CLUSTER_NAME_LABEL;
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::Error;
use capz_kit::filter::Reported as _;
use capz_kit::identity::{ClusterCredential, ClusterIdentityRef};
use capz_kit::kube::api::{ListParams, Patch, PatchParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps};
use capz_kit::resource::{self, AzureResource as _};
use capz_kit::tags;
use capz_resources::subnet::Network;
use capz_resources::virtual_machine::provider_id;
use serde::Serialize;

use crate::context::{Found, ID, REPLICAS_MANAGED_BY_ANNOTATION, State};
use crate::kubeconfig::connect;
use crate::plan::{self, ORDER, POOL_ORDER, POOL_SERVICES, PlanError, SERVICES, Unit};
use crate::status::{self, PlaneFields};

/// The tags by which AKS names the pool a scale set of the node resource group belongs to.
const POOL_TAGS: [&str; 2] = ["aks-managed-poolName", "poolName"];

/// The spec field aks writes on a control plane and an AKS infrastructure cluster.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OwnedEndpoint<'a> {
    control_plane_endpoint: &'a ApiEndpoint,
}

/// The spec field aks writes on a pool.
#[derive(Debug, Serialize)]
struct OwnedProviderIds<'a> {
    #[serde(rename = "providerIDList")]
    provider_id_list: &'a [String],
}

/// The AzureManagedMachinePools of the cluster `cluster` in `namespace`, each with its
/// MachinePool once Cluster API has linked them.
async fn pools_of(
    client: &capz_kit::kube::Client,
    namespace: &str,
    cluster: &str,
) -> capz_kit::kube::Result<Vec<(AzureManagedMachinePool, Option<MachinePool>)>> {
    let selector = format!("{CLUSTER_NAME_LABEL}={cluster}");
    let pools = Api::<AzureManagedMachinePool>::namespaced(client.clone(), namespace)
        .list(&ListParams::default().labels(&selector))
        .await?;
    let mut found = Vec::with_capacity(pools.items.len());
    for pool in pools.items {
        let owner = capz_kit::cluster::owner_machine_pool(client, &pool).await?;
        found.push((pool, owner));
    }
    Ok(found)
}

/// The ARM client of `plane`'s identity.
pub(crate) async fn arm_client(
    state: &State,
    plane: &AzureManagedControlPlane,
) -> Result<(ArmClient, ClusterCredential), Outcome> {
    let credential = state
        .identities
        .credential(ClusterIdentityRef::from(plane))
        .await
        .map_err(Outcome::failed)?;
    Ok((credential.arm_client(ID.user_agent()), credential))
}

/// Brings Azure to the spec of a live AzureManagedControlPlane of `cluster` and reports where it
/// stands.
pub(crate) async fn apply_plane(
    state: &State,
    api: &Api<AzureManagedControlPlane>,
    plane: &AzureManagedControlPlane,
    cluster: &Cluster,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(plane.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(plane.conditions(), Direction::Apply);
    let namespace = plane.namespace().unwrap_or_default();
    let pools = pools_of(&state.client, &namespace, &cluster.name_any()).await?;
    let fallback = state.subscription.as_deref();
    // What earlier passes found stands until this one sees the cluster built again (an upgrade
    // in flight keeps the version that runs); once reached, the API server stays initialized.
    let status = plane.status.as_ref();
    let mut fields = PlaneFields {
        initialized: status.and_then(|status| status.initialized) == Some(true),
        version: status.and_then(|status| status.version.clone()),
        auto_upgrade_version: status.and_then(|status| status.auto_upgrade_version.clone()),
        issuer_url: status
            .and_then(|status| status.oidc_issuer_profile.as_ref())
            .and_then(|profile| profile.issuer_url.clone()),
    };
    let mut endpoint = None;
    let prepared = match plan::control_plane(plane, cluster, &pools, fallback) {
        Err(error) => Err(Outcome::failed(error)),
        Ok(plan) => arm_client(state, plane).await.map(|client| (plan, client)),
    };
    match prepared {
        Err(outcome) => steps.hold(ORDER, outcome),
        Ok((plan, (client, credential))) => {
            let cluster_name = cluster.name_any();
            let mut network = Network::Owned;
            let mut built: Option<ManagedClusterModel> = None;
            for step in ORDER {
                let work = async {
                    let mut outcome = Outcome::Done;
                    match step.unit {
                        Unit::Groups => {
                            for group in &plan.groups {
                                outcome.absorb(
                                    resource::reconcile_or_use(&client, group, &mut operations).await,
                                );
                            }
                        }
                        Unit::Network => {
                            let found = outcome.absorb(
                                resource::reconcile_or_use(&client, &plan.network, &mut operations).await,
                            );
                            if found.is_some_and(|vnet| !tags::is_owned(vnet.tags.as_ref(), &cluster_name)) {
                                network = Network::Brought;
                            }
                        }
                        Unit::Subnet => {
                            outcome.absorb(
                                resource::reconcile(&client, &plan.subnet(network), &mut operations).await,
                            );
                        }
                        // AKS creates a cluster only with a System pool; once it exists, its
                        // pools are their own resources.
                        Unit::ManagedCluster if !plan.has_system_pool && !fields.initialized => {
                            outcome.fail(PlanError::NoSystemPool);
                        }
                        Unit::ManagedCluster => {
                            built = outcome
                                .absorb(resource::reconcile(&client, &plan.cluster, &mut operations).await);
                        }
                    }
                    outcome
                };
                Box::pin(steps.run(step, work)).await;
            }
            if let Some(model) = built.filter(|_| !steps.blocked()) {
                match connect(state, plane, (&client, &credential), plan.cluster.id(), &model).await {
                    Ok(reached) => {
                        endpoint = Some(reached);
                        fields.initialized = true;
                    }
                    Err(failure) => steps.observe(Observation::fails(
                        ConditionType::MANAGED_CLUSTER_RUNNING,
                        Reason::FAILED,
                        ConditionSeverity::Warning,
                        format!("the cluster runs, but its kubeconfig could not be written: {failure}"),
                    )),
                }
                report(plane, &model, &mut fields);
            }
        }
    }
    if let Some(endpoint) =
        endpoint.filter(|endpoint| plane.spec.control_plane_endpoint.as_ref() != Some(endpoint))
    {
        apply_spec(
            api,
            &ID.field_manager(),
            plane,
            &OwnedEndpoint {
                control_plane_endpoint: &endpoint,
            },
        )
        .await?;
    }
    let pass = steps.finish();
    status::publish_plane(api, plane, pass.observations.clone(), &operations, &fields).await?;
    pass.next()
}

/// What AKS reports of the running cluster `model` that the control plane's status shows: the
/// version, the OIDC issuer, and the version AKS upgraded to when an upgrade channel follows
/// Kubernetes.
fn report(plane: &AzureManagedControlPlane, model: &ManagedClusterModel, fields: &mut PlaneFields) {
    // The write of the spec's version is done: it is the version that runs, as CAPZ reports it.
    fields.version = Some(plane.spec.class.version.clone());
    let properties = model.properties.as_ref();
    fields.issuer_url = properties
        .and_then(|properties| properties.oidc_issuer_profile.as_ref())
        .and_then(|profile| profile.issuer_url.clone());
    let channel = properties
        .and_then(|properties| properties.auto_upgrade_profile.as_ref())
        .and_then(|profile| profile.upgrade_channel.as_deref());
    if channel.is_some_and(|channel| !matches!(channel, "none" | "node-image")) {
        fields.auto_upgrade_version = properties
            .and_then(|properties| properties.current_kubernetes_version.as_deref())
            .map(|version| format!("v{version}"));
    }
}

/// Why a pool is not built yet, if it is not: its control plane has not made the cluster.
fn pool_gate(found: &Found) -> Option<String> {
    let Some(plane) = &found.control_plane else {
        return Some(format!(
            "waiting for the AzureManagedControlPlane of Cluster {}",
            found.cluster.name_any()
        ));
    };
    let initialized = plane.status.as_ref().and_then(|status| status.initialized) == Some(true);
    (!initialized).then(|| {
        format!(
            "waiting for AzureManagedControlPlane {} to be initialized",
            plane.name_any()
        )
    })
}

/// Brings Azure to the spec of a live AzureManagedMachinePool and reports where it stands.
pub(crate) async fn apply_pool(
    state: &State,
    api: &Api<AzureManagedMachinePool>,
    pool: &AzureManagedMachinePool,
    found: &Found,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(pool.operations(), ID.name(), POOL_SERVICES);
    let mut steps = Steps::new(pool.conditions(), Direction::Apply);
    let mut replicas = None;
    match (pool_gate(found), found.control_plane.as_ref()) {
        (gate, None) | (gate @ Some(_), _) => {
            steps.hold(POOL_ORDER, Outcome::Waiting(gate.unwrap_or_default()));
        }
        (None, Some(plane)) => {
            let prepared = pool_of_plane(state, plane, pool, found).await;
            match prepared {
                Err(outcome) => steps.hold(POOL_ORDER, outcome),
                Ok((agent_pool, (client, _), node_group)) => {
                    let mut built = None;
                    steps
                        .run(&POOL_ORDER[0], async {
                            let mut outcome = Outcome::Done;
                            built = outcome
                                .absorb(resource::reconcile(&client, &agent_pool, &mut operations).await);
                            outcome
                        })
                        .await;
                    if let Some(built) = built {
                        match instances(&client, &node_group, agent_pool.name()).await {
                            Ok(ids) => {
                                replicas = Some(i32::try_from(ids.len()).unwrap_or(i32::MAX));
                                if pool.spec.provider_id_list.as_deref() != Some(ids.as_slice()) {
                                    apply_spec(
                                        api,
                                        &ID.field_manager(),
                                        pool,
                                        &OwnedProviderIds {
                                            provider_id_list: &ids,
                                        },
                                    )
                                    .await?;
                                }
                                follow_autoscaler(state, &found.pool, &built).await?;
                            }
                            Err(failure) => steps.observe(Observation::fails(
                                ConditionType::AGENT_POOLS_READY,
                                Reason::WAITING_FOR_DEPENDENCY,
                                ConditionSeverity::Info,
                                failure,
                            )),
                        }
                    }
                }
            }
        }
    }
    let pass = steps.finish();
    status::publish_pool(api, pool, pass.observations.clone(), &operations, replicas).await?;
    pass.next()
}

/// The agent pool of `pool`, the ARM client of its control plane's identity with that
/// credential, and the node resource group its scale set is in.
pub(crate) async fn pool_of_plane(
    state: &State,
    plane: &AzureManagedControlPlane,
    pool: &AzureManagedMachinePool,
    found: &Found,
) -> Result<
    (
        capz_resources::agent_pool::AgentPool,
        (ArmClient, ClusterCredential),
        ResourceId,
    ),
    Outcome,
> {
    let fallback = state.subscription.as_deref();
    let built = plan::cluster_id(plane, fallback)
        .and_then(|cluster| {
            Ok((
                cluster,
                plan::subnet_id(plane, fallback)?,
                plan::node_group(plane, fallback)?,
            ))
        })
        .and_then(|(cluster, subnet, node_group)| {
            Ok((
                plan::agent_pool(plane, pool, Some(&found.pool), &cluster, &subnet)?,
                node_group,
            ))
        });
    let (agent_pool, node_group) = built.map_err(Outcome::failed)?;
    Ok((agent_pool, arm_client(state, plane).await?, node_group))
}

/// The provider IDs of the instances of the pool `pool`, sorted: those of the scale set of the
/// node resource group `node_group` that AKS tagged with the pool's name.
async fn instances(client: &ArmClient, node_group: &ResourceId, pool: &str) -> Result<Vec<String>, String> {
    let sets: Vec<VirtualMachineScaleSet> = client
        .list(
            node_group,
            VirtualMachineScaleSet::RESOURCE_TYPE,
            &VirtualMachineScaleSet::API_VERSION,
        )
        .await
        .map_err(|error| format!("listing the scale sets of {node_group}: {error}"))?;
    let set = sets
        .into_iter()
        .find(|set| {
            POOL_TAGS.iter().any(|tag| {
                set.tags
                    .as_ref()
                    .and_then(|tags| tags.get(*tag))
                    .map(String::as_str)
                    == Some(pool)
            })
        })
        .and_then(|set| set.id)
        .ok_or_else(|| format!("no scale set in {node_group} belongs to pool {pool} yet"))?;
    let instances: Vec<ScaleSetInstance> = client
        .list(
            &set,
            "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
            &ScaleSetInstance::API_VERSION,
        )
        .await
        .map_err(|error| format!("listing the instances of {set}: {error}"))?;
    let mut ids: Vec<String> = instances
        .iter()
        .filter_map(|instance| instance.id.as_ref())
        .map(provider_id)
        .collect();
    ids.sort();
    Ok(ids)
}

/// While AKS's autoscaler sizes the pool `built`, its MachinePool says so
/// (`cluster.x-k8s.io/replicas-managed-by`) and follows the count AKS chose, as CAPZ does; once
/// it no longer does, the annotation goes.
async fn follow_autoscaler(
    state: &State,
    machine_pool: &MachinePool,
    built: &capz_azure::models::container_service::AgentPool,
) -> Result<(), Error> {
    let properties = built.properties.as_ref();
    let autoscaled = properties.and_then(|properties| properties.enable_auto_scaling) == Some(true);
    let count = properties.and_then(|properties| properties.count);
    let annotated = machine_pool
        .annotations()
        .contains_key(REPLICAS_MANAGED_BY_ANNOTATION);
    let patch = match (autoscaled, annotated) {
        (true, _) if !annotated || machine_pool.spec.replicas != count => serde_json::json!({
            "metadata": {"annotations": {REPLICAS_MANAGED_BY_ANNOTATION: "true"}},
            "spec": {"replicas": count},
        }),
        (false, true) => serde_json::json!({
            "metadata": {"annotations": {REPLICAS_MANAGED_BY_ANNOTATION: null}},
        }),
        _ => return Ok(()),
    };
    // Cluster API owns the MachinePool: a merge patch changes only these fields.
    Api::<MachinePool>::namespaced(
        state.client.clone(),
        &machine_pool.namespace().unwrap_or_default(),
    )
    .patch(
        &machine_pool.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Brings an AzureManagedCluster to what Cluster API reads of it: the endpoint its control
/// plane has, and `ready`, which it is as soon as its Cluster names a control plane (AKS builds
/// the whole infrastructure with the control plane).
pub(crate) async fn apply_cluster(
    api: &Api<AzureManagedCluster>,
    object: &AzureManagedCluster,
    plane: Option<&AzureManagedControlPlane>,
) -> Result<Action, Error> {
    let endpoint = plane.and_then(|plane| plane.spec.control_plane_endpoint.as_ref());
    if let Some(endpoint) =
        endpoint.filter(|endpoint| object.spec.control_plane_endpoint.as_ref() != Some(*endpoint))
    {
        apply_spec(
            api,
            &ID.field_manager(),
            object,
            &OwnedEndpoint {
                control_plane_endpoint: endpoint,
            },
        )
        .await?;
    }
    status::publish_cluster(api, object, plane.is_some()).await?;
    Ok(Action::await_change())
}
