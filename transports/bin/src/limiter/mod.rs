//! Rate limiting (`[rate_limit]`): GCRA per organization and per token.
//!
//! GCRA keeps one number per bucket, the theoretical arrival time (TAT). With emission
//! interval `T = 60 s / per_minute` and burst `b`, a request at `now` is allowed when
//! `max(TAT, now) + T - now <= b·T`, and then moves TAT there: `b` requests may arrive at
//! once, after which they flow at `per_minute`. A request must pass both the
//! organization's and the token's bucket; it is counted in both or in neither.
//!
//! A refusal carries IETF `RateLimit-Policy` / `RateLimit` values
//! (draft-ietf-httpapi-ratelimit-headers): both policies, and the state (`r=0`, `t` =
//! seconds until a retry may pass) of the bucket that refused.
//!
//! "Per token": the core hands the limiter a [`Principal`], not the token, so a token
//! is identified by what the principal holds of it: organization, subject, audience,
//! expiry and scopes. Two tokens equal in all of those share a bucket.
//!
//! "Per address": the embedded authorization server's open endpoints (`/register`,
//! `/authorize`, `/token`) have no principal to count against, so a third table of
//! buckets counts them by the client's IP address ([`RateLimit::check_peer`],
//! `oauth_per_minute` / `oauth_burst`). IPv6 addresses count by their /64, the block
//! one host or one subscriber is handed, so one machine cannot step through its
//! addresses to escape the limit.
//!
//! Buckets whose TAT is in the past are equivalent to absent ones and are swept when the
//! table grows, so memory follows the number of recently active callers.
//!
//! Two homes for the buckets: this process ([`Gcra`], the default, right for one server)
//! or Redis ([`shared::SharedGcra`], `[rate_limit] shared = "redis://..."`), so that
//! replicas behind a balancer limit a caller as one server would. Both make
//! the same decision from the same numbers; only where the TATs live differs.

pub(crate) mod shared;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use dunning_core::{Audience, Limited, Principal, RateLimit, UnixTime};
use sha2::{Digest, Sha256};

use crate::settings::RateLimits;

/// One bucket's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rate {
    /// The bucket, in microseconds.
    gcra: dunning_core::Gcra,
    /// Requests per minute (for the policy header).
    per_minute: u32,
}

impl Rate {
    pub(crate) fn new(per_minute: u32, burst: u32) -> Self {
        Self {
            gcra: dunning_core::Gcra::per_minute(per_minute, burst, 60_000_000),
            per_minute,
        }
    }

    /// The new TAT if a request at `now` is allowed, else how long until it would be.
    fn admit(self, tat: Option<u64>, now: u64) -> Result<u64, u64> {
        self.gcra.admit(tat, now, 1, 0)
    }
}

#[derive(Debug, Default)]
struct Table {
    tats: HashMap<[u8; 16], u64>,
    sweep_at: usize,
}

impl Table {
    fn sweep(&mut self, now: u64) {
        if self.tats.len() >= self.sweep_at.max(4096) {
            self.tats.retain(|_, tat| *tat > now);
            self.sweep_at = self.tats.len() * 2;
        }
    }
}

/// The product's [`RateLimit`]: organization and token buckets, and the address
/// buckets of the authorization server's endpoints.
#[derive(Debug)]
pub(crate) struct Gcra {
    org: Rate,
    token: Rate,
    peer: Rate,
    state: Mutex<(Table, Table)>,
    /// Apart from `state`: a burst of sign-ins never waits on the MCP traffic's lock.
    peers: Mutex<Table>,
}

impl Gcra {
    /// Limits from `[rate_limit]`.
    pub(crate) fn new(cfg: &RateLimits) -> Self {
        Self {
            org: Rate::new(cfg.org_per_minute, cfg.org_burst),
            token: Rate::new(cfg.token_per_minute, cfg.token_burst),
            peer: Rate::new(cfg.oauth_per_minute, cfg.oauth_burst),
            state: Mutex::default(),
            peers: Mutex::default(),
        }
    }
}

/// Bucket key of a client address: an IPv4 address (or one mapped into IPv6) as itself,
/// an IPv6 address by its /64.
pub(crate) fn peer_key(peer: IpAddr) -> [u8; 16] {
    match peer {
        IpAddr::V4(v4) => digest(&[b"ip4", &v4.octets()]),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => digest(&[b"ip4", &v4.octets()]),
            None => digest(&[b"ip6", &v6.octets()[..8]]),
        },
    }
}

/// The refusal of the address bucket `rate`, which lets a request pass in `wait_us`.
pub(crate) fn peer_refusal(rate: Rate, wait_us: u64) -> Limited {
    metrics::counter!(crate::telemetry::metrics::RATE_LIMITED, "scope" => "address").increment(1);
    let retry_after_ms = wait_us.div_ceil(1000).max(1);
    Limited {
        retry_after_ms,
        policy: format!("\"address\";q={};w=60", rate.per_minute),
        state: format!("\"address\";r=0;t={}", retry_after_ms.div_ceil(1000).max(1)),
    }
}

/// The `RateLimit-Policy` value of a pair of rates.
fn policy(org: Rate, token: Rate) -> String {
    format!(
        "\"org\";q={};w=60, \"token\";q={};w=60",
        org.per_minute, token.per_minute
    )
}

/// Which bucket refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bucket {
    Org,
    Token,
}

/// The refusal of `bucket`, which lets a request pass in `wait_us`.
pub(crate) fn refusal(org: Rate, token: Rate, bucket: Bucket, wait_us: u64) -> Limited {
    let name = match bucket {
        Bucket::Org => "org",
        Bucket::Token => "token",
    };
    // Both limiters (local and shared) refuse through here: counted once, by bucket.
    metrics::counter!(crate::telemetry::metrics::RATE_LIMITED, "scope" => name).increment(1);
    let retry_after_ms = wait_us.div_ceil(1000).max(1);
    Limited {
        retry_after_ms,
        policy: policy(org, token),
        state: format!("\"{name}\";r=0;t={}", retry_after_ms.div_ceil(1000).max(1)),
    }
}

/// Both buckets' new TATs when both admit the request; else the bucket whose wait
/// decides (the longer wait, the organization's on a tie) and that wait.
pub(crate) fn both(
    org: Result<u64, u64>,
    token: Result<u64, u64>,
) -> Result<(u64, u64), (Bucket, u64)> {
    match (org, token) {
        (Ok(o), Ok(t)) => Ok((o, t)),
        (Err(a), Err(b)) if a >= b => Err((Bucket::Org, a)),
        (Err(a), Ok(_)) => Err((Bucket::Org, a)),
        (_, Err(b)) => Err((Bucket::Token, b)),
    }
}

/// Bucket key of an organization.
pub(crate) fn org_key(p: &Principal) -> [u8; 16] {
    digest(&[b"org", p.organization.as_bytes()])
}

/// Bucket key of a token, from what the principal holds of it.
pub(crate) fn token_key(p: &Principal) -> [u8; 16] {
    let aud: &[u8] = match p.audience {
        Audience::Mcp => b"mcp",
        Audience::Api => b"api",
    };
    let exp = p.expires_at.as_millis().to_be_bytes();
    let scopes = p.scopes.join(" ");
    digest(&[
        b"token",
        p.organization.as_bytes(),
        p.subject.as_bytes(),
        aud,
        &exp,
        scopes.as_bytes(),
    ])
}

fn digest(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let d = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

impl RateLimit for Gcra {
    fn check(&self, principal: &Principal, now: UnixTime) -> Result<(), Limited> {
        let now_us = now.as_millis().saturating_mul(1000);
        let (ok, tk) = (org_key(principal), token_key(principal));
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (orgs, tokens) = &mut *guard;
        let org = self.org.admit(orgs.tats.get(&ok).copied(), now_us);
        let token = self.token.admit(tokens.tats.get(&tk).copied(), now_us);
        match both(org, token) {
            Ok((o, t)) => {
                orgs.sweep(now_us);
                tokens.sweep(now_us);
                orgs.tats.insert(ok, o);
                tokens.tats.insert(tk, t);
                Ok(())
            }
            Err((bucket, wait)) => Err(refusal(self.org, self.token, bucket, wait)),
        }
    }

    fn check_peer(&self, peer: IpAddr, now: UnixTime) -> Result<(), Limited> {
        let now_us = now.as_millis().saturating_mul(1000);
        let key = peer_key(peer);
        let mut table = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        match self.peer.admit(table.tats.get(&key).copied(), now_us) {
            Ok(tat) => {
                table.sweep(now_us);
                table.tats.insert(key, tat);
                Ok(())
            }
            Err(wait) => Err(peer_refusal(self.peer, wait)),
        }
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    pub(super) fn who(org: &str, sub: &str) -> Principal {
        Principal {
            subject: sub.into(),
            organization: org.into(),
            scope: None,
            scopes: vec!["dunning.read".into()],
            permissions: Default::default(),
            expires_at: UnixTime::from_secs(2_000_000_000),
            audience: Audience::Mcp,
        }
    }

    pub(super) fn limits(org: (u32, u32), token: (u32, u32)) -> RateLimits {
        RateLimits {
            org_per_minute: org.0,
            org_burst: org.1,
            token_per_minute: token.0,
            token_burst: token.1,
            ..RateLimits::default()
        }
    }

    #[test]
    fn burst_then_rate() {
        let g = Gcra::new(&limits((6000, 1000), (60, 3)));
        let t0 = UnixTime::from_secs(1_800_000_000);
        let p = who("o1", "a");
        for _ in 0..3 {
            assert!(g.check(&p, t0).is_ok());
        }
        let l = g.check(&p, t0).unwrap_err();
        assert_eq!(l.retry_after_ms, 1000);
        assert_eq!(l.state, "\"token\";r=0;t=1");
        assert_eq!(l.policy, "\"org\";q=6000;w=60, \"token\";q=60;w=60");
        assert!(g.check(&p, t0.plus_millis(999)).is_err());
        assert!(g.check(&p, t0.plus_millis(1000)).is_ok());
        assert!(g.check(&p, t0.plus_millis(1000)).is_err());
        // Another token of the same organization has its own bucket.
        assert!(g.check(&who("o1", "b"), t0).is_ok());
    }

    #[test]
    fn organization_bucket_is_shared() {
        let g = Gcra::new(&limits((60, 2), (1200, 200)));
        let t0 = UnixTime::from_secs(1_800_000_000);
        assert!(g.check(&who("o1", "a"), t0).is_ok());
        assert!(g.check(&who("o1", "b"), t0).is_ok());
        let l = g.check(&who("o1", "c"), t0).unwrap_err();
        assert!(l.state.starts_with("\"org\""));
        assert!(g.check(&who("o2", "a"), t0).is_ok(), "other organization");
    }

    #[test]
    fn refused_requests_are_not_counted() {
        let g = Gcra::new(&limits((60, 1), (60, 5)));
        let t0 = UnixTime::from_secs(1_800_000_000);
        let p = who("o1", "a");
        assert!(g.check(&p, t0).is_ok());
        for _ in 0..10 {
            assert!(g.check(&p, t0).is_err());
        }
        // The token bucket did not pay for the refusals: after the org refills, it passes.
        assert!(g.check(&p, t0.plus_millis(1000)).is_ok());
    }

    #[test]
    fn defaults_allow_the_documented_burst() {
        let g = Gcra::new(&RateLimits::default());
        let t0 = UnixTime::from_secs(1_800_000_000);
        let p = who("o1", "a");
        for i in 0..200 {
            assert!(g.check(&p, t0).is_ok(), "{i}");
        }
        let l = g.check(&p, t0).unwrap_err();
        assert_eq!(l.retry_after_ms, 50, "1200/min = one every 50 ms");
    }

    #[test]
    fn addresses_have_their_own_buckets() {
        let cfg = RateLimits {
            oauth_per_minute: 60,
            oauth_burst: 2,
            ..limits((1, 1), (1, 1))
        };
        let g = Gcra::new(&cfg);
        let t0 = UnixTime::from_secs(1_800_000_000);
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        assert!(g.check_peer(a, t0).is_ok());
        assert!(g.check_peer(a, t0).is_ok());
        let l = g.check_peer(a, t0).unwrap_err();
        assert_eq!(l.retry_after_ms, 1000);
        assert_eq!(l.policy, "\"address\";q=60;w=60");
        assert_eq!(l.state, "\"address\";r=0;t=1");
        assert!(g.check_peer(a, t0.plus_millis(1000)).is_ok());
        // Another address, and the MCP buckets, are apart.
        assert!(g.check_peer("192.0.2.8".parse().unwrap(), t0).is_ok());
        assert!(g.check(&who("o1", "a"), t0).is_ok());
        // The same IPv4 address mapped into IPv6 is the same caller.
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert!(g.check_peer(mapped, t0.plus_millis(1000)).is_err());
    }

    #[test]
    fn ipv6_addresses_count_by_their_64() {
        let cfg = RateLimits {
            oauth_per_minute: 60,
            oauth_burst: 1,
            ..RateLimits::default()
        };
        let g = Gcra::new(&cfg);
        let t0 = UnixTime::from_secs(1_800_000_000);
        assert!(g.check_peer("2001:db8:1:2::1".parse().unwrap(), t0).is_ok());
        assert!(
            g.check_peer("2001:db8:1:2::ffff".parse().unwrap(), t0)
                .is_err()
        );
        assert!(g.check_peer("2001:db8:1:3::1".parse().unwrap(), t0).is_ok());
    }

    #[test]
    fn sweep_forgets_idle_buckets() {
        let g = Gcra::new(&limits((6000, 1000), (1200, 200)));
        let t0 = UnixTime::from_secs(1_800_000_000);
        for i in 0..5000 {
            assert!(g.check(&who(&format!("o{i}"), "a"), t0).is_ok());
        }
        let later = t0.plus_millis(3_600_000);
        for i in 0..4000 {
            assert!(g.check(&who(&format!("p{i}"), "a"), later).is_ok());
        }
        let n = g.state.lock().unwrap().0.tats.len();
        assert!(n <= 4000, "{n}");
    }
}
