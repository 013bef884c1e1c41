//! Authentication: [`Authenticator`] implements the core's
//! [`Authenticate`] hook.
//!
//! ```text
//! token ─► cache (SHA-256 of token, audience, key-set version) ─hit─► claims
//!            │ miss
//!            ▼
//!          jwt::verify (pure: key set + now) ──► claims, cached until `exp`
//!            ▼
//!          memberships (org, sub) ─hit: same members epoch, younger than the TTL─┐
//!            │ miss                                                             │
//!            ▼                                                                  ▼
//!          Domain::membership(org, sub) ─► cached with the epoch read before ─► Principal
//! ```
//!
//! The signature check is the expensive part, so verified claims are cached. Membership
//! and permissions are cached too (without it every request, `tools/list`
//! included, read the store and so left the reactor), but only as long as the store's
//! [`Domain::members_epoch`] keeps the value it had **before** the entry was read: a
//! write to members or organizations in this process bumps it after its commit, and on
//! PostgreSQL so does every other process's (a trigger's `NOTIFY`), so a removed person
//! is refused by the next request here and within milliseconds on the other replicas. A
//! store that cannot tell (`None`: PostgreSQL while not listening) caches nothing. On
//! SQLite another program's commits are seen too (a trigger-kept count read when
//! `PRAGMA data_version` moves), by a look at the file at most every [`LOOK_EVERY`]:
//! the look takes a lock and a SQLite call, which at every request halved the requests
//! per second of `server/discover`. [`MEMBERSHIP_TTL`] is a safety net on top.
//!
//! Both caches are bounded (tokens: two generations of at most half the capacity each;
//! memberships: cleared when full), an entry is never used at or past the token's `exp`,
//! and the key-set version is part of the key, so rotating keys drops every entry.
//!
//! Keys: the [`TrustedKeys`] holder ([`crate::keys`]) is shared with the JWKS refresher
//! thread of `serve`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::mem;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use dunning_core::jwt::{self, Claims, Validation};
use dunning_core::{Audience, AuthError, Authenticate, Principal, UnixTime};
use dunning_domain::{Domain, Membership};
use sha2::{Digest, Sha256};

use crate::keys::TrustedKeys;

/// Verified tokens: claims by `SHA-256(token, audience, key-set version)`.
#[derive(Debug)]
pub(crate) struct TokenCache {
    half: usize,
    gens: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    current: HashMap<[u8; 32], Arc<Claims>>,
    previous: HashMap<[u8; 32], Arc<Claims>>,
}

/// A thread's last computed cache key: (key version, audience, token, key).
type LastKey = (u64, Audience, String, [u8; 32]);

impl TokenCache {
    /// A cache of at most `capacity` tokens (`0`: no caching).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            half: capacity / 2,
            gens: Mutex::default(),
        }
    }

    /// The cache key of a token. The core asks where a request may run
    /// ([`Authenticate::may_block_for`]) and then authenticates it, both needing this
    /// key, on one thread when the request runs inline: the thread's last key is kept,
    /// so the second is a comparison, not a second SHA-256 (one per request). The
    /// comparison is constant-time: how long it takes tells nothing of the token kept.
    /// It is `constant_time_eq`'s, a word at a time: `subtle`'s, a byte at a time behind
    /// an optimization barrier each, was 4 % of a `tools/list`.
    pub(crate) fn key(token: &str, audience: Audience, version: u64) -> [u8; 32] {
        thread_local! {
            static LAST: RefCell<Option<LastKey>> = const { RefCell::new(None) };
        }
        LAST.with_borrow_mut(|last| match last {
            Some((v, a, t, key))
                if *v == version
                    && *a == audience
                    && constant_time_eq::constant_time_eq(t.as_bytes(), token.as_bytes()) =>
            {
                *key
            }
            _ => {
                let key = Self::digest(token, audience, version);
                *last = Some((version, audience, token.to_owned(), key));
                key
            }
        })
    }

    fn digest(token: &str, audience: Audience, version: u64) -> [u8; 32] {
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
    pub(crate) fn get(&self, key: &[u8; 32], now: UnixTime) -> Option<Arc<Claims>> {
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
    pub(crate) fn insert(&self, key: [u8; 32], claims: Arc<Claims>) {
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
    fn insert(&mut self, half: usize, key: [u8; 32], claims: Arc<Claims>) {
        if self.current.len() >= half {
            self.previous = mem::take(&mut self.current);
        }
        self.current.insert(key, claims);
    }
}

/// How long a cached membership may serve at most, whatever the members epoch says: a
/// safety net for a change the epoch would miss (none known), short enough that it
/// would take hold quickly, long enough that a busy token reads its member once per
/// interval, not once per request.
pub(crate) const MEMBERSHIP_TTL: Duration = Duration::from_secs(5);

/// How often, at most, the store looks for membership changes made by another program
/// ([`Domain::look_for_member_changes`]): a request that starts this long after such a
/// commit sees it. This process's own writes and other replicas' notifications move
/// the epoch at once, without a look.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(2);

/// Memberships by organization claim, then subject (nested, so a lookup borrows the
/// claims' strings instead of building a key).
#[derive(Debug)]
pub(crate) struct MembershipCache {
    capacity: usize,
    ttl: Duration,
    inner: RwLock<Memberships>,
}

#[derive(Debug, Default)]
struct Memberships {
    by_org: HashMap<String, HashMap<String, Remembered>>,
    len: usize,
}

#[derive(Debug)]
struct Remembered {
    membership: Arc<Membership>,
    /// [`Domain::members_epoch`] before the store was read.
    epoch: u64,
    read_at: Instant,
}

impl MembershipCache {
    /// At most `capacity` memberships (`0`: no caching), each for at most `ttl`.
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            capacity,
            ttl,
            inner: RwLock::default(),
        }
    }

    /// The membership remembered for `(org, sub)`, if read under `epoch` less than the
    /// TTL before `now`.
    pub(crate) fn get(
        &self,
        org: &str,
        sub: &str,
        epoch: u64,
        now: Instant,
    ) -> Option<Arc<Membership>> {
        let g = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let r = g.by_org.get(org)?.get(sub)?;
        let fresh = r.epoch == epoch && now.saturating_duration_since(r.read_at) < self.ttl;
        fresh.then(|| r.membership.clone())
    }

    /// Remembers `membership`, read from the store under `epoch` (the value from before
    /// the read) at `read_at`.
    pub(crate) fn insert(
        &self,
        org: &str,
        sub: &str,
        membership: Arc<Membership>,
        epoch: u64,
        read_at: Instant,
    ) {
        if self.capacity == 0 {
            return;
        }
        let mut g = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        if g.len >= self.capacity {
            // Rare (more distinct people than the capacity within a TTL): start over.
            *g = Memberships::default();
        }
        let entry = Remembered {
            membership,
            epoch,
            read_at,
        };
        let added = g
            .by_org
            .entry(org.to_owned())
            .or_default()
            .insert(sub.to_owned(), entry)
            .is_none();
        g.len += usize::from(added);
    }
}

/// The [`Authenticate`] implementation of the product: JWT, caches, store.
pub(crate) struct Authenticator {
    keys: Arc<TrustedKeys>,
    validation: Validation,
    cache: TokenCache,
    members: MembershipCache,
    domain: Domain,
    /// The clock of [`Authenticator::epoch`]'s looks.
    started: Instant,
    /// When the next look is due, in µs after `started`.
    look_due: AtomicU64,
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
        keys: Arc<TrustedKeys>,
        validation: Validation,
        cache_size: usize,
        domain: Domain,
    ) -> Self {
        Self {
            keys,
            validation,
            cache: TokenCache::new(cache_size),
            members: MembershipCache::new(cache_size, MEMBERSHIP_TTL),
            domain,
            started: Instant::now(),
            look_due: AtomicU64::new(0),
        }
    }

    /// The verified claims of `token`, from the cache when possible.
    fn claims(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Arc<Claims>, AuthError> {
        let keys = self.keys.get();
        let key = TokenCache::key(token, audience, keys.version());
        if let Some(c) = self.cache.get(&key, now) {
            return Ok(c);
        }
        let claims = jwt::verify(token, &keys, &self.validation, audience, now).map(Arc::new);
        match &claims {
            Ok(c) => self.cache.insert(key, c.clone()),
            Err(AuthError::Signature | AuthError::UnknownKey) => {
                self.keys.nudge(now, 30_000);
            }
            Err(_) => {}
        }
        claims
    }

    /// The cached claims of `token`, without verifying anything.
    fn cached_claims(&self, token: &str, audience: Audience, now: UnixTime) -> Option<Arc<Claims>> {
        let key = TokenCache::key(token, audience, self.keys.get().version());
        self.cache.get(&key, now)
    }

    /// The store's members epoch at `now`, after a look for other programs' changes
    /// when one is due. Concurrent requests at the due time may each look (the looks
    /// serialize in the store and the later ones find nothing): none of them skips it.
    fn epoch(&self, now: Instant) -> Option<u64> {
        let since = now.saturating_duration_since(self.started).as_micros();
        let now = u64::try_from(since).unwrap_or(u64::MAX);
        if now >= self.look_due.load(Ordering::Acquire) {
            self.domain.look_for_member_changes();
            let every = u64::try_from(LOOK_EVERY.as_micros()).unwrap_or(u64::MAX);
            self.look_due
                .fetch_max(now.saturating_add(every), Ordering::AcqRel);
        }
        self.domain.members_epoch()
    }

    /// What the store says of `(org, sub)`, from the cache while the members epoch has
    /// not moved. Refusals are not cached: a person added is let in at once too.
    fn membership(&self, org: &str, sub: &str) -> Result<Arc<Membership>, AuthError> {
        // Read before the store: a change committed during the read moves it on. One
        // clock reading serves the look, the lookup and the entry's age (taken before
        // the read, so the entry never looks younger than what it holds).
        let now = Instant::now();
        let epoch = self.epoch(now);
        if let Some(e) = epoch
            && let Some(m) = self.members.get(org, sub, e, now)
        {
            return Ok(m);
        }
        let m = Arc::new(self.domain.membership(org, sub)?);
        if let Some(e) = epoch {
            self.members.insert(org, sub, m.clone(), e, now);
        }
        Ok(m)
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
        let m = self.membership(&c.organization, &c.subject)?;
        Ok(m.principal(&c.scopes, audience, c.expires_at))
    }

    /// Only a token seen before whose person is remembered under the current members
    /// epoch is authenticated without the store (and without a signature check).
    fn may_block_for(&self, token: &str, audience: Audience, now: UnixTime) -> bool {
        let Some(c) = self.cached_claims(token, audience, now) else {
            return true;
        };
        let now = Instant::now();
        let Some(epoch) = self.epoch(now) else {
            return true;
        };
        self.members
            .get(&c.organization, &c.subject, epoch, now)
            .is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's kept key is the digest of exactly its token, audience and key
    /// version: any of the three changing computes the right key again.
    #[test]
    fn a_kept_key_is_only_ever_its_own_tokens() {
        let d = TokenCache::digest;
        let k = TokenCache::key;
        assert_eq!(k("t1", Audience::Mcp, 1), d("t1", Audience::Mcp, 1));
        assert_eq!(k("t1", Audience::Mcp, 1), d("t1", Audience::Mcp, 1), "kept");
        assert_eq!(k("t2", Audience::Mcp, 1), d("t2", Audience::Mcp, 1));
        assert_eq!(k("t2", Audience::Api, 1), d("t2", Audience::Api, 1));
        assert_eq!(k("t2", Audience::Api, 2), d("t2", Audience::Api, 2));
        assert_eq!(k("t1", Audience::Mcp, 1), d("t1", Audience::Mcp, 1));
        assert_ne!(d("t1", Audience::Mcp, 1), d("t2", Audience::Mcp, 1));
        assert_ne!(d("t1", Audience::Mcp, 1), d("t1", Audience::Api, 1));
        assert_ne!(d("t1", Audience::Mcp, 1), d("t1", Audience::Mcp, 2));
    }

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
        c.insert(k, Arc::new(claims(100)));
        assert!(c.get(&k, UnixTime::from_secs(99)).is_some());
        assert!(
            c.get(&k, UnixTime::from_secs(100)).is_none(),
            "never at or past exp"
        );
        for i in 0..10 {
            c.insert(
                TokenCache::key(&format!("x{i}"), Audience::Mcp, 1),
                Arc::new(claims(100)),
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
        c.insert(k, Arc::new(claims(100)));
        c.insert(
            TokenCache::key("t2", Audience::Mcp, 1),
            Arc::new(claims(100)),
        );
        c.insert(
            TokenCache::key("t3", Audience::Mcp, 1),
            Arc::new(claims(100)),
        );
        assert!(c.get(&k, UnixTime::from_secs(1)).is_some());
        assert!(c.get(&k, UnixTime::from_secs(1)).is_some());
    }

    #[test]
    fn disabled_cache() {
        let c = TokenCache::new(0);
        let k = TokenCache::key("t1", Audience::Mcp, 1);
        c.insert(k, Arc::new(claims(100)));
        assert!(c.get(&k, UnixTime::from_secs(1)).is_none());
    }

    /// A store with the demo organization's people, an authenticator over it, and a
    /// token of Caio (operator) it accepts.
    fn fixture() -> (Authenticator, Domain, String, UnixTime) {
        use dunning_domain::store::sqlite::SqliteStore;
        fixture_on(Arc::new(SqliteStore::in_memory().unwrap()))
    }

    /// [`fixture`] on `store` (empty).
    fn fixture_on(
        store: Arc<dyn dunning_domain::store::Store>,
    ) -> (Authenticator, Domain, String, UnixTime) {
        use crate::cli::AudienceArg;
        use crate::datadir::Endpoint;
        use crate::token;
        use dunning_core::jwt::Jwk;
        use dunning_domain::demo;

        let now = UnixTime::from_secs(1_800_000_000);
        let domain = Domain::new(store.clone());
        demo::seed_org(&domain, "demo", "Demo", "11222333000181", now).unwrap();
        let seed = [7u8; 32];
        let endpoint = Endpoint::new("http://127.0.0.1:1", "/mcp", None);
        let jwk = Jwk::ed25519(
            Some(&crate::keys::dev_kid(&seed)),
            &jwt::ed25519_public(&seed),
        );
        let keys = Arc::new(TrustedKeys::new(jwt::KeySet::new(vec![jwk.unwrap()])));
        let validation = Validation::new(
            &endpoint.issuer,
            &endpoint.mcp_audience,
            &endpoint.api_audience,
        );
        let auth = Authenticator::new(keys, validation, 100, Domain::new(store));
        let tok = token::mint(
            &seed,
            &endpoint,
            &token::Request {
                org_id: &demo::stable_id("org:demo"),
                person: "caio@demo.example",
                scope: &token::role_scopes("operator"),
                ttl: 3600,
                audience: AudienceArg::Mcp,
            },
            now,
        );
        (auth, domain, tok, now)
    }

    /// Rewrites (or, `None`, deletes) Caio's member record through the domain's store.
    fn change_caio(domain: &Domain, role: Option<&str>) {
        use dunning_domain::store::{self, Kind};
        let org = dunning_domain::demo::stable_id("org:demo");
        store::write(domain.store(), store::WriteScope::All, |tx| {
            let mut m = dunning_domain::org::find_member(tx, &org, "caio@demo.example")?
                .expect("caio is a member");
            match role {
                Some(r) => {
                    m.role = r.to_owned();
                    Ok(store::save(tx, Kind::Member, &org, &m)?)
                }
                None => Ok(tx.delete(Kind::Member, &org, &m.id).map(|_| ())?),
            }
        })
        .unwrap();
    }

    #[test]
    fn a_known_person_is_authenticated_without_the_store() {
        let (auth, _domain, tok, now) = fixture();
        assert!(
            auth.may_block_for(&tok, Audience::Mcp, now),
            "nothing cached yet"
        );
        let first = auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        assert!(
            !auth.may_block_for(&tok, Audience::Mcp, now),
            "claims and member cached"
        );
        assert!(
            auth.may_block_for(&tok, Audience::Api, now),
            "another audience is another token"
        );
        let again = auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        assert_eq!(first.permissions, again.permissions);
        assert_eq!(first.subject, "caio@demo.example");
    }

    #[test]
    fn a_removed_person_is_refused_at_once_in_process() {
        let (auth, domain, tok, now) = fixture();
        auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        assert!(!auth.may_block_for(&tok, Audience::Mcp, now));
        change_caio(&domain, None);
        // The very next request: the store is asked again, and says no.
        assert!(
            auth.may_block_for(&tok, Audience::Mcp, now),
            "the epoch moved"
        );
        assert_eq!(
            auth.authenticate(&tok, Audience::Mcp, now).unwrap_err(),
            AuthError::NotMember
        );
        // Refusals are not cached.
        assert!(auth.may_block_for(&tok, Audience::Mcp, now));
    }

    /// Another program deleting the member in the SQLite file: refused by the first
    /// request that starts [`LOOK_EVERY`] after its commit.
    #[test]
    fn another_programs_removal_is_refused_after_one_look_interval() {
        use dunning_domain::store::sqlite::SqliteStore;
        let dir = std::env::temp_dir().join(format!("dunning-auth-look-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("store.db");
        let _ = std::fs::remove_file(&path);
        let (auth, _domain, tok, now) = fixture_on(Arc::new(SqliteStore::open(&path, 1).unwrap()));
        auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        assert!(!auth.may_block_for(&tok, Audience::Mcp, now), "cached");
        let other = Domain::new(Arc::new(SqliteStore::open(&path, 1).unwrap()));
        change_caio(&other, None);
        std::thread::sleep(LOOK_EVERY + Duration::from_millis(1));
        assert!(
            auth.may_block_for(&tok, Audience::Mcp, now),
            "the look saw the other program's commit"
        );
        assert_eq!(
            auth.authenticate(&tok, Audience::Mcp, now).unwrap_err(),
            AuthError::NotMember
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_role_change_takes_effect_at_once_in_process() {
        let (auth, domain, tok, now) = fixture();
        let before = auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        change_caio(&domain, Some("viewer"));
        let after = auth.authenticate(&tok, Audience::Mcp, now).unwrap();
        assert!(
            after.permissions.len() < before.permissions.len(),
            "{after:?}"
        );
        assert!(
            !auth.may_block_for(&tok, Audience::Mcp, now),
            "the new role is cached"
        );
    }

    #[test]
    fn memberships_expire_and_follow_the_epoch() {
        let c = MembershipCache::new(2, Duration::from_millis(100));
        let m = Arc::new(Membership {
            organization: "o".into(),
            subject: "s".into(),
            permissions: Default::default(),
        });
        let t0 = Instant::now();
        c.insert("o", "s", m.clone(), 3, t0);
        assert!(c.get("o", "s", 3, t0 + Duration::from_millis(99)).is_some());
        assert!(
            c.get("o", "s", 3, t0 + Duration::from_millis(100))
                .is_none(),
            "TTL"
        );
        assert!(c.get("o", "s", 4, t0).is_none(), "another epoch");
        assert!(c.get("o", "t", 3, t0).is_none());
        c.insert("o", "t", m.clone(), 3, t0);
        c.insert("p", "u", m.clone(), 3, t0);
        assert!(c.get("o", "s", 3, t0).is_none(), "cleared when full");
        assert!(c.get("p", "u", 3, t0).is_some());
        let off = MembershipCache::new(0, Duration::from_secs(5));
        off.insert("o", "s", m, 3, t0);
        assert!(off.get("o", "s", 3, t0).is_none());
    }
}
