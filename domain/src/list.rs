//! The one way to write a list tool: a [`Listing`] declares which argument filters which
//! column and how, and which sorts there are; [`Listing::run`] then reads the
//! arguments, refuses a range whose ends are the wrong way round, counts, pages and
//! answers `{data, meta}` ([`crate::op::list`]).
//!
//! A list with a condition no argument expresses (a path id, an argument checked
//! against a closed set first) builds it and passes it to [`Listing::run_with`]; a list
//! whose items are computed from the rows (a summary, a count per row) calls
//! [`Listing::fetch`] and maps [`Rows`]. Every argument is optional: absent, it filters
//! nothing.

use dunning_core::Output;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::args::{ListArgs, fields};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, Page, list};
use crate::store::{self, Cond, Kind, Order, Query};

/// How one argument (or a pair) narrows the rows.
#[derive(Clone, Copy, Debug)]
pub enum Filter {
    /// The string argument equals the column.
    Eq(&'static str, &'static str),
    /// The boolean argument equals the column.
    Bool(&'static str, &'static str),
    /// A comma-separated argument: the column is one of its values.
    In(&'static str, &'static str),
    /// The tags column holds the argument.
    Tag(&'static str, &'static str),
    /// The argument is a case-insensitive substring of any of the columns.
    Search(&'static str, &'static [&'static str]),
    /// Dates `YYYY-MM-DD` bound the column, both ends included; the column may hold
    /// dates or timestamps (the upper bound `dateT99` sorts after every time of the
    /// day).
    DateRange {
        /// Argument of the lower bound.
        from: &'static str,
        /// Argument of the upper bound.
        to: &'static str,
        /// The column.
        column: &'static str,
    },
    /// Dates or RFC 3339 timestamps bound a timestamp column, both ends included (a
    /// date as the upper bound means its last second), in the product's time zone.
    TimeRange {
        /// Argument of the lower bound.
        from: &'static str,
        /// Argument of the upper bound.
        to: &'static str,
        /// The column.
        column: &'static str,
    },
    /// Amounts in BRL (at most 2 decimals) bound the column, both ends included.
    MoneyRange {
        /// Argument of the lower bound.
        min: &'static str,
        /// Argument of the upper bound.
        max: &'static str,
        /// The column.
        column: &'static str,
    },
}

impl Filter {
    /// The arguments the filter reads.
    pub fn args(&self) -> Vec<&'static str> {
        match *self {
            Self::Eq(a, _) | Self::Bool(a, _) | Self::In(a, _) | Self::Tag(a, _) => vec![a],
            Self::Search(a, _) => vec![a],
            Self::DateRange { from, to, .. } | Self::TimeRange { from, to, .. } => vec![from, to],
            Self::MoneyRange { min, max, .. } => vec![min, max],
        }
    }
}

/// A list tool, declared: what it lists, how its arguments filter, how it sorts (pairs
/// of `sort_by` value and `(column, default order)`; the first is the default).
#[derive(Clone, Copy, Debug)]
pub struct Listing {
    /// What is listed.
    pub kind: Kind,
    /// The filters, in the order they are checked.
    pub filters: &'static [Filter],
    /// The sorts.
    pub sorts: &'static [(&'static str, &'static str, Order)],
}

/// One page of rows and the total they were taken from.
#[derive(Debug)]
pub struct Rows<T> {
    /// The rows of the page.
    pub items: Vec<T>,
    /// Which page.
    pub page: Page,
    /// How many rows match, over every page.
    pub total: u64,
}

impl<T> Rows<T> {
    /// The list answer, each row shown by `show`.
    pub fn answer<S: Serialize>(self, show: impl FnMut(T) -> S) -> Output {
        list(
            self.items.into_iter().map(show).collect(),
            self.page,
            self.total,
        )
    }
}

impl Listing {
    /// The whole list tool: the arguments' conditions, one page, the answer.
    pub fn run(&self, op: &mut Op<'_>) -> Result<Output, DomainError> {
        self.run_with(op, Vec::new())
    }

    /// [`Listing::run`] with conditions of the caller's besides the arguments'.
    pub fn run_with(&self, op: &mut Op<'_>, extra: Vec<Cond>) -> Result<Output, DomainError> {
        Ok(self.fetch::<Value>(op, extra)?.answer(|v| v))
    }

    /// One page of rows matching `extra` and the arguments' conditions.
    pub fn fetch<T: DeserializeOwned>(
        &self,
        op: &mut Op<'_>,
        mut extra: Vec<Cond>,
    ) -> Result<Rows<T>, DomainError> {
        extra.extend(self.conds(op)?);
        let list: ListArgs = op.args()?;
        let page = list.page();
        let q = Query {
            conds: extra,
            sort: list.sort(self.sorts),
            limit: Some(page.per_page),
            offset: page.offset(),
        };
        let (items, total) = store::page(op.tx, self.kind, op.org, &q)?;
        Ok(Rows { items, page, total })
    }

    /// The conditions the arguments ask for; a range whose ends are the wrong way
    /// round is a `VALIDATION_ERROR` on its upper argument.
    pub fn conds(&self, op: &Op<'_>) -> Result<Vec<Cond>, DomainError> {
        let text = |k: &str| op.args.get(k).and_then(Value::as_str);
        let mut conds = Vec::new();
        for filter in self.filters {
            match *filter {
                Filter::Eq(arg, column) => {
                    if let Some(v) = text(arg) {
                        conds.push(Cond::Eq(column, json!(v)));
                    }
                }
                Filter::Bool(arg, column) => {
                    if let Some(v) = op.args.get(arg).and_then(Value::as_bool) {
                        conds.push(Cond::Eq(column, json!(v)));
                    }
                }
                Filter::In(arg, column) => {
                    if let Some(v) = text(arg) {
                        let items = v.split(',').map(str::trim).filter(|x| !x.is_empty());
                        conds.push(Cond::In(column, items.map(Value::from).collect()));
                    }
                }
                Filter::Tag(arg, column) => {
                    if let Some(v) = text(arg) {
                        conds.push(Cond::Tag(column, v.to_owned()));
                    }
                }
                Filter::Search(arg, columns) => {
                    if let Some(v) = text(arg) {
                        conds.push(Cond::Search(columns.to_vec(), v.to_owned()));
                    }
                }
                Filter::DateRange { from, to, column } => {
                    let ends = (date_arg(op, from)?, date_arg(op, to)?);
                    let ends = ordered(ends, to, || format!("must not be before {from}"))?;
                    let day = |d: chrono::NaiveDate| d.format("%Y-%m-%d").to_string();
                    range(&mut conds, column, ends, day, |d| format!("{}T99", day(d)));
                }
                Filter::TimeRange { from, to, column } => {
                    let ends = (time_bound(op, from, false)?, time_bound(op, to, true)?);
                    let ends = ordered(ends, to, || format!("must not be before {from}"))?;
                    range(&mut conds, column, ends, |t| t, |t| t);
                }
                Filter::MoneyRange { min, max, column } => {
                    let ends = (money_arg(op, min)?, money_arg(op, max)?);
                    let ends = ordered(ends, max, || format!("must not be less than {min}"))?;
                    range(&mut conds, column, ends, Money::brl, Money::brl);
                }
            }
        }
        Ok(conds)
    }
}

/// Both ends, unless the upper one is below the lower one.
fn ordered<T: PartialOrd>(
    ends: (Option<T>, Option<T>),
    upper: &str,
    why: impl FnOnce() -> String,
) -> Result<(Option<T>, Option<T>), DomainError> {
    if let (Some(a), Some(b)) = &ends
        && a > b
    {
        return Err(DomainError::field(upper, why()));
    }
    Ok(ends)
}

/// Pushes the bounds that are there.
fn range<T, L: Serialize, U: Serialize>(
    conds: &mut Vec<Cond>,
    column: &'static str,
    (lo, hi): (Option<T>, Option<T>),
    lower: impl FnOnce(T) -> L,
    upper: impl FnOnce(T) -> U,
) {
    if let Some(a) = lo {
        conds.push(Cond::Ge(column, json!(lower(a))));
    }
    if let Some(b) = hi {
        conds.push(Cond::Le(column, json!(upper(b))));
    }
}

/// An amount argument: a JSON number with at most 2 decimals.
fn money_arg(op: &Op<'_>, k: &str) -> Result<Option<Money>, DomainError> {
    one(op, k, |v| fields::money(v))
}

/// A date argument `YYYY-MM-DD`.
fn date_arg(op: &Op<'_>, k: &str) -> Result<Option<chrono::NaiveDate>, DomainError> {
    one(op, k, |v| fields::date(v))
}

/// The argument `k` read by `field` (a reader of [`crate::args::fields`]), its error on `k`.
fn one<T>(
    op: &Op<'_>,
    k: &str,
    field: fn(&Value) -> Result<Option<T>, serde_json::Error>,
) -> Result<Option<T>, DomainError> {
    match op.args.get(k) {
        None => Ok(None),
        Some(v) => field(v).map_err(|e| DomainError::field(k, e.to_string())),
    }
}

/// A date or timestamp argument as a local RFC 3339 bound (`end`: a date means its last
/// second).
pub fn time_bound(op: &Op<'_>, k: &str, end: bool) -> Result<Option<String>, DomainError> {
    let Some(raw) = op.args.get(k).and_then(Value::as_str) else {
        return Ok(None);
    };
    if let Some(d) = calendar::parse_date(raw) {
        let t = if end { "23:59:59" } else { "00:00:00" };
        return Ok(Some(format!("{}T{t}-03:00", d.format("%Y-%m-%d"))));
    }
    let t = calendar::parse_timestamp(raw).ok_or_else(|| {
        DomainError::field(k, "must be a date YYYY-MM-DD or an RFC 3339 timestamp")
    })?;
    Ok(Some(
        t.with_timezone(&calendar::offset())
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string(),
    ))
}
