//! Charges (domain.md §1, tools #13–#21, #23–#25) and the debtor statement (#8): what a
//! debtor owes, how much it has grown, and what happened to it.
//!
//! ## Money that grows
//! A charge stores what was agreed (`amount`, `fine_percentage`, monthly
//! `interest_percentage`, `discount`); what settles it *today* is computed on every read
//! from the op's clock ([`breakdown`]): until the effective due date (the due date rolled
//! to the next bank business day, rule 5) the discount applies while its `until` date
//! has not passed; after it, the fine is charged once and interest pro rata by day
//! (monthly rate / 30) since the effective due date, on the principal still open: a
//! partial payment settles the penalties due first, then reduces the principal, and
//! interest stops growing on what was paid ([`penalties`]). For a consumer the fine is
//! at most 2 % (CDC art. 52 §1) and the interest at most 1 % a month
//! ([`CONSUMER_MAX_MONTHLY_INTEREST`]). Nothing computed is stored, so nothing goes
//! stale.
//!
//! ## Status
//! `pending` on creation (registered: boleto line/barcode and/or Pix txid/BR Code are
//! generated, see [`codes`]), or `draft` until issued ([`draft`]); the clock alone makes it `overdue` ([`sweep_overdue`], the
//! day after the effective due date); payments make it `partially_paid` or `paid`;
//! operators cancel it or decide on it (`written_off`); agreements fold it
//! (`renegotiated`, [`mark_renegotiated`]). Every change writes an event and refreshes
//! the debtor's aggregates.
//!
//! Event codes: the catalogue's `charge.{created,updated,overdue,paid,canceled,
//! renegotiated,written_off}`, plus `charge.partially_paid`, `charge.paused`,
//! `charge.resumed`, `charge.deleted`, `charge.decided` and `charge.issued` for changes the catalogue has
//! no code for.

pub mod codes;
mod demo;
mod draft;
mod handlers;
mod statement;

use crate::brazil::money::Money;
use crate::catalog::name;
use crate::status::{BureauStatus, ChargeStatus, DebtorStatus, ProtestStatus};
use chrono::NaiveDate;
use dunning_core::Scope;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub use codes::{Boleto, Pix};
pub use demo::seed_demo;
pub use handlers::Decision;

use crate::args::{ById, IdReason};
use crate::brazil::{calendar, growth};
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::ops::aggregates;
use crate::ops::debtors::Debtor;
use crate::schema as s;
use crate::store::{Cond, Kind, Query, find, must, save};
use crate::tool::{ToolSpec, tool};

/// Every charge status (domain.md §1.1).
pub const STATUSES: &[&str] = ChargeStatus::NAMES;

/// Statuses in which something is still owed and dunning may run.
pub const OPEN: &[ChargeStatus] = ChargeStatus::OPEN;

/// A discount for paying early.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Discount {
    /// `fixed` (BRL) or `percentage` (of the amount).
    #[serde(rename = "type")]
    pub kind: String,
    /// The BRL amount or the percentage.
    pub value: f64,
    /// Last day the discount applies (`YYYY-MM-DD`, at most the due date).
    pub until: String,
}

/// One payment received.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Payment {
    /// Amount paid (BRL).
    pub amount: Money,
    /// When it was paid.
    pub paid_at: String,
    /// `boleto`, `pix` or `manual`.
    pub paid_via: String,
    /// Free note.
    pub note: Option<String>,
    /// Who recorded it.
    pub recorded_by: String,
}

/// A charge. `days_overdue` and `updated_amount` are not stored: see [`view`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Charge {
    /// UUID.
    pub id: String,
    /// The debtor.
    pub debtor_id: String,
    /// The creditor's own id for this charge (unique in the organization).
    pub external_id: Option<String>,
    /// What is being charged.
    pub description: Option<String>,
    /// Amount (BRL, 2 decimals).
    pub amount: Money,
    /// Due date `YYYY-MM-DD`.
    pub due_date: String,
    /// Due date at creation (re-dating keeps it).
    pub original_due_date: String,
    /// `boleto`, `pix` or `bolepix`.
    pub payment_method: String,
    /// Status (§1.1).
    pub status: ChargeStatus,
    /// Sum of the payments received (BRL).
    pub paid_amount: Money,
    /// When the charge was fully paid.
    pub paid_at: Option<String>,
    /// How the settling payment came: `boleto`, `pix` or `manual`.
    pub paid_via: Option<String>,
    /// Every payment received.
    pub payments: Vec<Payment>,
    /// When canceled.
    pub canceled_at: Option<String>,
    /// Why canceled.
    pub cancellation_reason: Option<String>,
    /// Fine charged once after the effective due date (percent of the amount).
    pub fine_percentage: f64,
    /// Interest per month, charged pro rata by day (percent of the amount).
    pub interest_percentage: f64,
    /// Early-payment discount.
    pub discount: Option<Discount>,
    /// Boleto (methods `boleto`, `bolepix`).
    pub boleto: Option<Boleto>,
    /// Pix with due date (methods `pix`, `bolepix`).
    pub pix: Option<Pix>,
    /// Ruler (régua) for this charge; none: the debtor's or the organization's default.
    pub ruler_id: Option<String>,
    /// Whether dunning is paused (see [`is_paused`]).
    pub dunning_paused: bool,
    /// Last day of the pause; none while paused means until resumed.
    pub dunning_paused_until: Option<String>,
    /// Why dunning is paused.
    pub pause_reason: Option<String>,
    /// The agreement that folded or issued this charge.
    pub agreement_id: Option<String>,
    /// Credit-bureau state (kept by the bureau module).
    pub negativation_status: Option<BureauStatus>,
    /// Protest state (kept by the protest module).
    pub protest_status: Option<ProtestStatus>,
    /// When written off.
    pub written_off_at: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Free-form data.
    pub custom_data: Map<String, Value>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Fields other modules keep on the document, preserved on every save.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How the amount owed on a day is made up, in centavos.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// The charge's amount.
    pub principal: Money,
    /// Early-payment discount in force.
    pub discount: Money,
    /// Late fine (once).
    pub fine: Money,
    /// Late interest, pro rata.
    pub interest: Money,
    /// Already paid.
    pub paid: Money,
    /// What settles the charge that day (never negative; 0 when nothing is owed).
    pub total: Money,
    /// Days after the effective due date (0 when on time or not open).
    pub days_late: i64,
}

/// The due date of a charge.
pub fn due_date(c: &Charge) -> NaiveDate {
    calendar::parse_date(&c.due_date).unwrap_or_default()
}

/// The last day a charge is paid on time (due date rolled to a business day).
pub fn effective_due_date(c: &Charge) -> NaiveDate {
    calendar::effective_due(due_date(c))
}

/// What settles `c` on `on`, part by part (rule 3: always computed by the server; the
/// arithmetic is [`growth`]'s).
pub fn breakdown(c: &Charge, on: NaiveDate) -> Breakdown {
    let principal = c.amount;
    let paid = c.paid_amount;
    let mut b = Breakdown {
        principal,
        paid,
        ..Breakdown::default()
    };
    match c.status {
        ChargeStatus::Draft => {
            b.total = principal;
            return b;
        }
        ChargeStatus::Pending | ChargeStatus::Overdue | ChargeStatus::PartiallyPaid => {}
        _ => return b,
    }
    let eff = effective_due_date(c);
    if on <= eff {
        if let Some(d) = &c.discount {
            let until = calendar::parse_date(&d.until).unwrap_or_else(|| due_date(c));
            if on <= until {
                b.discount = growth::early_discount(principal, &d.kind, d.value);
            }
        }
    } else {
        b.days_late = (on - eff).num_days();
        let payments: Vec<(NaiveDate, Money)> = c
            .payments
            .iter()
            .filter_map(|p| {
                let day = calendar::parse_timestamp(&p.paid_at)
                    .map(|t| t.date_naive())
                    .or_else(|| calendar::parse_date(p.paid_at.get(..10)?))?;
                Some((day, p.amount))
            })
            .collect();
        let rates = growth::Rates {
            fine_percentage: c.fine_percentage,
            monthly_interest_percentage: c.interest_percentage,
        };
        (b.fine, b.interest) = growth::penalties(principal, rates, eff, on, payments);
    }
    b.total = (principal - b.discount + b.fine + b.interest - paid).or_zero();
    b
}

/// What settles `charge` on `today`: nothing when nothing is owed.
pub fn updated_amount(charge: &Charge, today: NaiveDate) -> Money {
    breakdown(charge, today).total
}

/// Days after the effective due date on `today` (0 unless open and late).
pub fn days_overdue(charge: &Charge, today: NaiveDate) -> i64 {
    breakdown(charge, today).days_late
}

/// Whether dunning is paused for `c` on `today` (a pause with `until` ends after it).
pub fn is_paused(c: &Charge, today: NaiveDate) -> bool {
    c.dunning_paused
        && c.dunning_paused_until
            .as_deref()
            .and_then(calendar::parse_date)
            .is_none_or(|until| today <= until)
}

/// Whether something is still owed on `c`.
pub fn is_open(c: &Charge) -> bool {
    c.status.is_open()
}

/// A charge as every read returns it: the stored fields plus `effective_due_date`,
/// `days_overdue`, `updated_amount` and its `amount_breakdown`, as of `today`.
pub fn view(c: &Charge, today: NaiveDate) -> Value {
    let b = breakdown(c, today);
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert(
            "effective_due_date".into(),
            json!(effective_due_date(c).format("%Y-%m-%d").to_string()),
        );
        m.insert("days_overdue".into(), json!(b.days_late));
        m.insert("updated_amount".into(), json!(b.total));
        m.insert(
            "amount_breakdown".into(),
            json!({
                "as_of": today.format("%Y-%m-%d").to_string(),
                "principal": b.principal,
                "discount": b.discount,
                "fine": b.fine,
                "interest": b.interest,
                "paid": b.paid,
            }),
        );
        m.insert(
            "dunning_active".into(),
            json!(is_open(c) && !is_paused(c, today)),
        );
    }
    v
}

/// Fields [`view`] adds; never stored (a charge parsed back from a view and saved would
/// otherwise keep stale figures among its `extra` fields).
pub const COMPUTED: &[&str] = &[
    "effective_due_date",
    "days_overdue",
    "updated_amount",
    "amount_breakdown",
    "dunning_active",
    "debtor_name",
];

fn strip_computed(c: &mut Charge) {
    c.extra.retain(|k, _| !COMPUTED.contains(&k.as_str()));
}

/// Loads a charge of the caller's organization or answers `NOT_FOUND`.
pub fn load_charge(op: &mut Op<'_>, id: &str) -> Result<Charge, DomainError> {
    must(op.tx, Kind::Charge, op.org, id)
}

/// Saves a changed charge (stamping `updated_at`), writes its event and refreshes the
/// debtor's aggregates. `before` is the charge as loaded (for the `changes` diff).
pub fn commit(
    op: &mut Op<'_>,
    code: &str,
    before: Option<&Charge>,
    c: &mut Charge,
) -> Result<(), DomainError> {
    strip_computed(c);
    c.updated_at = op.timestamp();
    save(op.tx, Kind::Charge, op.org, c)?;
    let changes = before.map_or(Value::Null, |b| diff(b, c));
    let data = view(c, op.today());
    op.event(code, "charge", &c.id, &data, changes)?;
    aggregates::apply(op, before, Some(c))
}

/// A short name for a charge in messages: its id, external id and description.
pub fn label(c: &Charge) -> String {
    let mut s = format!("charge {}", c.id);
    if let Some(e) = &c.external_id {
        s.push_str(&format!(" ({e})"));
    }
    if let Some(d) = &c.description {
        s.push_str(&format!(" \"{d}\""));
    }
    s
}

/// Moves every `pending` charge whose effective due date is before today (org time) to
/// `overdue` (rule 5), writing `charge.overdue` and refreshing the debtors' aggregates.
/// Returns how many charges moved. The ruler engine calls it before each run.
pub fn sweep_overdue(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let today = op.today();
    let yesterday = today - chrono::Duration::days(1);
    let q = Query {
        conds: vec![
            Cond::Eq("status", json!(ChargeStatus::Pending)),
            Cond::Le("due_date", json!(yesterday.format("%Y-%m-%d").to_string())),
        ],
        // The (status, due_date) index answers this without a scan.
        sort: ("due_date", crate::store::Order::Asc),
        limit: None,
        offset: 0,
    };
    let candidates: Vec<Charge> = find(op.tx, Kind::Charge, op.org, &q)?;
    let mut moved = 0;
    for mut c in candidates {
        if effective_due_date(&c) >= today {
            continue;
        }
        let before = c.clone();
        strip_computed(&mut c);
        crate::status::change(&mut c.status, &c.id, ChargeStatus::Overdue)?;
        c.updated_at = op.timestamp();
        save(op.tx, Kind::Charge, op.org, &c)?;
        let data = view(&c, today);
        op.event("charge.overdue", "charge", &c.id, &data, diff(&before, &c))?;
        aggregates::apply(op, Some(&before), Some(&c))?;
        moved += 1;
    }
    Ok(moved)
}

/// Folds a charge into an accepted agreement: `overdue|partially_paid → renegotiated`
/// (§1.1), writing `charge.renegotiated`. For the agreements module.
pub fn mark_renegotiated(
    op: &mut Op<'_>,
    id: &str,
    agreement_id: Option<&str>,
) -> Result<Charge, DomainError> {
    let mut c = load_charge(op, id)?;
    crate::status::check(c.status, id, ChargeStatus::Renegotiated)?;
    let before = c.clone();
    crate::status::change(&mut c.status, &c.id, ChargeStatus::Renegotiated)?;
    c.agreement_id = agreement_id.map(str::to_owned);
    commit(op, "charge.renegotiated", Some(&before), &mut c)?;
    Ok(c)
}

/// What a new charge is made of (the create tool's arguments, or an agreement's
/// installment).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewCharge {
    /// The debtor (must exist and be active).
    pub debtor_id: String,
    /// Amount (> 0).
    pub amount: Money,
    /// Due date (not in the past).
    pub due_date: NaiveDate,
    /// `boleto`, `pix` or `bolepix`.
    pub payment_method: String,
    /// Description.
    pub description: Option<String>,
    /// Fine, percent.
    pub fine_percentage: f64,
    /// Monthly interest, percent.
    pub interest_percentage: f64,
    /// Discount.
    pub discount: Option<Discount>,
    /// Ruler.
    pub ruler_id: Option<String>,
    /// External id (unique in the organization).
    pub external_id: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Free-form data.
    pub custom_data: Map<String, Value>,
    /// The agreement issuing it (installments).
    pub agreement_id: Option<String>,
    /// Keep as an unregistered draft (no boleto/Pix yet).
    pub draft: bool,
}

/// Validates and registers a new charge (`pending`, or `draft`), with its payment codes,
/// its `charge.created` event and the debtor's aggregates. The create tool runs it; so
/// can an agreement issuing installments.
pub fn issue(op: &mut Op<'_>, n: NewCharge) -> Result<Charge, DomainError> {
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &n.debtor_id)?;
    if debtor.status != DebtorStatus::Active {
        return Err(DomainError::Conflict(format!(
            "debtor {} is {}; charges can only be created for active debtors",
            debtor.id, debtor.status
        )));
    }
    validate_terms(&n, &debtor, op.today())?;
    if let Some(r) = &n.ruler_id {
        // Another organization's ruler is NOT_FOUND, like any foreign id (§11).
        crate::ops::rulers::load_ruler(op.tx, op.org, r)?;
    }
    if let Some(e) = &n.external_id {
        let q = Query::all().with(Cond::Eq("external_id", json!(e)));
        if op.tx.count(Kind::Charge, op.org, &q.conds)? > 0 {
            return Err(DomainError::Conflict(format!(
                "a charge with external_id {e} already exists"
            )));
        }
    }
    let now = op.timestamp();
    let due = n.due_date.format("%Y-%m-%d").to_string();
    let mut c = Charge {
        id: op.new_id(),
        debtor_id: n.debtor_id,
        external_id: n.external_id,
        description: n.description,
        amount: n.amount,
        due_date: due.clone(),
        original_due_date: due,
        payment_method: n.payment_method,
        status: if n.draft {
            ChargeStatus::Draft
        } else {
            ChargeStatus::Pending
        },
        fine_percentage: n.fine_percentage,
        interest_percentage: n.interest_percentage,
        discount: n.discount,
        ruler_id: n.ruler_id,
        agreement_id: n.agreement_id,
        tags: n.tags,
        custom_data: n.custom_data,
        created_at: now.clone(),
        updated_at: now,
        ..Charge::default()
    };
    if !n.draft {
        register(op, &mut c)?;
    }
    commit(op, "charge.created", None, &mut c)?;
    Ok(c)
}

/// (Re)generates the boleto and/or Pix of a charge for its amount and due date.
fn register(op: &mut Op<'_>, c: &mut Charge) -> Result<(), DomainError> {
    let due = due_date(c);
    let wants_boleto = matches!(c.payment_method.as_str(), "boleto" | "bolepix");
    let wants_pix = matches!(c.payment_method.as_str(), "pix" | "bolepix");
    c.boleto = wants_boleto.then(|| codes::boleto(&c.id, c.amount, due));
    c.pix = if wants_pix {
        let org = crate::store::load::<crate::org::Organization>(
            op.tx,
            Kind::Organization,
            op.org,
            op.org,
        )?;
        let name = org.map(|o| o.name).unwrap_or_default();
        Some(codes::pix(&c.id, due, &name))
    } else {
        None
    };
    Ok(())
}

/// Checks a charge's amount: more than nothing, at most what a boleto carries.
fn validate_amount(amount: Money) -> Result<(), DomainError> {
    if amount <= Money::ZERO {
        return Err(DomainError::field("amount", "must be greater than zero"));
    }
    if amount > growth::MAX_AMOUNT {
        return Err(DomainError::field(
            "amount",
            "must be at most 99999999.99 (a boleto's limit)",
        ));
    }
    Ok(())
}

/// Checks amount, due date, penalties and discount of a new charge.
fn validate_terms(n: &NewCharge, debtor: &Debtor, today: NaiveDate) -> Result<(), DomainError> {
    validate_amount(n.amount)?;
    if !matches!(n.payment_method.as_str(), "boleto" | "pix" | "bolepix") {
        return Err(DomainError::field(
            "payment_method",
            "must be boleto, pix or bolepix",
        ));
    }
    if n.due_date < today {
        return Err(DomainError::field(
            "due_date",
            format!("may not be in the past (today is {today})"),
        ));
    }
    if !(0.0..=100.0).contains(&n.fine_percentage) {
        return Err(DomainError::field(
            "fine_percentage",
            "must be between 0 and 100",
        ));
    }
    if debtor.person_type == "natural" && n.fine_percentage > growth::CONSUMER_MAX_FINE {
        return Err(DomainError::field(
            "fine_percentage",
            "may not exceed 2% for a consumer (natural person): CDC art. 52 §1",
        ));
    }
    if !(0.0..=100.0).contains(&n.interest_percentage) {
        return Err(DomainError::field(
            "interest_percentage",
            "must be a monthly rate between 0 and 100",
        ));
    }
    if debtor.person_type == "natural"
        && n.interest_percentage > growth::CONSUMER_MAX_MONTHLY_INTEREST
    {
        return Err(DomainError::field(
            "interest_percentage",
            "may not exceed 1% a month for a consumer (natural person): 12% a year, Civil Code art. 406 with the Usury Law (Decreto 22.626/1933 art. 1)",
        ));
    }
    if let Some(d) = &n.discount {
        validate_discount(d, n.amount, n.due_date)?;
    }
    Ok(())
}

fn validate_discount(d: &Discount, amount: Money, due: NaiveDate) -> Result<(), DomainError> {
    match d.kind.as_str() {
        "fixed" => {
            let v = Money::from_brl(d.value).ok_or_else(|| {
                DomainError::field("discount.value", "must have at most 2 decimals")
            })?;
            if v <= Money::ZERO || v >= amount {
                return Err(DomainError::field(
                    "discount.value",
                    "must be greater than zero and less than the amount",
                ));
            }
        }
        "percentage" => {
            if !(d.value > 0.0 && d.value < 100.0) {
                return Err(DomainError::field(
                    "discount.value",
                    "must be a percentage greater than 0 and less than 100",
                ));
            }
        }
        _ => {
            return Err(DomainError::field(
                "discount.type",
                "must be fixed or percentage",
            ));
        }
    }
    let until = calendar::parse_date(&d.until)
        .ok_or_else(|| DomainError::field("discount.until", "must be a date YYYY-MM-DD"))?;
    if until > due {
        return Err(DomainError::field(
            "discount.until",
            "may not be after the due date",
        ));
    }
    Ok(())
}

fn charge_output() -> Value {
    s::entity_output(&[
        "id",
        "debtor_id",
        "amount",
        "due_date",
        "status",
        "days_overdue",
        "updated_amount",
    ])
}

fn discount_schema() -> Value {
    s::object(
        "Early-payment discount",
        &[
            (
                "type",
                s::one_of(
                    "fixed (BRL) or percentage (of the amount)",
                    &["fixed", "percentage"],
                ),
            ),
            ("value", s::number("BRL amount or percentage", 0.01, 1e11)),
            (
                "until",
                s::date("Last day the discount applies (default and at most: the due date)"),
            ),
        ],
        &["type", "value"],
    )
}

fn id_arg(b: crate::tool::ToolBuilder) -> crate::tool::ToolBuilder {
    b.req("id", s::id("Charge id"))
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    let manage = |b: crate::tool::ToolBuilder| b.access(Scope::Write, Some("charges.manage"));
    vec![
        tool(name::CHARGES_LIST, "List charges", "GET", "/v1/charges")
            .describe("Lists charges with their server-computed `days_overdue` and `updated_amount` (fine + pro-rata interest, or discount, as of today). Filters combine: `status` (CSV, e.g. `pending,overdue`), `debtor_id`, due and payment date ranges, `payment_method`, amount range, `ruler_id`, `tag`, free-text `q` (description, external id, debtor name or document).")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .arg("status", s::csv_of("Charge status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's charges"))
            .arg("due_from", s::date("Due on or after"))
            .arg("due_to", s::date("Due on or before"))
            .arg("paid_from", s::date("Paid on or after"))
            .arg("paid_to", s::date("Paid on or before"))
            .arg("payment_method", s::one_of("Payment method", &["boleto", "pix", "bolepix"]))
            .arg("min_amount", s::money("Amount at least"))
            .arg("max_amount", s::money("Amount at most"))
            .arg("ruler_id", s::id("Only charges on this ruler"))
            .arg("tag", s::text("Only charges carrying this tag", 1, 50))
            .arg("q", s::text("Search in description, external id, debtor name and CPF/CNPJ", 1, 100))
            .list(&["due_date", "amount", "days_overdue", "created_at"])
            .args::<handlers::ListFilters>()
            .filters(handlers::LISTING.filters)
            .output(s::list_output(charge_output()))
            .run(handlers::list_charges),
        id_arg(tool(name::CHARGES_GET, "Get a charge", "GET", "/v1/charges/{id}"))
            .describe("One charge with its boleto/Pix codes, payments, and the server-computed `days_overdue`, `updated_amount` and `amount_breakdown` as of today.")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .args::<ById>()
            .output(charge_output())
            .run(handlers::get_charge),
        manage(tool(name::CHARGES_CREATE, "Create a charge", "POST", "/v1/charges"))
            .describe("Creates and registers a charge for an active debtor: a boleto (47-digit line, 44-digit barcode), a Pix with due date (txid and BR Code) or both (`bolepix`). The due date may not be in the past; a consumer's (CPF) fine is capped at 2% (CDC art. 52 §1); interest is monthly, charged pro rata by day after the due date rolled to the next business day. `draft: true` keeps it unregistered.")
            .req("debtor_id", s::id("The debtor who owes it"))
            .req("amount", s::money("Amount"))
            .req("due_date", s::date("Due date, today or later"))
            .req("payment_method", s::one_of("How the debtor pays", &["boleto", "pix", "bolepix"]))
            .arg("description", s::text("What is being charged", 1, 500))
            .arg("fine_percentage", s::number("Late fine, percent of the amount, charged once (at most 2 for a natural person)", 0.0, 100.0))
            .arg("interest_percentage", s::number("Late interest, percent per month, charged pro rata by day on the open principal (at most 1 for a natural person)", 0.0, 100.0))
            .arg("discount", discount_schema())
            .arg("ruler_id", s::id("Ruler (régua) for this charge; default: the debtor's or the organization's"))
            .arg("external_id", s::text("Your own id for this charge (unique)", 1, 100))
            .arg("tags", s::array("Tags", s::text("tag", 1, 50)))
            .arg("custom_data", s::any_object("Free-form data kept with the charge"))
            .arg("draft", s::boolean("Keep as an unregistered draft (no boleto/Pix yet); a draft can be deleted"))
            .args::<handlers::CreateArgs>()
            .output(charge_output())
            .run(handlers::create_charge),
        id_arg(manage(tool(name::CHARGES_UPDATE, "Update a charge", "PATCH", "/v1/charges/{id}")))
            .describe("Changes due date, amount, description, ruler or tags of a pending or overdue charge (CONFLICT otherwise). A new due date may not be in the past; re-dating an overdue charge to a future date makes it pending again. The boleto and Pix codes are regenerated for the new amount and date.")
            .idempotent()
            .arg("due_date", s::date("New due date, today or later"))
            .arg("amount", s::money("New amount"))
            .arg("description", s::text("What is being charged", 1, 500))
            .arg("ruler_id", s::id("Ruler (régua) for this charge"))
            .arg("tags", s::array("Tags (replace the current ones)", s::text("tag", 1, 50)))
            .args::<handlers::UpdateArgs>()
            .output(charge_output())
            .run(handlers::update_charge),
        id_arg(manage(tool(name::CHARGES_ISSUE, "Issue a draft charge", "POST", "/v1/charges/{id}/issue")))
            .describe("Issues a draft charge (draft -> pending): registers it now (boleto and/or Pix, per its payment method), optionally on a new due date (today or later; required when the draft's own has passed), and dunning follows it from then on. The debtor must be active. Issuing a pending charge again changes nothing; other statuses are a CONFLICT.")
            .idempotent()
            .arg("due_date", s::date("New due date, today or later (default: the draft's)"))
            .args::<draft::IssueArgs>()
            .output(charge_output())
            .run(draft::issue_draft),
        id_arg(manage(tool(name::CHARGES_DELETE, "Delete a draft charge", "DELETE", "/v1/charges/{id}")))
            .describe("Deletes a draft charge. Registered charges cannot be deleted, only canceled (CONFLICT).")
            .destructive()
            .idempotent()
            .args::<ById>()
            .confirm(handlers::describe_delete)
            .run(handlers::delete_charge),
        id_arg(manage(tool(name::CHARGES_CANCEL, "Cancel a charge", "POST", "/v1/charges/{id}/cancel")))
            .describe("Cancels a pending, overdue or partially paid charge: its boleto/Pix stop being payable and every ruler step stops. Paid, renegotiated or written-off charges cannot be canceled (CONFLICT).")
            .destructive()
            .idempotent()
            .arg("reason", s::text("Why the charge is canceled", 1, 500))
            .args::<IdReason>()
            .output(charge_output())
            .confirm(handlers::describe_cancel)
            .run(handlers::cancel_charge),
        id_arg(manage(tool(name::CHARGES_MARK_PAID, "Mark a charge as paid", "POST", "/v1/charges/{id}/mark-paid")))
            .describe("Records a payment received outside the bank/Pix flow (or confirms one). Without `paid_amount` the charge is paid in full at its updated amount on `paid_at`; a smaller amount leaves it `partially_paid`. Stops dunning when fully paid.")
            .destructive()
            .idempotent()
            .arg("paid_at", s::datetime("When it was paid (default now; a date means that day; not in the future)"))
            .arg("paid_amount", s::money("Amount received (default: the whole updated amount)"))
            .arg("paid_via", s::one_of("How it was paid (default manual)", &["boleto", "pix", "manual"]))
            .arg("note", s::text("Note kept with the payment", 1, 500))
            .args::<handlers::PaidArgs>()
            .output(charge_output())
            .confirm(handlers::describe_mark_paid)
            .run(handlers::mark_paid),
        id_arg(manage(tool(name::CHARGES_PAUSE, "Pause dunning of a charge", "POST", "/v1/charges/{id}/pause")))
            .describe("Pauses the ruler's messages and actions for an open charge, until a date (inclusive) or until resumed. Interest keeps accruing.")
            .idempotent()
            .arg("until", s::date("Last day of the pause (default: until resumed)"))
            .arg("reason", s::text("Why dunning is paused", 1, 500))
            .args::<handlers::PauseArgs>()
            .output(charge_output())
            .run(handlers::pause_charge),
        id_arg(manage(tool(name::CHARGES_RESUME, "Resume dunning of a charge", "POST", "/v1/charges/{id}/resume")))
            .describe("Resumes the ruler for a paused charge.")
            .idempotent()
            .args::<ById>()
            .output(charge_output())
            .run(handlers::resume_charge),
        id_arg(tool(name::CHARGES_TIMELINE, "Timeline of a charge", "GET", "/v1/charges/{id}/events"))
            .describe("The audit events of a charge, oldest first: creation, changes, overdue, payments, pauses, decisions, cancellation.")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .arg("code", s::text("Only these event codes, comma-separated (e.g. charge.paid,charge.overdue)", 1, 500))
            .list(&["occurred_at"])
            .args::<handlers::TimelineArgs>()
            .output(s::list_output(s::entity_output(&["id", "code", "occurred_at"])))
            .run(handlers::timeline),
        id_arg(tool(name::CHARGES_SETTLEMENT_LETTER, "Settlement letter of a charge", "GET", "/v1/charges/{id}/settlement-pdf"))
            .describe("The settlement letter (carta de quitação, Código Civil arts. 319–320) of a fully paid charge, or of a renegotiated charge whose agreement was completed, as a PDF; NOT_SETTLED otherwise. Always the same document for the same charge. Returns the file's descriptor, not its bytes.")
            .read()
            .access(Scope::Read, Some("documents.view"))
            .args::<ById>()
            .output(s::entity_output(&["content_type", "byte_size", "download_path"]))
            .run(statement::settlement_letter),
        id_arg(tool(name::CHARGES_DECIDE, "Decide on a debt", "POST", "/v1/charges/{id}/decision"))
            .describe("Records an operator's audited decision on a charge: continue, negotiate, negativate, protest, write_off, send_to_legal or suspend. `write_off` moves an overdue charge to written_off; `suspend` and `send_to_legal` pause dunning; `negativate` and `protest` need an overdue charge and are carried out by their own tools.")
            .destructive()
            .access(Scope::Write, Some("charges.decide"))
            .req("decision", s::one_of("The decision", handlers::DECISIONS))
            .req("reason", s::text("Why (kept in the audit trail)", 3, 1000))
            .args::<handlers::DecideArgs>()
            .output(s::entity_output(&["decision", "charge"]))
            .confirm(handlers::describe_decide)
            .run(handlers::decide),
    ]
}

/// The debtor statement tool (#8): [`crate::catalog::Registry::new`] lists it right after the debtor
/// tools, in catalogue order.
pub fn statement_tools() -> Vec<ToolSpec> {
    vec![
        tool(name::DEBTORS_STATEMENT, "Debtor statement", "GET", "/v1/debtors/{id}/statement")
            .describe("A debtor's statement (extrato) as of a date: open, paid and renegotiated charges with their updated amounts on that date, and the totals computed by the server over every charge (never re-sum them). The charges come a page at a time (`page`, `per_page`, at most 100; `meta` says how many there are). `format=pdf` returns the PDF's descriptor instead.")
            .read()
            .access(Scope::Read, Some("debtors.view"))
            .req("id", s::id("Debtor id"))
            .arg("as_of", s::date("Date of the updated amounts (default today)"))
            .arg("format", s::one_of("json (default) or pdf", &["json", "pdf"]))
            .arg("page", s::integer("Page of charges (json), from 1; the totals always cover every charge", 1, 1_000_000))
            .arg("per_page", s::integer("Charges per page (json), 1 to 100 (default 100)", 1, 100))
            .args::<statement::StatementArgs>()
            .output(s::any_object("The statement, or the PDF's descriptor"))
            .run(statement::debtor_statement),
    ]
}
