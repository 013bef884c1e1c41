//! The jobs thread: runs what the domain's [`Scheduler`] says is due, and what it says
//! a successful tool call wakes; the schedule itself (periods, order, wake-ups) is the
//! domain's, this thread owns only the clock, the drivers and the logs.
//!
//! ```text
//! Scheduler::due(now)     -> each Job, in order, then sleep until Scheduler::next_wake
//! Run(jobs)               -> those jobs at once (the observer, [`JobsThread::waking`],
//!                            sends Scheduler::after_call of every successful call)
//! Stop                    -> return
//! ```
//!
//! Metrics: the domain's workers return what they did (`engine::TickReport` with its
//! counts by channel, `webhooks::TickReport` with the attempts' outcomes,
//! `backlog::backlog`) and this thread records them on the `metrics` facade
//! ([`record_engine`], [`record_webhooks`], [`record_backlog`]). Reports rather than a
//! recorder passed into the domain: the domain keeps no global state and needs no new
//! trait, and each report is also what its tests assert on.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use dunning_core::{RequestLog, Server};
use dunning_domain::Domain;
use dunning_domain::engine::{self, DeliveryDriver, SendPolicy};
use dunning_domain::ops::exports;
use dunning_domain::ops::webhooks::WebhookDriver;
use dunning_domain::scheduler::{Job, Scheduler};
use dunning_runtime::{CloseReason, Observer};

use crate::clock::Clock;
use crate::settings;
use crate::telemetry::metrics as m;

/// What the thread is told.
enum Signal {
    /// Run these jobs now.
    Run(Vec<Job>),
    /// Return.
    Stop,
}

/// The running jobs thread.
pub(crate) struct JobsThread {
    signals: Sender<Signal>,
    handle: JoinHandle<()>,
}

impl JobsThread {
    /// Starts the thread on `server`'s domain; the webhook outbox posts through
    /// `webhooks`, the ruler engine's outbox sends through `channels` under its policy.
    pub(crate) fn spawn(
        server: Arc<Server<Domain>>,
        s: &settings::Jobs,
        clock: Clock,
        webhooks: Arc<dyn WebhookDriver>,
        channels: (Arc<dyn DeliveryDriver>, SendPolicy),
    ) -> Self {
        let (signals, inbox) = mpsc::channel();
        let mut schedule = Scheduler::new(
            Instant::now(),
            Duration::from_secs(s.engine_interval_secs),
            Duration::from_secs(s.sweep_interval_secs),
        );
        let handle = thread::Builder::new()
            .name("jobs".into())
            .spawn(move || {
                let domain = server.dispatch();
                let drivers = Drivers {
                    clock,
                    webhooks: &*webhooks,
                    channels: &*channels.0,
                    policy: &channels.1,
                };
                loop {
                    for job in schedule.due(Instant::now()) {
                        drivers.run(domain, job);
                    }
                    let wait = schedule
                        .next_wake()
                        .saturating_duration_since(Instant::now());
                    match inbox.recv_timeout(wait) {
                        Ok(Signal::Run(jobs)) => {
                            for job in jobs {
                                drivers.run(domain, job);
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(Signal::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })
            .unwrap_or_else(|e| panic!("spawning the jobs thread: {e}"));
        Self { signals, handle }
    }

    /// An observer that forwards to `inner` and wakes this thread with the jobs a
    /// successful call wakes ([`Scheduler::after_call`]).
    pub(crate) fn waking(&self, inner: Arc<dyn Observer>) -> Waking {
        Waking {
            inner,
            signals: self.signals.clone(),
        }
    }

    /// Stops the thread (after the work in hand) and waits for it.
    pub(crate) fn stop(self) {
        let _ = self.signals.send(Signal::Stop);
        let _ = self.handle.join();
    }
}

/// The adapters' observer: [`JobsThread::waking`].
pub(crate) struct Waking {
    inner: Arc<dyn Observer>,
    signals: Sender<Signal>,
}

impl Observer for Waking {
    fn connection_opened(&self) {
        self.inner.connection_opened();
    }

    fn connection_refused(&self) {
        self.inner.connection_refused();
    }

    fn connection_closed(&self, reason: CloseReason) {
        self.inner.connection_closed(reason);
    }

    fn request_started(&self, request_id: &str) {
        self.inner.request_started(request_id);
    }

    fn request_finished(&self, request_id: &str, log: &RequestLog, status: u16, elapsed: Duration) {
        self.inner
            .request_finished(request_id, log, status, elapsed);
        let Some(tool) = log.tool.as_deref() else {
            return;
        };
        if log.tool_error.is_some() || !(200..300).contains(&status) {
            return;
        }
        let jobs = Scheduler::after_call(tool);
        if !jobs.is_empty() {
            // Never blocks (an unbounded channel); a replayed call wakes it for nothing.
            let _ = self.signals.send(Signal::Run(jobs));
        }
    }
}

/// What the jobs run through: the clock and the outbound drivers.
struct Drivers<'a> {
    clock: Clock,
    webhooks: &'a dyn WebhookDriver,
    channels: &'a dyn DeliveryDriver,
    policy: &'a SendPolicy,
}

impl Drivers<'_> {
    /// Runs one job, logging (and counting) what it did.
    fn run(&self, domain: &Domain, job: Job) {
        let clock = self.clock;
        match job {
            Job::Engine => engine_tick(domain, clock, self.channels, self.policy),
            Job::Exports => build_exports(domain, clock),
            Job::Webhooks => webhooks_tick(domain, clock, self.webhooks),
            Job::Backlog => record_backlog(domain, clock),
            Job::SweepIdempotency => match domain.sweep_idempotency(clock.now()) {
                Ok(0) => {}
                Ok(n) => tracing::info!(forgotten = n, "idempotency sweep"),
                Err(e) => tracing::warn!(error = %e, "idempotency sweep failed"),
            },
            Job::SweepGrants => match domain.sweep_grants(clock.now()) {
                Ok(0) => {}
                Ok(n) => tracing::info!(forgotten = n, "expired OAuth grants swept"),
                Err(e) => tracing::warn!(error = %e, "OAuth grant sweep failed"),
            },
        }
    }
}

/// The ruler engine tick, logged when it did something. The engine reads the clock as
/// it sends (claims are stamped with the time they are taken).
fn engine_tick(domain: &Domain, clock: Clock, driver: &dyn DeliveryDriver, policy: &SendPolicy) {
    let report = engine::tick_with(domain, &|| clock.now(), driver, policy);
    record_engine(report.as_ref().ok());
    match report {
        Ok(r) if r.overdue + r.scheduled + r.sent + r.failed + r.canceled + r.retrying > 0 => {
            tracing::info!(
                overdue = r.overdue,
                scheduled = r.scheduled,
                sent = r.sent,
                failed = r.failed,
                canceled = r.canceled,
                retrying = r.retrying,
                "ruler engine tick"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "ruler engine tick failed"),
    }
}

/// Claims and builds every export waiting; one log line per finished export.
fn build_exports(domain: &Domain, clock: Clock) {
    match exports::drain(domain, clock.now()) {
        Ok(done) => {
            for e in done {
                tracing::info!(
                    export_id = %e.id,
                    resource = %e.resource,
                    status = %e.status,
                    rows = e.row_count,
                    bytes = e.file_size,
                    error = e.error_message.as_deref(),
                    "export finished"
                );
            }
        }
        Err(e) => tracing::warn!(error = %e, "exports failed; retried on the next tick"),
    }
}

/// Webhook deliveries, through the driver `[webhooks]` chose (by default one that
/// records and never leaves the machine).
fn webhooks_tick(domain: &Domain, clock: Clock, driver: &dyn WebhookDriver) {
    let report = dunning_domain::ops::webhooks::tick(domain, clock.now(), driver);
    if let Ok(r) = &report {
        record_webhooks(r);
    }
    match report {
        Ok(r) if r.attempts > 0 => {
            tracing::info!(attempts = r.attempts, "webhook deliveries tick");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "webhook deliveries tick failed"),
    }
}

/// Counts one engine tick (`None`: it failed) and its deliveries by channel.
fn record_engine(report: Option<&engine::TickReport>) {
    let Some(r) = report else {
        metrics::counter!(m::ENGINE_TICKS, "outcome" => "error").increment(1);
        return;
    };
    metrics::counter!(m::ENGINE_TICKS, "outcome" => "ok").increment(1);
    for (channel, c) in &r.by_channel {
        let channel = m::channel(channel);
        for (outcome, n) in [
            ("sent", c.sent),
            ("failed", c.failed),
            ("canceled", c.canceled),
            ("retrying", c.retrying),
        ] {
            if n > 0 {
                metrics::counter!(m::DELIVERIES, "channel" => channel, "outcome" => outcome)
                    .increment(u64::from(n));
            }
        }
    }
}

/// Counts the webhook attempts of one outbox tick by what each delivery became.
fn record_webhooks(r: &dunning_domain::ops::webhooks::TickReport) {
    let o = r.outcomes;
    for (outcome, n) in [
        ("delivered", o.delivered),
        ("retrying", o.retrying),
        ("failed", o.failed),
    ] {
        if n > 0 {
            metrics::counter!(m::WEBHOOK_ATTEMPTS, "outcome" => outcome).increment(u64::from(n));
        }
    }
}

/// Sets the backlog gauges: the outbox and the exports by state.
fn record_backlog(domain: &Domain, clock: Clock) {
    match dunning_domain::backlog::backlog(domain, clock.now()) {
        Ok(b) => {
            metrics::gauge!(m::OUTBOX_PENDING).set(b.webhook_pending as f64);
            metrics::gauge!(m::OUTBOX_OLDEST_AGE)
                .set(b.oldest_pending_age_secs.unwrap_or(0) as f64);
            for (state, n) in dunning_domain::backlog::EXPORT_STATES.iter().zip(b.exports) {
                metrics::gauge!(m::EXPORTS, "state" => *state).set(n as f64);
            }
        }
        Err(e) => tracing::warn!(error = %e, "counting the backlog failed"),
    }
}
