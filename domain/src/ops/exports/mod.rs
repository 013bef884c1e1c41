//! CSV exports (domain.md §1 export, tools #55–#57), asynchronous.
//!
//! `dunning_exports_create` validates the resource and its filters — the same filters
//! the resource's list tool takes (`dunning_charges_list` for charges, ...), checked by
//! a dry page of that very tool — and queues the export. The worker ([`process`], or
//! [`tick`] for every organization) moves it along
//! `queued → processing → processed → expired` (`processing → failed`): one tick claims
//! queued exports, the next builds their file by paging through the list tool (so the
//! rows are exactly what the list shows, computed fields included), and 24 h after
//! processing the file is dropped. Each export's file is kept in its document (field
//! `csv`, never shown by `_get`) and served by `dunning_exports_download`.
//!
//! The file is CSV in one of two dialects ([`file`]): RFC 4180 by default, or the pt-BR
//! one that Excel in Portuguese opens as columns (`;`, decimal comma, UTF-8 BOM).
//! Charges, deliveries, agreements and bureau records carry the debtor's name and
//! CPF/CNPJ.
//!
//! The webhook tools (#58–#67) are listed after these, from [`crate::ops::webhooks`].

use std::collections::HashMap;

use crate::catalog::{Registry, name};
use crate::status::ExportStatus;

use dunning_core::{File, Output, UnixTime};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

mod demo;
mod file;
mod tools;

pub use demo::seed_demo;
pub use file::Dialect;
pub use tools::tools;

use crate::Domain;
use crate::args::ById;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::{Op, diff, ok};
use crate::store::{self, Cond, Kind, Order, Query, find, must, save};
use crate::tool::ToolSpec;

/// How long a processed file can be downloaded.
pub const DOWNLOAD_TTL_MS: u64 = 24 * 3600 * 1000;
/// Most rows in one export (beyond, the export fails and asks for narrower filters).
pub const MAX_ROWS: u64 = 100_000;
/// Most exports handled per organization, tick and phase.
pub const BATCH: u32 = 10;

/// An export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Export {
    /// UUID.
    pub id: String,
    /// `charges`, `debtors`, `deliveries`, `agreements` or `credit_bureau_records`.
    pub resource: String,
    /// `csv`.
    pub format: String,
    /// The CSV dialect: `rfc4180` or `pt-BR` ([`Dialect`]).
    #[serde(default = "default_dialect")]
    pub dialect: String,
    /// Filters of the resource's list tool.
    pub filters: Map<String, Value>,
    /// `queued`, `processing`, `processed`, `expired` or `failed`.
    pub status: ExportStatus,
    /// Data rows (header excluded), once processed.
    pub row_count: Option<u64>,
    /// How far the file is, 0 to 100: 0 once the worker took it, 100 when processed. The
    /// file is built in one transaction (one consistent snapshot of the rows), so there
    /// is no step between.
    #[serde(default)]
    pub progress: Option<u8>,
    /// Suggested file name.
    pub file_name: Option<String>,
    /// File size in bytes.
    pub file_size: Option<u64>,
    /// SHA-256 of the file.
    pub sha256: Option<String>,
    /// `/v1` path of the file.
    pub download_path: Option<String>,
    /// The file can be downloaded until then.
    pub download_expires_at: Option<String>,
    /// Who asked for it.
    pub requested_by: String,
    /// When the worker took it.
    pub processing_started_at: Option<String>,
    /// When the file was ready.
    pub processed_at: Option<String>,
    /// When it failed.
    pub failed_at: Option<String>,
    /// Why it failed.
    pub error_message: Option<String>,
    /// When the file was dropped.
    pub expired_at: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// The file (kept while processed; never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
}

fn default_dialect() -> String {
    Dialect::NAMES[0].into()
}

impl Export {
    /// What the API shows (without the file).
    pub fn public(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("csv");
        }
        v
    }
}

/// A resource that can be exported.
struct Resource {
    name: &'static str,
    list_tool: &'static str,
    kind: Kind,
    columns: &'static [&'static str],
    with_debtor: bool,
}

const RESOURCES: &[Resource] = &[
    Resource {
        name: "charges",
        list_tool: name::CHARGES_LIST,
        kind: Kind::Charge,
        columns: &[
            "id",
            "external_id",
            "debtor_id",
            "description",
            "amount",
            "due_date",
            "original_due_date",
            "payment_method",
            "status",
            "days_overdue",
            "updated_amount",
            "paid_amount",
            "paid_at",
            "paid_via",
            "fine_percentage",
            "interest_percentage",
            "canceled_at",
            "cancellation_reason",
            "ruler_id",
            "dunning_paused_until",
            "agreement_id",
            "negativation_status",
            "protest_status",
            "boleto.line",
            "boleto.our_number",
            "pix.txid",
            "tags",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "debtors",
        list_tool: name::DEBTORS_LIST,
        kind: Kind::Debtor,
        columns: &[
            "id",
            "external_code",
            "person_type",
            "cnpj_cpf",
            "name",
            "nickname",
            "contact_person",
            "birthday",
            "address.street",
            "address.number",
            "address.complement",
            "address.neighborhood",
            "address.city",
            "address.state",
            "address.zipcode",
            "tags",
            "ruler_id",
            "do_not_contact",
            "credit_restriction_blocked",
            "status",
            "archived_at",
            "open_amount",
            "overdue_amount",
            "overdue_count",
            "oldest_due_date",
            "created_at",
            "updated_at",
        ],
        with_debtor: false,
    },
    Resource {
        name: "deliveries",
        list_tool: name::DELIVERIES_LIST,
        kind: Kind::Delivery,
        columns: &[
            "id",
            "charge_id",
            "debtor_id",
            "contact_point_id",
            "step_id",
            "channel",
            "origin",
            "status",
            "scheduled_at",
            "sent_at",
            "delivered_at",
            "read_at",
            "clicked_at",
            "failed_at",
            "error_code",
            "error_message",
            "provider_message_id",
            "attempt",
            "resent_from_id",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "agreements",
        list_tool: name::AGREEMENTS_LIST,
        kind: Kind::Agreement,
        columns: &[
            "id",
            "debtor_id",
            "charge_ids",
            "status",
            "original_amount",
            "fine_waived",
            "interest_waived",
            "discount_amount",
            "discount_percentage",
            "total_amount",
            "down_payment_amount",
            "installments_count",
            "first_due_date",
            "payment_method",
            "expires_at",
            "accepted_at",
            "accepted_by",
            "break_after_days",
            "broken_at",
            "canceled_at",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "credit_bureau_records",
        list_tool: name::CREDIT_BUREAU_LIST,
        kind: Kind::CreditBureauRecord,
        columns: &[
            "id",
            "charge_id",
            "debtor_id",
            "bureau",
            "status",
            "amount",
            "notice_delivery_id",
            "notice_sent_at",
            "eligible_at",
            "requested_at",
            "included_at",
            "removal_requested_at",
            "removed_at",
            "removal_reason",
            "protocol",
            "error_message",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
];

fn resource(name: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.name == name)
}

/// The list tool `r` pages through, from the registry the operation was lent.
fn list_tool<'r>(registry: &'r Registry, r: &Resource) -> Option<&'r ToolSpec> {
    registry.get(r.list_tool)
}

fn load_export(op: &mut Op<'_>, id: &str) -> Result<Export, DomainError> {
    must(op.tx, Kind::Export, op.org, id)
}

/// Runs a list tool's handler on the same transaction with `args`.
fn run_list(
    op: &mut Op<'_>,
    spec: &ToolSpec,
    args: &Map<String, Value>,
) -> Result<Output, DomainError> {
    let seed: [u8; 32] = Sha256::digest(op.new_id().as_bytes()).into();
    let settings = op.settings.clone();
    let mut sub = Op::new(
        &mut *op.tx,
        op.org,
        op.principal,
        op.now,
        args,
        op.request_id,
        seed,
        settings,
        op.outbound,
        op.registry,
    );
    sub.dry_run = op.dry_run;
    (spec.run)(&mut sub)
}

fn type_ok(schema: &Value, v: &Value) -> bool {
    let ok_type = match schema.get("type").and_then(Value::as_str) {
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("number") => v.is_number(),
        Some("boolean") => v.is_boolean(),
        Some("array") => v.is_array(),
        Some("object") => v.is_object(),
        _ => true,
    };
    let in_enum = schema
        .get("enum")
        .and_then(Value::as_array)
        .is_none_or(|e| e.contains(v));
    ok_type && in_enum
}

/// Prefixes the fields of a validation error with `filters.`.
fn in_filters(e: DomainError) -> DomainError {
    match e {
        DomainError::Validation { details, .. } => {
            let details: Vec<dunning_core::FieldIssue> = details
                .into_iter()
                .map(|mut d| {
                    d.field = format!("filters.{}", d.field);
                    d
                })
                .collect();
            let message = details
                .iter()
                .map(|d| format!("{}: {}", d.field, d.issue))
                .collect::<Vec<_>>()
                .join("; ");
            DomainError::Validation { message, details }
        }
        other => other,
    }
}

/// Checks filters against the list tool (or, while a group's list tool is not built,
/// against the kind's indexed columns).
fn check_filters(
    op: &mut Op<'_>,
    r: &Resource,
    filters: &Map<String, Value>,
) -> Result<(), DomainError> {
    match list_tool(op.registry, r) {
        Some(spec) => {
            if !op.principal.may(&spec.def.access) {
                return Err(DomainError::Forbidden(format!(
                    "exporting {} needs the rights of {}",
                    r.name, r.list_tool
                )));
            }
            let props = spec
                .def
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for (k, v) in filters {
                let field = format!("filters.{k}");
                if matches!(k.as_str(), "page" | "per_page") {
                    return Err(DomainError::field(&field, "exports include every page"));
                }
                let Some(schema) = props.get(k) else {
                    return Err(DomainError::field(
                        &field,
                        format!("unknown filter of {}", r.list_tool),
                    ));
                };
                if !type_ok(schema, v) {
                    return Err(DomainError::field(
                        &field,
                        format!("does not match {}", schema),
                    ));
                }
            }
            let mut args = filters.clone();
            args.insert("per_page".into(), json!(1));
            run_list(op, spec, &args).map_err(in_filters)?;
            Ok(())
        }
        None => {
            for (k, v) in filters {
                let field = format!("filters.{k}");
                let indexed = r
                    .kind
                    .columns()
                    .iter()
                    .any(|c| c.name == k && c.ty == store::ColumnType::Text);
                if !indexed {
                    return Err(DomainError::field(&field, "unknown filter"));
                }
                if !v.is_string() {
                    return Err(DomainError::field(&field, "must be a string"));
                }
            }
            Ok(())
        }
    }
}

/// `dunning_exports_create` (the filters are checked against the resource's list).
#[derive(Debug, Deserialize)]
struct CreateArgs {
    resource: String,
    format: Option<String>,
    dialect: Option<String>,
    filters: Option<Value>,
}

fn create_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: CreateArgs = op.args_strict()?;
    let r = resource(&args.resource).ok_or_else(|| {
        DomainError::field(
            "resource",
            "must be one of charges, debtors, deliveries, agreements, credit_bureau_records",
        )
    })?;
    let format = args.format.as_deref().unwrap_or("csv");
    if format != "csv" {
        return Err(DomainError::field("format", "must be csv"));
    }
    let dialect = args.dialect.as_deref().unwrap_or(Dialect::NAMES[0]);
    if Dialect::parse(dialect).is_none() {
        return Err(DomainError::field(
            "dialect",
            format!("must be one of {}", Dialect::NAMES.join(", ")),
        ));
    }
    let dialect = dialect.to_owned();
    let filters = match args.filters {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(DomainError::field("filters", "must be an object")),
    };
    check_filters(op, r, &filters)?;
    let now = op.timestamp();
    let e = Export {
        id: op.new_id(),
        resource: r.name.to_owned(),
        format: "csv".into(),
        dialect,
        filters,
        status: ExportStatus::Queued,
        row_count: None,
        progress: None,
        file_name: None,
        file_size: None,
        sha256: None,
        download_path: None,
        download_expires_at: None,
        requested_by: op.principal.subject.clone(),
        processing_started_at: None,
        processed_at: None,
        failed_at: None,
        error_message: None,
        expired_at: None,
        created_at: now.clone(),
        updated_at: now,
        csv: None,
    };
    save(op.tx, Kind::Export, op.org, &e)?;
    op.event("export.created", "export", &e.id, &e.public(), Value::Null)?;
    Ok(Output::Json {
        status: 202,
        body: e.public(),
    })
}

fn get_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_export(op, &id)?.public()))
}

fn past(ts: Option<&str>, now: UnixTime) -> bool {
    ts.and_then(calendar::parse_timestamp)
        .is_some_and(|t| t.timestamp_millis() <= i64::try_from(now.as_millis()).unwrap_or(i64::MAX))
}

fn download_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    let e = load_export(op, &id)?;
    let expired = e.status == ExportStatus::Expired
        || (e.status == ExportStatus::Processed && past(e.download_expires_at.as_deref(), op.now));
    if expired {
        return Err(DomainError::Conflict(format!(
            "export {id} is expired: its file was kept 24 hours after processing; create a new export"
        )));
    }
    if e.status != ExportStatus::Processed {
        return Err(DomainError::Conflict(format!(
            "export {id} is {}; the file can be downloaded only when it is processed",
            e.status
        )));
    }
    let csv = e.csv.unwrap_or_default();
    Ok(Output::File(File {
        content_type: "text/csv".into(),
        bytes: csv.into_bytes(),
        download_path: format!("/v1/exports/{id}/download"),
    }))
}

// ---------------------------------------------------------------------------
// The worker
// ---------------------------------------------------------------------------

/// The worker tick on one organization: drops the files of processed exports past
/// their download window (`expired`), builds the files of `processing` exports
/// (`processed` or `failed`), and claims `queued` exports (`processing`, built on the
/// next tick). Returns how many exports changed.
pub fn process(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let mut n = 0;
    let by_status = |st: ExportStatus| Query {
        conds: vec![Cond::Eq("status", json!(st))],
        sort: ("created_at", Order::Asc),
        limit: Some(BATCH),
        offset: 0,
    };
    let processed: Vec<Export> = find(
        op.tx,
        Kind::Export,
        op.org,
        &Query {
            limit: None,
            ..by_status(ExportStatus::Processed)
        },
    )?;
    for mut e in processed {
        if past(e.download_expires_at.as_deref(), op.now) {
            let before = e.public();
            let now = op.timestamp();
            crate::status::change(&mut e.status, &e.id, ExportStatus::Expired)?;
            e.csv = None;
            e.expired_at = Some(now.clone());
            e.updated_at = now;
            save(op.tx, Kind::Export, op.org, &e)?;
            let changes = diff(&before, &e.public());
            op.event("export.expired", "export", &e.id, &e.public(), changes)?;
            n += 1;
        }
    }
    let processing: Vec<Export> = find(
        op.tx,
        Kind::Export,
        op.org,
        &by_status(ExportStatus::Processing),
    )?;
    for e in processing {
        build_one(op, e)?;
        n += 1;
    }
    let queued: Vec<Export> = find(
        op.tx,
        Kind::Export,
        op.org,
        &by_status(ExportStatus::Queued),
    )?;
    for mut e in queued {
        let before = e.public();
        let now = op.timestamp();
        crate::status::change(&mut e.status, &e.id, ExportStatus::Processing)?;
        e.progress = Some(0);
        e.processing_started_at = Some(now.clone());
        e.updated_at = now;
        save(op.tx, Kind::Export, op.org, &e)?;
        let changes = diff(&before, &e.public());
        op.event("export.processing", "export", &e.id, &e.public(), changes)?;
        n += 1;
    }
    Ok(n)
}

/// Most [`tick`]s one [`drain`] runs (each claims or builds at most [`BATCH`] exports
/// per organization).
pub const DRAIN_PASSES: u32 = 20;

/// Runs [`tick`] until nothing changes (at most [`DRAIN_PASSES`] times), so a queued
/// export is claimed and built at once instead of one step per engine tick. Returns the
/// exports that were queued or processing before and are `processed` or `failed` now.
pub fn drain(domain: &Domain, now: UnixTime) -> Result<Vec<Export>, DomainError> {
    let open = |st: Vec<Value>| Query::all().with(Cond::In("status", st));
    let before = store::read(domain.store(), |tx| {
        let mut ids = Vec::new();
        for org in tx.organizations()? {
            let q = open(crate::status::values(&[
                ExportStatus::Queued,
                ExportStatus::Processing,
            ]));
            for e in find::<Export>(tx, Kind::Export, &org, &q)? {
                ids.push((org.clone(), e.id));
            }
        }
        Ok(ids)
    })?;
    for _ in 0..DRAIN_PASSES {
        if tick(domain, now)? == 0 {
            break;
        }
    }
    store::read(domain.store(), |tx| {
        let mut done = Vec::new();
        for (org, id) in &before {
            if let Some(e) = store::load::<Export>(tx, Kind::Export, org, id)? {
                if e.status.is_finished() {
                    done.push(e);
                }
            }
        }
        Ok(done)
    })
}

/// [`process`] for every organization (one transaction each). Returns how many
/// exports changed.
pub fn tick(domain: &Domain, now: UnixTime) -> Result<u32, DomainError> {
    let orgs = store::read(domain.store(), |tx| Ok(tx.organizations()?))?;
    let mut n = 0;
    for org in orgs {
        n += crate::ops::webhooks::with_system_op(domain, &org, now, None, process)?;
    }
    Ok(n)
}

fn build_one(op: &mut Op<'_>, mut e: Export) -> Result<(), DomainError> {
    let before = e.public();
    let now = op.timestamp();
    e.updated_at = now.clone();
    match build(op, &e) {
        Ok((csv, rows)) => {
            let digest = Sha256::digest(csv.as_bytes());
            let day = calendar::local(op.now).format("%Y%m%d-%H%M%S");
            crate::status::change(&mut e.status, &e.id, ExportStatus::Processed)?;
            e.row_count = Some(rows);
            e.progress = Some(100);
            e.file_name = Some(format!("{}-{day}-{}.csv", e.resource, &e.id[..8]));
            e.file_size = Some(csv.len() as u64);
            e.sha256 = Some(digest.iter().map(|b| format!("{b:02x}")).collect());
            e.download_path = Some(format!("/v1/exports/{}/download", e.id));
            e.download_expires_at = Some(calendar::timestamp(op.now.plus_millis(DOWNLOAD_TTL_MS)));
            e.processed_at = Some(now);
            e.csv = Some(csv);
            save(op.tx, Kind::Export, op.org, &e)?;
            let changes = diff(&before, &e.public());
            op.event("export.processed", "export", &e.id, &e.public(), changes)?;
        }
        Err(Failure::Refused(why)) => {
            crate::status::change(&mut e.status, &e.id, ExportStatus::Failed)?;
            e.failed_at = Some(now);
            e.error_message = Some(why);
            save(op.tx, Kind::Export, op.org, &e)?;
            let changes = diff(&before, &e.public());
            op.event("export.failed", "export", &e.id, &e.public(), changes)?;
        }
        Err(Failure::Store(err)) => return Err(err),
    }
    Ok(())
}

enum Failure {
    /// The export cannot be built (filters no longer valid, too many rows): `failed`.
    Refused(String),
    /// The store failed: retried on the next tick.
    Store(DomainError),
}

impl From<store::StoreError> for Failure {
    fn from(e: store::StoreError) -> Self {
        Self::Store(e.into())
    }
}

impl From<DomainError> for Failure {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Store(_) => Self::Store(e),
            other => Self::Refused(in_filters(other).to_string()),
        }
    }
}

/// Every row of the export, from its list tool (or its kind's documents).
fn rows(
    op: &mut Op<'_>,
    r: &Resource,
    filters: &Map<String, Value>,
) -> Result<Vec<Value>, Failure> {
    let mut out = Vec::new();
    match list_tool(op.registry, r) {
        Some(spec) => {
            let mut page = 1u64;
            loop {
                let mut args = filters.clone();
                args.insert("page".into(), json!(page));
                args.insert("per_page".into(), json!(100));
                let Output::Json { body, .. } = run_list(op, spec, &args)? else {
                    return Err(Failure::Refused(format!("{} gave no rows", r.list_tool)));
                };
                let data = body
                    .get("data")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let total = body
                    .pointer("/meta/total")
                    .and_then(Value::as_u64)
                    .unwrap_or_default();
                if total > MAX_ROWS {
                    return Err(Failure::Refused(format!(
                        "{total} rows is more than the {MAX_ROWS} an export may hold; narrow the filters"
                    )));
                }
                let len = data.len();
                out.extend(data);
                if len < 100 || out.len() as u64 >= total {
                    break;
                }
                page += 1;
            }
        }
        None => {
            let mut q = Query::all();
            for (k, v) in filters {
                let col = r
                    .kind
                    .columns()
                    .iter()
                    .find(|c| c.name == k)
                    .map(|c| c.name)
                    .ok_or_else(|| Failure::Refused(format!("filters.{k}: unknown filter")))?;
                let values: Vec<Value> = v
                    .as_str()
                    .unwrap_or_default()
                    .split(',')
                    .map(|x| json!(x.trim()))
                    .collect();
                q = q.with(Cond::In(col, values));
            }
            let total = op.tx.count(r.kind, op.org, &q.conds)?;
            if total > MAX_ROWS {
                return Err(Failure::Refused(format!(
                    "{total} rows is more than the {MAX_ROWS} an export may hold; narrow the filters"
                )));
            }
            out = op.tx.find(r.kind, op.org, &q)?;
        }
    }
    Ok(out)
}

/// The file and its row count.
fn build(op: &mut Op<'_>, e: &Export) -> Result<(String, u64), Failure> {
    let r = resource(&e.resource)
        .ok_or_else(|| Failure::Refused(format!("unknown resource {}", e.resource)))?;
    let data = rows(op, r, &e.filters)?;
    let mut debtors: HashMap<String, Option<(String, String)>> = HashMap::new();
    let mut header: Vec<&str> = r.columns.to_vec();
    if r.with_debtor {
        header.extend(["debtor.name", "debtor.cnpj_cpf"]);
    }
    let dialect = Dialect::parse(&e.dialect).unwrap_or(Dialect::Rfc4180);
    let mut w = file::Writer::new(dialect);
    w.record(&header).map_err(Failure::Refused)?;
    for row in &data {
        let mut record: Vec<String> = r.columns.iter().map(|c| w.cell(row, c)).collect();
        if r.with_debtor {
            let id = row
                .get("debtor_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !debtors.contains_key(id) {
                let d = if id.is_empty() {
                    None
                } else {
                    op.tx.get(Kind::Debtor, op.org, id)?.map(|d| {
                        (
                            d.get("name")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            d.get("cnpj_cpf")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        )
                    })
                };
                debtors.insert(id.to_owned(), d);
            }
            let (name, doc) = debtors.get(id).cloned().flatten().unwrap_or_default();
            record.push(file::safe_text(name));
            record.push(file::safe_text(doc));
        }
        w.record(&record).map_err(Failure::Refused)?;
    }
    let text = w.finish().map_err(Failure::Refused)?;
    Ok((text, data.len() as u64))
}
