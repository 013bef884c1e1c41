//! Money: [`Money`], whole centavos. Amounts travel as BRL numbers on the wire and in
//! stored documents (`1234.56`), and are centavos everywhere else, so sums, balances and
//! percentages never drift by a float's last bit.
//!
//! The order of operations matters for what a debtor is told: a percentage is taken of
//! centavos and rounded once ([`Money::percent`]), and an amount is rounded only when it
//! becomes text ([`Money`]'s `Display`: `R$ 1.234,56`).

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An amount of BRL in centavos (negative for a balance owed back).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(i64);

impl Money {
    /// Nothing.
    pub const ZERO: Self = Self(0);

    /// `cents` centavos.
    pub const fn from_cents(cents: i64) -> Self {
        Self(cents)
    }

    /// A BRL amount as a client writes it, or `None` when it has more than two decimals,
    /// is not finite or is beyond any real amount (a validation error for the caller).
    pub fn from_brl(brl: f64) -> Option<Self> {
        if !brl.is_finite() || brl.abs() > 1e13 {
            return None;
        }
        let c = (brl * 100.0).round();
        ((brl * 100.0 - c).abs() < 1e-6).then_some(Self(c as i64))
    }

    /// The nearest amount in centavos (a computed BRL figure such as a rate's result).
    pub fn round_brl(brl: f64) -> Self {
        if brl.is_finite() {
            Self((brl * 100.0).round().clamp(-1e15, 1e15) as i64)
        } else {
            Self::ZERO
        }
    }

    /// The amount a stored document carries at `key` (nothing when absent).
    pub fn in_doc(doc: &serde_json::Value, key: &str) -> Self {
        doc.get(key)
            .and_then(serde_json::Value::as_f64)
            .map(Self::round_brl)
            .unwrap_or_default()
    }

    /// Centavos.
    pub const fn cents(self) -> i64 {
        self.0
    }

    /// BRL, as the wire carries it.
    pub fn brl(self) -> f64 {
        self.0 as f64 / 100.0
    }

    /// `pct` percent of this amount, rounded to the centavo.
    pub fn percent(self, pct: f64) -> Self {
        let c = (self.0 as f64 * pct / 100.0).round();
        if c.is_finite() {
            Self(c.clamp(-1e15, 1e15) as i64)
        } else {
            Self::ZERO
        }
    }

    /// Zero when negative (what is owed never goes below nothing).
    pub fn or_zero(self) -> Self {
        self.max(Self::ZERO)
    }

    /// Whether this is nothing.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

/// `R$ 1.234,56`, the way a Brazilian reads an amount.
impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let c = self.0.unsigned_abs();
        let reais = (c / 100).to_string();
        let mut grouped = String::with_capacity(reais.len() + reais.len() / 3);
        for (i, ch) in reais.chars().enumerate() {
            if i > 0 && (reais.len() - i) % 3 == 0 {
                grouped.push('.');
            }
            grouped.push(ch);
        }
        write!(f, "{sign}R$ {grouped},{:02}", c % 100)
    }
}

impl Add for Money {
    type Output = Self;
    fn add(self, other: Self) -> Self {
        Self(self.0 + other.0)
    }
}

impl Sub for Money {
    type Output = Self;
    fn sub(self, other: Self) -> Self {
        Self(self.0 - other.0)
    }
}

impl Neg for Money {
    type Output = Self;
    fn neg(self) -> Self {
        Self(-self.0)
    }
}

impl AddAssign for Money {
    fn add_assign(&mut self, other: Self) {
        self.0 += other.0;
    }
}

impl SubAssign for Money {
    fn sub_assign(&mut self, other: Self) {
        self.0 -= other.0;
    }
}

impl Sum for Money {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        Self(iter.map(|m| m.0).sum())
    }
}

/// A BRL number (`1234.56`), as the wire and the stored documents have always carried it.
impl Serialize for Money {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.brl())
    }
}

/// A BRL number, rounded to the centavo: stored documents were written from centavos,
/// so rounding only absorbs a float's last bit (`0.1 + 0.2`). Client input never comes
/// this way; it is checked by [`Money::from_brl`] (`Op::opt_money`).
impl<'de> Deserialize<'de> for Money {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let brl = f64::deserialize(d)?;
        if !brl.is_finite() {
            return Err(serde::de::Error::custom(
                "an amount must be a finite number",
            ));
        }
        Ok(Self::round_brl(brl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(Money::from_brl(1234.56), Some(Money::from_cents(123_456)));
        assert_eq!(Money::from_brl(0.1 + 0.2), Some(Money::from_cents(30)));
        assert_eq!(Money::from_brl(1.234), None);
        assert_eq!(Money::from_brl(f64::NAN), None);
        assert_eq!(Money::from_cents(123_456).brl(), 1234.56);
        assert_eq!(Money::round_brl(1.234), Money::from_cents(123));
        assert_eq!(Money::round_brl(f64::INFINITY), Money::ZERO);
    }

    #[test]
    fn an_amount_reads_as_a_brazilian_writes_it() {
        assert_eq!(Money::from_cents(123_456).to_string(), "R$ 1.234,56");
        assert_eq!(Money::from_cents(5).to_string(), "R$ 0,05");
        assert_eq!(
            Money::from_cents(100_000_000).to_string(),
            "R$ 1.000.000,00"
        );
        assert_eq!(Money::from_cents(-150).to_string(), "-R$ 1,50");
    }

    #[test]
    fn a_percentage_is_rounded_once_to_the_centavo() {
        assert_eq!(
            Money::from_cents(10_000).percent(2.0),
            Money::from_cents(200)
        );
        assert_eq!(Money::from_cents(333).percent(10.0), Money::from_cents(33));
        assert_eq!(Money::from_cents(335).percent(10.0), Money::from_cents(34));
    }

    #[test]
    fn the_wire_form_is_unchanged() {
        let m: Money = serde_json::from_str("1234.56").unwrap();
        assert_eq!(m, Money::from_cents(123_456));
        assert_eq!(serde_json::to_string(&m).unwrap(), "1234.56");
        assert_eq!(
            serde_json::to_string(&Money::from_cents(15_000)).unwrap(),
            "150.0"
        );
        let drift: Money = serde_json::from_str("0.30000000000000004").unwrap();
        assert_eq!(drift, Money::from_cents(30));
        assert!(serde_json::from_str::<Money>("\"12\"").is_err());
    }

    #[test]
    fn sums_stay_exact() {
        let parts = [
            Money::from_cents(10),
            Money::from_cents(20),
            -Money::from_cents(5),
        ];
        assert_eq!(parts.into_iter().sum::<Money>(), Money::from_cents(25));
        assert_eq!(
            (Money::from_cents(5) - Money::from_cents(9)).or_zero(),
            Money::ZERO
        );
    }
}
