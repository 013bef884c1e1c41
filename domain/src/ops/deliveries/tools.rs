//! The delivery tools: schemas and declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::handlers::{LISTING, list_deliveries};
use super::{
    BUILTIN_TEMPLATES, BulkArgs, CHANNELS, MESSAGE_CHANNELS, MessageArgs, NotifyArgs, ResendArgs,
    STATUSES, bulk_notify, describe_bulk, describe_notify, describe_resend, notify, resend,
};
use crate::catalog::name;
use crate::ops::rulers;
use crate::schema as s;
use crate::tool::{ToolSpec, tool};

pub(super) fn delivery_output() -> Value {
    s::entity_output(&["id", "charge_id", "channel", "status", "scheduled_at"])
}

pub(super) fn template_id_schema() -> Value {
    let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|t| t.0).collect();
    s::text(
        &format!(
            "Template: a built-in one ({}) or the id of a ruler step whose template to use. Give template_id or message",
            names.join(", ")
        ),
        1,
        100,
    )
}

pub(super) fn message_schema() -> Value {
    s::text(
        &format!(
            "Free text (not for WhatsApp, which only carries templates), with the variables {}. The creditor's name and CNPJ are added. Give template_id or message",
            rulers::VARIABLES
                .iter()
                .map(|v| format!("{{{{{v}}}}}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        1,
        2000,
    )
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::CHARGES_NOTIFY, "Notify a debtor about a charge", "POST", "/v1/charges/{id}/notify")
            .describe("Sends one message about a charge now (or at schedule_at) on email, sms or whatsapp, to the given contact point or the debtor's primary one on that channel. Refused for do_not_contact debtors, opted-out or invalid contact points, WhatsApp to contacts not opted in, charges that are paid, canceled, renegotiated, written off, paused or in an agreement, and times outside the send window. Counts against the outbound message limit.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("id", s::id("Charge id"))
            .arg("channel", s::one_of("Channel (default: the contact point's)", MESSAGE_CHANNELS))
            .arg("contact_point_id", s::id("Contact point of the charge's debtor (default: the primary one on the channel)"))
            .arg("template_id", template_id_schema())
            .arg("message", message_schema())
            .arg("subject", s::text("E-mail subject for a free-text message", 1, 200))
            .arg("schedule_at", s::datetime("When to send (default now); must be inside the send window"))
            .args::<NotifyArgs>()
            .args::<MessageArgs>()
            .output(delivery_output())
            .confirm(describe_notify)
            .run(notify),
        tool(name::DELIVERIES_LIST, "List deliveries", "GET", "/v1/deliveries")
            .describe("Lists messages (and tasks) sent or scheduled: status, channel, timestamps, errors. Filters: status, channel, charge_id, debtor_id, step_id, and from/to on the scheduled time.")
            .read()
            .access(Scope::Read, Some("notifications.view"))
            .arg("status", s::csv_of("Delivery status", STATUSES))
            .arg("channel", s::csv_of("Channel", CHANNELS))
            .arg("charge_id", s::id("Only deliveries about this charge"))
            .arg("debtor_id", s::id("Only deliveries to this debtor"))
            .arg("step_id", s::id("Only deliveries made by this ruler step"))
            .arg("from", s::string("Scheduled at or after (date YYYY-MM-DD or RFC 3339)"))
            .arg("to", s::string("Scheduled at or before (date YYYY-MM-DD, inclusive, or RFC 3339)"))
            .list(&["scheduled_at", "created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(delivery_output()))
            .run(list_deliveries),
        tool(name::NOTIFICATIONS_CREATE, "Notify debtors about charges", "POST", "/v1/notifications")
            .describe("Sends one message per charge (up to 500) on one channel, to each debtor's primary contact point on it. Charges that may not be messaged (paid, paused, do_not_contact, no eligible contact point, ...) are skipped and listed with the reason. Not idempotent: calling again sends again.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("charge_ids", s::array_max("Charges to notify about", s::id("Charge id"), 500))
            .req("channel", s::one_of("Channel", MESSAGE_CHANNELS))
            .arg("template_id", template_id_schema())
            .arg("message", message_schema())
            .arg("subject", s::text("E-mail subject for a free-text message", 1, 200))
            .arg("schedule_at", s::datetime("When to send (default now); must be inside the send window"))
            .output(s::entity_output(&["id", "created_count", "skipped", "deliveries"]))
            .args::<BulkArgs>()
            .args::<MessageArgs>()
            .confirm(describe_bulk)
            .run(bulk_notify),
        tool(name::DELIVERIES_RESEND, "Resend a delivery", "POST", "/v1/deliveries/{id}/resend")
            .describe("Sends a message again as a new delivery (resent_from_id points to the original, which never changes), optionally to another contact point of the same debtor. The same conduct rules as a new message apply.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("id", s::id("Delivery id"))
            .arg("contact_point_id", s::id("Another contact point of the same debtor"))
            .args::<ResendArgs>()
            .output(delivery_output())
            .confirm(describe_resend)
            .run(resend),
    ]
}
