//! The bastion controller in-process against a real API server and the ARM emulator: it waits for
//! the network controller's conditions (applied here by the test under a field manager of its
//! own), builds the host's public IP and then the host as CAPZ names them, writes nothing on a
//! resync, and deletes the host before its address.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use capz_harness::{EmulatedAzure, InProcessController, TestResult};
use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{ConditionStatus, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::apply::FieldManager;
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::network::BastionHost;
use capz_kit::kube::Api;
use serde_json::{Value, json};

/// The network controller, as the test plays it.
const NETWORK: FieldManager = FieldManager::new("capz-test-network");
const WAIT: Duration = Duration::from_mins(1);
const OWNED_TAG: &str = "sigs.k8s.io_cluster-api-provider-azure_cluster_";

fn network_id(group: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{group}/providers/Microsoft.Network")
}

/// The group, network and subnets the network controller leaves for a cluster `name` with a
/// bastion.
fn network_of(name: &str) -> Vec<SeedResource> {
    let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{name}");
    let subnet =
        |subnet: &str, prefix: &str| json!({"name": subnet, "properties": {"addressPrefix": prefix}});
    vec![
        SeedResource {
            id: group,
            body: json!({"location": "westeurope"}),
        },
        SeedResource {
            id: format!("{}/virtualNetworks/{name}-vnet", network_id(name)),
            body: json!({"location": "westeurope", "properties": {
                "addressSpace": {"addressPrefixes": ["10.0.0.0/8"]},
                "subnets": [
                    subnet("node-subnet", "10.1.0.0/16"),
                    subnet("AzureBastionSubnet", "10.255.255.224/27"),
                ],
            }}),
        },
    ]
}

fn condition(object: &AzureCluster) -> Option<(ConditionStatus, Option<String>)> {
    capz_harness::cluster_condition(object, &ConditionType::BASTION_HOST_READY)
}

async fn get(azure: &EmulatedAzure, id: &str) -> TestResult<Option<Value>> {
    Ok(azure.get_at(id, &BastionHost::API_VERSION).await?)
}

/// Checks the host and address of cluster `name` as CAPZ names and builds them, the address
/// written first; gives their ids.
async fn built_as_capz_names_them(azure: &EmulatedAzure, name: &str) -> TestResult<(String, String)> {
    let network = network_id(name);
    let address_id = format!("{network}/publicIPAddresses/{name}-azure-bastion-pip");
    let address = get(azure, &address_id).await?.ok_or("no public IP")?;
    assert_eq!(address["sku"]["name"], "Standard");
    assert_eq!(address["properties"]["publicIPAllocationMethod"], "Static");
    assert_eq!(address["tags"][format!("{OWNED_TAG}{name}")], "owned");
    let host_id = format!("{network}/bastionHosts/{name}-azure-bastion");
    let host = get(azure, &host_id).await?.ok_or("no bastion host")?;
    assert_eq!(host["sku"]["name"], "Basic");
    assert_eq!(
        host["tags"]["sigs.k8s.io_cluster-api-provider-azure_role"],
        "bastion"
    );
    let configuration = &host["properties"]["ipConfigurations"][0];
    assert_eq!(configuration["name"], format!("{name}-azure-bastion-bastionIP"));
    let lower = |value: &Value| value.as_str().map(str::to_ascii_lowercase);
    assert_eq!(
        lower(&configuration["properties"]["subnet"]["id"]),
        Some(
            format!("{network}/virtualNetworks/{name}-vnet/subnets/AzureBastionSubnet").to_ascii_lowercase()
        )
    );
    assert_eq!(
        lower(&configuration["properties"]["publicIPAddress"]["id"]),
        Some(address_id.to_ascii_lowercase())
    );
    let writes = azure.writes();
    let position = |what: String| writes.iter().position(|write| write.ends_with(&what));
    let (address_written, host_written) = (
        position(format!("/{name}-azure-bastion-pip")),
        position(format!("/{name}-azure-bastion")),
    );
    assert!(
        address_written.is_some() && address_written < host_written,
        "the address before the host: {writes:?}"
    );
    Ok((host_id, address_id))
}

#[tokio::test]
async fn a_cluster_gets_its_bastion_and_address_and_loses_the_host_first() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "jump1";
        let azure = EmulatedAzure::start(Config {
            resources: network_of(name),
            ..Config::default()
        })
        .await?;
        let settings = azure.default_principal_settings()?;
        let controller = InProcessController::start(
            capz_bastion::ID,
            plane,
            &namespace,
            [
                "--health-probe-bind-address=0",
                "--metrics-bind-address=0",
                "--sync-period=1s",
            ]
            .map(str::to_owned),
            move |ctx| capz_bastion::run(ctx, settings),
        )?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        let spec = json!({"bastionSpec": {"azureBastion": {}}});
        capz_harness::create_azure_cluster(&client, &namespace, name, DEFAULT_SUBSCRIPTION, &spec).await?;

        // Before the network is there: the condition says what it waits for, and no ARM call.
        capz_harness::wait_for(
            &api,
            name,
            "the bastion waiting for the network",
            WAIT,
            |object| {
                condition(object).is_some_and(|(_, reason)| reason.as_deref() == Some("WaitingForDependency"))
            },
        )
        .await?;
        assert_eq!(azure.arm_calls(), Vec::<String>::new());

        let ready = [
            ConditionType::RESOURCE_GROUP_READY,
            ConditionType::VNET_READY,
            ConditionType::SUBNETS_READY,
        ];
        capz_harness::report_conditions(&api, name, &NETWORK, &ready).await?;
        let object = capz_harness::wait_for(&api, name, "BastionHostReady", WAIT, |object| {
            condition(object).is_some_and(|(status, _)| status == ConditionStatus::True)
        })
        .await?;

        let (host_id, address_id) = built_as_capz_names_them(&azure, name).await?;

        // Resyncs (every second) read and write nothing new.
        azure.resyncs_write_nothing(4, WAIT).await?;
        assert_eq!(
            api.get(name).await?.status,
            object.status,
            "a resync changed the status"
        );

        capz_harness::delete_and_wait(&api, name, WAIT).await?;
        assert!(get(&azure, &host_id).await?.is_none(), "the host is deleted");
        assert!(
            get(&azure, &address_id).await?.is_none(),
            "the address is deleted"
        );
        assert!(
            azure.deleted_in_order(&["/jump1-azure-bastion", "/jump1-azure-bastion-pip"]),
            "the host, then its address: {:?}",
            azure.arm_calls()
        );
        Ok(controller.stop().await?)
    })
    .await
}
