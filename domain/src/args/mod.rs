//! Tool arguments as structs: every handler reads its arguments once, into a struct
//! deriving `Deserialize` ([`Op::args`], or [`Op::args_strict`] where unknown keys are
//! refused), instead of looking keys up one by one.
//!
//! The order of a read: unknown keys first (strict reads), then each declared field in
//! declared order ([`de`]). The shared structs live here ([`ListArgs`], [`ById`],
//! [`IdReason`], [`Date`], [`Amount`]); a tool's own struct lives next to its handler. Each tool
//! names the structs it reads in its declaration ([`crate::tool::ToolBuilder::args`]),
//! and `every_tool_reads_the_arguments_its_schema_declares` holds the struct's fields
//! and the schema's properties equal.

mod de;
pub mod fields;

pub use de::{Shape, shape};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::brazil::money::Money;
use crate::error::DomainError;
use crate::op::{Op, Page};
use crate::store::Order;

/// A required date `YYYY-MM-DD` (an optional one is [`fields::date`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Date(pub chrono::NaiveDate);

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        fields::to_date(&s)
            .map(Self)
            .map_err(serde::de::Error::custom)
    }
}

/// A required amount in BRL (an optional one is [`fields::money`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount(pub Money);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        fields::to_money(&v)
            .map(Self)
            .map_err(serde::de::Error::custom)
    }
}

/// `{id}`: the one argument of most reads and state changes.
#[derive(Debug, Deserialize)]
pub struct ById {
    /// The entity's id.
    pub id: String,
}

/// `{id, reason}`: a state change that records why.
#[derive(Debug, Deserialize)]
pub struct IdReason {
    /// The entity's id.
    pub id: String,
    /// Why.
    pub reason: Option<String>,
}

/// The arguments every list takes: which page, and in which order.
#[derive(Debug, Default, Deserialize)]
pub struct ListArgs {
    /// 1-based page (default 1).
    #[serde(default, deserialize_with = "fields::int")]
    pub page: Option<i64>,
    /// Items per page, 1–100 (default 25).
    #[serde(default, deserialize_with = "fields::int")]
    pub per_page: Option<i64>,
    /// One of the list's sort names.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    pub sort_order: Option<String>,
}

impl ListArgs {
    /// The page asked for: out-of-range values are clamped (page 1–1 000 000, per page
    /// 1–100).
    pub fn page(&self) -> Page {
        let clamp = |v: Option<i64>, d: u32, max: u32| {
            v.map_or(d, |x| {
                u32::try_from(x.clamp(1, i64::from(max))).unwrap_or(d)
            })
        };
        Page {
            page: clamp(self.page, 1, 1_000_000),
            per_page: clamp(self.per_page, 25, 100),
        }
    }

    /// `sort_by`/`sort_order` mapped to a column: `fields` pairs argument values with
    /// `(column, default order)`; the first pair is the default, and so is an unknown
    /// name.
    pub fn sort(&self, fields: &[(&str, &'static str, Order)]) -> (&'static str, Order) {
        let chosen = self
            .sort_by
            .as_deref()
            .and_then(|s| fields.iter().find(|f| f.0 == s))
            .unwrap_or(&fields[0]);
        let order = match self.sort_order.as_deref() {
            Some("asc") => Order::Asc,
            Some("desc") => Order::Desc,
            _ => chosen.2,
        };
        (chosen.1, order)
    }
}

impl Op<'_> {
    /// The call's arguments as `T`; keys `T` does not declare are ignored.
    pub fn args<T: DeserializeOwned>(&self) -> Result<T, DomainError> {
        de::read(self.args, false)
    }

    /// The call's arguments as `T`, refusing keys `T` does not declare (besides
    /// `idempotency_key`) before reading any: the endpoint's own check on loose writes.
    pub fn args_strict<T: DeserializeOwned>(&self) -> Result<T, DomainError> {
        de::read(self.args, true)
    }

    /// The call's arguments as two structs (a tool's own and a shared one), refusing keys
    /// neither declares before reading any.
    pub fn args_strict_pair<A: DeserializeOwned, B: DeserializeOwned>(
        &self,
    ) -> Result<(A, B), DomainError> {
        self.refuse_unknown::<A>(de::field_names::<B>())?;
        Ok((self.args()?, self.args()?))
    }

    /// Refuses keys outside `T`'s and `known` (a write whose struct leaves some of its
    /// arguments to another reader, such as a ruler's steps).
    pub fn refuse_unknown<T: DeserializeOwned>(&self, known: &[&str]) -> Result<(), DomainError> {
        let mut all = de::field_names::<T>().to_vec();
        all.extend_from_slice(known);
        de::refuse_unknown(self.args, &all)
    }
}

#[cfg(test)]
mod tests;
