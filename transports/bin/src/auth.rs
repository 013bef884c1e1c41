//! Authentication (product spec §10): [`Authenticator`] implements the core's
//! [`Authenticate`] hook.
//!
//! ```text
//! token ─► cache (SHA-256 of token, audience, key-set version) ─hit─► claims
//!            │ miss
//!            ▼
//!          jwt::verify (pure: key set + now) ──► claims, cached until `exp`
//!            ▼
//!          Domain::principal(org, sub, scopes) ─► Principal   (every request)
//! ```
//!
//! The signature check is the expensive part, so verified claims are cached; membership
//! and permissions are not: the store is asked at every request, so a person removed
//! from the organization is refused at once. The cache is bounded (two generations of
//! at most half the capacity each), an entry is never used at or past the token's `exp`,
//! and the key-set version is part of the key, so rotating keys drops every entry.
//!
//! Keys: the [`Keys`] holder is shared with the JWKS refresher thread of `serve`.

use std::collections::HashMap;
use std::mem;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use dunning_core::jwt::{self, Claims, KeySet, Validation};
use dunning_core::{Audience, AuthError, Authenticate, Principal, UnixTime};
use dunning_domain::Domain;
use sha2::{Digest, Sha256};

/// The current verification keys, swapped whole when the JWKS is refreshed.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    current: RwLock<Arc<KeySet>>,
    /// Unix ms of the last time a failed signature asked for an early refresh.
    nudged_at: AtomicU64,
    /// An early refresh was asked for and not yet done.
    wanted: AtomicBool,
}

impl Keys {
    /// A holder with `keys`.
    pub(crate) fn new(keys: KeySet) -> Self {
        Self {
            current: RwLock::new(Arc::new(keys)),
            nudged_at: AtomicU64::new(0),
            wanted: AtomicBool::new(false),
        }
    }

    /// The key set in force.
    pub(crate) fn get(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the key set; whether it changed.
    pub(crate) fn set(&self, keys: KeySet) -> bool {
        let mut cur = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let changed = cur.version() != keys.version();
        *cur = Arc::new(keys);
        changed
    }

    /// A token failed its signature check: the refresher may fetch the JWKS early (a key
    /// rotation it has not seen yet). At most once per `min_ms`; whether this call won.
    pub(crate) fn nudge(&self, now: UnixTime, min_ms: u64) -> bool {
        let now = now.as_millis();
        let last = self.nudged_at.load(Ordering::Relaxed);
        let won = now.saturating_sub(last) >= min_ms
            && self
                .nudged_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if won {
            self.wanted.store(true, Ordering::Release);
        }
        won
    }

    /// Whether an early refresh was asked for since the last call.
    pub(crate) fn take_wanted(&self) -> bool {
        self.wanted.swap(false, Ordering::AcqRel)
    }
}

/// Verified tokens: claims by `SHA-256(token, audience, key-set version)`.
#[derive(Debug)]
pub(crate) struct TokenCache {
    half: usize,
    gens: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    current: HashMap<[u8; 32], Claims>,
    previous: HashMap<[u8; 32], Claims>,
}

impl TokenCache {
    /// A cache of at most `capacity` tokens (`0`: no caching).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            half: capacity / 2,
            gens: Mutex::default(),
        }
    }

    /// The cache key of a token.
    pub(crate) fn key(token: &str, audience: Audience, version: u64) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(version.to_be_bytes());
        h.update([match audience {
            Audience::Mcp => 1,
            Audience::Api => 2,
        }]);
        h.update(token.as_bytes());
        h.finalize().into()
    }

    /// The claims of a cached token still valid at `now`.
    pub(crate) fn get(&self, key: &[u8; 32], now: UnixTime) -> Option<Claims> {
        if self.half == 0 {
            return None;
        }
        let mut g = self.gens.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = g.current.get(key) {
            return (now < c.expires_at).then(|| c.clone());
        }
        let c = g.previous.remove(key)?;
        if now >= c.expires_at {
            return None;
        }
        let out = c.clone();
        g.insert(self.half, *key, c);
        Some(out)
    }

    /// Remembers verified claims.
    pub(crate) fn insert(&self, key: [u8; 32], claims: Claims) {
        if self.half == 0 {
            return;
        }
        let mut g = self.gens.lock().unwrap_or_else(PoisonError::into_inner);
        g.insert(self.half, key, claims);
    }

    /// Tokens held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let g = self.gens.lock().unwrap_or_else(PoisonError::into_inner);
        g.current.len() + g.previous.len()
    }
}

impl Generations {
    fn insert(&mut self, half: usize, key: [u8; 32], claims: Claims) {
        if self.current.len() >= half {
            self.previous = mem::take(&mut self.current);
        }
        self.current.insert(key, claims);
    }
}

/// The [`Authenticate`] implementation of the product: JWT, cache, store.
pub(crate) struct Authenticator {
    keys: Arc<Keys>,
    validation: Validation,
    cache: TokenCache,
    domain: Domain,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("validation", &self.validation)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Verifies with `keys` against `validation`; resolves people in `domain`'s store.
    pub(crate) fn new(
        keys: Arc<Keys>,
        validation: Validation,
        cache_size: usize,
        domain: Domain,
    ) -> Self {
        Self {
            keys,
            validation,
            cache: TokenCache::new(cache_size),
            domain,
        }
    }

    /// The verified claims of `token`, from the cache when possible.
    fn claims(&self, token: &str, audience: Audience, now: UnixTime) -> Result<Claims, AuthError> {
        let keys = self.keys.get();
        let key = TokenCache::key(token, audience, keys.version());
        if let Some(c) = self.cache.get(&key, now) {
            return Ok(c);
        }
        let claims = jwt::verify(token, &keys, &self.validation, audience, now);
        match &claims {
            Ok(c) => self.cache.insert(key, c.clone()),
            Err(AuthError::Signature | AuthError::UnknownKey) => {
                self.keys.nudge(now, 30_000);
            }
            Err(_) => {}
        }
        claims
    }
}

impl Authenticate for Authenticator {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        let c = self.claims(token, audience, now)?;
        self.domain.principal(
            &c.organization,
            &c.subject,
            &c.scopes,
            audience,
            c.expires_at,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp_secs: u64) -> Claims {
        Claims {
            subject: "ana@demo.example".into(),
            organization: "demo".into(),
            scopes: vec!["dunning.read".into()],
            expires_at: UnixTime::from_secs(exp_secs),
            issued_at: None,
            jti: None,
            client_id: None,
        }
    }

    #[test]
    fn cache_respects_exp_and_bounds() {
        let c = TokenCache::new(4);
        let k = TokenCache::key("t1", Audience::Mcp, 1);
        c.insert(k, claims(100));
        assert!(c.get(&k, UnixTime::from_secs(99)).is_some());
        assert!(
            c.get(&k, UnixTime::from_secs(100)).is_none(),
            "never at or past exp"
        );
        for i in 0..10 {
            c.insert(
                TokenCache::key(&format!("x{i}"), Audience::Mcp, 1),
                claims(100),
            );
            assert!(c.len() <= 4);
        }
        assert!(c.get(&k, UnixTime::from_secs(1)).is_none(), "evicted");
    }

    #[test]
    fn cache_key_separates_audience_and_key_version() {
        let a = TokenCache::key("t", Audience::Mcp, 1);
        assert_ne!(a, TokenCache::key("t", Audience::Api, 1));
        assert_ne!(a, TokenCache::key("t", Audience::Mcp, 2));
        assert_ne!(a, TokenCache::key("u", Audience::Mcp, 1));
        assert_eq!(a, TokenCache::key("t", Audience::Mcp, 1));
    }

    #[test]
    fn previous_generation_is_promoted() {
        let c = TokenCache::new(4);
        let k = TokenCache::key("t1", Audience::Mcp, 1);
        c.insert(k, claims(100));
        c.insert(TokenCache::key("t2", Audience::Mcp, 1), claims(100));
        c.insert(TokenCache::key("t3", Audience::Mcp, 1), claims(100));
        assert!(c.get(&k, UnixTime::from_secs(1)).is_some());
        assert!(c.get(&k, UnixTime::from_secs(1)).is_some());
    }

    #[test]
    fn disabled_cache() {
        let c = TokenCache::new(0);
        let k = TokenCache::key("t1", Audience::Mcp, 1);
        c.insert(k, claims(100));
        assert!(c.get(&k, UnixTime::from_secs(1)).is_none());
    }

    #[test]
    fn nudge_is_rate_limited() {
        let k = Keys::new(KeySet::default());
        assert!(!k.take_wanted());
        assert!(k.nudge(UnixTime::from_secs(100), 30_000));
        assert!(k.take_wanted());
        assert!(!k.take_wanted());
        assert!(!k.nudge(UnixTime::from_secs(110), 30_000));
        assert!(!k.take_wanted());
        assert!(k.nudge(UnixTime::from_secs(131), 30_000));
    }
}
