//! Field readers for `#[serde(default, deserialize_with = "…")]` on argument structs: the
//! argument kinds whose rules are the product's (amounts, dates, comma-separated lists,
//! whole numbers, a patch's "sent as null"), each worded as its error has always been.
//! Each starts by asking for an option, so [`super::shape`] counts its field optional.

use chrono::NaiveDate;
use serde::de::{Deserialize, Deserializer, Error};
use serde_json::Value;

use crate::brazil::calendar;
use crate::brazil::money::Money;

/// An amount in BRL: a JSON number with at most 2 decimals (centavos); null is absent.
pub fn money<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Money>, D::Error> {
    Option::<Value>::deserialize(d)?
        .map(|v| to_money(&v).map_err(D::Error::custom))
        .transpose()
}

/// The amount a JSON value holds, or why it holds none.
pub(super) fn to_money(v: &Value) -> Result<Money, &'static str> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(Money::from_brl)
            .ok_or("must be an amount in BRL with at most 2 decimals"),
        _ => Err("must be a number"),
    }
}

/// A date `YYYY-MM-DD`; null is absent.
pub fn date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NaiveDate>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| to_date(&s).map_err(D::Error::custom))
        .transpose()
}

/// The date a text holds, or why it holds none.
pub(super) fn to_date(s: &str) -> Result<NaiveDate, &'static str> {
    calendar::parse_date(s).ok_or("must be a date YYYY-MM-DD")
}

/// A comma-separated list: the trimmed, non-empty items.
pub fn csv<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    }))
}

/// A text argument trimmed; blank is absent (applied after the read: a patch's null and
/// a blank text both clear).
pub fn trimmed(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// A whole number; any other value (a fraction, a string) is absent, as the lists have
/// always read `page` and `per_page`.
pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.and_then(|v| v.as_i64()))
}

/// A patch's field: absent is `None`, null is `Some(None)` (the field is cleared).
pub fn patch<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Any JSON value that is sent, null included (`Some(Value::Null)`); absent is `None`.
pub fn raw<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Option::<Value>::deserialize(d).map(|v| Some(v.unwrap_or(Value::Null)))
}
