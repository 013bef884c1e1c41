//! Notifications and deliveries (`dunning_notifications_send`, `dunning_deliveries_*`): every message to a
//! debtor, manual or from a ruler step, is a delivery in an outbox that the engine
//! ([`crate::engine`]) hands to the delivery driver.
//!
//! Machine (`DeliveryStatus` in `status.rs`): `scheduled→queued→sent→delivered→read→clicked`;
//! `scheduled|queued→canceled` (charge paid/canceled/paused, opt-out, ...);
//! `queued|sent→failed|bounced`. Resend never mutates: it creates a new delivery with
//! `resent_from_id`.
//!
//! Collection conduct (`rules.md`, Collection conduct), enforced here for manual messages and by the
//! engine again right before anything is handed to the driver: no message to a
//! `do_not_contact` debtor, to an opted-out or invalid contact point, WhatsApp only to
//! `opted_in` contact points and only with templates, never outside the send window, and
//! every message carries the creditor's name and CNPJ (CDC art. 42-A). Charges that are
//! paid, canceled, renegotiated or written off, paused, or in an accepted/active
//! agreement get nothing (`rules.md`, Collection conduct).
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs` (the list), then the topics: `delivery`
//! (the document and its moves), `conduct` (the collection conduct checks), `send`
//! (notify, bulk notify, resend), `outbox`, `status` (provider callbacks), `templates`,
//! `unsubscribe` and `demo`.

mod conduct;
mod delivery;
mod demo;
mod handlers;
mod outbox;
mod send;
mod status;
mod templates;
mod tools;
mod unsubscribe;

pub use conduct::*;
pub use delivery::*;
pub use demo::*;
pub use outbox::*;
pub use send::*;
pub use status::*;
pub use templates::*;
pub use tools::*;
pub use unsubscribe::*;
