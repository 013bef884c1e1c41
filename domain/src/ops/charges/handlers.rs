//! The charge tools' handlers and their confirmation messages.

use chrono::NaiveDate;
use dunning_core::Output;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    Charge, Discount, NewCharge, OPEN, Payment, View, breakdown, commit, due_date,
    effective_due_date, is_open, issue, label, load_charge, register, validate_amount,
    validate_discount, view,
};
use crate::args::{Amount, ById, Date, IdReason, ListArgs, fields};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, created, list, ok};
use crate::ops::debtors::Debtor;
use crate::status::ChargeStatus;
use crate::store::{Cond, Kind, Order, Query, load, save};

/// The decisions an operator can take on a debt (`dunning_charges_decide`).
pub(super) const DECISIONS: &[&str] = &[
    "continue",
    "negotiate",
    "negativate",
    "protest",
    "write_off",
    "send_to_legal",
    "suspend",
];

// ---- arguments ----

/// `dunning_charges_timeline`.
#[derive(Debug, Deserialize)]
pub(super) struct TimelineArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::csv")]
    code: Option<Vec<String>>,
}

/// `dunning_charges_create`. Texts are trimmed (blank is absent); the discount and the
/// custom data are checked below, worded for their fields.
#[derive(Debug, Deserialize)]
pub(super) struct CreateArgs {
    debtor_id: String,
    amount: Amount,
    due_date: Date,
    payment_method: String,
    description: Option<String>,
    fine_percentage: Option<f64>,
    interest_percentage: Option<f64>,
    discount: Option<Value>,
    ruler_id: Option<String>,
    external_id: Option<String>,
    tags: Option<Vec<String>>,
    custom_data: Option<Value>,
    draft: Option<bool>,
}

/// `dunning_charges_update` (a patch: a null description or ruler clears it).
#[derive(Debug, Deserialize)]
pub(super) struct UpdateArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::date")]
    due_date: Option<NaiveDate>,
    #[serde(default, deserialize_with = "fields::money")]
    amount: Option<Money>,
    #[serde(default, deserialize_with = "fields::patch")]
    description: Option<Option<String>>,
    #[serde(default, deserialize_with = "fields::patch")]
    ruler_id: Option<Option<String>>,
    tags: Option<Vec<String>>,
}

/// `dunning_charges_mark_paid`.
#[derive(Debug, Deserialize)]
pub(super) struct PaidArgs {
    id: String,
    paid_at: Option<String>,
    #[serde(default, deserialize_with = "fields::money")]
    paid_amount: Option<Money>,
    paid_via: Option<String>,
    note: Option<String>,
}

/// `dunning_charges_pause`.
#[derive(Debug, Deserialize)]
pub(super) struct PauseArgs {
    id: String,
    #[serde(default, deserialize_with = "fields::date")]
    until: Option<NaiveDate>,
    reason: Option<String>,
}

/// `dunning_charges_decide`.
#[derive(Debug, Deserialize)]
pub(super) struct DecideArgs {
    id: String,
    decision: String,
    /// Required; absent reads as blank, refused with the decision's own words.
    #[serde(default)]
    reason: String,
}

fn tags_arg(tags: Option<Vec<String>>) -> Result<Option<Vec<String>>, DomainError> {
    tags.map(|a| {
        a.into_iter()
            .map(|t| {
                Some(t.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| DomainError::field("tags", "must be non-empty strings"))
            })
            .collect()
    })
    .transpose()
}

fn discount_arg(v: Option<&Value>, due: NaiveDate) -> Result<Option<Discount>, DomainError> {
    let Some(v) = v else {
        return Ok(None);
    };
    let m = v
        .as_object()
        .ok_or_else(|| DomainError::field("discount", "must be an object"))?;
    if let Some(k) = m
        .keys()
        .find(|k| !matches!(k.as_str(), "type" | "value" | "until"))
    {
        return Err(DomainError::field(
            &format!("discount.{k}"),
            "unknown field",
        ));
    }
    let kind = m
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| DomainError::field("discount.type", "is required (fixed or percentage)"))?;
    let value = m
        .get("value")
        .and_then(Value::as_f64)
        .ok_or_else(|| DomainError::field("discount.value", "is required (a number)"))?;
    let until = match m.get("until") {
        None | Some(Value::Null) => due.format("%Y-%m-%d").to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(DomainError::field("discount.until", "must be a date")),
    };
    Ok(Some(Discount {
        kind: kind.to_owned(),
        value,
        until,
    }))
}

pub(super) fn debtor_of(op: &mut Op<'_>, c: &Charge) -> Result<Option<Debtor>, DomainError> {
    load::<Debtor>(op.tx, Kind::Debtor, op.org, &c.debtor_id)
}

fn debtor_name(op: &mut Op<'_>, c: &Charge) -> Result<String, DomainError> {
    Ok(debtor_of(op, c)?.map_or_else(|| c.debtor_id.clone(), |d| d.name))
}

/// A charge's view with its debtor's name (`null` when the debtor is gone).
pub(super) fn with_debtor<'a>(
    c: &'a Charge,
    today: NaiveDate,
    debtor: Option<&'a Debtor>,
) -> View<'a> {
    View::of(c, today).named(debtor.map(|d| d.name.as_str()))
}

// ---- reads ----

pub(super) fn get_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let c = load_charge(op, &id)?;
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, op.today(), d.as_ref())))
}

/// Where an event sits in a charge's life, to order events stamped in the same second
/// (timestamps have second precision and event ids are random).
fn lifecycle_rank(code: &str) -> u8 {
    match code {
        "charge.created" => 0,
        "charge.updated" => 1,
        "charge.decided" => 2,
        "charge.overdue" => 4,
        "charge.partially_paid" => 5,
        "charge.paid" | "charge.canceled" | "charge.renegotiated" | "charge.written_off" => 6,
        "charge.deleted" => 7,
        _ => 3,
    }
}

pub(super) fn timeline(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let TimelineArgs { id, code } = op.args()?;
    let list_args: ListArgs = op.args()?;
    load_charge(op, &id)?;
    let mut conds = vec![
        Cond::Eq("resource_type", json!("charge")),
        Cond::Eq("resource_id", json!(id)),
    ];
    if let Some(codes) = code {
        conds.push(Cond::In(
            "code",
            codes.into_iter().map(Value::from).collect(),
        ));
    }
    let page = list_args.page();
    let (_, order) = list_args.sort(&[("occurred_at", "occurred_at", Order::Asc)]);
    let q = Query {
        conds,
        // Through the resource index (not the organization's whole trail by time);
        // ordered below.
        sort: ("resource_id", Order::Asc),
        limit: None,
        offset: 0,
    };
    let mut events = op.tx.find(Kind::Event, op.org, &q)?;
    let key = |e: &Value| {
        let text = |k: &str| {
            e.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        (
            text("occurred_at"),
            lifecycle_rank(&text("code")),
            text("id"),
        )
    };
    events.sort_by_key(key);
    if order == Order::Desc {
        events.reverse();
    }
    let total = events.len() as u64;
    let items = events
        .into_iter()
        .skip(page.offset() as usize)
        .take(page.per_page as usize)
        .collect();
    Ok(list(items, page, total))
}

// ---- writes ----

pub(super) fn create_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: CreateArgs = op.args_strict()?;
    let (amount, due) = (args.amount.0, args.due_date.0);
    let custom_data = match args.custom_data {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(DomainError::field("custom_data", "must be an object")),
    };
    let n = NewCharge {
        debtor_id: args.debtor_id,
        amount,
        due_date: due,
        payment_method: args.payment_method,
        description: fields::trimmed(args.description),
        fine_percentage: args.fine_percentage.unwrap_or(0.0),
        interest_percentage: args.interest_percentage.unwrap_or(0.0),
        discount: discount_arg(args.discount.as_ref(), due)?,
        ruler_id: fields::trimmed(args.ruler_id),
        external_id: fields::trimmed(args.external_id),
        tags: tags_arg(args.tags)?.unwrap_or_default(),
        custom_data,
        agreement_id: None,
        draft: args.draft.unwrap_or(false),
    };
    let c = issue(op, n)?;
    let d = debtor_of(op, &c)?;
    Ok(created(with_debtor(&c, op.today(), d.as_ref())))
}

pub(super) fn update_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: UpdateArgs = op.args_strict()?;
    let id = args.id.as_str();
    let mut c = load_charge(op, id)?;
    if !c.status.is_editable() {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only pending or overdue charges can be updated",
            c.status
        )));
    }
    let today = op.today();
    let before = c.clone();
    if let Some(d) = args.due_date {
        if d < today {
            return Err(DomainError::field(
                "due_date",
                format!("may not be in the past (today is {today})"),
            ));
        }
        c.due_date = d.format("%Y-%m-%d").to_string();
    }
    if let Some(a) = args.amount {
        validate_amount(a)?;
        c.amount = a;
    }
    if let Some(d) = args.description {
        c.description = fields::trimmed(d);
    }
    if let Some(r) = args.ruler_id {
        let r = fields::trimmed(r);
        if let Some(r) = &r {
            // Another organization's ruler is NOT_FOUND, like any id of another
            // organization: it must not be told from one that does not exist.
            crate::ops::rulers::load_ruler(op.tx, op.org, r)?;
        }
        c.ruler_id = r;
    }
    if let Some(t) = tags_arg(args.tags)? {
        c.tags = t;
    }
    if c == before {
        let d = debtor_of(op, &c)?;
        return Ok(ok(with_debtor(&c, today, d.as_ref())));
    }
    let due = due_date(&c);
    if let Some(d) = c.discount.as_mut() {
        // A discount never outlives the due date.
        if calendar::parse_date(&d.until).is_some_and(|u| u > due) {
            d.until = c.due_date.clone();
        }
    }
    if let Some(d) = &c.discount {
        let cents = c.amount;
        validate_discount(d, cents, due).map_err(|_| {
            DomainError::field(
                "amount",
                "must stay greater than the charge's fixed discount",
            )
        })?;
    }
    if c.due_date != before.due_date || c.amount != before.amount {
        register(op, &mut c)?;
    }
    if c.status == ChargeStatus::Overdue && effective_due_date(&c) >= today {
        // Re-dated to the future: the clock no longer makes it overdue.
        crate::status::change(&mut c.status, &c.id, ChargeStatus::Pending)?;
    }
    commit(op, "charge.updated", Some(&before), &mut c)?;
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, today, d.as_ref())))
}

pub(super) fn describe_delete(op: &mut Op<'_>) -> Result<String, DomainError> {
    let ById { id } = op.args()?;
    let c = load_charge(op, &id)?;
    let name = debtor_name(op, &c)?;
    Ok(format!(
        "Delete draft {} of {} for {name}? It is removed for good.",
        label(&c),
        c.amount
    ))
}

pub(super) fn delete_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args_strict()?;
    let id = id.as_str();
    let c = load_charge(op, id)?;
    if c.status != ChargeStatus::Draft {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only draft charges can be deleted (cancel it instead)",
            c.status
        )));
    }
    op.tx.delete(Kind::Charge, op.org, id)?;
    let data = view(&c, op.today());
    op.event("charge.deleted", "charge", id, &data, Value::Null)?;
    crate::ops::aggregates::apply(op, Some(&c), None)?;
    Ok(Output::NoContent)
}

pub(super) fn describe_cancel(op: &mut Op<'_>) -> Result<String, DomainError> {
    let ById { id } = op.args()?;
    let c = load_charge(op, &id)?;
    let name = debtor_name(op, &c)?;
    Ok(format!(
        "Cancel {} of {} for {name}? Its boleto/Pix stop being payable and dunning stops.",
        label(&c),
        c.amount
    ))
}

pub(super) fn cancel_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let IdReason { id, reason } = op.args_strict()?;
    let id = id.as_str();
    let mut c = load_charge(op, id)?;
    let today = op.today();
    if c.status != ChargeStatus::Canceled {
        crate::status::check(c.status, id, ChargeStatus::Canceled)?;
        let before = c.clone();
        crate::status::change(&mut c.status, &c.id, ChargeStatus::Canceled)?;
        c.canceled_at = Some(op.timestamp());
        c.cancellation_reason = fields::trimmed(reason);
        commit(op, "charge.canceled", Some(&before), &mut c)?;
    }
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, today, d.as_ref())))
}

/// A payment as the arguments describe it.
struct PaymentArgs {
    paid_at: String,
    paid_on: NaiveDate,
    owed: Money,
    amount: Money,
    via: String,
    note: Option<String>,
}

fn payment_args(op: &Op<'_>, args: PaidArgs, c: &Charge) -> Result<PaymentArgs, DomainError> {
    let (paid_at, paid_on) = match fields::trimmed(args.paid_at) {
        None => (op.timestamp(), op.today()),
        Some(s) => {
            let t = calendar::parse_timestamp(&s).ok_or_else(|| {
                DomainError::field("paid_at", "must be an RFC 3339 timestamp or a date")
            })?;
            if t.timestamp_millis() > i64::try_from(op.now.as_millis()).unwrap_or(i64::MAX) {
                return Err(DomainError::field("paid_at", "may not be in the future"));
            }
            let local = t.with_timezone(&calendar::offset());
            (
                local.format("%Y-%m-%dT%H:%M:%S%:z").to_string(),
                local.date_naive(),
            )
        }
    };
    let owed = breakdown(c, paid_on).total;
    let amount = match args.paid_amount {
        Some(a) if a <= Money::ZERO => {
            return Err(DomainError::field(
                "paid_amount",
                "must be greater than zero",
            ));
        }
        Some(a) => a,
        None if owed > Money::ZERO => owed,
        None => {
            return Err(DomainError::field(
                "paid_amount",
                "is required: nothing is owed at that date",
            ));
        }
    };
    let via = fields::trimmed(args.paid_via).unwrap_or_else(|| "manual".into());
    if !matches!(via.as_str(), "boleto" | "pix" | "manual") {
        return Err(DomainError::field(
            "paid_via",
            "must be boleto, pix or manual",
        ));
    }
    Ok(PaymentArgs {
        paid_at,
        paid_on,
        owed,
        amount,
        via,
        note: fields::trimmed(args.note),
    })
}

pub(super) fn describe_mark_paid(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: PaidArgs = op.args()?;
    let id = args.id.clone();
    let id = id.as_str();
    let c = load_charge(op, id)?;
    let name = debtor_name(op, &c)?;
    if c.status == ChargeStatus::Paid {
        return Ok(format!(
            "{} for {name} is already paid; nothing will change. Continue?",
            label(&c)
        ));
    }
    // The state first (as `mark_paid` does): a canceled charge is a conflict, whatever
    // the arguments.
    crate::status::check(c.status, id, ChargeStatus::Paid)?;
    let p = payment_args(op, args, &c)?;
    let outcome = if p.amount >= p.owed {
        "paid in full".to_owned()
    } else {
        format!("partially paid ({} still owed)", p.owed - p.amount)
    };
    Ok(format!(
        "Record a payment of {} via {} on {} for {} of {} ({} updated) owed by {name}? The charge becomes {outcome}.",
        p.amount,
        p.via,
        p.paid_on,
        label(&c),
        c.amount,
        p.owed,
    ))
}

pub(super) fn mark_paid(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: PaidArgs = op.args_strict()?;
    let id = args.id.clone();
    let id = id.as_str();
    let mut c = load_charge(op, id)?;
    let today = op.today();
    if c.status != ChargeStatus::Paid {
        crate::status::check(c.status, id, ChargeStatus::Paid)?;
        let p = payment_args(op, args, &c)?;
        let before = c.clone();
        let total = c.paid_amount + p.amount;
        c.paid_amount = total;
        c.payments.push(Payment {
            amount: p.amount,
            paid_at: p.paid_at.clone(),
            paid_via: p.via.clone(),
            note: p.note,
            recorded_by: op.principal.subject.clone(),
        });
        let code = if p.amount >= p.owed {
            crate::status::change(&mut c.status, &c.id, ChargeStatus::Paid)?;
            c.paid_at = Some(p.paid_at);
            c.paid_via = Some(p.via);
            c.dunning_paused = false;
            c.dunning_paused_until = None;
            "charge.paid"
        } else {
            crate::status::change(&mut c.status, &c.id, ChargeStatus::PartiallyPaid)?;
            "charge.partially_paid"
        };
        commit(op, code, Some(&before), &mut c)?;
    }
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, today, d.as_ref())))
}

fn pause_with(
    op: &mut Op<'_>,
    c: &mut Charge,
    until: Option<NaiveDate>,
    reason: Option<String>,
) -> Result<(), DomainError> {
    let until = until.map(|u| u.format("%Y-%m-%d").to_string());
    if c.dunning_paused && c.dunning_paused_until == until && c.pause_reason == reason {
        return Ok(());
    }
    let before = c.clone();
    c.dunning_paused = true;
    c.dunning_paused_until = until;
    c.pause_reason = reason;
    commit(op, "charge.paused", Some(&before), c)
}

pub(super) fn pause_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let PauseArgs { id, until, reason } = op.args_strict()?;
    let id = id.as_str();
    let mut c = load_charge(op, id)?;
    if !is_open(&c) {
        return Err(DomainError::transition("charge", id, c.status, "paused"));
    }
    let today = op.today();
    if until.is_some_and(|u| u < today) {
        return Err(DomainError::field("until", "must be today or later"));
    }
    let reason = fields::trimmed(reason);
    pause_with(op, &mut c, until, reason)?;
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, today, d.as_ref())))
}

fn resume_with(op: &mut Op<'_>, c: &mut Charge) -> Result<(), DomainError> {
    if !c.dunning_paused {
        return Ok(());
    }
    let before = c.clone();
    c.dunning_paused = false;
    c.dunning_paused_until = None;
    c.pause_reason = None;
    commit(op, "charge.resumed", Some(&before), c)
}

pub(super) fn resume_charge(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args_strict()?;
    let mut c = load_charge(op, &id)?;
    resume_with(op, &mut c)?;
    let d = debtor_of(op, &c)?;
    Ok(ok(with_debtor(&c, op.today(), d.as_ref())))
}

/// An audited decision on a debt (`Kind::Decision`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// UUID.
    pub id: String,
    /// The charge decided on.
    pub charge_id: String,
    /// Its debtor.
    pub debtor_id: String,
    /// `continue`, `negotiate`, `negativate`, `protest`, `write_off`, `send_to_legal`
    /// or `suspend`.
    pub decision: String,
    /// Why.
    pub reason: String,
    /// Who decided (the token's person).
    pub decided_by: String,
    /// When.
    pub decided_at: String,
    /// Status of the charge when decided.
    pub charge_status: ChargeStatus,
    /// Updated amount when decided.
    pub updated_amount: Money,
    /// What the decision changed, in words.
    pub effect: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// What a decision does to the charge, or why it cannot be taken.
fn decision_effect(c: &Charge, decision: &str) -> Result<&'static str, DomainError> {
    let needs_overdue = |effect| {
        if c.status == ChargeStatus::Overdue {
            Ok(effect)
        } else {
            Err(DomainError::Conflict(format!(
                "invalid_transition: charge {} is {}; the decision {decision} needs an overdue charge",
                c.id, c.status
            )))
        }
    };
    if !is_open(c) {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {} is {}; decisions apply to open charges ({})",
            c.id,
            c.status,
            crate::status::joined(OPEN)
        )));
    }
    match decision {
        "write_off" => {
            crate::status::check(c.status, &c.id, ChargeStatus::WrittenOff)?;
            Ok("the charge becomes written_off and leaves dunning")
        }
        "negativate" => needs_overdue(
            "recorded; run dunning_charges_negativate to register the debtor (notice rules apply)",
        ),
        "protest" => needs_overdue("recorded; run dunning_charges_protest to send it to a notary"),
        "send_to_legal" => {
            if c.status.is_late() {
                Ok("dunning is paused while the debt is with the legal team")
            } else {
                Err(DomainError::Conflict(format!(
                    "invalid_transition: charge {} is {}; send_to_legal needs an overdue or partially paid charge",
                    c.id, c.status
                )))
            }
        }
        "suspend" => Ok("dunning is paused until resumed"),
        "continue" if c.dunning_paused => Ok("dunning resumes"),
        "continue" => Ok("dunning goes on as planned"),
        "negotiate" => Ok("recorded; propose an agreement with dunning_agreements_create"),
        other => Err(DomainError::field(
            "decision",
            format!("unknown decision {other}; one of {}", DECISIONS.join(", ")),
        )),
    }
}

pub(super) fn describe_decide(op: &mut Op<'_>) -> Result<String, DomainError> {
    let DecideArgs { id, decision, .. } = op.args()?;
    let c = load_charge(op, &id)?;
    let effect = decision_effect(&c, &decision)?;
    let name = debtor_name(op, &c)?;
    Ok(format!(
        "Record the decision {decision} on {} of {} ({} updated) owed by {name}? Effect: {effect}.",
        label(&c),
        c.amount,
        super::updated_amount(&c, op.today()),
    ))
}

pub(super) fn decide(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let DecideArgs {
        id,
        decision,
        reason,
    } = op.args_strict()?;
    let (id, decision) = (id.as_str(), decision.as_str());
    let reason = fields::trimmed(Some(reason))
        .filter(|r| r.chars().count() >= 3)
        .ok_or_else(|| DomainError::field("reason", "is required (at least 3 characters)"))?;
    let mut c = load_charge(op, id)?;
    let effect = decision_effect(&c, decision)?;
    let today = op.today();
    let now = op.timestamp();
    let record = Decision {
        id: op.new_id(),
        charge_id: c.id.clone(),
        debtor_id: c.debtor_id.clone(),
        decision: decision.to_owned(),
        reason: reason.clone(),
        decided_by: op.principal.subject.clone(),
        decided_at: now.clone(),
        charge_status: c.status,
        updated_amount: super::updated_amount(&c, today),
        effect: effect.to_owned(),
        created_at: now.clone(),
        updated_at: now,
    };
    save(op.tx, Kind::Decision, op.org, &record)?;
    op.event("charge.decided", "charge", &c.id, &record, Value::Null)?;
    match decision {
        "write_off" => {
            let before = c.clone();
            crate::status::change(&mut c.status, &c.id, ChargeStatus::WrittenOff)?;
            c.written_off_at = Some(op.timestamp());
            c.dunning_paused = false;
            c.dunning_paused_until = None;
            commit(op, "charge.written_off", Some(&before), &mut c)?;
        }
        "suspend" | "send_to_legal" => {
            pause_with(op, &mut c, None, Some(format!("{decision}: {reason}")))?;
        }
        "continue" => resume_with(op, &mut c)?,
        _ => {}
    }
    let d = debtor_of(op, &c)?;
    Ok(ok(json!({
        "decision": record,
        "charge": with_debtor(&c, today, d.as_ref()),
    })))
}
