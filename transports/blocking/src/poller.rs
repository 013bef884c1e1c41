//! The poller: accepts, and reads every connection that only waits for input, without
//! blocking, until it is ready for a worker ([`Connection::ready`]).
//!
//! In order, each turn: wait for readiness (at most [`TICK`]); accept what the listener
//! has; take back the connections workers handed back and register them; read each
//! readable connection until `WouldBlock` or until it is ready, then hand it to the job
//! queue; every [`TICK`], close the connections past their deadline (a head not complete
//! in time, idle too long) or evicted at the connection cap, and, when draining, the idle
//! ones. After shutdown it keeps turning, without the listener, until no connection is
//! left (with it or with a worker) or the drain timeout passed.

use std::io::{self, Read};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use dunning_core::dispatch::Dispatch;
use dunning_runtime::{CloseReason, Connection, ConnectionSlot, TICK};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::{Parked, Shared, refuse};

/// The listener's token; connection `k` of the slab is `Token(k + 1)`.
const LISTENER: Token = Token(0);
/// Workers handing connections back.
pub(crate) const WAKER: Token = Token(usize::MAX);

/// A connection waiting for input. Fields drop in order (see [`Parked`]).
struct Waiting {
    stream: TcpStream,
    conn: Connection,
    slot: ConnectionSlot,
}

/// Runs the poller until shutdown and the end of the drain; returns the drain's deadline
/// (for the workers still busy).
pub(crate) fn run<D: Dispatch>(
    mut poll: Poll,
    listener: TcpListener,
    shared: &Shared<D>,
    shutdown: &AtomicBool,
) -> io::Result<Instant> {
    let mut listener = Some(mio::net::TcpListener::from_std(listener));
    if let Some(l) = listener.as_mut() {
        poll.registry().register(l, LISTENER, Interest::READABLE)?;
    }
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut conns: Slab<Waiting> = Slab::new();
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 16 * 1024];
    let mut last_sweep = Instant::now();
    let mut drain_deadline: Option<Instant> = None;
    // Accept errors other than WouldBlock (EMFILE) leave connections in the backlog that no
    // new edge will announce: retry on the next turn.
    let mut accept_again = false;
    loop {
        if let Err(e) = poll.poll(&mut events, Some(TICK)) {
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let mut readable = Vec::new();
        for event in &events {
            match event.token() {
                LISTENER => accept_again = true,
                WAKER => {}
                Token(t) => readable.push(t - 1),
            }
        }
        if accept_again {
            if let Some(l) = listener.as_ref() {
                accept_again = accept(l, &poll, shared, &mut conns, &refusing);
            }
        }
        // Handed back by workers: a complete head may already be buffered in the socket,
        // so each is read at once as well.
        let back = shared
            .back
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for p in back {
            let stream = TcpStream::from_std(p.stream);
            if let Some(key) = insert(&poll, &mut conns, stream, p.conn, p.slot) {
                readable.push(key);
            }
        }
        for key in readable {
            read(key, &poll, shared, &mut conns, &mut buf);
        }
        if drain_deadline.is_none() && shutdown.load(Ordering::Acquire) {
            if let Some(mut l) = listener.take() {
                let _ = poll.registry().deregister(&mut l);
            }
            shared.service.begin_drain();
            drain_deadline = Some(Instant::now() + shared.service.options().drain_timeout);
            last_sweep = Instant::now() - TICK;
        }
        let now = Instant::now();
        if now.duration_since(last_sweep) >= TICK {
            last_sweep = now;
            sweep(&poll, shared, &mut conns, now);
        }
        if let Some(deadline) = drain_deadline {
            let idle_workers = shared.busy.load(Ordering::Acquire) == 0 && shared.waiting() == 0;
            if (conns.is_empty() && idle_workers) || now >= deadline {
                for key in conns.iter().map(|(k, _)| k).collect::<Vec<_>>() {
                    remove(&poll, &mut conns, key, CloseReason::Aborted);
                }
                return Ok(deadline);
            }
        }
    }
}

/// Accepts until `WouldBlock` (then `false`) or another error such as EMFILE (then `true`:
/// try again on the next turn).
fn accept<D: Dispatch>(
    listener: &mio::net::TcpListener,
    poll: &Poll,
    shared: &Shared<D>,
    conns: &mut Slab<Waiting>,
    refusing: &Arc<AtomicUsize>,
) -> bool {
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return e.kind() != io::ErrorKind::WouldBlock,
        };
        let service = &shared.service;
        let Some(mut slot) = service.open_connection_from(peer.ip()) else {
            service.refused();
            refuse(stream.into(), refusing);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let mut conn = Connection::new(service.options());
        conn.enrol(&mut slot);
        conn.set_peer(Some(peer.ip()));
        // A failed registration drops the slot: uncounted.
        let _ = insert(poll, conns, stream, conn, slot);
    }
}

/// Registers a waiting connection; its key, or `None` when it could not be registered
/// (then it is closed).
fn insert(
    poll: &Poll,
    conns: &mut Slab<Waiting>,
    mut stream: TcpStream,
    conn: Connection,
    mut slot: ConnectionSlot,
) -> Option<usize> {
    let entry = conns.vacant_entry();
    let key = entry.key();
    if poll
        .registry()
        .register(&mut stream, Token(key + 1), Interest::READABLE)
        .is_err()
    {
        slot.set_reason(CloseReason::Io);
        return None;
    }
    entry.insert(Waiting { stream, conn, slot });
    Some(key)
}

/// Reads a connection until `WouldBlock` or until it is ready, then hands it to a worker.
fn read<D: Dispatch>(
    key: usize,
    poll: &Poll,
    shared: &Shared<D>,
    conns: &mut Slab<Waiting>,
    buf: &mut [u8],
) {
    let Some(w) = conns.get_mut(key) else {
        return;
    };
    // Bounded: the codec takes at most its input cap before it is ready (an error).
    while !w.conn.ready() {
        match w.stream.read(buf) {
            Ok(0) => w.conn.received_eof(),
            Ok(n) => w.conn.received(&buf[..n], Instant::now()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return remove(poll, conns, key, CloseReason::Io),
        }
    }
    if w.conn.evicted() {
        return remove(poll, conns, key, CloseReason::Evicted);
    }
    let mut w = conns.remove(key);
    let _ = poll.registry().deregister(&mut w.stream);
    shared.submit(Parked {
        stream: w.stream.into(),
        conn: w.conn,
        slot: w.slot,
    });
}

/// Closes connections past their deadline or evicted, and (when draining) idle ones.
fn sweep<D: Dispatch>(poll: &Poll, shared: &Shared<D>, conns: &mut Slab<Waiting>, now: Instant) {
    let draining = shared.service.draining();
    let expired: Vec<(usize, CloseReason)> = conns
        .iter()
        .filter_map(|(key, w)| {
            let reason = if draining && w.conn.is_idle() {
                Some(CloseReason::Drain)
            } else {
                w.conn.expired(now)
            };
            reason.map(|r| (key, r))
        })
        .collect();
    for (key, reason) in expired {
        remove(poll, conns, key, reason);
    }
}

/// Deregisters and drops a connection (which uncounts it).
fn remove(poll: &Poll, conns: &mut Slab<Waiting>, key: usize, reason: CloseReason) {
    if let Some(mut w) = conns.try_remove(key) {
        let _ = poll.registry().deregister(&mut w.stream);
        w.slot.set_reason(reason);
    }
}
