//! Webhooks: CRUD tools live in `ops::exports`'s sibling module (Domain II); this file
//! holds the event fan-out every change goes through.

use serde_json::Value;

use crate::error::DomainError;
use crate::op::Op;

/// Queues a webhook delivery for every active webhook whose filter matches the event.
/// (Webhooks land with Domain II; until then nothing subscribes.)
pub fn fan_out(_op: &mut Op<'_>, _event: &Value) -> Result<(), DomainError> {
    Ok(())
}
