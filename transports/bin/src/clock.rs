//! The process's wall clock: the operating system's, or — for tests only — the same
//! clock shifted by a constant (`--clock INSTANT`).
//!
//! Why a shift and not a frozen instant: tests also need time to pass (token and
//! `requestState` expiry, webhook retry schedules), so the shifted clock advances with
//! the real one. Why every subcommand takes it: `serve`, `token` and `demo` must agree
//! on the time, or a token minted by one is refused by the other (`iat` in the future)
//! and demo data is dated on another day than the engine sees.
//!
//! Everything in the binary that needs the time — request environments, the jobs
//! thread (ruler engine send windows, business days, webhook retries, the idempotency
//! sweep), startup seeding and token minting — reads it from one [`Clock`], so a test
//! suite that passes `--clock` never depends on the hour or the day it runs at.

use chrono::DateTime;
use dunning_core::{Env, Load, UnixTime};
use dunning_runtime::{EnvSource, SystemClock, SystemEnv};

/// A wall clock: the OS clock plus a constant offset in milliseconds (0 in production).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clock {
    offset_ms: i64,
}

impl Clock {
    /// The operating system's clock.
    pub(crate) const fn system() -> Self {
        Self { offset_ms: 0 }
    }

    /// A clock that reads `start` now and then advances in real time.
    pub(crate) fn starting_at(start: UnixTime) -> Self {
        let real = SystemClock::now();
        let to_i64 = |t: UnixTime| i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
        Self {
            offset_ms: to_i64(start).saturating_sub(to_i64(real)),
        }
    }

    /// A clock that read `at` when the real clock read `real`: the same offset in every
    /// process given the pair, however late each one starts.
    pub(crate) fn read_at(at: UnixTime, real: UnixTime) -> Self {
        let to_i64 = |t: UnixTime| i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
        Self {
            offset_ms: to_i64(at).saturating_sub(to_i64(real)),
        }
    }

    /// From the `--clock` flag: absent is the system clock.
    pub(crate) fn from_flag(flag: Option<Self>) -> Self {
        flag.unwrap_or_else(Self::system)
    }

    /// Whether this is not the operating system's clock.
    pub(crate) const fn is_shifted(self) -> bool {
        self.offset_ms != 0
    }

    /// The time now.
    pub(crate) fn now(self) -> UnixTime {
        let real = i64::try_from(SystemClock::now().as_millis()).unwrap_or(i64::MAX);
        let ms = real.saturating_add(self.offset_ms).max(0);
        UnixTime::from_millis(u64::try_from(ms).unwrap_or(0))
    }
}

/// Parses `--clock`: `INSTANT` (the clock reads it now, at this process's start) or
/// `INSTANT@MS` (it read it at the real time MS, milliseconds since the epoch: a test
/// suite passes the one offset it runs on, and a server that took a second to start
/// does not lag it by that second).
pub(crate) fn parse_flag(text: &str) -> Result<Clock, String> {
    match text.split_once('@') {
        None => parse_instant(text).map(Clock::starting_at),
        Some((at, real)) => {
            let real: u64 = real
                .parse()
                .map_err(|_| format!("{real:?} is not milliseconds since the epoch"))?;
            Ok(Clock::read_at(
                parse_instant(at)?,
                UnixTime::from_millis(real),
            ))
        }
    }
}

/// Parses an RFC 3339 instant (`2026-12-03T14:02:00Z`, offsets allowed).
pub(crate) fn parse_instant(text: &str) -> Result<UnixTime, String> {
    let t = DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("{text:?} is not an RFC 3339 instant ({e})"))?;
    u64::try_from(t.timestamp_millis())
        .map(UnixTime::from_millis)
        .map_err(|_| format!("{text:?} is before 1970"))
}

/// The request environments of a shifted [`Clock`]: the OS entropy of [`SystemEnv`],
/// the clock's time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ShiftedEnv(pub(crate) Clock);

impl EnvSource for ShiftedEnv {
    fn now(&self) -> UnixTime {
        self.0.now()
    }

    fn env(&self, load: Load) -> Env {
        Env {
            now: self.0.now(),
            ..SystemEnv.env(load)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_clock_reads_its_start_and_advances() {
        let start = parse_instant("2026-12-03T14:02:00Z").unwrap();
        assert_eq!(start.as_secs(), 1_796_306_520);
        let clock = Clock::starting_at(start);
        assert!(clock.is_shifted());
        let a = clock.now().as_millis();
        assert!(
            a >= start.as_millis() && a - start.as_millis() < 5_000,
            "{a}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(clock.now().as_millis() >= a + 20);
    }

    #[test]
    fn a_clock_given_with_its_real_time_does_not_lag_a_late_start() {
        let real = SystemClock::now().as_millis();
        // The pair was made 3 s ago (a slow start): the clock is 3 s past the instant.
        let flag = format!("2026-12-03T14:02:00Z@{}", real - 3_000);
        let clock = parse_flag(&flag).unwrap();
        let start = parse_instant("2026-12-03T14:02:00Z").unwrap().as_millis();
        let ahead = clock.now().as_millis() - start;
        assert!((3_000..4_000).contains(&ahead), "{ahead}");
        assert_eq!(
            parse_flag("2026-12-03T14:02:00Z").unwrap().is_shifted(),
            Clock::starting_at(UnixTime::from_millis(start)).is_shifted()
        );
        assert!(parse_flag("2026-12-03T14:02:00Z@soon").is_err());
        assert!(parse_flag("yesterday@1").is_err());
    }

    #[test]
    fn the_system_clock_is_not_shifted() {
        assert!(!Clock::system().is_shifted());
        let diff = Clock::system()
            .now()
            .as_millis()
            .abs_diff(SystemClock::now().as_millis());
        assert!(diff < 1_000);
    }

    #[test]
    fn instants_must_be_rfc3339() {
        assert_eq!(
            parse_instant("2026-12-03T11:02:00-03:00"),
            parse_instant("2026-12-03T14:02:00Z")
        );
        assert!(parse_instant("2026-12-03 14:02").is_err());
        assert!(parse_instant("1969-12-31T23:59:59Z").is_err());
    }

    #[test]
    fn shifted_environments_carry_the_shifted_time() {
        let start = parse_instant("2030-01-01T00:00:00Z").unwrap();
        let env = ShiftedEnv(Clock::starting_at(start)).env(Load::Normal);
        assert!(env.now.as_millis() - start.as_millis() < 5_000);
        assert_eq!(env.load, Load::Normal);
    }
}
