//! Hooks for logs and metrics: the adapter reports, the observer decides what to keep.

use std::time::Duration;

use dunning_core::RequestLog;

/// Why a connection ended (reported to [`Observer::connection_closed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The exchange ended normally: the peer closed, or a response said `Connection: close`.
    Done,
    /// The codec refused the input (framing error; its error response was sent).
    Codec,
    /// A request head did not arrive within [`Options::header_read_timeout`](crate::Options).
    HeaderTimeout,
    /// No progress within [`Options::idle_timeout`](crate::Options) (between requests, in a
    /// body, or writing to a peer that does not read).
    IdleTimeout,
    /// A request body was not complete within
    /// [`Options::body_read_timeout`](crate::Options), or arrived slower than
    /// [`Options::min_body_rate`](crate::Options).
    BodyTimeout,
    /// Closed while idle because the server is draining (or, in the blocking adapter,
    /// because accepted connections wait for its worker).
    Drain,
    /// The connection had not authenticated and was waiting for a request head when a new
    /// connection found [`Options::max_connections`](crate::Options) reached: it gave its
    /// place to it, the oldest such connection first.
    Evicted,
    /// A socket error (reset, broken pipe, ...).
    Io,
    /// The adapter stopped before the connection finished (drain timeout).
    Aborted,
}

/// Receives the adapter's events. Every method has a no-op default; implementations must
/// be cheap and must not block (they run on the I/O path).
///
/// Tokens and argument values never reach an observer: [`RequestLog`] holds neither.
pub trait Observer: Send + Sync {
    /// A connection was accepted and counted.
    fn connection_opened(&self) {}

    /// A connection was refused over the connection cap (answered [`crate::CAP_RESPONSE`]).
    fn connection_refused(&self) {}

    /// A counted connection ended.
    fn connection_closed(&self, reason: CloseReason) {
        let _ = reason;
    }

    /// The core is about to handle the request numbered `request_id`.
    fn request_started(&self, request_id: &str) {
        let _ = request_id;
    }

    /// The core answered: what to log (`log`), the HTTP `status`, and the time spent in the
    /// core (`elapsed`, excluding reading and writing).
    fn request_finished(&self, request_id: &str, log: &RequestLog, status: u16, elapsed: Duration) {
        let _ = (request_id, log, status, elapsed);
    }
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopObserver;

impl Observer for NoopObserver {}
