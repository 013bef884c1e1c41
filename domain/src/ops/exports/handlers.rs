//! The handlers of the export tools: create (with its filter checks), get and download.

use dunning_core::{Body, File, Output, UnixTime};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::file::Dialect;
use super::{Export, Resource, list_tool, resource};
use crate::args::ById;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::status::ExportStatus;
use crate::store::{self, Kind, must, save};
use crate::tool::ToolSpec;

pub(super) fn load_export(op: &mut Op<'_>, id: &str) -> Result<Export, DomainError> {
    must(op.tx, Kind::Export, op.org, id)
}

/// Runs a list tool's handler on the same transaction with `args`.
pub(super) fn run_list(
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

pub(super) fn type_ok(schema: &Value, v: &Value) -> bool {
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
pub(super) fn in_filters(e: DomainError) -> DomainError {
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
pub(super) fn check_filters(
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
pub(super) struct CreateArgs {
    resource: String,
    format: Option<String>,
    dialect: Option<String>,
    filters: Option<Value>,
}

pub(super) fn create_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
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
        body: Body::Tree(e.public()),
    })
}

pub(super) fn get_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_export(op, &id)?.public()))
}

pub(super) fn past(ts: Option<&str>, now: UnixTime) -> bool {
    ts.and_then(calendar::parse_timestamp)
        .is_some_and(|t| t.timestamp_millis() <= i64::try_from(now.as_millis()).unwrap_or(i64::MAX))
}

pub(super) fn download_export(op: &mut Op<'_>) -> Result<Output, DomainError> {
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
