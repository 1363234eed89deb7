//! Microsoft.Storage: storage accounts, the commonest target of private endpoints. Written as the
//! storage provider writes them: a create is accepted (202, no body) with only a `Location` to
//! poll, which answers the account once it is ready; a delete is done at once. Account names are
//! global: one taken anywhere is refused.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::names::Naming;
use super::{
    BackReferenceStyle, Concurrency, Flavour, Hooks, Lro, NO_HOOKS, OperationsAt, Prepare, ResourceType,
    fields,
};
use crate::error::ArmError;
use crate::state::{State, StatusStyle};

/// The recorded sessions' api-version, the Go SDK's and the Python SDK's (azure-mgmt-storage 25: 2026-09-01).
const API_VERSIONS: &[&str] = &[
    "2021-04-01",
    "2021-09-01",
    "2022-09-01",
    "2023-01-01",
    "2023-05-01",
    "2024-01-01",
    "2025-01-01",
    "2025-06-01",
    "2026-09-01",
];

static STORAGE: Flavour = Flavour {
    status: StatusStyle::Plain,
    creating: "Creating",
    updating: "Succeeded",
    status_segment: "asyncoperations",
    operations: OperationsAt::Location {
        result: "asyncoperations",
    },
    etag: None,
    provisioning_state: true,
    create_status: StatusCode::OK,
    back_references: BackReferenceStyle::WhenPresent,
    settles_unchanged: false,
    concurrency: Concurrency::Conflict,
};

fn lowercase_or_digit(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn refuse_name(_: &Naming, name: &str) -> ArmError {
    ArmError::new(
        StatusCode::BAD_REQUEST,
        "AccountNameInvalid",
        format!(
            "{name} is not a valid storage account name. Storage account name must be between 3 and 24 characters in length and use numbers and lower-case letters only."
        ),
    )
}

static ACCOUNT_NAMES: Naming = Naming {
    min: 3,
    max: 24,
    allowed: lowercase_or_digit,
    first: lowercase_or_digit,
    last: lowercase_or_digit,
    rule: "A storage account name has 3 to 24 lower-case letters and digits.",
    refuse: refuse_name,
};

pub(crate) static STORAGE_ACCOUNT: ResourceType = ResourceType {
    put: Lro::AcceptedBare,
    delete: Lro::Sync,
    naming: &ACCOUNT_NAMES,
    hooks: Hooks {
        render: Some(super::network::show_endpoint_connections),
        ..NO_HOOKS
    },
    ..ResourceType::new(
        "Microsoft.Storage/storageAccounts",
        API_VERSIONS,
        &STORAGE,
        prepare_account,
    )
};

pub(crate) static TYPES: &[&ResourceType] = &[&STORAGE_ACCOUNT];

const KINDS: &[&str] = &[
    "StorageV2",
    "Storage",
    "BlobStorage",
    "BlockBlobStorage",
    "FileStorage",
];
const SKUS: &[&str] = &[
    "Standard_LRS",
    "Standard_GRS",
    "Standard_RAGRS",
    "Standard_ZRS",
    "Premium_LRS",
    "Premium_ZRS",
    "Standard_GZRS",
    "Standard_RAGZRS",
];

/// The services an account of each kind serves, as its primary endpoints list them.
fn services(kind: &str) -> &'static [&'static str] {
    match kind {
        "BlobStorage" => &["dfs", "blob", "table"],
        "BlockBlobStorage" => &["dfs", "blob", "web"],
        "FileStorage" => &["file"],
        "Storage" => &["blob", "queue", "table", "file"],
        _ => &["dfs", "web", "blob", "queue", "table", "file"],
    }
}

/// The private endpoint group ids (sub-resources) an account offers.
pub(crate) const GROUP_IDS: &[&str] = &[
    "blob",
    "blob_secondary",
    "table",
    "table_secondary",
    "queue",
    "queue_secondary",
    "file",
    "web",
    "web_secondary",
    "dfs",
    "dfs_secondary",
];

/// Account names are unique across Azure.
fn check_name_free(state: &State, own_key: &str, name: &str) -> Result<(), ArmError> {
    let taken = state.resources.iter().any(|(key, stored)| {
        stored.type_name == STORAGE_ACCOUNT.name
            && **key != *own_key
            && key
                .rsplit('/')
                .next()
                .is_some_and(|other| other.eq_ignore_ascii_case(name))
    });
    if taken {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "StorageAccountAlreadyTaken",
            format!("The storage account named {name} is already taken."),
        ));
    }
    Ok(())
}

fn prepare_account(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let name = prepare.id.name().to_owned();
    check_name_free(prepare.state, &prepare.id.key(), &name)?;
    let kind = fields::one_of(&prepare.doc, "kind", "", KINDS)?.ok_or_else(|| fields::missing("kind"))?;
    prepare.doc.insert("kind".into(), json!(kind));
    let requested = fields::object(&prepare.doc, "sku", "")?
        .cloned()
        .unwrap_or_default();
    let sku = fields::one_of(&requested, "name", "sku", SKUS)?.ok_or_else(|| fields::missing("sku.name"))?;
    let tier = if sku.starts_with("Premium") {
        "Premium"
    } else {
        "Standard"
    };
    prepare
        .doc
        .insert("sku".into(), json!({ "name": sku, "tier": tier }));
    // Storage shows tags even when there are none.
    if prepare.doc.get("tags").is_none_or(Value::is_null) {
        prepare.doc.insert("tags".into(), json!({}));
    }
    let properties = prepare.properties()?.clone();
    if let Some(policy) = fields::object(&properties, "keyPolicy", "properties")?
        && fields::integer(policy, "keyExpirationPeriodInDays", "properties.keyPolicy")?
            .is_some_and(|days| days < 1)
    {
        return Err(ArmError::new(
            StatusCode::BAD_REQUEST,
            "InvalidValuesForRequestParameters",
            "Values for request parameters are invalid: keyPolicy.keyExpirationPeriodInDays.",
        ));
    }
    if matches!(kind, "StorageV2" | "BlobStorage") {
        prepare.default("accessTier", json!("Hot"))?;
    }
    prepare.default("minimumTlsVersion", json!("TLS1_2"))?;
    prepare.default("allowBlobPublicAccess", json!(false))?;
    prepare.default("allowCrossTenantReplication", json!(false))?;
    prepare.default("supportsHttpsTrafficOnly", json!(true))?;
    prepare.default(
        "networkAcls",
        json!({"bypass": "AzureServices", "virtualNetworkRules": [], "ipRules": [], "defaultAction": "Allow"}),
    )?;
    let now = crate::time::rfc3339(std::time::SystemTime::now());
    prepare.keep("creationTime", || json!(now))?;
    let created = prepare.properties()?["creationTime"].clone();
    prepare.keep("keyCreationTime", || json!({ "key1": created, "key2": created }))?;
    prepare.keep("encryption", || {
        json!({
            "services": {
                "file": {"keyType": "Account", "enabled": true, "lastEnabledTime": created},
                "blob": {"keyType": "Account", "enabled": true, "lastEnabledTime": created},
            },
            "keySource": "Microsoft.Storage",
        })
    })?;
    let endpoints: serde_json::Map<String, Value> = services(kind)
        .iter()
        .map(|service| {
            (
                (*service).to_owned(),
                json!(format!("https://{name}.{service}.core.windows.net/")),
            )
        })
        .collect();
    let location = prepare.location.to_owned();
    let properties = prepare.properties()?;
    properties.insert("primaryEndpoints".into(), Value::Object(endpoints));
    properties.insert("primaryLocation".into(), json!(location));
    properties.insert("statusOfPrimary".into(), json!("available"));
    // Listed from the endpoints that connect to it, when read.
    properties.remove("privateEndpointConnections");
    Ok(())
}
