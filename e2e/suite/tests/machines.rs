//! Machines without kubeadm: a Cluster without a control-plane provider whose machines take their
//! bootstrap data from a Secret the user wrote (`bootstrap.dataSecretName`), so every AzureMachine
//! gets its VM and becomes Ready. The VMs follow the MachineDeployment as it scales up and down,
//! and a VM deleted out of band is replaced through a MachineHealthCheck, never recreated by the
//! AzureMachine that lost it.
//!
//! Cluster API remediates only what it may judge, so the test gives it what a booted cluster
//! would, and no more (read from Cluster API v1.14's MachineHealthCheck and Cluster
//! controllers):
//! - The MachineHealthCheck judges workers only once the Cluster's `ControlPlaneInitialized` is
//!   True. Without a control-plane provider, the Cluster controller sets it when a control-plane
//!   Machine has a `status.nodeRef`; so the cluster has one stand-alone control-plane Machine
//!   (with its AzureMachine, a real VM in the emulator).
//! - A Machine gets its `nodeRef` when the workload cluster has a Node whose `spec.providerID` is
//!   the Machine's, and `ControlPlaneInitialized` also makes the MachineHealthCheck connect to
//!   the workload cluster. No machine boots, so the management API server doubles as the workload
//!   cluster: the `<cluster>-kubeconfig` Secret points at it, and the test creates the one Node the
//!   control-plane machine's kubelet would have registered, with the provider ID the Azure cloud
//!   provider writes. It exists before the Machine learns its provider ID: Cluster API watches a
//!   workload cluster's Nodes only once its control plane is initialized, so a Node that
//!   appeared after the Machine's last reconcile would be seen only at the next resync.
//! - Workers get no Node, so the check's node startup timeout is off (`nodeStartupTimeoutSeconds:
//!   0`); it judges them by their `InfrastructureReady` condition alone, False for one minute.
//! - capz-rs reads a Ready machine's VM again at each sync period (CAPZ's is ten minutes); the
//!   compute Deployment runs with `--sync-period=10s` so that the lost VM is noticed within the
//!   test's time.

use std::time::{Duration, Instant};

use arm_emulator::Config;
use arm_emulator::config::DEFAULT_SUBSCRIPTION;
use capz_e2e::{
    Environment, KUBERNETES_VERSION, SSH_PUBLIC_KEY_B64, TestResult, bootstrap_secret, cluster_manifest,
    condition, machine_deployment, service_principal_identity, wait_list,
};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const CLUSTER: &str = "machines";
const CONVERGE: Duration = Duration::from_mins(2);
/// How long `InfrastructureReady` must stay False before the health check remediates.
const UNHEALTHY_FOR: Duration = Duration::from_mins(1);
/// The compute api-version a user's client would delete the VM with.
const VM_API_VERSION: &str = "2024-07-01";
const WORKERS: &str = "!cluster.x-k8s.io/control-plane";
const VIRTUAL_MACHINES: &str = "microsoft.compute/virtualmachines";

fn control_plane_machine() -> String {
    format!("{CLUSTER}-control-plane-0")
}

fn deployment() -> String {
    format!("{CLUSTER}-md-0")
}

#[tokio::test]
async fn machines_follow_their_deployment_and_a_lost_vm_is_replaced() -> TestResult {
    let environment = Environment::start_with_args(
        |_| Config {
            retry_after_seconds: 1,
            ..Config::default()
        },
        &[],
        // CAPZ's own flags, as a patch written for CAPZ's manager adds them: --v changes nothing
        // here, the other two are acted on.
        &[
            ("capz-compute", "--sync-period=10s"),
            ("capz-compute", "--v=4"),
            ("capz-compute", "--health-addr=:9440"),
            ("capz-compute", "--azuremachine-concurrency=5"),
            ("capz-compute", "--diagnostics-address=:8443"),
            ("capz-network", "--diagnostics-address=:8443"),
            ("capz-network", "--insecure-diagnostics"),
            ("capz-webhooks", "--diagnostics-address=:8443"),
        ],
    )
    .await?;
    let log = environment.log_of("capz-compute")?;
    assert!(
        log.lines()
            .any(|line| line.contains("have no effect in capz-compute") && line.contains("--v")),
        "capz-compute warns once that --v has no effect:\n{log}"
    );
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        diagnostics_answer_only_who_may_read_them(&environment, &namespace).await?;
        environment.create_identity_secret(&namespace).await?;
        environment
            .create_workload_kubeconfig(CLUSTER, &namespace)
            .await?;
        let applied_at = Instant::now();
        capz_harness::apply_yaml(&client, &namespace, &manifest(&namespace)).await?;
        register_control_plane_node(&environment).await?;
        every_machine_ready(&environment, &namespace, 2, "the control plane and two workers").await?;
        eprintln!(
            "e2e: every AzureMachine Ready {:.1} s after the apply",
            applied_at.elapsed().as_secs_f64()
        );
        initialize_control_plane(&environment, &namespace).await?;
        scale(&environment, &namespace, 2, 3).await?;
        scale(&environment, &namespace, 3, 1).await?;
        lost_vm_is_replaced(&environment, &namespace).await?;
        let took = environment
            .delete_cluster_without_leftovers(CLUSTER, &namespace, CONVERGE)
            .await?;
        eprintln!("e2e: the Cluster was deleted in {:.1} s", took.as_secs_f64());
        Ok(())
    })
    .await?
}

/// CAPZ's diagnostics endpoint, as a Prometheus in the cluster scrapes it: capz-compute's over
/// HTTPS answers 401 without a token, 403 to a ServiceAccount that may not get `/metrics`, and
/// the metrics (its `--azuremachine-concurrency` among them) to one a ClusterRole allows, and so
/// do the webhooks'; capz-network's, with `--insecure-diagnostics`, over plain HTTP to anyone.
async fn diagnostics_answer_only_who_may_read_them(environment: &Environment, namespace: &str) -> TestResult {
    let client = &environment.client;
    let accounts = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
    let mut tokens = Vec::new();
    for name in ["nobody", "scraper"] {
        let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        accounts.create(&PostParams::default(), &account).await?;
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                expiration_seconds: Some(600),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let granted = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await?;
        tokens.push(granted.status.and_then(|status| status.token).unwrap_or_default());
    }
    let reader = format!("{namespace}-metrics-reader");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": reader},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }))?;
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": reader},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": reader},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}],
    }))?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await?;

    let secure = environment
        .capz
        .diagnostics_address("capz-compute")
        .ok_or("capz-compute serves no diagnostics")?;
    let url = format!("https://{secure}/metrics");
    assert_eq!(scrape(&url, None)?.0, 401, "no token");
    let (status, body) = scrape(&url, Some(&tokens[0]))?;
    assert_eq!(status, 403, "a ServiceAccount without the role: {body}");
    // The authorizer learns of the binding from a watch: a moment may pass.
    let started = Instant::now();
    let (status, body) = loop {
        let answer = scrape(&url, Some(&tokens[1]))?;
        if answer.0 != 403 || started.elapsed() > Duration::from_secs(10) {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 200, "the scraper: {body}");
    assert!(
        body.contains("controller_runtime_max_concurrent_reconciles{controller=\"azuremachine\"} 5"),
        "{body}"
    );
    let webhooks = environment
        .capz
        .diagnostics_address("capz-webhooks")
        .ok_or("capz-webhooks serves no diagnostics")?;
    let url = format!("https://{webhooks}/metrics");
    assert_eq!(scrape(&url, None)?.0, 401, "the webhooks' diagnostics, no token");
    let (status, body) = scrape(&url, Some(&tokens[1]))?;
    assert_eq!(status, 200, "the webhooks' diagnostics, the scraper: {body}");
    let insecure = environment
        .capz
        .diagnostics_address("capz-network")
        .ok_or("capz-network serves no diagnostics")?;
    let (status, body) = scrape(&format!("http://{insecure}/metrics"), None)?;
    assert_eq!(status, 200, "--insecure-diagnostics: {body}");
    assert!(
        body.contains("controller_runtime_max_concurrent_reconciles"),
        "{body}"
    );
    Ok(())
}

/// `curl` of `url` (skipping the check of a self-signed certificate, as scrapers of it do), with
/// `token` as the bearer token: the status and the body.
fn scrape(url: &str, token: Option<&str>) -> TestResult<(u16, String)> {
    let header = token.map(|token| format!("Authorization: Bearer {token}"));
    let mut args = vec!["--silent", "--insecure", "--write-out", "\n%{http_code}"];
    if let Some(header) = &header {
        args.extend(["--header", header]);
    }
    args.push(url);
    let output = capz_e2e::run("curl", &args)?;
    let (body, status) = output.rsplit_once('\n').ok_or("curl wrote no status")?;
    Ok((status.trim().parse()?, body.to_owned()))
}

/// The Cluster with its network, one stand-alone control-plane machine, a MachineDeployment of
/// two workers, all bootstrapped from one Secret, and the health check of the workers.
fn manifest(namespace: &str) -> String {
    [cluster(namespace), control_plane(), workers()].join("---\n")
}

/// The Cluster, without a control-plane provider, its network and identity, and the bootstrap
/// data every machine boots with.
fn cluster(namespace: &str) -> String {
    let identity = format!("{CLUSTER}-identity");
    [
        cluster_manifest(CLUSTER, &identity),
        service_principal_identity(&identity, namespace),
        bootstrap_secret(&format!("{CLUSTER}-bootstrap")),
    ]
    .join("---\n")
}

/// One stand-alone control-plane Machine and its AzureMachine.
fn control_plane() -> String {
    let control_plane = control_plane_machine();
    format!(
        r#"apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureMachine
metadata:
  name: {control_plane}
  labels:
    cluster.x-k8s.io/control-plane: ""
    cluster.x-k8s.io/cluster-name: {CLUSTER}
spec:
  osDisk:
    diskSizeGB: 128
    osType: Linux
  sshPublicKey: {SSH_PUBLIC_KEY_B64}
  vmSize: Standard_D2s_v3
---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata:
  name: {control_plane}
  labels:
    cluster.x-k8s.io/control-plane: ""
spec:
  clusterName: {CLUSTER}
  version: {KUBERNETES_VERSION}
  bootstrap:
    dataSecretName: {CLUSTER}-bootstrap
  infrastructureRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: AzureMachine
    name: {control_plane}
"#
    )
}

/// The MachineDeployment of two workers, and their health check.
fn workers() -> String {
    let deployment = deployment();
    let health_check = format!(
        r#"apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineHealthCheck
metadata:
  name: {deployment}
spec:
  clusterName: {CLUSTER}
  selector:
    matchLabels:
      cluster.x-k8s.io/deployment-name: {deployment}
  checks:
    nodeStartupTimeoutSeconds: 0
    unhealthyMachineConditions:
    - type: InfrastructureReady
      status: "False"
      timeoutSeconds: {timeout}
"#,
        timeout = UNHEALTHY_FOR.as_secs()
    );
    [
        machine_deployment(&deployment, CLUSTER, 2, &format!("{CLUSTER}-bootstrap")),
        health_check,
    ]
    .join("---\n")
}

/// Waits until the control-plane AzureMachine and exactly `workers` worker AzureMachines are
/// Ready with a provider ID, and checks that the VMs in Azure are exactly theirs. Returns the
/// workers.
async fn every_machine_ready(
    environment: &Environment,
    namespace: &str,
    workers: usize,
    what: &str,
) -> TestResult<Vec<DynamicObject>> {
    let machines = environment.infrastructure("AzureMachine", namespace).await?;
    let all = wait_list(&machines, "", &format!("{what} Ready"), CONVERGE, |all| {
        all.len() == workers + 1 && all.iter().all(ready_with_vm)
    })
    .await?;
    let mut expected: Vec<String> = all.iter().filter_map(vm_id).collect();
    expected.sort();
    let mut in_azure = environment.created_of_type(VIRTUAL_MACHINES);
    in_azure.sort();
    assert_eq!(
        in_azure, expected,
        "the VMs in Azure are not the machines' ({what})"
    );
    Ok(all
        .into_iter()
        .filter(|machine| !machine.labels().contains_key("cluster.x-k8s.io/control-plane"))
        .collect())
}

fn ready_with_vm(machine: &DynamicObject) -> bool {
    condition(machine, "Ready").is_some_and(|(status, _)| status == "True")
        && machine.data["status"]["ready"] == true
        && vm_id(machine).is_some()
}

/// The id of the machine's VM, from its provider ID, lower-cased as the emulator's inventory is.
fn vm_id(machine: &DynamicObject) -> Option<String> {
    machine.data["spec"]["providerID"]
        .as_str()
        .and_then(|id| id.strip_prefix("azure://"))
        .map(str::to_ascii_lowercase)
}

/// The provider ID the Azure cloud provider writes on the Node of the VM `name`.
fn cloud_provider_id(name: &str) -> String {
    format!(
        "azure:///subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{CLUSTER}/providers/Microsoft.Compute/virtualMachines/{name}"
    )
}

/// Registers the control-plane machine's Node, as its kubelet and the cloud provider would.
async fn register_control_plane_node(environment: &Environment) -> TestResult {
    let name = control_plane_machine();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"providerID": cloud_provider_id(&name)},
    }))?;
    Api::<Node>::all(environment.client.clone())
        .create(&PostParams::default(), &node)
        .await?;
    Ok(())
}

/// Cluster API links the control-plane Machine to its Node (`nodeRef`) and calls the control
/// plane initialized.
async fn initialize_control_plane(environment: &Environment, namespace: &str) -> TestResult {
    let name = control_plane_machine();
    let azure_machine = environment
        .infrastructure("AzureMachine", namespace)
        .await?
        .get(&name)
        .await?;
    assert_eq!(
        azure_machine.data["spec"]["providerID"],
        cloud_provider_id(&name).as_str(),
        "the AzureMachine's provider ID is not the Node's"
    );
    let machines = environment.cluster_api("Machine", namespace).await?;
    wait_list(
        &machines,
        "cluster.x-k8s.io/control-plane",
        "the control-plane Machine linked to its Node",
        CONVERGE,
        |all| {
            all.iter()
                .any(|machine| machine.data["status"]["nodeRef"]["name"] == name.as_str())
        },
    )
    .await?;
    let clusters = environment.cluster_api("Cluster", namespace).await?;
    wait_list(&clusters, "", "ControlPlaneInitialized", CONVERGE, |all| {
        all.iter().any(|cluster| {
            condition(cluster, "ControlPlaneInitialized").is_some_and(|(status, _)| status == "True")
        })
    })
    .await?;
    Ok(())
}

/// Scales the MachineDeployment to `replicas` and checks the VMs follow: the new machines Ready
/// with their VMs, the removed machines' VMs, network interfaces and disks gone from Azure.
async fn scale(environment: &Environment, namespace: &str, from: usize, replicas: usize) -> TestResult {
    let before = every_machine_ready(environment, namespace, from, &format!("{from} workers")).await?;
    for machine in &before {
        assert_has_its_resources(environment, &machine.name_any());
    }
    let started = Instant::now();
    environment
        .cluster_api("MachineDeployment", namespace)
        .await?
        .patch(
            &deployment(),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await?;
    let after = every_machine_ready(
        environment,
        namespace,
        replicas,
        &format!("{replicas} workers after scaling"),
    )
    .await?;
    eprintln!(
        "e2e: scaled from {from} to {replicas} workers in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let kept: Vec<String> = after.iter().map(kube::ResourceExt::name_any).collect();
    for removed in before
        .iter()
        .filter(|machine| !kept.contains(&machine.name_any()))
    {
        assert_nothing_left_of(environment, &removed.name_any());
    }
    Ok(())
}

/// The ids of the machine's resources in Azure: its VM, network interface and disks are named
/// after it (`<machine>`, `<machine>-nic`, `<machine>_OSDisk`).
fn resources_of(environment: &Environment, machine: &str) -> Vec<String> {
    let prefix = machine.to_ascii_lowercase();
    environment
        .created_in_azure()
        .into_iter()
        .filter(|id| {
            id.rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with(&prefix))
        })
        .collect()
}

/// The machine has a VM, a network interface and a disk, so that their absence later means
/// something.
fn assert_has_its_resources(environment: &Environment, machine: &str) {
    let resources = resources_of(environment, machine);
    for type_ in [
        "/microsoft.compute/virtualmachines/",
        "/microsoft.network/networkinterfaces/",
        "/microsoft.compute/disks/",
    ] {
        assert!(
            resources.iter().any(|id| id.contains(type_)),
            "{machine} has no {type_} in Azure: {resources:?}"
        );
    }
}

fn assert_nothing_left_of(environment: &Environment, machine: &str) {
    let left = resources_of(environment, machine);
    assert!(left.is_empty(), "left in Azure of {machine}: {left:?}");
}

/// Deletes the last worker's VM behind Cluster API's back: the AzureMachine reports it lost, the
/// health check remediates the Machine after a minute, and a new Machine with a new AzureMachine
/// and VM replaces it. The lost VM is never created again.
async fn lost_vm_is_replaced(environment: &Environment, namespace: &str) -> TestResult {
    let workers = every_machine_ready(environment, namespace, 1, "the last worker").await?;
    let lost = workers[0].name_any();
    let vm = vm_id(&workers[0]).ok_or("the worker has no VM")?;
    assert_has_its_resources(environment, &lost);
    let status = environment
        .arm("DELETE", &format!("{vm}?api-version={VM_API_VERSION}"))
        .await?;
    assert!(
        matches!(status, 200 | 202 | 204),
        "deleting {vm} answered {status}"
    );
    let deleted_at = Instant::now();
    reports_vm_not_found(environment, namespace, &lost).await?;
    eprintln!(
        "e2e: {lost} reported VMNotFound {:.1} s after the VM was deleted",
        deleted_at.elapsed().as_secs_f64()
    );
    let machine = remediated(environment, namespace, &lost).await?;
    eprintln!(
        "e2e: the health check marked Machine {machine} unhealthy {:.1} s after the VM was deleted",
        deleted_at.elapsed().as_secs_f64()
    );
    let replacement = every_machine_ready(environment, namespace, 1, "the replacement worker").await?;
    eprintln!(
        "e2e: {} replaced {lost} {:.1} s after the VM was deleted",
        replacement[0].name_any(),
        deleted_at.elapsed().as_secs_f64()
    );
    assert_ne!(
        replacement[0].name_any(),
        lost,
        "the lost machine was not replaced"
    );
    assert_ne!(vm_id(&replacement[0]).as_deref(), Some(vm.as_str()));
    assert_nothing_left_of(environment, &lost);
    assert_never_recreated(environment, &vm)
}

/// The AzureMachine says its VM is gone, as an error that needs a person, and is not Ready.
async fn reports_vm_not_found(environment: &Environment, namespace: &str, name: &str) -> TestResult {
    let machines = environment.infrastructure("AzureMachine", namespace).await?;
    let found = wait_list(
        &machines,
        WORKERS,
        &format!("{name} reporting VMNotFound"),
        CONVERGE,
        |all| {
            all.iter().any(|machine| {
                machine.name_any() == name
                    && condition(machine, "Ready")
                        .is_some_and(|(status, reason)| status == "False" && reason == "VMNotFound")
            })
        },
    )
    .await?;
    let machine = found
        .iter()
        .find(|machine| machine.name_any() == name)
        .ok_or("the machine vanished")?;
    let ready = condition_object(machine, "Ready").ok_or("no Ready condition")?;
    assert_eq!(ready["severity"], "Error", "Ready: {ready}");
    let status = &machine.data["status"];
    assert_eq!(status["ready"], false);
    assert!(
        status["failureReason"]
            .as_str()
            .is_some_and(|reason| !reason.is_empty())
            && status["failureMessage"]
                .as_str()
                .is_some_and(|message| !message.is_empty()),
        "no failure reason and message: {status}"
    );
    Ok(())
}

/// Waits until the health check finds the Machine of AzureMachine `azure_machine` unhealthy and
/// checks it waited the whole window after `InfrastructureReady` turned False; returns the
/// Machine's name.
async fn remediated(environment: &Environment, namespace: &str, azure_machine: &str) -> TestResult<String> {
    let machines = environment.cluster_api("Machine", namespace).await?;
    let selector = format!("cluster.x-k8s.io/deployment-name={}", deployment());
    let what = format!("the Machine of {azure_machine} found unhealthy");
    // A generous bound: the sync period, the health check's window, then its next look.
    let found = wait_list(&machines, &selector, &what, CONVERGE, |all| {
        all.iter().any(|machine| {
            machine.data["spec"]["infrastructureRef"]["name"] == azure_machine
                && condition(machine, "HealthCheckSucceeded").is_some_and(|(status, _)| status == "False")
        })
    })
    .await?;
    let machine = found
        .iter()
        .find(|machine| machine.data["spec"]["infrastructureRef"]["name"] == azure_machine)
        .ok_or("the Machine vanished")?;
    let infrastructure = condition_object(machine, "InfrastructureReady").ok_or("no InfrastructureReady")?;
    let health = condition_object(machine, "HealthCheckSucceeded").ok_or("no HealthCheckSucceeded")?;
    assert_eq!(
        infrastructure["status"], "False",
        "InfrastructureReady: {infrastructure}"
    );
    assert_eq!(
        infrastructure["reason"], "VMNotFound",
        "InfrastructureReady: {infrastructure}"
    );
    assert_eq!(
        health["reason"], "UnhealthyMachine",
        "HealthCheckSucceeded: {health}"
    );
    let unhealthy_for = since(infrastructure, health)?;
    assert!(
        unhealthy_for >= UNHEALTHY_FOR,
        "remediated after {unhealthy_for:?}, before the window of {UNHEALTHY_FOR:?}"
    );
    Ok(machine.name_any())
}

/// The time from one condition's last transition to another's.
fn since(earlier: &Value, later: &Value) -> TestResult<Duration> {
    let at = |condition: &Value| -> TestResult<Timestamp> {
        Ok(condition["lastTransitionTime"]
            .as_str()
            .ok_or("no lastTransitionTime")?
            .parse()?)
    };
    let span = at(later)?.duration_since(at(earlier)?);
    Ok(Duration::try_from(span)?)
}

fn condition_object<'a>(object: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    object.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|condition| condition["type"] == type_)
}

/// After the out-of-band DELETE (still in the request log, so the log holds everything since),
/// nobody wrote the lost VM again.
fn assert_never_recreated(environment: &Environment, vm: &str) -> TestResult {
    let requests = environment.azure.emulator.requests();
    let same_vm = |path: &str| path.eq_ignore_ascii_case(vm);
    let deleted = requests
        .iter()
        .position(|request| request.method == "DELETE" && same_vm(&request.path))
        .ok_or_else(|| format!("the DELETE of {vm} is no longer in the request log"))?;
    let rewritten: Vec<String> = requests[deleted + 1..]
        .iter()
        .filter(|request| matches!(request.method.as_str(), "PUT" | "PATCH") && same_vm(&request.path))
        .map(|request| format!("{} {} -> {}", request.method, request.path, request.status))
        .collect();
    assert!(
        rewritten.is_empty(),
        "the lost VM was written again: {rewritten:?}"
    );
    eprintln!(
        "e2e: {} ARM requests since the out-of-band DELETE, none writing the lost VM",
        requests.len() - deleted - 1
    );
    Ok(())
}
