//! Every credential kind signing in to the emulator's Entra ID and IMDS over HTTPS (IMDS: HTTP),
//! and the tokens working against its ARM.

mod common;

use std::time::Duration;

use arm_emulator::Config;
use arm_emulator::config::{FederatedCredential, ManagedIdentity, Principal};
use azure_core::http::Url;
use capz_azure::{
    ArmClient, Category, ClientCertificate, Cloud, Credential, CredentialError, CustomCloud,
    ManagedIdentityId, ResourceId,
};
use common::{Azure, CLIENT_ID, CLIENT_SECRET, Issuer, TENANT, TestResult, claims, start};
use serde_json::Value;

const CERT_CLIENT: &str = "22222222-2222-2222-2222-222222222222";
const WORKLOAD_CLIENT: &str = "33333333-3333-3333-3333-333333333333";
const SYSTEM_IDENTITY: &str = "44444444-4444-4444-4444-444444444444";
const USER_IDENTITY: &str = "55555555-5555-5555-5555-555555555555";
const KUBE_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:capz-system:capz-manager";

fn principal(client_id: &str) -> Principal {
    Principal {
        client_id: client_id.to_owned(),
        tenant: TENANT.to_owned(),
        object_id: None,
        secret: None,
        certificate: None,
        federated: Vec::new(),
    }
}

fn user_identity_id() -> TestResult<ResourceId> {
    Ok(format!(
        "/subscriptions/{}/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz",
        common::SUBSCRIPTION
    )
    .parse()?)
}

/// Lists resource groups: proof that ARM takes the credential's token.
async fn arm_accepts(azure: &Azure, credential: Credential) -> TestResult {
    let client = ArmClient::new(&azure.cloud, credential, &azure.http, "test");
    let subscription = ResourceId::subscription_scope(common::SUBSCRIPTION.parse()?);
    let groups: Vec<Value> = client
        .list(
            &subscription,
            "Microsoft.Resources/resourceGroups",
            &"2021-04-01".parse()?,
        )
        .await?;
    assert!(groups.is_empty());
    Ok(())
}

#[tokio::test]
async fn a_client_secret_gets_a_token_arm_accepts_and_reuses_it() -> TestResult {
    let azure = start(Config::default()).await?;
    let credential = azure.secret_credential()?;
    let scope = azure.cloud.arm_scope();
    let first = credential.token(&[&scope]).await?;
    assert_eq!(claims(first.token.secret())?["appid"], CLIENT_ID);
    let again = credential.token(&[&scope]).await?;
    assert_eq!(
        again.token.secret(),
        first.token.secret(),
        "the cached token is reused"
    );
    arm_accepts(&azure, credential).await
}

/// How many token requests reached the emulator's Entra endpoint.
fn sign_ins(azure: &Azure) -> usize {
    azure
        .running
        .emulator
        .requests()
        .iter()
        .filter(|request| request.path.ends_with("/oauth2/v2.0/token"))
        .count()
}

/// How many requests other than sign-ins reached the emulator.
fn arm_calls(azure: &Azure) -> usize {
    azure
        .running
        .emulator
        .requests()
        .iter()
        .filter(|request| !request.path.ends_with("/token"))
        .count()
}

#[tokio::test]
async fn a_wrong_secret_is_rejected_once_with_entras_code_and_never_retried() -> TestResult {
    let azure = start(Config::default()).await?;
    let (cloud, http) = (azure.cloud.clone(), azure.http.clone());
    let wrong = "not-the-secret-0123";
    let credential = Credential::client_secret(&cloud, &http, TENANT, CLIENT_ID, wrong)?;

    let err = credential.token(&[&cloud.arm_scope()]).await.unwrap_err();
    assert!(matches!(err, CredentialError::Rejected { .. }), "{err}");
    assert!(err.is_terminal());
    let message = err.to_string();
    assert!(
        message.starts_with("the client secret credential was rejected: AADSTS7000215"),
        "{message}"
    );
    assert!(!message.contains(wrong), "the secret leaked: {message}");
    assert_eq!(sign_ins(&azure), 1, "one token request, no retry");

    // Through the ARM client: terminal, nothing sent to ARM, one more token request.
    let before = arm_calls(&azure);
    let client = ArmClient::new(&cloud, credential, &http, "test");
    let group = ResourceId::resource_group(common::SUBSCRIPTION.parse()?, "rg".parse()?);
    let err = client
        .get::<Value>(&group, &"2021-04-01".parse()?)
        .await
        .unwrap_err();
    assert_eq!(err.category(), Category::Unauthorized, "{err}");
    assert!(err.to_string().contains("AADSTS7000215"), "{err}");
    assert_eq!(arm_calls(&azure), before);
    assert_eq!(sign_ins(&azure), 2);

    // The right secret works.
    let good = Credential::client_secret(&cloud, &http, TENANT, CLIENT_ID, CLIENT_SECRET)?;
    good.token(&[&cloud.arm_scope()]).await?;
    Ok(())
}

#[tokio::test]
async fn an_unknown_client_and_an_unreachable_authority_are_told_apart() -> TestResult {
    let azure = start(Config::default()).await?;
    let unknown = Credential::client_secret(
        &azure.cloud,
        &azure.http,
        TENANT,
        "99999999-9999-9999-9999-999999999999",
        "x",
    )?;
    let err = unknown.token(&[&azure.cloud.arm_scope()]).await.unwrap_err();
    assert!(
        err.is_terminal() && err.to_string().contains("AADSTS700016"),
        "{err}"
    );

    // Nothing listens on port 9 of the loopback: a transport failure, worth retrying.
    let nowhere = Url::parse("https://127.0.0.1:9/")?;
    let cloud = Cloud::Custom(Box::new(CustomCloud::new(
        nowhere.clone(),
        nowhere,
        "https://management.azure.com/".into(),
        None,
    )?));
    let credential = Credential::client_secret(&cloud, &azure.http, TENANT, CLIENT_ID, CLIENT_SECRET)?;
    let err = credential.token(&[&cloud.arm_scope()]).await.unwrap_err();
    assert!(matches!(err, CredentialError::Transient { .. }), "{err}");
    Ok(())
}

/// An emulator where `CERT_CLIENT` signs in with the fixture's certificate.
async fn with_certificate_principal() -> TestResult<Azure> {
    let pem = std::str::from_utf8(common::CLIENT_CERTIFICATE_PEM)?;
    let certificate_only = pem
        .split_inclusive("-----END CERTIFICATE-----\n")
        .next()
        .ok_or("no certificate")?;
    let mut config = Config::default();
    config.principals.push(Principal {
        certificate: Some(certificate_only.to_owned()),
        ..principal(CERT_CLIENT)
    });
    start(config).await
}

#[tokio::test]
async fn a_pem_certificate_signs_assertions_entra_accepts() -> TestResult {
    let azure = with_certificate_principal().await?;
    let certificate = ClientCertificate::parse(common::CLIENT_CERTIFICATE_PEM)?;
    let credential =
        Credential::client_certificate(&azure.cloud, &azure.http, TENANT, CERT_CLIENT, certificate)?;
    let token = credential.token(&[&azure.cloud.arm_scope()]).await?;
    assert_eq!(claims(token.token.secret())?["appid"], CERT_CLIENT);
    arm_accepts(&azure, credential).await?;

    // Another principal's certificate is not registered for the default client.
    let stranger = Credential::client_certificate(
        &azure.cloud,
        &azure.http,
        TENANT,
        CLIENT_ID,
        ClientCertificate::parse(common::CLIENT_CERTIFICATE_PEM)?,
    )?;
    let err = stranger.token(&[&azure.cloud.arm_scope()]).await.unwrap_err();
    assert!(err.is_terminal() && err.to_string().contains("AADSTS"), "{err}");
    Ok(())
}

#[tokio::test]
async fn pfx_archives_old_and_new_sign_assertions_entra_accepts() -> TestResult {
    let azure = with_certificate_principal().await?;
    let from_pem = format!("{:?}", ClientCertificate::parse(common::CLIENT_CERTIFICATE_PEM)?);
    let archives = [
        (common::CLIENT_CERTIFICATE_PFX, "test-password"),
        (common::CLIENT_CERTIFICATE_LEGACY_PFX, "test-password"),
        (common::CLIENT_CERTIFICATE_EMPTY_PASSWORD_PFX, ""),
    ];
    for (archive, password) in archives {
        let certificate = ClientCertificate::parse_with_password(archive, password)?;
        // The legacy archive lists a CA certificate too: the one the key belongs to is picked.
        assert_eq!(format!("{certificate:?}"), from_pem);
        let credential =
            Credential::client_certificate(&azure.cloud, &azure.http, TENANT, CERT_CLIENT, certificate)?;
        let token = credential.token(&[&azure.cloud.arm_scope()]).await?;
        assert_eq!(claims(token.token.secret())?["appid"], CERT_CLIENT);
    }
    let wrong =
        ClientCertificate::parse_with_password(common::CLIENT_CERTIFICATE_LEGACY_PFX, "guess").unwrap_err();
    assert!(wrong.to_string().contains("wrong password"), "{wrong}");
    assert!(
        !wrong.to_string().contains("guess"),
        "the password leaked: {wrong}"
    );
    Ok(())
}

#[tokio::test]
async fn certificate_material_is_checked_up_front() -> TestResult {
    let pfx = ClientCertificate::parse(common::CLIENT_CERTIFICATE_PFX).unwrap_err();
    assert!(matches!(pfx, CredentialError::Configuration { .. }), "{pfx}");
    assert_eq!(
        pfx.to_string(),
        "the client certificate credential is misconfigured: cannot read the PKCS#12 (PFX) archive: \
         wrong password (the archive's integrity check failed)"
    );
    let pem = std::str::from_utf8(common::CLIENT_CERTIFICATE_PEM)?;
    let without_key = pem.split("-----BEGIN PRIVATE KEY-----").next().ok_or("no key")?;
    let err = ClientCertificate::parse(without_key.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("no private key"), "{err}");
    // A certificate paired with another key: the emulator's own CA certificate with our key.
    let tls = arm_emulator::tls::Tls::generate(&[])?;
    let key = pem
        .split_inclusive("-----END CERTIFICATE-----\n")
        .nth(1)
        .ok_or("no key")?;
    let mismatched = format!("{}{key}", tls.ca_pem);
    let err = ClientCertificate::parse(mismatched.as_bytes()).unwrap_err();
    assert!(
        err.to_string().contains("does not belong to the certificate"),
        "{err}"
    );
    assert!(format!("{:?}", ClientCertificate::parse(common::CLIENT_CERTIFICATE_PEM)?).contains("x5t#S256"));
    Ok(())
}

#[tokio::test]
async fn a_workload_identity_exchanges_the_token_file_it_reads_at_each_exchange() -> TestResult {
    let issuer = Issuer::new(KUBE_ISSUER)?;
    let mut config = Config::default();
    config.principals.push(Principal {
        federated: vec![FederatedCredential {
            issuer: KUBE_ISSUER.to_owned(),
            subject: SERVICE_ACCOUNT.to_owned(),
            audience: "api://AzureADTokenExchange".to_owned(),
            jwks: Some(issuer.jwks()),
            ca: None,
        }],
        ..principal(WORKLOAD_CLIENT)
    });
    let azure = start(config).await?;
    let token_file = std::env::temp_dir().join(format!("capz-azure-federated-{}", uuid::Uuid::new_v4()));
    let credential = Credential::workload_identity(
        &azure.cloud,
        &azure.http,
        TENANT,
        WORKLOAD_CLIENT,
        std::sync::Arc::new(capz_azure::FederatedTokenFile::new(&token_file)),
    )?;
    let scope = azure.cloud.arm_scope();

    // The file is read when a token is needed, not when the credential is made.
    let err = credential.token(&[&scope]).await.unwrap_err();
    assert!(matches!(err, CredentialError::Configuration { .. }), "{err}");
    assert!(
        err.to_string().contains("cannot read the federated token file"),
        "{err}"
    );

    std::fs::write(&token_file, issuer.token("system:serviceaccount:default:other")?)?;
    let err = credential.token(&[&scope]).await.unwrap_err();
    assert!(
        err.is_terminal() && err.to_string().contains("AADSTS70021"),
        "{err}"
    );

    std::fs::write(&token_file, issuer.token(SERVICE_ACCOUNT)?)?;
    let token = credential.token(&[&scope]).await?;
    assert_eq!(claims(token.token.secret())?["appid"], WORKLOAD_CLIENT);
    let result = arm_accepts(&azure, credential).await;
    std::fs::remove_file(&token_file)?;
    result
}

#[tokio::test]
async fn managed_identities_come_from_imds_with_a_configurable_endpoint() -> TestResult {
    let config = Config {
        managed_identities: vec![
            ManagedIdentity {
                client_id: SYSTEM_IDENTITY.to_owned(),
                object_id: None,
                resource_id: None,
                tenant: TENANT.to_owned(),
            },
            ManagedIdentity {
                client_id: USER_IDENTITY.to_owned(),
                object_id: None,
                resource_id: Some(user_identity_id()?.to_string()),
                tenant: TENANT.to_owned(),
            },
        ],
        ..Config::default()
    };
    let azure = start(config).await?;
    let imds = arm_emulator::start_imds(([127, 0, 0, 1], 0).into(), &azure.running.emulator).await?;
    let endpoint = Url::parse(&format!("http://{}", imds.address))?;
    let scope = azure.cloud.arm_scope();
    let cases = [
        (ManagedIdentityId::SystemAssigned, SYSTEM_IDENTITY),
        (
            ManagedIdentityId::ClientId(USER_IDENTITY.to_owned()),
            USER_IDENTITY,
        ),
        (ManagedIdentityId::ResourceId(user_identity_id()?), USER_IDENTITY),
    ];
    for (identity, expected) in cases {
        let credential = Credential::managed_identity(&azure.http, endpoint.clone(), identity);
        let token = credential.token(&[&scope]).await?;
        assert_eq!(claims(token.token.secret())?["appid"], expected);
        arm_accepts(&azure, credential).await?;
    }
    let missing = Credential::managed_identity(
        &azure.http,
        endpoint,
        ManagedIdentityId::ClientId("66666666-6666-6666-6666-666666666666".to_owned()),
    );
    let err = missing.token(&[&scope]).await.unwrap_err();
    assert!(
        err.is_terminal() && err.to_string().contains("Identity not found"),
        "{err}"
    );
    Ok(())
}

#[tokio::test]
async fn a_custom_cloud_is_read_from_the_cloud_metadata_endpoint() -> TestResult {
    let azure = start(Config::default()).await?;
    let base = Url::parse(&azure.running.base_url())?;
    let cloud = Cloud::from_metadata(&base, Some(azure.ca_pem.clone().into_bytes())).await?;
    assert_eq!(cloud.resource_manager().as_str(), format!("{base}"));
    assert_eq!(cloud.authority_host().origin(), base.origin());
    assert!(
        cloud.arm_scope().starts_with("https://management."),
        "{}",
        cloud.arm_scope()
    );
    let http = cloud.http_client(Duration::from_secs(10))?;
    let credential = Credential::client_secret(&cloud, &http, TENANT, CLIENT_ID, CLIENT_SECRET)?;
    arm_accepts(&Azure { cloud, http, ..azure }, credential).await?;

    // Without the CA, the emulator's certificate is not trusted.
    let err = Cloud::from_metadata(&base, None).await.unwrap_err();
    assert!(
        err.to_string().contains("cannot read the cloud metadata"),
        "{err}"
    );
    Ok(())
}
