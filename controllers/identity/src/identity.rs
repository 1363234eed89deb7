//! AzureClusterIdentity: whether it signs in (`Ready`), and its finalizer while clusters use it.
//!
//! The clusters using an identity come from watch caches of AzureClusters and
//! AzureManagedControlPlanes; a change of who refers to which identity reconciles the identities
//! again. A failed sign-in is remembered per identity generation and retried only after a pause
//! (10 minutes when retrying cannot help, a doubling backoff otherwise), however often the
//! identity is woken meanwhile: a wrong secret costs one token request per pause, never a storm.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::api::common::ObjectReference;
use capz_kit::api::common::conditions::{Condition, ConditionSeverity, ConditionType, Conditions};
use capz_kit::api::{AzureCluster, AzureManagedControlPlane};
use capz_kit::apply::apply_status;
use capz_kit::conditions::{Observation, Reason, differ, observe};
use capz_kit::filter::everything_but_status;
use capz_kit::identity::IdentityError;
use capz_kit::k8s_openapi::jiff::Timestamp;
use capz_kit::kube::api::{Api, Patch, PatchParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::runtime::reflector::{self, Store};
use capz_kit::kube::runtime::{WatchStreamExt as _, watcher};
use capz_kit::kube::{Resource, ResourceExt as _};
use capz_kit::runner::Context;
use futures_util::{Stream, StreamExt as _};
use serde::Serialize;
use tokio::time::Instant;

use crate::changes::Seen;
use crate::{Error, ID, Shared};

const FINALIZER: &str = ID.finalizer();
const OWNED: &[ConditionType] = &[ConditionType::READY];
/// The pause after a failure retrying cannot fix: a wrong secret, a refused namespace.
const TERMINAL_PAUSE: Duration = Duration::from_mins(10);
const FIRST_RETRY: Duration = Duration::from_secs(5);
const LONGEST_RETRY: Duration = Duration::from_mins(5);
/// How long a reconcile waits for the caches of clusters to be listed before trying again.
const CACHE_WAIT: Duration = Duration::from_secs(1);

/// An identity as clusters name it: namespace and name.
type Key = (String, String);

/// The status fields this controller owns.
#[derive(Debug, Serialize)]
struct OwnedStatus {
    conditions: Vec<Condition>,
}

/// A sign-in that failed, remembered until `retry_at`.
#[derive(Debug, Clone)]
struct Failure {
    generation: Option<i64>,
    retry_at: Instant,
    failures: u32,
    observation: Observation,
}

struct State {
    shared: Arc<Shared>,
    clusters: Store<AzureCluster>,
    control_planes: Store<AzureManagedControlPlane>,
    failures: Mutex<HashMap<Key, Failure>>,
}

/// Runs the AzureClusterIdentity controller.
pub(crate) async fn run(ctx: &Context, shared: Arc<Shared>) {
    let (clusters, cluster_writer) = reflector::store();
    let (control_planes, control_plane_writer) = reflector::store();
    let cluster_events = watcher(ctx.api::<AzureCluster>(), ctx.watcher_config())
        .default_backoff()
        .reflect(cluster_writer);
    let control_plane_events = watcher(ctx.api::<AzureManagedControlPlane>(), ctx.watcher_config())
        .default_backoff()
        .reflect(control_plane_writer);
    let references = futures_util::stream::select(
        references_changed(cluster_events, |cluster: &AzureCluster| {
            reference_key(cluster, cluster.spec.class.identity_ref.as_ref())
        }),
        references_changed(control_plane_events, |plane: &AzureManagedControlPlane| {
            reference_key(plane, Some(&plane.spec.class.identity_ref))
        }),
    );
    let state = Arc::new(State {
        shared,
        clusters,
        control_planes,
        failures: Mutex::default(),
    });
    let controller = ctx
        .filtered_controller(
            ctx.api::<AzureClusterIdentity>(),
            everything_but_status::<AzureClusterIdentity>,
        )
        .reconcile_all_on(references);
    ctx.run(controller, reconcile, state).await;
}

/// The identity `object` refers to with `reference`: a reference without a namespace points into
/// the object's own; one naming another kind refers to no identity.
fn reference_key(object: &impl Resource, reference: Option<&ObjectReference>) -> Option<Key> {
    let reference = reference?;
    if reference
        .kind
        .as_deref()
        .is_some_and(|kind| kind != "AzureClusterIdentity")
    {
        return None;
    }
    let name = reference.name.clone().filter(|name| !name.is_empty())?;
    let namespace = reference
        .namespace
        .clone()
        .filter(|namespace| !namespace.is_empty())
        .or_else(|| object.namespace())?;
    Some((namespace, name))
}

/// Ticks whenever an object starts or stops referring to an identity, or changes which one; once
/// when the watch has listed everything.
fn references_changed<K: Resource<DynamicType = ()> + 'static>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    key: impl Fn(&K) -> Option<Key> + Send + 'static,
) -> impl Stream<Item = ()> + Send + 'static {
    let seen = Seen::default();
    events.filter_map(move |event| {
        let tick = match event {
            Ok(watcher::Event::Apply(object)) => seen.changed(&object, key(&object)),
            Ok(watcher::Event::InitApply(object)) => {
                seen.changed(&object, key(&object));
                false
            }
            Ok(watcher::Event::Delete(object)) => {
                seen.forget(&object);
                true
            }
            Ok(watcher::Event::InitDone) => true,
            Ok(watcher::Event::Init) => false,
            Err(error) => {
                tracing::warn!(%error, kind = %K::kind(&()), "watch failed");
                false
            }
        };
        std::future::ready(tick.then_some(()))
    })
}

impl State {
    /// The clusters using the identity `key`, and the cloud the first of them names.
    fn users(&self, key: &Key) -> (usize, Option<String>) {
        let clusters = self
            .clusters
            .state()
            .into_iter()
            .filter(|cluster| {
                reference_key(&**cluster, cluster.spec.class.identity_ref.as_ref()).as_ref() == Some(key)
            })
            .map(|cluster| cluster.spec.class.azure_environment.clone());
        let planes = self
            .control_planes
            .state()
            .into_iter()
            .filter(|plane| {
                reference_key(&**plane, Some(&plane.spec.class.identity_ref)).as_ref() == Some(key)
            })
            .map(|plane| plane.spec.class.azure_environment.clone());
        let environments: Vec<Option<String>> = clusters.chain(planes).collect();
        let cloud = environments.iter().flatten().next().cloned();
        (environments.len(), cloud)
    }

    /// Whether the identity signs in, and when to look again. A remembered failure is answered
    /// without asking Entra ID again.
    async fn check(
        &self,
        identity: &AzureClusterIdentity,
        key: &Key,
        cloud: Option<&str>,
    ) -> (Observation, Action) {
        let generation = identity.metadata.generation;
        let remembered = self
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned();
        if let Some(failure) = &remembered
            && failure.generation == generation
            && Instant::now() < failure.retry_at
        {
            let wait = failure.retry_at.saturating_duration_since(Instant::now());
            return (failure.observation.clone(), Action::requeue(wait));
        }
        match self.sign_in(identity, cloud).await {
            Ok(()) => {
                self.failures
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(key);
                (Observation::holds(ConditionType::READY), Action::await_change())
            }
            Err(error) => {
                self.shared
                    .reporter
                    .failed(identity, "CheckCredential", &error)
                    .await;
                let failures = remembered
                    .filter(|failure| failure.generation == generation)
                    .map_or(1, |failure| failure.failures.saturating_add(1));
                let wait = if error.is_terminal() {
                    TERMINAL_PAUSE
                } else {
                    FIRST_RETRY
                        .saturating_mul(2_u32.saturating_pow(failures.saturating_sub(1).min(16)))
                        .min(LONGEST_RETRY)
                };
                let severity = if error.is_terminal() {
                    ConditionSeverity::Error
                } else {
                    ConditionSeverity::Warning
                };
                let observation = Observation::fails(
                    ConditionType::READY,
                    Reason::new(error.reason()),
                    severity,
                    error.to_string(),
                );
                self.failures
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(
                        key.clone(),
                        Failure {
                            generation,
                            retry_at: Instant::now() + wait,
                            failures,
                            observation: observation.clone(),
                        },
                    );
                (observation, Action::requeue(wait))
            }
        }
    }

    async fn sign_in(
        &self,
        identity: &AzureClusterIdentity,
        cloud: Option<&str>,
    ) -> Result<(), IdentityError> {
        let credential = self
            .shared
            .identities
            .identity_credential(identity, cloud)
            .await?;
        credential.arm_token().await.map(drop)
    }
}

async fn reconcile(identity: Arc<AzureClusterIdentity>, state: Arc<State>) -> Result<Action, Error> {
    let key = (identity.namespace().unwrap_or_default(), identity.name_any());
    // Counting users from caches that have not listed everything could release a used identity.
    // The wait is bounded: a reconcile must never outlive the shutdown it would hold up.
    let listed = async {
        state.clusters.wait_until_ready().await.is_ok()
            && state.control_planes.wait_until_ready().await.is_ok()
    };
    if !tokio::time::timeout(CACHE_WAIT, listed).await.unwrap_or(false) {
        return Ok(Action::requeue(CACHE_WAIT));
    }
    let (users, cloud) = state.users(&key);
    let api = Api::<AzureClusterIdentity>::namespaced(state.shared.client.clone(), &key.0);
    hold(&api, &identity, users > 0).await?;
    if identity.metadata.deletion_timestamp.is_some() {
        // Deleted once its last user is gone; a change of users wakes it.
        return Ok(Action::await_change());
    }
    let (observation, action) = state.check(&identity, &key, cloud.as_deref()).await;
    let current: Option<&Conditions> = identity.status.as_ref().map(|status| &status.conditions);
    let conditions = observe(current, [observation], Timestamp::now());
    if differ(current, OWNED, &conditions) {
        apply_status(&api, &ID.field_manager(), &*identity, &OwnedStatus { conditions }).await?;
    }
    Ok(action)
}

/// Adds the finalizer when `used` and it is missing, removes it when unused and present. The JSON
/// patches test the list first, so peers' finalizers are never touched.
async fn hold(
    api: &Api<AzureClusterIdentity>,
    identity: &AzureClusterIdentity,
    used: bool,
) -> Result<(), Error> {
    let finalizers = identity.finalizers();
    let position = finalizers.iter().position(|finalizer| finalizer == FINALIZER);
    let patch = match (used, position) {
        (true, None) if identity.metadata.finalizers.is_none() => serde_json::json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
        ]),
        (true, None) => serde_json::json!([
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "add", "path": "/metadata/finalizers/-", "value": FINALIZER},
        ]),
        (false, Some(index)) => serde_json::json!([
            {"op": "test", "path": format!("/metadata/finalizers/{index}"), "value": FINALIZER},
            {"op": "remove", "path": format!("/metadata/finalizers/{index}")},
        ]),
        _ => return Ok(()),
    };
    let patch: json_patch::Patch = serde_json::from_value(patch)
        .map_err(|error| Error::InvalidSpec(format!("finalizer patch: {error}")))?;
    api.patch(
        &identity.name_any(),
        &PatchParams::default(),
        &Patch::<()>::Json(patch),
    )
    .await?;
    Ok(())
}
