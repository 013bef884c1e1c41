//! Schedule arithmetic shared by the preview tool and the engine: offsets in calendar
//! or business days, the send window, step conditions and template text.

use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use dunning_core::FieldIssue;
use serde_json::Value;
use std::collections::BTreeSet;

use super::args::issue;
use super::{Step, VARIABLES, Window, parse_hhmm};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::status::ChargeStatus;

/// `d` moved by `n` bank business days (negative: backwards); `n = 0` gives `d` itself
/// when it is a business day, else the next one.
pub fn shift_business_days(d: NaiveDate, n: i64) -> NaiveDate {
    if n == 0 {
        return calendar::next_business_day(d);
    }
    let step = Duration::days(n.signum());
    let mut left = n.abs();
    let mut cur = d;
    while left > 0 {
        cur += step;
        if calendar::is_business_day(cur) {
            left -= 1;
        }
    }
    cur
}

/// The date a step is planned for, before the send window: negative and zero offsets
/// count from the due date; positive ones from the effective due date (a due date on a
/// weekend or holiday is payable on the next business day, rules.md, so "days after due"
/// start there). Calendar days unless `business_days_only`.
pub fn nominal_date(step: &Step, due: NaiveDate) -> NaiveDate {
    let base = if step.offset_days > 0 {
        calendar::effective_due(due)
    } else {
        due
    };
    if step.business_days_only {
        shift_business_days(base, step.offset_days)
    } else {
        base + Duration::days(step.offset_days)
    }
}

/// When a step of a ruler fires for a charge due on `due`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The planned date (offset applied).
    pub nominal: NaiveDate,
    /// The send time inside the window (local), `None` if the window never opens.
    pub at: Option<NaiveDateTime>,
    /// Why `at` differs from the planned date and `send_at`, if it does.
    pub moved: Option<String>,
}

/// The slot of `step` for a charge due on `due` under `window`.
pub fn slot(step: &Step, window: &Window, due: NaiveDate) -> Slot {
    let nominal = nominal_date(step, due);
    let send_at = parse_hhmm(&step.send_at).unwrap_or(NaiveTime::MIN);
    let at = window.fit(nominal, send_at);
    let moved = match at {
        Some(a) if a != nominal.and_time(send_at) => Some(window.why_closed(nominal, send_at)),
        _ => None,
    };
    Slot { nominal, at, moved }
}

/// Why a step does not apply to a charge (its conditions), or `None` when it does.
pub fn condition_refusal(step: &Step, charge: &Value) -> Option<String> {
    let amount = Money::in_doc(charge, "amount");
    if let Some(min) = step.conditions.min_amount {
        if amount < min {
            return Some(format!(
                "charge amount {} is below the step's min_amount {}",
                amount, min
            ));
        }
    }
    let status = charge.get("status").and_then(Value::as_str).unwrap_or("");
    let among = |s: ChargeStatus| step.conditions.charge_status.contains(&s);
    if !step.conditions.charge_status.is_empty() && !status.parse().is_ok_and(among) {
        return Some(format!(
            "charge status {status} is not among the step's charge_status ({})",
            crate::status::joined(&step.conditions.charge_status)
        ));
    }
    None
}

/// The variables a template text uses, or why it is malformed.
pub fn template_variables(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            return Err("has an unclosed {{".into());
        };
        out.push(after[..j].trim().to_owned());
        rest = &after[j + 2..];
    }
    Ok(out)
}

/// Checks a template text: every `{{variable}}` must be one of [`VARIABLES`].
pub fn check_template_text(field: &str, text: &str, issues: &mut Vec<FieldIssue>) {
    match template_variables(text) {
        Err(why) => issues.push(issue(field, why)),
        Ok(vars) => {
            let unknown: BTreeSet<String> = vars
                .into_iter()
                .filter(|v| !VARIABLES.contains(&v.as_str()))
                .map(|v| format!("{{{{{v}}}}}"))
                .collect();
            if !unknown.is_empty() {
                let allowed: Vec<String> =
                    VARIABLES.iter().map(|v| format!("{{{{{v}}}}}")).collect();
                issues.push(issue(
                    field,
                    format!(
                        "unknown template variables {}; allowed: {}",
                        unknown.into_iter().collect::<Vec<_>>().join(", "),
                        allowed.join(" ")
                    ),
                ));
            }
        }
    }
}

/// Replaces every `{{variable}}` with its value (`vars` lookup; unknown ones render empty).
pub fn render_text(text: &str, vars: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            out.push_str(&rest[i..]);
            return out;
        };
        out.push_str(&vars(after[..j].trim()));
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    out
}
