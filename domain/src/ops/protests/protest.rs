//! A protest as stored, its loading and commit, and the distance-sale rule (CDC art. 49).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::ops::charges::Charge;
use crate::status::ProtestStatus;
use crate::store::{Cond, Kind, Query, find, load, must, save};

/// Protestable titles.
pub const TITLE_TYPES: &[&str] = &[
    "duplicata_mercantil",
    "duplicata_servico",
    "contrato",
    "nota_promissoria",
    "cheque",
];
/// Every protest status.
pub const STATUSES: &[&str] = ProtestStatus::NAMES;
/// A protest in course or in force.
pub const ACTIVE: &[ProtestStatus] = ProtestStatus::ACTIVE;
/// Statuses a protest can be withdrawn from (desistência).
pub const WITHDRAWABLE: &[ProtestStatus] = ProtestStatus::WITHDRAWABLE;
/// CDC art. 49: days the consumer may withdraw from a distance sale.
pub const WITHDRAWAL_DAYS: i64 = 7;
/// Business days the debtor has to pay at the notary after the intimation.
pub const NOTARY_PAYMENT_DAYS: u32 = 3;
/// Most proof documents per protest.
pub const MAX_DOCUMENTS: usize = 20;

/// A protest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Protest {
    /// UUID.
    pub id: String,
    /// The charge protested.
    pub charge_id: String,
    /// Its debtor.
    pub debtor_id: String,
    /// Status (see the module docs).
    pub status: ProtestStatus,
    /// The title: `duplicata_mercantil`, `duplicata_servico`, `contrato`,
    /// `nota_promissoria` or `cheque`.
    pub title_type: String,
    /// Proof of the debt (the creditor's document references).
    pub document_ids: Vec<String>,
    /// Amount protested (the charge's updated amount when requested, BRL).
    pub amount: Money,
    /// Notary office (the debtor's city).
    pub notary_office: String,
    /// The notary's protocol number.
    pub protocol: Option<String>,
    /// Notary costs (emolumentos; São Paulo defers them to the debtor, so 0 until the
    /// notary says otherwise).
    pub costs_amount: Money,
    /// When requested.
    pub requested_at: Option<String>,
    /// When the notary received it.
    pub sent_to_notary_at: Option<String>,
    /// When the notary intimated the debtor.
    pub intimated_at: Option<String>,
    /// Last day to pay at the notary (3 business days after the intimation).
    pub payment_deadline: Option<String>,
    /// When protested.
    pub protested_at: Option<String>,
    /// When the protest ended (paid at notary, withdrawn, canceled, rejected, failed).
    pub finished_at: Option<String>,
    /// Why it was withdrawn.
    pub withdrawal_reason: Option<String>,
    /// Why a protested title was canceled.
    pub cancellation_reason: Option<String>,
    /// A post-protest cancellation came with the creditor's consent letter.
    pub consent_letter: bool,
    /// What went wrong.
    pub error_message: Option<String>,
    /// Who asked for the protest.
    pub requested_by: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// The active protest of a charge (any status in [`ACTIVE`]), if any.
pub fn active_protest(op: &mut Op<'_>, charge_id: &str) -> Result<Option<Protest>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("charge_id", json!(charge_id)))
        .with(Cond::In("status", crate::status::values(ACTIVE)));
    Ok(find::<Protest>(op.tx, Kind::Protest, op.org, &q)?
        .into_iter()
        .next())
}

/// Loads a protest of the caller's organization or answers `NOT_FOUND`.
pub fn load_protest(op: &mut Op<'_>, id: &str) -> Result<Protest, DomainError> {
    must(op.tx, Kind::Protest, op.org, id)
}

/// Whether the charge comes from a distance sale, and the sale date.
pub fn distance_sale(c: &Charge) -> Option<NaiveDate> {
    let flagged = c.tags.iter().any(|t| t == "distance_sale")
        || c.custom_data.get("distance_sale").and_then(Value::as_bool) == Some(true);
    if !flagged {
        return None;
    }
    c.custom_data
        .get("sale_date")
        .and_then(Value::as_str)
        .and_then(calendar::parse_date)
        .or_else(|| {
            calendar::parse_timestamp(&c.created_at)
                .map(|t| t.with_timezone(&calendar::offset()).date_naive())
        })
}

pub(super) fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&Protest>,
    p: &mut Protest,
) -> Result<(), DomainError> {
    p.updated_at = op.timestamp();
    save(op.tx, Kind::Protest, op.org, &*p)?;
    let changes = before.map_or(Value::Null, |b| diff(b, &*p));
    op.event(code, "protest", &p.id.clone(), &*p, changes)?;
    if let Some(mut c) = load::<Charge>(op.tx, Kind::Charge, op.org, &p.charge_id)? {
        if c.protest_status != Some(p.status) {
            c.protest_status = Some(p.status);
            c.updated_at = op.timestamp();
            save(op.tx, Kind::Charge, op.org, &c)?;
        }
    }
    Ok(())
}
