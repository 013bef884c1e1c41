//! The product's schedule: which periodic jobs are due at an instant, when the next one
//! is, and which jobs a successful tool call wakes before their period.
//!
//! ```text
//! every tick period   -> Engine, Exports, Webhooks, Backlog   (Job::TICK, in this order)
//! every sweep period  -> SweepIdempotency, SweepGrants        (Job::SWEEP)
//! a successful call   -> the jobs it wakes (Job::woken_by), then Backlog
//! ```
//!
//! Pure: the instant is always passed in, never read, so the binary's jobs thread (which
//! owns the clock and runs each [`Job`]) and these tests agree on every answer. The
//! instant is any ordered time a [`Duration`] can be added to: the binary's is a
//! monotonic [`Instant`], the tests' a [`Duration`] since the start. Both periods are due
//! at the start; each is then due a period after it last ran.
//!
//! Why a wake-up: an export used to move `queued -> processing` on one engine tick and
//! be built on the next, 60 s apart. The tool that queues an export wakes
//! [`Job::Exports`], which claims and builds it in the same breath.

use std::ops::Add;
use std::time::{Duration, Instant};

use crate::catalog::name;

/// The shortest period: a period of zero would spin.
pub const MIN_PERIOD: Duration = Duration::from_secs(1);

/// One piece of the product's periodic work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Job {
    /// The ruler engine tick (sends, workflows).
    Engine,
    /// Every export left queued or processing is claimed and built.
    Exports,
    /// The webhook outbox.
    Webhooks,
    /// The backlog gauges (the outbox and the exports by state).
    Backlog,
    /// Idempotency records past retention are forgotten.
    SweepIdempotency,
    /// The authorization server's expired codes and refresh tokens are forgotten.
    SweepGrants,
}

impl Job {
    /// The jobs of every tick, in the order they run: the engine first (its sends queue
    /// webhook events), the outbox after it, the backlog last (it counts what the
    /// others left).
    pub const TICK: [Self; 4] = [Self::Engine, Self::Exports, Self::Webhooks, Self::Backlog];

    /// The jobs of every sweep, in the order they run.
    pub const SWEEP: [Self; 2] = [Self::SweepIdempotency, Self::SweepGrants];

    /// The tool whose successful call runs this job at once instead of at its period.
    pub fn woken_by(self) -> Option<&'static str> {
        match self {
            Self::Exports => Some(name::EXPORTS_CREATE),
            Self::Engine
            | Self::Webhooks
            | Self::Backlog
            | Self::SweepIdempotency
            | Self::SweepGrants => None,
        }
    }
}

/// When each period is next due.
#[derive(Clone, Debug)]
pub struct Scheduler<I = Instant> {
    tick_every: Duration,
    sweep_every: Duration,
    next_tick: I,
    next_sweep: I,
}

impl<I: Copy + Ord + Add<Duration, Output = I>> Scheduler<I> {
    /// A schedule started at `start`, both periods due then; a period under
    /// [`MIN_PERIOD`] is that.
    pub fn new(start: I, tick_every: Duration, sweep_every: Duration) -> Self {
        Self {
            tick_every: tick_every.max(MIN_PERIOD),
            sweep_every: sweep_every.max(MIN_PERIOD),
            next_tick: start,
            next_sweep: start,
        }
    }

    /// The jobs due at `now`, in the order to run them (the tick's, then the sweep's);
    /// each period returned is next due a period after `now`.
    pub fn due(&mut self, now: I) -> Vec<Job> {
        let mut jobs = Vec::new();
        if now >= self.next_tick {
            self.next_tick = now + self.tick_every;
            jobs.extend(Job::TICK);
        }
        if now >= self.next_sweep {
            self.next_sweep = now + self.sweep_every;
            jobs.extend(Job::SWEEP);
        }
        jobs
    }

    /// When a job is next due.
    pub fn next_wake(&self) -> I {
        self.next_tick.min(self.next_sweep)
    }
}

impl Scheduler {
    /// The jobs to run at once after a successful call of `tool`: those it wakes, then
    /// the backlog they changed; none for a tool that wakes nothing. The same for every
    /// schedule: a wake-up is a property of the job ([`Job::woken_by`]).
    pub fn after_call(tool: &str) -> Vec<Job> {
        let mut jobs: Vec<Job> = Job::TICK
            .into_iter()
            .chain(Job::SWEEP)
            .filter(|j| j.woken_by() == Some(tool))
            .collect();
        if !jobs.is_empty() {
            jobs.push(Job::Backlog);
        }
        jobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_secs(60);
    const SWEEP: Duration = Duration::from_secs(3600);

    fn all_due() -> Vec<Job> {
        Job::TICK.into_iter().chain(Job::SWEEP).collect()
    }

    #[test]
    fn everything_is_due_at_the_start_in_order_then_nothing_until_the_next_tick() {
        let t0 = Duration::ZERO;
        let mut s = Scheduler::<Duration>::new(t0, TICK, SWEEP);
        assert_eq!(s.due(t0), all_due());
        assert_eq!(s.next_wake(), t0 + TICK);
        assert_eq!(s.due(t0 + TICK - Duration::from_millis(1)), []);
    }

    #[test]
    fn each_period_comes_back_on_its_own_clock() {
        let t0 = Duration::ZERO;
        let mut s = Scheduler::<Duration>::new(t0, TICK, SWEEP);
        s.due(t0);
        assert_eq!(s.due(t0 + TICK), Job::TICK);
        assert_eq!(s.next_wake(), t0 + 2 * TICK);
        // A late run counts its next period from when it ran, not when it was due.
        let late = t0 + SWEEP + Duration::from_secs(5);
        assert_eq!(s.due(late), all_due());
        assert_eq!(s.next_wake(), late + TICK);
        // A sweep period shorter than the tick's: the sweep alone.
        let mut sweeps_often = Scheduler::<Duration>::new(t0, SWEEP, TICK);
        sweeps_often.due(t0);
        assert_eq!(sweeps_often.due(t0 + TICK), Job::SWEEP);
    }

    #[test]
    fn a_zero_period_is_one_second() {
        let t0 = Duration::ZERO;
        let mut s = Scheduler::<Duration>::new(t0, Duration::ZERO, Duration::ZERO);
        s.due(t0);
        assert_eq!(s.next_wake(), t0 + MIN_PERIOD);
        assert_eq!(s.due(t0), []);
    }

    #[test]
    fn queuing_an_export_wakes_the_exporter_then_the_backlog_and_nothing_else_wakes() {
        assert_eq!(
            Scheduler::after_call(name::EXPORTS_CREATE),
            [Job::Exports, Job::Backlog]
        );
        assert_eq!(Scheduler::after_call(name::EXPORTS_GET), []);
        assert_eq!(Scheduler::after_call(name::CHARGES_CREATE), []);
    }
}
