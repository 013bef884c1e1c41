//! `draft → pending` (`ChargeStatus` in `status.rs`): a draft is issued when the creditor is ready to
//! collect it. Issuing registers it (boleto line and barcode and/or Pix, as for a charge
//! created `pending`), optionally on a new due date, and from then on the ruler follows
//! it. The debtor must still be active, and the due date may not be in the past (a draft
//! kept for a while is issued with a new `due_date`).

use chrono::NaiveDate;
use dunning_core::Output;
use serde::Deserialize;

use super::handlers::{debtor_of, with_debtor};
use super::{commit, due_date, load_charge, register};
use crate::args::fields;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::ops::debtors::Debtor;
use crate::status::{ChargeStatus, DebtorStatus};
use crate::store::{Kind, must};

/// `dunning_charges_issue`'s arguments.
#[derive(Debug, Deserialize)]
pub(super) struct IssueArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::date")]
    due_date: Option<NaiveDate>,
}

/// `dunning_charges_issue`. Issuing a `pending` charge again changes nothing.
pub(super) fn issue_draft(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let IssueArgs {
        id,
        due_date: asked,
    } = op.args_strict()?;
    let id = id.as_str();
    let mut c = load_charge(op, id)?;
    let today = op.today();
    match c.status {
        ChargeStatus::Draft => {
            let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &c.debtor_id)?;
            if debtor.status != DebtorStatus::Active {
                return Err(DomainError::Conflict(format!(
                    "debtor {} is {}; charges can only be issued for active debtors",
                    debtor.id, debtor.status
                )));
            }
            let due = asked.unwrap_or_else(|| due_date(&c));
            if due < today {
                return Err(DomainError::field(
                    "due_date",
                    format!(
                        "may not be in the past (today is {today}); give the draft a new due_date"
                    ),
                ));
            }
            let before = c.clone();
            c.due_date = due.format("%Y-%m-%d").to_string();
            crate::status::change(&mut c.status, &c.id, ChargeStatus::Pending)?;
            register(op, &mut c)?;
            commit(op, "charge.issued", Some(&before), &mut c)?;
        }
        ChargeStatus::Pending if asked.is_none_or(|d| d == due_date(&c)) => {}
        ChargeStatus::Pending => {
            return Err(DomainError::Conflict(format!(
                "charge {id} is already issued (pending); change its due date with dunning_charges_update"
            )));
        }
        other => return Err(DomainError::transition("charge", id, other, "pending")),
    }
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, today, d.as_ref())))
}
