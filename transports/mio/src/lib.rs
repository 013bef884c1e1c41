//! # dunning-mio: one event loop
//!
//! [`serve`] runs a single thread: one [`mio::Poll`], the listener, and a [`Slab`] of
//! connections, each a non-blocking socket plus a [`Connection`]:
//!
//! ```text
//! loop {
//!     poll (timeout: TICK, or 0 when a connection still has work)
//!     listener readable  -> accept until WouldBlock (over the cap: CAP_RESPONSE, then a
//!                           lingering close like any other)
//!     connection event   -> drive: write pending output (WouldBlock: add WRITABLE interest,
//!                           stop reading = backpressure); read up to READS_PER_TURN times,
//!                           answering every request (and deciding every head) inline,
//!                           no more than Options::max_pending_output ahead of the
//!                           peer; Close -> lingering close
//!     every TICK         -> sweep deadlines (header/idle timeouts, evictions: at the
//!                           connection cap the oldest unauthenticated connection waiting
//!                           for a head gives its place to the new one); when draining,
//!                           close idle
//! }
//! ```
//!
//! **Where the core runs**: for a server that never blocks ([`Service::may_block`] is
//! false) [`Service::handle`] is called inline on the loop thread, the smallest footprint
//! there is (no task, no thread, no buffer while idle). A server that may block (the
//! product: SQLite) gets a worker pool ([`pool`], [`Options::workers`] threads): a
//! connection's request or head goes to a worker and the connection waits, busy, while
//! the loop serves the others; the worker wakes the loop with the answer. So one slow
//! request (a long statement, a cold page) never stalls `/healthz` for everyone. A request
//! that cannot block even so ([`Service::place`]: the catalogue, a read while a
//! reader connection is free) is answered inline, as the tokio adapter does: two thread
//! switches cost more than it, and 32 clients' requests runnable on 32 workers sharing one
//! core gave the loop's slowest answers (p99 four times p50 on a page).
//!
//! Fairness: edge-triggered readiness would let one fast client monopolize the loop, so a
//! connection gets at most [`READS_PER_TURN`] reads per turn and is put back on a ready
//! list. Shutdown: checked every [`TICK`]; then the listener closes, requests still arriving
//! are answered `503` + `Connection: close`, idle connections close, and [`serve`] returns
//! when none is left or [`Options::drain_timeout`] passed.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod pool;

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dunning_core::dispatch::Dispatch;
use dunning_core::{Place, Server};
use dunning_runtime::{
    CAP_RESPONSE, CloseReason, Connection, ConnectionSlot, LINGER, LINGER_BYTES, LINGER_QUIET,
    MAX_LINGERING, MAX_REFUSING, Next, Observer, Options, Service, TICK,
};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::pool::{Answer, Done, Job, Pool, Work};
use slab::Slab;

/// Reads one connection may do before the loop turns to the others.
pub const READS_PER_TURN: usize = 8;

/// The listener's token; connection `k` of the slab is `Token(k + 1)`.
const LISTENER: Token = Token(0);
/// The workers' wake-up ([`pool`]).
const WAKER: Token = Token(usize::MAX);

/// One registered connection.
struct Entry {
    stream: TcpStream,
    conn: Connection,
    /// `None` for a connection refused over the cap, kept only to linger.
    slot: Option<ConnectionSlot>,
    /// Interest currently registered.
    interest: Interest,
    /// Set once closing: our `FIN` is sent and input is discarded.
    linger: Option<Linger>,
    /// Whether it is on the ready list.
    queued: bool,
    /// Unique for the life of the loop (slab keys are reused).
    id: u64,
    /// A request or head of it is with a worker: nothing more is read or answered.
    busy: bool,
}

/// A lingering close's bounds: until `until` ([`LINGER`]), while the peer is not silent
/// past `quiet` ([`LINGER_QUIET`]), at most [`LINGER_BYTES`] (`discarded` so far).
#[derive(Clone, Copy, Debug)]
struct Linger {
    until: Instant,
    quiet: Instant,
    discarded: usize,
}

impl Linger {
    fn starting(now: Instant) -> Self {
        Self {
            until: now + LINGER,
            quiet: now + LINGER_QUIET,
            discarded: 0,
        }
    }

    /// When it ends unless the peer sends more.
    fn deadline(&self) -> Instant {
        self.until.min(self.quiet)
    }
}

/// What became of a connection after it was driven.
enum Outcome {
    /// Waiting for readiness.
    Wait,
    /// Still has input to read (its read budget ran out).
    More,
    /// Remove it, with this reason.
    End(CloseReason),
}

/// Serves `server` on `listener` (made non-blocking) until `shutdown` turns true and the
/// drain is over. Runs on the calling thread.
///
/// Errors: creating the poll or registering the listener; a failing `poll` call other than
/// an interruption also ends the loop with its error.
pub fn serve<D: Dispatch + 'static>(
    listener: std::net::TcpListener,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    shutdown: Arc<AtomicBool>,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut listener = Some(TcpListener::from_std(listener));
    let workers = opts.workers;
    let service = Arc::new(Service::new(server, opts, observer));
    let mut poll = Poll::new()?;
    if let Some(l) = listener.as_mut() {
        poll.registry().register(l, LISTENER, Interest::READABLE)?;
    }
    let pool = if service.may_block() {
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Some(Pool::start(&service, workers, waker)?)
    } else {
        None
    };
    let mut next_id: u64 = 0;
    let mut events = Events::with_capacity(1024);
    let mut conns: Slab<Entry> = Slab::new();
    let mut ready: VecDeque<usize> = VecDeque::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut last_sweep = Instant::now();
    let mut drain_deadline: Option<Instant> = None;
    // Accept errors other than WouldBlock (EMFILE) leave connections in the backlog that no
    // new edge will announce: retry on the next turn.
    let mut accept_again = false;
    loop {
        let timeout = if ready.is_empty() {
            TICK
        } else {
            Duration::ZERO
        };
        if let Err(e) = poll.poll(&mut events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        for event in &events {
            match event.token() {
                LISTENER => accept_again = true,
                WAKER => {
                    if let Some(pool) = &pool {
                        for done in pool.finished() {
                            apply(&mut conns, &mut ready, done);
                        }
                    }
                }
                Token(t) => {
                    if let Some(entry) = conns.get_mut(t - 1) {
                        if !entry.queued {
                            entry.queued = true;
                            ready.push_back(t - 1);
                        }
                    }
                }
            }
        }
        if accept_again {
            if let Some(l) = listener.as_ref() {
                accept_again = accept(l, &poll, &service, &mut conns, &mut next_id);
            }
        }
        for _ in 0..ready.len() {
            let Some(key) = ready.pop_front() else { break };
            // Every counted connection is in the slab: the rest linger.
            let may_linger = conns.len().saturating_sub(service.connections()) < MAX_LINGERING;
            let Some(entry) = conns.get_mut(key) else {
                continue;
            };
            entry.queued = false;
            match drive(key, entry, &service, pool.as_ref(), &mut buf, may_linger) {
                Outcome::Wait => reregister(&poll, key, entry),
                Outcome::More => {
                    entry.queued = true;
                    ready.push_back(key);
                }
                Outcome::End(reason) => remove(&poll, &mut conns, key, reason),
            }
        }
        if drain_deadline.is_none() && shutdown.load(Ordering::Acquire) {
            if let Some(mut l) = listener.take() {
                let _ = poll.registry().deregister(&mut l);
            }
            service.begin_drain();
            drain_deadline = Some(Instant::now() + service.options().drain_timeout);
            last_sweep = Instant::now() - TICK;
        }
        let now = Instant::now();
        if now.duration_since(last_sweep) >= TICK {
            last_sweep = now;
            sweep(&poll, &service, &mut conns, now);
        }
        if let Some(deadline) = drain_deadline {
            if conns.is_empty() || now >= deadline {
                for key in conns.iter().map(|(k, _)| k).collect::<Vec<_>>() {
                    remove(&poll, &mut conns, key, CloseReason::Aborted);
                }
                return Ok(());
            }
        }
    }
}

/// Accepts until `WouldBlock` (then `false`) or another error such as EMFILE (then `true`:
/// try again on the next turn).
fn accept<D: Dispatch>(
    listener: &TcpListener,
    poll: &Poll,
    service: &Service<D>,
    conns: &mut Slab<Entry>,
    next_id: &mut u64,
) -> bool {
    loop {
        let (mut stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
        };
        let mut slot = service.open_connection_from(peer.ip());
        let mut linger = None;
        if slot.is_none() {
            service.refused();
            // A fresh socket's send buffer always takes these few bytes at once.
            let _ = stream.write_all(CAP_RESPONSE);
            let _ = stream.shutdown(Shutdown::Write);
            // Lingers like any closing connection (so a client that already sent its
            // request reads the refusal, not a reset), up to MAX_REFUSING at once.
            // Every counted connection of this service is in the slab: the rest linger.
            let refusing = conns.len().saturating_sub(service.connections());
            if refusing >= MAX_REFUSING {
                continue;
            }
            linger = Some(Linger::starting(Instant::now()));
        } else {
            let _ = stream.set_nodelay(true);
        }
        let entry = conns.vacant_entry();
        let token = Token(entry.key() + 1);
        if poll
            .registry()
            .register(&mut stream, token, Interest::READABLE)
            .is_err()
        {
            continue; // the slot is dropped: uncounted
        }
        let mut conn = Connection::new(service.options());
        if let Some(slot) = slot.as_mut() {
            conn.enrol(slot);
        }
        conn.set_peer(Some(peer.ip()));
        *next_id += 1;
        entry.insert(Entry {
            stream,
            conn,
            slot,
            interest: Interest::READABLE,
            linger,
            queued: false,
            id: *next_id,
            busy: false,
        });
    }
}

/// Moves what can be moved for one connection without blocking.
fn drive<D: Dispatch>(
    key: usize,
    entry: &mut Entry,
    service: &Service<D>,
    pool: Option<&Pool>,
    buf: &mut [u8],
    may_linger: bool,
) -> Outcome {
    if entry.linger.is_some() {
        return discard(entry, buf);
    }
    for _ in 0..READS_PER_TURN {
        let close = match pool {
            None => entry.conn.answer_all(service),
            Some(pool) => match hand_over(key, entry, service, pool) {
                Some(close) => close,
                // With a worker: write what is already answered, then wait for it.
                None => {
                    return match flush(entry) {
                        Err(reason) => Outcome::End(reason),
                        Ok(_) => Outcome::Wait,
                    };
                }
            },
        };
        match flush(entry) {
            Err(reason) => return Outcome::End(reason),
            Ok(false) => return Outcome::Wait, // output pending: wait for WRITABLE
            Ok(true) => {}
        }
        if close {
            let reason = entry.conn.close_reason();
            // The connection is over: its place under the cap and its per-address ticket
            // go back before the lingering close, which is bounded on its own.
            if let Some(mut slot) = entry.slot.take() {
                slot.set_reason(reason);
            }
            entry.conn.set_ticket(None);
            if !may_linger || entry.stream.shutdown(Shutdown::Write).is_err() {
                return Outcome::End(reason);
            }
            entry.linger = Some(Linger::starting(Instant::now()));
            return discard(entry, buf);
        }
        if entry.conn.held() {
            continue; // requests wait behind the output just written: answer them first
        }
        match entry.stream.read(buf) {
            Ok(0) => entry.conn.received_eof(),
            Ok(n) => entry.conn.received(&buf[..n], Instant::now()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Outcome::Wait,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Outcome::End(CloseReason::Io),
        }
    }
    Outcome::More
}

/// [`Connection::answer_all`] for a loop with a pool: a request or head that cannot
/// block ([`Service::place`], [`Service::head_may_block`]) is answered inline, as
/// the tokio adapter does; the first that may block goes to a worker (`None`: the
/// connection is busy until [`apply`]); else whether to close.
fn hand_over<D: Dispatch>(
    key: usize,
    entry: &mut Entry,
    service: &Service<D>,
    pool: &Pool,
) -> Option<bool> {
    if entry.busy {
        return None;
    }
    let work = loop {
        match entry.conn.poll() {
            // Pure computation: the trip to a worker and back would cost more than it.
            Next::Request(req) if matches!(service.place(&req), Place::Here) => {
                entry.conn.respond(service.handle(&req));
            }
            Next::Head(head) if !service.head_may_block(&head) => {
                let admission = service.check_head(&head);
                entry.conn.admit(head, admission);
            }
            Next::Request(req) => break Work::Request(req),
            Next::Head(head) => break Work::Head(head),
            Next::Read => return Some(false),
            Next::Close => return Some(true),
        }
    };
    entry.busy = true;
    pool.submit(Job {
        key,
        id: entry.id,
        work,
    });
    None
}

/// Applies a worker's answer to its connection (if it is still there) and puts the
/// connection back on the ready list.
fn apply(conns: &mut Slab<Entry>, ready: &mut VecDeque<usize>, done: Done) {
    let Some(entry) = conns.get_mut(done.key).filter(|e| e.id == done.id) else {
        return; // closed meanwhile (deadline, drain timeout): the answer is dropped
    };
    match done.answer {
        Answer::Response(resp) => entry.conn.respond(resp),
        Answer::Admission(head, admission) => entry.conn.admit(head, admission),
    }
    entry.busy = false;
    if !entry.queued {
        entry.queued = true;
        ready.push_back(done.key);
    }
}

/// Writes pending output; `Ok(true)` once all is written, `Ok(false)` on `WouldBlock`.
fn flush(entry: &mut Entry) -> Result<bool, CloseReason> {
    while !entry.conn.output().is_empty() {
        let (slices, n) = entry.conn.output_vectored();
        match entry.stream.write_vectored(&slices[..n]) {
            Ok(0) => return Err(CloseReason::Io),
            Ok(n) => entry.conn.consume_output(n, Instant::now()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(CloseReason::Io),
        }
    }
    Ok(true)
}

/// Lingering close: discards input until the peer closes or the linger bounds are hit.
fn discard(entry: &mut Entry, buf: &mut [u8]) -> Outcome {
    let Some(mut linger) = entry.linger else {
        return Outcome::Wait;
    };
    let done = entry.conn.close_reason();
    for _ in 0..READS_PER_TURN {
        if linger.discarded >= LINGER_BYTES || Instant::now() >= linger.deadline() {
            return Outcome::End(done);
        }
        match entry.stream.read(buf) {
            Ok(0) => return Outcome::End(done),
            Ok(n) => {
                linger.discarded += n;
                linger.quiet = Instant::now() + LINGER_QUIET;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                entry.linger = Some(linger);
                return Outcome::Wait;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Outcome::End(done),
        }
    }
    entry.linger = Some(linger);
    Outcome::More
}

/// Registers WRITABLE interest while output is pending, READABLE alone otherwise.
fn reregister(poll: &Poll, key: usize, entry: &mut Entry) {
    let wanted = if entry.conn.output().is_empty() {
        Interest::READABLE
    } else {
        Interest::READABLE | Interest::WRITABLE
    };
    if wanted != entry.interest
        && poll
            .registry()
            .reregister(&mut entry.stream, Token(key + 1), wanted)
            .is_ok()
    {
        entry.interest = wanted;
    }
}

/// Closes connections past their deadline, lingering past theirs, and (when draining)
/// idle ones.
fn sweep<D: Dispatch>(poll: &Poll, service: &Service<D>, conns: &mut Slab<Entry>, now: Instant) {
    let draining = service.draining();
    let expired: Vec<(usize, CloseReason)> = conns
        .iter()
        .filter_map(|(key, e)| {
            let reason = match e.linger {
                // A worker has its request: deadlines wait for the answer.
                None if e.busy => None,
                Some(linger) => (now >= linger.deadline()).then(|| e.conn.close_reason()),
                None if draining && e.conn.is_idle() => Some(CloseReason::Drain),
                None => e.conn.expired(now),
            };
            reason.map(|r| (key, r))
        })
        .collect();
    for (key, reason) in expired {
        remove(poll, conns, key, reason);
    }
}

/// Deregisters and drops a connection (which uncounts it).
fn remove(poll: &Poll, conns: &mut Slab<Entry>, key: usize, reason: CloseReason) {
    if let Some(mut entry) = conns.try_remove(key) {
        let _ = poll.registry().deregister(&mut entry.stream);
        if let Some(slot) = &mut entry.slot {
            slot.set_reason(reason);
        }
    }
}
