//! What tests of machine controllers start from: an emulated Azure holding a cluster's group,
//! network and public API server load balancer as the network and loadbalancer controllers would
//! have built them, and the Cluster API objects of that cluster with its peers' conditions.

use arm_emulator::config::{
    DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, SeedResource,
};
use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{Condition, ConditionType};
use capz_kit::apply::{FieldManager, apply_status};
use capz_kit::conditions::{Observation, observe};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use std::future::Future;

use capz_kit::controller::ControllerId;
use capz_kit::runner::{BoxError, Context};

use crate::controller::InProcessController;
use crate::kit::TestResult;
use crate::plane::Plane;

/// The cluster's name.
pub const CLUSTER: &str = "c1";
/// Its region.
pub const LOCATION: &str = "westeurope";
/// The field manager the tests write peers' conditions with.
pub const PEERS: FieldManager = FieldManager::new("test-peers");
/// The cluster's resource group id.
#[must_use]
pub fn group() -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{CLUSTER}")
}

/// The id of `path` under the group's Microsoft.Network provider.
#[must_use]
pub fn network(path: &str) -> String {
    format!("{}/providers/Microsoft.Network/{path}", group())
}

/// The id of `path` under the group's Microsoft.Compute provider.
#[must_use]
pub fn compute(path: &str) -> String {
    format!("{}/providers/Microsoft.Compute/{path}", group())
}

/// The cluster's network as network and loadbalancer would have built it: the group, the
/// virtual network with both subnets, and the public API server load balancer with its pool and
/// the SSH NAT rule of `cp-0`.
#[must_use]
pub fn seeds() -> Vec<SeedResource> {
    let lb = network("loadBalancers/c1-public-lb");
    let frontend = format!("{lb}/frontendIPConfigurations/c1-public-lb-frontEnd");
    let seed = |id: String, body: Value| SeedResource { id, body };
    vec![
        seed(
            group(),
            json!({"location": LOCATION, "tags": {"sigs.k8s.io_cluster-api-provider-azure_cluster_c1": "owned"}}),
        ),
        seed(
            network("virtualNetworks/c1-vnet"),
            json!({"location": LOCATION, "properties": {
                "addressSpace": {"addressPrefixes": ["10.0.0.0/8"]},
                "subnets": [
                    {"name": "c1-controlplane-subnet", "properties": {"addressPrefix": "10.0.0.0/16"}},
                    {"name": "c1-node-subnet", "properties": {"addressPrefix": "10.1.0.0/16"}},
                ],
            }}),
        ),
        seed(
            network("publicIPAddresses/pip-c1-apiserver"),
            json!({"location": LOCATION, "sku": {"name": "Standard"},
                "properties": {"publicIPAllocationMethod": "Static"}}),
        ),
        seed(
            lb.clone(),
            json!({"location": LOCATION, "sku": {"name": "Standard"}, "properties": {
                "frontendIPConfigurations": [{"name": "c1-public-lb-frontEnd", "properties": {
                    "publicIPAddress": {"id": network("publicIPAddresses/pip-c1-apiserver")}}}],
                "backendAddressPools": [{"name": "c1-public-lb-backendPool"}],
                "inboundNatRules": [{"name": "cp-0", "properties": {
                    "frontendIPConfiguration": {"id": frontend},
                    "protocol": "Tcp", "frontendPort": 22, "backendPort": 22}}],
            }}),
        ),
    ]
}

/// The objects Cluster API and the user would have: identity, Cluster (infrastructure
/// provisioned), AzureCluster.
///
/// # Errors
/// When the API server refuses them.
pub async fn cluster_objects(client: &Client, namespace: &str) -> TestResult {
    crate::kit::apply_yaml(
        client,
        namespace,
        &format!(
            r"
apiVersion: v1
kind: Secret
metadata: {{name: sp}}
stringData: {{clientSecret: {DEFAULT_CLIENT_SECRET}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata: {{name: emulator}}
spec:
  type: ServicePrincipal
  tenantID: {DEFAULT_TENANT}
  clientID: {DEFAULT_CLIENT_ID}
  clientSecret: {{name: sp, namespace: {namespace}}}
  allowedNamespaces: {{}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {CLUSTER}}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureCluster, name: {CLUSTER}}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: {CLUSTER}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
spec:
  location: {LOCATION}
  subscriptionID: {DEFAULT_SUBSCRIPTION}
  identityRef: {{apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: AzureClusterIdentity, name: emulator, namespace: {namespace}}}
"
        ),
    )
    .await?;
    let clusters = Api::<capz_kit::api::capi::Cluster>::namespaced(client.clone(), namespace);
    clusters
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"initialization": {"infrastructureProvisioned": true}}})),
        )
        .await?;
    let azure_clusters = Api::<AzureCluster>::namespaced(client.clone(), namespace);
    let azure_cluster = azure_clusters.get(CLUSTER).await?;
    report(
        &azure_clusters,
        &azure_cluster,
        &[ConditionType::SUBNETS_READY, ConditionType::LOAD_BALANCERS_READY],
    )
    .await?;
    Ok(())
}

#[derive(Debug, Serialize)]
struct PeerStatus {
    conditions: Vec<Condition>,
}

/// Applies `holding` as conditions of the test's own field manager, as peers would.
///
/// # Errors
/// When the API server refuses the status.
pub async fn report<K>(api: &Api<K>, object: &K, holding: &[ConditionType]) -> TestResult
where
    K: capz_kit::kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let status = PeerStatus {
        conditions: observe(
            None,
            holding.iter().cloned().map(Observation::holds),
            Timestamp::now(),
        ),
    };
    apply_status(api, &PEERS, object, &status).await?;
    Ok(())
}

/// The controller `id`, run in-process on `namespace` by `build` as a machine controller's tests
/// run it: no probe or metrics port, a resync every 2 s.
///
/// # Errors
/// When it cannot be started.
pub fn machine_controller<F, Fut>(
    id: ControllerId,
    plane: &Plane,
    namespace: &str,
    build: F,
) -> crate::Result<InProcessController>
where
    F: FnOnce(Context) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
{
    let flags = [
        "--health-probe-bind-address=0",
        "--metrics-bind-address=0",
        "--sync-period=2s",
    ];
    InProcessController::start(id, plane, namespace, flags, build)
}

/// A MachinePool `name` of [`CLUSTER`] with `replicas` over `zones` (none: Azure's choice) at
/// `version`, whose bootstrap data is the Secret `<name>-bootstrap` and whose infrastructure is
/// the `infrastructure_kind` of the same name.
#[must_use]
pub fn machine_pool(
    name: &str,
    replicas: u32,
    zones: &[&str],
    version: &str,
    infrastructure_kind: &str,
) -> String {
    let zones = zones
        .iter()
        .map(|zone| format!("{zone:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r"
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachinePool
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
spec:
  clusterName: {CLUSTER}
  replicas: {replicas}
  failureDomains: [{zones}]
  template:
    spec:
      clusterName: {CLUSTER}
      version: {version}
      bootstrap: {{dataSecretName: {name}-bootstrap}}
      infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: {infrastructure_kind}, name: {name}}}
"
    )
}

/// Applies the bootstrap data Secret `<name>-bootstrap` (key `value`, a cloud-config), the Cluster
/// API object `owner` (YAML) of kind `kind` that names it, and then the infrastructure object
/// `infrastructure` makes (YAML) from the owner's uid, for its owner reference.
///
/// # Errors
/// When the API server refuses them.
pub async fn bootstrapped(
    client: &Client,
    namespace: &str,
    name: &str,
    (kind, owner): (&str, &str),
    infrastructure: impl FnOnce(&str) -> String,
) -> TestResult {
    let stored = crate::kit::apply_yaml(
        client,
        namespace,
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: {name}-bootstrap}}\n\
             stringData: {{value: '#cloud-config'}}\n---\n{owner}"
        ),
    )
    .await?;
    let uid = stored
        .iter()
        .find(|object| object.types.as_ref().is_some_and(|types| types.kind == kind))
        .and_then(|object| object.metadata.uid.clone())
        .ok_or_else(|| format!("the {kind} has no uid"))?;
    crate::kit::apply_yaml(client, namespace, &infrastructure(&uid)).await?;
    Ok(())
}
