//! The generic ARM client: typed `get`, `put`, `patch`, `delete` and `list` of any resource by its
//! [`ResourceId`] and [`ApiVersion`], and single-step polling of long-running operations.
//!
//! Requests go through azure_core's pipeline with a bearer-token policy, a `User-Agent` of
//! `capz-rs/<version> <controller>`, `x-ms-client-request-id` (new per request) and
//! `x-ms-correlation-request-id` (per client, see [`ArmClient::with_correlation_id`]). The SDK
//! never retries: a call makes one request (plus one token request when the token is due), and
//! the caller's reconcile loop decides when to come back, guided by [`ArmError::category`] and
//! [`ArmError::retry_after`]. A 429 closes the process-wide throttle gate for the subscription and
//! principal until its `Retry-After` has passed; calls in between fail with
//! [`ArmError::Throttled`] without being sent.
//!
//! Writes that ARM runs as long-running operations return [`Outcome::InProgress`] with an
//! [`OperationToken`]; [`ArmClient::poll`] makes exactly one poll request (and one GET of the
//! resource when a PUT or PATCH has succeeded) and never waits, so a controller stores the token
//! in status, requeues, and polls again on its next reconcile, even in another process.

mod error;
mod operation;
mod throttle;

use std::sync::Arc;
use std::time::Instant;

use azure_core::error::ErrorKind;
use azure_core::http::headers::{HeaderName, HeaderValue};
use azure_core::http::policies::auth::BearerTokenAuthorizationPolicy;
use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{
    ClientOptions, Context, Method, Pipeline, PipelineSendOptions, RawResponse, Request, RetryOptions,
    Transport, Url,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use error::{ArmError, Category, ErrorBody};
pub use operation::{
    InProgress, OperationMethod, OperationToken, Outcome, PollKind, PollOutcome, UnknownTokenError,
};
pub use throttle::RateLimitBudget;
pub(crate) use throttle::retry_after;

use crate::cloud::Cloud;
use crate::credential::{Credential, CredentialError};
use crate::http::HttpClient;
use crate::id::{ApiVersion, ResourceId, SubscriptionId};
use crate::metrics;

/// A client of Azure Resource Manager for one cloud and credential. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct ArmClient {
    pipeline: Pipeline,
    endpoint: Url,
    principal: Arc<str>,
    correlation_id: Option<Arc<str>>,
}

/// Sets the `User-Agent` last, over the SDK's own.
#[derive(Debug)]
struct UserAgent(HeaderValue);

#[async_trait::async_trait]
impl Policy for UserAgent {
    async fn send(&self, ctx: &Context, request: &mut Request, next: &[Arc<dyn Policy>]) -> PolicyResult {
        request.insert_header(HeaderName::from_static("user-agent"), self.0.clone());
        match next.split_first() {
            Some((policy, rest)) => policy.send(ctx, request, rest).await,
            None => Err(azure_core::Error::with_message(
                ErrorKind::Other,
                "the pipeline has no transport",
            )),
        }
    }
}

/// What a request does: its HTTP method and its `operation` label in metrics.
#[derive(Debug, Clone, Copy)]
enum Call {
    Get,
    List,
    Poll,
    Put,
    Patch,
    Delete,
    Action,
}

impl Call {
    fn method(self) -> Method {
        match self {
            Self::Get | Self::List | Self::Poll => Method::Get,
            Self::Put => Method::Put,
            Self::Patch => Method::Patch,
            Self::Delete => Method::Delete,
            Self::Action => Method::Post,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::List => "list",
            Self::Poll => "poll",
            Self::Put => "put",
            Self::Patch => "patch",
            Self::Action => "action",
            Self::Delete => "delete",
        }
    }
}

/// The body of an `Azure-AsyncOperation` status.
#[derive(serde::Deserialize)]
struct OperationStatus {
    status: String,
    #[serde(default)]
    error: Option<ErrorBody>,
}

/// A page of a list.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Page<T> {
    value: Vec<T>,
    #[serde(default)]
    next_link: Option<String>,
}

impl ArmClient {
    /// A client of `cloud`'s Resource Manager, signing in with `credential`, sending through
    /// `http`; `controller` names the caller in the `User-Agent` (such as `network`).
    #[must_use]
    pub fn new(cloud: &Cloud, credential: Credential, http: &HttpClient, controller: &str) -> Self {
        let principal: Arc<str> = Arc::from(credential.principal());
        let auth = BearerTokenAuthorizationPolicy::new(Arc::new(credential), [cloud.arm_scope()]);
        let user_agent = UserAgent(HeaderValue::from(format!(
            "capz-rs/{} {controller}",
            env!("CARGO_PKG_VERSION")
        )));
        let options = ClientOptions {
            transport: Some(Transport::new(Arc::new(http.clone()))),
            retry: RetryOptions::none(),
            ..ClientOptions::default()
        };
        let pipeline = Pipeline::new(
            Some(env!("CARGO_PKG_NAME")),
            Some(env!("CARGO_PKG_VERSION")),
            options,
            Vec::new(),
            vec![Arc::new(auth), Arc::new(user_agent)],
            None,
        );
        Self {
            pipeline,
            endpoint: cloud.resource_manager(),
            principal,
            correlation_id: None,
        }
    }

    /// This client sending `correlation_id` as `x-ms-correlation-request-id` on every call, so
    /// that ARM's logs tie a reconcile's calls together. Without one each call gets its own.
    #[must_use]
    pub fn with_correlation_id(&self, correlation_id: &str) -> Self {
        Self {
            correlation_id: Some(Arc::from(correlation_id)),
            ..self.clone()
        }
    }

    /// What ARM last reported as left of this principal's request budget in `subscription`.
    #[must_use]
    pub fn rate_limit_budget(&self, subscription: &SubscriptionId) -> Option<RateLimitBudget> {
        throttle::budget(subscription, &self.principal)
    }

    /// Reads a resource.
    ///
    /// # Errors
    /// ARM's error (404 is [`Category::NotFound`]), a transport or credential failure, or an
    /// answer that does not fit `T`.
    pub async fn get<T: DeserializeOwned>(
        &self,
        id: &ResourceId,
        api_version: &ApiVersion,
    ) -> Result<T, ArmError> {
        self.read(id, self.url(&id.to_string(), api_version)).await
    }

    /// Reads a resource with `$expand` (for example a virtual machine's `instanceView`, which
    /// holds its power state).
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn get_expanded<T: DeserializeOwned>(
        &self,
        id: &ResourceId,
        api_version: &ApiVersion,
        expand: &str,
    ) -> Result<T, ArmError> {
        let mut url = self.url(&id.to_string(), api_version);
        url.query_pairs_mut().append_pair("$expand", expand);
        self.read(id, url).await
    }

    async fn read<T: DeserializeOwned>(&self, id: &ResourceId, url: Url) -> Result<T, ArmError> {
        let response = self
            .send(Call::Get, &id.resource_type(), url, id.subscription(), None)
            .await?;
        match u16::from(response.status()) {
            200 => parse(&response),
            _ => Err(error_from(&response)),
        }
    }

    /// Creates or replaces a resource with `body`.
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn put<B: Serialize, T: DeserializeOwned>(
        &self,
        id: &ResourceId,
        api_version: &ApiVersion,
        body: &B,
    ) -> Result<Outcome<T>, ArmError> {
        self.write(OperationMethod::Put, id, api_version, body).await
    }

    /// Updates a resource with `body` (a JSON merge patch for most types).
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn patch<B: Serialize, T: DeserializeOwned>(
        &self,
        id: &ResourceId,
        api_version: &ApiVersion,
        body: &B,
    ) -> Result<Outcome<T>, ArmError> {
        self.write(OperationMethod::Patch, id, api_version, body).await
    }

    /// Runs the action `action` of a resource (`POST <id>/<action>`, such as a managed
    /// cluster's `listClusterAdminCredential`) and reads its answer. Only for actions that answer
    /// at once.
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn action<T: DeserializeOwned>(
        &self,
        id: &ResourceId,
        action: &str,
        api_version: &ApiVersion,
    ) -> Result<T, ArmError> {
        let url = self.url(&format!("{id}/{action}"), api_version);
        let response = self
            .send(Call::Action, &id.resource_type(), url, id.subscription(), None)
            .await?;
        match u16::from(response.status()) {
            200 => parse(&response),
            _ => Err(error_from(&response)),
        }
    }

    /// Deletes a resource. ARM answers 204 when there was nothing to delete; a missing resource
    /// group or parent is an error of [`Category::NotFound`].
    ///
    /// # Errors
    /// As [`Self::get`].
    pub async fn delete(&self, id: &ResourceId, api_version: &ApiVersion) -> Result<Outcome<()>, ArmError> {
        let response = self
            .send(
                Call::Delete,
                &id.resource_type(),
                self.url(&id.to_string(), api_version),
                id.subscription(),
                None,
            )
            .await?;
        match u16::from(response.status()) {
            200 | 204 => Ok(Outcome::Done(())),
            202 => Ok(Outcome::InProgress(in_progress(
                &response,
                OperationMethod::Delete,
                id,
                api_version,
            )?)),
            _ => Err(error_from(&response)),
        }
    }

    /// Lists the resources of `resource_type` under `scope`, following `nextLink` to the last
    /// page. `resource_type` is a full type: a child type of a provider resource
    /// (`Microsoft.Network/virtualNetworks/subnets` under a virtual network), a provider type in a
    /// subscription or resource group (`Microsoft.Network/virtualNetworks`), an extension type of
    /// a resource, or `Microsoft.Resources/resourceGroups` under a subscription.
    ///
    /// # Errors
    /// As [`Self::get`], and [`ArmError::InvalidRequest`] when the type cannot be listed under
    /// the scope.
    pub async fn list<T: DeserializeOwned>(
        &self,
        scope: &ResourceId,
        resource_type: &str,
        api_version: &ApiVersion,
    ) -> Result<Vec<T>, ArmError> {
        let mut url = self.url(&collection_path(scope, resource_type)?, api_version);
        let mut items = Vec::new();
        loop {
            let response = self
                .send(Call::List, resource_type, url, scope.subscription(), None)
                .await?;
            if u16::from(response.status()) != 200 {
                return Err(error_from(&response));
            }
            let page: Page<T> = parse(&response)?;
            items.extend(page.value);
            match page.next_link {
                Some(next) if !next.is_empty() => url = self.own_url(&next, "nextLink")?,
                _ => return Ok(items),
            }
        }
    }

    /// Polls an operation once: one request to its poll URL, plus, when a PUT or PATCH has
    /// succeeded, one GET of the resource. It never waits and keeps nothing: store the token of
    /// [`PollOutcome::InProgress`] and poll again later.
    ///
    /// # Errors
    /// When the poll itself fails (transport, throttling, an operation ARM no longer knows):
    /// the operation's fate is unknown, so keep the token unless the error is
    /// [`Category::NotFound`] (then read the resource instead). A finished, failed operation is
    /// not an error here but [`PollOutcome::Failed`].
    pub async fn poll<T: DeserializeOwned>(
        &self,
        token: &OperationToken,
    ) -> Result<PollOutcome<T>, ArmError> {
        let url = self.own_url(&token.poll_url, "poll URL")?;
        let response = self
            .send(
                Call::Poll,
                &token.resource_id.resource_type(),
                url,
                token.resource_id.subscription(),
                None,
            )
            .await?;
        let status = u16::from(response.status());
        let still_running = || {
            PollOutcome::InProgress(InProgress {
                token: token.clone(),
                retry_after: throttle::retry_after(response.headers()),
            })
        };
        let succeeded = match token.poll_kind {
            PollKind::AsyncOperation => {
                if status != 200 {
                    return Err(error_from(&response));
                }
                let operation: OperationStatus = parse(&response)?;
                match operation.status.to_ascii_lowercase().as_str() {
                    "succeeded" => None,
                    "failed" | "canceled" | "cancelled" => {
                        let error = operation.error.unwrap_or_else(|| ErrorBody {
                            code: operation.status.clone(),
                            message: format!("the operation ended {}", operation.status),
                            target: None,
                            details: Vec::new(),
                        });
                        return Ok(PollOutcome::Failed(ArmError::OperationFailed { error }));
                    }
                    _ => return Ok(still_running()),
                }
            }
            PollKind::Location => match status {
                202 => return Ok(still_running()),
                200 | 201 if token.method != OperationMethod::Delete && !response.body().is_empty() => {
                    Some(parse::<T>(&response)?)
                }
                200 | 201 | 204 => None,
                // Throttling says nothing about the operation: poll again later.
                429 => return Err(error_from(&response)),
                _ => {
                    return Ok(PollOutcome::Failed(ArmError::OperationFailed {
                        error: error_from(&response).into_body(),
                    }));
                }
            },
        };
        match (token.method, succeeded) {
            (OperationMethod::Delete, _) => Ok(PollOutcome::Succeeded(None)),
            (_, Some(resource)) => Ok(PollOutcome::Succeeded(Some(resource))),
            (_, None) => Ok(PollOutcome::Succeeded(Some(
                self.get(&token.resource_id, &token.api_version).await?,
            ))),
        }
    }

    async fn write<B: Serialize, T: DeserializeOwned>(
        &self,
        method: OperationMethod,
        id: &ResourceId,
        api_version: &ApiVersion,
        body: &B,
    ) -> Result<Outcome<T>, ArmError> {
        let body = serde_json::to_vec(body)
            .map_err(|err| ArmError::InvalidRequest(format!("cannot serialise the body: {err}")))?;
        let call = if method == OperationMethod::Patch {
            Call::Patch
        } else {
            Call::Put
        };
        let response = self
            .send(
                call,
                &id.resource_type(),
                self.url(&id.to_string(), api_version),
                id.subscription(),
                Some(body),
            )
            .await?;
        let status = u16::from(response.status());
        if !(200..300).contains(&status) {
            return Err(error_from(&response));
        }
        if status == 202 || poll_header(&response).is_some() {
            return Ok(Outcome::InProgress(in_progress(
                &response,
                method,
                id,
                api_version,
            )?));
        }
        Ok(Outcome::Done(parse(&response)?))
    }

    /// Sends one request through the pipeline, unless the throttle gate is closed; records what
    /// the answer says about throttling, and the request's metrics (`resource_type` labels them).
    async fn send(
        &self,
        call: Call,
        resource_type: &str,
        url: Url,
        subscription: &SubscriptionId,
        body: Option<Vec<u8>>,
    ) -> Result<RawResponse, ArmError> {
        if let Some(retry_after) = throttle::wait(subscription, &self.principal) {
            return Err(ArmError::Throttled { retry_after });
        }
        let mut request = Request::new(url, call.method());
        let correlation_id = self
            .correlation_id
            .as_deref()
            .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
        request.insert_header(
            HeaderName::from_static("x-ms-correlation-request-id"),
            correlation_id,
        );
        if let Some(body) = body {
            request.insert_header(HeaderName::from_static("content-type"), "application/json");
            request.set_body(body);
        }
        let options = PipelineSendOptions {
            skip_checks: true,
            ..PipelineSendOptions::default()
        };
        let started = Instant::now();
        let response = self
            .pipeline
            .send(&Context::new(), &mut request, Some(options))
            .await;
        metrics::arm_request(
            call.label(),
            resource_type,
            response
                .as_ref()
                .ok()
                .map(|response| u16::from(response.status())),
            started.elapsed(),
        );
        let response = response.map_err(|err| from_pipeline_error(&err))?;
        throttle::record(
            subscription,
            &self.principal,
            u16::from(response.status()),
            response.headers(),
        );
        Ok(response)
    }

    fn url(&self, path: &str, api_version: &ApiVersion) -> Url {
        let mut url = self.endpoint.clone();
        url.set_path(path);
        url.query_pairs_mut()
            .append_pair("api-version", api_version.as_str());
        url
    }

    /// A URL ARM handed out (poll URL, next page), checked to point at this client's Resource
    /// Manager: the bearer token must never travel elsewhere, whatever a stored token says.
    fn own_url(&self, text: &str, what: &str) -> Result<Url, ArmError> {
        let url = Url::parse(text)
            .map_err(|_| ArmError::InvalidRequest(format!("the {what} '{text}' is not a URL")))?;
        let same_origin = url.scheme() == self.endpoint.scheme()
            && url.host_str() == self.endpoint.host_str()
            && url.port_or_known_default() == self.endpoint.port_or_known_default();
        if !same_origin {
            return Err(ArmError::InvalidRequest(format!(
                "the {what} points at {}, not at the Resource Manager endpoint {}",
                url.host_str().unwrap_or_default(),
                self.endpoint
            )));
        }
        Ok(url)
    }
}

/// The URL path of a list of `resource_type` under `scope`.
fn collection_path(scope: &ResourceId, resource_type: &str) -> Result<String, ArmError> {
    let scope_type = scope.resource_type();
    let child = resource_type
        .get(..scope_type.len())
        .filter(|prefix| scope.is_provider_resource() && prefix.eq_ignore_ascii_case(&scope_type))
        .and_then(|_| resource_type.get(scope_type.len()..))
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|child| !child.is_empty() && !child.contains('/'));
    if let Some(child) = child {
        return Ok(format!("{scope}/{child}"));
    }
    let at_subscription = !scope.is_provider_resource() && scope.resource_group_name().is_none();
    if resource_type.eq_ignore_ascii_case("Microsoft.Resources/resourceGroups") {
        if at_subscription {
            return Ok(format!("{scope}/resourceGroups"));
        }
    } else if resource_type.eq_ignore_ascii_case("Microsoft.Resources/subscriptions/locations") {
        // The regions a subscription may use, with their availability zones.
        if at_subscription {
            return Ok(format!("{scope}/locations"));
        }
    } else if resource_type.split('/').count() == 2 && !resource_type.split('/').any(str::is_empty) {
        return Ok(format!("{scope}/providers/{resource_type}"));
    }
    Err(ArmError::InvalidRequest(format!(
        "resources of type {resource_type} cannot be listed under {scope}"
    )))
}

/// The poll URL of an accepted write: `Azure-AsyncOperation` when ARM sends it (it reports the
/// status and errors), else `Location`.
fn poll_header(response: &RawResponse) -> Option<(PollKind, &str)> {
    let header = |name| {
        response
            .headers()
            .get_optional_str(&HeaderName::from_static(name))
    };
    header("azure-asyncoperation")
        .map(|url| (PollKind::AsyncOperation, url))
        .or_else(|| header("location").map(|url| (PollKind::Location, url)))
}

fn in_progress(
    response: &RawResponse,
    method: OperationMethod,
    id: &ResourceId,
    api_version: &ApiVersion,
) -> Result<InProgress, ArmError> {
    let (poll_kind, poll_url) = poll_header(response).ok_or_else(|| {
        ArmError::UnexpectedAnswer(format!(
            "{} accepted the operation without a URL to poll",
            u16::from(response.status())
        ))
    })?;
    Ok(InProgress {
        token: OperationToken {
            method,
            poll_url: poll_url.to_owned(),
            poll_kind,
            resource_id: id.clone(),
            api_version: api_version.clone(),
            creates: false,
        },
        retry_after: throttle::retry_after(response.headers()),
    })
}

fn parse<T: DeserializeOwned>(response: &RawResponse) -> Result<T, ArmError> {
    serde_json::from_slice(response.body()).map_err(|err| {
        ArmError::UnexpectedAnswer(format!(
            "the body of a {} answer does not fit the model: {err}",
            u16::from(response.status())
        ))
    })
}

/// ARM's error answer as an [`ArmError::Status`]; a body without ARM's error document gets the
/// status as its code.
fn error_from(response: &RawResponse) -> ArmError {
    #[derive(serde::Deserialize)]
    struct Document {
        error: ErrorBody,
    }
    let status = u16::from(response.status());
    let error = serde_json::from_slice::<Document>(response.body()).map_or_else(
        |_| ErrorBody {
            code: format!("HttpStatus{status}"),
            message: String::from_utf8_lossy(response.body())
                .chars()
                .take(512)
                .collect(),
            target: None,
            details: Vec::new(),
        },
        |document| document.error,
    );
    ArmError::Status {
        status,
        error,
        retry_after: throttle::retry_after(response.headers()),
    }
}

impl ArmError {
    /// The error document of a status error (for a failed operation's error).
    fn into_body(self) -> ErrorBody {
        match self {
            Self::Status { error, .. } | Self::OperationFailed { error } => error,
            other => ErrorBody {
                code: other.category().as_str().to_owned(),
                message: other.to_string(),
                target: None,
                details: Vec::new(),
            },
        }
    }
}

/// A pipeline failure: a credential error of ours when token acquisition failed, else transport.
fn from_pipeline_error(err: &azure_core::Error) -> ArmError {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(error) = current {
        if let Some(credential) = error.downcast_ref::<CredentialError>() {
            return ArmError::Credential(credential.clone());
        }
        current = error.source();
    }
    ArmError::Transport(crate::credential::chain(err))
}

#[cfg(test)]
mod tests {
    use super::collection_path;
    use crate::id::ResourceId;

    const GROUP: &str = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg";

    fn id(text: &str) -> ResourceId {
        text.parse().unwrap()
    }

    #[test]
    fn collections_are_children_provider_types_or_groups() {
        let vnet = id(&format!(
            "{GROUP}/providers/Microsoft.Network/virtualNetworks/vnet"
        ));
        assert_eq!(
            collection_path(&vnet, "Microsoft.Network/virtualNetworks/subnets").unwrap(),
            format!("{vnet}/subnets")
        );
        assert_eq!(
            collection_path(&id(GROUP), "Microsoft.Network/virtualNetworks").unwrap(),
            format!("{GROUP}/providers/Microsoft.Network/virtualNetworks")
        );
        let subscription = id(GROUP).parent().unwrap();
        assert_eq!(
            collection_path(&subscription, "Microsoft.Resources/resourceGroups").unwrap(),
            format!("{subscription}/resourceGroups")
        );
        assert_eq!(
            collection_path(&subscription, "Microsoft.Resources/subscriptions/locations").unwrap(),
            format!("{subscription}/locations")
        );
        assert!(collection_path(&id(GROUP), "Microsoft.Resources/subscriptions/locations").is_err());
        assert_eq!(
            collection_path(&vnet, "Microsoft.Authorization/roleAssignments").unwrap(),
            format!("{vnet}/providers/Microsoft.Authorization/roleAssignments")
        );
        for (scope, bad) in [
            (
                &vnet,
                "Microsoft.Network/virtualNetworks/subnets/ipConfigurations",
            ),
            (&id(GROUP), "Microsoft.Resources/resourceGroups"),
            (&id(GROUP), "subnets"),
        ] {
            assert!(collection_path(scope, bad).is_err(), "{bad}");
        }
    }
}
