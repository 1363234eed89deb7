//! The vmss controller against a real kube-apiserver and the in-process ARM emulator: Cluster API
//! objects, an AzureCluster with its peers' conditions and a MachinePool are stored by the test
//! (no Cluster API controllers run: no Machine is made for an instance, no Node registers), the
//! controller runs in-process, and the emulator's state and request log tell what it did.

use std::time::Duration;

use arm_emulator::Config;
use capz_harness::fixtures::{
    CLUSTER, bootstrapped, cluster_objects, compute, machine_controller, machine_pool, seeds,
};
use capz_harness::{EmulatedAzure, InProcessController, TestResult};
use capz_kit::api::common::conditions::{ConditionType, Conditions};
use capz_kit::api::{AzureMachinePool, AzureMachinePoolMachine};
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::compute::{ScaleSetInstance, VirtualMachineScaleSet};
use capz_kit::azure::{Outcome, PollOutcome, ResourceId};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use capz_kit::kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_mins(1);
const SSH_KEY: &str = "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSUFBQkFnTUVCUVlIQ0FrS0N3d05EZzhRRVJJVEZCVVdGeGdaR2hzY0hSNGYgdGVzdA==";
const MODEL_TAG: &str = "sigs.k8s.io_cluster-api-provider-azure_spec-version-hash";

async fn azure() -> TestResult<EmulatedAzure> {
    Ok(EmulatedAzure::start(Config {
        resources: seeds(),
        ..Config::default()
    })
    .await?)
}

fn controller(
    plane: &capz_harness::Plane,
    namespace: &str,
    settings: IdentitySettings,
) -> TestResult<InProcessController> {
    Ok(machine_controller(capz_vmss::ID, plane, namespace, move |ctx| {
        capz_vmss::run(ctx, settings)
    })?)
}

/// A MachinePool of `replicas` (spread over the zones `zones`) with its bootstrap Secret, and its
/// AzureMachinePool `name` with `extra` entries: the template's, then the spec's (each a line of
/// YAML at its level).
async fn pool(
    client: &Client,
    namespace: &str,
    (name, replicas, zones): (&str, u32, &[&str]),
    (template_extra, extra): (&str, &str),
) -> TestResult {
    let machine_pool = machine_pool(name, replicas, zones, "v1.33.1", "AzureMachinePool");
    bootstrapped(client, namespace, name, ("MachinePool", &machine_pool), |uid| {
        format!(
            r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureMachinePool
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}}}
  ownerReferences: [{{apiVersion: cluster.x-k8s.io/v1beta2, kind: MachinePool, name: {name}, uid: {uid}}}]
spec:
  location: westeurope
  template:
    vmSize: Standard_D2s_v3
    osDisk: {{osType: Linux, diskSizeGB: 30, managedDisk: {{storageAccountType: Premium_LRS}}}}
    sshPublicKey: {SSH_KEY}
    {template_extra}
  {extra}
"
        )
    })
    .await?;
    Ok(())
}

async fn scale(client: &Client, namespace: &str, name: &str, replicas: u32) -> TestResult {
    Api::<capz_kit::api::capi::MachinePool>::namespaced(client.clone(), namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await?;
    Ok(())
}

async fn members(client: &Client, namespace: &str, pool: &str) -> TestResult<Vec<AzureMachinePoolMachine>> {
    Ok(
        Api::<AzureMachinePoolMachine>::namespaced(client.clone(), namespace)
            .list(&ListParams::default().labels(&format!(
                "azuremachinepool.infrastructure.cluster.x-k8s.io/machine-pool={pool}"
            )))
            .await?
            .items,
    )
}

/// Waits until the pool reports `count` instances and has as many members.
async fn settles_at(
    client: &Client,
    namespace: &str,
    name: &str,
    count: usize,
) -> TestResult<AzureMachinePool> {
    let pools = Api::<AzureMachinePool>::namespaced(client.clone(), namespace);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let pool = pools.get(name).await?;
        let listed = pool.spec.provider_id_list.as_ref().map_or(0, Vec::len);
        let replicas = pool.status.as_ref().and_then(|status| status.replicas);
        let members = members(client, namespace, name).await?;
        let live = members
            .iter()
            .filter(|member| member.metadata.deletion_timestamp.is_none())
            .count();
        if listed == count && replicas == i32::try_from(count).ok() && members.len() == count && live == count
        {
            return Ok(pool);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "pool {name}: {listed} provider ids, replicas {replicas:?}, {} members ({live} live); wanted {count}; status {:?}",
                members.len(),
                pool.status
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn instances(azure: &EmulatedAzure, set: &str) -> TestResult<Vec<ScaleSetInstance>> {
    let id: ResourceId = compute(&format!("virtualMachineScaleSets/{set}")).parse()?;
    Ok(azure
        .client()
        .list::<ScaleSetInstance>(
            &id,
            "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
            &ScaleSetInstance::API_VERSION,
        )
        .await?)
}

async fn settle_operation<T>(azure: &EmulatedAzure, outcome: Outcome<T>) -> TestResult {
    if let Outcome::InProgress(mut progress) = outcome {
        loop {
            match azure.client().poll::<Value>(&progress.token).await? {
                PollOutcome::InProgress(next) => progress = next,
                PollOutcome::Succeeded(_) => break,
                PollOutcome::Failed(error) => return Err(error.into()),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// Waits until the set holds `count` instances (a deletion's operation may still be settling).
async fn converges(azure: &EmulatedAzure, set: &str, count: usize) -> TestResult {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = instances(azure, set).await?;
        if listed.len() == count {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            let states: Vec<_> = listed
                .iter()
                .map(|instance| {
                    (
                        instance.name.clone(),
                        instance
                            .properties
                            .as_ref()
                            .and_then(|p| p.provisioning_state.clone()),
                    )
                })
                .collect();
            return Err(format!("set {set} holds {states:?}, not {count} instances").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn holds(pool: &AzureMachinePool, type_: &ConditionType) -> bool {
    pool.status
        .as_ref()
        .is_some_and(|status| Conditions::is_true(&status.conditions, type_))
}

#[tokio::test]
async fn a_uniform_pool_scales_ignores_foreign_tags_replaces_lost_instances_and_is_deleted() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(uniform(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn uniform(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let set_id = compute("virtualMachineScaleSets/pool");
    pool(client, namespace, ("pool", 3, &[]), ("", "")).await?;
    let built = settles_at(client, namespace, "pool", 3).await?;
    let status = built.status.as_ref().ok_or("no status")?;
    assert_eq!(status.ready, Some(true), "{status:?}");
    assert!(holds(&built, &ConditionType::SCALE_SET_RUNNING) && holds(&built, &ConditionType::READY));
    assert_eq!(
        status.infrastructure_machine_kind.as_deref(),
        Some("AzureMachinePoolMachine")
    );
    let ids = built.spec.provider_id_list.clone().unwrap_or_default();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "providerIDList is sorted");
    assert!(
        ids.iter().all(|id| id.starts_with("azure:///subscriptions/")),
        "{ids:?}"
    );
    assert_eq!(
        built.spec.provider_id.as_deref(),
        Some(format!("azure://{set_id}").as_str())
    );
    let set = azure
        .get::<VirtualMachineScaleSet>(&set_id)
        .await?
        .ok_or("no scale set")?;
    assert_eq!(set.sku.as_ref().and_then(|sku| sku.capacity), Some(3));
    let hash = set
        .tags
        .as_ref()
        .and_then(|tags| tags.get(MODEL_TAG))
        .and_then(|hashes| hashes.split_once('-'))
        .map(|(model, _)| model.to_owned())
        .ok_or("the set has no model hash")?;
    for member in members(client, namespace, "pool").await? {
        assert_eq!(
            member
                .labels()
                .get("cluster.x-k8s.io/pool-name")
                .map(String::as_str),
            Some("pool")
        );
        assert_eq!(
            member
                .labels()
                .get("cluster.x-k8s.io/cluster-name")
                .map(String::as_str),
            Some(CLUSTER)
        );
        assert!(
            member
                .finalizers()
                .iter()
                .any(|finalizer| finalizer == capz_vmss::ID.finalizer())
        );
        assert!(
            member
                .owner_references()
                .iter()
                .any(|owner| owner.kind == "AzureMachinePool" && owner.name == "pool")
        );
        assert_eq!(
            member
                .annotations()
                .get("vmss.infrastructure.cluster.x-k8s.io/model-hash"),
            Some(&hash)
        );
        assert!(
            ids.contains(&member.spec.provider_id),
            "{}",
            member.spec.provider_id
        );
    }

    // A steady pool writes nothing to Azure, and reads as much however many instances it has.
    let writes = azure.writes().len();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(azure.writes()[writes..], [] as [String; 0], "a steady pool wrote");

    // A tag Azure Policy adds changes nothing, and no write of ours takes it away.
    let mut tags = set.tags.clone().unwrap_or_default();
    tags.insert("costcenter".to_owned(), "policy".to_owned());
    let patched = azure
        .client()
        .patch::<Value, Value>(
            &set_id.parse()?,
            &VirtualMachineScaleSet::API_VERSION,
            &json!({"tags": tags}),
        )
        .await?;
    settle_operation(azure, patched).await?;
    let writes = azure.writes().len();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        azure.writes()[writes..],
        [] as [String; 0],
        "a foreign tag made the pool write"
    );

    scaling(client, namespace, azure, &set_id).await
}

async fn member_names(client: &Client, namespace: &str, pool: &str) -> TestResult<Vec<String>> {
    let mut names: Vec<String> = members(client, namespace, pool)
        .await?
        .iter()
        .map(capz_kit::kube::ResourceExt::name_any)
        .collect();
    names.sort();
    Ok(names)
}

async fn scaling(client: &Client, namespace: &str, azure: &EmulatedAzure, set_id: &str) -> TestResult {
    // 3 → 5 → 2: the oldest instances go (none has a Node, so none is more available).
    scale(client, namespace, "pool", 5).await?;
    settles_at(client, namespace, "pool", 5).await?;
    scale(client, namespace, "pool", 2).await?;
    settles_at(client, namespace, "pool", 2).await?;
    assert_eq!(
        member_names(client, namespace, "pool").await?,
        ["pool-3", "pool-4"],
        "{:#?}",
        azure.writes()
    );
    converges(azure, "pool", 2).await?;
    let set = azure
        .get::<VirtualMachineScaleSet>(set_id)
        .await?
        .ok_or("no scale set")?;
    assert_eq!(
        set.tags
            .as_ref()
            .and_then(|tags| tags.get("costcenter"))
            .map(String::as_str),
        Some("policy"),
        "the foreign tag was kept through the writes"
    );

    // An instance deleted outside of the pool is replaced.
    let lost: ResourceId = format!("{set_id}/virtualMachines/3").parse()?;
    let deleted = azure
        .client()
        .delete(&lost, &ScaleSetInstance::API_VERSION)
        .await?;
    settle_operation(azure, deleted).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let names = member_names(client, namespace, "pool").await?;
        if instances(azure, "pool").await?.len() == 2
            && names.len() == 2
            && !names.contains(&"pool-3".to_owned())
        {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("the lost instance was not replaced: members {names:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Deleting the pool deletes the set, then its members, then the pool.
    let pools = Api::<AzureMachinePool>::namespaced(client.clone(), namespace);
    pools.delete("pool", &DeleteParams::default()).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while pools.get_opt("pool").await?.is_some() {
        if tokio::time::Instant::now() > deadline {
            return Err("the pool was not deleted".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(azure.get::<VirtualMachineScaleSet>(set_id).await?.is_none());
    assert!(members(client, namespace, "pool").await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_flexible_pool_runs_its_extensions_mirrors_its_machines_and_removes_one_through_its_member()
-> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(flexible(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn flexible(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let extensions = "vmExtensions: [{name: CustomScript, publisher: Microsoft.Azure.Extensions, version: '2.1', \
        protectedSettings: {commandToExecute: ./hello.sh}}]";
    pool(
        client,
        namespace,
        ("flex", 2, &[]),
        (
            &format!("{extensions}\n    disableVMBootstrapExtension: false"),
            "orchestrationMode: Flexible",
        ),
    )
    .await?;
    let built = settles_at(client, namespace, "flex", 2).await?;
    let ids = built.spec.provider_id_list.clone().unwrap_or_default();
    assert!(
        ids.iter()
            .all(|id| id.contains("/providers/Microsoft.Compute/virtualMachines/flex_")),
        "{ids:?}"
    );
    // The template's extension and the bootstrap check are in the set's model; each machine
    // reports the check, and so does the pool.
    let set_id = compute("virtualMachineScaleSets/flex");
    let model = serde_json::to_value(
        azure
            .get::<VirtualMachineScaleSet>(&set_id)
            .await?
            .ok_or("no set")?,
    )?;
    let names: Vec<&str> = model
        .pointer("/properties/virtualMachineProfile/extensionProfile/extensions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|extension| extension["name"].as_str())
        .collect();
    assert_eq!(names, ["CustomScript", "CAPZ.Linux.Bootstrapping"]);
    let pools = Api::<AzureMachinePool>::namespaced(client.clone(), namespace);
    capz_harness::wait_for(&pools, "flex", "BootstrapSucceeded", WAIT, |pool| {
        holds(pool, &ConditionType::BOOTSTRAP_SUCCEEDED)
    })
    .await?;
    for member in members(client, namespace, "flex").await? {
        assert!(
            member.status.as_ref().is_some_and(|status| Conditions::is_true(
                &status.conditions,
                &ConditionType::BOOTSTRAP_SUCCEEDED
            )),
            "{:?}",
            member.status
        );
    }
    // Deleting a member deletes its machine; the pool then makes another to keep two.
    let gone = members(client, namespace, "flex").await?[0].clone();
    Api::<AzureMachinePoolMachine>::namespaced(client.clone(), namespace)
        .delete(&gone.name_any(), &DeleteParams::default())
        .await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let pool = settles_at(client, namespace, "flex", 2).await?;
        let now = pool.spec.provider_id_list.unwrap_or_default();
        if !now.contains(&gone.spec.provider_id) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err("the deleted member's machine is still there".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let machine = gone.spec.provider_id.trim_start_matches("azure://").to_owned();
    assert!(
        azure
            .get_at::<Value>(&machine, &ScaleSetInstance::API_VERSION)
            .await?
            .is_none()
    );
    Ok(())
}

#[tokio::test]
async fn a_zone_out_of_room_makes_the_pool_not_ready_with_azures_reason_and_slows_its_retries() -> TestResult
{
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = EmulatedAzure::start(Config {
            resources: seeds(),
            capacity: vec![arm_emulator::config::CapacityLimit {
                location: "westeurope".to_owned(),
                zone: Some("1".to_owned()),
                size: Some("Standard_D2s_v3".to_owned()),
                machines: 2,
            }],
            ..Config::default()
        })
        .await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(zone_out_of_room(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn zone_out_of_room(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    pool(client, namespace, ("zonal", 2, &["1"]), ("", "")).await?;
    let built = settles_at(client, namespace, "zonal", 2).await?;
    assert!(holds(&built, &ConditionType::READY), "{:?}", built.status);
    // A third instance does not fit in zone 1: the pool says so and is not Ready, so that an
    // autoscaler sees the failure instead of a Ready pool that never grows.
    scale(client, namespace, "zonal", 3).await?;
    let pools = Api::<AzureMachinePool>::namespaced(client.clone(), namespace);
    let failed = capz_harness::wait_for(&pools, "zonal", "not Ready, for lack of room", WAIT, |pool| {
        pool.status.as_ref().is_some_and(|status| {
            status.ready == Some(false)
                && status
                    .conditions
                    .get(&ConditionType::READY)
                    .and_then(|ready| ready.message.as_deref())
                    .is_some_and(|message| message.contains("ZonalAllocationFailed"))
        })
    })
    .await?;
    let running = failed
        .status
        .as_ref()
        .and_then(|status| status.conditions.get(&ConditionType::SCALE_SET_RUNNING).cloned())
        .ok_or("no ScaleSetRunning")?;
    assert_eq!(
        running.status,
        capz_kit::api::common::conditions::ConditionStatus::False
    );
    // The full zone is not written to again and again: the retries back off.
    let set = compute("virtualMachineScaleSets/zonal");
    let writes = |azure: &EmulatedAzure| azure.count("PUT", &set);
    let before = writes(azure);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let retried = writes(azure) - before;
    assert!(retried <= 5, "{retried} writes of the full zone in 20 s");
    eprintln!("vmss: {retried} writes of the full zone in the 20 s after the pool failed");
    Ok(())
}

#[tokio::test]
async fn a_pool_scaled_by_an_autoscaler_outside_cluster_api_follows_its_scale_set() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(autoscaled(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

/// With `cluster.x-k8s.io/replicas-managed-by` on the MachinePool, Azure's capacity is what the
/// pool wants: an instance the autoscaler adds stays, and the MachinePool's replicas follow.
async fn autoscaled(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let set_id = compute("virtualMachineScaleSets/auto");
    pool(client, namespace, ("auto", 2, &[]), ("", "")).await?;
    settles_at(client, namespace, "auto", 2).await?;
    let machine_pools = Api::<capz_kit::api::capi::MachinePool>::namespaced(client.clone(), namespace);
    machine_pools
        .patch(
            "auto",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"cluster.x-k8s.io/replicas-managed-by": "azure-autoscale"}}})),
        )
        .await?;
    // An autoscaler takes over a pool once it is annotated: a pass already under way read the
    // MachinePool before and still sizes the set by its replicas (and would undo a capacity
    // changed meanwhile). Three sync periods (2 s each here) let such passes end.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let grown = azure
        .client()
        .patch::<Value, Value>(
            &set_id.parse()?,
            &VirtualMachineScaleSet::API_VERSION,
            &json!({"sku": {"capacity": 3}}),
        )
        .await?;
    settle_operation(azure, grown).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while machine_pools.get("auto").await?.spec.replicas != Some(3) {
        if tokio::time::Instant::now() > deadline {
            return Err("the MachinePool's replicas did not follow the set's capacity".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    settles_at(client, namespace, "auto", 3).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        azure.count("DELETE", "/virtualMachines/0")
            + azure.count("DELETE", "/virtualMachines/1")
            + azure.count("DELETE", "/virtualMachines/2"),
        0,
        "no instance is removed to reach the MachinePool's old replicas"
    );
    assert_eq!(instances(azure, "auto").await?.len(), 3);
    Ok(())
}
