//! Managed clusters. A cluster's write completes it as AKS shows it (versions, FQDNs, network
//! profile defaults, the kubelet identity, the OIDC issuer), checks what AKS fixes once the
//! cluster exists, and writes the pools its `agentPoolProfiles` name; its reads show its pools
//! as `agentPoolProfiles`. Each cluster has a certificate authority of its own, made when it is
//! created and kept where no answer shows it (AKS never does): `listClusterAdminCredential`,
//! `listClusterUserCredential` and `listClusterMonitoringUserCredential` answer a kubeconfig
//! trusting it, with a client certificate it signed, and a stand-in for the cluster's API server
//! reads it from `/_emulator/boots?keys=true` to serve with it. It answers `stop` / `start`.

use axum::http::StatusCode;
use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::agent_pools::{self, AGENT_POOL, Cluster, change_not_allowed, pools_of};
use super::node_resource_group::{self, NodeGroup};
use super::versions;
use super::{AKS, API_VERSIONS, at, drop_nulls, field, new_etag};
use crate::error::ArmError;
use crate::resources::compute::{fill, identity};
use crate::resources::{Act, Acted, Action, Hooks, NO_HOOKS, Prepare, ResourceType, fields};
use crate::state::State;

pub(crate) static MANAGED_CLUSTER: ResourceType = ResourceType {
    since: &[
        ("/kind", "2025-01-01"),
        ("bootstrapProfile", "2025-01-01"),
        ("nodeProvisioningProfile", "2025-01-01"),
        ("agentPoolProfiles.securityProfile.sshAccess", "2025-01-01"),
        ("agentPoolProfiles.upgradeSettings.maxUnavailable", "2025-01-01"),
        ("/eTag", "2025-10-02-preview"),
        ("agentPoolProfiles.eTag", "2025-10-02-preview"),
        ("agentPoolProfiles.upgradeStrategy", "2025-10-02-preview"),
        ("controlPlanePluginProfiles", "2025-10-02-preview"),
        ("enableFIPS", "2025-10-02-preview"),
        ("hostedSystemProfile", "2025-10-02-preview"),
        ("networkProfile.podLinkLocalAccess", "2025-10-02-preview"),
        ("storageProfile.diskCSIDriver.version", "2025-10-02-preview"),
    ],
    shown_when_provisioned: &[
        "identityProfile",
        "networkProfile.loadBalancerProfile.effectiveOutboundIPs",
        "/eTag",
        "agentPoolProfiles.eTag",
    ],
    // AKS spells its type with a capital M.
    finish: |doc| doc["type"] = json!("Microsoft.ContainerService/ManagedClusters"),
    actions: &[
        Action {
            name: "listClusterAdminCredential",
            run: |act| credentials(act, "clusterAdmin"),
        },
        Action {
            name: "listClusterUserCredential",
            run: |act| credentials(act, "clusterUser"),
        },
        Action {
            name: "listClusterMonitoringUserCredential",
            run: |act| credentials(act, "clusterMonitoringUser"),
        },
        Action {
            name: "stop",
            run: |act| Ok(power(act, "Stopped")),
        },
        Action {
            name: "start",
            run: |act| Ok(power(act, "Running")),
        },
    ],
    hooks: Hooks {
        secrets: &[
            "servicePrincipalProfile.secret",
            "windowsProfile.adminPassword",
            AUTHORITY,
        ],
        render: Some(show_pools),
        on_settled: Some(|state, key, succeeded| {
            for (pool, _) in pools_of(state, key) {
                agent_pools::settle(state, key, &pool, succeeded);
            }
        }),
        on_deleted: Some(|state, cluster| {
            if let Some(group) = NodeGroup::of(cluster) {
                group.remove(state);
            }
        }),
        ..NO_HOOKS
    },
    ..ResourceType::new(
        "Microsoft.ContainerService/managedClusters",
        API_VERSIONS,
        &AKS,
        prepare_cluster,
    )
};

/// Where a cluster keeps its certificate authority, `{"certificate", "key"}` (PEM): under
/// `properties`, and never answered.
pub(super) const AUTHORITY: &str = "certificateAuthority";

/// What AKS does not let a cluster change, as paths under `properties`.
const FIXED: &[&str] = &[
    "dnsPrefix",
    "fqdnSubdomain",
    "nodeResourceGroup",
    "networkProfile/networkPlugin",
    "networkProfile/podCidr",
    "networkProfile/serviceCidr",
    "networkProfile/dnsServiceIP",
    "apiServerAccessProfile/enablePrivateCluster",
];

fn prepare_cluster(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let name = prepare.id.name().to_owned();
    let location = prepare.location.to_owned();
    let existing = prepare.existing.cloned();
    let before = existing
        .as_ref()
        .and_then(|existing| existing.get("properties"))
        .and_then(Value::as_object)
        .cloned();
    let mut properties = prepare.properties()?.clone();
    drop_nulls(&mut properties);
    let profiles = fields::array(&properties, "agentPoolProfiles", "properties")?.to_vec();
    properties.remove("agentPoolProfiles");
    if let Some(before) = &before {
        keep_fixed(&mut properties, before)?;
    }
    check_sku(prepare)?;
    if prepare
        .doc
        .get("tags")
        .is_some_and(|tags| tags.as_object().is_some_and(Map::is_empty))
    {
        prepare.doc.remove("tags");
    }
    prepare.doc.insert("kind".into(), json!("Base"));
    default_identity(prepare, &mut properties);
    let dns_prefix = properties
        .get("dnsPrefix")
        .or_else(|| properties.get("fqdnSubdomain"))
        .and_then(Value::as_str)
        .map_or_else(
            || {
                let subscription = prepare.id.subscription.as_deref().unwrap_or_default();
                let group = prepare.id.resource_group.as_deref().unwrap_or_default();
                let mut prefix = format!("{name}-{group}-{}", &subscription[..subscription.len().min(6)]);
                prefix.truncate(54);
                prefix
            },
            str::to_owned,
        );
    properties.insert("dnsPrefix".into(), json!(dns_prefix));
    kubernetes_version(&mut properties, before.as_ref(), &name, &location)?;
    if before.as_ref().is_some_and(|before| {
        before.get("currentKubernetesVersion") != properties.get("currentKubernetesVersion")
    }) {
        prepare.reported_state = Some("Upgrading");
    }
    let host = before
        .as_ref()
        .and_then(|before| field(before, "fqdn").as_str())
        .map_or_else(
            || format!("{dns_prefix}-{}", random_label(8)),
            |fqdn| fqdn.split('.').next().unwrap_or_default().to_owned(),
        );
    properties.insert("fqdn".into(), json!(format!("{host}.hcp.{location}.azmk8s.io")));
    properties.insert(
        "azurePortalFQDN".into(),
        json!(format!("{host}.portal.hcp.{location}.azmk8s.io")),
    );
    private_cluster(&mut properties, &host, &location);
    let group_name = properties
        .get("nodeResourceGroup")
        .and_then(Value::as_str)
        .map_or_else(
            || {
                node_resource_group::default_name(
                    prepare.id.resource_group.as_deref().unwrap_or_default(),
                    &name,
                    &location,
                )
            },
            str::to_owned,
        );
    properties.insert("nodeResourceGroup".into(), json!(group_name));
    let network = network_profile(&properties)?;
    properties.insert("networkProfile".into(), network);
    let tenant = prepare
        .id
        .subscription
        .as_deref()
        .and_then(|subscription| prepare.config.subscription_tenant(subscription))
        .unwrap_or(crate::config::DEFAULT_TENANT)
        .to_owned();
    complete(&mut properties, &location, &tenant);
    properties.insert(AUTHORITY.into(), authority(existing.as_ref())?);
    prepare
        .doc
        .insert("properties".into(), Value::Object(properties.clone()));
    identity(prepare)?;
    prepare.doc.insert("eTag".into(), new_etag());
    let group = NodeGroup::new(&prepare.id.to_id(), &group_name);
    if existing.is_none() {
        create_node_group(prepare, &group, &profiles)?;
    }
    policy_add_ons(prepare, &group, before.as_ref())?;
    write_pools(prepare, &properties, group, &profiles, existing.is_none())
}

/// The cluster's certificate authority: the one it has (clients never see it, so their writes
/// never carry it, and what they send in its place is ignored), or a new one.
fn authority(existing: Option<&Value>) -> Result<Value, ArmError> {
    if let Some(kept) = existing
        .and_then(|existing| existing["properties"].get(AUTHORITY))
        .filter(|kept| kept["certificate"].is_string() && kept["key"].is_string())
    {
        return Ok(kept.clone());
    }
    let (certificate, key) = crate::tls::cluster_authority().map_err(|error| internal_error(&error))?;
    Ok(json!({ "certificate": certificate, "key": key }))
}

/// What AKS answers when it fails on its own side.
fn internal_error(error: &rcgen::Error) -> ArmError {
    ArmError::container_service(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalOperationError",
        format!("Generating the cluster's certificates failed: {error}"),
    )
}

/// On a cluster's creation, its node resource group and what the cluster keeps there: the
/// kubelet's identity, a network unless every pool brings a subnet, and the outbound address.
fn create_node_group(
    prepare: &mut Prepare<'_>,
    group: &NodeGroup,
    profiles: &[Value],
) -> Result<(), ArmError> {
    if profiles.is_empty() {
        return Err(fields::missing("properties.agentPoolProfiles"));
    }
    let brings_subnets = profiles
        .iter()
        .all(|profile| profile.get("vnetSubnetID").is_some_and(Value::is_string));
    let outbound = at(prepare.properties()?, "/networkProfile/outboundType") == Some(&json!("loadBalancer"));
    let name = prepare.id.name().to_owned();
    let (kubelet, address) = group.create(prepare, &name, !brings_subnets, outbound)?;
    let properties = prepare.properties()?;
    properties.insert("identityProfile".into(), json!({ "kubeletidentity": kubelet }));
    if let Some(address) = address {
        properties["networkProfile"]["loadBalancerProfile"]["effectiveOutboundIPs"] =
            json!([{ "id": address }]);
    }
    Ok(())
}

/// The add-ons the subscription's policies deploy: enabled whatever was asked, each with its
/// identity (`<add-on>-<cluster>`) in the node resource group.
fn policy_add_ons(
    prepare: &mut Prepare<'_>,
    group: &NodeGroup,
    before: Option<&Map<String, Value>>,
) -> Result<(), ArmError> {
    for add_on in prepare.config.policy_add_ons.clone() {
        let kept = before
            .and_then(|before| at(before, &format!("/addonProfiles/{add_on}")))
            .filter(|profile| profile["enabled"] == json!(true))
            .cloned();
        let profile = if let Some(profile) = kept {
            profile
        } else {
            let cluster = prepare.id.name().to_owned();
            let identity = group.add_on_identity(prepare, &format!("{add_on}-{cluster}"))?;
            json!({ "enabled": true, "config": null, "identity": identity })
        };
        let properties = prepare.properties()?;
        let profiles = properties.entry("addonProfiles").or_insert_with(|| json!({}));
        if !profiles.is_object() {
            *profiles = json!({});
        }
        profiles[add_on.as_str()] = profile;
    }
    Ok(())
}

/// A cluster without a service principal signs in as its managed identity (system-assigned
/// unless it names one).
fn default_identity(prepare: &mut Prepare<'_>, properties: &mut Map<String, Value>) {
    let service_principal = properties
        .get("servicePrincipalProfile")
        .and_then(|profile| profile["clientId"].as_str())
        .filter(|client| *client != "msi")
        .map(str::to_owned);
    if service_principal.is_none() && prepare.doc.get("identity").is_none_or(Value::is_null) {
        prepare
            .doc
            .insert("identity".into(), json!({ "type": "SystemAssigned" }));
    }
    if service_principal.is_none() {
        properties.insert("servicePrincipalProfile".into(), json!({ "clientId": "msi" }));
    }
}

/// Refuses changing what AKS fixes once the cluster exists; what the service made, and what
/// was asked for before, stays unless asked anew.
fn keep_fixed(properties: &mut Map<String, Value>, before: &Map<String, Value>) -> Result<(), ArmError> {
    for fixed in FIXED {
        let pointer = format!("/{fixed}");
        if let (Some(was), Some(now)) = (at(before, &pointer), at(properties, &pointer))
            && !was.to_string().eq_ignore_ascii_case(&now.to_string())
        {
            return Err(change_not_allowed(&fixed.replace('/', ".")));
        }
    }
    for (key, value) in before {
        properties.entry(key.clone()).or_insert_with(|| value.clone());
    }
    Ok(())
}

/// `kubernetesVersion` as asked for and `currentKubernetesVersion`, the full version it runs;
/// an upgrade moves one minor at a time.
fn kubernetes_version(
    properties: &mut Map<String, Value>,
    before: Option<&Map<String, Value>>,
    name: &str,
    location: &str,
) -> Result<(), ArmError> {
    let asked = properties
        .get("kubernetesVersion")
        .and_then(Value::as_str)
        .unwrap_or(versions::DEFAULT_MINOR)
        .to_owned();
    let full = versions::resolve(&asked)
        .ok_or_else(|| versions::cluster_version_unsupported(name, &asked, location))?;
    let current = before.and_then(|before| field(before, "currentKubernetesVersion").as_str());
    let full = match current {
        Some(current) if versions::minor_of(current) == Some(asked.clone()) => current.to_owned(),
        _ => full.to_owned(),
    };
    if let Some(current) = current {
        versions::check_upgrade("control plane", current, &full)?;
    }
    properties.insert("kubernetesVersion".into(), json!(asked));
    properties.insert("currentKubernetesVersion".into(), json!(full));
    Ok(())
}

/// The cluster's properties completed with AKS's defaults, its OIDC issuer and AAD tenant (its
/// subscription's `tenant`, as AKS fills it in).
fn complete(properties: &mut Map<String, Value>, location: &str, tenant: &str) {
    fill(
        properties,
        json!({
            "powerState": { "code": "Running" },
            "enableRBAC": true,
            "supportPlan": "KubernetesOfficial",
            "maxAgentPools": 100,
            "autoUpgradeProfile": { "nodeOSUpgradeChannel": "NodeImage" },
            "securityProfile": {},
            "storageProfile": {
                "diskCSIDriver": { "enabled": true, "version": "v1" },
                "fileCSIDriver": { "enabled": true },
                "snapshotController": { "enabled": true },
            },
            "oidcIssuerProfile": { "enabled": false },
            "workloadAutoScalerProfile": {},
            "resourceUID": format!("{:024x}", uuid::Uuid::new_v4().as_u128() >> 32),
            "metricsProfile": { "costAnalysis": { "enabled": false } },
            "nodeProvisioningProfile": { "mode": "Manual", "defaultNodePools": "Auto" },
            "bootstrapProfile": { "artifactSource": "Direct" },
            "hostedSystemProfile": { "enabled": false },
            "controlPlanePluginProfiles": {
                "azure-monitor-metrics-ccp": { "enableV2": true },
                "gpu-provisioner": { "enableV2": true },
                "karpenter": { "enableV2": true },
                "kubelet-serving-csr-approver": { "enableV2": true },
                "live-patching-controller": { "enableV2": true },
                "static-egress-controller": { "enableV2": true },
            },
            "enableFIPS": false,
        }),
    );
    if at(properties, "/oidcIssuerProfile/enabled") == Some(&json!(true))
        && at(properties, "/oidcIssuerProfile/issuerURL").is_none()
    {
        properties["oidcIssuerProfile"]["issuerURL"] = json!(format!(
            "https://{location}.oic.prod-aks.azure.com/{tenant}/{}/",
            uuid::Uuid::new_v4()
        ));
    }
    if at(properties, "/aadProfile/managed") == Some(&json!(true)) {
        fill(properties, json!({ "aadProfile": { "tenantID": tenant } }));
    }
}

/// Writes the pools a cluster's `agentPoolProfiles` name; a new cluster needs a System pool.
fn write_pools(
    prepare: &mut Prepare<'_>,
    properties: &Map<String, Value>,
    group: NodeGroup,
    profiles: &[Value],
    creating: bool,
) -> Result<(), ArmError> {
    let cluster = Cluster {
        properties,
        group,
        with_cluster: true,
    };
    let in_progress = prepare.provisioning_state.to_owned();
    let mut any_system = false;
    for (index, profile) in profiles.iter().enumerate() {
        let path = format!("properties.agentPoolProfiles[{index}]");
        let mut requested = profile
            .as_object()
            .cloned()
            .ok_or_else(|| fields::wrong_type(&path, "an object"))?;
        let pool = fields::required_string(&requested, "name", &path)?.to_owned();
        requested.remove("name");
        let id = prepare.id.child("agentPools", &pool);
        let existing = prepare.state.body(&id.key()).map(std::borrow::Cow::into_owned);
        if existing.is_none() {
            AGENT_POOL.naming.check(&pool)?;
        }
        let written = agent_pools::write(prepare, &cluster, &id, requested, existing.as_ref())?;
        any_system |= field(&written, "mode") == "System";
        let state_word = match &existing {
            Some(existing) => agent_pools::change_of(existing, &written).unwrap_or("Updating"),
            None => in_progress.as_str(),
        };
        let mut written = written;
        written.insert("provisioningState".into(), json!(state_word));
        prepare.companions.push(json!({
            "id": id.to_id(),
            "name": pool,
            "type": AGENT_POOL.name,
            "properties": written,
        }));
    }
    if creating && !any_system {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "MustDefineAtLeastOneSystemPool",
            "A managed cluster needs at least one agent pool of mode System.",
        ));
    }
    Ok(())
}

/// `sku`: `Base`, tier `Free` unless asked for `Standard` or `Premium`.
fn check_sku(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let requested = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let kept_tier = prepare
        .existing
        .and_then(|existing| existing.pointer("/sku/tier"))
        .and_then(Value::as_str)
        .unwrap_or("Free");
    let tier =
        fields::one_of(&requested, "tier", "sku", &["Free", "Standard", "Premium"])?.unwrap_or(kept_tier);
    let name = fields::one_of(&requested, "name", "sku", &["Base", "Automatic"])?.unwrap_or("Base");
    prepare
        .doc
        .insert("sku".into(), json!({ "name": name, "tier": tier }));
    Ok(())
}

/// A private cluster's API server FQDN in its private DNS zone.
fn private_cluster(properties: &mut Map<String, Value>, host: &str, location: &str) {
    if at(properties, "/apiServerAccessProfile/enablePrivateCluster") != Some(&json!(true)) {
        return;
    }
    fill(
        properties,
        json!({ "apiServerAccessProfile": { "privateDNSZone": "system" } }),
    );
    if properties.get("privateFQDN").is_none() {
        properties.insert(
            "privateFQDN".into(),
            json!(format!(
                "{host}.{}.privatelink.{location}.azmk8s.io",
                uuid::Uuid::new_v4()
            )),
        );
    }
    if at(
        properties,
        "/apiServerAccessProfile/enablePrivateClusterPublicFQDN",
    ) == Some(&json!(false))
    {
        properties.remove("fqdn");
        properties.remove("azurePortalFQDN");
    }
}

/// The network profile with AKS's defaults: Azure CNI in overlay mode unless another plugin is
/// asked for, a standard load balancer for outbound traffic.
fn network_profile(properties: &Map<String, Value>) -> Result<Value, ArmError> {
    let mut network = fields::object(properties, "networkProfile", "properties")?
        .cloned()
        .unwrap_or_default();
    let plugin = fields::one_of(
        &network,
        "networkPlugin",
        "properties.networkProfile",
        &["azure", "kubenet", "none"],
    )?
    .map(str::to_owned);
    let overlay = match plugin.as_deref() {
        None => true,
        Some("azure") => network.get("networkPluginMode").and_then(Value::as_str) == Some("overlay"),
        Some(_) => false,
    };
    let outbound = fields::one_of(
        &network,
        "outboundType",
        "properties.networkProfile",
        &[
            "loadBalancer",
            "userDefinedRouting",
            "managedNATGateway",
            "userAssignedNATGateway",
            "none",
        ],
    )?
    .unwrap_or("loadBalancer")
    .to_owned();
    let mut defaults = json!({
        "networkPlugin": plugin.clone().unwrap_or_else(|| "azure".into()),
        "networkPolicy": "none",
        "networkDataplane": "azure",
        "loadBalancerSku": "standard",
        "serviceCidr": "10.0.0.0/16",
        "dnsServiceIP": "10.0.0.10",
        "outboundType": outbound,
        "ipFamilies": ["IPv4"],
        "podLinkLocalAccess": "IMDS",
    });
    if overlay {
        defaults["networkPluginMode"] = json!("overlay");
    }
    if overlay || plugin.as_deref() == Some("kubenet") {
        defaults["podCidr"] = json!("10.244.0.0/16");
    }
    if outbound == "loadBalancer" {
        defaults["loadBalancerProfile"] = json!({
            "managedOutboundIPs": { "count": 1 },
            "backendPoolType": "nodeIPConfiguration",
        });
    }
    fill(&mut network, defaults);
    for (single, list) in [("podCidr", "podCidrs"), ("serviceCidr", "serviceCidrs")] {
        if let Some(value) = network.get(single).cloned()
            && network.get(list).is_none()
        {
            network.insert(list.into(), json!([value]));
        }
    }
    Ok(Value::Object(network))
}

/// AKS's Entra server application: the audience of the tokens an Entra-integrated API server takes.
const AKS_SERVER_APP: &str = "6dae42f8-4368-4678-94ff-3960e28e3630";
/// AKS's Entra client application, which kubelogin signs users in as.
const AKS_CLIENT_APP: &str = "80faf920-1908-4b52-b5ef-a8e7bedfc67a";

/// `len` lower-case letters and digits.
fn random_label(len: usize) -> String {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut seed = uuid::Uuid::new_v4().as_u128();
    (0..len)
        .map(|_| {
            let index = usize::try_from(seed % 36).unwrap_or(0);
            seed /= 36;
            char::from(alphabet[index])
        })
        .collect()
}

/// A cluster's reads show its pools as `agentPoolProfiles`.
fn show_pools(state: &State, cluster: &mut Value) {
    let key = cluster["id"].as_str().unwrap_or_default().to_ascii_lowercase();
    let profiles: Vec<Value> = pools_of(state, &key)
        .into_iter()
        .map(|(_, pool)| {
            let mut profile = Map::new();
            profile.insert("name".into(), pool["name"].clone());
            if let Some(properties) = pool["properties"].as_object() {
                profile.extend(properties.clone());
            }
            Value::Object(profile)
        })
        .collect();
    if let Some(properties) = cluster["properties"].as_object_mut() {
        properties.insert("agentPoolProfiles".into(), Value::Array(profiles));
    }
}

/// A kubeconfig for the cluster's API server at its FQDN, as the credential listings answer it:
/// trusting the cluster's CA, and signed in with a new client certificate of that CA, for the
/// admin `masterclient` in `system:masters` as AKS's admin kubeconfig is. A cluster without a CA
/// (kept from an emulator that made none; its next write makes one) gets a token instead. With
/// Entra integration (`aadProfile.managed`), the user's kubeconfig signs in through kubelogin,
/// for AKS's Entra server application, as AKS answers it: no certificate of the cluster's.
fn credentials(act: &mut Act<'_>, user: &'static str) -> Result<Acted, ArmError> {
    let properties = &act.doc["properties"];
    if user == "clusterAdmin" && properties["disableLocalAccounts"] == json!(true) {
        return Err(ArmError::container_service(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "Getting static credential is not allowed because this cluster is set to disable local accounts.",
        ));
    }
    let cluster = act.id.name();
    let server = properties["fqdn"]
        .as_str()
        .or_else(|| properties["privateFQDN"].as_str())
        .unwrap_or_default();
    let group = act.id.resource_group.as_deref().unwrap_or_default();
    let account = format!("{user}_{group}_{cluster}");
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let authority = &properties[AUTHORITY];
    let kubelogin = (user == "clusterUser" && properties["aadProfile"]["managed"] == json!(true)).then(|| {
        let tenant = properties["aadProfile"]["tenantID"].as_str().unwrap_or_default();
        format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: kubelogin\n      args: [get-token, --environment, AzurePublicCloud, --server-id, {AKS_SERVER_APP}, --client-id, {AKS_CLIENT_APP}, --tenant-id, {tenant}, --login, devicecode]\n      env: null\n      interactiveMode: IfAvailable\n      provideClusterInfo: false\n"
        )
    });
    let (trust, sign_in) = match (authority["certificate"].as_str(), authority["key"].as_str()) {
        (Some(certificate), Some(_)) if let Some(kubelogin) = kubelogin => (
            format!("    certificate-authority-data: {}\n", encode(certificate)),
            kubelogin,
        ),
        (Some(certificate), Some(key)) => {
            let (common_name, organization) = match user {
                "clusterAdmin" => ("masterclient", Some("system:masters")),
                "clusterUser" => ("clusterUser", Some("system:masters")),
                _ => ("clusterMonitoringUser", None),
            };
            let (client, client_key) = crate::tls::client_certificate(key, common_name, organization)
                .map_err(|error| internal_error(&error))?;
            (
                format!("    certificate-authority-data: {}\n", encode(certificate)),
                format!(
                    "    client-certificate-data: {}\n    client-key-data: {}\n",
                    encode(&client),
                    encode(&client_key)
                ),
            )
        }
        _ => (
            String::new(),
            format!("    token: {}\n", uuid::Uuid::new_v4().simple()),
        ),
    };
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n{trust}    server: https://{server}:443\ncontexts:\n- name: {cluster}\n  context:\n    cluster: {cluster}\n    user: {account}\ncurrent-context: {cluster}\nusers:\n- name: {account}\n  user:\n{sign_in}"
    );
    Ok(Acted::Answered(json!({
        "kubeconfigs": [{
            "name": user,
            "value": encode(&kubeconfig),
        }],
    })))
}

/// `stop` and `start`: the cluster (and its pools) end in `power`.
fn power(act: &mut Act<'_>, power: &str) -> Acted {
    act.doc["properties"]["powerState"] = json!({ "code": power });
    act.doc["properties"]["provisioningState"] = json!(if power == "Stopped" {
        "Stopping"
    } else {
        "Starting"
    });
    let cluster = act.id.key();
    for (_, mut pool) in pools_of(act.state, &cluster) {
        pool["properties"]["powerState"] = json!({ "code": power });
        act.companions.push(pool);
    }
    Acted::Started
}
