//! The per-organization outbound limits (`[rate_limit]`): default 60 per minute each, GCRA.
//! In-process state; replicas each enforce their share.
//!
//! There is one budget per [`Budget`] kind, so the two never starve each other (a
//! backlog of 3,807 webhook deliveries used to hold off every message to
//! debtors for an hour):
//!
//! * [`Budget::Messages`]: messages to debtors (notifications, bulk sends, agreement
//!   proposals, negativação notices);
//! * [`Budget::Webhooks`]: webhook calls (the outbox and `dunning_webhooks_test`).
//!
//! A refusal carries `retry_after_ms`, the exact moment the budget has room for the
//! request. The hint stays honest because the one background spender, the webhook
//! outbox, takes through [`Outbound::take_leaving`] with a reserve of one unit: it never
//! spends the unit a person was told to come back for.

use std::collections::HashMap;
use std::sync::Mutex;

use dunning_core::{Gcra, UnixTime};

/// What an outbound unit is spent on; each kind has its own budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Budget {
    /// Messages to debtors.
    Messages,
    /// Webhook calls.
    Webhooks,
}

/// GCRA limiters keyed by organization, one per [`Budget`].
#[derive(Debug)]
pub struct Outbound {
    /// The bucket's parameters, in ms.
    rate: Gcra,
    /// Theoretical arrival times: `[messages, webhooks]`.
    tat: [Mutex<HashMap<String, u64>>; 2],
}

impl Outbound {
    /// `per_minute` units per minute for each budget, with a burst of the same size.
    pub fn new(per_minute: u32) -> Self {
        Self {
            rate: Gcra::per_minute(per_minute, per_minute, 60_000),
            tat: [Mutex::new(HashMap::new()), Mutex::new(HashMap::new())],
        }
    }

    /// Takes `n` units of `budget` for `org` at `now`, or says in how many ms the same
    /// request would be taken. With `dry_run`, checks without taking.
    pub fn take(
        &self,
        org: &str,
        budget: Budget,
        n: u32,
        now: UnixTime,
        dry_run: bool,
    ) -> Result<(), u64> {
        self.take_leaving(org, budget, n, 0, now, dry_run)
    }

    /// Like [`Outbound::take`], but only while `keep` more units would still be left
    /// afterwards: for background work, which must not spend what a person is waiting
    /// for.
    pub fn take_leaving(
        &self,
        org: &str,
        budget: Budget,
        n: u32,
        keep: u32,
        now: UnixTime,
        dry_run: bool,
    ) -> Result<(), u64> {
        let now = now.as_millis();
        let mut map = self.tat[budget as usize]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let new_tat = self
            .rate
            .admit(map.get(org).copied(), now, u64::from(n), u64::from(keep))?;
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
            o.take("a", Budget::Messages, 1, t, false).unwrap();
        }
        let wait = o.take("a", Budget::Messages, 1, t, false).unwrap_err();
        assert!(wait > 0 && wait <= 1000, "{wait}");
        assert!(
            o.take("b", Budget::Messages, 1, t, false).is_ok(),
            "per organization"
        );
        assert!(
            o.take("a", Budget::Messages, 1, t.plus_millis(wait), false)
                .is_ok()
        );
        assert!(
            o.take("a", Budget::Messages, 1, t.plus_millis(wait), true)
                .is_err(),
            "dry run checked"
        );
    }

    #[test]
    fn budgets_are_separate() {
        let o = Outbound::new(60);
        let t = UnixTime::from_secs(1000);
        while o.take("a", Budget::Webhooks, 1, t, false).is_ok() {}
        assert!(o.take("a", Budget::Messages, 1, t, false).is_ok());
        while o.take("a", Budget::Messages, 1, t, false).is_ok() {}
        assert!(o.take("a", Budget::Webhooks, 1, t, false).is_err());
    }

    /// A hint followed is honoured, even while the background spends the same budget as
    /// fast as it may.
    #[test]
    fn a_followed_hint_is_honoured_despite_the_background() {
        let o = Outbound::new(60);
        let mut now = UnixTime::from_secs(1000);
        while o.take("a", Budget::Webhooks, 1, now, false).is_ok() {}
        for _ in 0..50 {
            let wait = o.take("a", Budget::Webhooks, 1, now, true).unwrap_err();
            // The outbox ticks every few ms until then, taking whatever it may.
            let until = now.plus_millis(wait);
            while now.as_millis() < until.as_millis() {
                now = now.plus_millis(7.min(until.as_millis() - now.as_millis()));
                let _ = o.take_leaving("a", Budget::Webhooks, 1, 1, now, false);
            }
            assert!(
                o.take("a", Budget::Webhooks, 1, now, false).is_ok(),
                "refused again after waiting {wait} ms"
            );
        }
    }
}
