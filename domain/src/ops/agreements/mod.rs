//! Agreements (acordo / renegociação; the `dunning_agreements_*` tools): a debtor's overdue
//! charges folded into a new payment plan.
//!
//! ## Terms (computed by the server, in centavos)
//! For each charge, its updated amount today splits into open principal, fine and
//! interest (payments settle principal first). The discount (`discount_percentage`, at
//! most the organization's `max_discount_percentage`: rules.md, Agreements) applies to the updated
//! total and waives interest first, then fine, then principal (`interest_waived`,
//! `fine_waived`). `total_amount = updated_amount − discount_amount`. An optional
//! `down_payment_amount` (entrada) is due on `first_due_date`; the rest is split into
//! `installments_count` (1–12) monthly installments — from `first_due_date` without a
//! down payment, from a month later with one —, each due date rolled to the next bank
//! business day; the last installment absorbs the rounding.
//!
//! ## Machine (`AgreementStatus` in `status.rs`)
//! `proposed → accepted → active → completed`; `proposed → expired | canceled`;
//! `accepted | active → broken`; `accepted → canceled`.
//! - [`accept`]: generates the installment charges (`pending`, with `agreement_id`),
//!   moves the originals to `renegotiated` (`charge.renegotiated`) and asks the credit
//!   bureau to remove their registrations ([`crate::ops::bureau::settle_for_agreement`]).
//! - cancel: a proposal is just canceled; an accepted agreement's installments are
//!   canceled and the originals return to dunning (`overdue`, or `partially_paid` when
//!   they had payments). An agreement with payments (`active`) cannot be canceled.
//! - [`check_broken`] (worker tick): `proposed` past `expires_at` → `expired`; first
//!   payment → `active`; every installment paid → `completed`; an installment overdue
//!   more than `break_after_days` (default 30) → `broken`: the remaining installments are
//!   canceled and the unpaid balance returns to dunning as a new charge due today.
//!
//! Events: `agreement.{proposed,accepted,completed,broken,canceled,expired}`, plus
//! `agreement.activated` for the first payment (no catalogue code).
//!
//! The agreement term (termo de acordo e confissão de dívida) is a PDF drawn here with
//! `pdf-writer` and the text helpers of [`crate::documents`]; until the agreement is
//! accepted every page carries a "MINUTA" watermark (rules.md, Documents).
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (list, get, create), then the topics:
//! `agreement` (the documents and the state machine), `plan` (the payment plan:
//! simulation and its arguments), `accept` (accept and cancel), `worker`, `term_pdf`
//! (the PDF) and `demo`.

mod accept;
mod agreement;
mod demo;
mod handlers;
mod plan;
mod term_pdf;
mod tools;
mod worker;

pub use agreement::*;
pub use demo::*;
pub use handlers::*;
pub use term_pdf::*;
pub use tools::tools;
pub use worker::*;
