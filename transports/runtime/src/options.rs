//! The knobs every adapter reads.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use dunning_http1::Limits;

use crate::env::{EnvSource, SystemEnv};

/// Timeouts, caps and codec limits, shared by every adapter.
#[derive(Clone)]
pub struct Options {
    /// A request head must be complete this long after its first byte arrived; a client
    /// trickling its head is cut (silently: the connection is closed). Default 10 s.
    pub header_read_timeout: Duration,
    /// How long a connection may make no progress: idle between requests, stalled in a
    /// body, or not reading our response. Default 60 s.
    pub idle_timeout: Duration,
    /// A request body must be complete this long after its head was admitted, however
    /// steadily it trickles (the idle timeout alone restarts with every byte); otherwise
    /// the connection is cut (silently, like the header deadline). Default 30 s.
    pub body_read_timeout: Duration,
    /// Slowest average a body may arrive at, in bytes per second, once
    /// [`crate::BODY_RATE_GRACE`] has passed since its head was admitted: a body of `n`
    /// bytes so far must have started less than `grace + n / rate` ago. `0` disables it.
    /// Default 1,024.
    pub min_body_rate: u64,
    /// Most bytes held in request bodies at once, over every connection of the service.
    /// A `Content-Length` body reserves its declared size when its head is admitted, a
    /// chunked one as it arrives; past the cap the request is answered `503` with
    /// `Retry-After: 1` (at the head: the body is never read). Default 128 MiB.
    pub max_body_buffer: usize,
    /// Most connections from one peer address that have not authenticated yet (no request
    /// of theirs passed authentication): one more is refused like one over
    /// [`Options::max_connections`]. It bounds what one address can hold with partial
    /// heads reopened before the header deadline, or token-less requests. `0` disables
    /// it. Default 256 (behind a proxy every client shares its address: raise it, or
    /// cap at the proxy).
    pub max_unauthenticated_per_ip: usize,
    /// Most response bytes a connection keeps unsent: from there on, no further pipelined
    /// request is answered (nor more input read) until they are written, i.e. until the
    /// peer has read enough for the socket to take them. One answer may cross it (it is
    /// never cut), so a connection holds at most this plus one answer. Default 64 KiB:
    /// the socket's own buffers do the pipelining; this only batches small answers into
    /// fewer writes.
    pub max_pending_output: usize,
    /// Most connections served at once; one more is answered [`crate::CAP_RESPONSE`] and
    /// closed. Default 10,000.
    pub max_connections: usize,
    /// Most requests in the core at once; above it the core answers `503` with
    /// `Retry-After: 1` (`Load::Overloaded`). Default 256.
    pub max_in_flight: usize,
    /// After shutdown begins, how long in-flight work may take before `serve` returns
    /// anyway. Default 10 s.
    pub drain_timeout: Duration,
    /// Worker threads of the blocking adapter (each serves one connection at a time; as
    /// many accepted connections may wait in its queue). Ignored by the others. Default 64.
    pub workers: usize,
    /// Codec limits (request line, headers, body).
    pub limits: Limits,
    /// Clock and entropy. Default [`SystemEnv`]; tests use [`crate::FixedEnv`].
    pub env: Arc<dyn EnvSource>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            min_body_rate: 1024,
            max_body_buffer: 128 * 1024 * 1024,
            max_pending_output: 64 * 1024,
            max_unauthenticated_per_ip: 256,
            max_connections: 10_000,
            max_in_flight: 256,
            drain_timeout: Duration::from_secs(10),
            workers: 64,
            limits: Limits::default(),
            env: Arc::new(SystemEnv),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("min_body_rate", &self.min_body_rate)
            .field("max_body_buffer", &self.max_body_buffer)
            .field("max_pending_output", &self.max_pending_output)
            .field(
                "max_unauthenticated_per_ip",
                &self.max_unauthenticated_per_ip,
            )
            .field("max_connections", &self.max_connections)
            .field("max_in_flight", &self.max_in_flight)
            .field("drain_timeout", &self.drain_timeout)
            .field("workers", &self.workers)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
