//! JSON Web Tokens in compact form: reading and verifying the ones clients present (RS256, PS256,
//! ES256) and signing the emulator's own access tokens (ES256).

use base64::Engine as _;
use base64::engine::general_purpose::{URL_SAFE_NO_PAD, URL_SAFE_NO_PAD_INDIFFERENT};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _, RsaPublicKeyComponents, UnparsedPublicKey};
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Why a token cannot be read or is not signed by the key it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JwtError {
    #[error("it is not a JWT (three base64url parts separated by dots)")]
    Malformed,
    #[error("its {part} is not the JSON expected: {reason}")]
    Json { part: &'static str, reason: String },
    #[error("its signing algorithm '{0}' is not supported (RS256, PS256 and ES256 are)")]
    UnsupportedAlgorithm(String),
    #[error("its signature does not verify")]
    BadSignature,
}

/// The signature algorithms accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    Rs256,
    Ps256,
    Es256,
}

impl Algorithm {
    fn from_name(name: &str) -> Result<Self, JwtError> {
        match name {
            "RS256" => Ok(Self::Rs256),
            "PS256" => Ok(Self::Ps256),
            "ES256" => Ok(Self::Es256),
            other => Err(JwtError::UnsupportedAlgorithm(other.to_owned())),
        }
    }
}

/// The JOSE header fields the emulator looks at.
#[derive(Debug, Deserialize)]
pub(crate) struct Header {
    alg: String,
    #[serde(default)]
    pub(crate) kid: Option<String>,
    /// SHA-1 thumbprint of the signing certificate, base64url.
    #[serde(default)]
    pub(crate) x5t: Option<String>,
    /// SHA-256 thumbprint of the signing certificate, base64url.
    #[serde(default, rename = "x5t#S256")]
    pub(crate) x5t_s256: Option<String>,
}

/// The registered claims the emulator looks at, plus the Entra ones of its own access tokens.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Claims {
    #[serde(default)]
    pub(crate) iss: Option<String>,
    #[serde(default)]
    pub(crate) sub: Option<String>,
    /// `aud` is a string or an array of strings.
    #[serde(default, deserialize_with = "one_or_many")]
    pub(crate) aud: Vec<String>,
    #[serde(default, deserialize_with = "numeric_date")]
    pub(crate) exp: Option<i64>,
    #[serde(default, deserialize_with = "numeric_date")]
    pub(crate) nbf: Option<i64>,
    #[serde(default)]
    pub(crate) tid: Option<String>,
    #[serde(default)]
    pub(crate) oid: Option<String>,
    #[serde(default)]
    pub(crate) appid: Option<String>,
}

fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// A NumericDate: seconds since the epoch, which may have a fraction (MSAL for Python sends one).
fn numeric_date<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "whole seconds are enough; the cast saturates on out-of-range values"
    )]
    Ok(Option::<f64>::deserialize(deserializer)?.map(|seconds| seconds.floor() as i64))
}

/// A JWT read from its compact form; its signature is not checked yet.
#[derive(Debug)]
pub(crate) struct Jwt {
    pub(crate) header: Header,
    pub(crate) claims: Claims,
    algorithm: Algorithm,
    signing_input: String,
    signature: Vec<u8>,
}

impl Jwt {
    /// Reads a compact JWS.
    ///
    /// # Errors
    /// Names what is wrong: the layout, the base64, the JSON or an unsupported algorithm.
    pub(crate) fn parse(token: &str) -> Result<Self, JwtError> {
        let (signing_input, signature) = token.rsplit_once('.').ok_or(JwtError::Malformed)?;
        let (header, claims) = signing_input.split_once('.').ok_or(JwtError::Malformed)?;
        let header: Header = json_part("header", header)?;
        let algorithm = Algorithm::from_name(&header.alg)?;
        let claims: Claims = json_part("claims set", claims)?;
        Ok(Self {
            header,
            claims,
            algorithm,
            signing_input: signing_input.to_owned(),
            signature: decode(signature)?,
        })
    }

    /// Checks the signature against a JSON Web Key.
    pub(crate) fn verify_with_jwk(&self, key: &Jwk) -> Result<(), JwtError> {
        let message = self.signing_input.as_bytes();
        let verified = match (self.algorithm, key.kty.as_str()) {
            (Algorithm::Rs256 | Algorithm::Ps256, "RSA") => {
                let (Some(n), Some(e)) = (&key.n, &key.e) else {
                    return Err(JwtError::BadSignature);
                };
                let components = RsaPublicKeyComponents {
                    n: decode(n)?,
                    e: decode(e)?,
                };
                let parameters = if self.algorithm == Algorithm::Rs256 {
                    &signature::RSA_PKCS1_2048_8192_SHA256
                } else {
                    &signature::RSA_PSS_2048_8192_SHA256
                };
                components.verify(parameters, message, &self.signature)
            }
            (Algorithm::Es256, "EC") if key.crv.as_deref() == Some("P-256") => {
                let (Some(x), Some(y)) = (&key.x, &key.y) else {
                    return Err(JwtError::BadSignature);
                };
                // An uncompressed SEC1 point: 0x04, then x and y.
                let mut point = vec![0x04];
                point.extend(decode(x)?);
                point.extend(decode(y)?);
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, &self.signature)
            }
            _ => return Err(JwtError::BadSignature),
        };
        verified.map_err(|_| JwtError::BadSignature)
    }

    /// Checks the signature against the public key of an X.509 certificate (DER). Entra takes
    /// RSA certificates only, so RS256 and PS256.
    pub(crate) fn verify_with_certificate(&self, certificate: &CertificateDer<'_>) -> Result<(), JwtError> {
        let algorithm = match self.algorithm {
            Algorithm::Rs256 => webpki::ring::RSA_PKCS1_2048_8192_SHA256,
            Algorithm::Ps256 => webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
            Algorithm::Es256 => return Err(JwtError::UnsupportedAlgorithm("ES256".into())),
        };
        webpki::EndEntityCert::try_from(certificate)
            .and_then(|cert| cert.verify_signature(algorithm, self.signing_input.as_bytes(), &self.signature))
            .map_err(|_| JwtError::BadSignature)
    }
}

fn decode(part: &str) -> Result<Vec<u8>, JwtError> {
    URL_SAFE_NO_PAD_INDIFFERENT
        .decode(part)
        .map_err(|_| JwtError::Malformed)
}

fn json_part<T: serde::de::DeserializeOwned>(part: &'static str, encoded: &str) -> Result<T, JwtError> {
    serde_json::from_slice(&decode(encoded)?).map_err(|err| JwtError::Json {
        part,
        reason: err.to_string(),
    })
}

/// A JSON Web Key: the public half of a signing key, as JWKS documents list them.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct Jwk {
    pub(crate) kty: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kid: Option<String>,
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    alg: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crv: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    x: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    y: Option<String>,
}

/// A JWKS document.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct Jwks {
    pub(crate) keys: Vec<Jwk>,
}

impl Jwks {
    /// Whether the set has the key a token names; a token naming no key may be signed by any.
    pub(crate) fn has(&self, kid: Option<&str>) -> bool {
        kid.is_none_or(|kid| self.keys.iter().any(|key| key.kid.as_deref() == Some(kid)))
    }

    /// Checks a token against the key it names, or against every key when it names none.
    pub(crate) fn verify(&self, jwt: &Jwt) -> Result<(), JwtError> {
        let kid = jwt.header.kid.as_deref();
        let mut candidates = self
            .keys
            .iter()
            .filter(|key| kid.is_none() || key.kid.as_deref() == kid);
        if candidates.any(|key| jwt.verify_with_jwk(key).is_ok()) {
            Ok(())
        } else {
            Err(JwtError::BadSignature)
        }
    }
}

/// The emulator's token signing key: ECDSA P-256, made at start. Clients treat access tokens as
/// opaque, so the algorithm differs from Entra's RS256 without consequence.
pub(crate) struct Signer {
    key_pair: EcdsaKeyPair,
    jwk: Jwk,
    rng: SystemRandom,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.jwk.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// Makes a fresh key.
    pub(crate) fn generate() -> Result<Self, ring::error::Unspecified> {
        let rng = SystemRandom::new();
        let algorithm = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(algorithm, &rng)?;
        let key_pair = EcdsaKeyPair::from_pkcs8(algorithm, pkcs8.as_ref(), &rng)
            .map_err(|_| ring::error::Unspecified)?;
        // The public key is an uncompressed point: 0x04, x (32 bytes), y (32 bytes).
        let point = key_pair.public_key().as_ref();
        let (x, y) = point.get(1..).ok_or(ring::error::Unspecified)?.split_at(32);
        let digest = ring::digest::digest(&ring::digest::SHA256, point);
        let jwk = Jwk {
            kty: "EC".into(),
            kid: Some(URL_SAFE_NO_PAD.encode(digest.as_ref().get(..16).unwrap_or_default())),
            usage: Some("sig".into()),
            alg: Some("ES256".into()),
            n: None,
            e: None,
            crv: Some("P-256".into()),
            x: Some(URL_SAFE_NO_PAD.encode(x)),
            y: Some(URL_SAFE_NO_PAD.encode(y)),
        };
        Ok(Self { key_pair, jwk, rng })
    }

    /// The public key, as the JWKS endpoints publish it.
    pub(crate) fn jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// Signs `claims` into a compact JWT.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, ring::error::Unspecified> {
        let header = serde_json::json!({ "typ": "JWT", "alg": "ES256", "kid": self.jwk.kid });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.key_pair.sign(&self.rng, signing_input.as_bytes())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Jwks, Jwt, JwtError, Signer};

    #[test]
    fn a_signed_token_verifies_with_its_key_only() {
        let signer = Signer::generate().unwrap();
        let token = signer
            .sign(&json!({"aud": ["a", "b"], "exp": 5, "nbf": 1.75, "tid": "t"}))
            .unwrap();
        let jwt = Jwt::parse(&token).unwrap();
        assert_eq!(jwt.claims.aud, ["a", "b"]);
        assert_eq!((jwt.claims.exp, jwt.claims.nbf), (Some(5), Some(1)));
        let own = Jwks {
            keys: vec![signer.jwk().clone()],
        };
        assert_eq!(own.verify(&jwt), Ok(()));
        let other = Jwks {
            keys: vec![Signer::generate().unwrap().jwk().clone()],
        };
        // The other key has another kid, so nothing is even tried.
        assert_eq!(other.verify(&jwt), Err(JwtError::BadSignature));
        assert!(!other.has(jwt.header.kid.as_deref()));
        let mut forged = other.keys[0].clone();
        forged.kid.clone_from(&jwt.header.kid);
        assert_eq!(jwt.verify_with_jwk(&forged), Err(JwtError::BadSignature));
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert_eq!(Jwt::parse("abc").unwrap_err(), JwtError::Malformed);
        assert_eq!(Jwt::parse("a.b.c").unwrap_err(), JwtError::Malformed);
        assert_eq!(Jwt::parse("a.b.c.d").unwrap_err(), JwtError::Malformed);
        // {"alg":"none"}
        let none = Jwt::parse("eyJhbGciOiJub25lIn0.e30.").unwrap_err();
        assert_eq!(none, JwtError::UnsupportedAlgorithm("none".into()));
        // {"alg":"RS256"} . {"exp":"soon"}
        let bad_exp = Jwt::parse("eyJhbGciOiJSUzI1NiJ9.eyJleHAiOiJzb29uIn0.AA").unwrap_err();
        assert!(
            matches!(
                bad_exp,
                JwtError::Json {
                    part: "claims set",
                    ..
                }
            ),
            "{bad_exp:?}"
        );
    }
}
