//! Resource groups behave as ARM's do: status codes, bodies, errors and the delete operation.

mod common;

use arm_emulator::config::DEFAULT_CLIENT_ID;
use arm_emulator::{Config, Emulator};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::Reply;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

const GROUP: &str = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/capz-rg";
const V: &str = "api-version=2020-06-01";

/// `Authorization` for the default principal: every ARM call needs a token.
fn bearer(emulator: &Emulator) -> String {
    common::bearer(emulator, DEFAULT_CLIENT_ID)
}

async fn send(emulator: &Emulator, method: &str, uri: &str, body: Option<Value>) -> Reply {
    common::call(emulator, DEFAULT_CLIENT_ID, method, uri, body, &[]).await
}

/// An emulator knowing the two subscriptions the tests use.
fn emulator_with(config: Config) -> Emulator {
    let mut config = config;
    config.subscriptions = [
        "00000000-0000-0000-0000-000000000001",
        "00000000-0000-0000-0000-000000000002",
    ]
    .into_iter()
    .map(|id| arm_emulator::config::Subscription {
        id: id.into(),
        tenant: arm_emulator::config::DEFAULT_TENANT.into(),
        display_name: String::new(),
    })
    .collect();
    Emulator::new(config)
}

fn group_url() -> String {
    format!("{GROUP}?{V}")
}

/// Creates the test's resource group in West Europe.
async fn create_group(emulator: &Emulator) {
    let created = send(
        emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
}

#[tokio::test]
async fn create_read_update_and_list() {
    let emulator = emulator_with(Config::default());
    let created = send(
        &emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "westeurope", "tags": {"a": "1"}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(
        created.body,
        json!({
            "id": GROUP, "name": "capz-rg", "type": "Microsoft.Resources/resourceGroups",
            "location": "westeurope", "tags": {"a": "1"}, "properties": {"provisioningState": "Succeeded"}
        })
    );
    assert!(created.headers.contains_key("x-ms-request-id"));

    // Names are case-insensitive; the group keeps the name it was created with.
    let read = send(
        &emulator,
        "GET",
        &format!(
            "{}?{V}",
            GROUP.to_uppercase().replace("SUBSCRIPTIONS", "subscriptions")
        ),
        None,
    )
    .await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body["name"], "capz-rg");

    let updated = send(
        &emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "WestEurope", "tags": {"b": "2"}})),
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert_eq!(updated.body["tags"], json!({"b": "2"}));
    assert_eq!(updated.body["location"], "westeurope");

    let patched = send(
        &emulator,
        "PATCH",
        &group_url(),
        Some(json!({"tags": {"c": "3"}})),
    )
    .await;
    assert_eq!(patched.body["tags"], json!({"c": "3"}));

    let listed = send(
        &emulator,
        "GET",
        &format!("/subscriptions/00000000-0000-0000-0000-000000000001/resourcegroups?{V}"),
        None,
    )
    .await;
    assert_eq!(listed.body["value"].as_array().map(Vec::len), Some(1));
    let other = send(
        &emulator,
        "GET",
        &format!("/subscriptions/00000000-0000-0000-0000-000000000002/resourcegroups?{V}"),
        None,
    )
    .await;
    assert_eq!(other.body, json!({"value": []}));
}

#[tokio::test]
async fn delete_is_a_long_running_operation() {
    let emulator = emulator_with(Config::default());
    create_group(&emulator).await;
    let deleted = send(&emulator, "DELETE", &group_url(), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    assert_eq!(deleted.headers["retry-after"], "15");
    let location = deleted.headers["location"].to_str().unwrap().to_owned();
    let poll = location.trim_start_matches(&emulator.base_url()).to_owned();
    assert!(poll.contains("/operationresults/"), "{poll}");

    let done = send(&emulator, "GET", &poll, None).await;
    assert_eq!(done.status, StatusCode::OK);
    let gone = send(&emulator, "GET", &group_url(), None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.body["error"]["code"], "ResourceGroupNotFound");
    assert_eq!(
        send(&emulator, "HEAD", &group_url(), None).await.status,
        StatusCode::NOT_FOUND
    );

    // Deleting what is not there succeeds at once.
    assert_eq!(
        send(&emulator, "DELETE", &group_url(), None).await.status,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test]
async fn with_latency_the_operation_stays_in_progress() {
    let emulator = emulator_with(Config {
        operation_latency: std::time::Duration::from_hours(1),
        ..Config::default()
    });
    create_group(&emulator).await;
    let deleted = send(&emulator, "DELETE", &group_url(), None).await;
    let poll = deleted.headers["location"]
        .to_str()
        .unwrap()
        .trim_start_matches(&emulator.base_url())
        .to_owned();
    assert_eq!(
        send(&emulator, "GET", &poll, None).await.status,
        StatusCode::ACCEPTED
    );
    let deleting = send(&emulator, "GET", &group_url(), None).await;
    assert_eq!(deleting.body["properties"]["provisioningState"], "Deleting");
}

#[tokio::test]
async fn bad_requests_get_arm_errors_naming_the_problem() {
    let emulator = emulator_with(Config::default());
    let cases = [
        (
            "PUT",
            GROUP.to_owned(),
            Some(json!({"location": "westeurope"})),
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
        ),
        (
            "GET",
            format!("{GROUP}?api-version=1999-01-01"),
            None,
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
        ),
        (
            "PUT",
            format!("{GROUP}?{V}"),
            Some(json!({})),
            StatusCode::BAD_REQUEST,
            "LocationRequired",
        ),
        (
            "PUT",
            format!("{GROUP}?{V}"),
            Some(json!({"location": 3})),
            StatusCode::BAD_REQUEST,
            "InvalidRequestContent",
        ),
        (
            "PUT",
            format!("{GROUP}?{V}"),
            Some(json!({"location": "x", "tags": {"a": 1}})),
            StatusCode::BAD_REQUEST,
            "InvalidRequestContent",
        ),
        (
            "PUT",
            format!("{GROUP}?{V}"),
            Some(json!([1])),
            StatusCode::BAD_REQUEST,
            "InvalidRequestContent",
        ),
        (
            "PUT",
            format!("{GROUP}?{V}"),
            Some(json!({"location": "atlantis"})),
            StatusCode::BAD_REQUEST,
            "LocationNotAvailableForResourceGroup",
        ),
        (
            "GET",
            format!("/subscriptions/s/unknown/thing?{V}"),
            None,
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
        ),
        (
            "POST",
            format!("{GROUP}?{V}"),
            None,
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
        ),
    ];
    for (method, uri, body, status, code) in cases {
        let reply = send(&emulator, method, &uri, body).await;
        assert_eq!(
            (reply.status, reply.body["error"]["code"].as_str()),
            (status, Some(code)),
            "{method} {uri}"
        );
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // Not JSON at all.
    let request = Request::builder()
        .method("PUT")
        .uri(format!("{GROUP}?{V}"))
        .header("authorization", bearer(&emulator))
        .body(Body::from("{not json"))
        .unwrap();
    let response = emulator.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);

    create_group(&emulator).await;
    let moved = send(
        &emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "eastus"})),
    )
    .await;
    assert_eq!(
        (moved.status, moved.body["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("InvalidResourceGroupLocation"))
    );
}

/// Sends a body as raw bytes, whatever they are.
async fn send_raw(emulator: &Emulator, method: &str, uri: &str, body: Vec<u8>) -> Reply {
    common::call_with_body(emulator, DEFAULT_CLIENT_ID, method, uri, Body::from(body), &[]).await
}

#[tokio::test]
async fn names_arm_refuses_get_invalid_resource_group() {
    let emulator = emulator_with(Config::default());
    let subscription = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups";
    for name in ["a%20b", "dot.", "a%2Fb", &"g".repeat(91)] {
        let refused = send(
            &emulator,
            "PUT",
            &format!("{subscription}/{name}?{V}"),
            Some(json!({"location": "westeurope"})),
        )
        .await;
        assert_eq!(
            (refused.status, refused.body["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("InvalidResourceGroup")),
            "{name}: {}",
            refused.body
        );
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("'{name}'"))
        );
    }
    let fine = send(
        &emulator,
        "PUT",
        &format!("{subscription}/My_RG-(1).x?{V}"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.body);
}

#[tokio::test]
async fn bodies_over_four_megabytes_are_refused_as_arm_refuses_them() {
    let emulator = emulator_with(Config::default());
    let padded = |size: usize| {
        let mut body = vec![b' '; size];
        let json = br#"{"location": "westeurope"}"#;
        body[..json.len()].copy_from_slice(json);
        body
    };
    let refused = send_raw(&emulator, "PUT", &group_url(), padded((4 << 20) + 1)).await;
    assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(refused.body["error"]["code"], "RequestContentTooLarge");
    assert!(refused.headers.contains_key("x-ms-request-id"));
    let accepted = send_raw(&emulator, "PUT", &group_url(), padded(3 << 20)).await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.body);
    // Malformed JSON is refused quoting the parser, as ARM does.
    let malformed = send_raw(&emulator, "PATCH", &group_url(), b"{\"tags\": [".to_vec()).await;
    assert_eq!(malformed.body["error"]["code"], "InvalidRequestContent");
    assert!(
        malformed.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The request content was invalid and could not be deserialized: '"),
        "{}",
        malformed.body
    );
}

#[tokio::test]
async fn the_inventory_shows_what_the_clock_says_exists() {
    let emulator = emulator_with(Config::default());
    create_group(&emulator).await;
    let deleted = send(&emulator, "DELETE", &group_url(), None).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED);
    // Without latency the deletion is over; the inventory must not show the group any more.
    let inventory = send(&emulator, "GET", "/_emulator/inventory", None).await;
    let groups: Vec<&Value> = inventory.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|resource| resource["type"] == "Microsoft.Resources/resourceGroups")
        .collect();
    assert!(groups.is_empty(), "{groups:?}");
}

#[tokio::test]
async fn the_request_log_counts_answers() {
    let emulator = emulator_with(Config::default());
    create_group(&emulator).await;
    send(&emulator, "GET", &group_url(), None).await;
    send(&emulator, "GET", &group_url(), None).await;
    assert_eq!(
        emulator.count("PUT", "Microsoft.Resources/resourceGroups", 201),
        1
    );
    assert_eq!(
        emulator.count("GET", "Microsoft.Resources/resourceGroups", 200),
        2
    );
    let log = send(&emulator, "GET", "/_emulator/requests", None).await;
    assert_eq!(log.body["requests"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        send(&emulator, "POST", "/_emulator/reset", None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        send(&emulator, "GET", &group_url(), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        emulator.count("GET", "Microsoft.Resources/resourceGroups", 200),
        0
    );
}

#[tokio::test]
async fn it_serves_on_a_random_port() {
    let running = arm_emulator::start(([127, 0, 0, 1], 0).into(), Config::default())
        .await
        .unwrap();
    assert_ne!(running.address.port(), 0);
    assert_eq!(running.base_url(), format!("http://{}", running.address));
    let mut stream = tokio::net::TcpStream::connect(running.address).await.unwrap();
    stream
        .write_all(b"GET /_emulator/health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.ends_with("ok"), "{reply}");
}

#[tokio::test]
async fn tenants_subscriptions_and_locations_are_listed_for_sign_in_tools() {
    let emulator = emulator_with(Config::default());
    let tenants = send(&emulator, "GET", "/tenants?api-version=2022-12-01", None).await;
    assert_eq!(tenants.status, StatusCode::OK);
    assert_eq!(
        tenants.body["value"][0]["tenantId"],
        "00000000-0000-0000-0000-000000000000"
    );
    let listed = send(&emulator, "GET", "/subscriptions?api-version=2022-12-01", None).await;
    assert_eq!(listed.status, StatusCode::OK);
    let ids: Vec<&str> = listed.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["subscriptionId"].as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "00000000-0000-0000-0000-000000000001",
            "00000000-0000-0000-0000-000000000002"
        ]
    );
    let one = send(
        &emulator,
        "GET",
        "/subscriptions/00000000-0000-0000-0000-000000000002?api-version=2022-12-01",
        None,
    )
    .await;
    assert_eq!(one.body["state"], "Enabled");
    assert_eq!(
        one.body["id"],
        "/subscriptions/00000000-0000-0000-0000-000000000002"
    );
    let missing = send(
        &emulator,
        "GET",
        "/subscriptions/99999999-0000-0000-0000-000000000000?api-version=2022-12-01",
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["error"]["code"], "SubscriptionNotFound");
    let locations = send(
        &emulator,
        "GET",
        "/subscriptions/00000000-0000-0000-0000-000000000001/locations?api-version=2022-12-01",
        None,
    )
    .await;
    let westus2 = locations.body["value"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "westus2")
        .unwrap();
    assert_eq!(westus2["displayName"], "West US 2");
    assert_eq!(
        westus2["availabilityZoneMappings"].as_array().map(Vec::len),
        Some(3)
    );
    // A base URL ending in `/` joined with a path starting with one: answered as written once.
    let doubled = send(&emulator, "GET", "//subscriptions?api-version=2022-12-01", None).await;
    assert_eq!(doubled.status, StatusCode::OK);
    let metadata = send(
        &emulator,
        "GET",
        "//metadata/endpoints?api-version=2022-09-01",
        None,
    )
    .await;
    assert_eq!(metadata.status, StatusCode::OK, "{}", metadata.body);
    let refused = send(&emulator, "GET", "/subscriptions?api-version=2015-01-01", None).await;
    assert_eq!(refused.body["error"]["code"], "InvalidApiVersionParameter");
}

#[tokio::test]
async fn locations_are_stored_in_azure_spelling() {
    let emulator = emulator_with(Config::default());
    let created = send(
        &emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "West Europe"})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["location"], "westeurope");
    let elsewhere = send(
        &emulator,
        "PUT",
        &group_url(),
        Some(json!({"location": "East US"})),
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::CONFLICT);
    assert_eq!(elsewhere.body["error"]["code"], "InvalidResourceGroupLocation");
}

const TAGGED: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/tagged";

/// An emulator with the group `tagged` holding a network `vnet` and an identity `ident` tagged
/// `team: a`.
async fn with_tagged_group() -> Emulator {
    let emulator = Emulator::new(Config::default());
    let group = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/tagged";
    common::group_with_network(&emulator, group, "westeurope").await;
    let identity = format!(
        "{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/ident?api-version=2023-01-31"
    );
    let made = common::call(
        &emulator,
        DEFAULT_CLIENT_ID,
        "PUT",
        &identity,
        Some(json!({"location": "westeurope", "tags": {"team": "a"}})),
        &[],
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    emulator
}

#[tokio::test]
async fn tags_at_any_scope_replace_merge_and_delete() {
    let emulator = with_tagged_group().await;
    let group = TAGGED;
    let vnet = format!("{group}/providers/Microsoft.Network/virtualNetworks/vnet");
    let tags =
        |scope: &str| format!("{scope}/providers/Microsoft.Resources/tags/default?api-version=2021-04-01");
    let call = |method: &'static str, uri: String, body: Option<Value>| {
        let emulator = emulator.clone();
        async move { common::call(&emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await }
    };

    // Replace, merge, delete some, read: the resource shows them, with a new etag.
    let before = call("GET", format!("{vnet}?api-version=2024-05-01"), None).await;
    let put = call(
        "PUT",
        tags(&vnet),
        Some(json!({"properties": {"tags": {"env": "test", "owner": "capz"}}})),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(put.body["type"], "Microsoft.Resources/tags");
    let merged = call(
        "PATCH",
        tags(&vnet),
        Some(json!({"operation": "Merge", "properties": {"tags": {"cost": "1"}}})),
    )
    .await;
    assert_eq!(
        merged.body["properties"]["tags"],
        json!({"env": "test", "owner": "capz", "cost": "1"})
    );
    let deleted = call(
        "PATCH",
        tags(&vnet),
        Some(json!({"operation": "Delete", "properties": {"tags": {"owner": "other", "cost": ""}}})),
    )
    .await;
    assert_eq!(
        deleted.body["properties"]["tags"],
        json!({"env": "test", "owner": "capz"}),
        "a value that does not match keeps the tag"
    );
    let after = call("GET", format!("{vnet}?api-version=2024-05-01"), None).await;
    assert_eq!(after.body["tags"], json!({"env": "test", "owner": "capz"}));
    assert_ne!(after.body["etag"], before.body["etag"]);
    let bad = call(
        "PATCH",
        tags(&vnet),
        Some(json!({"operation": "Nope", "properties": {"tags": {}}})),
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let bad_name = call(
        "PUT",
        tags(&vnet),
        Some(json!({"properties": {"tags": {"a/b": "x"}}})),
    )
    .await;
    assert_eq!(bad_name.body["error"]["code"], "InvalidTagNameCharacters");
    // On a group and on the subscription too; a scope that does not exist is refused.
    let on_group = call(
        "PUT",
        tags(group),
        Some(json!({"properties": {"tags": {"stage": "dev"}}})),
    )
    .await;
    assert_eq!(on_group.status, StatusCode::OK, "{}", on_group.body);
    let read_group = call("GET", format!("{group}?api-version=2021-04-01"), None).await;
    assert_eq!(read_group.body["tags"], json!({"stage": "dev"}));
    let subscription = "/subscriptions/00000000-0000-0000-0000-000000000000";
    call(
        "PUT",
        tags(subscription),
        Some(json!({"properties": {"tags": {"org": "x"}}})),
    )
    .await;
    assert_eq!(
        call("GET", tags(subscription), None).await.body["properties"]["tags"],
        json!({"org": "x"})
    );
    let missing = call(
        "GET",
        tags(&format!(
            "{group}/providers/Microsoft.Network/virtualNetworks/nope"
        )),
        None,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.body);
}

#[tokio::test]
async fn generic_lists_show_tracked_resources_filtered() {
    let emulator = with_tagged_group().await;
    let group = TAGGED;
    let call = |method: &'static str, uri: String, body: Option<Value>| {
        let emulator = emulator.clone();
        async move { common::call(&emulator, DEFAULT_CLIENT_ID, method, &uri, body, &[]).await }
    };

    let subscription = "/subscriptions/00000000-0000-0000-0000-000000000000";
    // The generic lists show tracked resources in the generic shape, filtered.
    let listed = call("GET", format!("{group}/resources?api-version=2021-04-01"), None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let items = listed.body["value"].as_array().cloned().unwrap_or_default();
    let types: Vec<&str> = items.iter().filter_map(|item| item["type"].as_str()).collect();
    assert_eq!(types.len(), 2, "{}", listed.body);
    assert!(
        types.contains(&"Microsoft.Network/virtualNetworks")
            && types.contains(&"Microsoft.ManagedIdentity/userAssignedIdentities")
    );
    assert!(items.iter().all(|item| item.get("properties").is_none()));
    let by_type = call("GET", format!("{group}/resources?api-version=2021-04-01&$filter=resourceType%20eq%20'Microsoft.Network/virtualNetworks'"), None).await;
    assert_eq!(by_type.body["value"].as_array().map(Vec::len), Some(1));
    let by_tag = call("GET", format!("{subscription}/resources?api-version=2021-04-01&$filter=tagName%20eq%20'team'%20and%20tagValue%20eq%20'a'"), None).await;
    assert_eq!(by_tag.body["value"][0]["name"], "ident", "{}", by_tag.body);
    let unsupported = call(
        "GET",
        format!("{group}/resources?api-version=2021-04-01&$filter=size%20gt%203"),
        None,
    )
    .await;
    assert_eq!(unsupported.status, StatusCode::BAD_REQUEST);
    let no_group = call(
        "GET",
        format!("{subscription}/resourceGroups/none/resources?api-version=2021-04-01"),
        None,
    )
    .await;
    assert_eq!(no_group.body["error"]["code"], "ResourceGroupNotFound");
}
