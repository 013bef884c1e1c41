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
            .field("max_connections", &self.max_connections)
            .field("max_in_flight", &self.max_in_flight)
            .field("drain_timeout", &self.drain_timeout)
            .field("workers", &self.workers)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
