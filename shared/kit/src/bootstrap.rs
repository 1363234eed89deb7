//! The bootstrap data of a Machine or MachinePool: the Secret Cluster API's bootstrap provider
//! writes (key `value`: cloud-init or Ignition), handed to Azure as custom data. It is never logged.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use capz_azure::models::Secret;
use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::{Api, Client};

use crate::conditions::Reason;
use crate::policy::{Category, Classify};

/// Why the bootstrap data cannot be read. The Secret is not watched: a retry with backoff looks
/// again.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The Secret does not exist (yet).
    #[error("the bootstrap data Secret {0} does not exist")]
    Missing(String),
    /// The Secret has no key `value`.
    #[error("the bootstrap data Secret {0} has no key value")]
    NoValue(String),
    /// The API server failed the read.
    #[error("reading the bootstrap data Secret {secret}: {source}")]
    Read {
        /// The Secret.
        secret: String,
        /// The API server's error.
        source: kube::Error,
    },
}

impl Classify for BootstrapError {
    fn category(&self) -> Category {
        Category::Transient
    }

    fn reason(&self) -> Reason {
        Reason::WAITING_FOR_BOOTSTRAP_DATA
    }
}

/// The data of the Secret `name` in `namespace`, base64 encoded as Azure's custom data.
///
/// # Errors
/// When the Secret is missing, has no `value`, or cannot be read.
pub async fn custom_data(client: &Client, namespace: &str, name: &str) -> Result<Secret, BootstrapError> {
    let secret = Api::<KubeSecret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|source| BootstrapError::Read {
            secret: name.to_owned(),
            source,
        })?
        .ok_or_else(|| BootstrapError::Missing(name.to_owned()))?;
    let value = secret
        .data
        .as_ref()
        .and_then(|data| data.get("value"))
        .ok_or_else(|| BootstrapError::NoValue(name.to_owned()))?;
    Ok(Secret::new(STANDARD.encode(&value.0)))
}
