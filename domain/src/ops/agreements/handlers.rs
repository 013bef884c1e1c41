//! The list, get and create handlers of agreements.

use chrono::NaiveDate;
use dunning_core::{Output, UnixTime};
use serde::Deserialize;
use serde_json::{Value, json};

use super::plan::{Terms, TermsArgs, fmt_date, terms};
use super::{Agreement, BREAK_AFTER_DAYS, DAY_MS, DEFAULT_VALIDITY_DAYS, OPEN};
use crate::args::ById;
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::documents;
use crate::error::DomainError;
use crate::list::{Filter, Listing, Rows};
use crate::op::{Op, created, diff, list, ok};
use crate::ops::charges::Charge;
use crate::ops::deliveries;
use crate::ops::deliveries::Delivery;
use crate::outbound::Budget;
use crate::status::{AgreementStatus, DeliveryStatus, InstallmentStatus};
use crate::store::{Cond, Kind, Order, Query, find, load, must, save};

/// Loads an agreement of the caller's organization or answers `NOT_FOUND`.
pub fn load_agreement(op: &mut Op<'_>, id: &str) -> Result<Agreement, DomainError> {
    must(op.tx, Kind::Agreement, op.org, id)
}

/// Brings the installments' status and payments up to date from their charges
/// (in memory); whether anything changed.
pub(super) fn sync_installments(op: &mut Op<'_>, a: &mut Agreement) -> Result<bool, DomainError> {
    let mut changed = false;
    for i in &mut a.installments {
        let Some(cid) = &i.charge_id else { continue };
        if let Some(c) = load::<Charge>(op.tx, Kind::Charge, op.org, cid)? {
            let mirrored = InstallmentStatus::from(c.status);
            if i.status != mirrored || i.paid_amount != c.paid_amount {
                if i.status != mirrored {
                    crate::status::change(&mut i.status, cid, mirrored)?;
                }
                i.paid_amount = c.paid_amount;
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// `dunning_agreements_list`.
/// `dunning_agreements_create`'s own arguments (besides [`TermsArgs`]).
#[derive(Debug, Deserialize)]
pub(super) struct ProposeArgs {
    expires_at: Option<String>,
    notify_debtor: Option<bool>,
    break_after_days: Option<Value>,
}

pub(super) const LISTING: Listing = Listing {
    kind: Kind::Agreement,
    filters: &[
        Filter::In("status", "status"),
        Filter::Eq("debtor_id", "debtor_id"),
    ],
    sorts: &[("created_at", "created_at", Order::Desc)],
};

pub(super) fn list_agreements(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let Rows {
        mut items,
        page,
        total,
    }: Rows<Agreement> = LISTING.fetch(op, Vec::new())?;
    for a in &mut items {
        sync_installments(op, a)?;
    }
    let items = items
        .into_iter()
        .map(|a| serde_json::to_value(a).unwrap_or(Value::Null))
        .collect();
    Ok(list(items, page, total))
}

pub(super) fn get_agreement(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let mut a = load_agreement(op, &id)?;
    sync_installments(op, &mut a)?;
    Ok(ok(a))
}

pub(super) fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&Agreement>,
    a: &mut Agreement,
) -> Result<(), DomainError> {
    a.updated_at = op.timestamp();
    save(op.tx, Kind::Agreement, op.org, &*a)?;
    let changes = before.map_or(Value::Null, |b| diff(b, &*a));
    op.event(code, "agreement", &a.id.clone(), &*a, changes)?;
    Ok(())
}

pub(super) fn ts_ms(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

/// End of a local day (23:59:59-03:00) as a timestamp.
pub(super) fn end_of_day(d: NaiveDate) -> String {
    format!("{}T23:59:59-03:00", fmt_date(d))
}

pub(super) fn expires_arg(
    op: &Op<'_>,
    expires_at: Option<&str>,
    first_due: NaiveDate,
) -> Result<String, DomainError> {
    let latest = end_of_day(first_due);
    let latest_ms = ts_ms(&latest).unwrap_or(u64::MAX);
    let Some(raw) = expires_at else {
        let default = op.now.plus_millis(DEFAULT_VALIDITY_DAYS * DAY_MS);
        return Ok(if default.as_millis() > latest_ms {
            latest
        } else {
            calendar::timestamp(default)
        });
    };
    let value = match calendar::parse_date(raw) {
        Some(d) => end_of_day(d),
        None => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("expires_at", "must be an RFC 3339 timestamp or a date")
            })?;
            let ms = u64::try_from(t.timestamp_millis()).unwrap_or_default();
            calendar::timestamp(UnixTime::from_millis(ms))
        }
    };
    let ms = ts_ms(&value).unwrap_or_default();
    if ms <= op.now.as_millis() {
        return Err(DomainError::field("expires_at", "must be in the future"));
    }
    if ms > latest_ms {
        return Err(DomainError::field(
            "expires_at",
            format!(
                "must be at most the end of the first due date ({})",
                fmt_date(first_due)
            ),
        ));
    }
    Ok(value)
}

/// Agreements still holding any of `charge_ids`.
pub(super) fn holding(
    op: &mut Op<'_>,
    debtor_id: &str,
    charge_ids: &[String],
) -> Result<Option<(Agreement, String)>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::In("status", crate::status::values(OPEN)));
    let open: Vec<Agreement> = find(op.tx, Kind::Agreement, op.org, &q)?;
    for a in open {
        if let Some(c) = charge_ids.iter().find(|c| a.charge_ids.contains(c)) {
            let c = c.clone();
            return Ok(Some((a, c)));
        }
    }
    Ok(None)
}

pub(super) fn create_agreement(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (args, terms_args): (ProposeArgs, TermsArgs) = op.args_strict_pair()?;
    let t = terms(op, &terms_args)?;
    let expires_at = expires_arg(op, args.expires_at.as_deref(), t.first_due)?;
    let break_after_days = match &args.break_after_days {
        None => BREAK_AFTER_DAYS,
        Some(v) => v
            .as_i64()
            .filter(|n| (1..=90).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                DomainError::field("break_after_days", "must be an integer from 1 to 90")
            })?,
    };
    let ids: Vec<String> = t.parts.iter().map(|p| p.charge_id.clone()).collect();
    if let Some((other, c)) = holding(op, &t.debtor.id, &ids)? {
        return Err(DomainError::Conflict(format!(
            "in_agreement: charge {c} is already in agreement {} ({}); cancel it first",
            other.id, other.status
        )));
    }
    let now = op.timestamp();
    let id = op.new_id();
    let mut a = Agreement {
        term_url: format!("/v1/agreements/{id}/term-pdf"),
        id,
        debtor_id: t.debtor.id.clone(),
        charge_ids: ids,
        status: AgreementStatus::Proposed,
        charges: t.parts.clone(),
        original_amount: t.principal,
        fine_amount: t.fine,
        interest_amount: t.interest,
        updated_amount: t.updated,
        fine_waived: t.fine_waived,
        interest_waived: t.interest_waived,
        discount_amount: t.discount,
        discount_percentage: t.discount_pct,
        total_amount: t.total,
        down_payment_amount: t.down,
        installments_count: t.count,
        first_due_date: fmt_date(t.first_due),
        payment_method: t.payment_method.clone(),
        installments: t.installments.clone(),
        expires_at,
        notify_debtor: args.notify_debtor == Some(true),
        break_after_days,
        created_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now,
        ..Agreement::default()
    };
    if a.notify_debtor {
        match notify_proposal(op, &a, &t)? {
            Ok(did) => a.notification_delivery_id = Some(did),
            Err(why) => a.notification_skipped = Some(why),
        }
    }
    commit(op, "agreement.proposed", None, &mut a)?;
    Ok(created(a))
}

/// Schedules a message telling the debtor about the proposal (the ruler engine's outbox
/// sends it inside the send window). `Err(reason)` when the debtor cannot be told.
pub(super) fn notify_proposal(
    op: &mut Op<'_>,
    a: &Agreement,
    t: &Terms,
) -> Result<Result<String, String>, DomainError> {
    let debtor = serde_json::to_value(&t.debtor).unwrap_or(Value::Null);
    if let Some(r) = deliveries::debtor_refusal(&debtor) {
        return Ok(Err(r.message));
    }
    let mut target = None;
    for ch in ["email", "sms"] {
        if let Some(cp) = deliveries::pick_contact_point(op.tx, op.org, &t.debtor.id, ch)? {
            target = Some((ch, cp));
            break;
        }
    }
    let Some((channel, cp)) = target else {
        return Ok(Err(format!(
            "debtor {} ({}) has no e-mail or SMS contact point that may receive messages",
            t.debtor.id, t.debtor.name
        )));
    };
    op.outbound
        .take(op.org, Budget::Messages, 1, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })?;
    let down = if t.down > Money::ZERO {
        format!(" (entrada de {})", t.down)
    } else {
        String::new()
    };
    let discount = if t.discount > Money::ZERO {
        format!(", com desconto de {}", t.discount)
    } else {
        String::new()
    };
    let expires = a.expires_at.get(..10).and_then(calendar::parse_date);
    let message = format!(
        "Olá, {{{{debtor.name}}}}. Preparamos uma proposta de acordo para {} fatura(s) em aberto: total de {}{discount}, em {} parcela(s){down}, a primeira em {}. A proposta vale até {}. Responda a esta mensagem ou fale com nosso atendimento para aceitar.",
        t.parts.len(),
        t.total,
        t.count,
        documents::short_date(calendar::next_business_day(t.first_due)),
        expires.map(documents::short_date).unwrap_or_default(),
    );
    let now = op.timestamp();
    let d = Delivery {
        id: op.new_id(),
        charge_id: a.charge_ids.first().cloned().unwrap_or_default(),
        debtor_id: t.debtor.id.clone(),
        contact_point_id: cp.get("id").and_then(Value::as_str).map(str::to_owned),
        channel: channel.into(),
        action: "notify".into(),
        origin: match op.principal.audience {
            dunning_core::Audience::Api => "api",
            dunning_core::Audience::Mcp => "manual",
        }
        .into(),
        status: DeliveryStatus::Scheduled,
        to: cp.get("value").and_then(Value::as_str).map(str::to_owned),
        message: Some(message),
        subject: Some("Proposta de acordo".into()),
        scheduled_at: now.clone(),
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    };
    save(op.tx, Kind::Delivery, op.org, &d)?;
    op.event("delivery.scheduled", "delivery", &d.id, &d, Value::Null)?;
    Ok(Ok(d.id))
}
