//! The managed identity endpoint of the Azure Instance Metadata Service (IMDS):
//! `GET /metadata/identity/oauth2/token?api-version=...&resource=...`, with the `Metadata: true`
//! header, for the system-assigned identity or a user-assigned one picked by `client_id`,
//! `object_id`, `msi_res_id` or `mi_res_id`. Real IMDS is plain HTTP at 169.254.169.254:80;
//! [`start_imds`] serves it on a socket of its own.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use super::clock::UnixTime;
use super::{Identity, Proof, v1_token_body};
use crate::Emulator;
use crate::config::ManagedIdentity;

/// How long managed identity tokens live, in seconds (what IMDS answers).
const LIFETIME: i64 = 86399;

pub(crate) fn routes() -> Router<Emulator> {
    Router::new().route("/metadata/identity/oauth2/token", get(token))
}

/// An IMDS error: `{"error", "error_description"}`.
fn refuse(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

fn bad_request(description: &str) -> Response {
    refuse(StatusCode::BAD_REQUEST, "invalid_request", description)
}

/// How the request designates the identity.
#[derive(Debug, Clone, Copy)]
enum Selector<'a> {
    /// The system-assigned identity, or the only identity when there is no other.
    Default,
    ClientId(&'a str),
    ObjectId(&'a str),
    ResourceId(&'a str),
}

impl Selector<'_> {
    fn matches(self, identity: &ManagedIdentity) -> bool {
        match self {
            Self::Default => identity.resource_id.is_none(),
            Self::ClientId(id) => identity.client_id.eq_ignore_ascii_case(id),
            Self::ObjectId(id) => identity.object_id().eq_ignore_ascii_case(id),
            Self::ResourceId(id) => identity
                .resource_id
                .as_deref()
                .is_some_and(|resource_id| resource_id.eq_ignore_ascii_case(id)),
        }
    }
}

fn pick<'a>(
    identities: &'a [ManagedIdentity],
    selector: Selector<'_>,
) -> Result<&'a ManagedIdentity, &'static str> {
    if let Some(identity) = identities.iter().find(|identity| selector.matches(identity)) {
        return Ok(identity);
    }
    match (selector, identities) {
        // Without a system-assigned identity, a lone user-assigned one is the default.
        (Selector::Default, [only]) => Ok(only),
        (Selector::Default, [_, _, ..]) => Err(
            "Multiple user assigned identities exist, please specify the clientId / resourceId of the identity in the token request",
        ),
        _ => Err("Identity not found"),
    }
}

async fn token(State(emulator): State<Emulator>, RawQuery(query): RawQuery, headers: HeaderMap) -> Response {
    // IMDS refuses requests without the header, so that a server-side request forgery cannot
    // reach it.
    if headers.get("metadata").and_then(|value| value.to_str().ok()) != Some("true") {
        return bad_request("Required metadata header not specified");
    }
    let query = query.unwrap_or_default();
    let parameters: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let parameter = |name: &str| {
        parameters
            .iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.as_str())
    };
    if parameter("api-version").is_none() {
        return bad_request("Required query variable 'api-version' is missing");
    }
    let Some(resource) = parameter("resource") else {
        return bad_request("Required audience parameter not specified");
    };
    let selectors: Vec<Selector<'_>> = [
        parameter("client_id").map(Selector::ClientId),
        parameter("object_id").map(Selector::ObjectId),
        parameter("msi_res_id")
            .or_else(|| parameter("mi_res_id"))
            .map(Selector::ResourceId),
    ]
    .into_iter()
    .flatten()
    .collect();
    let selector = match selectors.as_slice() {
        [] => Selector::Default,
        [one] => *one,
        _ => return bad_request("Only one of client_id, object_id, msi_res_id and mi_res_id may be given"),
    };
    let identity = match pick(&emulator.entra.managed_identities, selector) {
        Ok(identity) => Identity::of_managed_identity(identity),
        Err(description) => return bad_request(description),
    };
    let now = UnixTime::from_system(emulator.wall_clock());
    match emulator
        .entra
        .mint(&identity, resource, Proof::Key, now, LIFETIME)
    {
        Ok(token) => {
            let mut body = v1_token_body(&token, resource, now, LIFETIME);
            body["client_id"] = json!(identity.client_id);
            (StatusCode::OK, axum::Json(body)).into_response()
        }
        Err(_) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unknown_error",
            "The emulator could not sign the token",
        ),
    }
}

/// The IMDS endpoint serving on a socket of its own; stops when dropped.
#[derive(Debug)]
pub struct RunningImds {
    /// Where it listens.
    pub address: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RunningImds {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Serves the managed identity endpoint of `emulator` over plain HTTP on `address` (port 0 picks
/// a free port) in the current Tokio runtime, as IMDS does at 169.254.169.254:80. Tokens come from
/// the same identities and key as the emulator's.
///
/// # Errors
/// Fails when the address cannot be bound.
pub async fn start_imds(address: SocketAddr, emulator: &Emulator) -> std::io::Result<RunningImds> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let router = routes()
        .route_layer(axum::middleware::from_fn_with_state(
            emulator.clone(),
            super::log_sign_in,
        ))
        .with_state(emulator.clone());
    let server = tokio::spawn(async move {
        // The server ends only when the task is aborted; an accept error ends it early.
        let _ = axum::serve(listener, router).await;
    });
    Ok(RunningImds { address, server })
}

#[cfg(test)]
mod tests {
    use super::{Selector, pick};
    use crate::config::ManagedIdentity;

    fn identity(client_id: &str, resource_id: Option<&str>) -> ManagedIdentity {
        ManagedIdentity {
            client_id: client_id.into(),
            object_id: None,
            resource_id: resource_id.map(str::to_owned),
            tenant: "t".into(),
        }
    }

    #[test]
    fn the_default_identity_is_the_system_one_or_the_only_one() {
        let system = identity("system", None);
        let user = identity("user", Some("/subscriptions/s/resourceGroups/g/providers/x/y"));
        let other = identity("other", Some("/z"));
        let both = [user.clone(), system];
        assert_eq!(pick(&both, Selector::Default).unwrap().client_id, "system");
        assert_eq!(
            pick(
                &both,
                Selector::ResourceId("/SUBSCRIPTIONS/s/resourceGroups/g/providers/x/y")
            )
            .unwrap()
            .client_id,
            "user"
        );
        assert_eq!(
            pick(std::slice::from_ref(&user), Selector::Default)
                .unwrap()
                .client_id,
            "user"
        );
        assert!(
            pick(&[user, other], Selector::Default)
                .unwrap_err()
                .starts_with("Multiple")
        );
        assert_eq!(
            pick(&both, Selector::ClientId("nobody")).unwrap_err(),
            "Identity not found"
        );
        assert_eq!(pick(&[], Selector::Default).unwrap_err(), "Identity not found");
    }
}
