//! The ruler and step documents, the send window, and which ruler a charge follows.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::status::{ChargeStatus, RulerStatus};
use crate::store::{Cond, Kind, Order, Query, Tx, find, must};

/// Step channels.
pub const CHANNELS: &[&str] = &["email", "sms", "whatsapp", "webhook", "task"];
/// Step actions. Only `notify` talks to the debtor; the others create a task for a person.
pub const ACTIONS: &[&str] = &["notify", "negativate", "protest", "escalate"];
/// Template variables a step's message may use.
pub const VARIABLES: &[&str] = &[
    "debtor.name",
    "charge.amount",
    "charge.due_date",
    "charge.updated_amount",
    "charge.boleto.line",
    "charge.pix.emv",
    "charge.url",
];
/// Charge statuses dunning applies to (dunning stops on every other one: `rules.md`, Collection conduct).
pub const DUNNABLE: &[ChargeStatus] = ChargeStatus::OPEN;
/// Day names of a send window (Sunday is never a collection day).
pub const WEEKDAYS: &[&str] = &["mon", "tue", "wed", "thu", "fri", "sat"];
/// Ruler statuses.
pub const STATUSES: &[&str] = RulerStatus::NAMES;
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
    pub min_amount: Option<Money>,
    /// Charge amount at most this (BRL).
    pub max_amount: Option<Money>,
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
        let amount = Money::in_doc(charge, "amount");
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
pub(super) const SEARCH_DAYS: i64 = 400;

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
    pub min_amount: Option<Money>,
    /// Charge status among these (empty: any dunnable status).
    pub charge_status: Vec<ChargeStatus>,
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
    pub status: RulerStatus,
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
            crate::status::values(&[RulerStatus::Draft, RulerStatus::Active, RulerStatus::Paused]),
        )),
    )?;
    Ok(resolve_among(&rulers, charge, debtor).cloned())
}

/// [`resolve`] among already loaded non-archived `rulers` (oldest first).
pub fn resolve_among<'r>(rulers: &'r [Ruler], charge: &Value, debtor: &Value) -> Option<&'r Ruler> {
    for holder in [charge, debtor] {
        if let Some(id) = holder.get("ruler_id").and_then(Value::as_str) {
            if let Some(r) = rulers
                .iter()
                .find(|r| r.id == id && r.status != RulerStatus::Archived)
            {
                return Some(r);
            }
        }
    }
    rulers
        .iter()
        .find(|r| {
            r.status == RulerStatus::Active
                && !r.is_default
                && !r.filters.is_empty()
                && r.filters.matches(charge, debtor)
        })
        .or_else(|| {
            rulers.iter().find(|r| {
                r.is_default
                    && r.status != RulerStatus::Archived
                    && r.filters.matches(charge, debtor)
            })
        })
}
