//! Demo data of the exports group: a webhook, three exports and their deliveries.

use dunning_core::{Output, UnixTime};
use serde_json::{Value, json};

use super::handlers::create_export;
use super::worker::process;
use crate::Domain;
use crate::brazil::calendar;
use crate::catalog::name;
use crate::error::DomainError;
use crate::status::WebhookDeliveryStatus;
use crate::store::{self, Cond, Kind, Order, Query};

/// Answers 503 for the deliveries whose payload mentions `failing`, 200 otherwise.
struct DemoDriver {
    failing: String,
}

impl crate::ops::webhooks::WebhookDriver for DemoDriver {
    fn post(
        &self,
        request: &crate::ops::webhooks::WebhookRequest,
    ) -> crate::ops::webhooks::WebhookResponse {
        let fail = request.body.contains(&self.failing);
        crate::ops::webhooks::WebhookResponse {
            status: Some(if fail { 503 } else { 200 }),
            body: if fail {
                "Service Unavailable".into()
            } else {
                "{\"received\":true}".into()
            },
            duration_ms: if fail { 1200 } else { 85 },
            error: None,
        }
    }
}

/// Demo data of this group, for the `demo` organization only: a webhook receiving every
/// event, three exports (two processed three days ago and now expired, one processed a
/// few minutes ago), and the webhook's deliveries of their `export.processed` events:
/// one failed after the whole retry schedule, two delivered.
pub fn seed_demo(
    domain: &Domain,
    who: &dunning_core::Principal,
    now: UnixTime,
    rng: &mut crate::demo::Rng,
    _seeded: &crate::demo::Seeded,
    _charges: usize,
) -> Result<(), DomainError> {
    if who.organization != crate::demo::stable_id("org:demo") {
        return Ok(());
    }
    let org = who.organization.clone();
    let day = 86_400_000;
    let start = UnixTime::from_millis(now.as_millis().saturating_sub(3 * day));
    let body = |out: Output| match out {
        Output::Json { body, .. } => body.into_value(),
        _ => Value::Null,
    };
    let webhook_create = crate::ops::webhooks::tools()
        .into_iter()
        .find(|t| t.def.name == name::WEBHOOKS_CREATE)
        .map(|t| t.run)
        .ok_or_else(|| store::StoreError("no webhook create tool".into()))?;
    let run = |at: UnixTime, entropy: [u8; 32], f: crate::tool::Run, args: Value| {
        crate::demo::run_as(domain, who, at, entropy, f, args).map(body)
    };
    run(
        start,
        rng.entropy(),
        webhook_create,
        json!({
            "url": "https://erp.demo.example/webhooks/kobana",
            "events": ["*"],
            "description": "ERP integration (demo)",
        }),
    )?;
    let first = run(
        start,
        rng.entropy(),
        create_export,
        json!({"resource": "debtors", "filters": {"status": "active"}}),
    )?;
    run(
        start,
        rng.entropy(),
        create_export,
        json!({"resource": "debtors", "filters": {"has_overdue": true}}),
    )?;
    let failing = first
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let driver = DemoDriver { failing };
    let mut at = start;
    for _ in 0..2 {
        at = at.plus_millis(60_000);
        crate::ops::webhooks::with_system_op(domain, &org, at, Some(rng.entropy()), process)?;
    }
    // Walk the retry schedule until nothing is pending.
    for _ in 0..=crate::ops::webhooks::RETRY_SCHEDULE_SECS.len() {
        crate::ops::webhooks::with_system_op(domain, &org, at, Some(rng.entropy()), |op| {
            crate::ops::webhooks::deliver(op, &driver)
        })?;
        let next = store::read(domain.store(), |tx| {
            let q = Query {
                conds: vec![Cond::Eq("status", json!(WebhookDeliveryStatus::Pending))],
                sort: ("next_retry_at", Order::Asc),
                limit: Some(1),
                offset: 0,
            };
            Ok(tx
                .find(Kind::WebhookDelivery, &org, &q)?
                .first()
                .and_then(|d| {
                    d.get("next_retry_at")
                        .and_then(Value::as_str)
                        .and_then(calendar::parse_timestamp)
                })
                .and_then(|t| u64::try_from(t.timestamp_millis()).ok()))
        })?;
        match next {
            Some(ms) => at = UnixTime::from_millis(ms.max(at.as_millis())),
            None => break,
        }
    }
    let recent = UnixTime::from_millis(now.as_millis().saturating_sub(10 * 60_000));
    run(
        recent,
        rng.entropy(),
        create_export,
        json!({"resource": "charges", "filters": {"status": "overdue"}}),
    )?;
    let mut at = recent;
    for _ in 0..2 {
        at = at.plus_millis(60_000);
        crate::ops::webhooks::with_system_op(domain, &org, at, Some(rng.entropy()), process)?;
    }
    crate::ops::webhooks::with_system_op(domain, &org, at, Some(rng.entropy()), |op| {
        crate::ops::webhooks::deliver(op, &driver)
    })?;
    Ok(())
}
