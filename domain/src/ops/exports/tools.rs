//! The export tools: schemas and declarations; the webhook tools follow them in the catalogue.

use dunning_core::Scope;
use serde_json::Value;

use super::RESOURCES;
use super::file::Dialect;
use super::handlers::{CreateArgs, create_export, download_export, get_export};
use crate::args::ById;
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolSpec, tool};

pub(super) fn export_output() -> Value {
    s::entity_output(&["id", "resource", "format", "status"])
}

/// The tools of this module , followed by the webhook tools.
pub fn tools() -> Vec<ToolSpec> {
    let names: Vec<&str> = RESOURCES.iter().map(|r| r.name).collect();
    vec![
        tool(name::EXPORTS_CREATE, "Export to CSV", "POST", "/v1/exports")
            .describe("Queues a CSV export of charges, debtors, deliveries, agreements or credit_bureau_records. `filters` are the arguments of the matching list tool (e.g. for charges those of dunning_charges_list: status, due_from, due_to, debtor_id, ...); they are validated now, errors naming filters.<field>. The export starts `queued`; poll dunning_exports_get until `processed` (or `failed`), then dunning_exports_download. Files are RFC 4180 CSV (UTF-8, a header row, money as 1234.56, ISO dates) or, with dialect pt-BR, semicolon-separated with decimal commas and a UTF-8 BOM; they can be downloaded for 24 hours.")
            .access(Scope::Write, Some("exports.create"))
            .req("resource", s::one_of("What to export", &names))
            .arg("format", s::one_of("File format (default csv)", &["csv"]))
            .arg("dialect", s::one_of("CSV dialect: rfc4180 (default; comma, decimal point) or pt-BR (semicolon, decimal comma and a UTF-8 BOM: what Excel in Portuguese opens as columns)", &Dialect::NAMES))
            .arg("filters", s::any_object("Filters of the resource's list tool (without page and per_page)"))
            .args::<CreateArgs>()
            .output(export_output())
            .run(create_export),
        tool(name::EXPORTS_GET, "Get an export", "GET", "/v1/exports/{id}")
            .describe("One export: status (queued, processing, processed, failed, expired), row_count, file_name, file_size, download_expires_at, error_message.")
            .read()
            .access(Scope::Read, Some("exports.create"))
            .req("id", s::id("Export id"))
            .args::<ById>()
            .output(export_output())
            .run(get_export),
        tool(name::EXPORTS_DOWNLOAD, "Download an export", "GET", "/v1/exports/{id}/download")
            .describe("The CSV file of a processed export (text/csv). The tool answers with the file's descriptor (size and download path); read the resource kobana://dunning/exports/{id}/download for the content. Queued, processing, failed or expired exports are a CONFLICT naming the status.")
            .read()
            .access(Scope::Read, Some("exports.create"))
            .req("id", s::id("Export id"))
            .args::<ById>()
            .run(download_export),
    ]
}
