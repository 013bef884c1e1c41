//! Credit bureau (negativação; `dunning_charges_negativate`, `dunning_credit_bureau_*`): registering an overdue debt
//! with Serasa, SPC, Boa Vista or Quod, and taking it off again.
//!
//! ## Machine (`BureauStatus` in `status.rs`)
//! `pending_notice → notice_sent → awaiting_window → requested → included →
//! removal_requested → removed`; `requested → rejected | failed`;
//! `pending_notice | notice_sent | awaiting_window → canceled`.
//!
//! - [`negativate`] checks the rules of `rules.md`, Negativação (charge `overdue` and undisputed, debtor not
//!   `credit_restriction_blocked`, debt at most 5 years old — CDC art. 43 §1 —, no active
//!   protest unless the organization allows both, a valid address for the notice), creates
//!   the record and sends the prior written notice (CDC art. 43 §2) at once: a delivery on
//!   the debtor's e-mail, else a postal contact point, else the debtor's postal address,
//!   recorded `sent` by the default driver (nothing leaves the machine). The record is then
//!   `notice_sent`, with `eligible_at = notice_sent_at + notice_days` (at least the
//!   organization's `negativation_notice_days`, default 10 calendar days).
//! - [`advance`] (the worker tick) moves `notice_sent → awaiting_window` once the notice
//!   went out (a failed or bounced notice cancels the record), `awaiting_window →
//!   requested → included` once `eligible_at` has passed and the rules still hold (the
//!   default bureau driver includes at once), cancels records whose charge was paid,
//!   canceled or renegotiated before inclusion, requests removal (`removal_requested`) of
//!   included records whose charge was paid (STJ Súmula 548), renegotiated or canceled,
//!   and confirms requested removals (`removed`) on the following run.
//! - Accepting an agreement requests the removal of its charges' records at once
//!   ([`settle_for_agreement`]).
//!
//! A charge's `negativation_status` mirrors its latest record's status.
//!
//! Events: the catalogue's `credit_bureau.{notice_sent,requested,included,
//! removal_requested,removed,failed}`, plus `credit_bureau.awaiting_window` and
//! `credit_bureau.canceled` for changes the catalogue has no code for.
//!
//! A charge is *disputed* when it carries the tag `disputed` (or `contestada`),
//! `custom_data.disputed` is `true`, or its dunning is paused with a reason that names a
//! dispute ([`is_disputed`]).
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (list, get and remove records), then the
//! topics: `record` (the document, disputes, how long a debt may be registered),
//! `negativate` (the registration and its checks), `worker` ([`advance`]) and `demo`.

mod demo;
mod handlers;
mod negativate;
mod record;
mod tools;
mod worker;

pub use demo::*;
pub use handlers::*;
pub use record::*;
pub use tools::tools;
pub use worker::*;
