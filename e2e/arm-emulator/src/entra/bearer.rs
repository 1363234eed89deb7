//! The bearer token check in front of every ARM call, with ARM's error codes and challenge.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, StatusCode, header};
use serde::Serialize;

use super::Entra;
use super::clock::UnixTime;
use super::jwt::{Claims, Jwks, Jwt};
use crate::ArmError;

/// How many verified tokens are remembered; past that the memory starts over.
const VERIFIED_CAPACITY: usize = 4096;

/// Tokens this emulator's key verified, with their claims. The signing key lives as long as the
/// emulator, so a token that verified once verifies again; checking an ECDSA signature costs more
/// than answering most ARM calls, and clients send the same token for an hour. Only the
/// signature check is skipped: expiry, audience and tenant are checked on every call.
#[derive(Debug, Default)]
pub(crate) struct Verified(Mutex<HashMap<Box<str>, Arc<Claims>>>);

impl Verified {
    fn get(&self, token: &str) -> Option<Arc<Claims>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(token)
            .cloned()
    }

    fn insert(&self, token: &str, claims: Arc<Claims>) {
        let mut tokens = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if tokens.len() >= VERIFIED_CAPACITY {
            tokens.clear();
        }
        tokens.insert(token.into(), claims);
    }
}

/// Audiences ARM accepts besides the emulator's own base URL (compared without trailing slash).
const ARM_AUDIENCES: [&str; 2] = [
    "https://management.azure.com",
    "https://management.core.windows.net",
];

/// A refused ARM call: ARM's 401 error, and the `WWW-Authenticate` challenge to send with it,
/// which tells the client the authority (`{login endpoint}/{tenant}`) to get a token from.
#[derive(Debug)]
pub(crate) struct Unauthenticated {
    pub(crate) error: ArmError,
    pub(crate) challenge: String,
}

impl Unauthenticated {
    fn new(code: &'static str, message: String, authorization_uri: &str) -> Self {
        // The description goes in a quoted string of a header: no quotes, only printable ASCII.
        let description: String = message
            .chars()
            .map(|c| match c {
                '"' | '\\' => '\'',
                c if c == ' ' || c.is_ascii_graphic() => c,
                _ => '?',
            })
            .collect();
        let challenge = format!(
            "Bearer authorization_uri=\"{authorization_uri}\", error=\"invalid_token\", error_description=\"{description}\""
        );
        Self {
            error: ArmError::new(StatusCode::UNAUTHORIZED, code, message),
            challenge,
        }
    }
}

/// Who made an authenticated ARM call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Caller {
    /// The object id of the principal or managed identity (the token's `oid`).
    pub object_id: String,
    /// Its application (client) id (`appid`).
    pub client_id: String,
    /// The tenant the token was issued in (`tid`).
    pub tenant: String,
}

impl Entra {
    /// Checks the `Authorization` header of an ARM request at `path` against the tokens this
    /// emulator issues, at time `now`; `authority` is the base URL the challenge sends clients to.
    pub(crate) fn authenticate(
        &self,
        path: &str,
        headers: &HeaderMap,
        now: UnixTime,
        authority: &str,
    ) -> Result<Caller, Unauthenticated> {
        let subscription_tenant = self.subscription_tenant(path);
        // Where the challenge sends the client: the subscription's tenant, as ARM does, so that
        // clients can discover it; else the first configured tenant.
        let challenge_tenant = subscription_tenant
            .or_else(|| self.tenants.first().map(String::as_str))
            .unwrap_or("common");
        let refuse = |code: &'static str, message: String| {
            Unauthenticated::new(code, message, &format!("{authority}/{challenge_tenant}"))
        };
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(refuse(
                "AuthenticationFailed",
                "Authentication failed. The 'Authorization' header is missing.".into(),
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                refuse(
                    "AuthenticationFailed",
                    "Authentication failed. The 'Authorization' header is provided in an invalid format."
                        .into(),
                )
            })?;
        let invalid = |reason: String| {
            refuse(
                "InvalidAuthenticationToken",
                format!("The access token is invalid: {reason}."),
            )
        };
        let claims = if let Some(claims) = self.verified.get(token) {
            claims
        } else {
            let jwt = Jwt::parse(token).map_err(|err| invalid(err.to_string()))?;
            let own_keys = Jwks {
                keys: self.signer.iter().map(|signer| signer.jwk().clone()).collect(),
            };
            own_keys
                .verify(&jwt)
                .map_err(|_| invalid("it is not signed by this emulator's Microsoft Entra ID".into()))?;
            let claims = Arc::new(jwt.claims);
            self.verified.insert(token, claims.clone());
            claims
        };
        let (Some(expiry), Some(object_id), Some(client_id), Some(tenant)) =
            (claims.exp, &claims.oid, &claims.appid, &claims.tid)
        else {
            return Err(invalid(
                "it lacks one of the claims exp, oid, appid and tid".into(),
            ));
        };
        if expiry <= now.0 {
            return Err(refuse(
                "ExpiredAuthenticationToken",
                format!(
                    "The access token expiry UTC time '{}' is earlier than current UTC time '{}'.",
                    UnixTime(expiry).dotnet(),
                    now.dotnet()
                ),
            ));
        }
        let accepted = |audience: &str| {
            let audience = audience.trim_end_matches('/');
            ARM_AUDIENCES
                .iter()
                .chain(&[authority])
                .any(|accepted| accepted.eq_ignore_ascii_case(audience))
        };
        if !claims.aud.iter().any(|audience| accepted(audience)) {
            return Err(refuse(
                "InvalidAuthenticationTokenAudience",
                format!(
                    "The access token has been obtained for wrong audience or resource '{}'. It should \
                     exactly match with one of the allowed audiences '{}'.",
                    claims.aud.join(","),
                    ARM_AUDIENCES.join("','")
                ),
            ));
        }
        // ARM stops honouring a disabled principal's tokens; Entra issues it no new one.
        self.check_enabled(client_id).map_err(invalid)?;
        if let Some(expected) = subscription_tenant
            && !expected.eq_ignore_ascii_case(tenant)
        {
            return Err(refuse(
                "InvalidAuthenticationTokenTenant",
                format!(
                    "The access token is from the wrong issuer 'https://sts.windows.net/{tenant}/'. It must \
                     match the tenant 'https://sts.windows.net/{expected}/' associated with this \
                     subscription. Please use the authority (URL) '{authority}/{expected}' to get the token."
                ),
            ));
        }
        Ok(Caller {
            object_id: object_id.clone(),
            client_id: client_id.clone(),
            tenant: tenant.clone(),
        })
    }

    /// The tenant of the configured subscription a path lies under.
    fn subscription_tenant(&self, path: &str) -> Option<&str> {
        let mut segments = path.split('/').filter(|segment| !segment.is_empty());
        let id = match (segments.next(), segments.next()) {
            (Some(first), Some(id)) if first.eq_ignore_ascii_case("subscriptions") => id,
            _ => return None,
        };
        self.subscriptions
            .iter()
            .find(|subscription| subscription.id.eq_ignore_ascii_case(id))
            .map(|subscription| subscription.tenant.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Unauthenticated;

    #[test]
    fn the_challenge_stays_a_valid_header() {
        let refusal = Unauthenticated::new(
            "InvalidAuthenticationToken",
            "a \"b\" \\ é\n".into(),
            "https://e/t",
        );
        assert_eq!(
            refusal.challenge,
            "Bearer authorization_uri=\"https://e/t\", error=\"invalid_token\", error_description=\"a 'b' ' ??\""
        );
        assert_eq!(refusal.error.message, "a \"b\" \\ é\n");
        assert!(axum::http::HeaderValue::from_str(&refusal.challenge).is_ok());
    }
}
