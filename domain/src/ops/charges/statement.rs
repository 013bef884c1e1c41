//! Documents of charges: the settlement letter and the debtor statement.

use chrono::NaiveDate;
use dunning_core::{File, Output};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Charge, breakdown, due_date, view};
use crate::args::{ById, ListArgs, fields};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::documents::{self, Party, SettlementLetter, StatementDoc, StatementLine};
use crate::error::DomainError;
use crate::op::{Op, Page, ok};
use crate::ops::debtors::{Debtor, load_debtor};
use crate::org::Organization;
use crate::status::{AgreementStatus, ChargeStatus};
use crate::store::{Cond, Kind, Query, find, must};

fn creditor(op: &mut Op<'_>) -> Result<Party, DomainError> {
    let org: Organization = must(op.tx, Kind::Organization, op.org, op.org)?;
    Ok(Party {
        name: org.name,
        document: org.cnpj,
    })
}

fn party(d: &Debtor) -> Party {
    Party {
        name: d.name.clone(),
        document: d.cnpj_cpf.clone(),
    }
}

fn pdf(bytes: Vec<u8>, path: String) -> Output {
    Output::File(File {
        content_type: "application/pdf".into(),
        bytes,
        download_path: path,
    })
}

fn local_date(ts: Option<&str>) -> Option<NaiveDate> {
    ts.and_then(calendar::parse_timestamp)
        .map(|t| t.with_timezone(&calendar::offset()).date_naive())
}

/// How a charge was settled, when it was.
enum Settled {
    /// Paid in full: amount received, date, means.
    Paid(Money, NaiveDate, String),
    /// Folded into an agreement whose installments were all paid: the amount the
    /// agreement took over, the day it completed, the agreement id.
    Agreement(Money, NaiveDate, String),
}

fn settled(op: &mut Op<'_>, c: &Charge) -> Result<Option<Settled>, DomainError> {
    match c.status {
        ChargeStatus::Paid => Ok(Some(Settled::Paid(
            c.paid_amount,
            local_date(c.paid_at.as_deref()).unwrap_or_else(|| op.today()),
            c.paid_via.clone().unwrap_or_else(|| "manual".into()),
        ))),
        ChargeStatus::Renegotiated => {
            let Some(aid) = &c.agreement_id else {
                return Ok(None);
            };
            let Some(a) = op.tx.get(Kind::Agreement, op.org, aid)? else {
                return Ok(None);
            };
            if a.get("status")
                .and_then(Value::as_str)
                .and_then(AgreementStatus::from_wire)
                != Some(AgreementStatus::Completed)
            {
                return Ok(None);
            }
            let part = a
                .get("charges")
                .and_then(Value::as_array)
                .and_then(|parts| {
                    parts
                        .iter()
                        .find(|p| p.get("charge_id").and_then(Value::as_str) == Some(c.id.as_str()))
                })
                .map(|p| Money::in_doc(p, "updated_amount"));
            let owed = c.amount - c.paid_amount;
            let day = local_date(a.get("completed_at").and_then(Value::as_str))
                .unwrap_or_else(|| op.today());
            Ok(Some(Settled::Agreement(
                part.unwrap_or(owed),
                day,
                aid.clone(),
            )))
        }
        _ => Ok(None),
    }
}

/// The settlement letter of a paid charge, or of a charge whose agreement was completed
/// (rules.md, Documents). Same bytes every time.
pub(super) fn settlement_letter(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let id = id.as_str();
    let c = super::load_charge(op, id)?;
    let Some(how) = settled(op, &c)? else {
        return Err(DomainError::NotSettled(format!(
            "not_settled: charge {id} is {}; a settlement letter (carta de quitação) is issued only for a fully paid charge or one whose agreement was completed",
            c.status
        )));
    };
    let debtor = load_debtor(op, &c.debtor_id)?;
    let (paid, paid_on, paid_via, agreement_id) = match how {
        Settled::Paid(amount, day, via) => (amount, day, via, None),
        Settled::Agreement(amount, day, aid) => (amount, day, "agreement".to_owned(), Some(aid)),
    };
    let letter = SettlementLetter {
        creditor: creditor(op)?,
        debtor: party(&debtor),
        charge_id: c.id.clone(),
        external_id: c.external_id.clone(),
        description: c.description.clone(),
        original: c.amount,
        paid,
        due_date: due_date(&c),
        paid_on,
        paid_via,
        agreement_id,
        place: "São Paulo".into(),
    };
    Ok(pdf(
        documents::settlement_letter(&letter),
        format!("/v1/charges/{id}/settlement-pdf"),
    ))
}

/// Statuses a statement lists (rules.md, Documents).
const LISTED: &[ChargeStatus] = &[
    ChargeStatus::Pending,
    ChargeStatus::Overdue,
    ChargeStatus::PartiallyPaid,
    ChargeStatus::Paid,
    ChargeStatus::Renegotiated,
];

/// `dunning_debtors_statement`: a page of its lines (JSON), 100 per page by default.
#[derive(Debug, Deserialize)]
pub(super) struct StatementArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::date")]
    as_of: Option<NaiveDate>,
    format: Option<String>,
    #[serde(default, deserialize_with = "fields::int")]
    page: Option<i64>,
    #[serde(default, deserialize_with = "fields::int")]
    per_page: Option<i64>,
}

/// A debtor's statement as of a date: JSON, or the PDF of the same numbers.
pub(super) fn debtor_statement(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: StatementArgs = op.args()?;
    let id = args.id.as_str();
    let debtor = load_debtor(op, id)?;
    let as_of_arg = args.as_of;
    let as_of = as_of_arg.unwrap_or_else(|| op.today());
    let format = args.format.as_deref().unwrap_or("json");
    if !matches!(format, "json" | "pdf") {
        return Err(DomainError::field("format", "must be json or pdf"));
    }
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(id)))
        .with(Cond::In("status", crate::status::values(LISTED)));
    let q = Query {
        // Through the debtor index; ordered by due date below.
        sort: ("debtor_id", crate::store::Order::Asc),
        ..q
    };
    let mut charges: Vec<Charge> = find(op.tx, Kind::Charge, op.org, &q)?;
    charges.sort_by(|a, b| {
        (&a.due_date, &a.created_at, &a.id).cmp(&(&b.due_date, &b.created_at, &b.id))
    });
    let as_of_text = as_of.format("%Y-%m-%d").to_string();
    // Charges created after the statement date are not on it.
    let charges: Vec<Charge> = charges
        .into_iter()
        .filter(|c| {
            c.created_at
                .get(..10)
                .is_none_or(|d| d <= as_of_text.as_str())
        })
        .collect();
    // JSON: the lines of one page; the totals still cover every charge (a
    // statement of 6,000 charges was one 16.8 MB answer).
    let page = Page {
        page: ListArgs {
            page: args.page,
            ..ListArgs::default()
        }
        .page()
        .page,
        per_page: args
            .per_page
            .map_or(100, |n| u32::try_from(n.clamp(1, 100)).unwrap_or(100)),
    };
    let from = usize::try_from(page.offset())
        .unwrap_or(usize::MAX)
        .min(charges.len());
    let shown = from..(from + page.per_page as usize).min(charges.len());
    let (doc, items) = build(&debtor, as_of, &charges, shown, creditor(op)?);
    if format == "pdf" {
        let mut path = format!("/v1/debtors/{id}/statement?format=pdf");
        if let Some(d) = as_of_arg {
            path.push_str(&format!("&as_of={d}"));
        }
        return Ok(pdf(documents::debtor_statement(&doc), path));
    }
    let t = doc.totals;
    let count = |st: &[ChargeStatus]| charges.iter().filter(|c| st.contains(&c.status)).count();
    Ok(ok(json!({
        "debtor": {
            "id": debtor.id,
            "name": debtor.name,
            "cnpj_cpf": debtor.cnpj_cpf,
            "person_type": debtor.person_type,
        },
        "creditor": { "name": doc.creditor.name, "cnpj": doc.creditor.document },
        "as_of": as_of_text,
        "charges": items,
        "meta": {
            "page": page.page,
            "per_page": page.per_page,
            "total": charges.len(),
            "total_pages": charges.len().div_ceil(page.per_page as usize),
        },
        "totals": {
            "open_count": count(super::OPEN),
            "open_amount": t.open,
            "updated_amount": t.updated,
            "overdue_count": doc.lines.iter().filter(|l| l.days_overdue > 0).count(),
            "overdue_updated_amount": t.overdue,
            "paid_count": count(&[ChargeStatus::Paid]),
            "paid_amount": t.paid,
            "renegotiated_count": count(&[ChargeStatus::Renegotiated]),
            "renegotiated_amount": t.renegotiated,
        },
    })))
}

/// The statement's lines and totals over every charge, computed once for both formats,
/// and the JSON items of the charges in `shown` (one page).
fn build(
    debtor: &Debtor,
    as_of: NaiveDate,
    charges: &[Charge],
    shown: std::ops::Range<usize>,
    creditor: Party,
) -> (StatementDoc, Vec<Value>) {
    let mut doc = StatementDoc {
        creditor,
        debtor: party(debtor),
        as_of,
        lines: Vec::new(),
        totals: documents::StatementTotals::default(),
    };
    let mut items = Vec::new();
    for (i, c) in charges.iter().enumerate() {
        let b = breakdown(c, as_of);
        let amount = c.amount;
        let paid = c.paid_amount;
        let t = &mut doc.totals;
        match c.status {
            ChargeStatus::Paid => t.paid += paid,
            ChargeStatus::Renegotiated => t.renegotiated += (amount - paid).or_zero(),
            _ => {
                t.open += (amount - paid).or_zero();
                t.updated += b.total;
                if b.days_late > 0 {
                    t.overdue += b.total;
                }
            }
        }
        doc.lines.push(StatementLine {
            description: c.description.clone().unwrap_or_else(|| c.id.clone()),
            due_date: due_date(c),
            status: c.status.to_string(),
            amount,
            paid,
            updated: b.total,
            days_overdue: b.days_late,
        });
        if shown.contains(&i) {
            items.push(view(c, as_of));
        }
    }
    (doc, items)
}
