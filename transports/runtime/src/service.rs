//! [`Service`]: the server shared by every connection, with the gauges that decide load.

use std::collections::HashMap;
use std::net::IpAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use dunning_core::dispatch::Dispatch;
use dunning_core::{Ahead, Env, Load, Place, Reads, Response, Server, UnixTime};
use dunning_http1::OwnedRequest;
use http::{HeaderName, HeaderValue, StatusCode, header};

use crate::budget::Budget;
use crate::connection::Admission;
use crate::evict::{Queue, Standing};
use crate::observer::{CloseReason, Observer};
use crate::options::Options;

/// Counters shared with [`ConnectionSlot`]s (not generic, so slots are not either).
#[derive(Debug, Default)]
struct Gauges {
    connections: AtomicUsize,
    in_flight: AtomicUsize,
    draining: AtomicBool,
}

/// One server behind one listener: the core, the options, the observer, and the counts of
/// open connections and in-flight requests. `Send + Sync`; adapters share it in an `Arc`.
pub struct Service<D> {
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    gauges: Arc<Gauges>,
    /// Bytes held in request bodies, over every connection ([`Options::max_body_buffer`]).
    budget: Arc<Budget>,
    /// Connections per peer address that have not authenticated yet.
    unauthenticated: Arc<PerIp>,
    /// Unauthenticated connections waiting for a head, oldest first: evicted, oldest
    /// first, when a new connection finds the connection cap reached.
    evictable: Arc<Queue>,
    /// [`Server::may_block`], asked once: it does not change while serving.
    may_block: bool,
}

impl<D: Dispatch> Service<D> {
    /// A service over `server`, with nothing open and not draining.
    pub fn new(server: Arc<Server<D>>, opts: Options, observer: Arc<dyn Observer>) -> Self {
        Self {
            may_block: server.may_block(),
            budget: Budget::new(opts.max_body_buffer),
            unauthenticated: Arc::default(),
            evictable: Arc::default(),
            server,
            opts,
            observer,
            gauges: Arc::default(),
        }
    }

    /// Whether [`Service::handle`] may block on something other than the CPU
    /// ([`Server::may_block`]): async adapters then call it off their reactor.
    pub fn may_block(&self) -> bool {
        self.may_block
    }

    /// Where to answer this request ([`Server::place`]): finer than
    /// [`Service::may_block`], so an async adapter keeps on its reactor the requests that
    /// need no store even when others of the same server do, and runs there in rounds
    /// the reads the store can fetch ahead ([`Service::reads_ahead`]).
    pub fn place(&self, req: &OwnedRequest) -> Place {
        if !self.may_block {
            return Place::Here;
        }
        req.with_core(|r| self.server.place(r, self.now()))
    }

    /// Whether [`Service::check_head`] of this head may block ([`Server::head_may_block`]).
    pub fn head_may_block(&self, head: &OwnedRequest) -> bool {
        self.may_block && head.with_core(|r| self.server.head_may_block(r, self.now()))
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The observer.
    pub fn observer(&self) -> &Arc<dyn Observer> {
        &self.observer
    }

    /// Counts a new connection, or returns `None` when [`Options::max_connections`] are
    /// already open (then write [`crate::CAP_RESPONSE`], close, and call
    /// [`Service::refused`]). The slot uncounts the connection when dropped.
    #[must_use]
    pub fn open_connection(&self) -> Option<ConnectionSlot> {
        let max = self.opts.max_connections;
        self.gauges
            .connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()?;
        Some(self.slot())
    }

    /// A slot for a connection already counted.
    fn slot(&self) -> ConnectionSlot {
        self.observer.connection_opened();
        ConnectionSlot {
            gauges: Arc::clone(&self.gauges),
            observer: Arc::clone(&self.observer),
            reason: CloseReason::Done,
            ticket: None,
            standing: None,
        }
    }

    /// [`Service::open_connection`] for a connection from `peer`, which also counts as
    /// unauthenticated until one of its requests authenticates
    /// ([`Options::max_unauthenticated_per_ip`]; `None` over it: refuse it as over the
    /// connection cap). At the connection cap, the oldest connection that has not
    /// authenticated and waits for a head is evicted and this one takes its place
    /// (`None` when there is none). Hand the slot to the [`crate::Connection`]
    /// ([`crate::Connection::enrol`]): it gives the per-address count back once a request
    /// of it passes authentication, and stays in the eviction queue (entered here) while
    /// it waits.
    #[must_use]
    pub fn open_connection_from(&self, peer: IpAddr) -> Option<ConnectionSlot> {
        let ticket = match self.opts.max_unauthenticated_per_ip {
            0 => None,
            max => Some(self.unauthenticated.take(peer, max)?),
        };
        let mut slot = match self.open_connection() {
            Some(slot) => slot,
            // The evicted connection's place under the cap is this one's now.
            None if self.evictable.evict_oldest() => self.slot(),
            None => return None,
        };
        slot.ticket = ticket;
        // In the queue from here, in accept order: an async adapter's connection task
        // may first run later than a younger one's.
        let standing = Standing::new(&self.evictable);
        standing.set_waiting(true);
        slot.standing = Some(standing);
        Some(slot)
    }

    /// Connections that could be evicted now (unauthenticated, waiting for a head).
    pub fn evictable(&self) -> usize {
        self.evictable.len()
    }

    /// Reports a connection refused over the cap.
    pub fn refused(&self) {
        self.observer.connection_refused();
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.gauges.connections.load(Ordering::Acquire)
    }

    /// Bytes leased to request bodies right now ([`Options::max_body_buffer`]).
    pub fn body_bytes(&self) -> usize {
        self.budget.used()
    }

    /// Requests in the core right now.
    pub fn in_flight(&self) -> usize {
        self.gauges.in_flight.load(Ordering::Acquire)
    }

    /// Shutdown began: from now on requests are answered `503` (`Load::Draining`) with
    /// `Connection: close`, and idle connections should be closed.
    pub fn begin_drain(&self) {
        self.gauges.draining.store(true, Ordering::Release);
    }

    /// Whether [`Service::begin_drain`] was called.
    pub fn draining(&self) -> bool {
        self.gauges.draining.load(Ordering::Acquire)
    }

    /// The wall clock of the environment source (for `Date`).
    pub fn now(&self) -> UnixTime {
        self.opts.env.now()
    }

    /// Answers one request: the only way adapters call the core, with
    /// [`Service::reads_ahead`] and [`Service::run_ahead`].
    ///
    /// Counts it in flight; hands it over as `Load::Draining` while draining, as
    /// `Load::Overloaded` when more than [`Options::max_in_flight`] are in flight (this one
    /// included), else `Load::Normal`; adds `Connection: close` while draining; reports
    /// it to the observer. Blocks as long as the core does (SQLite): async adapters call
    /// it off their reactor unless [`Service::may_block`] says it never blocks. A panic in the domain becomes a bare `500` that closes the
    /// connection.
    pub fn handle(&self, req: &OwnedRequest) -> Response {
        let started = self.start(req);
        let resp = self.run(req, &started.env);
        self.finish(&started, resp)
    }

    /// The run of the read-only call `req` with the reads `ahead` the core placed it in
    /// ([`Place::Ahead`]): an async adapter then answers the request with
    /// [`Service::run_ahead`] on its reactor, awaiting the reads each run missed, instead
    /// of [`Service::handle`] on a blocking thread (`dunning_core::ahead`). Counted in
    /// flight and reported started as [`Service::handle`] counts a request, once for all
    /// its runs.
    pub fn reads_ahead(&self, req: &OwnedRequest, ahead: Arc<dyn Ahead>) -> AheadRun {
        let mut started = self.start(req);
        started.env.ahead = Some(Arc::clone(&ahead));
        AheadRun { started, ahead }
    }

    /// Runs `req` once with its reads ahead: its answer, or the reads the run missed
    /// (await them, then run it again). Never blocks; past [`AheadRun::ROUNDS`], answer
    /// with [`Service::give_up`].
    pub fn run_ahead(&self, req: &OwnedRequest, run: &AheadRun) -> Result<Response, Reads> {
        let resp = self.run(req, &run.started.env);
        match run.ahead.missed() {
            // Thrown away: the next run answers from these reads too.
            Some(reads) => Err(reads),
            None => Ok(self.finish(&run.started, resp)),
        }
    }

    /// Answers `req` with its reads ahead given up: this run reads the store itself,
    /// blocking (an adapter calls it off its reactor), and answers.
    pub fn give_up(&self, req: &OwnedRequest, run: AheadRun) -> Response {
        run.ahead.give_up();
        let resp = self.run(req, &run.started.env);
        self.finish(&run.started, resp)
    }

    /// Counts `req` in flight, decides its load and reports it started.
    fn start(&self, req: &OwnedRequest) -> Started {
        let n = self.gauges.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        let flight = InFlight(Arc::clone(&self.gauges));
        let load = if self.draining() {
            Load::Draining
        } else if n > self.opts.max_in_flight {
            Load::Overloaded
        } else {
            Load::Normal
        };
        let mut env = self.opts.env.env(load);
        env.peer = req.peer();
        self.observer.request_started(&env.request_id);
        Started {
            env,
            load,
            at: Instant::now(),
            _flight: flight,
        }
    }

    /// The core's answer to `req` in `env`; a panic is a bare `500` that closes.
    fn run(&self, req: &OwnedRequest, env: &Env) -> Response {
        let handled = catch_unwind(AssertUnwindSafe(|| {
            req.with_core(|r| self.server.handle(r, env))
        }));
        handled.unwrap_or_else(|_| {
            let mut r = Response::empty(StatusCode::INTERNAL_SERVER_ERROR)
                .with_header(header::CONNECTION, HeaderValue::from_static("close"));
            if let Ok(id) = HeaderValue::from_str(&env.request_id) {
                r.headers
                    .push((HeaderName::from_static("x-request-id"), id));
            }
            r.log.reason = Some("internal error: the handler panicked".into());
            r
        })
    }

    /// The answer as sent: `Connection: close` while draining, reported finished.
    fn finish(&self, started: &Started, mut resp: Response) -> Response {
        if started.load == Load::Draining {
            resp.headers
                .push((header::CONNECTION, HeaderValue::from_static("close")));
        }
        self.observer.request_finished(
            &started.env.request_id,
            &resp.log,
            resp.status.as_u16(),
            started.at.elapsed(),
        );
        resp
    }
}

/// A request counted in flight and reported started: its environment (the same for all
/// the runs of a request read ahead) and when it started.
struct Started {
    env: Env,
    load: Load,
    at: Instant,
    _flight: InFlight,
}

/// One read-only call answered on an async adapter's reactor ([`Service::reads_ahead`]).
pub struct AheadRun {
    started: Started,
    ahead: Arc<dyn Ahead>,
}

impl AheadRun {
    /// Rounds of reads that may be awaited before the adapter gives up: the store's
    /// reads of one call come in a round or two; more is a call whose reads depend on
    /// one another, cheaper run once on a blocking thread than run again per round.
    pub const ROUNDS: u32 = 4;

    /// Rounds of reads done so far.
    pub fn rounds(&self) -> u32 {
        self.ahead.rounds()
    }
}

impl<D: Dispatch> Service<D> {
    /// Decides on a request head before any byte of its body is read: the only way
    /// adapters answer [`crate::Next::Head`].
    ///
    /// In order: a lease on the body budget for the declared length (a chunked body starts
    /// at none and leases as it arrives); then [`Server::check_head`] — path, method,
    /// `Origin`, authentication, then load: `Load::Draining` while draining,
    /// `Load::Overloaded` when the lease could not be had — so a token-less head gets its
    /// `401` even when the budget is spent, as the processing order has it (docs/decisions.md). Admitted: the body is read under
    /// the lease. Refused: the answer is reported to the observer like any request's.
    /// Blocks as long as authentication does (see [`Service::may_block`]).
    pub fn check_head(&self, head: &OwnedRequest) -> Admission {
        let declared = head
            .declared_length()
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let lease = self.budget.lease(declared);
        let load = if self.draining() {
            Load::Draining
        } else if lease.is_none() {
            Load::Overloaded
        } else {
            Load::Normal
        };
        // The decision needs the clock and the load, not a request number: a head that
        // passes takes none (its request takes one when complete).
        let mut probe = Env::fixed(self.opts.env.now(), 0);
        probe.load = load;
        let decide = |env: &Env| {
            catch_unwind(AssertUnwindSafe(|| {
                head.with_core(|r| self.server.check_head(r, env))
            }))
        };
        match (decide(&probe), lease) {
            (Ok(None), Some(lease)) => return Admission::Admit(lease),
            (Ok(None), None) => return Admission::Refuse(unavailable()),
            _ => {}
        }
        // Refused: decide again under this request's own environment (its number goes
        // into `/v1` error bodies and the log).
        let env = self.opts.env.env(load);
        self.observer.request_started(&env.request_id);
        let start = Instant::now();
        let resp = match decide(&env) {
            Ok(Some(resp)) => resp,
            Ok(None) => unavailable(),
            Err(_) => Response::empty(StatusCode::INTERNAL_SERVER_ERROR),
        };
        self.observer.request_finished(
            &env.request_id,
            &resp.log,
            resp.status.as_u16(),
            start.elapsed(),
        );
        Admission::Refuse(resp)
    }
}

/// The `503` of a body that does not fit the budget: the same bytes as
/// [`crate::CAP_RESPONSE`] (the core's "Service unavailable", `Retry-After: 1`).
pub(crate) fn unavailable() -> Response {
    Response::json(
        StatusCode::SERVICE_UNAVAILABLE,
        crate::CAP_BODY.as_bytes().to_vec(),
    )
    .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
}

/// Decrements the in-flight gauge when the request is done, however it ends.
/// One request in flight, uncounted when dropped.
struct InFlight(Arc<Gauges>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Unauthenticated connections per peer address.
#[derive(Debug, Default)]
struct PerIp(Mutex<HashMap<IpAddr, usize>>);

impl PerIp {
    /// Counts one more for `ip` if fewer than `max` are counted.
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<Ticket> {
        let mut map = self.0.lock().ok()?;
        let n = map.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Ticket {
            per_ip: Arc::clone(self),
            ip,
        })
    }
}

/// One unauthenticated connection counted against its peer address; uncounted when
/// dropped (the connection authenticated, or ended).
#[derive(Debug)]
pub struct Ticket {
    per_ip: Arc<PerIp>,
    ip: IpAddr,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Ok(mut map) = self.per_ip.0.lock() {
            if let Some(n) = map.get_mut(&self.ip) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&self.ip);
                }
            }
        }
    }
}

/// One counted connection; dropping it uncounts it and reports
/// [`Observer::connection_closed`] with the reason set last.
pub struct ConnectionSlot {
    gauges: Arc<Gauges>,
    observer: Arc<dyn Observer>,
    reason: CloseReason,
    ticket: Option<Ticket>,
    /// Its standing in the eviction queue (connections opened with a peer address).
    standing: Option<Arc<Standing>>,
}

impl ConnectionSlot {
    /// The connection's count as unauthenticated, for its [`crate::Connection`].
    pub fn take_ticket(&mut self) -> Option<Ticket> {
        self.ticket.take()
    }

    /// Its standing in the eviction queue, for its [`crate::Connection`].
    pub(crate) fn standing(&self) -> Option<Arc<Standing>> {
        self.standing.clone()
    }

    /// Records why the connection ends (default [`CloseReason::Done`]).
    pub fn set_reason(&mut self, reason: CloseReason) {
        self.reason = reason;
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        // An evicted connection's place went to the one that evicted it.
        if self.standing.as_ref().is_some_and(|s| s.close()) {
            self.reason = CloseReason::Evicted;
        } else {
            self.gauges.connections.fetch_sub(1, Ordering::AcqRel);
        }
        self.observer.connection_closed(self.reason);
    }
}

impl std::fmt::Debug for ConnectionSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionSlot")
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}
