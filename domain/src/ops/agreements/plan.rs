//! An agreement's payment plan (its terms): simulation of lump sums and installments,
//! discounts within the organization's cap, and the arguments that describe them.

use chrono::{Months, NaiveDate};
use dunning_core::Output;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;

use super::{ChargePart, Installment, MAX_CHARGES, MAX_FIRST_DUE_DAYS, MAX_INSTALLMENTS};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::ops::charges;
use crate::ops::charges::Charge;
use crate::ops::debtors::Debtor;
use crate::status::InstallmentStatus;
use crate::store::{Kind, must};

/// Computed terms of an agreement.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Terms {
    pub(super) debtor: Debtor,
    pub(super) parts: Vec<ChargePart>,
    pub(super) principal: Money,
    pub(super) fine: Money,
    pub(super) interest: Money,
    pub(super) updated: Money,
    pub(super) discount_pct: f64,
    pub(super) discount: Money,
    pub(super) fine_waived: Money,
    pub(super) interest_waived: Money,
    pub(super) total: Money,
    pub(super) down: Money,
    pub(super) count: u32,
    pub(super) first_due: NaiveDate,
    pub(super) payment_method: String,
    pub(super) installments: Vec<Installment>,
}

/// The arguments that describe an agreement's terms (`dunning_agreements_simulate`, and
/// `dunning_agreements_create` besides its own). The numbers are kept raw: their ranges
/// are checked below, each worded for its field.
#[derive(Debug, Deserialize)]
pub(super) struct TermsArgs {
    debtor_id: String,
    charge_ids: Value,
    installments_count: Value,
    discount_percentage: Option<Value>,
    down_payment_amount: Option<Value>,
    first_due_date: crate::args::Date,
    payment_method: Option<String>,
}

pub(super) fn charge_ids_arg(charge_ids: &Value) -> Result<Vec<String>, DomainError> {
    let arr = charge_ids
        .as_array()
        .ok_or_else(|| DomainError::field("charge_ids", "is required: an array of charge ids"))?;
    if arr.is_empty() {
        return Err(DomainError::field(
            "charge_ids",
            "must list at least one charge",
        ));
    }
    if arr.len() > MAX_CHARGES {
        return Err(DomainError::field(
            "charge_ids",
            format!("at most {MAX_CHARGES} charges"),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(arr.len());
    for v in arr {
        let id = v
            .as_str()
            .ok_or_else(|| DomainError::field("charge_ids", "must be charge ids (strings)"))?;
        if !seen.insert(id.to_owned()) {
            return Err(DomainError::field(
                "charge_ids",
                format!("charge {id} is listed twice"),
            ));
        }
        out.push(id.to_owned());
    }
    Ok(out)
}

/// Splits a charge's amount owed today into (principal, fine, interest): payments settle
/// principal first, then fine, then interest.
pub(super) fn split(c: &Charge, today: NaiveDate) -> (Money, Money, Money, charges::Breakdown) {
    let b = charges::breakdown(c, today);
    let mut paid = b.paid;
    let mut take = |x: Money| {
        let t = paid.min(x).or_zero();
        paid -= t;
        x - t
    };
    let principal = take(b.principal - b.discount);
    let fine = take(b.fine);
    let interest = take(b.interest);
    (principal, fine, interest, b)
}

pub(super) fn fmt_date(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// The installment plan: down payment on the first due date, then `count` monthly
/// installments; due dates rolled to business days; the last absorbs the rounding.
pub(super) fn schedule(
    first: NaiveDate,
    count: u32,
    down: Money,
    total: Money,
) -> Vec<Installment> {
    let mut v = Vec::new();
    let offset = u32::from(down > Money::ZERO);
    if down > Money::ZERO {
        v.push(Installment {
            number: 1,
            kind: "down_payment".into(),
            amount: down,
            due_date: fmt_date(calendar::next_business_day(first)),
            status: InstallmentStatus::Scheduled,
            ..Installment::default()
        });
    }
    let rest = (total - down).cents();
    let n = i64::from(count.max(1));
    let base = rest / n;
    for k in 0..count {
        let amount = Money::from_cents(if k + 1 == count {
            rest - base * (n - 1)
        } else {
            base
        });
        let due = first
            .checked_add_months(Months::new(k + offset))
            .unwrap_or(first);
        v.push(Installment {
            number: k + offset + 1,
            kind: "installment".into(),
            amount,
            due_date: fmt_date(calendar::next_business_day(due)),
            status: InstallmentStatus::Scheduled,
            ..Installment::default()
        });
    }
    v
}

pub(super) fn terms(op: &mut Op<'_>, args: &TermsArgs) -> Result<Terms, DomainError> {
    let debtor_id = args.debtor_id.as_str();
    let charge_ids = charge_ids_arg(&args.charge_ids)?;
    let count = args
        .installments_count
        .as_i64()
        .filter(|n| (1..=MAX_INSTALLMENTS).contains(n))
        .ok_or_else(|| {
            DomainError::field(
                "installments_count",
                format!("must be an integer from 1 to {MAX_INSTALLMENTS}"),
            )
        })?;
    let count = u32::try_from(count).unwrap_or(1);
    let max = op.settings.max_discount_percentage;
    let discount_pct = match &args.discount_percentage {
        None => 0.0,
        Some(v) => {
            let p = v
                .as_f64()
                .ok_or_else(|| DomainError::field("discount_percentage", "must be a number"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(DomainError::field(
                    "discount_percentage",
                    "must be between 0 and 100",
                ));
            }
            if p > max {
                return Err(DomainError::field(
                    "discount_percentage",
                    format!("may not exceed the organization's max_discount_percentage ({max}%)"),
                ));
            }
            p
        }
    };
    let down = match &args.down_payment_amount {
        None => Money::ZERO,
        Some(v) if !v.is_number() => {
            return Err(DomainError::field(
                "down_payment_amount",
                "must be an amount in BRL",
            ));
        }
        Some(v) => v.as_f64().and_then(Money::from_brl).ok_or_else(|| {
            DomainError::field(
                "down_payment_amount",
                "must be an amount in BRL with at most 2 decimals",
            )
        })?,
    };
    if down < Money::ZERO {
        return Err(DomainError::field(
            "down_payment_amount",
            "may not be negative",
        ));
    }
    let today = op.today();
    let first_due = args.first_due_date.0;
    if first_due < today {
        return Err(DomainError::field(
            "first_due_date",
            format!("may not be in the past (today is {today})"),
        ));
    }
    if (first_due - today).num_days() > MAX_FIRST_DUE_DAYS {
        return Err(DomainError::field(
            "first_due_date",
            format!("must be at most {MAX_FIRST_DUE_DAYS} days ahead"),
        ));
    }
    let payment_method = args.payment_method.as_deref().unwrap_or("boleto");
    if !matches!(payment_method, "boleto" | "pix" | "bolepix") {
        return Err(DomainError::field(
            "payment_method",
            "must be boleto, pix or bolepix",
        ));
    }
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, debtor_id)?;
    let mut t = Terms {
        debtor,
        parts: Vec::new(),
        principal: Money::ZERO,
        fine: Money::ZERO,
        interest: Money::ZERO,
        updated: Money::ZERO,
        discount_pct,
        discount: Money::ZERO,
        fine_waived: Money::ZERO,
        interest_waived: Money::ZERO,
        total: Money::ZERO,
        down,
        count,
        first_due,
        payment_method: payment_method.to_owned(),
        installments: Vec::new(),
    };
    for id in &charge_ids {
        let c = charges::load_charge(op, id)?;
        if c.debtor_id != t.debtor.id {
            return Err(DomainError::field(
                "charge_ids",
                format!(
                    "charge {id} belongs to another debtor, not to {} ({})",
                    t.debtor.id, t.debtor.name
                ),
            ));
        }
        if !c.status.is_late() {
            return Err(DomainError::Conflict(format!(
                "invalid_transition: charge {id} is {} and cannot become renegotiated; only overdue or partially paid charges can be folded into an agreement",
                c.status
            )));
        }
        let (p, f, i, b) = split(&c, today);
        t.principal += p;
        t.fine += f;
        t.interest += i;
        t.parts.push(ChargePart {
            charge_id: c.id.clone(),
            description: c.description.clone().or_else(|| c.external_id.clone()),
            due_date: c.due_date.clone(),
            status: c.status,
            amount: c.amount,
            paid_amount: c.paid_amount,
            principal: p,
            fine: f,
            interest: i,
            updated_amount: p + f + i,
            days_overdue: b.days_late,
        });
    }
    t.updated = t.principal + t.fine + t.interest;
    t.discount = t
        .updated
        .percent(discount_pct)
        .clamp(Money::ZERO, t.updated);
    t.interest_waived = t.interest.min(t.discount);
    t.fine_waived = t.fine.min(t.discount - t.interest_waived);
    t.total = t.updated - t.discount;
    if t.total <= Money::ZERO {
        return Err(DomainError::field(
            "charge_ids",
            "nothing is owed on these charges",
        ));
    }
    if down >= t.total {
        return Err(DomainError::field(
            "down_payment_amount",
            format!("must be less than the total of the agreement ({})", t.total),
        ));
    }
    if (t.total - down).cents() < i64::from(count) {
        return Err(DomainError::field(
            "installments_count",
            "too many installments for the amount left after the down payment",
        ));
    }
    t.installments = schedule(first_due, count, down, t.total);
    Ok(t)
}

pub(super) fn terms_json(t: &Terms, today: NaiveDate) -> Value {
    json!({
        "debtor_id": t.debtor.id,
        "debtor_name": t.debtor.name,
        "as_of": fmt_date(today),
        "charge_ids": t.parts.iter().map(|p| p.charge_id.clone()).collect::<Vec<_>>(),
        "charges": t.parts,
        "original_amount": t.principal,
        "fine_amount": t.fine,
        "interest_amount": t.interest,
        "updated_amount": t.updated,
        "discount_percentage": t.discount_pct,
        "discount_amount": t.discount,
        "fine_waived": t.fine_waived,
        "interest_waived": t.interest_waived,
        "total_amount": t.total,
        "down_payment_amount": t.down,
        "installments_count": t.count,
        "first_due_date": fmt_date(t.first_due),
        "payment_method": t.payment_method,
        "installments": t.installments,
    })
}

pub(super) fn simulate(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: TermsArgs = op.args_strict()?;
    let t = terms(op, &args)?;
    Ok(ok(terms_json(&t, op.today())))
}
