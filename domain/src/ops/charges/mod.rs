//! Charges (`dunning_charges_*`) and the debtor statement (`dunning_debtors_statement`): what a
//! debtor owes, how much it has grown, and what happened to it.
//!
//! ## Money that grows
//! A charge stores what was agreed (`amount`, `fine_percentage`, monthly
//! `interest_percentage`, `discount`); what settles it *today* is computed on every read
//! from the op's clock ([`breakdown`]): until the effective due date (the due date rolled
//! to the next bank business day, `rules.md`, Money and dates) the discount applies while its `until` date
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
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (`list.rs`: the list), then the topics: `charge` (the document,
//! what it owes today, the status moves), [`codes`] (boleto and Pix), `draft`,
//! `statement` (the debtor statement and the settlement letter) and `demo`.

mod charge;
pub mod codes;
mod demo;
mod draft;
mod handlers;
mod list;
mod rows;
mod statement;
mod tools;

pub use charge::*;
pub use codes::{Boleto, Pix};
pub use demo::seed_demo;
pub use handlers::Decision;
pub(crate) use rows::Rows;
pub use tools::{statement_tools, tools};
