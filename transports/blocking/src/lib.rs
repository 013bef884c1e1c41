//! # dunning-blocking: the `std::net` adapter
//!
//! [`serve`] runs a poller on the calling thread and [`Options::workers`] worker threads.
//! The poller accepts connections and reads them, without blocking, until they have
//! something to do ([`Connection::ready`]: a complete head, the codec's own answer, the
//! end); only then does it queue them for a worker. A worker serves its connection with
//! plain blocking reads and writes, calling the core inline, and hands it back to the
//! poller once it only waits for its next request:
//!
//! ```text
//! poller:  accept -> counted (or evicts the oldest unauthenticated head-waiter at the
//!          cap)? else CAP_RESPONSE, lingering close
//!          readable -> read until WouldBlock -> ready? -> job queue
//!          every TICK -> header/idle deadlines, evictions, the drain
//! worker:  loop { answer_all (core inline) ; write ; Close? ;
//!                 only waiting for a request? -> back to the poller when a job waits,
//!                                                or after HOLD ;
//!                 read (TICK timeout) }
//!          then a lingering close, on a thread of its own (at most MAX_REFUSING at
//!          once; beyond, closed at once)
//! ```
//!
//! Why: no async runtime at all, the easiest adapter to reason about and to debug, and a
//! reference for the other two. The price is a thread per active connection, hence the
//! bounded pool. A request head that trickles in, or never ends, used to hold a worker
//! until its header deadline: 64 of them, from one address, and every other client
//! waited. Now it costs a socket and a [`Connection`] in the poller, as in the mio
//! adapter, and a worker is taken only for work (`docs/decisions.md`, "Slow heads").
//!
//! A worker keeps a connection that waits for its next request for at most [`HOLD`]
//! (a client sending request after request saves the trip through the poller), and not
//! at all while another connection waits for a worker.
//!
//! Fairness: a worker yields its core after every answer it writes. A worker whose client
//! sends its next request at once would otherwise go on serving that one connection for
//! its whole time slice while the requests of the other connections sharing the core
//! waited: with 32 clients on one core, p99 was ten times p50 (14 ms against 1.4). The
//! yield makes the scheduler rotate per answer, as the async adapters' loops do: p99 is
//! then about twice p50, for one `sched_yield` per answer (`docs/decisions.md`, "The
//! blocking adapter yields after each answer").
//!
//! Shutdown: when the flag turns true the listener is closed, requests still arriving are
//! answered `503` + `Connection: close`, idle connections close, and [`serve`] returns once
//! every connection is done or [`Options::drain_timeout`] passed (workers still busy then
//! are left to finish on their own).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod poller;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use dunning_core::Server;
use dunning_core::dispatch::Dispatch;
use dunning_runtime::{
    CAP_RESPONSE, CloseReason, Connection, ConnectionSlot, LINGER, LINGER_BYTES, LINGER_QUIET,
    MAX_REFUSING, Observer, Options, Service, TICK,
};

/// How long a worker keeps a connection that waits for its next request, when no other
/// connection waits for a worker.
pub const HOLD: Duration = TICK;

/// A connection between the poller and a worker. Fields drop in order: the connection
/// leaves the eviction queue before its slot gives its place back.
struct Parked {
    stream: TcpStream,
    conn: Connection,
    slot: ConnectionSlot,
}

/// Connections ready for a worker.
#[derive(Default)]
struct Jobs {
    queue: VecDeque<Parked>,
    /// No more jobs: workers end once the queue is empty.
    closed: bool,
}

/// State shared by the poller and the workers.
struct Shared<D> {
    service: Service<D>,
    jobs: Mutex<Jobs>,
    job_ready: Condvar,
    /// Connections handed back to the poller; it is woken through `waker`.
    back: Mutex<Option<Vec<Parked>>>,
    waker: mio::Waker,
    /// Workers serving a connection.
    busy: AtomicUsize,
    /// Closed connections lingering on threads of their own (at most [`MAX_REFUSING`]).
    lingering: Arc<AtomicUsize>,
}

impl<D> Shared<D> {
    fn jobs(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a ready connection for a worker.
    fn submit(&self, job: Parked) {
        self.jobs().queue.push_back(job);
        self.job_ready.notify_one();
    }

    /// Connections waiting for a worker.
    fn waiting(&self) -> usize {
        self.jobs().queue.len()
    }

    /// Hands a connection back to the poller; gives it back (`Some`) when the poller is
    /// gone.
    fn park(&self, parked: Parked) -> Option<Parked> {
        let mut back = self.back.lock().unwrap_or_else(PoisonError::into_inner);
        match back.as_mut() {
            Some(list) => {
                list.push(parked);
                drop(back);
                let _ = self.waker.wake();
                None
            }
            None => Some(parked),
        }
    }
}

/// Serves `server` on `listener` until `shutdown` turns true and the drain is over.
///
/// Spawns [`Options::workers`] threads (at least one); the poller runs on the calling
/// thread. Errors: only from configuring the listener and the poller; accept errors are
/// survived (retried on the next turn).
pub fn serve<D: Dispatch + 'static>(
    listener: TcpListener,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    shutdown: Arc<AtomicBool>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let workers = opts.workers.max(1);
    let poll = mio::Poll::new()?;
    let waker = mio::Waker::new(poll.registry(), poller::WAKER)?;
    let shared = Arc::new(Shared {
        service: Service::new(server, opts, observer),
        jobs: Mutex::default(),
        job_ready: Condvar::new(),
        back: Mutex::new(Some(Vec::new())),
        waker,
        busy: AtomicUsize::new(0),
        lingering: Arc::new(AtomicUsize::new(0)),
    });
    let mut handles = Vec::with_capacity(workers);
    for i in 0..workers {
        let shared = Arc::clone(&shared);
        let handle = thread::Builder::new()
            .name(format!("dunning-worker-{i}"))
            .spawn(move || worker(&shared))?;
        handles.push(handle);
    }
    let drain_deadline = poller::run(poll, listener, &shared, &shutdown)?;
    // Connections handed back from now on are closed by their worker.
    let left = shared
        .back
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    drop(left);
    shared.jobs().closed = true;
    shared.job_ready.notify_all();
    while handles.iter().any(|h| !h.is_finished()) && Instant::now() < drain_deadline {
        thread::sleep(Duration::from_millis(5));
    }
    for h in handles.into_iter().filter(|h| h.is_finished()) {
        let _ = h.join();
    }
    Ok(())
}

/// Answers a connection over the cap with [`CAP_RESPONSE`], then closes it lingering on a
/// short-lived thread, so that a client that had already sent its request reads the
/// refusal instead of a reset; at most [`MAX_REFUSING`] at once, beyond which the socket
/// is closed at once.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicUsize>) {
    // A fresh socket's send buffer always takes these few bytes at once.
    let _ = stream.set_nonblocking(true);
    let _ = stream.write_all(CAP_RESPONSE);
    if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        let _ = stream.shutdown(Shutdown::Write);
        return;
    }
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(TICK));
    linger_aside(stream, refusing);
}

/// Lingers on a short-lived thread of its own, counted in `count` (the caller took the
/// count); if no thread can be had, the socket is closed at once.
fn linger_aside(mut stream: TcpStream, count: &Arc<AtomicUsize>) {
    let (mine, on_failure) = (Arc::clone(count), Arc::clone(count));
    let spawned = thread::Builder::new().name("linger".into()).spawn(move || {
        linger(&mut stream, &mut [0u8; 4096]);
        mine.fetch_sub(1, Ordering::AcqRel);
    });
    if spawned.is_err() {
        // The stream went down with the closure: closed, not lingering.
        on_failure.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A worker thread: takes ready connections until the queue is closed and empty.
fn worker<D: Dispatch>(shared: &Shared<D>) {
    loop {
        let job = {
            let mut jobs = shared.jobs();
            loop {
                if let Some(job) = jobs.queue.pop_front() {
                    break job;
                }
                if jobs.closed {
                    return;
                }
                jobs = match shared.job_ready.wait_timeout(jobs, TICK) {
                    Ok((guard, _)) => guard,
                    Err(poisoned) => poisoned.into_inner().0,
                };
            }
        };
        shared.busy.fetch_add(1, Ordering::AcqRel);
        serve_parked(shared, job);
        shared.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What became of a connection on a worker.
enum Step {
    /// It waits for its next request: back to the poller.
    Park,
    /// It ended this way; `true` for a lingering close.
    End(CloseReason, bool),
}

/// Serves one ready connection until it ends or only waits for its next request.
fn serve_parked<D: Dispatch>(shared: &Shared<D>, mut p: Parked) {
    if p.stream.set_nonblocking(false).is_err() || p.stream.set_read_timeout(Some(TICK)).is_err() {
        p.slot.set_reason(CloseReason::Io);
        return;
    }
    let step = work(shared, &mut p.stream, &mut p.conn);
    let (reason, lingers) = match step {
        Step::Park => {
            if p.stream.set_nonblocking(true).is_ok() {
                match shared.park(p) {
                    None => return,
                    Some(back) => p = back,
                }
            }
            (CloseReason::Drain, false)
        }
        Step::End(reason, lingers) => (reason, lingers),
    };
    p.slot.set_reason(reason);
    let Parked { stream, conn, slot } = p;
    // The connection's place under the caps goes back before the lingering close.
    drop(conn);
    drop(slot);
    if !lingers {
        return;
    }
    // The lingering close (up to LINGER) happens off the worker when a thread can be had:
    // a flood of requests refused at their head (401, then close) would otherwise hold
    // every worker for LINGER each. Past MAX_REFUSING at once, the socket is closed at once.
    if shared.lingering.fetch_add(1, Ordering::AcqRel) < MAX_REFUSING {
        linger_aside(stream, &shared.lingering);
    } else {
        shared.lingering.fetch_sub(1, Ordering::AcqRel);
        let _ = stream.shutdown(Shutdown::Write);
    }
}

/// The worker's loop of the crate docs.
fn work<D: Dispatch>(shared: &Shared<D>, stream: &mut TcpStream, conn: &mut Connection) -> Step {
    let service = &shared.service;
    let mut buf = [0u8; 16 * 1024];
    let mut waiting_since: Option<Instant> = None;
    loop {
        let close = conn.answer_all(service);
        if let Err(reason) = flush(stream, conn) {
            return Step::End(reason, false);
        }
        if close {
            let reason = conn.close_reason();
            return Step::End(reason, reason != CloseReason::Evicted);
        }
        if conn.held() {
            continue; // requests wait behind the output just written: answer them first
        }
        // One answer, then the other runnable workers' turn (see the crate docs, "Fairness").
        thread::yield_now();
        if conn.awaiting_request() {
            if service.draining() && conn.is_idle() {
                return Step::End(CloseReason::Drain, false);
            }
            let since = *waiting_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= HOLD || shared.waiting() > 0 {
                return Step::Park;
            }
        } else {
            waiting_since = None;
        }
        if let Some(reason) = conn.expired(Instant::now()) {
            return Step::End(reason, false);
        }
        match stream.read(&mut buf) {
            Ok(0) => conn.received_eof(),
            Ok(n) => conn.received(&buf[..n], Instant::now()),
            Err(e) if timed_out(&e) => {}
            Err(_) => return Step::End(CloseReason::Io, false),
        }
    }
}

/// Writes everything pending; a write stalled past the idle timeout fails.
fn flush(stream: &mut TcpStream, conn: &mut Connection) -> Result<(), CloseReason> {
    while !conn.output().is_empty() {
        let left = conn.deadline().map_or(Duration::ZERO, |d| {
            d.saturating_duration_since(Instant::now())
        });
        if left.is_zero() {
            return Err(CloseReason::IdleTimeout);
        }
        if stream.set_write_timeout(Some(left)).is_err() {
            return Err(CloseReason::Io);
        }
        let (slices, n) = conn.output_vectored();
        match stream.write_vectored(&slices[..n]) {
            Ok(0) => return Err(CloseReason::Io),
            Ok(n) => conn.consume_output(n, Instant::now()),
            Err(e) if timed_out(&e) => {}
            Err(_) => return Err(CloseReason::Io),
        }
    }
    Ok(())
}

/// `FIN`, then discard what the peer still sends until it closes (at most [`LINGER`] and
/// [`LINGER_BYTES`], or until it is silent for [`LINGER_QUIET`]), so it reads our last
/// response rather than a reset.
fn linger(stream: &mut TcpStream, buf: &mut [u8]) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + LINGER;
    let mut quiet = Instant::now() + LINGER_QUIET;
    let mut discarded = 0;
    while discarded < LINGER_BYTES && Instant::now() < deadline.min(quiet) {
        match stream.read(buf) {
            Ok(0) => return,
            Ok(n) => {
                discarded += n;
                quiet = Instant::now() + LINGER_QUIET;
            }
            Err(e) if timed_out(&e) => {}
            Err(_) => return,
        }
    }
}

/// A read or write timeout (or an interruption): try again.
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
