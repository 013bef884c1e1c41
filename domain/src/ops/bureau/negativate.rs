//! Negativation: the checks of `rules.md`, Negativação, the record, and the prior notice
//! sent at once.

use dunning_core::{Output, UnixTime};
use serde::Deserialize;
use serde_json::Value;

use super::{
    BUREAUS, BureauRecord, DAY_MS, MAX_NOTICE_DAYS, active_record, bureau_name, commit,
    is_disputed, registrable_until,
};
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::{Op, created};
use crate::ops::charges::Charge;
use crate::ops::debtors::Debtor;
use crate::ops::deliveries::Delivery;
use crate::ops::{charges, deliveries};
use crate::outbound::Budget;
use crate::status::{BureauStatus, ChargeStatus, DeliveryStatus};
use crate::store::{Kind, must, save};

/// Where the prior notice goes.
pub(super) struct NoticeTarget {
    pub(super) channel: &'static str,
    pub(super) contact_point_id: Option<String>,
    pub(super) to: String,
}

/// Everything a negativation needs, checked.
pub(super) struct Plan {
    pub(super) charge: Charge,
    pub(super) debtor: Debtor,
    pub(super) bureau: String,
    pub(super) notice_days: u32,
    pub(super) target: NoticeTarget,
}

pub(super) fn address_text(d: &Debtor) -> Option<String> {
    let a = &d.address;
    let complete = [&a.street, &a.city, &a.state, &a.zipcode]
        .iter()
        .all(|f| !f.trim().is_empty());
    if !complete {
        return None;
    }
    let number = if a.number.trim().is_empty() {
        "s/n"
    } else {
        a.number.as_str()
    };
    let complement = if a.complement.trim().is_empty() {
        String::new()
    } else {
        format!(", {}", a.complement)
    };
    let neighborhood = if a.neighborhood.trim().is_empty() {
        String::new()
    } else {
        format!(" - {}", a.neighborhood)
    };
    Some(format!(
        "{}, {number}{complement}{neighborhood}, {}/{}, CEP {}",
        a.street, a.city, a.state, a.zipcode
    ))
}

pub(super) fn notice_target(op: &mut Op<'_>, d: &Debtor) -> Result<NoticeTarget, DomainError> {
    if d.do_not_contact {
        return Err(DomainError::Conflict(format!(
            "do_not_contact: debtor {} ({}) is marked do_not_contact, so the prior written notice (CDC art. 43 §2) that must precede a negativação cannot be sent",
            d.id, d.name
        )));
    }
    for channel in ["email", "postal"] {
        if let Some(cp) = deliveries::pick_contact_point(op.tx, op.org, &d.id, channel)? {
            return Ok(NoticeTarget {
                channel,
                contact_point_id: cp.get("id").and_then(Value::as_str).map(str::to_owned),
                to: cp
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    if let Some(addr) = address_text(d) {
        return Ok(NoticeTarget {
            channel: "postal",
            contact_point_id: None,
            to: addr,
        });
    }
    Err(DomainError::Conflict(format!(
        "no_notice_address: debtor {} ({}) has no valid e-mail or postal contact point and no complete address; the prior written notice (CDC art. 43 §2) cannot be sent, so the debt cannot be negativated",
        d.id, d.name
    )))
}

/// `dunning_charges_negativate` (`notice_days` raw: its range is the organization's).
#[derive(Debug, Deserialize)]
pub(super) struct NegativateArgs {
    id: String,
    bureau: String,
    notice_days: Option<Value>,
}

pub(super) fn plan(op: &mut Op<'_>) -> Result<Plan, DomainError> {
    let args: NegativateArgs = op.args_strict()?;
    let (id, bureau) = (args.id.as_str(), args.bureau.as_str());
    if !BUREAUS.contains(&bureau) {
        return Err(DomainError::field(
            "bureau",
            format!("must be one of {}", BUREAUS.join(", ")),
        ));
    }
    let min_days = op.settings.negativation_notice_days;
    let notice_days = match &args.notice_days {
        None => min_days,
        Some(v) => {
            let n = v
                .as_i64()
                .ok_or_else(|| DomainError::field("notice_days", "must be an integer"))?;
            if n < i64::from(min_days) || n > MAX_NOTICE_DAYS {
                return Err(DomainError::field(
                    "notice_days",
                    format!(
                        "must be between the organization's negativation_notice_days ({min_days}) and {MAX_NOTICE_DAYS}"
                    ),
                ));
            }
            u32::try_from(n).unwrap_or(min_days)
        }
    };
    let charge = charges::load_charge(op, id)?;
    if charge.status != ChargeStatus::Overdue {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only overdue charges can be negativated",
            charge.status
        )));
    }
    if is_disputed(&charge) {
        return Err(DomainError::Conflict(format!(
            "charge_disputed: charge {id} is disputed by the debtor; a disputed debt cannot be negativated"
        )));
    }
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &charge.debtor_id)?;
    if debtor.credit_restriction_blocked {
        return Err(DomainError::Conflict(format!(
            "credit_restriction_blocked: debtor {} ({}) is credit_restriction_blocked; no credit-bureau registration is allowed",
            debtor.id, debtor.name
        )));
    }
    let until = registrable_until(&charge);
    if op.today() > until {
        return Err(DomainError::Conflict(format!(
            "debt_too_old: charge {id} was due on {}; debts older than 5 years cannot be registered with a credit bureau (CDC art. 43 §1; limit was {until})",
            if charge.original_due_date.is_empty() {
                &charge.due_date
            } else {
                &charge.original_due_date
            }
        )));
    }
    if let Some(r) = active_record(op, id)? {
        return Err(DomainError::Conflict(format!(
            "already_negativated: charge {id} already has credit-bureau record {} with {} ({})",
            r.id, r.bureau, r.status
        )));
    }
    if !op.settings.allow_negativation_with_protest {
        if let Some(p) = crate::ops::protests::active_protest(op, id)? {
            return Err(DomainError::Conflict(format!(
                "protest_active: charge {id} has protest {} ({}); the organization does not allow an active negativação and an active protest on the same charge",
                p.id, p.status
            )));
        }
    }
    let target = notice_target(op, &debtor)?;
    Ok(Plan {
        charge,
        debtor,
        bureau: bureau.to_owned(),
        notice_days,
        target,
    })
}

pub(super) fn eligible_from(now: UnixTime, days: u32) -> String {
    calendar::timestamp(now.plus_millis(u64::from(days) * DAY_MS))
}

pub(super) fn describe_negativate(op: &mut Op<'_>) -> Result<String, DomainError> {
    let p = plan(op)?;
    let updated = charges::updated_amount(&p.charge, op.today());
    let how = match p.target.channel {
        "email" => format!("by e-mail to {}", p.target.to),
        _ => format!("by letter to {}", p.target.to),
    };
    let eligible = eligible_from(op.now, p.notice_days);
    Ok(format!(
        "Negativate {} ({} {}) with {} for {} of {} ({} updated)? The prior notice (CDC art. 43 §2) is sent now {how}; the debt is registered from {} on if still unpaid.",
        p.debtor.name,
        if p.debtor.person_type == "natural" {
            "CPF"
        } else {
            "CNPJ"
        },
        crate::documents::format_document(&p.debtor.cnpj_cpf),
        bureau_name(&p.bureau),
        charges::label(&p.charge),
        p.charge.amount,
        updated,
        &eligible[..10],
    ))
}

pub(super) fn negativate(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let p = plan(op)?;
    op.outbound
        .take(op.org, Budget::Messages, 1, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })?;
    let now = op.timestamp();
    let today = op.today();
    let mut r = BureauRecord {
        id: op.new_id(),
        charge_id: p.charge.id.clone(),
        debtor_id: p.debtor.id.clone(),
        bureau: p.bureau.clone(),
        status: BureauStatus::PendingNotice,
        amount: charges::updated_amount(&p.charge, today),
        notice_days: p.notice_days,
        requested_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now.clone(),
        ..BureauRecord::default()
    };
    save(op.tx, Kind::CreditBureauRecord, op.org, &r)?;
    let delivery = send_notice(op, &p)?;
    let before = r.clone();
    crate::status::change(&mut r.status, &r.id, BureauStatus::NoticeSent)?;
    r.notice_delivery_id = Some(delivery.id.clone());
    r.notice_channel = Some(delivery.channel.clone());
    r.notice_to = delivery.to.clone();
    r.notice_sent_at = delivery.sent_at.clone();
    r.eligible_at = Some(eligible_from(op.now, p.notice_days));
    commit(op, "credit_bureau.notice_sent", Some(&before), &mut r)?;
    Ok(created(r))
}

/// Records the prior notice as a delivery the default driver sent.
pub(super) fn send_notice(op: &mut Op<'_>, p: &Plan) -> Result<Delivery, DomainError> {
    let creditor = deliveries::creditor(op.tx, op.org)?;
    let mut template = deliveries::find_template(op.tx, op.org, "negativation_notice")?
        .ok_or_else(|| crate::store::StoreError("negativation_notice template missing".into()))?;
    // The notice names the bureau and the date from which the debt may be registered
    // (the end of the notice window, as `eligible_at` will say).
    let eligible = calendar::today(op.now.plus_millis(u64::from(p.notice_days) * DAY_MS));
    template.body = template
        .body
        .replace("{{negativation.bureau}}", bureau_name(&p.bureau))
        .replace(
            "{{negativation.eligible_date}}",
            &eligible.format("%d/%m/%Y").to_string(),
        );
    let charge_json = serde_json::to_value(&p.charge).unwrap_or(Value::Null);
    let debtor_json = serde_json::to_value(&p.debtor).unwrap_or(Value::Null);
    let rendered =
        deliveries::render_template(&template, &charge_json, &debtor_json, &creditor, op.now);
    let now = op.timestamp();
    let id = op.new_id();
    let d = Delivery {
        provider_message_id: Some(format!("rec-notice-{}", &id[..8])),
        id,
        charge_id: p.charge.id.clone(),
        debtor_id: p.debtor.id.clone(),
        contact_point_id: p.target.contact_point_id.clone(),
        channel: p.target.channel.into(),
        action: "notify".into(),
        origin: "api".into(),
        status: DeliveryStatus::Sent,
        to: Some(p.target.to.clone()),
        template_id: Some("negativation_notice".into()),
        subject: rendered.subject,
        body: Some(rendered.body),
        scheduled_at: now.clone(),
        queued_at: Some(now.clone()),
        sent_at: Some(now.clone()),
        attempt: 1,
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    };
    save(op.tx, Kind::Delivery, op.org, &d)?;
    op.event("delivery.sent", "delivery", &d.id, &d, Value::Null)?;
    Ok(d)
}
