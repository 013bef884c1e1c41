//! The rate-limit hook (step 6 of the processing order).
//!
//! The decision is the implementation's (its state — buckets per token and per
//! organization — lives outside the core); the core only turns a refusal into the `429`.

use core::net::IpAddr;

use crate::env::UnixTime;
use crate::principal::Principal;

/// A refusal: the caller is over a limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limited {
    /// When the caller may retry, in milliseconds.
    pub retry_after_ms: u64,
    /// `RateLimit-Policy` header value (IETF draft), e.g. `"token";q=1200;w=60`.
    pub policy: String,
    /// `RateLimit` header value, e.g. `"token";r=0;t=3`.
    pub state: String,
}

/// Decides whether one more request is allowed.
pub trait RateLimit: Send + Sync {
    /// Counts one request of `principal` at `now`, or refuses it.
    fn check(&self, principal: &Principal, now: UnixTime) -> Result<(), Limited>;

    /// Counts one request from `peer` at `now` to the embedded authorization server's
    /// `/register`, `/authorize` or `/token`, or refuses it. Those endpoints are open (no
    /// token yet, and registration needs none), so the caller's address is all there is
    /// to count; without an address (an adapter that does not know it) nothing is
    /// counted. Default: no limit.
    fn check_peer(&self, _peer: IpAddr, _now: UnixTime) -> Result<(), Limited> {
        Ok(())
    }

    /// Whether [`RateLimit::check`] may wait on something other than the CPU (a shared
    /// store of buckets over the network): an async adapter then keeps every request that
    /// reaches it off its reactor. In-process buckets are pure, hence the default.
    fn may_block(&self) -> bool {
        false
    }
}

/// One GCRA bucket (the generic cell rate algorithm): what every limit of the product
/// counts with, whatever keeps its state (in-process maps, the outbound budgets) and
/// whatever the time unit (the caller's: µs, ms). A bucket is one number per key, its
/// theoretical arrival time (TAT); a request is allowed while the TAT it would leave
/// stays within `burst` intervals of now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    /// Time between two units at the sustained rate.
    pub interval: u64,
    /// Units allowed at once.
    pub burst: u64,
}

impl Gcra {
    /// `per_minute` units a minute with bursts of `burst`, in time units of which a
    /// minute has `minute` (60,000 for ms, 60,000,000 for µs).
    pub fn per_minute(per_minute: u32, burst: u32, minute: u64) -> Self {
        Self {
            interval: minute / u64::from(per_minute.max(1)),
            burst: u64::from(burst.max(1)),
        }
    }

    /// The TAT to keep if `cost` units are taken at `now` with room for `keep` more units
    /// left after them (background work leaves what a person was told to come back for),
    /// or how long until the same request would be allowed. `tat` is the key's TAT, if it
    /// has one.
    pub fn admit(self, tat: Option<u64>, now: u64, cost: u64, keep: u64) -> Result<u64, u64> {
        let next = tat.unwrap_or(now).max(now) + self.interval * cost.max(1);
        let needed = next + self.interval * keep - now;
        let window = self.burst * self.interval;
        if needed > window {
            Err(needed - window)
        } else {
            Ok(next)
        }
    }
}

/// Allows everything (tests, benches).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl RateLimit for Unlimited {
    fn check(&self, _: &Principal, _: UnixTime) -> Result<(), Limited> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Gcra;

    /// A burst of `burst` at once, then one unit per interval; a refusal says exactly
    /// when; a reserve keeps units back; a cost of `n` is `n` units.
    #[test]
    fn burst_then_rate_with_cost_and_reserve() {
        let g = Gcra::per_minute(60, 3, 60_000);
        assert_eq!(
            g,
            Gcra {
                interval: 1_000,
                burst: 3
            }
        );
        let mut tat = None;
        for _ in 0..3 {
            tat = Some(g.admit(tat, 0, 1, 0).expect("within the burst"));
        }
        assert_eq!(g.admit(tat, 0, 1, 0), Err(1_000));
        assert_eq!(g.admit(tat, 1_000, 1, 0), Ok(4_000));
        // At 1 s one unit is free: a caller that must leave one gets nothing.
        assert_eq!(g.admit(tat, 1_000, 1, 1), Err(1_000));
        // Two units at once cost two intervals.
        assert_eq!(g.admit(None, 0, 2, 0), Ok(2_000));
        assert_eq!(g.admit(Some(2_000), 0, 2, 0), Err(1_000));
    }
}
