//! What the integration tests share: an ARM emulator serving HTTPS in-process, a custom cloud
//! pointing at it, its request log, and an RSA key to sign test tokens with.

#![allow(dead_code, reason = "each test crate uses part of the helpers")]

use std::error::Error;
use std::time::Duration;

use arm_emulator::config::{DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_TENANT};
use arm_emulator::{Config, Running};
use azure_core::http::Url;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use capz_azure::{ArmClient, Cloud, Credential, CustomCloud, HttpClient};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair, RsaPublicKeyComponents};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::{Value, json};

pub(crate) type TestResult<T = ()> = Result<T, Box<dyn Error + Send + Sync>>;

/// A PEM with an RSA certificate and its key, made with openssl for these tests.
pub(crate) const CLIENT_CERTIFICATE_PEM: &[u8] = include_bytes!("../fixtures/client-certificate.pem");
/// The same certificate and key as a PKCS#12 archive with OpenSSL 3's defaults (PBES2, AES-256,
/// SHA-256 MAC; password `test-password`).
pub(crate) const CLIENT_CERTIFICATE_PFX: &[u8] = include_bytes!("../fixtures/client-certificate.pfx");
/// The same with `openssl pkcs12 -export -legacy` (3DES key, RC2-40 certificates, SHA-1 MAC), with a
/// CA certificate placed beside it (password `test-password`).
pub(crate) const CLIENT_CERTIFICATE_LEGACY_PFX: &[u8] =
    include_bytes!("../fixtures/client-certificate-legacy.pfx");
/// The same with OpenSSL 3's defaults and an empty password.
pub(crate) const CLIENT_CERTIFICATE_EMPTY_PASSWORD_PFX: &[u8] =
    include_bytes!("../fixtures/client-certificate-empty-password.pfx");

pub(crate) const SUBSCRIPTION: &str = arm_emulator::config::DEFAULT_SUBSCRIPTION;
pub(crate) const TENANT: &str = DEFAULT_TENANT;
pub(crate) const CLIENT_ID: &str = DEFAULT_CLIENT_ID;
pub(crate) const CLIENT_SECRET: &str = DEFAULT_CLIENT_SECRET;
pub(crate) const LOCATION: &str = "westeurope";

/// An emulator serving HTTPS, and a cloud and HTTP client that trust it.
pub(crate) struct Azure {
    pub(crate) running: Running,
    pub(crate) cloud: Cloud,
    pub(crate) http: HttpClient,
    pub(crate) ca_pem: String,
}

/// Starts an emulator with `config` on a free loopback port.
pub(crate) async fn start(config: Config) -> TestResult<Azure> {
    let tls = arm_emulator::tls::Tls::generate(&[])?;
    let running = arm_emulator::start_tls(([127, 0, 0, 1], 0).into(), config, &tls).await?;
    let base = Url::parse(&running.base_url())?;
    let cloud = Cloud::Custom(Box::new(CustomCloud::new(
        base.clone(),
        base,
        "https://management.azure.com/".to_owned(),
        Some(tls.ca_pem.clone().into_bytes()),
    )?));
    let http = cloud.http_client(Duration::from_secs(10))?;
    Ok(Azure {
        running,
        cloud,
        http,
        ca_pem: tls.ca_pem,
    })
}

impl Azure {
    /// The default principal, signing in with its secret.
    pub(crate) fn secret_credential(&self) -> TestResult<Credential> {
        Ok(Credential::client_secret(
            &self.cloud,
            &self.http,
            TENANT,
            CLIENT_ID,
            CLIENT_SECRET,
        )?)
    }

    /// An ARM client of the default principal.
    pub(crate) fn client(&self) -> TestResult<ArmClient> {
        Ok(ArmClient::new(
            &self.cloud,
            self.secret_credential()?,
            &self.http,
            "test",
        ))
    }

    /// The ARM requests the emulator answered, oldest first, without sign-ins.
    pub(crate) fn requests(&self) -> Vec<arm_emulator::LoggedRequest> {
        self.running
            .emulator
            .requests()
            .into_iter()
            .filter(|request| !request.path.ends_with("/token"))
            .collect()
    }
}

/// The claims of a JWT, unverified.
pub(crate) fn claims(token: &str) -> TestResult<Value> {
    let payload = token.split('.').nth(1).ok_or("not a JWT")?;
    Ok(serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload)?)?)
}

/// The fixture's RSA key, to sign service account tokens as a Kubernetes issuer does.
pub(crate) struct Issuer {
    key: RsaKeyPair,
    pub(crate) url: String,
}

impl Issuer {
    pub(crate) fn new(url: &str) -> TestResult<Self> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(CLIENT_CERTIFICATE_PEM)?;
        Ok(Self {
            key: RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).map_err(|err| err.to_string())?,
            url: url.to_owned(),
        })
    }

    /// The issuer's keys as a JWKS document.
    pub(crate) fn jwks(&self) -> Value {
        let public = RsaPublicKeyComponents::<Vec<u8>>::from(self.key.public());
        json!({"keys": [{
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": "test-key",
            "n": URL_SAFE_NO_PAD.encode(public.n), "e": URL_SAFE_NO_PAD.encode(public.e),
        }]})
    }

    /// A service account token for `subject`, valid for an hour.
    pub(crate) fn token(&self, subject: &str) -> TestResult<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs();
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": "test-key"});
        let claims = json!({
            "iss": self.url, "sub": subject, "aud": ["api://AzureADTokenExchange"],
            "iat": now, "nbf": now, "exp": now + 3600,
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                input.as_bytes(),
                &mut signature,
            )
            .map_err(|err| err.to_string())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}
