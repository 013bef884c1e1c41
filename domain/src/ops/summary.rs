//! `dunning_summary_get`: the organization's collection KPIs, all computed here
//! (open and overdue amounts, aging buckets, 30-day recovery rate) so no client re-sums.
//!
//! One file rather than a group folder: the group is small enough that its document,
//! declarations and handlers read best together (one read tool); past about 600 lines it becomes
//! a folder of the usual shape (see [`crate::ops`]).

use crate::catalog::name;
use chrono::{Duration, NaiveDate};
use dunning_core::{Output, Scope};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::fields;
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::schema as s;
use crate::status::ChargeStatus;
use crate::store::{Cond, Kind, Query};
use crate::tool::{ToolSpec, tool};

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::SUMMARY_GET, "Collection summary", "GET", "/v1/summary")
            .describe("Key figures of the organization's collection: open and overdue amounts and counts, aging buckets of overdue debt (1–15, 16–30, 31–60, 61–90, 90+ days), amount paid and recovery rate over the period (default: the last 30 days). All totals are computed by the server.")
            .read()
            .access(Scope::Read, Some("dashboard.view"))
            .arg("from", s::date("Start of the period for payments (default: 30 days ago)"))
            .arg("to", s::date("End of the period for payments (default: today)"))
            .arg("ruler_id", s::id("Only charges under this ruler"))
            .args::<SummaryArgs>()
            .output(s::object(
                "Collection summary",
                &[
                    ("open_amount", s::money("Open amount")),
                    ("overdue_amount", s::money("Overdue amount")),
                    ("aging", s::any_object("Overdue amount and count per aging bucket")),
                    ("recovery_rate", s::number("Paid in the period over overdue at its start plus paid", 0.0, 1.0)),
                ],
                &["open_amount", "overdue_amount", "aging", "recovery_rate"],
            ))
            .run(summary),
    ]
}

const BUCKETS: [(&str, i64, i64); 5] = [
    ("1-15", 1, 15),
    ("16-30", 16, 30),
    ("31-60", 31, 60),
    ("61-90", 61, 90),
    ("90+", 91, i64::MAX),
];

/// `dunning_summary_get` (`to` first: the default `from` counts back from it).
#[derive(Debug, Deserialize)]
struct SummaryArgs {
    #[serde(default, deserialize_with = "fields::date")]
    to: Option<NaiveDate>,
    #[serde(default, deserialize_with = "fields::date")]
    from: Option<NaiveDate>,
    ruler_id: Option<String>,
}

fn summary(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: SummaryArgs = op.args()?;
    let today = op.today();
    let to = args.to.unwrap_or(today);
    let from = args.from.unwrap_or(to - Duration::days(30));
    if from > to {
        return Err(DomainError::field("from", "must not be after `to`"));
    }
    let mut base = Vec::new();
    if let Some(r) = args.ruler_id {
        base.push(Cond::Eq("ruler_id", json!(r)));
    }
    let q = Query {
        conds: [
            base.clone(),
            vec![Cond::In(
                "status",
                crate::status::values(ChargeStatus::OPEN),
            )],
        ]
        .concat(),
        ..Query::all()
    };
    let open = op.tx.find(Kind::Charge, op.org, &q)?;
    let remaining = |c: &Value| Money::in_doc(c, "amount") - Money::in_doc(c, "paid_amount");
    let (mut open_c, mut overdue_c) = (Money::ZERO, Money::ZERO);
    let (mut overdue_n, mut pending_n) = (0u64, 0u64);
    let mut aging = [(Money::ZERO, 0u64); 5];
    for c in &open {
        let due = remaining(c);
        open_c += due;
        if c.get("status")
            .and_then(Value::as_str)
            .and_then(ChargeStatus::from_wire)
            == Some(ChargeStatus::Overdue)
        {
            overdue_c += due;
            overdue_n += 1;
            let days = c
                .get("due_date")
                .and_then(Value::as_str)
                .and_then(calendar::parse_date)
                .map_or(0, |d| (today - d).num_days());
            if let Some(i) = BUCKETS.iter().position(|b| days >= b.1 && days <= b.2) {
                aging[i].0 += due;
                aging[i].1 += 1;
            }
        } else {
            pending_n += 1;
        }
    }
    let paid_q = Query {
        conds: [
            base,
            vec![
                Cond::In(
                    "status",
                    crate::status::values(&[ChargeStatus::Paid, ChargeStatus::PartiallyPaid]),
                ),
                Cond::Ge("paid_at", json!(from.format("%Y-%m-%d").to_string())),
                Cond::Le(
                    "paid_at",
                    json!(format!("{}T23:59:59-03:00", to.format("%Y-%m-%d"))),
                ),
            ],
        ]
        .concat(),
        ..Query::all()
    };
    let paid = op.tx.find(Kind::Charge, op.org, &paid_q)?;
    let paid_c: Money = paid.iter().map(|c| Money::in_doc(c, "paid_amount")).sum();
    let denominator = paid_c + overdue_c;
    let rate = if denominator.is_zero() {
        0.0
    } else {
        // A share with two decimals of percent (0.4567 = 45.67 %).
        (paid_c.cents() as f64 / denominator.cents() as f64 * 10_000.0).round() / 10_000.0
    };
    let aging: serde_json::Map<String, Value> = BUCKETS
        .iter()
        .zip(aging)
        .map(|(b, (c, n))| (b.0.to_owned(), json!({ "amount": c, "count": n })))
        .collect();
    Ok(ok(json!({
        "as_of": today.format("%Y-%m-%d").to_string(),
        "period": { "from": from.format("%Y-%m-%d").to_string(), "to": to.format("%Y-%m-%d").to_string() },
        "open_amount": open_c,
        "open_count": open.len(),
        "pending_count": pending_n,
        "overdue_amount": overdue_c,
        "overdue_count": overdue_n,
        "aging": aging,
        "paid_amount": paid_c,
        "paid_count": paid.len(),
        "recovery_rate": rate,
    })))
}
