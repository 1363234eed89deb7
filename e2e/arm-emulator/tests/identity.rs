//! Managed identities, role assignments and definitions, seeded resources, snapshots and the
//! inventory.

mod common;

use arm_emulator::Emulator;
use arm_emulator::config::{Config, DEFAULT_CLIENT_ID, SeedResource};
use axum::http::StatusCode;
use serde_json::{Value, json};

const SUB: &str = "/subscriptions/00000000-0000-0000-0000-000000000000";
const RG: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/ids";
const CONTRIBUTOR: &str = "b24988ac-6180-42a0-ab88-20f7382dd24c";

/// Sends a request as the default principal: the status and JSON body.
async fn send(emulator: &Emulator, method: &str, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
    let reply = common::call(emulator, DEFAULT_CLIENT_ID, method, uri, body, &[]).await;
    (reply.status, reply.body)
}

fn identity_url(name: &str) -> String {
    format!("{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}?api-version=2023-01-31")
}

fn assignment_url(name: &str) -> String {
    format!("{RG}/providers/Microsoft.Authorization/roleAssignments/{name}?api-version=2022-04-01")
}

fn assignment(principal: &str, role: &str) -> Value {
    json!({"properties": {"principalId": principal, "roleDefinitionId": format!("{SUB}/providers/Microsoft.Authorization/roleDefinitions/{role}")}})
}

async fn with_group() -> Emulator {
    let emulator = Emulator::new(Config::default());
    let (status, _) = send(
        &emulator,
        "PUT",
        &format!("{RG}?api-version=2021-04-01"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    emulator
}

#[tokio::test]
async fn identities_get_stable_principals_that_roles_can_be_assigned_to() {
    let emulator = with_group().await;
    let (status, identity) = send(
        &emulator,
        "PUT",
        &identity_url("capz"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let principal = identity["properties"]["principalId"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&principal).is_ok());
    assert!(identity["properties"].get("provisioningState").is_none());
    let (status, again) = send(
        &emulator,
        "PUT",
        &identity_url("capz"),
        Some(json!({"location": "westeurope", "tags": {"a": "b"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["properties"]["principalId"], principal.as_str());

    let (status, created) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(assignment(&principal, CONTRIBUTOR)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["properties"]["scope"], RG);
    assert_eq!(created["properties"]["principalType"], "ServicePrincipal");
    // Who created it shows on reads, not in the create's answer.
    assert_eq!(created["properties"]["createdBy"], Value::Null);
    let (_, read) = send(
        &emulator,
        "GET",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        None,
    )
    .await;
    let me = Config::default().principals[0].object_id();
    assert_eq!(read["properties"]["createdBy"], me.as_str());
    assert_eq!(read["properties"]["updatedBy"], me.as_str());
    let (status, duplicate) = send(
        &emulator,
        "PUT",
        &assignment_url("0f8fad5b-d9cb-469f-a165-70867728950e"),
        Some(assignment(&principal, CONTRIBUTOR)),
    )
    .await;
    assert_eq!(
        (status, duplicate["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("RoleAssignmentExists"))
    );

    let (status, listed) = send(
        &emulator,
        "GET",
        &format!("{SUB}/providers/Microsoft.Authorization/roleAssignments?api-version=2022-04-01"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["value"].as_array().map(Vec::len), Some(1));
    let (status, deleted) = send(
        &emulator,
        "DELETE",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(deleted["properties"]["principalId"], principal.as_str());
    let (status, _) = send(
        &emulator,
        "DELETE",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, missing) = send(
        &emulator,
        "GET",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["error"]["code"], "RoleAssignmentNotFound");
}

#[tokio::test]
async fn role_assignments_refuse_what_azure_refuses() {
    let emulator = with_group().await;
    let (_, identity) = send(
        &emulator,
        "PUT",
        &identity_url("capz"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let principal = identity["properties"]["principalId"].as_str().unwrap().to_owned();
    let (status, refused) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(assignment("11111111-2222-3333-4444-555555555555", CONTRIBUTOR)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(refused["error"]["code"], "PrincipalNotFound");
    let (_, refused) = send(
        &emulator,
        "PUT",
        &assignment_url("not-a-guid"),
        Some(assignment(&principal, CONTRIBUTOR)),
    )
    .await;
    assert_eq!(refused["error"]["code"], "InvalidRoleAssignmentId");
    let (_, refused) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(assignment("wow", CONTRIBUTOR)),
    )
    .await;
    assert_eq!(refused["error"]["code"], "InvalidPrincipalId");
    let (_, refused) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(assignment(&principal, "00000000-1111-2222-3333-444444444444")),
    )
    .await;
    assert_eq!(refused["error"]["code"], "RoleDefinitionDoesNotExist");
}

#[tokio::test]
async fn custom_roles_are_completed_as_azure_answers_them() {
    let emulator = Emulator::new(Config::default());
    let url = format!(
        "{SUB}/providers/Microsoft.Authorization/roleDefinitions/63f8a463-35f8-44ec-971a-d76c2aa711e6?api-version=2022-04-01"
    );
    let (status, created) = send(
        &emulator,
        "PUT",
        &url,
        Some(json!({"properties": {
            "roleName": "reader-of-groups",
            "type": "customRole",
            "permissions": [{"actions": ["Microsoft.Resources/subscriptions/resourceGroups/read"]}]
        }})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let properties = &created["properties"];
    assert_eq!(properties["type"], "CustomRole");
    assert_eq!(properties["assignableScopes"], json!([SUB]));
    assert_eq!(properties["description"], Value::Null);
    assert_eq!(
        properties["permissions"][0],
        json!({
            "actions": ["Microsoft.Resources/subscriptions/resourceGroups/read"],
            "notActions": [], "dataActions": [], "notDataActions": []
        })
    );
    assert!(properties["createdOn"].is_string());
    let (status, _) = send(&emulator, "DELETE", &url, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, missing) = send(&emulator, "GET", &url, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(missing["error"]["code"], "RoleDefinitionDoesNotExist");
}

#[tokio::test]
async fn built_in_roles_exist_in_every_subscription_and_the_tenant() {
    let emulator = Emulator::new(Config::default());
    for scope in [SUB, ""] {
        let (status, role) = send(&emulator, "GET", &format!("{scope}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}?api-version=2022-04-01"), None).await;
        assert_eq!(status, StatusCode::OK, "{scope}");
        assert_eq!(role["properties"]["roleName"], "Contributor");
    }
}

#[tokio::test]
async fn federated_credentials_need_an_https_issuer_subject_and_audience() {
    let emulator = with_group().await;
    send(
        &emulator,
        "PUT",
        &identity_url("wid"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let url = format!(
        "{RG}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/wid/federatedIdentityCredentials/capz?api-version=2023-01-31"
    );
    let (status, refused) = send(&emulator, "PUT", &url, Some(json!({"properties": {"issuer": "http://insecure", "subject": "s", "audiences": ["api://AzureADTokenExchange"]}}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("properties.issuer")
    );
    let body = json!({"properties": {"issuer": "https://issuer.example", "subject": "system:serviceaccount:capz-system:capz-manager", "audiences": ["api://AzureADTokenExchange"]}});
    let (status, created) = send(&emulator, "PUT", &url, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let (status, _) = send(
        &emulator,
        "PUT",
        &url.replace("/wid/", "/missing/"),
        Some(json!({"properties": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn seeds_snapshots_and_the_inventory() {
    let config = Config {
        resources: vec![
            SeedResource {
                id: RG.into(),
                body: json!({"location": "westeurope"}),
            },
            SeedResource {
                id: format!("{RG}/providers/Microsoft.Network/virtualNetworks/existing"),
                body: json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0/16"]}}}),
            },
            SeedResource {
                id: format!("{RG}/providers/Microsoft.Network/privateDnsZones/example.internal"),
                body: json!({"location": "global"}),
            },
        ],
        ..Config::default()
    };
    let emulator = Emulator::new(config.clone());
    emulator.seed_resources().unwrap();
    let (_, vnet) = send(
        &emulator,
        "GET",
        &format!("{RG}/providers/Microsoft.Network/virtualNetworks/existing?api-version=2024-05-01"),
        None,
    )
    .await;
    assert_eq!(vnet["properties"]["provisioningState"], "Succeeded");
    send(
        &emulator,
        "PUT",
        &identity_url("made"),
        Some(json!({"location": "westeurope"})),
    )
    .await;

    let (_, inventory) = send(&emulator, "GET", "/_emulator/inventory", None).await;
    let entries = inventory["resources"].as_array().unwrap();
    let seeded_network = entries
        .iter()
        .find(|entry| entry["id"].as_str().unwrap().ends_with("/existing"))
        .unwrap();
    assert_eq!(seeded_network["seeded"], true);
    // A zone comes with its SOA record set, which is as much the seed's as the zone.
    let soa = entries
        .iter()
        .find(|entry| entry["id"].as_str().unwrap().ends_with("/example.internal/SOA/@"))
        .unwrap();
    assert_eq!(soa["seeded"], true);
    let made = entries
        .iter()
        .find(|entry| entry["id"].as_str().unwrap().ends_with("/made"))
        .unwrap();
    assert_eq!(made["seeded"], false);

    let (_, snapshot) = send(&emulator, "GET", "/_emulator/snapshot", None).await;
    let copy = Emulator::new(Config::default());
    let (status, _) = send(&copy, "PUT", "/_emulator/snapshot", Some(snapshot)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, restored) = send(&copy, "GET", &identity_url("made"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(restored["name"], "made");
    let (status, _) = send(
        &copy,
        "PUT",
        "/_emulator/snapshot",
        Some(json!({"resources": [{"type": "Microsoft.Nope/things", "body": {"id": "/x"}}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let (status, _) = send(&emulator, "POST", "/_emulator/reset", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(&emulator, "GET", &identity_url("made"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(
        &emulator,
        "GET",
        &format!("{RG}/providers/Microsoft.Network/virtualNetworks/existing?api-version=2024-05-01"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let broken = Emulator::new(Config {
        resources: vec![SeedResource {
            id: format!("{RG}/providers/Microsoft.Network/virtualNetworks/orphan"),
            body: json!({"location": "westeurope"}),
        }],
        ..Config::default()
    });
    let err = broken.seed_resources().unwrap_err().to_string();
    assert!(
        err.contains("orphan") && err.contains("ResourceGroupNotFound"),
        "{err}"
    );
}

#[tokio::test]
async fn snapshots_restore_whatever_their_size_but_not_damaged_ones() {
    let emulator = with_group().await;
    // More than the 2 MiB a request body gets by default.
    for index in 0..40 {
        let (status, _) = send(
            &emulator,
            "PUT",
            &identity_url(&format!("id-{index}")),
            Some(json!({"location": "westeurope", "tags": {"padding": "p".repeat(60_000)}})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (_, snapshot) = send(&emulator, "GET", "/_emulator/snapshot", None).await;
    assert!(snapshot.to_string().len() > 2 << 20);
    let copy = Emulator::new(Config::default());
    let (status, _) = send(&copy, "PUT", "/_emulator/snapshot", Some(snapshot.clone())).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(&copy, "GET", &identity_url("id-39"), None).await;
    assert_eq!(status, StatusCode::OK);

    // Documents that later requests could not work on are refused, and the state stays.
    let group = snapshot["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "Microsoft.Resources/resourceGroups")
        .unwrap()
        .clone();
    let mut bad_properties = group.clone();
    bad_properties["body"]["properties"] = json!("Succeeded");
    let mut wrong_name = group.clone();
    wrong_name["body"]["name"] = json!(format!("{RG}/providers/Microsoft.Nope/things/a"));
    let mut wrong_type = group;
    wrong_type["type"] = json!("Microsoft.ManagedIdentity/userAssignedIdentities");
    // A route answered under its table must carry the table's id, not another resource's.
    let table = format!("{RG}/providers/Microsoft.Network/routeTables/rt");
    let misplaced_child = json!({"type": "Microsoft.Network/routeTables", "body": {
        "id": table, "name": "rt", "properties": {"routes": [{
            "id": format!("{RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/r"),
            "name": "r", "properties": {"addressPrefix": "0.0.0.0/0", "nextHopType": "None"},
        }]},
    }});
    for item in [bad_properties, wrong_name, wrong_type, misplaced_child] {
        let (status, _) = send(
            &copy,
            "PUT",
            "/_emulator/snapshot",
            Some(json!({"resources": [item]})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{item}");
    }
    let (status, _) = send(&copy, "DELETE", &format!("{RG}?api-version=2021-04-01"), None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn roles_are_role_definitions_built_ins_stay_and_names_follow_the_rules() {
    let emulator = with_group().await;
    for scope in [SUB, ""] {
        let owner = format!(
            "{scope}/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635?api-version=2022-04-01"
        );
        let custom = json!({"properties": {"roleName": "mine", "permissions": [{"actions": ["*/read"]}]}});
        for (method, body) in [("PUT", Some(custom)), ("DELETE", None)] {
            let (status, refused) = send(&emulator, method, &owner, body).await;
            assert_eq!(
                (status, refused["error"]["code"].as_str()),
                (StatusCode::FORBIDDEN, Some("AuthorizationFailed")),
                "{method} {owner}"
            );
        }
        let (status, role) = send(&emulator, "GET", &owner, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(role["properties"]["roleName"], "Owner");
    }
    // An id that exists but is no role definition is no role either.
    let (_, identity) = send(
        &emulator,
        "PUT",
        &identity_url("capz"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let mut not_a_role = assignment(
        identity["properties"]["principalId"].as_str().unwrap(),
        CONTRIBUTOR,
    );
    not_a_role["properties"]["roleDefinitionId"] = identity["id"].clone();
    let (status, refused) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(not_a_role),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("RoleDefinitionDoesNotExist"))
    );
    for name in ["ab", "-abc", "a_b%20c", &"i".repeat(129)] {
        let (status, refused) = send(
            &emulator,
            "PUT",
            &identity_url(name),
            Some(json!({"location": "westeurope"})),
        )
        .await;
        assert_eq!(
            (status, refused["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("InvalidResourceName")),
            "{name}"
        );
    }
}

#[tokio::test]
async fn rbac_mode_needs_a_role_assignment_covering_the_scope() {
    use arm_emulator::config::{DEFAULT_TENANT, Principal};
    let principal = |client_id: &str| Principal {
        client_id: client_id.into(),
        tenant: DEFAULT_TENANT.into(),
        object_id: None,
        secret: Some("s".into()),
        certificate: None,
        federated: Vec::new(),
    };
    let admin = principal("aaaaaaaa-0000-0000-0000-000000000001");
    let reader = principal("aaaaaaaa-0000-0000-0000-000000000002");
    let owner = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635";
    let emulator = Emulator::new(Config {
        rbac: true,
        resources: vec![SeedResource {
            id: format!(
                "{SUB}/providers/Microsoft.Authorization/roleAssignments/3f2504e0-4f89-11d3-9a0c-0305e82c3301"
            ),
            body: assignment(&admin.object_id(), owner),
        }],
        principals: vec![admin.clone(), reader.clone()],
        ..Config::default()
    });
    emulator.seed_resources().unwrap();
    let call = |who: &Principal, method: &'static str, uri: String, body: Option<Value>| {
        let (emulator, client_id) = (emulator.clone(), who.client_id.clone());
        async move {
            let reply = common::call(&emulator, &client_id, method, &uri, body, &[]).await;
            (reply.status, reply.body)
        }
    };
    let group = format!("{RG}?api-version=2021-04-01");
    let (status, refused) = call(
        &reader,
        "PUT",
        group.clone(),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(refused["error"]["code"], "AuthorizationFailed");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Microsoft.Resources/subscriptions/resourceGroups/write")
    );
    let (status, _) = call(
        &admin,
        "PUT",
        group.clone(),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let reader_role = "acdd72a7-3385-48ef-bd42-f606fba81ae7";
    let (status, _) = call(
        &admin,
        "PUT",
        assignment_url("6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
        Some(assignment(&reader.object_id(), reader_role)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = call(&reader, "GET", group.clone(), None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&reader, "DELETE", group, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn roles_and_assignments_are_listed_as_seen_from_a_scope() {
    let emulator = with_group().await;
    let definitions = format!(
        "{RG}/providers/Microsoft.Authorization/roleDefinitions?api-version=2022-04-01&$filter=roleName%20eq%20'Contributor'"
    );
    let (status, found) = send(&emulator, "GET", &definitions, None).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["value"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(
        found["value"][0]["id"],
        format!("{SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}")
    );
    let (_, identity) = send(
        &emulator,
        "PUT",
        &identity_url("capz"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let principal = identity["properties"]["principalId"].as_str().unwrap().to_owned();
    let at_subscription = format!(
        "{SUB}/providers/Microsoft.Authorization/roleAssignments/0f8fad5b-d9cb-469f-a165-70867728950e?api-version=2022-04-01"
    );
    let (status, _) = send(
        &emulator,
        "PUT",
        &at_subscription,
        Some(assignment(&principal, CONTRIBUTOR)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = send(
        &emulator,
        "PUT",
        &assignment_url("7b83888d-03fb-55bb-8209-aec4e36328a8"),
        Some(assignment(&principal, "acdd72a7-3385-48ef-bd42-f606fba81ae7")),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let count = |body: &Value| body["value"].as_array().map(Vec::len);
    let list = |scope: &str, filter: &str| {
        format!("{scope}/providers/Microsoft.Authorization/roleAssignments?api-version=2022-04-01{filter}")
    };
    // From the group: its own and the subscription's; from the subscription: also those below.
    let (_, seen) = send(&emulator, "GET", &list(RG, ""), None).await;
    assert_eq!(count(&seen), Some(2), "{seen}");
    let (_, seen) = send(&emulator, "GET", &list(SUB, "&$filter=atScope()"), None).await;
    assert_eq!(count(&seen), Some(1), "{seen}");
    let (_, seen) = send(&emulator, "GET", &list(SUB, ""), None).await;
    assert_eq!(count(&seen), Some(2), "{seen}");
    let (_, seen) = send(
        &emulator,
        "GET",
        &list(SUB, &format!("&$filter=principalId%20eq%20'{principal}'")),
        None,
    )
    .await;
    assert_eq!(count(&seen), Some(2), "{seen}");
}

/// The names a role list answers for a `$filter` (URL-encoded by the caller).
async fn listed_names(emulator: &Emulator, collection: &str, filter: &str) -> Vec<String> {
    let url = format!("{collection}?api-version=2022-04-01&$filter={filter}");
    let (status, listed) = send(emulator, "GET", &url, None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert!(listed["value"].is_array(), "{listed}");
    listed["value"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn role_lists_filter_as_azure_filters_them() {
    let emulator = with_group().await;
    let definitions = format!("{SUB}/providers/Microsoft.Authorization/roleDefinitions");
    assert_eq!(
        listed_names(&emulator, &definitions, "roleName%20eq%20%27Contributor%27").await,
        [CONTRIBUTOR]
    );
    assert!(
        listed_names(&emulator, &definitions, "type%20eq%20%27CustomRole%27")
            .await
            .is_empty()
    );
    let (status, refused) = send(
        &emulator,
        "GET",
        &format!("{definitions}?api-version=2022-04-01&$filter=colour%20eq%20%27red%27"),
        None,
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("InvalidFilterInQueryString"))
    );

    let (_, identity) = send(
        &emulator,
        "PUT",
        &identity_url("grantee"),
        Some(json!({"location": "westeurope"})),
    )
    .await;
    let principal = identity["properties"]["principalId"].as_str().unwrap().to_owned();
    let below = "7b83888d-03fb-55bb-8209-aec4e36328a8";
    let (status, _) = send(
        &emulator,
        "PUT",
        &assignment_url(below),
        Some(assignment(&principal, CONTRIBUTOR)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let assignments = format!("{SUB}/providers/Microsoft.Authorization/roleAssignments");
    assert_eq!(
        listed_names(
            &emulator,
            &assignments,
            &format!("principalId%20eq%20%27{principal}%27")
        )
        .await,
        [below]
    );
    assert_eq!(
        listed_names(&emulator, &assignments, &format!("assignedTo(%27{principal}%27)")).await,
        [below]
    );
    assert!(
        listed_names(&emulator, &assignments, "atScope()")
            .await
            .is_empty()
    );
    assert!(
        listed_names(
            &emulator,
            &assignments,
            "principalId%20eq%20%2700000000-0000-0000-0000-00000000abcd%27"
        )
        .await
        .is_empty()
    );
}
