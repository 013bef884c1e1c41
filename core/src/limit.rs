//! The rate-limit hook (spec §12, step 6 of §15).
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

/// Allows everything (tests, benches).
#[derive(Clone, Copy, Debug, Default)]
pub struct Unlimited;

impl RateLimit for Unlimited {
    fn check(&self, _: &Principal, _: UnixTime) -> Result<(), Limited> {
        Ok(())
    }
}
