//! A delivery as stored and its moves along the machine (advance, cancel).

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::op::{Op, diff};
use crate::status::DeliveryStatus;
use crate::store::{Cond, Kind, Query, find, save};

/// Delivery statuses.
pub const STATUSES: &[&str] = DeliveryStatus::NAMES;
/// Channels a person can message a debtor on.
pub const MESSAGE_CHANNELS: &[&str] = &["email", "sms", "whatsapp"];
/// Delivery channels (step channels).
pub const CHANNELS: &[&str] = &["email", "sms", "whatsapp", "webhook", "task"];
/// Most charges in one notification.
pub const MAX_BULK: usize = 500;

/// A message (or a task for a person) about one charge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivery {
    /// UUID (ruler deliveries: derived from charge and step, see [`ruler_delivery_id`]).
    pub id: String,
    /// The notification (send request) it belongs to, for manual and bulk sends.
    pub notification_id: Option<String>,
    /// The charge.
    pub charge_id: String,
    /// The debtor.
    pub debtor_id: String,
    /// The contact point (none for `task` and `webhook`).
    pub contact_point_id: Option<String>,
    /// The ruler step that made it.
    pub step_id: Option<String>,
    /// The ruler of that step.
    pub ruler_id: Option<String>,
    /// `email`, `sms`, `whatsapp`, `webhook` or `task`.
    pub channel: String,
    /// `notify`, or `negativate`/`protest`/`escalate` for a task a person must decide.
    pub action: String,
    /// `ruler`, `manual` or `api`.
    pub origin: String,
    /// Status (see the module docs).
    pub status: DeliveryStatus,
    /// Address or number the message goes to.
    pub to: Option<String>,
    /// Built-in template name or step id used.
    pub template_id: Option<String>,
    /// Free-text message (manual sends), with variables.
    pub message: Option<String>,
    /// Subject of the message (rendered once sent).
    pub subject: Option<String>,
    /// Body as sent (rendered, with the creditor's identification).
    pub body: Option<String>,
    /// When it goes out (local RFC 3339).
    pub scheduled_at: String,
    /// When it entered the outbox queue.
    pub queued_at: Option<String>,
    /// When the driver accepted it.
    pub sent_at: Option<String>,
    /// When the provider confirmed delivery.
    pub delivered_at: Option<String>,
    /// When the debtor read it.
    pub read_at: Option<String>,
    /// When the debtor clicked its link.
    pub clicked_at: Option<String>,
    /// When it failed or bounced.
    pub failed_at: Option<String>,
    /// When it was canceled.
    pub canceled_at: Option<String>,
    /// Why it was canceled (machine code, e.g. `opted_out`).
    pub cancel_reason: Option<String>,
    /// Failure code.
    pub error_code: Option<String>,
    /// Failure or cancellation detail.
    pub error_message: Option<String>,
    /// The provider's id for the message.
    pub provider_message_id: Option<String>,
    /// Send attempts so far (a resend starts from the original's count).
    pub attempt: u32,
    /// When a message the provider refused for now (or that found its channel's budget
    /// spent) is tried again; it stays `queued` until then.
    pub next_attempt_at: Option<String>,
    /// The delivery this one re-sends.
    pub resent_from_id: Option<String>,
    /// Who asked for it (person), or the engine.
    pub requested_by: Option<String>,
    /// Outbox claim (internal): who is sending it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_token: Option<String>,
    /// Outbox claim (internal): until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_until: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// [`advance_to`] by wire string: an unknown one is refused as any illegal transition.
pub fn advance(
    op: &mut Op<'_>,
    d: &mut Delivery,
    to: &str,
    code: Option<(&str, &str)>,
) -> Result<(), DomainError> {
    match to.parse() {
        Ok(to) => advance_to(op, d, to, code),
        Err(_) => Err(DomainError::transition("delivery", &d.id, d.status, to)),
    }
}

/// Moves a delivery along its machine (`delivered`, `read`, `clicked`, `bounced`,
/// `failed`, `canceled` — provider callbacks and cancellations), stamping the time and
/// writing `delivery.<status>`. Anything else is a CONFLICT naming both states.
pub fn advance_to(
    op: &mut Op<'_>,
    d: &mut Delivery,
    to: DeliveryStatus,
    code: Option<(&str, &str)>,
) -> Result<(), DomainError> {
    use DeliveryStatus as S;
    let now = op.timestamp();
    let before = d.clone();
    crate::status::change(&mut d.status, &d.id, to)?;
    match to {
        S::Queued => d.queued_at = Some(now.clone()),
        S::Sent => d.sent_at = Some(now.clone()),
        S::Delivered => d.delivered_at = Some(now.clone()),
        S::Read => d.read_at = Some(now.clone()),
        S::Clicked => d.clicked_at = Some(now.clone()),
        S::Failed | S::Bounced => d.failed_at = Some(now.clone()),
        S::Canceled => d.canceled_at = Some(now.clone()),
        S::Scheduled => {}
    }
    if let Some((c, m)) = code {
        if to == S::Canceled {
            d.cancel_reason = Some(c.to_owned());
        } else {
            d.error_code = Some(c.to_owned());
        }
        d.error_message = Some(m.to_owned());
    }
    if to != S::Queued {
        d.claim_token = None;
        d.claim_until = None;
    }
    d.updated_at = now;
    save(op.tx, Kind::Delivery, op.org, &*d)?;
    let changes = diff(&before, &*d);
    op.event(
        &format!("delivery.{to}"),
        "delivery",
        &d.id.clone(),
        &*d,
        changes,
    )?;
    Ok(())
}

/// Cancels every scheduled or queued delivery matching `cond` (e.g.
/// `Cond::Eq("contact_point_id", ..)` on opt-out, `Cond::Eq("charge_id", ..)` when a
/// charge is paid, canceled or paused). Returns how many. Other groups call this so that
/// a stop takes effect at once; the engine re-checks before sending anyway.
pub fn cancel_pending(
    op: &mut Op<'_>,
    cond: Cond,
    code: &str,
    message: &str,
) -> Result<u32, DomainError> {
    let q = Query::all().with(cond).with(Cond::In(
        "status",
        crate::status::values(&[DeliveryStatus::Scheduled, DeliveryStatus::Queued]),
    ));
    let pending: Vec<Delivery> = find(op.tx, Kind::Delivery, op.org, &q)?;
    let mut n = 0;
    for mut d in pending {
        advance_to(op, &mut d, DeliveryStatus::Canceled, Some((code, message)))?;
        n += 1;
    }
    Ok(n)
}
