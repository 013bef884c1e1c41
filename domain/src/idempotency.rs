//! The keys a write is remembered under, and what a remembered record means.
//!
//! A write is remembered under the caller's `idempotency_key` (`key:<k>`) and, for a
//! confirmed destructive call, the sealed state's nonce (`confirm:<nonce>`). Three moments
//! read them, in this order of a confirmed call's life:
//!
//! 1. **Before the user is asked** ([`Keys::refuse_conflict`], from the preflight): a key
//!    already used with other arguments is `IDEMPOTENCY_CONFLICT` at once (checks that
//!    need no consent come before the question: `docs/decisions.md`,
//!    "Confirmation"), instead of after the user said yes.
//! 2. **On a decline** ([`Keys::decline`]): the nonce is remembered as declined, so the
//!    same `requestState` re-sent with `accept` is refused and never executes (a decline
//!    consumes the state). The caller's own key is not consumed: a new confirmation with
//!    the same key may still run.
//! 3. **On execution** ([`Keys::recall`]): a replay returns the stored result, a declined
//!    nonce is `CONFIRMATION_DECLINED`, another call under the same key is
//!    `IDEMPOTENCY_CONFLICT`.

use dunning_core::ToolCall;
use serde_json::{Value, json};

use crate::error::DomainError;
use crate::store::{Remembered, Tx};

/// The marker result of a declined confirmation.
const DECLINED: &str = "declined";

/// The keys of one write call and the digest of its arguments (without the key).
#[derive(Debug)]
pub(crate) struct Keys {
    /// Digest of the arguments without `idempotency_key`.
    pub(crate) digest: String,
    /// `key:<k>` first, then `confirm:<nonce>`.
    pub(crate) keys: Vec<String>,
    /// The confirmation key alone, when the call has one.
    nonce_key: Option<String>,
}

impl Keys {
    /// The keys of `call`.
    pub(crate) fn of(call: &ToolCall<'_>) -> Self {
        let mut keyless = call.args.clone();
        let user_key = keyless
            .remove("idempotency_key")
            .and_then(|v| v.as_str().map(str::to_owned));
        let digest = dunning_core::confirm::args_digest(&keyless);
        let mut keys: Vec<String> = Vec::new();
        if let Some(k) = user_key {
            keys.push(format!("key:{k}"));
        }
        let nonce_key = call.confirmation_key.map(|n| format!("confirm:{n}"));
        keys.extend(nonce_key.clone());
        Self {
            digest,
            keys,
            nonce_key,
        }
    }

    /// The stored answer of an earlier run of this call, if any: `Ok(Some)` replays it;
    /// a declined nonce is `CONFIRMATION_DECLINED`; a key used by another call is
    /// `IDEMPOTENCY_CONFLICT`.
    pub(crate) fn recall(
        &self,
        tx: &mut dyn Tx,
        org: &str,
        tool: &str,
    ) -> Result<Option<Value>, DomainError> {
        for key in &self.keys {
            if let Some(r) = tx.recall(org, key)? {
                if r.tool != tool || r.digest != self.digest {
                    return Err(conflict(key));
                }
                if is_declined(&r) {
                    return Err(declined(tool));
                }
                return Ok(Some(r.result));
            }
        }
        Ok(None)
    }

    /// Step 1: refuses a key already used with other arguments, before anyone is asked.
    pub(crate) fn refuse_conflict(
        &self,
        tx: &mut dyn Tx,
        org: &str,
        tool: &str,
    ) -> Result<(), DomainError> {
        for key in &self.keys {
            if let Some(r) = tx.recall(org, key)? {
                if r.tool != tool || r.digest != self.digest {
                    return Err(conflict(key));
                }
            }
        }
        Ok(())
    }

    /// Step 2: remembers the nonce as declined (first write wins). A nonce that already
    /// executed is a `CONFLICT`: the decline came too late to undo anything.
    pub(crate) fn decline(
        &self,
        tx: &mut dyn Tx,
        org: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<(), DomainError> {
        let Some(key) = &self.nonce_key else {
            return Ok(());
        };
        match tx.recall(org, key)? {
            Some(r) if is_declined(&r) => Ok(()),
            Some(_) => Err(DomainError::Conflict(format!(
                "this confirmation of {tool} was already accepted and executed"
            ))),
            None => {
                let r = Remembered {
                    tool: tool.to_owned(),
                    digest: self.digest.clone(),
                    result: json!({ DECLINED: true }),
                    at_ms: now_ms,
                };
                Ok(tx.remember(org, key, &r)?)
            }
        }
    }
}

fn is_declined(r: &Remembered) -> bool {
    r.result.get(DECLINED) == Some(&Value::Bool(true))
}

fn conflict(key: &str) -> DomainError {
    let shown = key.split_once(':').map_or(key, |(_, k)| k);
    DomainError::IdempotencyConflict(shown.to_owned())
}

/// The answer to a declined confirmation (also when its state comes back with `accept`).
pub(crate) fn declined(tool: &str) -> DomainError {
    DomainError::ConfirmationDeclined(format!(
        "The user did not confirm {tool}; nothing was executed."
    ))
}
