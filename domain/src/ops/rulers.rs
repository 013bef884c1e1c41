//! Rulers (réguas de cobrança) and their steps (domain.md §1, tools #41–#51).
//!
//! A ruler is a schedule of steps relative to a charge's due date, sent inside the
//! ruler's send window in the organization's time zone (domain §1.2 rule 4). This module
//! holds the ruler and step documents, their tools, and the pure schedule arithmetic
//! (offsets in calendar or business days, send window, holidays) that both the preview
//! tool and the engine ([`crate::engine`]) use, so a preview is exactly what the engine
//! will do.
//!
//! Machine (domain §1.1): `draft→active↔paused`, `draft|active|paused→archived`
//! (terminal); the default ruler cannot be archived.
//!
//! Which ruler a charge follows ([`resolve`]): the charge's `ruler_id`, else its
//! debtor's `ruler_id` (an archived one is skipped), else the first active non-default
//! ruler whose `filters` match the charge (segment rulers), else the organization's
//! default ruler when its filters match.

use std::collections::BTreeSet;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use dunning_core::{FieldIssue, Output, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::DomainError;
use crate::op::{Op, created, list, ok};
use crate::rules::{calendar, money};
use crate::schema as s;
use crate::spec::{ToolBuilder, ToolSpec, tool};
use crate::store::{Cond, Kind, Order, Query, Tx, find, load, must, save};

/// Step channels.
pub const CHANNELS: &[&str] = &["email", "sms", "whatsapp", "webhook", "task"];
/// Step actions. Only `notify` talks to the debtor; the others create a task for a person.
pub const ACTIONS: &[&str] = &["notify", "negativate", "protest", "escalate"];
/// Template variables (domain §1, step).
pub const VARIABLES: &[&str] = &[
    "debtor.name",
    "charge.amount",
    "charge.due_date",
    "charge.updated_amount",
    "charge.boleto.line",
    "charge.pix.emv",
    "charge.url",
];
/// Charge statuses dunning applies to (rule 6 stops on every other one).
pub const DUNNABLE: &[&str] = &["pending", "overdue", "partially_paid"];
/// Day names of a send window (Sunday is never a collection day).
pub const WEEKDAYS: &[&str] = &["mon", "tue", "wed", "thu", "fri", "sat"];
/// Ruler statuses.
pub const STATUSES: &[&str] = &["draft", "active", "paused", "archived"];
/// Smallest and largest step offset (days relative to the due date).
pub const OFFSET_RANGE: (i64, i64) = (-30, 365);

// ---------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------

/// Which charges a ruler applies to when none is assigned explicitly.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Filters {
    /// The charge or its debtor carries at least one of these tags.
    pub tags: Vec<String>,
    /// Charge amount at least this (BRL).
    pub min_amount: Option<f64>,
    /// Charge amount at most this (BRL).
    pub max_amount: Option<f64>,
    /// Debtor `natural` or `juridical`.
    pub person_type: Option<String>,
}

impl Filters {
    /// Whether no filter is set.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
            && self.min_amount.is_none()
            && self.max_amount.is_none()
            && self.person_type.is_none()
    }

    /// Whether a charge (and its debtor), as JSON documents, pass the filters.
    pub fn matches(&self, charge: &Value, debtor: &Value) -> bool {
        let amount = charge
            .get("amount")
            .and_then(Value::as_f64)
            .unwrap_or_default();
        if self.min_amount.is_some_and(|m| amount < m) {
            return false;
        }
        if self.max_amount.is_some_and(|m| amount > m) {
            return false;
        }
        if let Some(pt) = &self.person_type {
            if debtor.get("person_type").and_then(Value::as_str) != Some(pt.as_str()) {
                return false;
            }
        }
        if !self.tags.is_empty() {
            let tags = |v: &Value| -> Vec<String> {
                v.get("tags")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut have = tags(charge);
            have.extend(tags(debtor));
            if !self.tags.iter().any(|t| have.contains(t)) {
                return false;
            }
        }
        true
    }
}

/// When messages may go out (organization time zone).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SendWindow {
    /// Opening time `HH:MM` (default 08:00).
    pub start: String,
    /// Closing time `HH:MM`, exclusive (default 20:00).
    pub end: String,
    /// Days messages may go out, among `mon`…`sat` (default Monday to Saturday).
    pub weekdays: Vec<String>,
    /// Closing time on Saturdays (default 14:00; never later than `end`).
    pub saturday_end: String,
    /// Skip national and bank holidays (default true).
    pub skip_holidays: bool,
}

impl Default for SendWindow {
    fn default() -> Self {
        Self {
            start: "08:00".into(),
            end: "20:00".into(),
            weekdays: WEEKDAYS.iter().map(|d| (*d).to_owned()).collect(),
            saturday_end: "14:00".into(),
            skip_holidays: true,
        }
    }
}

/// Parses `HH:MM`.
pub fn parse_hhmm(s: &str) -> Option<NaiveTime> {
    let (h, m) = s.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    NaiveTime::from_hms_opt(h.parse().ok()?, m.parse().ok()?, 0)
}

impl SendWindow {
    /// The window as times and days (an invalid stored value falls back to the default).
    pub fn window(&self) -> Window {
        let d = Self::default();
        let t = |s: &str, dflt: &str| {
            parse_hhmm(s)
                .or_else(|| parse_hhmm(dflt))
                .unwrap_or(NaiveTime::MIN)
        };
        let mut days = [false; 7];
        for w in &self.weekdays {
            if let Some(i) = WEEKDAYS.iter().position(|x| x == w) {
                days[i] = true;
            }
        }
        if !days.iter().any(|x| *x) {
            days = [true, true, true, true, true, true, false];
        }
        Window {
            start: t(&self.start, &d.start),
            end: t(&self.end, &d.end),
            saturday_end: t(&self.saturday_end, &d.saturday_end),
            days,
            skip_holidays: self.skip_holidays,
        }
    }

    /// Human description, e.g. `Mon–Fri 08:00–20:00, Sat 08:00–14:00, no Sundays or holidays`.
    pub fn describe(&self) -> String {
        let w = self.window();
        let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        let weekdays: Vec<&str> = (0..5).filter(|i| w.days[*i]).map(|i| names[i]).collect();
        let mut parts = Vec::new();
        if !weekdays.is_empty() {
            let days = if weekdays.len() == 5 {
                "Mon–Fri".to_owned()
            } else {
                weekdays.join(", ")
            };
            parts.push(format!(
                "{days} {}–{}",
                w.start.format("%H:%M"),
                w.end.format("%H:%M")
            ));
        }
        if w.days[5] {
            parts.push(format!(
                "Sat {}–{}",
                w.start.format("%H:%M"),
                w.end.min(w.saturday_end).format("%H:%M")
            ));
        }
        parts.push(if w.skip_holidays {
            "no Sundays or holidays".to_owned()
        } else {
            "no Sundays".to_owned()
        });
        parts.join(", ")
    }
}

/// A parsed send window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Opening time.
    pub start: NaiveTime,
    /// Closing time (exclusive).
    pub end: NaiveTime,
    /// Closing time on Saturdays.
    pub saturday_end: NaiveTime,
    /// Allowed days, Monday first (Sunday is always false).
    pub days: [bool; 7],
    /// Skip holidays.
    pub skip_holidays: bool,
}

/// How far ahead the window search looks before giving up.
const SEARCH_DAYS: i64 = 400;

impl Window {
    /// The closing time of `d`, or `None` when nothing may be sent that day.
    pub fn day_end(&self, d: NaiveDate) -> Option<NaiveTime> {
        let wd = d.weekday();
        if wd == Weekday::Sun || !self.days[wd.num_days_from_monday() as usize] {
            return None;
        }
        if self.skip_holidays && calendar::is_holiday(d) {
            return None;
        }
        let end = if wd == Weekday::Sat {
            self.end.min(self.saturday_end)
        } else {
            self.end
        };
        (end > self.start).then_some(end)
    }

    /// Whether `at` (local) is inside the window.
    pub fn allows(&self, at: NaiveDateTime) -> bool {
        self.day_end(at.date())
            .is_some_and(|end| at.time() >= self.start && at.time() < end)
    }

    /// The earliest allowed instant at or after `at` (local).
    pub fn next_open(&self, at: NaiveDateTime) -> Option<NaiveDateTime> {
        if self.allows(at) {
            return Some(at);
        }
        if let Some(end) = self.day_end(at.date()) {
            if at.time() < self.start {
                return Some(at.date().and_time(self.start));
            }
            debug_assert!(at.time() >= end);
        }
        (1..=SEARCH_DAYS)
            .map(|i| at.date() + Duration::days(i))
            .find(|d| self.day_end(*d).is_some())
            .map(|d| d.and_time(self.start))
    }

    /// Where a step planned for `date` at `send_at` goes: that day at `send_at` when
    /// allowed (or at the opening time when `send_at` is earlier); otherwise the next
    /// allowed day, at `send_at` when it fits that day's window, else at the opening.
    pub fn fit(&self, date: NaiveDate, send_at: NaiveTime) -> Option<NaiveDateTime> {
        if let Some(end) = self.day_end(date) {
            if send_at < self.start {
                return Some(date.and_time(self.start));
            }
            if send_at < end {
                return Some(date.and_time(send_at));
            }
        }
        (1..=SEARCH_DAYS)
            .map(|i| date + Duration::days(i))
            .find_map(|d| {
                let end = self.day_end(d)?;
                let t = if send_at >= self.start && send_at < end {
                    send_at
                } else {
                    self.start
                };
                Some(d.and_time(t))
            })
    }

    /// Why nothing may be sent on `d` at `t` (for previews and refusals).
    pub fn why_closed(&self, d: NaiveDate, t: NaiveTime) -> String {
        let wd = d.weekday();
        if wd == Weekday::Sun {
            return format!("{d} is a Sunday");
        }
        if self.skip_holidays && calendar::is_holiday(d) {
            return format!("{d} is a holiday");
        }
        if !self.days[wd.num_days_from_monday() as usize] {
            return format!("{d} ({wd}) is not a sending day of the window");
        }
        match self.day_end(d) {
            Some(_) if t < self.start => format!(
                "{} is before the window opens ({})",
                t.format("%H:%M"),
                self.start.format("%H:%M")
            ),
            Some(end) => format!(
                "{} is after the window closes ({}{})",
                t.format("%H:%M"),
                end.format("%H:%M"),
                if wd == Weekday::Sat {
                    " on Saturdays"
                } else {
                    ""
                }
            ),
            None => format!("{d} has no sending hours"),
        }
    }
}

/// A step's message template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Template {
    /// Subject (e-mail).
    pub subject: Option<String>,
    /// Body, with `{{variables}}`.
    pub body: String,
}

/// When a step applies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Conditions {
    /// Charge amount at least this (BRL).
    pub min_amount: Option<f64>,
    /// Charge status among these (empty: any dunnable status).
    pub charge_status: Vec<String>,
}

/// A step of a ruler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// UUID.
    pub id: String,
    /// The ruler.
    pub ruler_id: String,
    /// 1-based order within the ruler.
    pub position: u32,
    /// Optional label.
    #[serde(default)]
    pub name: Option<String>,
    /// Days relative to the due date (negative: before).
    pub offset_days: i64,
    /// `email`, `sms`, `whatsapp`, `webhook` or `task`.
    pub channel: String,
    /// `notify`, `negativate`, `protest` or `escalate`.
    pub action: String,
    /// Message template.
    pub template: Template,
    /// Local time of day `HH:MM`.
    pub send_at: String,
    /// Count `offset_days` in bank business days.
    pub business_days_only: bool,
    /// When the step applies.
    pub conditions: Conditions,
    /// Inactive steps are kept but never fire.
    pub active: bool,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// A ruler.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ruler {
    /// UUID.
    pub id: String,
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// `draft`, `active`, `paused` or `archived`.
    pub status: String,
    /// The organization's fallback ruler.
    pub is_default: bool,
    /// Segment filters.
    #[serde(default)]
    pub filters: Filters,
    /// Send window.
    #[serde(default)]
    pub send_window: SendWindow,
    /// Always true: dunning stops when the charge is paid.
    pub stop_on_payment: bool,
    /// Why paused.
    #[serde(default)]
    pub pause_reason: Option<String>,
    /// When last activated.
    #[serde(default)]
    pub activated_at: Option<String>,
    /// When last paused.
    #[serde(default)]
    pub paused_at: Option<String>,
    /// When archived.
    #[serde(default)]
    pub archived_at: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

// ---------------------------------------------------------------------------------
// Schedule arithmetic (shared with the engine)
// ---------------------------------------------------------------------------------

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
/// weekend or holiday is payable on the next business day, rule 5, so "days after due"
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

/// Local date-time as an RFC 3339 timestamp in the organization's zone.
pub fn local_timestamp(at: NaiveDateTime) -> String {
    format!("{}-03:00", at.format("%Y-%m-%dT%H:%M:%S"))
}

/// Why a step does not apply to a charge (its conditions), or `None` when it does.
pub fn condition_refusal(step: &Step, charge: &Value) -> Option<String> {
    let amount = charge
        .get("amount")
        .and_then(Value::as_f64)
        .unwrap_or_default();
    if let Some(min) = step.conditions.min_amount {
        if amount < min {
            return Some(format!(
                "charge amount {} is below the step's min_amount {}",
                money::format_brl(money::cents(amount).unwrap_or_default()),
                money::format_brl(money::cents(min).unwrap_or_default())
            ));
        }
    }
    let status = charge.get("status").and_then(Value::as_str).unwrap_or("");
    if !step.conditions.charge_status.is_empty()
        && !step.conditions.charge_status.iter().any(|s| s == status)
    {
        return Some(format!(
            "charge status {status} is not among the step's charge_status ({})",
            step.conditions.charge_status.join(", ")
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

// ---------------------------------------------------------------------------------
// Loading and resolution
// ---------------------------------------------------------------------------------

/// Loads a ruler of the caller's organization or answers `NOT_FOUND`.
pub fn load_ruler(tx: &mut dyn Tx, org: &str, id: &str) -> Result<Ruler, DomainError> {
    must(tx, Kind::Ruler, org, id)
}

/// The steps of a ruler, by position.
pub fn steps_of(tx: &mut dyn Tx, org: &str, ruler_id: &str) -> Result<Vec<Step>, DomainError> {
    let q = Query {
        conds: vec![Cond::Eq("ruler_id", json!(ruler_id))],
        sort: ("position", Order::Asc),
        limit: None,
        offset: 0,
    };
    find(tx, Kind::Step, org, &q)
}

/// The ruler a charge follows (any status but archived), see the module docs.
pub fn resolve(
    tx: &mut dyn Tx,
    org: &str,
    charge: &Value,
    debtor: &Value,
) -> Result<Option<Ruler>, DomainError> {
    let rulers: Vec<Ruler> = find(
        tx,
        Kind::Ruler,
        org,
        &Query::all().with(Cond::In(
            "status",
            vec![json!("draft"), json!("active"), json!("paused")],
        )),
    )?;
    Ok(resolve_among(&rulers, charge, debtor).cloned())
}

/// [`resolve`] among already loaded non-archived `rulers` (oldest first).
pub fn resolve_among<'r>(rulers: &'r [Ruler], charge: &Value, debtor: &Value) -> Option<&'r Ruler> {
    for holder in [charge, debtor] {
        if let Some(id) = holder.get("ruler_id").and_then(Value::as_str) {
            if let Some(r) = rulers.iter().find(|r| r.id == id && r.status != "archived") {
                return Some(r);
            }
        }
    }
    rulers
        .iter()
        .find(|r| {
            r.status == "active"
                && !r.is_default
                && !r.filters.is_empty()
                && r.filters.matches(charge, debtor)
        })
        .or_else(|| {
            rulers.iter().find(|r| {
                r.is_default && r.status != "archived" && r.filters.matches(charge, debtor)
            })
        })
}

// ---------------------------------------------------------------------------------
// Argument parsing and validation
// ---------------------------------------------------------------------------------

fn issue(field: &str, why: impl Into<String>) -> FieldIssue {
    FieldIssue {
        field: field.to_owned(),
        issue: why.into(),
    }
}

fn fail(issues: Vec<FieldIssue>) -> Result<(), DomainError> {
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

fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_owned()
    } else {
        format!("{prefix}.{k}")
    }
}

fn unknown_keys(obj: &Map<String, Value>, known: &[&str], prefix: &str, out: &mut Vec<FieldIssue>) {
    for k in obj.keys() {
        if !known.contains(&k.as_str()) {
            out.push(issue(&join(prefix, k), "unknown field"));
        }
    }
}

/// A nullable string field: `None` absent, `Some(None)` null, `Some(Some)` a string.
fn opt_text(
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

fn opt_amount(
    obj: &Map<String, Value>,
    k: &str,
    prefix: &str,
    out: &mut Vec<FieldIssue>,
) -> Option<Option<f64>> {
    match obj.get(k)? {
        Value::Null => Some(None),
        Value::Number(n) => match n.as_f64().and_then(money::cents) {
            Some(c) if c >= 0 => Some(Some(money::brl(c))),
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

fn opt_flag(
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

fn string_list(
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

fn object<'v>(
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
fn apply_filters(v: &Value, f: &mut Filters, out: &mut Vec<FieldIssue>) {
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
fn apply_window(v: &Value, w: &mut SendWindow, out: &mut Vec<FieldIssue>) {
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

const STEP_FIELDS: &[&str] = &[
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
fn apply_step(
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
                    .filter(|s| !DUNNABLE.contains(&s.as_str()))
                    .collect();
                if bad.is_empty() {
                    st.conditions.charge_status = list;
                } else {
                    out.push(issue(
                        &join(&cp, "charge_status"),
                        format!(
                            "{} cannot be dunned; use among {}",
                            bad.iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", "),
                            DUNNABLE.join(", ")
                        ),
                    ));
                }
            }
        }
    }
    position
}

/// Checks a complete step (after defaults and patches).
fn check_step(st: &Step, prefix: &str, out: &mut Vec<FieldIssue>) {
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

fn blank_step(id: String, ruler_id: &str, now: &str) -> Step {
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
fn new_step(
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

// ---------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------

fn filters_schema() -> Value {
    s::object(
        "Which charges this ruler applies to when none is assigned explicitly (charge or debtor ruler_id): all set filters must match",
        &[
            (
                "tags",
                s::array(
                    "The charge or its debtor carries at least one of these tags",
                    s::text("tag", 1, 50),
                ),
            ),
            ("min_amount", s::money("Charge amount at least")),
            ("max_amount", s::money("Charge amount at most")),
            (
                "person_type",
                s::one_of("Debtor type", &["natural", "juridical"]),
            ),
        ],
        &[],
    )
}

fn window_schema() -> Value {
    s::object(
        "When messages may go out, in the organization's time zone (default Mon–Fri 08:00–20:00, Sat 08:00–14:00, never Sundays or holidays)",
        &[
            ("start", s::string("Opening time HH:MM (default 08:00)")),
            (
                "end",
                s::string("Closing time HH:MM, exclusive (default 20:00)"),
            ),
            (
                "weekdays",
                s::array(
                    "Sending days (default mon…sat; sun is never allowed)",
                    s::one_of("day", WEEKDAYS),
                ),
            ),
            (
                "saturday_end",
                s::string("Closing time on Saturdays HH:MM (default 14:00)"),
            ),
            (
                "skip_holidays",
                s::boolean("Skip national and bank holidays (default true)"),
            ),
        ],
        &[],
    )
}

fn template_desc() -> String {
    format!(
        "Message template. Variables: {}. Every message also carries the creditor's name and CNPJ (CDC art. 42-A), added by the server",
        VARIABLES
            .iter()
            .map(|v| format!("{{{{{v}}}}}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn step_props() -> Vec<(&'static str, Value)> {
    vec![
        ("name", s::text("Optional label", 1, 100)),
        (
            "position",
            s::integer("1-based order in the ruler (default: last)", 1, 1000),
        ),
        (
            "offset_days",
            s::integer(
                "Days relative to the due date, −30 to 365 (negative = before the due date); positive offsets count from the effective due date",
                -30,
                365,
            ),
        ),
        (
            "channel",
            s::one_of(
                "Channel; negativate/protest/escalate steps use task",
                CHANNELS,
            ),
        ),
        (
            "action",
            s::one_of(
                "notify talks to the debtor; negativate, protest and escalate create a task for a person, never executed automatically",
                ACTIONS,
            ),
        ),
        (
            "template",
            s::object(
                &template_desc(),
                &[
                    ("subject", s::text("Subject (required for e-mail)", 1, 200)),
                    ("body", s::text("Body", 1, 5000)),
                ],
                &[],
            ),
        ),
        (
            "send_at",
            s::string(
                "Local time of day HH:MM (default 09:00), moved into the send window when outside",
            ),
        ),
        (
            "business_days_only",
            s::boolean("Count offset_days in bank business days (default: calendar days)"),
        ),
        (
            "conditions",
            s::object(
                "When the step applies",
                &[
                    ("min_amount", s::money("Charge amount at least")),
                    (
                        "charge_status",
                        s::array("Charge status among these", s::one_of("status", DUNNABLE)),
                    ),
                ],
                &[],
            ),
        ),
        (
            "active",
            s::boolean("Inactive steps never fire (default true)"),
        ),
    ]
}

fn step_object_schema() -> Value {
    s::object("A step", &step_props(), &["offset_days", "channel"])
}

fn with_step_args(mut b: ToolBuilder, create: bool) -> ToolBuilder {
    for (k, v) in step_props() {
        b = if create && (k == "offset_days" || k == "channel") {
            b.req(k, v)
        } else {
            b.arg(k, v)
        };
    }
    b
}

fn ruler_output() -> Value {
    s::entity_output(&["id", "name", "status", "is_default", "send_window", "steps"])
}

fn step_output() -> Value {
    s::entity_output(&[
        "id",
        "ruler_id",
        "position",
        "offset_days",
        "channel",
        "action",
    ])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool("dunning_rulers_list", "List rulers", "GET", "/v1/rulers")
            .describe("Lists the organization's dunning rulers (réguas) with their status, default flag, send window and number of steps.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .arg("status", s::csv_of("Ruler status", STATUSES))
            .list(&["name", "created_at"])
            .output(s::list_output(s::entity_output(&["id", "name", "status", "is_default", "steps_count"])))
            .run(list_rulers),
        tool("dunning_rulers_get", "Get a ruler", "GET", "/v1/rulers/{id}")
            .describe("One ruler with its filters, send window and steps in order.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .req("id", s::id("Ruler id"))
            .output(ruler_output())
            .run(get_ruler),
        tool("dunning_rulers_create", "Create a ruler", "POST", "/v1/rulers")
            .describe("Creates a ruler in draft with its steps. Activate it with dunning_rulers_activate. Template variables are checked; negativate/protest/escalate steps only create tasks for a person.")
            .access(Scope::Write, Some("rulers.manage"))
            .req("name", s::text("Name", 1, 120))
            .arg("description", s::text("Description", 1, 1000))
            .arg("is_default", s::boolean("Make it the organization's default ruler (the previous default stops being default)"))
            .arg("filters", filters_schema())
            .arg("send_window", window_schema())
            .arg("steps", s::array_max("Steps, in order", step_object_schema(), 50))
            .output(ruler_output())
            .run(create_ruler),
        tool("dunning_rulers_update", "Update a ruler", "PATCH", "/v1/rulers/{id}")
            .describe("Changes the given fields of a ruler (name, description, is_default, filters, send_window); steps change with the dunning_steps_* tools. Archived rulers cannot change.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .arg("name", s::text("Name", 1, 120))
            .arg("description", s::text("Description", 1, 1000))
            .arg("is_default", s::boolean("Make it (true) or stop it being (false) the default ruler"))
            .arg("filters", filters_schema())
            .arg("send_window", window_schema())
            .output(ruler_output())
            .run(update_ruler),
        tool("dunning_rulers_activate", "Activate a ruler", "POST", "/v1/rulers/{id}/activate")
            .describe("Starts (draft) or resumes (paused) a ruler: its steps fire for the charges that follow it. Needs at least one active step.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .output(ruler_output())
            .run(activate_ruler),
        tool("dunning_rulers_pause", "Pause a ruler", "POST", "/v1/rulers/{id}/pause")
            .describe("Pauses an active ruler: none of its steps fire until it is activated again.")
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .arg("reason", s::text("Why it is paused", 1, 500))
            .output(ruler_output())
            .run(pause_ruler),
        tool("dunning_rulers_archive", "Archive a ruler", "POST", "/v1/rulers/{id}/archive")
            .describe("Archives a ruler for good: it never fires again and cannot be edited; charges assigned to it fall back to their debtor's ruler or the default ruler. The default ruler cannot be archived.")
            .destructive()
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .output(ruler_output())
            .confirm(describe_archive)
            .run(archive_ruler),
        tool("dunning_rulers_preview", "Preview a ruler", "GET", "/v1/rulers/{id}/preview")
            .describe("The schedule a ruler would follow for a charge (charge_id) or a hypothetical one (due_date and amount): each step's date and local time after offsets, business days, send window and holidays, whether it applies, and the rendered message.")
            .read()
            .access(Scope::Read, Some("rulers.view"))
            .req("id", s::id("Ruler id"))
            .arg("charge_id", s::id("A charge of the organization"))
            .arg("due_date", s::date("Due date of a hypothetical charge"))
            .arg("amount", s::money("Amount of a hypothetical charge"))
            .output(s::entity_output(&["ruler_id", "due_date", "schedule"]))
            .run(preview_ruler),
        with_step_args(
            tool("dunning_steps_create", "Add a step", "POST", "/v1/rulers/{id}/steps")
                .describe("Adds a step to a ruler (at `position`, default last). Template variables are checked.")
                .access(Scope::Write, Some("rulers.manage"))
                .req("id", s::id("Ruler id")),
            true,
        )
        .output(step_output())
        .run(create_step),
        with_step_args(
            tool("dunning_steps_update", "Update a step", "PATCH", "/v1/rulers/{id}/steps/{step_id}")
                .describe("Changes the given fields of a step; `position` moves it.")
                .idempotent()
                .access(Scope::Write, Some("rulers.manage"))
                .req("id", s::id("Ruler id"))
                .req("step_id", s::id("Step id")),
            false,
        )
        .output(step_output())
        .run(update_step),
        tool("dunning_steps_delete", "Delete a step", "DELETE", "/v1/rulers/{id}/steps/{step_id}")
            .describe("Removes a step from a ruler; deliveries it already made are kept.")
            .destructive()
            .idempotent()
            .access(Scope::Write, Some("rulers.manage"))
            .req("id", s::id("Ruler id"))
            .req("step_id", s::id("Step id"))
            .confirm(describe_delete_step)
            .run(delete_step),
    ]
}

// ---------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------

const SORTS: &[(&str, &str, Order)] = &[
    ("name", "name", Order::Asc),
    ("created_at", "created_at", Order::Desc),
];

/// The ruler as the API shows it: the document plus `steps` and `steps_count`.
pub fn view(ruler: &Ruler, steps: &[Step]) -> Value {
    let mut v = serde_json::to_value(ruler).unwrap_or(Value::Null);
    v["steps_count"] = json!(steps.len());
    v["steps"] = serde_json::to_value(steps).unwrap_or(Value::Null);
    v
}

fn full_view(op: &mut Op<'_>, ruler: &Ruler) -> Result<Value, DomainError> {
    let steps = steps_of(op.tx, op.org, &ruler.id)?;
    Ok(view(ruler, &steps))
}

fn list_rulers(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    if let Some(st) = op.csv("status") {
        conds.push(Cond::In("status", st));
    }
    let page = op.page();
    let total = op.tx.count(Kind::Ruler, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(SORTS),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let rulers: Vec<Ruler> = find(op.tx, Kind::Ruler, op.org, &q)?;
    let mut items = Vec::with_capacity(rulers.len());
    for r in &rulers {
        let n = op
            .tx
            .count(Kind::Step, op.org, &[Cond::Eq("ruler_id", json!(r.id))])?;
        let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
        v["steps_count"] = json!(n);
        items.push(v);
    }
    Ok(list(items, page, total))
}

fn get_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    Ok(ok(full_view(op, &r)?))
}

/// Clears `is_default` on every other ruler (one default per organization).
fn take_default(op: &mut Op<'_>, keep: &str) -> Result<(), DomainError> {
    let q = Query::all().with(Cond::Eq("is_default", json!(true)));
    let others: Vec<Ruler> = find(op.tx, Kind::Ruler, op.org, &q)?;
    for mut r in others.into_iter().filter(|r| r.id != keep) {
        let before = r.clone();
        r.is_default = false;
        r.updated_at = op.timestamp();
        save(op.tx, Kind::Ruler, op.org, &r)?;
        let changes = crate::ops::debtors::diff(&before, &r);
        op.event("ruler.updated", "ruler", &r.id, &r, changes)?;
    }
    Ok(())
}

fn create_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&[
        "name",
        "description",
        "is_default",
        "filters",
        "send_window",
        "steps",
    ])?;
    let now = op.timestamp();
    let mut out = Vec::new();
    let name = op.str("name")?.trim().to_owned();
    if name.is_empty() {
        out.push(issue("name", "must not be blank"));
    }
    let mut r = Ruler {
        id: op.new_id(),
        name,
        description: op.opt_str("description").map(str::to_owned),
        status: "draft".into(),
        is_default: op.opt_bool("is_default").unwrap_or(false),
        filters: Filters::default(),
        send_window: SendWindow::default(),
        stop_on_payment: true,
        pause_reason: None,
        activated_at: None,
        paused_at: None,
        archived_at: None,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    if let Some(f) = op.args.get("filters") {
        apply_filters(f, &mut r.filters, &mut out);
    }
    if let Some(w) = op.args.get("send_window") {
        apply_window(w, &mut r.send_window, &mut out);
    }
    let mut steps = Vec::new();
    match op.args.get("steps") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.len() > 50 {
                out.push(issue("steps", "at most 50 steps"));
            }
            for (i, item) in items.iter().enumerate() {
                let prefix = format!("steps[{i}]");
                let Some(m) = object(item, &prefix, &mut out) else {
                    continue;
                };
                let mut extra = Vec::new();
                unknown_keys(m, STEP_FIELDS, &prefix, &mut extra);
                out.extend(extra);
                let mut st = blank_step(String::new(), &r.id, &now);
                if m.contains_key("position") {
                    out.push(issue(
                        &join(&prefix, "position"),
                        "steps of a new ruler are ordered by the list; leave position out",
                    ));
                }
                new_step(m, &mut st, &prefix, &mut out);
                steps.push(st);
            }
        }
        Some(_) => out.push(issue("steps", "must be a list of steps")),
    }
    fail(out)?;
    for (i, st) in steps.iter_mut().enumerate() {
        st.id = op.new_id();
        st.position = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    if r.is_default {
        take_default(op, &r.id)?;
    }
    save(op.tx, Kind::Ruler, op.org, &r)?;
    op.event("ruler.created", "ruler", &r.id, &r, Value::Null)?;
    for st in &steps {
        save(op.tx, Kind::Step, op.org, st)?;
        op.event("step.created", "step", &st.id, st, Value::Null)?;
    }
    Ok(created(view(&r, &steps)))
}

fn refuse_archived(r: &Ruler, what: &str) -> Result<(), DomainError> {
    if r.status == "archived" {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: ruler {} ({}) is archived and {what}",
            r.id, r.name
        )));
    }
    Ok(())
}

fn update_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    if op.args.contains_key("steps") {
        return Err(DomainError::field(
            "steps",
            "steps change one by one with dunning_steps_create, dunning_steps_update and dunning_steps_delete",
        ));
    }
    op.only(&[
        "id",
        "name",
        "description",
        "is_default",
        "filters",
        "send_window",
    ])?;
    let id = op.str("id")?;
    let before = load_ruler(op.tx, op.org, id)?;
    refuse_archived(&before, "cannot be changed")?;
    let mut r = before.clone();
    let mut out = Vec::new();
    if let Some(n) = op.opt_str("name") {
        if n.trim().is_empty() {
            out.push(issue("name", "must not be blank"));
        }
        r.name = n.trim().to_owned();
    }
    if op.args.contains_key("description") {
        r.description = op.opt_str("description").map(str::to_owned);
    }
    if let Some(b) = op.opt_bool("is_default") {
        r.is_default = b;
    }
    if let Some(f) = op.args.get("filters") {
        apply_filters(f, &mut r.filters, &mut out);
    }
    if let Some(w) = op.args.get("send_window") {
        apply_window(w, &mut r.send_window, &mut out);
    }
    fail(out)?;
    if r == before {
        return Ok(ok(full_view(op, &r)?));
    }
    if r.is_default && !before.is_default {
        take_default(op, &r.id)?;
    }
    r.updated_at = op.timestamp();
    save(op.tx, Kind::Ruler, op.org, &r)?;
    let changes = crate::ops::debtors::diff(&before, &r);
    op.event("ruler.updated", "ruler", id, &r, changes)?;
    Ok(ok(full_view(op, &r)?))
}

fn transition(op: &mut Op<'_>, r: &mut Ruler, to: &str, code: &str) -> Result<(), DomainError> {
    let before = r.clone();
    r.status = to.to_owned();
    let now = op.timestamp();
    match to {
        "active" => {
            r.activated_at = Some(now.clone());
            r.pause_reason = None;
        }
        "paused" => {
            r.paused_at = Some(now.clone());
            r.pause_reason = op.opt_str("reason").map(str::to_owned);
        }
        "archived" => r.archived_at = Some(now.clone()),
        _ => {}
    }
    r.updated_at = now;
    save(op.tx, Kind::Ruler, op.org, r)?;
    let changes = crate::ops::debtors::diff(&before, r);
    op.event(code, "ruler", &r.id, r, changes)
}

fn activate_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id"])?;
    let id = op.str("id")?;
    let mut r = load_ruler(op.tx, op.org, id)?;
    match r.status.as_str() {
        "active" => {}
        "draft" | "paused" => {
            let steps = steps_of(op.tx, op.org, id)?;
            if !steps.iter().any(|s| s.active) {
                return Err(DomainError::Conflict(format!(
                    "ruler {id} ({}) has no active steps; add one with dunning_steps_create before activating it",
                    r.name
                )));
            }
            transition(op, &mut r, "active", "ruler.activated")?;
        }
        from => return Err(DomainError::transition("ruler", id, from, "active")),
    }
    Ok(ok(full_view(op, &r)?))
}

fn pause_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "reason"])?;
    let id = op.str("id")?;
    let mut r = load_ruler(op.tx, op.org, id)?;
    match r.status.as_str() {
        "paused" => {}
        "active" => transition(op, &mut r, "paused", "ruler.paused")?,
        from => return Err(DomainError::transition("ruler", id, from, "paused")),
    }
    Ok(ok(full_view(op, &r)?))
}

fn archive_checks(op: &mut Op<'_>) -> Result<Ruler, DomainError> {
    op.only(&["id"])?;
    let id = op.str("id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    if r.is_default && r.status != "archived" {
        return Err(DomainError::Conflict(format!(
            "ruler {id} ({}) is the organization's default ruler and cannot be archived; make another ruler the default first",
            r.name
        )));
    }
    Ok(r)
}

fn describe_archive(op: &mut Op<'_>) -> Result<String, DomainError> {
    let r = archive_checks(op)?;
    let steps = op
        .tx
        .count(Kind::Step, op.org, &[Cond::Eq("ruler_id", json!(r.id))])?;
    let conds = [
        Cond::Eq("ruler_id", json!(r.id)),
        Cond::In("status", DUNNABLE.iter().map(|s| json!(s)).collect()),
    ];
    let charges = op.tx.count(Kind::Charge, op.org, &conds)?;
    Ok(format!(
        "Archive ruler \"{}\" ({}, {steps} steps)? It will never send again and cannot be restored; {charges} open charges assigned to it fall back to their debtor's ruler or the default ruler.",
        r.name, r.status
    ))
}

fn archive_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut r = archive_checks(op)?;
    if r.status != "archived" {
        transition(op, &mut r, "archived", "ruler.archived")?;
    }
    Ok(ok(full_view(op, &r)?))
}

/// Renumbers `steps` 1..n, saving those whose position changed.
fn renumber(op: &mut Op<'_>, steps: &mut [Step], skip: &str) -> Result<(), DomainError> {
    let now = op.timestamp();
    for (i, st) in steps.iter_mut().enumerate() {
        let p = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if st.position != p {
            st.position = p;
            if st.id != skip {
                st.updated_at = now.clone();
                save(op.tx, Kind::Step, op.org, &*st)?;
            }
        }
    }
    Ok(())
}

fn place(steps: &mut Vec<Step>, st: Step, position: Option<i64>) -> usize {
    let at = position
        .and_then(|p| usize::try_from(p - 1).ok())
        .map_or(steps.len(), |p| p.min(steps.len()));
    steps.insert(at, st);
    at
}

fn create_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut known = STEP_FIELDS.to_vec();
    known.push("id");
    op.only(&known)?;
    let id = op.str("id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    refuse_archived(&r, "its steps cannot change")?;
    let now = op.timestamp();
    let mut st = blank_step(op.new_id(), id, &now);
    let mut out = Vec::new();
    let pos = new_step(op.args, &mut st, "", &mut out);
    fail(out)?;
    let mut steps = steps_of(op.tx, op.org, id)?;
    if steps.len() >= 50 {
        return Err(DomainError::Conflict(format!(
            "ruler {id} already has 50 steps, the most a ruler can have"
        )));
    }
    let at = place(&mut steps, st, pos);
    renumber(op, &mut steps, "")?;
    let st = steps[at].clone();
    save(op.tx, Kind::Step, op.org, &st)?;
    op.event("step.created", "step", &st.id, &st, Value::Null)?;
    Ok(created(st))
}

fn load_step(op: &mut Op<'_>, ruler_id: &str, step_id: &str) -> Result<Step, DomainError> {
    let st: Step = must(op.tx, Kind::Step, op.org, step_id)?;
    if st.ruler_id != ruler_id {
        return Err(DomainError::not_found("step", step_id));
    }
    Ok(st)
}

fn update_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut known = STEP_FIELDS.to_vec();
    known.extend(["id", "step_id"]);
    op.only(&known)?;
    let id = op.str("id")?;
    let step_id = op.str("step_id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    let before = load_step(op, id, step_id)?;
    refuse_archived(&r, "its steps cannot change")?;
    let mut st = before.clone();
    let mut out = Vec::new();
    let pos = apply_step(op.args, &mut st, "", &mut out);
    check_step(&st, "", &mut out);
    fail(out)?;
    let moved = pos.is_some_and(|p| i64::from(before.position) != p);
    if st == before && !moved {
        return Ok(ok(st));
    }
    st.updated_at = op.timestamp();
    if moved {
        let mut steps: Vec<Step> = steps_of(op.tx, op.org, id)?
            .into_iter()
            .filter(|s| s.id != step_id)
            .collect();
        let at = place(&mut steps, st, pos);
        renumber(op, &mut steps, step_id)?;
        st = steps[at].clone();
    }
    save(op.tx, Kind::Step, op.org, &st)?;
    let changes = crate::ops::debtors::diff(&before, &st);
    op.event("step.updated", "step", step_id, &st, changes)?;
    Ok(ok(st))
}

fn delete_checks(op: &mut Op<'_>) -> Result<(Ruler, Step), DomainError> {
    op.only(&["id", "step_id"])?;
    let id = op.str("id")?;
    let step_id = op.str("step_id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    let st = load_step(op, id, step_id)?;
    refuse_archived(&r, "its steps cannot change")?;
    Ok((r, st))
}

fn describe_delete_step(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (r, st) = delete_checks(op)?;
    let when = match st.offset_days {
        0 => "on the due date".to_owned(),
        d if d < 0 => format!("{} days before the due date", -d),
        d => format!("{d} days after the due date"),
    };
    Ok(format!(
        "Delete step {} of ruler \"{}\" ({} {} {when})? It will no longer fire; deliveries it already made are kept.",
        st.position, r.name, st.action, st.channel
    ))
}

fn delete_step(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (r, st) = delete_checks(op)?;
    op.tx.delete(Kind::Step, op.org, &st.id)?;
    let mut steps = steps_of(op.tx, op.org, &r.id)?;
    renumber(op, &mut steps, "")?;
    op.event("step.deleted", "step", &st.id, &st, Value::Null)?;
    Ok(Output::NoContent)
}

/// A hypothetical debtor for previews without a charge.
fn sample_debtor() -> Value {
    json!({ "name": "Maria da Silva (exemplo)", "person_type": "natural", "tags": [] })
}

fn preview_ruler(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    let r = load_ruler(op.tx, op.org, id)?;
    let charge_id = op.opt_str("charge_id");
    let due = op.opt_date("due_date")?;
    let amount = op.opt_money("amount")?;
    let (charge, debtor) = match (charge_id, due, amount) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(DomainError::field(
                "charge_id",
                "give either charge_id or due_date and amount, not both",
            ));
        }
        (Some(cid), None, None) => {
            let c = op
                .tx
                .get(Kind::Charge, op.org, cid)?
                .ok_or_else(|| DomainError::not_found("charge", cid))?;
            let did = c
                .get("debtor_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let d = op
                .tx
                .get(Kind::Debtor, op.org, did)?
                .unwrap_or_else(sample_debtor);
            (c, d)
        }
        (None, Some(d), Some(a)) => (
            json!({
                "id": null, "status": "pending", "amount": money::brl(a),
                "due_date": d.format("%Y-%m-%d").to_string(), "tags": [],
            }),
            sample_debtor(),
        ),
        (None, Some(_), None) => {
            return Err(DomainError::field("amount", "is required with due_date"));
        }
        (None, None, Some(_)) => {
            return Err(DomainError::field("due_date", "is required with amount"));
        }
        (None, None, None) => {
            return Err(DomainError::field(
                "charge_id",
                "give charge_id, or due_date and amount for a hypothetical charge",
            ));
        }
    };
    let due = charge
        .get("due_date")
        .and_then(Value::as_str)
        .and_then(calendar::parse_date)
        .ok_or_else(|| DomainError::field("charge_id", "the charge has no due date"))?;
    let steps = steps_of(op.tx, op.org, id)?;
    let window = r.send_window.window();
    let creditor = crate::ops::deliveries::creditor(op.tx, op.org)?;
    let stop = if charge_id.is_some() {
        crate::ops::deliveries::charge_stop(op.tx, op.org, &charge, op.now)?
    } else {
        None
    };
    let mut schedule = Vec::with_capacity(steps.len());
    for st in &steps {
        let sl = slot(st, &window, due);
        let applies = if !st.active {
            Some("the step is inactive".to_owned())
        } else {
            condition_refusal(st, &charge)
        };
        let rendered = crate::ops::deliveries::render_template(
            &st.template,
            &charge,
            &debtor,
            &creditor,
            op.now,
        );
        schedule.push(json!({
            "step_id": st.id,
            "position": st.position,
            "name": st.name,
            "offset_days": st.offset_days,
            "business_days_only": st.business_days_only,
            "channel": st.channel,
            "action": st.action,
            "planned_date": sl.nominal.format("%Y-%m-%d").to_string(),
            "scheduled_at": sl.at.map(local_timestamp),
            "moved": sl.moved.is_some(),
            "moved_reason": sl.moved,
            "applies": applies.is_none(),
            "skipped_reason": applies,
            "subject": rendered.subject,
            "body": rendered.body,
        }));
    }
    Ok(ok(json!({
        "ruler_id": r.id,
        "ruler_status": r.status,
        "charge_id": charge_id,
        "due_date": due.format("%Y-%m-%d").to_string(),
        "effective_due_date": calendar::effective_due(due).format("%Y-%m-%d").to_string(),
        "amount": charge.get("amount"),
        "send_window": r.send_window,
        "send_window_text": r.send_window.describe(),
        "stopped": stop.as_ref().map(|s| &s.message),
        "schedule": schedule,
    })))
}

// ---------------------------------------------------------------------------------
// Demo data
// ---------------------------------------------------------------------------------

fn demo_step(offset: i64, channel: &str, action: &str, subject: Option<&str>, body: &str) -> Value {
    let mut v = json!({
        "offset_days": offset, "channel": channel, "action": action,
        "template": { "body": body },
    });
    if let Some(sj) = subject {
        v["template"]["subject"] = json!(sj);
    }
    v
}

fn demo_rulers(slug: &str) -> Vec<Value> {
    let remind = "Olá, {{debtor.name}}. Sua fatura de {{charge.amount}} vence em {{charge.due_date}}. Linha digitável: {{charge.boleto.line}}. Pix: {{charge.pix.emv}}";
    let today = "{{debtor.name}}, sua fatura de {{charge.amount}} vence hoje. Pague pelo Pix: {{charge.pix.emv}}";
    let late = "Olá, {{debtor.name}}. A fatura vencida em {{charge.due_date}} está em aberto. Valor atualizado: {{charge.updated_amount}}. {{charge.url}}";
    let notice = "Prezado(a) {{debtor.name}}, a fatura vencida em {{charge.due_date}} (valor atualizado {{charge.updated_amount}}) segue em aberto. Nos termos do art. 43, §2º do CDC, não havendo pagamento em 10 dias o débito poderá ser incluído em cadastro de proteção ao crédito. Regularize: {{charge.url}}";
    let task = "Avaliar {{debtor.name}}: fatura de {{charge.amount}} vencida em {{charge.due_date}}, valor atualizado {{charge.updated_amount}}.";
    match slug {
        "demo" => vec![
            json!({
                "name": "Régua padrão B2C",
                "description": "Pessoas físicas: lembrete, aviso no vencimento, cobrança, aviso de negativação e tarefa de negativação.",
                "is_default": true,
                "steps": [
                    demo_step(-5, "email", "notify", Some("Sua fatura vence em {{charge.due_date}}"), remind),
                    demo_step(0, "sms", "notify", None, today),
                    demo_step(3, "whatsapp", "notify", None, late),
                    demo_step(10, "email", "notify", Some("Aviso prévio de negativação"), notice),
                    demo_step(20, "task", "negativate", Some("Negativar?"), task),
                ],
            }),
            json!({
                "name": "Régua B2B",
                "description": "Empresas: contato por e-mail, escalonamento e protesto decidido por uma pessoa.",
                "filters": { "person_type": "juridical" },
                "send_window": { "start": "09:00", "end": "18:00", "weekdays": ["mon", "tue", "wed", "thu", "fri"] },
                "steps": [
                    demo_step(-3, "email", "notify", Some("Fatura {{charge.amount}} vence em {{charge.due_date}}"), remind),
                    demo_step(1, "email", "notify", Some("Fatura em aberto"), late),
                    json!({
                        "offset_days": 5, "channel": "email", "action": "notify", "business_days_only": true,
                        "template": { "subject": "Segunda via e valor atualizado", "body": late },
                    }),
                    demo_step(15, "task", "escalate", Some("Ligar para o financeiro"), task),
                    json!({
                        "offset_days": 30, "channel": "task", "action": "protest",
                        "conditions": { "min_amount": 1000.0 },
                        "template": { "subject": "Protestar?", "body": task },
                    }),
                ],
            }),
        ],
        _ => vec![json!({
            "name": "Régua padrão",
            "is_default": true,
            "steps": [
                demo_step(-3, "email", "notify", Some("Sua fatura vence em {{charge.due_date}}"), remind),
                demo_step(1, "sms", "notify", None, late),
                demo_step(7, "email", "notify", Some("Fatura em aberto"), late),
                demo_step(15, "task", "escalate", Some("Escalar"), task),
            ],
        })],
    }
}

/// Demo seeding (last of [`crate::ops::DEMO_HOOKS`]: deliveries need charges): the
/// rulers of `demo` (default B2C, and B2B) or `acme` (one default), activated, and
/// deliveries in every status for existing charges.
pub fn seed_demo(
    domain: &crate::Domain,
    who: &dunning_core::Principal,
    now: dunning_core::UnixTime,
    rng: &mut crate::demo::Rng,
    _seeded: &crate::demo::Seeded,
    _charges: usize,
) -> Result<(), DomainError> {
    let slug = crate::store::read(domain.store(), |tx| {
        Ok(load::<crate::org::Organization>(
            tx,
            Kind::Organization,
            &who.organization,
            &who.organization,
        )?
        .map(|o| o.slug)
        .unwrap_or_default())
    })?;
    let existing = crate::store::read(domain.store(), |tx| {
        Ok(tx.count(Kind::Ruler, &who.organization, &[])?)
    })?;
    if existing > 0 {
        return Ok(()); // a re-seed of an existing data dir
    }
    for args in demo_rulers(&slug) {
        let out = crate::demo::run_as(domain, who, now, rng.entropy(), create_ruler, args)?;
        let id = out.tool_value()["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        crate::demo::run_as(
            domain,
            who,
            now,
            rng.entropy(),
            activate_ruler,
            json!({ "id": id }),
        )?;
    }
    let count = if slug == "demo" { 30 } else { 8 };
    crate::demo::run_as(
        domain,
        who,
        now,
        rng.entropy(),
        crate::ops::deliveries::seed_demo_deliveries,
        json!({ "count": count }),
    )?;
    Ok(())
}
