//! Helpers for tests against the plane: a namespace per test, applying manifests, waiting for
//! conditions.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use capz_kit::api::controllers::Family;
use futures_util::FutureExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::discovery::{ApiResource, Scope};
use kube::{Client, ResourceExt as _};

use crate::error::{Error, Result};
use crate::plane::{FIELD_MANAGER, Plane};

/// What a test gives: nothing, or any error, shown as it is.
pub type TestResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Runs `test` in a namespace of its own on the shared plane, side by side with other tests, with
/// the peer controllers of `playing` reported running (the test plays them: it writes their
/// conditions).
///
/// # Errors
/// The test's, or when the plane, a Lease or the namespace cannot be had.
pub async fn in_namespace(
    playing: &[Family],
    test: impl AsyncFnOnce(&'static Plane, Client, String) -> TestResult,
) -> TestResult {
    let plane = crate::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    for family in playing {
        play_controller(&client, "default", *family).await?;
    }
    let inner = client.clone();
    with_temp_namespace(&client, async move |namespace| {
        test(plane, inner, namespace).await
    })
    .await?
}

/// Runs `test` with a namespace made for it alone, then deletes the namespace, also when `test`
/// panics (the panic then goes on).
///
/// # Errors
/// When the namespace cannot be created.
pub async fn with_temp_namespace<R>(client: &Client, test: impl AsyncFnOnce(String) -> R) -> Result<R> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let mut namespace = Namespace::default();
    namespace.metadata.generate_name = Some("test-".into());
    let name = namespaces
        .create(&PostParams::default(), &namespace)
        .await?
        .name_any();
    let outcome = AssertUnwindSafe(test(name.clone())).catch_unwind().await;
    // Deleted without waiting: on a plane without kube-controller-manager it stays Terminating,
    // which nothing else minds.
    let _ = namespaces.delete(&name, &DeleteParams::default()).await;
    match outcome {
        Ok(result) => Ok(result),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Announces that the controller of `family` runs, as its renewed Lease does, in `namespace`
/// (where the controllers under test keep their Leases: their kubeconfig's namespace, `default` on
/// the plane): for a test that plays that controller itself, writing its conditions. The
/// announcement holds for an hour.
///
/// # Errors
/// When the API server refuses the Lease.
pub async fn play_controller(client: &Client, namespace: &str, family: Family) -> Result<()> {
    let lease = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": family.qualified(), "namespace": namespace},
        "spec": {
            "holderIdentity": "played-by-the-test",
            "leaseDurationSeconds": 3600,
            "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                k8s_openapi::jiff::Timestamp::now()
            ),
        },
    });
    Api::<Lease>::namespaced(client.clone(), namespace)
        .patch(
            family.qualified(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&lease),
        )
        .await?;
    Ok(())
}

/// Server-side applies every document of `yaml` (namespaced ones into `namespace`) and returns
/// them as the API server stored them.
///
/// # Errors
/// When a document is not a Kubernetes object, its kind is not served, or the server refuses it.
pub async fn apply_yaml(client: &Client, namespace: &str, yaml: &str) -> Result<Vec<DynamicObject>> {
    let documents: Vec<DynamicObject> = serde_saphyr::from_multiple(yaml).map_err(|err| Error::Manifest {
        path: "the manifest".into(),
        message: err.to_string(),
    })?;
    let mut applied = Vec::with_capacity(documents.len());
    for document in documents {
        applied.push(apply(client, namespace, &document).await?);
    }
    Ok(applied)
}

/// Server-side applies one object (into `namespace` when its kind is namespaced and it names no
/// namespace) and returns it as the API server stored it.
///
/// # Errors
/// When its kind is not served or the server refuses it.
pub async fn apply(client: &Client, namespace: &str, object: &DynamicObject) -> Result<DynamicObject> {
    let api = api_for(client, object, namespace).await?;
    Ok(api
        .patch(
            &object.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await?)
}

/// The API of `object`'s kind, in `namespace` when the kind is namespaced and the object names no
/// namespace of its own.
///
/// # Errors
/// When the object has no kind or the kind is not served.
pub async fn api_for(client: &Client, object: &DynamicObject, namespace: &str) -> Result<Api<DynamicObject>> {
    let types = object.types.as_ref().ok_or_else(|| Error::Manifest {
        path: object.name_any(),
        message: "the object has no apiVersion and kind".into(),
    })?;
    let gvk = GroupVersionKind::try_from(types).map_err(|err| Error::Manifest {
        path: object.name_any(),
        message: err.to_string(),
    })?;
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok(match capabilities.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            object.namespace().as_deref().unwrap_or(namespace),
            &resource,
        ),
    })
}

/// Reads `name` through `api` until `ready` holds for it, or fails after `timeout`.
///
/// # Errors
/// When the time runs out (saying what was awaited) or a read fails other than by not finding it.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    timeout: Duration,
    ready: impl Fn(&K) -> bool,
) -> Result<K>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let started = Instant::now();
    loop {
        if let Some(object) = api.get_opt(name).await?
            && ready(&object)
        {
            return Ok(object);
        }
        if started.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("{name}: {what} did not happen"),
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The status and body of `GET path` at `address`, over a plain HTTP/1.0 exchange: enough to probe
/// the health and metrics endpoints of a controller under test.
///
/// # Errors
/// When nothing answers, or the answer is not HTTP.
pub async fn http_get(address: std::net::SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {response}")))?;
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned());
    Ok((status, body.unwrap_or_default()))
}

/// Whether `object`'s `status.conditions` has `type_` with `status`.
#[must_use]
pub fn has_condition(object: &DynamicObject, type_: &str, status: &str) -> bool {
    object.data["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition["type"] == type_ && condition["status"] == status)
        })
}

/// Applies one object and waits until its condition `type_` is `True`.
///
/// # Errors
/// As [`apply_yaml`] and [`wait_for`] fail.
pub async fn apply_and_wait_for_condition(
    client: &Client,
    namespace: &str,
    yaml: &str,
    type_: &str,
    timeout: Duration,
) -> Result<DynamicObject> {
    let mut applied = apply_yaml(client, namespace, yaml).await?;
    let object = applied.pop().ok_or_else(|| Error::Manifest {
        path: "the manifest".into(),
        message: "it holds no object".into(),
    })?;
    let api = api_for(client, &object, namespace).await?;
    wait_for(
        &api,
        &object.name_any(),
        &format!("condition {type_}=True"),
        timeout,
        |object| has_condition(object, type_, "True"),
    )
    .await
}

/// The `ApiResource` of a kind the server serves, for building `Api<DynamicObject>`s.
///
/// # Errors
/// When the kind is not served.
pub async fn resource(client: &Client, group: &str, version: &str, kind: &str) -> Result<ApiResource> {
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Ok(kube::discovery::pinned_kind(client, &gvk).await?.0)
}

/// Creates a Cluster and its AzureCluster, both named `name`, in `namespace`: in `westeurope`
/// and `subscription`, with the fields of `spec` (such as `networkSpec`) added to the
/// AzureCluster's spec. For tests of a cluster-level controller.
///
/// # Errors
/// When the objects cannot be applied.
pub async fn create_azure_cluster(
    client: &Client,
    namespace: &str,
    name: &str,
    subscription: &str,
    spec: &serde_json::Value,
) -> Result<()> {
    let mut full = serde_json::json!({"location": "westeurope", "subscriptionID": subscription});
    if let (Some(full), Some(spec)) = (full.as_object_mut(), spec.as_object()) {
        full.extend(spec.clone());
    }
    let objects = [
        serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureCluster", "name": name}},
        }),
        serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": name}},
            "spec": full,
        }),
    ];
    for object in objects {
        let object = serde_json::from_value(object).map_err(|error| Error::Manifest {
            path: format!("the Cluster and AzureCluster {name}"),
            message: error.to_string(),
        })?;
        apply(client, namespace, &object).await?;
    }
    Ok(())
}

/// Reports the conditions `types` True on `name` under `manager`, as the peer controller a test
/// plays would.
///
/// # Errors
/// When the object cannot be read or its status applied.
pub async fn report_conditions<K>(
    api: &Api<K>,
    name: &str,
    manager: &capz_kit::apply::FieldManager,
    types: &[capz_kit::api::common::conditions::ConditionType],
) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    use capz_kit::conditions::{Observation, observe};

    #[derive(Debug, serde::Serialize)]
    struct Status {
        conditions: Vec<capz_kit::api::common::conditions::Condition>,
    }

    let object = api.get(name).await?;
    let conditions = observe(
        None,
        types.iter().cloned().map(Observation::holds),
        k8s_openapi::jiff::Timestamp::now(),
    );
    capz_kit::apply::apply_status(api, manager, &object, &Status { conditions }).await?;
    Ok(())
}

/// Deletes `name` and waits until it is gone, its finalizers done, for at most `timeout`.
///
/// # Errors
/// When it is still there after `timeout` (naming the finalizers left), or a call fails.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, &DeleteParams::default()).await?;
    let started = Instant::now();
    while let Some(object) = api.get_opt(name).await? {
        if started.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("{name} kept its finalizers {:?}", object.finalizers()),
                seconds: timeout.as_secs(),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// The status and reason of the condition `type_` on an AzureCluster, if it has one.
#[must_use]
pub fn cluster_condition(
    object: &capz_kit::api::AzureCluster,
    type_: &capz_kit::api::common::conditions::ConditionType,
) -> Option<(capz_kit::api::common::conditions::ConditionStatus, Option<String>)> {
    object
        .status
        .as_ref()?
        .conditions
        .get(type_)
        .map(|condition| (condition.status, condition.reason.clone()))
}
