//! Bringing Azure to the spec: for a live AzureManagedControlPlane, its groups, network, subnet
//! and managed cluster in [`ORDER`], then what Cluster API reads of a control plane (the
//! endpoint, the kubeconfig Secrets, `ready`, `initialized`, `version`); for a live
//! AzureManagedMachinePool, its agent pool and the MachinePool contract (the sorted
//! `providerIDList` of the pool's scale-set instances, replicas, readiness); for an
//! AzureManagedCluster, the endpoint its control plane has.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
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
use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::Secret;
use capz_kit::kube::api::{ListParams, ObjectMeta, Patch, PatchParams};
use capz_kit::kube::runtime::controller::Action;
use capz_kit::kube::{Api, Resource as _, ResourceExt as _};
use capz_kit::operations::Operations;
use capz_kit::progress::{Direction, Outcome, Steps};
use capz_kit::resource::{self, AzureResource as _};
use capz_kit::tags;
use capz_resources::subnet::Network;
use capz_resources::virtual_machine::provider_id;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde::Serialize;

use crate::context::{Found, ID, REPLICAS_MANAGED_BY_ANNOTATION, State};
use crate::plan::{self, ORDER, POOL_ORDER, POOL_SERVICES, PlanError, SERVICES, Unit};
use crate::status::{self, PlaneFields};

/// The application id of AKS's Entra server application: the audience of the tokens a cluster
/// with Entra sign-in accepts.
const AKS_SERVER_APP: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";
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

/// Why the kubeconfig of a running cluster could not be written.
#[derive(Debug, thiserror::Error)]
enum ConnectError {
    #[error("listing its credentials: {0}")]
    Credentials(#[from] capz_azure::ArmError),
    #[error("AKS answered no kubeconfig")]
    NoKubeconfig,
    #[error("AKS answered a kubeconfig that cannot be read: {0}")]
    Unreadable(String),
    #[error("a token for AKS's Entra server application: {0}")]
    Token(String),
    #[error("writing Secret {secret}: {source}")]
    Secret {
        secret: String,
        source: capz_kit::kube::Error,
    },
    #[error("AKS reports neither a public nor a private FQDN for the API server")]
    NoEndpoint,
}

/// The answer of a managed cluster's credential listings.
#[derive(serde::Deserialize)]
struct CredentialResults {
    #[serde(default)]
    kubeconfigs: Vec<CredentialResult>,
}

#[derive(serde::Deserialize)]
struct CredentialResult {
    value: String,
}

/// The first kubeconfig the listing `action` answers.
async fn listed_kubeconfig(
    client: &ArmClient,
    id: &ResourceId,
    action: &str,
) -> Result<Vec<u8>, ConnectError> {
    let results: CredentialResults = client
        .action(id, action, &ManagedClusterModel::API_VERSION)
        .await?;
    let first = results
        .kubeconfigs
        .into_iter()
        .next()
        .ok_or(ConnectError::NoKubeconfig)?;
    base64::engine::general_purpose::STANDARD
        .decode(first.value.trim())
        .map_err(|error| ConnectError::Unreadable(error.to_string()))
}

/// How long credentials listed from AKS are trusted before they are listed again: a certificate
/// AKS rotates reaches the Secrets within this time. CAPZ lists them at every pass, which at a
/// short sync period costs a POST per cluster and period, counted against ARM's write limit.
const RELIST_AFTER: Duration = Duration::from_mins(30);

/// Writes the kubeconfig Secrets of a running cluster `model` as CAPZ does and gives where its
/// API server is reached: `<cluster>-kubeconfig` (the admin credential, or, with local accounts
/// disabled, the user credential signed in with a token for AKS's Entra application),
/// `<cluster>-kubeconfig-user` with Entra sign-in, and `<cluster>-ca`.
async fn connect(
    state: &State,
    plane: &AzureManagedControlPlane,
    (client, credential): (&ArmClient, &ClusterCredential),
    id: &ResourceId,
    model: &ManagedClusterModel,
) -> Result<ApiEndpoint, ConnectError> {
    let properties = model.properties.clone().unwrap_or_default();
    let access = properties.api_server_access_profile.as_ref();
    let private = access.and_then(|access| access.enable_private_cluster) == Some(true)
        && access.and_then(|access| access.enable_private_cluster_public_fqdn) != Some(true);
    let host = if private {
        properties.private_fqdn.clone()
    } else {
        properties
            .fqdn
            .clone()
            .or_else(|| properties.private_fqdn.clone())
    }
    .ok_or(ConnectError::NoEndpoint)?;
    let cluster = plane
        .labels()
        .get(CLUSTER_NAME_LABEL)
        .cloned()
        .or_else(|| capz_kit::cluster::cluster_name(plane))
        .unwrap_or_else(|| plane.name_any());
    let managed_aad = plane
        .spec
        .class
        .aad_profile
        .as_ref()
        .is_some_and(|aad| aad.managed);
    let local_disabled = managed_aad && plane.spec.class.disable_local_accounts == Some(true);
    let secrets = Secrets {
        state,
        plane,
        cluster: &cluster,
    };
    let endpoint = ApiEndpoint {
        host: Some(host.clone()),
        port: Some(443),
    };
    let key = format!("{}/{}", plane.namespace().unwrap_or_default(), plane.name_any());
    if state.listed_recently(&key, &host) && secrets.holds(&format!("{cluster}-kubeconfig")).await? {
        return Ok(endpoint);
    }
    let mut trusted_for = RELIST_AFTER;
    let user = if managed_aad {
        Some(listed_kubeconfig(client, id, "listClusterUserCredential").await?)
    } else {
        None
    };
    let admin = if local_disabled {
        let token = credential
            .credential
            .token(&[&format!("{AKS_SERVER_APP}/.default")])
            .await
            .map_err(|error| ConnectError::Token(error.to_string()))?;
        // Renewed when half its life is gone, well before it expires.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let expires = u64::try_from(token.expires_on.unix_timestamp()).unwrap_or_default();
        trusted_for = trusted_for.min(Duration::from_secs(expires.saturating_sub(now) / 2));
        with_token(user.as_deref().unwrap_or_default(), token.token.secret())?
    } else {
        listed_kubeconfig(client, id, "listClusterAdminCredential").await?
    };
    secrets
        .write(&format!("{cluster}-kubeconfig"), "value", &admin, local_disabled)
        .await?;
    if let Some(user) = &user {
        secrets
            .write(&format!("{cluster}-kubeconfig-user"), "value", user, false)
            .await?;
    }
    if let Some(authority) = authority(&admin)? {
        secrets.write_ca(&format!("{cluster}-ca"), &authority).await?;
    }
    state.listed(key, host, Instant::now() + trusted_for);
    Ok(endpoint)
}

/// `kubeconfig` read as JSON (a kubeconfig in YAML, as AKS answers it).
fn parsed(kubeconfig: &[u8]) -> Result<serde_json::Value, ConnectError> {
    let text =
        std::str::from_utf8(kubeconfig).map_err(|error| ConnectError::Unreadable(error.to_string()))?;
    let config = capz_kit::kube::config::Kubeconfig::from_yaml(text)
        .map_err(|error| ConnectError::Unreadable(error.to_string()))?;
    serde_json::to_value(config).map_err(|error| ConnectError::Unreadable(error.to_string()))
}

/// The user kubeconfig `user` signed in with `token` instead of its exec plugin (kubelogin), as
/// CAPZ writes it for a cluster without local accounts.
fn with_token(user: &[u8], token: &str) -> Result<Vec<u8>, ConnectError> {
    let mut config = parsed(user)?;
    for entry in config["users"].as_array_mut().into_iter().flatten() {
        if let Some(auth) = entry["user"].as_object_mut() {
            auth.remove("exec");
            auth.insert("token".to_owned(), serde_json::Value::String(token.to_owned()));
        }
    }
    // JSON is YAML: every kubeconfig reader takes it.
    serde_json::to_vec_pretty(&config).map_err(|error| ConnectError::Unreadable(error.to_string()))
}

/// The certificate authority (PEM) `kubeconfig` trusts, when it names one.
fn authority(kubeconfig: &[u8]) -> Result<Option<Vec<u8>>, ConnectError> {
    let config = parsed(kubeconfig)?;
    let Some(data) = config["clusters"][0]["cluster"]["certificate-authority-data"].as_str() else {
        return Ok(None);
    };
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map(Some)
        .map_err(|error| ConnectError::Unreadable(error.to_string()))
}

/// Whether the kubeconfig `old` reaches the same servers, trusting the same authorities, as the
/// users of `new`: then the credential AKS answered anew (a new client certificate each time)
/// need not be written again. `exact` compares everything (a token that was renewed).
fn same_kubeconfig(old: &[u8], new: &[u8], exact: bool) -> bool {
    if exact {
        return old == new;
    }
    let (Ok(old), Ok(new)) = (parsed(old), parsed(new)) else {
        return false;
    };
    let names = |config: &serde_json::Value| -> Vec<String> {
        config["users"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|user| user["name"].as_str().map(str::to_owned))
            .collect()
    };
    old["clusters"] == new["clusters"] && names(&old) == names(&new)
}

/// The Secrets of one control plane.
struct Secrets<'a> {
    state: &'a State,
    plane: &'a AzureManagedControlPlane,
    cluster: &'a str,
}

impl Secrets<'_> {
    /// Whether the kubeconfig Secret `name` is there, holding a kubeconfig.
    async fn holds(&self, name: &str) -> Result<bool, ConnectError> {
        let existing = self
            .api()
            .get_opt(name)
            .await
            .map_err(|source| ConnectError::Secret {
                secret: name.to_owned(),
                source,
            })?;
        Ok(existing
            .and_then(|secret| secret.data)
            .is_some_and(|data| data.contains_key("value")))
    }

    /// Applies the Secret `name` holding `kubeconfig` under `key`, unless it already holds the
    /// same credential (see [`same_kubeconfig`]).
    async fn write(&self, name: &str, key: &str, kubeconfig: &[u8], exact: bool) -> Result<(), ConnectError> {
        let api = self.api();
        let existing = api.get_opt(name).await.map_err(|source| ConnectError::Secret {
            secret: name.to_owned(),
            source,
        })?;
        let held = existing
            .as_ref()
            .and_then(|secret| secret.data.as_ref())
            .and_then(|data| data.get(key));
        if held.is_some_and(|held| same_kubeconfig(&held.0, kubeconfig, exact)) {
            return Ok(());
        }
        self.apply(
            name,
            [(key.to_owned(), ByteString(kubeconfig.to_vec()))].into(),
            None,
        )
        .await
    }

    /// Applies the Secret `name` holding the cluster's certificate authority. AKS never shows its
    /// key: `tls.key` is left empty.
    async fn write_ca(&self, name: &str, certificate: &[u8]) -> Result<(), ConnectError> {
        let data: BTreeMap<String, ByteString> = [
            ("tls.crt".to_owned(), ByteString(certificate.to_vec())),
            ("tls.key".to_owned(), ByteString(Vec::new())),
        ]
        .into();
        let api = self.api();
        let existing = api.get_opt(name).await.map_err(|source| ConnectError::Secret {
            secret: name.to_owned(),
            source,
        })?;
        if existing.and_then(|secret| secret.data) == Some(data.clone()) {
            return Ok(());
        }
        self.apply(name, data, None).await
    }

    fn api(&self) -> Api<Secret> {
        Api::namespaced(
            self.state.client.clone(),
            &self.plane.namespace().unwrap_or_default(),
        )
    }

    async fn apply(
        &self,
        name: &str,
        data: BTreeMap<String, ByteString>,
        type_: Option<String>,
    ) -> Result<(), ConnectError> {
        let owner = OwnerReference {
            api_version: AzureManagedControlPlane::api_version(&()).into_owned(),
            kind: AzureManagedControlPlane::kind(&()).into_owned(),
            name: self.plane.name_any(),
            uid: self.plane.uid().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: self.plane.namespace(),
                labels: Some([(CLUSTER_NAME_LABEL.to_owned(), self.cluster.to_owned())].into()),
                owner_references: Some(vec![owner]),
                ..ObjectMeta::default()
            },
            data: Some(data),
            type_,
            ..Secret::default()
        };
        // The Secret is the control plane's: take over what CAPZ's manager wrote before.
        self.api()
            .patch(
                name,
                &PatchParams::apply(ID.field_manager().as_str()).force(),
                &Patch::Apply(&secret),
            )
            .await
            .map_err(|source| ConnectError::Secret {
                secret: name.to_owned(),
                source,
            })?;
        tracing::info!(secret = %name, "wrote the cluster's credentials");
        Ok(())
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
                Ok((agent_pool, client, node_group)) => {
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

/// The agent pool of `pool`, the ARM client of its control plane's identity, and the node
/// resource group its scale set is in.
pub(crate) async fn pool_of_plane(
    state: &State,
    plane: &AzureManagedControlPlane,
    pool: &AzureManagedMachinePool,
    found: &Found,
) -> Result<(capz_resources::agent_pool::AgentPool, ArmClient, ResourceId), Outcome> {
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
    let (client, _) = arm_client(state, plane).await?;
    Ok((agent_pool, client, node_group))
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
