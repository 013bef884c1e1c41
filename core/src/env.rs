//! What the outside world lends the core for one request: the wall clock, entropy and load.
//!
//! The core never reads a clock or an RNG; the adapter fills an [`Env`] per request.
//! Tests use a fixed clock and counting entropy, so responses are byte-stable.

/// Wall-clock time in milliseconds since the Unix epoch.
///
/// Wall time rather than a monotonic instant: token expiry, `requestState` expiry and
/// business-day arithmetic are all about calendar time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct UnixTime(u64);

impl UnixTime {
    /// From milliseconds since the epoch.
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }
    /// From whole seconds since the epoch.
    pub const fn from_secs(s: u64) -> Self {
        Self(s.saturating_mul(1000))
    }
    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }
    /// Whole seconds since the epoch (rounded down).
    pub const fn as_secs(self) -> u64 {
        self.0 / 1000
    }
    /// This time plus `ms` milliseconds (saturating).
    pub const fn plus_millis(self, ms: u64) -> Self {
        Self(self.0.saturating_add(ms))
    }
}

/// How loaded the adapter is when it hands the request over (step 6 of the processing order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Load {
    /// Serve normally.
    #[default]
    Normal,
    /// In-flight requests exceed the configured concurrency: answer `503`.
    Overloaded,
    /// The server is shutting down: answer `503`.
    Draining,
}

/// Per-request inputs that are not part of the HTTP request.
#[derive(Clone, Debug)]
pub struct Env {
    /// Wall-clock time when the request was received.
    pub now: UnixTime,
    /// Fresh random bytes; nonces are derived from them.
    pub entropy: [u8; 32],
    /// Identifier the adapter logs for this request; echoed in tool errors.
    pub request_id: String,
    /// Adapter load at the moment of the request.
    pub load: Load,
    /// The address the request's connection came from, when the adapter knows it: the
    /// embedded authorization server limits its endpoints per address (nobody is signed
    /// in there yet, so there is no token or organization to count against). Behind a
    /// proxy it is the proxy's.
    pub peer: Option<core::net::IpAddr>,
    /// The request's reads ahead, when an async adapter runs a read-only call on its
    /// reactor ([`crate::ahead`]): handed to the dispatcher with the call.
    pub ahead: Option<std::sync::Arc<dyn crate::Ahead>>,
}

impl Env {
    /// An environment for tests and benches: the given time, entropy from a counter.
    pub fn fixed(now: UnixTime, counter: u64) -> Self {
        let mut entropy = [0u8; 32];
        for (i, chunk) in entropy.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&(counter.wrapping_add(i as u64)).to_be_bytes());
        }
        Self {
            now,
            entropy,
            request_id: format!("req-{counter:08}"),
            load: Load::Normal,
            peer: None,
            ahead: None,
        }
    }
}
