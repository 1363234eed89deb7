//! A cluster of the `private` flavor, reached as a management cluster running in Azure reaches
//! one: the plane's clients sit in the emulated network [`MANAGEMENT`] (the emulator's
//! `managementNetwork`), which the cluster peers with, and its API server's name lives in a
//! private DNS zone the user brought, in a group of the user's.

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use kube::api::{Patch, PatchParams};

use super::*;

const NAME: &str = "private";
/// The group holding the management network, and the network's name and range (which the
/// flavor's 10.0.0.0/8 does not overlap).
const MANAGEMENT: &str = "management";
const MANAGEMENT_RANGE: &str = "192.168.0.0/24";
/// The group of the user's zone, which carries the name the cluster would give its own.
const DNS_GROUP: &str = "dns";
const ZONE: &str = "private.capz.io";
const PAUSED: &str = "cluster.x-k8s.io/paused";
const DNS_API: &str = "api-version=2024-06-01";

fn group(name: &str) -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{name}")
}

fn management_network() -> String {
    format!(
        "{}/providers/Microsoft.Network/virtualNetworks/{MANAGEMENT}",
        group(MANAGEMENT)
    )
}

fn zone() -> String {
    format!(
        "{}/providers/Microsoft.Network/privateDnsZones/{ZONE}",
        group(DNS_GROUP)
    )
}

/// `config` with the management network and the user's zone seeded, and the proxy's clients in
/// that network.
pub(crate) fn in_a_management_network(config: Config) -> Config {
    let mut resources = config.resources;
    resources.extend([
        SeedResource {
            id: group(MANAGEMENT),
            body: json!({"location": "westeurope"}),
        },
        SeedResource {
            id: management_network(),
            body: json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [MANAGEMENT_RANGE]}}}),
        },
        SeedResource {
            id: group(DNS_GROUP),
            body: json!({"location": "westeurope"}),
        },
        SeedResource {
            id: zone(),
            body: json!({"location": "global"}),
        },
    ]);
    Config {
        resources,
        management_network: Some(management_network()),
        ..config
    }
}

/// The cluster peers with the management network and names the user's zone.
fn peered_with_the_zone(objects: &mut [DynamicObject]) -> TestResult {
    let network = &mut capz_e2e::document(objects, "AzureCluster")?.data["spec"]["networkSpec"];
    network["vnet"]["peerings"] = json!([{"remoteVnetName": MANAGEMENT, "resourceGroup": MANAGEMENT}]);
    network["privateDNSZoneName"] = json!(ZONE);
    network["privateDNSZoneResourceGroup"] = json!(DNS_GROUP);
    Ok(())
}

fn remote_connection(cluster: &DynamicObject) -> Option<String> {
    condition(cluster, "RemoteConnectionProbe").map(|(status, _)| status)
}

async fn cluster_until(
    environment: &Environment,
    namespace: &str,
    what: &str,
    timeout: Duration,
    holds: impl Fn(&DynamicObject) -> bool,
) -> TestResult {
    let clusters = environment.cluster_api("Cluster", namespace).await?;
    wait_list(&clusters, "", what, timeout, |all| all.iter().any(&holds)).await?;
    Ok(())
}

/// The `private` flavor, peered with the management network and with its API server's record in
/// the user's zone: the AzureCluster's endpoint is `apiserver.<zone>`, behind the internal load
/// balancer, and the Cluster becomes Available through the peering and the zone's link to the
/// management network. With the AzureCluster paused, that link deleted out of band makes Cluster
/// API's remote connection probe go False; unpaused, capz-rs links the zone again and the probe
/// comes back True. Deleting the cluster leaves nothing of capz-rs's in Azure: the peering back
/// and the links go, the management network and the user's zone stay as they were.
pub(crate) async fn a_private_cluster_through_its_peering(
    environment: &Environment,
    namespace: &str,
) -> TestResult {
    let applied_at = environment
        .create_cluster_of(
            Some("private"),
            NAME,
            namespace,
            (1, 1),
            true,
            peered_with_the_zone,
        )
        .await?;
    environment
        .available(NAME, namespace, CONVERGE, applied_at)
        .await?;
    let azure_clusters = environment.infrastructure("AzureCluster", namespace).await?;
    let azure_cluster = azure_clusters.get(NAME).await?;
    let endpoint = &azure_cluster.data["spec"]["controlPlaneEndpoint"];
    assert_eq!(endpoint["host"], format!("apiserver.{ZONE}"), "{endpoint}");
    let record = environment
        .azure_resource(&format!("{}/A/apiserver", zone()))
        .ok_or("no apiserver record in the user's zone")?;
    let internal = environment
        .azure_resource(&format!(
            "{}/providers/Microsoft.Network/loadBalancers/{NAME}-internal-lb",
            group(NAME)
        ))
        .ok_or("no internal load balancer")?;
    assert_eq!(
        record["properties"]["aRecords"][0]["ipv4Address"],
        internal["properties"]["frontendIPConfigurations"][0]["properties"]["privateIPAddress"],
        "the record names the internal frontend"
    );
    assert_eq!(
        environment
            .created_of_type("microsoft.network/loadbalancers")
            .iter()
            .filter(|id| id.contains(&format!("/resourcegroups/{NAME}/")))
            .count(),
        3,
        "the internal API server, control-plane outbound and node outbound load balancers"
    );
    let link = format!("{}/virtualNetworkLinks/{MANAGEMENT}-link", zone());
    assert!(
        environment.azure_resource(&link).is_some(),
        "no link to the management network"
    );
    the_probe_follows_the_link(environment, namespace, &link).await?;
    let seeded_zone = environment
        .azure_resource(&zone())
        .ok_or("the user's zone is gone")?;
    environment
        .delete_cluster_without_leftovers(NAME, namespace, CONVERGE)
        .await?;
    let in_dns_group: Vec<String> = environment
        .created_in_azure()
        .into_iter()
        .filter(|id| id.contains(&format!("/resourcegroups/{DNS_GROUP}/")))
        .collect();
    assert!(
        in_dns_group.is_empty(),
        "left in the user's zone: {in_dns_group:?}"
    );
    let zone_after = environment
        .azure_resource(&zone())
        .ok_or("the user's zone was deleted")?;
    assert_eq!(
        zone_after["tags"], seeded_zone["tags"],
        "the user's zone was retagged"
    );
    let management = environment
        .azure_resource(&management_network())
        .ok_or("the management network was deleted")?;
    let peerings = management["properties"]["virtualNetworkPeerings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(peerings, Vec::<Value>::new(), "the peering back is left");
    Ok(())
}

/// With the AzureCluster paused, the zone's `link` to the management network deleted out of band
/// makes the remote connection probe go False; unpaused, capz-rs makes the link again and the
/// probe and Available come back True.
async fn the_probe_follows_the_link(environment: &Environment, namespace: &str, link: &str) -> TestResult {
    let azure_clusters = environment.infrastructure("AzureCluster", namespace).await?;
    azure_clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {PAUSED: "true"}}})),
        )
        .await?;
    let unlinked_at = Instant::now();
    let status = environment.arm("DELETE", &format!("{link}?{DNS_API}")).await?;
    assert!(matches!(status, 200 | 202), "deleting the link answered {status}");
    cluster_until(
        environment,
        namespace,
        "RemoteConnectionProbe False without the zone's link",
        Duration::from_mins(3),
        |cluster| remote_connection(cluster).as_deref() == Some("False"),
    )
    .await?;
    eprintln!(
        "e2e: RemoteConnectionProbe False {:.1} s after the zone's link was deleted",
        unlinked_at.elapsed().as_secs_f64()
    );
    let unpaused_at = Instant::now();
    azure_clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {PAUSED: null}}})),
        )
        .await?;
    cluster_until(
        environment,
        namespace,
        "RemoteConnectionProbe and Available True once the link is back",
        Duration::from_mins(3),
        |cluster| remote_connection(cluster).as_deref() == Some("True") && is_true(cluster, "Available"),
    )
    .await?;
    eprintln!(
        "e2e: RemoteConnectionProbe and Available True {:.1} s after the unpause",
        unpaused_at.elapsed().as_secs_f64()
    );
    assert!(
        environment.azure_resource(link).is_some(),
        "the link was not made again"
    );
    Ok(())
}
