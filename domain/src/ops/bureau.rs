//! Credit bureau (negativação; domain.md §1, tools #26–#29): registering an overdue debt
//! with Serasa, SPC, Boa Vista or Quod, and taking it off again.
//!
//! ## Machine (domain §1.1)
//! `pending_notice → notice_sent → awaiting_window → requested → included →
//! removal_requested → removed`; `requested → rejected | failed`;
//! `pending_notice | notice_sent | awaiting_window → canceled`.
//!
//! - [`negativate`] checks rule 1 (charge `overdue` and undisputed, debtor not
//!   `credit_restriction_blocked`, debt at most 5 years old — CDC art. 43 §1 —, no active
//!   protest unless the organization allows both, a valid address for the notice), creates
//!   the record and sends the prior written notice (CDC art. 43 §2) at once: a delivery on
//!   the debtor's e-mail, else a postal contact point, else the debtor's postal address,
//!   recorded `sent` by the default driver (nothing leaves the machine). The record is then
//!   `notice_sent`, with `eligible_at = notice_sent_at + notice_days` (at least the
//!   organization's `negativation_notice_days`, default 10 calendar days).
//! - [`advance`] (the worker tick) moves `notice_sent → awaiting_window` once the notice
//!   went out (a failed or bounced notice cancels the record), `awaiting_window →
//!   requested → included` once `eligible_at` has passed and the rules still hold (the
//!   default bureau driver includes at once), cancels records whose charge was paid,
//!   canceled or renegotiated before inclusion, requests removal (`removal_requested`) of
//!   included records whose charge was paid (STJ Súmula 548), renegotiated or canceled,
//!   and confirms requested removals (`removed`) on the following run.
//! - Accepting an agreement requests the removal of its charges' records at once
//!   ([`settle_for_agreement`]).
//!
//! A charge's `negativation_status` mirrors its latest record's status.
//!
//! Events: the catalogue's `credit_bureau.{notice_sent,requested,included,
//! removal_requested,removed,failed}`, plus `credit_bureau.awaiting_window` and
//! `credit_bureau.canceled` for changes the catalogue has no code for.
//!
//! A charge is *disputed* when it carries the tag `disputed` (or `contestada`),
//! `custom_data.disputed` is `true`, or its dunning is paused with a reason that names a
//! dispute ([`is_disputed`]).

use chrono::{Months, NaiveDate};
use dunning_core::{Output, Scope, UnixTime};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::DomainError;
use crate::op::{Op, created, list, ok};
use crate::ops::charges::{self, Charge};
use crate::ops::debtors::{self, Debtor};
use crate::ops::deliveries::{self, Delivery};
use crate::outbound::Budget;
use crate::rules::{calendar, money};
use crate::schema as s;
use crate::spec::{ToolSpec, tool};
use crate::store::{Cond, Kind, Order, Query, find, load, must, save};

/// Bureaus.
pub const BUREAUS: &[&str] = &["serasa", "spc", "boa_vista", "quod"];
/// Every record status.
pub const STATUSES: &[&str] = &[
    "pending_notice",
    "notice_sent",
    "awaiting_window",
    "requested",
    "included",
    "removal_requested",
    "removed",
    "rejected",
    "failed",
    "canceled",
];
/// Statuses of a record that is (or is about to be) on the bureau's files.
pub const ACTIVE: &[&str] = &[
    "pending_notice",
    "notice_sent",
    "awaiting_window",
    "requested",
    "included",
    "removal_requested",
];
/// Statuses a record may still be canceled from (before any request to the bureau).
pub const EARLY: &[&str] = &["pending_notice", "notice_sent", "awaiting_window"];
/// Removal reasons.
pub const REMOVAL_REASONS: &[&str] = &["paid", "agreement", "error", "canceled", "dispute"];
/// Longest notice window a caller may ask for (days).
pub const MAX_NOTICE_DAYS: i64 = 90;

const DAY_MS: u64 = 86_400_000;

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
    pub status: String,
    /// Amount registered (the charge's updated amount when negativated, BRL).
    pub amount: f64,
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

fn record_output() -> Value {
    s::entity_output(&["id", "charge_id", "debtor_id", "bureau", "status", "amount"])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool("dunning_charges_negativate", "Negativate a charge", "POST", "/v1/charges/{id}/negativate")
            .describe("Starts the registration of an overdue charge's debtor with a credit bureau (negativação). Refused unless the charge is overdue and undisputed, the debtor is not credit_restriction_blocked, the debt is at most 5 years old (CDC art. 43 §1), the charge has no active protest (unless the organization allows both) and the debtor has a valid e-mail or postal address. The prior written notice (CDC art. 43 §2) is sent now; the bureau is asked to include the debt only after `eligible_at` (notice + notice_days, at least the organization's setting, default 10 days), if the charge is still unpaid.")
            .destructive()
            .access(Scope::Admin, Some("credit_bureau.manage"))
            .req("id", s::id("Charge id"))
            .req("bureau", s::one_of("Credit bureau", BUREAUS))
            .arg("notice_days", s::integer("Days between the notice and the inclusion (default and minimum: the organization's negativation_notice_days)", 1, MAX_NOTICE_DAYS))
            .output(record_output())
            .confirm(describe_negativate)
            .run(negativate),
        tool("dunning_credit_bureau_list", "List credit-bureau records", "GET", "/v1/credit-bureau-records")
            .describe("Lists negativação records, newest first. Filters: `status` (CSV), `bureau`, `debtor_id`, `charge_id`.")
            .read()
            .access(Scope::Read, Some("credit_bureau.view"))
            .arg("status", s::csv_of("Record status", STATUSES))
            .arg("bureau", s::one_of("Credit bureau", BUREAUS))
            .arg("debtor_id", s::id("Only this debtor's records"))
            .arg("charge_id", s::id("Only this charge's records"))
            .list(&["created_at"])
            .output(s::list_output(record_output()))
            .run(list_records),
        tool("dunning_credit_bureau_get", "Get a credit-bureau record", "GET", "/v1/credit-bureau-records/{id}")
            .describe("One negativação record: notice (delivery, when sent, eligible_at), request, inclusion, removal and the bureau's protocol.")
            .read()
            .access(Scope::Read, Some("credit_bureau.view"))
            .req("id", s::id("Credit-bureau record id"))
            .output(record_output())
            .run(get_record),
        tool("dunning_credit_bureau_remove", "Remove a credit-bureau record", "POST", "/v1/credit-bureau-records/{id}/remove")
            .describe("Takes a debtor off the bureau's files: an included record becomes removal_requested (the bureau confirms with removed); a record still waiting for its notice window is canceled before anything reaches the bureau. A record being requested, rejected or failed cannot be removed (CONFLICT). Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("credit_bureau.manage"))
            .req("id", s::id("Credit-bureau record id"))
            .req("reason", s::one_of("Why", REMOVAL_REASONS))
            .output(record_output())
            .confirm(describe_remove)
            .run(remove),
    ]
}

// ---------------------------------------------------------------------------------
// Helpers shared with protests and agreements
// ---------------------------------------------------------------------------------

/// Whether a charge is disputed, however the dispute was recorded: the tag `disputed`
/// (or `contestada`), `custom_data.disputed = true`, or dunning paused with a reason that
/// names a dispute ([`names_a_dispute`]). A disputed debt is neither negativated nor
/// protested (domain.md §1.2 rules 1 and 2).
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
        .with(Cond::In(
            "status",
            ACTIVE.iter().map(|s| json!(s)).collect(),
        ));
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

fn ms(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

fn due_now(ts: Option<&str>, now: UnixTime) -> bool {
    ts.and_then(ms).is_some_and(|t| t <= now.as_millis())
}

/// Saves a record that changed, mirrors its status on the charge, writes `code`.
fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&BureauRecord>,
    r: &mut BureauRecord,
) -> Result<(), DomainError> {
    r.updated_at = op.timestamp();
    save(op.tx, Kind::CreditBureauRecord, op.org, &*r)?;
    let changes = before.map_or(Value::Null, |b| debtors::diff(b, &*r));
    op.event(code, "credit_bureau_record", &r.id.clone(), &*r, changes)?;
    mirror_on_charge(op, &r.charge_id, &r.status)
}

/// Keeps the charge's `negativation_status` in step (no charge event: the record's
/// event is the change).
fn mirror_on_charge(op: &mut Op<'_>, charge_id: &str, status: &str) -> Result<(), DomainError> {
    if let Some(mut c) = load::<Charge>(op.tx, Kind::Charge, op.org, charge_id)? {
        if c.negativation_status.as_deref() != Some(status) {
            c.negativation_status = Some(status.to_owned());
            c.updated_at = op.timestamp();
            save(op.tx, Kind::Charge, op.org, &c)?;
        }
    }
    Ok(())
}

fn cancel_record(
    op: &mut Op<'_>,
    r: &mut BureauRecord,
    reason: Option<&str>,
    why: &str,
) -> Result<(), DomainError> {
    let before = r.clone();
    r.status = "canceled".into();
    r.canceled_at = Some(op.timestamp());
    r.removal_reason = reason.map(str::to_owned);
    r.error_message = Some(why.to_owned());
    commit(op, "credit_bureau.canceled", Some(&before), r)
}

fn request_removal(op: &mut Op<'_>, r: &mut BureauRecord, reason: &str) -> Result<(), DomainError> {
    let before = r.clone();
    r.status = "removal_requested".into();
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
        match r.status.as_str() {
            "included" => {
                request_removal(op, &mut r, "agreement")?;
                n += 1;
            }
            s if EARLY.contains(&s) => {
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

// ---------------------------------------------------------------------------------
// Negativate
// ---------------------------------------------------------------------------------

/// Where the prior notice goes.
struct NoticeTarget {
    channel: &'static str,
    contact_point_id: Option<String>,
    to: String,
}

/// Everything a negativation needs, checked.
struct Plan {
    charge: Charge,
    debtor: Debtor,
    bureau: String,
    notice_days: u32,
    target: NoticeTarget,
}

fn address_text(d: &Debtor) -> Option<String> {
    let a = &d.address;
    let complete = [&a.street, &a.city, &a.state, &a.zipcode]
        .iter()
        .all(|f| !f.trim().is_empty());
    if !complete {
        return None;
    }
    let number = if a.number.trim().is_empty() {
        "s/n"
    } else {
        a.number.as_str()
    };
    let complement = if a.complement.trim().is_empty() {
        String::new()
    } else {
        format!(", {}", a.complement)
    };
    let neighborhood = if a.neighborhood.trim().is_empty() {
        String::new()
    } else {
        format!(" - {}", a.neighborhood)
    };
    Some(format!(
        "{}, {number}{complement}{neighborhood}, {}/{}, CEP {}",
        a.street, a.city, a.state, a.zipcode
    ))
}

fn notice_target(op: &mut Op<'_>, d: &Debtor) -> Result<NoticeTarget, DomainError> {
    if d.do_not_contact {
        return Err(DomainError::Conflict(format!(
            "do_not_contact: debtor {} ({}) is marked do_not_contact, so the prior written notice (CDC art. 43 §2) that must precede a negativação cannot be sent",
            d.id, d.name
        )));
    }
    for channel in ["email", "postal"] {
        if let Some(cp) = deliveries::pick_contact_point(op.tx, op.org, &d.id, channel)? {
            return Ok(NoticeTarget {
                channel,
                contact_point_id: cp.get("id").and_then(Value::as_str).map(str::to_owned),
                to: cp
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    if let Some(addr) = address_text(d) {
        return Ok(NoticeTarget {
            channel: "postal",
            contact_point_id: None,
            to: addr,
        });
    }
    Err(DomainError::Conflict(format!(
        "no_notice_address: debtor {} ({}) has no valid e-mail or postal contact point and no complete address; the prior written notice (CDC art. 43 §2) cannot be sent, so the debt cannot be negativated",
        d.id, d.name
    )))
}

fn plan(op: &mut Op<'_>) -> Result<Plan, DomainError> {
    op.only(&["id", "bureau", "notice_days"])?;
    let id = op.str("id")?;
    let bureau = op.str("bureau")?;
    if !BUREAUS.contains(&bureau) {
        return Err(DomainError::field(
            "bureau",
            format!("must be one of {}", BUREAUS.join(", ")),
        ));
    }
    let min_days = op.settings.negativation_notice_days;
    let notice_days = match op.args.get("notice_days") {
        None | Some(Value::Null) => min_days,
        Some(v) => {
            let n = v
                .as_i64()
                .ok_or_else(|| DomainError::field("notice_days", "must be an integer"))?;
            if n < i64::from(min_days) || n > MAX_NOTICE_DAYS {
                return Err(DomainError::field(
                    "notice_days",
                    format!(
                        "must be between the organization's negativation_notice_days ({min_days}) and {MAX_NOTICE_DAYS}"
                    ),
                ));
            }
            u32::try_from(n).unwrap_or(min_days)
        }
    };
    let charge = charges::load_charge(op, id)?;
    if charge.status != "overdue" {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only overdue charges can be negativated",
            charge.status
        )));
    }
    if is_disputed(&charge) {
        return Err(DomainError::Conflict(format!(
            "charge_disputed: charge {id} is disputed by the debtor; a disputed debt cannot be negativated"
        )));
    }
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &charge.debtor_id)?;
    if debtor.credit_restriction_blocked {
        return Err(DomainError::Conflict(format!(
            "credit_restriction_blocked: debtor {} ({}) is credit_restriction_blocked; no credit-bureau registration is allowed",
            debtor.id, debtor.name
        )));
    }
    let until = registrable_until(&charge);
    if op.today() > until {
        return Err(DomainError::Conflict(format!(
            "debt_too_old: charge {id} was due on {}; debts older than 5 years cannot be registered with a credit bureau (CDC art. 43 §1; limit was {until})",
            if charge.original_due_date.is_empty() {
                &charge.due_date
            } else {
                &charge.original_due_date
            }
        )));
    }
    if let Some(r) = active_record(op, id)? {
        return Err(DomainError::Conflict(format!(
            "already_negativated: charge {id} already has credit-bureau record {} with {} ({})",
            r.id, r.bureau, r.status
        )));
    }
    if !op.settings.allow_negativation_with_protest {
        if let Some(p) = crate::ops::protests::active_protest(op, id)? {
            return Err(DomainError::Conflict(format!(
                "protest_active: charge {id} has protest {} ({}); the organization does not allow an active negativação and an active protest on the same charge",
                p.id, p.status
            )));
        }
    }
    let target = notice_target(op, &debtor)?;
    Ok(Plan {
        charge,
        debtor,
        bureau: bureau.to_owned(),
        notice_days,
        target,
    })
}

fn eligible_from(now: UnixTime, days: u32) -> String {
    calendar::timestamp(now.plus_millis(u64::from(days) * DAY_MS))
}

fn describe_negativate(op: &mut Op<'_>) -> Result<String, DomainError> {
    let p = plan(op)?;
    let updated = charges::updated_amount(&p.charge, op.today());
    let how = match p.target.channel {
        "email" => format!("by e-mail to {}", p.target.to),
        _ => format!("by letter to {}", p.target.to),
    };
    let eligible = eligible_from(op.now, p.notice_days);
    Ok(format!(
        "Negativate {} ({} {}) with {} for {} of {} ({} updated)? The prior notice (CDC art. 43 §2) is sent now {how}; the debt is registered from {} on if still unpaid.",
        p.debtor.name,
        if p.debtor.person_type == "natural" {
            "CPF"
        } else {
            "CNPJ"
        },
        crate::documents::format_document(&p.debtor.cnpj_cpf),
        bureau_name(&p.bureau),
        charges::label(&p.charge),
        charges::brl_text(p.charge.amount),
        charges::brl_text(updated),
        &eligible[..10],
    ))
}

fn negativate(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let p = plan(op)?;
    op.outbound
        .take(op.org, Budget::Messages, 1, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })?;
    let now = op.timestamp();
    let today = op.today();
    let mut r = BureauRecord {
        id: op.new_id(),
        charge_id: p.charge.id.clone(),
        debtor_id: p.debtor.id.clone(),
        bureau: p.bureau.clone(),
        status: "pending_notice".into(),
        amount: charges::updated_amount(&p.charge, today),
        notice_days: p.notice_days,
        requested_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now.clone(),
        ..BureauRecord::default()
    };
    save(op.tx, Kind::CreditBureauRecord, op.org, &r)?;
    let delivery = send_notice(op, &p)?;
    let before = r.clone();
    r.status = "notice_sent".into();
    r.notice_delivery_id = Some(delivery.id.clone());
    r.notice_channel = Some(delivery.channel.clone());
    r.notice_to = delivery.to.clone();
    r.notice_sent_at = delivery.sent_at.clone();
    r.eligible_at = Some(eligible_from(op.now, p.notice_days));
    commit(op, "credit_bureau.notice_sent", Some(&before), &mut r)?;
    Ok(created(r))
}

/// Records the prior notice as a delivery the default driver sent.
fn send_notice(op: &mut Op<'_>, p: &Plan) -> Result<Delivery, DomainError> {
    let creditor = deliveries::creditor(op.tx, op.org)?;
    let mut template = deliveries::find_template(op.tx, op.org, "negativation_notice")?
        .ok_or_else(|| crate::store::StoreError("negativation_notice template missing".into()))?;
    // The notice names the bureau and the date from which the debt may be registered
    // (the end of the notice window, as `eligible_at` will say).
    let eligible = calendar::today(op.now.plus_millis(u64::from(p.notice_days) * DAY_MS));
    template.body = template
        .body
        .replace("{{negativation.bureau}}", bureau_name(&p.bureau))
        .replace(
            "{{negativation.eligible_date}}",
            &eligible.format("%d/%m/%Y").to_string(),
        );
    let charge_json = serde_json::to_value(&p.charge).unwrap_or(Value::Null);
    let debtor_json = serde_json::to_value(&p.debtor).unwrap_or(Value::Null);
    let rendered =
        deliveries::render_template(&template, &charge_json, &debtor_json, &creditor, op.now);
    let now = op.timestamp();
    let id = op.new_id();
    let d = Delivery {
        provider_message_id: Some(format!("rec-notice-{}", &id[..8])),
        id,
        charge_id: p.charge.id.clone(),
        debtor_id: p.debtor.id.clone(),
        contact_point_id: p.target.contact_point_id.clone(),
        channel: p.target.channel.into(),
        action: "notify".into(),
        origin: "api".into(),
        status: "sent".into(),
        to: Some(p.target.to.clone()),
        template_id: Some("negativation_notice".into()),
        subject: rendered.subject,
        body: Some(rendered.body),
        scheduled_at: now.clone(),
        queued_at: Some(now.clone()),
        sent_at: Some(now.clone()),
        attempt: 1,
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    };
    save(op.tx, Kind::Delivery, op.org, &d)?;
    op.event("delivery.sent", "delivery", &d.id, &d, Value::Null)?;
    Ok(d)
}

// ---------------------------------------------------------------------------------
// List, get, remove
// ---------------------------------------------------------------------------------

fn list_records(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    if let Some(st) = op.csv("status") {
        conds.push(Cond::In("status", st));
    }
    for k in ["bureau", "debtor_id", "charge_id"] {
        if let Some(v) = op.opt_str(k) {
            conds.push(Cond::Eq(k, json!(v)));
        }
    }
    let page = op.page();
    let total = op.tx.count(Kind::CreditBureauRecord, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(&[("created_at", "created_at", Order::Desc)]),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let items = op.tx.find(Kind::CreditBureauRecord, op.org, &q)?;
    Ok(list(items, page, total))
}

/// Loads a record of the caller's organization or answers `NOT_FOUND`.
pub fn load_record(op: &mut Op<'_>, id: &str) -> Result<BureauRecord, DomainError> {
    must(op.tx, Kind::CreditBureauRecord, op.org, id)
}

fn get_record(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    Ok(ok(load_record(op, id)?))
}

/// What a removal does to a record in its status, or why it cannot.
fn removal_effect(r: &BureauRecord) -> Result<Option<&'static str>, DomainError> {
    match r.status.as_str() {
        "included" => Ok(Some("removal_requested")),
        s if EARLY.contains(&s) => Ok(Some("canceled")),
        "removal_requested" | "removed" | "canceled" => Ok(None),
        other => Err(DomainError::Conflict(format!(
            "invalid_transition: credit bureau record {} is {other}; only included records (removal) or records still awaiting their notice window ({}) can be removed",
            r.id,
            EARLY.join(", ")
        ))),
    }
}

fn reason_arg(op: &Op<'_>) -> Result<String, DomainError> {
    let reason = op.str("reason")?;
    if !REMOVAL_REASONS.contains(&reason) {
        return Err(DomainError::field(
            "reason",
            format!("must be one of {}", REMOVAL_REASONS.join(", ")),
        ));
    }
    Ok(reason.to_owned())
}

fn describe_remove(op: &mut Op<'_>) -> Result<String, DomainError> {
    let id = op.str("id")?;
    let reason = reason_arg(op)?;
    let r = load_record(op, id)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &r.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let amount = money::format_brl(money::cents(r.amount).unwrap_or_default());
    Ok(match removal_effect(&r)? {
        Some("removal_requested") => format!(
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

fn remove(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "reason"])?;
    let id = op.str("id")?;
    let reason = reason_arg(op)?;
    let mut r = load_record(op, id)?;
    match removal_effect(&r)? {
        Some("removal_requested") => request_removal(op, &mut r, &reason)?,
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

// ---------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------

/// The default bureau driver: records the request and answers with a protocol at once
/// (nothing leaves the machine).
fn bureau_protocol(r: &BureauRecord) -> String {
    let code = match r.bureau.as_str() {
        "serasa" => "SER",
        "spc" => "SPC",
        "boa_vista" => "BVS",
        "quod" => "QOD",
        _ => "CB",
    };
    let digits: String =
        r.id.chars()
            .filter(char::is_ascii_hexdigit)
            .take(12)
            .collect();
    format!("{code}-{}", digits.to_uppercase())
}

/// Why a record waiting for inclusion must stop, as `(removal_reason, message)`.
fn stop_reason(
    op: &mut Op<'_>,
    r: &BureauRecord,
    c: Option<&Charge>,
) -> Result<Option<(Option<&'static str>, String)>, DomainError> {
    let Some(c) = c else {
        return Ok(Some((
            Some("error"),
            format!("charge {} no longer exists", r.charge_id),
        )));
    };
    let reason = match c.status.as_str() {
        "overdue" | "partially_paid" => None,
        "paid" => Some(Some("paid")),
        "renegotiated" => Some(Some("agreement")),
        "canceled" => Some(Some("canceled")),
        _ => Some(None),
    };
    if let Some(reason) = reason {
        return Ok(Some((
            reason,
            format!("charge {} became {} before inclusion", c.id, c.status),
        )));
    }
    if is_disputed(c) {
        return Ok(Some((
            Some("dispute"),
            format!("charge {} is disputed by the debtor", c.id),
        )));
    }
    if let Some(d) = load::<Debtor>(op.tx, Kind::Debtor, op.org, &c.debtor_id)? {
        if d.credit_restriction_blocked {
            return Ok(Some((
                None,
                format!("debtor {} became credit_restriction_blocked", d.id),
            )));
        }
    }
    if op.today() > registrable_until(c) {
        return Ok(Some((
            None,
            format!("charge {} is now older than 5 years (CDC art. 43 §1)", c.id),
        )));
    }
    Ok(None)
}

/// Moves credit-bureau records along (see the module docs); called by the worker tick,
/// which should run often (removals are due within 5 business days of payment, STJ
/// Súmula 548). Returns how many transitions it made.
pub fn advance(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let live = [
        "pending_notice",
        "notice_sent",
        "awaiting_window",
        "requested",
        "included",
        "removal_requested",
    ];
    let q = Query::all().with(Cond::In("status", live.iter().map(|s| json!(s)).collect()));
    let records: Vec<BureauRecord> = find(op.tx, Kind::CreditBureauRecord, op.org, &q)?;
    let mut n = 0;
    for mut r in records {
        let charge = load::<Charge>(op.tx, Kind::Charge, op.org, &r.charge_id)?;
        match r.status.as_str() {
            "pending_notice" | "notice_sent" | "awaiting_window" => {
                if let Some((reason, why)) = stop_reason(op, &r, charge.as_ref())? {
                    cancel_record(op, &mut r, reason, &why)?;
                    n += 1;
                    continue;
                }
                if r.status == "pending_notice" {
                    // A notice was never recorded (it is sent by `negativate`): nothing
                    // may happen until one is.
                    continue;
                }
                if r.status == "notice_sent" {
                    let notice = match &r.notice_delivery_id {
                        Some(did) => load::<Delivery>(op.tx, Kind::Delivery, op.org, did)?,
                        None => None,
                    };
                    match notice.as_ref().map(|d| d.status.as_str()) {
                        Some("sent" | "delivered" | "read" | "clicked") => {
                            let before = r.clone();
                            r.status = "awaiting_window".into();
                            commit(op, "credit_bureau.awaiting_window", Some(&before), &mut r)?;
                            n += 1;
                        }
                        Some("failed" | "bounced" | "canceled") | None => {
                            cancel_record(
                                op,
                                &mut r,
                                None,
                                "the prior notice (CDC art. 43 §2) could not be delivered; negativate again once the debtor has a valid address",
                            )?;
                            n += 1;
                            continue;
                        }
                        Some(_) => continue,
                    }
                }
                if r.status == "awaiting_window" && due_now(r.eligible_at.as_deref(), op.now) {
                    n += include(op, &mut r)?;
                }
            }
            "requested" => n += include(op, &mut r)?,
            "included" => {
                let reason = match charge.as_ref().map(|c| c.status.as_str()) {
                    Some("paid") => Some("paid"),
                    Some("renegotiated") => Some("agreement"),
                    Some("canceled") | None => Some("canceled"),
                    _ => None,
                };
                if let Some(reason) = reason {
                    request_removal(op, &mut r, reason)?;
                    n += 1;
                }
            }
            "removal_requested" => {
                let before = r.clone();
                r.status = "removed".into();
                r.removed_at = Some(op.timestamp());
                commit(op, "credit_bureau.removed", Some(&before), &mut r)?;
                n += 1;
            }
            _ => {}
        }
    }
    Ok(n)
}

/// `awaiting_window → requested → included` (the default driver answers at once).
fn include(op: &mut Op<'_>, r: &mut BureauRecord) -> Result<u32, DomainError> {
    let mut n = 0;
    if r.status == "awaiting_window" {
        let before = r.clone();
        r.status = "requested".into();
        r.requested_at = Some(op.timestamp());
        commit(op, "credit_bureau.requested", Some(&before), r)?;
        n += 1;
    }
    if r.notice_sent_at.is_none() || r.notice_delivery_id.is_none() {
        let before = r.clone();
        r.status = "rejected".into();
        r.error_message = Some("no prior notice on record (CDC art. 43 §2)".into());
        commit(op, "credit_bureau.failed", Some(&before), r)?;
        return Ok(n + 1);
    }
    let before = r.clone();
    r.status = "included".into();
    r.included_at = Some(op.timestamp());
    r.protocol = Some(bureau_protocol(r));
    commit(op, "credit_bureau.included", Some(&before), r)?;
    Ok(n + 1)
}

// ---------------------------------------------------------------------------------
// Demo
// ---------------------------------------------------------------------------------

/// Demo: negativates one overdue charge of a debtor with an e-mail (the record waits for
/// its notice window), for [`crate::ops::agreements::seed_demo`].
pub fn seed_demo_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    negativate(op)
}
