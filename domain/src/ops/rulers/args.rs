//! Tool arguments of rulers and steps: parsing and validation, every issue named by its
//! field (`filters.min_amount`, `steps[2].template.body`, ...).

use dunning_core::FieldIssue;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

use super::{
    ACTIONS, CHANNELS, Conditions, DUNNABLE, Filters, OFFSET_RANGE, SendWindow, Step, Template,
    WEEKDAYS, check_template_text, parse_hhmm,
};
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::status::ChargeStatus;

pub(super) fn issue(field: &str, why: impl Into<String>) -> FieldIssue {
    FieldIssue {
        field: field.to_owned(),
        issue: why.into(),
    }
}

pub(super) fn fail(issues: Vec<FieldIssue>) -> Result<(), DomainError> {
    if issues.is_empty() {
        return Ok(());
    }
    let message = issues
        .iter()
        .map(|i| format!("{}: {}", i.field, i.issue))
        .collect::<Vec<_>>()
        .join("; ");
    Err(DomainError::Validation {
        message,
        details: issues,
    })
}

pub(super) fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_owned()
    } else {
        format!("{prefix}.{k}")
    }
}

pub(super) fn unknown_keys(
    obj: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) {
    for k in obj.keys() {
        if !known.contains(&k.as_str()) {
            out.push(issue(&join(prefix, k), "unknown field"));
        }
    }
}

/// A nullable string field: `None` absent, `Some(None)` null, `Some(Some)` a string.
pub(super) fn opt_text(
    obj: &Map<String, Value>,
    k: &str,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<Option<String>> {
    match obj.get(k)? {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        _ => {
            out.push(issue(&join(prefix, k), "must be a string"));
            None
        }
    }
}

pub(super) fn opt_amount(
    obj: &Map<String, Value>,
    k: &str,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<Option<Money>> {
    match obj.get(k)? {
        Value::Null => Some(None),
        Value::Number(n) => match n.as_f64().and_then(Money::from_brl) {
            Some(m) if m >= Money::ZERO => Some(Some(m)),
            _ => {
                out.push(issue(
                    &join(prefix, k),
                    "must be an amount in BRL ≥ 0 with at most 2 decimals",
                ));
                None
            }
        },
        _ => {
            out.push(issue(&join(prefix, k), "must be a number"));
            None
        }
    }
}

pub(super) fn opt_flag(
    obj: &Map<String, Value>,
    k: &str,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<bool> {
    match obj.get(k)? {
        Value::Bool(b) => Some(*b),
        _ => {
            out.push(issue(&join(prefix, k), "must be true or false"));
            None
        }
    }
}

pub(super) fn string_list(
    obj: &Map<String, Value>,
    k: &str,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<Vec<String>> {
    match obj.get(k)? {
        Value::Null => Some(Vec::new()),
        Value::Array(a) => {
            let strs: Option<Vec<String>> =
                a.iter().map(|v| v.as_str().map(str::to_owned)).collect();
            if strs.is_none() {
                out.push(issue(&join(prefix, k), "must be a list of strings"));
            }
            strs
        }
        _ => {
            out.push(issue(&join(prefix, k), "must be a list of strings"));
            None
        }
    }
}

pub(super) fn object<'v>(
    v: &'v Value,
    field: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<&'v Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => {
            out.push(issue(field, "must be an object"));
            None
        }
    }
}

/// Applies a `filters` object onto `f`.
pub(super) fn apply_filters(v: &Value, f: &mut Filters, out: &mut Vec<FieldIssue>) {
    let Some(m) = object(v, "filters", out) else {
        return;
    };
    unknown_keys(
        m,
        &["tags", "min_amount", "max_amount", "person_type"],
        "filters",
        out,
    );
    if let Some(t) = string_list(m, "tags", "filters", out) {
        f.tags = t;
    }
    if let Some(a) = opt_amount(m, "min_amount", "filters", out) {
        f.min_amount = a;
    }
    if let Some(a) = opt_amount(m, "max_amount", "filters", out) {
        f.max_amount = a;
    }
    if let Some(p) = opt_text(m, "person_type", "filters", out) {
        if p.as_deref()
            .is_some_and(|p| p != "natural" && p != "juridical")
        {
            out.push(issue("filters.person_type", "must be natural or juridical"));
        } else {
            f.person_type = p;
        }
    }
    if let (Some(lo), Some(hi)) = (f.min_amount, f.max_amount) {
        if lo > hi {
            out.push(issue(
                "filters.max_amount",
                "must not be below filters.min_amount",
            ));
        }
    }
}

/// Applies a `send_window` object onto `w`.
pub(super) fn apply_window(v: &Value, w: &mut SendWindow, out: &mut Vec<FieldIssue>) {
    let Some(m) = object(v, "send_window", out) else {
        return;
    };
    let p = "send_window";
    unknown_keys(
        m,
        &["start", "end", "weekdays", "saturday_end", "skip_holidays"],
        p,
        out,
    );
    for (k, slot) in [
        ("start", &mut w.start),
        ("end", &mut w.end),
        ("saturday_end", &mut w.saturday_end),
    ] {
        if let Some(t) = opt_text(m, k, p, out) {
            match t {
                Some(t) if parse_hhmm(&t).is_some() => *slot = t,
                _ => out.push(issue(&join(p, k), "must be a time HH:MM")),
            }
        }
    }
    if let Some(days) = string_list(m, "weekdays", p, out) {
        let mut bad: Vec<String> = Vec::new();
        let mut set = BTreeSet::new();
        for d in &days {
            match WEEKDAYS.iter().position(|x| x == d) {
                Some(i) => {
                    set.insert(i);
                }
                None => bad.push(d.clone()),
            }
        }
        if days.iter().any(|d| d == "sun") {
            out.push(issue(
                "send_window.weekdays",
                "sun is not allowed: debtors are never contacted on Sundays",
            ));
        } else if !bad.is_empty() {
            out.push(issue(
                "send_window.weekdays",
                format!(
                    "unknown days {}; use mon, tue, wed, thu, fri, sat",
                    bad.join(", ")
                ),
            ));
        } else if set.is_empty() {
            out.push(issue("send_window.weekdays", "must name at least one day"));
        } else {
            w.weekdays = set.into_iter().map(|i| WEEKDAYS[i].to_owned()).collect();
        }
    }
    if let Some(b) = opt_flag(m, "skip_holidays", p, out) {
        w.skip_holidays = b;
    }
    if let (Some(a), Some(b)) = (parse_hhmm(&w.start), parse_hhmm(&w.end)) {
        if a >= b {
            out.push(issue("send_window.end", "must be after send_window.start"));
        }
    }
    if let (Some(a), Some(b)) = (parse_hhmm(&w.start), parse_hhmm(&w.saturday_end)) {
        if w.weekdays.iter().any(|d| d == "sat") && a >= b {
            out.push(issue(
                "send_window.saturday_end",
                "must be after send_window.start when Saturdays are sending days",
            ));
        }
    }
}

pub(super) const STEP_FIELDS: &[&str] = &[
    "name",
    "position",
    "offset_days",
    "channel",
    "action",
    "template",
    "send_at",
    "business_days_only",
    "conditions",
    "active",
];

/// Applies step fields from `m` onto `st`; `prefix` names nested fields in issues
/// (`steps[2]` inside a ruler, empty for the step tools). Returns the `position` asked.
pub(super) fn apply_step(
    m: &Map<String, Value>,
    st: &mut Step,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<i64> {
    if let Some(n) = opt_text(m, "name", prefix, out) {
        st.name = n;
    }
    let position = match m.get("position") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64() {
            Some(p) if p >= 1 => Some(p),
            _ => {
                out.push(issue(&join(prefix, "position"), "must be an integer ≥ 1"));
                None
            }
        },
    };
    if let Some(v) = m.get("offset_days") {
        match v.as_i64() {
            Some(d) if (OFFSET_RANGE.0..=OFFSET_RANGE.1).contains(&d) => st.offset_days = d,
            _ => out.push(issue(
                &join(prefix, "offset_days"),
                format!(
                    "must be an integer from {} to {} (days relative to the due date; negative = before)",
                    OFFSET_RANGE.0, OFFSET_RANGE.1
                ),
            )),
        }
    }
    for (k, allowed, slot) in [
        ("channel", CHANNELS, &mut st.channel),
        ("action", ACTIONS, &mut st.action),
    ] {
        if let Some(v) = opt_text(m, k, prefix, out) {
            match v {
                Some(v) if allowed.contains(&v.as_str()) => *slot = v,
                _ => out.push(issue(
                    &join(prefix, k),
                    format!("must be one of {}", allowed.join(", ")),
                )),
            }
        }
    }
    if let Some(v) = m.get("template") {
        let tp = join(prefix, "template");
        if let Some(t) = object(v, &tp, out) {
            unknown_keys(t, &["subject", "body"], &tp, out);
            if let Some(sj) = opt_text(t, "subject", &tp, out) {
                st.template.subject = sj;
            }
            if let Some(b) = opt_text(t, "body", &tp, out) {
                st.template.body = b.unwrap_or_default();
            }
        }
    }
    if let Some(v) = opt_text(m, "send_at", prefix, out) {
        match v {
            Some(v) if parse_hhmm(&v).is_some() => st.send_at = v,
            _ => out.push(issue(&join(prefix, "send_at"), "must be a time HH:MM")),
        }
    }
    if let Some(b) = opt_flag(m, "business_days_only", prefix, out) {
        st.business_days_only = b;
    }
    if let Some(b) = opt_flag(m, "active", prefix, out) {
        st.active = b;
    }
    if let Some(v) = m.get("conditions") {
        let cp = join(prefix, "conditions");
        if let Some(c) = object(v, &cp, out) {
            unknown_keys(c, &["min_amount", "charge_status"], &cp, out);
            if let Some(a) = opt_amount(c, "min_amount", &cp, out) {
                st.conditions.min_amount = a;
            }
            if let Some(list) = string_list(c, "charge_status", &cp, out) {
                let bad: Vec<&String> = list
                    .iter()
                    .filter(|s| !s.parse::<ChargeStatus>().is_ok_and(ChargeStatus::is_open))
                    .collect();
                if bad.is_empty() {
                    st.conditions.charge_status =
                        list.iter().filter_map(|s| s.parse().ok()).collect();
                } else {
                    out.push(issue(
                        &join(&cp, "charge_status"),
                        format!(
                            "{} cannot be dunned; use among {}",
                            bad.iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                            crate::status::joined(DUNNABLE)
                        ),
                    ));
                }
            }
        }
    }
    position
}

/// Checks a complete step (after defaults and patches).
pub(super) fn check_step(st: &Step, prefix: &str, out: &mut Vec<FieldIssue>) {
    if st.action != "notify" && st.channel != "task" {
        out.push(issue(
            &join(prefix, "channel"),
            format!(
                "a {} step must use channel task: negativation, protest and escalation are never executed automatically, a person decides",
                st.action
            ),
        ));
    }
    let talks =
        st.action == "notify" && matches!(st.channel.as_str(), "email" | "sms" | "whatsapp");
    if talks && st.template.body.trim().is_empty() {
        out.push(issue(
            &join(prefix, "template.body"),
            format!("is required for {} messages", st.channel),
        ));
    }
    if talks
        && st.channel == "email"
        && st
            .template
            .subject
            .as_deref()
            .is_none_or(|s| s.trim().is_empty())
    {
        out.push(issue(
            &join(prefix, "template.subject"),
            "is required for e-mail",
        ));
    }
    if st.template.body.len() > 5000 {
        out.push(issue(
            &join(prefix, "template.body"),
            "must be at most 5000 characters",
        ));
    }
    check_template_text(&join(prefix, "template.body"), &st.template.body, out);
    if let Some(sj) = &st.template.subject {
        check_template_text(&join(prefix, "template.subject"), sj, out);
    }
}

pub(super) fn blank_step(id: String, ruler_id: &str, now: &str) -> Step {
    Step {
        id,
        ruler_id: ruler_id.to_owned(),
        position: 0,
        name: None,
        offset_days: 0,
        channel: String::new(),
        action: "notify".into(),
        template: Template::default(),
        send_at: "09:00".into(),
        business_days_only: false,
        conditions: Conditions::default(),
        active: true,
        created_at: now.to_owned(),
        updated_at: now.to_owned(),
    }
}

/// Builds a new step from an object; `offset_days` and `channel` are required.
pub(super) fn new_step(
    m: &Map<String, Value>,
    st: &mut Step,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<i64> {
    for k in ["offset_days", "channel"] {
        if m.get(k).is_none_or(Value::is_null) {
            out.push(issue(&join(prefix, k), "is required"));
        }
    }
    let pos = apply_step(m, st, prefix, out);
    if !st.channel.is_empty() {
        check_step(st, prefix, out);
    }
    pos
}
