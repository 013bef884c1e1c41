//! Accepting an agreement (installments issued, originals renegotiated) and canceling
//! one.

use dunning_core::{Output, UnixTime};
use serde::Deserialize;

use super::{Agreement, commit, load_agreement, sync_installments, ts_ms};
use crate::args::{ById, IdReason};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::ops::charges;
use crate::ops::charges::NewCharge;
use crate::ops::debtors::Debtor;
use crate::status::{AgreementStatus, ChargeStatus};
use crate::store::{Kind, load};

pub(super) fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `dunning_agreements_accept`.
#[derive(Debug, Deserialize)]
pub(super) struct AcceptArgs {
    id: String,
    accepted_by: Option<String>,
    accepted_at: Option<String>,
}

pub(super) fn accept(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: AcceptArgs = op.args_strict()?;
    let id = args.id.as_str();
    let accepted_by = args.accepted_by.as_deref().unwrap_or("operator");
    if !matches!(accepted_by, "debtor" | "operator") {
        return Err(DomainError::field(
            "accepted_by",
            "must be debtor or operator",
        ));
    }
    let mut a = load_agreement(op, id)?;
    if a.status.is_in_force() {
        sync_installments(op, &mut a)?;
        return Ok(ok(a));
    }
    crate::status::check(a.status, id, AgreementStatus::Accepted)?;
    let accepted_at = match args.accepted_at.as_deref() {
        None => op.timestamp(),
        Some(raw) => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("accepted_at", "must be an RFC 3339 timestamp or a date")
            })?;
            let ms = u64::try_from(t.timestamp_millis()).unwrap_or_default();
            if ms > op.now.as_millis() {
                return Err(DomainError::field(
                    "accepted_at",
                    "may not be in the future",
                ));
            }
            if ts_ms(&a.created_at).is_some_and(|c| ms + 1000 < c) {
                return Err(DomainError::field(
                    "accepted_at",
                    "may not be before the agreement was proposed",
                ));
            }
            calendar::timestamp(UnixTime::from_millis(ms))
        }
    };
    if ts_ms(&a.expires_at).is_some_and(|e| e < op.now.as_millis()) {
        return Err(DomainError::Conflict(format!(
            "agreement_expired: agreement {id} expired at {}; it can no longer be accepted (propose a new one)",
            a.expires_at
        )));
    }
    let mut originals = Vec::with_capacity(a.charge_ids.len());
    for cid in &a.charge_ids {
        let c = charges::load_charge(op, cid)?;
        if !c.status.is_late() {
            return Err(DomainError::Conflict(format!(
                "invalid_transition: charge {cid} of agreement {id} is now {} and cannot become renegotiated; cancel this agreement and propose a new one",
                c.status
            )));
        }
        originals.push(c);
    }
    let fine = originals
        .iter()
        .map(|c| c.fine_percentage)
        .fold(f64::INFINITY, f64::min);
    let interest = originals
        .iter()
        .map(|c| c.interest_percentage)
        .fold(f64::INFINITY, f64::min);
    let before = a.clone();
    let total = a.installments.len();
    let agreement_id = a.id.clone();
    for inst in &mut a.installments {
        let due = calendar::parse_date(&inst.due_date).unwrap_or_else(|| op.today());
        let what = if inst.kind == "down_payment" {
            "entrada".to_owned()
        } else {
            format!("parcela {}/{total}", inst.number)
        };
        let c = charges::issue(
            op,
            NewCharge {
                debtor_id: a.debtor_id.clone(),
                amount: inst.amount,
                due_date: due,
                payment_method: a.payment_method.clone(),
                description: Some(format!("Acordo {} — {what}", short(&agreement_id))),
                fine_percentage: if fine.is_finite() { fine } else { 0.0 },
                interest_percentage: if interest.is_finite() { interest } else { 0.0 },
                agreement_id: Some(agreement_id.clone()),
                tags: vec!["acordo".into()],
                ..NewCharge::default()
            },
        )?;
        crate::status::change(&mut inst.status, &c.id, c.status.into())?;
        inst.charge_id = Some(c.id);
    }
    for cid in &a.charge_ids {
        charges::mark_renegotiated(op, cid, Some(&agreement_id))?;
    }
    crate::ops::bureau::settle_for_agreement(op, &a.charge_ids)?;
    crate::status::change(&mut a.status, &a.id, AgreementStatus::Accepted)?;
    a.accepted_at = Some(accepted_at);
    a.accepted_by = Some(accepted_by.to_owned());
    a.accepted_by_user = Some(op.principal.subject.clone());
    commit(op, "agreement.accepted", Some(&before), &mut a)?;
    Ok(ok(a))
}

/// Checks a cancellation; `None` when already canceled.
pub(super) fn cancel_check(op: &mut Op<'_>, a: &Agreement) -> Result<Option<()>, DomainError> {
    match a.status {
        AgreementStatus::Canceled => Ok(None),
        AgreementStatus::Proposed => Ok(Some(())),
        AgreementStatus::Accepted => {
            for i in &a.installments {
                let Some(cid) = &i.charge_id else { continue };
                let c = charges::load_charge(op, cid)?;
                if c.paid_amount > Money::ZERO || c.status == ChargeStatus::Paid {
                    return Err(DomainError::Conflict(format!(
                        "invalid_transition: agreement {} has a payment on installment {} (charge {cid}, {}); an agreement with payments is active and cannot be canceled",
                        a.id, i.number, c.status
                    )));
                }
            }
            Ok(Some(()))
        }
        other => Err(DomainError::transition(
            "agreement",
            &a.id,
            other,
            "canceled",
        )),
    }
}

pub(super) fn describe_cancel(op: &mut Op<'_>) -> Result<String, DomainError> {
    let ById { id } = op.args()?;
    let a = load_agreement(op, &id)?;
    let check = cancel_check(op, &a)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &a.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let total = a.total_amount.to_string();
    Ok(match (check, a.status) {
        (None, _) => {
            format!("Agreement {id} of {name} is already canceled; nothing will change. Continue?")
        }
        (Some(()), AgreementStatus::Accepted) => format!(
            "Cancel the accepted agreement {id} of {name} ({total} in {} payment(s))? Its {} installment charge(s) are canceled and the {} original charge(s) return to dunning as overdue.",
            a.installments.len(),
            a.installments.len(),
            a.charge_ids.len()
        ),
        _ => format!(
            "Cancel the proposed agreement {id} of {name} ({total} in {} payment(s))? The proposal can no longer be accepted.",
            a.installments.len()
        ),
    })
}

/// Cancels an open installment charge.
pub(super) fn cancel_charge(op: &mut Op<'_>, cid: &str, reason: &str) -> Result<(), DomainError> {
    let mut c = charges::load_charge(op, cid)?;
    if !charges::is_open(&c) {
        return Ok(());
    }
    let before = c.clone();
    crate::status::change(&mut c.status, &c.id, ChargeStatus::Canceled)?;
    c.canceled_at = Some(op.timestamp());
    c.cancellation_reason = Some(reason.to_owned());
    charges::commit(op, "charge.canceled", Some(&before), &mut c)
}

pub(super) fn cancel(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let IdReason { id, reason } = op.args_strict()?;
    let id = id.as_str();
    let mut a = load_agreement(op, id)?;
    if cancel_check(op, &a)?.is_none() {
        return Ok(ok(a));
    }
    let before = a.clone();
    let reason = reason.unwrap_or_else(|| "canceled".to_owned());
    if a.status == AgreementStatus::Accepted {
        let why = format!("agreement {} canceled: {reason}", a.id);
        for i in a.installments.clone() {
            if let Some(cid) = &i.charge_id {
                cancel_charge(op, cid, &why)?;
            }
        }
        for cid in a.charge_ids.clone() {
            let mut c = charges::load_charge(op, &cid)?;
            if c.status != ChargeStatus::Renegotiated || c.agreement_id.as_deref() != Some(id) {
                continue;
            }
            let prev = c.clone();
            let back = if c.paid_amount > Money::ZERO {
                ChargeStatus::PartiallyPaid
            } else {
                ChargeStatus::Overdue
            };
            crate::status::change(&mut c.status, &c.id, back)?;
            c.agreement_id = None;
            charges::commit(op, "charge.updated", Some(&prev), &mut c)?;
        }
        sync_installments(op, &mut a)?;
    }
    crate::status::change(&mut a.status, &a.id, AgreementStatus::Canceled)?;
    a.canceled_at = Some(op.timestamp());
    a.cancellation_reason = Some(reason);
    commit(op, "agreement.canceled", Some(&before), &mut a)?;
    Ok(ok(a))
}
