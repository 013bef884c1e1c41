//! Protest at a notary (Lei 9.492/1997; domain.md §1, tools #30–#33).
//!
//! ## Machine (domain §1.1)
//! `requested → sent_to_notary → intimated → protested → canceled` (post-protest
//! cancellation, with the creditor's consent letter — carta de anuência);
//! `intimated → paid_at_notary`; `requested | sent_to_notary | intimated → withdrawn`
//! (desistência); `requested → rejected | failed`.
//!
//! [`protest`] checks rule 2: the charge is `overdue`, backed by a protestable title
//! (`title_type`) and proof of the debt (`document_ids`), not inside the consumer's 7-day
//! withdrawal window of a distance sale (CDC art. 49), and without an active negativação
//! unless the organization allows both. [`advance`] (the worker tick) plays the default
//! notary driver, which records and never leaves the machine: `requested →
//! sent_to_notary` (protocol assigned) → `intimated` on the next run; after the debtor's
//! 3 business days to pay at the notary, `intimated → protested`. A charge paid while
//! intimated ends `paid_at_notary`; a charge paid, canceled or renegotiated earlier
//! withdraws the protest.
//!
//! A charge comes from a *distance sale* when it carries the tag `distance_sale` or
//! `custom_data.distance_sale` is `true`; the sale date is `custom_data.sale_date`
//! (`YYYY-MM-DD`), else the day the charge was created.
//!
//! A charge's `protest_status` mirrors its latest protest's status.
//!
//! Events: the catalogue's `protest.{requested,protested,paid_at_notary,canceled,failed}`
//! (`protest.canceled` for a withdrawal too, with `mode`), plus `protest.sent_to_notary`
//! and `protest.intimated` for changes the catalogue has no code for.
//!
//! One file rather than a group folder: the group is small enough that its document,
//! declarations and handlers read best together (one document and its machine, four tools); past about 600 lines it becomes
//! a folder of the usual shape (see [`crate::ops`]).

use crate::brazil::money::Money;
use crate::catalog::name;
use crate::list::{Filter, Listing};
use crate::status::{ChargeStatus, ProtestStatus};
use chrono::{Duration, NaiveDate};
use dunning_core::{Output, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::args::ById;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::{Op, created, diff, ok};
use crate::ops::charges::{self, Charge};
use crate::ops::debtors::Debtor;
use crate::schema as s;
use crate::store::{Cond, Kind, Order, Query, find, load, must, save};
use crate::tool::{ToolSpec, tool};

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

fn protest_output() -> Value {
    s::entity_output(&[
        "id",
        "charge_id",
        "debtor_id",
        "status",
        "title_type",
        "amount",
    ])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::CHARGES_PROTEST, "Protest a charge", "POST", "/v1/charges/{id}/protest")
            .describe("Sends an overdue charge to a notary for protest (Lei 9.492/1997), backed by a protestable title and at least one proof-of-debt document. Refused unless the charge is overdue and undisputed (a dispute tag, custom_data.disputed, or dunning paused for a dispute); inside the consumer's 7-day withdrawal window of a distance sale (CDC art. 49); and while the charge has an active negativação, unless the organization allows both. The notary intimates the debtor, who has 3 business days to pay there.")
            .destructive()
            .access(Scope::Admin, Some("protest.manage"))
            .req("id", s::id("Charge id"))
            .req("title_type", s::one_of("The protestable title backing the charge", TITLE_TYPES))
            .req("document_ids", s::array_max("Proof of the debt: references of the documents (invoice, delivery receipt, contract) sent to the notary, at least one", s::text("document reference", 1, 200), MAX_DOCUMENTS as u32))
            .args::<ProtestArgs>()
            .output(protest_output())
            .confirm(describe_protest)
            .run(protest),
        tool(name::PROTESTS_LIST, "List protests", "GET", "/v1/protests")
            .describe("Lists protests, newest first. Filters: `status` (CSV), `debtor_id`, `charge_id`.")
            .read()
            .access(Scope::Read, Some("protest.view"))
            .arg("status", s::csv_of("Protest status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's protests"))
            .arg("charge_id", s::id("Only this charge's protests"))
            .list(&["created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(protest_output()))
            .run(list_protests),
        tool(name::PROTESTS_GET, "Get a protest", "GET", "/v1/protests/{id}")
            .describe("One protest: title, notary, protocol, costs, intimation, payment deadline at the notary and outcome.")
            .read()
            .access(Scope::Read, Some("protest.view"))
            .req("id", s::id("Protest id"))
            .args::<ById>()
            .output(protest_output())
            .run(get_protest),
        tool(name::PROTESTS_CANCEL, "Withdraw or cancel a protest", "POST", "/v1/protests/{id}/cancel")
            .describe("`mode=withdraw` (desistência) stops a protest not yet protested (requested, sent_to_notary or intimated). `mode=cancel` cancels a title already protested and needs the creditor's consent letter (carta de anuência): pass `consent_letter: true`. Anything else is a CONFLICT naming the status. Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("protest.manage"))
            .req("id", s::id("Protest id"))
            .req("mode", s::one_of("withdraw (before protest) or cancel (after protest)", &["withdraw", "cancel"]))
            .arg("reason", s::text("Why", 1, 500))
            .arg("consent_letter", s::boolean("The creditor's consent letter (carta de anuência) is issued; required by mode=cancel"))
            .args::<CancelArgs>()
            .output(protest_output())
            .confirm(describe_cancel)
            .run(cancel),
    ]
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

fn commit(
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

// ---------------------------------------------------------------------------------
// Protest
// ---------------------------------------------------------------------------------

struct Plan {
    charge: Charge,
    debtor: Debtor,
    title_type: String,
    document_ids: Vec<String>,
}

/// `dunning_charges_protest` (the documents are checked below, worded for the notary).
#[derive(Debug, Deserialize)]
struct ProtestArgs {
    id: String,
    title_type: String,
    document_ids: Value,
}

/// `dunning_protests_cancel`.
#[derive(Debug, Deserialize)]
struct CancelArgs {
    id: String,
    mode: String,
    reason: Option<String>,
    consent_letter: Option<bool>,
}

fn documents_arg(document_ids: &Value) -> Result<Vec<String>, DomainError> {
    let arr = document_ids.as_array().ok_or_else(|| {
        DomainError::field(
            "document_ids",
            "is required: at least one proof-of-debt document",
        )
    })?;
    if arr.is_empty() {
        return Err(DomainError::field(
            "document_ids",
            "must list at least one proof-of-debt document (Lei 9.492/1997)",
        ));
    }
    if arr.len() > MAX_DOCUMENTS {
        return Err(DomainError::field(
            "document_ids",
            format!("at most {MAX_DOCUMENTS} documents"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(arr.len());
    for v in arr {
        let d = v
            .as_str()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| DomainError::field("document_ids", "must be non-empty strings"))?;
        if !out.iter().any(|x| x == d) {
            out.push(d.to_owned());
        }
    }
    Ok(out)
}

fn plan(op: &mut Op<'_>) -> Result<Plan, DomainError> {
    let args: ProtestArgs = op.args_strict()?;
    let (id, title_type) = (args.id.as_str(), args.title_type.as_str());
    if !TITLE_TYPES.contains(&title_type) {
        return Err(DomainError::field(
            "title_type",
            format!(
                "must be a protestable title: one of {}",
                TITLE_TYPES.join(", ")
            ),
        ));
    }
    let document_ids = documents_arg(&args.document_ids)?;
    let charge = charges::load_charge(op, id)?;
    if charge.status != ChargeStatus::Overdue {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only overdue charges can be protested",
            charge.status
        )));
    }
    if crate::ops::bureau::is_disputed(&charge) {
        return Err(DomainError::Conflict(format!(
            "charge_disputed: charge {id} is disputed by the debtor; a disputed debt cannot be protested"
        )));
    }
    if let Some(sale) = distance_sale(&charge) {
        let last = sale + Duration::days(WITHDRAWAL_DAYS);
        if op.today() <= last {
            return Err(DomainError::Conflict(format!(
                "withdrawal_window: charge {id} comes from a distance sale on {sale}; the consumer may withdraw until {last} (CDC art. 49), so it cannot be protested before {}",
                last + Duration::days(1)
            )));
        }
    }
    if let Some(p) = active_protest(op, id)? {
        return Err(DomainError::Conflict(format!(
            "already_protested: charge {id} already has protest {} ({})",
            p.id, p.status
        )));
    }
    if !op.settings.allow_negativation_with_protest {
        if let Some(r) = crate::ops::bureau::active_record(op, id)? {
            return Err(DomainError::Conflict(format!(
                "negativation_active: charge {id} has credit-bureau record {} ({}); the organization does not allow an active negativação and an active protest on the same charge",
                r.id, r.status
            )));
        }
    }
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &charge.debtor_id)?;
    Ok(Plan {
        charge,
        debtor,
        title_type: title_type.to_owned(),
        document_ids,
    })
}

fn notary_office(d: &Debtor) -> String {
    let city = if d.address.city.trim().is_empty() {
        "São Paulo".to_owned()
    } else {
        d.address.city.clone()
    };
    let state = if d.address.state.trim().is_empty() {
        String::new()
    } else {
        format!("/{}", d.address.state)
    };
    format!("Tabelionato de Protesto de Letras e Títulos de {city}{state}")
}

fn title_name(t: &str) -> &'static str {
    match t {
        "duplicata_mercantil" => "duplicata mercantil",
        "duplicata_servico" => "duplicata de serviço",
        "contrato" => "contrato",
        "nota_promissoria" => "nota promissória",
        "cheque" => "cheque",
        _ => "título",
    }
}

fn describe_protest(op: &mut Op<'_>) -> Result<String, DomainError> {
    let p = plan(op)?;
    let updated = charges::updated_amount(&p.charge, op.today());
    Ok(format!(
        "Protest {} of {} ({} updated) owed by {} ({}) as a {} at the {}, with {} proof document(s)? The debtor will be intimated by the notary.",
        charges::label(&p.charge),
        p.charge.amount,
        updated,
        p.debtor.name,
        crate::documents::format_document(&p.debtor.cnpj_cpf),
        title_name(&p.title_type),
        notary_office(&p.debtor),
        p.document_ids.len(),
    ))
}

fn protest(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let plan = plan(op)?;
    let now = op.timestamp();
    let mut p = Protest {
        id: op.new_id(),
        charge_id: plan.charge.id.clone(),
        debtor_id: plan.debtor.id.clone(),
        status: ProtestStatus::Requested,
        title_type: plan.title_type,
        document_ids: plan.document_ids,
        amount: charges::updated_amount(&plan.charge, op.today()),
        notary_office: notary_office(&plan.debtor),
        requested_at: Some(now.clone()),
        requested_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now,
        ..Protest::default()
    };
    commit(op, "protest.requested", None, &mut p)?;
    Ok(created(p))
}

// ---------------------------------------------------------------------------------
// List, get, cancel
// ---------------------------------------------------------------------------------

/// `dunning_protests_list`.
const LISTING: Listing = Listing {
    kind: Kind::Protest,
    filters: &[
        Filter::In("status", "status"),
        Filter::Eq("debtor_id", "debtor_id"),
        Filter::Eq("charge_id", "charge_id"),
    ],
    sorts: &[("created_at", "created_at", Order::Desc)],
};

fn list_protests(op: &mut Op<'_>) -> Result<Output, DomainError> {
    LISTING.run(op)
}

fn get_protest(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_protest(op, &id)?))
}

/// What a cancel call will do: `Some(target status)`, `None` when already done.
fn cancel_effect(args: &CancelArgs, p: &Protest) -> Result<Option<ProtestStatus>, DomainError> {
    match args.mode.as_str() {
        "withdraw" => {
            if p.status == ProtestStatus::Withdrawn {
                Ok(None)
            } else if p.status.is_withdrawable() {
                Ok(Some(ProtestStatus::Withdrawn))
            } else {
                Err(DomainError::Conflict(format!(
                    "invalid_transition: protest {} is {} and cannot become withdrawn; only {} protests can be withdrawn{}",
                    p.id,
                    p.status,
                    crate::status::joined(WITHDRAWABLE),
                    if p.status == ProtestStatus::Protested {
                        " (a protested title is canceled with mode=cancel and a consent letter)"
                    } else {
                        ""
                    }
                )))
            }
        }
        "cancel" => {
            if p.status == ProtestStatus::Canceled {
                return Ok(None);
            }
            if p.status != ProtestStatus::Protested {
                return Err(DomainError::Conflict(format!(
                    "invalid_transition: protest {} is {} and cannot become canceled; only a protested title can be canceled{}",
                    p.id,
                    p.status,
                    if p.status.is_withdrawable() {
                        " (before protest, use mode=withdraw)"
                    } else {
                        ""
                    }
                )));
            }
            if args.consent_letter != Some(true) {
                return Err(DomainError::field(
                    "consent_letter",
                    "must be true: cancelling a protested title needs the creditor's consent letter (carta de anuência, Lei 9.492/1997 art. 26)",
                ));
            }
            Ok(Some(ProtestStatus::Canceled))
        }
        other => Err(DomainError::field(
            "mode",
            format!("must be withdraw or cancel, not {other}"),
        )),
    }
}

fn describe_cancel(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: CancelArgs = op.args()?;
    let id = args.id.as_str();
    let p = load_protest(op, id)?;
    let effect = cancel_effect(&args, &p)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &p.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let amount = p.amount.to_string();
    Ok(match effect {
        Some(ProtestStatus::Withdrawn) => format!(
            "Withdraw the protest of charge {} ({amount}) against {name} at the {} (currently {})?",
            p.charge_id, p.notary_office, p.status
        ),
        Some(_) => format!(
            "Cancel the protested title of charge {} ({amount}) against {name} at the {}, with the creditor's consent letter?",
            p.charge_id, p.notary_office
        ),
        None => format!(
            "Protest {id} against {name} is already {}; nothing will change. Continue?",
            p.status
        ),
    })
}

fn cancel(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: CancelArgs = op.args_strict()?;
    let mut p = load_protest(op, &args.id)?;
    let Some(to) = cancel_effect(&args, &p)? else {
        return Ok(ok(p));
    };
    let before = p.clone();
    let reason = args.reason;
    crate::status::change(&mut p.status, &p.id, to)?;
    p.finished_at = Some(op.timestamp());
    if to == ProtestStatus::Withdrawn {
        p.withdrawal_reason = reason.or_else(|| Some("desistência do credor".into()));
    } else {
        p.cancellation_reason = reason.or_else(|| Some("carta de anuência do credor".into()));
        p.consent_letter = true;
    }
    commit(op, "protest.canceled", Some(&before), &mut p)?;
    Ok(ok(p))
}

// ---------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------

fn notary_protocol(p: &Protest) -> String {
    let digits: String =
        p.id.chars()
            .filter(char::is_ascii_hexdigit)
            .take(10)
            .collect();
    format!("PROT-{}", digits.to_uppercase())
}

/// Moves protests along as the default notary driver answers (see the module docs);
/// called by the worker tick. Returns how many transitions it made.
pub fn advance(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In("status", crate::status::values(WITHDRAWABLE)));
    let protests: Vec<Protest> = find(op.tx, Kind::Protest, op.org, &q)?;
    let today = op.today();
    let mut n = 0;
    for mut p in protests {
        let charge = load::<Charge>(op.tx, Kind::Charge, op.org, &p.charge_id)?;
        // A charge gone counts as canceled.
        let status = charge.as_ref().map_or(ChargeStatus::Canceled, |c| c.status);
        if !status.is_late() {
            let before = p.clone();
            p.finished_at = Some(op.timestamp());
            if status == ChargeStatus::Paid && p.status == ProtestStatus::Intimated {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::PaidAtNotary)?;
                commit(op, "protest.paid_at_notary", Some(&before), &mut p)?;
            } else {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Withdrawn)?;
                p.withdrawal_reason = Some(format!("the charge became {status}"));
                commit(op, "protest.canceled", Some(&before), &mut p)?;
            }
            n += 1;
            continue;
        }
        let before = p.clone();
        match p.status {
            ProtestStatus::Requested => {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::SentToNotary)?;
                p.sent_to_notary_at = Some(op.timestamp());
                p.protocol = Some(notary_protocol(&p));
                commit(op, "protest.sent_to_notary", Some(&before), &mut p)?;
            }
            ProtestStatus::SentToNotary => {
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Intimated)?;
                p.intimated_at = Some(op.timestamp());
                let deadline = calendar::add_business_days(today, NOTARY_PAYMENT_DAYS);
                p.payment_deadline = Some(deadline.format("%Y-%m-%d").to_string());
                commit(op, "protest.intimated", Some(&before), &mut p)?;
            }
            _ => {
                let deadline = p
                    .payment_deadline
                    .as_deref()
                    .and_then(calendar::parse_date)
                    .unwrap_or(today);
                if today <= deadline {
                    continue;
                }
                crate::status::change(&mut p.status, &p.id, ProtestStatus::Protested)?;
                p.protested_at = Some(op.timestamp());
                commit(op, "protest.protested", Some(&before), &mut p)?;
            }
        }
        n += 1;
    }
    Ok(n)
}

/// Demo: protests one charge (the tool's handler).
pub fn seed_demo_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    protest(op)
}
