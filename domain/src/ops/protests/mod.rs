//! Protest at a notary (Lei 9.492/1997; `dunning_charges_protest`, `dunning_protests_*`).
//!
//! ## Machine (`ProtestStatus` in `status.rs`)
//! `requested → sent_to_notary → intimated → protested → canceled` (post-protest
//! cancellation, with the creditor's consent letter — carta de anuência);
//! `intimated → paid_at_notary`; `requested | sent_to_notary | intimated → withdrawn`
//! (desistência); `requested → rejected | failed`.
//!
//! Protesting (`handlers::protest`) checks the rules of `rules.md`, Protest: the charge is `overdue`, backed by a protestable title
//! (`title_type`) and proof of the debt (`document_ids`), not inside the consumer's 7-day
//! withdrawal window of a distance sale (CDC art. 49), and without an active negativação
//! unless the organization allows both. [`advance`] (the worker tick) plays the default
//! notary driver, which records and never leaves the machine: `requested →
//! sent_to_notary` (protocol assigned) → `intimated` on the next run; after the debtor's
//! 3 business days to pay at the notary, `intimated → protested`. A charge paid while
//! intimated ends `paid_at_notary`; a charge paid, canceled or renegotiated earlier
//! withdraws the protest.
//!
//! A charge comes from a *distance sale* when it carries the tag `distance_sale` or
//! `custom_data.distance_sale` is `true`; the sale date is `custom_data.sale_date`
//! (`YYYY-MM-DD`), else the day the charge was created.
//!
//! A charge's `protest_status` mirrors its latest protest's status.
//!
//! Events: the catalogue's `protest.{requested,protested,paid_at_notary,canceled,failed}`
//! (`protest.canceled` for a withdrawal too, with `mode`), plus `protest.sent_to_notary`
//! and `protest.intimated` for changes the catalogue has no code for.
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (protest, list, get, cancel, with their
//! arguments), then the topics: `protest` (the document, its loading and commit, the
//! distance-sale rule), `worker` ([`advance`]) and `demo`.

mod demo;
mod handlers;
mod protest;
mod tools;
mod worker;

pub use demo::seed_demo_run;
pub use protest::*;
pub use tools::tools;
pub use worker::advance;
