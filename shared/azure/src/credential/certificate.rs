//! Client certificates: the certificate and RSA key of a service principal, read from PEM or from
//! a PKCS#12 (PFX) archive, and the client assertion JWT (RS256) signed with them for each token
//! request.
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

use super::error::{CLIENT_CERTIFICATE, CredentialError};

mod pkcs12;

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
    /// Reads a certificate and its key from PEM, or from a PKCS#12 (PFX) archive without a
    /// password; see [`ClientCertificate::parse_with_password`].
    ///
    /// # Errors
    /// As [`ClientCertificate::parse_with_password`].
    pub fn parse(data: &[u8]) -> Result<Self, CredentialError> {
        Self::parse_with_password(data, "")
    }

    /// Reads a certificate and its RSA key, in either form CAPZ users keep them:
    ///
    /// - PEM: certificates (the service principal's, possibly with its chain) and an unencrypted
    ///   RSA key (PKCS#8 or PKCS#1); `password` is not used;
    /// - PKCS#12 (PFX), as `openssl pkcs12 -export` (with or without `-legacy`) and Windows write
    ///   it, protected by `password` (empty for none). Its MAC is checked first, so a wrong
    ///   password is reported as such.
    ///
    /// The certificate used is the one the key belongs to; the others are its chain.
    ///
    /// # Errors
    /// When a part is missing, the password is wrong, the key is not RSA, or no certificate
    /// belongs to the key.
    pub fn parse_with_password(data: &[u8], password: &str) -> Result<Self, CredentialError> {
        let invalid = |message: &str| CredentialError::configuration(CLIENT_CERTIFICATE, message);
        let (certificates, key) = if data.windows(11).any(|window| window == b"-----BEGIN ") {
            let certificates: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(data)
                .filter_map(Result::ok)
                .collect();
            if certificates.is_empty() {
                return Err(invalid("the PEM holds no certificate"));
            }
            let key = match PrivateKeyDer::from_pem_slice(data)
                .map_err(|_| invalid("the PEM holds no private key"))?
            {
                PrivateKeyDer::Pkcs8(key) => RsaKeyPair::from_pkcs8(key.secret_pkcs8_der()),
                PrivateKeyDer::Pkcs1(key) => RsaKeyPair::from_der(key.secret_pkcs1_der()),
                _ => return Err(invalid(NOT_RSA)),
            };
            (certificates, key)
        } else if data.first() == Some(&0x30) {
            // DER starts with a SEQUENCE: a PKCS#12 archive.
            let contents = pkcs12::read(data, password)
                .map_err(|message| invalid(&format!("cannot read the PKCS#12 (PFX) archive: {message}")))?;
            let key = contents
                .keys
                .first()
                .ok_or_else(|| invalid("the PKCS#12 (PFX) archive holds no private key"))?;
            let certificates: Vec<CertificateDer<'_>> = contents
                .certificates
                .into_iter()
                .map(CertificateDer::from)
                .collect();
            if certificates.is_empty() {
                return Err(invalid("the PKCS#12 (PFX) archive holds no certificate"));
            }
            (certificates, RsaKeyPair::from_pkcs8(key))
        } else {
            return Err(invalid(
                "expected a PEM certificate and private key, or a PKCS#12 (PFX) archive",
            ));
        };
        let key = key.map_err(|err| {
            let reason = err.to_string();
            invalid(&if reason == "WrongAlgorithm" {
                NOT_RSA.to_owned()
            } else {
                format!("the private key is not a usable RSA key ({reason})")
            })
        })?;
        let certificate = certificates
            .iter()
            .find(|certificate| key_matches(&key, certificate))
            .ok_or_else(|| invalid("the private key does not belong to the certificate"))?;
        Ok(Self::new(key, certificate))
    }

    fn new(key: RsaKeyPair, certificate: &CertificateDer<'_>) -> Self {
        let thumbprint = |algorithm| URL_SAFE_NO_PAD.encode(ring::digest::digest(algorithm, certificate));
        Self {
            key: Arc::new(key),
            x5t: thumbprint(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY),
            x5t_s256: thumbprint(&ring::digest::SHA256),
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, ring::error::Unspecified> {
        sign(&self.key, message)
    }
}

const NOT_RSA: &str = "the private key must be an RSA key: Entra ID takes RSA certificates only";

fn sign(key: &RsaKeyPair, message: &[u8]) -> Result<Vec<u8>, ring::error::Unspecified> {
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut signature)?;
    Ok(signature)
}

/// Whether `certificate` carries the public half of `key`: a probe signed with the key must verify
/// with the certificate, so that a certificate paired with the wrong key fails here, naming the
/// problem, instead of at Entra.
fn key_matches(key: &RsaKeyPair, certificate: &CertificateDer<'_>) -> bool {
    let probe = b"capz-rs certificate check";
    sign(key, probe).is_ok_and(|signature| {
        webpki::EndEntityCert::try_from(certificate)
            .and_then(|cert| {
                cert.verify_signature(webpki::ring::RSA_PKCS1_2048_8192_SHA256, probe, &signature)
            })
            .is_ok()
    })
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
