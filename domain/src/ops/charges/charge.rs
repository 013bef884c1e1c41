//! A charge as stored and what it owes today (the breakdown of discount, fine and
//! interest), its status moves (overdue sweep, renegotiation) and the helpers every
//! charge tool uses.

use chrono::NaiveDate;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::codes;
use super::codes::{Boleto, Pix};
use crate::brazil::money::Money;
use crate::brazil::{calendar, growth};
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::ops::aggregates;
use crate::ops::debtors::Debtor;
use crate::status::{BureauStatus, ChargeStatus, DebtorStatus, ProtestStatus};
use crate::store::{Cond, Kind, Query, find, must, save};

/// Every charge status (`ChargeStatus`).
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

/// A charge. `days_overdue` and `updated_amount` are not stored: see [`view`]. Read by
/// [`ChargeVisitor`] (every field optional, unknown ones kept in `extra`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    /// Status.
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
    /// Fields other modules keep on the document, preserved on every save (those a
    /// view computes are never written: [`COMPUTED`]).
    #[serde(flatten, serialize_with = "without_computed")]
    pub extra: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Charge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ChargeVisitor)
    }
}

/// Reads a charge field by field, straight into its place. `serde`'s derive with a
/// flattened `extra` first buffers every field of the document into an intermediate
/// tree, then reads the known ones out of it: a page parses ten charges, and that
/// buffering was most of its parse (`docs/decisions.md`, "A charge read without a
/// buffer"). A missing field keeps its default (`#[serde(default)]`'s behaviour), a
/// field of the wrong type fails as the derive's does, any other field goes to `extra`.
struct ChargeVisitor;

impl<'de> Visitor<'de> for ChargeVisitor {
    type Value = Charge;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a charge")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Charge, A::Error> {
        let mut c = Charge::default();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key.as_str() {
                "id" => c.id = map.next_value()?,
                "debtor_id" => c.debtor_id = map.next_value()?,
                "external_id" => c.external_id = map.next_value()?,
                "description" => c.description = map.next_value()?,
                "amount" => c.amount = map.next_value()?,
                "due_date" => c.due_date = map.next_value()?,
                "original_due_date" => c.original_due_date = map.next_value()?,
                "payment_method" => c.payment_method = map.next_value()?,
                "status" => c.status = map.next_value()?,
                "paid_amount" => c.paid_amount = map.next_value()?,
                "paid_at" => c.paid_at = map.next_value()?,
                "paid_via" => c.paid_via = map.next_value()?,
                "payments" => c.payments = map.next_value()?,
                "canceled_at" => c.canceled_at = map.next_value()?,
                "cancellation_reason" => c.cancellation_reason = map.next_value()?,
                "fine_percentage" => c.fine_percentage = map.next_value()?,
                "interest_percentage" => c.interest_percentage = map.next_value()?,
                "discount" => c.discount = map.next_value()?,
                "boleto" => c.boleto = map.next_value()?,
                "pix" => c.pix = map.next_value()?,
                "ruler_id" => c.ruler_id = map.next_value()?,
                "dunning_paused" => c.dunning_paused = map.next_value()?,
                "dunning_paused_until" => c.dunning_paused_until = map.next_value()?,
                "pause_reason" => c.pause_reason = map.next_value()?,
                "agreement_id" => c.agreement_id = map.next_value()?,
                "negativation_status" => c.negativation_status = map.next_value()?,
                "protest_status" => c.protest_status = map.next_value()?,
                "written_off_at" => c.written_off_at = map.next_value()?,
                "tags" => c.tags = map.next_value()?,
                "custom_data" => c.custom_data = map.next_value()?,
                "created_at" => c.created_at = map.next_value()?,
                "updated_at" => c.updated_at = map.next_value()?,
                _ => {
                    let value = map.next_value()?;
                    c.extra.insert(key.into_string(), value);
                }
            }
        }
        Ok(c)
    }
}

/// A field's name, borrowed from the document when it holds no escape.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Self::Borrowed(s) => s,
            Self::Owned(s) => s,
        }
    }

    fn into_string(self) -> String {
        match self {
            Self::Borrowed(s) => s.to_owned(),
            Self::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
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

/// What settles `c` on `on`, part by part (always computed by the server; the
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
/// `days_overdue`, `updated_amount` and its `amount_breakdown`, as of `today`, and
/// `dunning_active`; a page's rows add `debtor_name`. Serialized straight from the
/// charge (a list page writes its rows as text: `op::list`); [`view`] is the same as a
/// tree.
#[derive(Debug, Serialize)]
pub struct View<'a> {
    #[serde(flatten)]
    charge: &'a Charge,
    #[serde(serialize_with = "iso_date")]
    effective_due_date: NaiveDate,
    days_overdue: i64,
    updated_amount: Money,
    amount_breakdown: AmountBreakdown,
    dunning_active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    debtor_name: Option<Option<&'a str>>,
}

/// A view's `amount_breakdown` (its fields in this order).
#[derive(Debug, Serialize)]
struct AmountBreakdown {
    #[serde(serialize_with = "iso_date")]
    as_of: NaiveDate,
    principal: Money,
    discount: Money,
    fine: Money,
    interest: Money,
    paid: Money,
}

impl<'a> View<'a> {
    /// `c` as of `today`.
    pub fn of(c: &'a Charge, today: NaiveDate) -> Self {
        let b = breakdown(c, today);
        Self {
            charge: c,
            effective_due_date: effective_due_date(c),
            days_overdue: b.days_late,
            updated_amount: b.total,
            amount_breakdown: AmountBreakdown {
                as_of: today,
                principal: b.principal,
                discount: b.discount,
                fine: b.fine,
                interest: b.interest,
                paid: b.paid,
            },
            dunning_active: is_open(c) && !is_paused(c, today),
            debtor_name: None,
        }
    }

    /// With the debtor's name (`null` when the debtor is gone).
    pub fn named(self, name: Option<&'a str>) -> Self {
        Self {
            debtor_name: Some(name),
            ..self
        }
    }
}

/// `YYYY-MM-DD` (chrono's `Display` of a date of years 0 to 9999), without a string.
fn iso_date<S: serde::Serializer>(d: &NaiveDate, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(d)
}

/// The extra fields of a charge but those a view computes: a stale copy kept on a
/// document would otherwise be written twice in a view, and saved back.
fn without_computed<S: serde::Serializer>(
    extra: &Map<String, Value>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        extra
            .iter()
            .filter(|(k, _)| !COMPUTED.contains(&k.as_str())),
    )
}

/// [`View`] as a tree, for the answers and events that hold one charge.
pub fn view(c: &Charge, today: NaiveDate) -> Value {
    serde_json::to_value(View::of(c, today)).unwrap_or(Value::Null)
}

/// Fields [`View`] adds; never stored (a charge parsed back from a view keeps them among
/// its `extra` fields, which [`without_computed`] leaves out of every serialization).
pub const COMPUTED: &[&str] = &[
    "effective_due_date",
    "days_overdue",
    "updated_amount",
    "amount_breakdown",
    "dunning_active",
    "debtor_name",
];

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
/// `overdue` (`rules.md`, Money and dates), writing `charge.overdue` and refreshing the debtors' aggregates.
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
/// (`ChargeStatus`), writing `charge.renegotiated`. For the agreements module.
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
        // Another organization's ruler is NOT_FOUND, like any foreign id: nothing tells another tenant's ids apart from missing ones.
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
pub(super) fn register(op: &mut Op<'_>, c: &mut Charge) -> Result<(), DomainError> {
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
pub(super) fn validate_amount(amount: Money) -> Result<(), DomainError> {
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
pub(super) fn validate_terms(
    n: &NewCharge,
    debtor: &Debtor,
    today: NaiveDate,
) -> Result<(), DomainError> {
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

pub(super) fn validate_discount(
    d: &Discount,
    amount: Money,
    due: NaiveDate,
) -> Result<(), DomainError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of a stored charge, none at its default, and two fields of other
    /// modules: read from text (names borrowed) and from a tree (names owned), each field
    /// lands in its place (`extra` holds only the others, and the charge is written back
    /// as it was read), a missing field keeps its default, a wrong type fails.
    #[test]
    fn a_charge_is_read_field_by_field() {
        let text = r#"{"id":"c1","debtor_id":"d1","external_id":"FAT-1","description":"Aluguel","amount":800.4,"due_date":"2026-10-23","original_due_date":"2026-10-20","payment_method":"bolepix","status":"overdue","paid_amount":10.5,"paid_at":"2026-10-25","paid_via":"pix","payments":[{"amount":10.5,"paid_at":"2026-10-25","paid_via":"pix","note":"parcial","recorded_by":"ana"}],"canceled_at":"2026-10-26","cancellation_reason":"erro","fine_percentage":2.0,"interest_percentage":1.0,"discount":{"type":"fixed","value":5.0,"until":"2026-10-20"},"boleto":{"line":"0019","barcode":"0019","our_number":"8354","url":"https://b.example/1"},"pix":{"txid":"528f","emv":"0002","qrcode_png_url":"https://p.example/q.png","expires_at":"2026-11-22T23:59:59-03:00"},"ruler_id":"r1","dunning_paused":true,"dunning_paused_until":"2026-11-01","pause_reason":"acordo","agreement_id":"a1","negativation_status":"included","protest_status":"intimated","written_off_at":"2026-11-02","tags":["vip"],"custom_data":{"k":1},"created_at":"2026-10-15T16:01:53-03:00","updated_at":"2026-12-04T16:01:53-03:00","bureau_note":"kept","prot\u0065st_note":{"n":2}}"#;
        let from_text: Charge = serde_json::from_str(text).unwrap();
        let tree: Value = serde_json::from_str(text).unwrap();
        let from_tree: Charge = serde_json::from_value(tree.clone()).unwrap();
        assert_eq!(from_text, from_tree);
        let mut extra: Vec<&str> = from_text.extra.keys().map(String::as_str).collect();
        extra.sort_unstable();
        assert_eq!(
            extra,
            ["bureau_note", "protest_note"],
            "only the unknown fields"
        );
        assert_eq!(
            serde_json::to_string(&from_text).unwrap(),
            text.replace("prot\\u0065st", "protest"),
            "written back as read"
        );
        // A field added to `Charge` must be added here (and so to the visitor, or it
        // lands in `extra` above).
        let defaults = serde_json::to_value(Charge::default()).unwrap();
        for (field, default) in defaults.as_object().unwrap() {
            let value = tree.get(field);
            assert!(value.is_some(), "{field} missing from this test's charge");
            assert_ne!(value, Some(default), "{field} at its default: not tested");
        }
        let sparse: Charge = serde_json::from_str(r#"{"id":"c2","amount":1.5}"#).unwrap();
        assert_eq!(
            (sparse.id.as_str(), sparse.status, sparse.tags.len()),
            ("c2", ChargeStatus::default(), 0)
        );
        for wrong in [
            r#"{"amount":"ten"}"#,
            r#"{"due_date":null}"#,
            r#"{"status":"lost"}"#,
            r#"["c1"]"#,
        ] {
            assert!(serde_json::from_str::<Charge>(wrong).is_err(), "{wrong}");
        }
    }

    /// A document that kept computed fields among its extra ones (parsed back from a
    /// view): the view writes each once, with today's figures, in the view's order; the
    /// charge saved writes none of them; its other extra fields stay.
    #[test]
    fn a_view_computes_its_fields_and_a_saved_charge_keeps_none() {
        let doc = json!({
            "id": "c1", "debtor_id": "d1", "amount": 100.0, "due_date": "2026-07-01",
            "original_due_date": "2026-07-01", "status": "overdue", "fine_percentage": 2.0,
            "created_at": "2026-06-01T10:00:00-03:00", "updated_at": "2026-06-01T10:00:00-03:00",
            "bureau_note": "kept", "days_overdue": 999, "debtor_name": "stale",
            "amount_breakdown": { "as_of": "2020-01-01" }, "dunning_active": false,
        });
        let c: Charge = serde_json::from_value(doc).unwrap();
        let today = NaiveDate::from_ymd_opt(2026, 7, 11).unwrap();
        let text = serde_json::to_string(&View::of(&c, today).named(Some("Maria"))).unwrap();
        let keys: Vec<&str> = text.split('"').skip(1).step_by(2).collect();
        let tail = [
            "bureau_note",
            "kept",
            "effective_due_date",
            "2026-07-01",
            "days_overdue",
            "updated_amount",
            "amount_breakdown",
            "as_of",
            "2026-07-11",
            "principal",
            "discount",
            "fine",
            "interest",
            "paid",
            "dunning_active",
            "debtor_name",
            "Maria",
        ];
        assert!(keys.ends_with(&tail), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["days_overdue"], 10);
        assert_eq!(v["updated_amount"], 102.0);
        assert_eq!(v, {
            let mut tree = view(&c, today);
            tree["debtor_name"] = json!("Maria");
            tree
        });
        let saved = serde_json::to_value(&c).unwrap();
        for k in COMPUTED {
            assert!(saved.get(k).is_none(), "{k} saved");
        }
        assert_eq!(saved["bureau_note"], "kept");
    }
}
