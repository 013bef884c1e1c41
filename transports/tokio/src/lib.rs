//! # dunning-tokio: the deployment adapter
//!
//! [`serve`] runs an accept loop on a tokio [`TcpListener`] and one task per connection.
//! Each task is the loop of [`dunning_runtime`], moving bytes and nothing else:
//!
//! ```text
//! loop {
//!     poll the Connection: for each request, where Service::place says: Here,
//!                          Service::handle inline (a catalog method with a known
//!                          principal, a read while a SQLite reader is free);
//!                          Blocking, Service::handle on the blocking pool
//!                          (spawn_blocking: the domain blocks on SQLite); Ahead, here
//!                          in rounds (Service::reads_ahead: a read-only call on
//!                          PostgreSQL, its reads awaited between runs); then
//!                          respond; for each head
//!                          (a body not read yet), Service::check_head the same way,
//!                          then admit
//!     (past Options::max_pending_output the Connection holds requests back: write,
//!      then poll again before reading)
//!     write everything pending (bounded by the idle timeout)
//!     Close polled        -> lingering close, end
//!     draining and idle   -> end
//!     wait for: readable | the connection's deadline | the drain signal | evicted
//! }
//! ```
//!
//! Why this shape: tokio is what the product ships on, and a task per connection keeps an
//! idle keep-alive connection down to its task and a [`Connection`] (the read buffer lives
//! on the stack, never across an `.await`). The core runs off the reactor whenever the
//! request may reach the store, so one slow SQLite query never stalls other
//! connections' I/O; the requests that cannot run inline, saving two thread switches.
//!
//! Caps: over [`Options::max_unauthenticated_per_ip`] from its address, or over
//! [`Options::max_connections`] when no connection can be evicted for it (the oldest
//! unauthenticated one waiting for a head is, and its task wakes and ends), a connection
//! gets [`CAP_RESPONSE`] and is closed; over [`Options::max_in_flight`] requests, the core itself answers `503`
//! (`Load::Overloaded`). Shutdown: when `shutdown` resolves the listener is dropped, new
//! requests are answered `503` + `Connection: close`, idle connections close, and `serve`
//! returns once every connection ended or [`Options::drain_timeout`] passed.
//!
//! ```no_run
//! # async fn demo<D: dunning_core::dispatch::Dispatch + 'static>(server: std::sync::Arc<dunning_core::Server<D>>) -> std::io::Result<()> {
//! use std::sync::Arc;
//! use dunning_runtime::{NoopObserver, Options};
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let stop = async { let _ = tokio::signal::ctrl_c().await; };
//! dunning_tokio::serve(listener, server, Options::default(), Arc::new(NoopObserver), stop).await
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::io::{self, Read as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dunning_core::dispatch::Dispatch;
use dunning_core::{Place, Response, Server};
use dunning_http1::OwnedRequest;
use dunning_runtime::{
    AheadRun, CAP_RESPONSE, CloseReason, Connection, ConnectionSlot, LINGER, LINGER_BYTES,
    LINGER_QUIET, MAX_LINGERING, MAX_REFUSING, Next, Observer, Options, Service,
};
use socket2::SockRef;
use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::timeout_at;

/// Size of the read buffer.
const READ_BUF: usize = 16 * 1024;

thread_local! {
    /// The read buffer of the connections this thread drives: a read is copied into its
    /// connection at once ([`read_with`]), so one buffer serves them all. Made for each
    /// read it was a 16 KiB fill per request; kept per connection, 16 KiB of every idle
    /// connection's memory (12.7 KiB measured per idle connection, against 3.3-3.9).
    static READ: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One non-blocking read of `stream` into this thread's buffer, its bytes (none at the
/// end of the stream) handed to `take` before the buffer is lent to another read.
///
/// A read that fills less than the buffer took everything the socket held, so it also
/// clears the stream's readiness: otherwise the next wait returns at once, and one more
/// read (a system call and a turn of the connection's loop, its timer included) finds
/// nothing, once per request. nginx clears its `ready` flag on a short read for the same
/// reason. Bytes that arrive later raise readiness again (the reactor's registration is
/// edge-triggered). The read runs inside `try_io`, which clears the readiness it saw
/// before the read and only that: readiness the reactor records meanwhile, on another
/// worker, for bytes that came after the read, is kept (clearing it after the read
/// lost that wake-up: `chunked_body_of_3_mb_gets_413_with_the_exact_body` hung).
fn read_with<R>(stream: &TcpStream, take: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
    READ.with_borrow_mut(|buf| {
        if buf.is_empty() {
            buf.resize(READ_BUF, 0);
        }
        let mut n = 0;
        let read = stream.try_io(Interest::READABLE, || {
            n = (&*SockRef::from(stream)).read(buf)?;
            match n {
                short if 0 < short && short < buf.len() => Err(io::ErrorKind::WouldBlock.into()),
                _ => Ok(()),
            }
        });
        match read {
            Err(e) if !(e.kind() == io::ErrorKind::WouldBlock && n > 0) => Err(e),
            _ => Ok(take(&buf[..n])),
        }
    })
}

/// Serves `server` on `listener` until `shutdown` resolves and the drain is over.
///
/// Must run inside a multi-threaded tokio runtime (it uses `spawn_blocking`). Accept
/// errors (out of file descriptors, aborted handshakes) are survived with a 10 ms pause;
/// the result is `Ok(())` after a graceful shutdown.
pub async fn serve<D: Dispatch + 'static>(
    listener: TcpListener,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let service = Arc::new(Service::new(server, opts, observer));
    let (drain_tx, drain_rx) = watch::channel(false);
    let refusing = Arc::new(AtomicUsize::new(0));
    let lingering = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                match service.open_connection_from(peer.ip()) {
                    Some(slot) => {
                        let svc = Arc::clone(&service);
                        let closing = Arc::clone(&lingering);
                        tasks.spawn(connection(svc, stream, slot, drain_rx.clone(), closing));
                    }
                    None => {
                        service.refused();
                        refuse(stream, &refusing, &mut tasks);
                    }
                }
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    service.begin_drain();
    let _ = drain_tx.send(true);
    let deadline = tokio::time::Instant::now() + service.options().drain_timeout;
    let _ = timeout_at(deadline, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
    Ok(())
}

/// Answers a connection over the cap: [`CAP_RESPONSE`], then a lingering close.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicUsize>, tasks: &mut JoinSet<()>) {
    if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        let _ = stream.try_write(CAP_RESPONSE);
        return;
    }
    let refusing = Arc::clone(refusing);
    tasks.spawn(async move {
        let deadline = tokio::time::Instant::now() + LINGER;
        if let Ok(Ok(())) = timeout_at(deadline, stream.write_all(CAP_RESPONSE)).await {
            linger(&mut stream).await;
        }
        refusing.fetch_sub(1, Ordering::AcqRel);
    });
}

/// One connection's task.
async fn connection<D: Dispatch + 'static>(
    service: Arc<Service<D>>,
    mut stream: TcpStream,
    mut slot: ConnectionSlot,
    mut drain: watch::Receiver<bool>,
    lingering: Arc<AtomicUsize>,
) {
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new(service.options());
    conn.enrol(&mut slot);
    conn.set_peer(stream.peer_addr().ok().map(|a| a.ip()));
    let reason = drive(&service, &mut stream, &mut conn, &mut drain).await;
    slot.set_reason(reason);
    // The connection is over: its place under the cap and its per-address ticket go back
    // before the lingering close, which is bounded on its own (MAX_LINGERING).
    drop(conn);
    drop(slot);
    if matches!(reason, CloseReason::Done | CloseReason::Codec) {
        if lingering.fetch_add(1, Ordering::AcqRel) < MAX_LINGERING {
            linger(&mut stream).await;
        }
        lingering.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A read-only call answered here, its reads awaited on this runtime between runs
/// (`dunning_core::ahead`); past [`AheadRun::ROUNDS`] rounds, run once more on a
/// blocking thread, reading the store itself.
async fn ahead<D: Dispatch + 'static>(
    service: &Arc<Service<D>>,
    req: OwnedRequest,
    run: AheadRun,
) -> Result<Response, tokio::task::JoinError> {
    while run.rounds() < AheadRun::ROUNDS {
        match service.run_ahead(&req, &run) {
            Ok(resp) => return Ok(resp),
            Err(reads) => reads.await,
        }
    }
    let svc = Arc::clone(service);
    tokio::task::spawn_blocking(move || svc.give_up(&req, run)).await
}

/// The loop of the crate docs; returns why the connection ends.
async fn drive<D: Dispatch + 'static>(
    service: &Arc<Service<D>>,
    stream: &mut TcpStream,
    conn: &mut Connection,
    drain: &mut watch::Receiver<bool>,
) -> CloseReason {
    let mut eof = false;
    loop {
        let close = loop {
            match conn.poll() {
                Next::Request(req) => {
                    let answered = match service.place(&req) {
                        // Pure computation: two thread switches would cost more than it.
                        Place::Here => Ok(service.handle(&req)),
                        Place::Blocking => {
                            let svc = Arc::clone(service);
                            tokio::task::spawn_blocking(move || svc.handle(&req)).await
                        }
                        Place::Ahead(reads) => {
                            let run = service.reads_ahead(&req, reads);
                            ahead(service, req, run).await
                        }
                    };
                    match answered {
                        Ok(resp) => conn.respond(resp),
                        Err(_) => return CloseReason::Aborted,
                    }
                }
                // A head is decided like a request is answered (authentication may block).
                Next::Head(head) => {
                    if service.head_may_block(&head) {
                        let svc = Arc::clone(service);
                        let decided = tokio::task::spawn_blocking(move || {
                            let admission = svc.check_head(&head);
                            (head, admission)
                        });
                        match decided.await {
                            Ok((head, admission)) => conn.admit(head, admission),
                            Err(_) => return CloseReason::Aborted,
                        }
                    } else {
                        let admission = service.check_head(&head);
                        conn.admit(head, admission);
                    }
                }
                Next::Read => break false,
                Next::Close => break true,
            }
        };
        if let Err(reason) = flush(stream, conn).await {
            return reason;
        }
        if close {
            return conn.close_reason();
        }
        if conn.held() {
            continue; // requests wait behind output just written: answer them first
        }
        if eof || (*drain.borrow() && conn.is_idle()) {
            return if eof {
                CloseReason::Done
            } else {
                CloseReason::Drain
            };
        }
        let Some(deadline) = conn.deadline() else {
            return CloseReason::Aborted; // unreachable: no request is with the core here
        };
        // Evicted at the cap while it waits for a head (unauthenticated): close at once.
        let standing = conn.standing().cloned();
        let evicted = async move {
            match standing {
                Some(s) => s.evicted().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = evicted => return CloseReason::Evicted,
            ready = stream.readable() => {
                if ready.is_err() {
                    return CloseReason::Io;
                }
                let read = read_with(stream, |bytes| {
                    if !bytes.is_empty() {
                        conn.received(bytes, Instant::now());
                    }
                    bytes.is_empty()
                });
                match read {
                    Ok(true) => {
                        eof = true;
                        conn.received_eof();
                    }
                    Ok(false) => {}
                    Err(e) if retry(&e) => {}
                    Err(_) => return CloseReason::Io,
                }
            }
            () = tokio::time::sleep_until(deadline.into()) => {
                if let Some(reason) = conn.expired(Instant::now()) {
                    return reason;
                }
            }
            _ = drain.changed(), if !*drain.borrow() => {}
        }
    }
}

/// Writes everything pending, each write bounded by the connection's deadline.
async fn flush(stream: &mut TcpStream, conn: &mut Connection) -> Result<(), CloseReason> {
    // Most answers fit in the socket buffer: write at once, without arming a timer, a
    // large answer's head and body in one vectored write.
    while !conn.output().is_empty() {
        let (slices, n) = conn.output_vectored();
        match stream.try_write_vectored(&slices[..n]) {
            Ok(0) => return Err(CloseReason::Io),
            Ok(n) => conn.consume_output(n, Instant::now()),
            Err(e) if retry(&e) => break,
            Err(_) => return Err(CloseReason::Io),
        }
    }
    while !conn.output().is_empty() {
        let Some(deadline) = conn.deadline() else {
            return Err(CloseReason::Aborted);
        };
        match timeout_at(deadline.into(), stream.write(conn.output())).await {
            Ok(Ok(0)) => return Err(CloseReason::Io),
            Ok(Ok(n)) => conn.consume_output(n, Instant::now()),
            Ok(Err(e)) if retry(&e) => {}
            Ok(Err(_)) => return Err(CloseReason::Io),
            Err(_) => return Err(CloseReason::IdleTimeout),
        }
    }
    Ok(())
}

/// Sends `FIN`, then reads and discards what the peer still sends, until it closes, for at
/// most [`LINGER`] and [`LINGER_BYTES`], or until it is silent for [`LINGER_QUIET`]: our
/// last response is read, not reset away.
async fn linger(stream: &mut TcpStream) {
    let deadline = tokio::time::Instant::now() + LINGER;
    if timeout_at(deadline, stream.shutdown()).await.is_err() {
        return;
    }
    let mut discarded = 0;
    let mut quiet = tokio::time::Instant::now() + LINGER_QUIET;
    while discarded < LINGER_BYTES {
        if !matches!(
            timeout_at(deadline.min(quiet), stream.readable()).await,
            Ok(Ok(()))
        ) {
            return;
        }
        match read_with(stream, <[u8]>::len) {
            Ok(0) => return,
            Ok(n) => {
                discarded += n;
                quiet = tokio::time::Instant::now() + LINGER_QUIET;
            }
            Err(e) if retry(&e) => {}
            Err(_) => return,
        }
    }
}

/// Errors after which the same call is simply tried again.
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}
