//! The handlers of the webhook tools and their arguments.

use dunning_core::{Output, ToolCall};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{
    MAX_GRACE_SECONDS, MAX_WEBHOOKS, Webhook, WebhookDelivery, check_url, claim_one, enqueue,
    is_catalog_code, last4, new_secret, parse_events, payload, record, request_for, stamp,
};
use crate::args::{ById, fields};
use crate::error::DomainError;
use crate::list::{Filter, Listing, Rows};
use crate::op::{Op, created, diff, ok};
use crate::outbound::Budget;
use crate::status::WebhookDeliveryStatus;
use crate::store::WriteScope;
use crate::store::{Cond, Kind, Order, Query, must, save};
use crate::{Domain, store};

pub(super) fn load_hook(op: &mut Op<'_>, id: &str) -> Result<Webhook, DomainError> {
    must(op.tx, Kind::Webhook, op.org, id)
}

/// `{id, delivery_id}`: one delivery of a webhook.
#[derive(Debug, Deserialize)]
pub(super) struct DeliveryRef {
    id: String,
    delivery_id: String,
}

/// `dunning_webhooks_create`. `events` is read even when absent (null), so its refusal
/// is [`parse_events`]'s.
#[derive(Debug, Deserialize)]
pub(super) struct NewHook {
    url: String,
    #[serde(default)]
    events: Value,
    description: Option<String>,
    active: Option<bool>,
    ssl_verification: Option<bool>,
}

/// `dunning_webhooks_update` (a patch: a null description clears it).
#[derive(Debug, Deserialize)]
pub(super) struct HookPatch {
    id: String,
    url: Option<String>,
    #[serde(default, deserialize_with = "fields::raw")]
    events: Option<Value>,
    #[serde(default, deserialize_with = "fields::patch")]
    description: Option<Option<String>>,
    active: Option<bool>,
    ssl_verification: Option<bool>,
}

/// `dunning_webhooks_test`.
#[derive(Debug, Deserialize)]
pub(super) struct TestArgs {
    id: String,
    event_code: Option<String>,
}

/// `dunning_webhooks_rotate_secret` (the grace period raw: its range is checked here).
#[derive(Debug, Deserialize)]
pub(super) struct RotateArgs {
    id: String,
    grace_period_seconds: Option<Value>,
}

/// `dunning_webhook_deliveries_list`'s own arguments (besides the list's and the time
/// range of [`DELIVERIES`]).
#[derive(Debug, Deserialize)]
pub(super) struct DeliveriesArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::csv")]
    status: Option<Vec<String>>,
    event_code: Option<String>,
}

pub(super) fn load_delivery(op: &mut Op<'_>) -> Result<(Webhook, WebhookDelivery), DomainError> {
    let DeliveryRef { id, delivery_id } = op.args()?;
    let (hook_id, delivery_id) = (id.as_str(), delivery_id.as_str());
    let hook = load_hook(op, hook_id)?;
    let d: WebhookDelivery = must(op.tx, Kind::WebhookDelivery, op.org, delivery_id)?;
    if d.webhook_id != hook.id {
        return Err(DomainError::not_found("webhook delivery", delivery_id));
    }
    Ok((hook, d))
}

pub(super) const HOOK_SORTS: &[(&str, &str, Order)] = &[("created_at", "created_at", Order::Desc)];

/// `dunning_webhooks_list`.
pub(super) const HOOKS: Listing = Listing {
    kind: Kind::Webhook,
    filters: &[Filter::Bool("active", "active")],
    sorts: HOOK_SORTS,
};

pub(super) fn list_webhooks(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let rows: Rows<Webhook> = HOOKS.fetch(op, Vec::new())?;
    Ok(rows.answer(|w| w.public()))
}

pub(super) fn get_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_hook(op, &id)?.public()))
}

pub(super) fn create_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: NewHook = op.args_strict()?;
    let url = check_url(&args.url)?;
    let events = parse_events(&args.events)?;
    if op.tx.count(Kind::Webhook, op.org, &[])? >= MAX_WEBHOOKS {
        return Err(DomainError::Conflict(format!(
            "the organization already has {MAX_WEBHOOKS} webhooks; delete one first"
        )));
    }
    let secret = new_secret(op);
    let now = op.timestamp();
    let w = Webhook {
        id: op.new_id(),
        url,
        description: args.description,
        events,
        active: args.active.unwrap_or(true),
        ssl_verification: args.ssl_verification.unwrap_or(true),
        secret_last4: last4(&secret),
        secret,
        secret_rotated_at: None,
        previous_secret: None,
        previous_secret_expires_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let public = w.public();
    op.event("webhook.created", "webhook", &w.id, &public, Value::Null)?;
    let mut reply = public;
    reply["secret"] = json!(w.secret);
    Ok(created(reply))
}

pub(super) fn update_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: HookPatch = op.args_strict()?;
    let id = args.id.as_str();
    let before = load_hook(op, id)?;
    let mut w = before.clone();
    if let Some(u) = &args.url {
        w.url = check_url(u)?;
    }
    if let Some(e) = &args.events {
        w.events = parse_events(e)?;
    }
    if let Some(d) = args.description {
        w.description = d;
    }
    if let Some(a) = args.active {
        w.active = a;
    }
    if let Some(v) = args.ssl_verification {
        w.ssl_verification = v;
    }
    if w == before {
        return Ok(ok(w.public()));
    }
    w.updated_at = op.timestamp();
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let changes = diff(&before.public(), &w.public());
    op.event("webhook.updated", "webhook", id, &w.public(), changes)?;
    Ok(ok(w.public()))
}

pub(super) fn describe_delete(op: &mut Op<'_>) -> Result<String, DomainError> {
    let ById { id } = op.args()?;
    let w = load_hook(op, &id)?;
    let n = op.tx.count(
        Kind::WebhookDelivery,
        op.org,
        &[Cond::Eq("webhook_id", json!(id))],
    )?;
    Ok(format!(
        "Delete the webhook to {} and its {n} delivery record(s)? Pending deliveries will not be sent.",
        w.url
    ))
}

pub(super) fn delete_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args_strict()?;
    let id = id.as_str();
    let w = load_hook(op, id)?;
    let q = Query::all().with(Cond::Eq("webhook_id", json!(id)));
    for d in op.tx.find(Kind::WebhookDelivery, op.org, &q)? {
        if let Some(did) = d.get("id").and_then(Value::as_str) {
            op.tx.delete(Kind::WebhookDelivery, op.org, did)?;
        }
    }
    op.tx.delete(Kind::Webhook, op.org, id)?;
    op.event("webhook.deleted", "webhook", id, &w.public(), Value::Null)?;
    Ok(Output::NoContent)
}

pub(super) fn test_code(args: &TestArgs) -> Result<String, DomainError> {
    let code = args.event_code.as_deref().unwrap_or("webhook.ping");
    if !is_catalog_code(code) {
        return Err(DomainError::field(
            "event_code",
            format!("{code} is not an event code of kobana://dunning/events/catalog"),
        ));
    }
    Ok(code.to_owned())
}

pub(super) fn describe_test(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: TestArgs = op.args()?;
    let w = load_hook(op, &args.id)?;
    let code = test_code(&args)?;
    Ok(format!("Send a test {code} delivery to {} now?", w.url))
}

pub(super) fn test_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: TestArgs = op.args_strict()?;
    let id = args.id.as_str();
    let w = load_hook(op, id)?;
    let code = test_code(&args)?;
    if !w.active {
        return Err(DomainError::Conflict(format!(
            "webhook {id} is inactive; activate it (dunning_webhooks_update active=true) before testing"
        )));
    }
    if let Err(retry_after_ms) = (op.outbound).take(op.org, Budget::Webhooks, 1, op.now, op.dry_run)
    {
        return Err(DomainError::RateLimited { retry_after_ms });
    }
    // The audit event is not fanned out (`webhook.*` never is); the test payload is an
    // event of the requested code with the same id.
    let tested = op.event(
        "webhook.tested",
        "webhook",
        id,
        &json!({ "event_code": code }),
        Value::Null,
    )?;
    let event = json!({
        "id": tested["id"],
        "code": code,
        "resource_type": "webhook",
        "resource_id": id,
        "occurred_at": tested["occurred_at"],
        "data": { "test": true, "webhook_id": id },
        "changes": Value::Null,
    });
    let mut d = enqueue(op, id, &event, &payload(&event))?;
    if !op.dry_run {
        // Claimed now, posted by [`post_test`] once this transaction has committed: the
        // store's writer is never held while a receiver takes its time.
        claim_one(op, &mut d, &w)?;
    }
    Ok(created(delivery_view(&d)))
}

/// A delivery as the test and resend tools answer it: with its payload.
pub(super) fn delivery_view(d: &WebhookDelivery) -> Value {
    let mut out = serde_json::to_value(d).unwrap_or(Value::Null);
    out["payload"] = json!(d.payload);
    out
}

/// After `dunning_webhooks_test` committed: posts the claimed delivery (outside any
/// transaction), then records the answer and returns the delivery as it now stands.
pub(super) fn post_test(
    domain: &Domain,
    call: &ToolCall<'_>,
    out: Output,
) -> Result<Output, DomainError> {
    let Output::Json { body, .. } = &out else {
        return Ok(out);
    };
    let body = body.clone().into_value();
    let (Some(did), Some(wid)) = (
        body.get("id").and_then(Value::as_str),
        body.get("webhook_id").and_then(Value::as_str),
    ) else {
        return Ok(out);
    };
    let claimed = body.get("attempts").and_then(Value::as_u64);
    let org = &call.ctx.principal.organization;
    let now = call.ctx.now;
    let request = store::read(domain.store(), |tx| {
        let d: WebhookDelivery = must(tx, Kind::WebhookDelivery, org, did)?;
        let hook: Webhook = must(tx, Kind::Webhook, org, wid)?;
        Ok(request_for(&d, &hook, now))
    })?;
    let response = domain.webhook_driver().post(&request);
    // Ids made here must not repeat those of the committed transaction, which drew from
    // the same entropy: derive a second seed from it.
    let entropy: [u8; 32] = Sha256::new()
        .chain_update(call.ctx.entropy)
        .chain_update(b"after commit")
        .finalize()
        .into();
    let call = ToolCall {
        ctx: dunning_core::Ctx {
            entropy: &entropy,
            ..call.ctx
        },
        ..*call
    };
    store::write(domain.store(), WriteScope::Org(org), |tx| {
        domain.op_run(tx, &call, false, |op| {
            let mut d: WebhookDelivery = must(op.tx, Kind::WebhookDelivery, op.org, did)?;
            // Recorded only while the claim is ours (as [`finish`] does): a delivery is
            // attempted and recorded by exactly one worker.
            if d.status == WebhookDeliveryStatus::Pending && Some(u64::from(d.attempts)) == claimed
            {
                record(op, &mut d, &response)?;
            }
            Ok(created(delivery_view(&d)))
        })
    })
}

pub(super) fn grace(args: &RotateArgs) -> Result<i64, DomainError> {
    let g = match &args.grace_period_seconds {
        None => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            DomainError::field("grace_period_seconds", "must be an integer from 0 to 86400")
        })?,
    };
    if !(0..=MAX_GRACE_SECONDS).contains(&g) {
        return Err(DomainError::field(
            "grace_period_seconds",
            "must be from 0 to 86400",
        ));
    }
    Ok(g)
}

pub(super) fn describe_rotate(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: RotateArgs = op.args()?;
    let w = load_hook(op, &args.id)?;
    let g = grace(&args)?;
    Ok(if g == 0 {
        format!(
            "Rotate the signing secret of the webhook to {}? The current secret (…{}) stops signing immediately.",
            w.url, w.secret_last4
        )
    } else {
        format!(
            "Rotate the signing secret of the webhook to {}? The current secret (…{}) keeps signing for {g} seconds.",
            w.url, w.secret_last4
        )
    })
}

pub(super) fn rotate_secret(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: RotateArgs = op.args_strict()?;
    let id = args.id.as_str();
    let g = grace(&args)?;
    let before = load_hook(op, id)?;
    let mut w = before.clone();
    let secret = new_secret(op);
    let now = op.timestamp();
    if g > 0 {
        w.previous_secret = Some(before.secret.clone());
        w.previous_secret_expires_at = Some(stamp(
            op.now
                .plus_millis(u64::try_from(g).unwrap_or_default() * 1000),
        ));
    } else {
        w.previous_secret = None;
        w.previous_secret_expires_at = None;
    }
    w.secret_last4 = last4(&secret);
    w.secret = secret;
    w.secret_rotated_at = Some(now.clone());
    w.updated_at = now;
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let changes = diff(&before.public(), &w.public());
    op.event(
        "webhook.secret_rotated",
        "webhook",
        id,
        &w.public(),
        changes,
    )?;
    let mut reply = w.public();
    reply["secret"] = json!(w.secret);
    Ok(ok(reply))
}

pub(super) const DELIVERY_SORTS: &[(&str, &str, Order)] =
    &[("created_at", "created_at", Order::Desc)];

/// `dunning_webhook_deliveries_list`: the webhook (a path id) and the status (checked
/// against its closed set first) are built by hand.
pub(super) const DELIVERIES: Listing = Listing {
    kind: Kind::WebhookDelivery,
    filters: &[Filter::TimeRange {
        from: "from",
        to: "to",
        column: "created_at",
    }],
    sorts: DELIVERY_SORTS,
};

pub(super) fn list_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: DeliveriesArgs = op.args()?;
    load_hook(op, &args.id)?;
    let mut conds = vec![Cond::Eq("webhook_id", json!(args.id))];
    if let Some(st) = args.status {
        if let Some(bad) = st
            .iter()
            .find(|v| v.parse::<WebhookDeliveryStatus>().is_err())
        {
            return Err(DomainError::field(
                "status",
                // Named as JSON (quoted), as the list's other refusals are.
                format!(
                    "{} is not one of {}",
                    Value::from(bad.as_str()),
                    WebhookDeliveryStatus::NAMES.join(", ")
                ),
            ));
        }
        conds.push(Cond::In(
            "status",
            st.into_iter().map(Value::from).collect(),
        ));
    }
    if let Some(code) = args.event_code {
        if code == "*" {
        } else if let Some(group) = code.strip_suffix(".*") {
            conds.push(Cond::Ge("event_code", json!(format!("{group}."))));
            conds.push(Cond::Le("event_code", json!(format!("{group}.\u{10FFFF}"))));
        } else {
            conds.push(Cond::Eq("event_code", json!(code)));
        }
    }
    let rows: Rows<WebhookDelivery> = DELIVERIES.fetch(op, conds)?;
    Ok(rows.answer(|d| d.summary()))
}

pub(super) fn get_delivery(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (_, d) = load_delivery(op)?;
    Ok(ok(d))
}

pub(super) fn describe_resend(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (w, d) = load_delivery(op)?;
    Ok(format!(
        "Resend delivery {} ({}, {} attempt(s) so far) to {}?",
        d.id, d.event_code, d.attempts, w.url
    ))
}

pub(super) fn resend_delivery(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.refuse_unknown::<DeliveryRef>(&[])?;
    let (w, mut d) = load_delivery(op)?;
    crate::status::check(d.status, &d.id, WebhookDeliveryStatus::Pending)?;
    if !w.active {
        return Err(DomainError::Conflict(format!(
            "webhook {} is inactive; activate it before resending its deliveries",
            w.id
        )));
    }
    let before = d.summary();
    let now = op.timestamp();
    crate::status::change(&mut d.status, &d.id, WebhookDeliveryStatus::Pending)?;
    d.round_attempts = 0;
    d.failed_at = None;
    d.next_retry_at = Some(now.clone());
    d.resent_at = Some(now.clone());
    d.updated_at = now;
    save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
    let changes = diff(&before, &d.summary());
    op.event(
        "webhook_delivery.resent",
        "webhook_delivery",
        &d.id,
        &d.summary(),
        changes,
    )?;
    Ok(ok(d))
}
