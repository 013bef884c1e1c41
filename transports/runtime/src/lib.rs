//! # dunning-runtime: what every network adapter shares
//!
//! The core ([`dunning_core::Server::handle`]) and the codec ([`dunning_http1::Conn`]) are
//! sans-IO. This crate is the one place that wires the operating system into them, so that
//! the tokio, blocking and mio adapters stay small loops that only move bytes, and answer
//! with the same bytes by construction:
//!
//! * [`SystemEnv`]: wall clock ([`SystemClock`]) and OS entropy (`getrandom`) into a
//!   per-request [`Env`](dunning_core::Env) with a 16-hex-digit request id;
//!   [`FixedEnv`] is its deterministic twin for tests (same `Env` as the in-memory harness).
//! * [`Options`]: timeouts, caps and codec limits, one struct for every adapter.
//! * [`Observer`]: hooks for logs and metrics ([`NoopObserver`] does nothing).
//! * [`Service`]: the shared server plus the connection and in-flight gauges. Its
//!   [`Service::handle`] is the only way an adapter calls the core: it decides the
//!   [`Load`](dunning_core::Load) (`Overloaded` above [`Options::max_in_flight`],
//!   `Draining` once [`Service::begin_drain`] was called), builds the `Env`, times the
//!   request and reports it.
//! * [`Connection`]: one TCP connection's codec, output buffer and deadlines: "answer every
//!   request the codec yields" ([`Connection::answer_all`], or [`Connection::poll`] +
//!   [`Connection::respond`] when the core runs on another thread). A request whose body is
//!   still to come is first polled as [`Next::Head`]: [`Service::check_head`] decides on it
//!   (authentication, `Origin`, path, method, load, and a lease on the service's body
//!   budget) and [`Connection::admit`] applies the [`Admission`] — the body is read only
//!   after the head passed.
//! * Hostile load ([`Options`]): header, body (total and minimum rate) and idle deadlines;
//!   caps on connections, on unauthenticated connections per address
//!   ([`Service::open_connection_from`]), on body bytes in flight (`503` past it) and on
//!   unsent output per connection ([`Connection::held`]); at the connection cap, the
//!   oldest unauthenticated connection waiting for a head is evicted for the new one
//!   ([`Standing`]); [`Connection::ready`] tells whether a connection needs a thread at
//!   all, or only waits for input.
//! * [`CAP_RESPONSE`]: the `503` written to a connection refused over
//!   [`Options::max_connections`].
//!
//! No async runtime here: nothing in this crate blocks or spawns.
//!
//! ## An adapter's loop
//!
//! ```no_run
//! # use std::io::{Read, Write};
//! # use dunning_runtime::{Connection, Service, CloseReason};
//! # fn run<D: dunning_core::dispatch::Dispatch>(service: &Service<D>, mut sock: std::net::TcpStream) {
//! let peer = sock.peer_addr().unwrap().ip();
//! let Some(mut slot) = service.open_connection_from(peer) else {
//!     let _ = sock.write_all(dunning_runtime::CAP_RESPONSE); // over the cap
//!     return;
//! };
//! let mut conn = Connection::new(service.options());
//! conn.enrol(&mut slot); // per-address count, eviction queue
//! let mut buf = [0u8; 16 * 1024];
//! loop {
//!     let close = conn.answer_all(service); // core called inline for each request
//!     while !conn.output().is_empty() {
//!         if sock.write_all(conn.output()).is_err() { return; }
//!         conn.consume_output(conn.output().len(), std::time::Instant::now());
//!     }
//!     if close { break; }
//!     if conn.held() { continue; } // more answers wait behind those just written
//!     // (a real adapter bounds this read by `conn.deadline()`)
//!     match sock.read(&mut buf) {
//!         Ok(0) => conn.received_eof(),
//!         Ok(n) => conn.received(&buf[..n], std::time::Instant::now()),
//!         Err(_) => break,
//!     }
//! }
//! slot.set_reason(CloseReason::Done);
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
mod connection;
mod env;
mod evict;
mod observer;
mod options;
mod service;

pub use budget::Lease;
pub use connection::{Admission, Connection, Next};
pub use env::{EnvSource, FixedEnv, SystemClock, SystemEnv, request_id};
pub use evict::{Evicted, Standing};
pub use observer::{CloseReason, NoopObserver, Observer};
pub use options::Options;
pub use service::{AheadRun, ConnectionSlot, Service, Ticket};

/// The body of [`CAP_RESPONSE`]: the core's JSON-RPC "Service unavailable" error.
pub const CAP_BODY: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-31503,"message":"Service unavailable"}}"#;

/// The pre-rendered answer for a connection over [`Options::max_connections`]: `503` with
/// `Retry-After: 1` and `Connection: close`, written before the connection is closed
/// (no request is read). It carries no `Date`: it is rendered once, at compile time.
pub const CAP_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: application/json\r\n\
Retry-After: 1\r\n\
Cache-Control: no-store\r\n\
Content-Length: 83\r\n\
Connection: close\r\n\
\r\n\
{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-31503,\"message\":\"Service unavailable\"}}";

/// How long a body may take before [`Options::min_body_rate`] applies (its first bytes may
/// be slow: TCP slow start, a client assembling its payload).
pub const BODY_RATE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How often adapters without a timer wheel wake up to check deadlines and the shutdown
/// flag (the blocking adapter's read timeout, the mio adapter's poll timeout).
pub const TICK: std::time::Duration = std::time::Duration::from_millis(50);

/// Buffers one vectored write of [`Connection::output_vectored`] takes: a few answers'
/// heads and bodies (an answer past 16 KiB is a buffer of its own, after its head's).
pub const WRITE_SLICES: usize = 8;

/// How long a closing connection keeps reading (and discarding) what the peer still sends,
/// after our last response and `FIN`, so that the peer reads that response instead of a
/// reset ("lingering close"). Bounded by [`LINGER_BYTES`] too.
pub const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// A lingering close also ends once the peer has been silent this long. The linger is
/// for bytes already in flight (the rest of a body sent at full speed, whose arrival
/// after our `FIN` would reset the connection and destroy our response): a client that
/// sends them keeps sending, a client that trickles one byte every few seconds is not
/// owed the wait, and without this bound would hold the socket for all of [`LINGER`].
pub const LINGER_QUIET: std::time::Duration = std::time::Duration::from_millis(250);

/// Connections that may linger at once, per adapter, once they no longer count against
/// the connection cap (a closing connection gives its place back before it lingers, so
/// a flood of refused clients never keeps an authenticated one out); beyond, a closing
/// connection is closed at once.
pub const MAX_LINGERING: usize = 1024;

/// Most bytes a lingering close discards before giving up.
pub const LINGER_BYTES: usize = 8 * 1024 * 1024;

/// Refused connections (over the connection cap) that may linger at once; beyond, a
/// refusal is written and the socket closed at once (a flood must not grow without bound).
pub const MAX_REFUSING: usize = 64;

#[cfg(test)]
mod tests;
