//! Errors in the shape Microsoft Entra answers OAuth requests with: an OAuth `error`, an
//! `error_description` starting with the AADSTS code, and the codes, trace and correlation ids.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::Context;
use super::clock::UnixTime;

/// The OAuth 2.0 `error` values the emulator answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OAuthError {
    InvalidRequest,
    InvalidClient,
    UnauthorizedClient,
    InvalidScope,
    UnsupportedGrantType,
    InvalidTenant,
    TemporarilyUnavailable,
}

impl OAuthError {
    fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::InvalidScope => "invalid_scope",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::InvalidTenant => "invalid_tenant",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

/// An Entra error answer: status, OAuth error, AADSTS code and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntraError {
    status: StatusCode,
    error: OAuthError,
    code: u32,
    description: String,
}

impl EntraError {
    fn new(status: StatusCode, error: OAuthError, code: u32, description: impl Into<String>) -> Self {
        Self {
            status,
            error,
            code,
            description: description.into(),
        }
    }

    fn bad_request(error: OAuthError, code: u32, description: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, code, description)
    }

    fn invalid_client(code: u32, description: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            OAuthError::InvalidClient,
            code,
            description,
        )
    }

    /// A tenant the emulator does not know; the token endpoint calls it an invalid request,
    /// the discovery documents an invalid tenant.
    pub(crate) fn tenant_not_found(tenant: &str, error: OAuthError) -> Self {
        Self::bad_request(
            error,
            90002,
            format!(
                "Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are \
                 signing into the correct cloud."
            ),
        )
    }

    pub(crate) fn missing_parameter(name: &str) -> Self {
        Self::bad_request(
            OAuthError::InvalidRequest,
            900_144,
            format!("The request body must contain the following parameter: '{name}'."),
        )
    }

    pub(crate) fn unsupported_grant_type(grant_type: &str) -> Self {
        Self::bad_request(
            OAuthError::UnsupportedGrantType,
            70003,
            format!(
                "The app requested an unsupported grant type '{grant_type}'; the emulator serves \
                 'client_credentials'."
            ),
        )
    }

    pub(crate) fn invalid_scope(scope: &str) -> Self {
        Self::bad_request(
            OAuthError::InvalidScope,
            70011,
            format!(
                "The provided value for the input parameter 'scope' is not valid. The scope '{scope}' \
                 is not valid: client credential flows need one scope, the resource identifier \
                 followed by '/.default'."
            ),
        )
    }

    pub(crate) fn unknown_application(client_id: &str, tenant: &str) -> Self {
        Self::bad_request(
            OAuthError::UnauthorizedClient,
            700_016,
            format!(
                "Application with identifier '{client_id}' was not found in the directory '{tenant}'. \
                 You may have sent your authentication request to the wrong tenant."
            ),
        )
    }

    /// The application exists but an administrator disabled it.
    pub(crate) fn disabled_application(client_id: &str) -> Self {
        Self::bad_request(
            OAuthError::UnauthorizedClient,
            7_000_112,
            format!("Application '{client_id}' is disabled."),
        )
    }

    pub(crate) fn invalid_secret(client_id: &str) -> Self {
        Self::invalid_client(
            7_000_215,
            format!(
                "Invalid client secret provided. Ensure the secret being sent in the request is the \
                 client secret value, not the client secret ID, for a secret added to app '{client_id}'."
            ),
        )
    }

    pub(crate) fn no_credential(note: &str) -> Self {
        Self::invalid_client(
            7_000_218,
            format!(
                "The request body must contain the following parameter: 'client_assertion' or \
                 'client_secret'.{note}"
            ),
        )
    }

    pub(crate) fn malformed_assertion(reason: &str) -> Self {
        Self::bad_request(
            OAuthError::InvalidRequest,
            50027,
            format!("JWT token is invalid or malformed: {reason}."),
        )
    }

    pub(crate) fn key_not_found(client_id: &str, reason: &str) -> Self {
        Self::invalid_client(
            700_027,
            format!(
                "The certificate used to sign the client assertion is not registered on application \
                 '{client_id}'. [Reason - {reason}]"
            ),
        )
    }

    pub(crate) fn bad_signature() -> Self {
        Self::invalid_client(700_027, "Client assertion failed signature validation.")
    }

    pub(crate) fn subject_mismatch() -> Self {
        Self::invalid_client(
            700_021,
            "Client assertion application identifier doesn't match 'client_id' parameter.",
        )
    }

    pub(crate) fn audience_mismatch(audiences: &[String]) -> Self {
        Self::invalid_client(
            700_023,
            format!(
                "Client assertion audience claim does not match Realm issuer. The assertion is for \
                 '{}'; it must be the token endpoint it is sent to.",
                audiences.join("', '")
            ),
        )
    }

    pub(crate) fn outside_time_range(
        now: UnixTime,
        not_before: Option<UnixTime>,
        expiry: Option<UnixTime>,
    ) -> Self {
        let show = |time: Option<UnixTime>| time.map_or_else(|| "(none)".to_owned(), UnixTime::iso);
        Self::invalid_client(
            700_024,
            format!(
                "Client assertion is not within its valid time range. Current time: {}, assertion \
                 valid from {}, expiry time of assertion {}.",
                now.iso(),
                show(not_before),
                show(expiry)
            ),
        )
    }

    pub(crate) fn no_federated_issuer(issuer: &str) -> Self {
        Self::invalid_client(
            700_211,
            format!(
                "No matching federated identity record found for presented assertion issuer '{issuer}'. Please check your federated identity credential Subject, Audience and Issuer against the presented assertion."
            ),
        )
    }

    pub(crate) fn no_federated_subject(subject: &str, differs_in_case_only: bool) -> Self {
        if differs_in_case_only {
            return Self::invalid_client(
                7_002_138,
                format!(
                    "No matching federated identity record found for presented assertion subject '{subject}'. The subject matches with case-insensitive comparison, but not with case-sensitive comparison."
                ),
            );
        }
        Self::invalid_client(
            700_213,
            format!(
                "No matching federated identity record found for presented assertion subject '{subject}'."
            ),
        )
    }

    pub(crate) fn no_federated_audience(audiences: &[String]) -> Self {
        Self::invalid_client(
            700_212,
            format!(
                "No matching federated identity record found for presented assertion audience '{}'.",
                audiences.join(",")
            ),
        )
    }

    pub(crate) fn issuer_unreachable(reason: &str) -> Self {
        Self::bad_request(
            OAuthError::InvalidRequest,
            50166,
            format!("Request to External OIDC endpoint failed: {reason}."),
        )
    }

    pub(crate) fn transient() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            OAuthError::TemporarilyUnavailable,
            90033,
            "A transient error has occurred: the emulator could not sign the token. Please try again.",
        )
    }

    /// A failure a fault rule asks for: throttling (429) or the service failing (5xx).
    pub(crate) fn injected(status: StatusCode, description: String) -> Self {
        Self::new(status, OAuthError::TemporarilyUnavailable, 90033, description)
    }

    /// The answer, stamped with the request's correlation id and a fresh trace id.
    pub(crate) fn into_response(self, context: &Context) -> Response {
        let code = self.code;
        let timestamp = context.now.entra();
        let trace_id = context.trace_id.as_str();
        let correlation_id = context.correlation_id.as_str();
        let body = json!({
            "error": self.error.as_str(),
            "error_description": format!(
                "AADSTS{code}: {} Trace ID: {trace_id} Correlation ID: {correlation_id} Timestamp: {timestamp}",
                self.description
            ),
            "error_codes": [code],
            "timestamp": timestamp,
            "trace_id": trace_id,
            "correlation_id": correlation_id,
            "error_uri": format!("{}/error?code={code}", context.base),
        });
        context.json(self.status, &body)
    }
}
