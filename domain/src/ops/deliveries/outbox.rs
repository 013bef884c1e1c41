//! What a send did to its delivery, recorded right after the driver answered, in a
//! transaction of its own (the engine's outbox, `crate::engine::tick_with`).
//!
//! In this order: the delivery must still be the sender's (`queued` under the same
//! claim token: canceled meanwhile, or taken over after the claim ran out, and the
//! answer is dropped); then, by the driver's answer:
//!
//! | answer | delivery | contact point |
//! |---|---|---|
//! | accepted | `sent`, `provider_message_id`, its index entry | `last_delivery_status` |
//! | [`Failure::Failed`] | `failed` with the code | `last_delivery_status` |
//! | [`Failure::Bounced`] | `bounced` with the code | one more `bounce_count`; hard: `invalid` |
//! | [`Failure::Retry`] | `queued`, `next_attempt_at` after the back-off; past the policy's attempts, `failed` | — |
//! | [`Failure::Deferred`] | `queued`, `next_attempt_at`, the attempt not counted | — |

use serde_json::{Value, json};

use super::{Delivery, advance_to};
use crate::brazil::calendar;
use crate::engine::Rendered;
use crate::engine::{DriverError, DriverReceipt, Failure, SendPolicy};
use crate::error::DomainError;
use crate::op::Op;
use crate::status::{ContactPointStatus, DeliveryStatus};
use crate::store::{Kind, load, save};

/// What became of one send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// The provider accepted it.
    Sent,
    /// Failed or bounced for good.
    Failed,
    /// Refused for now; tried again later.
    Retrying,
    /// Not attempted; looked at again later.
    Deferred,
    /// No longer the sender's (canceled, or claimed by another sender).
    Gone,
}

/// Records the driver's answer for delivery `id` claimed with `token` (see the module
/// docs).
pub fn record_send(
    op: &mut Op<'_>,
    id: &str,
    token: &str,
    rendered: &Rendered,
    result: Result<DriverReceipt, DriverError>,
    policy: &SendPolicy,
) -> Result<SendOutcome, DomainError> {
    let Some(mut d) = load::<Delivery>(op.tx, Kind::Delivery, op.org, id)? else {
        return Ok(SendOutcome::Gone);
    };
    if d.status != DeliveryStatus::Queued || d.claim_token.as_deref() != Some(token) {
        return Ok(SendOutcome::Gone);
    }
    let outcome = match result {
        Ok(receipt) => {
            op.tx
                .link_message(&d.channel, &receipt.provider_message_id, op.org, &d.id)?;
            d.provider_message_id = Some(receipt.provider_message_id);
            d.subject.clone_from(&rendered.subject);
            d.body = Some(rendered.body.clone());
            d.error_code = None;
            d.error_message = None;
            advance_to(op, &mut d, DeliveryStatus::Sent, None)?;
            SendOutcome::Sent
        }
        Err(e) => match e.kind {
            Failure::Failed => {
                advance_to(
                    op,
                    &mut d,
                    DeliveryStatus::Failed,
                    Some((&e.code, &e.message)),
                )?;
                SendOutcome::Failed
            }
            Failure::Bounced { hard } => {
                advance_to(
                    op,
                    &mut d,
                    DeliveryStatus::Bounced,
                    Some((&e.code, &e.message)),
                )?;
                count_bounce(op, &d, hard)?;
                SendOutcome::Failed
            }
            Failure::Retry if d.attempt >= policy.max_attempts => {
                let why = format!(
                    "{} (gave up after {} attempts)",
                    e.message, policy.max_attempts
                );
                advance_to(op, &mut d, DeliveryStatus::Failed, Some((&e.code, &why)))?;
                SendOutcome::Failed
            }
            Failure::Retry => {
                let wait = policy.backoff_ms(d.attempt);
                release(op, &mut d, wait, Some(&e))?;
                return Ok(SendOutcome::Retrying);
            }
            Failure::Deferred { after_ms } => {
                d.attempt = d.attempt.saturating_sub(1);
                release(op, &mut d, after_ms, None)?;
                return Ok(SendOutcome::Deferred);
            }
        },
    };
    touch_contact_point(op, &d)?;
    Ok(outcome)
}

/// Leaves a claimed delivery `queued` for another try `after_ms` from now, with the
/// error of this attempt when there was one.
fn release(
    op: &mut Op<'_>,
    d: &mut Delivery,
    after_ms: u64,
    error: Option<&DriverError>,
) -> Result<(), DomainError> {
    d.claim_token = None;
    d.claim_until = None;
    d.next_attempt_at = Some(calendar::timestamp(op.now.plus_millis(after_ms)));
    if let Some(e) = error {
        d.error_code = Some(e.code.clone());
        d.error_message = Some(e.message.clone());
    }
    d.updated_at = op.timestamp();
    save(op.tx, Kind::Delivery, op.org, &*d)
}

/// Keeps a contact point's `last_delivery_status` (fields the contact-point module
/// leaves to deliveries), editing its JSON in place.
pub(crate) fn touch_contact_point(op: &mut Op<'_>, d: &Delivery) -> Result<(), DomainError> {
    edit_contact_point(op, d, |m| {
        m.insert("last_delivery_status".into(), json!(d.status));
    })
}

/// One more bounce on the delivery's contact point; a hard one (the address does not
/// exist) makes it `invalid`, so no sender uses it again ([`crate::ops::contact_points::reachable`]).
pub(crate) fn count_bounce(op: &mut Op<'_>, d: &Delivery, hard: bool) -> Result<(), DomainError> {
    let now = op.timestamp();
    edit_contact_point(op, d, |m| {
        let n = m.get("bounce_count").and_then(Value::as_u64).unwrap_or(0);
        m.insert("bounce_count".into(), json!(n + 1));
        if hard {
            m.insert("status".into(), json!(ContactPointStatus::Invalid));
        }
        m.insert("updated_at".into(), json!(now));
    })
}

fn edit_contact_point(
    op: &mut Op<'_>,
    d: &Delivery,
    f: impl FnOnce(&mut serde_json::Map<String, Value>),
) -> Result<(), DomainError> {
    let Some(cp_id) = &d.contact_point_id else {
        return Ok(());
    };
    let Some(mut cp) = op.tx.get(Kind::ContactPoint, op.org, cp_id)? else {
        return Ok(());
    };
    if let Some(m) = cp.as_object_mut() {
        f(m);
    }
    op.tx.put(Kind::ContactPoint, op.org, &cp)?;
    Ok(())
}
