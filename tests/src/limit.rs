//! A deterministic [`RateLimit`]: one person (`rate@demo.example`, token `tok-limited`) is
//! always over the limit; everybody else never is.

use dunning_core::UnixTime;
use dunning_core::limit::{Limited, RateLimit};
use dunning_core::principal::Principal;

/// The subject [`TestLimiter`] refuses.
pub const LIMITED_SUBJECT: &str = "rate@demo.example";

/// How long [`TestLimiter`] tells the refused caller to wait (`Retry-After: 2`).
pub const RETRY_AFTER_MS: u64 = 1_500;

/// Refuses [`LIMITED_SUBJECT`], allows everybody else.
#[derive(Clone, Copy, Debug, Default)]
pub struct TestLimiter;

impl RateLimit for TestLimiter {
    fn check(&self, principal: &Principal, _now: UnixTime) -> Result<(), Limited> {
        if principal.subject == LIMITED_SUBJECT {
            return Err(Limited {
                retry_after_ms: RETRY_AFTER_MS,
                policy: r#""token";q=1200;w=60"#.into(),
                state: r#""token";r=0;t=2"#.into(),
            });
        }
        Ok(())
    }
}
