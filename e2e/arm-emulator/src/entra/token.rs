//! The token endpoint, `POST /{tenant}/oauth2/v2.0/token` (and the v1 `/{tenant}/oauth2/token`):
//! the client credentials grant with a client secret, a certificate-signed assertion or a token of
//! a federated issuer (workload identity).

use std::borrow::Cow;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::{Value, json};

use super::clock::UnixTime;
use super::error::{EntraError, OAuthError};
use super::jwt::Jwt;
use super::{Context, Identity, Proof, v1_token_body};
use crate::Emulator;
use crate::config::{FederatedCredential, Principal};

const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// Clock skew tolerated on the time claims of client assertions, in seconds.
const ASSERTION_LEEWAY: i64 = 300;

/// Which endpoint version answers: they differ in how the resource is named and in the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// `scope={resource}/.default`; numbers in the answer are numbers.
    V2,
    /// `resource={resource}`; the answer has every number as a string, plus `expires_on`.
    V1,
}

pub(crate) async fn v2(
    State(emulator): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(&emulator, &tenant, &headers, &body, Version::V2).await
}

pub(crate) async fn v1(
    State(emulator): State<Emulator>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(&emulator, &tenant, &headers, &body, Version::V1).await
}

async fn respond(
    emulator: &Emulator,
    tenant: &str,
    headers: &HeaderMap,
    body: &[u8],
    version: Version,
) -> Response {
    let context = Context::new(emulator, headers);
    match issue(emulator, &context, tenant, &Form::parse(body), version).await {
        Ok(answer) => context.json(StatusCode::OK, &answer),
        Err(err) => err.into_response(&context),
    }
}

/// A form-encoded request body. Parsing cannot fail: malformed escapes are kept as they are.
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Self {
        Self(form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first non-empty value of a parameter.
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
    }

    fn required(&self, name: &str) -> Result<&str, EntraError> {
        self.get(name).ok_or_else(|| EntraError::missing_parameter(name))
    }
}

async fn issue(
    emulator: &Emulator,
    context: &Context,
    tenant: &str,
    form: &Form,
    version: Version,
) -> Result<Value, EntraError> {
    let entra = &emulator.entra;
    let tenant = entra
        .tenant(tenant)
        .ok_or_else(|| EntraError::tenant_not_found(tenant, OAuthError::InvalidRequest))?;
    let grant_type = form.required("grant_type")?;
    if grant_type != "client_credentials" {
        return Err(EntraError::unsupported_grant_type(grant_type));
    }
    let client_id = form.required("client_id")?;
    let resource = match version {
        Version::V2 => resource_of_scope(form.required("scope")?)?,
        Version::V1 => form.required("resource")?,
    };
    let principal = match entra.principal(tenant, client_id) {
        Some(configured) => Cow::Borrowed(configured),
        None => Cow::Owned(
            managed_identity(emulator, tenant, client_id)
                .ok_or_else(|| EntraError::unknown_application(client_id, tenant))?,
        ),
    };
    let principal = principal.as_ref();
    if entra.is_disabled(&principal.client_id) {
        return Err(EntraError::disabled_application(&principal.client_id));
    }
    let proof = if let Some(secret) = form.get("client_secret") {
        if principal.secret.as_deref() != Some(secret) {
            return Err(EntraError::invalid_secret(&principal.client_id));
        }
        Proof::Secret
    } else if let Some(assertion) = form.get("client_assertion") {
        match form.get("client_assertion_type") {
            Some(JWT_BEARER) => {}
            None => return Err(EntraError::missing_parameter("client_assertion_type")),
            Some(_) => {
                return Err(EntraError::no_credential(&format!(
                    " 'client_assertion_type' must be '{JWT_BEARER}'."
                )));
            }
        }
        let endpoints = token_endpoints(emulator, context, tenant);
        verify_assertion(entra, principal, assertion, &endpoints).await?;
        Proof::Key
    } else {
        return Err(EntraError::no_credential(""));
    };
    let token = entra
        .mint(
            &Identity::of_principal(principal),
            resource,
            proof,
            context.now,
            entra.token_lifetime,
        )
        .map_err(|_| EntraError::transient())?;
    let lifetime = entra.token_lifetime;
    Ok(match version {
        Version::V2 => json!({
            "token_type": "Bearer",
            "expires_in": lifetime,
            "ext_expires_in": lifetime,
            "access_token": token,
        }),
        Version::V1 => v1_token_body(&token, resource, context.now, lifetime),
    })
}

/// The resource of a client credentials scope, `{resource}/.default`. The OpenID scopes MSAL may
/// add are ignored.
fn resource_of_scope(scope: &str) -> Result<&str, EntraError> {
    let mut scopes = scope
        .split_whitespace()
        .filter(|scope| !matches!(*scope, "openid" | "profile" | "offline_access"));
    match (scopes.next(), scopes.next()) {
        (Some(only), None) => only
            .strip_suffix("/.default")
            .filter(|resource| !resource.is_empty())
            .ok_or_else(|| EntraError::invalid_scope(scope)),
        _ => Err(EntraError::invalid_scope(scope)),
    }
}

/// The URLs a client assertion may name as audience: this tenant's token endpoints, at the base
/// the client used and at the configured one.
fn token_endpoints(emulator: &Emulator, context: &Context, tenant: &str) -> Vec<String> {
    [context.base.clone(), emulator.base_url()]
        .iter()
        .flat_map(|base| {
            [
                format!("{base}/{tenant}/oauth2/v2.0/token"),
                format!("{base}/{tenant}/oauth2/token"),
            ]
        })
        .collect()
}

/// Checks a client assertion: signed by the principal's certificate when the principal issued it
/// itself, else a token of a federated issuer the principal trusts.
async fn verify_assertion(
    entra: &super::Entra,
    principal: &Principal,
    assertion: &str,
    endpoints: &[String],
) -> Result<(), EntraError> {
    let jwt = Jwt::parse(assertion).map_err(|err| EntraError::malformed_assertion(&err.to_string()))?;
    if jwt.claims.iss.as_deref() == Some(principal.client_id.as_str()) {
        verify_certificate_assertion(principal, &jwt)?;
        if jwt.claims.sub.as_deref() != Some(principal.client_id.as_str()) {
            return Err(EntraError::subject_mismatch());
        }
        let for_us = jwt.claims.aud.iter().any(|audience| {
            let audience = audience.trim_end_matches('/');
            endpoints
                .iter()
                .any(|endpoint| endpoint.eq_ignore_ascii_case(audience))
        });
        if !for_us {
            return Err(EntraError::audience_mismatch(&jwt.claims.aud));
        }
    } else {
        let credential = federated_credential(principal, &jwt)?;
        let keys = entra
            .issuers
            .keys(credential, jwt.header.kid.as_deref())
            .await
            .map_err(|reason| EntraError::issuer_unreachable(&reason))?;
        keys.verify(&jwt).map_err(|_| EntraError::bad_signature())?;
    }
    // Assertions carry the client's clock, which the emulator's clock skew does not move.
    check_time_range(&jwt, UnixTime::from_system(SystemTime::now()))
}

/// The federated credential a token matches: issuer, subject and audience exactly, as Entra
/// matches them, refusing with the code of the first that does not match.
fn federated_credential<'a>(
    principal: &'a Principal,
    jwt: &Jwt,
) -> Result<&'a FederatedCredential, EntraError> {
    let issuer = jwt.claims.iss.as_deref().unwrap_or_default();
    let subject = jwt.claims.sub.as_deref().unwrap_or_default();
    let of_issuer: Vec<&FederatedCredential> = principal
        .federated
        .iter()
        .filter(|credential| credential.issuer == issuer)
        .collect();
    if of_issuer.is_empty() {
        return Err(EntraError::no_federated_issuer(issuer));
    }
    let of_subject: Vec<&FederatedCredential> = of_issuer
        .iter()
        .copied()
        .filter(|credential| credential.subject == subject)
        .collect();
    if of_subject.is_empty() {
        let in_other_case = of_issuer
            .iter()
            .any(|credential| credential.subject.eq_ignore_ascii_case(subject));
        return Err(EntraError::no_federated_subject(subject, in_other_case));
    }
    of_subject
        .into_iter()
        .find(|credential| jwt.claims.aud.contains(&credential.audience))
        .ok_or_else(|| EntraError::no_federated_audience(&jwt.claims.aud))
}

/// A user-assigned identity made through ARM, as a principal: its client and principal ids, and
/// its federated identity credentials, whose issuers' keys come from the configuration's known
/// issuers or are fetched trusting its issuer CAs.
fn managed_identity(emulator: &Emulator, tenant: &str, client_id: &str) -> Option<Principal> {
    let (key, identity) = emulator.arm_identity(tenant, client_id)?;
    let config = &emulator.config;
    let ca = (!config.issuer_cas.is_empty()).then(|| config.issuer_cas.join("\n"));
    let federated = emulator
        .arm_federated_credentials(&key)
        .into_iter()
        .filter_map(|credential| {
            let properties = &credential["properties"];
            let issuer = properties["issuer"].as_str()?.to_owned();
            let jwks = config
                .issuers
                .iter()
                .find(|known| known.issuer == issuer)
                .map(|known| known.jwks.clone());
            Some(FederatedCredential {
                subject: properties["subject"].as_str()?.to_owned(),
                audience: properties["audiences"][0].as_str()?.to_owned(),
                jwks,
                ca: ca.clone(),
                issuer,
            })
        })
        .collect();
    Some(Principal {
        client_id: identity["properties"]["clientId"].as_str()?.to_owned(),
        tenant: tenant.to_owned(),
        object_id: identity["properties"]["principalId"].as_str().map(str::to_owned),
        secret: None,
        certificate: None,
        federated,
    })
}

fn verify_certificate_assertion(principal: &Principal, jwt: &Jwt) -> Result<(), EntraError> {
    let client_id = principal.client_id.as_str();
    let pem = principal.certificate.as_deref().ok_or_else(|| {
        EntraError::key_not_found(client_id, "The application has no certificate credential.")
    })?;
    let certificate = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|err| {
        EntraError::key_not_found(
            client_id,
            &format!("The registered certificate cannot be read: {err}."),
        )
    })?;
    let (presented, algorithm) = match (&jwt.header.x5t_s256, &jwt.header.x5t) {
        (Some(thumbprint), _) => (thumbprint, &ring::digest::SHA256),
        (None, Some(thumbprint)) => (thumbprint, &ring::digest::SHA1_FOR_LEGACY_USE_ONLY),
        (None, None) => {
            return Err(EntraError::key_not_found(
                client_id,
                "The assertion names no certificate: its header has neither 'x5t' nor 'x5t#S256'.",
            ));
        }
    };
    let registered = URL_SAFE_NO_PAD.encode(ring::digest::digest(algorithm, &certificate));
    // Some clients pad or use the standard alphabet; the key is the same.
    let presented_normalized = presented
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    if presented_normalized != registered {
        return Err(EntraError::key_not_found(
            client_id,
            &format!("The key was not found. Thumbprint of key used by client: '{presented}'."),
        ));
    }
    jwt.verify_with_certificate(&certificate)
        .map_err(|_| EntraError::bad_signature())
}

fn check_time_range(jwt: &Jwt, now: UnixTime) -> Result<(), EntraError> {
    let expiry = jwt.claims.exp.map(UnixTime);
    let not_before = jwt.claims.nbf.map(UnixTime);
    let expired = expiry.is_none_or(|expiry| expiry.plus(ASSERTION_LEEWAY) <= now);
    let early = not_before.is_some_and(|not_before| now.plus(ASSERTION_LEEWAY) < not_before);
    if expired || early {
        return Err(EntraError::outside_time_range(now, not_before, expiry));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Form, resource_of_scope};

    #[test]
    fn scopes_name_one_resource_with_default() {
        assert_eq!(
            resource_of_scope("https://management.azure.com/.default"),
            Ok("https://management.azure.com")
        );
        assert_eq!(
            resource_of_scope("https://management.azure.com//.default offline_access openid"),
            Ok("https://management.azure.com/")
        );
        assert!(resource_of_scope("https://management.azure.com/user_impersonation").is_err());
        assert!(resource_of_scope("a/.default b/.default").is_err());
        assert!(resource_of_scope("/.default").is_err());
        assert!(resource_of_scope("openid").is_err());
    }

    #[test]
    fn forms_decode_and_ignore_empty_values() {
        let form = Form::parse(b"a=&a=1%2B2&b=x+y&%zz=%zz&c");
        assert_eq!(form.get("a"), Some("1+2"));
        assert_eq!(form.get("b"), Some("x y"));
        assert_eq!(form.get("%zz"), Some("%zz"));
        assert_eq!(form.get("c"), None);
        assert!(form.required("d").is_err());
    }
}
