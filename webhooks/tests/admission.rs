//! The admission corpus: cases written as data under `tests/admission/`, each one a manifest (or
//! an update of one) sent to the real API server, which calls the webhooks, and the verdict it
//! must give: admitted with the values the stored object holds, or refused at exactly the listed
//! fields (every refusal names at least one field). Every case names the CAPZ rule or default it mirrors, and every CAPZ rule listed in
//! `tests/admission/capz-rules.txt` must have a case.
//!
//! A suite file is one kind:
//!
//! ```yaml
//! kind: AzureCluster
//! base: {metadata: {...}, spec: {...}}  # every case's manifest starts from this
//! features: EdgeZone=true               # optional: the webhook server's feature gates
//! cases:
//! - name: what the case shows
//!   capz: AzureCluster/validateVnetPeerings   # the CAPZ rule or default, as in capz-rules.txt
//!   object: {spec: {...}}       # a JSON merge patch onto `base` (null removes a field)
//!   update: {spec: {...}}       # optional: `object` is stored first, then this merge patch is sent
//!   delete: true                # optional: `object` is stored first, then deleted
//!   setup: [{...}]              # optional: whole objects applied first (a Cluster, other pools)
//!   dry_run: true               # optional: sent as a server-side dry run
//!   refused: {spec.x: FieldValueInvalid}   # the causes, field to reason; or:
//!   stored: {/spec/x: value}    # admitted; JSON pointers into the answer and their values
//!   present: [/spec/z]          # admitted; pointers the answer has, whatever their value
//!   absent: [/spec/y]           # admitted; pointers the answer lacks
//!   warnings: [text]            # admitted; each text is in one warning
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use capz_harness::{Plane, WebhookOptions};
use kube::Client;
use kube::Resource as _;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde::Deserialize;
use serde_json::{Value, json};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const GROUP: &str = "infrastructure.cluster.x-k8s.io";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Suite {
    kind: String,
    #[serde(default)]
    base: Value,
    #[serde(default)]
    features: String,
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    capz: OneOrMore,
    #[serde(default)]
    object: Value,
    update: Option<Value>,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    setup: Vec<Value>,
    #[serde(default)]
    dry_run: bool,
    refused: Option<BTreeMap<String, String>>,
    #[serde(default)]
    stored: BTreeMap<String, Value>,
    #[serde(default)]
    present: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMore {
    One(String),
    More(Vec<String>),
}

impl OneOrMore {
    fn rules(&self) -> Vec<&str> {
        match self {
            Self::One(rule) => vec![rule],
            Self::More(rules) => rules.iter().map(String::as_str).collect(),
        }
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/admission")
}

fn suites() -> TestResult<Vec<(String, Suite)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()?;
    files.retain(|file| file.extension().is_some_and(|ext| ext == "yaml"));
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let name = file
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let suite: Suite = serde_saphyr::from_str(&std::fs::read_to_string(&file)?)
                .map_err(|error| format!("{name}: {error}"))?;
            Ok((name, suite))
        })
        .collect()
}

/// The CAPZ rules and defaults the corpus must cover, one per line (`#` starts a comment).
fn capz_rules() -> TestResult<BTreeSet<String>> {
    let text = std::fs::read_to_string(corpus_dir().join("capz-rules.txt"))?;
    Ok(text
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect())
}

/// Every listed CAPZ rule has a case, and every case names a listed rule; checked without a
/// plane so that a gap shows at once.
#[test]
fn every_capz_rule_has_a_case() -> TestResult {
    let listed = capz_rules()?;
    let mut covered = BTreeSet::new();
    for (file, suite) in suites()? {
        for case in &suite.cases {
            for rule in case.capz.rules() {
                assert!(
                    listed.contains(rule),
                    "{file}: case {:?} names {rule:?}, which capz-rules.txt does not list",
                    case.name
                );
                covered.insert(rule.to_owned());
            }
            let admitted = !case.stored.is_empty()
                || !case.present.is_empty()
                || !case.absent.is_empty()
                || !case.warnings.is_empty();
            assert!(
                !(case.refused.is_some() && admitted),
                "{file}: case {:?} expects both a refusal and a stored object",
                case.name
            );
        }
    }
    let missing: Vec<&String> = listed.difference(&covered).collect();
    assert!(missing.is_empty(), "CAPZ rules without a case: {missing:?}");
    Ok(())
}

fn merged(base: &Value, patch: &Value) -> Value {
    let mut object = base.clone();
    if !patch.is_null() {
        json_patch::merge(&mut object, patch);
    }
    object
}

/// What one case got from the API server.
enum Answer {
    Admitted { object: Value, warnings: Vec<String> },
    Refused(Box<kube::core::Status>),
}

/// Sends a request as it is, reading the API server's warnings from the response headers.
async fn send_raw(client: &Client, request: http::Request<Vec<u8>>) -> TestResult<Answer> {
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let warnings = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let ok = response.status().is_success();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    Ok(if ok {
        Answer::Admitted {
            object: serde_json::from_slice(&body)?,
            warnings,
        }
    } else {
        Answer::Refused(Box::new(serde_json::from_slice(&body)?))
    })
}

async fn send(client: &Client, path: &str, name: &str, case: &Case, object: &Value) -> TestResult<Answer> {
    let request = kube::core::Request::new(path);
    let body = serde_json::to_vec(object)?;
    if case.delete {
        if let Answer::Refused(status) =
            send_raw(client, request.create(&PostParams::default(), body)?).await?
        {
            return Err(format!("the object to delete was refused: {}", status.message).into());
        }
        let params = kube::api::DeleteParams {
            dry_run: case.dry_run,
            ..kube::api::DeleteParams::default()
        };
        return send_raw(client, request.delete(name, &params)?).await;
    }
    let Some(update) = &case.update else {
        let params = PostParams {
            dry_run: case.dry_run,
            ..PostParams::default()
        };
        return send_raw(client, request.create(&params, body)?).await;
    };
    if let Answer::Refused(status) = send_raw(client, request.create(&PostParams::default(), body)?).await? {
        return Err(format!("the object to update was refused: {}", status.message).into());
    }
    let params = PatchParams {
        dry_run: case.dry_run,
        ..PatchParams::default()
    };
    send_raw(client, request.patch(name, &params, &Patch::Merge(update))?).await
}

/// Checks one answer against the case; gives what differs.
fn judge(case: &Case, answer: &Answer) -> Option<String> {
    match (answer, &case.refused) {
        (Answer::Refused(status), Some(expected)) => {
            let causes: BTreeMap<String, String> = status
                .details
                .iter()
                .flat_map(|details| &details.causes)
                .map(|cause| (cause.field.clone(), cause.reason.clone()))
                .collect();
            if causes.is_empty() || causes.contains_key("") {
                return Some(format!("refused without a field path: {}", status.message));
            }
            (status.code != 422 || &causes != expected).then(|| {
                format!(
                    "refused with {} {causes:?}, expected {expected:?}: {}",
                    status.code, status.message
                )
            })
        }
        (Answer::Refused(status), None) => Some(format!("refused: {}", status.message)),
        (Answer::Admitted { .. }, Some(expected)) => {
            Some(format!("admitted, expected a refusal at {expected:?}"))
        }
        (Answer::Admitted { object, warnings }, None) => {
            let mut wrong = Vec::new();
            for (pointer, value) in &case.stored {
                let got = object.pointer(pointer);
                if got != Some(value) {
                    wrong.push(format!("{pointer} is {got:?}, expected {value}"));
                }
            }
            for pointer in &case.present {
                if object
                    .pointer(pointer)
                    .is_none_or(|value| value.is_null() || value == "")
                {
                    wrong.push(format!("{pointer} is not set"));
                }
            }
            for pointer in &case.absent {
                if let Some(got) = object.pointer(pointer) {
                    wrong.push(format!("{pointer} is {got}, expected nothing"));
                }
            }
            for text in &case.warnings {
                if !warnings.iter().any(|warning| warning.contains(text)) {
                    wrong.push(format!("no warning says {text:?}: {warnings:?}"));
                }
            }
            (!wrong.is_empty()).then(|| wrong.join("; "))
        }
    }
}

/// The Cluster `c1` and its AzureCluster (subscription `00000000-0000-0000-0000-0000000000c1`),
/// for machine defaults that look the subscription up, MachinePools of `c1` whose versions
/// Flexible pools are checked against, and the Cluster `going`, being deleted (a finalizer keeps
/// it); written before the webhooks are registered.
async fn cluster_c1(client: &Client, namespace: &str) -> TestResult {
    let machine_pool = |name: &str, version: Option<&str>| {
        let mut pool = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool", "metadata": {"name": name},
            "spec": {"clusterName": "c1", "template": {"spec": {"clusterName": "c1",
                "bootstrap": {"dataSecretName": "unused"},
                "infrastructureRef": {"apiGroup": GROUP, "kind": "AzureMachinePool", "name": name}}}}});
        if let Some(version) = version {
            pool["spec"]["template"]["spec"]["version"] = json!(version);
        }
        pool
    };
    let objects = [
        machine_pool("flex-new", Some("v1.33.0")),
        machine_pool("flex-old", Some("v1.25.16")),
        machine_pool("flex-unversioned", None),
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c1"},
            "spec": {"infrastructureRef": {"apiGroup": GROUP, "kind": "AzureCluster", "name": "c1"}}}),
        json!({"apiVersion": format!("{GROUP}/v1beta1"), "kind": "AzureCluster", "metadata": {"name": "c1"},
            "spec": {"location": "westeurope", "resourceGroup": "c1",
                "subscriptionID": "00000000-0000-0000-0000-0000000000c1"}}),
    ];
    for object in objects {
        capz_harness::apply(client, namespace, &serde_json::from_value(object)?).await?;
    }
    let going = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "going", "finalizers": ["capz-rs.test/hold"]},
        "spec": {"clusterNetwork": {"services": {"cidrBlocks": ["10.96.0.0/12"]}}}});
    capz_harness::apply(client, namespace, &serde_json::from_value(going)?).await?;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Cluster"));
    kube::Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource)
        .delete("going", &kube::api::DeleteParams::default())
        .await?;
    Ok(())
}

async fn run_suite(plane: &'static Plane, file: &str, suite: &Suite) -> TestResult<Vec<String>> {
    let client = plane.client().await?;
    let features = suite
        .features
        .parse()
        .map_err(|error| format!("{file}: {error}"))?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult<Vec<String>> {
        cluster_c1(&client, &namespace).await?;
        let webhooks = plane
            .start_webhooks(WebhookOptions {
                features,
                ..WebhookOptions::in_namespace(&namespace)
            })
            .await?;
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1beta1", &suite.kind));
        let path = DynamicObject::url_path(&resource, Some(&namespace));
        let mut failures = Vec::new();
        for (index, case) in suite.cases.iter().enumerate() {
            let mut object = merged(&suite.base, &case.object);
            object["apiVersion"] = json!(format!("{GROUP}/v1beta1"));
            object["kind"] = json!(suite.kind);
            let name = match object.pointer("/metadata/name").and_then(Value::as_str) {
                Some(name) => name.to_owned(),
                None => format!("case-{index}"),
            };
            object["metadata"]["name"] = json!(name);
            for extra in &case.setup {
                capz_harness::apply(&client, &namespace, &serde_json::from_value(extra.clone())?)
                    .await
                    .map_err(|error| format!("{file} [{index}] {}: setup: {error}", case.name))?;
            }
            let verdict = match send(&client, &path, &name, case, &object).await {
                Ok(answer) => judge(case, &answer),
                Err(error) => Some(error.to_string()),
            };
            if let Some(wrong) = verdict {
                failures.push(format!("{file} [{index}] {}: {wrong}", case.name));
            }
        }
        webhooks.stop().await?;
        Ok(failures)
    })
    .await?
}

#[tokio::test]
async fn the_corpus_gets_capz_verdicts_through_the_api_server() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let mut failures = Vec::new();
    let mut cases = 0;
    for (file, suite) in suites()? {
        cases += suite.cases.len();
        failures.extend(run_suite(plane, &file, &suite).await?);
    }
    eprintln!("admission corpus: {cases} cases, {} wrong", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {cases} cases got another verdict:\n{}",
        failures.len(),
        failures.join("\n")
    );
    Ok(())
}
