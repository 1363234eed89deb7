//! The management plane, against the real kube-apiserver and etcd `just kube-bins` builds.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use base64::Engine as _;
use capz_harness::{Options, Plane, ProjectedToken, TokenOptions, crds};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn every_crd_of_capz_rs_and_cluster_api_is_established() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    let mut expected: BTreeSet<String> = crds::load(&[crds::ours()])
        .unwrap()
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let ours = expected.len();
    let cluster_api = crds::load(&crds::cluster_api().unwrap()).unwrap();
    expected.extend(cluster_api.iter().map(ResourceExt::name_any));
    for kind in [
        "machinepools.cluster.x-k8s.io",
        "clusterclasses.cluster.x-k8s.io",
        "ipaddressclaims.ipam.cluster.x-k8s.io",
        "extensionconfigs.runtime.cluster.x-k8s.io",
        "kubeadmconfigs.bootstrap.cluster.x-k8s.io",
        "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io",
    ] {
        assert!(expected.contains(kind), "Cluster API's CRDs lack {kind}");
    }
    let installed = Api::<CustomResourceDefinition>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: BTreeSet<String> = installed.iter().map(ResourceExt::name_any).collect();
    assert_eq!(
        names,
        expected,
        "{ours} of ours, {} of Cluster API",
        cluster_api.len()
    );
    for crd in &installed {
        let conditions = crd
            .status
            .as_ref()
            .and_then(|status| status.conditions.clone())
            .unwrap_or_default();
        assert!(
            conditions
                .iter()
                .any(|condition| condition.type_ == "Established" && condition.status == "True"),
            "{} is not established",
            crd.name_any()
        );
    }
}

#[tokio::test]
async fn objects_applied_in_a_temp_namespace_come_back_and_conditions_are_awaited() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    let manifest = r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: smoke
spec:
  location: westeurope
  resourceGroup: smoke-rg
";
    let used = capz_harness::with_temp_namespace(&client, async |namespace| {
        let applied = capz_harness::apply_yaml(&client, &namespace, manifest).await.unwrap();
        assert_eq!(applied.len(), 1);
        assert_eq!(applied[0].data["spec"]["location"], "westeurope");
        assert_eq!(applied[0].namespace().as_deref(), Some(namespace.as_str()));
        let api = capz_harness::api_for(&client, &applied[0], &namespace).await.unwrap();
        // A controller's part, played here: report the condition through the status subresource.
        let status = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        });
        let waiting = capz_harness::wait_for(&api, "smoke", "Ready=True", Duration::from_secs(20), |object| {
            capz_harness::has_condition(object, "Ready", "True")
        });
        let reporting = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            api.patch_status("smoke", &PatchParams::apply("test-controller"), &Patch::Apply(&status))
                .await
                .unwrap();
        };
        let (ready, ()) = tokio::join!(waiting, reporting);
        assert!(capz_harness::has_condition(&ready.unwrap(), "Ready", "True"));
        // And a condition that never comes is a timeout that says what was awaited.
        let error = capz_harness::wait_for(&api, "smoke", "Paused=True", Duration::from_millis(300), |object| {
            capz_harness::has_condition(object, "Paused", "True")
        })
        .await
        .unwrap_err();
        assert!(error.to_string().contains("Paused=True"), "{error}");
        namespace
    })
    .await
    .unwrap();
    assert!(used.starts_with("test-"));
}

#[tokio::test]
async fn the_token_issuer_is_discoverable_without_credentials() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let mut config = kube::Config::new(plane.url().parse().unwrap());
    config.root_cert = Some(vec![
        pem_der(&std::fs::read_to_string(plane.ca_file()).unwrap()).unwrap(),
    ]);
    let anonymous = kube::Client::try_from(config).unwrap();
    let discovery: serde_json::Value = get_json(&anonymous, "/.well-known/openid-configuration")
        .await
        .unwrap();
    assert_eq!(discovery["issuer"], plane.url());
    let jwks_uri = discovery["jwks_uri"].as_str().unwrap();
    let path = jwks_uri.strip_prefix(plane.url()).unwrap_or(jwks_uri);
    let keys: serde_json::Value = get_json(&anonymous, path).await.unwrap();
    assert!(!keys["keys"].as_array().unwrap().is_empty(), "{keys}");
}

#[tokio::test]
async fn a_projected_token_names_the_issuer_and_audience_and_is_renewed() {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await.unwrap();
    capz_harness::with_temp_namespace(&client, async |namespace| {
        let accounts = Api::<ServiceAccount>::namespaced(client.clone(), &namespace);
        let mut account = ServiceAccount::default();
        account.metadata.name = Some("capz-manager".into());
        accounts.create(&PostParams::default(), &account).await.unwrap();
        let dir = plane.dir().join(&namespace);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        let options = TokenOptions {
            refresh_after: Duration::from_millis(500),
            ..TokenOptions::default()
        };
        let token = ProjectedToken::start(&client, &namespace, "capz-manager", &path, options)
            .await
            .unwrap();
        let first = std::fs::read_to_string(token.path()).unwrap();
        let claims = claims(&first).unwrap();
        assert_eq!(claims["iss"], plane.url());
        assert_eq!(claims["aud"], json!([capz_harness::AZURE_AUDIENCE]));
        assert_eq!(
            claims["sub"],
            format!("system:serviceaccount:{namespace}:capz-manager")
        );
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            3600
        );
        let started = Instant::now();
        while std::fs::read_to_string(token.path()).unwrap() == first {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the token was not renewed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_plane_of_its_own_stops_when_dropped_and_leaves_nothing() {
    let started = Instant::now();
    let plane = Plane::start_with(Options {
        crds: vec![crds::ours()],
        dir: None,
        port: None,
        audit_log: None,
    })
    .await
    .unwrap();
    eprintln!("a plane with capz-rs's CRDs started in {:?}", started.elapsed());
    let client = plane.client().await.unwrap();
    let version = client.apiserver_version().await.unwrap();
    assert!(
        version.git_version.starts_with("v1.36."),
        "{}",
        version.git_version
    );
    let dir = plane.dir().to_owned();
    let logs: Vec<_> = std::fs::read_dir(dir.join("logs")).unwrap().collect();
    assert_eq!(logs.len(), 2, "one log per process");
    let pids = pids_under(&dir).unwrap();
    assert_eq!(pids.len(), 2, "etcd and kube-apiserver run: {pids:?}");
    drop(plane);
    assert!(!dir.exists());
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} still runs"
        );
    }
}

/// Processes whose command line mentions `dir`: what the plane started.
fn pids_under(dir: &std::path::Path) -> std::io::Result<Vec<u32>> {
    let needle = dir.display().to_string();
    Ok(std::fs::read_dir("/proc")?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains(&needle) && !cmdline.starts_with("bash")
        })
        .collect())
}

type Outcome<T> = Result<T, Box<dyn std::error::Error>>;

async fn get_json(client: &kube::Client, path: &str) -> Outcome<serde_json::Value> {
    let request = http::Request::get(path).body(Vec::new())?;
    Ok(serde_json::from_str(&client.request_text(request).await?)?)
}

fn pem_der(pem: &str) -> Outcome<Vec<u8>> {
    let body: String = pem.lines().filter(|line| !line.starts_with("-----")).collect();
    Ok(base64::engine::general_purpose::STANDARD.decode(body)?)
}

fn claims(token: &str) -> Outcome<serde_json::Value> {
    let payload = token.split('.').nth(1).ok_or("not a JWT")?;
    Ok(serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload)?,
    )?)
}
