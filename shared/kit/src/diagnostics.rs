//! CAPZ's diagnostics endpoint (`--diagnostics-address`), where CAPZ's manager serves its metrics.
//!
//! By default `/metrics` is served over HTTPS and answered only to callers the API server vouches
//! for, as controller-runtime's secure metrics server does: their bearer token passes a
//! TokenReview, and a SubjectAccessReview allows their user to `get` the path (a ClusterRole with
//! `nonResourceURLs: ["/metrics"]`). A request without a token is answered 401, one whose user may
//! not read the path 403. The certificate is self-signed and made at start, as controller-runtime
//! makes one when given no certificate directory: scrapers skip verifying it, the server verifies
//! them. `--insecure-diagnostics` serves the same over plain HTTP, to anyone.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use crate::cli::Tls;

/// Why the HTTPS side could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DiagnosticsError {
    /// The self-signed certificate could not be made.
    #[error("cannot make the diagnostics endpoint's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// The TLS settings were refused.
    #[error("cannot set up TLS for the diagnostics endpoint: {0}")]
    Tls(#[from] rustls::Error),
    /// The address could not be bound.
    #[error("{0}")]
    Listen(#[from] std::io::Error),
}

/// `router` answered only to callers the API server of `client` authenticates and authorizes.
pub fn authorized(router: Router, client: Client) -> Router {
    router.layer(axum::middleware::from_fn_with_state(client, authorize))
}

/// A TLS acceptor with a fresh self-signed certificate for `localhost` and the host's name,
/// honouring the TLS flags.
///
/// # Errors
/// See [`DiagnosticsError`].
pub fn acceptor(tls: &Tls) -> Result<TlsAcceptor, DiagnosticsError> {
    let (provider, unavailable) = tls.provider();
    if !unavailable.is_empty() {
        tracing::warn!(suites = ?unavailable, "cipher suites rustls does not implement are not offered");
    }
    let mut names = vec!["localhost".to_owned()];
    if let Some(host) = hostname::get().ok().and_then(|name| name.into_string().ok()) {
        names.push(host);
    }
    let certified = rcgen::generate_simple_self_signed(names)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
    let chain = vec![CertificateDer::from(certified.cert.der().to_vec())];
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(tls.versions())?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

async fn authorize(State(client): State<Client>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned);
    let Some(token) = token else {
        return (
            StatusCode::UNAUTHORIZED,
            "Unauthorized: a bearer token is required\n",
        )
            .into_response();
    };
    let path = request.uri().path().to_owned();
    let verb = request.method().as_str().to_ascii_lowercase();
    match verdict(&client, token, &path, &verb).await {
        Ok(Verdict::Allowed) => next.run(request).await,
        Ok(Verdict::Unauthenticated) => (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response(),
        Ok(Verdict::Forbidden(user)) => (
            StatusCode::FORBIDDEN,
            format!("Forbidden: user \"{user}\" may not {verb} {path}\n"),
        )
            .into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "cannot review a diagnostics request with the API server");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request could not be reviewed\n",
            )
                .into_response()
        }
    }
}

enum Verdict {
    Allowed,
    Unauthenticated,
    /// The user, authenticated but not allowed.
    Forbidden(String),
}

async fn verdict(client: &Client, token: String, path: &str, verb: &str) -> Result<Verdict, kube::Error> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token,
            audiences: None,
        },
        ..TokenReview::default()
    };
    let reviewed = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?
        .status
        .unwrap_or_default();
    let Some(user) = reviewed.user.filter(|_| reviewed.authenticated == Some(true)) else {
        return Ok(Verdict::Unauthenticated);
    };
    let access = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username.clone(),
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some(verb.to_owned()),
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let allowed = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &access)
        .await?
        .status
        .is_some_and(|status| status.allowed);
    Ok(if allowed {
        Verdict::Allowed
    } else {
        Verdict::Forbidden(user.username.unwrap_or_default())
    })
}
