//! The handlers of the bureau record tools: listing, reading and removing records
//! (negativating is in `negativate`, with its checks).

use dunning_core::Output;
use serde::Deserialize;

use super::{BureauRecord, EARLY, REMOVAL_REASONS, bureau_name, cancel_record, request_removal};
use crate::args::ById;
use crate::error::DomainError;
use crate::list::{Filter, Listing};
use crate::op::{Op, ok};
use crate::ops::debtors::Debtor;
use crate::status::BureauStatus;
use crate::store::{Kind, Order, load, must};

/// `dunning_credit_bureau_list`.
pub(super) const LISTING: Listing = Listing {
    kind: Kind::CreditBureauRecord,
    filters: &[
        Filter::In("status", "status"),
        Filter::Eq("bureau", "bureau"),
        Filter::Eq("debtor_id", "debtor_id"),
        Filter::Eq("charge_id", "charge_id"),
    ],
    sorts: &[("created_at", "created_at", Order::Desc)],
};

pub(super) fn list_records(op: &mut Op<'_>) -> Result<Output, DomainError> {
    LISTING.run(op)
}

/// Loads a record of the caller's organization or answers `NOT_FOUND`.
pub fn load_record(op: &mut Op<'_>, id: &str) -> Result<BureauRecord, DomainError> {
    must(op.tx, Kind::CreditBureauRecord, op.org, id)
}

pub(super) fn get_record(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_record(op, &id)?))
}

/// What a removal does to a record in its status, or why it cannot.
pub(super) fn removal_effect(r: &BureauRecord) -> Result<Option<BureauStatus>, DomainError> {
    match r.status {
        BureauStatus::Included => Ok(Some(BureauStatus::RemovalRequested)),
        s if s.is_early() => Ok(Some(BureauStatus::Canceled)),
        BureauStatus::RemovalRequested | BureauStatus::Removed | BureauStatus::Canceled => Ok(None),
        other => Err(DomainError::Conflict(format!(
            "invalid_transition: credit bureau record {} is {other}; only included records (removal) or records still awaiting their notice window ({}) can be removed",
            r.id,
            crate::status::joined(EARLY)
        ))),
    }
}

/// `dunning_credit_bureau_remove`.
#[derive(Debug, Deserialize)]
pub(super) struct RemoveArgs {
    id: String,
    reason: String,
}

pub(super) fn reason_arg(args: &RemoveArgs) -> Result<String, DomainError> {
    let reason = args.reason.as_str();
    if !REMOVAL_REASONS.contains(&reason) {
        return Err(DomainError::field(
            "reason",
            format!("must be one of {}", REMOVAL_REASONS.join(", ")),
        ));
    }
    Ok(reason.to_owned())
}

pub(super) fn describe_remove(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: RemoveArgs = op.args()?;
    let reason = reason_arg(&args)?;
    let id = args.id.as_str();
    let r = load_record(op, id)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &r.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let amount = r.amount.to_string();
    Ok(match removal_effect(&r)? {
        Some(BureauStatus::RemovalRequested) => format!(
            "Ask {} to remove {name}'s registration of {amount} for charge {} (reason: {reason})?",
            bureau_name(&r.bureau),
            r.charge_id
        ),
        Some(_) => format!(
            "Cancel the pending negativação of {name} ({amount}, charge {}) with {} before it reaches the bureau (reason: {reason})?",
            r.charge_id,
            bureau_name(&r.bureau)
        ),
        None => format!(
            "Credit-bureau record {id} of {name} is already {}; nothing will change. Continue?",
            r.status
        ),
    })
}

pub(super) fn remove(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: RemoveArgs = op.args_strict()?;
    let reason = reason_arg(&args)?;
    let mut r = load_record(op, &args.id)?;
    match removal_effect(&r)? {
        Some(BureauStatus::RemovalRequested) => request_removal(op, &mut r, &reason)?,
        Some(_) => cancel_record(
            op,
            &mut r,
            Some(&reason),
            &format!("canceled by {} before inclusion", op.principal.subject),
        )?,
        None => {}
    }
    Ok(ok(r))
}
