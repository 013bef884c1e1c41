//! What is waiting in the domain's queues right now: the webhook outbox and the exports
//! by state. The binary turns it into gauges after each engine tick.
//!
//! A report the caller records rather than counters kept here: the domain has no global
//! state (no recorder, no clock; `now` is a parameter), so the same call serves the
//! binary's metrics, a test, or an operator's tool alike.

use dunning_core::UnixTime;
use serde_json::json;

use crate::Domain;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::status::{ExportStatus, WebhookDeliveryStatus};
use crate::store::{self, Cond, Kind, Order, Query};

/// Every state an export can be in (`dunning_exports_get`'s `status`).
pub const EXPORT_STATES: [&str; 5] = [
    ExportStatus::Queued.as_str(),
    ExportStatus::Processing.as_str(),
    ExportStatus::Processed.as_str(),
    ExportStatus::Failed.as_str(),
    ExportStatus::Expired.as_str(),
];

/// What is waiting, over every organization.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Webhook deliveries `pending` (due now or waiting for a retry).
    pub webhook_pending: u64,
    /// Age in seconds of the oldest `pending` webhook delivery (`None`: none pending).
    pub oldest_pending_age_secs: Option<u64>,
    /// Exports in each of [`EXPORT_STATES`], in that order.
    pub exports: [u64; EXPORT_STATES.len()],
}

/// Counts the backlog at `now` (one read transaction).
pub fn backlog(domain: &Domain, now: UnixTime) -> Result<Backlog, DomainError> {
    store::read(domain.store(), |tx| {
        let mut b = Backlog::default();
        let mut oldest: Option<i64> = None;
        let pending = || Cond::Eq("status", json!(WebhookDeliveryStatus::Pending));
        for org in tx.organizations()? {
            b.webhook_pending += tx.count(Kind::WebhookDelivery, &org, &[pending()])?;
            let first = Query {
                conds: vec![pending()],
                sort: ("created_at", Order::Asc),
                limit: Some(1),
                offset: 0,
            };
            let at = tx
                .find(Kind::WebhookDelivery, &org, &first)?
                .first()
                .and_then(|d| d.get("created_at")?.as_str().map(str::to_owned))
                .and_then(|t| calendar::parse_timestamp(&t))
                .map(|t| t.timestamp_millis());
            if let Some(at) = at {
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            }
            for (i, state) in EXPORT_STATES.iter().enumerate() {
                b.exports[i] +=
                    tx.count(Kind::Export, &org, &[Cond::Eq("status", json!(state))])?;
            }
        }
        let now_ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
        b.oldest_pending_age_secs =
            oldest.map(|at| u64::try_from(now_ms.saturating_sub(at) / 1000).unwrap_or(0));
        Ok(b)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ops::webhooks::{self, RecordingDriver};
    use crate::testing::{Bed, T0};

    #[test]
    fn an_empty_store_has_no_backlog() {
        let domain = Domain::new(crate::testing::store());
        let b = backlog(&domain, T0).unwrap();
        assert_eq!(b, Backlog::default());
    }

    #[test]
    fn pending_deliveries_their_age_and_exports_are_counted_then_drained() {
        let mut bed = Bed::new();
        let ana = bed.ana();
        bed.ok(
            &ana,
            "dunning_webhooks_create",
            json!({"url": "https://erp.example/hook", "events": ["*"]}),
        );
        bed.ok(
            &ana,
            "dunning_exports_create",
            json!({"resource": "debtors"}),
        );
        let b = backlog(&bed.domain, bed.now.plus_millis(90_000)).unwrap();
        assert_eq!(b.exports[0], 1, "one export queued: {b:?}");
        assert_eq!(b.webhook_pending, 0, "export.created is not published");
        // The engine builds the export; `export.processed` fans out to the webhook.
        let done = crate::ops::exports::drain(&bed.domain, bed.now).unwrap();
        assert_eq!(done.len(), 1);
        let b = backlog(&bed.domain, bed.now.plus_millis(90_000)).unwrap();
        assert_eq!(b.exports, [0, 0, 1, 0, 0], "{b:?}");
        assert!(b.webhook_pending >= 1, "{b:?}");
        assert_eq!(b.oldest_pending_age_secs, Some(90), "{b:?}");
        // The receiver fails once (a retry is scheduled), then answers.
        let driver = RecordingDriver::new();
        driver.respond_with(500, "down");
        let r = webhooks::tick(&bed.domain, bed.now, &driver).unwrap();
        assert_eq!(r.outcomes.retrying, r.attempts, "{r:?}");
        assert!(r.attempts >= 1 && r.outcomes.delivered == 0, "{r:?}");
        driver.respond_with(200, "ok");
        let later = bed.now.plus_millis(24 * 3_600_000);
        let r = webhooks::tick(&bed.domain, later, &driver).unwrap();
        assert_eq!(r.outcomes.delivered, r.attempts, "{r:?}");
        assert!(r.attempts >= 1, "{r:?}");
        let b = backlog(&bed.domain, later).unwrap();
        assert_eq!((b.webhook_pending, b.oldest_pending_age_secs), (0, None));
    }
}
