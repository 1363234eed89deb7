//! Errors in the shape Azure Resource Manager answers with: `{"error": {"code", "message"}}`.

use std::borrow::Cow;

use axum::http::StatusCode;

/// An ARM error answer: an HTTP status, Azure's error code and a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ArmError {
    /// HTTP status of the answer.
    pub status: StatusCode,
    /// Azure's error code, for example `ResourceGroupNotFound`.
    pub code: Cow<'static, str>,
    /// The message, naming what is wrong.
    pub message: String,
    /// Further errors; resource providers that send a (possibly empty) list have `Some`.
    pub details: Option<Vec<serde_json::Value>>,
    /// Whether the answer is unwrapped, with a `subcode`, as the AKS resource provider words
    /// its own errors: `{"code", "details", "message", "subcode"}`.
    pub unwrapped: bool,
    /// What the error is about, for providers that name it (the id of a missing source).
    pub target: Option<Box<str>>,
}

impl ArmError {
    pub(crate) fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            details: None,
            unwrapped: false,
            target: None,
        }
    }

    /// An error the AKS resource provider answers itself.
    pub(crate) fn container_service(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            unwrapped: true,
            ..Self::new(status, code, message)
        }
    }

    /// The error naming what it is about.
    #[must_use]
    pub(crate) fn with_target(self, target: impl Into<String>) -> Self {
        Self {
            target: Some(target.into().into_boxed_str()),
            ..self
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

    /// An `api-version` that Microsoft.Resources (resource groups, subscriptions, tenants) does
    /// not serve.
    pub(crate) fn unsupported_api_version(version: &str, supported: &[&str]) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "InvalidApiVersionParameter",
            format!(
                "The api-version '{version}' is invalid. The supported versions are '{}'.",
                supported.join(",")
            ),
        )
    }

    /// An `api-version` a resource provider's type does not serve: ARM finds no provider
    /// registered for it. `type_name` is the type without its namespace (`virtualNetworks/subnets`).
    pub(crate) fn no_registered_provider(
        version: &str,
        type_name: &str,
        supported: &[&str],
        location: &str,
        locations: &[&str],
    ) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            format!(
                "No registered resource provider found for location '{location}' and API version '{version}' for type '{type_name}'. The supported api-versions are '{}'. The supported locations are '{}'.",
                supported.join(", "),
                locations.join(", ")
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

    /// A subscription the emulator does not know.
    pub(crate) fn subscription_not_found(subscription: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "SubscriptionNotFound",
            format!("The subscription '{subscription}' could not be found."),
        )
    }

    /// A resource that does not exist, as ARM words it.
    pub(crate) fn resource_not_found(type_path: &str, resource_group: Option<&str>) -> Self {
        let place =
            resource_group.map_or_else(String::new, |group| format!(" under resource group '{group}'"));
        Self::new(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            format!(
                "The Resource '{type_path}'{place} was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix"
            ),
        )
    }

    /// A resource a request refers to, or a child resource, that does not exist, as resource
    /// providers word it.
    pub(crate) fn not_found(id: &str) -> Self {
        Self {
            details: Some(Vec::new()),
            ..Self::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("Resource {id} not found."),
            )
        }
    }

    /// A child resource written under a parent that does not exist.
    pub(crate) fn parent_not_found(action: &str, type_name: &str, parent: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "ParentResourceNotFound",
            format!(
                "Failed to perform '{action}' on resource(s) of type '{type_name}', because the parent resource '{parent}' could not be found."
            ),
        )
    }

    /// A resource type the emulator does not serve.
    pub(crate) fn invalid_resource_type(type_name: &str, api_version: &str) -> Self {
        let (namespace, resource_type) = type_name.split_once('/').unwrap_or((type_name, ""));
        Self::new(
            StatusCode::NOT_FOUND,
            "InvalidResourceType",
            format!(
                "The resource type '{resource_type}' could not be found in the namespace '{namespace}' for api version '{api_version}'."
            ),
        )
    }

    /// A property with a value the service does not accept.
    pub(crate) fn invalid_parameter(property: &str, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if !message.contains(property) {
            message = format!("{message} (property '{property}')");
        }
        Self::new(StatusCode::BAD_REQUEST, "InvalidParameter", message)
    }

    /// `If-Match` / `If-None-Match` not satisfied.
    pub(crate) fn precondition_failed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PRECONDITION_FAILED, "PreconditionFailed", message)
    }
}
