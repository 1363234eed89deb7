//! capz-rs under adversity, on the default flavor:
//! - Azure failing a fifth of ARM and sign-in calls (429 with `Retry-After` of 1 or 2 s, and 500)
//!   and one long-running operation ending `Failed`: the cluster still converges, nothing is
//!   created twice, and no caller comes back to a throttled budget before its `Retry-After`; the
//!   security group Azure left `Failed` is written once more and ends `Succeeded`, and the
//!   AzureCluster becomes Ready only after that;
//! - the compute controller killed while a VM create is in flight and started again: the new
//!   process resumes the operation recorded in status instead of writing the VM again;
//! - the vmss controller killed in the middle of a MachinePool's rolling upgrade and started
//!   again: the new process finishes the rollout, and every old instance is deleted once and no
//!   new one at all (nothing is replaced twice);
//! - kube-apiserver stopped for 30 s while a VM create is in flight, then started again: the
//!   controllers lose their leases and stop reconciling, but no process exits; they lead again
//!   once the API server is back, and the cluster converges with no Azure resource written twice.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use arm_emulator::config::DEFAULT_SUBSCRIPTION;
use arm_emulator::faults::Fault;
use arm_emulator::{Config, LoggedRequest};
use capz_e2e::{CONTROL_PLANE, Environment, TestResult, wait_list};

const CONVERGE: Duration = Duration::from_mins(3);
const WORKERS: u32 = 1;
/// Long enough that the compute controller can be killed while the create runs.
const VM_LATENCY: Duration = Duration::from_secs(8);
/// Long enough that the vmss controller can be killed while an old instance is being deleted.
const INSTANCE_LATENCY: Duration = Duration::from_secs(6);
/// A call that reached Azure this soon after a 429 was answered was sent before its caller could
/// have read that answer (the loopback and the client's parsing take a few milliseconds).
const IN_FLIGHT: Duration = Duration::from_millis(100);
const FAULTY: &str = "faulty";
const RESTARTED: &str = "restarted";
const OUTAGE: &str = "outage";
/// How long kube-apiserver stays down: twice the controllers' lease duration.
const OUTAGE_LENGTH: Duration = Duration::from_secs(30);

#[tokio::test]
async fn controllers_survive_azure_faults_and_a_restart_mid_operation() -> TestResult {
    let mut environment = Environment::start(Config {
        retry_after_seconds: 1,
        latencies: [
            ("Microsoft.Compute/virtualMachines".to_owned(), VM_LATENCY),
            (
                "Microsoft.Compute/virtualMachineScaleSets/virtualMachines".to_owned(),
                INSTANCE_LATENCY,
            ),
        ]
        .into(),
        // Both cases' calls, so that the checks see every one.
        request_log_size: 100_000,
        ..Config::default()
    })
    .await?;
    let client = environment.client.clone();
    // Faults first: the processes have no token yet, so their sign-ins meet the faults too.
    let faulty = capz_harness::with_temp_namespace(&client, async |namespace| {
        azure_faults_are_survived(&environment, &namespace).await
    })
    .await??;
    let clean = capz_harness::with_temp_namespace(&client, async |namespace| {
        a_restart_resumes_the_vm_create(&mut environment, &namespace).await
    })
    .await??;
    assert_eq!(
        faulty, clean,
        "the faulty cluster's resources by type differ from those of the cluster built without faults"
    );
    capz_harness::with_temp_namespace(&client, async |namespace| {
        a_restart_mid_rollout_replaces_each_instance_once(&mut environment, &namespace).await
    })
    .await??;
    let outage = capz_harness::with_temp_namespace(&client, async |namespace| {
        an_api_server_outage_is_survived(&mut environment, &namespace).await
    })
    .await??;
    assert_eq!(
        outage, clean,
        "the resources by type of the cluster built through an API server outage differ from those of a clean run"
    );
    Ok(())
}

/// A rule answering `status` to `percent`% of all calls (ARM and sign-ins).
fn failing(status: u16, retry_after_seconds: Option<u64>, percent: u8) -> Fault {
    Fault {
        method: None,
        path: "*".into(),
        status: Some(status),
        code: None,
        message: None,
        retry_after_seconds,
        count: None,
        percent: Some(percent),
        latency_ms: None,
        drop_connection: false,
        fail_operation: false,
        cancel_operation: false,
    }
}

/// A fifth of all calls failing: each rule takes 7% of what the ones before let through, 19.6%
/// in all.
fn random_failures() -> [Fault; 3] {
    [
        failing(429, Some(1), 7),
        failing(429, Some(2), 7),
        failing(500, None, 7),
    ]
}

/// Failures that happen once, whatever the dice say: the first sign-in is throttled, and the
/// first network security group's create ends `Failed`.
fn one_off_failures() -> [Fault; 2] {
    let once = |fault: Fault| Fault {
        count: Some(1),
        percent: None,
        ..fault
    };
    [
        once(Fault {
            path: "*/oauth2/v2.0/token".into(),
            ..failing(429, Some(2), 100)
        }),
        Fault::failing_operation_once("PUT", "*/networkSecurityGroups/*", "InternalServerError"),
    ]
}

async fn azure_faults_are_survived(
    environment: &Environment,
    namespace: &str,
) -> TestResult<BTreeMap<String, usize>> {
    let emulator = &environment.azure.emulator;
    environment.create_identity_secret(namespace).await?;
    let manifest = environment.generate(FAULTY, namespace, WORKERS).await?;
    // The one-off rules first: rules are tried in order.
    let one_off: Vec<u64> = one_off_failures()
        .into_iter()
        .map(|fault| emulator.add_fault(fault))
        .collect();
    let random: Vec<u64> = random_failures()
        .into_iter()
        .map(|fault| emulator.add_fault(fault))
        .collect();
    let applied_at = Instant::now();
    let since = SystemTime::now();
    capz_harness::apply_yaml(&environment.client, namespace, &manifest).await?;
    environment
        .converged(namespace, WORKERS, CONVERGE, applied_at)
        .await?;
    let left: Vec<u64> = emulator.faults().iter().map(|(id, _)| *id).collect();
    for rule in one_off.iter().chain(&random) {
        emulator.remove_fault(*rule);
    }
    let log: Vec<LoggedRequest> = emulator
        .requests()
        .into_iter()
        .filter(|request| request.received >= since)
        .collect();
    assert!(
        !one_off.iter().any(|rule| left.contains(rule)),
        "the first sign-in and a security group create should have met their faults; rules left: {left:?}"
    );
    let failed = count(&log, |request| request.status >= 500);
    let throttled = count(&log, |request| request.status == 429);
    let sign_ins = count(&log, is_sign_in);
    eprintln!(
        "e2e: {} calls to Azure ({sign_ins} sign-ins) until convergence: {throttled} throttled, {failed} failed",
        log.len()
    );
    assert!(
        failed > 0 && throttled > 1,
        "the faults did not bite: {throttled} throttled, {failed} failed"
    );
    let early = early_calls(&log);
    assert!(
        early.is_empty(),
        "calls came back to a throttled budget before its Retry-After:\n{}",
        early.join("\n")
    );
    let inventory = inventory(environment, FAULTY);
    assert!(
        !inventory.keys().any(|key| key.ends_with("/failed")),
        "a resource Azure left Failed was not repaired: {inventory:?}"
    );
    repaired_before_ready(environment, namespace, &log).await?;
    one_vm_and_nic_per_machine(&inventory)?;
    Ok(types(&inventory))
}

/// Kills the compute controller while the control-plane VM is being created and starts it again;
/// returns the cluster's resources by type.
async fn a_restart_resumes_the_vm_create(
    environment: &mut Environment,
    namespace: &str,
) -> TestResult<BTreeMap<String, usize>> {
    environment.create_identity_secret(namespace).await?;
    let manifest = environment.generate(RESTARTED, namespace, WORKERS).await?;
    let applied_at = Instant::now();
    capz_harness::apply_yaml(&environment.client, namespace, &manifest).await?;
    let group = format!("/resourcegroups/{RESTARTED}/");
    vm_create_recorded(environment, namespace).await?;
    let created = environment
        .azure
        .emulator
        .requests()
        .into_iter()
        .find(|request| {
            request.method == "PUT"
                && request.resource_type == "Microsoft.Compute/virtualMachines"
                && request.path.to_ascii_lowercase().contains(&group)
        })
        .ok_or("the VM's create is recorded in status but Azure never saw it")?;
    environment.plane.kill("capz-compute")?;
    let running_for = created.answered.elapsed()?;
    assert!(
        running_for < VM_LATENCY,
        "the VM's create had finished ({running_for:?} after it started) before the kill"
    );
    let relaunched = SystemTime::now();
    environment.plane.relaunch("capz-compute")?;
    eprintln!(
        "e2e: capz-compute killed {:.1} s into the VM's create and started again",
        running_for.as_secs_f64()
    );
    environment
        .converged(namespace, WORKERS, CONVERGE, applied_at)
        .await?;
    let log = environment.azure.emulator.requests();
    let puts = count(&log, |request| {
        request.method == "PUT" && request.path.eq_ignore_ascii_case(&created.path)
    });
    assert_eq!(puts, 1, "PUTs of {}", created.path);
    let by_new_process: Vec<&LoggedRequest> = log
        .iter()
        .filter(|request| {
            request.received > relaunched
                && request
                    .user_agent
                    .as_deref()
                    .is_some_and(|agent| agent.ends_with(" capz-compute"))
        })
        .collect();
    let polled = by_new_process.iter().any(|request| {
        let path = request.path.to_ascii_lowercase();
        request.method == "GET"
            && path.contains("/providers/microsoft.compute/locations/")
            && path.contains("/operations/")
    });
    let calls: Vec<String> = by_new_process
        .iter()
        .map(|request| format!("  {} {} {}", request.method, request.path, request.status))
        .collect();
    assert!(
        polled,
        "the new compute process never polled the VM's operation recorded in status; it called:\n{}",
        calls.join("\n")
    );
    let inventory = inventory(environment, RESTARTED);
    one_vm_and_nic_per_machine(&inventory)?;
    Ok(types(&inventory))
}

/// A pool of three of the `machinepool` flavor moves to a new Kubernetes version; while its first
/// old instance is being deleted, capz-vmss is killed and started again. The rollout ends with
/// three new instances, each old one deleted once (the new process follows the deletion recorded
/// in status instead of sending another), none of the new ones deleted.
async fn a_restart_mid_rollout_replaces_each_instance_once(
    environment: &mut Environment,
    namespace: &str,
) -> TestResult {
    const POOLED: &str = "pooled";
    let pool = format!("{POOLED}-mp-0");
    let applied_at = environment
        .create_cluster_of(Some("machinepool"), POOLED, namespace, (1, 3), true, |_| Ok(()))
        .await?;
    environment
        .available(POOLED, namespace, CONVERGE, applied_at)
        .await?;
    let pools = environment.infrastructure("AzureMachinePool", namespace).await?;
    let before = wait_list(&pools, "", "the pool with three instances", CONVERGE, |all| {
        all.iter().any(|pool| on_latest_model(pool, 3))
    })
    .await?;
    let old = provider_ids(&before[0]);
    environment
        .cluster_api("MachinePool", namespace)
        .await?
        .patch(
            &pool,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"spec": {"template": {"spec": {"version": "v1.33.2"}}}}),
            ),
        )
        .await?;
    let members = environment
        .infrastructure("AzureMachinePoolMachine", namespace)
        .await?;
    wait_list(&members, "", "an old instance on its way out", CONVERGE, |all| {
        all.iter().any(|member| {
            member.metadata.deletion_timestamp.is_some()
                && old.contains(
                    &member.data["spec"]["providerID"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
        })
    })
    .await?;
    environment.plane.kill("capz-vmss")?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    environment.plane.relaunch("capz-vmss")?;
    eprintln!("e2e: capz-vmss killed mid-rollout and started again");
    let after = wait_list(&pools, "", "three new instances", CONVERGE, |all| {
        all.iter()
            .any(|pool| on_latest_model(pool, 3) && provider_ids(pool).iter().all(|id| !old.contains(id)))
    })
    .await?;
    let new = provider_ids(&after[0]);
    let log = environment.azure.emulator.requests();
    let deletes = |id: &str| {
        count(&log, |request| {
            request.method == "DELETE" && request.path.eq_ignore_ascii_case(id)
        })
    };
    for id in &old {
        assert_eq!(
            deletes(id.trim_start_matches("azure://")),
            1,
            "DELETEs of old instance {id}"
        );
    }
    for id in &new {
        assert_eq!(
            deletes(id.trim_start_matches("azure://")),
            0,
            "new instance {id} was deleted"
        );
    }
    Ok(())
}

/// Whether an AzureMachinePool is ready with `count` instances, all on its latest model.
fn on_latest_model(pool: &kube::api::DynamicObject, count: usize) -> bool {
    pool.data["status"]["ready"] == true
        && pool.data["status"]["instances"]
            .as_array()
            .is_some_and(|instances| {
                instances.len() == count
                    && instances
                        .iter()
                        .all(|instance| instance["latestModelApplied"] == true)
            })
}

/// An AzureMachinePool's `spec.providerIDList`.
fn provider_ids(pool: &kube::api::DynamicObject) -> Vec<String> {
    pool.data["spec"]["providerIDList"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|id| id.as_str().map(str::to_owned))
        .collect()
}

/// Stops kube-apiserver for [`OUTAGE_LENGTH`] while the control-plane VM is being created, then
/// starts it again; returns the cluster's resources by type.
async fn an_api_server_outage_is_survived(
    environment: &mut Environment,
    namespace: &str,
) -> TestResult<BTreeMap<String, usize>> {
    environment.create_identity_secret(namespace).await?;
    let manifest = environment.generate(OUTAGE, namespace, WORKERS).await?;
    let applied_at = Instant::now();
    let since = SystemTime::now();
    capz_harness::apply_yaml(&environment.client, namespace, &manifest).await?;
    vm_create_recorded(environment, namespace).await?;
    let restarts_before = restarts(environment);
    environment.plane.kill("kube-apiserver")?;
    eprintln!("e2e: kube-apiserver stopped for {} s", OUTAGE_LENGTH.as_secs());
    tokio::time::sleep(OUTAGE_LENGTH).await;
    environment.plane.relaunch("kube-apiserver")?;
    let back = Instant::now();
    while environment.client.apiserver_version().await.is_err() {
        if back.elapsed() > Duration::from_mins(1) {
            return Err("kube-apiserver did not come back".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "e2e: kube-apiserver serves again after {:.1} s",
        back.elapsed().as_secs_f64()
    );
    environment
        .converged(namespace, WORKERS, CONVERGE, applied_at)
        .await?;
    // No controller exited: each runs as the process it was before the outage.
    assert_eq!(restarts(environment), restarts_before, "a capz-rs process exited");
    let log: Vec<LoggedRequest> = environment
        .azure
        .emulator
        .requests()
        .into_iter()
        .filter(|request| request.received >= since)
        .collect();
    let group = format!("/resourcegroups/{OUTAGE}/");
    let mut writes: BTreeMap<String, usize> = BTreeMap::new();
    for request in &log {
        let path = request.path.to_ascii_lowercase();
        if request.method == "PUT" && path.contains(&group) && request.status < 300 {
            *writes.entry(path).or_default() += 1;
        }
    }
    let twice: Vec<_> = writes.iter().filter(|(_, count)| **count > 1).collect();
    assert!(
        twice.is_empty(),
        "Azure resources written more than once: {twice:?}"
    );
    let inventory = inventory(environment, OUTAGE);
    one_vm_and_nic_per_machine(&inventory)?;
    Ok(types(&inventory))
}

/// Whether each of capz-rs's processes has exited, and how often it was started again, by name.
fn restarts(environment: &Environment) -> Vec<(String, bool, u32)> {
    environment
        .plane
        .processes()
        .iter()
        .filter(|process| process.name().starts_with("capz-"))
        .map(|process| {
            (
                process.name().to_owned(),
                process.has_exited(),
                process.restarts(),
            )
        })
        .collect()
}

/// Waits until the control-plane AzureMachine records its VM's create in status.
async fn vm_create_recorded(environment: &Environment, namespace: &str) -> TestResult {
    let machines = environment.infrastructure("AzureMachine", namespace).await?;
    wait_list(
        &machines,
        CONTROL_PLANE,
        "the control-plane VM's create recorded in status",
        CONVERGE,
        |all| {
            all.iter()
                .any(|machine| recorded_operation(machine, "virtualmachine"))
        },
    )
    .await?;
    Ok(())
}

/// Whether the AzureMachine records an operation of `service` in status.
fn recorded_operation(machine: &kube::api::DynamicObject, service: &str) -> bool {
    machine.data["status"]["longRunningOperationStates"]
        .as_array()
        .is_some_and(|states| states.iter().any(|state| state["serviceName"] == service))
}

fn count(log: &[LoggedRequest], wanted: impl Fn(&LoggedRequest) -> bool) -> usize {
    log.iter().filter(|request| wanted(request)).count()
}

fn is_sign_in(request: &LoggedRequest) -> bool {
    request.path.ends_with("/token")
}

/// The budget a call draws on, as the emulator throttles: sign-ins, or the principal's reads,
/// writes or deletes.
fn budget(request: &LoggedRequest) -> &'static str {
    if is_sign_in(request) {
        return "sign-ins";
    }
    match request.method.as_str() {
        "GET" | "HEAD" => "reads",
        "DELETE" => "deletes",
        _ => "writes",
    }
}

/// Who made a call: the principal, and the process (controllers sharing a principal tell
/// themselves apart in their `User-Agent`).
fn caller(request: &LoggedRequest) -> (Option<&str>, Option<&str>) {
    (
        request.caller.as_ref().map(|caller| caller.client_id.as_str()),
        request.user_agent.as_deref(),
    )
}

/// Every call that reached a budget after a 429 for it told its caller to wait, and before that
/// wait was over.
fn early_calls(log: &[LoggedRequest]) -> Vec<String> {
    let mut early = Vec::new();
    for throttled in log.iter().filter(|request| request.status == 429) {
        let Some(seconds) = throttled.retry_after else {
            continue;
        };
        let from = throttled.answered + IN_FLIGHT;
        let until = throttled.answered + Duration::from_secs(seconds);
        for call in log.iter().filter(|call| {
            call.received > from
                && call.received < until
                && caller(call) == caller(throttled)
                && budget(call) == budget(throttled)
        }) {
            let after = call
                .received
                .duration_since(throttled.answered)
                .unwrap_or_default();
            early.push(format!(
                "  {} {} ({:?}) {:.3} s after a 429 for {} {} with Retry-After {seconds}",
                call.method,
                call.path,
                caller(call),
                after.as_secs_f64(),
                throttled.method,
                throttled.path
            ));
        }
    }
    early
}

/// The security group whose create ended `Failed` was written once more (one accepted PUT more
/// than every other security group), and the AzureCluster's `Ready` turned True after that write.
async fn repaired_before_ready(
    environment: &Environment,
    namespace: &str,
    log: &[LoggedRequest],
) -> TestResult {
    let mut accepted: BTreeMap<String, Vec<SystemTime>> = BTreeMap::new();
    for request in log {
        let path = request.path.to_ascii_lowercase();
        if request.method == "PUT"
            && path.contains(&format!("/resourcegroups/{FAULTY}/"))
            && path.contains("/networksecuritygroups/")
            && request.status < 300
        {
            accepted.entry(path).or_default().push(request.received);
        }
    }
    let twice: Vec<(&String, &Vec<SystemTime>)> =
        accepted.iter().filter(|(_, puts)| puts.len() > 1).collect();
    let [(_, puts)] = twice[..] else {
        return Err(format!("not one security group written twice: {accepted:?}").into());
    };
    if puts.len() != 2 {
        return Err(format!("the failed security group was written {} times", puts.len()).into());
    }
    let repaired_at = puts[1];
    let clusters = kube::Api::<kube::api::DynamicObject>::namespaced_with(
        environment.client.clone(),
        namespace,
        &kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "AzureCluster",
        )),
    );
    // A reconcile that met one of the random faults just before they were lifted may hold Ready
    // False for one backoff; the claim is about when it last turned True.
    let deadline = Instant::now() + Duration::from_mins(1);
    let ready_since = loop {
        let cluster = clusters.get(FAULTY).await?;
        let ready = cluster.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|condition| condition["type"] == "Ready" && condition["status"] == "True")
            .and_then(|condition| condition["lastTransitionTime"].as_str())
            .map(str::to_owned);
        match ready {
            Some(since) => break since.parse::<k8s_openapi::jiff::Timestamp>()?,
            None if Instant::now() < deadline => tokio::time::sleep(Duration::from_secs(1)).await,
            None => {
                return Err(format!(
                    "the AzureCluster has no Ready=True: {:?}",
                    cluster.data["status"]["conditions"]
                )
                .into());
            }
        }
    };
    let repaired_second = repaired_at.duration_since(SystemTime::UNIX_EPOCH)?.as_secs();
    assert!(
        u64::try_from(ready_since.as_second())? >= repaired_second,
        "the AzureCluster was Ready at {ready_since}, before the failed security group was written again"
    );
    Ok(())
}

/// The resources capz-rs created in the cluster's resource group, counted by type (lower case)
/// and provisioning state when it is not `Succeeded`: `microsoft.network/networksecuritygroups/failed`.
fn inventory(environment: &Environment, cluster: &str) -> BTreeMap<String, usize> {
    let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups/{cluster}");
    let snapshot = environment.azure.emulator.snapshot();
    let mut counts = BTreeMap::new();
    for item in snapshot["resources"].as_array().into_iter().flatten() {
        let id = item["body"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if item["seeded"] == true || !id.starts_with(&group) {
            continue;
        }
        let type_name = item["body"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let key = match item["body"]["properties"]["provisioningState"].as_str() {
            Some(state) if state != "Succeeded" => format!("{type_name}/{}", state.to_ascii_lowercase()),
            _ => type_name,
        };
        *counts.entry(key).or_default() += 1;
    }
    counts
}

/// The counts by type alone, whatever the provisioning state.
fn types(inventory: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    let mut types = BTreeMap::new();
    for (key, count) in inventory {
        let type_name = key.splitn(3, '/').take(2).collect::<Vec<_>>().join("/");
        *types.entry(type_name).or_default() += count;
    }
    types
}

/// Each machine (the control plane and the workers, which join once it has initialized) has
/// exactly one VM and one network interface: none was created twice.
fn one_vm_and_nic_per_machine(inventory: &BTreeMap<String, usize>) -> TestResult {
    let types = types(inventory);
    let machines = 1 + usize::try_from(WORKERS)?;
    for type_name in [
        "microsoft.compute/virtualmachines",
        "microsoft.network/networkinterfaces",
    ] {
        let found = types.get(type_name).copied().unwrap_or_default();
        if found != machines {
            return Err(
                format!("{found} of {type_name}, not one per machine ({machines}): {inventory:?}").into(),
            );
        }
    }
    Ok(())
}
