//! The privatedns controller in-process against a real API server and the ARM emulator: it waits
//! for the network controller's conditions (applied here by the test under a field manager of its
//! own), builds the zone, its links and the API server's record as CAPZ names them, writes nothing
//! on a resync, uses a zone the user brought without changing it, links peered networks in other
//! groups, and deletes what it created, in order.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use capz_harness::{EmulatedAzure, InProcessController, TestResult};
use capz_kit::api::AzureCluster;
use capz_kit::api::common::conditions::{ConditionStatus, ConditionType};
use capz_kit::api::controllers::Family;
use capz_kit::apply::FieldManager;
use capz_kit::azure::models::ArmModel as _;
use capz_kit::azure::models::private_dns::PrivateZone;
use capz_kit::kube::api::{Patch, PatchParams};
use capz_kit::kube::{Api, ResourceExt as _};
use serde_json::{Value, json};

/// The network controller, as the test plays it.
const NETWORK: FieldManager = FieldManager::new("capz-test-network");
const WAIT: Duration = Duration::from_mins(1);
const OWNED_TAG: &str = "sigs.k8s.io_cluster-api-provider-azure_cluster_";
const CONDITIONS: [ConditionType; 3] = [
    ConditionType::PRIVATE_DNS_ZONE_READY,
    ConditionType::PRIVATE_DNS_LINK_READY,
    ConditionType::PRIVATE_DNS_RECORD_READY,
];

fn group_id(group: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{group}")
}

fn network_id(group: &str, name: &str) -> String {
    format!(
        "{}/providers/Microsoft.Network/virtualNetworks/{name}",
        group_id(group)
    )
}

fn zone_id(group: &str, zone: &str) -> String {
    format!(
        "{}/providers/Microsoft.Network/privateDnsZones/{zone}",
        group_id(group)
    )
}

fn seed(id: String, body: Value) -> SeedResource {
    SeedResource { id, body }
}

/// A group with a network of `prefix` in it, as the network controller (or a user) leaves them.
fn group_with_network(group: &str, network: &str, prefix: &str) -> Vec<SeedResource> {
    vec![
        seed(group_id(group), json!({"location": "westeurope"})),
        seed(
            network_id(group, network),
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [prefix]}}}),
        ),
    ]
}

async fn start_azure(seeds: Vec<SeedResource>) -> TestResult<EmulatedAzure> {
    let config = Config {
        resources: seeds,
        ..Config::default()
    };
    Ok(EmulatedAzure::start(config).await?)
}

async fn get(azure: &EmulatedAzure, id: &str) -> TestResult<Option<Value>> {
    Ok(azure.get_at(id, &PrivateZone::API_VERSION).await?)
}

fn controller(
    plane: &capz_harness::Plane,
    namespace: &str,
    azure: &EmulatedAzure,
) -> TestResult<InProcessController> {
    let settings = azure.default_principal_settings()?;
    let flags = [
        "--health-probe-bind-address=0".to_owned(),
        "--metrics-bind-address=0".to_owned(),
        "--sync-period=1s".to_owned(),
    ];
    Ok(InProcessController::start(
        capz_privatedns::ID,
        plane,
        namespace,
        flags,
        move |ctx| capz_privatedns::run(ctx, settings),
    )?)
}

/// Reports what the zone and links wait for as the network controller would.
async fn network_ready(api: &Api<AzureCluster>, name: &str) -> TestResult {
    let ready = [ConditionType::RESOURCE_GROUP_READY, ConditionType::VNET_READY];
    Ok(capz_harness::report_conditions(api, name, &NETWORK, &ready).await?)
}

fn condition(object: &AzureCluster, type_: &ConditionType) -> Option<(ConditionStatus, Option<String>)> {
    capz_harness::cluster_condition(object, type_)
}

fn all_true(object: &AzureCluster) -> bool {
    CONDITIONS
        .iter()
        .all(|type_| condition(object, type_).is_some_and(|(status, _)| status == ConditionStatus::True))
}

#[tokio::test]
async fn a_private_cluster_gets_its_zone_link_and_record_and_loses_them_in_order() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "dns1";
        let azure = start_azure(group_with_network(name, "dns1-vnet", "10.0.0.0/8")).await?;
        let controller = controller(plane, &namespace, &azure)?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        let network = json!({"apiServerLB": {"type": "Internal"}});
        capz_harness::create_azure_cluster(
            &client,
            &namespace,
            name,
            DEFAULT_SUBSCRIPTION,
            &json!({"networkSpec": network}),
        )
        .await?;

        // Before the network is there: each condition says what it waits for, and no ARM call.
        let waiting = |object: &AzureCluster| {
            CONDITIONS.iter().all(|type_| {
                condition(object, type_)
                    .is_some_and(|(_, reason)| reason.as_deref() == Some("WaitingForDependency"))
            })
        };
        capz_harness::wait_for(&api, name, "private DNS waiting for the network", WAIT, waiting).await?;
        assert_eq!(azure.arm_calls(), Vec::<String>::new());

        network_ready(&api, name).await?;
        let object = capz_harness::wait_for(&api, name, "private DNS ready", WAIT, all_true).await?;

        let zone_id = zone_id(name, "dns1.capz.io");
        let zone = get(&azure, &zone_id).await?.ok_or("no zone")?;
        assert_eq!(zone["location"], "global");
        assert_eq!(zone["tags"][format!("{OWNED_TAG}dns1")], "owned");
        let link = get(&azure, &format!("{zone_id}/virtualNetworkLinks/dns1-vnet-link"))
            .await?
            .ok_or("no link")?;
        assert_eq!(
            link["properties"]["virtualNetwork"]["id"]
                .as_str()
                .map(str::to_ascii_lowercase),
            Some(network_id(name, "dns1-vnet").to_ascii_lowercase())
        );
        assert_eq!(link["properties"]["registrationEnabled"], false);
        let record = get(&azure, &format!("{zone_id}/A/apiserver"))
            .await?
            .ok_or("no record")?;
        assert_eq!(
            record["properties"]["aRecords"],
            json!([{"ipv4Address": "10.0.0.100"}])
        );
        assert_eq!(record["properties"]["ttl"], 300);

        // Resyncs (every second) read and write nothing new.
        azure.resyncs_write_nothing(6, WAIT).await?;
        assert_eq!(
            api.get(name).await?.status,
            object.status,
            "a resync changed the status"
        );

        capz_harness::delete_and_wait(&api, name, WAIT).await?;
        assert!(get(&azure, &zone_id).await?.is_none(), "the zone is deleted");
        assert!(
            azure.deleted_in_order(&[
                "/A/apiserver",
                "/virtualNetworkLinks/dns1-vnet-link",
                "/dns1.capz.io"
            ]),
            "record, then link, then zone: {:?}",
            azure.arm_calls()
        );
        Ok(controller.stop().await?)
    })
    .await
}

#[tokio::test]
async fn a_brought_zone_is_used_as_it_is_and_peered_networks_are_linked_too() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "dns2";
        let brought = zone_id("dns", "kubernetes.example.com");
        let mut seeds = group_with_network(name, "dns2-vnet", "10.1.0.0/16");
        seeds.extend(group_with_network("shared", "hub", "10.2.0.0/16"));
        seeds.push(seed(group_id("dns"), json!({"location": "westeurope"})));
        seeds.push(seed(
            brought.clone(),
            json!({"location": "global", "tags": {"team": "dns"}}),
        ));
        let azure = start_azure(seeds).await?;
        let controller = controller(plane, &namespace, &azure)?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        let network = json!({
            "apiServerLB": {"type": "Internal", "frontendIPs": [{"name": "internal", "privateIP": "10.1.0.50"}]},
            "privateDNSZoneName": "kubernetes.example.com",
            "privateDNSZoneResourceGroup": "dns",
            "vnet": {"name": "dns2-vnet", "cidrBlocks": ["10.1.0.0/16"], "peerings": [{"remoteVnetName": "hub", "resourceGroup": "shared"}]},
        });
        capz_harness::create_azure_cluster(&client, &namespace, name, DEFAULT_SUBSCRIPTION, &json!({"networkSpec": network})).await?;
        network_ready(&api, name).await?;
        capz_harness::wait_for(&api, name, "private DNS ready", WAIT, all_true).await?;

        let writes = azure.writes();
        assert!(
            !writes.iter().any(|write| write.ends_with("privateDnsZones/kubernetes.example.com")),
            "the brought zone was written: {writes:?}"
        );
        // A resync reads the user's zone once, as it reads the links it owns.
        let zone_reads = || azure.count("GET", "privateDnsZones/kubernetes.example.com");
        let link_reads = || azure.count("GET", "virtualNetworkLinks/dns2-vnet-link");
        let (zone_before, link_before) = (zone_reads(), link_reads());
        azure.resyncs_write_nothing(16, WAIT).await?;
        let (zone_read, link_read) = (zone_reads() - zone_before, link_reads() - link_before);
        assert!(
            link_read >= 3 && zone_read <= link_read + 1,
            "over the resyncs the zone was read {zone_read} times, the cluster's link {link_read}"
        );
        let zone = get(&azure, &brought).await?.ok_or("no zone")?;
        assert_eq!(zone["tags"], json!({"team": "dns"}));
        for network in ["dns2-vnet", "hub"] {
            let link = get(&azure, &format!("{brought}/virtualNetworkLinks/{network}-link"))
                .await?
                .ok_or(format!("no link to {network}"))?;
            assert_eq!(link["tags"][format!("{OWNED_TAG}dns2")], "owned");
        }
        let record = get(&azure, &format!("{brought}/A/apiserver"))
            .await?
            .ok_or("no record")?;
        assert_eq!(record["properties"]["aRecords"], json!([{"ipv4Address": "10.1.0.50"}]));

        capz_harness::delete_and_wait(&api, name, WAIT).await?;
        let zone = get(&azure, &brought).await?.ok_or("the brought zone was deleted")?;
        assert_eq!(zone["tags"], json!({"team": "dns"}));
        for gone in ["virtualNetworkLinks/dns2-vnet-link", "virtualNetworkLinks/hub-link", "A/apiserver"] {
            assert!(get(&azure, &format!("{brought}/{gone}")).await?.is_none(), "{gone} is left");
        }
        Ok(controller.stop().await?)
    })
    .await
}

#[tokio::test]
async fn a_public_cluster_has_no_private_dns() -> TestResult {
    capz_harness::in_namespace(&[Family::Network], async |plane, client, namespace| {
        let name = "dns3";
        let azure = start_azure(group_with_network(name, "dns3-vnet", "10.0.0.0/8")).await?;
        let controller = controller(plane, &namespace, &azure)?;
        let api = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        capz_harness::create_azure_cluster(&client, &namespace, name, DEFAULT_SUBSCRIPTION, &json!({}))
            .await?;
        network_ready(&api, name).await?;
        // Three sync periods: the controller has seen the cluster several times, and did nothing,
        // not even add its finalizer.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let finalizer = Family::PrivateDns.finalizer();
        let held = |object: &AzureCluster| object.finalizers().iter().any(|found| found == finalizer);
        let object = api.get(name).await?;
        assert!(!held(&object), "the finalizer on a public cluster");
        for type_ in &CONDITIONS {
            assert_eq!(condition(&object, type_), None, "{type_:?} on a public cluster");
        }
        assert_eq!(azure.arm_calls(), Vec::<String>::new());
        // Once the spec asks for a private zone, the finalizer comes before anything is built.
        let private = json!({"spec": {"networkSpec": {"apiServerLB": {"type": "Internal"}}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&private))
            .await?;
        capz_harness::wait_for(&api, name, "the privatedns finalizer", WAIT, held).await?;
        capz_harness::delete_and_wait(&api, name, WAIT).await?;
        Ok(controller.stop().await?)
    })
    .await
}
