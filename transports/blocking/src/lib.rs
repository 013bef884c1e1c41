//! # dunning-blocking: the `std::net` adapter
//!
//! [`serve`] accepts on a `std::net::TcpListener` and hands each connection, through a
//! bounded queue, to one of [`Options::workers`] threads. A worker serves one connection
//! at a time with plain blocking reads and writes, calling the core inline:
//!
//! ```text
//! accept thread:  accept -> counted? -> queue has room? -> queue   (else CAP_RESPONSE,
//!                                                                   lingering close)
//! worker:         loop { answer_all (core inline) ; write ; Close? ; read (TICK timeout) }
//!                 then a lingering close, on a thread of its own (at most MAX_REFUSING
//!                 at once; beyond, on the worker)
//! ```
//!
//! Why: no async runtime at all, the easiest adapter to reason about and to debug, and a
//! reference for the other two. The price is a thread per active connection, hence the
//! bounded pool: when every worker is busy and accepted connections wait in the queue, as
//! many workers as connections wait close a connection idle for at least 100 ms
//! ([`CloseReason::Drain`]) to serve the next one.
//!
//! std has no accept timeout, so the listener is non-blocking and the accept thread sleeps
//! a millisecond when there is nothing to accept (and checks the shutdown flag). Reads use
//! a [`TICK`] timeout so workers notice deadlines, the drain, and waiting connections.
//!
//! Shutdown: when the flag turns true the listener is closed, requests still arriving are
//! answered `503` + `Connection: close`, idle connections close, and [`serve`] returns once
//! every worker is done or [`Options::drain_timeout`] passed (workers still busy then are
//! left to finish on their own).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use dunning_core::Server;
use dunning_core::dispatch::Dispatch;
use dunning_runtime::{
    CAP_RESPONSE, CloseReason, Connection, ConnectionSlot, LINGER, LINGER_BYTES, LINGER_QUIET,
    MAX_REFUSING, Observer, Options, Service, TICK, Ticket,
};

/// What the accept thread hands a worker.
type Job = (TcpStream, ConnectionSlot);

/// State shared by the accept thread and the workers.
struct Pool<D> {
    service: Service<D>,
    jobs: Mutex<Receiver<Job>>,
    /// Worker threads.
    workers: usize,
    /// Connections accepted and waiting for a worker.
    waiting: AtomicUsize,
    /// Workers serving a connection.
    busy: AtomicUsize,
    /// Workers that decided to close their idle connection for a waiting one.
    evicting: AtomicUsize,
    /// Closed connections lingering on threads of their own (at most [`MAX_REFUSING`]).
    lingering: Arc<AtomicUsize>,
}

/// How long a connection must have been idle before it may be closed for a waiting one
/// (a client usually sends its next request within this).
const EVICT_AFTER: Duration = Duration::from_millis(100);

/// Serves `server` on `listener` until `shutdown` turns true and the drain is over.
///
/// Spawns [`Options::workers`] threads (at least one). Errors: only from configuring the
/// listener; accept errors are survived with a short pause.
pub fn serve<D: Dispatch + 'static>(
    listener: TcpListener,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    shutdown: Arc<AtomicBool>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let workers = opts.workers.max(1);
    let (tx, rx) = sync_channel::<Job>(workers);
    let pool = Arc::new(Pool {
        service: Service::new(server, opts, observer),
        jobs: Mutex::new(rx),
        workers,
        waiting: AtomicUsize::new(0),
        busy: AtomicUsize::new(0),
        evicting: AtomicUsize::new(0),
        lingering: Arc::new(AtomicUsize::new(0)),
    });
    let mut handles = Vec::with_capacity(workers);
    for i in 0..workers {
        let pool = Arc::clone(&pool);
        let handle = thread::Builder::new()
            .name(format!("dunning-worker-{i}"))
            .spawn(move || worker(&pool))?;
        handles.push(handle);
    }
    accept_loop(&listener, &pool, &tx, &shutdown);
    drop(listener);
    pool.service.begin_drain();
    drop(tx);
    let deadline = Instant::now() + pool.service.options().drain_timeout;
    while handles.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    for h in handles.into_iter().filter(|h| h.is_finished()) {
        let _ = h.join();
    }
    Ok(())
}

/// Accepts until the shutdown flag turns true.
fn accept_loop<D: Dispatch>(
    listener: &TcpListener,
    pool: &Pool<D>,
    tx: &SyncSender<Job>,
    shutdown: &AtomicBool,
) {
    let refusing = Arc::new(AtomicUsize::new(0));
    while !shutdown.load(Ordering::Acquire) {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // WouldBlock (nothing to accept) or a transient error (EMFILE, ...).
                thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        let refused = match pool.service.open_connection_from(peer.ip()) {
            None => Some(stream),
            Some(slot) => {
                pool.waiting.fetch_add(1, Ordering::AcqRel);
                match tx.try_send((stream, slot)) {
                    Ok(()) => None,
                    Err(
                        TrySendError::Full((stream, slot))
                        | TrySendError::Disconnected((stream, slot)),
                    ) => {
                        pool.waiting.fetch_sub(1, Ordering::AcqRel);
                        drop(slot);
                        Some(stream)
                    }
                }
            }
        };
        if let Some(stream) = refused {
            pool.service.refused();
            refuse(stream, &refusing);
        }
    }
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

/// A worker thread: takes connections until the queue is closed and empty.
fn worker<D: Dispatch>(pool: &Pool<D>) {
    loop {
        let job = match pool.jobs.lock() {
            Ok(rx) => rx.recv_timeout(TICK),
            Err(_) => return,
        };
        match job {
            Ok((stream, mut slot)) => {
                pool.busy.fetch_add(1, Ordering::AcqRel);
                pool.waiting.fetch_sub(1, Ordering::AcqRel);
                let mut evicted = false;
                let ticket = slot.take_ticket();
                let reason = serve_connection(pool, stream, ticket, &mut evicted);
                pool.busy.fetch_sub(1, Ordering::AcqRel);
                if evicted {
                    pool.evicting.fetch_sub(1, Ordering::AcqRel);
                }
                slot.set_reason(reason);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Whether this worker should close its idle connection (idle since `since`) for one
/// waiting in the queue: only when every worker is busy, and only as many workers as
/// connections wait (a claim on `evicting`, released by the caller).
fn evict<D>(pool: &Pool<D>, since: Instant) -> bool {
    if since.elapsed() < EVICT_AFTER
        || pool.busy.load(Ordering::Acquire) < pool.workers
        || pool.waiting.load(Ordering::Acquire) <= pool.evicting.load(Ordering::Acquire)
    {
        return false;
    }
    if pool.evicting.fetch_add(1, Ordering::AcqRel) < pool.waiting.load(Ordering::Acquire) {
        return true;
    }
    pool.evicting.fetch_sub(1, Ordering::AcqRel);
    false
}

/// One connection, start to end; returns why it ended. `evicted` is set when it was closed
/// for a waiting connection (holding a claim on `evicting`).
fn serve_connection<D: Dispatch>(
    pool: &Pool<D>,
    mut stream: TcpStream,
    ticket: Option<Ticket>,
    evicted: &mut bool,
) -> CloseReason {
    let service = &pool.service;
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(TICK)).is_err() {
        return CloseReason::Io;
    }
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new(service.options());
    conn.set_ticket(ticket);
    conn.set_peer(stream.peer_addr().ok().map(|a| a.ip()));
    let mut buf = vec![0u8; 16 * 1024];
    let reason = loop {
        let close = conn.answer_all(service);
        if let Err(reason) = flush(&mut stream, &mut conn) {
            return reason;
        }
        if close {
            break conn.close_reason();
        }
        if conn.held() {
            continue; // requests wait behind the output just written: answer them first
        }
        if let Some(since) = conn.idle_since() {
            if service.draining() {
                return CloseReason::Drain;
            }
            if evict(pool, since) {
                *evicted = true;
                return CloseReason::Drain;
            }
        }
        if let Some(reason) = conn.expired(Instant::now()) {
            return reason;
        }
        match stream.read(&mut buf) {
            Ok(0) => conn.received_eof(),
            Ok(n) => conn.received(&buf[..n], Instant::now()),
            Err(e) if timed_out(&e) => {}
            Err(_) => return CloseReason::Io,
        }
    };
    // The lingering close (up to LINGER) happens off the worker when a thread can be had:
    // a flood of requests refused at their head (401, then close) would otherwise hold
    // every worker for LINGER each.
    // Past that many, the socket is closed at once: lingering on the worker would let
    // ~64 refused clients a second hold every worker, and everyone get 503.
    if pool.lingering.fetch_add(1, Ordering::AcqRel) < MAX_REFUSING {
        linger_aside(stream, &pool.lingering);
    } else {
        pool.lingering.fetch_sub(1, Ordering::AcqRel);
        let _ = stream.shutdown(Shutdown::Write);
    }
    reason
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
        match stream.write(conn.output()) {
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
