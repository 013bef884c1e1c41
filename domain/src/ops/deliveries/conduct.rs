//! Collection conduct (rules.md, Collection conduct): who may receive a message, on which channel, and when.

use dunning_core::UnixTime;
use serde_json::{Value, json};

use crate::brazil::calendar;
use crate::error::DomainError;
use crate::ops::rulers;
use crate::ops::rulers::{DUNNABLE, SendWindow, Window};
use crate::status::{AgreementStatus, ChargeStatus, ContactPointStatus, DebtorStatus};
use crate::store::{Cond, Kind, Query, Tx};

/// Why a message may not go out: a machine `code`, a precise message, and the argument
/// it is about when the caller chose it (then it is a validation error, else a conflict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Machine code, e.g. `do_not_contact`, `opted_out`, `charge_paid`.
    pub code: String,
    /// What is wrong, naming the entity and its state.
    pub message: String,
    /// The argument at fault (validation) or `None` (conflict with a state).
    pub field: Option<&'static str>,
}

impl Refusal {
    pub(super) fn conflict(code: impl Into<String>, message: String) -> Self {
        Self {
            code: code.into(),
            message,
            field: None,
        }
    }

    /// The refusal as the tool error.
    pub fn into_error(self) -> DomainError {
        match self.field {
            Some(f) => DomainError::field(f, self.message),
            None => DomainError::Conflict(format!("{}: {}", self.code, self.message)),
        }
    }
}

pub(super) fn text<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// Whether dunning of a charge is paused at `now`, and until when: `dunning_paused`
/// with `dunning_paused_until` (a date, inclusive, or a timestamp; none: until resumed).
pub fn paused(charge: &Value, now: UnixTime) -> Option<String> {
    let until = text(charge, "dunning_paused_until");
    let flag = charge
        .get("dunning_paused")
        .and_then(Value::as_bool)
        .unwrap_or_else(|| until.is_some());
    if !flag {
        return None;
    }
    match until {
        None => Some("resumed".to_owned()),
        Some(until) => {
            let still = match calendar::parse_date(until) {
                Some(d) => calendar::today(now) <= d,
                None => calendar::parse_timestamp(until).is_none_or(|t| {
                    t.timestamp_millis() > i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
                }),
            };
            still.then(|| until.to_owned())
        }
    }
}

/// Why a charge gets no dunning at `now` (rules.md, Collection conduct), or `None`.
pub fn charge_stop(
    tx: &mut dyn Tx,
    org: &str,
    charge: &Value,
    now: UnixTime,
) -> Result<Option<Refusal>, DomainError> {
    let id = text(charge, "id").unwrap_or_default();
    let status = text(charge, "status").unwrap_or_default();
    let known = status.parse::<ChargeStatus>().ok();
    if !known.is_some_and(|s| DUNNABLE.contains(&s)) {
        use ChargeStatus as S;
        let why = match known {
            Some(S::Draft) => "it has not been issued yet",
            Some(S::Paid | S::Refunded | S::Chargeback) => "it is paid",
            Some(S::Canceled) => "it was canceled",
            Some(S::Renegotiated) => "it was renegotiated in an agreement",
            Some(S::WrittenOff) => "it was written off",
            _ => "dunning stops on it",
        };
        return Ok(Some(Refusal::conflict(
            format!("charge_{status}"),
            format!("charge {id} is {status}: {why}, so the debtor is not contacted about it"),
        )));
    }
    if let Some(until) = paused(charge, now) {
        let reason = text(charge, "pause_reason")
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        return Ok(Some(Refusal::conflict(
            "charge_paused",
            format!("charge {id} has dunning paused until {until}{reason}; resume it first"),
        )));
    }
    if let Some(aid) = text(charge, "agreement_id") {
        if let Some(a) = tx.get(Kind::Agreement, org, aid)? {
            let st = text(&a, "status").unwrap_or_default();
            if st.parse().is_ok_and(AgreementStatus::is_in_force) {
                return Ok(Some(Refusal::conflict(
                    "in_agreement",
                    format!(
                        "charge {id} is in agreement {aid}, which is {st}: the agreement's installments are collected instead"
                    ),
                )));
            }
        }
    }
    Ok(None)
}

/// Why a debtor may not be contacted at all, or `None`.
pub fn debtor_refusal(debtor: &Value) -> Option<Refusal> {
    let id = text(debtor, "id").unwrap_or_default();
    let name = text(debtor, "name").unwrap_or_default();
    if debtor.get("do_not_contact").and_then(Value::as_bool) == Some(true) {
        return Some(Refusal::conflict(
            "do_not_contact",
            format!("debtor {id} ({name}) is marked do_not_contact: no channel may be used"),
        ));
    }
    if text(debtor, "status").and_then(DebtorStatus::from_wire) == Some(DebtorStatus::Archived) {
        return Some(Refusal::conflict(
            "debtor_archived",
            format!("debtor {id} ({name}) is archived"),
        ));
    }
    None
}

/// Why a contact point may not receive a message on `channel`, or `None`.
pub fn contact_refusal(cp: &Value, channel: &str) -> Option<Refusal> {
    let id = text(cp, "id").unwrap_or_default();
    let value = text(cp, "value").unwrap_or_default();
    let cp_channel = text(cp, "channel").unwrap_or_default();
    if cp_channel != channel {
        return Some(Refusal {
            code: "channel_mismatch".into(),
            message: format!("contact point {id} is a {cp_channel} contact, not {channel}"),
            field: Some("contact_point_id"),
        });
    }
    if text(cp, "status").and_then(ContactPointStatus::from_wire)
        == Some(ContactPointStatus::Invalid)
    {
        return Some(Refusal::conflict(
            "contact_point_invalid",
            format!("contact point {id} ({value}) is invalid"),
        ));
    }
    let consent = text(cp, "consent").unwrap_or("unknown");
    if consent == "opted_out" {
        return Some(Refusal::conflict(
            "opted_out",
            format!(
                "contact point {id} ({value}) opted out of messages (LGPD): it is never contacted again"
            ),
        ));
    }
    if channel == "whatsapp" && consent != "opted_in" {
        return Some(Refusal::conflict(
            "whatsapp_not_opted_in",
            format!(
                "contact point {id} ({value}) has consent {consent}: WhatsApp goes only to opted_in contacts"
            ),
        ));
    }
    None
}

/// The contact point a message on `channel` goes to: the debtor's primary eligible one,
/// else the oldest eligible one.
pub fn pick_contact_point(
    tx: &mut dyn Tx,
    org: &str,
    debtor_id: &str,
    channel: &str,
) -> Result<Option<Value>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::Eq("channel", json!(channel)));
    let eligible: Vec<Value> = tx
        .find(Kind::ContactPoint, org, &q)?
        .into_iter()
        .filter(|cp| contact_refusal(cp, channel).is_none())
        .collect();
    let primary = eligible
        .iter()
        .position(|cp| cp.get("is_primary").and_then(Value::as_bool) == Some(true));
    Ok(primary
        .or_else(|| (!eligible.is_empty()).then_some(0))
        .map(|i| eligible[i].clone()))
}

/// Why a debtor has no contact point for a message on `channel`: the refusal of the
/// best one there is (primary first: opted out, invalid, WhatsApp not opted in), or
/// `no_contact_point` when there is none.
pub fn no_contact_refusal(
    tx: &mut dyn Tx,
    org: &str,
    debtor: &Value,
    channel: &str,
) -> Result<Refusal, DomainError> {
    let debtor_id = text(debtor, "id").unwrap_or_default();
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::Eq("channel", json!(channel)));
    let mut cps = tx.find(Kind::ContactPoint, org, &q)?;
    cps.sort_by_key(|cp| cp.get("is_primary").and_then(Value::as_bool) != Some(true));
    if let Some(r) = cps.iter().find_map(|cp| contact_refusal(cp, channel)) {
        return Ok(r);
    }
    let name = text(debtor, "name").unwrap_or_default();
    let need = if channel == "whatsapp" {
        "active and opted_in"
    } else {
        "active and not opted out"
    };
    Ok(Refusal::conflict(
        "no_contact_point",
        format!(
            "debtor {debtor_id} ({name}) has no {channel} contact point that may receive messages ({need})"
        ),
    ))
}

/// The send window that applies to a charge's messages: its ruler's, else the default.
pub fn window_for(
    tx: &mut dyn Tx,
    org: &str,
    charge: &Value,
    debtor: &Value,
) -> Result<(SendWindow, Window), DomainError> {
    let w = rulers::resolve(tx, org, charge, debtor)?
        .map(|r| r.send_window)
        .unwrap_or_default();
    let parsed = w.window();
    Ok((w, parsed))
}
