//! The documents clients read before asking for a token: OpenID Connect discovery (v2 and v1),
//! the signing keys, MSAL's instance discovery, and ARM's cloud metadata (`/metadata/endpoints`),
//! all pointing at the emulator.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::error::{EntraError, OAuthError};
use super::{Context, Entra};
use crate::Emulator;

/// The audiences of ARM tokens, as the cloud metadata lists them.
const MANAGEMENT_AUDIENCES: [&str; 2] = [
    "https://management.core.windows.net/",
    "https://management.azure.com/",
];

/// A tenant as a discovery URL names it: one of the configured tenants, or one of the
/// multi-tenant names.
struct DiscoveryTenant {
    /// The path segment the document's URLs use.
    segment: String,
    /// The tenant in the issuer: the id, or the `{tenantid}` placeholder for multi-tenant names.
    issuer: String,
    /// Whether it is a single tenant (the multi-tenant documents have no region).
    single: bool,
}

impl Entra {
    fn discovery_tenant(&self, name: &str) -> Result<DiscoveryTenant, EntraError> {
        if let Some(id) = self.tenant(name) {
            return Ok(DiscoveryTenant {
                segment: id.to_owned(),
                issuer: id.to_owned(),
                single: true,
            });
        }
        if ["common", "organizations"]
            .iter()
            .any(|multi| multi.eq_ignore_ascii_case(name))
        {
            return Ok(DiscoveryTenant {
                segment: name.to_ascii_lowercase(),
                issuer: "{tenantid}".into(),
                single: false,
            });
        }
        Err(EntraError::tenant_not_found(name, OAuthError::InvalidTenant))
    }
}

/// Answers with the document `build` makes for the tenant, or Entra's error for an unknown one.
fn tenant_document(
    emulator: &Emulator,
    tenant: &str,
    headers: &HeaderMap,
    build: impl FnOnce(&str, &DiscoveryTenant) -> Value,
) -> Response {
    let context = Context::new(emulator, headers);
    match emulator.entra.discovery_tenant(tenant) {
        Ok(tenant) => context.json(StatusCode::OK, &build(&context.base, &tenant)),
        Err(err) => err.into_response(&context),
    }
}

/// `GET /{tenant}/v2.0/.well-known/openid-configuration`, the document MSAL reads first.
pub(crate) async fn openid_v2(
    State(emulator): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
) -> Response {
    tenant_document(&emulator, &tenant, &headers, |base, tenant| {
        let t = &tenant.segment;
        json!({
            "token_endpoint": format!("{base}/{t}/oauth2/v2.0/token"),
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
            "jwks_uri": format!("{base}/{t}/discovery/v2.0/keys"),
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "issuer": format!("{base}/{}/v2.0", tenant.issuer),
            "request_uri_parameter_supported": false,
            "userinfo_endpoint": "https://graph.microsoft.com/oidc/userinfo",
            "authorization_endpoint": format!("{base}/{t}/oauth2/v2.0/authorize"),
            "device_authorization_endpoint": format!("{base}/{t}/oauth2/v2.0/devicecode"),
            "http_logout_supported": true,
            "frontchannel_logout_supported": true,
            "end_session_endpoint": format!("{base}/{t}/oauth2/v2.0/logout"),
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nbf", "tid", "oid", "ver", "azp", "appid"],
            "kerberos_endpoint": format!("{base}/{t}/kerberos"),
            "tenant_region_scope": tenant.single.then_some("WW"),
            "cloud_instance_name": "microsoftonline.com",
            "cloud_graph_host_name": "graph.windows.net",
            "msgraph_host": "graph.microsoft.com",
            "rbac_url": "https://pas.windows.net",
        })
    })
}

/// `GET /{tenant}/.well-known/openid-configuration`, the v1 document (ADAL-era clients).
pub(crate) async fn openid_v1(
    State(emulator): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
) -> Response {
    tenant_document(&emulator, &tenant, &headers, |base, tenant| {
        let t = &tenant.segment;
        json!({
            "token_endpoint": format!("{base}/{t}/oauth2/token"),
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
            "jwks_uri": format!("{base}/common/discovery/keys"),
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "response_types_supported": ["code", "id_token", "code id_token", "token id_token", "token"],
            "scopes_supported": ["openid"],
            "issuer": format!("https://sts.windows.net/{}/", tenant.issuer),
            "microsoft_multi_refresh_token": true,
            "authorization_endpoint": format!("{base}/{t}/oauth2/authorize"),
            "device_authorization_endpoint": format!("{base}/{t}/oauth2/devicecode"),
            "http_logout_supported": true,
            "frontchannel_logout_supported": true,
            "end_session_endpoint": format!("{base}/{t}/oauth2/logout"),
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "nbf", "tid", "oid", "ver", "appid"],
            "check_session_iframe": format!("{base}/{t}/oauth2/checksession"),
            "userinfo_endpoint": format!("{base}/{t}/openid/userinfo"),
            "kerberos_endpoint": format!("{base}/{t}/kerberos"),
            "tenant_region_scope": tenant.single.then_some("WW"),
            "cloud_instance_name": "microsoftonline.com",
            "cloud_graph_host_name": "graph.windows.net",
            "msgraph_host": "graph.microsoft.com",
            "rbac_url": "https://pas.windows.net",
        })
    })
}

/// `GET /{tenant}/discovery/v2.0/keys` and `/{tenant}/discovery/keys`: the key access tokens are
/// signed with.
pub(crate) async fn keys(
    State(emulator): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
) -> Response {
    let keys: Vec<Value> = emulator
        .entra
        .signer
        .iter()
        .map(|signer| json!(signer.jwk()))
        .collect();
    tenant_document(&emulator, &tenant, &headers, |_, _| json!({ "keys": keys }))
}

/// `GET /common/discovery/instance?api-version=1.1&authorization_endpoint=...`: MSAL's instance
/// discovery, answering that the emulator's host is its own one and only alias.
pub(crate) async fn instance(
    State(emulator): State<Emulator>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let context = Context::new(&emulator, &headers);
    let query = query.unwrap_or_default();
    // The tenant is the first path segment of the authorization endpoint asked about.
    let tenant = form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "authorization_endpoint")
        .and_then(|(_, endpoint)| {
            let after_scheme = endpoint.split_once("://").map_or(&*endpoint, |(_, rest)| rest);
            after_scheme
                .split('/')
                .nth(1)
                .filter(|tenant| !tenant.is_empty())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "common".into());
    let host = context
        .base
        .split_once("://")
        .map_or(context.base.as_str(), |(_, host)| host);
    let body = json!({
        "tenant_discovery_endpoint": format!("{}/{tenant}/v2.0/.well-known/openid-configuration", context.base),
        "api-version": "1.1",
        "metadata": [{ "preferred_network": host, "preferred_cache": host, "aliases": [host] }],
    });
    context.json(StatusCode::OK, &body)
}

/// `GET /metadata/endpoints`: ARM's description of its cloud, here a custom cloud whose resource
/// manager and login endpoint are the emulator. `api-version=2022-09-01` answers one cloud,
/// 2019-05-01 and 2020-06-01 a list of clouds, and any other version (or none) the original,
/// shorter shape. Services the emulator does not play keep the public cloud's names.
pub(crate) async fn cloud_metadata(
    State(emulator): State<Emulator>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let context = Context::new(&emulator, &headers);
    let query = query.unwrap_or_default();
    let version = form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "api-version")
        .map(|(_, version)| version.into_owned());
    let base = context.base.as_str();
    let cloud = || {
        json!({
            "portal": "https://portal.azure.com",
            "authentication": {
                "loginEndpoint": base,
                "audiences": MANAGEMENT_AUDIENCES,
                "tenant": "common",
                "identityProvider": "AAD",
            },
            "media": "https://rest.media.azure.net",
            "graphAudience": "https://graph.windows.net/",
            "graph": "https://graph.windows.net/",
            "name": "AzureEmulator",
            "suffixes": {
                "azureDataLakeStoreFileSystem": "azuredatalakestore.net",
                "acrLoginServer": "azurecr.io",
                "sqlServerHostname": "database.windows.net",
                "azureDataLakeAnalyticsCatalogAndJob": "azuredatalakeanalytics.net",
                "keyVaultDns": "vault.azure.net",
                "storage": "core.windows.net",
                "azureFrontDoorEndpointSuffix": "azurefd.net",
                "storageSyncEndpointSuffix": "afs.azure.net",
                "mhsmDns": "managedhsm.azure.net",
                "mysqlServerEndpoint": "mysql.database.azure.com",
                "postgresqlServerEndpoint": "postgres.database.azure.com",
                "mariadbServerEndpoint": "mariadb.database.azure.com",
                "synapseAnalytics": "dev.azuresynapse.net",
                "attestationEndpoint": "attest.azure.net",
            },
            "batch": "https://batch.core.windows.net/",
            "resourceManager": format!("{base}/"),
            "vmImageAliasDoc": "https://raw.githubusercontent.com/Azure/azure-rest-api-specs/master/arm-compute/quickstart-templates/aliases.json",
            "activeDirectoryDataLake": "https://datalake.azure.net/",
            "sqlManagement": "https://management.core.windows.net:8443/",
            "microsoftGraphResourceId": "https://graph.microsoft.com/",
            "appInsightsResourceId": "https://api.applicationinsights.io",
            "appInsightsTelemetryChannelResourceId": "https://dc.applicationinsights.azure.com/v2/track",
            "attestationResourceId": "https://attest.azure.net",
            "synapseAnalyticsResourceId": "https://dev.azuresynapse.net",
            "logAnalyticsResourceId": "https://api.loganalytics.io",
            "ossrDbmsResourceId": "https://ossrdbms-aad.database.windows.net",
        })
    };
    let body = match version.as_deref() {
        Some("2022-09-01") => cloud(),
        Some("2019-05-01" | "2020-06-01") => json!([cloud()]),
        _ => json!({
            "galleryEndpoint": "https://gallery.azure.com/",
            "graphEndpoint": "https://graph.windows.net/",
            "portalEndpoint": "https://portal.azure.com/",
            "authentication": { "loginEndpoint": format!("{base}/"), "audiences": MANAGEMENT_AUDIENCES },
        }),
    };
    context.json(StatusCode::OK, &body)
}
