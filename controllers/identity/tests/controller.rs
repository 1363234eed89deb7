//! The identity controller in-process against a real kube-apiserver and the ARM emulator (as a
//! custom cloud, playing Entra ID): identity checks and finalizers, and the azure.json Secrets.

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT};
use capz_harness::{EmulatedAzure, InProcessController};
use capz_kit::api::{AzureCluster, AzureClusterIdentity};
use capz_kit::k8s_openapi::ByteString;
use capz_kit::k8s_openapi::api::core::v1::Secret;
use capz_kit::kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use capz_kit::kube::{Client, ResourceExt as _};
use serde_json::{Value, json};

use capz_harness::TestResult;

const WAIT: Duration = Duration::from_secs(30);
const FINALIZER: &str = capz_identity::ID.finalizer();

/// The emulator over HTTPS, and the controller running against it in one namespace.
struct Setup {
    client: Client,
    namespace: String,
    azure: EmulatedAzure,
    controller: InProcessController,
}

impl Setup {
    async fn start(client: Client, namespace: String) -> TestResult<Self> {
        let azure = EmulatedAzure::start(Config::default()).await?;
        let settings = azure.cloud_settings()?;
        // A short sync period: steady-state passes happen often while the tests watch for writes.
        let flags = [
            "--sync-period=1s",
            "--health-probe-bind-address=0",
            "--metrics-bind-address=0",
        ];
        let controller = InProcessController::start(
            capz_identity::ID,
            capz_harness::shared(),
            &namespace,
            flags,
            move |ctx| capz_identity::run(ctx, settings),
        )?;
        Ok(Self {
            client,
            namespace,
            azure,
            controller,
        })
    }

    async fn stop(self) -> TestResult {
        Ok(self.controller.stop().await?)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: capz_kit::kube::Resource<Scope = capz_kit::kube::core::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn apply(&self, yaml: &str) -> TestResult {
        capz_harness::apply_yaml(&self.client, &self.namespace, yaml).await?;
        Ok(())
    }

    async fn secret(&self, name: &str, data: &[(&str, &str)]) -> TestResult<Secret> {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.to_owned());
        secret.data = Some(
            data.iter()
                .map(|(key, value)| ((*key).to_owned(), ByteString(value.as_bytes().to_vec())))
                .collect(),
        );
        Ok(self
            .api::<Secret>()
            .create(&PostParams::default(), &secret)
            .await?)
    }

    /// A ServicePrincipal identity open to every namespace, reading the Secret `secret`.
    async fn identity(&self, name: &str, secret: &str) -> TestResult {
        self.apply(&format!(
            r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureClusterIdentity
metadata: {{name: {name}}}
spec:
  type: ServicePrincipal
  tenantID: {DEFAULT_TENANT}
  clientID: {DEFAULT_CLIENT_ID}
  clientSecret: {{name: {secret}}}
  allowedNamespaces: {{}}
"
        ))
        .await
    }

    /// Token requests that reached the emulator's Entra ID.
    fn token_requests(&self) -> usize {
        self.azure
            .running
            .emulator
            .requests()
            .iter()
            .filter(|request| request.path.contains("/oauth2/"))
            .count()
    }

    /// ARM requests other than reads.
    fn arm_writes(&self) -> Vec<String> {
        self.azure.writes()
    }
}

async fn in_namespace(test: impl AsyncFnOnce(&Setup) -> TestResult) -> TestResult {
    capz_harness::in_namespace(&[], async |_plane, client, namespace| {
        let setup = Setup::start(client, namespace).await?;
        let result = test(&setup).await;
        setup.stop().await?;
        result
    })
    .await
}

fn ready(identity: &AzureClusterIdentity) -> Option<(String, Option<String>)> {
    identity
        .status
        .as_ref()?
        .conditions
        .0
        .iter()
        .find(|condition| condition.type_.to_string() == "Ready")
        .map(|condition| (format!("{:?}", condition.status), condition.reason.clone()))
}

#[tokio::test]
async fn identities_report_sign_ins_without_retry_storms_and_stay_while_clusters_use_them() -> TestResult {
    in_namespace(async |setup| {
        setup
            .secret("good", &[("clientSecret", DEFAULT_CLIENT_SECRET)])
            .await?;
        setup
            .secret("wrong", &[("clientSecret", "not-the-secret")])
            .await?;
        setup.identity("good", "good").await?;
        setup.identity("wrong", "wrong").await?;
        let identities = setup.api::<AzureClusterIdentity>();
        capz_harness::wait_for(&identities, "good", "Ready True", WAIT, |identity| {
            ready(identity) == Some(("True".into(), None))
        })
        .await?;
        let rejected = capz_harness::wait_for(&identities, "wrong", "Ready False", WAIT, |identity| {
            ready(identity).is_some_and(|(status, _)| status == "False")
        })
        .await?;
        assert_eq!(
            ready(&rejected).and_then(|(_, reason)| reason).as_deref(),
            Some("CredentialRejected")
        );
        let message = rejected
            .status
            .as_ref()
            .map(|status| format!("{:?}", status.conditions));
        assert!(
            !message.unwrap_or_default().contains("not-the-secret"),
            "the secret leaked"
        );

        // Resyncs every second and a wake-up of the identity itself: the failure is remembered,
        // and the good identity's token comes from the cache. No further sign-in.
        let before = setup.token_requests();
        identities
            .patch(
                "wrong",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"poke": "1"}}})),
            )
            .await?;
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(
            setup.token_requests(),
            before,
            "token requests during 4 s of resyncs"
        );
        assert_eq!(before, 2, "one sign-in per identity");

        clusters_hold_the_identity(setup).await
    })
    .await
}

async fn clusters_hold_the_identity(setup: &Setup) -> TestResult {
    let identities = setup.api::<AzureClusterIdentity>();
    // No cluster uses it yet: no finalizer.
    assert!(
        !identities
            .get("good")
            .await?
            .finalizers()
            .iter()
            .any(|f| f == FINALIZER)
    );
    setup
        .apply(
            r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata: {name: user}
spec:
  location: westeurope
  identityRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: AzureClusterIdentity, name: good}
",
        )
        .await?;
    capz_harness::wait_for(&identities, "good", "the finalizer", WAIT, |identity| {
        identity.finalizers().iter().any(|f| f == FINALIZER)
    })
    .await?;
    // Deleting a used identity waits for its users.
    identities.delete("good", &DeleteParams::default()).await?;
    let deleting = identities.get("good").await?;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    setup
        .api::<AzureCluster>()
        .delete("user", &DeleteParams::default())
        .await?;
    let started = tokio::time::Instant::now();
    while identities.get_opt("good").await?.is_some() {
        assert!(started.elapsed() < WAIT, "the identity outlived its last user");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(setup.arm_writes().is_empty(), "{:?}", setup.arm_writes());
    Ok(())
}

fn cluster_objects(namespace: &str) -> String {
    format!(
        r"
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: c1}}
spec:
  infrastructureRef: {{apiGroup: infrastructure.cluster.x-k8s.io, kind: AzureCluster, name: c1}}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: AzureCluster
metadata:
  name: c1
  labels: {{cluster.x-k8s.io/cluster-name: c1}}
spec:
  location: westeurope
  subscriptionID: {DEFAULT_SUBSCRIPTION}
  identityRef: {{apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: AzureClusterIdentity, name: sp, namespace: {namespace}}}
"
    )
}

fn template(kind: &str, name: &str, annotations: &str) -> String {
    let spec = "{vmSize: Standard_D2s_v3, osDisk: {osType: Linux, diskSizeGB: 128}}";
    let spec = match kind {
        "AzureMachineTemplate" => format!("{{template: {{spec: {spec}}}}}"),
        "AzureMachinePool" => format!("{{location: westeurope, template: {spec}}}"),
        _ => spec.to_owned(),
    };
    format!(
        r"
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: {kind}
metadata:
  name: {name}
  labels: {{cluster.x-k8s.io/cluster-name: c1}}
  annotations: {{{annotations}}}
spec: {spec}
"
    )
}

/// The kinds and names of `secret`'s owners.
fn owners(secret: &Secret) -> Vec<(&str, &str)> {
    secret
        .owner_references()
        .iter()
        .map(|owner| (owner.kind.as_str(), owner.name.as_str()))
        .collect()
}

fn file(secret: &Secret, key: &str) -> TestResult<Value> {
    let data = secret
        .data
        .as_ref()
        .and_then(|data| data.get(key))
        .ok_or("key missing")?;
    Ok(serde_json::from_slice(&data.0)?)
}

async fn written(
    setup: &Setup,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> TestResult<Secret> {
    Ok(
        capz_harness::wait_for(&setup.api::<Secret>(), name, what, WAIT, |secret| {
            file(secret, "control-plane-azure.json").is_ok_and(|file| check(&file))
        })
        .await?,
    )
}

#[tokio::test]
async fn machines_get_the_cloud_provider_configuration_of_their_cluster() -> TestResult {
    in_namespace(async |setup| {
        setup.secret("sp", &[("clientSecret", DEFAULT_CLIENT_SECRET)]).await?;
        setup.identity("sp", "sp").await?;
        // A user's own configuration under a name the controller would use.
        let users = setup.secret("mine-azure-json", &[("azure.json", "{}")]).await?;
        setup.apply(&cluster_objects(&setup.namespace)).await?;
        setup.apply(&template("AzureMachineTemplate", "mine", "")).await?;
        setup.apply(&template("AzureMachineTemplate", "md-0", "")).await?;
        setup.apply(&template("AzureMachine", "standalone", "")).await?;
        setup.apply(&template("AzureMachinePool", "mp-0", "")).await?;
        setup
            .apply(&template(
                "AzureMachine",
                "md-0-abcde",
                "cluster.x-k8s.io/cloned-from-groupkind: AzureMachineTemplate.infrastructure.cluster.x-k8s.io",
            ))
            .await?;

        let secret = written(setup, "md-0-azure-json", "the template's Secret", |_| true).await?;
        let config = file(&secret, "control-plane-azure.json")?;
        assert_eq!(config, file(&secret, "worker-node-azure.json")?);
        assert_eq!(config, file(&secret, "azure.json")?);
        for (key, value) in [
            ("cloud", "AzurePublicCloud"),
            ("tenantId", DEFAULT_TENANT),
            ("subscriptionId", DEFAULT_SUBSCRIPTION),
            ("aadClientId", DEFAULT_CLIENT_ID),
            ("aadClientSecret", DEFAULT_CLIENT_SECRET),
            ("resourceGroup", "c1"),
            ("location", "westeurope"),
            ("vnetName", "c1-vnet"),
            ("vnetResourceGroup", "c1"),
            ("subnetName", "c1-node-subnet"),
            ("securityGroupName", "c1-node-nsg"),
            ("routeTableName", "c1-node-routetable"),
            ("vmType", "vmss"),
            ("loadBalancerSku", "Standard"),
        ] {
            assert_eq!(config[key], json!(value), "{key}");
        }
        assert_eq!(config["useManagedIdentityExtension"], json!(false));
        assert_eq!(secret.labels().get("c1").map(String::as_str), Some("owned"));
        assert_eq!(owners(&secret), [("AzureMachineTemplate", "md-0")]);
        written(setup, "standalone-azure-json", "the standalone machine's Secret", |_| true).await?;
        let pool = written(setup, "mp-0-azure-json", "the machine pool's Secret", |file| {
            file["vmType"] == "vmss"
        })
        .await?;
        assert_eq!(owners(&pool), [("AzureMachinePool", "mp-0")]);

        // Neither the clone of a template nor the user's Secret is written.
        let secrets = setup.api::<Secret>();
        assert!(secrets.get_opt("md-0-abcde-azure-json").await?.is_none());
        let untouched = secrets.get("mine-azure-json").await?;
        assert_eq!(untouched.resource_version(), users.resource_version());
        assert_eq!(untouched.data, users.data);

        an_azure_cluster_change_rewrites_and_nothing_else_does(setup, &secret).await
    })
    .await
}

async fn an_azure_cluster_change_rewrites_and_nothing_else_does(
    setup: &Setup,
    secret: &Secret,
) -> TestResult {
    // Resyncs every second: unchanged inputs write nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let secrets = setup.api::<Secret>();
    assert_eq!(
        secrets.get("md-0-azure-json").await?.resource_version(),
        secret.resource_version(),
        "a steady state rewrote the Secret"
    );
    setup
        .api::<AzureCluster>()
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"networkSpec": {"subnets": [
                {"name": "c1-controlplane-subnet", "role": "control-plane"},
                {"name": "c1-node-subnet", "role": "node", "routeTable": {"name": "extra-routes"}},
            ]}}})),
        )
        .await?;
    written(setup, "md-0-azure-json", "the new route table", |file| {
        file["routeTableName"] == json!("extra-routes")
    })
    .await?;
    written(setup, "standalone-azure-json", "the new route table", |file| {
        file["routeTableName"] == json!("extra-routes")
    })
    .await?;
    assert!(setup.arm_writes().is_empty(), "{:?}", setup.arm_writes());
    Ok(())
}
