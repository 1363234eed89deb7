//! The webhooks against the real kube-apiserver: the API server calls the server through the
//! configurations generated from the route table, and users see its answers as they would in a
//! management cluster.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use capz_api::{AzureCluster, AzureClusterIdentity, AzureClusterTemplate};
use capz_harness::{Plane, WebhookOptions};
use capz_rules::{Context, FieldError, FieldPath, Rules, Verdict};
use capz_webhooks::lookup::cluster_subscription_id;
use capz_webhooks::{Hook, Routes, ValidationLookup};
use common::{TestResult, der, https};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource, ResourceExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn identity(name: &str, spec: &Value) -> TestResult<AzureClusterIdentity> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureClusterIdentity",
        "metadata": {"name": name},
        "spec": spec,
    }))?)
}

fn workload_identity() -> Value {
    json!({
        "type": "WorkloadIdentity",
        "clientID": "5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10",
        "tenantID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "allowedNamespaces": {},
    })
}

/// The Status the API server refused a request with.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> TestResult<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => Ok(*status),
        other => Err(format!("expected a refusal, got {other:?}").into()),
    }
}

/// Runs `test` in a namespace of its own with a webhook server registered for it, stopping the
/// server (and removing its configurations) whatever the outcome.
async fn with_webhooks(
    plane: &'static Plane,
    options: impl FnOnce(&str) -> WebhookOptions,
    test: impl AsyncFnOnce(Client, String, &capz_harness::Webhooks) -> TestResult,
) -> TestResult {
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let webhooks = plane.start_webhooks(options(&namespace)).await?;
        let outcome = test(client.clone(), namespace, &webhooks).await;
        webhooks.stop().await?;
        outcome
    })
    .await?
}

#[tokio::test]
async fn identities_are_admitted_or_refused_through_the_api_server() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    with_webhooks(plane, WebhookOptions::in_namespace, async |client, namespace, webhooks| {
        let api = Api::<AzureClusterIdentity>::namespaced(client, &namespace);
        let answered = webhooks.server().answered(Hook::Validate);

        // Invalid: a managed identity's resource ID on a service principal (CAPZ's rule).
        let bad = identity("bad", &json!({
            "type": "ServicePrincipal", "clientID": "c", "tenantID": "t", "allowedNamespaces": {},
            "clientSecret": {"name": "s"}, "resourceID": "/subscriptions/s",
        }))?;
        let status = refusal(api.create(&PostParams::default(), &bad).await)?;
        assert_eq!(status.code, 422, "{status:?}");
        assert_eq!(status.reason, "Invalid");
        assert!(
            status.message.starts_with(
                "admission webhook \"validation.azureclusteridentity.infrastructure.cluster.x-k8s.io\" denied the \
                 request: AzureClusterIdentity.infrastructure.cluster.x-k8s.io \"bad\" is invalid: \
                 spec.resourceID: Forbidden: can only be set when spec.type is UserAssignedMSI"
            ),
            "{}",
            status.message
        );
        let details = status.details.ok_or("the refusal has no details")?;
        assert_eq!((details.kind.as_str(), details.name.as_str()), ("AzureClusterIdentity", "bad"));
        assert_eq!(details.causes.len(), 1, "{:?}", details.causes);
        assert_eq!(details.causes[0].field, "spec.resourceID");
        assert_eq!(details.causes[0].reason, "FieldValueForbidden");
        assert!(api.get_opt("bad").await?.is_none(), "a refused identity is not stored");

        // Valid: stored as written.
        let good = api.create(&PostParams::default(), &identity("good", &workload_identity())?).await?;
        assert_eq!(good.spec.client_id, "5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10");
        assert!(api.get_opt("good").await?.is_some());

        // A dry run goes through the webhooks too, and stores nothing.
        let dry_run = PostParams { dry_run: true, ..PostParams::default() };
        let status = refusal(api.create(&dry_run, &bad).await)?;
        assert_eq!(status.code, 422);
        api.create(&dry_run, &identity("tried", &workload_identity())?).await?;
        assert!(api.get_opt("tried").await?.is_none());

        // The type never changes.
        let retype = Patch::Merge(json!({"spec": {"type": "UserAssignedMSI"}}));
        let status = refusal(api.patch("good", &PatchParams::default(), &retype).await)?;
        assert_eq!(status.code, 422);
        assert!(
            status.message.contains(r#"spec.type: Invalid value: "UserAssignedMSI": field is immutable"#),
            "{}",
            status.message
        );
        assert_eq!(status.details.ok_or("no details")?.causes[0].field, "spec.type");

        // Other changes pass.
        let relabel = Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}, "spec": {"tenantID": "contoso.onmicrosoft.com"}}));
        let changed = api.patch("good", &PatchParams::default(), &relabel).await?;
        assert_eq!(changed.labels().get("team").map(String::as_str), Some("a"));
        assert_eq!(changed.spec.tenant_id, "contoso.onmicrosoft.com");

        // bad, good, bad (dry run), tried, the type change and the relabel.
        assert!(webhooks.server().answered(Hook::Validate) >= answered + 6);
        Ok(())
    })
    .await
}

/// Runs kubectl as the plane's administrator in `namespace` with `stdin`; gives its stderr,
/// where kubectl prints the warnings the API server passed on. It runs on a thread of its own:
/// the webhook server it reaches through the API server is served by this test's runtime.
async fn kubectl(plane: &Plane, namespace: &str, args: &[&str], stdin: &str) -> TestResult<String> {
    let kubeconfig = plane.kubeconfig().to_owned();
    let (namespace, stdin) = (namespace.to_owned(), stdin.to_owned());
    let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
    tokio::task::spawn_blocking(move || run_kubectl(&kubeconfig, &namespace, &args, &stdin)).await?
}

fn run_kubectl(
    kubeconfig: &std::path::Path,
    namespace: &str,
    args: &[String],
    stdin: &str,
) -> TestResult<String> {
    use std::io::Write as _;
    let binary = capz_harness::KubeBinaries::locate()?.binary("kubectl");
    let mut child = std::process::Command::new(binary)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--namespace", namespace])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(stdin.as_bytes())?;
    let output = child.wait_with_output()?;
    let stderr = String::from_utf8(output.stderr)?;
    if !output.status.success() {
        return Err(format!("kubectl {args:?} failed: {stderr}").into());
    }
    Ok(stderr)
}

#[tokio::test]
async fn kubectl_shows_a_warning_for_each_field_not_acted_on_yet() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    with_webhooks(plane, WebhookOptions::in_namespace, async |_client, namespace, _webhooks| {
        let manifest = |label: &str| {
            json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "AzureClusterIdentity",
                "metadata": {"name": "credentials-file", "labels": {"team": label}},
                "spec": {
                    "type": "UserAssignedIdentityCredential",
                    "clientID": "5b0bcf4b-5a41-4ef7-8b5e-5e3f7a8c9d10",
                    "tenantID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
                    "userAssignedIdentityCredentialsPath": "/var/run/credentials.json",
                    "allowedNamespaces": {},
                },
            })
            .to_string()
        };
        let created = kubectl(plane, &namespace, &["create", "-f", "-"], &manifest("a")).await?;
        for field in ["spec.type", "spec.userAssignedIdentityCredentialsPath"] {
            let warning = format!(
                "Warning: {field}: not acted on by capz-rs yet: capz-rs cannot sign in with a credentials file yet"
            );
            assert!(created.contains(&warning), "{created}");
        }
        // The fields were there before: a change elsewhere repeats nothing.
        let relabelled = kubectl(plane, &namespace, &["replace", "-f", "-"], &manifest("b")).await?;
        assert!(!relabelled.contains("not acted on"), "{relabelled}");
        Ok(())
    })
    .await
}

/// A manifest our types cannot read is refused at its fields, in the API server's words, whatever
/// the reason: a value outside a closed set, or a required field left out.
#[tokio::test]
async fn an_unreadable_manifest_is_refused_at_its_fields() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    with_webhooks(plane, WebhookOptions::in_namespace, async |client, namespace, _webhooks| {
        let resource = kube::api::ApiResource::erase::<capz_api::AzureMachine>(&());
        let machines = Api::<kube::api::DynamicObject>::namespaced_with(client, &namespace, &resource);
        let machine = |name: &str, os_disk: Value, image: Value| -> TestResult<kube::api::DynamicObject> {
            Ok(serde_json::from_value(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureMachine",
                "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                "spec": {"vmSize": "Standard_D2s_v3", "osDisk": os_disk, "image": image},
            }))?)
        };
        let disk = json!({"osType": "Linux", "diskSizeGB": 30, "cachingType": "invalid_cache_type"});
        let image = json!({"marketplace": {"publisher": "p", "offer": "o", "sku": "s", "version": "1"}});
        let status = refusal(machines.create(&PostParams::default(), &machine("m1", disk, image)?).await)?;
        assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"), "{status:?}");
        assert!(
            status.message.contains(
                r#"AzureMachine.infrastructure.cluster.x-k8s.io "m1" is invalid: spec.osDisk.cachingType: Unsupported value: "invalid_cache_type": supported values: "None", "ReadOnly", "ReadWrite""#
            ),
            "{}",
            status.message
        );
        let causes = status.details.ok_or("no details")?.causes;
        assert_eq!(causes[0].field, "spec.osDisk.cachingType", "{causes:?}");

        let disk = json!({"osType": "Linux", "diskSizeGB": 30});
        let image = json!({"marketplace": {"offer": "o", "sku": "s", "version": "1"}});
        let status = refusal(machines.create(&PostParams::default(), &machine("m2", disk, image)?).await)?;
        let causes = status.details.ok_or("no details")?.causes;
        assert_eq!(
            causes.iter().map(|cause| (cause.field.as_str(), cause.reason.as_str())).collect::<Vec<_>>(),
            [("spec.image.marketplace.publisher", "FieldValueRequired")],
            "{}",
            status.message
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn clusters_are_stored_defaulted_and_keep_what_identifies_them() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    with_webhooks(plane, WebhookOptions::in_namespace, async |client, namespace, _webhooks| {
        let clusters = Api::<AzureCluster>::namespaced(client.clone(), &namespace);
        let manifest = |name: &str, spec: Value| -> TestResult<AzureCluster> {
            let mut base = json!({"location": "westeurope",
                "identityRef": {"kind": "AzureClusterIdentity", "name": "identity"}});
            if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), spec) {
                base.extend(extra);
            }
            Ok(serde_json::from_value(json!({
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureCluster",
                "metadata": {"name": name}, "spec": base,
            }))?)
        };

        // A minimal manifest is stored with CAPZ's network filled in.
        let stored = clusters.create(&PostParams::default(), &manifest("c1", json!({}))?).await?;
        let spec = serde_json::to_value(&stored.spec)?;
        assert_eq!(spec["resourceGroup"], "c1");
        assert_eq!(spec["networkSpec"]["vnet"]["cidrBlocks"], json!(["10.0.0.0/8"]));
        assert_eq!(spec["networkSpec"]["subnets"][1]["natGateway"]["ip"]["name"], "pip-c1-node-natgw");
        assert_eq!(spec["networkSpec"]["apiServerLB"]["frontendIPs"][0]["publicIP"]["name"], "pip-c1-apiserver");

        // An invalid one is refused with the field and the fix.
        let bad = manifest("c2", json!({"networkSpec": {"apiServerLB": {"sku": "Basic"}}}))?;
        let status = refusal(clusters.create(&PostParams::default(), &bad).await)?;
        assert_eq!(status.code, 422);
        assert!(
            status.message.contains(r#"spec.networkSpec.apiServerLB.sku: Unsupported value: "Basic": supported values: "Standard""#),
            "{}",
            status.message
        );

        // What identifies the cluster in Azure never changes.
        let moved = Patch::Merge(json!({"spec": {"location": "northeurope"}}));
        let status = refusal(clusters.patch("c1", &PatchParams::default(), &moved).await)?;
        assert!(status.message.contains(r#"spec.location: Invalid value: "northeurope": field is immutable"#), "{}", status.message);

        // A template is immutable, except for the topology controller's dry-run.
        let templates = Api::<AzureClusterTemplate>::namespaced(client, &namespace);
        let template: AzureClusterTemplate = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureClusterTemplate",
            "metadata": {"name": "t1"},
            "spec": {"template": {"spec": {"location": "westeurope",
                "identityRef": {"kind": "AzureClusterIdentity", "name": "identity"},
                "networkSpec": {"subnets": [{"name": "cp", "role": "control-plane"}, {"name": "nodes", "role": "node"}]}}}},
        }))?;
        templates.create(&PostParams::default(), &template).await?;
        let change = json!({"spec": {"template": {"spec": {"location": "northeurope"}}}});
        let status = refusal(templates.patch("t1", &PatchParams::default(), &Patch::Merge(change.clone())).await)?;
        assert!(status.message.contains("spec.template.spec: Forbidden"), "{}", status.message);
        let mut dry_change = change;
        dry_change["metadata"] = json!({"annotations": {"topology.cluster.x-k8s.io/dry-run": ""}});
        let dry_run = PatchParams { dry_run: true, ..PatchParams::default() };
        templates.patch("t1", &dry_run, &Patch::Merge(dry_change)).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    with_webhooks(
        plane,
        WebhookOptions::in_namespace,
        async |client, namespace, webhooks| {
            let ca = plane.authority().cert_pem();
            let path = "/validate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity";
            let served = https(webhooks.address(), ca, "POST", path, b"{}").await?;
            let first = std::fs::read_to_string(webhooks.cert_dir().join("tls.crt"))?;
            assert_eq!(served.leaf, der(&first)?);
            assert_eq!(served.status, 200);

            let renewed = webhooks.rotate_certificate(plane)?;
            let renewed = der(&renewed.cert_pem)?;
            assert_ne!(renewed, served.leaf);
            let started = Instant::now();
            loop {
                let answer = https(webhooks.address(), ca, "POST", path, b"{}").await?;
                if answer.leaf == renewed {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "the renewed certificate is not served"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }

            // The API server still gets answers, trusting the same CA.
            let api = Api::<AzureClusterIdentity>::namespaced(client, &namespace);
            api.create(
                &PostParams::default(),
                &identity("after-rotation", &workload_identity())?,
            )
            .await?;
            let retype = Patch::Merge(json!({"spec": {"type": "ServicePrincipal"}}));
            let status = refusal(
                api.patch("after-rotation", &PatchParams::default(), &retype)
                    .await,
            )?;
            assert!(
                status.message.contains("field is immutable"),
                "{}",
                status.message
            );
            Ok(())
        },
    )
    .await
}

/// A Cluster (v1beta2) pointing at an AzureCluster, both named `name`.
async fn cluster(
    client: &Client,
    namespace: &str,
    name: &str,
    infrastructure: &Value,
    subscription: Option<&str>,
) -> TestResult {
    let mut azure_cluster = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "AzureCluster",
        "metadata": {"name": name},
        "spec": {"location": "westeurope", "resourceGroup": name},
    });
    if let Some(subscription) = subscription {
        azure_cluster["spec"]["subscriptionID"] = json!(subscription);
    }
    let cluster = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"infrastructureRef": infrastructure},
    });
    for object in [cluster, azure_cluster] {
        capz_harness::apply(client, namespace, &serde_json::from_value(object)?).await?;
    }
    Ok(())
}

fn labels(cluster: &str) -> BTreeMap<String, String> {
    [("cluster.x-k8s.io/cluster-name".to_owned(), cluster.to_owned())].into()
}

#[tokio::test]
async fn the_cluster_subscription_is_found_through_the_cluster_and_its_azure_cluster() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    capz_harness::with_temp_namespace(&client, async |namespace| -> TestResult {
        let azure = |name: &str| json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureCluster", "name": name});
        cluster(&client, &namespace, "c1", &azure("c1"), Some("00000000-0000-0000-0000-0000000000c1")).await?;
        cluster(&client, &namespace, "no-subscription", &azure("no-subscription"), None).await?;
        cluster(&client, &namespace, "managed", &json!({
            "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureManagedCluster", "name": "managed",
        }), Some("s")).await?;
        cluster(&client, &namespace, "dangling", &azure("elsewhere"), Some("s")).await?;

        let lookup = async |labels: &BTreeMap<String, String>| cluster_subscription_id(&client, &namespace, labels).await;
        assert_eq!(lookup(&labels("c1")).await?.as_deref(), Some("00000000-0000-0000-0000-0000000000c1"));
        assert_eq!(lookup(&BTreeMap::new()).await?, None, "no cluster label");
        assert_eq!(lookup(&labels("")).await?, None, "an empty cluster label");
        assert_eq!(lookup(&labels("missing")).await?, None, "no such Cluster");
        assert_eq!(lookup(&labels("no-subscription")).await?, None, "no subscription set");
        assert_eq!(lookup(&labels("managed")).await?, None, "not an AzureCluster");
        assert_eq!(lookup(&labels("dangling")).await?, None, "the AzureCluster is missing");
        // Another namespace holds no such Cluster.
        assert_eq!(cluster_subscription_id(&client, "default", &labels("c1")).await?, None);
        Ok(())
    })
    .await?
}

/// A kind made for this test: defaulting that needs the cluster's subscription and sees dry runs,
/// and a validation, served and registered like CAPZ's kinds.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "webhooks.test.capz-rs.io",
    version = "v1",
    kind = "Gadget",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
struct GadgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<i64>,
    #[serde(rename = "subscriptionID", default, skip_serializing_if = "Option::is_none")]
    subscription_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    defaulted_in_dry_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl Rules for Gadget {
    fn default(&mut self, ctx: &Context<'_>) -> Result<(), FieldError> {
        self.spec.size.get_or_insert(3);
        if self.spec.subscription_id.is_none() {
            self.spec.subscription_id.clone_from(&ctx.cluster_subscription_id);
        }
        self.spec.defaulted_in_dry_run = Some(ctx.dry_run);
        Ok(())
    }

    fn needs_cluster_subscription(&self) -> bool {
        self.spec.subscription_id.is_none()
    }

    fn validate_create(&self, _: &Context<'_>) -> Verdict {
        let mut verdict = Verdict::default();
        if self.spec.size.is_some_and(|size| size > 10) {
            let path = FieldPath::root("spec").child("size");
            verdict.reject(FieldError::invalid(path, &self.spec.size, "must be at most 10"));
        }
        if self.spec.note.is_some() {
            verdict.warn("spec.note is ignored");
        }
        verdict
    }

    fn validate_update(&self, _: &Self, ctx: &Context<'_>) -> Verdict {
        self.validate_create(ctx)
    }
}

const GADGET_CRD: &str = r"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.webhooks.test.capz-rs.io
spec:
  group: webhooks.test.capz-rs.io
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

async fn install_gadgets(plane: &Plane) -> TestResult {
    let _alone = plane.cluster_scoped().await;
    let dir = plane.dir().join("gadget-crd");
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("gadgets.yaml");
    std::fs::write(&file, GADGET_CRD)?;
    capz_harness::crds::install(&plane.client().await?, &[file]).await?;
    Ok(())
}

#[tokio::test]
async fn defaults_reach_the_stored_object_as_a_patch_with_the_looked_up_subscription() -> TestResult {
    let plane = capz_harness::shared();
    install_gadgets(plane).await?;
    let _side_by_side = plane.namespaced().await;
    let options = |namespace: &str| WebhookOptions {
        routes: Routes::new().kind::<Gadget>(ValidationLookup::Nothing),
        ..WebhookOptions::in_namespace(namespace)
    };
    with_webhooks(plane, options, async |client, namespace, _| {
        let azure = json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureCluster", "name": "c1"});
        cluster(&client, &namespace, "c1", &azure, Some("00000000-0000-0000-0000-0000000000c1")).await?;
        let api = Api::<Gadget>::namespaced(client.clone(), &namespace);
        let gadget = |name: &str, spec: Value| -> TestResult<Gadget> {
            Ok(serde_json::from_value(json!({
                "apiVersion": "webhooks.test.capz-rs.io/v1",
                "kind": "Gadget",
                "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                "spec": spec,
            }))?)
        };

        let stored = api.create(&PostParams::default(), &gadget("g1", json!({}))?).await?;
        assert_eq!(stored.spec.size, Some(3));
        assert_eq!(stored.spec.subscription_id.as_deref(), Some("00000000-0000-0000-0000-0000000000c1"));
        assert_eq!(stored.spec.defaulted_in_dry_run, Some(false));
        assert_eq!(api.get("g1").await?.spec, stored.spec);

        let dry_run = PostParams { dry_run: true, ..PostParams::default() };
        let tried = api.create(&dry_run, &gadget("g2", json!({"size": 5}))?).await?;
        assert_eq!(tried.spec.size, Some(5), "what the user set stays");
        assert_eq!(tried.spec.defaulted_in_dry_run, Some(true), "the dry run reached the rules");

        // Validation sees the defaulted object, after the mutating webhook.
        let status = refusal(api.create(&PostParams::default(), &gadget("g3", json!({"size": 11}))?).await)?;
        assert_eq!(status.code, 422);
        assert!(
            status.message.ends_with(r#"Gadget.webhooks.test.capz-rs.io "g3" is invalid: spec.size: Invalid value: 11: must be at most 10"#),
            "{}",
            status.message
        );

        // Without the cluster label there is nothing to look up.
        let mut unlabelled = gadget("g4", json!({}))?;
        unlabelled.metadata.labels = None;
        let stored = api.create(&PostParams::default(), &unlabelled).await?;
        assert_eq!(stored.spec.subscription_id, None);

        // A subscription given is kept; nothing is looked up for it.
        let stored = api
            .create(&PostParams::default(), &gadget("g5", json!({"subscriptionID": "mine"}))?)
            .await?;
        assert_eq!(stored.spec.subscription_id.as_deref(), Some("mine"));
        Ok(())
    })
    .await
}

/// A free loopback port.
fn free_port() -> TestResult<u16> {
    Ok(capz_harness::free_ports(1)?[0])
}

#[tokio::test]
async fn the_binary_serves_webhooks_probes_and_metrics_and_stops_on_sigterm() -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let dir = plane.dir().join("binary-test");
    std::fs::create_dir_all(&dir)?;
    plane.authority().serving("capz-webhooks", &[])?.write_to(&dir)?;
    let (webhook, health, metrics) = (free_port()?, free_port()?, free_port()?);
    let log = std::fs::File::create(dir.join("capz-webhooks.log"))?;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_capz-webhooks"))
        .arg(format!("--kubeconfig={}", plane.kubeconfig().display()))
        .arg(format!("--webhook-port={webhook}"))
        .arg(format!("--cert-dir={}", dir.display()))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg("--feature-gates=MachinePool=true,EdgeZone=false")
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()?;
    let outcome = async {
        let health = ([127, 0, 0, 1], health).into();
        let started = Instant::now();
        while capz_harness::http_get(health, "/readyz").await.map(|(status, _)| status).ok() != Some(200) {
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("not ready; see {}", dir.join("capz-webhooks.log").display()).into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(capz_harness::http_get(health, "/healthz").await?.0, 200);

        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "binary-1",
                "kind": {"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "kind": "AzureClusterIdentity"},
                "resource": {"group": "infrastructure.cluster.x-k8s.io", "version": "v1beta1", "resource": "azureclusteridentities"},
                "name": "bad",
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {},
                "object": identity("bad", &json!({"type": "WorkloadIdentity", "clientID": "c", "tenantID": "t/x"}))?,
            }
        });
        let path = "/validate-infrastructure-cluster-x-k8s-io-v1beta1-azureclusteridentity";
        let answer = https(([127, 0, 0, 1], webhook).into(), plane.authority().cert_pem(), "POST", path, &serde_json::to_vec(&review)?).await?;
        assert_eq!(answer.status, 200);
        let answered: Value = serde_json::from_slice(&answer.body)?;
        assert_eq!(answered["response"]["uid"], "binary-1");
        assert_eq!(answered["response"]["allowed"], false);
        assert_eq!(answered["response"]["status"]["details"]["causes"][0]["field"], "spec.tenantID");
        let unknown = https(([127, 0, 0, 1], webhook).into(), plane.authority().cert_pem(), "POST", "/validate-nothing", b"{}").await?;
        assert_eq!(unknown.status, 404);

        let (status, text) = capz_harness::http_get(([127, 0, 0, 1], metrics).into(), "/metrics").await?;
        assert_eq!(status, 200);
        for expected in [
            r#"capz_admission_requests_total{kind="AzureClusterIdentity",webhook="validate",operation="CREATE",result="denied"} 1"#,
            "# TYPE capz_admission_duration_seconds histogram",
            r#"capz_admission_duration_seconds_bucket{kind="AzureClusterIdentity",webhook="validate",le="0.0001"}"#,
        ] {
            assert!(text.contains(expected), "{expected} is not in\n{text}");
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    }
    .await;
    let pid = child.id().ok_or("the server exited early")?;
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()?;
    let exit = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    outcome?;
    assert!(exit.success(), "{exit}");
    Ok(())
}

#[tokio::test]
async fn the_generated_configurations_are_accepted_by_the_api_server() -> TestResult {
    // Dry-run creates of what deploy/webhooks holds: the API server validates the webhooks' shape.
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    let registration = capz_webhooks::configuration::Registration {
        endpoint: capz_webhooks::configuration::Endpoint::Service {
            namespace: "capz-system".to_owned(),
            name: "capz-webhook-service".to_owned(),
            port: Some(443),
        },
        ca_bundle: None,
        namespace_selector: None,
    };
    let routes = capz_webhooks::routes::all();
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mutating =
        capz_webhooks::configuration::mutating(&routes, "capz-mutating-webhook-configuration", &registration);
    let validating = capz_webhooks::configuration::validating(
        &routes,
        "capz-validating-webhook-configuration",
        &registration,
    );
    Api::all(client.clone()).create(&dry_run, &mutating).await?;
    Api::all(client.clone()).create(&dry_run, &validating).await?;
    Ok(())
}
