//! A webhook and its deliveries as stored, the retry schedule, and the outbox that
//! records an event's deliveries.

use dunning_core::UnixTime;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::brazil::calendar;
use crate::status::WebhookDeliveryStatus;

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
    pub(super) fn summary(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("payload");
        }
        v
    }
}

pub(super) fn millis(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

pub(super) fn stamp(now: UnixTime) -> String {
    calendar::timestamp(now)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
