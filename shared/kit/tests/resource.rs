//! The reconcile and delete routine against the ARM emulator: which calls reach Azure, and when.

use std::collections::BTreeMap;
use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::DEFAULT_SUBSCRIPTION;
use capz_harness::EmulatedAzure;
use capz_kit::azure::models::ArmModel;
use capz_kit::azure::{ApiVersion, ArmClient, ResourceId};
use capz_kit::observed::{Change, Observed, Verb, observed};
use capz_kit::operations::Operations;
use capz_kit::resource::{self, AzureResource, Ownership, Progress, ResourceError};
use capz_kit::tags::{self, Role, Tags};
use serde::{Deserialize, Serialize};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const CLUSTER: &str = "c1";

/// What the tests need of a virtual network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct VirtualNetwork {
    location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tags: Option<Tags>,
    properties: VirtualNetworkProperties,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VirtualNetworkProperties {
    address_space: AddressSpace,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddressSpace {
    address_prefixes: Vec<String>,
}

impl ArmModel for VirtualNetwork {
    const RESOURCE_TYPE: &'static str = "Microsoft.Network/virtualNetworks";
    const API_VERSION: ApiVersion = ApiVersion::new("2024-05-01");

    fn tags(&self) -> Option<&Tags> {
        self.tags.as_ref()
    }
}

/// A virtual network as a test controller wants it.
struct Network {
    id: ResourceId,
    prefix: &'static str,
    ownership: Ownership,
}

impl AzureResource for Network {
    type Model = VirtualNetwork;
    const SERVICE: &'static str = "virtualnetworks";

    fn id(&self) -> &ResourceId {
        &self.id
    }

    fn ownership(&self) -> Ownership {
        self.ownership.clone()
    }

    fn desired(&self, existing: Option<&VirtualNetwork>) -> Option<VirtualNetwork> {
        let wanted = VirtualNetwork {
            location: "westeurope".into(),
            tags: Some(tags::owned(CLUSTER, Role::Common, None)),
            properties: VirtualNetworkProperties {
                address_space: AddressSpace {
                    address_prefixes: vec![self.prefix.into()],
                },
            },
        };
        let unchanged = existing.is_some_and(|existing| {
            existing.tags == wanted.tags
                && existing.properties.address_space == wanted.properties.address_space
        });
        (!unchanged).then_some(wanted)
    }
}

/// How many requests of `method` reached `path`.
fn calls(azure: &EmulatedAzure, method: &str, path: &str) -> usize {
    azure
        .running
        .emulator
        .requests()
        .iter()
        .filter(|request| request.method == method && request.path.eq_ignore_ascii_case(path))
        .count()
}

async fn resource_group(client: &ArmClient, name: &str) -> TestResult<ResourceId> {
    let id = ResourceId::resource_group(DEFAULT_SUBSCRIPTION.parse()?, name.parse()?);
    let body = serde_json::json!({"location": "westeurope"});
    client
        .put::<_, serde_json::Value>(&id, &ApiVersion::new("2024-03-01"), &body)
        .await?;
    Ok(id)
}

fn network(group: &ResourceId, name: &str, ownership: Ownership) -> TestResult<Network> {
    Ok(Network {
        id: group.provider("Microsoft.Network", "virtualNetworks", name)?,
        prefix: "10.0.0.0/16",
        ownership,
    })
}

/// An emulator whose virtual network operations run for 400 ms.
fn slow_networks() -> Config {
    Config {
        latencies: BTreeMap::from([(
            "Microsoft.Network/virtualNetworks".to_owned(),
            Duration::from_millis(400),
        )]),
        ..Config::default()
    }
}

fn ours() -> Ownership {
    Ownership::Tagged {
        cluster: CLUSTER.into(),
    }
}

#[tokio::test]
async fn a_running_operation_without_a_record_is_waited_for_not_written_over() -> TestResult {
    let azure = EmulatedAzure::start(slow_networks()).await?;
    let client = azure.new_client()?;
    let group = resource_group(&client, "rg-unrecorded").await?;
    let vnet = network(&group, "vnet", ours())?;
    let path = vnet.id.to_string();
    let mut started = Operations::owned(None, "test", &["virtualnetworks"]);
    let first = resource::reconcile(&client, &vnet, &mut started).await?;
    assert!(matches!(first, Progress::InProgress { .. }), "{first:?}");

    // A reconcile that lost the record (say, it read an object from before the status write) and
    // wants something else: the resource reads as Creating, so it waits instead of writing.
    let wider = Network {
        prefix: "10.1.0.0/16",
        ..network(&group, "vnet", ours())?
    };
    let mut forgotten = Operations::owned(None, "test", &["virtualnetworks"]);
    let waiting = resource::reconcile(&client, &wider, &mut forgotten).await?;
    assert_eq!(waiting, Progress::InProgress { retry_after: None });
    assert_eq!(
        calls(&azure, "PUT", &path),
        1,
        "nothing written while Azure works"
    );
    assert!(forgotten.entries().is_empty());

    // Once Azure is done, the change is written.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let next = resource::reconcile(&client, &wider, &mut forgotten).await?;
    assert!(
        matches!(next, Progress::InProgress { .. }),
        "the change is written: {next:?}"
    );
    assert_eq!(calls(&azure, "PUT", &path), 2);
    Ok(())
}

#[tokio::test]
async fn a_write_in_flight_is_resumed_by_a_new_client_and_the_steady_state_writes_nothing() -> TestResult {
    let azure = EmulatedAzure::start(slow_networks()).await?;
    let group = resource_group(&azure.new_client()?, "rg-resume").await?;
    let vnet = network(&group, "vnet", ours())?;
    let path = vnet.id.to_string();

    let mut operations = Operations::owned(None, "test", &["virtualnetworks"]);
    let first = resource::reconcile(&azure.new_client()?, &vnet, &mut operations).await?;
    assert!(matches!(first, Progress::InProgress { .. }), "{first:?}");
    assert_eq!(operations.entries().len(), 1);

    // What a restarted controller has: the entries from status, and a client of its own. The
    // write it resumes is still told as the creation it was.
    let stored = capz_kit::api::common::operations::Futures(operations.entries().to_vec());
    let mut resumed = Operations::owned(Some(&stored), "test", &["virtualnetworks"]);
    let client = azure.new_client()?;
    let done = loop {
        let Observed {
            output: progress,
            changes,
            ..
        } = observed(resource::reconcile(&client, &vnet, &mut resumed)).await;
        match progress? {
            Progress::InProgress { .. } => {
                assert!(changes.is_empty(), "{changes:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Progress::Done(model) => {
                assert_eq!(
                    changes.iter().map(|change| change.verb).collect::<Vec<_>>(),
                    [Verb::Created]
                );
                break model;
            }
        }
    };
    assert_eq!(done.properties.address_space.address_prefixes, ["10.0.0.0/16"]);
    assert!(resumed.entries().is_empty());
    assert_eq!(
        calls(&azure, "PUT", &path),
        1,
        "one write, however many reconciles"
    );

    let gets_before = calls(&azure, "GET", &path);
    let steady = resource::reconcile(&client, &vnet, &mut resumed).await?;
    assert_eq!(steady, Progress::Done(done));
    assert_eq!(calls(&azure, "PUT", &path), 1, "the steady state writes nothing");
    assert_eq!(calls(&azure, "GET", &path), gets_before + 1, "and reads once");

    // A changed spec is written again.
    let wider = Network {
        prefix: "10.1.0.0/16",
        ..network(&group, "vnet", ours())?
    };
    while resource::reconcile(&client, &wider, &mut resumed).await?
        != Progress::Done(wider.desired(None).ok_or("no body")?)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(calls(&azure, "PUT", &path), 2);
    Ok(())
}

#[tokio::test]
async fn a_resource_that_is_not_ours_is_neither_adopted_nor_deleted() -> TestResult {
    let azure = EmulatedAzure::start(Config::default()).await?;
    let client = azure.new_client()?;
    let group = resource_group(&client, "rg-foreign").await?;
    let foreign = network(&group, "theirs", ours())?;
    let body = VirtualNetwork {
        tags: Some(Tags::from([("team".to_owned(), "other".to_owned())])),
        ..foreign.desired(None).ok_or("no body")?
    };
    client
        .put::<_, VirtualNetwork>(&foreign.id, &VirtualNetwork::API_VERSION, &body)
        .await?;
    let path = foreign.id.to_string();
    let puts = calls(&azure, "PUT", &path);

    let mut operations = Operations::owned(None, "test", &["virtualnetworks"]);
    let refused = resource::reconcile(&client, &foreign, &mut operations).await;
    assert!(
        matches!(refused, Err(ResourceError::NotOwned { .. })),
        "{refused:?}"
    );
    assert_eq!(
        calls(&azure, "PUT", &path),
        puts,
        "nothing written to a resource that is not ours"
    );

    assert_eq!(
        resource::delete(&client, &foreign, &mut operations).await?,
        Progress::Done(())
    );
    assert_eq!(
        calls(&azure, "DELETE", &path),
        0,
        "nothing deleted that is not ours"
    );

    // A brought network is read and used as it is, never written or deleted.
    let brought = network(&group, "theirs", Ownership::Shared)?;
    assert!(matches!(
        resource::reconcile(&client, &brought, &mut operations).await?,
        Progress::Done(_)
    ));
    resource::delete(&client, &brought, &mut operations).await?;
    assert_eq!(calls(&azure, "PUT", &path), puts);
    assert_eq!(calls(&azure, "DELETE", &path), 0);

    let missing = network(&group, "nowhere", Ownership::Shared)?;
    assert!(matches!(
        resource::reconcile(&client, &missing, &mut operations).await,
        Err(ResourceError::Missing { .. })
    ));
    Ok(())
}

#[tokio::test]
async fn an_owned_resource_is_deleted_through_its_operation() -> TestResult {
    let azure = EmulatedAzure::start(Config::default()).await?;
    let client = azure.new_client()?;
    let group = resource_group(&client, "rg-delete").await?;
    let vnet = network(&group, "vnet", ours())?;
    let mut operations = Operations::owned(None, "test", &["virtualnetworks"]);
    // What the run wrapper learns: one creation, then one deletion, each once it has finished.
    let mut changes = Vec::new();
    loop {
        let Observed {
            output: progress,
            changes: these,
            ..
        } = observed(resource::reconcile(&client, &vnet, &mut operations)).await;
        changes.extend(these);
        if matches!(progress?, Progress::Done(_)) {
            break;
        }
    }
    loop {
        let Observed {
            output: progress,
            changes: these,
            ..
        } = observed(resource::delete(&client, &vnet, &mut operations)).await;
        changes.extend(these);
        if progress? == Progress::Done(()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        changes,
        [Verb::Created, Verb::Deleted].map(|verb| Change {
            verb,
            id: vnet.id.clone()
        })
    );
    assert!(operations.entries().is_empty());
    assert_eq!(calls(&azure, "DELETE", &vnet.id.to_string()), 1);
    // Gone: deleting again reads, finds nothing and sends nothing.
    assert_eq!(
        resource::delete(&client, &vnet, &mut operations).await?,
        Progress::Done(())
    );
    assert_eq!(calls(&azure, "DELETE", &vnet.id.to_string()), 1);
    Ok(())
}

/// A restart between asking Azure to delete and recording the operation loses the token: the
/// next delete sees the resource `Deleting` and waits for it instead of asking again.
#[tokio::test]
async fn a_delete_whose_operation_was_lost_is_not_sent_again() -> TestResult {
    let azure = EmulatedAzure::start(slow_networks()).await?;
    let client = azure.new_client()?;
    let group = resource_group(&client, "rg-lost-delete").await?;
    let vnet = network(&group, "vnet", ours())?;
    let mut operations = Operations::owned(None, "test", &["virtualnetworks"]);
    while !matches!(
        resource::reconcile(&client, &vnet, &mut operations).await?,
        Progress::Done(_)
    ) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(matches!(
        resource::delete(&client, &vnet, &mut operations).await?,
        Progress::InProgress { .. }
    ));
    // The process that asked is gone, and its record with it.
    let mut restarted = Operations::owned(None, "test", &["virtualnetworks"]);
    while resource::delete(&client, &vnet, &mut restarted).await? != Progress::Done(()) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(calls(&azure, "DELETE", &vnet.id.to_string()), 1);
    Ok(())
}

#[tokio::test]
async fn a_resource_azure_left_failed_is_written_again_until_it_succeeds() -> TestResult {
    let azure = EmulatedAzure::start(slow_networks()).await?;
    let client = azure.new_client()?;
    let group = resource_group(&client, "rg-failed").await?;
    let vnet = network(&group, "vnet", ours())?;
    let path = vnet.id.to_string();
    // The first write's operation ends Failed.
    azure
        .running
        .emulator
        .add_fault(arm_emulator::faults::Fault::failing_operation_once(
            "PUT",
            "*/virtualNetworks/vnet",
            "InternalServerError",
        ));
    let mut operations = Operations::owned(None, "test", &["virtualnetworks"]);
    let failed = loop {
        match resource::reconcile(&client, &vnet, &mut operations).await {
            Ok(Progress::InProgress { .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            other => break other,
        }
    };
    assert!(
        matches!(
            &failed,
            Err(ResourceError::Arm {
                action: "finish writing",
                ..
            })
        ),
        "{failed:?}"
    );
    let state = |body: serde_json::Value| body["properties"]["provisioningState"].clone();
    let left = client
        .get::<serde_json::Value>(&vnet.id, &VirtualNetwork::API_VERSION)
        .await?;
    assert_eq!(state(left), "Failed");
    assert_eq!(calls(&azure, "PUT", &path), 1);

    // Its body is as wanted, yet it is written again, once, and ends Succeeded: an update.
    let mut changes = Vec::new();
    let repaired = loop {
        let Observed {
            output: progress,
            changes: these,
            ..
        } = observed(resource::reconcile(&client, &vnet, &mut operations)).await;
        changes.extend(these.into_iter().map(|change| change.verb));
        match progress? {
            Progress::InProgress { .. } => tokio::time::sleep(Duration::from_millis(100)).await,
            Progress::Done(model) => break model,
        }
    };
    assert_eq!(changes, [Verb::Updated]);
    assert_eq!(
        repaired.properties.address_space.address_prefixes,
        ["10.0.0.0/16"]
    );
    assert_eq!(calls(&azure, "PUT", &path), 2, "one more write repairs it");
    let now = client
        .get::<serde_json::Value>(&vnet.id, &VirtualNetwork::API_VERSION)
        .await?;
    assert_eq!(state(now), "Succeeded");
    // And then the steady state writes nothing.
    resource::reconcile(&client, &vnet, &mut operations).await?;
    assert_eq!(calls(&azure, "PUT", &path), 2);
    Ok(())
}
