//! The bureau worker: notice window, request, inclusion, and automatic removal after
//! payment or agreement.

use super::{
    ACTIVE, BureauRecord, cancel_record, commit, due_now, is_disputed, registrable_until,
    request_removal,
};
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::charges::Charge;
use crate::ops::debtors::Debtor;
use crate::ops::deliveries::Delivery;
use crate::status::{BureauStatus, ChargeStatus, DeliveryStatus};
use crate::store::{Cond, Kind, Query, find, load};

/// The default bureau driver: records the request and answers with a protocol at once
/// (nothing leaves the machine).
pub(super) fn bureau_protocol(r: &BureauRecord) -> String {
    let code = match r.bureau.as_str() {
        "serasa" => "SER",
        "spc" => "SPC",
        "boa_vista" => "BVS",
        "quod" => "QOD",
        _ => "CB",
    };
    let digits: String =
        r.id.chars()
            .filter(char::is_ascii_hexdigit)
            .take(12)
            .collect();
    format!("{code}-{}", digits.to_uppercase())
}

/// Why a record waiting for inclusion must stop, as `(removal_reason, message)`.
pub(super) fn stop_reason(
    op: &mut Op<'_>,
    r: &BureauRecord,
    c: Option<&Charge>,
) -> Result<Option<(Option<&'static str>, String)>, DomainError> {
    let Some(c) = c else {
        return Ok(Some((
            Some("error"),
            format!("charge {} no longer exists", r.charge_id),
        )));
    };
    let reason = match c.status {
        ChargeStatus::Overdue | ChargeStatus::PartiallyPaid => None,
        ChargeStatus::Paid => Some(Some("paid")),
        ChargeStatus::Renegotiated => Some(Some("agreement")),
        ChargeStatus::Canceled => Some(Some("canceled")),
        _ => Some(None),
    };
    if let Some(reason) = reason {
        return Ok(Some((
            reason,
            format!("charge {} became {} before inclusion", c.id, c.status),
        )));
    }
    if is_disputed(c) {
        return Ok(Some((
            Some("dispute"),
            format!("charge {} is disputed by the debtor", c.id),
        )));
    }
    if let Some(d) = load::<Debtor>(op.tx, Kind::Debtor, op.org, &c.debtor_id)? {
        if d.credit_restriction_blocked {
            return Ok(Some((
                None,
                format!("debtor {} became credit_restriction_blocked", d.id),
            )));
        }
    }
    if op.today() > registrable_until(c) {
        return Ok(Some((
            None,
            format!("charge {} is now older than 5 years (CDC art. 43 §1)", c.id),
        )));
    }
    Ok(None)
}

/// Moves credit-bureau records along (see the module docs); called by the worker tick,
/// which should run often (removals are due within 5 business days of payment, STJ
/// Súmula 548). Returns how many transitions it made.
pub fn advance(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In("status", crate::status::values(ACTIVE)));
    let records: Vec<BureauRecord> = find(op.tx, Kind::CreditBureauRecord, op.org, &q)?;
    let mut n = 0;
    for mut r in records {
        let charge = load::<Charge>(op.tx, Kind::Charge, op.org, &r.charge_id)?;
        match r.status {
            BureauStatus::PendingNotice
            | BureauStatus::NoticeSent
            | BureauStatus::AwaitingWindow => {
                if let Some((reason, why)) = stop_reason(op, &r, charge.as_ref())? {
                    cancel_record(op, &mut r, reason, &why)?;
                    n += 1;
                    continue;
                }
                if r.status == BureauStatus::PendingNotice {
                    // A notice was never recorded (it is sent by `negativate`): nothing
                    // may happen until one is.
                    continue;
                }
                if r.status == BureauStatus::NoticeSent {
                    let notice = match &r.notice_delivery_id {
                        Some(did) => load::<Delivery>(op.tx, Kind::Delivery, op.org, did)?,
                        None => None,
                    };
                    match notice.as_ref().map(|d| d.status) {
                        Some(s) if s.was_sent() => {
                            let before = r.clone();
                            crate::status::change(
                                &mut r.status,
                                &r.id,
                                BureauStatus::AwaitingWindow,
                            )?;
                            commit(op, "credit_bureau.awaiting_window", Some(&before), &mut r)?;
                            n += 1;
                        }
                        Some(
                            DeliveryStatus::Failed
                            | DeliveryStatus::Bounced
                            | DeliveryStatus::Canceled,
                        )
                        | None => {
                            cancel_record(
                                op,
                                &mut r,
                                None,
                                "the prior notice (CDC art. 43 §2) could not be delivered; negativate again once the debtor has a valid address",
                            )?;
                            n += 1;
                            continue;
                        }
                        Some(_) => continue,
                    }
                }
                if r.status == BureauStatus::AwaitingWindow
                    && due_now(r.eligible_at.as_deref(), op.now)
                {
                    n += include(op, &mut r)?;
                }
            }
            BureauStatus::Requested => n += include(op, &mut r)?,
            BureauStatus::Included => {
                let reason = match charge.as_ref().map(|c| c.status) {
                    Some(ChargeStatus::Paid) => Some("paid"),
                    Some(ChargeStatus::Renegotiated) => Some("agreement"),
                    Some(ChargeStatus::Canceled) | None => Some("canceled"),
                    _ => None,
                };
                if let Some(reason) = reason {
                    request_removal(op, &mut r, reason)?;
                    n += 1;
                }
            }
            BureauStatus::RemovalRequested => {
                let before = r.clone();
                crate::status::change(&mut r.status, &r.id, BureauStatus::Removed)?;
                r.removed_at = Some(op.timestamp());
                commit(op, "credit_bureau.removed", Some(&before), &mut r)?;
                n += 1;
            }
            _ => {}
        }
    }
    Ok(n)
}

/// `awaiting_window → requested → included` (the default driver answers at once).
pub(super) fn include(op: &mut Op<'_>, r: &mut BureauRecord) -> Result<u32, DomainError> {
    let mut n = 0;
    if r.status == BureauStatus::AwaitingWindow {
        let before = r.clone();
        crate::status::change(&mut r.status, &r.id, BureauStatus::Requested)?;
        r.requested_at = Some(op.timestamp());
        commit(op, "credit_bureau.requested", Some(&before), r)?;
        n += 1;
    }
    if r.notice_sent_at.is_none() || r.notice_delivery_id.is_none() {
        let before = r.clone();
        crate::status::change(&mut r.status, &r.id, BureauStatus::Rejected)?;
        r.error_message = Some("no prior notice on record (CDC art. 43 §2)".into());
        commit(op, "credit_bureau.failed", Some(&before), r)?;
        return Ok(n + 1);
    }
    let before = r.clone();
    crate::status::change(&mut r.status, &r.id, BureauStatus::Included)?;
    r.included_at = Some(op.timestamp());
    r.protocol = Some(bureau_protocol(r));
    commit(op, "credit_bureau.included", Some(&before), r)?;
    Ok(n + 1)
}
