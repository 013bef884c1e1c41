//! Debtors (the `dunning_debtors_*` tools): who owes. The statement lives with charges.
//!
//! A debtor's computed fields (`open_amount`, `overdue_amount`, `overdue_count`,
//! `oldest_due_date`) are stored on the document and kept by
//! [`crate::ops::aggregates::apply`] whenever one of its charges changes (by the change's
//! difference, never a recount), so listing and sorting by them is an index scan, not
//! an aggregate per row.
//!
//! One file rather than a group folder: the group is small enough that its document,
//! declarations and handlers read best together (one document, five tools); past about 600 lines it becomes
//! a folder of the usual shape (see [`crate::ops`]).

use crate::brazil::money::Money;
use crate::catalog::name;
use crate::list::{Filter, Listing};
use crate::status::DebtorStatus;
use dunning_core::{Output, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::args::{ById, IdReason, fields};
use crate::brazil::document;
use crate::error::DomainError;
use crate::op::{Op, created, diff, ok};
use crate::schema as s;
use crate::store::{Cond, Kind, Order, Query, find, must, save};
use crate::tool::{ToolSpec, tool};

/// Postal address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Address {
    /// Street.
    pub street: String,
    /// Number.
    pub number: String,
    /// Complement.
    pub complement: String,
    /// Neighborhood (bairro).
    pub neighborhood: String,
    /// City.
    pub city: String,
    /// State (UF, two letters).
    pub state: String,
    /// CEP (8 digits).
    pub zipcode: String,
}

/// A debtor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Debtor {
    /// UUID.
    pub id: String,
    /// The creditor's own code for this debtor.
    pub external_code: Option<String>,
    /// `natural` (CPF) or `juridical` (CNPJ), derived from the document.
    pub person_type: String,
    /// CPF or CNPJ, normalized.
    pub cnpj_cpf: String,
    /// Name.
    pub name: String,
    /// Nickname.
    pub nickname: Option<String>,
    /// Contact person (companies).
    pub contact_person: Option<String>,
    /// Birthday.
    pub birthday: Option<String>,
    /// Address.
    pub address: Address,
    /// Tags.
    pub tags: Vec<String>,
    /// Free-form data.
    pub custom_data: Map<String, Value>,
    /// Ruler applied to this debtor's charges by default.
    pub ruler_id: Option<String>,
    /// Blocks every channel (CDC art. 42, LGPD).
    pub do_not_contact: bool,
    /// Blocks credit-bureau registration.
    pub credit_restriction_blocked: bool,
    /// `active` or `archived`.
    pub status: DebtorStatus,
    /// When archived.
    pub archived_at: Option<String>,
    /// Why archived.
    pub archive_reason: Option<String>,
    /// Sum of open charges (pending, overdue, partially paid), computed.
    pub open_amount: Money,
    /// Sum of overdue charges, computed.
    pub overdue_amount: Money,
    /// Number of overdue charges, computed.
    pub overdue_count: u32,
    /// Oldest due date among open charges, computed.
    pub oldest_due_date: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

const SORTS: &[(&str, &str, Order)] = &[
    ("name", "name", Order::Asc),
    ("created_at", "created_at", Order::Desc),
    ("overdue_amount", "overdue_amount", Order::Desc),
];

/// The writable fields of a debtor, as `dunning_debtors_create` and `_update` read them
/// (a patch: absent keeps, null clears the optional texts).
#[derive(Debug, Deserialize)]
struct DebtorArgs {
    cnpj_cpf: Option<String>,
    name: Option<String>,
    #[serde(default, deserialize_with = "fields::patch")]
    external_code: Option<Option<String>>,
    #[serde(default, deserialize_with = "fields::patch")]
    nickname: Option<Option<String>>,
    #[serde(default, deserialize_with = "fields::patch")]
    contact_person: Option<Option<String>>,
    birthday: Option<String>,
    address: Option<Map<String, Value>>,
    tags: Option<Vec<String>>,
    custom_data: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "fields::patch")]
    ruler_id: Option<Option<String>>,
    do_not_contact: Option<bool>,
    credit_restriction_blocked: Option<bool>,
}

/// What a new debtor cannot do without (the rest is [`DebtorArgs`]).
#[derive(Debug, Deserialize)]
struct NewDebtor {
    cnpj_cpf: String,
    name: String,
}

/// `dunning_debtors_list`'s own filters (the rest are [`LISTING`]'s).
#[derive(Debug, Deserialize)]
struct ListFilters {
    cnpj_cpf: Option<String>,
    has_overdue: Option<bool>,
}

fn address_schema() -> Value {
    s::object(
        "Postal address",
        &[
            ("street", s::string("Street")),
            ("number", s::string("Number")),
            ("complement", s::string("Complement")),
            ("neighborhood", s::string("Neighborhood (bairro)")),
            ("city", s::string("City")),
            ("state", s::text("State (UF), two letters", 2, 2)),
            ("zipcode", s::string("CEP, 8 digits")),
        ],
        &[],
    )
}

fn debtor_fields(b: crate::tool::ToolBuilder, create: bool) -> crate::tool::ToolBuilder {
    let b = if create {
        b.req("cnpj_cpf", s::string("CPF (11 digits) or CNPJ (14 characters), with or without punctuation; check digits are validated"))
            .req("name", s::text("Full name or company name", 1, 200))
    } else {
        b.arg(
            "cnpj_cpf",
            s::string("CPF or CNPJ; check digits are validated"),
        )
        .arg("name", s::text("Full name or company name", 1, 200))
    };
    b.arg(
        "external_code",
        s::text("Your own code for this debtor", 1, 100),
    )
    .arg("nickname", s::text("Nickname", 1, 100))
    .arg(
        "contact_person",
        s::text("Contact person (companies)", 1, 200),
    )
    .arg("birthday", s::date("Birthday"))
    .arg("address", address_schema())
    .arg("tags", s::array("Tags", s::text("tag", 1, 50)))
    .arg(
        "custom_data",
        s::any_object("Free-form data kept with the debtor"),
    )
    .arg(
        "ruler_id",
        s::id("Ruler applied to this debtor's charges by default"),
    )
    .arg(
        "do_not_contact",
        s::boolean("Block every channel for this debtor"),
    )
    .arg(
        "credit_restriction_blocked",
        s::boolean("Block credit-bureau registration for this debtor"),
    )
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::DEBTORS_LIST, "List debtors", "GET", "/v1/debtors")
            .describe("Lists debtors of the organization with their open and overdue totals. Filters: free-text `q` (name, document, code), `status`, `tag`, `cnpj_cpf`, `has_overdue`.")
            .read()
            .access(Scope::Read, Some("debtors.view"))
            .arg("q", s::text("Search in name, CPF/CNPJ and external code", 1, 100))
            .arg("status", s::csv_of("Debtor status", DebtorStatus::NAMES))
            .arg("tag", s::text("Only debtors carrying this tag", 1, 50))
            .arg("cnpj_cpf", s::string("Exact CPF or CNPJ (punctuation ignored)"))
            .arg("has_overdue", s::boolean("Only debtors with (true) or without (false) overdue charges"))
            .list(&["name", "created_at", "overdue_amount"])
            .args::<ListFilters>()
            .filters(LISTING.filters)
            .output(s::list_output(s::entity_output(&["id", "name", "cnpj_cpf", "status"])))
            .run(list_debtors),
        tool(name::DEBTORS_GET, "Get a debtor", "GET", "/v1/debtors/{id}")
            .describe("One debtor with address, flags and computed totals.")
            .read()
            .access(Scope::Read, Some("debtors.view"))
            .req("id", s::id("Debtor id"))
            .args::<ById>()
            .output(s::entity_output(&["id", "name", "cnpj_cpf", "status"]))
            .run(get_debtor),
        debtor_fields(
            tool(name::DEBTORS_CREATE, "Create a debtor", "POST", "/v1/debtors")
                .describe("Registers a debtor. The CPF/CNPJ is validated by its check digits and decides `person_type`; a document already registered in the organization is a CONFLICT.")
                .access(Scope::Write, Some("debtors.manage")),
            true,
        )
        .args::<NewDebtor>()
        .args::<DebtorArgs>()
        .output(s::entity_output(&["id", "name", "cnpj_cpf", "status"]))
        .run(create_debtor),
        debtor_fields(
            tool(name::DEBTORS_UPDATE, "Update a debtor", "PATCH", "/v1/debtors/{id}")
                .describe("Changes the given fields of a debtor; fields not sent are kept.")
                .idempotent()
                .access(Scope::Write, Some("debtors.manage"))
                .req("id", s::id("Debtor id")),
            false,
        )
        .args::<ById>()
        .args::<DebtorArgs>()
        .output(s::entity_output(&["id", "name", "cnpj_cpf", "status"]))
        .run(update_debtor),
        tool(name::DEBTORS_ARCHIVE, "Archive a debtor", "POST", "/v1/debtors/{id}/archive")
            .describe("Archives a debtor: it leaves listings by default and no ruler contacts it. Refused while the debtor has open charges.")
            .destructive()
            .idempotent()
            .access(Scope::Write, Some("debtors.manage"))
            .req("id", s::id("Debtor id"))
            .arg("reason", s::text("Why the debtor is archived", 1, 500))
            .args::<IdReason>()
            .output(s::entity_output(&["id", "status"]))
            .confirm(describe_archive)
            .run(archive_debtor),
    ]
}

/// The create handler (demo seeding drives it directly).
pub fn create_run() -> crate::tool::Run {
    create_debtor
}

/// Loads a debtor of the caller's organization or answers `NOT_FOUND`.
pub fn load_debtor(op: &mut Op<'_>, id: &str) -> Result<Debtor, DomainError> {
    must(op.tx, Kind::Debtor, op.org, id)
}

/// `dunning_debtors_list`.
const LISTING: Listing = Listing {
    kind: Kind::Debtor,
    filters: &[
        Filter::Search("q", &["name", "cnpj_cpf", "external_code"]),
        Filter::In("status", "status"),
        Filter::Tag("tag", "tags"),
    ],
    sorts: SORTS,
};

fn list_debtors(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: ListFilters = op.args()?;
    let mut conds = Vec::new();
    if let Some(d) = args.cnpj_cpf {
        let clean: String = d.chars().filter(char::is_ascii_alphanumeric).collect();
        conds.push(Cond::Eq("cnpj_cpf", json!(clean.to_ascii_uppercase())));
    }
    match args.has_overdue {
        Some(true) => conds.push(Cond::Ge("overdue_amount", json!(0.01))),
        Some(false) => conds.push(Cond::Le("overdue_amount", json!(0))),
        None => {}
    }
    LISTING.run_with(op, conds)
}

fn get_debtor(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_debtor(op, &id)?))
}

fn parse_document(raw: &str) -> Result<document::Document, DomainError> {
    document::parse(raw).map_err(|why| DomainError::field("cnpj_cpf", why))
}

fn check_ruler(op: &mut Op<'_>, args: &DebtorArgs) -> Result<(), DomainError> {
    match &args.ruler_id {
        Some(Some(r)) => crate::ops::rulers::load_ruler(op.tx, op.org, r).map(drop),
        _ => Ok(()),
    }
}

fn ensure_unique_document(
    op: &mut Op<'_>,
    doc: &str,
    except: Option<&str>,
) -> Result<(), DomainError> {
    let q = Query::all().with(Cond::Eq("cnpj_cpf", json!(doc)));
    let same: Vec<Debtor> = find(op.tx, Kind::Debtor, op.org, &q)?;
    if same.iter().any(|d| Some(d.id.as_str()) != except) {
        return Err(DomainError::Conflict(format!(
            "a debtor with document {doc} already exists"
        )));
    }
    Ok(())
}

/// Applies the writable fields present in the arguments to `d`.
fn apply(a: DebtorArgs, d: &mut Debtor) -> Result<(), DomainError> {
    if let Some(raw) = a.cnpj_cpf {
        let doc = parse_document(&raw)?;
        d.person_type = doc.person_type().to_owned();
        d.cnpj_cpf = doc.as_str().to_owned();
    }
    if let Some(n) = a.name {
        d.name = n;
    }
    for (new, slot) in [
        (a.external_code, &mut d.external_code),
        (a.nickname, &mut d.nickname),
        (a.contact_person, &mut d.contact_person),
        (a.ruler_id, &mut d.ruler_id),
    ] {
        if let Some(v) = new {
            *slot = v;
        }
    }
    if let Some(b) = a.birthday {
        crate::brazil::calendar::parse_date(&b)
            .ok_or_else(|| DomainError::field("birthday", "must be a date YYYY-MM-DD"))?;
        d.birthday = Some(b);
    }
    if let Some(new) = a.address {
        let mut merged = serde_json::to_value(&d.address).unwrap_or_default();
        if let Some(m) = merged.as_object_mut() {
            m.extend(new);
        }
        d.address = serde_json::from_value(merged)
            .map_err(|e| DomainError::field("address", e.to_string()))?;
        let zip = &d.address.zipcode;
        let valid_zip = zip.len() == 8 && zip.bytes().all(|b| b.is_ascii_digit());
        if !zip.is_empty() && !valid_zip {
            return Err(DomainError::field("address.zipcode", "must be 8 digits"));
        }
    }
    if let Some(t) = a.tags {
        d.tags = t;
    }
    if let Some(c) = a.custom_data {
        d.custom_data = c;
    }
    if let Some(b) = a.do_not_contact {
        d.do_not_contact = b;
    }
    if let Some(b) = a.credit_restriction_blocked {
        d.credit_restriction_blocked = b;
    }
    Ok(())
}

fn create_debtor(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut args: DebtorArgs = op.args_strict()?;
    let NewDebtor { cnpj_cpf, name } = op.args()?;
    (args.cnpj_cpf, args.name) = (Some(cnpj_cpf), Some(name));
    check_ruler(op, &args)?;
    let now = op.timestamp();
    let mut d = Debtor {
        id: op.new_id(),
        external_code: None,
        person_type: String::new(),
        cnpj_cpf: String::new(),
        name: String::new(),
        nickname: None,
        contact_person: None,
        birthday: None,
        address: Address::default(),
        tags: Vec::new(),
        custom_data: Map::new(),
        ruler_id: None,
        do_not_contact: false,
        credit_restriction_blocked: false,
        status: DebtorStatus::Active,
        archived_at: None,
        archive_reason: None,
        open_amount: Money::ZERO,
        overdue_amount: Money::ZERO,
        overdue_count: 0,
        oldest_due_date: None,
        created_at: now.clone(),
        updated_at: now,
    };
    apply(args, &mut d)?;
    ensure_unique_document(op, &d.cnpj_cpf, None)?;
    save(op.tx, Kind::Debtor, op.org, &d)?;
    op.event("debtor.created", "debtor", &d.id, &d, Value::Null)?;
    Ok(created(d))
}

fn update_debtor(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.refuse_unknown::<DebtorArgs>(&["id"])?;
    let ById { id } = op.args()?;
    let args: DebtorArgs = op.args()?;
    let id = id.as_str();
    let before = load_debtor(op, id)?;
    if before.status == DebtorStatus::Archived {
        return Err(DomainError::transition("debtor", id, "archived", "updated"));
    }
    check_ruler(op, &args)?;
    let mut d = before.clone();
    apply(args, &mut d)?;
    if d.cnpj_cpf != before.cnpj_cpf {
        ensure_unique_document(op, &d.cnpj_cpf, Some(id))?;
    }
    if d == before {
        return Ok(ok(d));
    }
    d.updated_at = op.timestamp();
    save(op.tx, Kind::Debtor, op.org, &d)?;
    let changes = diff(&before, &d);
    op.event("debtor.updated", "debtor", id, &d, changes)?;
    Ok(ok(d))
}

fn describe_archive(op: &mut Op<'_>) -> Result<String, DomainError> {
    let ById { id } = op.args()?;
    let d = load_debtor(op, &id)?;
    Ok(format!(
        "Archive debtor {} ({})? No ruler will contact them again.",
        d.name, d.cnpj_cpf
    ))
}

fn archive_debtor(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let IdReason { id, reason } = op.args_strict()?;
    let id = id.as_str();
    let mut d = load_debtor(op, id)?;
    if d.status == DebtorStatus::Archived {
        return Ok(ok(d));
    }
    if d.open_amount > Money::ZERO {
        return Err(DomainError::Conflict(format!(
            "debtor {id} has open charges of {}; cancel or settle them first",
            d.open_amount
        )));
    }
    let before = d.clone();
    crate::status::change(&mut d.status, &d.id, DebtorStatus::Archived)?;
    d.archived_at = Some(op.timestamp());
    d.archive_reason = reason;
    d.updated_at = op.timestamp();
    save(op.tx, Kind::Debtor, op.org, &d)?;
    op.event("debtor.archived", "debtor", id, &d, diff(&before, &d))?;
    Ok(ok(d))
}
