//! The limiter of replicas: the same GCRA buckets, kept in Redis so that every replica
//! behind the balancer draws on one budget per organization and per token.
//!
//! One Lua script decides a request against both buckets and moves both TATs, or
//! neither, atomically on the Redis server: no replica ever reads a TAT another is about
//! to move. The decision is [`super::Rate::admit`]'s, written in Lua; the refusal (which
//! bucket, how long) is built by the same [`super::refusal`] as the local limiter's.
//!
//! Why Redis and not PostgreSQL: a rate check runs before every request, so it must
//! cost one round trip of microseconds and never take the store's write lock; Redis runs
//! beside PostgreSQL on the product's machines. Why the replica's clock (`now` from the
//! core) and not Redis's `TIME`: the core's clock is the injected one the tests control,
//! and replicas run NTP; a skew of `d` between two replicas moves a bucket by `d`, far
//! below the emission interval of any sane limit.
//!
//! Failure: every Redis call is bounded ([`TIMEOUT`] to connect, read and write, and to
//! wait for a pooled connection). When Redis cannot answer, the replica falls back to
//! its own in-process buckets ([`super::Gcra`]) and says so in the log (at most every
//! [`WARN_EVERY_MS`]): the cluster then admits up to N times the limit, which is better
//! than refusing every caller or stalling on a dead cache. At start, an unreachable
//! Redis is an error: a configured dependency that is absent is a deployment mistake.
//!
//! Keys: `<prefix>:rl:{<org>}:org` and `<prefix>:rl:{<org>}:token:<token>` (the prefix is
//! `shared_prefix`, `kobana-dunning` by default),
//! hex digests of [`super::org_key`] and [`super::token_key`] (no tenant data), with the
//! organization as the hash tag so both keys of a script live in one Redis Cluster slot.
//! Each key expires when its TAT passes, so Redis holds only recently active callers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::ConnectionLike as _;

use dunning_core::{Limited, Principal, RateLimit, UnixTime};

use super::{Gcra, Rate, both, org_key, refusal, token_key};
use crate::settings::RateLimits;

/// Bound of every Redis operation: connecting, a command's write and read, a pooled
/// connection's wait.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(250);

/// Least time between two warnings that Redis failed.
const WARN_EVERY_MS: u64 = 10_000;

/// Connections kept to Redis per replica.
const POOL_SIZE: u32 = 16;

/// Decides one request against both buckets. `ARGV`: now, then interval and burst of the
/// organization's bucket, then of the token's (microseconds). Answers how far each bucket
/// is over its limit (`<= 0`: within); both TATs move only when both are within.
const SCRIPT: &str = r"
local now = tonumber(ARGV[1])
local function admit(key, interval, burst)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local nxt = tat + interval
  return nxt, nxt - now - burst * interval
end
local o_next, o_over = admit(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
local t_next, t_over = admit(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]))
if o_over <= 0 and t_over <= 0 then
  redis.call('SET', KEYS[1], string.format('%d', o_next), 'PX', math.floor((o_next - now) / 1000) + 1)
  redis.call('SET', KEYS[2], string.format('%d', t_next), 'PX', math.floor((t_next - now) / 1000) + 1)
  return {0, 0}
end
return {o_over, t_over}
";

/// Opens Redis connections with [`TIMEOUT`] on every operation.
#[derive(Debug)]
struct Connector(redis::Client);

impl r2d2::ManageConnection for Connector {
    type Connection = redis::Connection;
    type Error = redis::RedisError;

    fn connect(&self) -> Result<redis::Connection, redis::RedisError> {
        let con = self.0.get_connection_with_timeout(TIMEOUT)?;
        con.set_read_timeout(Some(TIMEOUT))?;
        con.set_write_timeout(Some(TIMEOUT))?;
        Ok(con)
    }

    fn is_valid(&self, con: &mut redis::Connection) -> Result<(), redis::RedisError> {
        redis::cmd("PING").query(con)
    }

    fn has_broken(&self, con: &mut redis::Connection) -> bool {
        !con.is_open()
    }
}

/// The product's [`RateLimit`] for replicas: buckets in Redis, the local ones as a
/// fallback.
pub(crate) struct SharedGcra {
    org: Rate,
    token: Rate,
    pool: r2d2::Pool<Connector>,
    script: redis::Script,
    prefix: String,
    fallback: Gcra,
    /// When the last warning was logged (Unix milliseconds; 0: never).
    warned_at: AtomicU64,
}

impl std::fmt::Debug for SharedGcra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedGcra")
            .field("org", &self.org)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl SharedGcra {
    /// Limits from `[rate_limit]`, kept at `url`; an error when Redis does not answer a
    /// `PING` now.
    pub(crate) fn connect(cfg: &RateLimits, url: &str) -> Result<Self, String> {
        let limiter = Self::unchecked(cfg, url)?;
        let mut con = limiter
            .pool
            .get()
            .map_err(|e| format!("cannot reach {url}: {e}"))?;
        redis::cmd("PING")
            .query::<()>(&mut *con)
            .map_err(|e| format!("{url}: PING: {e}"))?;
        drop(con);
        Ok(limiter)
    }

    /// The limiter, without asking Redis whether it is there.
    fn unchecked(cfg: &RateLimits, url: &str) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(0))
            .connection_timeout(TIMEOUT)
            .test_on_check_out(false)
            .build_unchecked(Connector(client));
        Ok(Self {
            org: Rate::new(cfg.org_per_minute, cfg.org_burst),
            token: Rate::new(cfg.token_per_minute, cfg.token_burst),
            pool,
            script: redis::Script::new(SCRIPT),
            prefix: cfg.shared_prefix.clone(),
            fallback: Gcra::new(cfg),
            warned_at: AtomicU64::new(0),
        })
    }

    /// How far over its limit each bucket is, in microseconds, from Redis.
    fn ask(&self, principal: &Principal, now_us: u64) -> Result<(i64, i64), String> {
        let org = hex(&org_key(principal));
        let prefix = &self.prefix;
        let keys = [
            format!("{prefix}:rl:{{{org}}}:org"),
            format!("{prefix}:rl:{{{org}}}:token:{}", hex(&token_key(principal))),
        ];
        let mut con = self.pool.get().map_err(|e| e.to_string())?;
        self.script
            .key(&keys[0])
            .key(&keys[1])
            .arg(now_us)
            .arg(self.org.gcra.interval)
            .arg(self.org.gcra.burst)
            .arg(self.token.gcra.interval)
            .arg(self.token.gcra.burst)
            .invoke(&mut *con)
            .map_err(|e| e.to_string())
    }

    fn warn(&self, now: UnixTime, error: &str) {
        let now_ms = now.as_millis();
        let last = self.warned_at.load(Ordering::Relaxed);
        if (last == 0 || now_ms.saturating_sub(last) >= WARN_EVERY_MS)
            && self
                .warned_at
                .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                error,
                "rate_limit.shared: Redis did not answer; limiting with this replica's own buckets"
            );
        }
    }
}

impl RateLimit for SharedGcra {
    /// The authorization server's address buckets stay in this replica
    /// ([`super::Gcra`]): behind the balancer every caller has the balancer's address
    /// anyway, and a sign-in's few requests need no cluster-wide count; a cluster admits
    /// up to N times `oauth_per_minute` per address.
    fn check_peer(&self, peer: std::net::IpAddr, now: UnixTime) -> Result<(), Limited> {
        self.fallback.check_peer(peer, now)
    }

    fn check(&self, principal: &Principal, now: UnixTime) -> Result<(), Limited> {
        let now_us = now.as_millis().saturating_mul(1000);
        let (org_over, token_over) = match self.ask(principal, now_us) {
            Ok(over) => over,
            Err(e) => {
                self.warn(now, &e);
                return self.fallback.check(principal, now);
            }
        };
        let verdict = |over: i64| {
            u64::try_from(over)
                .ok()
                .filter(|&o| o > 0)
                .map_or(Ok(0), Err)
        };
        match both(verdict(org_over), verdict(token_over)) {
            Ok(_) => Ok(()),
            Err((bucket, wait)) => Err(refusal(self.org, self.token, bucket, wait)),
        }
    }

    /// The buckets are in Redis: every check is a round trip, kept off the reactor.
    fn may_block(&self) -> bool {
        true
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(32), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    //! Against the Redis of the project's machines (127.0.0.1:6379, started before every
    //! session and by `.ci/run`; `DUNNING_TEST_REDIS` names another). Every test uses
    //! organizations of its own, so runs never share buckets.

    use std::time::Instant;

    use super::*;
    use crate::limiter::tests::{limits, who};

    fn redis_url() -> String {
        std::env::var("DUNNING_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into())
    }

    /// A name no other run uses.
    fn unique(tag: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("{tag}-{}-{nanos}", std::process::id())
    }

    fn replica(cfg: &RateLimits) -> SharedGcra {
        SharedGcra::connect(cfg, &redis_url())
            .unwrap_or_else(|e| panic!("Redis must run for this test ({e}); see .ci/run"))
    }

    #[test]
    fn two_replicas_draw_on_one_budget() {
        let cfg = limits((6000, 1000), (60, 3));
        let (a, b) = (replica(&cfg), replica(&cfg));
        let t0 = UnixTime::from_secs(1_800_000_000);
        let p = who(&unique("two"), "a");
        assert!(a.check(&p, t0).is_ok());
        assert!(b.check(&p, t0).is_ok());
        assert!(a.check(&p, t0).is_ok());
        let refused = b.check(&p, t0).unwrap_err();
        assert_eq!(refused.retry_after_ms, 1000);
        assert_eq!(refused.state, "\"token\";r=0;t=1");
        assert_eq!(refused.policy, "\"org\";q=6000;w=60, \"token\";q=60;w=60");
        assert!(a.check(&p, t0.plus_millis(999)).is_err());
        assert!(
            b.check(&p, t0.plus_millis(1000)).is_ok(),
            "one refill, on either replica"
        );
        assert!(a.check(&p, t0.plus_millis(1000)).is_err());
    }

    #[test]
    fn decides_as_the_local_limiter_does() {
        // Organization bucket 60/min burst 4, token 120/min burst 3: both buckets refuse
        // at some point, and refusals are counted in neither.
        let cfg = limits((60, 4), (120, 3));
        let shared = replica(&cfg);
        let local = Gcra::new(&cfg);
        let org = unique("same");
        let t0 = UnixTime::from_secs(1_800_000_000);
        let mut refusals = 0;
        for i in 0..300u64 {
            let p = who(&org, ["a", "b", "c"][(i % 3) as usize]);
            let at = t0.plus_millis(i * i % 997 + i * 137);
            let (s, l) = (shared.check(&p, at), local.check(&p, at));
            assert_eq!(s, l, "request {i} at {at:?}");
            refusals += usize::from(l.is_err());
        }
        assert!(
            refusals > 20,
            "the sequence reaches the limits ({refusals} refusals)"
        );
    }

    #[test]
    fn an_unreachable_redis_is_an_error_at_start() {
        let err = SharedGcra::connect(&RateLimits::default(), "redis://127.0.0.1:1/").unwrap_err();
        assert!(err.contains("cannot reach redis://127.0.0.1:1/"), "{err}");
        let err = SharedGcra::connect(&RateLimits::default(), "http://x/").unwrap_err();
        assert!(err.starts_with("http://x/"), "{err}");
    }

    #[test]
    fn a_redis_that_goes_away_leaves_the_local_buckets_in_charge_quickly() {
        let cfg = limits((6000, 1000), (60, 2));
        let gone = SharedGcra::unchecked(&cfg, "redis://127.0.0.1:1/").unwrap();
        let t0 = UnixTime::from_secs(1_800_000_000);
        let p = who("o1", "a");
        let started = Instant::now();
        assert!(gone.check(&p, t0).is_ok());
        assert!(gone.check(&p, t0).is_ok());
        let refused = gone.check(&p, t0).unwrap_err();
        assert_eq!(refused.state, "\"token\";r=0;t=1");
        assert!(
            started.elapsed() < 4 * TIMEOUT,
            "bounded waits: {:?}",
            started.elapsed()
        );
    }
}
