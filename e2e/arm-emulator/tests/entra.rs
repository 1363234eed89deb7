//! Microsoft Entra ID as Azure SDKs and MSAL use it: the token endpoint with secrets, certificate
//! assertions and federated tokens, the discovery documents, IMDS, and the bearer check of ARM.
//!
//! `fixtures/rsa-2048-test-key.pem` is an RSA key made once with `openssl genpkey` for these tests
//! (ring cannot generate RSA keys); it signs certificate assertions and service account tokens.

#![expect(clippy::unwrap_used, reason = "a failed step fails the test")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arm_emulator::config::{
    DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SUBSCRIPTION, DEFAULT_TENANT, FederatedCredential,
    ManagedIdentity, Principal, Tenant,
};
use arm_emulator::{Config, Emulator};
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, RsaKeyPair};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;

const TENANT: &str = DEFAULT_TENANT;
/// The host the router tests claim to reach the emulator at.
const HOST: &str = "emulator.test";
const CERT_CLIENT: &str = "22222222-2222-2222-2222-222222222222";
const WORKLOAD_CLIENT: &str = "33333333-3333-3333-3333-333333333333";
const KUBE_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:capz-system:capz-manager";
const EXCHANGE_AUDIENCE: &str = "api://AzureADTokenExchange";
/// Azure Service Operator's service account, which CAPZ's setup also trusts.
const ASO: &str = "system:serviceaccount:azureserviceoperator-system:azureserviceoperator-default";
const KEY_PEM: &str = include_str!("fixtures/rsa-2048-test-key.pem");

fn token_path() -> String {
    format!("/{TENANT}/oauth2/v2.0/token")
}

fn token_endpoint() -> String {
    format!("http://{HOST}{}", token_path())
}

fn resource_groups_path() -> String {
    format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourcegroups?api-version=2021-04-01")
}

fn now() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()).unwrap()
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

async fn call(emulator: &Emulator, request: Request<Body>) -> Reply {
    let response = emulator.router().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

async fn get_json(emulator: &Emulator, path: &str) -> Reply {
    let request = Request::get(path)
        .header("host", HOST)
        .body(Body::empty())
        .unwrap();
    call(emulator, request).await
}

async fn post_form(emulator: &Emulator, path: &str, form: &[(&str, &str)]) -> Reply {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let request = Request::post(path)
        .header("host", HOST)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("client-request-id", "c0ffee00-0000-0000-0000-000000000001")
        .body(Body::from(body))
        .unwrap();
    call(emulator, request).await
}

/// A client credentials request for ARM, plus the credential fields.
async fn exchange(emulator: &Emulator, client_id: &str, credential: &[(&str, &str)]) -> Reply {
    let mut form = vec![
        ("grant_type", "client_credentials"),
        ("client_id", client_id),
        ("scope", "https://management.azure.com/.default"),
    ];
    form.extend_from_slice(credential);
    post_form(emulator, &token_path(), &form).await
}

async fn with_assertion(emulator: &Emulator, client_id: &str, assertion: &str) -> Reply {
    let credential = [
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        ),
        ("client_assertion", assertion),
    ];
    exchange(emulator, client_id, &credential).await
}

/// Lists resource groups, with this `Authorization` header if any.
async fn arm_call(emulator: &Emulator, authorization: Option<&str>) -> Reply {
    let mut request = Request::get(resource_groups_path()).header("host", HOST);
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    call(emulator, request.body(Body::empty()).unwrap()).await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The claims of a JWT, unverified.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

fn assert_entra_error(reply: &Reply, status: StatusCode, error: &str, code: u64) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.body["error"], error, "{}", reply.body);
    assert_eq!(reply.body["error_codes"], json!([code]));
    let description = reply.body["error_description"].as_str().unwrap();
    assert!(
        description.starts_with(&format!("AADSTS{code}: ")),
        "{description}"
    );
    assert!(reply.body["trace_id"].is_string() && reply.body["timestamp"].is_string());
}

fn assert_arm_error(reply: &Reply, code: &str) {
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], code, "{}", reply.body);
    let challenge = reply.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(&format!(
            "Bearer authorization_uri=\"http://{HOST}/{TENANT}\", error=\"invalid_token\""
        )),
        "{challenge}"
    );
}

/// The test RSA key: signs JWTs and certificates.
struct RsaKey {
    pair: RsaKeyPair,
    rng: SystemRandom,
}

impl RsaKey {
    fn fixture() -> Self {
        let der = PrivatePkcs8KeyDer::from_pem_slice(KEY_PEM.as_bytes()).unwrap();
        Self {
            pair: RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).unwrap(),
            rng: SystemRandom::new(),
        }
    }

    /// A compact JWS of `claims` with `header`, signed RS256 or PS256 as the header says.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let padding: &dyn signature::RsaEncoding = if header["alg"] == "PS256" {
            &signature::RSA_PSS_SHA256
        } else {
            &signature::RSA_PKCS1_SHA256
        };
        let mut signature = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(padding, &self.rng, input.as_bytes(), &mut signature)
            .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The public key as a Kubernetes issuer's JWKS lists it.
    fn jwks(&self, kid: &str) -> Value {
        let public = signature::RsaPublicKeyComponents::<Vec<u8>>::from(self.pair.public());
        json!({"keys": [{
            "use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
            "n": URL_SAFE_NO_PAD.encode(public.n), "e": URL_SAFE_NO_PAD.encode(public.e),
        }]})
    }
}

/// A self-signed certificate of the fixture key: (PEM, SHA-1 thumbprint, SHA-256 thumbprint).
fn fixture_certificate() -> (String, String, String) {
    let key = rcgen::KeyPair::from_pem_and_sign_algo(KEY_PEM, &rcgen::PKCS_RSA_SHA256).unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["capz-test".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let der = certificate.der();
    let thumbprint = |algorithm| URL_SAFE_NO_PAD.encode(ring::digest::digest(algorithm, der));
    (
        certificate.pem(),
        thumbprint(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY),
        thumbprint(&ring::digest::SHA256),
    )
}

fn principal(client_id: &str) -> Principal {
    Principal {
        client_id: client_id.into(),
        tenant: TENANT.into(),
        object_id: None,
        secret: None,
        certificate: None,
        federated: Vec::new(),
    }
}

fn federated(issuer: &str, jwks: Option<Value>, ca: Option<String>) -> FederatedCredential {
    FederatedCredential {
        issuer: issuer.into(),
        subject: SERVICE_ACCOUNT.into(),
        audience: EXCHANGE_AUDIENCE.into(),
        jwks,
        ca,
    }
}

fn with_principals(principals: Vec<Principal>) -> Emulator {
    let mut config = Config::default();
    config.principals.extend(principals);
    Emulator::new(config)
}

/// A service account token as a Kubernetes issuer makes it.
fn service_account_token(key: &RsaKey, issuer: &str, subject: &str, expires: i64) -> String {
    key.sign(
        &json!({"alg": "RS256", "kid": "sa-key-1"}),
        &json!({
            "aud": [EXCHANGE_AUDIENCE], "exp": expires, "iat": now() - 60, "nbf": now() - 60,
            "iss": issuer, "sub": subject,
            "kubernetes.io": {"namespace": "capz-system", "serviceaccount": {"name": "capz-manager"}},
        }),
    )
}

#[tokio::test]
async fn a_client_secret_gets_a_token_that_arm_accepts() {
    let emulator = Emulator::new(Config::default());
    let reply = exchange(
        &emulator,
        DEFAULT_CLIENT_ID,
        &[("client_secret", DEFAULT_CLIENT_SECRET)],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["token_type"], "Bearer");
    assert_eq!(reply.body["expires_in"], 3599);
    assert_eq!(reply.body["ext_expires_in"], 3599);
    assert_eq!(
        reply.headers["client-request-id"],
        "c0ffee00-0000-0000-0000-000000000001"
    );
    let token = reply.body["access_token"].as_str().unwrap();
    let claims = claims(token);
    assert_eq!(claims["aud"], "https://management.azure.com");
    assert_eq!(claims["iss"], format!("https://sts.windows.net/{TENANT}/"));
    assert_eq!(
        (
            &claims["tid"],
            &claims["appid"],
            &claims["azp"],
            &claims["idtyp"],
            &claims["appidacr"]
        ),
        (
            &json!(TENANT),
            &json!(DEFAULT_CLIENT_ID),
            &json!(DEFAULT_CLIENT_ID),
            &json!("app"),
            &json!("1")
        )
    );
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3599
    );
    assert_eq!(claims["oid"], claims["sub"]);

    let listed = arm_call(&emulator, Some(&bearer(token))).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body, json!({"value": []}));

    // The v1 endpoint names the resource and answers every number as a string.
    let v1 = post_form(
        &emulator,
        &format!("/{TENANT}/oauth2/token"),
        &[
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("client_secret", DEFAULT_CLIENT_SECRET),
            ("resource", "https://management.core.windows.net/"),
        ],
    )
    .await;
    assert_eq!(v1.status, StatusCode::OK, "{}", v1.body);
    assert_eq!(
        (&v1.body["expires_in"], &v1.body["resource"]),
        (&json!("3599"), &json!("https://management.core.windows.net/"))
    );
    let v1_token = v1.body["access_token"].as_str().unwrap();
    assert_eq!(
        arm_call(&emulator, Some(&bearer(v1_token))).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn fault_rules_throttle_and_fail_sign_ins_and_name_the_throttled_caller() {
    let emulator = Emulator::new(Config::default());
    let rule = |status: u16, path: &str| arm_emulator::faults::Fault {
        method: None,
        path: path.into(),
        status: Some(status),
        code: None,
        message: None,
        retry_after_seconds: Some(2),
        count: Some(1),
        percent: None,
        latency_ms: None,
        drop_connection: false,
        fail_operation: false,
        cancel_operation: false,
    };
    emulator.add_fault(rule(429, "*/oauth2/v2.0/token"));
    emulator.add_fault(rule(500, "*/oauth2/v2.0/token"));
    let secret = [("client_secret", DEFAULT_CLIENT_SECRET)];
    let throttled = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_entra_error(
        &throttled,
        StatusCode::TOO_MANY_REQUESTS,
        "temporarily_unavailable",
        90033,
    );
    assert_eq!(throttled.headers["retry-after"], "2");
    let failed = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_entra_error(
        &failed,
        StatusCode::INTERNAL_SERVER_ERROR,
        "temporarily_unavailable",
        90033,
    );
    let signed_in = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.body);

    // An ARM call refused by a rule is logged with the caller its token names.
    emulator.add_fault(rule(429, "/subscriptions/*"));
    let token = signed_in.body["access_token"].as_str().unwrap();
    let refused = arm_call(&emulator, Some(&bearer(token))).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.headers["retry-after"], "2");
    let log = emulator.requests();
    let seen: Vec<(u16, Option<u64>)> = log
        .iter()
        .map(|entry| (entry.status, entry.retry_after))
        .collect();
    assert_eq!(seen, [(429, Some(2)), (500, None), (200, None), (429, Some(2))]);
    let arm = &log[3];
    assert_eq!(
        arm.caller.as_ref().map(|caller| caller.client_id.as_str()),
        Some(DEFAULT_CLIENT_ID)
    );
    assert!(arm.received <= arm.answered);
}

#[tokio::test]
async fn bad_token_requests_get_entra_errors() {
    let emulator = Emulator::new(Config::default());
    let wrong_secret = exchange(&emulator, DEFAULT_CLIENT_ID, &[("client_secret", "guess")]).await;
    assert_entra_error(
        &wrong_secret,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7_000_215,
    );
    assert_eq!(
        wrong_secret.body["correlation_id"],
        "c0ffee00-0000-0000-0000-000000000001"
    );
    let description = wrong_secret.body["error_description"].as_str().unwrap();
    assert!(
        !description.contains("guess"),
        "the secret must not be echoed: {description}"
    );

    let unknown = exchange(
        &emulator,
        "99999999-9999-9999-9999-999999999999",
        &[("client_secret", "x")],
    )
    .await;
    assert_entra_error(&unknown, StatusCode::BAD_REQUEST, "unauthorized_client", 700_016);

    let no_credential = exchange(&emulator, DEFAULT_CLIENT_ID, &[]).await;
    assert_entra_error(
        &no_credential,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7_000_218,
    );

    let unknown_tenant = post_form(
        &emulator,
        "/contoso.example/oauth2/v2.0/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
        ],
    )
    .await;
    assert_entra_error(&unknown_tenant, StatusCode::BAD_REQUEST, "invalid_request", 90002);

    let no_default = post_form(
        &emulator,
        &token_path(),
        &[
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("client_secret", DEFAULT_CLIENT_SECRET),
            ("scope", "https://management.azure.com/user_impersonation"),
        ],
    )
    .await;
    assert_entra_error(&no_default, StatusCode::BAD_REQUEST, "invalid_scope", 70011);

    let no_grant = post_form(&emulator, &token_path(), &[("client_id", DEFAULT_CLIENT_ID)]).await;
    assert_entra_error(&no_grant, StatusCode::BAD_REQUEST, "invalid_request", 900_144);
    let password = post_form(&emulator, &token_path(), &[("grant_type", "password")]).await;
    assert_entra_error(
        &password,
        StatusCode::BAD_REQUEST,
        "unsupported_grant_type",
        70003,
    );

    // Not a form at all: still an Entra error, not a crash.
    let request = Request::post(token_path())
        .header("host", HOST)
        .body(Body::from(vec![0xff, 0xfe, b'%', b'&', b'=']))
        .unwrap();
    let garbage = call(&emulator, request).await;
    assert_entra_error(&garbage, StatusCode::BAD_REQUEST, "invalid_request", 900_144);

    let malformed = with_assertion(&emulator, DEFAULT_CLIENT_ID, "not.a.jwt").await;
    assert_entra_error(&malformed, StatusCode::BAD_REQUEST, "invalid_request", 50027);
}

#[tokio::test]
async fn a_certificate_assertion_gets_a_token() {
    let key = RsaKey::fixture();
    let (pem, sha1, sha256) = fixture_certificate();
    let emulator = with_principals(vec![Principal {
        certificate: Some(pem),
        ..principal(CERT_CLIENT)
    }]);
    let claims = |audience: &str, expires: i64| {
        json!({
            "aud": audience, "iss": CERT_CLIENT, "sub": CERT_CLIENT, "jti": "5b1d3e2a",
            "nbf": now(), "iat": now(), "exp": expires,
        })
    };
    // MSAL signs RS256 with the SHA-1 thumbprint, or PS256 with the SHA-256 one.
    for header in [
        json!({"alg": "RS256", "typ": "JWT", "x5t": sha1}),
        json!({"alg": "PS256", "typ": "JWT", "x5t#S256": sha256}),
    ] {
        let assertion = key.sign(&header, &claims(&token_endpoint(), now() + 600));
        let reply = with_assertion(&emulator, CERT_CLIENT, &assertion).await;
        assert_eq!(reply.status, StatusCode::OK, "{header}: {}", reply.body);
        let token = reply.body["access_token"].as_str().unwrap();
        assert_eq!(self::claims(token)["appidacr"], "2");
        assert_eq!(
            arm_call(&emulator, Some(&bearer(token))).await.status,
            StatusCode::OK
        );
    }

    let header = json!({"alg": "RS256", "x5t": sha1});
    // The claims changed after signing: the signature no longer fits.
    let signed = key.sign(&header, &claims(&token_endpoint(), now() + 600));
    let mut parts: Vec<String> = signed.split('.').map(str::to_owned).collect();
    parts[1] = URL_SAFE_NO_PAD.encode(claims(&token_endpoint(), now() + 7200).to_string());
    let tampered = with_assertion(&emulator, CERT_CLIENT, &parts.join(".")).await;
    assert_entra_error(&tampered, StatusCode::UNAUTHORIZED, "invalid_client", 700_027);

    let other_certificate = json!({"alg": "RS256", "x5t": URL_SAFE_NO_PAD.encode([7; 20])});
    let unknown_key = with_assertion(
        &emulator,
        CERT_CLIENT,
        &key.sign(&other_certificate, &claims(&token_endpoint(), now() + 600)),
    )
    .await;
    assert_entra_error(&unknown_key, StatusCode::UNAUTHORIZED, "invalid_client", 700_027);
    assert!(
        unknown_key.body["error_description"]
            .as_str()
            .unwrap()
            .contains("The key was not found")
    );

    let elsewhere = key.sign(
        &header,
        &claims(
            "https://login.microsoftonline.com/x/oauth2/v2.0/token",
            now() + 600,
        ),
    );
    let wrong_audience = with_assertion(&emulator, CERT_CLIENT, &elsewhere).await;
    assert_entra_error(
        &wrong_audience,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_023,
    );

    let stale = key.sign(&header, &claims(&token_endpoint(), now() - 3600));
    let expired = with_assertion(&emulator, CERT_CLIENT, &stale).await;
    assert_entra_error(&expired, StatusCode::UNAUTHORIZED, "invalid_client", 700_024);

    // A principal without a certificate credential cannot sign its own assertions.
    let own = json!({
        "aud": token_endpoint(), "iss": DEFAULT_CLIENT_ID, "sub": DEFAULT_CLIENT_ID, "exp": now() + 600,
    });
    let no_certificate = with_assertion(&emulator, DEFAULT_CLIENT_ID, &key.sign(&header, &own)).await;
    assert_entra_error(
        &no_certificate,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_027,
    );
}

#[tokio::test]
async fn a_federated_token_with_inline_keys_gets_a_token() {
    let key = RsaKey::fixture();
    let emulator = with_principals(vec![Principal {
        federated: vec![federated(KUBE_ISSUER, Some(key.jwks("sa-key-1")), None)],
        ..principal(WORKLOAD_CLIENT)
    }]);
    let token = service_account_token(&key, KUBE_ISSUER, SERVICE_ACCOUNT, now() + 3600);
    let reply = with_assertion(&emulator, WORKLOAD_CLIENT, &token).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let access_token = reply.body["access_token"].as_str().unwrap();
    assert_eq!(claims(access_token)["appid"], WORKLOAD_CLIENT);
    assert_eq!(
        arm_call(&emulator, Some(&bearer(access_token))).await.status,
        StatusCode::OK
    );

    let other_account = service_account_token(
        &key,
        KUBE_ISSUER,
        "system:serviceaccount:default:default",
        now() + 3600,
    );
    let wrong_subject = with_assertion(&emulator, WORKLOAD_CLIENT, &other_account).await;
    assert_entra_error(
        &wrong_subject,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_213,
    );
    assert!(
        wrong_subject.body["error_description"]
            .as_str()
            .unwrap()
            .contains("subject 'system:serviceaccount:default:default'")
    );

    let stale = service_account_token(&key, KUBE_ISSUER, SERVICE_ACCOUNT, now() - 3600);
    let expired = with_assertion(&emulator, WORKLOAD_CLIENT, &stale).await;
    assert_entra_error(&expired, StatusCode::UNAUTHORIZED, "invalid_client", 700_024);

    // Signed by a key the issuer does not publish.
    let foreign = signed_elsewhere(&token);
    let forged = with_assertion(&emulator, WORKLOAD_CLIENT, &foreign).await;
    assert_entra_error(&forged, StatusCode::UNAUTHORIZED, "invalid_client", 700_027);
}

/// The claims of `token` signed again, by a key no issuer publishes.
fn signed_elsewhere(token: &str) -> String {
    let signer = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &SystemRandom::new(),
    )
    .unwrap();
    let pair = signature::EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        signer.as_ref(),
        &SystemRandom::new(),
    )
    .unwrap();
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "kid": "sa-key-1"}).to_string()),
        token.split('.').nth(1).unwrap()
    );
    let signature = pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
}

/// Stops a server task when dropped.
struct Served(tokio::task::JoinHandle<()>);

impl Drop for Served {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A tiny OIDC issuer, as a Kubernetes API server publishes its service account keys: discovery
/// document and JWKS. Counts the JWKS fetches. Serves HTTPS with `tls` (its CA PEM and server
/// configuration), else HTTP.
async fn serve_issuer(
    key: &RsaKey,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (String, Arc<AtomicUsize>, Served) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let issuer = format!("{scheme}://{}", listener.local_addr().unwrap());
    let fetches = Arc::new(AtomicUsize::new(0));
    let discovery = json!({
        "issuer": issuer, "jwks_uri": format!("{issuer}/openid/v1/jwks"),
        "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    });
    let jwks = key.jwks("sa-key-1");
    let counter = fetches.clone();
    let router = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move || async move { axum::Json(discovery) }),
        )
        .route(
            "/openid/v1/jwks",
            get(move || async move {
                counter.fetch_add(1, Ordering::SeqCst);
                axum::Json(jwks)
            }),
        );
    let server = match tls {
        None => tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        }),
        Some(config) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(config);
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let acceptor = acceptor.clone();
                    let service = hyper_util::service::TowerToHyperService::new(router.clone());
                    tokio::spawn(async move {
                        let Ok(stream) = acceptor.accept(stream).await else {
                            return;
                        };
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            })
        }
    };
    (issuer, fetches, Served(server))
}

/// A CA (PEM) and a server configuration with a certificate it signed for 127.0.0.1.
fn issuer_tls() -> (String, Arc<rustls::ServerConfig>) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![server.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
            )
            .unwrap();
    (ca.pem(), Arc::new(config))
}

#[tokio::test]
async fn a_federated_token_is_checked_with_keys_fetched_from_its_issuer() {
    let key = RsaKey::fixture();
    let (ca_pem, server_config) = issuer_tls();
    let (plain_issuer, plain_fetches, _plain) = serve_issuer(&key, None).await;
    let (tls_issuer, tls_fetches, _tls) = serve_issuer(&key, Some(server_config)).await;
    let emulator = with_principals(vec![Principal {
        federated: vec![
            federated(&plain_issuer, None, None),
            federated(&tls_issuer, None, Some(ca_pem)),
            federated("http://127.0.0.1:9", None, None),
        ],
        ..principal(WORKLOAD_CLIENT)
    }]);
    for (issuer, fetches) in [(&plain_issuer, &plain_fetches), (&tls_issuer, &tls_fetches)] {
        for _ in 0..2 {
            let token = service_account_token(&key, issuer, SERVICE_ACCOUNT, now() + 3600);
            let reply = with_assertion(&emulator, WORKLOAD_CLIENT, &token).await;
            assert_eq!(reply.status, StatusCode::OK, "{issuer}: {}", reply.body);
        }
        // The keys are kept once fetched.
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "{issuer}");
    }
    // An issuer that cannot be reached (nothing listens on the discard port).
    let token = service_account_token(&key, "http://127.0.0.1:9", SERVICE_ACCOUNT, now() + 3600);
    let unreachable = with_assertion(&emulator, WORKLOAD_CLIENT, &token).await;
    assert_entra_error(&unreachable, StatusCode::BAD_REQUEST, "invalid_request", 50166);

    // HTTPS with a CA the credential does not name is refused.
    let untrusted = with_principals(vec![Principal {
        federated: vec![federated(&tls_issuer, None, Some(issuer_tls().0))],
        ..principal(WORKLOAD_CLIENT)
    }]);
    let token = service_account_token(&key, &tls_issuer, SERVICE_ACCOUNT, now() + 3600);
    let refused = with_assertion(&untrusted, WORKLOAD_CLIENT, &token).await;
    assert_entra_error(&refused, StatusCode::BAD_REQUEST, "invalid_request", 50166);
}

fn identities() -> Vec<ManagedIdentity> {
    vec![
        ManagedIdentity {
            client_id: "44444444-4444-4444-4444-444444444444".into(),
            object_id: Some("55555555-5555-5555-5555-555555555555".into()),
            resource_id: None,
            tenant: TENANT.into(),
        },
        ManagedIdentity {
            client_id: "66666666-6666-6666-6666-666666666666".into(),
            object_id: None,
            resource_id: Some(format!(
                "/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/ids/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"
            )),
            tenant: TENANT.into(),
        },
    ]
}

async fn imds(emulator: &Emulator, query: &str, metadata: bool) -> Reply {
    let mut request = Request::get(format!("/metadata/identity/oauth2/token?{query}"));
    if metadata {
        request = request.header("Metadata", "true");
    }
    call(emulator, request.body(Body::empty()).unwrap()).await
}

#[tokio::test]
async fn imds_hands_out_managed_identity_tokens() {
    let emulator = Emulator::new(Config {
        managed_identities: identities(),
        ..Config::default()
    });
    let query = "api-version=2018-02-01&resource=https%3A%2F%2Fmanagement.azure.com%2F";
    let system = imds(&emulator, query, true).await;
    assert_eq!(system.status, StatusCode::OK, "{}", system.body);
    assert_eq!(system.body["client_id"], "44444444-4444-4444-4444-444444444444");
    assert_eq!(
        (&system.body["expires_in"], &system.body["token_type"]),
        (&json!("86399"), &json!("Bearer"))
    );
    assert_eq!(system.body["resource"], "https://management.azure.com/");
    let expires_on: i64 = system.body["expires_on"].as_str().unwrap().parse().unwrap();
    let not_before: i64 = system.body["not_before"].as_str().unwrap().parse().unwrap();
    assert_eq!(expires_on - not_before, 86399);
    let token = system.body["access_token"].as_str().unwrap();
    assert_eq!(claims(token)["oid"], "55555555-5555-5555-5555-555555555555");
    assert_eq!(
        arm_call(&emulator, Some(&bearer(token))).await.status,
        StatusCode::OK
    );

    let user = imds(
        &emulator,
        &format!("{query}&client_id=66666666-6666-6666-6666-666666666666"),
        true,
    )
    .await;
    assert_eq!(user.status, StatusCode::OK, "{}", user.body);
    let user_claims = claims(user.body["access_token"].as_str().unwrap());
    assert!(
        user_claims["xms_mirid"]
            .as_str()
            .unwrap()
            .ends_with("/userAssignedIdentities/capz")
    );
    let by_resource = imds(
        &emulator,
        &format!(
            "{query}&msi_res_id={}",
            user_claims["xms_mirid"].as_str().unwrap()
        ),
        true,
    )
    .await;
    assert_eq!(
        by_resource.body["client_id"],
        "66666666-6666-6666-6666-666666666666"
    );
    let by_object = imds(
        &emulator,
        &format!("{query}&object_id={}", user_claims["oid"].as_str().unwrap()),
        true,
    )
    .await;
    assert_eq!(
        by_object.body["client_id"],
        "66666666-6666-6666-6666-666666666666"
    );

    let no_header = imds(&emulator, query, false).await;
    assert_eq!(
        (no_header.status, &no_header.body["error"]),
        (StatusCode::BAD_REQUEST, &json!("invalid_request"))
    );
    let unknown = imds(&emulator, &format!("{query}&client_id=nobody"), true).await;
    assert_eq!(
        (unknown.status, &unknown.body),
        (
            StatusCode::BAD_REQUEST,
            &json!({"error": "invalid_request", "error_description": "Identity not found"})
        )
    );
    let no_resource = imds(&emulator, "api-version=2018-02-01", true).await;
    assert_eq!(no_resource.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn imds_serves_on_its_own_plain_http_socket() {
    let emulator = Emulator::new(Config {
        managed_identities: identities(),
        ..Config::default()
    });
    let running = arm_emulator::start_imds(([127, 0, 0, 1], 0).into(), &emulator)
        .await
        .unwrap();
    assert_ne!(running.address.port(), 0);
    let mut stream = tokio::net::TcpStream::connect(running.address).await.unwrap();
    stream
        .write_all(
            b"GET /metadata/identity/oauth2/token?api-version=2019-08-01&resource=https://management.azure.com \
              HTTP/1.1\r\nhost: 169.254.169.254\r\nmetadata: true\r\nconnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).await.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let body: Value = serde_json::from_str(reply.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    let token = body["access_token"].as_str().unwrap();
    // The token is the emulator's own: ARM accepts it.
    assert_eq!(
        arm_call(&emulator, Some(&bearer(token))).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn discovery_documents_point_at_the_emulator() {
    let emulator = Emulator::new(Config::default());
    let base = format!("http://{HOST}");
    let v2 = get_json(
        &emulator,
        &format!("/{TENANT}/v2.0/.well-known/openid-configuration"),
    )
    .await;
    assert_eq!(v2.status, StatusCode::OK);
    assert_eq!(
        v2.body["token_endpoint"],
        format!("{base}/{TENANT}/oauth2/v2.0/token")
    );
    assert_eq!(
        v2.body["authorization_endpoint"],
        format!("{base}/{TENANT}/oauth2/v2.0/authorize")
    );
    assert_eq!(
        v2.body["device_authorization_endpoint"],
        format!("{base}/{TENANT}/oauth2/v2.0/devicecode")
    );
    assert_eq!(v2.body["issuer"], format!("{base}/{TENANT}/v2.0"));
    assert_eq!(v2.body["tenant_region_scope"], "WW");
    let common = get_json(&emulator, "/common/v2.0/.well-known/openid-configuration").await;
    assert_eq!(common.body["issuer"], format!("{base}/{{tenantid}}/v2.0"));
    assert_eq!(
        common.body["token_endpoint"],
        format!("{base}/common/oauth2/v2.0/token")
    );
    let v1 = get_json(&emulator, &format!("/{TENANT}/.well-known/openid-configuration")).await;
    assert_eq!(v1.body["token_endpoint"], format!("{base}/{TENANT}/oauth2/token"));
    assert_eq!(v1.body["issuer"], format!("https://sts.windows.net/{TENANT}/"));

    let unknown = get_json(
        &emulator,
        "/contoso.example/v2.0/.well-known/openid-configuration",
    )
    .await;
    assert_entra_error(&unknown, StatusCode::BAD_REQUEST, "invalid_tenant", 90002);

    let instance = get_json(
        &emulator,
        &format!(
            "/common/discovery/instance?api-version=1.1&authorization_endpoint=http%3A%2F%2F{HOST}%2F{TENANT}%2Foauth2%2Fv2.0%2Fauthorize"
        ),
    )
    .await;
    assert_eq!(instance.status, StatusCode::OK);
    assert_eq!(
        instance.body,
        json!({
            "tenant_discovery_endpoint": format!("{base}/{TENANT}/v2.0/.well-known/openid-configuration"),
            "api-version": "1.1",
            "metadata": [{"preferred_network": HOST, "preferred_cache": HOST, "aliases": [HOST]}],
        })
    );

    // The published key is the one tokens name.
    let token = emulator.access_token(DEFAULT_CLIENT_ID).unwrap();
    let header: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap()).unwrap();
    for path in [
        format!("/{TENANT}/discovery/v2.0/keys"),
        "/common/discovery/keys".to_owned(),
    ] {
        let keys = get_json(&emulator, &path).await;
        assert_eq!(keys.body["keys"][0]["kid"], header["kid"], "{path}");
        assert_eq!(keys.body["keys"][0]["kty"], "EC");
    }
}

#[tokio::test]
async fn cloud_metadata_describes_a_custom_cloud() {
    let emulator = Emulator::new(Config::default());
    let base = format!("http://{HOST}");
    let current = get_json(&emulator, "/metadata/endpoints?api-version=2022-09-01").await;
    assert_eq!(current.status, StatusCode::OK);
    assert_eq!(current.body["name"], "AzureEmulator");
    assert_eq!(current.body["resourceManager"], format!("{base}/"));
    assert_eq!(current.body["authentication"]["loginEndpoint"], base);
    assert_eq!(
        current.body["authentication"]["audiences"],
        json!([
            "https://management.core.windows.net/",
            "https://management.azure.com/"
        ])
    );
    assert!(current.body["suffixes"]["storage"].is_string());
    let listed = get_json(&emulator, "/metadata/endpoints?api-version=2019-05-01").await;
    assert_eq!(listed.body[0]["name"], "AzureEmulator");
    let legacy = get_json(&emulator, "/metadata/endpoints").await;
    assert_eq!(legacy.body["authentication"]["loginEndpoint"], format!("{base}/"));
    assert!(legacy.body["galleryEndpoint"].is_string());
}

#[tokio::test]
async fn arm_refuses_calls_without_a_valid_token() {
    let emulator = Emulator::new(Config::default());
    let missing = arm_call(&emulator, None).await;
    assert_arm_error(&missing, "AuthenticationFailed");
    assert_eq!(
        missing.body["error"]["message"],
        "Authentication failed. The 'Authorization' header is missing."
    );
    assert_arm_error(
        &arm_call(&emulator, Some("Basic dXNlcjpwYXNz")).await,
        "AuthenticationFailed",
    );
    assert_arm_error(
        &arm_call(&emulator, Some("Bearer garbage")).await,
        "InvalidAuthenticationToken",
    );
    assert_arm_error(
        &arm_call(&emulator, Some("Bearer a.b.c")).await,
        "InvalidAuthenticationToken",
    );

    // A token from another emulator (another key) is not this one's.
    let stranger = Emulator::new(Config::default())
        .access_token(DEFAULT_CLIENT_ID)
        .unwrap();
    assert_arm_error(
        &arm_call(&emulator, Some(&bearer(&stranger))).await,
        "InvalidAuthenticationToken",
    );

    // A token for another resource.
    let graph = post_form(
        &emulator,
        &token_path(),
        &[
            ("grant_type", "client_credentials"),
            ("client_id", DEFAULT_CLIENT_ID),
            ("client_secret", DEFAULT_CLIENT_SECRET),
            ("scope", "https://graph.microsoft.com/.default"),
        ],
    )
    .await;
    let graph_token = graph.body["access_token"].as_str().unwrap();
    assert_arm_error(
        &arm_call(&emulator, Some(&bearer(graph_token))).await,
        "InvalidAuthenticationTokenAudience",
    );

    let token = emulator.access_token(DEFAULT_CLIENT_ID).unwrap();
    let valid = arm_call(&emulator, Some(&bearer(&token))).await;
    assert_eq!(valid.status, StatusCode::OK, "{}", valid.body);

    // An hour and more later the token has expired.
    emulator.advance_clock(Duration::from_hours(2));
    let expired = arm_call(&emulator, Some(&bearer(&token))).await;
    assert_arm_error(&expired, "ExpiredAuthenticationToken");
    assert!(
        expired.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The access token expiry UTC time '")
    );
    let fresh = emulator.access_token(DEFAULT_CLIENT_ID).unwrap();
    assert_eq!(
        arm_call(&emulator, Some(&bearer(&fresh))).await.status,
        StatusCode::OK
    );

    // Refusals are logged like any answer; accepted calls name their caller.
    assert_eq!(emulator.count("GET", "-", 401), 7);
    let log = get_json(&emulator, "/_emulator/requests").await;
    let entries = log.body["requests"].as_array().unwrap();
    assert_eq!(entries[0]["caller"], Value::Null);
    let last = entries.last().unwrap();
    assert_eq!(last["status"], 200);
    assert_eq!(last["caller"]["clientId"], DEFAULT_CLIENT_ID);
    assert_eq!(last["caller"]["tenant"], TENANT);
    assert!(last["caller"]["objectId"].is_string());
    // Stamped with the real time, whatever the emulator's clock says.
    let answered = last["answered"].as_str().unwrap();
    assert!(
        answered.ends_with('Z') && answered >= entries[0]["answered"].as_str().unwrap(),
        "{answered}"
    );
}

#[tokio::test]
async fn a_token_of_another_tenant_is_refused_for_the_subscription() {
    const OTHER_TENANT: &str = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa";
    let mut config = Config::default();
    config.tenants.push(Tenant {
        id: OTHER_TENANT.into(),
    });
    config.principals.push(Principal {
        tenant: OTHER_TENANT.into(),
        secret: Some("other-secret".into()),
        ..principal(CERT_CLIENT)
    });
    let emulator = Emulator::new(config);
    let reply = post_form(
        &emulator,
        &format!("/{OTHER_TENANT}/oauth2/v2.0/token"),
        &[
            ("grant_type", "client_credentials"),
            ("client_id", CERT_CLIENT),
            ("client_secret", "other-secret"),
            ("scope", "https://management.core.windows.net//.default"),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let token = reply.body["access_token"].as_str().unwrap();
    assert_eq!(claims(token)["aud"], "https://management.core.windows.net/");
    // The subscription belongs to the default tenant; the challenge sends the client there.
    assert_arm_error(
        &arm_call(&emulator, Some(&bearer(token))).await,
        "InvalidAuthenticationTokenTenant",
    );
    // The principal belongs to the other tenant only.
    let wrong_tenant = exchange(&emulator, CERT_CLIENT, &[("client_secret", "other-secret")]).await;
    assert_entra_error(
        &wrong_tenant,
        StatusCode::BAD_REQUEST,
        "unauthorized_client",
        700_016,
    );
}

/// One HTTP/1.1 exchange over TLS; returns the status line and the body.
async fn https(
    address: std::net::SocketAddr,
    connector: &tokio_rustls::TlsConnector,
    request: String,
) -> (String, Value) {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    // The server may close without a TLS close_notify; what was read until then is the answer.
    let _ = stream.read_to_end(&mut reply).await;
    let reply = String::from_utf8(reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (
        head.lines().next().unwrap().to_owned(),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn over_https_a_client_gets_a_token_and_calls_arm() {
    let tls = arm_emulator::tls::Tls::generate(&[]).unwrap();
    let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), Config::default(), &tls)
        .await
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(tls.ca_der().unwrap()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let host = format!("localhost:{}", running.address.port());

    let (status, discovery) = https(
        running.address,
        &connector,
        format!("GET /{TENANT}/v2.0/.well-known/openid-configuration HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // The client reached the emulator as localhost: the documents say so.
    assert_eq!(
        discovery["token_endpoint"],
        format!("https://{host}{}", token_path())
    );

    let form = format!(
        "grant_type=client_credentials&client_id={DEFAULT_CLIENT_ID}&client_secret={DEFAULT_CLIENT_SECRET}\
         &scope=https%3A%2F%2Fmanagement.azure.com%2F.default"
    );
    let (status, token) = https(
        running.address,
        &connector,
        format!(
            "POST {} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/x-www-form-urlencoded\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{form}",
            token_path(),
            form.len()
        ),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {token}");
    let access_token = token["access_token"].as_str().unwrap();
    let (status, groups) = https(
        running.address,
        &connector,
        format!(
            "GET {} HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {access_token}\r\nconnection: close\r\n\r\n",
            resource_groups_path()
        ),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {groups}");
    assert_eq!(groups, json!({"value": []}));
}

/// Makes, through ARM, a user-assigned identity with a federated credential per (name, issuer,
/// subject, audience); returns its client id and principal id.
async fn identity_through_arm(
    emulator: &Emulator,
    credentials: &[(&str, &str, &str, &str)],
) -> (String, String) {
    let token = emulator.access_token(DEFAULT_CLIENT_ID).unwrap();
    let put = |path: String, body: Value| {
        let request = Request::put(path)
            .header("host", HOST)
            .header("authorization", bearer(&token))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        call(emulator, request)
    };
    let group = format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/identities");
    put(
        format!("{group}?api-version=2021-04-01"),
        json!({"location": "westeurope"}),
    )
    .await;
    let identity = format!("{group}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz");
    let made = put(
        format!("{identity}?api-version=2023-01-31"),
        json!({"location": "westeurope"}),
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    for (name, issuer, subject, audience) in credentials {
        let credential = put(
            format!("{identity}/federatedIdentityCredentials/{name}?api-version=2023-01-31"),
            json!({"properties": {"issuer": issuer, "subject": subject, "audiences": [audience]}}),
        )
        .await;
        assert_eq!(credential.status, StatusCode::CREATED, "{}", credential.body);
    }
    let properties = &made.body["properties"];
    (
        properties["clientId"].as_str().unwrap().to_owned(),
        properties["principalId"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn an_identity_made_through_arm_signs_in_with_its_federated_credentials() {
    let key = RsaKey::fixture();
    let (ca_pem, server_config) = issuer_tls();
    let (issuer, _fetches, _served) = serve_issuer(&key, Some(server_config)).await;
    let emulator = Emulator::new(Config {
        issuer_cas: vec![ca_pem],
        ..Config::default()
    });
    let (client_id, principal_id) = identity_through_arm(
        &emulator,
        &[
            ("capz", &issuer, SERVICE_ACCOUNT, EXCHANGE_AUDIENCE),
            ("aso", &issuer, ASO, EXCHANGE_AUDIENCE),
        ],
    )
    .await;
    // Each credential signs the identity in; the token is the identity's.
    for subject in [SERVICE_ACCOUNT, ASO] {
        let token = service_account_token(&key, &issuer, subject, now() + 3600);
        let reply = with_assertion(&emulator, &client_id, &token).await;
        assert_eq!(reply.status, StatusCode::OK, "{subject}: {}", reply.body);
        let access = claims(reply.body["access_token"].as_str().unwrap());
        assert_eq!(
            (access["appid"].as_str(), access["oid"].as_str()),
            (Some(client_id.as_str()), Some(principal_id.as_str()))
        );
    }

    // Entra's rules, each refused with its code.
    let wrong_subject = service_account_token(
        &key,
        &issuer,
        "system:serviceaccount:default:default",
        now() + 3600,
    );
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &wrong_subject).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_213,
    );
    let other_case = service_account_token(&key, &issuer, &SERVICE_ACCOUNT.to_uppercase(), now() + 3600);
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &other_case).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        7_002_138,
    );
    let wrong_issuer =
        service_account_token(&key, "https://elsewhere.example", SERVICE_ACCOUNT, now() + 3600);
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &wrong_issuer).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_211,
    );
    let wrong_audience = key.sign(
        &json!({"alg": "RS256", "kid": "sa-key-1"}),
        &json!({"iss": issuer, "sub": SERVICE_ACCOUNT, "aud": ["api://other"], "exp": now() + 3600, "iat": now()}),
    );
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &wrong_audience).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_212,
    );
    let expired = service_account_token(&key, &issuer, SERVICE_ACCOUNT, now() - 3600);
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &expired).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_024,
    );
    let forged = signed_elsewhere(&service_account_token(
        &key,
        &issuer,
        SERVICE_ACCOUNT,
        now() + 3600,
    ));
    assert_entra_error(
        &with_assertion(&emulator, &client_id, &forged).await,
        StatusCode::UNAUTHORIZED,
        "invalid_client",
        700_027,
    );

    // Without the issuer's CA among those trusted, its keys cannot be fetched.
    let untrusting = Emulator::new(Config::default());
    let (client_id, _) = identity_through_arm(
        &untrusting,
        &[("capz", &issuer, SERVICE_ACCOUNT, EXCHANGE_AUDIENCE)],
    )
    .await;
    let token = service_account_token(&key, &issuer, SERVICE_ACCOUNT, now() + 3600);
    assert_entra_error(
        &with_assertion(&untrusting, &client_id, &token).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
        50166,
    );
}

#[tokio::test]
async fn known_issuer_keys_sign_in_identities_made_through_arm_and_their_roles_apply() {
    let key = RsaKey::fixture();
    let emulator = Emulator::new(Config {
        issuers: vec![arm_emulator::config::KnownIssuer {
            issuer: KUBE_ISSUER.into(),
            jwks: key.jwks("sa-key-1"),
        }],
        rbac: true,
        resources: vec![arm_emulator::config::SeedResource {
            id: format!(
                "/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Authorization/roleAssignments/0f8fad5b-d9cb-469f-a165-70867728950e"
            ),
            body: json!({"properties": {
                "roleDefinitionId": format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/8e3af657-a8ff-443c-a75c-2fe8c4bcb635"),
                "principalId": arm_emulator::config::derived_object_id(DEFAULT_CLIENT_ID),
            }}),
        }],
        ..Config::default()
    });
    emulator.seed_resources().unwrap();
    let (client_id, principal_id) = identity_through_arm(
        &emulator,
        &[("capz", KUBE_ISSUER, SERVICE_ACCOUNT, EXCHANGE_AUDIENCE)],
    )
    .await;
    let token = service_account_token(&key, KUBE_ISSUER, SERVICE_ACCOUNT, now() + 3600);
    let reply = with_assertion(&emulator, &client_id, &token).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // With RBAC on, the identity may do nothing until a role is assigned to its principal.
    let access = bearer(reply.body["access_token"].as_str().unwrap());
    let refused = arm_call(&emulator, Some(&access)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "AuthorizationFailed");
    // A role assigned to the identity's principal through ARM applies.
    let assignment = Request::put(format!(
        "/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Authorization/roleAssignments/7b83888d-03fb-55bb-8209-aec4e36328a8?api-version=2022-04-01"
    ))
    .header("host", HOST)
    .header("authorization", bearer(&emulator.access_token(DEFAULT_CLIENT_ID).unwrap()))
    .header("content-type", "application/json")
    .body(Body::from(
        json!({"properties": {
            "roleDefinitionId": format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7"),
            "principalId": principal_id,
        }})
        .to_string(),
    ))
    .unwrap();
    let assigned = call(&emulator, assignment).await;
    assert_eq!(assigned.status, StatusCode::CREATED, "{}", assigned.body);
    assert_eq!(arm_call(&emulator, Some(&access)).await.status, StatusCode::OK);
}

/// Sends a request to the operations API.
async fn admin(emulator: &Emulator, method: &str, path: &str) -> Reply {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", HOST)
        .body(Body::empty())
        .unwrap();
    call(emulator, request).await
}

#[tokio::test]
async fn a_disabled_principal_gets_no_token_and_its_tokens_are_refused_until_enabled() {
    let emulator = Emulator::new(Config::default());
    let secret = [("client_secret", DEFAULT_CLIENT_SECRET)];
    let signed_in = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.body);
    let held = bearer(signed_in.body["access_token"].as_str().unwrap());
    assert_eq!(arm_call(&emulator, Some(&held)).await.status, StatusCode::OK);

    let path = format!("/_emulator/disabled-principals/{DEFAULT_CLIENT_ID}");
    assert_eq!(admin(&emulator, "PUT", &path).await.status, StatusCode::CREATED);
    assert_eq!(admin(&emulator, "PUT", &path).await.status, StatusCode::OK);
    let listed = admin(&emulator, "GET", "/_emulator/disabled-principals").await;
    assert_eq!(
        listed.body,
        json!({"clientIds": [DEFAULT_CLIENT_ID.to_ascii_lowercase()]})
    );
    // The token it holds is refused by ARM, and Entra issues no new one.
    let refused = arm_call(&emulator, Some(&held)).await;
    assert_arm_error(&refused, "InvalidAuthenticationToken");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(DEFAULT_CLIENT_ID),
        "{}",
        refused.body
    );
    let denied = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_entra_error(&denied, StatusCode::BAD_REQUEST, "unauthorized_client", 7_000_112);

    // Enabled again, the held token works and sign-ins succeed.
    assert_eq!(
        admin(&emulator, "DELETE", &path).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        admin(&emulator, "DELETE", &path).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(arm_call(&emulator, Some(&held)).await.status, StatusCode::OK);
    let again = exchange(&emulator, DEFAULT_CLIENT_ID, &secret).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    // A reset enables every principal.
    assert!(emulator.set_principal_disabled(DEFAULT_CLIENT_ID, true));
    emulator.reset().unwrap();
    assert_eq!(emulator.disabled_principals(), [] as [String; 0]);
}
