//! Service-account tokens in a file, kept fresh: what a kubelet's projected token volume gives a
//! pod, for controllers run outside a cluster that read their federated token from a file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::error::{Error, Result};

/// The audience Azure's token exchange expects in a federated service-account token.
pub const AZURE_AUDIENCE: &str = "api://AzureADTokenExchange";

/// What token to keep in the file.
#[derive(Debug, Clone)]
pub struct TokenOptions {
    pub audience: String,
    /// The lifetime asked for; the API server refuses less than ten minutes.
    pub lifetime: Duration,
    /// When to fetch the next one; a kubelet does it at 80 % of the lifetime.
    pub refresh_after: Duration,
}

impl Default for TokenOptions {
    fn default() -> Self {
        let lifetime = Duration::from_hours(1);
        Self {
            audience: AZURE_AUDIENCE.to_owned(),
            lifetime,
            refresh_after: lifetime.mul_f64(0.8),
        }
    }
}

/// A token file refreshed in the background until dropped.
#[derive(Debug)]
pub struct ProjectedToken {
    path: PathBuf,
    refresher: tokio::task::JoinHandle<()>,
}

impl ProjectedToken {
    /// Requests a token for `namespace/service_account`, writes it to `path`, and refreshes it on
    /// the current runtime as `options` say. A failed refresh is retried every few seconds; the
    /// old token stays in the file meanwhile.
    ///
    /// # Errors
    /// When the first token cannot be obtained or written.
    pub async fn start(
        client: &Client,
        namespace: &str,
        service_account: &str,
        path: &Path,
        options: TokenOptions,
    ) -> Result<Self> {
        let api = Api::<ServiceAccount>::namespaced(client.clone(), namespace);
        let name = service_account.to_owned();
        refresh(&api, &name, path, &options).await?;
        let file = path.to_owned();
        let refresher = tokio::spawn(async move {
            let mut wait = options.refresh_after;
            loop {
                tokio::time::sleep(wait).await;
                wait = match refresh(&api, &name, &file, &options).await {
                    Ok(()) => options.refresh_after,
                    Err(_) => Duration::from_secs(5).min(options.refresh_after),
                };
            }
        });
        Ok(Self {
            path: path.to_owned(),
            refresher,
        })
    }

    /// The file holding the token.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ProjectedToken {
    fn drop(&mut self) {
        self.refresher.abort();
    }
}

/// Fetches a token and replaces the file in one rename, so a reader never sees half a token.
async fn refresh(api: &Api<ServiceAccount>, name: &str, path: &Path, options: &TokenOptions) -> Result<()> {
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: Some(vec![options.audience.clone()]),
            expiration_seconds: i64::try_from(options.lifetime.as_secs()).ok(),
            bound_object_ref: None,
        }),
        ..TokenRequest::default()
    };
    let issued = api
        .create_token_request(name, &PostParams::default(), &request)
        .await?;
    let token = issued.status.and_then(|status| status.token).unwrap_or_default();
    let partial = path.with_extension("partial");
    std::fs::write(&partial, token).map_err(Error::io("write", &partial))?;
    std::fs::rename(&partial, path).map_err(Error::io("replace", path))
}
