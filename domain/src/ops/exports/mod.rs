//! CSV exports (`dunning_exports_*`), asynchronous.
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
//! The webhook tools are listed after these, from [`crate::ops::webhooks`].
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (create, get, download), then the
//! topics: `export` (the document and the exportable resources), `worker`, [`file`] (the
//! CSV dialects) and `demo`.

mod demo;
mod export;
mod file;
mod handlers;
mod tools;
mod worker;

pub use demo::seed_demo;
pub use export::*;
pub use file::Dialect;
pub use tools::tools;
pub use worker::{DRAIN_PASSES, drain, process, tick};
