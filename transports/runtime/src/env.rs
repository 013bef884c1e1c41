//! Where each request's [`Env`] comes from: the OS ([`SystemEnv`]) or a fixed clock and a
//! counter ([`FixedEnv`], byte-identical to the in-memory harness).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use dunning_core::{Env, Load, UnixTime};

/// Supplies the wall clock and a fresh [`Env`] per request. Adapters get one through
/// [`Options::env`](crate::Options::env); the default is [`SystemEnv`].
pub trait EnvSource: Send + Sync {
    /// The wall clock now (also the `Date` of responses).
    fn now(&self) -> UnixTime;

    /// A fresh environment for one request, under the given load.
    fn env(&self, load: Load) -> Env;
}

/// The operating system's wall clock as a [`UnixTime`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl SystemClock {
    /// Milliseconds since the Unix epoch; a clock set before 1970 reads as the epoch.
    pub fn now() -> UnixTime {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        UnixTime::from_millis(ms)
    }
}

/// The production source: [`SystemClock`] and 40 bytes of OS entropy per request (32 for
/// [`Env::entropy`], 8 more for the request id, so the id reveals nothing of the former).
///
/// Should the OS refuse entropy (it does not on any supported system), the request is
/// handed over as [`Load::Overloaded`]: the core answers `503` rather than minting
/// predictable nonces.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemEnv;

impl EnvSource for SystemEnv {
    fn now(&self) -> UnixTime {
        SystemClock::now()
    }

    fn env(&self, load: Load) -> Env {
        let mut bytes = [0u8; 40];
        let load = match getrandom::fill(&mut bytes) {
            Ok(()) => load,
            Err(_) => Load::Overloaded,
        };
        let mut entropy = [0u8; 32];
        entropy.copy_from_slice(&bytes[..32]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&bytes[32..]);
        Env {
            now: SystemClock::now(),
            entropy,
            request_id: request_id(id),
            load,
            peer: None,
        }
    }
}

/// A request id: 16 lowercase hex digits.
pub fn request_id(bytes: [u8; 8]) -> String {
    format!("{:016x}", u64::from_be_bytes(bytes))
}

/// A deterministic source for tests: a settable clock and a request counter, giving
/// exactly [`Env::fixed`]`(clock, counter)` — the environment of the in-memory harness —
/// so an adapter driven by it answers byte for byte like the harness.
#[derive(Debug)]
pub struct FixedEnv {
    clock: AtomicU64,
    counter: AtomicU64,
}

impl FixedEnv {
    /// Clock at `start`, counter at 0.
    pub fn new(start: UnixTime) -> Self {
        Self {
            clock: AtomicU64::new(start.as_millis()),
            counter: AtomicU64::new(0),
        }
    }

    /// Sets the clock to `now` and the counter back to 0.
    pub fn reset(&self, now: UnixTime) {
        self.clock.store(now.as_millis(), Ordering::SeqCst);
        self.counter.store(0, Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: u64) {
        self.clock.fetch_add(ms, Ordering::SeqCst);
    }

    /// How many environments were handed out since the last reset.
    pub fn requests(&self) -> u64 {
        self.counter.load(Ordering::SeqCst)
    }
}

impl EnvSource for FixedEnv {
    fn now(&self) -> UnixTime {
        UnixTime::from_millis(self.clock.load(Ordering::SeqCst))
    }

    fn env(&self, load: Load) -> Env {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let mut env = Env::fixed(self.now(), n);
        env.load = load;
        env
    }
}
