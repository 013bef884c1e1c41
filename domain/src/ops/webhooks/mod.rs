//! Webhooks (`dunning_webhooks_*`) and the event
//! fan-out every change goes through.
//!
//! ## Fan-out
//! [`fan_out`] runs inside [`Op::event`], in the transaction of the change: for every
//! active webhook whose `events` filter matches the event code (`*`, a group such as
//! `charge.*`, or an exact code) it writes one `pending` [`WebhookDelivery`] carrying
//! the exact body that will be POSTed. Only the published event catalogue
//! ([`crate::mcp::event_catalog`]) is delivered; internal audit codes
//! (`debtor.created`, `webhook.updated`, ...) stay in the audit trail, and
//! `webhook.ping` goes only to the webhook being tested.
//!
//! ## Delivery (the worker)
//! [`tick`] runs for every organization: **claim** due `pending` deliveries (each takes
//! one unit of the organization's outbound budget, and is leased for
//! [`CLAIM_MS`] so a crashed worker's work is picked up again), **post** them through the
//! [`WebhookDriver`] outside any transaction, **finish** them: a 2xx answer is
//! `delivered`; anything else is retried after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h and
//! 24 h ([`RETRY_SCHEDULE_SECS`]) and then `failed`. A failed delivery goes back to
//! `pending` with `dunning_webhook_deliveries_resend` (a fresh schedule).
//! [`deliver`] does the same three phases on one [`Op`] (tests, tools).
//!
//! ## Signature
//! Every request carries
//! `X-Kobana-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex>]`: the HMAC is
//! computed with the webhook's secret (the whole `whsec_…` string as key) over
//! `"<t>." + raw body`, Stripe-style. During a rotation's grace period the header has
//! two `v1` values, the new secret's first; a receiver accepts the request when any
//! `v1` matches ([`verify`]) and should refuse a `t` too far from its clock.
//! Other headers: `X-Kobana-Event` (code), `X-Kobana-Event-Id`, `X-Kobana-Delivery-Id`
//! (the same on every retry: receivers deduplicate on it; delivery is at least once).
//!
//! The secret must sign, so it is stored (not hashed); it is returned only by
//! `dunning_webhooks_create` and `dunning_webhooks_rotate_secret`, never by a read, and
//! never written to the audit trail.
//!
//! ## Drivers
//! A [`WebhookDriver`] posts one [`WebhookRequest`] and answers a [`WebhookResponse`];
//! it is passed in, never looked up: [`tick`] and [`deliver`] take it as an argument, and
//! `dunning_webhooks_test` posts through the one its [`Domain`] was given
//! ([`Domain::set_webhook_driver`]; by default a [`RecordingDriver`] of its own, which
//! records requests and answers 200: nothing leaves the machine).
//!
//! The driver that posts for real is not here: the domain opens no socket and reads no
//! clock or RNG of its own (`domain/tests/no_sockets.rs` scans `domain/src` for them).
//! The binary's `webhook_http` module (`transports/bin/src/webhook_http/`) is an HTTP
//! client on `ureq`: redirects off, connect and total timeouts from `[webhooks]`, ≤ 4 KB
//! of the answer kept ([`RESPONSE_BODY_MAX`], [`truncate_body`]), names resolved within
//! the connect timeout and only globally routable addresses connected to (unless
//! `allow_private_addresses`), `ssl_verification: false` honoured per request. The
//! binary builds it from `[webhooks]` and hands the same driver to the jobs thread's
//! [`tick`] and to its [`Domain`].
//!
//! ## Files
//! Every group folder has the same shape: `mod.rs` (this map and the re-exports),
//! `tools.rs` (the declarations), `handlers.rs`, then the topics: `webhook` (the
//! documents, the retry schedule, the outbox's enqueueing), `worker` (the outbox),
//! `drivers`, `filters`, `signature`, `urls`.

mod drivers;
mod filters;
mod handlers;
mod signature;
mod tools;
mod urls;
mod webhook;
mod worker;

pub use drivers::*;
pub use filters::*;
pub use signature::*;
pub use tools::*;
pub use urls::*;
pub use webhook::*;
pub use worker::*;
