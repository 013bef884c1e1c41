//! The handlers of the ruler and step tools.

use chrono::NaiveDate;
use dunning_core::Output;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{
    STEP_FIELDS, apply_filters, apply_step, apply_window, blank_step, check_step, fail, issue,
    join, new_step, object, unknown_keys,
};
use super::{
    DUNNABLE, Filters, Ruler, SendWindow, Step, condition_refusal, load_ruler, slot, steps_of,
};
use crate::args::{ById, IdReason, fields};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::list::{Filter, Listing, Rows};
use crate::op::{Op, created, diff, list, ok};
use crate::status::{ChargeStatus, RulerStatus};
use crate::store::{Cond, Kind, Order, Query, find, must, save};

/// `dunning_rulers_create`.
#[derive(Debug, Deserialize)]
pub(super) struct NewRuler {
    name: String,
    description: Option<String>,
    is_default: Option<bool>,
    #[serde(default, deserialize_with = "fields::raw")]
    filters: Option<Value>,
    #[serde(default, deserialize_with = "fields::raw")]
    send_window: Option<Value>,
    steps: Option<Value>,
}

/// `dunning_rulers_update` (a patch: a null description clears it).
#[derive(Debug, Deserialize)]
pub(super) struct RulerPatch {
    id: String,
    name: Option<String>,
    #[serde(default, deserialize_with = "fields::patch")]
    description: Option<Option<String>>,
    is_default: Option<bool>,
    #[serde(default, deserialize_with = "fields::raw")]
    filters: Option<Value>,
    #[serde(default, deserialize_with = "fields::raw")]
    send_window: Option<Value>,
}

/// `steps` sent to `dunning_rulers_update`: refused with a pointer to the step tools,
/// before any other check (not an argument of the tool).
#[derive(Debug, Deserialize)]
struct StepsSent {
    #[serde(default, deserialize_with = "fields::raw")]
    steps: Option<Value>,
}

/// `{id, step_id}`: one step of a ruler.
#[derive(Debug, Deserialize)]
pub(super) struct StepRef {
    id: String,
    step_id: String,
}

/// `dunning_rulers_preview`: a charge, or a hypothetical one's due date and amount.
#[derive(Debug, Deserialize)]
pub(super) struct PreviewArgs {
    id: String,
    charge_id: Option<String>,
    #[serde(default, deserialize_with = "fields::date")]
    due_date: Option<NaiveDate>,
    #[serde(default, deserialize_with = "fields::money")]
    amount: Option<Money>,
}

pub(super) const SORTS: &[(&str, &str, Order)] = &[
    ("name", "name", Order::Asc),
    ("created_at", "created_at", Order::Desc),
];

/// The ruler as the API shows it: the document plus `steps` and `steps_count`.
pub fn view(ruler: &Ruler, steps: &[Step]) -> Value {
    let mut v = serde_json::to_value(ruler).unwrap_or(Value::Null);
    v["steps_count"] = json!(steps.len());
    v["steps"] = serde_json::to_value(steps).unwrap_or(Value::Null);
    v
}

pub(super) fn full_view(op: &mut Op<'_>, ruler: &Ruler) -> Result<Value, DomainError> {
    let steps = steps_of(op.tx, op.org, &ruler.id)?;
    Ok(view(ruler, &steps))
}

/// `dunning_rulers_list`.
pub(super) const LISTING: Listing = Listing {
    kind: Kind::Ruler,
    filters: &[Filter::In("status", "status")],
    sorts: SORTS,
};

pub(super) fn list_rulers(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let rows: Rows<Ruler> = LISTING.fetch(op, Vec::new())?;
    let (rulers, page, total) = (rows.items, rows.page, rows.total);
    let mut items = Vec::with_capacity(rulers.len());
    for r in &rulers {
        let n = op
            .tx
            .count(Kind::Step, op.org, &[Cond::Eq("ruler_id", json!(r.id))])?;
        let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
        v["steps_count"] = json!(n);
        items.push(v);
    }
    Ok(list(items, page, total))
}

pub(super) fn get_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let r = load_ruler(op.tx, op.org, &id)?;
    Ok(ok(full_view(op, &r)?))
}

/// Clears `is_default` on every other ruler (one default per organization).
pub(super) fn take_default(op: &mut Op<'_>, keep: &str) -> Result<(), DomainError> {
    let q = Query::all().with(Cond::Eq("is_default", json!(true)));
    let others: Vec<Ruler> = find(op.tx, Kind::Ruler, op.org, &q)?;
    for mut r in others.into_iter().filter(|r| r.id != keep) {
        let before = r.clone();
        r.is_default = false;
        r.updated_at = op.timestamp();
        save(op.tx, Kind::Ruler, op.org, &r)?;
        let changes = diff(&before, &r);
        op.event("ruler.updated", "ruler", &r.id, &r, changes)?;
    }
    Ok(())
}

pub(super) fn create_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: NewRuler = op.args_strict()?;
    let now = op.timestamp();
    let mut out = Vec::new();
    let name = args.name.trim().to_owned();
    if name.is_empty() {
        out.push(issue("name", "must not be blank"));
    }
    let mut r = Ruler {
        id: op.new_id(),
        name,
        description: args.description,
        status: RulerStatus::Draft,
        is_default: args.is_default.unwrap_or(false),
        filters: Filters::default(),
        send_window: SendWindow::default(),
        stop_on_payment: true,
        pause_reason: None,
        activated_at: None,
        paused_at: None,
        archived_at: None,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    if let Some(f) = &args.filters {
        apply_filters(f, &mut r.filters, &mut out);
    }
    if let Some(w) = &args.send_window {
        apply_window(w, &mut r.send_window, &mut out);
    }
    let mut steps = Vec::new();
    match &args.steps {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.len() > 50 {
                out.push(issue("steps", "at most 50 steps"));
            }
            for (i, item) in items.iter().enumerate() {
                let prefix = format!("steps[{i}]");
                let Some(m) = object(item, &prefix, &mut out) else {
                    continue;
                };
                let mut extra = Vec::new();
                unknown_keys(m, STEP_FIELDS, &prefix, &mut extra);
                out.extend(extra);
                let mut st = blank_step(String::new(), &r.id, &now);
                if m.contains_key("position") {
                    out.push(issue(
                        &join(&prefix, "position"),
                        "steps of a new ruler are ordered by the list; leave position out",
                    ));
                }
                new_step(m, &mut st, &prefix, &mut out);
                steps.push(st);
            }
        }
        Some(_) => out.push(issue("steps", "must be a list of steps")),
    }
    fail(out)?;
    for (i, st) in steps.iter_mut().enumerate() {
        st.id = op.new_id();
        st.position = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    if r.is_default {
        take_default(op, &r.id)?;
    }
    save(op.tx, Kind::Ruler, op.org, &r)?;
    op.event("ruler.created", "ruler", &r.id, &r, Value::Null)?;
    for st in &steps {
        save(op.tx, Kind::Step, op.org, st)?;
        op.event("step.created", "step", &st.id, st, Value::Null)?;
    }
    Ok(created(view(&r, &steps)))
}

pub(super) fn refuse_archived(r: &Ruler, what: &str) -> Result<(), DomainError> {
    if r.status == RulerStatus::Archived {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: ruler {} ({}) is archived and {what}",
            r.id, r.name
        )));
    }
    Ok(())
}

pub(super) fn update_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    if op.args::<StepsSent>()?.steps.is_some() {
        return Err(DomainError::field(
            "steps",
            "steps change one by one with dunning_steps_create, dunning_steps_update and dunning_steps_delete",
        ));
    }
    let args: RulerPatch = op.args_strict()?;
    let id = args.id.as_str();
    let before = load_ruler(op.tx, op.org, id)?;
    refuse_archived(&before, "cannot be changed")?;
    let mut r = before.clone();
    let mut out = Vec::new();
    if let Some(n) = &args.name {
        if n.trim().is_empty() {
            out.push(issue("name", "must not be blank"));
        }
        r.name = n.trim().to_owned();
    }
    if let Some(d) = args.description.clone() {
        r.description = d;
    }
    if let Some(b) = args.is_default {
        r.is_default = b;
    }
    if let Some(f) = &args.filters {
        apply_filters(f, &mut r.filters, &mut out);
    }
    if let Some(w) = &args.send_window {
        apply_window(w, &mut r.send_window, &mut out);
    }
    fail(out)?;
    if r == before {
        return Ok(ok(full_view(op, &r)?));
    }
    if r.is_default && !before.is_default {
        take_default(op, &r.id)?;
    }
    r.updated_at = op.timestamp();
    save(op.tx, Kind::Ruler, op.org, &r)?;
    let changes = diff(&before, &r);
    op.event("ruler.updated", "ruler", id, &r, changes)?;
    Ok(ok(full_view(op, &r)?))
}

/// Moves `r` to `to` (a pause records `reason`).
pub(super) fn transition(
    op: &mut Op<'_>,
    r: &mut Ruler,
    to: RulerStatus,
    code: &str,
    reason: Option<String>,
) -> Result<(), DomainError> {
    let before = r.clone();
    crate::status::change(&mut r.status, &r.id, to)?;
    let now = op.timestamp();
    match to {
        RulerStatus::Active => {
            r.activated_at = Some(now.clone());
            r.pause_reason = None;
        }
        RulerStatus::Paused => {
            r.paused_at = Some(now.clone());
            r.pause_reason = reason;
        }
        RulerStatus::Archived => r.archived_at = Some(now.clone()),
        RulerStatus::Draft => {}
    }
    r.updated_at = now;
    save(op.tx, Kind::Ruler, op.org, r)?;
    let changes = diff(&before, r);
    op.event(code, "ruler", &r.id, r, changes)?;
    Ok(())
}

pub(super) fn activate_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args_strict()?;
    let id = id.as_str();
    let mut r = load_ruler(op.tx, op.org, id)?;
    if r.status != RulerStatus::Active {
        // The steps only matter to a ruler that may become active at all: the
        // transition refuses the others.
        if r.status.can_become(RulerStatus::Active) {
            let steps = steps_of(op.tx, op.org, id)?;
            if !steps.iter().any(|s| s.active) {
                return Err(DomainError::Conflict(format!(
                    "ruler {id} ({}) has no active steps; add one with dunning_steps_create before activating it",
                    r.name
                )));
            }
        }
        transition(op, &mut r, RulerStatus::Active, "ruler.activated", None)?;
    }
    Ok(ok(full_view(op, &r)?))
}

pub(super) fn pause_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let IdReason { id, reason } = op.args_strict()?;
    let id = id.as_str();
    let mut r = load_ruler(op.tx, op.org, id)?;
    if r.status != RulerStatus::Paused {
        transition(op, &mut r, RulerStatus::Paused, "ruler.paused", reason)?;
    }
    Ok(ok(full_view(op, &r)?))
}

pub(super) fn archive_checks(op: &mut Op<'_>) -> Result<Ruler, DomainError> {
    let ById { id } = op.args_strict()?;
    let r = load_ruler(op.tx, op.org, &id)?;
    if r.is_default && r.status != RulerStatus::Archived {
        return Err(DomainError::Conflict(format!(
            "ruler {id} ({}) is the organization's default ruler and cannot be archived; make another ruler the default first",
            r.name
        )));
    }
    Ok(r)
}

pub(super) fn describe_archive(op: &mut Op<'_>) -> Result<String, DomainError> {
    let r = archive_checks(op)?;
    let steps = op
        .tx
        .count(Kind::Step, op.org, &[Cond::Eq("ruler_id", json!(r.id))])?;
    let conds = [
        Cond::Eq("ruler_id", json!(r.id)),
        Cond::In("status", crate::status::values(DUNNABLE)),
    ];
    let charges = op.tx.count(Kind::Charge, op.org, &conds)?;
    Ok(format!(
        "Archive ruler \"{}\" ({}, {steps} steps)? It will never send again and cannot be restored; {charges} open charges assigned to it fall back to their debtor's ruler or the default ruler.",
        r.name, r.status
    ))
}

pub(super) fn archive_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut r = archive_checks(op)?;
    if r.status != RulerStatus::Archived {
        transition(op, &mut r, RulerStatus::Archived, "ruler.archived", None)?;
    }
    Ok(ok(full_view(op, &r)?))
}

/// Renumbers `steps` 1..n, saving those whose position changed.
pub(super) fn renumber(op: &mut Op<'_>, steps: &mut [Step], skip: &str) -> Result<(), DomainError> {
    let now = op.timestamp();
    for (i, st) in steps.iter_mut().enumerate() {
        let p = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if st.position != p {
            st.position = p;
            if st.id != skip {
                st.updated_at = now.clone();
                save(op.tx, Kind::Step, op.org, &*st)?;
            }
        }
    }
    Ok(())
}

pub(super) fn place(steps: &mut Vec<Step>, st: Step, position: Option<i64>) -> usize {
    let at = position
        .and_then(|p| usize::try_from(p - 1).ok())
        .map_or(steps.len(), |p| p.min(steps.len()));
    steps.insert(at, st);
    at
}

pub(super) fn create_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.refuse_unknown::<ById>(STEP_FIELDS)?;
    let ById { id } = op.args()?;
    let id = id.as_str();
    let r = load_ruler(op.tx, op.org, id)?;
    refuse_archived(&r, "its steps cannot change")?;
    let now = op.timestamp();
    let mut st = blank_step(op.new_id(), id, &now);
    let mut out = Vec::new();
    let pos = new_step(op.args, &mut st, "", &mut out);
    fail(out)?;
    let mut steps = steps_of(op.tx, op.org, id)?;
    if steps.len() >= 50 {
        return Err(DomainError::Conflict(format!(
            "ruler {id} already has 50 steps, the most a ruler can have"
        )));
    }
    let at = place(&mut steps, st, pos);
    renumber(op, &mut steps, "")?;
    let st = steps[at].clone();
    save(op.tx, Kind::Step, op.org, &st)?;
    op.event("step.created", "step", &st.id, &st, Value::Null)?;
    Ok(created(st))
}

pub(super) fn load_step(
    op: &mut Op<'_>,
    ruler_id: &str,
    step_id: &str,
) -> Result<Step, DomainError> {
    let st: Step = must(op.tx, Kind::Step, op.org, step_id)?;
    if st.ruler_id != ruler_id {
        return Err(DomainError::not_found("step", step_id));
    }
    Ok(st)
}

pub(super) fn update_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.refuse_unknown::<StepRef>(STEP_FIELDS)?;
    let StepRef { id, step_id } = op.args()?;
    let (id, step_id) = (id.as_str(), step_id.as_str());
    let r = load_ruler(op.tx, op.org, id)?;
    let before = load_step(op, id, step_id)?;
    refuse_archived(&r, "its steps cannot change")?;
    let mut st = before.clone();
    let mut out = Vec::new();
    let pos = apply_step(op.args, &mut st, "", &mut out);
    check_step(&st, "", &mut out);
    fail(out)?;
    let moved = pos.is_some_and(|p| i64::from(before.position) != p);
    if st == before && !moved {
        return Ok(ok(st));
    }
    st.updated_at = op.timestamp();
    if moved {
        let mut steps: Vec<Step> = steps_of(op.tx, op.org, id)?
            .into_iter()
            .filter(|s| s.id != step_id)
            .collect();
        let at = place(&mut steps, st, pos);
        renumber(op, &mut steps, step_id)?;
        st = steps[at].clone();
    }
    save(op.tx, Kind::Step, op.org, &st)?;
    let changes = diff(&before, &st);
    op.event("step.updated", "step", step_id, &st, changes)?;
    Ok(ok(st))
}

pub(super) fn delete_checks(op: &mut Op<'_>) -> Result<(Ruler, Step), DomainError> {
    let StepRef { id, step_id } = op.args_strict()?;
    let r = load_ruler(op.tx, op.org, &id)?;
    let st = load_step(op, &id, &step_id)?;
    refuse_archived(&r, "its steps cannot change")?;
    Ok((r, st))
}

pub(super) fn describe_delete_step(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (r, st) = delete_checks(op)?;
    let when = match st.offset_days {
        0 => "on the due date".to_owned(),
        d if d < 0 => format!("{} days before the due date", -d),
        d => format!("{d} days after the due date"),
    };
    Ok(format!(
        "Delete step {} of ruler \"{}\" ({} {} {when})? It will no longer fire; deliveries it already made are kept.",
        st.position, r.name, st.action, st.channel
    ))
}

pub(super) fn delete_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (r, st) = delete_checks(op)?;
    op.tx.delete(Kind::Step, op.org, &st.id)?;
    let mut steps = steps_of(op.tx, op.org, &r.id)?;
    renumber(op, &mut steps, "")?;
    op.event("step.deleted", "step", &st.id, &st, Value::Null)?;
    Ok(Output::NoContent)
}

/// A hypothetical debtor for previews without a charge.
pub(super) fn sample_debtor() -> Value {
    json!({ "name": "Maria da Silva (exemplo)", "person_type": "natural", "tags": [] })
}

pub(super) fn preview_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let PreviewArgs {
        id,
        charge_id,
        due_date: due,
        amount,
    } = op.args()?;
    let (id, charge_id) = (id.as_str(), charge_id.as_deref());
    let r = load_ruler(op.tx, op.org, id)?;
    let (charge, debtor) = match (charge_id, due, amount) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(DomainError::field(
                "charge_id",
                "give either charge_id or due_date and amount, not both",
            ));
        }
        (Some(cid), None, None) => {
            let c = op
                .tx
                .get(Kind::Charge, op.org, cid)?
                .ok_or_else(|| DomainError::not_found("charge", cid))?;
            let did = c
                .get("debtor_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let d = op
                .tx
                .get(Kind::Debtor, op.org, did)?
                .unwrap_or_else(sample_debtor);
            (c, d)
        }
        (None, Some(d), Some(a)) => (
            json!({
                "id": null, "status": ChargeStatus::Pending, "amount": a,
                "due_date": d.format("%Y-%m-%d").to_string(), "tags": [],
            }),
            sample_debtor(),
        ),
        (None, Some(_), None) => {
            return Err(DomainError::field("amount", "is required with due_date"));
        }
        (None, None, Some(_)) => {
            return Err(DomainError::field("due_date", "is required with amount"));
        }
        (None, None, None) => {
            return Err(DomainError::field(
                "charge_id",
                "give charge_id, or due_date and amount for a hypothetical charge",
            ));
        }
    };
    let due = charge
        .get("due_date")
        .and_then(Value::as_str)
        .and_then(calendar::parse_date)
        .ok_or_else(|| DomainError::field("charge_id", "the charge has no due date"))?;
    let steps = steps_of(op.tx, op.org, id)?;
    let window = r.send_window.window();
    let creditor = crate::ops::deliveries::creditor(op.tx, op.org)?;
    let stop = if charge_id.is_some() {
        crate::ops::deliveries::charge_stop(op.tx, op.org, &charge, op.now)?
    } else {
        None
    };
    let mut schedule = Vec::with_capacity(steps.len());
    for st in &steps {
        let sl = slot(st, &window, due);
        let applies = if !st.active {
            Some("the step is inactive".to_owned())
        } else {
            condition_refusal(st, &charge)
        };
        let rendered = crate::ops::deliveries::render_template(
            &st.template,
            &charge,
            &debtor,
            &creditor,
            op.now,
        );
        schedule.push(json!({
            "step_id": st.id,
            "position": st.position,
            "name": st.name,
            "offset_days": st.offset_days,
            "business_days_only": st.business_days_only,
            "channel": st.channel,
            "action": st.action,
            "planned_date": sl.nominal.format("%Y-%m-%d").to_string(),
            "scheduled_at": sl.at.map(calendar::local_timestamp),
            "moved": sl.moved.is_some(),
            "moved_reason": sl.moved,
            "applies": applies.is_none(),
            "skipped_reason": applies,
            "subject": rendered.subject,
            "body": rendered.body,
        }));
    }
    Ok(ok(json!({
        "ruler_id": r.id,
        "ruler_status": r.status,
        "charge_id": charge_id,
        "due_date": due.format("%Y-%m-%d").to_string(),
        "effective_due_date": calendar::effective_due(due).format("%Y-%m-%d").to_string(),
        "amount": charge.get("amount"),
        "send_window": r.send_window,
        "send_window_text": r.send_window.describe(),
        "stopped": stop.as_ref().map(|s| &s.message),
        "schedule": schedule,
    })))
}
