//! Contact points of a debtor (the `dunning_contact_points_*` tools): where the ruler may reach
//! them — e-mail, SMS, WhatsApp, phone or postal address — and with what consent.
//!
//! Values are validated and normalized per channel: e-mail lowercased, phone numbers to
//! `+55` + area code + number (10 digits for a landline, 11 for a mobile; SMS needs a
//! mobile), postal addresses as free text. One contact point per channel is primary: the
//! first of a channel becomes primary, and making another primary unsets the old one.
//! Opting out (LGPD, CDC art. 42) takes effect at once: `opted_out_at` is stamped and a
//! `contact_point.opted_out` event is written; the senders check `consent` before every
//! message ([`reachable`]).
//!
//! One file rather than a group folder: the group is small enough that its document,
//! declarations and handlers read best together (one document and its channel rules, four tools); past about 600 lines it becomes
//! a folder of the usual shape (see [`crate::ops`]).

use crate::catalog::name;
use crate::status::{ContactPointStatus, DebtorStatus, DeliveryStatus};
use dunning_core::{Output, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::args::{ListArgs, fields};
use crate::error::DomainError;
use crate::op::{Op, created, diff, list, ok};
use crate::ops::debtors::{Debtor, load_debtor};
use crate::schema as s;
use crate::store::{Cond, Kind, Order, Query, find, must, save};
use crate::tool::{ToolBuilder, ToolSpec, tool};

/// Channels.
pub const CHANNELS: &[&str] = &["email", "sms", "whatsapp", "phone", "postal"];
/// Consent states.
pub const CONSENTS: &[&str] = &["opted_in", "unknown", "opted_out"];

/// A contact point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContactPoint {
    /// UUID (`cp_id`).
    pub id: String,
    /// The debtor.
    pub debtor_id: String,
    /// `email`, `sms`, `whatsapp`, `phone` or `postal`.
    pub channel: String,
    /// Normalized value.
    pub value: String,
    /// Free label (`home`, `work`, `financeiro`…).
    pub label: Option<String>,
    /// The channel's primary contact point.
    pub is_primary: bool,
    /// When the value was verified.
    pub verified_at: Option<String>,
    /// `opted_in`, `unknown` or `opted_out`.
    pub consent: String,
    /// When the debtor opted out.
    pub opted_out_at: Option<String>,
    /// Why.
    pub opt_out_reason: Option<String>,
    /// Status of the last delivery to it (kept by the deliveries module).
    pub last_delivery_status: Option<DeliveryStatus>,
    /// Bounces so far (kept by the deliveries module).
    pub bounce_count: u32,
    /// `active` or `invalid`.
    pub status: ContactPointStatus,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// Whether a message on this contact point's channel may be sent to it now: active,
/// not opted out, and for WhatsApp explicitly opted in (rules.md, Collection conduct).
pub fn reachable(cp: &ContactPoint) -> bool {
    cp.status == ContactPointStatus::Active
        && cp.consent != "opted_out"
        && (cp.channel != "whatsapp" || cp.consent == "opted_in")
}

/// A debtor's contact points matching `conds`, read through the debtor index (ordering
/// by the filtered column keeps SQLite off the organization-wide `created_at` index).
fn by_debtor(op: &mut Op<'_>, conds: Vec<Cond>) -> Result<Vec<ContactPoint>, DomainError> {
    let q = Query {
        conds,
        sort: ("debtor_id", Order::Asc),
        limit: None,
        offset: 0,
    };
    let mut v: Vec<ContactPoint> = find(op.tx, Kind::ContactPoint, op.org, &q)?;
    v.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
    Ok(v)
}

/// The contact points of a debtor, oldest first, the primary of each channel first.
pub fn of_debtor(op: &mut Op<'_>, debtor_id: &str) -> Result<Vec<ContactPoint>, DomainError> {
    let mut v = by_debtor(op, vec![Cond::Eq("debtor_id", json!(debtor_id))])?;
    v.sort_by_key(|c| !c.is_primary);
    Ok(v)
}

/// Validates and normalizes a value for a channel.
pub fn normalize(channel: &str, raw: &str) -> Result<String, DomainError> {
    let v = raw.trim();
    let bad = |issue: &str| DomainError::field("value", issue);
    match channel {
        "email" => {
            let v = v.to_lowercase();
            let Some((local, domain)) = v.split_once('@') else {
                return Err(bad("must be an e-mail address (name@domain)"));
            };
            let ok_local = !local.is_empty()
                && local.len() <= 64
                && local
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._%+-'".contains(c))
                && !local.starts_with('.')
                && !local.ends_with('.')
                && !local.contains("..");
            let labels: Vec<&str> = domain.split('.').collect();
            let ok_domain = labels.len() >= 2
                && labels.iter().all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
                && labels.last().is_some_and(|tld| tld.len() >= 2);
            if ok_local && ok_domain && v.len() <= 254 {
                Ok(v)
            } else {
                Err(bad("must be an e-mail address (name@domain)"))
            }
        }
        "sms" | "whatsapp" | "phone" => {
            if v.chars()
                .any(|c| !(c.is_ascii_digit() || " +-().".contains(c)))
                || v.get(1..).is_some_and(|r| r.contains('+'))
            {
                return Err(bad(
                    "must be a Brazilian phone number: +55, area code and number",
                ));
            }
            let digits: String = v.chars().filter(char::is_ascii_digit).collect();
            let national = if v.starts_with('+') {
                digits.strip_prefix("55").ok_or_else(|| {
                    bad("must be a Brazilian number (+55); other countries are not supported")
                })?
            } else if digits.len() >= 12 {
                digits
                    .strip_prefix("55")
                    .ok_or_else(|| bad("must be a Brazilian number (+55)"))?
            } else {
                digits.as_str()
            };
            let n = national.as_bytes();
            let area_ok = n.len() >= 2 && n[0] != b'0' && n[1] != b'0';
            if !area_ok || !(10..=11).contains(&n.len()) {
                return Err(bad(
                    "must be +55, a two-digit area code and an 8-digit landline or 9-digit mobile number",
                ));
            }
            let mobile = n.len() == 11;
            if mobile && n[2] != b'9' {
                return Err(bad("a 9-digit mobile number starts with 9"));
            }
            if channel == "sms" && !mobile {
                return Err(bad(
                    "SMS needs a mobile number (9 digits after the area code)",
                ));
            }
            Ok(format!("+55{national}"))
        }
        "postal" => {
            let joined = v.split_whitespace().collect::<Vec<_>>().join(" ");
            if joined.len() < 10 {
                Err(bad("must be a full postal address"))
            } else {
                Ok(joined)
            }
        }
        _ => Err(DomainError::field(
            "channel",
            "must be email, sms, whatsapp, phone or postal",
        )),
    }
}

/// `{id, cp_id}`: one contact point of a debtor.
#[derive(Debug, Deserialize)]
struct CpRef {
    id: String,
    cp_id: String,
}

/// `dunning_contact_points_list`'s own arguments (besides the list's).
#[derive(Debug, Deserialize)]
struct ListCps {
    id: String,
    #[serde(default, deserialize_with = "fields::csv")]
    channel: Option<Vec<String>>,
}

/// `dunning_contact_points_create`.
#[derive(Debug, Deserialize)]
struct NewCp {
    id: String,
    channel: String,
    value: String,
    label: Option<String>,
    is_primary: Option<bool>,
    consent: Option<String>,
    opt_out_reason: Option<String>,
}

/// `dunning_contact_points_update` (a patch: a null label clears it).
#[derive(Debug, Deserialize)]
struct CpPatch {
    id: String,
    cp_id: String,
    #[serde(default, deserialize_with = "fields::patch")]
    label: Option<Option<String>>,
    is_primary: Option<bool>,
    consent: Option<String>,
    opt_out_reason: Option<String>,
}

fn path_args(b: ToolBuilder, with_cp: bool) -> ToolBuilder {
    let b = b.req("id", s::id("Debtor id"));
    if with_cp {
        b.req("cp_id", s::id("Contact point id"))
    } else {
        b
    }
}

fn cp_output() -> Value {
    s::entity_output(&["id", "debtor_id", "channel", "value", "consent", "status"])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    let manage = |b: ToolBuilder| b.access(Scope::Write, Some("debtors.manage"));
    vec![
        path_args(tool(name::CONTACT_POINTS_LIST, "List a debtor's contact points", "GET", "/v1/debtors/{id}/contact-points"), false)
            .describe("A debtor's e-mails, phones, WhatsApp numbers and postal addresses, with consent (opted_in, unknown, opted_out), primary flag and delivery health. Filter by `channel`.")
            .read()
            .access(Scope::Read, Some("debtors.view"))
            .arg("channel", s::csv_of("Channel", CHANNELS))
            .list(&["created_at", "channel"])
            .args::<ListCps>()
            .output(s::list_output(cp_output()))
            .run(list_cps),
        manage(path_args(tool(name::CONTACT_POINTS_CREATE, "Add a contact point", "POST", "/v1/debtors/{id}/contact-points"), false))
            .describe("Adds a contact point to a debtor. The value is validated per channel: e-mail address; Brazilian phone number +55 with area code (10 digits landline, 11 mobile; SMS needs a mobile); free-text postal address. The first of a channel becomes primary; `is_primary: true` takes primary from the current one. Consent defaults to `unknown` (WhatsApp messages need `opted_in`).")
            .req("channel", s::one_of("Channel", CHANNELS))
            .req("value", s::text("E-mail address, phone number (+55…) or postal address", 3, 300))
            .arg("label", s::text("Free label, e.g. home, work, financeiro", 1, 50))
            .arg("is_primary", s::boolean("Make it the channel's primary contact point"))
            .arg("consent", s::one_of("Consent to be contacted (default unknown)", CONSENTS))
            .arg("opt_out_reason", s::text("Why the debtor opted out (with consent opted_out)", 1, 500))
            .args::<NewCp>()
            .output(cp_output())
            .run(create_cp),
        manage(path_args(tool(name::CONTACT_POINTS_UPDATE, "Update a contact point", "PATCH", "/v1/debtors/{id}/contact-points/{cp_id}"), true))
            .describe("Changes label, primary flag or consent of a contact point. Setting consent to opted_out records an opt-out (LGPD) that every sender honours at once.")
            .idempotent()
            .arg("label", s::text("Free label", 1, 50))
            .arg("is_primary", s::boolean("Make it (true) or stop it being (false) the channel's primary"))
            .arg("consent", s::one_of("Consent to be contacted", CONSENTS))
            .arg("opt_out_reason", s::text("Why the debtor opted out", 1, 500))
            .args::<CpPatch>()
            .output(cp_output())
            .run(update_cp),
        manage(path_args(tool(name::CONTACT_POINTS_DELETE, "Delete a contact point", "DELETE", "/v1/debtors/{id}/contact-points/{cp_id}"), true))
            .describe("Deletes a contact point of a debtor; if it was the channel's primary, the oldest remaining one of the channel becomes primary. Past deliveries keep their record.")
            .destructive()
            .idempotent()
            .args::<CpRef>()
            .confirm(describe_delete)
            .run(delete_cp),
    ]
}

/// The create handler (demo seeding drives it directly).
pub fn create_run() -> crate::tool::Run {
    create_cp
}

/// The update handler (demo seeding drives it directly).
pub fn update_run() -> crate::tool::Run {
    update_cp
}

/// Loads a contact point of a debtor of the caller's organization (`NOT_FOUND` when the
/// debtor or the contact point is not theirs, or they do not belong together).
pub fn load_cp(op: &mut Op<'_>, debtor_id: &str, cp_id: &str) -> Result<ContactPoint, DomainError> {
    load_debtor(op, debtor_id)?;
    let cp: ContactPoint = must(op.tx, Kind::ContactPoint, op.org, cp_id)?;
    if cp.debtor_id != debtor_id {
        return Err(DomainError::not_found("contact point", cp_id));
    }
    Ok(cp)
}

fn list_cps(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ListCps { id, channel } = op.args()?;
    let list_args: ListArgs = op.args()?;
    load_debtor(op, &id)?;
    let mut conds = vec![Cond::Eq("debtor_id", json!(id))];
    if let Some(ch) = channel {
        conds.push(Cond::In(
            "channel",
            ch.into_iter().map(Value::from).collect(),
        ));
    }
    let page = list_args.page();
    // A debtor has a handful of contact points: sorted and paged here.
    let mut all = by_debtor(op, conds)?;
    let (col, order) = list_args.sort(&[
        ("created_at", "created_at", Order::Asc),
        ("channel", "channel", Order::Asc),
    ]);
    if col == "channel" {
        all.sort_by(|a, b| a.channel.cmp(&b.channel));
    }
    if order == Order::Desc {
        all.reverse();
    }
    let total = all.len() as u64;
    let items: Vec<Value> = all
        .iter()
        .skip(page.offset() as usize)
        .take(page.per_page as usize)
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect();
    Ok(list(items, page, total))
}

fn consent_arg(consent: Option<String>) -> Result<Option<String>, DomainError> {
    let c = fields::trimmed(consent);
    if let Some(c) = &c {
        if !CONSENTS.contains(&c.as_str()) {
            return Err(DomainError::field(
                "consent",
                "must be opted_in, unknown or opted_out",
            ));
        }
    }
    Ok(c)
}

/// Unsets the primary flag of the debtor's other contact points of `cp`'s channel.
fn demote_others(op: &mut Op<'_>, cp: &ContactPoint) -> Result<(), DomainError> {
    let same = by_debtor(
        op,
        vec![
            Cond::Eq("debtor_id", json!(cp.debtor_id)),
            Cond::Eq("channel", json!(cp.channel)),
        ],
    )?;
    for mut other in same {
        if other.id != cp.id && other.is_primary {
            let before = other.clone();
            other.is_primary = false;
            other.updated_at = op.timestamp();
            save(op.tx, Kind::ContactPoint, op.org, &other)?;
            let changes = diff(&before, &other);
            op.event(
                "contact_point.updated",
                "contact_point",
                &other.id,
                &other,
                changes,
            )?;
        }
    }
    Ok(())
}

fn apply_consent(
    op: &Op<'_>,
    cp: &mut ContactPoint,
    consent: Option<String>,
    reason: Option<String>,
) -> Result<(), DomainError> {
    let target = consent.unwrap_or_else(|| cp.consent.clone());
    if reason.is_some() && target != "opted_out" {
        return Err(DomainError::field(
            "opt_out_reason",
            "only goes with consent opted_out",
        ));
    }
    if target == "opted_out" {
        if cp.consent != "opted_out" {
            cp.opted_out_at = Some(op.timestamp());
        }
        if reason.is_some() {
            cp.opt_out_reason = reason;
        }
    } else {
        cp.opted_out_at = None;
        cp.opt_out_reason = None;
    }
    cp.consent = target;
    Ok(())
}

fn create_cp(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: NewCp = op.args_strict()?;
    let debtor_id = args.id.as_str();
    let debtor: Debtor = load_debtor(op, debtor_id)?;
    if debtor.status != DebtorStatus::Active {
        return Err(DomainError::Conflict(format!(
            "debtor {debtor_id} is {}; contact points can only be added to active debtors",
            debtor.status
        )));
    }
    let channel = args.channel.as_str();
    if !CHANNELS.contains(&channel) {
        return Err(DomainError::field(
            "channel",
            "must be email, sms, whatsapp, phone or postal",
        ));
    }
    let value = normalize(channel, &args.value)?;
    let existing = of_debtor(op, debtor_id)?;
    if existing
        .iter()
        .any(|c| c.channel == channel && c.value == value)
    {
        return Err(DomainError::Conflict(format!(
            "debtor {debtor_id} already has the {channel} contact point {value}"
        )));
    }
    let first_of_channel = !existing
        .iter()
        .any(|c| c.channel == channel && c.is_primary);
    let now = op.timestamp();
    let mut cp = ContactPoint {
        id: op.new_id(),
        debtor_id: debtor_id.to_owned(),
        channel: channel.to_owned(),
        value,
        label: fields::trimmed(args.label),
        is_primary: args.is_primary.unwrap_or(first_of_channel),
        consent: "unknown".into(),
        status: ContactPointStatus::Active,
        created_at: now.clone(),
        updated_at: now,
        ..ContactPoint::default()
    };
    let consent = consent_arg(args.consent)?;
    apply_consent(op, &mut cp, consent, fields::trimmed(args.opt_out_reason))?;
    if cp.is_primary {
        demote_others(op, &cp)?;
    }
    save(op.tx, Kind::ContactPoint, op.org, &cp)?;
    op.event(
        "contact_point.created",
        "contact_point",
        &cp.id,
        &cp,
        Value::Null,
    )?;
    if cp.consent == "opted_out" {
        op.event(
            "contact_point.opted_out",
            "contact_point",
            &cp.id,
            &cp,
            Value::Null,
        )?;
    }
    Ok(created(cp))
}

fn update_cp(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: CpPatch = op.args_strict()?;
    let before = load_cp(op, &args.id, &args.cp_id)?;
    let mut cp = before.clone();
    if let Some(label) = args.label {
        cp.label = fields::trimmed(label);
    }
    if let Some(p) = args.is_primary {
        cp.is_primary = p;
    }
    let consent = consent_arg(args.consent)?;
    apply_consent(op, &mut cp, consent, fields::trimmed(args.opt_out_reason))?;
    if cp == before {
        return Ok(ok(cp));
    }
    if cp.is_primary && !before.is_primary {
        demote_others(op, &cp)?;
    }
    let cp = save_changed(op, &before, cp)?;
    Ok(ok(cp))
}

/// Saves `cp`, changed from `before`, and records it: `contact_point.updated` with the
/// changes, and `contact_point.opted_out` too when this change opted it out (the LGPD
/// opt-out is an event of its own, whoever made it: the tool or an unsubscribe link).
pub(crate) fn save_changed(
    op: &mut Op<'_>,
    before: &ContactPoint,
    mut cp: ContactPoint,
) -> Result<ContactPoint, DomainError> {
    cp.updated_at = op.timestamp();
    save(op.tx, Kind::ContactPoint, op.org, &cp)?;
    let changes = diff(before, &cp);
    let id = cp.id.clone();
    op.event(
        "contact_point.updated",
        "contact_point",
        &id,
        &cp,
        changes.clone(),
    )?;
    if cp.consent == "opted_out" && before.consent != "opted_out" {
        op.event(
            "contact_point.opted_out",
            "contact_point",
            &id,
            &cp,
            changes,
        )?;
    }
    Ok(cp)
}

fn describe_delete(op: &mut Op<'_>) -> Result<String, DomainError> {
    let CpRef { id, cp_id } = op.args()?;
    let cp = load_cp(op, &id, &cp_id)?;
    let debtor = load_debtor(op, &id)?;
    Ok(format!(
        "Delete the {} contact point {}{} of {} ({})? The ruler will no longer use it.",
        cp.channel,
        cp.value,
        if cp.is_primary { " (primary)" } else { "" },
        debtor.name,
        debtor.cnpj_cpf
    ))
}

fn delete_cp(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let CpRef { id, cp_id } = op.args_strict()?;
    let (debtor_id, cp_id) = (id.as_str(), cp_id.as_str());
    let cp = load_cp(op, debtor_id, cp_id)?;
    op.tx.delete(Kind::ContactPoint, op.org, cp_id)?;
    op.event(
        "contact_point.deleted",
        "contact_point",
        cp_id,
        &cp,
        Value::Null,
    )?;
    if cp.is_primary {
        let next = of_debtor(op, debtor_id)?
            .into_iter()
            .filter(|c| c.channel == cp.channel && c.status == ContactPointStatus::Active)
            .min_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
        if let Some(mut n) = next {
            let before = n.clone();
            n.is_primary = true;
            n.updated_at = op.timestamp();
            save(op.tx, Kind::ContactPoint, op.org, &n)?;
            let changes = diff(&before, &n);
            op.event("contact_point.updated", "contact_point", &n.id, &n, changes)?;
        }
    }
    Ok(Output::NoContent)
}
