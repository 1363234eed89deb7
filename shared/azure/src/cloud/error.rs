//! Why a cloud, or the TLS setup of a client for it, cannot be used.

/// Why a cloud cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CloudError {
    /// The name is not one of the clouds CAPZ knows.
    #[error(
        "unknown Azure cloud '{0}': expected AzurePublicCloud, AzureChinaCloud or AzureUSGovernmentCloud"
    )]
    UnknownName(String),
    /// An endpoint is not an absolute URL.
    #[error("the {endpoint} '{url}' is not an absolute URL")]
    InvalidUrl {
        /// Which endpoint.
        endpoint: &'static str,
        /// The value given.
        url: String,
    },
    /// An endpoint that tokens or secrets travel to does not use HTTPS.
    #[error("the {endpoint} '{url}' must use https: credentials are never sent over plain HTTP")]
    NotHttps {
        /// Which endpoint.
        endpoint: &'static str,
        /// The value given.
        url: String,
    },
    /// The CA bundle holds no PEM certificate.
    #[error("the CA bundle of the custom cloud holds no PEM certificate")]
    EmptyCaBundle,
    /// rustls refused the TLS configuration.
    #[error("cannot configure TLS")]
    Tls(#[from] rustls::Error),
    /// The cloud-metadata endpoint could not be read.
    #[error("cannot read the cloud metadata at {url}: {reason}")]
    Metadata {
        /// The metadata URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
}
