//! What users get wrong and what they bring: a wrong client secret, a subnet missing from a brought
//! virtual network and an exhausted core quota each show as a condition reason saying what to fix,
//! without a retry storm; deleting a cluster built in a brought virtual network leaves that network
//! and a foreign security rule as they were; an externally managed AzureCluster is left to its
//! owner while its machines are still built in the infrastructure it names.
//!
//! The cases run side by side on one emulator, each in its own namespace and resource groups, and
//! each counts only the requests that address its own resources.

use std::time::{Duration, SystemTime};

use arm_emulator::config::{DEFAULT_SUBSCRIPTION, Quota, SeedResource};
use arm_emulator::{Config, LoggedRequest};
use capz_e2e::{
    Environment, INFRASTRUCTURE, SSH_PUBLIC_KEY_B64, TestResult, condition, condition_message, document,
    is_write, manifest, wait_list,
};
use kube::ResourceExt as _;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

const CONVERGE: Duration = Duration::from_mins(3);
/// How long a case watches the retries after its failure is reported.
const WINDOW: Duration = Duration::from_secs(30);
/// The location whose regional core quota is too small for the quota case's control plane.
const SMALL_QUOTA_LOCATION: &str = "northeurope";
const LOCATION: &str = "westeurope";

const MISSING_SUBNET_GROUP: &str = "nosubnet-net";
const BROUGHT_GROUP: &str = "byo-net";
const EXTERNAL_GROUP: &str = "extern-infra";

fn group_id(group: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{group}")
}

fn network_id(group: &str, path: &str) -> String {
    format!("{}/providers/Microsoft.Network/{path}", group_id(group))
}

fn seed(id: String, body: Value) -> SeedResource {
    SeedResource { id, body }
}

/// A virtual network `{group}-vnet` in `group` with the subnets `(name, range)`, each using the
/// security group `nsg` when one is given.
fn seeded_network(group: &str, range: &str, subnets: &[(&str, &str)], nsg: Option<&str>) -> SeedResource {
    let subnets: Vec<Value> = subnets
        .iter()
        .map(|(name, prefix)| {
            let mut properties = json!({"addressPrefix": prefix});
            if let Some(nsg) = nsg {
                properties["networkSecurityGroup"] = json!({"id": nsg});
            }
            json!({"name": name, "properties": properties})
        })
        .collect();
    seed(
        network_id(group, &format!("virtualNetworks/{group}-vnet")),
        json!({
            "location": LOCATION,
            "properties": {"addressSpace": {"addressPrefixes": [range]}, "subnets": subnets},
        }),
    )
}

/// The security group of the brought network, with a rule nobody in capz-rs wrote.
fn seeded_security_group() -> SeedResource {
    seed(
        network_id(BROUGHT_GROUP, "networkSecurityGroups/byo-nsg"),
        json!({
            "location": LOCATION,
            "properties": {"securityRules": [{
                "name": "allow-node-exporter",
                "properties": {
                    "priority": 300,
                    "direction": "Inbound",
                    "access": "Allow",
                    "protocol": "Tcp",
                    "sourceAddressPrefix": "10.50.0.0/16",
                    "sourcePortRange": "*",
                    "destinationAddressPrefix": "*",
                    "destinationPortRange": "9100",
                    "description": "monitoring, managed by the network team",
                },
            }]},
        }),
    )
}

fn config() -> Config {
    let location = json!({"location": LOCATION});
    Config {
        retry_after_seconds: 1,
        quotas: vec![Quota {
            location: SMALL_QUOTA_LOCATION.into(),
            family: "cores".into(),
            cores: 4,
        }],
        resources: vec![
            seed(group_id(MISSING_SUBNET_GROUP), location.clone()),
            seeded_network(
                MISSING_SUBNET_GROUP,
                "10.1.0.0/16",
                &[("control-plane-subnet", "10.1.0.0/24")],
                None,
            ),
            seed(group_id(BROUGHT_GROUP), location.clone()),
            seeded_security_group(),
            seeded_network(
                BROUGHT_GROUP,
                "10.2.0.0/16",
                &[
                    ("control-plane-subnet", "10.2.0.0/24"),
                    ("node-subnet", "10.2.1.0/24"),
                ],
                Some(&network_id(BROUGHT_GROUP, "networkSecurityGroups/byo-nsg")),
            ),
            seed(group_id(EXTERNAL_GROUP), location),
            seeded_network(
                EXTERNAL_GROUP,
                "10.3.0.0/16",
                &[
                    ("control-plane-subnet", "10.3.0.0/24"),
                    ("node-subnet", "10.3.1.0/24"),
                ],
                None,
            ),
        ],
        ..Config::default()
    }
}

#[tokio::test]
async fn bad_input_is_reported_and_brought_infrastructure_is_left_alone() -> TestResult {
    // The gate as a user turns it on: a variable at `clusterctl init`.
    let environment = Environment::start_with_args(|_| config(), &[("EXP_EDGEZONE", "true")], &[]).await?;
    tokio::try_join!(
        in_namespace(&environment, edge_zones_are_admitted_with_their_gate),
        in_namespace(&environment, wrong_client_secret),
        in_namespace(&environment, missing_subnet),
        in_namespace(&environment, exhausted_quota),
        in_namespace(&environment, deletion_spares_what_was_brought),
        in_namespace(&environment, externally_managed_cluster),
    )?;
    Ok(())
}

/// `EXP_EDGEZONE=true` at `clusterctl init` reaches the webhooks as well as the controllers.
async fn edge_zones_are_admitted_with_their_gate(environment: &Environment, namespace: String) -> TestResult {
    if let Err(refusal) = environment.admits_edge_zone_cluster(&namespace).await? {
        return Err(
            format!("with EXP_EDGEZONE=true an edge-zone AzureCluster was refused: {refusal}").into(),
        );
    }
    Ok(())
}

async fn in_namespace(
    environment: &Environment,
    case: impl AsyncFnOnce(&Environment, String) -> TestResult,
) -> TestResult {
    capz_harness::with_temp_namespace(&environment.client, async |namespace| {
        case(environment, namespace).await
    })
    .await?
}

/// Waits until the object `name` of `kind` has the condition `type_` False for `reason`, and gives
/// its message.
async fn wait_for_reason(
    environment: &Environment,
    kind: &str,
    namespace: &str,
    selector: &str,
    (type_, reason): (&str, &str),
) -> TestResult<String> {
    let api = environment.infrastructure(kind, namespace).await?;
    let found = wait_list(
        &api,
        selector,
        &format!("{kind} {type_}=False with reason {reason}"),
        CONVERGE,
        |all| {
            all.iter().any(|object| {
                condition(object, type_).is_some_and(|(status, found)| status == "False" && found == reason)
            })
        },
    )
    .await?;
    let message = found
        .iter()
        .find_map(|object| condition_message(object, type_))
        .unwrap_or_default();
    eprintln!("e2e: {kind} in {namespace}: {type_}=False {reason}: {message}");
    Ok(message)
}

/// Watches the requests for which `matches` holds from `started` until [`WINDOW`] after the
/// failure was `reported`, and asserts that they stop: at most `most` in all (the reconciles the
/// cluster's own changes cause while it settles), none in the window's second half (the policy
/// waits ten minutes after a terminal failure), and at least one (the case did fail).
async fn assert_no_retry_storm(
    environment: &Environment,
    what: &str,
    (started, reported): (SystemTime, SystemTime),
    most: usize,
    matches: impl Fn(&LoggedRequest) -> bool,
) -> TestResult<Vec<LoggedRequest>> {
    tokio::time::sleep(WINDOW).await;
    let requests = environment.requests_since(started);
    let times: Vec<SystemTime> = requests
        .iter()
        .filter(|request| matches(request))
        .map(|request| request.answered)
        .collect();
    let offsets: Vec<String> = times
        .iter()
        .map(|at| format!("{:+.1}", seconds_between(reported, *at)))
        .collect();
    eprintln!(
        "e2e: {what}: {} requests, at {} s from the report",
        times.len(),
        offsets.join(" ")
    );
    let quiet_from = reported + WINDOW / 2;
    let late = times.iter().filter(|at| **at >= quiet_from).count();
    assert!(!times.is_empty(), "{what}: no request at all");
    assert!(
        times.len() <= most,
        "{what}: {} requests, a retry storm",
        times.len()
    );
    assert_eq!(
        late,
        0,
        "{what}: still retried {} s after the report",
        WINDOW.as_secs() / 2
    );
    Ok(requests)
}

/// `to - from` in seconds, negative when `to` is earlier.
fn seconds_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(later) => later.as_secs_f64(),
        Err(earlier) => -earlier.duration().as_secs_f64(),
    }
}

/// Whether `request` addresses something under `prefix` (an ARM id), case-insensitively.
fn under(request: &LoggedRequest, prefix: &str) -> bool {
    request
        .path
        .to_ascii_lowercase()
        .starts_with(&prefix.to_ascii_lowercase())
}

/// A wrong client secret: the identity's sign-in is refused, the AzureCluster says the credential
/// was rejected, and the controllers do not sign in again and again.
async fn wrong_client_secret(environment: &Environment, namespace: String) -> TestResult {
    const CLUSTER: &str = "badsecret";
    environment
        .create_identity_secret_holding(&namespace, "not-the-client-secret")
        .await?;
    let started = SystemTime::now();
    let objects = manifest(&environment.generate(CLUSTER, &namespace, 0).await?)?;
    environment.apply(&namespace, &objects).await?;
    let message = wait_for_reason(
        environment,
        "AzureCluster",
        &namespace,
        "",
        ("NetworkInfrastructureReady", "CredentialRejected"),
    )
    .await?;
    assert!(
        message.contains("client secret") && message.contains("AADSTS7000215"),
        "the message does not say the client secret was refused: {message}"
    );
    let requests = assert_no_retry_storm(
        environment,
        "refused sign-ins",
        (started, SystemTime::now()),
        6,
        |request| request.path.ends_with("/token") && request.status >= 400,
    )
    .await?;
    let arm = requests
        .iter()
        .filter(|request| under(request, &group_id(CLUSTER)))
        .count();
    assert_eq!(arm, 0, "ARM was called for {CLUSTER} without a token");
    Ok(())
}

/// The AzureCluster of `cluster` taken from `objects`, its network replaced by the brought
/// virtual network of `group` with the subnets `(name, role, range)`.
fn bring_network(
    objects: &mut [DynamicObject],
    group: &str,
    range: &str,
    subnets: &[(&str, &str, &str)],
) -> TestResult<()> {
    let subnets: Vec<Value> = subnets
        .iter()
        .map(|(name, role, prefix)| json!({"name": name, "role": role, "cidrBlocks": [prefix]}))
        .collect();
    let azure_cluster = document(objects, "AzureCluster")?;
    azure_cluster.data["spec"]["networkSpec"] = json!({
        "vnet": {"name": format!("{group}-vnet"), "resourceGroup": group, "cidrBlocks": [range]},
        "subnets": subnets,
    });
    Ok(())
}

/// A brought virtual network without the node subnet the spec names: SubnetsReady says which
/// subnet is missing where, and the subnet is not looked for again and again.
async fn missing_subnet(environment: &Environment, namespace: String) -> TestResult {
    const CLUSTER: &str = "nosubnet";
    environment.create_identity_secret(&namespace).await?;
    let mut objects = manifest(&environment.generate(CLUSTER, &namespace, 0).await?)?;
    bring_network(
        &mut objects,
        MISSING_SUBNET_GROUP,
        "10.1.0.0/16",
        &[
            ("control-plane-subnet", "control-plane", "10.1.0.0/24"),
            ("node-subnet", "node", "10.1.1.0/24"),
        ],
    )?;
    let started = SystemTime::now();
    environment.apply(&namespace, &objects).await?;
    let message = wait_for_reason(
        environment,
        "AzureCluster",
        &namespace,
        "",
        ("SubnetsReady", "SubnetNotFound"),
    )
    .await?;
    assert!(
        message.contains("node-subnet") && message.contains("nosubnet-net-vnet"),
        "the message does not name the missing subnet and its network: {message}"
    );
    let missing = format!(
        "{}/subnets/node-subnet",
        network_id(MISSING_SUBNET_GROUP, "virtualNetworks/nosubnet-net-vnet")
    );
    let requests = assert_no_retry_storm(
        environment,
        "reads of the missing subnet",
        (started, SystemTime::now()),
        10,
        |request| under(request, &missing),
    )
    .await?;
    let writes: Vec<&LoggedRequest> = requests
        .iter()
        .filter(|request| is_write(request) && under(request, &group_id(MISSING_SUBNET_GROUP)))
        .collect();
    assert!(writes.is_empty(), "the brought network was written: {writes:?}");
    Ok(())
}

/// A control plane bigger than the location's regional core quota: the AzureMachine says the
/// quota is exceeded, and the machine is not asked for again and again.
async fn exhausted_quota(environment: &Environment, namespace: String) -> TestResult {
    const CLUSTER: &str = "quota";
    environment.create_identity_secret(&namespace).await?;
    let yaml = environment
        .generate_with(
            CLUSTER,
            &namespace,
            0,
            &[
                ("AZURE_LOCATION", SMALL_QUOTA_LOCATION),
                ("AZURE_CONTROL_PLANE_MACHINE_TYPE", "Standard_D8s_v3"),
            ],
        )
        .await?;
    let started = SystemTime::now();
    environment.apply(&namespace, &manifest(&yaml)?).await?;
    let message = wait_for_reason(
        environment,
        "AzureMachine",
        &namespace,
        "cluster.x-k8s.io/control-plane",
        ("VMRunning", "QuotaExceeded"),
    )
    .await?;
    assert!(
        message.contains("quota") && message.contains(SMALL_QUOTA_LOCATION),
        "the message does not name the quota and the location: {message}"
    );
    let machines = format!(
        "{}/providers/Microsoft.Compute/virtualMachines/",
        group_id(CLUSTER)
    );
    assert_no_retry_storm(
        environment,
        "machine creates over the quota",
        (started, SystemTime::now()),
        2,
        |request| request.method == "PUT" && under(request, &machines),
    )
    .await?;
    Ok(())
}

/// Deleting a cluster built in a brought virtual network (in a group of its own, with a security
/// group holding a foreign rule): every finalizer goes, nothing capz-rs created is left, and the
/// network, its subnets and the security group are as they were.
async fn deletion_spares_what_was_brought(environment: &Environment, namespace: String) -> TestResult {
    const CLUSTER: &str = "byo";
    environment.create_identity_secret(&namespace).await?;
    let mut objects = manifest(&environment.generate(CLUSTER, &namespace, 0).await?)?;
    bring_network(
        &mut objects,
        BROUGHT_GROUP,
        "10.2.0.0/16",
        &[
            ("control-plane-subnet", "control-plane", "10.2.0.0/24"),
            ("node-subnet", "node", "10.2.1.0/24"),
        ],
    )?;
    let network = network_id(BROUGHT_GROUP, "virtualNetworks/byo-net-vnet");
    let security_group = network_id(BROUGHT_GROUP, "networkSecurityGroups/byo-nsg");
    let brought = [
        environment.azure_resource(&network),
        environment.azure_resource(&security_group),
    ];
    let started = SystemTime::now();
    environment.apply(&namespace, &objects).await?;
    let machines = environment.infrastructure("AzureMachine", &namespace).await?;
    let ready = wait_list(
        &machines,
        "cluster.x-k8s.io/control-plane",
        "the control-plane AzureMachine Ready",
        CONVERGE,
        |all| {
            all.iter()
                .any(|machine| condition(machine, "Ready").is_some_and(|(status, _)| status == "True"))
        },
    )
    .await?;
    assert_eq!(
        subnet_of(environment, &ready[0])?,
        format!("{network}/subnets/control-plane-subnet").to_ascii_lowercase()
    );

    let deleting = std::time::Instant::now();
    delete_cluster(environment, &namespace, CLUSTER).await?;
    eprintln!(
        "e2e: the cluster in the brought network was deleted in {:.1} s",
        deleting.elapsed().as_secs_f64()
    );
    let identities = environment
        .infrastructure("AzureClusterIdentity", &namespace)
        .await?;
    wait_list(
        &identities,
        "",
        "the AzureClusterIdentity without finalizers",
        CONVERGE,
        |all| all.iter().all(|identity| identity.finalizers().is_empty()),
    )
    .await?;
    let left: Vec<String> = environment
        .created_in_azure()
        .into_iter()
        .filter(|id| {
            [group_id(CLUSTER), group_id(BROUGHT_GROUP)]
                .iter()
                .any(|group| id.starts_with(&group.to_ascii_lowercase()))
        })
        .collect();
    assert!(left.is_empty(), "left in Azure: {left:?}");
    let now = [
        environment.azure_resource(&network),
        environment.azure_resource(&security_group),
    ];
    assert_eq!(now, brought, "the brought network or security group changed");
    let writes: Vec<LoggedRequest> = environment
        .requests_since(started)
        .into_iter()
        .filter(|request| is_write(request) && under(request, &group_id(BROUGHT_GROUP)))
        .collect();
    assert!(writes.is_empty(), "the brought group was written: {writes:?}");
    Ok(())
}

/// The subnet (lower-cased id) of the first network interface of the VM `machine` names.
fn subnet_of(environment: &Environment, machine: &DynamicObject) -> TestResult<String> {
    let machine_id = machine.data["spec"]["providerID"]
        .as_str()
        .and_then(|id| id.strip_prefix("azure://"))
        .ok_or("the AzureMachine has no providerID")?;
    let vm = environment
        .azure_resource(machine_id)
        .ok_or_else(|| format!("no VM {machine_id}"))?;
    let interface = vm["properties"]["networkProfile"]["networkInterfaces"][0]["id"]
        .as_str()
        .and_then(|id| environment.azure_resource(id))
        .ok_or_else(|| format!("the VM {machine_id} has no network interface"))?;
    Ok(
        interface["properties"]["ipConfigurations"][0]["properties"]["subnet"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase(),
    )
}

/// Deletes the Cluster `name` and waits until its AzureMachines and AzureCluster are gone, which
/// needs every controller's finalizer released.
async fn delete_cluster(environment: &Environment, namespace: &str, name: &str) -> TestResult {
    environment
        .cluster_api("Cluster", namespace)
        .await?
        .delete(name, &DeleteParams::default())
        .await?;
    for kind in ["AzureMachine", "AzureCluster"] {
        let api = environment.infrastructure(kind, namespace).await?;
        wait_list(&api, "", &format!("every {kind} gone"), CONVERGE, <[_]>::is_empty).await?;
    }
    Ok(())
}

/// An externally managed AzureCluster naming seeded infrastructure: the test plays its owner; a
/// worker machine is built in the seeded subnet and deleted with the cluster, and nothing seeded
/// is written.
async fn externally_managed_cluster(environment: &Environment, namespace: String) -> TestResult {
    const CLUSTER: &str = "extern";
    environment.create_identity_secret(&namespace).await?;
    let objects = external_manifest(environment, &namespace, CLUSTER).await?;
    let network = network_id(EXTERNAL_GROUP, "virtualNetworks/extern-infra-vnet");
    let seeded = [
        environment.azure_resource(&group_id(EXTERNAL_GROUP)),
        environment.azure_resource(&network),
    ];
    let started = SystemTime::now();
    environment.apply(&namespace, &objects).await?;
    let clusters = environment.infrastructure("AzureCluster", &namespace).await?;
    clusters
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "ready": true,
                "failureDomains": {"1": {"controlPlane": true}},
            }})),
        )
        .await?;
    let machines = environment.infrastructure("AzureMachine", &namespace).await?;
    let ready = wait_list(&machines, "", "the worker AzureMachine Ready", CONVERGE, |all| {
        all.iter()
            .any(|machine| condition(machine, "Ready").is_some_and(|(status, _)| status == "True"))
    })
    .await?;
    assert_eq!(
        subnet_of(environment, &ready[0])?,
        format!("{network}/subnets/node-subnet").to_ascii_lowercase()
    );
    let azure_cluster = clusters.get(CLUSTER).await?;
    assert!(
        azure_cluster.finalizers().is_empty(),
        "finalizers on an externally managed AzureCluster: {:?}",
        azure_cluster.finalizers()
    );
    assert_eq!(
        azure_cluster.data["status"]["conditions"],
        Value::Null,
        "conditions written on an externally managed AzureCluster"
    );
    assert_only_machine_writes(environment, started);
    eprintln!("e2e: the externally managed cluster's machine is Ready in the seeded subnet");

    delete_cluster(environment, &namespace, CLUSTER).await?;
    let left: Vec<String> = environment
        .created_in_azure()
        .into_iter()
        .filter(|id| id.starts_with(&group_id(EXTERNAL_GROUP).to_ascii_lowercase()))
        .collect();
    assert!(left.is_empty(), "left in Azure: {left:?}");
    let now = [
        environment.azure_resource(&group_id(EXTERNAL_GROUP)),
        environment.azure_resource(&network),
    ];
    assert_eq!(now, seeded, "the seeded group or network changed");
    assert_only_machine_writes(environment, started);
    Ok(())
}

/// No write since `started` to the seeded group, its network or anything a cluster-level
/// controller would make there: only the machine's own resources were written.
fn assert_only_machine_writes(environment: &Environment, started: SystemTime) {
    let group = group_id(EXTERNAL_GROUP).to_ascii_lowercase();
    let machine_types = [
        "microsoft.compute/virtualmachines",
        "microsoft.compute/disks",
        "microsoft.network/networkinterfaces",
    ];
    let foreign: Vec<LoggedRequest> = environment
        .requests_since(started)
        .into_iter()
        .filter(|request| is_write(request) && under(request, &group))
        .filter(|request| {
            let path = request.path.to_ascii_lowercase();
            !machine_types
                .iter()
                .any(|type_| path.starts_with(&format!("{group}/providers/{type_}/")))
        })
        .collect();
    assert!(foreign.is_empty(), "writes beside the machine's: {foreign:?}");
}

/// The objects of the externally managed case: the generated Cluster (without a control plane),
/// its identity and an AzureCluster annotated as managed by someone else naming the seeded
/// infrastructure, plus a worker Machine whose bootstrap data is already there.
async fn external_manifest(
    environment: &Environment,
    namespace: &str,
    cluster: &str,
) -> TestResult<Vec<DynamicObject>> {
    let mut objects = manifest(&environment.generate(cluster, namespace, 0).await?)?;
    bring_network(
        &mut objects,
        EXTERNAL_GROUP,
        "10.3.0.0/16",
        &[
            ("control-plane-subnet", "control-plane", "10.3.0.0/24"),
            ("node-subnet", "node", "10.3.1.0/24"),
        ],
    )?;
    let azure_cluster = document(&mut objects, "AzureCluster")?;
    azure_cluster
        .annotations_mut()
        .insert("cluster.x-k8s.io/managed-by".into(), "e2e".into());
    azure_cluster.data["spec"]["resourceGroup"] = json!(EXTERNAL_GROUP);
    azure_cluster.data["spec"]["controlPlaneEndpoint"] =
        json!({"host": "api.extern.example.com", "port": 6443});
    document(&mut objects, "Cluster")?.data["spec"]
        .as_object_mut()
        .ok_or("the Cluster has no spec")?
        .remove("controlPlaneRef");
    objects.retain(|object| {
        object.types.as_ref().is_some_and(|types| {
            ["Cluster", "AzureCluster", "AzureClusterIdentity"].contains(&types.kind.as_str())
        })
    });
    objects.extend(worker(cluster)?);
    Ok(objects)
}

/// A Machine with its bootstrap data Secret and its AzureMachine.
fn worker(cluster: &str) -> TestResult<Vec<DynamicObject>> {
    let labels = json!({"cluster.x-k8s.io/cluster-name": cluster});
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("{cluster}-worker-bootstrap"), "labels": labels},
        "stringData": {"value": "#cloud-config\n", "format": "cloud-config"},
    });
    let azure_machine = json!({
        "apiVersion": format!("{INFRASTRUCTURE}/v1beta1"),
        "kind": "AzureMachine",
        "metadata": {"name": format!("{cluster}-worker"), "labels": labels},
        "spec": {
            "vmSize": "Standard_D2s_v3",
            "osDisk": {"osType": "Linux", "diskSizeGB": 128},
            "sshPublicKey": SSH_PUBLIC_KEY_B64,
        },
    });
    let machine = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": format!("{cluster}-worker"), "labels": labels},
        "spec": {
            "clusterName": cluster,
            "version": capz_e2e::KUBERNETES_VERSION,
            "bootstrap": {"dataSecretName": format!("{cluster}-worker-bootstrap")},
            "infrastructureRef": {
                "apiVersion": format!("{INFRASTRUCTURE}/v1beta1"),
                "kind": "AzureMachine",
                "name": format!("{cluster}-worker"),
            },
        },
    });
    Ok(vec![
        serde_json::from_value(secret)?,
        serde_json::from_value(azure_machine)?,
        serde_json::from_value(machine)?,
    ])
}
