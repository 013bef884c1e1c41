//! Dates in the organization's time zone, and Brazilian bank business days.
//!
//! `America/Sao_Paulo` has had no daylight saving time since 2019, so it is a fixed
//! UTC−03:00 offset. Bank holidays are the national ones plus Carnival Monday and
//! Tuesday and Corpus Christi (no bank clearing on those days).

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Timelike,
    Weekday,
};
use dunning_core::UnixTime;

/// The organization's offset (UTC−03:00).
pub fn offset() -> FixedOffset {
    FixedOffset::west_opt(3 * 3600)
        .unwrap_or_else(|| FixedOffset::east_opt(0).expect("zero offset"))
}

/// `now` in the organization's time zone.
pub fn local(now: UnixTime) -> DateTime<FixedOffset> {
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX);
    offset()
        .timestamp_millis_opt(ms)
        .single()
        .unwrap_or_else(|| offset().timestamp_millis_opt(0).single().expect("epoch"))
}

/// RFC 3339 timestamp with the `-03:00` offset, second precision.
pub fn timestamp(now: UnixTime) -> String {
    local_timestamp(local_now(now))
}

/// Local wall-clock time of `now` (the organization's zone).
pub fn local_now(now: UnixTime) -> NaiveDateTime {
    local(now).naive_local()
}

/// A local date-time as an RFC 3339 timestamp in the organization's zone. Written on
/// every write and in answers (a token's expiry in `dunning_me`), so the digits are
/// written here, as [`parse_date`] reads them: a chrono format string is interpreted
/// anew at each call. A year of other than four digits is left to chrono.
pub fn local_timestamp(at: NaiveDateTime) -> String {
    let Ok(year @ 0..=9999) = u32::try_from(at.year()) else {
        return format!("{}-03:00", at.format("%Y-%m-%dT%H:%M:%S"));
    };
    let mut out = String::with_capacity(25);
    let mut digits = |n: u32, width: u32, then: char| {
        for place in (0..width).rev() {
            let digit = n / 10u32.pow(place) % 10;
            out.push(char::from(b'0' + u8::try_from(digit).unwrap_or(0)));
        }
        out.push(then);
    };
    digits(year, 4, '-');
    digits(at.month(), 2, '-');
    digits(at.day(), 2, 'T');
    digits(at.hour(), 2, ':');
    digits(at.minute(), 2, ':');
    digits(at.second(), 2, '-');
    out.push_str("03:00");
    out
}

/// Today's date in the organization's time zone.
pub fn today(now: UnixTime) -> NaiveDate {
    local(now).date_naive()
}

/// Parses `YYYY-MM-DD` (four-digit year, two-digit month and day, a real date). Read
/// for every charge of every page, so the digits are read here: a chrono format string
/// is interpreted anew at each call.
pub fn parse_date(s: &str) -> Option<NaiveDate> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let year = i32::try_from(number(&b[..4])?).ok()?;
    NaiveDate::from_ymd_opt(year, number(&b[5..7])?, number(&b[8..])?)
}

/// Parses an RFC 3339 timestamp or a date (taken as midnight local).
pub fn parse_timestamp(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok().or_else(|| {
        parse_date(s)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .and_then(|dt| offset().from_local_datetime(&dt).single())
    })
}

/// Easter Sunday (anonymous Gregorian algorithm).
pub fn easter(year: i32) -> NaiveDate {
    let a = year % 19;
    let b = year / 100;
    let c = year % 100;
    let d = b / 4;
    let e = b % 4;
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let i = c / 4;
    let k = c % 4;
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    NaiveDate::from_ymd_opt(year, month as u32, day as u32).unwrap_or_default()
}

/// Whether `d` is a national holiday (or a banks' Carnival or Corpus Christi closing).
///
/// November 20 (Dia Nacional de Zumbi e da Consciência Negra) is national only from 2024
/// (Lei 14.759/2023); before, it was a holiday in some states and cities only.
pub fn is_holiday(d: NaiveDate) -> bool {
    let fixed = [
        (1, 1),   // Confraternização Universal
        (4, 21),  // Tiradentes
        (5, 1),   // Dia do Trabalho
        (9, 7),   // Independência
        (10, 12), // Nossa Senhora Aparecida
        (11, 2),  // Finados
        (11, 15), // Proclamação da República
        (12, 25), // Natal
    ];
    if fixed.contains(&(d.month(), d.day())) {
        return true;
    }
    if (d.month(), d.day()) == (11, 20) && d.year() >= 2024 {
        return true;
    }
    let e = easter(d.year());
    [-48i64, -47, -2, 60] // Carnival Mon/Tue, Good Friday, Corpus Christi
        .iter()
        .any(|&off| e + Duration::days(off) == d)
}

/// Whether banks serve the public on `d` (a bank business day): not a weekend, not a
/// holiday, and not December 31, when FEBRABAN's calendar has no public banking (a boleto
/// due then is paid without charges on the next business day). December 31 is still an
/// ordinary day for sending messages ([`is_holiday`] is false).
pub fn is_business_day(d: NaiveDate) -> bool {
    !matches!(d.weekday(), Weekday::Sat | Weekday::Sun)
        && !is_holiday(d)
        && (d.month(), d.day()) != (12, 31)
}

/// `d` itself when a business day, else the next one.
pub fn next_business_day(mut d: NaiveDate) -> NaiveDate {
    while !is_business_day(d) {
        d += Duration::days(1);
    }
    d
}

/// `n` business days after `d` (n ≥ 0).
pub fn add_business_days(mut d: NaiveDate, n: u32) -> NaiveDate {
    let mut left = n;
    while left > 0 {
        d += Duration::days(1);
        if is_business_day(d) {
            left -= 1;
        }
    }
    d
}

/// The last day a charge due on `due` is paid on time: the due date moved to the next
/// business day (rules.md, Money and dates). It becomes overdue the day after.
pub fn effective_due(due: NaiveDate) -> NaiveDate {
    next_business_day(due)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-written timestamp is chrono's `%Y-%m-%dT%H:%M:%S%:z` in the zone, at
    /// instants spread over three centuries (every field's digits), across the year
    /// 10,000 (chrono's wider year) and at the first instant.
    #[test]
    fn a_timestamp_is_written_as_chrono_writes_it() {
        let chrono_text = |now: UnixTime| local(now).format("%Y-%m-%dT%H:%M:%S%:z").to_string();
        let mut ms: u64 = 0;
        while ms < 10_000_000_000_000 {
            let now = UnixTime::from_millis(ms);
            assert_eq!(timestamp(now), chrono_text(now), "{ms}");
            ms += 7_919_993_417;
        }
        let year_10000 = 253_402_300_800_000 + 3 * 3_600_000;
        for ms in [0, year_10000 - 1_000, year_10000, year_10000 + 86_400_000] {
            let now = UnixTime::from_millis(ms);
            assert_eq!(timestamp(now), chrono_text(now), "{ms}");
        }
        assert_eq!(
            timestamp(UnixTime::from_millis(year_10000)),
            "+10000-01-01T00:00:00-03:00"
        );
    }

    /// The hand-read date is chrono's `%Y-%m-%d` on every day of four centuries, and
    /// refuses what is not a date written in full.
    #[test]
    fn a_date_is_read_as_chrono_reads_it() {
        let mut day = NaiveDate::from_ymd_opt(1900, 1, 1).unwrap();
        while day.year() < 2300 {
            let text = day.format("%Y-%m-%d").to_string();
            assert_eq!(parse_date(&text), Some(day), "{text}");
            day = day.succ_opt().unwrap();
        }
        for bad in [
            "",
            "2026-02-30",
            "2026-13-01",
            "2026-00-10",
            "2026-1-015",
            "2026/01/15",
            "+206-01-15",
            "2026-01-1x",
            "20260115",
            "2026-01-15T",
            " 2026-01-1",
            "2026-01-150",
            "２０２６-01-1",
        ] {
            assert_eq!(parse_date(bad), None, "{bad:?}");
        }
    }

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    #[test]
    fn easter_and_movable_holidays() {
        assert_eq!(easter(2026), d(2026, 4, 5));
        assert_eq!(easter(2025), d(2025, 4, 20));
        assert!(is_holiday(d(2026, 2, 16)), "Carnival Monday 2026");
        assert!(is_holiday(d(2026, 2, 17)), "Carnival Tuesday 2026");
        assert!(is_holiday(d(2026, 4, 3)), "Good Friday 2026");
        assert!(is_holiday(d(2026, 6, 4)), "Corpus Christi 2026");
        assert!(is_holiday(d(2026, 11, 20)));
        assert!(!is_holiday(d(2026, 11, 19)));
    }

    #[test]
    fn november_20_is_national_from_2024_only() {
        assert!(is_holiday(d(2024, 11, 20)), "Lei 14.759/2023");
        assert!(!is_holiday(d(2023, 11, 20)), "before the law: not national");
        // Monday 2023-11-20 was a bank business day.
        assert_eq!(effective_due(d(2023, 11, 20)), d(2023, 11, 20));
    }

    #[test]
    fn december_31_has_no_public_banking() {
        // Thursday 2026-12-31 is no holiday (messages go out) but no bank serves the
        // public; Friday 2027-01-01 is a holiday, so a charge due on the 31st is on time
        // until Monday 2027-01-04.
        assert!(!is_holiday(d(2026, 12, 31)));
        assert!(!is_business_day(d(2026, 12, 31)));
        assert_eq!(effective_due(d(2026, 12, 31)), d(2027, 1, 4));
        // Wednesday 2025-12-31 rolls to Friday 2026-01-02.
        assert_eq!(effective_due(d(2025, 12, 31)), d(2026, 1, 2));
        assert_eq!(add_business_days(d(2026, 12, 30), 1), d(2027, 1, 4));
    }

    #[test]
    fn due_dates_roll_to_the_next_business_day() {
        // Saturday 2026-11-14, Sunday 15 (holiday anyway), Monday 16 is a business day.
        assert_eq!(effective_due(d(2026, 11, 14)), d(2026, 11, 16));
        // Friday 2026-11-20 is a holiday: next business day is Monday 23.
        assert_eq!(effective_due(d(2026, 11, 20)), d(2026, 11, 23));
        assert_eq!(effective_due(d(2026, 11, 18)), d(2026, 11, 18));
        assert_eq!(add_business_days(d(2026, 11, 18), 5), d(2026, 11, 26));
    }

    #[test]
    fn local_time_is_utc_minus_three() {
        // 2026-12-01T12:00:00Z is 09:00 in São Paulo.
        let now = UnixTime::from_secs(1_796_126_400);
        assert_eq!(timestamp(now), "2026-12-01T09:00:00-03:00");
        assert_eq!(
            today(UnixTime::from_secs(1_796_083_200)),
            d(2026, 11, 30),
            "00:00Z is still the 30th"
        );
    }
}
