//! `deploy/webhooks` (the overlay deploying `deploy/components/webhooks`) against the server: its webhook configurations are generated from the route
//! table (`just webhook-manifests` writes them), and what `kubectl kustomize` renders hangs
//! together — every path served is registered, the Service reaches the container's webhook port,
//! cert-manager's certificate names the Service and lands where the server reads it, the probes
//! and the RBAC match what the server uses.

use std::path::{Path, PathBuf};

use capz_webhooks::configuration::{self, Endpoint, Registration};
use capz_webhooks::{Hook, routes};
use serde_json::Value;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NAMESPACE: &str = "capz-system";
const SERVICE: &str = "capz-webhook-service";
const CERTIFICATE: &str = "capz-serving-cert";
const GENERATED: &str = "webhook-configurations.yaml";

/// The overlay that deploys the webhook server alone.
fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/webhooks")
}

/// Where the webhook server's own manifests are.
fn component_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/components/webhooks")
}

/// The configurations as deployed: the Service as endpoint, the CA injected by cert-manager.
fn generated() -> TestResult<String> {
    let registration = Registration {
        endpoint: Endpoint::Service {
            namespace: NAMESPACE.to_owned(),
            name: SERVICE.to_owned(),
            port: None,
        },
        ca_bundle: None,
        namespace_selector: None,
    };
    let routes = routes::all();
    let inject = [(
        "cert-manager.io/inject-ca-from".to_owned(),
        format!("{NAMESPACE}/{CERTIFICATE}"),
    )];
    let mut mutating = configuration::mutating(&routes, configuration::MUTATING_NAME, &registration);
    mutating.metadata.annotations = Some(inject.clone().into());
    let mut validating = configuration::validating(&routes, configuration::VALIDATING_NAME, &registration);
    validating.metadata.annotations = Some(inject.into());
    Ok(format!(
        "# Generated from the webhook server's route table by `just webhook-manifests`; do not edit.\n{}---\n{}",
        serde_saphyr::to_string(&mutating)?,
        serde_saphyr::to_string(&validating)?
    ))
}

#[test]
fn the_deployed_configurations_are_generated_from_the_route_table() -> TestResult {
    let expected = generated()?;
    let file = component_dir().join(GENERATED);
    if std::env::var_os("CAPZ_WRITE_MANIFESTS").is_some() {
        std::fs::write(&file, &expected)?;
    }
    let found = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        found == expected,
        "{} is stale: run `just webhook-manifests`.\nExpected:\n{expected}",
        file.display()
    );
    Ok(())
}

fn render() -> TestResult<Vec<Value>> {
    let kubectl = capz_harness::KubeBinaries::locate()?.binary("kubectl");
    let output = std::process::Command::new(&kubectl)
        .arg("kustomize")
        .arg(deploy_dir())
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "kubectl kustomize failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(serde_saphyr::from_multiple(&String::from_utf8(output.stdout)?)?)
}

fn find<'a>(objects: &'a [Value], kind: &str) -> TestResult<&'a Value> {
    find_where(objects, kind, |_| true)
}

/// The one object of `kind` named `capz-webhooks`; the base beside it holds others of its kind.
fn ours<'a>(objects: &'a [Value], kind: &str) -> TestResult<&'a Value> {
    find_where(objects, kind, |object| {
        object["metadata"]["name"] == "capz-webhooks"
    })
}

fn find_where<'a>(
    objects: &'a [Value],
    kind: &str,
    filter: impl Fn(&Value) -> bool,
) -> TestResult<&'a Value> {
    let mut found = objects
        .iter()
        .filter(|object| object["kind"] == kind && filter(object));
    let object = found.next().ok_or_else(|| format!("no {kind} rendered"))?;
    assert!(found.next().is_none(), "more than one {kind}");
    Ok(object)
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn kustomize_renders_a_deployment_that_hangs_together() -> TestResult {
    let objects = render()?;

    // Every namespaced object lands in capz-system, with clusterctl's provider label.
    for object in &objects {
        let kind = object["kind"].as_str().unwrap_or_default();
        let cluster_scoped = [
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ];
        if !cluster_scoped.contains(&kind) {
            assert_eq!(object["metadata"]["namespace"], NAMESPACE, "{kind}");
        }
        assert_eq!(
            object["metadata"]["labels"]["cluster.x-k8s.io/provider"], "infrastructure-azure",
            "{kind}"
        );
    }

    let service = find(&objects, "Service")?;
    assert_eq!(service["metadata"]["name"], SERVICE);
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    let target = service["spec"]["ports"][0]["targetPort"]
        .as_str()
        .ok_or("targetPort is not a name")?;

    let deployment = find(&objects, "Deployment")?;
    let pod = &deployment["spec"]["template"];
    for (key, value) in service["spec"]["selector"].as_object().ok_or("no selector")? {
        assert_eq!(
            &pod["metadata"]["labels"][key], value,
            "the Service selects the Pods by {key}"
        );
    }
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    let port = |name: &str| -> TestResult<u64> {
        container["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|port| port["name"] == name)
            .and_then(|port| port["containerPort"].as_u64())
            .ok_or_else(|| format!("the container has no port {name}").into())
    };
    assert_eq!(
        flag(container, "webhook-port")?,
        port(target)?.to_string(),
        "the Service reaches the webhook port"
    );
    let health = flag(container, "health-probe-bind-address")?;
    assert_eq!(health, format!(":{}", port("healthz")?));
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["port"], "healthz", "{probe}");
    }
    with_defaults(flag(container, "feature-gates")?).parse::<capz_rules::Features>()?;
    Ok(())
}

/// `text` with each clusterctl variable `${NAME:=default}` replaced by its default, as
/// `clusterctl init` writes it when the variable is unset.
fn with_defaults(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let variable = &rest[start + 2..];
        let Some(end) = variable.find('}') else {
            break;
        };
        out.push_str(
            variable[..end]
                .split_once(":=")
                .map_or("", |(_, default)| default),
        );
        rest = &variable[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The container's value of `--name=...`.
fn flag<'a>(container: &'a Value, name: &str) -> TestResult<&'a str> {
    strings(&container["args"])
        .into_iter()
        .find_map(|arg| arg.strip_prefix(&format!("--{name}=")))
        .ok_or_else(|| format!("the container has no --{name}").into())
}

#[test]
fn cert_manager_certifies_the_service_where_the_server_reads_it() -> TestResult {
    let objects = render()?;
    let pod = &find(&objects, "Deployment")?["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    // cert-manager's certificate names the Service and lands where the server reads it.
    let certificate = find(&objects, "Certificate")?;
    assert_eq!(certificate["metadata"]["name"], CERTIFICATE);
    let dns_names = strings(&certificate["spec"]["dnsNames"]);
    assert!(
        dns_names.contains(&format!("{SERVICE}.{NAMESPACE}.svc").as_str()),
        "{dns_names:?}"
    );
    let issuer = find(&objects, "Issuer")?;
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        issuer["metadata"]["name"]
    );
    let secret = certificate["spec"]["secretName"]
        .as_str()
        .ok_or("no secretName")?;
    let volume = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|volume| volume["secret"]["secretName"] == secret)
        .ok_or("the certificate's Secret is not mounted")?;
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|mount| mount["name"] == volume["name"])
        .ok_or("the certificate volume is not mounted")?;
    assert_eq!(mount["mountPath"].as_str(), Some(flag(container, "cert-dir")?));
    Ok(())
}

#[test]
fn the_service_account_may_get_clusters_and_azure_clusters_and_list_machine_pools_only() -> TestResult {
    let objects = render()?;
    let pod = &find(&objects, "Deployment")?["spec"]["template"];
    // Least privilege: reading Clusters and AzureClusters by name (defaulting looks them up),
    // listing MachinePools (a Flexible pool's version) and AzureManagedMachinePools (an AKS
    // cluster's System pools), bound to the Pods' ServiceAccount.
    let role = ours(&objects, "ClusterRole")?;
    let rules = role["rules"].as_array().ok_or("no rules")?;
    assert_eq!(rules.len(), 4, "{rules:?}");
    for (group, resource, verb) in [
        ("cluster.x-k8s.io", "clusters", "get"),
        ("infrastructure.cluster.x-k8s.io", "azureclusters", "get"),
        ("cluster.x-k8s.io", "machinepools", "list"),
        (
            "infrastructure.cluster.x-k8s.io",
            "azuremanagedmachinepools",
            "list",
        ),
    ] {
        assert!(
            rules.iter().any(|rule| strings(&rule["apiGroups"]) == [group]
                && strings(&rule["resources"]) == [resource]
                && strings(&rule["verbs"]) == [verb]),
            "{group}/{resource}: {rules:?}"
        );
    }
    let binding = ours(&objects, "ClusterRoleBinding")?;
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], pod["spec"]["serviceAccountName"]);
    assert_eq!(binding["subjects"][0]["namespace"], NAMESPACE);
    assert_eq!(
        ours(&objects, "ServiceAccount")?["metadata"]["name"],
        pod["spec"]["serviceAccountName"]
    );
    Ok(())
}

#[test]
fn the_rendered_webhooks_are_the_route_tables() -> TestResult {
    let objects = render()?;
    let routes = routes::all();
    // The webhooks: exactly the route table's paths, through the Service, CA from the certificate.
    for (kind, hook) in [
        ("MutatingWebhookConfiguration", Hook::Mutate),
        ("ValidatingWebhookConfiguration", Hook::Validate),
    ] {
        let configuration = find(&objects, kind)?;
        assert_eq!(
            configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
            format!("{NAMESPACE}/{CERTIFICATE}")
        );
        let webhooks = configuration["webhooks"].as_array().ok_or("no webhooks")?;
        let rendered: Vec<(&str, &str, &str)> = webhooks
            .iter()
            .map(|webhook| {
                let service = &webhook["clientConfig"]["service"];
                assert_eq!(service["name"], SERVICE);
                assert_eq!(service["namespace"], NAMESPACE);
                assert_eq!(webhook["failurePolicy"], "Fail");
                assert_eq!(webhook["sideEffects"], "None");
                (
                    webhook["name"].as_str().unwrap_or_default(),
                    service["path"].as_str().unwrap_or_default(),
                    webhook["rules"][0]["resources"][0].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let expected: Vec<(String, String, &str)> = routes
            .iter()
            .map(|route| (route.webhook_name(hook), route.path(hook), route.plural()))
            .collect();
        let expected: Vec<(&str, &str, &str)> = expected
            .iter()
            .map(|(name, path, plural)| (name.as_str(), path.as_str(), *plural))
            .collect();
        assert_eq!(rendered, expected, "{kind}");
    }
    Ok(())
}

/// `clusterctl init` substitutes the `EXP_*` variables once for every component, so the webhooks
/// admit exactly what the controllers build.
#[test]
fn every_deployment_reads_the_feature_gates_from_the_same_variables() -> TestResult {
    let components = component_dir().join("..");
    let mut gates = Vec::new();
    for entry in std::fs::read_dir(&components)? {
        let file = entry?.path().join("deployment.yaml");
        if !file.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let args: Vec<&str> = text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- --feature-gates="))
            .collect();
        assert_eq!(args.len(), 1, "{} passes --feature-gates once", file.display());
        gates.push((file, args[0].to_owned()));
    }
    assert!(gates.len() >= 5, "the controllers and the webhooks: {gates:?}");
    let (first_file, first) = &gates[0];
    for (file, value) in &gates {
        assert_eq!(value, first, "{} and {}", file.display(), first_file.display());
    }
    for gate in first.split(',') {
        let (name, value) = gate.split_once('=').ok_or("a gate without a value")?;
        assert!(
            value.starts_with("${EXP_") && value.ends_with('}'),
            "{name} is not read from an EXP_ variable: {value}"
        );
    }
    Ok(())
}
