//! The process-wide credential cache: reconciles of clusters sharing an identity share one
//! [`Credential`], and so its tokens. The key holds a SHA-256 fingerprint of the secret material
//! (client secret, certificate and password, token file path, IMDS selector), never the material:
//! a rotated Secret gives a new key, so the next build signs in with the new content.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use capz_azure::Credential;
use ring::digest;

/// More credentials than a management cluster has identities: beyond it, the least recently
/// used goes (rotated-away secrets first, in practice).
const CAPACITY: usize = 256;

/// What identifies a credential.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct CacheKey {
    kind: &'static str,
    tenant: String,
    client_id: String,
    /// The Entra authority host, or the IMDS endpoint for managed identities.
    authority: String,
    fingerprint: [u8; 32],
}

impl CacheKey {
    /// A key for `kind` and the fingerprint of `material`, whose parts are hashed with their
    /// lengths so that no two different sequences collide by concatenation.
    pub(super) fn new(
        kind: &'static str,
        tenant: &str,
        client_id: &str,
        authority: &str,
        material: &[&[u8]],
    ) -> Self {
        let mut context = digest::Context::new(&digest::SHA256);
        for part in material {
            context.update(&(part.len() as u64).to_be_bytes());
            context.update(part);
        }
        let mut fingerprint = [0; 32];
        fingerprint.copy_from_slice(context.finish().as_ref());
        Self {
            kind,
            tenant: tenant.to_owned(),
            client_id: client_id.to_ascii_lowercase(),
            authority: authority.to_owned(),
            fingerprint,
        }
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [first, second, third, fourth, ..] = self.fingerprint;
        let short = u32::from_be_bytes([first, second, third, fourth]);
        f.debug_struct("CacheKey")
            .field("kind", &self.kind)
            .field("tenant", &self.tenant)
            .field("client_id", &self.client_id)
            .field("authority", &self.authority)
            .field("fingerprint", &format_args!("{short:08x}…"))
            .finish()
    }
}

/// Credentials by key, least recently used first out.
#[derive(Debug, Default)]
pub(super) struct CredentialCache(Mutex<Entries>);

#[derive(Debug, Default)]
struct Entries {
    credentials: HashMap<CacheKey, (Credential, u64)>,
    clock: u64,
}

impl CredentialCache {
    pub(super) fn get(&self, key: &CacheKey) -> Option<Credential> {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        entries.clock += 1;
        let now = entries.clock;
        entries.credentials.get_mut(key).map(|(credential, used)| {
            *used = now;
            credential.clone()
        })
    }

    /// Stores `credential` under `key` and returns the one to use: an entry another reconcile
    /// stored meanwhile wins, so that both share its tokens.
    pub(super) fn insert(&self, key: CacheKey, credential: Credential) -> Credential {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        entries.clock += 1;
        let now = entries.clock;
        if !entries.credentials.contains_key(&key) && entries.credentials.len() >= CAPACITY {
            let oldest = entries
                .credentials
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                entries.credentials.remove(&oldest);
            }
        }
        let (credential, used) = entries.credentials.entry(key).or_insert((credential, now));
        *used = now;
        credential.clone()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .credentials
            .len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use capz_azure::{Credential, HttpClient, ManagedIdentityId};

    use super::{CAPACITY, CacheKey, CredentialCache};

    fn key(secret: &str) -> CacheKey {
        CacheKey::new(
            "ClientSecret",
            "tenant",
            "Client",
            "https://login.microsoftonline.com/",
            &[secret.as_bytes()],
        )
    }

    fn credential(principal: &str) -> Credential {
        let http = HttpClient::new(None, Duration::from_secs(1)).unwrap();
        let endpoint = "http://127.0.0.1:9/".parse().unwrap();
        Credential::managed_identity(&http, endpoint, ManagedIdentityId::ClientId(principal.into()))
    }

    #[test]
    fn keys_change_with_the_material_and_nothing_else_of_it_shows() {
        assert_eq!(key("first"), key("first"));
        assert_ne!(
            key("first"),
            key("rotated"),
            "a rotated secret is a new credential"
        );
        // Client ids are GUIDs: their case does not matter.
        let upper = CacheKey::new(
            "ClientSecret",
            "tenant",
            "CLIENT",
            "https://login.microsoftonline.com/",
            &[b"first"],
        );
        assert_eq!(upper, key("first"));
        let other_authority = CacheKey::new(
            "ClientSecret",
            "tenant",
            "client",
            "https://login.chinacloudapi.cn/",
            &[b"first"],
        );
        assert_ne!(other_authority, key("first"));
        let certificate = CacheKey::new(
            "ClientCertificate",
            "tenant",
            "client",
            "https://login.microsoftonline.com/",
            &[b"first"],
        );
        assert_ne!(certificate, key("first"));
        // Parts are length-prefixed: moving bytes between them changes the key.
        let split = |parts: &[&[u8]]| CacheKey::new("ClientCertificate", "t", "c", "a", parts);
        assert_ne!(split(&[b"ab", b"c"]), split(&[b"a", b"bc"]));
        let debug = format!("{:?}", key("hunter2-secret"));
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("fingerprint"), "{debug}");
    }

    #[test]
    fn the_first_stored_credential_wins_and_the_least_recently_used_goes() {
        let cache = CredentialCache::default();
        assert!(cache.get(&key("a")).is_none());
        let stored = cache.insert(key("a"), credential("first"));
        let raced = cache.insert(key("a"), credential("second"));
        assert_eq!(stored.principal(), "first");
        assert_eq!(raced.principal(), "first", "an existing entry is kept");
        for index in 1..CAPACITY {
            cache.insert(key(&index.to_string()), credential("filler"));
        }
        assert_eq!(cache.len(), CAPACITY);
        // Touch "a": entry "1" is now the least recently used.
        assert!(cache.get(&key("a")).is_some());
        cache.insert(key("new"), credential("new"));
        assert_eq!(cache.len(), CAPACITY);
        assert!(cache.get(&key("a")).is_some());
        assert!(cache.get(&key("1")).is_none());
    }
}
