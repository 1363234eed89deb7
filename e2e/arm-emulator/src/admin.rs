//! The operations API under `/_emulator/` (for tests, benchmarks and the sandbox, outside ARM's
//! paths and unauthenticated): health, reset, the request log, fault rules, snapshots of the whole
//! state, an inventory of every resource, what each machine would boot, the proxy's routes, and
//! disabling service principals.
//! Also the start state: built-in role definitions and the resources the configuration seeds.

use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query as AxumQuery, State as AxumState};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};

use crate::path::ArmPath;
use crate::state::State;
use crate::{Call, Emulator, Query, boot, faults, lock, resources};

/// A seeded resource the emulator could not create.
#[derive(Debug, thiserror::Error)]
#[error("cannot seed {id}: {problem}")]
pub struct SeedError {
    /// The seed's id.
    pub id: String,
    /// What ARM answered, or why the id is not a resource.
    pub problem: String,
}

/// Why a snapshot could not be restored.
#[derive(Debug, thiserror::Error)]
#[error("not an emulator snapshot: {0}")]
pub struct RestoreError(String);

/// The largest snapshot `PUT /_emulator/snapshot` takes.
const SNAPSHOT_LIMIT: usize = 256 << 20;

pub(crate) fn routes() -> Router<Emulator> {
    Router::new()
        .route("/_emulator/health", get(|| async { "ok" }))
        .route("/_emulator/reset", post(reset))
        .route("/_emulator/requests", get(requests))
        .route(
            "/_emulator/faults",
            get(list_faults).post(add_fault).delete(clear_faults),
        )
        .route("/_emulator/faults/{id}", delete(remove_fault))
        // A snapshot holds the whole state: far more than a request to ARM may carry.
        .route(
            "/_emulator/snapshot",
            get(snapshot)
                .put(restore)
                .layer(DefaultBodyLimit::max(SNAPSHOT_LIMIT)),
        )
        .route("/_emulator/inventory", get(inventory))
        .route("/_emulator/disabled-principals", get(disabled_principals))
        .route(
            "/_emulator/disabled-principals/{client_id}",
            axum::routing::put(switch_principal).delete(switch_principal),
        )
        .route("/_emulator/boots", get(boots))
        .route(
            "/_emulator/routes",
            get(list_routes).put(add_route).delete(remove_route),
        )
}

impl Emulator {
    /// The built-in role definitions every subscription has.
    pub(crate) fn seed_built_ins(&self) {
        let subscriptions: Vec<String> = self.config.subscriptions.iter().map(|s| s.id.clone()).collect();
        resources::authorization::seed_built_in_roles(&mut self.state(), &subscriptions);
    }

    /// Creates the configuration's seeded resources, in order, as PUTs with the newest
    /// api-version would, and marks them and what came with them seeded.
    ///
    /// # Errors
    /// Names the first seed ARM would refuse, with the answer.
    pub fn seed_resources(&self) -> Result<(), SeedError> {
        for seed in &self.config.resources {
            let fail = |problem: String| SeedError {
                id: seed.id.clone(),
                problem,
            };
            let arm_path = ArmPath::parse(&seed.id).ok_or_else(|| fail("not an ARM resource id".into()))?;
            let version = match &arm_path {
                ArmPath::Resource(id) => {
                    resources::find(&id.type_name()).and_then(|t| t.api_versions.last().copied())
                }
                ArmPath::ResourceGroup { .. } => crate::api_versions::supported(&arm_path.resource_type())
                    .last()
                    .copied(),
                _ => None,
            }
            .ok_or_else(|| fail("not a resource type the emulator serves".into()))?;
            let body = serde_json::to_vec(&seed.body).map_err(|err| fail(err.to_string()))?;
            let call = Call {
                method: &Method::PUT,
                path: &seed.id,
                query: Query {
                    api_version: Some(version),
                    ..Query::default()
                },
                headers: &HeaderMap::new(),
                body: &body,
                caller: None,
            };
            let answer = self
                .dispatch(&arm_path, &call)
                .map_err(|err| fail(err.to_string()))?;
            if !answer.status.is_success() {
                return Err(fail(format!("answered {}", answer.status)));
            }
            self.settle();
            let key = match &arm_path {
                ArmPath::Resource(id) => id.key(),
                _ => seed.id.to_ascii_lowercase(),
            };
            // What the service makes along with a resource (a zone's SOA record set) is seeded too.
            let under = format!("{key}/");
            for (stored_key, stored) in &mut self.state().resources {
                if **stored_key == *key || stored_key.starts_with(&under) {
                    stored.seeded = true;
                }
            }
        }
        Ok(())
    }

    /// Finishes every operation in flight.
    fn settle(&self) {
        // A year is later than any configured latency.
        self.state().advance(self.now() + Duration::from_hours(24 * 365));
    }

    /// Back to the start: the built-ins and the seeds, no operations, no log, no fault rules.
    ///
    /// # Errors
    /// When a seed cannot be created (it could at start, so only if the configuration changed).
    pub fn reset(&self) -> Result<(), SeedError> {
        *self.state() = State::default();
        lock(&self.faults).clear();
        self.enable_all_principals();
        self.seed_built_ins();
        self.seed_resources()
    }

    /// The whole state as JSON: every resource with its type, body and whether it was seeded.
    /// Operations in flight are finished first.
    #[must_use]
    pub fn snapshot(&self) -> Value {
        self.settle();
        let state = self.state();
        let resources: Vec<Value> = state
            .resources
            .values()
            .map(|stored| json!({ "type": stored.type_name, "seeded": stored.seeded, "body": stored.body() }))
            .collect();
        json!({ "resources": resources, "subscriptionTags": state.subscription_tags })
    }

    /// What every virtual machine and scale set instance would boot, read from its custom data
    /// as cloud-init and kubeadm would read it (see [`crate::boot`]): under `machines`,
    /// `{"id", "computerName", "powerState", "privateIpAddresses", "imageReference", "boot"}` with
    /// the kubeadm role, node name, node registration and control plane endpoint, or
    /// `{..., "refused"}` with why the machine would never join; machines without custom data
    /// (AKS nodes among them) are left out. Under `managedClusters`, every AKS cluster not
    /// stopped: `{"id", "name", "endpoint", "kubernetesVersion", "powerState",
    /// "provisioningState", "localAccountsDisabled", "tenantId", "nodes"}`, each node `{"id",
    /// "computerName", "pool", "mode", "powerState", "privateIpAddresses", "kubernetesVersion"}`.
    /// `localAccountsDisabled` is true when the cluster has managed Entra integration
    /// (`aadProfile.managed`) and `disableLocalAccounts`: its API server then takes only Entra
    /// access tokens for AKS's server application, which this emulator signs (its JWKS at
    /// `/{tenantId}/discovery/v2.0/keys`). `tenantId` is the tenant those tokens must be of: the
    /// AAD profile's `tenantID`, else the tenant of the cluster's subscription (`null` if the
    /// subscription is no longer configured). Never key material or tokens
    /// (see [`Emulator::boots_with_keys`]). Operations in flight stay in flight: a machine still
    /// being created shows as it is.
    #[must_use]
    pub fn boots(&self) -> Value {
        self.read_boots(boot::Secrets::Withhold)
    }

    /// [`Emulator::boots`], each boot also with `keys` (the PEM of the cluster's certificate
    /// authorities and service account keys it carries, by path under `/etc/kubernetes/pki`) and,
    /// for a join, its `bootstrapToken`, and each managed cluster with `keys` (`ca.crt`,
    /// `ca.key`): what a stand-in for the cluster needs to serve as it.
    #[must_use]
    pub fn boots_with_keys(&self) -> Value {
        self.read_boots(boot::Secrets::Reveal)
    }

    fn read_boots(&self, secrets: boot::Secrets) -> Value {
        // Only what is due: a reader polling this must not hurry operations along.
        let mut state = self.state();
        state.advance(self.now());
        let machines: Vec<Value> = state
            .resources
            .values()
            .filter(|stored| resources::boots(stored.type_name))
            .filter_map(|stored| {
                let body = stored.body();
                let profile = body.pointer("/properties/osProfile")?;
                let custom_data = profile.get("customData")?.as_str()?;
                let computer_name = profile["computerName"].as_str().unwrap_or_default();
                let mut machine = json!({
                    "id": body["id"],
                    "computerName": computer_name,
                    "powerState": resources::power_state(&body),
                    "privateIpAddresses": resources::private_addresses(&state, &body),
                    "imageReference": body.pointer("/properties/storageProfile/imageReference").cloned().unwrap_or(Value::Null),
                });
                match boot::read(custom_data, computer_name, secrets) {
                    Ok(boot) => machine["boot"] = boot,
                    Err(why) => machine["refused"] = Value::String(why),
                }
                Some(machine)
            })
            .collect();
        let clusters = resources::managed_clusters(&state, &self.config, secrets == boot::Secrets::Reveal);
        json!({ "machines": machines, "managedClusters": clusters })
    }

    /// Replaces the state with a snapshot.
    ///
    /// # Errors
    /// When the snapshot is not one [`Emulator::snapshot`] made; the state is then unchanged.
    pub fn restore(&self, snapshot: &Value) -> Result<(), RestoreError> {
        let items = snapshot["resources"]
            .as_array()
            .ok_or_else(|| RestoreError("it has no 'resources' list".into()))?;
        let mut restored = State::default();
        for item in items {
            let type_name = item["type"].as_str().unwrap_or_default();
            let id = item["body"]["id"].as_str().unwrap_or_default();
            let type_name = if type_name.eq_ignore_ascii_case(crate::resource_groups::TYPE) {
                crate::resource_groups::TYPE
            } else {
                resources::find(type_name)
                    .map(|found| found.name)
                    .ok_or_else(|| {
                        RestoreError(format!(
                            "'{type_name}' (of '{id}') is not a type the emulator serves"
                        ))
                    })?
            };
            if id.is_empty() {
                return Err(RestoreError("a resource has no body.id".into()));
            }
            check_restored(id, type_name, &item["body"])?;
            restored.put_doc(
                &id.to_ascii_lowercase(),
                type_name,
                item["body"].clone(),
                item["seeded"].as_bool().unwrap_or(false),
            );
        }
        if let Some(tags) = snapshot.get("subscriptionTags").and_then(Value::as_object) {
            for (subscription, tags) in tags {
                let tags = tags
                    .as_object()
                    .filter(|tags| tags.values().all(Value::is_string))
                    .ok_or_else(|| {
                        RestoreError(format!(
                            "the tags of subscription '{subscription}' are not an object of strings"
                        ))
                    })?;
                restored
                    .subscription_tags
                    .insert(subscription.to_ascii_lowercase(), tags.clone());
            }
        }
        *self.state() = restored;
        Ok(())
    }
}

/// A restored document must be what the emulator itself stores: an object whose id names a
/// resource of its type, a `name` matching that id and object `properties`; requests later rely
/// on that shape.
fn check_restored(id: &str, type_name: &str, body: &Value) -> Result<(), RestoreError> {
    let named = match ArmPath::parse(id) {
        Some(ArmPath::ResourceGroup { .. }) => crate::resource_groups::TYPE.to_owned(),
        Some(ArmPath::Resource(resource)) => resource.type_name(),
        _ => String::new(),
    };
    if !named.eq_ignore_ascii_case(type_name) {
        return Err(RestoreError(format!("'{id}' is not the id of a {type_name}")));
    }
    // Answers name the resource by its `name`, so it has to be the one its id gives it.
    let last = id.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    let expected = resources::stored_name(type_name, id).unwrap_or_else(|| last.to_owned());
    if body.get("name").is_some_and(|name| {
        !name
            .as_str()
            .is_some_and(|name| name.eq_ignore_ascii_case(&expected))
    }) {
        return Err(RestoreError(format!(
            "the name of '{id}' is not '{expected}', the name its id gives it"
        )));
    }
    if body
        .get("properties")
        .is_some_and(|properties| !properties.is_object() && !properties.is_null())
    {
        return Err(RestoreError(format!(
            "the properties of '{id}' are not an object"
        )));
    }
    check_restored_children(id, type_name, body)
}

/// Children kept inside a document are answered with their stored id, so each one must sit at
/// the path its parent and name give it.
fn check_restored_children(id: &str, type_name: &str, body: &Value) -> Result<(), RestoreError> {
    for (property, child_type) in resources::embedded_children(type_name) {
        let segment = child_type.name.rsplit('/').next().unwrap_or_default();
        for child in resources::embedded::all(body, property) {
            let name = child.get("name").and_then(Value::as_str).unwrap_or_default();
            let expected = format!("{}/{segment}/{name}", id.trim_end_matches('/'));
            let child_id = child.get("id").and_then(Value::as_str).unwrap_or_default();
            if name.is_empty() || !child_id.eq_ignore_ascii_case(&expected) {
                return Err(RestoreError(format!(
                    "the {property} entry '{name}' of '{id}' has id '{child_id}', not '{expected}'"
                )));
            }
        }
    }
    Ok(())
}

async fn reset(AxumState(emulator): AxumState<Emulator>) -> Response {
    match emulator.reset() {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{err}\n")).into_response(),
    }
}

async fn disabled_principals(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    axum::Json(json!({ "clientIds": emulator.disabled_principals() }))
}

/// `PUT` disables the principal: 201 when it was enabled until now, 200 when it already was
/// disabled. `DELETE` enables it again: 204, or 404 when it was not disabled.
async fn switch_principal(
    AxumState(emulator): AxumState<Emulator>,
    method: Method,
    axum::extract::Path(client_id): axum::extract::Path<String>,
) -> StatusCode {
    let disable = method == Method::PUT;
    match (disable, emulator.set_principal_disabled(&client_id, disable)) {
        (true, true) => StatusCode::CREATED,
        (true, false) => StatusCode::OK,
        (false, true) => StatusCode::NO_CONTENT,
        (false, false) => StatusCode::NOT_FOUND,
    }
}

async fn snapshot(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    axum::Json(emulator.snapshot())
}

async fn restore(AxumState(emulator): AxumState<Emulator>, body: Bytes) -> Response {
    let restored = serde_json::from_slice::<Value>(&body)
        .map_err(|err| err.to_string())
        .and_then(|snapshot| emulator.restore(&snapshot).map_err(|err| err.to_string()));
    match restored {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(problem) => (StatusCode::BAD_REQUEST, format!("{problem}\n")).into_response(),
    }
}

async fn inventory(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    let now = emulator.now();
    let mut state = emulator.state();
    // Operations due by now have finished, as the next ARM request would find.
    state.advance(now);
    let resources: Vec<Value> = state
        .resources
        .values()
        .map(|stored| {
            let body = stored.body();
            json!({
                "id": body["id"],
                "type": stored.type_name,
                "provisioningState": body.pointer("/properties/provisioningState"),
                "seeded": stored.seeded,
            })
        })
        .collect();
    axum::Json(json!({ "count": resources.len(), "resources": resources }))
}

async fn requests(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    let state = emulator.state();
    let counts: Vec<Value> = state
        .counters
        .iter()
        .map(|((method, resource_type, status), count)| {
            json!({ "method": method, "resourceType": resource_type, "status": status, "count": count })
        })
        .collect();
    axum::Json(json!({ "requests": state.log, "counts": counts }))
}

async fn list_faults(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    let faults = lock(&emulator.faults);
    let rules: Vec<Value> = faults
        .list()
        .iter()
        .map(|(id, fault)| json!({ "id": id, "fault": fault }))
        .collect();
    axum::Json(json!({ "faults": rules }))
}

async fn add_fault(AxumState(emulator): AxumState<Emulator>, body: Bytes) -> Response {
    match serde_json::from_slice::<faults::Fault>(&body) {
        Ok(fault) => (
            StatusCode::CREATED,
            axum::Json(json!({ "id": emulator.add_fault(fault) })),
        )
            .into_response(),
        Err(err) => (StatusCode::BAD_REQUEST, format!("not a fault rule: {err}\n")).into_response(),
    }
}

async fn clear_faults(AxumState(emulator): AxumState<Emulator>) -> StatusCode {
    lock(&emulator.faults).clear();
    StatusCode::NO_CONTENT
}

async fn remove_fault(
    AxumState(emulator): AxumState<Emulator>,
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> StatusCode {
    if lock(&emulator.faults).remove(id) {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::NOT_FOUND
    }
}

/// `?keys=true` (and only that) asks for the cluster's keys and bootstrap tokens.
async fn boots(
    AxumState(emulator): AxumState<Emulator>,
    AxumQuery(query): AxumQuery<Vec<(String, String)>>,
) -> axum::Json<Value> {
    let keys = query
        .iter()
        .any(|(name, value)| name == "keys" && value.eq_ignore_ascii_case("true"));
    axum::Json(if keys {
        emulator.boots_with_keys()
    } else {
        emulator.boots()
    })
}

/// A route as `PUT` and `DELETE /_emulator/routes` take it; `DELETE` needs no target.
#[derive(serde::Deserialize)]
struct RouteRequest {
    host: String,
    port: u16,
    target: Option<std::net::SocketAddr>,
}

/// The route of a request body, or why it is none (a 400's text).
fn route_request(body: &[u8]) -> Result<RouteRequest, String> {
    let request = serde_json::from_slice::<RouteRequest>(body)
        .map_err(|err| format!("not a route ({{\"host\", \"port\", \"target\"}}): {err}"))?;
    let host = request.host.trim();
    if host.is_empty() || host.contains(char::is_whitespace) || request.port == 0 {
        return Err(format!(
            "a route needs a host and a port other than 0, not '{}:{}'",
            request.host, request.port
        ));
    }
    Ok(request)
}

fn bad_route(problem: &str) -> Response {
    (StatusCode::BAD_REQUEST, format!("{problem}\n")).into_response()
}

async fn list_routes(AxumState(emulator): AxumState<Emulator>) -> axum::Json<Value> {
    let routes: Vec<Value> = emulator
        .routes()
        .into_iter()
        .map(|route| {
            // Whether the proxy would honour it now.
            let resolves = emulator.resolves(&route.host);
            json!({ "host": route.host, "port": route.port, "target": route.target, "resolves": resolves })
        })
        .collect();
    axum::Json(json!({ "routes": routes }))
}

async fn add_route(AxumState(emulator): AxumState<Emulator>, body: Bytes) -> Response {
    let request = match route_request(&body) {
        Ok(request) => request,
        Err(problem) => return bad_route(&problem),
    };
    let Some(target) = request.target else {
        return bad_route("a route needs a target, an address and port such as 127.0.0.1:6443");
    };
    let replaced = lock(&emulator.routes).add(&request.host, request.port, target);
    let status = if replaced.is_some() {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let route =
        json!({ "host": crate::proxy::normal_host(&request.host), "port": request.port, "target": target });
    (status, axum::Json(route)).into_response()
}

async fn remove_route(AxumState(emulator): AxumState<Emulator>, body: Bytes) -> Response {
    match route_request(&body) {
        Ok(request) if emulator.remove_route(&request.host, request.port) => {
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(request) => (
            StatusCode::NOT_FOUND,
            format!("no route for {}:{}\n", request.host, request.port),
        )
            .into_response(),
        Err(problem) => bad_route(&problem),
    }
}
