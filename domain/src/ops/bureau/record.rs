//! A bureau record as stored, and the rules on it: disputes, how long a debt may stay
//! registered, the active record of a charge.

use chrono::{Months, NaiveDate};
use dunning_core::UnixTime;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::ops::charges::Charge;
use crate::status::BureauStatus;
use crate::store::{Cond, Kind, Query, find, load, save};

/// Bureaus.
pub const BUREAUS: &[&str] = &["serasa", "spc", "boa_vista", "quod"];
/// Every record status, the active ones first and the early ones first of those.
pub const STATUSES: &[&str] = BureauStatus::NAMES;
/// Statuses of a record that is (or is about to be) on the bureau's files: from
/// `pending_notice` to `removal_requested`.
pub const ACTIVE: &[BureauStatus] = BureauStatus::ACTIVE;
/// Statuses a record may still be canceled from (before any request to the bureau):
/// `pending_notice`, `notice_sent`, `awaiting_window`.
pub const EARLY: &[BureauStatus] = BureauStatus::EARLY;
/// Removal reasons.
pub const REMOVAL_REASONS: &[&str] = &["paid", "agreement", "error", "canceled", "dispute"];
/// Longest notice window a caller may ask for (days).
pub const MAX_NOTICE_DAYS: i64 = 90;

pub(super) const DAY_MS: u64 = 86_400_000;

/// A credit-bureau record (negativação).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BureauRecord {
    /// UUID.
    pub id: String,
    /// The charge registered.
    pub charge_id: String,
    /// Its debtor.
    pub debtor_id: String,
    /// `serasa`, `spc`, `boa_vista` or `quod`.
    pub bureau: String,
    /// Status (see the module docs).
    pub status: BureauStatus,
    /// Amount registered (the charge's updated amount when negativated, BRL).
    pub amount: Money,
    /// The delivery that carried the prior notice.
    pub notice_delivery_id: Option<String>,
    /// `email` or `postal`.
    pub notice_channel: Option<String>,
    /// Where the notice went (e-mail address or postal address).
    pub notice_to: Option<String>,
    /// When the notice was sent.
    pub notice_sent_at: Option<String>,
    /// Days between notice and inclusion.
    pub notice_days: u32,
    /// Inclusion may happen from this moment on.
    pub eligible_at: Option<String>,
    /// When the inclusion was requested from the bureau.
    pub requested_at: Option<String>,
    /// When the bureau registered the debt.
    pub included_at: Option<String>,
    /// When removal was requested.
    pub removal_requested_at: Option<String>,
    /// When the bureau removed the debt.
    pub removed_at: Option<String>,
    /// Why it was removed or canceled: `paid`, `agreement`, `error`, `canceled`, `dispute`.
    pub removal_reason: Option<String>,
    /// When canceled (before any request to the bureau).
    pub canceled_at: Option<String>,
    /// The bureau's protocol number.
    pub protocol: Option<String>,
    /// What went wrong, or why it was canceled.
    pub error_message: Option<String>,
    /// Who negativated.
    pub requested_by: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

// ---------------------------------------------------------------------------------
// Helpers shared with protests and agreements
// ---------------------------------------------------------------------------------

/// Whether a charge is disputed, however the dispute was recorded: the tag `disputed`
/// (or `contestada`), `custom_data.disputed = true`, or dunning paused with a reason that
/// names a dispute ([`names_a_dispute`]). A disputed debt is neither negativated nor
/// protested (`rules.md`, Negativação and Protest).
pub fn is_disputed(c: &Charge) -> bool {
    c.tags
        .iter()
        .any(|t| matches!(t.to_lowercase().as_str(), "disputed" | "contestada"))
        || c.custom_data.get("disputed").and_then(Value::as_bool) == Some(true)
        || (c.dunning_paused && c.pause_reason.as_deref().is_some_and(names_a_dispute))
}

/// Whether a free-text reason names a dispute, in Portuguese or English: a word starting
/// with `disput`, `contest`, `impugn` or `questionad` (case and accents ignored), e.g.
/// "Devedor contesta o valor", "em disputa", "impugnação", "disputed by the debtor".
pub fn names_a_dispute(reason: &str) -> bool {
    const STEMS: [&str; 4] = ["disput", "contest", "impugn", "questionad"];
    reason
        .to_lowercase()
        .split(|ch: char| !ch.is_alphanumeric())
        .any(|w| STEMS.iter().any(|s| w.starts_with(s)))
}

/// The active record of a charge (any status in [`ACTIVE`]), if any.
pub fn active_record(
    op: &mut Op<'_>,
    charge_id: &str,
) -> Result<Option<BureauRecord>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("charge_id", json!(charge_id)))
        .with(Cond::In("status", crate::status::values(ACTIVE)));
    Ok(
        find::<BureauRecord>(op.tx, Kind::CreditBureauRecord, op.org, &q)?
            .into_iter()
            .next(),
    )
}

/// The last day a debt due on `due` may be registered (CDC art. 43 §1: five years).
pub fn registrable_until(c: &Charge) -> NaiveDate {
    let due = calendar::parse_date(&c.original_due_date)
        .or_else(|| calendar::parse_date(&c.due_date))
        .unwrap_or_default();
    due.checked_add_months(Months::new(60)).unwrap_or(due)
}

/// Bureau display name.
pub fn bureau_name(b: &str) -> &'static str {
    match b {
        "serasa" => "Serasa Experian",
        "spc" => "SPC Brasil",
        "boa_vista" => "Boa Vista SCPC",
        "quod" => "Quod",
        _ => "the credit bureau",
    }
}

pub(super) fn ms(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

pub(super) fn due_now(ts: Option<&str>, now: UnixTime) -> bool {
    ts.and_then(ms).is_some_and(|t| t <= now.as_millis())
}

/// Saves a record that changed, mirrors its status on the charge, writes `code`.
pub(super) fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&BureauRecord>,
    r: &mut BureauRecord,
) -> Result<(), DomainError> {
    r.updated_at = op.timestamp();
    save(op.tx, Kind::CreditBureauRecord, op.org, &*r)?;
    let changes = before.map_or(Value::Null, |b| diff(b, &*r));
    op.event(code, "credit_bureau_record", &r.id.clone(), &*r, changes)?;
    mirror_on_charge(op, &r.charge_id, r.status)
}

/// Keeps the charge's `negativation_status` in step (no charge event: the record's
/// event is the change).
pub(super) fn mirror_on_charge(
    op: &mut Op<'_>,
    charge_id: &str,
    status: BureauStatus,
) -> Result<(), DomainError> {
    if let Some(mut c) = load::<Charge>(op.tx, Kind::Charge, op.org, charge_id)? {
        if c.negativation_status != Some(status) {
            c.negativation_status = Some(status);
            c.updated_at = op.timestamp();
            save(op.tx, Kind::Charge, op.org, &c)?;
        }
    }
    Ok(())
}

pub(super) fn cancel_record(
    op: &mut Op<'_>,
    r: &mut BureauRecord,
    reason: Option<&str>,
    why: &str,
) -> Result<(), DomainError> {
    let before = r.clone();
    crate::status::change(&mut r.status, &r.id, BureauStatus::Canceled)?;
    r.canceled_at = Some(op.timestamp());
    r.removal_reason = reason.map(str::to_owned);
    r.error_message = Some(why.to_owned());
    commit(op, "credit_bureau.canceled", Some(&before), r)
}

pub(super) fn request_removal(
    op: &mut Op<'_>,
    r: &mut BureauRecord,
    reason: &str,
) -> Result<(), DomainError> {
    let before = r.clone();
    crate::status::change(&mut r.status, &r.id, BureauStatus::RemovalRequested)?;
    r.removal_requested_at = Some(op.timestamp());
    r.removal_reason = Some(reason.to_owned());
    commit(op, "credit_bureau.removal_requested", Some(&before), r)
}

/// An agreement folding these charges was accepted: included records get their removal
/// requested at once (reason `agreement`), records still before inclusion are canceled.
/// Returns how many records changed.
pub fn settle_for_agreement(op: &mut Op<'_>, charge_ids: &[String]) -> Result<u32, DomainError> {
    let mut n = 0;
    for cid in charge_ids {
        let Some(mut r) = active_record(op, cid)? else {
            continue;
        };
        match r.status {
            BureauStatus::Included => {
                request_removal(op, &mut r, "agreement")?;
                n += 1;
            }
            s if s.is_early() => {
                cancel_record(
                    op,
                    &mut r,
                    Some("agreement"),
                    "the charge was renegotiated in an accepted agreement before inclusion",
                )?;
                n += 1;
            }
            _ => {}
        }
    }
    Ok(n)
}
