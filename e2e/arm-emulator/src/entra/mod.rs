//! Microsoft Entra ID as Azure SDKs and MSAL use it: the token endpoint (client secrets,
//! certificate assertions, federated tokens), the discovery documents, the managed identity
//! endpoint of IMDS, ARM's cloud metadata, and the bearer check in front of every ARM call.
//!
//! Access tokens are JWTs signed by a key made at start and published in the JWKS. A principal or
//! managed identity without a configured object id gets a name-based (version 5) UUID derived from
//! its client id, so its `oid` stays the same across runs.

mod bearer;
mod clock;
mod discovery;
mod error;
pub(crate) mod imds;
mod issuers;
mod jwt;
mod token;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::Emulator;
use crate::config::{Config, ManagedIdentity, Principal, Subscription};

pub use bearer::Caller;
pub(crate) use bearer::Unauthenticated;
use clock::UnixTime;
use issuers::Issuers;
use jwt::Signer;

/// The resource `Emulator::access_token` mints tokens for.
const ARM_RESOURCE: &str = "https://management.azure.com/";

/// What the emulator knows about identities, and the key it signs tokens with.
#[derive(Debug)]
pub(crate) struct Entra {
    tenants: Vec<String>,
    subscriptions: Vec<Subscription>,
    principals: Vec<Principal>,
    managed_identities: Vec<ManagedIdentity>,
    /// Absent only when the system has no randomness to make a key; every token request then
    /// fails with a transient error instead of the emulator refusing to start.
    signer: Option<Signer>,
    issuers: Issuers,
    /// Bearer tokens whose signature already checked out, with their claims.
    verified: bearer::Verified,
    /// How long access tokens from the token endpoint live, in seconds.
    token_lifetime: i64,
    /// Client ids (lower case) of service principals an administrator disabled: Entra issues
    /// them no token, and ARM refuses the tokens they already hold.
    disabled: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Entra {
    pub(crate) fn new(config: &Config) -> Self {
        Self {
            tenants: config.tenants.iter().map(|tenant| tenant.id.clone()).collect(),
            subscriptions: config.subscriptions.clone(),
            principals: config.principals.clone(),
            managed_identities: config.managed_identities.clone(),
            signer: Signer::generate().ok(),
            issuers: Issuers::default(),
            verified: bearer::Verified::default(),
            disabled: std::sync::Mutex::default(),
            token_lifetime: config.token_lifetime_seconds,
        }
    }

    /// Whether the service principal with this client id is disabled.
    fn is_disabled(&self, client_id: &str) -> bool {
        crate::lock(&self.disabled).contains(&client_id.to_ascii_lowercase())
    }

    /// Why ARM refuses a token of `client_id`, when an administrator disabled it.
    fn check_enabled(&self, client_id: &str) -> Result<(), String> {
        if self.is_disabled(client_id) {
            return Err(format!(
                "the application '{client_id}' it was issued to is disabled"
            ));
        }
        Ok(())
    }

    /// The configured tenant `name` designates (ids compare case-insensitively).
    fn tenant(&self, name: &str) -> Option<&str> {
        self.tenants
            .iter()
            .find(|id| id.eq_ignore_ascii_case(name))
            .map(String::as_str)
    }

    fn principal(&self, tenant: &str, client_id: &str) -> Option<&Principal> {
        self.principals.iter().find(|principal| {
            principal.client_id.eq_ignore_ascii_case(client_id)
                && principal.tenant.eq_ignore_ascii_case(tenant)
        })
    }

    /// Signs an access token for `identity` to call `resource`.
    fn mint(
        &self,
        identity: &Identity,
        resource: &str,
        proof: Proof,
        now: UnixTime,
        lifetime: i64,
    ) -> Result<String, ring::error::Unspecified> {
        let issuer = format!("https://sts.windows.net/{}/", identity.tenant);
        let mut claims = json!({
            "aud": resource,
            "iss": issuer,
            "iat": now.0,
            "nbf": now.0,
            "exp": now.plus(lifetime).0,
            "appid": identity.client_id,
            "appidacr": proof.acr(),
            "azp": identity.client_id,
            "azpacr": proof.acr(),
            "idp": issuer,
            "idtyp": "app",
            "oid": identity.object_id,
            "sub": identity.object_id,
            "tid": identity.tenant,
            "uti": uuid::Uuid::new_v4().simple().to_string(),
            "ver": "1.0",
        });
        if let Some(resource_id) = &identity.resource_id {
            claims["xms_mirid"] = json!(resource_id);
        }
        self.signer
            .as_ref()
            .ok_or(ring::error::Unspecified)?
            .sign(&claims)
    }
}

/// Who a token is issued to.
#[derive(Debug, Clone)]
struct Identity {
    client_id: String,
    object_id: String,
    tenant: String,
    /// The ARM id of a user-assigned managed identity.
    resource_id: Option<String>,
}

impl Identity {
    fn of_principal(principal: &Principal) -> Self {
        Self {
            client_id: principal.client_id.clone(),
            object_id: principal.object_id(),
            tenant: principal.tenant.clone(),
            resource_id: None,
        }
    }

    fn of_managed_identity(identity: &ManagedIdentity) -> Self {
        Self {
            client_id: identity.client_id.clone(),
            object_id: identity.object_id(),
            tenant: identity.tenant.clone(),
            resource_id: identity.resource_id.clone(),
        }
    }
}

/// How the client proved its identity, as the `appidacr` claim tells: 1 for a secret, 2 for a
/// key (certificate, federated token, managed identity).
#[derive(Debug, Clone, Copy)]
enum Proof {
    Secret,
    Key,
}

impl Proof {
    fn acr(self) -> &'static str {
        match self {
            Self::Secret => "1",
            Self::Key => "2",
        }
    }
}

/// The token answer in the v1 shape, shared by the v1 endpoint and IMDS: every number a string.
fn v1_token_body(access_token: &str, resource: &str, now: UnixTime, lifetime: i64) -> Value {
    json!({
        "access_token": access_token,
        "expires_in": lifetime.to_string(),
        "expires_on": now.plus(lifetime).0.to_string(),
        "ext_expires_in": lifetime.to_string(),
        "not_before": now.0.to_string(),
        "resource": resource,
        "token_type": "Bearer",
    })
}

/// What every Entra answer needs from its request: where the client reached the emulator, the
/// ids to stamp and the emulator's time.
pub(crate) struct Context {
    base: String,
    correlation_id: String,
    trace_id: String,
    now: UnixTime,
}

impl Context {
    fn new(emulator: &Emulator, headers: &HeaderMap) -> Self {
        let correlation_id = headers
            .get("client-request-id")
            .and_then(|value| value.to_str().ok())
            .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        Self {
            base: public_base(emulator, headers),
            correlation_id,
            trace_id: uuid::Uuid::new_v4().to_string(),
            now: UnixTime::from_system(emulator.wall_clock()),
        }
    }

    /// A JSON answer with the headers Entra sends: no caching, and the request's ids.
    fn json(&self, status: StatusCode, body: &Value) -> Response {
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store, no-cache"),
        );
        for (name, value) in [
            ("client-request-id", &self.correlation_id),
            ("x-ms-request-id", &self.trace_id),
        ] {
            if let Ok(value) = header::HeaderValue::from_str(value) {
                headers.insert(name, value);
            }
        }
        response
    }
}

/// The base URL as the client reached it (its `Host`), so the documents point where the client
/// can go, whichever name it used; the configured base URL when there is no usable `Host`.
fn public_base(emulator: &Emulator, headers: &HeaderMap) -> String {
    let base = emulator.base_url();
    let scheme = base.split_once("://").map_or("http", |(scheme, _)| scheme);
    headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        })
        .map_or_else(|| base.clone(), |host| format!("{scheme}://{host}"))
}

/// Adds sign-ins (token requests to Entra and to IMDS) to the request log, so tests can count
/// them as they count ARM calls; their resource type is `-`.
pub(crate) async fn log_sign_in(
    axum::extract::State(emulator): axum::extract::State<Emulator>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let received = std::time::SystemTime::now();
    let path = request.uri().path().to_owned();
    if !path.ends_with("/token") {
        return next.run(request).await;
    }
    let method = request.method().clone();
    let headers = request.headers().clone();
    let answer = match injected_failure(&emulator, &method, &path, &headers).await {
        Some(failure) => failure,
        None => next.run(request).await,
    };
    let retry_after = answer
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok()?.parse().ok());
    emulator.state().record(
        crate::LoggedRequest {
            method: method.as_str().to_owned(),
            path,
            resource_type: "-".to_owned(),
            status: answer.status().as_u16(),
            caller: None,
            user_agent: crate::user_agent(&headers),
            retry_after,
            budgets: Vec::new(),
            throttled_by: Vec::new(),
            received,
            answered: std::time::SystemTime::now(),
        },
        emulator.config.request_log_size,
    );
    answer
}

/// What the fault rules make of a token request: a delay, a dropped connection, or an answer in
/// Entra's shape (with `Retry-After` when throttled); `None` to serve it.
async fn injected_failure(
    emulator: &Emulator,
    method: &axum::http::Method,
    path: &str,
    headers: &HeaderMap,
) -> Option<Response> {
    let effect = crate::lock(&emulator.faults).on_request(method, path);
    if let Some(delay) = effect.delay {
        tokio::time::sleep(delay).await;
    }
    if effect.drop_connection {
        return Some(Response::new(axum::body::Body::new(crate::BrokenBody)));
    }
    let failure = effect.answer?;
    let throttled = failure.status == StatusCode::TOO_MANY_REQUESTS;
    let mut response = error::EntraError::injected(failure.status, failure.message)
        .into_response(&Context::new(emulator, headers));
    if throttled {
        let seconds = effect
            .retry_after_seconds
            .unwrap_or(emulator.config.retry_after_seconds);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    Some(response)
}

/// The Entra, IMDS and cloud metadata routes, served beside ARM.
pub(crate) fn routes() -> Router<Emulator> {
    Router::new()
        .route("/{tenant}/oauth2/v2.0/token", post(token::v2))
        .route("/{tenant}/oauth2/token", post(token::v1))
        .route(
            "/{tenant}/v2.0/.well-known/openid-configuration",
            get(discovery::openid_v2),
        )
        .route(
            "/{tenant}/.well-known/openid-configuration",
            get(discovery::openid_v1),
        )
        .route("/{tenant}/discovery/v2.0/keys", get(discovery::keys))
        .route("/{tenant}/discovery/keys", get(discovery::keys))
        .route("/{tenant}/discovery/instance", get(discovery::instance))
        .route("/metadata/endpoints", get(discovery::cloud_metadata))
        .merge(imds::routes())
}

impl Emulator {
    /// A valid ARM access token for the configured principal or managed identity with this client
    /// id, made without HTTP; `None` when no identity has it.
    #[must_use]
    pub fn access_token(&self, client_id: &str) -> Option<String> {
        let entra = &self.entra;
        let (identity, proof) = entra
            .principals
            .iter()
            .find(|principal| principal.client_id.eq_ignore_ascii_case(client_id))
            .map(|principal| (Identity::of_principal(principal), Proof::Secret))
            .or_else(|| {
                entra
                    .managed_identities
                    .iter()
                    .find(|identity| identity.client_id.eq_ignore_ascii_case(client_id))
                    .map(|identity| (Identity::of_managed_identity(identity), Proof::Key))
            })?;
        let now = UnixTime::from_system(self.wall_clock());
        entra
            .mint(&identity, ARM_RESOURCE, proof, now, entra.token_lifetime)
            .ok()
    }

    /// Disables (`true`) or enables again (`false`) the service principal or managed identity
    /// with `client_id`, as an administrator does in Entra ID: while disabled, token requests
    /// fail with `AADSTS7000112` and ARM answers 401 `InvalidAuthenticationToken` to the tokens
    /// it already holds. Gives whether this changed anything.
    #[expect(
        clippy::must_use_candidate,
        reason = "a test disabling a principal need not know whether it already was"
    )]
    pub fn set_principal_disabled(&self, client_id: &str, disabled: bool) -> bool {
        let mut set = crate::lock(&self.entra.disabled);
        let client_id = client_id.to_ascii_lowercase();
        if disabled {
            set.insert(client_id)
        } else {
            set.remove(&client_id)
        }
    }

    /// The client ids of the disabled principals, in lower case.
    #[must_use]
    pub fn disabled_principals(&self) -> Vec<String> {
        crate::lock(&self.entra.disabled).iter().cloned().collect()
    }

    /// Enables every disabled principal again (a reset).
    pub(crate) fn enable_all_principals(&self) {
        crate::lock(&self.entra.disabled).clear();
    }

    /// Checks the bearer token of an ARM request (see [`Entra::authenticate`]).
    pub(crate) fn authenticate(&self, path: &str, headers: &HeaderMap) -> Result<Caller, Unauthenticated> {
        let now = UnixTime::from_system(self.wall_clock());
        self.entra
            .authenticate(path, headers, now, &public_base(self, headers))
    }
}
