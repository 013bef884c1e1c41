//! Manual messages (notify, bulk notify, resend): planned, described for the confirmation, then queued for the engine.

use chrono::NaiveDateTime;
use dunning_core::Output;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    BUILTIN_TEMPLATES, Delivery, MAX_BULK, MESSAGE_CHANNELS, Refusal, br_date, charge_stop,
    contact_refusal, debtor_refusal, find_template, no_contact_refusal, pick_contact_point, text,
    window_for,
};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, created};
use crate::ops::rulers;
use crate::ops::rulers::{SendWindow, Window};
use crate::outbound::Budget;
use crate::status::DeliveryStatus;
use crate::store::{Kind, must, save};

/// What a message should say: a template or a free text.
#[derive(Clone, Debug)]
pub(super) struct Content {
    template_id: Option<String>,
    message: Option<String>,
    subject: Option<String>,
}

/// What a manual message says and when it goes: the arguments `dunning_charges_notify`
/// and `dunning_notifications_create` share.
#[derive(Clone, Debug, Deserialize)]
pub(super) struct MessageArgs {
    template_id: Option<String>,
    message: Option<String>,
    subject: Option<String>,
    schedule_at: Option<String>,
}

/// `dunning_charges_notify`'s own arguments (besides [`MessageArgs`]).
#[derive(Debug, Deserialize)]
pub(super) struct NotifyArgs {
    id: String,
    channel: Option<String>,
    contact_point_id: Option<String>,
}

/// `dunning_notifications_create`'s own arguments (besides [`MessageArgs`]).
#[derive(Debug, Deserialize)]
pub(super) struct BulkArgs {
    charge_ids: Vec<String>,
    channel: String,
}

/// `dunning_deliveries_resend`.
#[derive(Debug, Deserialize)]
pub(super) struct ResendArgs {
    id: String,
    contact_point_id: Option<String>,
}

pub(super) fn content(
    op: &mut Op<'_>,
    args: &MessageArgs,
    channel: Option<&str>,
) -> Result<Content, DomainError> {
    let MessageArgs {
        template_id,
        message,
        subject,
        ..
    } = args.clone();
    let mut issues = Vec::new();
    match (&template_id, &message) {
        (Some(_), Some(_)) => {
            return Err(DomainError::field(
                "message",
                "give either template_id or message, not both",
            ));
        }
        (None, None) => {
            return Err(DomainError::field(
                "template_id",
                "give template_id or message",
            ));
        }
        (Some(t), None) => {
            find_template(op.tx, op.org, t)?.ok_or_else(|| {
                // A step id that is not this organization's is not found, like any id of
                // another organization; an unknown name is a validation error that
                // lists the names there are.
                let is_id = t.len() == 36 && t.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
                if is_id {
                    return DomainError::not_found("template", t);
                }
                let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|t| t.0).collect();
                DomainError::field(
                    "template_id",
                    format!(
                        "no template {t}; use a built-in one ({}) or a step id of this organization",
                        names.join(", ")
                    ),
                )
            })?;
        }
        (None, Some(m)) => {
            if channel == Some("whatsapp") {
                return Err(DomainError::field(
                    "message",
                    "WhatsApp only carries approved templates: use template_id",
                ));
            }
            if m.trim().is_empty() {
                return Err(DomainError::field("message", "must not be blank"));
            }
            rulers::check_template_text("message", m, &mut issues);
            if let Some(sj) = &subject {
                rulers::check_template_text("subject", sj, &mut issues);
            }
        }
    }
    if !issues.is_empty() {
        let message = issues
            .iter()
            .map(|i| format!("{}: {}", i.field, i.issue))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(DomainError::Validation {
            message,
            details: issues,
        });
    }
    Ok(Content {
        template_id,
        message,
        subject,
    })
}

/// When a manual message goes out: `schedule_at` (checked against the window) or now
/// (or the next opening when the window is closed). Returns the local time and whether
/// it is due now.
pub(super) fn when(
    op: &Op<'_>,
    schedule_at: Option<&str>,
    window: &Window,
    sw: &SendWindow,
) -> Result<(NaiveDateTime, bool), DomainError> {
    let now = calendar::local_now(op.now);
    match schedule_at {
        Some(raw) => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("schedule_at", "must be an RFC 3339 timestamp")
            })?;
            let at = t.with_timezone(&calendar::offset()).naive_local();
            if at + chrono::Duration::minutes(1) < now {
                return Err(DomainError::field(
                    "schedule_at",
                    format!("{raw} is in the past"),
                ));
            }
            if !window.allows(at) {
                let next = window
                    .next_open(at)
                    .map(calendar::local_timestamp)
                    .unwrap_or_default();
                return Err(DomainError::field(
                    "schedule_at",
                    format!(
                        "{raw} is outside the send window ({}): {}; the next allowed time is {next}",
                        sw.describe(),
                        window.why_closed(at.date(), at.time())
                    ),
                ));
            }
            Ok((at, at <= now))
        }
        None => {
            if window.allows(now) {
                Ok((now, true))
            } else {
                let next = window
                    .next_open(now)
                    .ok_or_else(|| DomainError::Conflict("the send window never opens".into()))?;
                Ok((next, false))
            }
        }
    }
}

/// Everything decided about one manual message before anything is written.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    charge: Value,
    debtor: Value,
    contact: Value,
    channel: String,
}

pub(super) fn origin(op: &Op<'_>) -> &'static str {
    match op.principal.audience {
        dunning_core::Audience::Api => "api",
        dunning_core::Audience::Mcp => "manual",
    }
}

/// Checks one charge for a message on `channel` (to `cp_id` when given).
pub(super) fn plan_one(
    op: &mut Op<'_>,
    charge: Value,
    channel: Option<&str>,
    cp_id: Option<&str>,
) -> Result<Result<Plan, Refusal>, DomainError> {
    if let Some(stop) = charge_stop(op.tx, op.org, &charge, op.now)? {
        return Ok(Err(stop));
    }
    let debtor_id = text(&charge, "debtor_id").unwrap_or_default().to_owned();
    let debtor = op
        .tx
        .get(Kind::Debtor, op.org, &debtor_id)?
        .ok_or_else(|| DomainError::not_found("debtor", &debtor_id))?;
    if let Some(r) = debtor_refusal(&debtor) {
        return Ok(Err(r));
    }
    let contact = match cp_id {
        Some(cp_id) => {
            let cp = op
                .tx
                .get(Kind::ContactPoint, op.org, cp_id)?
                .ok_or_else(|| DomainError::not_found("contact point", cp_id))?;
            if text(&cp, "debtor_id") != Some(debtor_id.as_str()) {
                return Ok(Err(Refusal {
                    code: "other_debtor".into(),
                    message: format!(
                        "contact point {cp_id} belongs to another debtor, not to {debtor_id} who owes this charge"
                    ),
                    field: Some("contact_point_id"),
                }));
            }
            let cp_channel = text(&cp, "channel").unwrap_or_default().to_owned();
            if !MESSAGE_CHANNELS.contains(&cp_channel.as_str()) {
                return Ok(Err(Refusal {
                    code: "not_a_message_channel".into(),
                    message: format!(
                        "contact point {cp_id} is a {cp_channel} contact; messages go by email, sms or whatsapp"
                    ),
                    field: Some("contact_point_id"),
                }));
            }
            let ch = channel.unwrap_or(&cp_channel).to_owned();
            if let Some(r) = contact_refusal(&cp, &ch) {
                return Ok(Err(r));
            }
            cp
        }
        None => {
            let Some(ch) = channel else {
                return Err(DomainError::field(
                    "channel",
                    "give channel or contact_point_id",
                ));
            };
            match pick_contact_point(op.tx, op.org, &debtor_id, ch)? {
                Some(cp) => cp,
                None => return Ok(Err(no_contact_refusal(op.tx, op.org, &debtor, ch)?)),
            }
        }
    };
    let channel = text(&contact, "channel").unwrap_or_default().to_owned();
    Ok(Ok(Plan {
        charge,
        debtor,
        contact,
        channel,
    }))
}

pub(super) fn load_charge(op: &mut Op<'_>, id: &str) -> Result<Value, DomainError> {
    op.tx
        .get(Kind::Charge, op.org, id)?
        .ok_or_else(|| DomainError::not_found("charge", id))
}

/// Builds (without saving) a manual delivery.
pub(super) fn manual_delivery(
    op: &mut Op<'_>,
    plan: &Plan,
    c: &Content,
    at: NaiveDateTime,
    due_now: bool,
) -> Delivery {
    let now = op.timestamp();
    Delivery {
        id: op.new_id(),
        charge_id: text(&plan.charge, "id").unwrap_or_default().to_owned(),
        debtor_id: text(&plan.debtor, "id").unwrap_or_default().to_owned(),
        contact_point_id: text(&plan.contact, "id").map(str::to_owned),
        channel: plan.channel.clone(),
        action: "notify".into(),
        origin: origin(op).into(),
        status: if due_now {
            DeliveryStatus::Queued
        } else {
            DeliveryStatus::Scheduled
        },
        to: text(&plan.contact, "value").map(str::to_owned),
        template_id: c.template_id.clone(),
        message: c.message.clone(),
        subject: c.subject.clone(),
        scheduled_at: calendar::local_timestamp(at),
        queued_at: due_now.then(|| now.clone()),
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    }
}

pub(super) fn take_budget(op: &Op<'_>, n: u32) -> Result<(), DomainError> {
    op.outbound
        .take(op.org, Budget::Messages, n, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })
}

pub(super) fn plan_notify(
    op: &mut Op<'_>,
) -> Result<(Plan, Content, NaiveDateTime, bool), DomainError> {
    let (args, msg): (NotifyArgs, MessageArgs) = op.args_strict_pair()?;
    let charge = load_charge(op, &args.id)?;
    let (channel, cp_id) = (args.channel.as_deref(), args.contact_point_id.as_deref());
    let plan = plan_one(op, charge, channel, cp_id)?.map_err(Refusal::into_error)?;
    let c = content(op, &msg, Some(&plan.channel))?;
    let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
    let (at, due_now) = when(op, msg.schedule_at.as_deref(), &window, &sw)?;
    Ok((plan, c, at, due_now))
}

pub(super) fn channel_name(ch: &str) -> &str {
    match ch {
        "email" => "an e-mail",
        "sms" => "an SMS",
        "whatsapp" => "a WhatsApp message",
        other => other,
    }
}

pub(super) fn charge_label(charge: &Value) -> String {
    let amount = Money::in_doc(charge, "amount");
    let due = br_date(text(charge, "due_date").unwrap_or_default());
    let name = text(charge, "external_id")
        .or_else(|| text(charge, "description"))
        .or_else(|| text(charge, "id"))
        .unwrap_or_default();
    format!("charge {name} of {amount} due {due}")
}

pub(super) fn describe_notify(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (plan, _, at, due_now) = plan_notify(op)?;
    let when = if due_now {
        "now".to_owned()
    } else {
        format!("at {}", calendar::local_timestamp(at))
    };
    Ok(format!(
        "Send {} to {} ({}) {when} about {}?",
        channel_name(&plan.channel),
        text(&plan.debtor, "name").unwrap_or_default(),
        text(&plan.contact, "value").unwrap_or_default(),
        charge_label(&plan.charge)
    ))
}

pub(super) fn notify(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (plan, c, at, due_now) = plan_notify(op)?;
    take_budget(op, 1)?;
    let d = manual_delivery(op, &plan, &c, at, due_now);
    save(op.tx, Kind::Delivery, op.org, &d)?;
    let code = if due_now {
        "delivery.queued"
    } else {
        "delivery.scheduled"
    };
    op.event(code, "delivery", &d.id, &d, Value::Null)?;
    Ok(created(d))
}

/// One bulk request checked: the messages to send and the charges skipped.
pub(super) struct Bulk {
    channel: String,
    content: Content,
    plans: Vec<(Plan, NaiveDateTime, bool)>,
    skipped: Vec<Value>,
}

pub(super) fn plan_bulk(op: &mut Op<'_>) -> Result<Bulk, DomainError> {
    let (args, msg): (BulkArgs, MessageArgs) = op.args_strict_pair()?;
    let BulkArgs {
        charge_ids: ids,
        channel,
    } = args;
    if ids.is_empty() {
        return Err(DomainError::field(
            "charge_ids",
            "must name at least one charge",
        ));
    }
    if ids.len() > MAX_BULK {
        return Err(DomainError::field(
            "charge_ids",
            format!(
                "at most {MAX_BULK} charges per notification ({} given)",
                ids.len()
            ),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = ids.iter().find(|i| !seen.insert(i.as_str())) {
        return Err(DomainError::field(
            "charge_ids",
            format!("charge {dup} is listed twice"),
        ));
    }
    if !MESSAGE_CHANNELS.contains(&channel.as_str()) {
        return Err(DomainError::field(
            "channel",
            "must be email, sms or whatsapp",
        ));
    }
    let content = content(op, &msg, Some(&channel))?;
    let mut charges = Vec::with_capacity(ids.len());
    for id in &ids {
        charges.push(load_charge(op, id)?);
    }
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for charge in charges {
        let cid = text(&charge, "id").unwrap_or_default().to_owned();
        match plan_one(op, charge, Some(&channel), None)? {
            Ok(plan) => {
                let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
                let (at, due_now) = when(op, msg.schedule_at.as_deref(), &window, &sw)?;
                plans.push((plan, at, due_now));
            }
            Err(r) => {
                skipped.push(json!({ "charge_id": cid, "code": r.code, "reason": r.message }))
            }
        }
    }
    if plans.is_empty() {
        let reasons: Vec<String> = skipped
            .iter()
            .take(5)
            .filter_map(|s| s.get("reason").and_then(Value::as_str).map(str::to_owned))
            .collect();
        return Err(DomainError::Conflict(format!(
            "none of the {} charges may be notified on {channel}: {}",
            ids.len(),
            reasons.join("; ")
        )));
    }
    Ok(Bulk {
        channel,
        content,
        plans,
        skipped,
    })
}

pub(super) fn describe_bulk(op: &mut Op<'_>) -> Result<String, DomainError> {
    let b = plan_bulk(op)?;
    let total: Money = b
        .plans
        .iter()
        .map(|(p, ..)| Money::in_doc(&p.charge, "amount"))
        .sum();
    let debtors: std::collections::BTreeSet<&str> = b
        .plans
        .iter()
        .filter_map(|(p, ..)| text(&p.debtor, "id"))
        .collect();
    let channel = &b.channel;
    let skipped = if b.skipped.is_empty() {
        String::new()
    } else {
        format!(
            " {} charges are skipped (not allowed to be messaged).",
            b.skipped.len()
        )
    };
    Ok(format!(
        "Send {} {channel} messages to {} debtors about {} charges totaling {}?{skipped}",
        b.plans.len(),
        debtors.len(),
        b.plans.len(),
        total
    ))
}

pub(super) fn bulk_notify(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let b = plan_bulk(op)?;
    let n = u32::try_from(b.plans.len()).unwrap_or(u32::MAX);
    take_budget(op, n.min(op.settings.outbound_per_minute.max(1)))?;
    let notification_id = op.new_id();
    let mut deliveries = Vec::with_capacity(b.plans.len());
    for (plan, at, due_now) in &b.plans {
        let mut d = manual_delivery(op, plan, &b.content, *at, *due_now);
        d.notification_id = Some(notification_id.clone());
        save(op.tx, Kind::Delivery, op.org, &d)?;
        let code = if *due_now {
            "delivery.queued"
        } else {
            "delivery.scheduled"
        };
        op.event(code, "delivery", &d.id, &d, Value::Null)?;
        deliveries.push(d);
    }
    Ok(created(json!({
        "id": notification_id,
        "channel": b.channel,
        "origin": origin(op),
        "template_id": b.content.template_id,
        "requested_count": deliveries.len() + b.skipped.len(),
        "created_count": deliveries.len(),
        "skipped_count": b.skipped.len(),
        "skipped": b.skipped,
        "deliveries": deliveries,
        "created_at": op.timestamp(),
    })))
}

pub(super) fn plan_resend(
    op: &mut Op<'_>,
) -> Result<(Delivery, Plan, NaiveDateTime, bool), DomainError> {
    let ResendArgs {
        id,
        contact_point_id,
    } = op.args_strict()?;
    let id = id.as_str();
    let src: Delivery = must(op.tx, Kind::Delivery, op.org, id)?;
    if src.status.is_waiting() {
        return Err(DomainError::Conflict(format!(
            "delivery {id} is {} and has not been sent yet; nothing to resend",
            src.status
        )));
    }
    if !MESSAGE_CHANNELS.contains(&src.channel.as_str()) {
        return Err(DomainError::Conflict(format!(
            "delivery {id} is a {} delivery, not a message to the debtor; only e-mail, SMS and WhatsApp messages can be resent",
            src.channel
        )));
    }
    let charge = load_charge(op, &src.charge_id)?;
    let channel = if contact_point_id.is_some() {
        None
    } else {
        Some(src.channel.as_str())
    };
    let cp_id = contact_point_id.or_else(|| src.contact_point_id.clone());
    let plan = plan_one(op, charge, channel, cp_id.as_deref())?.map_err(Refusal::into_error)?;
    if plan.channel == "whatsapp"
        && src.message.is_some()
        && src.step_id.is_none()
        && src.template_id.is_none()
    {
        return Err(DomainError::field(
            "contact_point_id",
            "the original is a free-text message and WhatsApp only carries approved templates",
        ));
    }
    let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
    let (at, due_now) = when(op, None, &window, &sw)?;
    Ok((src, plan, at, due_now))
}

pub(super) fn describe_resend(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (src, plan, at, due_now) = plan_resend(op)?;
    let when = if due_now {
        "now".to_owned()
    } else {
        format!("at {}", calendar::local_timestamp(at))
    };
    Ok(format!(
        "Resend delivery {} ({}) as {} to {} ({}) {when} about {}?",
        src.id,
        src.status,
        channel_name(&plan.channel),
        text(&plan.debtor, "name").unwrap_or_default(),
        text(&plan.contact, "value").unwrap_or_default(),
        charge_label(&plan.charge)
    ))
}

pub(super) fn resend(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (src, plan, at, due_now) = plan_resend(op)?;
    take_budget(op, 1)?;
    let c = Content {
        template_id: src.template_id.clone(),
        message: src.message.clone(),
        subject: src.subject.clone(),
    };
    let mut d = manual_delivery(op, &plan, &c, at, due_now);
    d.step_id.clone_from(&src.step_id);
    d.ruler_id.clone_from(&src.ruler_id);
    d.notification_id.clone_from(&src.notification_id);
    d.resent_from_id = Some(src.id.clone());
    d.attempt = src.attempt;
    if src.step_id.is_none() && src.template_id.is_none() && src.message.is_none() {
        // A message whose template is gone: send the same text again.
        d.message.clone_from(&src.body);
    }
    save(op.tx, Kind::Delivery, op.org, &d)?;
    let code = if due_now {
        "delivery.queued"
    } else {
        "delivery.scheduled"
    };
    op.event(
        code,
        "delivery",
        &d.id,
        &d,
        json!({ "resent_from_id": src.id }),
    )?;
    Ok(created(d))
}

/// Loads a delivery of the caller's organization or answers `NOT_FOUND`.
pub fn load_delivery(op: &mut Op<'_>, id: &str) -> Result<Delivery, DomainError> {
    must(op.tx, Kind::Delivery, op.org, id)
}
