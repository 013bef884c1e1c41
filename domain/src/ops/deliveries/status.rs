//! Delivery statuses reported by providers (the binary's status callbacks: WhatsApp,
//! SMS), applied to the delivery their message id names and to its contact point.
//!
//! A provider names only its own message id; [`crate::store::Tx::message_owner`] gives
//! the organization and delivery it was recorded for when the send was accepted. Then:
//!
//! * **monotonic**: a status only moves a delivery forward along
//!   `sent → delivered → read`; `read` arriving before `delivered` stamps both
//!   (`delivered_at` first), a `delivered` arriving after `read` changes nothing;
//! * **terminal failures**: `failed` (or a bounce) applies only to a delivery not yet
//!   `delivered`; a failed, bounced or canceled delivery never moves again;
//! * **idempotent**: a replayed status finds the delivery already there and changes
//!   nothing (no event, no second bounce);
//! * the contact point keeps `last_delivery_status`, and a bounce counts in
//!   `bounce_count` (a hard one makes it `invalid`, see [`super::record_send`]).

use dunning_core::{Scope, UnixTime};

use super::{Delivery, advance_to, count_bounce, touch_contact_point};
use crate::Domain;
use crate::Worker;
use crate::error::DomainError;
use crate::op::Op;
use crate::status::DeliveryStatus;
use crate::store::{Kind, load};

/// What a provider said about one of its messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderState {
    /// Accepted and on its way (already what `sent` means here).
    Sent,
    /// Reached the debtor's device or mailbox.
    Delivered,
    /// Opened by the debtor.
    Read,
    /// Not delivered.
    Failed {
        /// Provider's error code.
        code: String,
        /// Provider's error title (never the message text).
        message: String,
        /// Whether the address refused it (a bounce), and whether for good.
        bounce: Bounce,
    },
}

/// How a failure concerns the address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bounce {
    /// Not the address's fault (a provider error, a policy refusal).
    No,
    /// The address refused it this time (full mailbox, handset off).
    Soft,
    /// The address does not exist (or is not on the channel).
    Hard,
}

/// What applying a status did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// No delivery has that message id (logged by the caller, answered `200`).
    Unknown,
    /// The delivery was already there or past it (a replay, an out-of-order status).
    Unchanged {
        /// Its status.
        status: String,
    },
    /// The delivery moved.
    Changed {
        /// Its new status.
        status: String,
    },
}

/// The worker whose events record callbacks.
const CALLBACKS: Worker = Worker {
    actor: "system:channel-callbacks",
    scope: Scope::Write,
    request_id: "channel-callback",
};

/// Applies `state` to the delivery of `message_id` on `channel` (see the module docs).
pub fn apply_provider_status(
    domain: &Domain,
    now: UnixTime,
    channel: &str,
    message_id: &str,
    state: &ProviderState,
) -> Result<Applied, DomainError> {
    let owner = crate::store::read(domain.store(), |tx| {
        Ok(tx.message_owner(channel, message_id)?)
    })?;
    let Some((org, id)) = owner else {
        return Ok(Applied::Unknown);
    };
    let seed = domain.worker_seed(&org, now, "callback");
    domain.with_worker_op(&CALLBACKS, &org, now, seed, |op| apply(op, &id, state))
}

fn rank(status: DeliveryStatus) -> u8 {
    use DeliveryStatus as S;
    match status {
        S::Scheduled | S::Queued => 0,
        S::Sent => 1,
        S::Delivered => 2,
        S::Read => 3,
        S::Clicked => 4,
        S::Failed | S::Bounced | S::Canceled => u8::MAX,
    }
}

fn apply(op: &mut Op<'_>, id: &str, state: &ProviderState) -> Result<Applied, DomainError> {
    let Some(mut d) = load::<Delivery>(op.tx, Kind::Delivery, op.org, id)? else {
        return Ok(Applied::Unknown);
    };
    let unchanged = |d: &Delivery| {
        Ok(Applied::Unchanged {
            status: d.status.to_string(),
        })
    };
    let here = rank(d.status);
    match state {
        ProviderState::Sent => return unchanged(&d),
        ProviderState::Delivered | ProviderState::Read => {
            let target = if *state == ProviderState::Read {
                DeliveryStatus::Read
            } else {
                DeliveryStatus::Delivered
            };
            // Only a sent message moves forward; a queued one (the callback outran the
            // send's record, which links the id) cannot be reached here.
            if here == 0 || here == u8::MAX || here >= rank(target) {
                return unchanged(&d);
            }
            if d.status == DeliveryStatus::Sent {
                advance_to(op, &mut d, DeliveryStatus::Delivered, None)?;
            }
            if target == DeliveryStatus::Read {
                advance_to(op, &mut d, DeliveryStatus::Read, None)?;
            }
        }
        ProviderState::Failed {
            code,
            message,
            bounce,
        } => {
            if here == u8::MAX || here >= rank(DeliveryStatus::Delivered) {
                return unchanged(&d);
            }
            let to = if *bounce == Bounce::No {
                DeliveryStatus::Failed
            } else {
                DeliveryStatus::Bounced
            };
            advance_to(op, &mut d, to, Some((code, message)))?;
            if *bounce != Bounce::No {
                count_bounce(op, &d, *bounce == Bounce::Hard)?;
            }
        }
    }
    touch_contact_point(op, &d)?;
    Ok(Applied::Changed {
        status: d.status.to_string(),
    })
}
