//! How long the webhook server takes to answer one admission review in-process, without HTTP or
//! TLS: reading the AdmissionReview, decoding the object, defaulting or validating it by its
//! rules, and writing the answer. Two kinds: a typical AzureClusterIdentity (a service principal
//! with its Secret and two allowed namespaces) and the AzureCluster of the default flavor, the
//! kind with the most defaulting and validation.
//!
//! `just bench-webhooks` runs it; `--reviews N` changes how many reviews of each sort are timed
//! (after as many again to warm up).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use capz_rules::Features;
use capz_webhooks::Hook;
use capz_webhooks::review::{Admission, Outcome};
use serde_json::{Value, json};

type Result<T = (), E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

fn flag(name: &str, default: usize) -> Result<usize> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|arg| arg == name) {
        Some(at) => Ok(args.get(at + 1).ok_or(format!("{name} needs a value"))?.parse()?),
        None => Ok(default),
    }
}

fn identity(client_id: &str, secret: bool) -> Value {
    let mut spec = json!({
        "type": "ServicePrincipal",
        "clientID": client_id,
        "tenantID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "allowedNamespaces": {"list": ["team-a", "team-b"]},
    });
    if secret {
        spec["clientSecret"] = json!({"name": "cluster-identity-secret", "namespace": "capz-system"});
    }
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {
            "name": "cluster-identity",
            "namespace": "capz-system",
            "uid": "6f0c6b1e-3d4b-4c53-9a57-0c1c2f0e8d11",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"clusterctl.cluster.x-k8s.io/move-hierarchy": "true"},
            "managedFields": [{
                "manager": "kubectl", "operation": "Apply", "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:type": {}, "f:clientID": {}, "f:tenantID": {}, "f:clientSecret": {}}},
            }],
        },
        "spec": spec,
    })
}

/// The default flavor's AzureCluster as `clusterctl generate cluster` writes it, with `tag` as an
/// additional tag.
fn cluster(tag: &str) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": {
            "name": "capz-cluster",
            "namespace": "default",
            "uid": "9a1d7c2e-4b3f-4e6a-8c5d-1f2e3a4b5c6d",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"cluster.x-k8s.io/cluster-name": "capz-cluster"},
        },
        "spec": {
            "identityRef": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "AzureClusterIdentity",
                "name": "cluster-identity",
            },
            "location": "southcentralus",
            "networkSpec": {
                "subnets": [
                    {"name": "control-plane-subnet", "role": "control-plane"},
                    {"name": "node-subnet", "role": "node"},
                ],
                "vnet": {"name": "capz-cluster-vnet"},
            },
            "resourceGroup": "capz-cluster",
            "subscriptionID": "00000000-0000-0000-0000-000000000001",
            "additionalTags": {"team": tag},
        },
    })
}

/// `object` as the defaulting webhook leaves it: what the validating webhook sees.
fn defaulted(object: &Value) -> Result<Value> {
    let mut cluster: capz_api::AzureCluster = serde_json::from_value(object.clone())?;
    capz_rules::azurecluster::default_cluster(&mut cluster, Features::default());
    Ok(serde_json::to_value(cluster)?)
}

fn review(operation: &str, object: &Value, old: Option<&Value>) -> Result<Bytes> {
    let kind = object["kind"].as_str().ok_or("the object has no kind")?;
    let resource = match kind {
        "AzureClusterIdentity" => "azureclusteridentities",
        "AzureCluster" => "azureclusters",
        other => return Err(format!("no resource known for {other}").into()),
    };
    let group_version_kind =
        json!({"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "kind": kind});
    let group_version_resource =
        json!({"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "resource": resource});
    Ok(Bytes::from(serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0d4e2c3a-7f35-4d5e-8d6f-2a8c1e3b5f70",
            "kind": group_version_kind,
            "resource": group_version_resource,
            "requestKind": group_version_kind,
            "requestResource": group_version_resource,
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        }
    }))?))
}

/// The duration at `quantile` of sorted `samples`.
fn at(samples: &[Duration], quantile: f64) -> Duration {
    let last = samples.len().saturating_sub(1);
    // Rounded to the nearest index; the counts are far below f64's exact integer range.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((last as f64) * quantile).round() as usize;
    samples.get(index).copied().unwrap_or_default()
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

type Case = (&'static str, Hook, Bytes, Outcome);

/// Times `reviews` reviews of each case on the route of `kind`, after as many to warm up.
async fn bench(kind: &str, cases: &[Case], reviews: usize) -> Result {
    let routes = capz_webhooks::routes::all();
    let route = routes
        .iter()
        .find(|route| route.kind() == kind)
        .ok_or(format!("{kind} is not served"))?;
    let admission = Arc::new(Admission::new(Features::default(), None));
    println!(
        "{reviews} in-process admission reviews of each sort ({kind}, {} byte request):",
        cases[0].2.len()
    );
    let mut pair = Vec::new();
    for (name, hook, body, expected) in cases {
        let mut samples = Vec::with_capacity(reviews);
        for round in 0..2 * reviews {
            let started = Instant::now();
            let answer = route.review(*hook, admission.clone(), body.clone()).await;
            let json = black_box(answer.to_json()?);
            let took = started.elapsed();
            if answer.outcome != *expected {
                return Err(format!(
                    "{kind} {name}: {:?} instead of {expected:?}: {}",
                    answer.outcome,
                    String::from_utf8_lossy(&json)
                )
                .into());
            }
            if round >= reviews {
                samples.push(took);
            }
        }
        let total: Duration = samples.iter().sum();
        samples.sort_unstable();
        println!(
            "  {name:<24} p50 {:6.1} µs  p99 {:6.1} µs  max {:7.1} µs  {:8.0} reviews/s",
            micros(at(&samples, 0.5)),
            micros(at(&samples, 0.99)),
            micros(at(&samples, 1.0)),
            f64::from(u32::try_from(samples.len())?) / total.as_secs_f64(),
        );
        if *hook == Hook::Mutate || *name == "validate, CREATE" {
            pair.push(at(&samples, 0.5));
        }
    }
    println!(
        "  a create (default + validate) p50: {:.1} µs",
        micros(pair.iter().sum())
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result {
    let reviews = flag("--reviews", 10_000)?;
    let valid = identity("5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10", true);
    let changed = identity("0a6c2f7e-2b8d-4f1a-9c3e-7d5b4a2f1e00", true);
    let missing_secret = identity("5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10", false);
    let identities = [
        (
            "default, CREATE",
            Hook::Mutate,
            review("CREATE", &valid, None)?,
            Outcome::Allowed,
        ),
        (
            "validate, CREATE",
            Hook::Validate,
            review("CREATE", &valid, None)?,
            Outcome::Allowed,
        ),
        (
            "validate, UPDATE",
            Hook::Validate,
            review("UPDATE", &changed, Some(&valid))?,
            Outcome::Allowed,
        ),
        (
            "validate, CREATE denied",
            Hook::Validate,
            review("CREATE", &missing_secret, None)?,
            Outcome::Denied,
        ),
    ];
    bench("AzureClusterIdentity", &identities, reviews).await?;

    let written = cluster("a");
    let stored = defaulted(&written)?;
    let retagged = defaulted(&cluster("b"))?;
    let mut moved = stored.clone();
    moved["spec"]["location"] = json!("westeurope");
    let clusters = [
        (
            "default, CREATE",
            Hook::Mutate,
            review("CREATE", &written, None)?,
            Outcome::Allowed,
        ),
        (
            "validate, CREATE",
            Hook::Validate,
            review("CREATE", &stored, None)?,
            Outcome::Allowed,
        ),
        (
            "validate, UPDATE",
            Hook::Validate,
            review("UPDATE", &retagged, Some(&stored))?,
            Outcome::Allowed,
        ),
        (
            "validate, UPDATE denied",
            Hook::Validate,
            review("UPDATE", &moved, Some(&stored))?,
            Outcome::Denied,
        ),
    ];
    bench("AzureCluster", &clusters, reviews).await
}
