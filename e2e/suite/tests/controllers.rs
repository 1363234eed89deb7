//! Each controller with only the controllers it needs installed: clusterctl installs the base, the
//! CRDs and those controllers' overlays from `deploy/` (the selection `e2e/suite/controllers.txt`
//! lists, which `just ci-controller NAME` builds the images of), and a cluster of the default
//! flavor goes as far as they take it. What a missing peer would do is not done, and where an
//! object waits for it, it says which controller to install.

use std::time::{Duration, Instant};

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_SUBSCRIPTION, SeedResource};
use capz_e2e::{Environment, KUBERNETES_VERSION, TestResult, condition, condition_message, wait_list};
use kube::Api;
use kube::api::DynamicObject;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_mins(2);
const CLUSTER: &str = "alone";

/// The controllers clusterctl installs for the case of `controller`, from `controllers.txt`.
fn needs(controller: &str) -> TestResult<Vec<&'static str>> {
    include_str!("../controllers.txt")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(controller)).then(|| words.collect())
        })
        .ok_or_else(|| format!("controllers.txt has no line for {controller}").into())
}

/// An environment with only the controllers `controller`'s case needs, and a default-flavor
/// cluster with one control-plane machine and no workers applied in a namespace of its own; runs
/// `check` with it and the namespace.
async fn with_only_what(
    controller: &str,
    check: impl AsyncFnOnce(&mut Environment, &str) -> TestResult,
) -> TestResult {
    with_only_what_for(controller, (None, 0), check).await
}

/// [`with_only_what`] with a cluster of `flavor` (`None`: the default) and `workers` workers.
async fn with_only_what_for(
    controller: &str,
    (flavor, workers): (Option<&str>, u32),
    check: impl AsyncFnOnce(&mut Environment, &str) -> TestResult,
) -> TestResult {
    with_only_what_edited(controller, (flavor, workers), |manifest| manifest, check).await
}

/// [`with_only_what_for`], with the generated manifest changed by `edit` before it is applied.
async fn with_only_what_edited(
    controller: &str,
    (flavor, workers): (Option<&str>, u32),
    edit: impl Fn(String) -> String,
    check: impl AsyncFnOnce(&mut Environment, &str) -> TestResult,
) -> TestResult {
    run_case((controller, false), quick(), (flavor, workers), edit, check).await
}

/// An emulator that asks for polls after a second.
fn quick() -> Config {
    Config {
        retry_after_seconds: 1,
        ..Config::default()
    }
}

/// The case of `controller`: an environment with the controllers it needs (all but `controller`
/// itself when `later`, which the check then adds) on an emulator configured by `config`, and a
/// cluster of `flavor` with `workers` workers, its manifest changed by `edit`, applied in a
/// namespace of its own.
async fn run_case(
    (controller, later): (&str, bool),
    config: Config,
    (flavor, workers): (Option<&str>, u32),
    edit: impl Fn(String) -> String,
    check: impl AsyncFnOnce(&mut Environment, &str) -> TestResult,
) -> TestResult {
    let mut installed = needs(controller)?;
    if later {
        installed.retain(|name| *name != controller);
    }
    let mut environment = Environment::start_with_controllers(config, &installed).await?;
    let running = environment.capz.processes();
    assert_eq!(
        running.len(),
        installed.len(),
        "only the controllers needed run: {running:?}"
    );
    let client = environment.client.clone();
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        environment.create_identity_secret(&namespace).await?;
        // A cluster of a ClusterClass comes after the class, from the flavor that holds it:
        // clusterctl looks the class up in the namespace.
        let class = flavor.and_then(class_flavor).map(Some);
        for flavor in class.into_iter().chain([flavor]) {
            let manifest = environment
                .generate_flavor(flavor, CLUSTER, &namespace, workers, &[])
                .await?;
            capz_harness::apply_yaml(&client, &namespace, &edit(manifest)).await?;
        }
        check(&mut environment, &namespace).await
    })
    .await?
}

/// The flavor with the ClusterClass the topology flavor `flavor` makes its clusters of.
fn class_flavor(flavor: &str) -> Option<&'static str> {
    (flavor == "aks-topology").then_some("aks-clusterclass")
}

fn created(environment: &Environment, type_: &str) -> usize {
    environment.created_of_type(type_).len()
}

mod network {
    use super::*;

    const STORAGE_API: &str = "api-version=2023-05-01";

    fn storage_account() -> String {
        format!(
            "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/data/providers/Microsoft.Storage/storageAccounts/clusterlogs"
        )
    }

    /// The emulator, with a storage account of the user's in a group of its own.
    fn with_storage_account() -> Config {
        Config {
            resources: vec![
                SeedResource {
                    id: format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/data"),
                    body: json!({"location": "westeurope"}),
                },
                SeedResource {
                    id: storage_account(),
                    body: json!({"location": "westeurope", "kind": "StorageV2", "sku": {"name": "Standard_LRS"}}),
                },
            ],
            ..quick()
        }
    }

    /// The default flavor with a private endpoint on its node subnet to the storage account's blobs.
    fn with_private_endpoint(manifest: &str) -> String {
        let endpoint = format!(
            "      role: node\n      privateEndpoints:\n      - name: logs-pe\n        privateLinkServiceConnections:\n        \
             - name: logs-blob\n          privateLinkServiceID: {}\n          groupIDs:\n          - blob\n",
            storage_account()
        );
        manifest.replacen("      role: node\n", &endpoint, 1)
    }

    /// The private endpoints the storage account lists, as ARM answers for it.
    async fn connections_of_the_account(environment: &Environment) -> TestResult<Vec<Value>> {
        let (status, account) = environment
            .arm_json("GET", &format!("{}?{STORAGE_API}", storage_account()), None)
            .await?;
        assert_eq!(status, 200, "{account}");
        Ok(account["properties"]["privateEndpointConnections"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// The network alone builds the resource group, virtual network, subnets and security groups,
    /// and a private endpoint on the node subnet to a storage account, which the account lists;
    /// no load balancer or machine is built, and the cluster's `Ready` says the load-balancer
    /// controller does not run. Deleting the cluster deletes the endpoint, and the account lists
    /// none.
    #[tokio::test]
    async fn builds_the_network_and_names_the_missing_loadbalancer() -> TestResult {
        run_case(
            ("network", false),
            with_storage_account(),
            (None, 0),
            |manifest| with_private_endpoint(&manifest),
            async |environment, namespace| {
                let clusters = environment.infrastructure("AzureCluster", namespace).await?;
                let waiting = wait_list(
                    &clusters,
                    "",
                    "SubnetsReady and PrivateEndpointsReady, and Ready naming loadbalancer",
                    TIMEOUT,
                    |all| {
                        all.iter().any(|cluster| {
                            ["SubnetsReady", "PrivateEndpointsReady"].iter().all(|type_| {
                                condition(cluster, type_).is_some_and(|(status, _)| status == "True")
                            }) && condition_message(cluster, "Ready")
                                .is_some_and(|message| message.contains("loadbalancer"))
                        })
                    },
                )
                .await?;
                assert_eq!(
                    condition(&waiting[0], "Ready")
                        .map(|(_, reason)| reason)
                        .as_deref(),
                    Some("ControllerNotRunning")
                );
                assert_eq!(created(environment, "microsoft.network/virtualnetworks"), 1);
                assert!(created(environment, "microsoft.network/networksecuritygroups") >= 1);
                assert_eq!(created(environment, "microsoft.network/loadbalancers"), 0);
                assert_eq!(created(environment, "microsoft.compute/virtualmachines"), 0);
                let endpoints = environment.created_of_type("microsoft.network/privateendpoints");
                assert_eq!(endpoints.len(), 1, "{endpoints:?}");
                let listed = connections_of_the_account(environment).await?;
                assert_eq!(listed.len(), 1, "{listed:?}");
                assert_eq!(
                    listed[0]["properties"]["privateEndpoint"]["id"]
                        .as_str()
                        .map(str::to_ascii_lowercase)
                        .as_ref(),
                    Some(&endpoints[0])
                );
                assert_eq!(
                    listed[0]["properties"]["privateLinkServiceConnectionState"]["status"],
                    "Approved"
                );
                environment
                    .delete_cluster_without_leftovers(CLUSTER, namespace, TIMEOUT)
                    .await?;
                assert_eq!(
                    connections_of_the_account(environment).await?,
                    Vec::<Value>::new()
                );
                Ok(())
            },
        )
        .await
    }
}

mod loadbalancer {
    use super::*;

    /// With the network, the load balancers give the AzureCluster its endpoint and it is Ready;
    /// no machine is built without compute.
    #[tokio::test]
    async fn with_the_network_makes_the_cluster_ready() -> TestResult {
        with_only_what("loadbalancer", async |environment, namespace| {
            environment
                .cluster_ready(namespace, TIMEOUT, Instant::now())
                .await?;
            assert!(created(environment, "microsoft.network/loadbalancers") >= 1);
            assert_eq!(created(environment, "microsoft.compute/virtualmachines"), 0);
            Ok(())
        })
        .await
    }
}

mod privatedns {
    use super::*;

    /// How long the leader-election Lease of a controller lasts (the Deployments' default): a
    /// cluster waiting for a controller that does not run must say so within it.
    const LEASE_DURATION: Duration = Duration::from_secs(15);

    /// The user's network the private cluster is peered with, in a group of its own, and its range,
    /// which the cluster's default 10.0.0.0/8 does not overlap.
    const HUB_GROUP: &str = "hub-rg";
    const HUB: &str = "hub";
    const HUB_RANGE: &str = "192.168.0.0/24";

    fn hub_id() -> String {
        format!(
            "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{HUB_GROUP}/providers/Microsoft.Network/virtualNetworks/{HUB}"
        )
    }

    /// The emulator, with the hub network seeded.
    fn with_hub() -> Config {
        let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{HUB_GROUP}");
        Config {
            resources: vec![
                SeedResource {
                    id: group,
                    body: json!({"location": "westeurope"}),
                },
                SeedResource {
                    id: hub_id(),
                    body: json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": [HUB_RANGE]}}}),
                },
            ],
            ..quick()
        }
    }

    /// The default flavor made private and peered with the hub.
    fn private_and_peered(manifest: &str) -> String {
        manifest
            .replacen(
                "  networkSpec:\n",
                "  networkSpec:\n    apiServerLB:\n      type: Internal\n",
                1,
            )
            .replacen(
                "    vnet:\n",
                &format!("    vnet:\n      peerings:\n      - remoteVnetName: {HUB}\n        resourceGroup: {HUB_GROUP}\n"),
                1,
            )
    }

    /// The hub's peerings, as the emulator stores them.
    fn hub_peerings(environment: &Environment) -> TestResult<Vec<Value>> {
        let hub = environment
            .azure_resource(&hub_id())
            .ok_or("the hub network is gone")?;
        Ok(hub["properties"]["virtualNetworkPeerings"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// The first half of the private case: `ControllerNotRunning` within one lease period, and the
    /// peerings both ways meanwhile.
    async fn peered_while_waiting_for_privatedns(
        environment: &Environment,
        clusters: &Api<DynamicObject>,
    ) -> TestResult {
        let waiting = wait_list(
            clusters,
            "",
            "Ready naming the privatedns controller",
            TIMEOUT,
            |all| {
                all.iter().any(|cluster| {
                    condition(cluster, "Ready").is_some_and(|(_, reason)| reason == "ControllerNotRunning")
                        && condition_message(cluster, "Ready")
                            .is_some_and(|message| message.contains("deploy/privatedns"))
                })
            },
        )
        .await?;
        // Creation times have whole seconds: one more is allowed.
        let born = waiting[0]
            .metadata
            .creation_timestamp
            .clone()
            .ok_or("no creation time")?;
        let waited = k8s_openapi::jiff::Timestamp::now().duration_since(born.0);
        assert!(
            waited.unsigned_abs() <= LEASE_DURATION + Duration::from_secs(1),
            "ControllerNotRunning came {waited:?} after the AzureCluster was created, later than one \
             lease period"
        );
        let message = condition_message(&waiting[0], "Ready").unwrap_or_default();
        assert!(message.contains("PrivateDNSZoneReady"), "{message}");
        assert_eq!(created(environment, "microsoft.network/privatednszones"), 0);
        wait_list(clusters, "", "VnetPeeringReady True", TIMEOUT, |all| {
            all.iter().any(|cluster| {
                condition(cluster, "VnetPeeringReady").is_some_and(|(status, _)| status == "True")
            })
        })
        .await?;
        let back = hub_peerings(environment)?;
        assert_eq!(back.len(), 1, "{back:?}");
        assert_eq!(back[0]["name"], format!("{HUB}-To-{CLUSTER}-vnet"));
        assert_eq!(back[0]["properties"]["peeringState"], "Connected");
        Ok(())
    }

    /// With the network and the load balancers but without the privatedns controller, a cluster
    /// whose API server is internal, peered with a network of the user's in another group, says in
    /// `Ready`, within one lease period, that the privatedns controller does not run
    /// (`ControllerNotRunning`), instead of waiting in silence; its peerings are there already,
    /// both ways. Once the controller is added as a user adds it, the cluster converges by
    /// itself: the private DNS zone, its links to both networks and the `apiserver` record, and
    /// `Ready`. Deleting the cluster deletes them and both peerings, and leaves the user's network.
    #[tokio::test]
    async fn a_private_peered_cluster_waits_for_the_missing_controller_then_gets_its_zone() -> TestResult {
        run_case(
            ("privatedns", true),
            with_hub(),
            (None, 0),
            |manifest| private_and_peered(&manifest),
            async |environment, namespace| {
                let clusters = environment.infrastructure("AzureCluster", namespace).await?;
                peered_while_waiting_for_privatedns(environment, &clusters).await?;
                environment.add_controller("privatedns").await?;
                let ready = [
                    "PrivateDNSZoneReady",
                    "PrivateDNSLinkReady",
                    "PrivateDNSRecordReady",
                    "Ready",
                ];
                wait_list(
                    &clusters,
                    "",
                    "the private DNS conditions and Ready True",
                    TIMEOUT,
                    |all| {
                        all.iter().any(|cluster| {
                            ready.iter().all(|type_| {
                                condition(cluster, type_).is_some_and(|(status, _)| status == "True")
                            })
                        })
                    },
                )
                .await?;
                let endpoint = environment
                    .infrastructure("AzureCluster", namespace)
                    .await?
                    .get(CLUSTER)
                    .await?;
                assert_eq!(
                    endpoint.data["spec"]["controlPlaneEndpoint"]["host"],
                    format!("apiserver.{CLUSTER}.capz.io")
                );
                assert_eq!(created(environment, "microsoft.network/privatednszones"), 1);
                let links: Vec<String> = environment
                    .created_in_azure()
                    .into_iter()
                    .filter(|id| id.contains("/virtualnetworklinks/"))
                    .collect();
                assert_eq!(
                    links.len(),
                    2,
                    "the links to the cluster's network and the hub: {links:?}"
                );
                assert!(
                    links.iter().any(|id| id.ends_with(&format!("/{HUB}-link"))),
                    "{links:?}"
                );
                let count = |suffix: &str| {
                    environment
                        .created_in_azure()
                        .iter()
                        .filter(|id| id.contains(suffix))
                        .count()
                };
                assert_eq!(count("/a/apiserver"), 1, "the API server's record");
                environment
                    .delete_cluster_without_leftovers(CLUSTER, namespace, TIMEOUT)
                    .await?;
                assert_eq!(
                    hub_peerings(environment)?,
                    Vec::<Value>::new(),
                    "the peering back is left"
                );
                Ok(())
            },
        )
        .await
    }
}

mod bastion {
    use super::*;

    /// With the network, a cluster of the `azure-bastion` flavor gets its bastion host and the
    /// host's public IP in the `AzureBastionSubnet`, and `BastionHostReady`; deleting the cluster
    /// deletes them before the network goes.
    #[tokio::test]
    async fn with_the_network_gives_the_azure_bastion_flavor_its_host() -> TestResult {
        with_only_what_for(
            "bastion",
            (Some("azure-bastion"), 0),
            async |environment, namespace| {
                let clusters = environment.infrastructure("AzureCluster", namespace).await?;
                wait_list(&clusters, "", "BastionHostReady True", TIMEOUT, |all| {
                    all.iter().any(|cluster| {
                        condition(cluster, "BastionHostReady").is_some_and(|(status, _)| status == "True")
                    })
                })
                .await?;
                let hosts = environment.created_of_type("microsoft.network/bastionhosts");
                assert_eq!(hosts.len(), 1, "{hosts:?}");
                assert!(
                    hosts[0].ends_with(&format!("/{CLUSTER}-azure-bastion")),
                    "{hosts:?}"
                );
                let address = format!("/{CLUSTER}-azure-bastion-pip");
                assert_eq!(
                    environment
                        .created_of_type("microsoft.network/publicipaddresses")
                        .iter()
                        .filter(|id| id.ends_with(&address))
                        .count(),
                    1,
                    "the host's public IP"
                );
                environment
                    .delete_cluster_without_leftovers(CLUSTER, namespace, TIMEOUT)
                    .await?;
                Ok(())
            },
        )
        .await
    }
}

mod compute {
    use super::*;

    /// With the network, the load balancers and the identity controller (the flavor's bootstrap
    /// data embeds the `azure.json` it writes, so kubeadm's bootstrap waits for it), the
    /// control-plane machine gets its virtual machine and is Ready.
    #[tokio::test]
    async fn with_its_peers_builds_the_control_plane_machine() -> TestResult {
        with_only_what("compute", async |environment, namespace| {
            environment
                .converged(namespace, 0, TIMEOUT, Instant::now())
                .await?;
            assert_eq!(created(environment, "microsoft.compute/virtualmachines"), 1);
            Ok(())
        })
        .await
    }
}

mod vmss {
    use super::*;

    /// With the controllers of the control plane, a pool of the `machinepool` flavor gets its scale
    /// set with two instances, one AzureMachinePoolMachine each, and is Ready.
    #[tokio::test]
    async fn with_its_peers_builds_the_pool() -> TestResult {
        with_only_what_for(
            "vmss",
            (Some("machinepool"), 2),
            async |environment, namespace| {
                let pools = environment.infrastructure("AzureMachinePool", namespace).await?;
                wait_list(&pools, "", "the pool Ready with two instances", TIMEOUT, |all| {
                    all.iter().any(|pool| {
                        condition(pool, "Ready").is_some_and(|(status, _)| status == "True")
                            && pool.data["spec"]["providerIDList"].as_array().map(Vec::len) == Some(2)
                    })
                })
                .await?;
                let members = environment
                    .infrastructure("AzureMachinePoolMachine", namespace)
                    .await?
                    .list(&kube::api::ListParams::default())
                    .await?;
                assert_eq!(members.items.len(), 2);
                assert_eq!(
                    created(environment, "microsoft.compute/virtualmachinescalesets"),
                    1
                );
                Ok(())
            },
        )
        .await
    }
}

mod aks {
    use std::time::SystemTime;

    use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET};
    use base64::Engine as _;

    use super::*;

    /// With only the aks controller (and the webhooks), the `aks` flavor converges: the managed
    /// cluster is made, Cluster API finds its API server through the kubeconfig Secret and each
    /// pool's instances as Ready Nodes. A pool scales out; a User pool added gets its Nodes and,
    /// its MachinePool deleted, goes from Azure. Admission refuses to delete the only System
    /// pool; deleting the Cluster deletes the managed cluster and its group, leaving nothing,
    /// with no DELETE of a pool (AKS refuses those while the cluster's own delete runs, and takes
    /// the pools with it).
    ///
    /// The cluster signs in with Entra only (no local accounts): the kubeconfig Secret holds a
    /// token for AKS's server application, which the workload API server takes, and it refuses
    /// a request without one.
    ///
    /// The deletion meets credentials Azure refuses: it waits, `Ready` False naming the
    /// identity, and ends at the first retry after they are restored, with nothing left.
    #[tokio::test]
    async fn the_aks_flavor_converges_and_goes_without_pool_deletes() -> TestResult {
        case("aks", entra_only, Change::Pools, Trouble::CredentialsRefused).await
    }

    /// The same through a ClusterClass: the `aks-topology` flavor's Cluster, of the class the
    /// `aks-clusterclass` flavor writes, gets its control plane and pools from Cluster API's
    /// topology controller, and capz-rs takes it from there as for the `aks` flavor. A new
    /// minor version in the topology upgrades the managed cluster first, then each pool.
    ///
    /// Its resource group is deleted in Azure before the cluster is: the deletion ends at once,
    /// with reads only.
    #[tokio::test]
    async fn the_aks_topology_flavor_converges_through_its_cluster_class() -> TestResult {
        case("aks-topology", supported, Change::Upgrade, Trouble::GroupGone).await
    }

    /// A person gives up on a deletion Azure refuses: with the abandon annotation the objects go
    /// without any DELETE, and a Warning event names every Azure resource left, which are then
    /// the user's to remove.
    #[tokio::test]
    async fn an_abandoned_aks_deletion_names_what_it_leaves() -> TestResult {
        case("aks", supported, Change::None, Trouble::Abandoned).await
    }

    /// A cluster of `flavor` with two Nodes a pool, its manifest changed by `edit`, with only the
    /// aks controller and the webhooks: it converges, takes `change`, and goes through
    /// `trouble`.
    async fn case(
        flavor: &str,
        edit: impl Fn(String) -> String,
        change: Change,
        trouble: Trouble,
    ) -> TestResult {
        with_only_what_edited("aks", (Some(flavor), 2), edit, async |environment, namespace| {
            converges_and_goes(environment, namespace, change, trouble).await
        })
        .await
    }

    /// What is wrong in Azure when a case's cluster is deleted.
    enum Trouble {
        /// Azure refuses the identity's credentials until the test restores them.
        CredentialsRefused,
        /// The cluster's resource group was deleted out of band.
        GroupGone,
        /// Azure refuses the credentials and a person abandons the deletion.
        Abandoned,
    }

    /// What a case changes once the cluster has converged.
    enum Change {
        /// Scale a pool out, add a User pool and remove it.
        Pools,
        /// Upgrade through the topology's version.
        Upgrade,
        /// Nothing.
        None,
    }

    /// Resource types, in lower case.
    const MANAGED_CLUSTERS: &str = "microsoft.containerservice/managedclusters";
    const AGENT_POOLS: &str = "microsoft.containerservice/managedclusters/agentpools";

    /// The ids of the agent pools in Azure (lower case), sorted.
    fn agent_pools_in_azure(environment: &Environment) -> Vec<String> {
        let mut pools: Vec<String> = environment
            .created_in_azure()
            .into_iter()
            .filter(|id| id.contains("/agentpools/"))
            .collect();
        pools.sort();
        pools
    }

    async fn pools_change(environment: &Environment, namespace: &str) -> TestResult {
        let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
        let params = kube::api::PatchParams::default();
        let user = format!("{CLUSTER}-pool1");
        machine_pools
            .patch(
                &user,
                &params,
                &kube::api::Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await?;
        environment
            .machine_pool_nodes(namespace, &user, 3, TIMEOUT * 2)
            .await?;
        changed_in_place(environment, namespace, &user).await?;
        let added = format!("{CLUSTER}-pool2");
        let objects: Vec<DynamicObject> = serde_json::from_value(json!([
            {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "AzureManagedMachinePool",
                "metadata": {"name": added},
                "spec": {"mode": "User", "name": "pool2", "sku": "Standard_D2s_v3"},
            },
            {
                "apiVersion": "cluster.x-k8s.io/v1beta1",
                "kind": "MachinePool",
                "metadata": {"name": added},
                "spec": {
                    "clusterName": CLUSTER,
                    "replicas": 1,
                    "template": {"spec": {
                        "bootstrap": {"dataSecretName": ""},
                        "clusterName": CLUSTER,
                        "infrastructureRef": {
                            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                            "kind": "AzureManagedMachinePool",
                            "name": added,
                        },
                        "version": "v1.33.5",
                    }},
                },
            },
        ]))?;
        environment.apply(namespace, &objects).await?;
        environment
            .machine_pool_nodes(namespace, &added, 1, TIMEOUT * 2)
            .await?;
        let removing = SystemTime::now();
        machine_pools
            .delete(&added, &kube::api::DeleteParams::default())
            .await?;
        let agent_pools = environment
            .infrastructure("AzureManagedMachinePool", namespace)
            .await?;
        wait_list(&agent_pools, "", "the added pool gone", TIMEOUT, |all| {
            all.iter()
                .all(|pool| pool.metadata.name.as_deref() != Some(added.as_str()))
        })
        .await?;
        let deleted: Vec<String> = environment
            .requests_since(removing)
            .into_iter()
            .filter(|request| {
                request.method == "DELETE" && request.resource_type.eq_ignore_ascii_case(AGENT_POOLS)
            })
            .map(|request| request.path)
            .collect();
        assert!(
            deleted.len() == 1 && deleted[0].ends_with("/agentPools/pool2"),
            "{deleted:?}"
        );
        let left: Vec<String> = agent_pools_in_azure(environment)
            .iter()
            .filter_map(|id| id.rsplit_once('/').map(|(_, name)| name.to_owned()))
            .collect();
        assert_eq!(left, ["pool0", "pool1"], "only the added pool is gone from Azure");
        Ok(())
    }

    /// Labels, taints and AKS's autoscaler on the pool `name` (`pool1` in Azure) reach its agent
    /// pool with no Node replaced, and its MachinePool follows the autoscaler; its SKU cannot
    /// change.
    async fn changed_in_place(environment: &Environment, namespace: &str, name: &str) -> TestResult {
        let machine_pools = environment.cluster_api("MachinePool", namespace).await?;
        let node_names = |pool: &DynamicObject| -> Vec<Value> {
            pool.data["status"]["nodeRefs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|node| node["name"].clone())
                .collect()
        };
        let before = node_names(&machine_pools.get(name).await?);
        let agent_pools = environment
            .infrastructure("AzureManagedMachinePool", namespace)
            .await?;
        let change = json!({"spec": {
            "nodeLabels": {"team": "a"},
            "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
            "scaling": {"minSize": 1, "maxSize": 4},
        }});
        agent_pools
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(change),
            )
            .await?;
        let id = agent_pools_in_azure(environment)
            .into_iter()
            .find(|id| id.ends_with("/pool1"))
            .ok_or("no pool1 in Azure")?;
        let started = Instant::now();
        loop {
            let properties = environment
                .azure_resource(&id)
                .map(|pool| pool["properties"].clone())
                .unwrap_or_default();
            if properties["nodeTaints"] == json!(["dedicated=batch:NoSchedule"])
                && properties["nodeLabels"]["team"] == "a"
                && properties["enableAutoScaling"] == true
                && (properties["minCount"].clone(), properties["maxCount"].clone()) == (json!(1), json!(4))
            {
                break;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "the pool's settings were not written: {properties}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let pools = wait_list(
            &machine_pools,
            "",
            "the MachinePool following AKS's autoscaler",
            TIMEOUT,
            |all| {
                all.iter().any(|pool| {
                    pool.metadata.name.as_deref() == Some(name)
                        && kube::ResourceExt::annotations(pool).get("cluster.x-k8s.io/replicas-managed-by")
                            == Some(&"true".to_owned())
                })
            },
        )
        .await?;
        let after = pools
            .iter()
            .find(|pool| pool.metadata.name.as_deref() == Some(name))
            .map(node_names);
        assert_eq!(after, Some(before), "no Node was replaced");
        let dry_run = kube::api::PatchParams {
            dry_run: true,
            ..kube::api::PatchParams::default()
        };
        let refusal = agent_pools
            .patch(
                name,
                &dry_run,
                &kube::api::Patch::Merge(json!({"spec": {"sku": "Standard_D4s_v3"}})),
            )
            .await
            .err()
            .map(|err| err.to_string());
        assert!(
            refusal
                .as_deref()
                .is_some_and(|message| message.contains("spec.sku") && message.contains("immutable")),
            "{refusal:?}"
        );
        Ok(())
    }

    async fn upgrade(environment: &Environment, namespace: &str) -> TestResult {
        let clusters = environment.cluster_api("Cluster", namespace).await?;
        let upgrading = SystemTime::now();
        clusters
            .patch(
                CLUSTER,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"topology": {"version": "v1.34.1"}}})),
            )
            .await?;
        let planes = environment
            .infrastructure("AzureManagedControlPlane", namespace)
            .await?;
        wait_list(&planes, "", "the control plane at v1.34.1", TIMEOUT * 2, |all| {
            all.iter()
                .any(|plane| plane.data["status"]["version"] == "v1.34.1")
        })
        .await?;
        let pools = agent_pools_in_azure(environment);
        assert_eq!(pools.len(), 2, "{pools:?}");
        let started = Instant::now();
        while !pools.iter().all(|id| {
            environment.azure_resource(id).is_some_and(|pool| {
                pool["properties"]["orchestratorVersion"] == "1.34.1"
                    && pool["properties"]["provisioningState"] == "Succeeded"
            })
        }) {
            assert!(started.elapsed() < TIMEOUT * 2, "the pools were not upgraded");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let puts: Vec<String> = environment
            .requests_since(upgrading)
            .into_iter()
            .filter(|request| request.method == "PUT")
            .map(|request| request.resource_type.to_ascii_lowercase())
            .filter(|type_| type_ == MANAGED_CLUSTERS || type_ == AGENT_POOLS)
            .collect();
        assert_eq!(
            puts.first().map(String::as_str),
            Some(MANAGED_CLUSTERS),
            "the control plane goes first: {puts:?}"
        );
        assert!(puts.iter().any(|type_| type_ == AGENT_POOLS), "{puts:?}");
        Ok(())
    }

    /// The workload cluster has `kube-public/cluster-info`: a kubeconfig naming the control
    /// plane's endpoint and the CA of the `<cluster>-ca` Secret, with no credentials.
    async fn cluster_info_published(environment: &Environment, namespace: &str) -> TestResult {
        let plane = control_plane(environment, namespace).await?;
        let endpoint = &plane.data["spec"]["controlPlaneEndpoint"];
        let server = format!(
            "https://{}:{}",
            endpoint["host"].as_str().unwrap_or_default(),
            endpoint["port"]
        );
        let ca = kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
            environment.client.clone(),
            namespace,
        )
        .get(&format!("{CLUSTER}-ca"))
        .await?
        .data
        .and_then(|mut data| data.remove("tls.crt"))
        .ok_or("the CA Secret has no tls.crt")?;
        let workload = environment.workload_client(CLUSTER, namespace).await?;
        let config_maps =
            kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(workload, "kube-public");
        let started = Instant::now();
        let info = loop {
            // Listed: Cluster API's in-memory API server answers a missing object with no Status.
            let listed = config_maps.list(&kube::api::ListParams::default()).await?;
            if let Some(info) = listed
                .items
                .into_iter()
                .find(|map| map.metadata.name.as_deref() == Some("cluster-info"))
            {
                break info;
            }
            assert!(
                started.elapsed() < TIMEOUT,
                "no kube-public/cluster-info in the workload cluster"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let kubeconfig = kube::config::Kubeconfig::from_yaml(
            info.data
                .as_ref()
                .and_then(|data| data.get("kubeconfig"))
                .ok_or("cluster-info has no key kubeconfig")?,
        )?;
        let cluster = kubeconfig
            .clusters
            .first()
            .and_then(|named| named.cluster.as_ref())
            .ok_or("cluster-info names no cluster")?;
        assert_eq!(cluster.server.as_deref(), Some(server.as_str()));
        assert_eq!(
            cluster.certificate_authority_data.as_deref(),
            Some(base64::engine::general_purpose::STANDARD.encode(&ca.0).as_str())
        );
        assert!(
            kubeconfig.auth_infos.is_empty(),
            "cluster-info holds no credentials"
        );
        Ok(())
    }

    /// The cluster's AzureManagedControlPlane (of a ClusterClass, its name is the topology's).
    async fn control_plane(environment: &Environment, namespace: &str) -> TestResult<DynamicObject> {
        let planes = environment
            .infrastructure("AzureManagedControlPlane", namespace)
            .await?
            .list(&kube::api::ListParams::default())
            .await?;
        Ok(planes
            .items
            .into_iter()
            .next()
            .ok_or("no AzureManagedControlPlane")?)
    }

    /// Whether `request` is a refused sign-in or a call with a refused token.
    fn refused(request: &arm_emulator::LoggedRequest) -> bool {
        request.status == 401 || (request.path.ends_with("/token") && request.status >= 400)
    }

    /// Deletes the Cluster while Azure refuses its identity: the control plane waits, `Ready`
    /// False with reason `DeletionFailed` naming the AzureClusterIdentity and its client id
    /// (never the secret). Restored, with no edit to wake the controller, the deletion ends at
    /// its next retry (the first comes a minute after a refusal) with no refusal more, and
    /// nothing is left in Azure.
    async fn deleted_once_credentials_return(environment: &Environment, namespace: &str) -> TestResult {
        let emulator = &environment.azure.emulator;
        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, true);
        environment
            .cluster_api("Cluster", namespace)
            .await?
            .delete(CLUSTER, &kube::api::DeleteParams::default())
            .await?;
        let planes = environment
            .infrastructure("AzureManagedControlPlane", namespace)
            .await?;
        let named = |plane: &DynamicObject| {
            condition(plane, "Ready")
                .is_some_and(|(status, reason)| status == "False" && reason == "DeletionFailed")
                && condition_message(plane, "Ready")
                    .is_some_and(|message| message.contains("AzureClusterIdentity"))
        };
        let seen = wait_list(
            &planes,
            "",
            "the deletion waiting, Ready False naming the refused identity",
            TIMEOUT * 2,
            |all| all.iter().any(named),
        )
        .await?;
        let message = seen
            .iter()
            .find(|plane| named(plane))
            .and_then(|plane| condition_message(plane, "Ready"))
            .unwrap_or_default();
        assert!(
            message.contains(&format!("(client id {DEFAULT_CLIENT_ID})")),
            "{message}"
        );
        assert!(
            !message.contains(DEFAULT_CLIENT_SECRET),
            "the secret is shown: {message}"
        );

        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, false);
        let restored = SystemTime::now();
        let started = Instant::now();
        environment
            .delete_cluster_without_leftovers(CLUSTER, namespace, Duration::from_mins(3))
            .await?;
        eprintln!(
            "e2e: the AKS deletion ended {:.1} s after the credentials were restored",
            started.elapsed().as_secs_f64()
        );
        let refusals = environment
            .requests_since(restored)
            .iter()
            .filter(|request| refused(request))
            .count();
        assert_eq!(refusals, 0, "refusals after the credentials were restored");
        Ok(())
    }

    /// With Azure refusing the credentials, the control plane carries the abandon annotation and
    /// the Cluster is deleted: everything goes with no DELETE sent, and one Warning event
    /// `AzureResourcesAbandoned` on the control plane names resources that cover all the cluster
    /// has in Azure. Deleting the groups it names (as the user would) leaves nothing.
    async fn abandoned_naming_what_stays(environment: &Environment, namespace: &str) -> TestResult {
        let emulator = &environment.azure.emulator;
        let plane = control_plane(environment, namespace).await?;
        let name = plane.metadata.name.clone().unwrap_or_default();
        let group = plane.data["spec"]["resourceGroupName"]
            .as_str()
            .ok_or("the control plane names no resource group")?
            .to_ascii_lowercase();
        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, true);
        environment
            .infrastructure("AzureManagedControlPlane", namespace)
            .await?
            .patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"annotations": {
                    "aks.infrastructure.cluster.x-k8s.io/abandon-azure-resources": "true",
                }}})),
            )
            .await?;
        let deleting = SystemTime::now();
        environment
            .cluster_api("Cluster", namespace)
            .await?
            .delete(CLUSTER, &kube::api::DeleteParams::default())
            .await?;
        aks_objects_gone(environment, namespace, TIMEOUT).await?;
        emulator.set_principal_disabled(DEFAULT_CLIENT_ID, false);
        let deletes: Vec<String> = environment
            .requests_since(deleting)
            .into_iter()
            .filter(|request| request.method == "DELETE")
            .map(|request| request.path)
            .collect();
        assert_eq!(
            deletes,
            [] as [String; 0],
            "an abandoned deletion deletes nothing"
        );

        let named = abandoned_ids(environment, namespace, &name).await?;
        // What the cluster has in Azure: its group's resources and its node resource group's.
        let ours = |id: &String| {
            id.contains(&format!("/resourcegroups/{group}/"))
                || id.ends_with(&format!("/resourcegroups/{group}"))
                || id.contains(&format!("/resourcegroups/mc_{group}_"))
        };
        let left: Vec<String> = environment.created_in_azure().into_iter().filter(ours).collect();
        assert!(!left.is_empty(), "nothing of the cluster is in Azure");
        for id in &left {
            assert!(
                named
                    .iter()
                    .any(|named| id == named || id.starts_with(&format!("{named}/"))),
                "{id} is left in Azure but not named: {named:?}"
            );
        }
        for id in &named {
            assert!(left.contains(id), "{id} is named but not in Azure: {left:?}");
        }
        // The user removes what was named: the cluster's group, and with it the managed cluster
        // and its node resource group (AKS keeps that one from being deleted on its own).
        let path = named
            .iter()
            .find(|id| id.ends_with(&format!("/resourcegroups/{group}")))
            .map(|id| format!("{id}?api-version=2021-04-01"))
            .ok_or("the cluster's resource group is not named")?;
        let status = environment.arm("DELETE", &path).await?;
        assert!(matches!(status, 200 | 202), "DELETE {path}: {status}");
        let started = Instant::now();
        while environment.created_in_azure().iter().any(ours) {
            assert!(started.elapsed() < TIMEOUT, "the groups are still there");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok(())
    }

    /// Waits until the cluster's AKS objects are gone.
    async fn aks_objects_gone(environment: &Environment, namespace: &str, timeout: Duration) -> TestResult {
        for kind in [
            "AzureManagedMachinePool",
            "AzureManagedControlPlane",
            "AzureManagedCluster",
        ] {
            let api = environment.infrastructure(kind, namespace).await?;
            wait_list(&api, "", &format!("every {kind} gone"), timeout, <[_]>::is_empty).await?;
        }
        Ok(())
    }

    /// The ids (lower case) the one `AzureResourcesAbandoned` Warning event on the control plane
    /// `name` names.
    async fn abandoned_ids(
        environment: &Environment,
        namespace: &str,
        name: &str,
    ) -> TestResult<Vec<String>> {
        let events = kube::Api::<k8s_openapi::api::events::v1::Event>::namespaced(
            environment.client.clone(),
            namespace,
        )
        .list(&kube::api::ListParams::default())
        .await?;
        let notes: Vec<String> = events
            .items
            .iter()
            .filter(|event| {
                event.reason.as_deref() == Some("AzureResourcesAbandoned")
                    && event.type_.as_deref() == Some("Warning")
                    && event
                        .regarding
                        .as_ref()
                        .and_then(|regarding| regarding.name.as_deref())
                        == Some(name)
            })
            .filter_map(|event| event.note.clone())
            .collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        Ok(notes[0]
            .split_whitespace()
            .filter(|word| word.starts_with("/subscriptions/"))
            .map(str::to_ascii_lowercase)
            .collect())
    }

    /// Pauses the Cluster, deletes its resource group in Azure (which takes the managed cluster
    /// and its node resource group), then deletes the Cluster: the AKS objects go within a minute,
    /// with nothing written to Azure.
    async fn deleted_at_once_without_its_group(environment: &Environment, namespace: &str) -> TestResult {
        let clusters = environment.cluster_api("Cluster", namespace).await?;
        let pause = |paused: bool| json!({"spec": {"paused": paused}});
        let params = kube::api::PatchParams::default();
        clusters
            .patch(CLUSTER, &params, &kube::api::Patch::Merge(pause(true)))
            .await?;
        // A pass that began before the pause ends first: ARM hears nothing for two seconds.
        let mut calls = environment.requests_since(SystemTime::UNIX_EPOCH).len();
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let now = environment.requests_since(SystemTime::UNIX_EPOCH).len();
            if now == calls {
                break;
            }
            calls = now;
        }
        let plane = control_plane(environment, namespace).await?;
        let group = plane.data["spec"]["resourceGroupName"]
            .as_str()
            .ok_or("the control plane names no resource group")?
            .to_owned();
        let path =
            format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{group}?api-version=2021-04-01");
        let status = environment.arm("DELETE", &path).await?;
        assert!(matches!(status, 200 | 202), "DELETE {path}: {status}");
        let started = Instant::now();
        while environment.arm("GET", &path).await? != 404 {
            assert!(started.elapsed() < TIMEOUT, "the resource group is still there");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let managed: Vec<String> = environment
            .created_in_azure()
            .into_iter()
            .filter(|id| id.contains("microsoft.containerservice"))
            .collect();
        assert_eq!(managed, [] as [String; 0], "Azure took the managed cluster along");

        let deleting = SystemTime::now();
        let started = Instant::now();
        clusters
            .delete(CLUSTER, &kube::api::DeleteParams::default())
            .await?;
        clusters
            .patch(CLUSTER, &params, &kube::api::Patch::Merge(pause(false)))
            .await?;
        aks_objects_gone(environment, namespace, Duration::from_mins(1)).await?;
        eprintln!(
            "e2e: the AKS objects went {:.1} s after the Cluster's delete, its group gone",
            started.elapsed().as_secs_f64()
        );
        let writes: Vec<String> = environment
            .requests_since(deleting)
            .into_iter()
            .filter(|request| {
                !matches!(request.method.as_str(), "GET" | "HEAD")
                    && !request.path.ends_with("/token")
                    && !request.path.starts_with("/_emulator")
            })
            .map(|request| format!("{} {}", request.method, request.path))
            .collect();
        assert_eq!(writes, [] as [String; 0], "only reads once the group was gone");
        Ok(())
    }

    /// The group whose members administer an Entra-only cluster.
    const ADMINS: &str = "7d0ac1f4-9a4e-4f4e-9d55-3f0f1f7d2a10";

    /// The [`supported`] manifest of a cluster that signs in with Entra only.
    #[expect(clippy::needless_pass_by_value, reason = "the shape of a manifest edit")]
    fn entra_only(manifest: String) -> String {
        let anchor = "  oidcIssuerProfile:\n    enabled: true\n";
        assert!(manifest.contains(anchor), "the aks flavor has changed");
        supported(manifest.replace(
            anchor,
            &format!(
                "{anchor}  aadProfile:\n    managed: true\n    adminGroupObjectIDs: [{ADMINS}]\n  disableLocalAccounts: true\n"
            ),
        ))
    }

    /// With local accounts disabled, `<cluster>-kubeconfig` signs in with a bearer token (no
    /// client certificate, no exec plugin) and reaches the workload API server, which refuses the
    /// same kubeconfig without its token.
    async fn signs_in_with_a_token(environment: &Environment, namespace: &str) -> TestResult {
        let secret = kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
            environment.client.clone(),
            namespace,
        )
        .get(&format!("{CLUSTER}-kubeconfig"))
        .await?;
        let value = secret
            .data
            .and_then(|mut data| data.remove("value"))
            .ok_or("the kubeconfig Secret has no value")?;
        let kubeconfig = kube::config::Kubeconfig::from_yaml(std::str::from_utf8(&value.0)?)?;
        let auth = kubeconfig
            .auth_infos
            .first()
            .and_then(|user| user.auth_info.as_ref())
            .ok_or("the kubeconfig has no user")?;
        assert!(auth.token.is_some(), "no token in the kubeconfig");
        assert!(
            auth.exec.is_none() && auth.client_certificate_data.is_none(),
            "the kubeconfig signs in otherwise too"
        );
        let namespaces = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(
            environment.workload_client(CLUSTER, namespace).await?,
        );
        assert!(
            !namespaces
                .list(&kube::api::ListParams::default())
                .await?
                .items
                .is_empty(),
            "the workload cluster lists no namespace"
        );
        // The same client without the token.
        let anonymous = environment
            .workload_client_with(CLUSTER, namespace, |config| config.auth_info.token = None)
            .await?;
        let refused = kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(anonymous)
            .list(&kube::api::ListParams::default())
            .await
            .err()
            .map(|err| err.to_string());
        assert!(
            refused
                .as_deref()
                .is_some_and(|message| message.contains("401") || message.contains("Unauthorized")),
            "a request without the token was not refused: {refused:?}"
        );
        Ok(())
    }

    /// The manifest asking for a version AKS has: it offers only some patches of each minor.
    #[expect(clippy::needless_pass_by_value, reason = "the shape of a manifest edit")]
    fn supported(manifest: String) -> String {
        manifest.replace(&format!("version: {KUBERNETES_VERSION}"), "version: v1.33.5")
    }

    async fn converges_and_goes(
        environment: &mut Environment,
        namespace: &str,
        change: Change,
        trouble: Trouble,
    ) -> TestResult {
        environment
            .managed_control_planes_ready(namespace, 1, TIMEOUT)
            .await?;
        let pools = environment.cluster_api("MachinePool", namespace).await?;
        wait_list(
            &pools,
            "",
            "both MachinePools with two Nodes each",
            TIMEOUT * 2,
            |all| {
                all.len() == 2
                    && all
                        .iter()
                        .all(|pool| pool.data["status"]["nodeRefs"].as_array().map(Vec::len) == Some(2))
            },
        )
        .await?;
        assert_eq!(created(environment, MANAGED_CLUSTERS), 1);
        cluster_info_published(environment, namespace).await?;
        if control_plane(environment, namespace).await?.data["spec"]["disableLocalAccounts"] == true {
            signs_in_with_a_token(environment, namespace).await?;
        }
        match change {
            Change::Pools => pools_change(environment, namespace).await?,
            Change::Upgrade => upgrade(environment, namespace).await?,
            Change::None => {}
        }
        // The System pool is the cluster's only one: admission keeps it.
        let agent_pools = environment
            .infrastructure("AzureManagedMachinePool", namespace)
            .await?;
        let system = agent_pools
            .list(&kube::api::ListParams::default())
            .await?
            .items
            .into_iter()
            .find(|pool| pool.data["spec"]["mode"] == "System")
            .and_then(|pool| pool.metadata.name)
            .ok_or("no System pool")?;
        let dry_run = kube::api::DeleteParams {
            dry_run: true,
            ..kube::api::DeleteParams::default()
        };
        let refusal = agent_pools
            .delete(&system, &dry_run)
            .await
            .err()
            .map(|err| err.to_string());
        assert!(
            refusal
                .as_deref()
                .is_some_and(|message| message.contains("must have at least one system pool")),
            "{refusal:?}"
        );
        let deleting = SystemTime::now();
        match trouble {
            Trouble::CredentialsRefused => deleted_once_credentials_return(environment, namespace).await?,
            Trouble::GroupGone => deleted_at_once_without_its_group(environment, namespace).await?,
            Trouble::Abandoned => abandoned_naming_what_stays(environment, namespace).await?,
        }
        let pool_deletes: Vec<String> = environment
            .requests_since(deleting)
            .into_iter()
            .filter(|request| request.method == "DELETE" && request.path.contains("/agentPools/"))
            .map(|request| request.path)
            .collect();
        assert_eq!(pool_deletes, [] as [String; 0]);
        Ok(())
    }
}

mod identity {
    use super::*;

    /// Alone, the identity controller takes the AzureClusterIdentity in (its finalizer, `Ready`)
    /// and writes the control-plane machine's `azure.json`; nothing is built in Azure.
    #[tokio::test]
    async fn alone_readies_the_identity_and_writes_azure_json() -> TestResult {
        with_only_what("identity", async |environment, namespace| {
            let identities = environment
                .infrastructure("AzureClusterIdentity", namespace)
                .await?;
            wait_list(&identities, "", "AzureClusterIdentity Ready", TIMEOUT, |all| {
                all.iter().any(|identity| {
                    condition(identity, "Ready").is_some_and(|(status, _)| status == "True")
                        && identity
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|finalizer| finalizer == "identity.infrastructure.cluster.x-k8s.io")
                })
            })
            .await?;
            let secrets = kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
                environment.client.clone(),
                namespace,
            );
            let started = Instant::now();
            loop {
                let names: Vec<String> = secrets
                    .list(&kube::api::ListParams::default())
                    .await?
                    .items
                    .into_iter()
                    .filter_map(|secret| secret.metadata.name)
                    .collect();
                if names.iter().any(|name| name.ends_with("-azure-json")) {
                    break;
                }
                assert!(started.elapsed() < TIMEOUT, "no azure.json Secret: {names:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            assert!(
                environment.created_in_azure().is_empty(),
                "{:?}",
                environment.created_in_azure()
            );
            Ok(())
        })
        .await
    }
}

mod webhooks {
    use super::*;

    /// Alone, the webhooks default and admit the default flavor's objects and refuse an edge-zone
    /// AzureCluster without its feature gate; nothing is built in Azure.
    #[tokio::test]
    async fn alone_default_and_judge_capz_objects() -> TestResult {
        with_only_what("webhooks", async |environment, namespace| {
            let clusters = environment.infrastructure("AzureCluster", namespace).await?;
            let cluster = clusters.get(CLUSTER).await?;
            assert!(
                cluster.data["spec"]["networkSpec"]["vnet"]["name"].is_string(),
                "the webhooks defaulted the virtual network's name: {}",
                cluster.data["spec"]
            );
            let refusal = environment.admits_edge_zone_cluster(namespace).await?.err();
            assert!(
                refusal
                    .as_deref()
                    .is_some_and(|message| message.contains("extendedLocation")),
                "{refusal:?}"
            );
            assert!(environment.created_in_azure().is_empty());
            Ok(())
        })
        .await
    }
}
