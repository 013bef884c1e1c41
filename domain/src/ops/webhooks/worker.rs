//! The fan-out of events into pending deliveries, and the delivery worker: claim, post,
//! finish.

use dunning_core::{Scope, UnixTime};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::{
    BATCH, CLAIM_MS, RETRY_SCHEDULE_SECS, SIGNATURE_HEADER, Webhook, WebhookDelivery,
    WebhookDriver, WebhookRequest, WebhookResponse, filter_matches, is_catalog_code,
    signature_header, stamp, truncate_body,
};
use crate::Worker;
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::outbound::Budget;
use crate::status::WebhookDeliveryStatus;
use crate::store::{Cond, Kind, Order, Query, find, load, save};
use crate::{Domain, store};

/// Queues a `pending` delivery for every active webhook whose filter matches the event
/// (published catalogue codes only; `webhook.ping` goes only through the test tool).
pub fn fan_out(op: &mut Op<'_>, event: &Value) -> Result<(), DomainError> {
    let Some(code) = event.get("code").and_then(Value::as_str) else {
        return Ok(());
    };
    if !is_catalog_code(code) || code.starts_with("webhook.") {
        return Ok(());
    }
    let q = Query::all().with(Cond::Eq("active", json!(true)));
    let hooks: Vec<Webhook> = find(op.tx, Kind::Webhook, op.org, &q)?;
    let hooks: Vec<Webhook> = hooks
        .into_iter()
        .filter(|h| filter_matches(&h.events, code))
        .collect();
    if hooks.is_empty() {
        return Ok(());
    }
    let body = payload(event);
    for h in hooks {
        enqueue(op, &h.id, event, &body)?;
    }
    Ok(())
}

/// The body POSTed for an event (the audit fields stay home).
pub(super) fn payload(event: &Value) -> String {
    let pick = |k: &str| event.get(k).cloned().unwrap_or(Value::Null);
    let v = json!({
        "id": pick("id"),
        "code": pick("code"),
        "resource_type": pick("resource_type"),
        "resource_id": pick("resource_id"),
        "occurred_at": pick("occurred_at"),
        "data": pick("data"),
        "changes": pick("changes"),
    });
    serde_json::to_string(&v).unwrap_or_default()
}

pub(super) fn enqueue(
    op: &mut Op<'_>,
    webhook_id: &str,
    event: &Value,
    body: &str,
) -> Result<WebhookDelivery, DomainError> {
    let at = op.timestamp();
    let d = WebhookDelivery {
        id: op.new_id(),
        webhook_id: webhook_id.to_owned(),
        event_id: event
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        event_code: event
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        status: WebhookDeliveryStatus::Pending,
        attempts: 0,
        round_attempts: 0,
        response_code: None,
        response_body: None,
        duration_ms: None,
        error: None,
        first_try_at: None,
        last_attempt_at: None,
        next_retry_at: Some(at.clone()),
        delivered_at: None,
        failed_at: None,
        resent_at: None,
        payload: body.to_owned(),
        created_at: at.clone(),
        updated_at: at,
    };
    save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
    Ok(d)
}

/// A delivery claimed for one attempt.
#[derive(Clone, Debug)]
pub struct Claimed {
    /// Delivery id.
    pub delivery_id: String,
    /// Its attempt count when claimed (a stale finish is ignored).
    pub attempts: u32,
    /// What to post.
    pub request: WebhookRequest,
}

/// Leases a pending delivery and builds its signed request.
pub(super) fn claim_one(
    op: &mut Op<'_>,
    d: &mut WebhookDelivery,
    hook: &Webhook,
) -> Result<Claimed, DomainError> {
    d.next_retry_at = Some(stamp(op.now.plus_millis(CLAIM_MS)));
    d.updated_at = op.timestamp();
    save(op.tx, Kind::WebhookDelivery, op.org, d)?;
    Ok(Claimed {
        delivery_id: d.id.clone(),
        attempts: d.attempts,
        request: request_for(d, hook, op.now),
    })
}

/// The signed request of a delivery attempt at `now`.
pub(super) fn request_for(d: &WebhookDelivery, hook: &Webhook, now: UnixTime) -> WebhookRequest {
    let t = now.as_millis() / 1000;
    let headers = vec![
        ("Content-Type".into(), "application/json".into()),
        ("User-Agent".into(), "kobana-dunning-webhooks/1".into()),
        ("X-Kobana-Event".into(), d.event_code.clone()),
        ("X-Kobana-Event-Id".into(), d.event_id.clone()),
        ("X-Kobana-Delivery-Id".into(), d.id.clone()),
        (
            SIGNATURE_HEADER.into(),
            signature_header(&hook.signing_secrets(now), t, &d.payload),
        ),
    ];
    WebhookRequest {
        delivery_id: d.id.clone(),
        webhook_id: hook.id.clone(),
        event_code: d.event_code.clone(),
        url: hook.url.clone(),
        ssl_verification: hook.ssl_verification,
        headers,
        body: d.payload.clone(),
    }
}

/// Claims the due `pending` deliveries of the organization (at most `limit`), taking one
/// unit of outbound budget each; stops at the limit. Deliveries of inactive or deleted
/// webhooks are failed without an attempt.
pub fn claim(op: &mut Op<'_>, limit: u32) -> Result<Vec<Claimed>, DomainError> {
    let now = op.timestamp();
    let q = Query {
        conds: vec![
            Cond::Eq("status", json!(WebhookDeliveryStatus::Pending)),
            Cond::Le("next_retry_at", json!(now)),
        ],
        sort: ("next_retry_at", Order::Asc),
        limit: Some(limit),
        offset: 0,
    };
    let due: Vec<WebhookDelivery> = find(op.tx, Kind::WebhookDelivery, op.org, &q)?;
    let mut hooks: HashMap<String, Option<Webhook>> = HashMap::new();
    let mut out = Vec::new();
    for mut d in due {
        if !hooks.contains_key(&d.webhook_id) {
            let h = load::<Webhook>(op.tx, Kind::Webhook, op.org, &d.webhook_id)?;
            hooks.insert(d.webhook_id.clone(), h);
        }
        let hook = match hooks.get(&d.webhook_id).cloned().flatten() {
            Some(h) if h.active => h,
            _ => {
                let before = d.clone();
                crate::status::change(&mut d.status, &d.id, WebhookDeliveryStatus::Failed)?;
                d.error = Some("webhook_inactive: the webhook is inactive or deleted".into());
                d.failed_at = Some(now.clone());
                d.next_retry_at = None;
                d.updated_at = now.clone();
                save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
                let changes = diff(&before.summary(), &d.summary());
                op.event(
                    "webhook_delivery.failed",
                    "webhook_delivery",
                    &d.id,
                    &d.summary(),
                    changes,
                )?;
                continue;
            }
        };
        // Background work: leaves one unit for a person (an honest retry_after_ms).
        if (op.outbound)
            .take_leaving(op.org, Budget::Webhooks, 1, 1, op.now, op.dry_run)
            .is_err()
        {
            break;
        }
        out.push(claim_one(op, &mut d, &hook)?);
    }
    Ok(out)
}

/// What the recorded attempts came to: the delivery's state after each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Answered 2xx: the delivery is `delivered`.
    pub delivered: u32,
    /// Failed, with a retry scheduled: still `pending`.
    pub retrying: u32,
    /// Failed, the retry schedule exhausted: the delivery is `failed`.
    pub failed: u32,
}

impl Outcomes {
    /// Attempts recorded.
    pub fn total(&self) -> u32 {
        self.delivered + self.retrying + self.failed
    }
}

/// Records the outcome of attempts; returns what they came to.
pub fn finish(
    op: &mut Op<'_>,
    results: Vec<(Claimed, WebhookResponse)>,
) -> Result<Outcomes, DomainError> {
    let mut n = Outcomes::default();
    for (c, r) in results {
        let Some(mut d) =
            load::<WebhookDelivery>(op.tx, Kind::WebhookDelivery, op.org, &c.delivery_id)?
        else {
            continue;
        };
        if d.status != WebhookDeliveryStatus::Pending || d.attempts != c.attempts {
            continue;
        }
        record(op, &mut d, &r)?;
        match d.status {
            WebhookDeliveryStatus::Delivered => n.delivered += 1,
            WebhookDeliveryStatus::Failed => n.failed += 1,
            _ => n.retrying += 1,
        }
    }
    Ok(n)
}

pub(super) fn record(
    op: &mut Op<'_>,
    d: &mut WebhookDelivery,
    r: &WebhookResponse,
) -> Result<(), DomainError> {
    let now = op.timestamp();
    let before = d.summary();
    d.attempts += 1;
    d.round_attempts += 1;
    d.first_try_at.get_or_insert_with(|| now.clone());
    d.last_attempt_at = Some(now.clone());
    d.response_code = r.status;
    d.response_body = Some(truncate_body(r.body.as_bytes()));
    d.duration_ms = Some(r.duration_ms);
    d.updated_at = now.clone();
    let mut final_code = None;
    if r.is_success() {
        crate::status::change(&mut d.status, &d.id, WebhookDeliveryStatus::Delivered)?;
        d.delivered_at = Some(now.clone());
        d.next_retry_at = None;
        d.error = None;
        final_code = Some("webhook_delivery.delivered");
    } else {
        d.error = Some(match (&r.error, r.status) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => format!("http_{s}: the receiver did not answer 2xx"),
            (None, None) => "no answer".into(),
        });
        let round = usize::try_from(d.round_attempts).unwrap_or(usize::MAX);
        match RETRY_SCHEDULE_SECS.get(round - 1) {
            Some(delay) => d.next_retry_at = Some(stamp(op.now.plus_millis(delay * 1000))),
            None => {
                crate::status::change(&mut d.status, &d.id, WebhookDeliveryStatus::Failed)?;
                d.failed_at = Some(now);
                d.next_retry_at = None;
                final_code = Some("webhook_delivery.failed");
            }
        }
    }
    save(op.tx, Kind::WebhookDelivery, op.org, &*d)?;
    if let Some(code) = final_code {
        let after = d.summary();
        let changes = diff(&before, &after);
        op.event(code, "webhook_delivery", &d.id, &after, changes)?;
    }
    Ok(())
}

/// The worker tick on one [`Op`]: claims due deliveries, posts them through `driver`
/// and records the outcomes in the same transaction. Returns the attempts made.
/// (The binary's loop uses [`tick`], which posts outside any transaction.)
pub fn deliver(op: &mut Op<'_>, driver: &dyn WebhookDriver) -> Result<u32, DomainError> {
    let claimed = claim(op, BATCH)?;
    if op.dry_run {
        return Ok(0);
    }
    Ok(finish(op, post_all(driver, claimed))?.total())
}

/// Posts every claimed delivery, one after the other, outside any transaction.
fn post_all(driver: &dyn WebhookDriver, claimed: Vec<Claimed>) -> Vec<(Claimed, WebhookResponse)> {
    claimed
        .into_iter()
        .map(|c| {
            let r = driver.post(&c.request);
            (c, r)
        })
        .collect()
}

/// What one [`tick`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Organizations visited.
    pub organizations: u32,
    /// Attempts made.
    pub attempts: u32,
    /// What the attempts came to (the binary's metrics count them by outcome).
    pub outcomes: Outcomes,
}

/// The worker tick for every organization: claim (one transaction), post through
/// `driver` (no transaction held), record (another transaction).
pub fn tick(
    domain: &Domain,
    now: UnixTime,
    driver: &dyn WebhookDriver,
) -> Result<TickReport, DomainError> {
    let orgs = store::read(domain.store(), |tx| Ok(tx.organizations()?))?;
    let mut report = TickReport::default();
    for org in orgs {
        report.organizations += 1;
        let claimed = with_system_op(domain, &org, now, None, |op| claim(op, BATCH))?;
        if claimed.is_empty() {
            continue;
        }
        let results = post_all(driver, claimed);
        let o = with_system_op(domain, &org, now, None, |op| finish(op, results))?;
        report.attempts += o.total();
        report.outcomes.delivered += o.delivered;
        report.outcomes.retrying += o.retrying;
        report.outcomes.failed += o.failed;
    }
    Ok(report)
}

/// The actor of the workers' events.
pub const ACTOR: &str = "system:webhooks";

/// Runs `f` on an [`Op`] of the workers in a write transaction of `org`; `entropy`
/// fixes the ids (demo seeding), else they come from the entropy the domain was lent
/// ([`Domain::lend_entropy`]), fresh for every call.
pub fn with_system_op<R>(
    domain: &Domain,
    org: &str,
    now: UnixTime,
    entropy: Option<[u8; 32]>,
    f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    const WORKERS: Worker = Worker {
        actor: ACTOR,
        scope: Scope::Admin,
        request_id: "worker",
    };
    let seed = entropy.unwrap_or_else(|| domain.worker_seed(org, now, "worker"));
    domain.with_worker_op(&WORKERS, org, now, seed, f)
}
