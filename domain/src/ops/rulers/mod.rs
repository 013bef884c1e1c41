//! Rulers (réguas de cobrança) and their steps (`dunning_rulers_*`, `dunning_ruler_steps_*`).
//!
//! A ruler is a schedule of steps relative to a charge's due date, sent inside the
//! ruler's send window in the organization's time zone (`rules.md`, Collection conduct). This module
//! holds the ruler and step documents, their tools, and the pure schedule arithmetic
//! (offsets in calendar or business days, send window, holidays) that both the preview
//! tool and the engine ([`crate::engine`]) use, so a preview is exactly what the engine
//! will do.
//!
//! Machine (`RulerStatus` in `status.rs`): `draft→active↔paused`, `draft|active|paused→archived`
//! (terminal); the default ruler cannot be archived.
//!
//! Which ruler a charge follows ([`resolve`]): the charge's `ruler_id`, else its
//! debtor's `ruler_id` (an archived one is skipped), else the first active non-default
//! ruler whose `filters` match the charge (segment rulers), else the organization's
//! default ruler when its filters match.
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs`, then the topics: `ruler` (the documents,
//! the send window and their resolution), [`schedule`] (the arithmetic), `args`
//! (argument parsing and validation) and `demo`.

mod args;
mod demo;
mod handlers;
mod ruler;
mod schedule;
mod tools;

pub use demo::seed_demo;
pub use handlers::view;
pub use ruler::*;
pub use schedule::*;
pub use tools::tools;
