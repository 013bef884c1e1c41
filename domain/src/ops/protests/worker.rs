//! The worker tick of protests: the default notary driver moves them along.

use super::handlers::notary_protocol;
use super::{NOTARY_PAYMENT_DAYS, Protest, WITHDRAWABLE, commit};
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::charges::Charge;
use crate::status::{ChargeStatus, ProtestStatus};
use crate::store::{Cond, Kind, Query, find, load};

/// Moves protests along as the default notary driver answers (see the module docs);
/// called by the worker tick. Returns how many transitions it made.
pub fn advance(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In("status", crate::status::values(WITHDRAWABLE)));
    let protests: Vec<Protest> = find(op.tx, Kind::Protest, op.org, &q)?;
    let today = op.today();
    let mut n = 0;
    for mut p in protests {
        let charge = load::<Charge>(op.tx, Kind::Charge, op.org, &p.charge_id)?;
        // A charge gone counts as canceled.
        let status = charge.as_ref().map_or(ChargeStatus::Canceled, |c| c.status);
        if !status.is_late() {
            let before = p.clone();
            p.finished_at = Some(op.timestamp());
            if status == ChargeStatus::Paid && p.status == ProtestStatus::Intimated {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::PaidAtNotary)?;
                commit(op, "protest.paid_at_notary", Some(&before), &mut p)?;
            } else {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Withdrawn)?;
                p.withdrawal_reason = Some(format!("the charge became {status}"));
                commit(op, "protest.canceled", Some(&before), &mut p)?;
            }
            n += 1;
            continue;
        }
        let before = p.clone();
        match p.status {
            ProtestStatus::Requested => {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::SentToNotary)?;
                p.sent_to_notary_at = Some(op.timestamp());
                p.protocol = Some(notary_protocol(&p));
                commit(op, "protest.sent_to_notary", Some(&before), &mut p)?;
            }
            ProtestStatus::SentToNotary => {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Intimated)?;
                p.intimated_at = Some(op.timestamp());
                let deadline = calendar::add_business_days(today, NOTARY_PAYMENT_DAYS);
                p.payment_deadline = Some(deadline.format("%Y-%m-%d").to_string());
                commit(op, "protest.intimated", Some(&before), &mut p)?;
            }
            _ => {
                let deadline = p
                    .payment_deadline
                    .as_deref()
                    .and_then(calendar::parse_date)
                    .unwrap_or(today);
                if today <= deadline {
                    continue;
                }
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Protested)?;
                p.protested_at = Some(op.timestamp());
                commit(op, "protest.protested", Some(&before), &mut p)?;
            }
        }
        n += 1;
    }
    Ok(n)
}
