//! HTTPS for the emulator: a certificate authority made at start and a server certificate it signs.
//!
//! Azure SDKs refuse an authority host that is not HTTPS, so the emulator serves TLS. Clients are
//! told to trust the CA, whose certificate the emulator writes to a file (PEM). The same module
//! makes the certificate authorities of the Kubernetes clusters the emulator answers for (AKS
//! managed clusters) and the client certificates their kubeconfigs sign in with.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why the TLS material could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or certificate failed.
    #[error("cannot generate the emulator's certificates")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("cannot configure TLS")]
    Config(#[from] rustls::Error),
}

/// The emulator's CA and the server configuration using a certificate it signed.
#[derive(Debug, Clone)]
pub struct Tls {
    /// The CA certificate, PEM-encoded: what clients must trust.
    pub ca_pem: String,
    pub(crate) server: Arc<ServerConfig>,
}

impl Tls {
    /// Makes a fresh CA and a server certificate for `localhost`, `127.0.0.1`, `::1` and `names`.
    ///
    /// # Errors
    /// Fails when key generation or the rustls configuration fails.
    pub fn generate(names: &[String]) -> Result<Self, TlsError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "capz-rs ARM emulator CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut subject_names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        subject_names.extend(names.iter().cloned());
        let server_key = KeyPair::generate()?;
        let mut server_params = CertificateParams::new(subject_names)?;
        server_params
            .distinguished_name
            .push(DnType::CommonName, "capz-rs ARM emulator");
        let server_cert = server_params.signed_by(&server_key, &issuer)?;

        let chain = vec![server_cert.der().clone(), ca_cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
        let mut server =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(chain, key)?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            ca_pem: ca_cert.pem(),
            server: Arc::new(server),
        })
    }

    /// The CA certificate in DER form, for clients that build their trust store in code.
    #[must_use]
    pub fn ca_der(&self) -> Option<CertificateDer<'static>> {
        use rustls::pki_types::pem::PemObject;
        CertificateDer::from_pem_slice(self.ca_pem.as_bytes()).ok()
    }
}

/// The certificate authority of a Kubernetes cluster the emulator answers for (an AKS managed
/// cluster): its certificate and its PKCS#8 private key, both PEM. Its subject is always the one
/// [`authority_params`] gives, so certificates it signs later can name it as their issuer from the
/// key alone.
///
/// # Errors
/// When key generation or signing fails.
pub(crate) fn cluster_authority() -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate()?;
    let certificate = authority_params()?.self_signed(&key)?;
    Ok((certificate.pem(), key.serialize_pem()))
}

/// A cluster CA's parameters, as AKS names it (`CN=ca`).
fn authority_params() -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, "ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

/// A client certificate for a Kubernetes user, signed by the cluster CA whose key is
/// `authority_key` (PEM, as [`cluster_authority`] made it): Kubernetes takes the user name from
/// the common name and the group from the organization. Answers the certificate and its new
/// PKCS#8 key, both PEM.
///
/// # Errors
/// When the CA key does not parse, or key generation or signing fails.
pub(crate) fn client_certificate(
    authority_key: &str,
    user: &str,
    group: Option<&str>,
) -> Result<(String, String), rcgen::Error> {
    let issuer = Issuer::new(authority_params()?, KeyPair::from_pem(authority_key)?);
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, user);
    if let Some(group) = group {
        params.distinguished_name.push(DnType::OrganizationName, group);
    }
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let certificate = params.signed_by(&key, &issuer)?;
    Ok((certificate.pem(), key.serialize_pem()))
}
