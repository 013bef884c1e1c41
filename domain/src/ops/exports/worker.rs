//! The export worker: claims queued exports, builds their files by paging through the
//! resource's list tool, and drops them once they expire.

use dunning_core::{Output, UnixTime};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

use super::file::Dialect;
use super::handlers::{in_filters, past, run_list};
use super::{BATCH, DOWNLOAD_TTL_MS, Export, MAX_ROWS, Resource, file, list_tool, resource};
use crate::Domain;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::status::ExportStatus;
use crate::store::{self, Cond, Kind, Order, Query, find, save};

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

pub(super) fn build_one(op: &mut Op<'_>, mut e: Export) -> Result<(), DomainError> {
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

pub(super) enum Failure {
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
pub(super) fn rows(
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
                let body = body.into_value();
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
pub(super) fn build(op: &mut Op<'_>, e: &Export) -> Result<(String, u64), Failure> {
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
