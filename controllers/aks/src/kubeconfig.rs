//! What Cluster API and users read to reach a running managed cluster: the kubeconfig Secrets
//! (`<cluster>-kubeconfig`, `<cluster>-kubeconfig-user`, `<cluster>-ca`) in the management
//! cluster, listed from AKS, and the discovery ConfigMap `kube-public/cluster-info` in the
//! workload cluster itself.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use capz_api::AzureManagedControlPlane;
use capz_api::common::ApiEndpoint;
use capz_azure::models::ArmModel as _;
use capz_azure::models::container_service::ManagedCluster as ManagedClusterModel;
use capz_azure::{ArmClient, ResourceId};
use capz_kit::cluster::CLUSTER_NAME_LABEL;
use capz_kit::identity::ClusterCredential;
use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use capz_kit::kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use capz_kit::kube::{Api, Resource as _, ResourceExt as _};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::context::{ID, State};

/// The application id of AKS's Entra server application: the audience of the tokens a cluster
/// with Entra sign-in accepts.
const AKS_SERVER_APP: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";
/// Why the kubeconfig of a running cluster could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
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

impl ConnectError {
    /// Whether the failure passes by itself (Azure throttled or failed the call for a while),
    /// so that credentials listed before may stand in meanwhile.
    fn passes(&self) -> bool {
        use capz_kit::policy::{Category, Classify};
        match self {
            Self::Credentials(error) => matches!(
                Classify::category(error),
                Category::Throttled | Category::Transient
            ),
            Self::Token(_) => true,
            _ => false,
        }
    }
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
pub(crate) async fn connect(
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
    let kubeconfig = format!("{cluster}-kubeconfig");
    if let Some(informed) = state.listing(&key, &host)
        && let Some(admin) = secrets.read(&kubeconfig).await?
    {
        if !informed {
            inform(state, &key, &admin, &endpoint).await;
        }
        return Ok(endpoint);
    }
    let listed = list(&secrets, (client, credential), id, (managed_aad, local_disabled)).await;
    let admin = match listed {
        Ok((admin, trusted_for)) => {
            state.listed(key.clone(), host.clone(), Instant::now() + trusted_for);
            admin
        }
        // Azure is busy: the Secrets keep the last credentials while they reach the same API
        // server, and the next pass lists again. The cluster did not stop running.
        Err(error) if error.passes() => match secrets.read(&kubeconfig).await? {
            Some(held) if reaches(&held, &host) => {
                tracing::warn!(control_plane = %key, %error, "the credentials could not be listed again; the Secrets keep the last ones");
                return Ok(endpoint);
            }
            _ => return Err(error),
        },
        Err(error) => return Err(error),
    };
    inform(state, &key, &admin, &endpoint).await;
    Ok(endpoint)
}

/// Lists the credentials of the managed cluster `id` from AKS and writes them into the Secrets:
/// with Entra sign-in (`managed_aad`) the user's, and the admin's or, with local accounts
/// disabled, the user's signed in with a token. Gives the admin kubeconfig and how long it is
/// to be trusted.
async fn list(
    secrets: &Secrets<'_>,
    (client, credential): (&ArmClient, &ClusterCredential),
    id: &ResourceId,
    (managed_aad, local_disabled): (bool, bool),
) -> Result<(Vec<u8>, Duration), ConnectError> {
    let cluster = secrets.cluster;
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
    Ok((admin, trusted_for))
}

/// Whether the kubeconfig `kubeconfig` reaches the API server at `host`.
fn reaches(kubeconfig: &[u8], host: &str) -> bool {
    parsed(kubeconfig).is_ok_and(|config| {
        config["clusters"][0]["cluster"]["server"]
            .as_str()
            .map(|server| server.trim_start_matches("https://"))
            .and_then(|authority| authority.split(['/', ':']).next())
            .is_some_and(|named| named.eq_ignore_ascii_case(host))
    })
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
    /// The kubeconfig the Secret `name` holds, if it is there.
    async fn read(&self, name: &str) -> Result<Option<Vec<u8>>, ConnectError> {
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
            .and_then(|mut data| data.remove("value"))
            .map(|value| value.0))
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

/// The namespace and name of the discovery ConfigMap kubeadm reads before it trusts a cluster.
const CLUSTER_INFO: (&str, &str) = ("kube-public", "cluster-info");

/// How long writing `cluster-info` may take: a workload API server the management cluster cannot
/// reach (a private cluster without a peering) must not hold up the pass.
const CLUSTER_INFO_TIMEOUT: Duration = Duration::from_secs(10);

/// Writes `kube-public/cluster-info` into the workload cluster of the control plane `key` with
/// its admin kubeconfig `admin`, and notes when that is done. CAPZ fails the reconcile until
/// it can; here the control plane does not wait on it (the Secrets are what Cluster API reads),
/// and a failure is logged and tried again at the next pass.
async fn inform(state: &State, key: &str, admin: &[u8], endpoint: &ApiEndpoint) {
    let written = match authority(admin) {
        Ok(Some(authority)) => tokio::time::timeout(
            CLUSTER_INFO_TIMEOUT,
            publish_cluster_info(admin, endpoint, &authority),
        )
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {CLUSTER_INFO_TIMEOUT:?}"))),
        Ok(None) => Err("the admin kubeconfig names no certificate authority".to_owned()),
        Err(error) => Err(error.to_string()),
    };
    match written {
        Ok(()) => state.informed(key),
        Err(error) => tracing::warn!(
            control_plane = %key,
            %error,
            "kube-public/cluster-info could not be written in the workload cluster; trying again at the next pass"
        ),
    }
}

/// Writes `kube-public/cluster-info` in the workload cluster `admin` reaches, as CAPZ does for
/// tools that discover a cluster the kubeadm way: a kubeconfig naming only the API server
/// (`endpoint`) and the `authority` it trusts, under `kubeconfig`. It is read first and left
/// alone when it already says that.
async fn publish_cluster_info(admin: &[u8], endpoint: &ApiEndpoint, authority: &[u8]) -> Result<(), String> {
    let failed = |error: &dyn std::fmt::Display| error.to_string();
    let text = std::str::from_utf8(admin).map_err(|error| failed(&error))?;
    let client = capz_kit::workload::client_of(text).await?;
    let discovery = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "",
            "cluster": {
                "server": format!(
                    "https://{}:{}",
                    endpoint.host.as_deref().unwrap_or_default(),
                    endpoint.port.unwrap_or(443)
                ),
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(authority),
            },
        }],
        "contexts": [],
        "users": [],
    });
    let kubeconfig = serde_json::to_string_pretty(&discovery).map_err(|error| failed(&error))?;
    let (namespace, name) = CLUSTER_INFO;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    // A list, not a get: the namespace holds a couple of objects, and some API servers (Cluster
    // API's in-memory one among them) answer a missing object with a body that is no Status.
    let existing = api
        .list(&ListParams::default())
        .await
        .map_err(|error| failed(&error))?
        .items
        .into_iter()
        .find(|held| held.metadata.name.as_deref() == Some(name));
    let data = BTreeMap::from([("kubeconfig".to_owned(), kubeconfig)]);
    match existing {
        Some(held)
            if held.data.as_ref().and_then(|held| held.get("kubeconfig")) == data.get("kubeconfig") =>
        {
            return Ok(());
        }
        // A merge patch: the simulated and older API servers have no server-side apply, and
        // other keys someone put there stay.
        Some(_) => api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "data": data })),
            )
            .await
            .map(drop),
        None => api
            .create(
                &PostParams::default(),
                &ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        namespace: Some(namespace.to_owned()),
                        ..ObjectMeta::default()
                    },
                    data: Some(data),
                    ..ConfigMap::default()
                },
            )
            .await
            .map(drop),
    }
    .map_err(|error| failed(&error))?;
    tracing::info!(cluster = %endpoint.host.as_deref().unwrap_or_default(), "wrote kube-public/cluster-info in the workload cluster");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{reaches, same_kubeconfig, with_token};

    /// A kubeconfig as AKS answers it: one cluster, one user signing in with `auth`.
    fn kubeconfig(server: &str, auth: &str) -> Vec<u8> {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: Q0E=\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    {auth}\n"
        )
        .into_bytes()
    }

    #[test]
    fn a_kubeconfig_reaches_the_host_its_server_names() {
        let config = kubeconfig("https://c-1.hcp.westeurope.azmk8s.io:443", "token: t");
        assert!(reaches(&config, "c-1.hcp.westeurope.azmk8s.io"));
        assert!(reaches(&config, "C-1.HCP.westeurope.azmk8s.io"));
        assert!(!reaches(&config, "c-1.privatelink.westeurope.azmk8s.io"));
        assert!(!reaches(b"not a kubeconfig", "c-1.hcp.westeurope.azmk8s.io"));
    }

    #[test]
    fn a_new_client_certificate_is_the_same_credential_but_a_new_token_is_not() {
        let server = "https://c.hcp.westeurope.azmk8s.io:443";
        let first = kubeconfig(server, "client-certificate-data: QQ==");
        let second = kubeconfig(server, "client-certificate-data: Qg==");
        assert!(same_kubeconfig(&first, &second, false));
        assert!(!same_kubeconfig(&first, &second, true));
        let moved = kubeconfig(
            "https://d.hcp.westeurope.azmk8s.io:443",
            "client-certificate-data: QQ==",
        );
        assert!(!same_kubeconfig(&first, &moved, false));
    }

    #[test]
    fn the_exec_plugin_gives_way_to_the_token() -> Result<(), Box<dyn std::error::Error>> {
        let user = kubeconfig(
            "https://c.hcp.westeurope.azmk8s.io:443",
            "exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: kubelogin}",
        );
        let signed_in: serde_json::Value = serde_json::from_slice(&with_token(&user, "secret-token")?)?;
        let auth = &signed_in["users"][0]["user"];
        assert_eq!(auth["token"], "secret-token");
        assert!(auth.get("exec").is_none_or(serde_json::Value::is_null), "{auth}");
        Ok(())
    }
}
