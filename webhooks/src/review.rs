//! One admission review of a kind with [`Rules`]: read the `AdmissionReview`, default or validate
//! the object, answer with an `AdmissionReview` carrying the response.
//!
//! - **Defaulting** (`mutate`) decodes the object, runs [`Rules::default`] and answers with an
//!   RFC 6902 patch of what changed. The patch is the difference between the object as decoded and
//!   re-encoded before and after defaulting, so what merely re-encoding changes (a `null` left out,
//!   an empty field written) is never part of it: only what defaulting did.
//! - **Validation** (`validate`) runs [`Rules::validate_create`] or [`Rules::validate_update`];
//!   deletions are admitted, but for the kinds that check them ([`Rules::VALIDATES_DELETE`]:
//!   [`Rules::validate_delete`] on the old object). What a kind needs to know of its Cluster
//!   ([`Rules::cluster_query`]) is looked up first. A denial carries what the API server itself gives for invalid objects:
//!   a `Status` with code 422, reason `Invalid`, the message of [`Verdict::message`] and one cause
//!   per field (`FieldValueRequired`, ...), so `kubectl` shows it like built-in validation.
//!   Warnings go back in the response's `warnings`, admitted or not: the rules' own, and one per
//!   field the object sets that capz-rs does not act on yet ([`support::warnings`]; on updates
//!   only those new or changed).
//! - A request that cannot be read is denied with code 400 and says why; an object that cannot be
//!   decoded as the kind is denied the same way. Nothing panics on input.
//!
//! `dryRun` and the operation reach the rules through [`Context`], so random values are only
//! generated for real creates.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use capz_rules::{
    ClusterQuery, Context, Entropy, Features, FieldError, Operation, OwnerCluster, PoolOwner, Rules,
    SystemEntropy, Verdict, support,
};
use json_patch::{Patch, PatchOperation};
use kube::Client;
use kube::core::admission::{
    AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND, Operation as ReviewOperation,
};
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::core::{DynamicObject, GroupVersionKind, Status, TypeMeta};
use serde::Deserialize;
use serde_json::Value;

use crate::hook::{Hook, ValidationLookup};
use crate::lookup;

/// What every review needs besides its request: the feature gates, a client for lookups, the
/// source of random values, and counts of the reviews answered.
pub struct Admission {
    features: Features,
    client: Option<Client>,
    entropy: Box<dyn Entropy + Send>,
    mutated: AtomicU64,
    validated: AtomicU64,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("features", &self.features)
            .field("client", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// Reviews under `features`, looking up what defaulting needs through `client` (without one,
    /// lookups find nothing), with random values from the operating system.
    #[must_use]
    pub fn new(features: Features, client: Option<Client>) -> Self {
        Self::with_entropy(features, client, Box::new(SystemEntropy))
    }

    /// The same with random values from `entropy`.
    #[must_use]
    pub fn with_entropy(
        features: Features,
        client: Option<Client>,
        entropy: Box<dyn Entropy + Send>,
    ) -> Self {
        Self {
            features,
            client,
            entropy,
            mutated: AtomicU64::new(0),
            validated: AtomicU64::new(0),
        }
    }

    /// How many reviews `hook` has answered, whatever the answer.
    #[must_use]
    pub fn answered(&self, hook: Hook) -> u64 {
        self.counter(hook).load(Ordering::Relaxed)
    }

    fn counter(&self, hook: Hook) -> &AtomicU64 {
        match hook {
            Hook::Mutate => &self.mutated,
            Hook::Validate => &self.validated,
        }
    }

    fn context(
        &self,
        operation: Operation,
        dry_run: bool,
        cluster_subscription_id: Option<String>,
    ) -> Context<'_> {
        Context {
            operation,
            dry_run,
            features: self.features,
            entropy: &*self.entropy,
            cluster_subscription_id,
            machine_pool: PoolOwner::NotLookedUp,
            cluster: OwnerCluster::NotLookedUp,
        }
    }
}

/// How a review ended, the `result` label of the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Admitted (defaulted or found valid).
    Allowed,
    /// Denied because the object is invalid, or the request could not be read.
    Denied,
    /// Neither: something on our side failed (a lookup, the random source).
    Error,
}

impl Outcome {
    /// The metric label.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Error => "error",
        }
    }
}

/// The answer to one review.
#[derive(Debug)]
pub struct Answer {
    /// The `AdmissionReview` to send back.
    pub review: AdmissionReview<DynamicObject>,
    /// How it ended.
    pub outcome: Outcome,
    /// The request's operation (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`), `unknown` when the
    /// request could not be read: the `operation` label of the metrics.
    pub operation: &'static str,
}

impl Answer {
    /// The review as JSON, the patch as base64 text as Kubernetes writes bytes.
    ///
    /// # Errors
    /// When the review cannot be encoded (it always can).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        let patch = self
            .review
            .response
            .as_ref()
            .and_then(|response| response.patch.as_ref());
        let Some(patch) = patch else {
            return serde_json::to_vec(&self.review);
        };
        let mut review = serde_json::to_value(&self.review)?;
        review["response"]["patch"] = Value::String(base64::engine::general_purpose::STANDARD.encode(patch));
        serde_json::to_vec(&review)
    }
}

/// The parts of an `AdmissionReview` request the handlers read, the objects as raw JSON so that
/// the patch is computed against exactly what the API server holds.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    request: Option<Request>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    uid: String,
    kind: GroupVersionKind,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    operation: ReviewOperation,
    #[serde(default)]
    object: Option<Value>,
    #[serde(default)]
    old_object: Option<Value>,
    #[serde(default)]
    dry_run: Option<bool>,
}

/// Just the uid of a request that cannot be read whole, to answer it all the same.
#[derive(Deserialize)]
struct UidOnly {
    request: Option<Uid>,
}

#[derive(Deserialize)]
struct Uid {
    uid: Option<String>,
}

/// A request read, with what its answer starts from.
struct Reading<K> {
    request: Request,
    response: AdmissionResponse,
    kind: std::marker::PhantomData<K>,
}

impl<K: Rules> Reading<K> {
    /// Reads `body` as an AdmissionReview for kind `K`, or answers it at once.
    fn read(body: &[u8], hook: Hook) -> Result<Self, Box<Answer>> {
        let review: Review = serde_json::from_slice(body).map_err(|err| {
            let uid = serde_json::from_slice::<UidOnly>(body)
                .ok()
                .and_then(|only| only.request?.uid)
                .unwrap_or_default();
            Box::new(bad_request(
                uid,
                None,
                &format!("the body is not an AdmissionReview: {err}"),
            ))
        })?;
        let types = TypeMeta {
            api_version: if review.api_version.is_empty() {
                META_API_VERSION_V1.to_owned()
            } else {
                review.api_version
            },
            kind: if review.kind.is_empty() {
                META_KIND.to_owned()
            } else {
                review.kind
            },
        };
        let Some(request) = review.request else {
            return Err(Box::new(bad_request(
                String::new(),
                Some(types),
                "the AdmissionReview carries no request",
            )));
        };
        // The response type cannot be built field by field (it is non-exhaustive): start from
        // `invalid` and set what an answer to this request carries.
        let mut response = AdmissionResponse::invalid("");
        response.types = types;
        response.uid.clone_from(&request.uid);
        response.allowed = true;
        response.result = Status::default();
        let (group, version, kind) = (K::group(&()), K::version(&()), K::kind(&()));
        let deletes = matches!(
            request.operation,
            ReviewOperation::Delete | ReviewOperation::Connect
        );
        if !deletes
            && (request.kind.group != group || request.kind.kind != kind || request.kind.version != version)
        {
            let message = format!(
                "this webhook ({}) admits {kind}.{version}.{group}, not {}.{}.{}: check the rules of the \
                 webhook configuration",
                hook.as_str(),
                request.kind.kind,
                request.kind.version,
                request.kind.group
            );
            return Err(Box::new(Answer {
                operation: operation_label(&request.operation),
                review: deny(response, bad_request_status(&message)).into_review(),
                outcome: Outcome::Denied,
            }));
        }
        Ok(Self {
            request,
            response,
            kind: std::marker::PhantomData,
        })
    }

    fn operation(&self) -> &'static str {
        operation_label(&self.request.operation)
    }

    fn answer(self, outcome: Outcome) -> Answer {
        Answer {
            operation: operation_label(&self.request.operation),
            review: self.response.into_review(),
            outcome,
        }
    }

    fn denied(self, status: Status, outcome: Outcome) -> Answer {
        Answer {
            operation: operation_label(&self.request.operation),
            review: deny(self.response, status).into_review(),
            outcome,
        }
    }

    /// The object of the request decoded as `K`, or the answer saying why it cannot be: the
    /// Status of an invalid object, naming each field that cannot be read.
    fn decode(&self, object: Option<&Value>, which: &str) -> Result<K, Box<Status>> {
        let object =
            object.ok_or_else(|| Box::new(bad_request_status(&format!("the request carries no {which}"))))?;
        capz_rules::decode::decode::<K>(object).map_err(|errors| {
            let mut status = invalid::<K>(
                &Verdict {
                    errors,
                    warnings: Vec::new(),
                },
                &self.name(),
            );
            if which != "object" {
                status.message = format!("the {which} cannot be read: {}", status.message);
            }
            Box::new(status)
        })
    }

    /// The object's name for messages: the request's, else the object's own.
    fn name(&self) -> String {
        if !self.request.name.is_empty() {
            return self.request.name.clone();
        }
        let metadata = self.request.object.as_ref().map(|object| &object["metadata"]);
        metadata
            .and_then(|metadata| {
                metadata["name"]
                    .as_str()
                    .or_else(|| metadata["generateName"].as_str())
            })
            .unwrap_or_default()
            .to_owned()
    }

    fn dry_run(&self) -> bool {
        self.request.dry_run.unwrap_or(false)
    }
}

fn operation_label(operation: &ReviewOperation) -> &'static str {
    match operation {
        ReviewOperation::Create => "CREATE",
        ReviewOperation::Update => "UPDATE",
        ReviewOperation::Delete => "DELETE",
        ReviewOperation::Connect => "CONNECT",
    }
}

fn rules_operation(operation: &ReviewOperation) -> Option<Operation> {
    match operation {
        ReviewOperation::Create => Some(Operation::Create),
        ReviewOperation::Update => Some(Operation::Update),
        ReviewOperation::Delete => Some(Operation::Delete),
        ReviewOperation::Connect => None,
    }
}

fn deny(mut response: AdmissionResponse, status: Status) -> AdmissionResponse {
    response.allowed = false;
    response.result = status;
    response
}

fn bad_request_status(message: &str) -> Status {
    Status::failure(message, "BadRequest").with_code(400)
}

fn bad_request(uid: String, types: Option<TypeMeta>, message: &str) -> Answer {
    let mut response = AdmissionResponse::invalid(message);
    if let Some(types) = types {
        response.types = types;
    }
    response.uid = uid;
    response.result = bad_request_status(message);
    Answer {
        review: response.into_review(),
        outcome: Outcome::Denied,
        operation: "unknown",
    }
}

fn internal_error(message: &str) -> Status {
    Status::failure(message, "InternalError").with_code(500)
}

/// The Status the API server gives for an invalid object: code 422, reason `Invalid`, one cause
/// per rejected field.
fn invalid<K: Rules>(verdict: &Verdict, name: &str) -> Status {
    let (kind, group) = (K::kind(&()), K::group(&()));
    Status {
        status: Some(StatusSummary::Failure),
        code: 422,
        message: verdict.message(&kind, &group, name),
        metadata: None,
        reason: "Invalid".to_owned(),
        details: Some(StatusDetails {
            name: name.to_owned(),
            group: group.into_owned(),
            kind: kind.into_owned(),
            uid: String::new(),
            causes: verdict.errors.iter().map(cause).collect(),
            retry_after_seconds: 0,
        }),
    }
}

fn cause(error: &FieldError) -> StatusCause {
    StatusCause {
        reason: error.kind.cause().to_owned(),
        message: error.body(),
        field: error.path.to_string(),
    }
}

/// Defaults the object of the review in `body` as `K`, after looking up the subscription of its
/// cluster when its rules need it ([`Rules::needs_cluster_subscription`]).
pub(crate) async fn mutate<K: Rules>(admission: &Admission, body: &[u8]) -> Answer {
    admission.counter(Hook::Mutate).fetch_add(1, Ordering::Relaxed);
    let reading = match Reading::<K>::read(body, Hook::Mutate) {
        Ok(reading) => reading,
        Err(answer) => return *answer,
    };
    let operation = match reading.request.operation {
        ReviewOperation::Create => Operation::Create,
        ReviewOperation::Update => Operation::Update,
        // Nothing to default in what is going away.
        ReviewOperation::Delete | ReviewOperation::Connect => return reading.answer(Outcome::Allowed),
    };
    let original = reading.request.object.as_ref();
    let mut object: K = match reading.decode(original, "object") {
        Ok(object) => object,
        Err(status) => return reading.denied(*status, Outcome::Denied),
    };
    let subscription = if object.needs_cluster_subscription() {
        let namespace = reading
            .request
            .namespace
            .clone()
            .or_else(|| object.meta().namespace.clone())
            .unwrap_or_default();
        let labels = object.meta().labels.clone().unwrap_or_default();
        match cluster_subscription(admission, &namespace, &labels).await {
            Ok(subscription) => subscription,
            Err(err) => {
                let message = format!(
                    "cannot look up the subscription of the object's cluster: {err}; the request can be retried"
                );
                tracing::warn!(kind = %K::kind(&()), error = %err, "lookup failed");
                return reading.denied(internal_error(&message), Outcome::Error);
            }
        }
    } else {
        None
    };
    let ctx = admission.context(operation, reading.dry_run(), subscription);
    let before = match serde_json::to_value(&object) {
        Ok(before) => before,
        Err(err) => {
            return reading.denied(
                internal_error(&format!("cannot encode the object: {err}")),
                Outcome::Error,
            );
        }
    };
    if let Err(error) = object.default(&ctx) {
        let name = reading.name();
        let mut status = internal_error(&format!(
            "{}.{} {name:?} could not be defaulted: {error}",
            K::kind(&()),
            K::group(&())
        ));
        status.details = invalid::<K>(
            &Verdict {
                errors: vec![error],
                warnings: Vec::new(),
            },
            &name,
        )
        .details;
        return reading.denied(status, Outcome::Error);
    }
    let after = match serde_json::to_value(&object) {
        Ok(after) => after,
        Err(err) => {
            return reading.denied(
                internal_error(&format!("cannot encode the object: {err}")),
                Outcome::Error,
            );
        }
    };
    let patch = defaulting_patch(
        original.unwrap_or(&Value::Null),
        &before,
        &after,
        K::REQUIRED_EVEN_EMPTY,
    );
    if patch.0.is_empty() {
        return reading.answer(Outcome::Allowed);
    }
    let Reading {
        request, response, ..
    } = reading;
    match response.clone().with_patch(patch) {
        Ok(response) => Answer {
            operation: operation_label(&request.operation),
            review: response.into_review(),
            outcome: Outcome::Allowed,
        },
        Err(err) => Answer {
            operation: operation_label(&request.operation),
            review: deny(response, internal_error(&err.to_string())).into_review(),
            outcome: Outcome::Error,
        },
    }
}

/// The Cluster `query` names in `namespace`; not looked up without a client.
async fn owner_cluster(
    admission: &Admission,
    namespace: &str,
    query: &ClusterQuery,
) -> kube::Result<OwnerCluster> {
    match &admission.client {
        Some(client) => lookup::owner_cluster(client, namespace, query).await,
        None => Ok(OwnerCluster::NotLookedUp),
    }
}

async fn cluster_subscription(
    admission: &Admission,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> kube::Result<Option<String>> {
    match &admission.client {
        Some(client) => lookup::cluster_subscription_id(client, namespace, labels).await,
        None => Ok(None),
    }
}

/// Whether validating the pool `object` needs its MachinePool: it is Flexible and not being
/// deleted (a pool going away is not held up by a MachinePool already gone).
fn needs_pool_owner(object: &Value) -> bool {
    object.pointer("/spec/orchestrationMode").and_then(Value::as_str) == Some("Flexible")
        && object
            .pointer("/metadata/deletionTimestamp")
            .is_none_or(Value::is_null)
}

/// How often, one second apart, a missing MachinePool is looked for again: applied together from
/// one manifest, a pool may arrive just before its MachinePool.
const POOL_OWNER_ATTEMPTS: u32 = 3;

/// The MachinePool of the machine pool `name` in `namespace`; not looked up without a client.
async fn pool_owner(admission: &Admission, namespace: &str, name: &str) -> kube::Result<PoolOwner> {
    let Some(client) = &admission.client else {
        return Ok(PoolOwner::NotLookedUp);
    };
    let mut attempt = 1;
    loop {
        let owner = lookup::pool_owner(client, namespace, name).await?;
        if owner != PoolOwner::Missing || attempt == POOL_OWNER_ATTEMPTS {
            return Ok(owner);
        }
        attempt += 1;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// What defaulting changed, as a patch against `original` (the object as the API server holds
/// it): the operations that turn it into `defaulted`, less those that only re-encoding it
/// (`round_trip`) would make too, but for adding one of the `required` fields.
pub(crate) fn defaulting_patch(
    original: &Value,
    round_trip: &Value,
    defaulted: &Value,
    required: &[&str],
) -> Patch {
    let adds_required = |operation: &PatchOperation| matches!(operation, PatchOperation::Add(add) if required.contains(&add.path.as_str()));
    let encoding: Vec<PatchOperation> = json_patch::diff(original, round_trip)
        .0
        .into_iter()
        .filter(|operation| !adds_required(operation))
        .collect();
    Patch(
        json_patch::diff(original, defaulted)
            .0
            .into_iter()
            .filter(|operation| !encoding.contains(operation))
            .collect(),
    )
}

/// Validates the object of the review in `body` as `K`: creates and updates by its rules,
/// deletions by its rules when it checks them, admitted otherwise.
pub(crate) async fn validate<K: Rules>(
    admission: &Admission,
    lookup: ValidationLookup,
    body: &[u8],
) -> Answer {
    admission.counter(Hook::Validate).fetch_add(1, Ordering::Relaxed);
    let mut reading = match Reading::<K>::read(body, Hook::Validate) {
        Ok(reading) => reading,
        Err(answer) => return *answer,
    };
    let Some(operation) = rules_operation(&reading.request.operation) else {
        return reading.answer(Outcome::Allowed);
    };
    let mut ctx = admission.context(operation, reading.dry_run(), None);
    if lookup == ValidationLookup::PoolOwner
        && let Some(object) = reading.request.object.as_ref()
        && needs_pool_owner(object)
    {
        let namespace = reading.request.namespace.clone().unwrap_or_default();
        match pool_owner(admission, &namespace, &reading.name()).await {
            Ok(owner) => ctx.machine_pool = owner,
            Err(err) => {
                let message =
                    format!("cannot look up the MachinePool of the pool: {err}; the request can be retried");
                tracing::warn!(kind = %K::kind(&()), error = %err, "lookup failed");
                return reading.denied(internal_error(&message), Outcome::Error);
            }
        }
    }
    let decoded = match operation {
        // Only kinds that validate deletions decode what is going away.
        Operation::Delete if !K::VALIDATES_DELETE => return reading.answer(Outcome::Allowed),
        Operation::Delete => reading
            .decode(reading.request.old_object.as_ref(), "old object")
            .map(|old| (old, None)),
        Operation::Create => reading
            .decode(reading.request.object.as_ref(), "object")
            .map(|object| (object, None)),
        Operation::Update => reading
            .decode(reading.request.object.as_ref(), "object")
            .and_then(|object| {
                Ok((
                    object,
                    Some(reading.decode(reading.request.old_object.as_ref(), "old object")?),
                ))
            }),
    };
    let (object, old) = match decoded {
        Ok(decoded) => decoded,
        Err(status) => return reading.denied(*status, Outcome::Denied),
    };
    if let Some(query) = object.cluster_query(old.as_ref(), operation) {
        let namespace = reading.request.namespace.clone().unwrap_or_default();
        match owner_cluster(admission, &namespace, &query).await {
            Ok(cluster) => ctx.cluster = cluster,
            Err(err) => {
                let message =
                    format!("cannot look up the Cluster of the object: {err}; the request can be retried");
                tracing::warn!(kind = %K::kind(&()), error = %err, "lookup failed");
                return reading.denied(internal_error(&message), Outcome::Error);
            }
        }
    }
    let mut verdict = match (operation, &old) {
        (Operation::Delete, _) => object.validate_delete(&ctx),
        (Operation::Update, Some(old)) => object.validate_update(old, &ctx),
        _ => object.validate_create(&ctx),
    };
    if let (Some(kind), Some(object)) = (support::Kind::named(&K::kind(&())), &reading.request.object) {
        let old = reading.request.old_object.as_ref();
        verdict.warnings.extend(support::warnings(kind, object, old));
    }
    if !verdict.warnings.is_empty() {
        reading.response.warnings = Some(verdict.warnings.clone());
    }
    if verdict.allowed() {
        return reading.answer(Outcome::Allowed);
    }
    let name = reading.name();
    tracing::debug!(kind = %K::kind(&()), %name, operation = reading.operation(), "denied");
    reading.denied(invalid::<K>(&verdict, &name), Outcome::Denied)
}

#[cfg(test)]
mod tests {
    use capz_api::AzureClusterIdentity;
    use serde_json::json;

    use super::*;

    fn review(operation: &str, object: &Value, old: Option<&Value>, dry_run: bool) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "4b4c9e5f-0000-4000-8000-000000000001",
                "kind": {"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "kind": "AzureClusterIdentity"},
                "resource": {"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "resource": "azureclusteridentities"},
                "name": "identity",
                "namespace": "default",
                "operation": operation,
                "userInfo": {"username": "admin"},
                "object": object,
                "oldObject": old,
                "dryRun": dry_run,
            }
        }))
        .unwrap()
    }

    fn identity(spec: &Value) -> Value {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "metadata": {"name": "identity", "namespace": "default", "creationTimestamp": null},
            "spec": spec,
        })
    }

    fn answer_json(answer: &Answer) -> Value {
        serde_json::from_slice(&answer.to_json().unwrap()).unwrap()
    }

    #[test]
    fn a_valid_object_is_admitted_and_an_invalid_one_denied_with_causes() {
        let admission = Admission::new(Features::default(), None);
        let valid = identity(
            &json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t", "allowedNamespaces": {}}),
        );
        let answer = validate_now::<AzureClusterIdentity>(&admission, &review("CREATE", &valid, None, false));
        let response = &answer_json(&answer)["response"];
        assert_eq!(answer.outcome, Outcome::Allowed);
        assert_eq!(response["allowed"], true);
        assert_eq!(response["uid"], "4b4c9e5f-0000-4000-8000-000000000001");
        assert!(response.get("warnings").is_none(), "{response}");

        let invalid = identity(
            &json!({"type": "ServicePrincipal", "clientID": "c", "tenantID": "t",
            "clientSecret": {"name": "s"}, "resourceID": "/subscriptions/s"}),
        );
        let answer =
            validate_now::<AzureClusterIdentity>(&admission, &review("CREATE", &invalid, None, false));
        let review = answer_json(&answer);
        assert_eq!((answer.outcome, answer.operation), (Outcome::Denied, "CREATE"));
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(review["kind"], "AdmissionReview");
        let response = &review["response"];
        assert_eq!(response["allowed"], false);
        let status = &response["status"];
        assert_eq!(status["code"], 422);
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["status"], "Failure");
        let message = status["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "AzureClusterIdentity.infrastructure.cluster.x-k8s.io \"identity\" is invalid: spec.resourceID: Forbidden"
            ),
            "{message}"
        );
        assert_eq!(status["details"]["name"], "identity");
        assert_eq!(status["details"]["group"], "infrastructure.cluster.x-k8s.io");
        assert_eq!(status["details"]["kind"], "AzureClusterIdentity");
        let causes = status["details"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0]["reason"], "FieldValueForbidden");
        assert_eq!(causes[0]["field"], "spec.resourceID");
        assert!(
            causes[0]["message"].as_str().unwrap().starts_with("Forbidden: "),
            "{}",
            causes[0]
        );
        // The allowedNamespaces warning comes back with the denial.
        let warnings = response["warnings"].as_array().unwrap();
        assert!(
            warnings[0].as_str().unwrap().contains("allowedNamespaces"),
            "{warnings:?}"
        );
    }

    /// The warnings a validation review of `kind` answers with.
    fn warnings_of<K: Rules>(
        kind: &str,
        operation: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> Vec<String> {
        let admission = Admission::new(Features::default(), None);
        let mut body: Value = serde_json::from_slice(&review(operation, object, old, false)).unwrap();
        body["request"]["kind"]["kind"] = json!(kind);
        let answer = validate_now::<K>(&admission, &serde_json::to_vec(&body).unwrap());
        let response = &answer_json(&answer)["response"];
        response["warnings"]
            .as_array()
            .map(|warnings| warnings.iter().map(|w| w.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn fields_not_acted_on_yet_are_warned_about_on_create_and_when_new_on_update() {
        let machine = |spec: Value| {
            let mut spec_ =
                json!({"vmSize": "Standard_D2s_v3", "osDisk": {"osType": "Linux", "diskSizeGB": 128}});
            spec_
                .as_object_mut()
                .unwrap()
                .extend(spec.as_object().unwrap().clone());
            json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "AzureMachine",
                "metadata": {"name": "m", "namespace": "default"},
                "spec": spec_,
            })
        };
        let scale_set = json!({"virtualMachineScaleSetID": "/vmss"});
        let more = json!({"virtualMachineScaleSetID": "/vmss", "allocatePublicIP": true});
        let scale_set_warning = "spec.virtualMachineScaleSetID: not acted on by capz-rs yet: the VM is created outside any scale set";
        let public_ip_warning =
            "spec.allocatePublicIP: not acted on by capz-rs yet: the VM gets no public IP of its own";
        let cases: [(&str, Value, Option<Value>, Vec<&str>); 5] = [
            ("CREATE", json!({}), None, vec![]),
            ("CREATE", json!({"allocatePublicIP": false}), None, vec![]),
            (
                "CREATE",
                more.clone(),
                None,
                vec![public_ip_warning, scale_set_warning],
            ),
            // Nothing new: the warnings were given when the fields were set.
            ("UPDATE", scale_set.clone(), Some(scale_set.clone()), vec![]),
            ("UPDATE", more, Some(scale_set), vec![public_ip_warning]),
        ];
        for (operation, spec, old, expected) in cases {
            let old = old.map(machine);
            let found = warnings_of::<capz_api::AzureMachine>(
                "AzureMachine",
                operation,
                &machine(spec.clone()),
                old.as_ref(),
            );
            assert_eq!(found, expected, "{operation} {spec}");
        }

        let template = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterTemplate",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"template": {"spec": {"location": "westeurope", "networkSpec": {
                "subnets": [{"name": "nodes", "role": "node", "natGateway": {"name": "gw", "ip": {"name": "gw-ip",
                    "ipTags": [{"type": "FirstPartyUsage", "tag": "/Unprivileged"}]}}}]}}}},
        });
        let found =
            warnings_of::<capz_api::AzureClusterTemplate>("AzureClusterTemplate", "CREATE", &template, None);
        assert!(
            found.iter().any(|warning| warning
                == "spec.template.spec.networkSpec.subnets[0].natGateway.ip.ipTags: not acted on by capz-rs yet: \
                    public IPs are created without IP tags"),
            "{found:?}"
        );

        let credentials_file = identity(&json!({"type": "UserAssignedIdentityCredential", "clientID": "c",
            "tenantID": "t", "userAssignedIdentityCredentialsPath": "/c", "allowedNamespaces": {}}));
        let found =
            warnings_of::<AzureClusterIdentity>("AzureClusterIdentity", "CREATE", &credentials_file, None);
        assert_eq!(
            found
                .iter()
                .filter(|warning| warning.contains("cannot sign in with a credentials file"))
                .count(),
            2,
            "{found:?}"
        );
    }

    #[test]
    fn updates_are_checked_against_the_old_object_and_deletes_admitted() {
        let admission = Admission::new(Features::default(), None);
        let old = identity(
            &json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t", "allowedNamespaces": {}}),
        );
        let new = identity(
            &json!({"type": "UserAssignedMSI", "clientID": "c", "tenantID": "t", "allowedNamespaces": {}}),
        );
        let answer =
            validate_now::<AzureClusterIdentity>(&admission, &review("UPDATE", &new, Some(&old), false));
        let status = &answer_json(&answer)["response"]["status"];
        assert_eq!(status["code"], 422);
        assert_eq!(status["details"]["causes"][0]["field"], "spec.type");
        assert!(
            status["message"].as_str().unwrap().contains("field is immutable"),
            "{status}"
        );

        let answer = validate_now::<AzureClusterIdentity>(&admission, &review("UPDATE", &new, None, false));
        let status = &answer_json(&answer)["response"]["status"];
        assert_eq!(status["code"], 400);
        assert!(
            status["message"].as_str().unwrap().contains("no old object"),
            "{status}"
        );

        let answer = validate_now::<AzureClusterIdentity>(
            &admission,
            &review("DELETE", &Value::Null, Some(&old), false),
        );
        assert_eq!(answer.outcome, Outcome::Allowed);
        assert_eq!(answer.operation, "DELETE");
        assert_eq!(admission.answered(Hook::Validate), 3);
        assert_eq!(admission.answered(Hook::Mutate), 0);
    }

    #[test]
    fn undecodable_requests_are_denied_with_400_keeping_their_uid_and_unreadable_objects_at_their_field() {
        let admission = Admission::new(Features::default(), None);
        let answer = validate_now::<AzureClusterIdentity>(&admission, b"not json");
        let response = &answer_json(&answer)["response"];
        assert_eq!((answer.outcome, answer.operation), (Outcome::Denied, "unknown"));
        assert_eq!(response["allowed"], false);
        assert_eq!(response["status"]["code"], 400);
        assert!(
            response["status"]["message"]
                .as_str()
                .unwrap()
                .contains("not an AdmissionReview")
        );

        // Readable envelope, unreadable request: the uid still comes back.
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":"PATCH"}}"#;
        let response = &answer_json(&validate_now::<AzureClusterIdentity>(&admission, body))["response"];
        assert_eq!(response["uid"], "u-1");
        assert_eq!(response["status"]["code"], 400);

        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        let response = &answer_json(&validate_now::<AzureClusterIdentity>(&admission, body))["response"];
        assert!(
            response["status"]["message"]
                .as_str()
                .unwrap()
                .contains("no request")
        );

        // An object that cannot be read is refused at the field, as the API server refuses it.
        let wrong = identity(&json!({"type": "Password", "clientID": "c", "tenantID": "t"}));
        let answer = mutate_now(&admission, &review("CREATE", &wrong, None, false));
        let status = &answer_json(&answer)["response"]["status"];
        assert_eq!(
            (status["code"].clone(), status["reason"].clone()),
            (json!(422), json!("Invalid"))
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.type", "{status}");
        assert_eq!(
            status["details"]["causes"][0]["reason"], "FieldValueNotSupported",
            "{status}"
        );
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains(r#"spec.type: Unsupported value: "Password""#),
            "{status}"
        );

        // A kind routed to the wrong webhook.
        let mut body: Value =
            serde_json::from_slice(&review("CREATE", &identity(&json!({})), None, false)).unwrap();
        body["request"]["kind"]["kind"] = json!("AzureCluster");
        let answer = validate_now::<AzureClusterIdentity>(&admission, &serde_json::to_vec(&body).unwrap());
        let status = &answer_json(&answer)["response"]["status"];
        assert_eq!(status["code"], 400);
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("not AzureCluster.v1beta1"),
            "{status}"
        );
    }

    fn validate_now<K: Rules>(admission: &Admission, body: &[u8]) -> Answer {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(validate::<K>(admission, ValidationLookup::Nothing, body))
    }

    fn mutate_now(admission: &Admission, body: &[u8]) -> Answer {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(mutate::<AzureClusterIdentity>(admission, body))
    }

    #[test]
    fn defaulting_an_identity_changes_nothing_and_sends_no_patch() {
        let admission = Admission::new(Features::default(), None);
        let object = identity(&json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t"}));
        let answer = mutate_now(&admission, &review("CREATE", &object, None, false));
        let response = &answer_json(&answer)["response"];
        assert_eq!(response["allowed"], true);
        assert!(response.get("patch").is_none(), "{response}");
        assert!(response.get("patchType").is_none(), "{response}");
        assert_eq!(admission.answered(Hook::Mutate), 1);
    }

    /// Rules that default a field, record what the context said, and fail on request.
    mod recording {
        use std::sync::Mutex;

        use capz_rules::{Context, FieldError, FieldPath, Rules, Verdict};
        use kube::CustomResource;
        use serde::{Deserialize, Serialize};

        pub(super) static SEEN: Mutex<Vec<(bool, Option<String>)>> = Mutex::new(Vec::new());

        #[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[kube(
            group = "infrastructure.cluster.x-k8s.io",
            version = "v1beta1",
            kind = "Recorder",
            namespaced,
            schema = "disabled"
        )]
        #[serde(rename_all = "camelCase")]
        pub(super) struct RecorderSpec {
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(super) location: Option<String>,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            pub(super) zones: Vec<String>,
            #[serde(default)]
            pub(super) fail: bool,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub(super) stale: Option<String>,
        }

        impl Rules for Recorder {
            fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
                SEEN.lock()
                    .unwrap()
                    .push((ctx.dry_run, ctx.cluster_subscription_id.clone()));
                if self.spec.fail {
                    return Err(FieldError::invalid(
                        FieldPath::root("spec").child("fail"),
                        &true,
                        "the random source failed",
                    ));
                }
                self.spec.location.get_or_insert_with(|| "westeurope".to_owned());
                self.spec.zones.push(format!("dry-run-{}", ctx.dry_run));
                self.spec.stale = None;
                Ok(())
            }

            fn needs_cluster_subscription(&self) -> bool {
                true
            }

            fn validate_create(&self, _: &Context<'_>) -> Verdict {
                Verdict::default()
            }

            fn validate_update(&self, _: &Self, _: &Context<'_>) -> Verdict {
                Verdict::default()
            }
        }
    }

    fn recorder_review(object: &Value, dry_run: bool) -> Vec<u8> {
        let mut body: Value = serde_json::from_slice(&review("CREATE", object, None, dry_run)).unwrap();
        body["request"]["kind"]["kind"] = json!("Recorder");
        serde_json::to_vec(&body).unwrap()
    }

    #[test]
    fn defaulting_answers_with_a_patch_of_what_it_changed_only() {
        let admission = Admission::new(Features::default(), None);
        let object = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "Recorder",
            // What re-encoding drops or adds is not patched: a null timestamp, an empty status.
            "metadata": {"name": "r", "namespace": "default", "creationTimestamp": null},
            "spec": {"zones": ["1"], "fail": false, "stale": "x"},
            "status": {},
        });
        let run = |dry_run| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(mutate::<recording::Recorder>(
                    &admission,
                    &recorder_review(&object, dry_run),
                ))
        };
        let answer = run(true);
        let response = &answer_json(&answer)["response"];
        assert_eq!(response["allowed"], true, "{response}");
        assert_eq!(response["patchType"], "JSONPatch");
        let patch: Value = serde_json::from_slice(&patch_bytes(&response["patch"])).unwrap();
        assert_eq!(
            patch,
            json!([
                {"op": "add", "path": "/spec/location", "value": "westeurope"},
                {"op": "add", "path": "/spec/zones/1", "value": "dry-run-true"},
                {"op": "remove", "path": "/spec/stale"},
            ]),
        );
        // Applied to the object as the API server holds it, the patch gives the defaulted object.
        let mut patched = object.clone();
        json_patch::patch(&mut patched, &serde_json::from_value::<Patch>(patch).unwrap()).unwrap();
        assert_eq!(
            patched["spec"],
            json!({"location": "westeurope", "zones": ["1", "dry-run-true"], "fail": false})
        );
        assert_eq!(patched["status"], json!({}));
        assert!(patched["metadata"]["creationTimestamp"].is_null());

        drop(run(false));
        // The flag reached the rules; no client, so the lookup found nothing.
        let seen = recording::SEEN.lock().unwrap().clone();
        assert_eq!(seen[seen.len() - 2..], [(true, None), (false, None)]);

        let mut failing = object.clone();
        failing["spec"]["fail"] = json!(true);
        let answer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(mutate::<recording::Recorder>(
                &admission,
                &recorder_review(&failing, false),
            ));
        assert_eq!(answer.outcome, Outcome::Error);
        let status = &answer_json(&answer)["response"]["status"];
        assert_eq!(status["code"], 500);
        assert!(
            status["message"]
                .as_str()
                .unwrap()
                .contains("could not be defaulted"),
            "{status}"
        );
        assert_eq!(status["details"]["causes"][0]["field"], "spec.fail");
    }

    /// The bytes of a response's patch: base64 text, as Kubernetes writes `[]byte`.
    fn patch_bytes(patch: &Value) -> Vec<u8> {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(patch.as_str().unwrap())
            .unwrap()
    }
}
