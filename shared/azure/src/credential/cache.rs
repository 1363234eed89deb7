//! The token cache in front of every credential.

use std::collections::HashMap;
use std::future::Future;

use azure_core::credentials::AccessToken;
use azure_core::time::{Duration, OffsetDateTime};
use tokio::sync::Mutex;

use super::error::CredentialError;

/// How long before its expiry a token is replaced, so that no request carries a token that
/// expires in flight.
const REFRESH_MARGIN: Duration = Duration::minutes(5);

/// Tokens by scopes. The lock is held while a token is fetched, so concurrent callers wait for one
/// refresh instead of each starting their own.
#[derive(Debug, Default)]
pub(super) struct TokenCache(Mutex<HashMap<Vec<String>, AccessToken>>);

impl TokenCache {
    /// The cached token for `scopes` if it is fresh, else the one `fetch` gets (cached on success).
    pub(super) async fn get<F, Fut>(&self, scopes: &[&str], fetch: F) -> Result<AccessToken, CredentialError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<AccessToken, CredentialError>>,
    {
        let key: Vec<String> = scopes.iter().map(|scope| (*scope).to_owned()).collect();
        let mut tokens = self.0.lock().await;
        if let Some(token) = tokens.get(&key)
            && token.expires_on > OffsetDateTime::now_utc() + REFRESH_MARGIN
        {
            return Ok(token.clone());
        }
        let token = fetch().await?;
        tokens.insert(key, token.clone());
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use azure_core::credentials::AccessToken;
    use azure_core::time::{Duration, OffsetDateTime};

    use super::TokenCache;
    use crate::credential::CredentialError;

    async fn fetch(calls: &AtomicUsize, lifetime: Duration) -> Result<AccessToken, CredentialError> {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Ok(AccessToken::new(
            format!("token-{call}"),
            OffsetDateTime::now_utc() + lifetime,
        ))
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_refresh() {
        let cache = Arc::new(TokenCache::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (cache, calls) = (cache.clone(), calls.clone());
                tokio::spawn(async move {
                    cache
                        .get(&["scope"], || fetch(&calls, Duration::hours(1)))
                        .await
                        .map(|token| token.token.secret().to_owned())
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap().unwrap(), "token-0");
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn tokens_close_to_expiry_are_replaced() {
        let cache = TokenCache::default();
        let calls = AtomicUsize::new(0);
        cache
            .get(&["scope"], || fetch(&calls, Duration::minutes(4)))
            .await
            .unwrap();
        let token = cache
            .get(&["scope"], || fetch(&calls, Duration::hours(1)))
            .await
            .unwrap();
        assert_eq!(token.token.secret(), "token-1");
        cache
            .get(&["scope"], || fetch(&calls, Duration::hours(1)))
            .await
            .unwrap();
        cache
            .get(&["other"], || fetch(&calls, Duration::hours(1)))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn failures_are_not_cached() {
        let cache = TokenCache::default();
        let failed = cache
            .get(&["scope"], || async {
                Err(CredentialError::Transient {
                    kind: "test",
                    message: "down".into(),
                })
            })
            .await;
        assert!(failed.is_err());
        let calls = AtomicUsize::new(0);
        cache
            .get(&["scope"], || fetch(&calls, Duration::hours(1)))
            .await
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
