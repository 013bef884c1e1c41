//! How what a debtor owes on a charge grows and shrinks with time (rules.md,
//! Penalties): the early-payment discount before the due date, and after it a fine charged
//! once and interest by day on the principal still open. The legal caps for consumers
//! live here too, beside the arithmetic they bound.
//!
//! Pure functions of centavos, rates and dates: the charge's own rules (which statuses
//! grow, which due date is effective) are `ops::charges::breakdown`'s, which calls these.

use chrono::NaiveDate;

use super::money::Money;

/// Highest fine (percent of the amount) on a consumer's charge: CDC art. 52 §1.
pub const CONSUMER_MAX_FINE: f64 = 2.0;

/// Highest monthly interest (percent) on a consumer's charge: 12 % a year, the cap of the
/// Usury Law (Decreto 22.626/1933 art. 1) on the legal rate of Civil Code art. 406, for
/// creditors that are not financial institutions. Lei 14.905/2024 lifts the cap only for
/// obligations between legal entities (and a few others), so companies are not capped.
pub const CONSUMER_MAX_MONTHLY_INTEREST: f64 = 1.0;

/// The largest amount a boleto carries (10 digits of centavos).
pub const MAX_AMOUNT: Money = Money::from_cents(9_999_999_999);

/// A charge's late-payment rates, in percent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// Fine, charged once after the effective due date (percent of the open principal).
    pub fine_percentage: f64,
    /// Interest per month, accrued pro rata by day (a month counts 30 days).
    pub monthly_interest_percentage: f64,
}

/// The early-payment discount on `principal`: `kind` `percentage` takes `value` percent,
/// any other kind is `value` BRL; never below nothing nor above the principal.
pub fn early_discount(principal: Money, kind: &str, value: f64) -> Money {
    let discount = match kind {
        "percentage" => principal.percent(value),
        _ => Money::from_brl(value).unwrap_or_default(),
    };
    discount.clamp(Money::ZERO, principal.or_zero())
}

/// The fine and the interest of a charge of `principal` late since `eff`, as of `on`,
/// given its dated `payments` (any order; those after `on` do not count yet).
///
/// In order: payments up to the effective due date reduce the principal (they were on
/// time); the fine is charged once on the principal then open; from there interest
/// accrues by day on the principal still open. A later payment first settles the fine
/// and the interest due by its date (Civil Code art. 354), and only its rest reduces the
/// principal, so interest stops growing on what was paid. Interest is summed unrounded
/// and rounded once to the centavo at the end.
pub fn penalties(
    principal: Money,
    rates: Rates,
    eff: NaiveDate,
    on: NaiveDate,
    mut payments: Vec<(NaiveDate, Money)>,
) -> (Money, Money) {
    let rate = rates.monthly_interest_percentage / 3000.0; // monthly percent, pro rata by day
    payments.retain(|(day, _)| *day <= on);
    payments.sort_by_key(|(day, _)| *day);
    let mut open = principal;
    for (_, amount) in payments.iter().filter(|(day, _)| *day <= eff) {
        open = (open - *amount).or_zero();
    }
    let fine = open.percent(rates.fine_percentage);
    let mut unpaid_penalties = fine.cents() as f64;
    let mut interest = 0.0;
    let mut last = eff;
    for (day, amount) in payments.iter().filter(|(day, _)| *day > eff) {
        let accrued = open.cents() as f64 * rate * (*day - last).num_days() as f64;
        interest += accrued;
        unpaid_penalties += accrued;
        let to_penalties = (amount.cents() as f64).min(unpaid_penalties);
        unpaid_penalties -= to_penalties;
        let to_principal = *amount - Money::from_cents(to_penalties.round() as i64);
        open = (open - to_principal).or_zero();
        last = *day;
    }
    interest += open.cents() as f64 * rate * (on - last).num_days() as f64;
    (fine, Money::from_cents(interest.round() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, d).unwrap()
    }

    const RATES: Rates = Rates {
        fine_percentage: 2.0,
        monthly_interest_percentage: 1.0,
    };

    #[test]
    fn the_fine_is_once_and_interest_is_by_day() {
        let p = Money::from_cents(300_000);
        assert_eq!(
            penalties(p, RATES, day(1), day(1), vec![]),
            (Money::from_cents(6_000), Money::ZERO)
        );
        // 30 days at 1 % a month on R$ 3.000,00: R$ 30,00.
        assert_eq!(
            penalties(p, RATES, day(1), day(31), vec![]).1,
            Money::from_cents(3_000)
        );
    }

    #[test]
    fn a_late_payment_settles_penalties_first_then_stops_interest_on_what_it_paid() {
        let p = Money::from_cents(300_000);
        // On day 11, R$ 1.560,00: R$ 60,00 fine + R$ 10,00 interest, R$ 1.490,00 principal.
        let paid = vec![(day(11), Money::from_cents(156_000))];
        let (fine, interest) = penalties(p, RATES, day(1), day(31), paid);
        assert_eq!(fine, Money::from_cents(6_000));
        // 10 days on 3.000,00 (10,00) + 20 days on 1.510,00 (≈ 10,07).
        assert_eq!(interest, Money::from_cents(2_007));
    }

    #[test]
    fn payments_before_the_due_date_reduce_the_base_of_the_fine() {
        let paid = vec![(day(1), Money::from_cents(100_000))];
        let (fine, _) = penalties(Money::from_cents(300_000), RATES, day(1), day(2), paid);
        assert_eq!(fine, Money::from_cents(4_000));
    }

    #[test]
    fn a_payment_after_the_day_asked_about_does_not_count_yet() {
        let p = Money::from_cents(300_000);
        let later = vec![(day(20), Money::from_cents(300_000))];
        assert_eq!(
            penalties(p, RATES, day(1), day(11), later),
            penalties(p, RATES, day(1), day(11), vec![])
        );
    }

    #[test]
    fn a_discount_is_bounded_by_the_principal() {
        let p = Money::from_cents(10_000);
        assert_eq!(early_discount(p, "percentage", 5.0), Money::from_cents(500));
        assert_eq!(early_discount(p, "fixed", 25.5), Money::from_cents(2_550));
        assert_eq!(early_discount(p, "fixed", 500.0), p);
        assert_eq!(early_discount(p, "fixed", -3.0), Money::ZERO);
    }
}
