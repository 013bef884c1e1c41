//! The agreements worker: expiry of proposals, completion, and breaking after
//! `break_after_days` of an overdue installment.

use super::accept::{cancel_charge, short};
use super::{Agreement, commit, sync_installments, ts_ms};
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::charges;
use crate::ops::charges::{Charge, NewCharge};
use crate::status::{AgreementStatus, ChargeStatus};
use crate::store::{Cond, Kind, Query, find, load, save};

/// Moves agreements along with the clock and their installments' payments (see the
/// module docs); called by the worker tick. Returns how many agreements changed status.
pub fn check_broken(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In(
        "status",
        crate::status::values(AgreementStatus::OPEN),
    ));
    let agreements: Vec<Agreement> = find(op.tx, Kind::Agreement, op.org, &q)?;
    let today = op.today();
    let mut n = 0;
    for mut a in agreements {
        let before = a.clone();
        if a.status == AgreementStatus::Proposed {
            if ts_ms(&a.expires_at).is_some_and(|e| e < op.now.as_millis()) {
                crate::status::change(&mut a.status, &a.id, AgreementStatus::Expired)?;
                a.expired_at = Some(op.timestamp());
                commit(op, "agreement.expired", Some(&before), &mut a)?;
                n += 1;
            }
            continue;
        }
        let synced = sync_installments(op, &mut a)?;
        let mut late = None;
        let mut any_paid = false;
        let mut all_paid = !a.installments.is_empty();
        for i in &a.installments {
            let Some(cid) = &i.charge_id else {
                all_paid = false;
                continue;
            };
            let Some(c) = load::<Charge>(op.tx, Kind::Charge, op.org, cid)? else {
                all_paid = false;
                continue;
            };
            any_paid |= c.paid_amount > Money::ZERO;
            all_paid &= c.status == ChargeStatus::Paid;
            let days = charges::days_overdue(&c, today);
            if charges::is_open(&c) && days > i64::from(a.break_after_days) && late.is_none() {
                late = Some((i.number, days));
            }
        }
        if all_paid {
            crate::status::change(&mut a.status, &a.id, AgreementStatus::Completed)?;
            a.completed_at = Some(op.timestamp());
            commit(op, "agreement.completed", Some(&before), &mut a)?;
            n += 1;
        } else if let Some((number, days)) = late {
            break_agreement(op, &mut a, &before, number, days)?;
            n += 1;
        } else if a.status == AgreementStatus::Accepted && any_paid {
            crate::status::change(&mut a.status, &a.id, AgreementStatus::Active)?;
            a.activated_at = Some(op.timestamp());
            commit(op, "agreement.activated", Some(&before), &mut a)?;
            n += 1;
        } else if synced {
            a.updated_at = op.timestamp();
            save(op.tx, Kind::Agreement, op.org, &a)?;
        }
    }
    Ok(n)
}

/// `accepted|active → broken`: remaining installments canceled, the unpaid balance
/// back in dunning as a new charge due today.
pub(super) fn break_agreement(
    op: &mut Op<'_>,
    a: &mut Agreement,
    before: &Agreement,
    number: u32,
    days: i64,
) -> Result<(), DomainError> {
    let why = format!(
        "agreement {} broken: installment {number} overdue for {days} days (more than {})",
        a.id, a.break_after_days
    );
    let mut balance = Money::ZERO;
    let mut fine = f64::INFINITY;
    let mut interest = f64::INFINITY;
    for i in a.installments.clone() {
        let Some(cid) = &i.charge_id else { continue };
        let c = charges::load_charge(op, cid)?;
        if !charges::is_open(&c) {
            continue;
        }
        balance += c.amount - c.paid_amount;
        fine = fine.min(c.fine_percentage);
        interest = interest.min(c.interest_percentage);
        cancel_charge(op, cid, &why)?;
    }
    if balance > Money::ZERO {
        let c = charges::issue(
            op,
            NewCharge {
                debtor_id: a.debtor_id.clone(),
                amount: balance,
                due_date: op.today(),
                payment_method: a.payment_method.clone(),
                description: Some(format!("Saldo do acordo {} rompido", short(&a.id))),
                fine_percentage: if fine.is_finite() { fine } else { 0.0 },
                interest_percentage: if interest.is_finite() { interest } else { 0.0 },
                agreement_id: Some(a.id.clone()),
                tags: vec!["acordo_rompido".into()],
                ..NewCharge::default()
            },
        )?;
        a.balance_charge_id = Some(c.id);
    }
    sync_installments(op, a)?;
    crate::status::change(&mut a.status, &a.id, AgreementStatus::Broken)?;
    a.broken_at = Some(op.timestamp());
    commit(op, "agreement.broken", Some(before), a)
}
