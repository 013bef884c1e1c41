//! The per-organization outbound limit (spec §12): messages to debtors and webhook calls,
//! default 60 per minute, GCRA. In-process state; replicas each enforce their share.

use std::collections::HashMap;
use std::sync::Mutex;

use dunning_core::UnixTime;

/// GCRA limiter keyed by organization.
#[derive(Debug)]
pub struct Outbound {
    /// Emission interval in ms (60 000 / per-minute rate).
    interval_ms: u64,
    /// Burst tolerance in ms.
    burst_ms: u64,
    tat: Mutex<HashMap<String, u64>>,
}

impl Outbound {
    /// `per_minute` messages per minute, with a burst of the same size.
    pub fn new(per_minute: u32) -> Self {
        let interval_ms = 60_000 / u64::from(per_minute.max(1));
        Self {
            interval_ms,
            burst_ms: interval_ms * u64::from(per_minute.max(1).saturating_sub(1)),
            tat: Mutex::new(HashMap::new()),
        }
    }

    /// Takes `n` messages of budget for `org` at `now`, or says when to retry.
    /// With `dry_run`, checks without taking.
    pub fn take(&self, org: &str, n: u32, now: UnixTime, dry_run: bool) -> Result<(), u64> {
        let now = now.as_millis();
        let mut map = self
            .tat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tat = map.get(org).copied().unwrap_or(now).max(now);
        let new_tat = tat + self.interval_ms * u64::from(n.max(1));
        let allow_at = new_tat.saturating_sub(self.burst_ms + self.interval_ms);
        if allow_at > now {
            return Err(allow_at - now);
        }
        if !dry_run {
            map.insert(org.to_owned(), new_tat);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixty_per_minute() {
        let o = Outbound::new(60);
        let t = UnixTime::from_secs(1000);
        for _ in 0..60 {
            o.take("a", 1, t, false).unwrap();
        }
        let wait = o.take("a", 1, t, false).unwrap_err();
        assert!(wait > 0 && wait <= 1000, "{wait}");
        assert!(o.take("b", 1, t, false).is_ok(), "per organization");
        assert!(o.take("a", 1, t.plus_millis(wait), false).is_ok());
        assert!(
            o.take("a", 1, t.plus_millis(wait), true).is_err(),
            "dry run checked"
        );
    }
}
