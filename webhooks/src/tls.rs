//! The serving certificate, read from a directory in cert-manager's Secret layout (`tls.crt`, the
//! chain in PEM; `tls.key`, its key in PEM) and read again when the files change, so a rotated
//! certificate is served without a restart.
//!
//! Each TLS handshake asks [`ReloadingCertificate`] for the certificate; at most once per
//! [`CHECK_PERIOD`] that reads both files again and, when their bytes differ from what is served,
//! loads them. A Secret volume swaps both files at once; a pair caught half-written (a new
//! certificate with the old key), or unreadable, is not loaded: the previous certificate stays in
//! service and the files are tried again at the next check. The server also checks on a timer
//! ([`crate::server`]), so a rotation is logged even without traffic.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The certificate chain file in the directory.
pub const CERT_FILE: &str = "tls.crt";
/// The private key file in the directory.
pub const KEY_FILE: &str = "tls.key";
/// How often the files are compared with what is served, at most.
pub const CHECK_PERIOD: Duration = Duration::from_secs(1);

/// Why a certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file does not hold what it should.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The files as last read.
#[derive(PartialEq, Eq)]
struct Files {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// The certificate the server presents, reloaded when its files change.
pub struct ReloadingCertificate {
    dir: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// What was last read, loaded or not, so a bad pair is reported once.
    seen: Mutex<Files>,
    last_check: Mutex<Instant>,
}

impl fmt::Debug for ReloadingCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCertificate")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ReloadingCertificate {
    /// Loads `tls.crt` and `tls.key` from `dir`.
    ///
    /// # Errors
    /// When a file is missing, unreadable, holds no certificate or key, or the key is not the
    /// certificate's.
    pub fn load(dir: &Path, provider: Arc<CryptoProvider>) -> Result<Self, CertificateError> {
        let files = read(dir)?;
        let key = certified_key(dir, &files, &provider)?;
        Ok(Self {
            dir: dir.to_owned(),
            provider,
            current: RwLock::new(Arc::new(key)),
            seen: Mutex::new(files),
            last_check: Mutex::new(Instant::now()),
        })
    }

    /// The directory the files are read from.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The certificate served now (its chain's first entry is the leaf).
    #[must_use]
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads the files and serves them when they changed and hold a valid pair. Returns whether
    /// a new certificate is now served.
    ///
    /// # Errors
    /// When the files changed but cannot be loaded; the previous certificate stays served. The
    /// same unloadable files are reported once.
    pub fn reload(&self) -> Result<bool, CertificateError> {
        *self.last_check.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        let files = read(&self.dir)?;
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if *seen == files {
            return Ok(false);
        }
        let loaded = certified_key(&self.dir, &files, &self.provider);
        *seen = files;
        let key = loaded?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(key);
        Ok(true)
    }

    /// [`Self::reload`] when the last check is [`CHECK_PERIOD`] old, logging the outcome; never
    /// blocks on another handshake doing the same.
    pub fn reload_if_due(&self) {
        let due = self
            .last_check
            .try_lock()
            .is_ok_and(|last| last.elapsed() >= CHECK_PERIOD);
        if due {
            self.reload_and_log();
        }
    }

    /// [`Self::reload`], logging what happened.
    pub fn reload_and_log(&self) {
        match self.reload() {
            Ok(true) => tracing::info!(dir = %self.dir.display(), "serving a new certificate"),
            Ok(false) => {}
            Err(err) => {
                tracing::warn!(error = %err, "the certificate files changed but cannot be loaded; still serving the previous certificate");
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.reload_if_due();
        Some(self.current())
    }
}

fn read(dir: &Path) -> Result<Files, CertificateError> {
    let file = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|source| CertificateError::Read { path, source })
    };
    Ok(Files {
        cert: file(CERT_FILE)?,
        key: file(KEY_FILE)?,
    })
}

fn certified_key(
    dir: &Path,
    files: &Files,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertificateError> {
    let invalid = |name: &str, message: String| CertificateError::Invalid {
        path: dir.join(name),
        message,
    };
    let chain = CertificateDer::pem_slice_iter(&files.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| invalid(CERT_FILE, format!("not a PEM certificate chain: {err}")))?;
    if chain.is_empty() {
        return Err(invalid(CERT_FILE, "holds no certificate".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(&files.key)
        .map_err(|err| invalid(KEY_FILE, format!("not a PEM private key: {err}")))?;
    let key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|err| invalid(KEY_FILE, format!("unusable private key: {err}")))?;
    let certified = CertifiedKey::new(chain, key);
    certified.keys_match().map_err(|err| {
        invalid(
            CERT_FILE,
            format!("the certificate does not belong to the key in {KEY_FILE}: {err}"),
        )
    })?;
    Ok(certified)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn write(dir: &Path, (cert, key): &(String, String)) {
        std::fs::write(dir.join(CERT_FILE), cert).unwrap();
        std::fs::write(dir.join(KEY_FILE), key).unwrap();
    }

    fn leaf(certificate: &ReloadingCertificate) -> Vec<u8> {
        certificate.current().cert[0].to_vec()
    }

    fn der(pem: &str) -> Vec<u8> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap().to_vec()
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("capz-webhooks-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn a_rotated_pair_is_served_and_a_broken_one_is_not() {
        let dir = temp_dir("rotation");
        let first = pair("first");
        write(&dir, &first);
        let certificate = ReloadingCertificate::load(&dir, provider()).unwrap();
        assert_eq!(leaf(&certificate), der(&first.0));
        assert!(
            !certificate.reload().unwrap(),
            "unchanged files are not loaded again"
        );

        let second = pair("second");
        write(&dir, &second);
        assert!(certificate.reload().unwrap());
        assert_eq!(leaf(&certificate), der(&second.0));

        // Caught half-way: the new certificate with the old key.
        let third = pair("third");
        std::fs::write(dir.join(CERT_FILE), &third.0).unwrap();
        let err = certificate.reload().unwrap_err().to_string();
        assert!(err.contains("does not belong to the key"), "{err}");
        assert!(
            !certificate.reload().unwrap(),
            "the same bad pair is reported once"
        );
        assert_eq!(
            leaf(&certificate),
            der(&second.0),
            "the previous certificate stays"
        );
        std::fs::write(dir.join(KEY_FILE), &third.1).unwrap();
        assert!(certificate.reload().unwrap());
        assert_eq!(leaf(&certificate), der(&third.0));

        std::fs::write(dir.join(CERT_FILE), "garbage").unwrap();
        assert!(
            certificate
                .reload()
                .unwrap_err()
                .to_string()
                .contains("holds no certificate")
        );
        std::fs::remove_file(dir.join(KEY_FILE)).unwrap();
        assert!(
            certificate
                .reload()
                .unwrap_err()
                .to_string()
                .contains("cannot read")
        );
        assert_eq!(leaf(&certificate), der(&third.0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn loading_names_the_missing_or_bad_file() {
        let dir = temp_dir("missing");
        let err = ReloadingCertificate::load(&dir, provider())
            .unwrap_err()
            .to_string();
        assert!(err.contains("tls.crt"), "{err}");
        let (cert, _) = pair("a");
        std::fs::write(dir.join(CERT_FILE), cert).unwrap();
        std::fs::write(dir.join(KEY_FILE), "not a key").unwrap();
        let err = ReloadingCertificate::load(&dir, provider())
            .unwrap_err()
            .to_string();
        assert!(err.contains("tls.key: not a PEM private key"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
