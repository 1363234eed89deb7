//! Federated tokens of a ServiceAccount, requested from the TokenRequest API.
//!
//! Federations made for CAPZ trust `system:serviceaccount:capz-system:capz-manager`. Rather than run
//! as that account (and share one broad set of Kubernetes permissions), each controller runs as its
//! own ServiceAccount and may only create tokens of `capz-manager` (Role `capz-manager-token`).
//! Such a token, with audience `api://AzureADTokenExchange`, opens nothing in Kubernetes.

use std::time::Duration;

use capz_azure::{FederatedTokenError, FederatedTokenSource};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};

/// The audience Entra ID expects in a federated token.
const AUDIENCE: &str = "api://AzureADTokenExchange";
/// A token is exchanged at once; the API server's minimum lifetime is plenty.
const LIFETIME: Duration = Duration::from_mins(10);

/// Tokens of ServiceAccount `namespace/name`, one fresh token per exchange.
pub(crate) struct ServiceAccountToken {
    api: Api<ServiceAccount>,
    namespace: String,
    name: String,
}

impl std::fmt::Debug for ServiceAccountToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl ServiceAccountToken {
    pub(crate) fn new(client: Client, namespace: String, name: String) -> Self {
        Self {
            api: Api::namespaced(client, &namespace),
            namespace,
            name,
        }
    }
}

#[async_trait::async_trait]
impl FederatedTokenSource for ServiceAccountToken {
    async fn federated_token(&self) -> Result<String, FederatedTokenError> {
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: Some(vec![AUDIENCE.to_owned()]),
                expiration_seconds: i64::try_from(LIFETIME.as_secs()).ok(),
                bound_object_ref: None,
            }),
            ..TokenRequest::default()
        };
        let issued = self
            .api
            .create_token_request(&self.name, &PostParams::default(), &request)
            .await
            .map_err(|err| self.failed(&err))?;
        issued
            .status
            .and_then(|status| status.token)
            .filter(|token| !token.is_empty())
            .ok_or_else(|| FederatedTokenError {
                message: format!("the API server issued no token for {}", self.describe()),
                transient: true,
            })
    }

    fn describe(&self) -> String {
        format!("ServiceAccount {}/{}", self.namespace, self.name)
    }
}

impl ServiceAccountToken {
    /// Refusals and a missing ServiceAccount need a change to the installation; anything else may
    /// pass.
    fn failed(&self, err: &kube::Error) -> FederatedTokenError {
        let account = self.describe();
        match err {
            kube::Error::Api(status) if status.code == 403 => FederatedTokenError {
                message: format!(
                    "the controller may not request tokens of {account}: grant it `create` on \
                     serviceaccounts/token for {} (deploy/ binds Role capz-manager-token)",
                    self.name
                ),
                transient: false,
            },
            kube::Error::Api(status) if status.code == 404 => FederatedTokenError {
                message: format!(
                    "{account} does not exist: workload identity federations name it, create it"
                ),
                transient: false,
            },
            other => FederatedTokenError {
                message: format!("cannot request a token of {account}: {other}"),
                transient: true,
            },
        }
    }
}
