//! Bringing the controller's objects to what they ask: an identity checked by signing in (a
//! failure remembered per identity generation and retried only after a pause — 10 minutes when
//! retrying cannot help, a doubling backoff otherwise — however often the identity is woken
//! meanwhile, so a wrong secret costs one token request per pause, never a storm), and the
//! `<name>-azure-json` Secret of a machine source.
//!
//! The Secret carries the label `<cluster>: owned` and an owner reference to its object, so it
//! goes with it. A Secret of that name without the label is the user's own and is never touched.
//! The Secret is applied only when its content or owner differs.

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::time::Duration;

use capz_kit::api::AzureCluster;
use capz_kit::api::azureclusteridentity::AzureClusterIdentity;
use capz_kit::api::common::compute::{VmIdentity, VmIdentityProfile};
use capz_kit::api::common::conditions::{ConditionSeverity, ConditionType};
use capz_kit::azure::ResourceId;
use capz_kit::azure::models::{ArmModel as _, UserAssignedIdentity};
use capz_kit::conditions::{Observation, Reason};
use capz_kit::error::Error;
use capz_kit::identity::{ClusterIdentityRef, IdentityError};
use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::Secret;
use capz_kit::k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use capz_kit::kube::ResourceExt as _;
use capz_kit::kube::api::{Api, ObjectMeta, Patch, PatchParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::policy;
use capz_kit::scope::ClusterScope;
use tokio::time::Instant;

use crate::context::{Failure, ID, Key, MachineSource, State};
use crate::plan::{
    CONTROL_PLANE_KEY, CloudProviderConfig, HostIdentity, InvalidSpec, LEGACY_KEY, WORKER_NODE_KEY,
};

const FIRST_RETRY: Duration = Duration::from_secs(5);
const LONGEST_RETRY: Duration = Duration::from_mins(5);
/// The value of the Secret's cluster label.
const OWNED: &str = "owned";

/// Whether the identity signs in, and when to look again. A remembered failure is answered
/// without asking Entra ID again.
pub(crate) async fn check(
    state: &State,
    identity: &AzureClusterIdentity,
    key: &Key,
    cloud: Option<&str>,
) -> (Observation, Action) {
    let generation = identity.metadata.generation;
    let remembered = state
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
    match sign_in(state, identity, cloud).await {
        Ok(()) => {
            state
                .failures
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(key);
            (Observation::holds(ConditionType::READY), Action::await_change())
        }
        Err(error) => {
            state.reporter.failed(identity, "CheckCredential", &error).await;
            let failures = remembered
                .filter(|failure| failure.generation == generation)
                .map_or(1, |failure| failure.failures.saturating_add(1));
            // A failure retrying alone cannot fix (a wrong secret, a missing federated
            // credential) is looked at again as the kit's policy does: ever less often, so a
            // fix made in Azure is noticed without asking Entra ID again and again.
            let wait = if error.is_terminal() {
                policy::doubling(policy::TERMINAL_FIRST, failures, policy::TERMINAL_LONGEST)
            } else {
                policy::doubling(FIRST_RETRY, failures, LONGEST_RETRY)
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
            state
                .failures
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
    state: &State,
    identity: &AzureClusterIdentity,
    cloud: Option<&str>,
) -> Result<(), IdentityError> {
    let credential = state.identities.identity_credential(identity, cloud).await?;
    credential.arm_token().await.map(drop)
}

/// Writes the azure.json Secret of `object`, whose cluster is `azure_cluster`.
pub(crate) async fn write<K: MachineSource>(
    object: &K,
    azure_cluster: &AzureCluster,
    state: &State,
) -> Result<(), Error> {
    let scope = ClusterScope::new(azure_cluster, state.features, state.subscription.as_deref())?;
    let credentials = state
        .identities
        .cloud_provider_credentials(ClusterIdentityRef::from(azure_cluster))
        .await?;
    let host = host_identity(object.identities(), azure_cluster, state).await?;
    let file = CloudProviderConfig::new(&scope, &credentials, &host).to_bytes();
    apply_secret(object, state, &scope.name, file).await
}

/// How the machines' cloud provider signs in: a user-assigned identity is named by its client
/// id, read from Azure with the cluster's credential.
async fn host_identity(
    profile: &VmIdentityProfile,
    azure_cluster: &AzureCluster,
    state: &State,
) -> Result<HostIdentity, Error> {
    match profile.identity.unwrap_or_default() {
        VmIdentity::None => Ok(HostIdentity::ServicePrincipal),
        VmIdentity::SystemAssigned => Ok(HostIdentity::SystemAssigned),
        VmIdentity::UserAssigned => {
            let provider_id = profile
                .user_assigned_identities
                .iter()
                .flatten()
                .next()
                .map(|identity| identity.provider_id.as_str())
                .ok_or_else(|| {
                    Error::failed(InvalidSpec(
                        "identity UserAssigned needs an entry in userAssignedIdentities".into(),
                    ))
                })?;
            let id: ResourceId = provider_id
                .strip_prefix("azure://")
                .unwrap_or(provider_id)
                .parse()
                .map_err(|error| {
                    Error::failed(InvalidSpec(format!(
                        "userAssignedIdentities[0].providerID {provider_id:?}: {error}"
                    )))
                })?;
            let arm = state
                .identities
                .credential(ClusterIdentityRef::from(azure_cluster))
                .await?
                .arm_client(ID.user_agent());
            let identity: UserAssignedIdentity = arm.get(&id, &UserAssignedIdentity::API_VERSION).await?;
            identity
                .properties
                .and_then(|properties| properties.client_id)
                .map(HostIdentity::UserAssigned)
                .ok_or_else(|| {
                    Error::failed(InvalidSpec(format!(
                        "the user-assigned identity {id} has no client id"
                    )))
                })
        }
    }
}

/// Applies the Secret `<name>-azure-json` holding `file` under every key, unless a Secret of that
/// name is the user's or already holds it.
async fn apply_secret<K: MachineSource>(
    object: &K,
    state: &State,
    cluster: &str,
    file: Vec<u8>,
) -> Result<(), Error> {
    let namespace = object.namespace().unwrap_or_default();
    let name = format!("{}-azure-json", object.name_any());
    let api = Api::<Secret>::namespaced(state.client.clone(), &namespace);
    let owner = OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: object.name_any(),
        uid: object.uid().unwrap_or_default(),
        ..OwnerReference::default()
    };
    let data: BTreeMap<String, ByteString> = [CONTROL_PLANE_KEY, WORKER_NODE_KEY, LEGACY_KEY]
        .into_iter()
        .map(|key| (key.to_owned(), ByteString(file.clone())))
        .collect();
    if let Some(existing) = api.get_opt(&name).await? {
        if existing.labels().get(cluster).map(String::as_str) != Some(OWNED) {
            tracing::debug!(secret = %name, "a Secret of the user's holds the name; left as it is");
            return Ok(());
        }
        let owned_by = existing
            .owner_references()
            .iter()
            .any(|reference| reference.uid == owner.uid);
        if owned_by && existing.data.as_ref() == Some(&data) {
            return Ok(());
        }
    }
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace),
            labels: Some([(cluster.to_owned(), OWNED.to_owned())].into()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    // The label says the Secret is the provider's: take over what CAPZ's manager wrote before.
    api.patch(
        &name,
        &PatchParams::apply(ID.field_manager().as_str()).force(),
        &Patch::Apply(&secret),
    )
    .await?;
    tracing::info!(secret = %name, "wrote the cloud provider configuration");
    Ok(())
}
