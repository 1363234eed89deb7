//! Errors in the shape Azure Resource Manager answers with: `{"error": {"code", "message"}}`.

use axum::http::StatusCode;

/// An ARM error answer: an HTTP status, Azure's error code and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ArmError {
    /// HTTP status of the answer.
    pub status: StatusCode,
    /// Azure's error code, for example `ResourceGroupNotFound`.
    pub code: &'static str,
    /// The message, naming what is wrong.
    pub message: String,
}

impl ArmError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// A request without the `api-version` query parameter.
    pub(crate) fn missing_api_version() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )
    }

    /// An `api-version` the resource type does not serve.
    pub(crate) fn unsupported_api_version(version: &str, resource_type: &str, supported: &[&str]) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
            format!(
                "The api-version '{version}' is invalid for resource type '{resource_type}'. \
                 The supported versions are '{}'.",
                supported.join(",")
            ),
        )
    }

    /// A resource group that does not exist.
    pub(crate) fn resource_group_not_found(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ResourceGroupNotFound",
            format!("Resource group '{name}' could not be found."),
        )
    }

    /// A path the emulator does not serve.
    pub(crate) fn no_route(method: &str, path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
            format!("The emulator serves no resource at {method} {path}."),
        )
    }

    /// A request body that is not valid JSON or misses a required property.
    pub(crate) fn invalid_request_content(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "InvalidRequestContent", message)
    }

    /// An operation status that does not exist (any more).
    pub(crate) fn operation_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "OperationNotFound",
            format!("The operation '{id}' could not be found."),
        )
    }

    /// A method the path does not support.
    pub(crate) fn method_not_allowed(method: &str) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("The requested method '{method}' is not allowed for this resource."),
        )
    }
}
