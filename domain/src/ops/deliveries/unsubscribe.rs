//! The one-click unsubscribe of an e-mail (`List-Unsubscribe`, RFC 8058): the debtor's
//! opt-out (LGPD) of the contact point the message went to, at once. The binary checks
//! the link's signature; this records it as a person's opt-out through the API would:
//! `consent` `opted_out` with `opted_out_at` and a reason, `contact_point.updated` and
//! `contact_point.opted_out` events, and every message still scheduled or queued for it
//! canceled (`opted_out`).

use dunning_core::{Scope, UnixTime};
use serde_json::json;

use super::cancel_pending;
use crate::Domain;
use crate::Worker;
use crate::error::DomainError;
use crate::ops::contact_points::ContactPoint;
use crate::store::{Cond, Kind, load};

/// The worker whose events record unsubscribes.
const UNSUBSCRIBE: Worker = Worker {
    actor: "system:unsubscribe-link",
    scope: Scope::Write,
    request_id: "unsubscribe-link",
};

/// What an unsubscribe did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsubscribed {
    /// The contact point is opted out from now on.
    Now,
    /// It already was (a second click, a mail client's automatic POST).
    Already,
    /// No such contact point (deleted since).
    Unknown,
}

/// Opts contact point `cp_id` of `org` out (see the module docs).
pub fn unsubscribe(
    domain: &Domain,
    now: UnixTime,
    org: &str,
    cp_id: &str,
) -> Result<Unsubscribed, DomainError> {
    let exists = crate::store::read(domain.store(), |tx| {
        Ok(tx.organizations()?.iter().any(|o| o == org))
    })?;
    if !exists {
        return Ok(Unsubscribed::Unknown);
    }
    let seed = domain.worker_seed(org, now, "unsubscribe");
    domain.with_worker_op(&UNSUBSCRIBE, org, now, seed, |op| {
        let Some(before) = load::<ContactPoint>(op.tx, Kind::ContactPoint, op.org, cp_id)? else {
            return Ok(Unsubscribed::Unknown);
        };
        if before.consent == "opted_out" {
            return Ok(Unsubscribed::Already);
        }
        let mut cp = before.clone();
        cp.consent = "opted_out".into();
        cp.opted_out_at = Some(op.timestamp());
        cp.opt_out_reason = Some("unsubscribe link in an e-mail".into());
        crate::ops::contact_points::save_changed(op, &before, cp)?;
        cancel_pending(
            op,
            Cond::Eq("contact_point_id", json!(cp_id)),
            "opted_out",
            &format!("contact point {cp_id} opted out through an unsubscribe link"),
        )?;
        Ok(Unsubscribed::Now)
    })
}
