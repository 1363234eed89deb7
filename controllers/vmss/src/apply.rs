//! Bringing a live AzureMachinePool to its spec, in [`ORDER`]: the scale set with its instances,
//! then the role assignment of its identity.
//!
//! One pass reads the set, lists its instances once (never one read per instance), lists the
//! pool's AzureMachinePoolMachines and Machines and the workload cluster's Nodes, and then: makes
//! an AzureMachinePoolMachine for each new instance (recording the model it was made with),
//! decides with [`plan::decide`] which instances go and how many the set adds, writes the set
//! only when its model changes or instances are to be added, removes the instances that go
//! through their Machines (Cluster API cordons and drains each Node first), and reports the
//! MachinePool contract: the sorted `providerIDList`, replicas, readiness, instances.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use capz_api::azuremachinepool::AzureMachinePoolInstanceStatus;
use capz_api::capi::{Machine, MachinePool};
use capz_api::common::conditions::{ConditionSeverity, ConditionType};
use capz_api::{AzureMachinePool, AzureMachinePoolMachine, AzureMachinePoolMachineSpec};
use capz_azure::models::compute::{ScaleSetInstance, VirtualMachineScaleSet as SetModel};
use capz_azure::models::{ArmModel as _, ProvisioningState};
use capz_azure::{ArmClient, Category as ArmCategory, ResourceId};
use capz_kit::apply::apply_spec;
use capz_kit::azure_cluster::dependencies;
use capz_kit::bootstrap;
use capz_kit::cluster::{CLUSTER_NAME_LABEL, MachineMeta, POOL_NAME_LABEL, build_gate, pool_machines};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::{Error, Failure};
use capz_kit::filter::Reported as _;
use capz_kit::identity::ClusterIdentityRef;
use capz_kit::kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, Resource as _, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps, waiting_on};
use capz_kit::resource::{self, AzureResource as _, ResourceError};
use capz_kit::scope::ClusterScope;
use capz_kit::workload::{Node, Nodes};
use capz_resources::scale_set::{ScaleSet, ScaleSetInputs, written_model};
use capz_resources::virtual_machine::{MachineSpecError, ReferenceOs, provider_id, resolve_image};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Serialize;

use crate::context::{
    AZURE_POOL_LABEL, DELETE_MACHINE_ANNOTATION, Found, ID, MODEL_ANNOTATION, REPLICAS_MANAGED_BY_ANNOTATION,
    State,
};
use crate::plan::{self, Member, ORDER, Plan, Rollout, SERVICES, Unit};
use crate::status::{self, Fields, MemberFields};

/// How soon a pool whose instances are still changing is looked at again: Node changes wake a
/// pool, but its instances' states in Azure are only read, so this often until the pool settles.
const SETTLING: Duration = Duration::from_secs(5);

/// The spec fields vmss writes on a pool.
#[derive(Debug, Serialize)]
struct OwnedSpec<'a> {
    #[serde(rename = "providerID")]
    provider_id: &'a str,
    #[serde(rename = "providerIDList")]
    provider_id_list: &'a [String],
}

/// Why the pool cannot be built yet, if it cannot.
fn gate(found: &Found) -> Option<(Reason, String)> {
    let pool = &found.pool;
    let missing_bootstrap = pool
        .spec
        .template
        .spec
        .bootstrap
        .data_secret_name
        .is_none()
        .then(|| {
            format!(
                "MachinePool {} to have spec.template.spec.bootstrap.dataSecretName",
                pool.name_any()
            )
        });
    build_gate(&found.cluster, missing_bootstrap, found.azure_cluster.is_some())
}

/// Brings Azure to the spec of a live AzureMachinePool and reports where it stands.
pub(crate) async fn apply(
    state: &State,
    api: &Api<AzureMachinePool>,
    pool: &AzureMachinePool,
    found: &Found,
) -> Result<Action, Error> {
    let mut operations = Operations::owned(pool.operations(), ID.name(), SERVICES);
    let mut steps = Steps::new(pool.conditions(), Direction::Apply);
    let mut run = Run {
        state,
        pool,
        found,
        operations: &mut operations,
        fields: Fields::default(),
        overrides: Vec::new(),
        settled: true,
        principal: None,
    };
    if let Some((reason, message)) = gate(found) {
        steps.observe(Observation::fails(
            ConditionType::SCALE_SET_RUNNING,
            reason,
            ConditionSeverity::Info,
            message,
        ));
    } else {
        Box::pin(run.converge(api, &mut steps)).await;
    }
    let Run { fields, settled, .. } = run;
    let pass = steps.finish();
    status::publish(api, pool, pass.observations.clone(), &operations, &fields).await?;
    let action = pass.next()?;
    Ok(if settled || action != Action::await_change() {
        action
    } else {
        Action::requeue(SETTLING)
    })
}

/// One converging pass over a live AzureMachinePool.
struct Run<'a> {
    state: &'a State,
    pool: &'a AzureMachinePool,
    found: &'a Found,
    operations: &'a mut Operations,
    fields: Fields,
    /// What a step observed beyond its own outcome, reported after it.
    overrides: Vec<Observation>,
    /// Whether the pool is as wanted: nothing to look at again before a change.
    settled: bool,
    /// The set's system-assigned identity, for its role assignment.
    principal: Option<String>,
}

/// One instance with what is known of it.
struct Seen {
    instance: ScaleSetInstance,
    provider_id: String,
    member: Option<Arc<AzureMachinePoolMachine>>,
    machine: Option<MachineMeta>,
    node: Option<Node>,
}

impl Run<'_> {
    async fn converge(&mut self, api: &Api<AzureMachinePool>, steps: &mut Steps<'_>) {
        let set_step = |outcome| (ConditionType::SCALE_SET_RUNNING, "scale set", outcome);
        let Some(azure_cluster) = self.found.azure_cluster.as_ref() else {
            return;
        };
        let state = self.state;
        let inputs = ClusterScope::new(
            azure_cluster,
            state.features,
            state.fallback_subscription.as_deref(),
        )
        .map_err(Failure::from)
        .and_then(|scope| {
            Plan::new(&scope, self.pool, &self.found.pool)
                .map(|plan| (scope, plan))
                .map_err(Failure::from)
        });
        let (scope, plan) = match inputs {
            Ok(inputs) => inputs,
            Err(failure) => {
                let (type_, what, outcome) = set_step(Outcome::Failed(failure));
                return steps.record(type_, what, outcome);
            }
        };
        if let Some(wait) = dependencies(&scope, azure_cluster, false) {
            let (type_, what, outcome) = set_step(waiting_on(&state.presence, &wait.on, wait.message).await);
            return steps.record(type_, what, outcome);
        }
        let client = match state
            .identities
            .credential(ClusterIdentityRef::from(azure_cluster))
            .await
        {
            Ok(credential) => credential.arm_client(ID.user_agent()),
            Err(error) => {
                let (type_, what, outcome) = set_step(Outcome::failed(error));
                return steps.record(type_, what, outcome);
            }
        };
        for step in ORDER.iter().filter(|step| plan.expects(step.unit)) {
            let work = async {
                match step.unit {
                    Unit::ScaleSet => Box::pin(self.scale_set(api, &client, &scope, &plan)).await,
                    Unit::RoleAssignment => self.role_assignment(&client, &plan).await,
                }
            };
            steps.run(step, work).await;
            for observation in self.overrides.drain(..) {
                steps.observe(observation);
            }
        }
    }

    /// The set and its instances: see the module's documentation.
    async fn scale_set(
        &mut self,
        api: &Api<AzureMachinePool>,
        client: &ArmClient,
        scope: &ClusterScope,
        plan: &Plan,
    ) -> Outcome {
        let existing = match read_set(client, plan.set.id()).await {
            Ok(existing) => existing,
            Err(error) => return Outcome::failed(error),
        };
        let mut seen = match self.seen(client, scope, plan, existing.is_some()).await {
            Ok(seen) => seen,
            Err(failure) => return Outcome::Failed(failure),
        };
        let built_with = existing
            .as_ref()
            .and_then(written_model)
            .unwrap_or_default()
            .to_owned();
        if let Err(error) = self.adopt_new_instances(&mut seen, plan, &built_with).await {
            return Outcome::failed(Error::from(error));
        }
        let wanted = match self.buildable(scope, plan).await {
            Ok(set) => set,
            Err(failure) => return Outcome::Failed(failure),
        };
        let wanted_hash = wanted.model_hash().unwrap_or_default().to_owned();
        // Members whose instance is gone are removed on their own; the rollout weighs the rest.
        seen.sort_by_key(|entry| entry.instance.id.is_none());
        let present = seen.iter().filter(|entry| entry.instance.id.is_some()).count();
        let members: Vec<Member> = seen[..present]
            .iter()
            .map(|seen| member(seen, &wanted_hash))
            .collect();
        let rollout = self.rollout(plan, existing.as_ref());
        let decision = plan::decide(&rollout, &members);
        if decision.add > 0 || !decision.remove.is_empty() {
            let removing: Vec<&str> = decision
                .remove
                .iter()
                .map(|&index| members[index].name.as_str())
                .collect();
            tracing::info!(
                pool = plan.name,
                replicas = rollout.desired,
                add = decision.add,
                ?removing,
                ?members,
                "changing the pool's instances"
            );
        }
        // The model is built once a pass (one read of the bootstrap data); the decision only says
        // how many instances it adds.
        let set = wanted.adding(u64::from(decision.add));
        let mut outcome = Outcome::Done;
        let written = outcome.absorb(resource::reconcile(client, &set, self.operations).await);
        for &index in &decision.remove {
            if let Err(error) = self.remove(&seen[index]).await {
                outcome.fail(Error::from(error));
            }
        }
        if let Err(error) = self.remove_vanished(&seen).await {
            outcome.fail(Error::from(error));
        }
        let current = written.or(existing);
        self.principal = current
            .as_ref()
            .and_then(|set| set.identity.as_ref())
            .and_then(|identity| identity.principal_id.clone());
        // A write that failed this pass reports Azure's own error; a set left Failed before is
        // reported as such.
        let failed_now = matches!(outcome, Outcome::Failed(_));
        let set_state = current.as_ref().filter(|_| !failed_now);
        self.report(
            &seen[..present],
            &members,
            (current.as_ref(), set_state),
            &rollout,
            &decision,
        );
        if let Err(error) = self.follow_autoscaler(&rollout).await {
            outcome.fail(Error::from(error));
        }
        if let Err(error) = self.publish_members(&seen[..present], &members).await {
            outcome.fail(Error::from(error));
        }
        if let Err(error) = self.record_provider_ids(api, &set, &seen).await {
            outcome.fail(Error::from(error));
        }
        outcome
    }

    /// The rollout of this pass. When an autoscaler outside Cluster API scales the set (the
    /// MachinePool carries [`REPLICAS_MANAGED_BY_ANNOTATION`]), the number of instances wanted
    /// is the set's capacity, as CAPZ takes it: the pool neither adds nor removes instances to
    /// reach the MachinePool's replicas, it still replaces outdated ones.
    fn rollout(&self, plan: &Plan, existing: Option<&SetModel>) -> Rollout {
        let capacity = existing
            .and_then(|set| set.sku.as_ref())
            .and_then(|sku| sku.capacity);
        match capacity {
            Some(capacity) if externally_scaled(&self.found.pool) => Rollout {
                desired: u32::try_from(capacity).unwrap_or(u32::MAX),
                ..plan.rollout
            },
            _ => plan.rollout,
        }
    }

    /// With an autoscaler outside Cluster API, the MachinePool's replicas follow the set's
    /// capacity, so that Cluster API counts what Azure holds.
    async fn follow_autoscaler(&self, rollout: &Rollout) -> capz_kit::kube::Result<()> {
        let pool = &self.found.pool;
        let wanted = i32::try_from(rollout.desired).unwrap_or(i32::MAX);
        if !externally_scaled(pool) || pool.spec.replicas == Some(wanted) {
            return Ok(());
        }
        let namespace = pool.namespace().unwrap_or_default();
        let params = PatchParams {
            field_manager: Some(ID.field_manager().as_str().to_owned()),
            ..PatchParams::default()
        };
        Api::<MachinePool>::namespaced(self.state.client.clone(), &namespace)
            .patch(
                &pool.name_any(),
                &params,
                &Patch::Merge(serde_json::json!({"spec": {"replicas": wanted}})),
            )
            .await
            .map(|_| ())
    }

    /// The instances of the set with their AzureMachinePoolMachines, Machines and Nodes.
    async fn seen(
        &self,
        client: &ArmClient,
        scope: &ClusterScope,
        plan: &Plan,
        exists: bool,
    ) -> Result<Vec<Seen>, Failure> {
        let instances = if exists {
            list_instances(client, plan, &scope.group_id()).await?
        } else {
            Vec::new()
        };
        let namespace = self.pool.namespace().unwrap_or_default();
        // Listed, not read from the members' watch: the pass acts on what the API server holds.
        // Their managed fields (most of their size) are dropped at once.
        let members: Vec<Arc<AzureMachinePoolMachine>> =
            Api::<AzureMachinePoolMachine>::namespaced(self.state.client.clone(), &namespace)
                .list(&ListParams::default().labels(&format!("{AZURE_POOL_LABEL}={}", plan.name)))
                .await
                .map_err(Error::from)?
                .items
                .into_iter()
                .map(|mut member| {
                    member.metadata.managed_fields = None;
                    Arc::new(member)
                })
                .collect();
        let machines = pool_machines(&self.state.client, &namespace, &self.found.pool.name_any())
            .await
            .map_err(Error::from)?;
        let nodes = self.nodes(&namespace).await?;
        let mut seen: Vec<Seen> = instances
            .into_iter()
            .filter_map(|instance| {
                let provider_id = provider_id(instance.id.as_ref()?);
                Some(Seen {
                    member: members
                        .iter()
                        .find(|member| member.spec.provider_id.eq_ignore_ascii_case(&provider_id))
                        .cloned(),
                    machine: None,
                    node: nodes
                        .as_ref()
                        .and_then(|nodes| nodes.by_provider_id(&provider_id)),
                    provider_id,
                    instance,
                })
            })
            .collect();
        // Members whose instance is gone stay in the list, to be removed.
        for member in &members {
            if !seen.iter().any(|seen| {
                seen.member
                    .as_ref()
                    .is_some_and(|known| known.name_any() == member.name_any())
            }) {
                seen.push(Seen {
                    instance: ScaleSetInstance::default(),
                    provider_id: member.spec.provider_id.clone(),
                    member: Some(member.clone()),
                    machine: None,
                    node: None,
                });
            }
        }
        for entry in &mut seen {
            entry.machine = entry.member.as_ref().and_then(|member| {
                let owner = member
                    .owner_references()
                    .iter()
                    .find(|owner| owner.kind == "Machine")?;
                machines
                    .iter()
                    .find(|machine| machine.name == owner.name)
                    .cloned()
            });
        }
        Ok(seen)
    }

    /// The Nodes of the pool's workload cluster; none until Cluster API has written its kubeconfig.
    async fn nodes(&self, namespace: &str) -> Result<Option<Nodes>, Failure> {
        let cluster = self.found.cluster.name_any();
        Ok(self.state.workloads.nodes(namespace, &cluster).await?)
    }

    /// Creates an AzureMachinePoolMachine for each instance that has none, recording the model
    /// `built_with` (the set's, read before this pass writes it): an instance not seen before was
    /// made by the last write, and a pass writes only after it has recorded the instances it saw.
    async fn adopt_new_instances(
        &self,
        seen: &mut [Seen],
        plan: &Plan,
        built_with: &str,
    ) -> capz_kit::kube::Result<()> {
        let namespace = self.pool.namespace().unwrap_or_default();
        let api = Api::<AzureMachinePoolMachine>::namespaced(self.state.client.clone(), &namespace);
        for entry in seen.iter_mut().filter(|entry| entry.member.is_none()) {
            let Some(suffix) = member_suffix(&entry.instance, plan.flexible) else {
                continue;
            };
            let mut labels = BTreeMap::new();
            labels.insert(CLUSTER_NAME_LABEL.to_owned(), self.found.cluster.name_any());
            labels.insert(POOL_NAME_LABEL.to_owned(), self.found.pool.name_any());
            labels.insert(AZURE_POOL_LABEL.to_owned(), plan.name.clone());
            let member = AzureMachinePoolMachine {
                metadata: ObjectMeta {
                    name: Some(format!("{}-{suffix}", plan.name)),
                    namespace: Some(namespace.clone()),
                    labels: Some(labels),
                    annotations: Some(BTreeMap::from([(
                        MODEL_ANNOTATION.to_owned(),
                        built_with.to_owned(),
                    )])),
                    owner_references: Some(vec![pool_owner(self.pool)]),
                    finalizers: Some(vec![ID.finalizer().to_owned()]),
                    ..ObjectMeta::default()
                },
                spec: AzureMachinePoolMachineSpec {
                    provider_id: entry.provider_id.clone(),
                    instance_id: entry
                        .instance
                        .instance_id
                        .clone()
                        .or_else(|| entry.instance.name.clone()),
                },
                status: None,
            };
            let created = match api.create(&PostParams::default(), &member).await {
                Ok(created) => created,
                // Made by a pass whose list this one did not see yet.
                Err(capz_kit::kube::Error::Api(status)) if status.code == 409 => {
                    api.get(member.metadata.name.as_deref().unwrap_or_default())
                        .await?
                }
                Err(error) => return Err(error),
            };
            entry.member = Some(Arc::new(created));
        }
        Ok(())
    }

    /// The set as the pool wants it, adding no instance.
    async fn buildable(&self, scope: &ClusterScope, plan: &Plan) -> Result<ScaleSet, Failure> {
        let spec = &self.pool.spec;
        let version = self.found.pool.spec.template.spec.version.as_deref();
        let os = ReferenceOs::of(&spec.template.vm, self.pool.annotations());
        let image =
            resolve_image(spec.template.vm.image.as_ref(), version, os).map_err(MachineSpecError::from)?;
        let secret = self
            .found
            .pool
            .spec
            .template
            .spec
            .bootstrap
            .data_secret_name
            .as_deref()
            .unwrap_or_default();
        let namespace = self.pool.namespace().unwrap_or_default();
        let custom_data = bootstrap::custom_data(&self.state.client, &namespace, secret).await?;
        let inputs = ScaleSetInputs {
            image,
            custom_data,
            subnet: plan.subnet.clone(),
            backend_pools: plan.backend_pools.clone(),
            zones: plan.zones.clone(),
            add: 0,
            tags: plan.tags.clone(),
        };
        Ok(ScaleSet::new(scope, &plan.name, spec, inputs)?)
    }

    /// Removes an instance: through its Machine, which Cluster API drains before it deletes the
    /// AzureMachinePoolMachine (whose finalizer deletes the instance); without a Machine yet, the
    /// AzureMachinePoolMachine directly.
    async fn remove(&self, seen: &Seen) -> capz_kit::kube::Result<()> {
        let namespace = self.pool.namespace().unwrap_or_default();
        let client = self.state.client.clone();
        let result = match (&seen.machine, &seen.member) {
            (Some(machine), _) => Api::<Machine>::namespaced(client, &namespace)
                .delete(&machine.name, &DeleteParams::default())
                .await
                .map(|_| ()),
            (None, Some(member)) => Api::<AzureMachinePoolMachine>::namespaced(client, &namespace)
                .delete(&member.name_any(), &DeleteParams::default())
                .await
                .map(|_| ()),
            (None, None) => Ok(()),
        };
        match result {
            Err(capz_kit::kube::Error::Api(status)) if status.code == 404 => Ok(()),
            other => other,
        }
    }

    /// Removes the members whose instance is gone (deleted outside of the pool): the set makes a
    /// new instance in its place.
    async fn remove_vanished(&self, seen: &[Seen]) -> capz_kit::kube::Result<()> {
        for entry in seen
            .iter()
            .filter(|entry| entry.instance.id.is_none() && !leaving(entry))
        {
            self.remove(entry).await?;
        }
        Ok(())
    }

    /// The pool's conditions and contract fields from what the pass saw.
    fn report(
        &mut self,
        seen: &[Seen],
        members: &[Member],
        (set, reported): (Option<&SetModel>, Option<&SetModel>),
        rollout: &Rollout,
        decision: &plan::Decision,
    ) {
        let state = set
            .and_then(|set| set.properties.as_ref())
            .and_then(|properties| properties.provisioning_state.clone());
        let present = seen.len();
        let staying = members.iter().filter(|member| !member.leaving).count();
        let outdated = members
            .iter()
            .filter(|member| !member.leaving && member.outdated)
            .count();
        let desired = rollout.desired as usize;
        let count = i32::try_from(present).unwrap_or(i32::MAX);
        self.fields.replicas = Some(count);
        self.fields.instances = Some(instance_statuses(seen, members));
        let scaling = staying != desired;
        self.fields.provisioning_state = state.as_ref().map(|state| {
            if *state == ProvisioningState::Succeeded && (scaling || outdated > 0) {
                "Updating".to_owned()
            } else {
                state.as_str().to_owned()
            }
        });
        let running = ConditionType::SCALE_SET_RUNNING;
        let failed = seen
            .iter()
            .filter(|entry| instance_state(&entry.instance).as_deref() == Some("Failed"))
            .count();
        let reported_state = reported
            .and_then(|set| set.properties.as_ref())
            .and_then(|properties| properties.provisioning_state.clone());
        match reported_state {
            Some(ProvisioningState::Failed) => self.overrides.push(Observation::fails(
                running,
                Reason::SCALE_SET_PROVISION_FAILED,
                ConditionSeverity::Error,
                format!(
                    "Azure left the scale set Failed ({failed} of {} instances Failed); the error of its last \
                     write is in its activity log",
                    seen.len()
                ),
            )),
            Some(ProvisioningState::Creating) => self.overrides.push(Observation::fails(
                running,
                Reason::SCALE_SET_CREATING,
                ConditionSeverity::Info,
                "the scale set is being created",
            )),
            _ => {}
        }
        let replicas = ConditionType::SCALE_SET_DESIRED_REPLICAS;
        self.overrides.push(if scaling {
            let reason = if staying < desired {
                Reason::SCALE_SET_SCALING_UP
            } else {
                Reason::SCALE_SET_SCALING_DOWN
            };
            Observation::fails(
                replicas,
                reason,
                ConditionSeverity::Info,
                format!("{staying} of {desired} instances"),
            )
        } else {
            Observation::holds(replicas)
        });
        let model = ConditionType::SCALE_SET_MODEL_UPDATED;
        self.overrides.push(if outdated > 0 {
            let waiting = decision
                .waiting
                .as_deref()
                .map_or(String::new(), |why| format!("; {why}"));
            Observation::fails(
                model,
                Reason::SCALE_SET_MODEL_OUT_OF_DATE,
                ConditionSeverity::Info,
                format!("{outdated} of {staying} instances run an older model{waiting}"),
            )
        } else {
            Observation::holds(model)
        });
        let staying_instances = seen
            .iter()
            .zip(members)
            .filter(|(_, member)| !member.leaving)
            .map(|(entry, _)| &entry.instance);
        if let Some(bootstrap) = status::pool_bootstrap(staying_instances) {
            self.overrides.push(bootstrap);
        }
        let unready = members.iter().any(|member| !member.leaving && !member.ready);
        let leaving = members.iter().any(|member| member.leaving);
        self.settled = !scaling && outdated == 0 && !unready && !leaving && decision.remove.is_empty();
    }

    /// Each member's instance state and Node, written when it changed.
    async fn publish_members(&self, seen: &[Seen], members: &[Member]) -> capz_kit::kube::Result<()> {
        let namespace = self.pool.namespace().unwrap_or_default();
        let api = Api::<AzureMachinePoolMachine>::namespaced(self.state.client.clone(), &namespace);
        for (entry, member) in seen.iter().zip(members) {
            let Some(object) = entry.member.as_ref() else {
                continue;
            };
            if object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let fields = MemberFields {
                ready: member.ready,
                latest_model_applied: !member.outdated,
                provisioning_state: instance_state(&entry.instance),
                instance_name: computer_name(&entry.instance),
                version: node_version(entry.node.as_ref()),
                node_ref: entry.node.as_ref().map(Node::reference),
            };
            let published = status::publish_member(
                &api,
                object,
                &entry.instance,
                node_health(entry.node.as_ref()),
                fields,
            )
            .await;
            match published {
                // Deleted since the list.
                Err(capz_kit::kube::Error::Api(status)) if status.code == 404 => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    async fn record_provider_ids(
        &self,
        api: &Api<AzureMachinePool>,
        set: &ScaleSet,
        seen: &[Seen],
    ) -> capz_kit::kube::Result<()> {
        let mut ids: Vec<String> = seen
            .iter()
            .filter(|entry| entry.instance.id.is_some())
            .map(|entry| entry.provider_id.clone())
            .collect();
        ids.sort();
        let wanted = set.provider_id();
        let spec = &self.pool.spec;
        if spec.provider_id.as_deref() == Some(wanted.as_str())
            && spec.provider_id_list.as_deref().unwrap_or_default() == ids.as_slice()
        {
            return Ok(());
        }
        apply_spec(
            api,
            &ID.field_manager(),
            self.pool,
            &OwnedSpec {
                provider_id: &wanted,
                provider_id_list: &ids,
            },
        )
        .await
        .map(|_| ())
    }

    /// The role assignment of the set's system-assigned identity, once it exists.
    async fn role_assignment(&mut self, client: &ArmClient, plan: &Plan) -> Outcome {
        let Some(role) = plan.role.as_ref() else {
            return Outcome::Done;
        };
        if self.principal.is_none() {
            // Azure gives the identity while it creates the set: look again soon.
            return Outcome::InFlight(None);
        }
        match role.assignment(self.principal.clone()) {
            Ok(assignment) => {
                let mut outcome = Outcome::Done;
                outcome.absorb(resource::reconcile(client, &assignment, self.operations).await);
                outcome
            }
            Err(error) => Outcome::failed(error),
        }
    }
}

/// The set, if it exists.
async fn read_set(client: &ArmClient, id: &ResourceId) -> Result<Option<SetModel>, ResourceError> {
    match client.get::<SetModel>(id, &SetModel::API_VERSION).await {
        Ok(set) => Ok(Some(set)),
        Err(error) if error.category() == ArmCategory::NotFound => Ok(None),
        Err(source) => Err(ResourceError::Arm {
            action: "read",
            id: id.clone(),
            source,
        }),
    }
}

/// The set's instances in one list: a Uniform set's `virtualMachines`, or the virtual machines
/// of the resource group that belong to a Flexible set.
async fn list_instances(
    client: &ArmClient,
    plan: &Plan,
    group: &ResourceId,
) -> Result<Vec<ScaleSetInstance>, ResourceError> {
    let id = plan.set.id();
    let listed = if plan.flexible {
        client
            .list::<ScaleSetInstance>(
                group,
                "Microsoft.Compute/virtualMachines",
                &ScaleSetInstance::API_VERSION,
            )
            .await
            .map(|machines| {
                machines
                    .into_iter()
                    .filter(|machine| {
                        machine
                            .properties
                            .as_ref()
                            .and_then(|properties| properties.virtual_machine_scale_set.as_ref())
                            .is_some_and(|set| set.id.to_string().eq_ignore_ascii_case(&id.to_string()))
                    })
                    .collect()
            })
    } else {
        client
            .list::<ScaleSetInstance>(
                id,
                "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
                &ScaleSetInstance::API_VERSION,
            )
            .await
    };
    listed.map_err(|source| ResourceError::Arm {
        action: "list the instances of",
        id: id.clone(),
        source,
    })
}

/// Whether an autoscaler outside Cluster API sets the MachinePool's replicas.
fn externally_scaled(pool: &MachinePool) -> bool {
    pool.annotations().contains_key(REPLICAS_MANAGED_BY_ANNOTATION)
}

/// The pool's `status.instances`: each instance's state, Node version and model.
fn instance_statuses(seen: &[Seen], members: &[Member]) -> Vec<AzureMachinePoolInstanceStatus> {
    seen.iter()
        .zip(members)
        .map(|(entry, member)| AzureMachinePoolInstanceStatus {
            version: node_version(entry.node.as_ref()),
            provisioning_state: instance_state(&entry.instance),
            provider_id: Some(entry.provider_id.clone()),
            instance_id: entry
                .instance
                .instance_id
                .clone()
                .or_else(|| entry.instance.name.clone()),
            instance_name: computer_name(&entry.instance),
            latest_model_applied: !member.outdated,
        })
        .collect()
}

/// The rollout's view of one instance, against the model the pool wants (`wanted`).
fn member(seen: &Seen, wanted: &str) -> Member {
    let object = seen.member.as_ref();
    let recorded = object
        .and_then(|member| member.annotations().get(MODEL_ANNOTATION))
        .map(String::as_str);
    let created = seen
        .instance
        .properties
        .as_ref()
        .and_then(|properties| properties.time_created.clone())
        .or_else(|| {
            object
                .and_then(|member| member.metadata.creation_timestamp.as_ref())
                .map(|time| time.0.to_string())
        })
        .unwrap_or_default();
    Member {
        name: object.map(|member| member.name_any()).unwrap_or_default(),
        created,
        ready: node_ready(seen.node.as_ref()) && seen.instance.id.is_some(),
        outdated: recorded != Some(wanted),
        leaving: leaving(seen),
        marked: seen
            .machine
            .as_ref()
            .is_some_and(|machine| machine.annotations.contains_key(DELETE_MACHINE_ANNOTATION)),
    }
}

/// Whether the instance is on its way out: its Machine or AzureMachinePoolMachine is deleted, or
/// Azure deletes it.
fn leaving(seen: &Seen) -> bool {
    let deleted = |meta: &ObjectMeta| meta.deletion_timestamp.is_some();
    seen.machine.as_ref().is_some_and(|machine| machine.deleting)
        || seen
            .member
            .as_ref()
            .is_some_and(|member| deleted(&member.metadata))
        || deleting(&seen.instance)
}

/// Whether Azure is deleting the instance.
fn deleting(instance: &ScaleSetInstance) -> bool {
    instance
        .properties
        .as_ref()
        .and_then(|properties| properties.provisioning_state.as_ref())
        == Some(&ProvisioningState::Deleting)
}

/// The name suffix of an instance's AzureMachinePoolMachine: a Uniform instance's id, a Flexible
/// machine's own suffix (after the set's name).
fn member_suffix(instance: &ScaleSetInstance, flexible: bool) -> Option<String> {
    if flexible {
        let name = instance.name.as_deref()?;
        let suffix = name.rsplit_once('_').map_or(name, |(_, suffix)| suffix);
        Some(suffix.to_ascii_lowercase())
    } else {
        instance.instance_id.clone()
    }
}

fn pool_owner(pool: &AzureMachinePool) -> OwnerReference {
    OwnerReference {
        api_version: AzureMachinePool::api_version(&()).into_owned(),
        kind: AzureMachinePool::kind(&()).into_owned(),
        name: pool.name_any(),
        uid: pool.metadata.uid.clone().unwrap_or_default(),
        block_owner_deletion: Some(true),
        controller: None,
    }
}

fn instance_state(instance: &ScaleSetInstance) -> Option<String> {
    instance
        .properties
        .as_ref()
        .and_then(|properties| properties.provisioning_state.as_ref())
        .map(|state| state.as_str().to_owned())
}

fn computer_name(instance: &ScaleSetInstance) -> Option<String> {
    instance
        .properties
        .as_ref()
        .and_then(|properties| properties.os_profile.as_ref())
        .and_then(|profile| profile.computer_name.clone())
}

fn node_version(node: Option<&Node>) -> Option<String> {
    node.and_then(|node| node.kubelet_version.clone())
}

/// Whether the Node is Ready and takes Pods.
fn node_ready(node: Option<&Node>) -> bool {
    node.is_some_and(Node::available)
}

/// `NodeHealthy` of a member: its Node registered and Ready.
fn node_health(node: Option<&Node>) -> Observation {
    let healthy = ConditionType::NODE_HEALTHY;
    match node {
        None => Observation::fails(
            healthy,
            Reason::NODE_PROVISIONING,
            ConditionSeverity::Info,
            "waiting for the instance's Node to register",
        ),
        Some(node) if node_ready(Some(node)) => Observation::holds(healthy),
        Some(node) => Observation::fails(
            healthy,
            Reason::NODE_CONDITIONS_FAILED,
            ConditionSeverity::Warning,
            format!("Node {} is not Ready or does not take Pods", node.name),
        ),
    }
}
