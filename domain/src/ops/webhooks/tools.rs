//! The webhook tools.

use dunning_core::Scope;
use serde_json::{Value, json};

use super::MAX_GRACE_SECONDS;
use super::handlers::{
    DELIVERIES, DeliveriesArgs, DeliveryRef, HOOKS, HookPatch, NewHook, RotateArgs, TestArgs,
    create_webhook, delete_webhook, describe_delete, describe_resend, describe_rotate,
    describe_test, get_delivery, get_webhook, list_deliveries, list_webhooks, post_test,
    resend_delivery, rotate_secret, test_webhook, update_webhook,
};
use crate::args::ById;
use crate::catalog::name;
use crate::schema as s;
use crate::status::WebhookDeliveryStatus;
use crate::tool::{ToolSpec, tool};

pub(super) const SIGNATURE_DOC: &str = "Every delivery is a POST of the event as JSON ({id, code, resource_type, resource_id, occurred_at, data, changes}) with headers X-Kobana-Event, X-Kobana-Event-Id, X-Kobana-Delivery-Id (the same on retries: deduplicate on it) and X-Kobana-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>], where each v1 is HMAC-SHA256 keyed with the webhook secret (the whole whsec_... string) over \"<t>.\" followed by the raw body; accept the request when any v1 matches and t is recent.";

pub(super) fn webhook_output() -> Value {
    s::entity_output(&["id", "url", "events", "active", "secret_last4"])
}

pub(super) fn delivery_output() -> Value {
    s::entity_output(&["id", "webhook_id", "event_code", "status", "attempts"])
}

pub(super) fn events_schema() -> Value {
    json!({
        "type": "array",
        "minItems": 1,
        "maxItems": 50,
        "items": { "type": "string", "minLength": 1, "maxLength": 100 },
        "description": "Event codes to receive: `*` (everything), a group such as `charge.*`, or exact codes from kobana://dunning/events/catalog",
    })
}

/// The tools of the webhooks group, in catalogue order.
pub fn tools() -> Vec<ToolSpec> {
    let create_desc = format!(
        "Subscribes a URL (https; http only for localhost/127.0.0.1 during development) to events. The reply carries the full signing `secret`, shown only this once (later reads show `secret_last4`). {SIGNATURE_DOC}"
    );
    let rotate_desc = format!(
        "Replaces the signing secret and returns the new `secret` (shown only in this reply). With `grace_period_seconds` (0–86400, default 0) the old secret keeps signing until the grace ends: during it X-Kobana-Signature carries two signatures, `t=<unix>,v1=<hex, new secret>,v1=<hex, old secret>`, so receivers can switch without losing deliveries. {SIGNATURE_DOC}"
    );
    vec![
        tool(name::WEBHOOKS_LIST, "List webhooks", "GET", "/v1/webhooks")
            .describe("Lists the organization's webhooks (never their secrets). Filter: `active`.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .arg("active", s::boolean("Only active (true) or inactive (false) webhooks"))
            .list(&["created_at"])
            .filters(HOOKS.filters)
            .output(s::list_output(webhook_output()))
            .run(list_webhooks),
        tool(name::WEBHOOKS_GET, "Get a webhook", "GET", "/v1/webhooks/{id}")
            .describe("One webhook: URL, event filters, active flag, `secret_last4` and rotation dates (never the secret).")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .args::<ById>()
            .output(webhook_output())
            .run(get_webhook),
        tool(name::WEBHOOKS_CREATE, "Create a webhook", "POST", "/v1/webhooks")
            .describe(&create_desc)
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("url", s::text("Receiver URL: https://..., or http://localhost / http://127.0.0.1 for development", 8, 2048))
            .req("events", events_schema())
            .arg("description", s::text("What this webhook is for", 1, 500))
            .arg("active", s::boolean("Deliver events (default true)"))
            .arg("ssl_verification", s::boolean("Verify the receiver's TLS certificate (default true)"))
            .args::<NewHook>()
            .output(s::entity_output(&["id", "url", "events", "active", "secret", "secret_last4"]))
            .run(create_webhook),
        tool(name::WEBHOOKS_UPDATE, "Update a webhook", "PATCH", "/v1/webhooks/{id}")
            .describe("Changes the given fields of a webhook (URL, events, description, active, ssl_verification); fields not sent are kept. Deactivating stops new deliveries. The secret is changed only by dunning_webhooks_rotate_secret.")
            .idempotent()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("url", s::text("Receiver URL (https; http only for localhost)", 8, 2048))
            .arg("events", events_schema())
            .arg("description", s::text("What this webhook is for", 1, 500))
            .arg("active", s::boolean("Deliver events"))
            .arg("ssl_verification", s::boolean("Verify the receiver's TLS certificate"))
            .args::<HookPatch>()
            .output(webhook_output())
            .run(update_webhook),
        tool(name::WEBHOOKS_DELETE, "Delete a webhook", "DELETE", "/v1/webhooks/{id}")
            .describe("Deletes a webhook and its delivery records; pending deliveries are dropped.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .args::<ById>()
            .confirm(describe_delete)
            .run(delete_webhook),
        tool(name::WEBHOOKS_TEST, "Test a webhook", "POST", "/v1/webhooks/{id}/test")
            .describe("Sends a test delivery now (default event webhook.ping; any catalogue code gives a sample event with data {\"test\": true}) and returns the delivery with the receiver's answer. A failed test is retried like any delivery. Uses the organization's outbound budget (RATE_LIMITED with retry_after_ms when exhausted). The webhook must be active.")
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("event_code", s::text("Event code of the test (default webhook.ping)", 1, 100))
            .args::<TestArgs>()
            .output(delivery_output())
            .confirm(describe_test)
            .run(test_webhook)
            .then(post_test),
        tool(name::WEBHOOKS_ROTATE_SECRET, "Rotate a webhook secret", "POST", "/v1/webhooks/{id}/rotate-secret")
            .describe(&rotate_desc)
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("grace_period_seconds", s::integer("How long the old secret keeps signing, 0 to 86400 seconds (default 0: immediately replaced)", 0, MAX_GRACE_SECONDS))
            .args::<RotateArgs>()
            .output(s::entity_output(&["id", "secret", "secret_last4", "secret_rotated_at"]))
            .confirm(describe_rotate)
            .run(rotate_secret),
        tool(name::WEBHOOK_DELIVERIES_LIST, "List webhook deliveries", "GET", "/v1/webhooks/{id}/deliveries")
            .describe("Deliveries of one webhook, newest first, with attempts, last response code and body, and the next retry. Filters: status (pending, delivered, failed; comma-separated), event_code (exact or group.*), from/to on creation time.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("status", s::csv_of("Delivery status", WebhookDeliveryStatus::NAMES))
            .arg("event_code", s::text("Event code, exact or a group such as charge.*", 1, 100))
            .arg("from", s::string("Created at or after (date YYYY-MM-DD or RFC 3339)"))
            .arg("to", s::string("Created at or before (date YYYY-MM-DD, inclusive, or RFC 3339)"))
            .list(&["created_at"])
            .args::<DeliveriesArgs>()
            .filters(DELIVERIES.filters)
            .output(s::list_output(delivery_output()))
            .run(list_deliveries),
        tool(name::WEBHOOK_DELIVERIES_GET, "Get a webhook delivery", "GET", "/v1/webhooks/{id}/deliveries/{delivery_id}")
            .describe("One delivery of a webhook with the exact payload sent, attempts, last response (code, body ≤ 4 KB, duration) and retry dates.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .req("delivery_id", s::id("Delivery id"))
            .args::<DeliveryRef>()
            .output(delivery_output())
            .run(get_delivery),
        tool(name::WEBHOOK_DELIVERIES_RESEND, "Resend a webhook delivery", "POST", "/v1/webhooks/{id}/deliveries/{delivery_id}/resend")
            .describe("Puts a failed delivery back to pending with a fresh retry schedule; the worker attempts it within seconds with the same X-Kobana-Delivery-Id. Only failed deliveries can be resent.")
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .req("delivery_id", s::id("Delivery id"))
            .args::<DeliveryRef>()
            .output(delivery_output())
            .confirm(describe_resend)
            .run(resend_delivery),
    ]
}
