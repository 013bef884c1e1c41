//! Webhooks (domain.md §1 webhook and webhook_delivery, tools #58–#67) and the event
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
//! one unit of the organization's outbound budget, spec §12, and is leased for
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

use crate::status::WebhookDeliveryStatus;

use dunning_core::UnixTime;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::brazil::calendar;

mod drivers;
mod filters;
mod handlers;
mod signature;
mod tools;
mod urls;
mod worker;

pub use drivers::*;
pub use filters::*;
pub use signature::*;
pub use tools::*;
pub use urls::*;
pub use worker::*;

/// Retry delays after the 1st, 2nd, ... failed attempt; after the last, `failed`.
pub const RETRY_SCHEDULE_SECS: [u64; 7] = [60, 300, 1800, 7200, 21_600, 43_200, 86_400];
/// How long a claimed delivery belongs to the worker that claimed it.
pub const CLAIM_MS: u64 = 2 * 60 * 1000;
/// Most deliveries attempted per organization and tick.
pub const BATCH: u32 = 100;
/// Most bytes of a receiver's answer kept on the delivery.
pub const RESPONSE_BODY_MAX: usize = 4096;
/// Most webhooks per organization.
pub const MAX_WEBHOOKS: u64 = 20;
/// Longest rotation grace period.
pub const MAX_GRACE_SECONDS: i64 = 86_400;
/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-Kobana-Signature";

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

/// A webhook subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    /// UUID.
    pub id: String,
    /// Where deliveries are POSTed (`https`, or `http` to localhost for development).
    pub url: String,
    /// What it is for.
    pub description: Option<String>,
    /// Event filters: `*`, `group.*` or exact codes.
    pub events: Vec<String>,
    /// Inactive webhooks get no deliveries.
    pub active: bool,
    /// Whether the TLS certificate is verified.
    pub ssl_verification: bool,
    /// The signing secret (never returned after create/rotate).
    pub secret: String,
    /// Last four characters of the secret.
    pub secret_last4: String,
    /// Last rotation.
    pub secret_rotated_at: Option<String>,
    /// The secret before the last rotation, still signing during the grace period.
    pub previous_secret: Option<String>,
    /// End of the grace period.
    pub previous_secret_expires_at: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl Webhook {
    /// What the API shows: everything but the secrets.
    pub fn public(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("secret");
            m.remove("previous_secret");
        }
        v
    }

    /// The secrets that sign at `now`: the current one, then the previous one while its
    /// grace period lasts.
    pub fn signing_secrets(&self, now: UnixTime) -> Vec<&str> {
        let mut out = vec![self.secret.as_str()];
        if let (Some(old), Some(until)) = (&self.previous_secret, &self.previous_secret_expires_at)
        {
            if millis(until).is_some_and(|u| u > now.as_millis()) {
                out.push(old);
            }
        }
        out
    }
}

/// One event to one webhook, with its attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// UUID (`delivery_id`), sent as `X-Kobana-Delivery-Id`.
    pub id: String,
    /// The webhook.
    pub webhook_id: String,
    /// The event delivered.
    pub event_id: String,
    /// Its code.
    pub event_code: String,
    /// `pending`, `delivered` or `failed`.
    pub status: WebhookDeliveryStatus,
    /// Attempts made, in total.
    pub attempts: u32,
    /// Attempts made since the delivery was created or last resent.
    pub round_attempts: u32,
    /// HTTP status of the last attempt.
    pub response_code: Option<u16>,
    /// Start of the last answer (≤ 4 KB).
    pub response_body: Option<String>,
    /// Duration of the last attempt.
    pub duration_ms: Option<u64>,
    /// Why the last attempt failed (network error, non-2xx).
    pub error: Option<String>,
    /// First attempt.
    pub first_try_at: Option<String>,
    /// Last attempt.
    pub last_attempt_at: Option<String>,
    /// When the next attempt is due (pending only).
    pub next_retry_at: Option<String>,
    /// When a 2xx answer came.
    pub delivered_at: Option<String>,
    /// When the retry schedule was exhausted.
    pub failed_at: Option<String>,
    /// When last resent.
    pub resent_at: Option<String>,
    /// The exact body POSTed (what the signature covers).
    pub payload: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl WebhookDelivery {
    /// The list view: without the payload.
    fn summary(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("payload");
        }
        v
    }
}

fn millis(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

fn stamp(now: UnixTime) -> String {
    calendar::timestamp(now)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
