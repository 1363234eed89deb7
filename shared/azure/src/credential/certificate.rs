//! Client certificates: the certificate and RSA key of a service principal, and the client
//! assertion JWT (RS256) signed with them for each token request.
//!
//! The assertion's header carries the certificate's SHA-256 and SHA-1 thumbprints (`x5t#S256`,
//! `x5t`); its claims are `aud` (the token endpoint the assertion is posted to), `iss` and `sub`
//! (the client id), `jti` (unique per assertion), `iat`, `nbf` and `exp` (ten minutes on).

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use azure_core::error::ErrorKind;
use azure_core::http::ClientMethodOptions;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;

use super::{CLIENT_CERTIFICATE, CredentialError};

/// How long a signed assertion is valid; it is used at once.
const ASSERTION_LIFETIME_SECONDS: u64 = 600;

/// A certificate with its RSA private key. Its `Debug` shows the thumbprint only.
#[derive(Clone)]
pub struct ClientCertificate {
    key: Arc<RsaKeyPair>,
    /// SHA-1 thumbprint, base64url: what Entra registers certificates by.
    x5t: String,
    /// SHA-256 thumbprint, base64url.
    x5t_s256: String,
}

impl fmt::Debug for ClientCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCertificate")
            .field("x5t#S256", &self.x5t_s256)
            .finish_non_exhaustive()
    }
}

impl ClientCertificate {
    /// Reads a certificate and its key, as CAPZ keeps them in an identity's secret: PEM with the
    /// certificate (the first one is used, any others are its chain) and an RSA key (PKCS#8 or
    /// PKCS#1). PKCS#12 (PFX) archives are recognised and refused with a clear error.
    ///
    /// # Errors
    /// When a part is missing, the key is not RSA, or the key does not belong to the certificate.
    pub fn parse(data: &[u8]) -> Result<Self, CredentialError> {
        let invalid = |message: &str| CredentialError::configuration(CLIENT_CERTIFICATE, message);
        if !data.windows(11).any(|window| window == b"-----BEGIN ") {
            // A PKCS#12 archive is DER: a SEQUENCE, so its first byte is 0x30.
            return Err(invalid(if data.first() == Some(&0x30) {
                "PKCS#12 (PFX) certificates are not supported; convert it to PEM \
                 (openssl pkcs12 -in cert.pfx -nodes -out cert.pem) and use that"
            } else {
                "expected a PEM certificate and private key"
            }));
        }
        let certificate = CertificateDer::pem_slice_iter(data)
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| invalid("the PEM holds no certificate"))?;
        let key =
            match PrivateKeyDer::from_pem_slice(data).map_err(|_| invalid("the PEM holds no private key"))? {
                PrivateKeyDer::Pkcs8(key) => RsaKeyPair::from_pkcs8(key.secret_pkcs8_der()),
                PrivateKeyDer::Pkcs1(key) => RsaKeyPair::from_der(key.secret_pkcs1_der()),
                _ => {
                    return Err(invalid(
                        "the private key must be an RSA key: Entra ID takes RSA certificates only",
                    ));
                }
            }
            .map_err(|err| invalid(&format!("the private key is not a usable RSA key ({err})")))?;
        let certificate = Self::new(key, &certificate);
        certificate.check_key_matches(data)?;
        Ok(certificate)
    }

    fn new(key: RsaKeyPair, certificate: &CertificateDer<'_>) -> Self {
        let thumbprint = |algorithm| URL_SAFE_NO_PAD.encode(ring::digest::digest(algorithm, certificate));
        Self {
            key: Arc::new(key),
            x5t: thumbprint(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY),
            x5t_s256: thumbprint(&ring::digest::SHA256),
        }
    }

    /// Signs a probe with the key and checks it against the certificate, so that a certificate
    /// paired with the wrong key fails here, naming the problem, instead of at Entra.
    fn check_key_matches(&self, data: &[u8]) -> Result<(), CredentialError> {
        let mismatch = || {
            CredentialError::configuration(
                CLIENT_CERTIFICATE,
                "the private key does not belong to the certificate",
            )
        };
        let probe = b"capz-rs certificate check";
        let signature = self.sign(probe).map_err(|_| mismatch())?;
        let certificate = CertificateDer::pem_slice_iter(data)
            .next()
            .and_then(Result::ok)
            .ok_or_else(mismatch)?;
        webpki::EndEntityCert::try_from(&certificate)
            .and_then(|cert| {
                cert.verify_signature(webpki::ring::RSA_PKCS1_2048_8192_SHA256, probe, &signature)
            })
            .map_err(|_| mismatch())
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ring::error::Unspecified> {
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut signature)?;
        Ok(signature)
    }
}

/// Signs client assertions for one client and token endpoint.
#[derive(Debug)]
pub(super) struct Assertion {
    certificate: ClientCertificate,
    client_id: String,
    audience: String,
}

impl Assertion {
    pub(super) fn new(certificate: ClientCertificate, client_id: String, audience: String) -> Self {
        Self {
            certificate,
            client_id,
            audience,
        }
    }

    fn jwt(&self, now: u64) -> Result<String, ring::error::Unspecified> {
        let header = json!({
            "alg": "RS256",
            "typ": "JWT",
            "x5t": self.certificate.x5t,
            "x5t#S256": self.certificate.x5t_s256,
        });
        let claims = json!({
            "aud": self.audience,
            "iss": self.client_id,
            "sub": self.client_id,
            "jti": uuid::Uuid::new_v4().to_string(),
            "iat": now,
            "nbf": now,
            "exp": now + ASSERTION_LIFETIME_SECONDS,
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.certificate.sign(input.as_bytes())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

#[async_trait::async_trait]
impl azure_identity::ClientAssertion for Assertion {
    async fn secret(&self, _options: Option<ClientMethodOptions<'_>>) -> azure_core::Result<String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        self.jwt(now).map_err(|_| {
            azure_core::Error::new(
                ErrorKind::Credential,
                CredentialError::configuration(CLIENT_CERTIFICATE, "signing the client assertion failed"),
            )
        })
    }
}
