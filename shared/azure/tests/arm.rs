//! The ARM client against the emulator over HTTPS: typed reads and writes, long-running operations
//! resumed from their token by another client, throttling, error classification and paging.

mod common;

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::Principal;
use arm_emulator::throttle::Bucket;
use capz_azure::{
    ApiVersion, ArmClient, ArmError, Category, Credential, OperationMethod, OperationToken, Outcome,
    PollKind, PollOutcome, ResourceId,
};
use common::{Azure, LOCATION, SUBSCRIPTION, TENANT, TestResult, start};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const GROUPS: ApiVersion = ApiVersion::new("2021-04-01");
const NETWORK: ApiVersion = ApiVersion::new("2024-05-01");

#[derive(Debug, Serialize, Deserialize)]
struct ResourceGroup {
    #[serde(default, skip_serializing)]
    id: Option<ResourceId>,
    location: String,
    #[serde(default, skip_serializing)]
    properties: Option<Provisioning>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Provisioning {
    provisioning_state: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VirtualNetwork {
    location: String,
    properties: VirtualNetworkProperties,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VirtualNetworkProperties {
    address_space: AddressSpace,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provisioning_state: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddressSpace {
    address_prefixes: Vec<String>,
}

fn group_id(name: &str) -> TestResult<ResourceId> {
    Ok(ResourceId::resource_group(SUBSCRIPTION.parse()?, name.parse()?))
}

fn vnet_id(group: &str) -> TestResult<ResourceId> {
    Ok(group_id(group)?.provider("Microsoft.Network", "virtualNetworks", "vnet")?)
}

fn vnet() -> VirtualNetwork {
    VirtualNetwork {
        location: LOCATION.to_owned(),
        properties: VirtualNetworkProperties {
            address_space: AddressSpace {
                address_prefixes: vec!["10.0.0.0/16".to_owned()],
            },
            provisioning_state: None,
        },
    }
}

async fn create_group(client: &ArmClient, name: &str) -> TestResult<ResourceGroup> {
    let body = ResourceGroup {
        id: None,
        location: LOCATION.to_owned(),
        properties: None,
    };
    match client.put(&group_id(name)?, &GROUPS, &body).await? {
        Outcome::Done(group) => Ok(group),
        Outcome::InProgress(_) => Err("resource groups are created at once".into()),
    }
}

/// Polls until the operation ends, as reconciles would (each poll a single request).
async fn poll_until_done<T: serde::de::DeserializeOwned>(
    client: &ArmClient,
    mut token: OperationToken,
) -> TestResult<Option<T>> {
    for _ in 0..100 {
        match client.poll::<T>(&token).await? {
            PollOutcome::InProgress(progress) => {
                token = progress.token;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            PollOutcome::Succeeded(resource) => return Ok(resource),
            PollOutcome::Failed(err) => return Err(err.into()),
        }
    }
    Err("the operation did not finish".into())
}

fn count(azure: &Azure, method: &str, path: &str) -> usize {
    azure
        .requests()
        .iter()
        .filter(|logged| logged.method == method && logged.path.eq_ignore_ascii_case(path))
        .count()
}

#[tokio::test]
async fn resource_groups_and_networks_are_created_read_and_deleted() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure
        .client()?
        .with_correlation_id("6f0c7a52-0000-4000-8000-000000000001");
    let created = create_group(&client, "crud").await?;
    assert_eq!(created.id, Some(group_id("crud")?));
    let read: ResourceGroup = client.get(&group_id("CRUD")?, &GROUPS).await?;
    assert_eq!(
        read.properties.ok_or("no properties")?.provisioning_state,
        "Succeeded"
    );

    let network = match client
        .put::<_, VirtualNetwork>(&vnet_id("crud")?, &NETWORK, &vnet())
        .await?
    {
        Outcome::InProgress(progress) => {
            assert_eq!(progress.token.poll_kind, PollKind::AsyncOperation);
            poll_until_done::<VirtualNetwork>(&client, progress.token)
                .await?
                .ok_or("no network")?
        }
        Outcome::Done(network) => network,
    };
    assert_eq!(
        network.properties.provisioning_state.as_deref(),
        Some("Succeeded")
    );
    assert_eq!(network.properties.address_space.address_prefixes, ["10.0.0.0/16"]);
    let read: VirtualNetwork = client.get(&vnet_id("crud")?, &NETWORK).await?;
    assert_eq!(read.location, LOCATION);

    if let Outcome::InProgress(progress) = client.delete(&vnet_id("crud")?, &NETWORK).await? {
        assert_eq!(progress.token.method, OperationMethod::Delete);
        assert!(poll_until_done::<Value>(&client, progress.token).await?.is_none());
    }
    let gone = client
        .get::<Value>(&vnet_id("crud")?, &NETWORK)
        .await
        .unwrap_err();
    assert_eq!(gone.category(), Category::NotFound, "{gone}");

    let deleting = client.delete(&group_id("crud")?, &GROUPS).await?;
    let Outcome::InProgress(progress) = deleting else {
        return Err("a resource group is deleted by an operation".into());
    };
    assert_eq!(progress.token.poll_kind, PollKind::Location);
    poll_until_done::<Value>(&client, progress.token).await?;
    let gone = client
        .get::<Value>(&group_id("crud")?, &GROUPS)
        .await
        .unwrap_err();
    assert_eq!(
        (gone.category(), gone.code()),
        (Category::NotFound, Some("ResourceGroupNotFound"))
    );
    Ok(())
}

#[tokio::test]
async fn an_operation_is_resumed_from_its_token_by_a_new_client_without_a_second_put() -> TestResult {
    let mut config = Config::default();
    config.latencies.insert(
        "Microsoft.Network/virtualNetworks".to_owned(),
        Duration::from_millis(600),
    );
    config.retry_after_seconds = 1;
    let azure = start(config).await?;
    let stored = {
        let client = azure.client()?;
        create_group(&client, "resume").await?;
        let Outcome::InProgress(progress) = client
            .put::<_, VirtualNetwork>(&vnet_id("resume")?, &NETWORK, &vnet())
            .await?
        else {
            return Err("a network with latency is created by an operation".into());
        };
        assert_eq!(progress.retry_after, Some(Duration::from_secs(1)));
        progress.token.encode()
        // The client, its credential and its connections are dropped here, as in a restart.
    };

    let token = OperationToken::decode(&stored)?;
    assert_eq!(token.resource_id, vnet_id("resume")?);
    let client = azure.client()?;
    let network = poll_until_done::<VirtualNetwork>(&client, token)
        .await?
        .ok_or("no network")?;
    assert_eq!(
        network.properties.provisioning_state.as_deref(),
        Some("Succeeded")
    );
    let path = vnet_id("resume")?.to_string();
    assert_eq!(count(&azure, "PUT", &path), 1, "exactly one PUT of the network");
    // After the status said Succeeded, the network was read once.
    assert_eq!(count(&azure, "GET", &path), 1);

    // A token CAPZ stored is refused, so the caller reads the resource instead.
    let capz = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE,
        br#"{"type":"x","token":"y"}"#,
    );
    assert!(OperationToken::decode(&capz).is_err());
    Ok(())
}

#[tokio::test]
async fn a_poll_url_off_the_resource_manager_host_is_never_called() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    let token = OperationToken {
        method: OperationMethod::Put,
        poll_url: "https://attacker.example/steal".to_owned(),
        poll_kind: PollKind::AsyncOperation,
        resource_id: vnet_id("rg")?,
        api_version: NETWORK,
        creates: false,
    };
    let err = client.poll::<Value>(&token).await.unwrap_err();
    assert!(matches!(err, ArmError::InvalidRequest(_)), "{err}");
    assert!(err.category().is_terminal());
    Ok(())
}

#[tokio::test]
async fn a_throttled_principal_fails_fast_until_retry_after_has_passed() -> TestResult {
    const THROTTLED: &str = "77777777-7777-7777-7777-777777777777";
    let mut config = Config::default();
    config.principals.push(Principal {
        client_id: THROTTLED.to_owned(),
        tenant: TENANT.to_owned(),
        object_id: None,
        secret: Some("throttled-secret".to_owned()),
        certificate: None,
        federated: Vec::new(),
    });
    config.rate_limits.reads = Bucket {
        burst: 2,
        per_second: 1.0,
    };
    let azure = start(config).await?;
    let credential =
        Credential::client_secret(&azure.cloud, &azure.http, TENANT, THROTTLED, "throttled-secret")?;
    let client = ArmClient::new(&azure.cloud, credential, &azure.http, "test");
    let missing = group_id("missing")?;

    let mut answered = 0;
    let throttled = loop {
        match client.get::<Value>(&missing, &GROUPS).await {
            Err(err) if err.category() == Category::NotFound => answered += 1,
            Err(err) => break err,
            Ok(_) => return Err("the group does not exist".into()),
        }
        if answered > 5 {
            return Err("never throttled".into());
        }
    };
    assert_eq!(
        throttled.code(),
        Some("SubscriptionRequestsThrottled"),
        "{throttled}"
    );
    assert_eq!(throttled.category(), Category::Throttled);
    let wait = throttled.retry_after().ok_or("no Retry-After")?;
    assert!(wait >= Duration::from_secs(1), "{wait:?}");
    let budget = client
        .rate_limit_budget(&SUBSCRIPTION.parse()?)
        .ok_or("no budget recorded")?;
    assert_eq!(budget.subscription_reads, Some(0));

    let sent = azure.requests().len();
    let blocked = client.get::<Value>(&missing, &GROUPS).await.unwrap_err();
    assert!(matches!(blocked, ArmError::Throttled { .. }), "{blocked}");
    assert!(blocked.retry_after().is_some_and(|left| left <= wait));
    assert_eq!(
        azure.requests().len(),
        sent,
        "the gate kept the call from the emulator"
    );

    // Other principals are not held back.
    let other = azure.client()?;
    assert_eq!(
        other
            .get::<Value>(&missing, &GROUPS)
            .await
            .unwrap_err()
            .category(),
        Category::NotFound
    );

    tokio::time::sleep(wait).await;
    let after = client.get::<Value>(&missing, &GROUPS).await.unwrap_err();
    assert_eq!(after.category(), Category::NotFound, "{after}");
    Ok(())
}

fn fault(rule: Value) -> TestResult<arm_emulator::faults::Fault> {
    Ok(serde_json::from_value(rule)?)
}

#[tokio::test]
async fn server_errors_are_transient_and_client_errors_terminal() -> TestResult {
    let azure = start(Config::default()).await?;
    let client = azure.client()?;
    create_group(&client, "faults").await?;
    let emulator = &azure.running.emulator;

    let _ = emulator.add_fault(fault(
        json!({"method": "GET", "path": "*/resourceGroups/faults", "status": 503, "count": 1}),
    )?);
    let err = client
        .get::<Value>(&group_id("faults")?, &GROUPS)
        .await
        .unwrap_err();
    assert_eq!(
        (err.category(), err.category().is_terminal()),
        (Category::Transient, false),
        "{err}"
    );
    assert!(matches!(err, ArmError::Status { status: 503, .. }), "{err}");

    let _ = emulator.add_fault(fault(
        json!({"method": "GET", "path": "*/resourceGroups/faults", "dropConnection": true, "count": 1}),
    )?);
    let err = client
        .get::<Value>(&group_id("faults")?, &GROUPS)
        .await
        .unwrap_err();
    assert!(matches!(err, ArmError::Transport(_)), "{err}");
    assert_eq!(err.category(), Category::Transient);

    let _ = emulator.add_fault(fault(json!({"method": "PUT", "path": "*/virtualNetworks/*", "status": 409, "code": "AnotherOperationInProgress", "count": 1}))?);
    let err = client
        .put::<_, Value>(&vnet_id("faults")?, &NETWORK, &vnet())
        .await
        .unwrap_err();
    assert_eq!(
        (err.category(), err.code()),
        (Category::Conflict, Some("AnotherOperationInProgress"))
    );

    // A slow answer runs into the client's per-request timeout.
    let impatient = azure.cloud.http_client(Duration::from_millis(300))?;
    let client_with_timeout = ArmClient::new(&azure.cloud, azure.secret_credential()?, &impatient, "test");
    let _ = emulator.add_fault(fault(
        json!({"method": "GET", "path": "*/resourceGroups/faults", "latencyMs": 2000, "count": 1}),
    )?);
    let err = client_with_timeout
        .get::<Value>(&group_id("faults")?, &GROUPS)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no answer within 0.3 s"), "{err}");
    assert_eq!(err.category(), Category::Transient);

    // A real refusal: a location the subscription does not offer.
    let mut bad = vnet();
    bad.location = "atlantis".to_owned();
    let err = client
        .put::<_, Value>(&vnet_id("faults")?, &NETWORK, &bad)
        .await
        .unwrap_err();
    assert_eq!(err.category(), Category::InvalidInput, "{err}");
    assert!(err.category().is_terminal());
    assert_eq!(err.code(), Some("LocationNotAvailableForResourceType"));

    // An operation that ARM accepted and that then failed.
    let _ = emulator.add_fault(fault(json!({"method": "PUT", "path": "*/virtualNetworks/*", "failOperation": true, "code": "InternalServerError", "count": 1}))?);
    let Outcome::InProgress(progress) = client
        .put::<_, Value>(&vnet_id("faults")?, &NETWORK, &vnet())
        .await?
    else {
        return Err("the network is created by an operation".into());
    };
    let outcome = client.poll::<Value>(&progress.token).await?;
    let PollOutcome::Failed(err) = outcome else {
        return Err(format!("expected a failed operation, got {outcome:?}").into());
    };
    assert_eq!(err.code(), Some("InternalServerError"), "{err}");
    assert_eq!(err.category(), Category::Transient);
    Ok(())
}

#[tokio::test]
async fn lists_follow_next_link_to_the_last_page() -> TestResult {
    let azure = start(Config {
        page_size: 2,
        ..Config::default()
    })
    .await?;
    let client = azure.client()?;
    for index in 0..5 {
        create_group(&client, &format!("paged-{index}")).await?;
    }
    let subscription = ResourceId::subscription_scope(SUBSCRIPTION.parse()?);
    let groups: Vec<ResourceGroup> = client
        .list(&subscription, "Microsoft.Resources/resourceGroups", &GROUPS)
        .await?;
    let mut names: Vec<String> = groups
        .iter()
        .filter_map(|group| group.id.as_ref().map(|id| id.name().into_owned()))
        .collect();
    names.sort();
    assert_eq!(names, ["paged-0", "paged-1", "paged-2", "paged-3", "paged-4"]);
    let pages = azure
        .requests()
        .iter()
        .filter(|logged| {
            logged.method == "GET"
                && logged
                    .path
                    .eq_ignore_ascii_case(&format!("{subscription}/resourceGroups"))
        })
        .count();
    assert_eq!(pages, 3);

    // Child resources of a resource: the subnets of a network.
    let network = json!({
        "location": LOCATION,
        "properties": {
            "addressSpace": {"addressPrefixes": ["10.0.0.0/16"]},
            "subnets": (0..3).map(|i| json!({"name": format!("s{i}"), "properties": {"addressPrefix": format!("10.0.{i}.0/24")}})).collect::<Vec<_>>(),
        }
    });
    if let Outcome::InProgress(progress) = client
        .put::<_, Value>(&vnet_id("paged-0")?, &NETWORK, &network)
        .await?
    {
        poll_until_done::<Value>(&client, progress.token).await?;
    }
    let subnets: Vec<Value> = client
        .list(
            &vnet_id("paged-0")?,
            "Microsoft.Network/virtualNetworks/subnets",
            &NETWORK,
        )
        .await?;
    assert_eq!(subnets.len(), 3);
    Ok(())
}
