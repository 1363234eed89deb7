//! Cluster credentials end to end: AzureClusterIdentity and Secret objects in a real API server,
//! tokens from the ARM emulator's Entra ID and IMDS (sign-ins counted in its request log), and
//! ARM calls made with them.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::{Path, PathBuf};

use arm_emulator::config::{
    DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, FederatedCredential,
    ManagedIdentity, Principal,
};
use arm_emulator::{Config, Running};
use azure_core::http::Url;
use capz_kit::api::azureclusteridentity::IdentityType;
use capz_kit::api::{AzureCluster, AzureClusterIdentity};
use capz_kit::azure::ResourceId;
use capz_kit::identity::{
    ClusterCredential, ClusterIdentityRef, CredentialSource, CustomCloudSettings, EnvironmentCredentials,
    FederatedToken, Identities, IdentityError, IdentitySettings, Notice,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub(crate) type TestResult<T = ()> = Result<T, Box<dyn Error + Send + Sync>>;

const PEM: &[u8] = include_bytes!("../../../azure/tests/fixtures/client-certificate.pem");
const PFX: &[u8] = include_bytes!("../../../azure/tests/fixtures/client-certificate.pfx");
const LEGACY_PFX: &[u8] = include_bytes!("../../../azure/tests/fixtures/client-certificate-legacy.pfx");
const PFX_PASSWORD: &str = "test-password";

const CERT_CLIENT: &str = "22222222-2222-2222-2222-222222222222";
const WORKLOAD_CLIENT: &str = "33333333-3333-3333-3333-333333333333";
const USER_IDENTITY: &str = "55555555-5555-5555-5555-555555555555";
const SERVICE_ACCOUNT: &str = "capz-manager";

/// The emulator over HTTPS.
struct Azure {
    running: Running,
    ca_file: PathBuf,
}

impl Azure {
    async fn start(config: Config, dir: &Path) -> TestResult<Self> {
        let tls = arm_emulator::tls::Tls::generate(&[])?;
        let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls).await?;
        let ca_file = dir.join("ca.pem");
        std::fs::write(&ca_file, &tls.ca_pem)?;
        Ok(Self { running, ca_file })
    }

    /// How many token requests reached Entra ID (IMDS's are not counted).
    fn token_requests(&self) -> usize {
        self.running
            .emulator
            .requests()
            .iter()
            .filter(|request| request.path.contains("/oauth2/") && !request.path.starts_with("/metadata/"))
            .count()
    }

    /// The emulator as a custom cloud; the token audience is left to its default (the Resource
    /// Manager URL, which the emulator accepts as ARM does its own).
    fn settings(&self, dir: &Path) -> TestResult<IdentitySettings> {
        let mut settings = IdentitySettings::from_lookup(|_| None)?;
        settings.custom_cloud = Some(CustomCloudSettings {
            resource_manager: Url::parse(&self.running.base_url())?,
            authority_host: Some(Url::parse(&self.running.base_url())?),
            token_audience: None,
            ca_file: Some(self.ca_file.clone()),
        });
        settings.federated_token = FederatedToken::File(dir.join("federated-token"));
        Ok(settings)
    }
}

fn principal(client_id: &str) -> Principal {
    Principal {
        client_id: client_id.to_owned(),
        tenant: DEFAULT_TENANT.to_owned(),
        object_id: None,
        secret: None,
        certificate: None,
        federated: Vec::new(),
    }
}

/// What a test runs with: a client, a fresh namespace and a directory of its own.
struct Test {
    client: Client,
    namespace: String,
    dir: PathBuf,
}

async fn in_namespace(test: impl AsyncFnOnce(Test) -> TestResult) -> TestResult {
    let plane = capz_harness::shared();
    let _side_by_side = plane.namespaced().await;
    let client = plane.client().await?;
    let inner = client.clone();
    capz_harness::with_temp_namespace(&client, async move |namespace| {
        let dir = std::env::temp_dir().join(format!("capz-kit-identity-{namespace}"));
        std::fs::create_dir_all(&dir)?;
        let result = test(Test {
            client: inner,
            namespace,
            dir: dir.clone(),
        })
        .await;
        let _ = std::fs::remove_dir_all(&dir);
        result
    })
    .await?
}

impl Test {
    async fn secret(&self, name: &str, data: &[(&str, &[u8])]) -> TestResult {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.to_owned());
        secret.data = Some(
            data.iter()
                .map(|(key, value)| ((*key).to_owned(), ByteString(value.to_vec())))
                .collect(),
        );
        Api::<Secret>::namespaced(self.client.clone(), &self.namespace)
            .create(&PostParams::default(), &secret)
            .await?;
        Ok(())
    }

    async fn rotate(&self, name: &str, key: &str, value: &str) -> TestResult {
        Api::<Secret>::namespaced(self.client.clone(), &self.namespace)
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"stringData": {key: value}})),
            )
            .await?;
        Ok(())
    }

    /// An AzureClusterIdentity; `spec` adds to `type`, `tenantID` and `clientID`.
    async fn identity(&self, name: &str, type_: &str, client_id: &str, spec: Value) -> TestResult {
        let mut full = json!({"type": type_, "tenantID": DEFAULT_TENANT, "clientID": client_id});
        if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
            full.extend(extra.clone());
        }
        let identity: AzureClusterIdentity = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "metadata": {"name": name},
            "spec": full,
        }))?;
        Api::<AzureClusterIdentity>::namespaced(self.client.clone(), &self.namespace)
            .create(&PostParams::default(), &identity)
            .await?;
        Ok(())
    }

    /// An AzureCluster referring to `identity_ref` (none when null), stored and read back.
    async fn cluster(
        &self,
        name: &str,
        identity_ref: Value,
        azure_environment: Option<&str>,
    ) -> TestResult<AzureCluster> {
        let mut spec = json!({"location": "westeurope"});
        if !identity_ref.is_null() {
            spec["identityRef"] = identity_ref;
        }
        if let Some(environment) = azure_environment {
            spec["azureEnvironment"] = json!(environment);
        }
        let cluster: AzureCluster = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureCluster",
            "metadata": {"name": name},
            "spec": spec,
        }))?;
        Ok(
            Api::<AzureCluster>::namespaced(self.client.clone(), &self.namespace)
                .create(&PostParams::default(), &cluster)
                .await?,
        )
    }

    /// A reference to an identity of this namespace, as CAPZ's templates write it.
    fn identity_ref(&self, name: &str) -> Value {
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "AzureClusterIdentity",
            "name": name,
            "namespace": self.namespace,
        })
    }

    fn secret_ref(&self, name: &str) -> Value {
        json!({"name": name, "namespace": self.namespace})
    }
}

/// Lists the subscription's resource groups: ARM took the credential's token.
async fn arm_accepts(credential: &ClusterCredential) -> TestResult {
    let subscription = ResourceId::subscription_scope(DEFAULT_SUBSCRIPTION.parse()?);
    let groups: Vec<Value> = credential
        .arm_client("capz-kit-test")
        .list(
            &subscription,
            "Microsoft.Resources/resourceGroups",
            &"2021-04-01".parse()?,
        )
        .await?;
    assert!(groups.is_empty());
    Ok(())
}

async fn credential(
    identities: &Identities,
    cluster: &AzureCluster,
) -> Result<ClusterCredential, IdentityError> {
    identities.credential(ClusterIdentityRef::from(cluster)).await
}

#[tokio::test]
async fn service_principals_sign_in_with_the_secret_they_name_and_share_tokens() -> TestResult {
    in_namespace(async |test| {
        let azure = Azure::start(Config::default(), &test.dir).await?;
        let identities = Identities::new(test.client.clone(), azure.settings(&test.dir)?).await?;
        test.secret("sp", &[("clientSecret", DEFAULT_CLIENT_SECRET.as_bytes())])
            .await?;
        test.identity(
            "sp",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": test.secret_ref("sp"), "allowedNamespaces": {}}),
        )
        .await?;
        // A reference without a namespace, to a Secret in the identity's own.
        test.identity(
            "manual",
            "ManualServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": {"name": "sp"}, "allowedNamespaces": {"list": [test.namespace]}}),
        )
        .await?;
        let one = test.cluster("one", json!({"name": "sp"}), None).await?;
        let two = test.cluster("two", test.identity_ref("manual"), None).await?;

        let first = credential(&identities, &one).await?;
        assert_eq!(
            first.source,
            CredentialSource::Identity {
                namespace: test.namespace.clone(),
                name: "sp".into(),
                type_: IdentityType::ServicePrincipal,
                client_id: DEFAULT_CLIENT_ID.into(),
            }
        );
        assert!(first.notices.is_empty(), "{:?}", first.notices);
        assert_eq!(azure.token_requests(), 0, "building fetches no token");
        arm_accepts(&first).await?;
        assert_eq!(azure.token_requests(), 1);

        // The next reconcile, and another cluster signing in the same way, reuse the credential
        // and its token.
        credential(&identities, &one).await?.arm_token().await?;
        let manual = credential(&identities, &two).await?;
        assert_eq!(manual.notices, vec![Notice::ManualServicePrincipal]);
        assert_eq!(manual.notices[0].reason(), "DeprecatedIdentityType");
        arm_accepts(&manual).await?;
        assert_eq!(azure.token_requests(), 1);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn certificates_from_secrets_and_files_pem_and_pfx_old_and_new_sign_in() -> TestResult {
    in_namespace(async |test| {
        let pem = std::str::from_utf8(PEM)?;
        let certificate_only = pem
            .split_inclusive("-----END CERTIFICATE-----\n")
            .next()
            .ok_or("no certificate")?;
        let mut config = Config::default();
        config.principals.push(Principal {
            certificate: Some(certificate_only.to_owned()),
            ..principal(CERT_CLIENT)
        });
        let azure = Azure::start(config, &test.dir).await?;
        let identities = Identities::new(test.client.clone(), azure.settings(&test.dir)?).await?;
        let password = PFX_PASSWORD.as_bytes();
        test.secret("pem", &[("certificate", PEM)]).await?;
        test.secret("pfx", &[("certificate", PFX), ("password", password)])
            .await?;
        test.secret(
            "legacy",
            &[("certificate", LEGACY_PFX), ("password", b"test-password\n")],
        )
        .await?;
        // The key CAPZ's own code reads the certificate from.
        test.secret("capz-key", &[("clientSecret", PEM)]).await?;
        test.secret("bad-password", &[("certificate", PFX), ("password", b"guess")])
            .await?;
        let file = test.dir.join("client.pem");
        std::fs::write(&file, PEM)?;
        let mut identities_spec = vec![("cert-path", json!({"certPath": file.to_str()}))];
        for secret in ["pem", "pfx", "legacy", "capz-key", "bad-password"] {
            identities_spec.push((secret, json!({"clientSecret": test.secret_ref(secret)})));
        }
        for (name, mut spec) in identities_spec {
            spec["allowedNamespaces"] = json!({});
            test.identity(name, "ServicePrincipalCertificate", CERT_CLIENT, spec)
                .await?;
        }

        for name in ["cert-path", "pem", "pfx", "legacy", "capz-key"] {
            let cluster = test.cluster(name, test.identity_ref(name), None).await?;
            let credential = credential(&identities, &cluster).await?;
            credential
                .arm_token()
                .await
                .map_err(|err| format!("{name}: {err}"))?;
            if name == "pfx" {
                arm_accepts(&credential).await?;
            }
        }
        // The cache keys on the material as given: the three PEM sources share a credential and
        // its token, each PFX has its own.
        assert_eq!(azure.token_requests(), 3);

        let cluster = test
            .cluster("bad-password", test.identity_ref("bad-password"), None)
            .await?;
        let err = credential(&identities, &cluster).await.unwrap_err();
        assert_eq!(err.reason(), "InvalidCredential");
        assert!(err.is_terminal());
        let message = err.to_string();
        assert!(message.contains("wrong password"), "{message}");
        assert!(!message.contains("guess"), "the password leaked: {message}");
        assert_eq!(azure.token_requests(), 3);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_user_assigned_msi_gets_its_token_from_the_configured_imds() -> TestResult {
    in_namespace(async |test| {
        let resource_id = format!(
            "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"
        );
        let config = Config {
            managed_identities: vec![ManagedIdentity {
                client_id: USER_IDENTITY.to_owned(),
                object_id: None,
                resource_id: Some(resource_id.clone()),
                tenant: DEFAULT_TENANT.to_owned(),
            }],
            ..Config::default()
        };
        let azure = Azure::start(config, &test.dir).await?;
        let imds = arm_emulator::start_imds(([127, 0, 0, 1], 0).into(), &azure.running.emulator).await?;
        let mut settings = azure.settings(&test.dir)?;
        settings.imds_endpoint = Url::parse(&format!("http://{}", imds.address))?;
        let identities = Identities::new(test.client.clone(), settings).await?;
        test.identity(
            "msi",
            "UserAssignedMSI",
            USER_IDENTITY,
            json!({"allowedNamespaces": {}}),
        )
        .await?;
        test.identity(
            "by-resource-id",
            "UserAssignedMSI",
            "",
            json!({"resourceID": resource_id, "allowedNamespaces": {}}),
        )
        .await?;

        let cluster = test.cluster("msi", test.identity_ref("msi"), None).await?;
        let msi = credential(&identities, &cluster).await?;
        assert!(msi.notices.is_empty());
        arm_accepts(&msi).await?;

        let cluster = test
            .cluster("by-resource-id", test.identity_ref("by-resource-id"), None)
            .await?;
        let by_resource_id = credential(&identities, &cluster).await?;
        assert_eq!(by_resource_id.notices, vec![Notice::ResourceId { used: true }]);
        arm_accepts(&by_resource_id).await?;
        assert_eq!(azure.token_requests(), 0, "managed identities never ask Entra directly");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_workload_identity_exchanges_a_service_account_token_of_the_plane() -> TestResult {
    in_namespace(async |test| {
        let plane = capz_harness::shared();
        let mut account = ServiceAccount::default();
        account.metadata.name = Some(SERVICE_ACCOUNT.to_owned());
        Api::<ServiceAccount>::namespaced(test.client.clone(), &test.namespace)
            .create(&PostParams::default(), &account)
            .await?;
        // The emulator fetches the plane's discovery document and keys itself, anonymously, over
        // HTTPS trusting the plane's CA, as Entra does with a cluster's issuer.
        let mut config = Config::default();
        config.principals.push(Principal {
            federated: vec![FederatedCredential {
                issuer: plane.url().to_owned(),
                subject: format!("system:serviceaccount:{}:{SERVICE_ACCOUNT}", test.namespace),
                audience: capz_harness::AZURE_AUDIENCE.to_owned(),
                jwks: None,
                ca: Some(std::fs::read_to_string(plane.ca_file())?),
            }],
            ..principal(WORKLOAD_CLIENT)
        });
        let azure = Azure::start(config, &test.dir).await?;
        let mut settings = azure.settings(&test.dir)?;
        // What a controller does by default: it asks the TokenRequest API for the account's token.
        settings.federated_token = FederatedToken::ServiceAccount {
            namespace: Some(test.namespace.clone()),
            name: SERVICE_ACCOUNT.to_owned(),
        };
        let identities = Identities::new(test.client.clone(), settings).await?;
        test.identity(
            "workload",
            "WorkloadIdentity",
            WORKLOAD_CLIENT,
            json!({"allowedNamespaces": {}}),
        )
        .await?;
        let cluster = test
            .cluster("workload", test.identity_ref("workload"), None)
            .await?;
        let workload = credential(&identities, &cluster).await?;
        arm_accepts(&workload).await?;
        assert_eq!(azure.token_requests(), 1);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_wrong_secret_is_refused_after_one_request_and_a_rotated_secret_takes_effect() -> TestResult {
    in_namespace(async |test| {
        let azure = Azure::start(Config::default(), &test.dir).await?;
        let identities = Identities::new(test.client.clone(), azure.settings(&test.dir)?).await?;
        let wrong = "not-the-secret-0123";
        test.secret("sp", &[("clientSecret", wrong.as_bytes())]).await?;
        test.identity(
            "sp",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": test.secret_ref("sp"), "allowedNamespaces": {}}),
        )
        .await?;
        let cluster = test.cluster("sp", test.identity_ref("sp"), None).await?;

        let err = credential(&identities, &cluster)
            .await?
            .arm_token()
            .await
            .unwrap_err();
        assert_eq!(err.reason(), "CredentialRejected");
        assert!(err.is_terminal());
        let message = err.to_string();
        assert!(
            message.starts_with("the client secret credential was rejected: AADSTS7000215"),
            "{message}"
        );
        assert!(!message.contains(wrong), "the secret leaked: {message}");
        assert_eq!(azure.token_requests(), 1, "one request, no retry");

        test.rotate("sp", "clientSecret", DEFAULT_CLIENT_SECRET).await?;
        let rotated = credential(&identities, &cluster).await?;
        arm_accepts(&rotated).await?;
        assert_eq!(azure.token_requests(), 2);

        // Rotating again (here to a wrong value) takes effect as well.
        test.rotate("sp", "clientSecret", "another-wrong-one").await?;
        let err = credential(&identities, &cluster)
            .await?
            .arm_token()
            .await
            .unwrap_err();
        assert_eq!(err.reason(), "CredentialRejected");
        assert_eq!(azure.token_requests(), 3);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn clusters_outside_allowed_namespaces_are_refused_before_any_token() -> TestResult {
    in_namespace(async |test| {
        let azure = Azure::start(Config::default(), &test.dir).await?;
        let identities = Identities::new(test.client.clone(), azure.settings(&test.dir)?).await?;
        test.secret("sp", &[("clientSecret", DEFAULT_CLIENT_SECRET.as_bytes())])
            .await?;
        let label = "capz-kit-test/team";
        for (name, allowed) in [
            ("absent", Value::Null),
            ("elsewhere", json!({"list": ["some-other-namespace"]})),
            ("selected", json!({"selector": {"matchLabels": {label: "a"}}})),
            ("everyone", json!({})),
        ] {
            let mut spec = json!({"clientSecret": test.secret_ref("sp")});
            if !allowed.is_null() {
                spec["allowedNamespaces"] = allowed;
            }
            test.identity(name, "ServicePrincipal", DEFAULT_CLIENT_ID, spec)
                .await?;
        }

        // Without allowedNamespaces not even the identity's own namespace may use it, as in CAPZ.
        for name in ["absent", "elsewhere", "selected"] {
            let cluster = test.cluster(name, test.identity_ref(name), None).await?;
            let err = credential(&identities, &cluster).await.unwrap_err();
            assert_eq!(err.reason(), "NamespaceNotAllowedByIdentity", "{name}: {err}");
            assert!(err.is_terminal());
            assert!(err.to_string().contains("spec.allowedNamespaces"), "{err}");
        }
        assert_eq!(azure.token_requests(), 0);

        // Labelling the namespace brings it under the selector.
        Api::<Namespace>::all(test.client.clone())
            .patch(
                &test.namespace,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {label: "a"}}})),
            )
            .await?;
        let selected = Api::<AzureCluster>::namespaced(test.client.clone(), &test.namespace)
            .get("selected")
            .await?;
        credential(&identities, &selected).await?.arm_token().await?;
        let everyone = test
            .cluster("everyone", test.identity_ref("everyone"), None)
            .await?;
        arm_accepts(&credential(&identities, &everyone).await?).await?;
        assert_eq!(azure.token_requests(), 1);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn unsupported_missing_and_misconfigured_identities_are_reported() -> TestResult {
    in_namespace(async |test| {
        let azure = Azure::start(Config::default(), &test.dir).await?;
        let identities = Identities::new(test.client.clone(), azure.settings(&test.dir)?).await?;
        test.secret("empty", &[("other", b"x")]).await?;
        let everyone = json!({});
        test.identity(
            "credentials-file",
            "UserAssignedIdentityCredential",
            DEFAULT_CLIENT_ID,
            json!({"userAssignedIdentityCredentialsPath": "/var/run/creds.json", "allowedNamespaces": everyone}),
        )
        .await?;
        test.identity(
            "no-secret-ref",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"allowedNamespaces": everyone}),
        )
        .await?;
        test.identity(
            "missing-secret",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": test.secret_ref("nowhere"), "allowedNamespaces": everyone}),
        )
        .await?;
        test.identity(
            "missing-key",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": test.secret_ref("empty"), "allowedNamespaces": everyone}),
        )
        .await?;
        let cases = [
            ("credentials-file", test.identity_ref("credentials-file"), "UnsupportedIdentityType", true),
            ("no-secret-ref", test.identity_ref("no-secret-ref"), "InvalidIdentity", true),
            ("missing-secret", test.identity_ref("missing-secret"), "IdentitySecretNotFound", false),
            ("missing-key", test.identity_ref("missing-key"), "InvalidIdentitySecret", true),
            ("missing-identity", test.identity_ref("never-created"), "IdentityNotFound", false),
            (
                "wrong-kind",
                json!({"kind": "AzureClusterTemplate", "name": "credentials-file"}),
                "InvalidIdentityRef",
                true,
            ),
        ];
        for (name, reference, reason, terminal) in cases {
            let cluster = test.cluster(name, reference, None).await?;
            let err = credential(&identities, &cluster).await.unwrap_err();
            assert_eq!((err.reason(), err.is_terminal()), (reason, terminal), "{name}: {err}");
        }
        let err = credential(&identities, &test.cluster("unsupported-type-message", test.identity_ref("credentials-file"), None).await?)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "AzureClusterIdentity {}/credentials-file: identity type UserAssignedIdentityCredential is not supported",
                test.namespace
            )
        );

        // The custom cloud serves every cluster; one naming another cloud is told so.
        test.secret("sp", &[("clientSecret", DEFAULT_CLIENT_SECRET.as_bytes())])
            .await?;
        test.identity(
            "sp",
            "ServicePrincipal",
            DEFAULT_CLIENT_ID,
            json!({"clientSecret": test.secret_ref("sp"), "allowedNamespaces": everyone}),
        )
        .await?;
        let china = test
            .cluster("china", test.identity_ref("sp"), Some("AzureChinaCloud"))
            .await?;
        let overridden = credential(&identities, &china).await?;
        assert_eq!(
            overridden.notices,
            vec![Notice::CloudOverridden {
                named: "AzureChinaCloud".into()
            }]
        );
        let mars = test.cluster("mars", test.identity_ref("sp"), Some("AzureMarsCloud")).await?;
        let err = credential(&identities, &mars).await.unwrap_err();
        assert_eq!(err.reason(), "InvalidAzureEnvironment");
        assert_eq!(azure.token_requests(), 0);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_an_identity_ref_the_environment_credentials_sign_in_and_are_flagged() -> TestResult {
    in_namespace(async |test| {
        let azure = Azure::start(Config::default(), &test.dir).await?;
        let mut settings = azure.settings(&test.dir)?;
        let variables: BTreeMap<&str, &str> = [
            ("AZURE_TENANT_ID", DEFAULT_TENANT),
            ("AZURE_CLIENT_ID", DEFAULT_CLIENT_ID),
            ("AZURE_CLIENT_SECRET", DEFAULT_CLIENT_SECRET),
        ]
        .into();
        settings.environment =
            EnvironmentCredentials::from_lookup(|name| variables.get(name).map(|value| (*value).to_owned()));
        let identities = Identities::new(test.client.clone(), settings).await?;
        let cluster = test.cluster("legacy", Value::Null, None).await?;
        let legacy = credential(&identities, &cluster).await?;
        assert_eq!(legacy.source, CredentialSource::Environment);
        assert_eq!(legacy.notices, vec![Notice::EnvironmentCredentials]);
        assert_eq!(legacy.notices[0].reason(), "DeprecatedEnvironmentCredentials");
        arm_accepts(&legacy).await?;

        // Incomplete environment credentials are named, not guessed around.
        let mut settings = azure.settings(&test.dir)?;
        settings.environment = EnvironmentCredentials {
            client_secret: Some("s".into()),
            ..EnvironmentCredentials::default()
        };
        let incomplete = Identities::new(test.client.clone(), settings).await?;
        let err = credential(&incomplete, &cluster).await.unwrap_err();
        assert_eq!(err.reason(), "InvalidEnvironmentCredentials");
        assert!(err.to_string().contains("AZURE_TENANT_ID"), "{err}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_custom_cloud_without_an_authority_host_is_read_from_its_metadata() -> TestResult {
    let dir = std::env::temp_dir().join(format!("capz-kit-identity-metadata-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let azure = Azure::start(Config::default(), &dir).await?;
    let settings = CustomCloudSettings {
        resource_manager: Url::parse(&azure.running.base_url())?,
        authority_host: None,
        token_audience: None,
        ca_file: Some(azure.ca_file.clone()),
    };
    let cloud = settings.resolve().await?;
    assert_eq!(
        cloud.authority_host().as_str().trim_end_matches('/'),
        azure.running.base_url()
    );
    let missing = CustomCloudSettings {
        ca_file: Some(dir.join("nowhere.pem")),
        ..settings
    };
    let err = missing.resolve().await.unwrap_err();
    assert!(err.to_string().contains("nowhere.pem"), "{err}");
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
