//! Agreements (acordo / renegociação; domain.md §1, tools #34–#40): a debtor's overdue
//! charges folded into a new payment plan.
//!
//! ## Terms (computed by the server, in centavos)
//! For each charge, its updated amount today splits into open principal, fine and
//! interest (payments settle principal first). The discount (`discount_percentage`, at
//! most the organization's `max_discount_percentage`, rule 8) applies to the updated
//! total and waives interest first, then fine, then principal (`interest_waived`,
//! `fine_waived`). `total_amount = updated_amount − discount_amount`. An optional
//! `down_payment_amount` (entrada) is due on `first_due_date`; the rest is split into
//! `installments_count` (1–12) monthly installments — from `first_due_date` without a
//! down payment, from a month later with one —, each due date rolled to the next bank
//! business day; the last installment absorbs the rounding.
//!
//! ## Machine (domain §1.1)
//! `proposed → accepted → active → completed`; `proposed → expired | canceled`;
//! `accepted | active → broken`; `accepted → canceled`.
//! - [`accept`]: generates the installment charges (`pending`, with `agreement_id`),
//!   moves the originals to `renegotiated` (`charge.renegotiated`) and asks the credit
//!   bureau to remove their registrations ([`crate::ops::bureau::settle_for_agreement`]).
//! - cancel: a proposal is just canceled; an accepted agreement's installments are
//!   canceled and the originals return to dunning (`overdue`, or `partially_paid` when
//!   they had payments). An agreement with payments (`active`) cannot be canceled.
//! - [`check_broken`] (worker tick): `proposed` past `expires_at` → `expired`; first
//!   payment → `active`; every installment paid → `completed`; an installment overdue
//!   more than `break_after_days` (default 30) → `broken`: the remaining installments are
//!   canceled and the unpaid balance returns to dunning as a new charge due today.
//!
//! Events: `agreement.{proposed,accepted,completed,broken,canceled,expired}`, plus
//! `agreement.activated` for the first payment (no catalogue code).
//!
//! The agreement term (termo de acordo e confissão de dívida) is a PDF drawn here with
//! `pdf-writer` and the text helpers of [`crate::documents`]; until the agreement is
//! accepted every page carries a "MINUTA" watermark (rule 8).

use std::collections::BTreeSet;

use chrono::{Months, NaiveDate};
use dunning_core::{File, Output, Scope, UnixTime};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Domain;
use crate::demo::{Rng, Seeded};
use crate::documents::{self, Align, Party, Style};
use crate::error::DomainError;
use crate::op::{Op, created, list, ok};
use crate::ops::charges::{self, Charge, NewCharge};
use crate::ops::debtors::{self, Debtor};
use crate::ops::deliveries::{self, Delivery};
use crate::outbound::Budget;
use crate::rules::{calendar, money};
use crate::schema as s;
use crate::spec::{ToolBuilder, ToolSpec, tool};
use crate::store::{self, Cond, Kind, Order, Query, find, load, must, save};

/// Every agreement status.
pub const STATUSES: &[&str] = &[
    "draft",
    "proposed",
    "accepted",
    "active",
    "completed",
    "expired",
    "canceled",
    "broken",
];
/// Agreements that hold their charges.
pub const OPEN: &[&str] = &["proposed", "accepted", "active"];
/// Most charges in one agreement.
pub const MAX_CHARGES: usize = 50;
/// Most installments (besides the down payment).
pub const MAX_INSTALLMENTS: i64 = 12;
/// Default `break_after_days`.
pub const BREAK_AFTER_DAYS: u32 = 30;
/// The first due date is at most this many days ahead.
pub const MAX_FIRST_DUE_DAYS: i64 = 90;
/// Default validity of a proposal (days), capped by the first due date.
pub const DEFAULT_VALIDITY_DAYS: u64 = 7;
/// Watermark of a term not yet accepted.
pub const DRAFT_WATERMARK: &str = "MINUTA — SEM VALOR";

const DAY_MS: u64 = 86_400_000;

/// One charge folded into an agreement, as it stood when the terms were computed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChargePart {
    /// The charge.
    pub charge_id: String,
    /// Its description (or external id).
    pub description: Option<String>,
    /// Its due date.
    pub due_date: String,
    /// Its status then.
    pub status: String,
    /// Its amount (BRL).
    pub amount: f64,
    /// Paid so far (BRL).
    pub paid_amount: f64,
    /// Principal still owed (BRL).
    pub principal: f64,
    /// Fine owed (BRL).
    pub fine: f64,
    /// Interest owed (BRL).
    pub interest: f64,
    /// Everything owed (BRL).
    pub updated_amount: f64,
    /// Days after the effective due date.
    pub days_overdue: i64,
}

/// One payment of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Installment {
    /// 1-based position (the down payment, when there is one, is number 1).
    pub number: u32,
    /// `down_payment` or `installment`.
    pub kind: String,
    /// Amount (BRL).
    pub amount: f64,
    /// Due date (a bank business day).
    pub due_date: String,
    /// The charge generated on acceptance.
    pub charge_id: Option<String>,
    /// `scheduled` until accepted, then the charge's status.
    pub status: String,
    /// Paid so far on its charge (BRL).
    pub paid_amount: f64,
}

/// An agreement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Agreement {
    /// UUID.
    pub id: String,
    /// The debtor.
    pub debtor_id: String,
    /// The charges folded in.
    pub charge_ids: Vec<String>,
    /// Status (see the module docs).
    pub status: String,
    /// The charges as they stood when proposed.
    pub charges: Vec<ChargePart>,
    /// Open principal of the charges (BRL).
    pub original_amount: f64,
    /// Fines owed (BRL).
    pub fine_amount: f64,
    /// Interest owed (BRL).
    pub interest_amount: f64,
    /// Everything owed before the discount (BRL).
    pub updated_amount: f64,
    /// Part of the discount that waives fines (BRL).
    pub fine_waived: f64,
    /// Part of the discount that waives interest (BRL).
    pub interest_waived: f64,
    /// Discount (BRL).
    pub discount_amount: f64,
    /// Discount (percent of the updated amount).
    pub discount_percentage: f64,
    /// What the debtor pays under the agreement (BRL).
    pub total_amount: f64,
    /// Down payment (entrada, BRL; 0 when none).
    pub down_payment_amount: f64,
    /// Installments besides the down payment.
    pub installments_count: u32,
    /// First due date.
    pub first_due_date: String,
    /// `boleto`, `pix` or `bolepix`.
    pub payment_method: String,
    /// The plan.
    pub installments: Vec<Installment>,
    /// The proposal can be accepted until then.
    pub expires_at: String,
    /// Whether the debtor was told about the proposal.
    pub notify_debtor: bool,
    /// The delivery that told the debtor.
    pub notification_delivery_id: Option<String>,
    /// Why the debtor could not be told.
    pub notification_skipped: Option<String>,
    /// When accepted.
    pub accepted_at: Option<String>,
    /// `debtor` or `operator`.
    pub accepted_by: Option<String>,
    /// Who recorded the acceptance.
    pub accepted_by_user: Option<String>,
    /// When the first payment came.
    pub activated_at: Option<String>,
    /// Days an installment may be overdue before the agreement breaks.
    pub break_after_days: u32,
    /// When broken.
    pub broken_at: Option<String>,
    /// The charge carrying the unpaid balance of a broken agreement.
    pub balance_charge_id: Option<String>,
    /// When every installment was paid.
    pub completed_at: Option<String>,
    /// When the proposal expired.
    pub expired_at: Option<String>,
    /// When canceled.
    pub canceled_at: Option<String>,
    /// Why canceled.
    pub cancellation_reason: Option<String>,
    /// Where the term (PDF) is served.
    pub term_url: String,
    /// Who proposed it.
    pub created_by: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

fn agreement_output() -> Value {
    s::entity_output(&[
        "id",
        "debtor_id",
        "charge_ids",
        "status",
        "total_amount",
        "installments",
    ])
}

fn terms_args(b: ToolBuilder) -> ToolBuilder {
    b.req("debtor_id", s::id("The debtor"))
        .req("charge_ids", s::array_max("The debtor's overdue or partially paid charges to fold in", s::id("Charge id"), MAX_CHARGES as u32))
        .req("installments_count", s::integer("Number of monthly installments besides the down payment (1 to 12)", 1, MAX_INSTALLMENTS))
        .req("first_due_date", s::date("Due date of the down payment, or of the first installment without one (today or up to 90 days ahead; rolled to a business day)"))
        .arg("discount_percentage", s::number("Discount on the updated amount, percent (at most the organization's max_discount_percentage); waives interest first, then fine, then principal", 0.0, 100.0))
        .arg("down_payment_amount", s::money("Down payment (entrada), due on first_due_date; default none"))
        .arg("payment_method", s::one_of("How the installments are paid (default boleto)", &["boleto", "pix", "bolepix"]))
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    let view = |b: ToolBuilder| b.read().access(Scope::Read, Some("agreements.view"));
    let manage = |b: ToolBuilder| b.access(Scope::Write, Some("agreements.manage"));
    vec![
        terms_args(view(tool("dunning_agreements_simulate", "Simulate an agreement", "POST", "/v1/agreements/simulate")))
            .describe("Computes an agreement's terms without saving anything: for the given overdue charges of one debtor, today's updated amounts (principal, fine, interest), the discount (capped by the organization), the total, and the installment schedule with due dates on business days. All amounts come from the server; the last installment absorbs the rounding. Never re-sum them.")
            .output(s::entity_output(&["debtor_id", "updated_amount", "discount_amount", "total_amount", "installments"]))
            .run(simulate),
        view(tool("dunning_agreements_list", "List agreements", "GET", "/v1/agreements"))
            .describe("Lists agreements, newest first. Filters: `status` (CSV), `debtor_id`.")
            .arg("status", s::csv_of("Agreement status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's agreements"))
            .list(&["created_at"])
            .output(s::list_output(agreement_output()))
            .run(list_agreements),
        view(tool("dunning_agreements_get", "Get an agreement", "GET", "/v1/agreements/{id}"))
            .describe("One agreement with its charges, amounts and installments (each with its charge and current status).")
            .req("id", s::id("Agreement id"))
            .output(agreement_output())
            .run(get_agreement),
        terms_args(manage(tool("dunning_agreements_create", "Propose an agreement", "POST", "/v1/agreements")))
            .describe("Proposes an agreement (status proposed) with the terms dunning_agreements_simulate computes. Nothing changes on the charges until it is accepted. `expires_at` (default 7 days, at most the first due date) bounds the acceptance; `notify_debtor` sends the debtor a message about the proposal (outbound limit applies). The term (termo de acordo) is available at once, with a draft watermark.")
            .arg("expires_at", s::datetime("Last moment the proposal may be accepted (a date means the end of that day)"))
            .arg("notify_debtor", s::boolean("Send the debtor a message about the proposal (default false)"))
            .arg("break_after_days", s::integer("Days an installment may be overdue before the agreement breaks (default 30)", 1, 90))
            .output(agreement_output())
            .run(create_agreement),
        manage(tool("dunning_agreements_accept", "Accept an agreement", "POST", "/v1/agreements/{id}/accept"))
            .describe("Records the acceptance of a proposed agreement: generates the installment charges (pending, with boleto/Pix), moves the original charges to renegotiated (their dunning stops) and requests the removal of their credit-bureau registrations. Refused once the proposal expired. Repeating the call changes nothing.")
            .idempotent()
            .req("id", s::id("Agreement id"))
            .arg("accepted_by", s::one_of("Who accepted (default operator, on the debtor's behalf)", &["debtor", "operator"]))
            .arg("accepted_at", s::datetime("When it was accepted (default now; not in the future)"))
            .output(agreement_output())
            .run(accept),
        manage(tool("dunning_agreements_cancel", "Cancel an agreement", "POST", "/v1/agreements/{id}/cancel"))
            .describe("Cancels a proposed agreement, or an accepted one that has no payment yet: its installment charges are canceled and the original charges return to dunning (overdue). An active agreement (with payments) cannot be canceled (CONFLICT). Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .req("id", s::id("Agreement id"))
            .arg("reason", s::text("Why", 1, 500))
            .output(agreement_output())
            .confirm(describe_cancel)
            .run(cancel),
        tool("dunning_agreements_term", "Agreement term (PDF)", "GET", "/v1/agreements/{id}/term-pdf")
            .describe("The agreement term (termo de acordo e confissão de dívida) as a PDF: parties, confessed debt, discount, payment plan and default clause. Until the agreement is accepted every page carries a draft watermark (MINUTA). Returns the file's descriptor, not its bytes.")
            .read()
            .access(Scope::Read, Some("documents.view"))
            .req("id", s::id("Agreement id"))
            .output(s::entity_output(&["content_type", "byte_size", "download_path"]))
            .run(term),
    ]
}

// ---------------------------------------------------------------------------------
// Terms
// ---------------------------------------------------------------------------------

/// Computed terms of an agreement.
#[derive(Clone, Debug, PartialEq)]
struct Terms {
    debtor: Debtor,
    parts: Vec<ChargePart>,
    principal: i64,
    fine: i64,
    interest: i64,
    updated: i64,
    discount_pct: f64,
    discount: i64,
    fine_waived: i64,
    interest_waived: i64,
    total: i64,
    down: i64,
    count: u32,
    first_due: NaiveDate,
    payment_method: String,
    installments: Vec<Installment>,
}

const TERMS_FIELDS: &[&str] = &[
    "debtor_id",
    "charge_ids",
    "installments_count",
    "discount_percentage",
    "down_payment_amount",
    "first_due_date",
    "payment_method",
];

fn charge_ids_arg(op: &Op<'_>) -> Result<Vec<String>, DomainError> {
    let arr = op
        .args
        .get("charge_ids")
        .and_then(Value::as_array)
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
fn split(c: &Charge, today: NaiveDate) -> (i64, i64, i64, charges::Breakdown) {
    let b = charges::breakdown(c, today);
    let mut paid = b.paid;
    let mut take = |x: i64| {
        let t = paid.min(x).max(0);
        paid -= t;
        x - t
    };
    let principal = take(b.principal - b.discount);
    let fine = take(b.fine);
    let interest = take(b.interest);
    (principal, fine, interest, b)
}

fn fmt_date(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// The installment plan: down payment on the first due date, then `count` monthly
/// installments; due dates rolled to business days; the last absorbs the rounding.
fn schedule(first: NaiveDate, count: u32, down: i64, total: i64) -> Vec<Installment> {
    let mut v = Vec::new();
    let offset = u32::from(down > 0);
    if down > 0 {
        v.push(Installment {
            number: 1,
            kind: "down_payment".into(),
            amount: money::brl(down),
            due_date: fmt_date(calendar::next_business_day(first)),
            status: "scheduled".into(),
            ..Installment::default()
        });
    }
    let rest = total - down;
    let n = i64::from(count.max(1));
    let base = rest / n;
    for k in 0..count {
        let amount = if k + 1 == count {
            rest - base * (n - 1)
        } else {
            base
        };
        let due = first
            .checked_add_months(Months::new(k + offset))
            .unwrap_or(first);
        v.push(Installment {
            number: k + offset + 1,
            kind: "installment".into(),
            amount: money::brl(amount),
            due_date: fmt_date(calendar::next_business_day(due)),
            status: "scheduled".into(),
            ..Installment::default()
        });
    }
    v
}

fn terms(op: &mut Op<'_>) -> Result<Terms, DomainError> {
    let debtor_id = op.str("debtor_id")?;
    let charge_ids = charge_ids_arg(op)?;
    let count = match op.args.get("installments_count") {
        Some(v) => v
            .as_i64()
            .filter(|n| (1..=MAX_INSTALLMENTS).contains(n))
            .ok_or_else(|| {
                DomainError::field(
                    "installments_count",
                    format!("must be an integer from 1 to {MAX_INSTALLMENTS}"),
                )
            })?,
        None => return Err(DomainError::field("installments_count", "is required")),
    };
    let count = u32::try_from(count).unwrap_or(1);
    let max = op.settings.max_discount_percentage;
    let discount_pct = match op.args.get("discount_percentage") {
        None | Some(Value::Null) => 0.0,
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
    let down = match op.args.get("down_payment_amount") {
        None | Some(Value::Null) => 0,
        Some(v) if !v.is_number() => {
            return Err(DomainError::field(
                "down_payment_amount",
                "must be an amount in BRL",
            ));
        }
        Some(_) => op.opt_money("down_payment_amount")?.unwrap_or_default(),
    };
    if down < 0 {
        return Err(DomainError::field(
            "down_payment_amount",
            "may not be negative",
        ));
    }
    let today = op.today();
    let first_due = op
        .opt_date("first_due_date")?
        .ok_or_else(|| DomainError::field("first_due_date", "is required"))?;
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
    let payment_method = op.opt_str("payment_method").unwrap_or("boleto");
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
        principal: 0,
        fine: 0,
        interest: 0,
        updated: 0,
        discount_pct,
        discount: 0,
        fine_waived: 0,
        interest_waived: 0,
        total: 0,
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
        if !matches!(c.status.as_str(), "overdue" | "partially_paid") {
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
            status: c.status.clone(),
            amount: c.amount,
            paid_amount: c.paid_amount,
            principal: money::brl(p),
            fine: money::brl(f),
            interest: money::brl(i),
            updated_amount: money::brl(p + f + i),
            days_overdue: b.days_late,
        });
    }
    t.updated = t.principal + t.fine + t.interest;
    t.discount = ((t.updated as f64) * discount_pct / 100.0).round() as i64;
    t.discount = t.discount.clamp(0, t.updated);
    t.interest_waived = t.interest.min(t.discount);
    t.fine_waived = t.fine.min(t.discount - t.interest_waived);
    t.total = t.updated - t.discount;
    if t.total <= 0 {
        return Err(DomainError::field(
            "charge_ids",
            "nothing is owed on these charges",
        ));
    }
    if down >= t.total {
        return Err(DomainError::field(
            "down_payment_amount",
            format!(
                "must be less than the total of the agreement ({})",
                money::format_brl(t.total)
            ),
        ));
    }
    if t.total - down < i64::from(count) {
        return Err(DomainError::field(
            "installments_count",
            "too many installments for the amount left after the down payment",
        ));
    }
    t.installments = schedule(first_due, count, down, t.total);
    Ok(t)
}

fn terms_json(t: &Terms, today: NaiveDate) -> Value {
    json!({
        "debtor_id": t.debtor.id,
        "debtor_name": t.debtor.name,
        "as_of": fmt_date(today),
        "charge_ids": t.parts.iter().map(|p| p.charge_id.clone()).collect::<Vec<_>>(),
        "charges": t.parts,
        "original_amount": money::brl(t.principal),
        "fine_amount": money::brl(t.fine),
        "interest_amount": money::brl(t.interest),
        "updated_amount": money::brl(t.updated),
        "discount_percentage": t.discount_pct,
        "discount_amount": money::brl(t.discount),
        "fine_waived": money::brl(t.fine_waived),
        "interest_waived": money::brl(t.interest_waived),
        "total_amount": money::brl(t.total),
        "down_payment_amount": money::brl(t.down),
        "installments_count": t.count,
        "first_due_date": fmt_date(t.first_due),
        "payment_method": t.payment_method,
        "installments": t.installments,
    })
}

fn simulate(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(TERMS_FIELDS)?;
    let t = terms(op)?;
    Ok(ok(terms_json(&t, op.today())))
}

// ---------------------------------------------------------------------------------
// List, get
// ---------------------------------------------------------------------------------

/// Loads an agreement of the caller's organization or answers `NOT_FOUND`.
pub fn load_agreement(op: &mut Op<'_>, id: &str) -> Result<Agreement, DomainError> {
    must(op.tx, Kind::Agreement, op.org, id)
}

/// Brings the installments' status and payments up to date from their charges
/// (in memory); whether anything changed.
fn sync_installments(op: &mut Op<'_>, a: &mut Agreement) -> Result<bool, DomainError> {
    let mut changed = false;
    for i in &mut a.installments {
        let Some(cid) = &i.charge_id else { continue };
        if let Some(c) = load::<Charge>(op.tx, Kind::Charge, op.org, cid)? {
            if i.status != c.status || i.paid_amount != c.paid_amount {
                i.status = c.status;
                i.paid_amount = c.paid_amount;
                changed = true;
            }
        }
    }
    Ok(changed)
}

fn list_agreements(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    if let Some(st) = op.csv("status") {
        conds.push(Cond::In("status", st));
    }
    if let Some(d) = op.opt_str("debtor_id") {
        conds.push(Cond::Eq("debtor_id", json!(d)));
    }
    let page = op.page();
    let total = op.tx.count(Kind::Agreement, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(&[("created_at", "created_at", Order::Desc)]),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let mut items: Vec<Agreement> = find(op.tx, Kind::Agreement, op.org, &q)?;
    for a in &mut items {
        sync_installments(op, a)?;
    }
    let items = items
        .into_iter()
        .map(|a| serde_json::to_value(a).unwrap_or(Value::Null))
        .collect();
    Ok(list(items, page, total))
}

fn get_agreement(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    let mut a = load_agreement(op, id)?;
    sync_installments(op, &mut a)?;
    Ok(ok(a))
}

fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&Agreement>,
    a: &mut Agreement,
) -> Result<(), DomainError> {
    a.updated_at = op.timestamp();
    save(op.tx, Kind::Agreement, op.org, &*a)?;
    let changes = before.map_or(Value::Null, |b| debtors::diff(b, &*a));
    op.event(code, "agreement", &a.id.clone(), &*a, changes)
}

// ---------------------------------------------------------------------------------
// Create
// ---------------------------------------------------------------------------------

fn ts_ms(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

/// End of a local day (23:59:59-03:00) as a timestamp.
fn end_of_day(d: NaiveDate) -> String {
    format!("{}T23:59:59-03:00", fmt_date(d))
}

fn expires_arg(op: &Op<'_>, first_due: NaiveDate) -> Result<String, DomainError> {
    let latest = end_of_day(first_due);
    let latest_ms = ts_ms(&latest).unwrap_or(u64::MAX);
    let Some(raw) = op.opt_str("expires_at") else {
        let default = op.now.plus_millis(DEFAULT_VALIDITY_DAYS * DAY_MS);
        return Ok(if default.as_millis() > latest_ms {
            latest
        } else {
            calendar::timestamp(default)
        });
    };
    let value = match calendar::parse_date(raw) {
        Some(d) => end_of_day(d),
        None => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("expires_at", "must be an RFC 3339 timestamp or a date")
            })?;
            let ms = u64::try_from(t.timestamp_millis()).unwrap_or_default();
            calendar::timestamp(UnixTime::from_millis(ms))
        }
    };
    let ms = ts_ms(&value).unwrap_or_default();
    if ms <= op.now.as_millis() {
        return Err(DomainError::field("expires_at", "must be in the future"));
    }
    if ms > latest_ms {
        return Err(DomainError::field(
            "expires_at",
            format!(
                "must be at most the end of the first due date ({})",
                fmt_date(first_due)
            ),
        ));
    }
    Ok(value)
}

/// Agreements still holding any of `charge_ids`.
fn holding(
    op: &mut Op<'_>,
    debtor_id: &str,
    charge_ids: &[String],
) -> Result<Option<(Agreement, String)>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::In("status", OPEN.iter().map(|s| json!(s)).collect()));
    let open: Vec<Agreement> = find(op.tx, Kind::Agreement, op.org, &q)?;
    for a in open {
        if let Some(c) = charge_ids.iter().find(|c| a.charge_ids.contains(c)) {
            let c = c.clone();
            return Ok(Some((a, c)));
        }
    }
    Ok(None)
}

fn create_agreement(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut known = TERMS_FIELDS.to_vec();
    known.extend(["expires_at", "notify_debtor", "break_after_days"]);
    op.only(&known)?;
    let t = terms(op)?;
    let expires_at = expires_arg(op, t.first_due)?;
    let break_after_days = match op.args.get("break_after_days") {
        None | Some(Value::Null) => BREAK_AFTER_DAYS,
        Some(v) => v
            .as_i64()
            .filter(|n| (1..=90).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                DomainError::field("break_after_days", "must be an integer from 1 to 90")
            })?,
    };
    let ids: Vec<String> = t.parts.iter().map(|p| p.charge_id.clone()).collect();
    if let Some((other, c)) = holding(op, &t.debtor.id, &ids)? {
        return Err(DomainError::Conflict(format!(
            "in_agreement: charge {c} is already in agreement {} ({}); cancel it first",
            other.id, other.status
        )));
    }
    let now = op.timestamp();
    let id = op.new_id();
    let mut a = Agreement {
        term_url: format!("/v1/agreements/{id}/term-pdf"),
        id,
        debtor_id: t.debtor.id.clone(),
        charge_ids: ids,
        status: "proposed".into(),
        charges: t.parts.clone(),
        original_amount: money::brl(t.principal),
        fine_amount: money::brl(t.fine),
        interest_amount: money::brl(t.interest),
        updated_amount: money::brl(t.updated),
        fine_waived: money::brl(t.fine_waived),
        interest_waived: money::brl(t.interest_waived),
        discount_amount: money::brl(t.discount),
        discount_percentage: t.discount_pct,
        total_amount: money::brl(t.total),
        down_payment_amount: money::brl(t.down),
        installments_count: t.count,
        first_due_date: fmt_date(t.first_due),
        payment_method: t.payment_method.clone(),
        installments: t.installments.clone(),
        expires_at,
        notify_debtor: op.opt_bool("notify_debtor") == Some(true),
        break_after_days,
        created_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now,
        ..Agreement::default()
    };
    if a.notify_debtor {
        match notify_proposal(op, &a, &t)? {
            Ok(did) => a.notification_delivery_id = Some(did),
            Err(why) => a.notification_skipped = Some(why),
        }
    }
    commit(op, "agreement.proposed", None, &mut a)?;
    Ok(created(a))
}

/// Schedules a message telling the debtor about the proposal (the ruler engine's outbox
/// sends it inside the send window). `Err(reason)` when the debtor cannot be told.
fn notify_proposal(
    op: &mut Op<'_>,
    a: &Agreement,
    t: &Terms,
) -> Result<Result<String, String>, DomainError> {
    let debtor = serde_json::to_value(&t.debtor).unwrap_or(Value::Null);
    if let Some(r) = deliveries::debtor_refusal(&debtor) {
        return Ok(Err(r.message));
    }
    let mut target = None;
    for ch in ["email", "sms"] {
        if let Some(cp) = deliveries::pick_contact_point(op.tx, op.org, &t.debtor.id, ch)? {
            target = Some((ch, cp));
            break;
        }
    }
    let Some((channel, cp)) = target else {
        return Ok(Err(format!(
            "debtor {} ({}) has no e-mail or SMS contact point that may receive messages",
            t.debtor.id, t.debtor.name
        )));
    };
    op.outbound
        .take(op.org, Budget::Messages, 1, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })?;
    let down = if t.down > 0 {
        format!(" (entrada de {})", money::format_brl(t.down))
    } else {
        String::new()
    };
    let discount = if t.discount > 0 {
        format!(", com desconto de {}", money::format_brl(t.discount))
    } else {
        String::new()
    };
    let expires = a.expires_at.get(..10).and_then(calendar::parse_date);
    let message = format!(
        "Olá, {{{{debtor.name}}}}. Preparamos uma proposta de acordo para {} fatura(s) em aberto: total de {}{discount}, em {} parcela(s){down}, a primeira em {}. A proposta vale até {}. Responda a esta mensagem ou fale com nosso atendimento para aceitar.",
        t.parts.len(),
        money::format_brl(t.total),
        t.count,
        documents::short_date(calendar::next_business_day(t.first_due)),
        expires.map(documents::short_date).unwrap_or_default(),
    );
    let now = op.timestamp();
    let d = Delivery {
        id: op.new_id(),
        charge_id: a.charge_ids.first().cloned().unwrap_or_default(),
        debtor_id: t.debtor.id.clone(),
        contact_point_id: cp.get("id").and_then(Value::as_str).map(str::to_owned),
        channel: channel.into(),
        action: "notify".into(),
        origin: match op.principal.audience {
            dunning_core::Audience::Api => "api",
            dunning_core::Audience::Mcp => "manual",
        }
        .into(),
        status: "scheduled".into(),
        to: cp.get("value").and_then(Value::as_str).map(str::to_owned),
        message: Some(message),
        subject: Some("Proposta de acordo".into()),
        scheduled_at: now.clone(),
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    };
    save(op.tx, Kind::Delivery, op.org, &d)?;
    op.event("delivery.scheduled", "delivery", &d.id, &d, Value::Null)?;
    Ok(Ok(d.id))
}

// ---------------------------------------------------------------------------------
// Accept
// ---------------------------------------------------------------------------------

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn accept(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "accepted_by", "accepted_at"])?;
    let id = op.str("id")?;
    let accepted_by = op.opt_str("accepted_by").unwrap_or("operator");
    if !matches!(accepted_by, "debtor" | "operator") {
        return Err(DomainError::field(
            "accepted_by",
            "must be debtor or operator",
        ));
    }
    let mut a = load_agreement(op, id)?;
    if matches!(a.status.as_str(), "accepted" | "active") {
        sync_installments(op, &mut a)?;
        return Ok(ok(a));
    }
    if a.status != "proposed" {
        return Err(DomainError::transition(
            "agreement",
            id,
            &a.status,
            "accepted",
        ));
    }
    let accepted_at = match op.opt_str("accepted_at") {
        None => op.timestamp(),
        Some(raw) => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("accepted_at", "must be an RFC 3339 timestamp or a date")
            })?;
            let ms = u64::try_from(t.timestamp_millis()).unwrap_or_default();
            if ms > op.now.as_millis() {
                return Err(DomainError::field(
                    "accepted_at",
                    "may not be in the future",
                ));
            }
            if ts_ms(&a.created_at).is_some_and(|c| ms + 1000 < c) {
                return Err(DomainError::field(
                    "accepted_at",
                    "may not be before the agreement was proposed",
                ));
            }
            calendar::timestamp(UnixTime::from_millis(ms))
        }
    };
    if ts_ms(&a.expires_at).is_some_and(|e| e < op.now.as_millis()) {
        return Err(DomainError::Conflict(format!(
            "agreement_expired: agreement {id} expired at {}; it can no longer be accepted (propose a new one)",
            a.expires_at
        )));
    }
    let mut originals = Vec::with_capacity(a.charge_ids.len());
    for cid in &a.charge_ids {
        let c = charges::load_charge(op, cid)?;
        if !matches!(c.status.as_str(), "overdue" | "partially_paid") {
            return Err(DomainError::Conflict(format!(
                "invalid_transition: charge {cid} of agreement {id} is now {} and cannot become renegotiated; cancel this agreement and propose a new one",
                c.status
            )));
        }
        originals.push(c);
    }
    let fine = originals
        .iter()
        .map(|c| c.fine_percentage)
        .fold(f64::INFINITY, f64::min);
    let interest = originals
        .iter()
        .map(|c| c.interest_percentage)
        .fold(f64::INFINITY, f64::min);
    let before = a.clone();
    let total = a.installments.len();
    let agreement_id = a.id.clone();
    for inst in &mut a.installments {
        let due = calendar::parse_date(&inst.due_date).unwrap_or_else(|| op.today());
        let what = if inst.kind == "down_payment" {
            "entrada".to_owned()
        } else {
            format!("parcela {}/{total}", inst.number)
        };
        let c = charges::issue(
            op,
            NewCharge {
                debtor_id: a.debtor_id.clone(),
                amount_cents: money::cents(inst.amount).unwrap_or_default(),
                due_date: due,
                payment_method: a.payment_method.clone(),
                description: Some(format!("Acordo {} — {what}", short(&agreement_id))),
                fine_percentage: if fine.is_finite() { fine } else { 0.0 },
                interest_percentage: if interest.is_finite() { interest } else { 0.0 },
                agreement_id: Some(agreement_id.clone()),
                tags: vec!["acordo".into()],
                ..NewCharge::default()
            },
        )?;
        inst.charge_id = Some(c.id);
        inst.status = c.status;
    }
    for cid in &a.charge_ids {
        charges::mark_renegotiated(op, cid, Some(&agreement_id))?;
    }
    crate::ops::bureau::settle_for_agreement(op, &a.charge_ids)?;
    a.status = "accepted".into();
    a.accepted_at = Some(accepted_at);
    a.accepted_by = Some(accepted_by.to_owned());
    a.accepted_by_user = Some(op.principal.subject.clone());
    commit(op, "agreement.accepted", Some(&before), &mut a)?;
    Ok(ok(a))
}

// ---------------------------------------------------------------------------------
// Cancel
// ---------------------------------------------------------------------------------

/// Checks a cancellation; `None` when already canceled.
fn cancel_check(op: &mut Op<'_>, a: &Agreement) -> Result<Option<()>, DomainError> {
    match a.status.as_str() {
        "canceled" => Ok(None),
        "proposed" => Ok(Some(())),
        "accepted" => {
            for i in &a.installments {
                let Some(cid) = &i.charge_id else { continue };
                let c = charges::load_charge(op, cid)?;
                if c.paid_amount > 0.0 || c.status == "paid" {
                    return Err(DomainError::Conflict(format!(
                        "invalid_transition: agreement {} has a payment on installment {} (charge {cid}, {}); an agreement with payments is active and cannot be canceled",
                        a.id, i.number, c.status
                    )));
                }
            }
            Ok(Some(()))
        }
        other => Err(DomainError::transition(
            "agreement",
            &a.id,
            other,
            "canceled",
        )),
    }
}

fn describe_cancel(op: &mut Op<'_>) -> Result<String, DomainError> {
    let id = op.str("id")?;
    let a = load_agreement(op, id)?;
    let check = cancel_check(op, &a)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &a.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let total = money::format_brl(money::cents(a.total_amount).unwrap_or_default());
    Ok(match (check, a.status.as_str()) {
        (None, _) => {
            format!("Agreement {id} of {name} is already canceled; nothing will change. Continue?")
        }
        (Some(()), "accepted") => format!(
            "Cancel the accepted agreement {id} of {name} ({total} in {} payment(s))? Its {} installment charge(s) are canceled and the {} original charge(s) return to dunning as overdue.",
            a.installments.len(),
            a.installments.len(),
            a.charge_ids.len()
        ),
        _ => format!(
            "Cancel the proposed agreement {id} of {name} ({total} in {} payment(s))? The proposal can no longer be accepted.",
            a.installments.len()
        ),
    })
}

/// Cancels an open installment charge.
fn cancel_charge(op: &mut Op<'_>, cid: &str, reason: &str) -> Result<(), DomainError> {
    let mut c = charges::load_charge(op, cid)?;
    if !charges::is_open(&c) {
        return Ok(());
    }
    let before = c.clone();
    c.status = "canceled".into();
    c.canceled_at = Some(op.timestamp());
    c.cancellation_reason = Some(reason.to_owned());
    charges::commit(op, "charge.canceled", Some(&before), &mut c)
}

fn cancel(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "reason"])?;
    let id = op.str("id")?;
    let mut a = load_agreement(op, id)?;
    if cancel_check(op, &a)?.is_none() {
        return Ok(ok(a));
    }
    let before = a.clone();
    let reason = op
        .opt_str("reason")
        .map_or_else(|| "canceled".to_owned(), str::to_owned);
    if a.status == "accepted" {
        let why = format!("agreement {} canceled: {reason}", a.id);
        for i in a.installments.clone() {
            if let Some(cid) = &i.charge_id {
                cancel_charge(op, cid, &why)?;
            }
        }
        for cid in a.charge_ids.clone() {
            let mut c = charges::load_charge(op, &cid)?;
            if c.status != "renegotiated" || c.agreement_id.as_deref() != Some(id) {
                continue;
            }
            let prev = c.clone();
            c.status = if c.paid_amount > 0.0 {
                "partially_paid"
            } else {
                "overdue"
            }
            .into();
            c.agreement_id = None;
            charges::commit(op, "charge.updated", Some(&prev), &mut c)?;
        }
        sync_installments(op, &mut a)?;
    }
    a.status = "canceled".into();
    a.canceled_at = Some(op.timestamp());
    a.cancellation_reason = Some(reason);
    commit(op, "agreement.canceled", Some(&before), &mut a)?;
    Ok(ok(a))
}

// ---------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------

/// Moves agreements along with the clock and their installments' payments (see the
/// module docs); called by the worker tick. Returns how many agreements changed status.
pub fn check_broken(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In(
        "status",
        vec![json!("proposed"), json!("accepted"), json!("active")],
    ));
    let agreements: Vec<Agreement> = find(op.tx, Kind::Agreement, op.org, &q)?;
    let today = op.today();
    let mut n = 0;
    for mut a in agreements {
        let before = a.clone();
        if a.status == "proposed" {
            if ts_ms(&a.expires_at).is_some_and(|e| e < op.now.as_millis()) {
                a.status = "expired".into();
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
            any_paid |= c.paid_amount > 0.0;
            all_paid &= c.status == "paid";
            let days = charges::days_overdue(&c, today);
            if charges::is_open(&c) && days > i64::from(a.break_after_days) && late.is_none() {
                late = Some((i.number, days));
            }
        }
        if all_paid {
            a.status = "completed".into();
            a.completed_at = Some(op.timestamp());
            commit(op, "agreement.completed", Some(&before), &mut a)?;
            n += 1;
        } else if let Some((number, days)) = late {
            break_agreement(op, &mut a, &before, number, days)?;
            n += 1;
        } else if a.status == "accepted" && any_paid {
            a.status = "active".into();
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
fn break_agreement(
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
    let mut balance = 0i64;
    let mut fine = f64::INFINITY;
    let mut interest = f64::INFINITY;
    for i in a.installments.clone() {
        let Some(cid) = &i.charge_id else { continue };
        let c = charges::load_charge(op, cid)?;
        if !charges::is_open(&c) {
            continue;
        }
        balance += money::cents(c.amount).unwrap_or_default()
            - money::cents(c.paid_amount).unwrap_or_default();
        fine = fine.min(c.fine_percentage);
        interest = interest.min(c.interest_percentage);
        cancel_charge(op, cid, &why)?;
    }
    if balance > 0 {
        let c = charges::issue(
            op,
            NewCharge {
                debtor_id: a.debtor_id.clone(),
                amount_cents: balance,
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
    a.status = "broken".into();
    a.broken_at = Some(op.timestamp());
    commit(op, "agreement.broken", Some(before), a)
}

// ---------------------------------------------------------------------------------
// Term (PDF)
// ---------------------------------------------------------------------------------

fn term(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    let mut a = load_agreement(op, id)?;
    sync_installments(op, &mut a)?;
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &a.debtor_id)?;
    let org: crate::org::Organization = must(op.tx, Kind::Organization, op.org, op.org)?;
    let creditor = Party {
        name: org.name,
        document: org.cnpj,
    };
    let bytes = term_pdf(&a, &creditor, &debtor);
    Ok(Output::File(File {
        content_type: "application/pdf".into(),
        bytes,
        download_path: format!("/v1/agreements/{id}/term-pdf"),
    }))
}

fn ts_date(ts: &str) -> Option<NaiveDate> {
    calendar::parse_timestamp(ts).map(|t| t.with_timezone(&calendar::offset()).date_naive())
}

fn brl(x: f64) -> String {
    money::format_brl(money::cents(money::round2(x)).unwrap_or_default())
}

fn short_iso(iso: &str) -> String {
    calendar::parse_date(iso).map_or_else(|| iso.to_owned(), documents::short_date)
}

/// The term of an agreement as a PDF: final once accepted, watermarked before.
pub fn term_pdf(a: &Agreement, creditor: &Party, debtor: &Debtor) -> Vec<u8> {
    let accepted = a.accepted_at.is_some();
    let date = a
        .accepted_at
        .as_deref()
        .and_then(ts_date)
        .or_else(|| ts_date(&a.created_at))
        .unwrap_or_default();
    let mut w = TermWriter::new(
        "Termo de acordo e confissão de dívida",
        date,
        (!accepted).then_some(DRAFT_WATERMARK),
    );
    let debtor_party = Party {
        name: debtor.name.clone(),
        document: debtor.cnpj_cpf.clone(),
    };
    w.centered("TERMO DE ACORDO E CONFISSÃO DE DÍVIDA", Style::bold(14.0));
    if !accepted {
        w.centered(
            "MINUTA — proposta ainda não aceita, sem valor de acordo",
            Style::bold(9.0),
        );
    }
    w.space(10.0);
    let body = Style::regular(10.0);
    let bold = Style::bold(10.0);
    w.line("CREDOR", bold);
    w.paragraph(
        &format!(
            "{}, inscrita no {} sob o nº {}.",
            creditor.name,
            creditor.document_kind(),
            creditor.document_formatted()
        ),
        body,
    );
    w.space(4.0);
    w.line("DEVEDOR(A)", bold);
    let addr = &debtor.address;
    let address = if addr.street.trim().is_empty() {
        String::new()
    } else {
        format!(
            ", com endereço em {}, {} - {}, {}/{}, CEP {}",
            addr.street, addr.number, addr.neighborhood, addr.city, addr.state, addr.zipcode
        )
    };
    w.paragraph(
        &format!(
            "{}, inscrito(a) no {} sob o nº {}{address}.",
            debtor_party.name,
            debtor_party.document_kind(),
            debtor_party.document_formatted()
        ),
        body,
    );
    w.space(8.0);
    let updated_cents = money::cents(a.updated_amount).unwrap_or_default();
    let total_cents = money::cents(a.total_amount).unwrap_or_default();
    let as_of = ts_date(&a.created_at).unwrap_or(date);
    w.line("Cláusula 1ª — Da confissão de dívida", bold);
    w.paragraph(
        &format!(
            "O(A) DEVEDOR(A) reconhece e confessa dever ao CREDOR a importância de {} ({}), atualizada até {} com multa e juros de mora, referente às cobranças abaixo:",
            money::format_brl(updated_cents),
            documents::amount_in_words(updated_cents),
            documents::short_date(as_of),
        ),
        body,
    );
    let (x0, x1, x2, x3) = (w.left(), w.left() + 250.0, w.right() - 90.0, w.right());
    let small = Style::regular(9.0);
    w.row(
        &[
            ("Cobrança", x0, Align::Left),
            ("Vencimento", x1, Align::Left),
            ("Valor original", x2, Align::Right),
            ("Valor atualizado", x3, Align::Right),
        ],
        Style::bold(9.0),
    );
    for p in &a.charges {
        let label = p.description.clone().unwrap_or_else(|| p.charge_id.clone());
        let label: String = label.chars().take(48).collect();
        w.row(
            &[
                (&label, x0, Align::Left),
                (&short_iso(&p.due_date), x1, Align::Left),
                (&brl(p.amount), x2, Align::Right),
                (&brl(p.updated_amount), x3, Align::Right),
            ],
            small,
        );
    }
    w.rule();
    w.space(6.0);
    w.line("Cláusula 2ª — Do desconto", bold);
    if a.discount_amount > 0.0 {
        w.paragraph(
            &format!(
                "O CREDOR concede desconto de {}% ({}), que dispensa {} de juros e {} de multa, de modo que o valor do acordo é de {} ({}).",
                a.discount_percentage,
                brl(a.discount_amount),
                brl(a.interest_waived),
                brl(a.fine_waived),
                money::format_brl(total_cents),
                documents::amount_in_words(total_cents),
            ),
            body,
        );
    } else {
        w.paragraph(
            &format!(
                "Não há desconto: o valor do acordo é de {} ({}).",
                money::format_brl(total_cents),
                documents::amount_in_words(total_cents)
            ),
            body,
        );
    }
    w.space(6.0);
    w.line("Cláusula 3ª — Do pagamento", bold);
    let method = match a.payment_method.as_str() {
        "pix" => "Pix",
        "bolepix" => "boleto bancário com QR Code Pix",
        _ => "boleto bancário",
    };
    w.paragraph(
        &format!(
            "O valor do acordo será pago por {method}, conforme o plano abaixo. Vencimentos em dia não útil passam ao dia útil seguinte."
        ),
        body,
    );
    w.row(
        &[
            ("Nº", x0, Align::Left),
            ("Parcela", x0 + 30.0, Align::Left),
            ("Vencimento", x1, Align::Left),
            ("Valor", x3, Align::Right),
        ],
        Style::bold(9.0),
    );
    for i in &a.installments {
        let kind = if i.kind == "down_payment" {
            "Entrada"
        } else {
            "Parcela"
        };
        w.row(
            &[
                (&i.number.to_string(), x0, Align::Left),
                (kind, x0 + 30.0, Align::Left),
                (&short_iso(&i.due_date), x1, Align::Left),
                (&brl(i.amount), x3, Align::Right),
            ],
            small,
        );
    }
    w.rule();
    w.space(6.0);
    w.line("Cláusula 4ª — Do inadimplemento", bold);
    w.paragraph(
        &format!(
            "O atraso de qualquer parcela por mais de {} dias rompe este acordo: as parcelas restantes serão canceladas e o saldo devedor, deduzidos os valores pagos, voltará a ser cobrado.",
            a.break_after_days
        ),
        body,
    );
    w.space(6.0);
    w.line("Cláusula 5ª — Dos cadastros de proteção ao crédito", bold);
    w.paragraph(
        "Com o aceite deste acordo, o CREDOR solicitará a exclusão dos registros relativos às cobranças renegociadas em cadastros de proteção ao crédito em até 5 (cinco) dias úteis (Súmula 548 do STJ).",
        body,
    );
    w.space(6.0);
    w.line("Cláusula 6ª — Da quitação", bold);
    w.paragraph(
        "Pagas todas as parcelas, o CREDOR dará ao(à) DEVEDOR(A) plena quitação das cobranças renegociadas (Código Civil, arts. 319 e 320). Este termo, assinado pelo(a) DEVEDOR(A) e por duas testemunhas, constitui título executivo extrajudicial (Código de Processo Civil, art. 784, III).",
        body,
    );
    w.space(10.0);
    if let (Some(at), Some(by)) = (&a.accepted_at, &a.accepted_by) {
        let who = if by == "debtor" {
            "pelo(a) DEVEDOR(A)"
        } else {
            "pelo CREDOR, em nome do(a) DEVEDOR(A)"
        };
        w.paragraph(
            &format!(
                "Acordo aceito em {} {who}.",
                ts_date(at).map(documents::short_date).unwrap_or_default()
            ),
            body,
        );
    } else {
        w.paragraph(
            &format!(
                "Proposta válida até {}.",
                ts_date(&a.expires_at)
                    .map(documents::short_date)
                    .unwrap_or_default()
            ),
            body,
        );
    }
    w.space(10.0);
    w.line(
        &format!(
            "{}, {}.",
            if debtor.address.city.trim().is_empty() {
                "São Paulo"
            } else {
                debtor.address.city.as_str()
            },
            documents::long_date(date)
        ),
        body,
    );
    w.space(36.0);
    w.line("________________________________________", body);
    w.line(&creditor.name, bold);
    w.space(28.0);
    w.line("________________________________________", body);
    w.line(&debtor_party.name, bold);
    w.space(28.0);
    w.row(
        &[
            ("________________________", x0, Align::Left),
            ("________________________", x1, Align::Left),
        ],
        body,
    );
    w.row(
        &[
            ("Testemunha 1", x0, Align::Left),
            ("Testemunha 2", x1, Align::Left),
        ],
        small,
    );
    w.finish()
}

const PAGE_W: f32 = 595.0;
const PAGE_H: f32 = 842.0;
const MARGIN: f32 = 56.0;
const BOTTOM: f32 = 72.0;

/// A page-layout writer like [`documents::Writer`], plus a diagonal watermark drawn
/// under the text of every page.
struct TermWriter {
    title: String,
    date: NaiveDate,
    watermark: Option<&'static str>,
    pages: Vec<pdf_writer::Content>,
    y: f32,
}

impl TermWriter {
    fn new(title: &str, date: NaiveDate, watermark: Option<&'static str>) -> Self {
        let mut w = Self {
            title: title.to_owned(),
            date,
            watermark,
            pages: Vec::new(),
            y: PAGE_H - MARGIN,
        };
        w.new_page();
        w
    }

    fn new_page(&mut self) {
        let mut c = pdf_writer::Content::new();
        if let Some(text) = self.watermark {
            let style = Style::bold(54.0);
            let bytes = documents::encode(text);
            let (sin, cos) = std::f32::consts::FRAC_PI_4.sin_cos();
            let width = documents::text_width(text, style);
            let (cx, cy) = (PAGE_W / 2.0, PAGE_H / 2.0);
            let x = cx - cos * width / 2.0;
            let y = cy - sin * width / 2.0;
            c.save_state();
            c.set_fill_gray(0.82);
            c.begin_text();
            c.set_font(pdf_writer::Name(b"F2"), style.size);
            c.set_text_matrix([cos, sin, -sin, cos, x, y]);
            c.show(pdf_writer::Str(&bytes));
            c.end_text();
            c.restore_state();
        }
        self.pages.push(c);
        self.y = PAGE_H - MARGIN;
    }

    fn left(&self) -> f32 {
        MARGIN
    }

    fn right(&self) -> f32 {
        PAGE_W - MARGIN
    }

    fn reserve(&mut self, h: f32) {
        if self.y - h < BOTTOM {
            self.new_page();
        }
    }

    fn space(&mut self, h: f32) {
        self.y -= h;
    }

    fn show(&mut self, x: f32, y: f32, text: &str, style: Style) {
        let font = if style.bold { b"F2" } else { b"F1" };
        let bytes = documents::encode(text);
        let last = self.pages.len() - 1;
        let c = &mut self.pages[last];
        c.begin_text();
        c.set_font(pdf_writer::Name(font), style.size);
        c.next_line(x, y);
        c.show(pdf_writer::Str(&bytes));
        c.end_text();
    }

    fn line(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        self.show(MARGIN, y, text, style);
        self.y -= h - style.size;
    }

    fn centered(&mut self, text: &str, style: Style) {
        let h = style.size * 1.45;
        self.reserve(h);
        self.y -= style.size;
        let x = (PAGE_W - documents::text_width(text, style)) / 2.0;
        let y = self.y;
        self.show(x, y, text, style);
        self.y -= h - style.size;
    }

    fn paragraph(&mut self, text: &str, style: Style) {
        for l in documents::wrap(text, style, PAGE_W - 2.0 * MARGIN) {
            self.line(&l, style);
        }
    }

    fn row(&mut self, cells: &[(&str, f32, Align)], style: Style) {
        let h = style.size * 1.5;
        self.reserve(h);
        self.y -= style.size;
        let y = self.y;
        for (text, x, align) in cells {
            let x = match align {
                Align::Left => *x,
                Align::Right => x - documents::text_width(text, style),
            };
            self.show(x, y, text, style);
        }
        self.y -= h - style.size;
    }

    fn rule(&mut self) {
        self.reserve(6.0);
        self.y -= 3.0;
        let y = self.y;
        let last = self.pages.len() - 1;
        let c = &mut self.pages[last];
        c.set_line_width(0.5);
        c.move_to(MARGIN, y);
        c.line_to(PAGE_W - MARGIN, y);
        c.stroke();
        self.y -= 3.0;
    }

    fn finish(self) -> Vec<u8> {
        use chrono::Datelike;
        use pdf_writer::{Date, Finish, Name, Pdf, Rect, Ref, Str, TextStr};
        use sha2::{Digest, Sha256};
        let n = self.pages.len();
        let catalog = Ref::new(1);
        let tree = Ref::new(2);
        let regular = Ref::new(3);
        let bold = Ref::new(4);
        let info = Ref::new(5);
        let first = 6;
        let mut pdf = Pdf::new();
        pdf.set_version(1, 4);
        pdf.catalog(catalog).pages(tree);
        let page_ids: Vec<Ref> = (0..n)
            .map(|i| Ref::new(first + 2 * i32::try_from(i).unwrap_or_default()))
            .collect();
        pdf.pages(tree)
            .kids(page_ids.iter().copied())
            .count(i32::try_from(n).unwrap_or_default());
        let mut digest = Sha256::new();
        digest.update(self.title.as_bytes());
        for (i, mut content) in self.pages.into_iter().enumerate() {
            let footer = format!("{} — página {} de {n}", self.title, i + 1);
            let style = Style::regular(8.0);
            let bytes = documents::encode(&footer);
            content.begin_text();
            content.set_font(Name(b"F1"), style.size);
            content.next_line(
                PAGE_W - MARGIN - documents::text_width(&footer, style),
                MARGIN - 20.0,
            );
            content.show(Str(&bytes));
            content.end_text();
            let stream = content.finish();
            digest.update(stream.as_slice());
            let page_id = page_ids[i];
            let content_id = Ref::new(page_id.get() + 1);
            let mut page = pdf.page(page_id);
            page.media_box(Rect::new(0.0, 0.0, PAGE_W, PAGE_H));
            page.parent(tree);
            page.contents(content_id);
            let mut resources = page.resources();
            resources
                .fonts()
                .pair(Name(b"F1"), regular)
                .pair(Name(b"F2"), bold);
            resources.finish();
            page.finish();
            pdf.stream(content_id, stream.as_slice());
        }
        pdf.type1_font(regular)
            .base_font(Name(b"Helvetica"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        pdf.type1_font(bold)
            .base_font(Name(b"Helvetica-Bold"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        let date = Date::new(u16::try_from(self.date.year()).unwrap_or(2000))
            .month(u8::try_from(self.date.month()).unwrap_or(1))
            .day(u8::try_from(self.date.day()).unwrap_or(1))
            .hour(0)
            .minute(0)
            .second(0)
            .utc_offset_hour(-3)
            .utc_offset_minute(0);
        pdf.document_info(info)
            .title(TextStr(&self.title))
            .producer(TextStr("kobana-dunning"))
            .creator(TextStr("kobana-dunning"))
            .creation_date(date)
            .modified_date(date);
        let id = digest.finalize()[..16].to_vec();
        pdf.set_file_id((id.clone(), id));
        pdf.finish()
    }
}

// ---------------------------------------------------------------------------------
// Demo
// ---------------------------------------------------------------------------------

const DAY_MS_I: i64 = 86_400_000;

fn at(now: UnixTime, days: i64) -> UnixTime {
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX) + days * DAY_MS_I;
    UnixTime::from_millis(u64::try_from(ms).unwrap_or_default())
}

/// Like [`crate::demo::run_as`], with its own outbound budget: the demo's history is
/// written at past times, which a shared limiter would refuse.
fn demo_run(
    domain: &Domain,
    principal: &dunning_core::Principal,
    now: UnixTime,
    entropy: [u8; 32],
    run: crate::spec::Run,
    args: Value,
) -> Result<Output, DomainError> {
    let args = match args {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let outbound = crate::outbound::Outbound::new(1000);
    store::write(domain.store(), |tx| {
        let settings = load::<crate::org::Organization>(
            tx,
            Kind::Organization,
            &principal.organization,
            &principal.organization,
        )?
        .map(|o| o.settings)
        .unwrap_or_default();
        let mut op = Op::new(
            tx,
            &principal.organization,
            principal,
            now,
            &args,
            "demo",
            entropy,
            settings,
            &outbound,
        );
        run(&mut op)
    })
}

fn worker_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let b = crate::ops::bureau::advance(op)?;
    let p = crate::ops::protests::advance(op)?;
    let a = check_broken(op)?;
    Ok(Output::ok(
        json!({ "bureau": b, "protests": p, "agreements": a }),
    ))
}

/// The demo hook of agreements, credit bureau and protest (spec §17): one accepted
/// agreement with its installments, one negativação included after its notice window,
/// one protest at the notary — each through the same handlers the tools run, at the
/// times it would have happened (days before `now`).
pub fn seed_demo(
    domain: &Domain,
    who: &dunning_core::Principal,
    now: UnixTime,
    rng: &mut Rng,
    seeded: &Seeded,
    _charges: usize,
) -> Result<(), DomainError> {
    if seeded.debtors.is_empty() {
        return Ok(());
    }
    let org = who.organization.clone();
    let today = calendar::today(now);
    let old_enough = fmt_date(today - chrono::Duration::days(30));
    let overdue: Vec<Charge> = store::read(domain.store(), |tx| {
        let q = Query {
            conds: vec![
                Cond::Eq("status", json!("overdue")),
                Cond::Le("due_date", json!(old_enough)),
            ],
            sort: ("due_date", Order::Desc),
            limit: None,
            offset: 0,
        };
        find::<Charge>(tx, Kind::Charge, &org, &q)
    })?;
    let mut used: BTreeSet<String> = BTreeSet::new();
    let try_run = |rng: &mut Rng,
                   days: i64,
                   run: crate::spec::Run,
                   args: Value|
     -> Result<Option<Value>, DomainError> {
        match demo_run(domain, who, at(now, days), rng.entropy(), run, args) {
            Ok(Output::Json { body, .. }) => Ok(Some(body)),
            Ok(_) => Ok(Some(Value::Null)),
            Err(DomainError::Conflict(_) | DomainError::Validation { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    };
    // A negativação: notice 20 days ago, included after the 10-day window.
    for c in &overdue {
        let args = json!({"id": c.id, "bureau": "serasa"});
        if try_run(rng, -20, crate::ops::bureau::seed_demo_run, args)?.is_some() {
            used.insert(c.debtor_id.clone());
            try_run(rng, -19, worker_run, json!({}))?;
            try_run(rng, -9, worker_run, json!({}))?;
            break;
        }
    }
    // A protest: an overdue charge of a company not used above.
    let mut companies: Vec<&Charge> = Vec::new();
    let mut people: Vec<&Charge> = Vec::new();
    for c in overdue.iter().filter(|c| !used.contains(&c.debtor_id)) {
        let juridical = store::read(domain.store(), |tx| {
            Ok(load::<Debtor>(tx, Kind::Debtor, &org, &c.debtor_id)?
                .is_some_and(|d| d.person_type == "juridical"))
        })?;
        if juridical {
            companies.push(c);
        } else {
            people.push(c);
        }
    }
    for c in companies.into_iter().chain(people) {
        let args = json!({
            "id": c.id,
            "title_type": "duplicata_servico",
            "document_ids": [format!("NF-{}", short(&c.id)), "comprovante-de-prestacao"],
        });
        if try_run(rng, -6, crate::ops::protests::seed_demo_run, args)?.is_some() {
            used.insert(c.debtor_id.clone());
            try_run(rng, -5, worker_run, json!({}))?;
            try_run(rng, -4, worker_run, json!({}))?;
            break;
        }
    }
    // An accepted agreement: every overdue charge of another debtor, 10% off, a down
    // payment and three installments.
    let mut by_debtor: Vec<(String, Vec<String>)> = Vec::new();
    for c in &overdue {
        if used.contains(&c.debtor_id) {
            continue;
        }
        match by_debtor.iter_mut().find(|(d, _)| *d == c.debtor_id) {
            Some((_, ids)) => ids.push(c.id.clone()),
            None => by_debtor.push((c.debtor_id.clone(), vec![c.id.clone()])),
        }
    }
    for (debtor_id, ids) in &by_debtor {
        let proposal = json!({
            "debtor_id": debtor_id,
            "charge_ids": ids,
            "installments_count": 3,
            "discount_percentage": 10,
            "down_payment_amount": 50,
            "first_due_date": fmt_date(today + chrono::Duration::days(5)),
            "expires_at": end_of_day(today + chrono::Duration::days(2)),
        });
        let Some(a) = try_run(rng, -3, create_agreement, proposal)? else {
            continue;
        };
        let id = a.get("id").cloned().unwrap_or(Value::Null);
        if try_run(rng, -2, accept, json!({"id": id, "accepted_by": "debtor"}))?.is_some() {
            used.insert(debtor_id.clone());
            break;
        }
    }
    Ok(())
}
