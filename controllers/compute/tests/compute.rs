//! The compute controller against a real kube-apiserver and the in-process ARM emulator: Cluster
//! API objects and an AzureCluster (with its peers' conditions applied by the test) are stored,
//! the controller runs in-process, and the emulator's state and request log tell what it did.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::faults::Fault;
use capz_harness::{EmulatedAzure, InProcessController};
use capz_kit::api::AzureMachine;
use capz_kit::api::common::conditions::{Condition, ConditionStatus, ConditionType, Conditions};
use capz_kit::api::controllers::Family;
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::compute::{Disk, VirtualMachine, VirtualMachineExtension};
use capz_kit::azure::models::network::{LoadBalancer, NetworkInterface, VirtualNetwork};
use capz_kit::azure::{Outcome, PollOutcome, ResourceId};
use capz_kit::identity::IdentitySettings;
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams};
use capz_kit::kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

use capz_harness::TestResult;
use capz_harness::fixtures::{
    CLUSTER, bootstrapped, cluster_objects, compute, machine_controller, network, report, seeds,
};

const WAIT: Duration = Duration::from_mins(1);
const SSH_KEY: &str = "c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSUFBQkFnTUVCUVlIQ0FrS0N3d05EZzhRRVJJVEZCVVdGeGdaR2hzY0hSNGYgdGVzdA==";

/// The emulator over HTTPS, a client of the test's own, and its CA in a file.
/// The emulator seeded with the cluster's group and network.
async fn azure() -> TestResult<EmulatedAzure> {
    Ok(EmulatedAzure::start(Config {
        resources: seeds(),
        ..Config::default()
    })
    .await?)
}

/// Deletes the VM behind the controller's back, to the end of its operation.
async fn delete_vm(azure: &EmulatedAzure, name: &str) -> TestResult {
    let client = azure.client();
    let id: ResourceId = compute(&format!("virtualMachines/{name}")).parse()?;
    if let Outcome::InProgress(mut progress) = client.delete(&id, &VirtualMachine::API_VERSION).await? {
        loop {
            match client.poll::<Value>(&progress.token).await? {
                PollOutcome::InProgress(next) => progress = next,
                PollOutcome::Succeeded(_) => break,
                PollOutcome::Failed(error) => return Err(error.into()),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// The controller, run in-process on the test's namespace.
fn controller(
    plane: &capz_harness::Plane,
    namespace: &str,
    settings: IdentitySettings,
) -> TestResult<InProcessController> {
    Ok(machine_controller(
        capz_compute::ID,
        plane,
        namespace,
        move |ctx| capz_compute::run(ctx, settings),
    )?)
}

/// The spec of a Linux AzureMachine, as YAML flow-mapping entries.
const LINUX: &str = "vmSize: Standard_D2s_v3, \
    osDisk: {osType: Linux, diskSizeGB: 64, managedDisk: {storageAccountType: Premium_LRS}}, \
    dataDisks: [{nameSuffix: etcddisk, diskSizeGB: 32, lun: 0}]";

/// A Machine, its bootstrap Secret (when `bootstrap`) and its AzureMachine with `spec` (flow
/// mapping entries) and the test's SSH key.
async fn machine(
    client: &Client,
    namespace: &str,
    name: &str,
    labels: &str,
    extra: &str,
    bootstrap: bool,
    spec: &str,
) -> TestResult {
    let data_secret = if bootstrap {
        format!("dataSecretName: {name}-bootstrap")
    } else {
        String::new()
    };
    let machine = format!(
        r"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}, {labels}}}
spec:
  clusterName: {CLUSTER}
  version: v1.33.1
  {extra}
  bootstrap: {{{data_secret}}}
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureMachine, name: {name}}}
"
    );
    bootstrapped(client, namespace, name, ("Machine", &machine), |uid| {
        format!(
            r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureMachine
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: {CLUSTER}, {labels}}}
  ownerReferences: [{{apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: {name}, uid: {uid}}}]
spec: {{{spec}, sshPublicKey: {SSH_KEY}}}
"
        )
    })
    .await?;
    Ok(())
}

fn condition(machine: &AzureMachine, type_: &ConditionType) -> Option<Condition> {
    machine
        .status
        .as_ref()
        .and_then(|status| status.conditions.get(type_).cloned())
}

fn reason(machine: &AzureMachine, type_: &ConditionType) -> Option<String> {
    condition(machine, type_).and_then(|condition| condition.reason)
}

fn ready(machine: &AzureMachine) -> bool {
    machine.status.as_ref().is_some_and(|status| {
        status.ready == Some(true) && Conditions::is_true(&status.conditions, &ConditionType::READY)
    })
}

#[tokio::test]
async fn a_control_plane_machine_runs_in_its_pool_idles_and_is_deleted_with_its_resources() -> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        // The test plays the loadbalancer controller: it writes the SSH rule's condition.
        capz_harness::play_controller(&client, "default", Family::LoadBalancer).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(control_plane(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn control_plane(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let machines = Api::<AzureMachine>::namespaced(client.clone(), namespace);
    machine(
        client,
        namespace,
        "cp-0",
        "cluster.x-k8s.io/control-plane: ''",
        "failureDomain: '2'",
        true,
        LINUX,
    )
    .await?;
    // Behind the public API server load balancer the interface waits for the machine's SSH rule,
    // which the loadbalancer controller reports (played here by the test), so it is created once.
    let waiting = capz_harness::wait_for(&machines, "cp-0", "waiting for the SSH rule", WAIT, |machine| {
        reason(machine, &ConditionType::VM_RUNNING).as_deref() == Some("WaitingForDependency")
    })
    .await?;
    let message = condition(&waiting, &ConditionType::VM_RUNNING).and_then(|c| c.message);
    assert!(
        message
            .as_deref()
            .is_some_and(|message| message.contains("InboundNATRulesReady")),
        "{message:?}"
    );
    assert_eq!(
        azure.writes().len(),
        0,
        "nothing is written before the SSH rule is reported"
    );
    report(&machines, &waiting, &[ConditionType::INBOUND_NAT_RULES_READY]).await?;
    let done = capz_harness::wait_for(&machines, "cp-0", "Ready", WAIT, ready).await?;
    assert_eq!(
        done.spec.provider_id.as_deref(),
        Some(format!("azure://{}", compute("virtualMachines/cp-0")).as_str())
    );
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.vm_state.as_deref(), Some("Succeeded"));
    for type_ in [
        ConditionType::VM_RUNNING,
        ConditionType::NETWORK_INTERFACES_READY,
        ConditionType::DISKS_READY,
    ] {
        assert_eq!(
            condition(&done, &type_).map(|c| c.status),
            Some(ConditionStatus::True),
            "{type_}"
        );
    }
    assert!(
        condition(&done, &ConditionType::BOOTSTRAP_SUCCEEDED).is_none(),
        "a machine without extensions reports none"
    );
    let vm = azure
        .get::<VirtualMachine>(&compute("virtualMachines/cp-0"))
        .await?
        .ok_or("no VM")?;
    assert_eq!(vm.zones, Some(vec!["2".to_owned()]));
    let properties = vm.properties.ok_or("no properties")?;
    let os = properties.os_profile.ok_or("no OS profile")?;
    assert_eq!(os.admin_username.as_deref(), Some("capi"));
    let storage = properties.storage_profile.ok_or("no storage profile")?;
    assert!(
        storage
            .image_reference
            .and_then(|image| image.community_gallery_image_id)
            .is_some_and(|image| image.ends_with("/capi-ubun2-2404/Versions/1.33.1"))
    );
    let tags = vm.tags.unwrap_or_default();
    assert_eq!(
        tags.get("sigs.k8s.io_cluster-api-provider-azure_role")
            .map(String::as_str),
        Some("control-plane")
    );
    assert_eq!(
        azure.count("PUT", "/networkInterfaces/cp-0-nic"),
        1,
        "the interface was written more than once"
    );
    in_pool_with_its_addresses(azure, status.addresses.unwrap_or_default()).await?;
    for disk in ["cp-0_OSDisk", "cp-0_etcddisk"] {
        assert!(
            azure
                .get::<Disk>(&compute(&format!("disks/{disk}")))
                .await?
                .is_some(),
            "{disk}"
        );
    }

    steady_state(&machines, azure).await?;
    deletion(&machines, azure).await
}

/// The control-plane NIC is in the API server pool and behind its NAT rule, and its private
/// address is in the machine's addresses.
async fn in_pool_with_its_addresses(
    azure: &EmulatedAzure,
    addresses: Vec<capz_kit::api::common::MachineAddress>,
) -> TestResult {
    let nic = azure
        .get::<NetworkInterface>(&network("networkInterfaces/cp-0-nic"))
        .await?
        .ok_or("no NIC")?;
    let configuration = nic
        .properties
        .and_then(|properties| properties.ip_configurations)
        .and_then(|configurations| configurations.into_iter().next())
        .and_then(|configuration| configuration.properties)
        .ok_or("no IP configuration")?;
    let pools = configuration
        .load_balancer_backend_address_pools
        .unwrap_or_default();
    assert_eq!(pools.len(), 1);
    assert!(
        pools[0]
            .id
            .to_string()
            .ends_with("/backendAddressPools/c1-public-lb-backendPool")
    );
    let rules = configuration.load_balancer_inbound_nat_rules.unwrap_or_default();
    assert!(rules[0].id.to_string().ends_with("/inboundNatRules/cp-0"));
    let private = configuration.private_ip_address.ok_or("no private address")?;
    assert!(
        addresses
            .iter()
            .any(|address| address.type_ == "InternalIP" && address.address == private),
        "{addresses:?}"
    );
    assert!(
        addresses
            .iter()
            .any(|address| address.type_ == "InternalDNS" && address.address == "cp-0")
    );
    Ok(())
}

/// Resyncs (every 2 s) read Azure and write nothing, to Azure or to the object.
async fn steady_state(machines: &Api<AzureMachine>, azure: &EmulatedAzure) -> TestResult {
    let version = machines.get("cp-0").await?.resource_version();
    let (writes, reads) = (azure.writes().len(), azure.reads());
    let deadline = tokio::time::Instant::now() + WAIT;
    // Three reconciles read at least the interface and the machine each.
    while azure.reads() < reads + 6 {
        assert!(tokio::time::Instant::now() < deadline, "no resync happened");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(azure.writes().len(), writes, "a resync wrote to Azure");
    assert_eq!(
        machines.get("cp-0").await?.resource_version(),
        version,
        "a resync wrote the object"
    );
    Ok(())
}

async fn deletion(machines: &Api<AzureMachine>, azure: &EmulatedAzure) -> TestResult {
    machines.delete("cp-0", &DeleteParams::default()).await?;
    let deadline = tokio::time::Instant::now() + WAIT;
    while machines.get_opt("cp-0").await?.is_some() {
        assert!(tokio::time::Instant::now() < deadline, "cp-0 was not deleted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        azure
            .get::<VirtualMachine>(&compute("virtualMachines/cp-0"))
            .await?
            .is_none()
    );
    assert!(
        azure
            .get::<NetworkInterface>(&network("networkInterfaces/cp-0-nic"))
            .await?
            .is_none()
    );
    for disk in ["cp-0_OSDisk", "cp-0_etcddisk"] {
        assert!(
            azure
                .get::<Disk>(&compute(&format!("disks/{disk}")))
                .await?
                .is_none(),
            "{disk}"
        );
    }
    // What the cluster's network is made of is not the machine's to delete.
    assert!(
        azure
            .get::<LoadBalancer>(&network("loadBalancers/c1-public-lb"))
            .await?
            .is_some()
    );
    assert!(
        azure
            .get::<VirtualNetwork>(&network("virtualNetworks/c1-vnet"))
            .await?
            .is_some()
    );
    Ok(())
}

#[tokio::test]
async fn a_worker_waits_for_bootstrap_data_lands_in_an_availability_set_and_is_never_recreated() -> TestResult
{
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = Box::pin(worker(&client, &namespace, &azure)).await;
        controller.stop().await?;
        result
    })
    .await
}

async fn worker(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let machines = Api::<AzureMachine>::namespaced(client.clone(), namespace);
    machine(
        client,
        namespace,
        "md-0-a",
        "cluster.x-k8s.io/deployment-name: md-0",
        "",
        false,
        LINUX,
    )
    .await?;
    capz_harness::wait_for(&machines, "md-0-a", "WaitingForBootstrapData", WAIT, |machine| {
        reason(machine, &ConditionType::VM_RUNNING).as_deref() == Some("WaitingForBootstrapData")
    })
    .await?;
    assert!(
        azure
            .get::<VirtualMachine>(&compute("virtualMachines/md-0-a"))
            .await?
            .is_none()
    );
    assert_eq!(
        azure.writes().len(),
        0,
        "nothing is written before the bootstrap data"
    );

    let owners = Api::<capz_kit::api::capi::Machine>::namespaced(client.clone(), namespace);
    owners
        .patch(
            "md-0-a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"bootstrap": {"dataSecretName": "md-0-a-bootstrap"}}})),
        )
        .await?;
    let done = capz_harness::wait_for(&machines, "md-0-a", "Ready", WAIT, ready).await?;
    // The region's zones are not in the AzureCluster's failure domains: an availability set.
    assert_eq!(
        condition(&done, &ConditionType::AVAILABILITY_SET_READY).map(|c| c.status),
        Some(ConditionStatus::True)
    );
    let vm = azure
        .get::<VirtualMachine>(&compute("virtualMachines/md-0-a"))
        .await?
        .ok_or("no VM")?;
    let set = vm
        .properties
        .and_then(|properties| properties.availability_set)
        .ok_or("no availability set")?;
    assert!(set.id.to_string().ends_with("/availabilitySets/c1_md-0-as"));
    let nic = azure
        .get::<NetworkInterface>(&network("networkInterfaces/md-0-a-nic"))
        .await?
        .ok_or("no NIC")?;
    let subnet = nic
        .properties
        .and_then(|properties| properties.ip_configurations)
        .and_then(|configurations| configurations.into_iter().next())
        .and_then(|configuration| configuration.properties)
        .and_then(|properties| properties.subnet)
        .ok_or("no subnet")?;
    assert!(subnet.id.to_string().ends_with("/subnets/c1-node-subnet"));

    delete_vm(azure, "md-0-a").await?;
    let writes = azure.writes().len();
    let gone = capz_harness::wait_for(&machines, "md-0-a", "VMNotFound", WAIT, |machine| {
        reason(machine, &ConditionType::READY).as_deref() == Some("VMNotFound")
    })
    .await?;
    let status = gone.status.clone().unwrap_or_default();
    assert_eq!(status.ready, Some(false));
    assert_eq!(status.failure_reason.as_deref(), Some("UpdateError"));
    assert!(status.failure_message.is_some());
    assert_eq!(
        condition(&gone, &ConditionType::READY).and_then(|c| c.severity),
        Some(capz_kit::api::common::conditions::ConditionSeverity::Error)
    );
    assert!(
        azure
            .get::<VirtualMachine>(&compute("virtualMachines/md-0-a"))
            .await?
            .is_none()
    );
    assert_eq!(azure.writes().len(), writes, "the VM was written again");
    assert!(!gone.finalizers().is_empty());
    Ok(())
}

#[tokio::test]
async fn extensions_are_installed_a_failed_bootstrap_check_is_left_to_a_person_and_windows_vms_get_short_names()
-> TestResult {
    capz_harness::in_namespace(&[], async |plane, client, namespace| {
        let azure = azure().await?;
        cluster_objects(&client, &namespace).await?;
        let controller = controller(plane, &namespace, azure.cloud_settings()?)?;
        let result = async {
            Box::pin(failed_bootstrap_check(&client, &namespace, &azure)).await?;
            Box::pin(windows_machine(&client, &namespace, &azure)).await
        }
        .await;
        controller.stop().await?;
        result
    })
    .await
}

/// A Linux machine with a script extension and the bootstrap check, which fails.
async fn failed_bootstrap_check(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let machines = Api::<AzureMachine>::namespaced(client.clone(), namespace);
    // The bootstrap check ends Failed, as it does when the node never finishes joining.
    azure.running.emulator.add_fault(Fault {
        message: Some("the sentinel file never appeared: exit code 1".into()),
        ..Fault::failing_operation_once(
            "PUT",
            "*/extensions/CAPZ.Linux.Bootstrapping",
            "VMExtensionProvisioningError",
        )
    });
    let script = "vmExtensions: [{name: CustomScript, publisher: Microsoft.Azure.Extensions, version: '2.1', \
        settings: {fileUris: 'https://example.com/hello.sh'}, protectedSettings: {commandToExecute: ./hello.sh}}]";
    machine(
        client,
        namespace,
        "md-1-a",
        "cluster.x-k8s.io/deployment-name: md-1",
        "",
        true,
        &format!("{LINUX}, {script}, disableVMBootstrapExtension: false"),
    )
    .await?;
    let failed = capz_harness::wait_for(&machines, "md-1-a", "BootstrapFailed", WAIT, |machine| {
        reason(machine, &ConditionType::BOOTSTRAP_SUCCEEDED).as_deref() == Some("BootstrapFailed")
    })
    .await?;
    let bootstrap = condition(&failed, &ConditionType::BOOTSTRAP_SUCCEEDED).ok_or("no condition")?;
    assert_eq!(
        bootstrap.severity,
        Some(capz_kit::api::common::conditions::ConditionSeverity::Error)
    );
    assert!(
        bootstrap
            .message
            .as_deref()
            .is_some_and(|message| message.contains("CAPZ.Linux.Bootstrapping")),
        "{bootstrap:?}"
    );
    assert!(
        !ready(&failed),
        "a machine whose bootstrap check failed is not Ready"
    );
    let extensions = compute("virtualMachines/md-1-a/extensions");
    let script = azure
        .get::<VirtualMachineExtension>(&format!("{extensions}/CustomScript"))
        .await?
        .and_then(|extension| extension.properties)
        .ok_or("no CustomScript extension")?;
    assert_eq!(script.publisher.as_deref(), Some("Microsoft.Azure.Extensions"));
    assert_eq!(script.extension_type.as_deref(), Some("CustomScript"));
    assert_eq!(
        script
            .settings
            .and_then(|settings| settings.get("fileUris").cloned())
            .as_deref(),
        Some("https://example.com/hello.sh")
    );
    let check = azure
        .get::<VirtualMachineExtension>(&format!("{extensions}/CAPZ.Linux.Bootstrapping"))
        .await?
        .and_then(|extension| extension.properties)
        .ok_or("no bootstrap check")?;
    assert_eq!(
        check.publisher.as_deref(),
        Some("Microsoft.Azure.ContainerUpstream")
    );
    assert_eq!(check.type_handler_version.as_deref(), Some("1.0"));
    // Resyncs every 2 s read the failed check but never write it again.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(azure.count("PUT", "/extensions/CAPZ.Linux.Bootstrapping"), 1);
    assert_eq!(azure.count("PUT", "/extensions/CustomScript"), 1);

    Ok(())
}

/// A Windows machine whose name Windows cannot take as a computer name, with its bootstrap check.
async fn windows_machine(client: &Client, namespace: &str, azure: &EmulatedAzure) -> TestResult {
    let machines = Api::<AzureMachine>::namespaced(client.clone(), namespace);
    machine(
        client,
        namespace,
        "md-win-0123456789",
        "cluster.x-k8s.io/deployment-name: md-win",
        "",
        true,
        "vmSize: Standard_D2s_v3, osDisk: {osType: Windows, diskSizeGB: 128}, disableVMBootstrapExtension: false",
    )
    .await?;
    let windows = capz_harness::wait_for(&machines, "md-win-0123456789", "Ready", WAIT, ready).await?;
    assert_eq!(
        windows
            .spec
            .provider_id
            .as_deref()
            .and_then(|id| id.rsplit('/').next()),
        Some("md-win-01-56789")
    );
    assert_eq!(
        condition(&windows, &ConditionType::BOOTSTRAP_SUCCEEDED).map(|c| c.status),
        Some(ConditionStatus::True)
    );
    let check = azure
        .get::<VirtualMachineExtension>(&compute(
            "virtualMachines/md-win-01-56789/extensions/CAPZ.Windows.Bootstrapping",
        ))
        .await?
        .and_then(|extension| extension.properties)
        .ok_or("no Windows bootstrap check")?;
    assert_eq!(
        check.extension_type.as_deref(),
        Some("CAPZ.Windows.Bootstrapping")
    );
    let vm = azure
        .get::<VirtualMachine>(&compute("virtualMachines/md-win-01-56789"))
        .await?
        .ok_or("no Windows VM")?;
    let properties = vm.properties.ok_or("no properties")?;
    let os = properties.os_profile.ok_or("no OS profile")?;
    assert_eq!(os.computer_name.as_deref(), Some("md-win-01-56789"));
    assert!(os.windows_configuration.is_some() && os.linux_configuration.is_none());
    let image = properties
        .storage_profile
        .and_then(|storage| storage.image_reference)
        .and_then(|image| image.community_gallery_image_id)
        .ok_or("no image")?;
    assert!(
        image.ends_with("/Images/capi-win-2019-containerd/Versions/1.33.1"),
        "{image}"
    );
    assert!(
        azure
            .get::<NetworkInterface>(&network("networkInterfaces/md-win-01-56789-nic"))
            .await?
            .is_some()
    );
    Ok(())
}
