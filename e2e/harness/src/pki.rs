//! Certificates for the plane: one CA per plane signs the API server's serving certificate and
//! the webhook servers' ones, so every client trusts one file.

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

use crate::error::{Error, Result};

/// A certificate authority made for one plane.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

/// A certificate and its private key, PEM-encoded.
#[derive(Debug, Clone)]
pub struct KeyAndCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Authority {
    /// A fresh CA.
    ///
    /// # Errors
    /// When key generation fails.
    pub fn new(name: &str) -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key)?;
        Ok(Self {
            issuer: Issuer::new(params, key),
            cert_pem: cert.pem(),
        })
    }

    /// The CA certificate clients trust.
    #[must_use]
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's private key, PEM (PKCS#8): what a control-plane machine's bootstrap data carries.
    #[must_use]
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A serving certificate for loopback (`localhost`, `127.0.0.1`, `::1`) and `names`.
    ///
    /// # Errors
    /// When key generation or signing fails.
    pub fn serving(&self, common_name: &str, names: &[&str]) -> Result<KeyAndCert> {
        let key = KeyPair::generate()?;
        let mut subject_names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
        subject_names.extend(names.iter().map(|name| (*name).to_owned()));
        let mut params = CertificateParams::new(subject_names)?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(KeyAndCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

impl KeyAndCert {
    /// Writes `tls.crt` and `tls.key` into `dir`, the names controller-runtime's webhook server
    /// and most Kubernetes components look for.
    ///
    /// # Errors
    /// When the files cannot be written.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        write(&dir.join("tls.crt"), &self.cert_pem)?;
        write(&dir.join("tls.key"), &self.key_pem)
    }
}

/// A key pair for signing service-account tokens: (private key, public key), PEM-encoded.
pub(crate) fn signing_key() -> Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

pub(crate) fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(Error::io("write", path))
}
