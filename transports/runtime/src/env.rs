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

/// The production source: [`SystemClock`] and 40 bytes of entropy per request (32 for
/// [`Env::entropy`], 8 more for the request id, so the id reveals nothing of the former),
/// drawn from the thread's [`Drbg`].
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
        let load = match Drbg::fill(&mut bytes) {
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
            ahead: None,
        }
    }
}

/// Draws after which a thread's generator is seeded afresh from the OS (40 KiB of output
/// at a request's 40 bytes).
const RESEED_AFTER: u32 = 1024;

/// Each thread's ChaCha12 generator, seeded from the OS and seeded again every
/// [`RESEED_AFTER`] draws: the construction of `rand`'s `ThreadRng`, a CSPRNG. A
/// `getrandom` system call per request was 2 % of a `server/discover`; this is one per
/// 1,024 requests. Unlike `ThreadRng`, a refused seed is an error, not a panic.
struct Drbg {
    rng: rand_chacha::ChaCha12Rng,
    drawn: u32,
}

thread_local! {
    static DRBG: std::cell::RefCell<Option<Drbg>> = const { std::cell::RefCell::new(None) };
}

impl Drbg {
    /// Fills `out` from this thread's generator, seeding it first when it is new or due.
    fn fill(out: &mut [u8]) -> Result<(), getrandom::Error> {
        use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
        DRBG.with_borrow_mut(|slot| {
            let drbg = match slot {
                Some(d) if d.drawn < RESEED_AFTER => d,
                _ => {
                    let mut seed = [0u8; 32];
                    getrandom::fill(&mut seed)?;
                    slot.insert(Self {
                        rng: rand_chacha::ChaCha12Rng::from_seed(seed),
                        drawn: 0,
                    })
                }
            };
            drbg.drawn += 1;
            drbg.rng.fill_bytes(out);
            Ok(())
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn() -> Option<u32> {
        DRBG.with_borrow(|d| d.as_ref().map(|d| d.drawn))
    }

    #[test]
    fn every_request_gets_fresh_entropy_and_an_id_of_its_own() {
        let source = SystemEnv;
        let envs: Vec<Env> = (0..64).map(|_| source.env(Load::Normal)).collect();
        let entropies: std::collections::HashSet<_> = envs.iter().map(|e| e.entropy).collect();
        let ids: std::collections::HashSet<_> = envs.iter().map(|e| &e.request_id).collect();
        assert_eq!(entropies.len(), 64);
        assert_eq!(ids.len(), 64);
        assert!(envs.iter().all(|e| e.load == Load::Normal));
    }

    #[test]
    fn the_generator_is_seeded_again_from_the_os_every_reseed_after_draws() {
        let mut out = [0u8; 8];
        Drbg::fill(&mut out).unwrap();
        let start = drawn().unwrap();
        for _ in start..RESEED_AFTER {
            Drbg::fill(&mut out).unwrap();
        }
        assert_eq!(drawn(), Some(RESEED_AFTER));
        let before = DRBG.with_borrow(|d| d.as_ref().unwrap().rng.get_seed());
        Drbg::fill(&mut out).unwrap();
        assert_eq!(drawn(), Some(1), "a new generator after RESEED_AFTER draws");
        let after = DRBG.with_borrow(|d| d.as_ref().unwrap().rng.get_seed());
        assert_ne!(before, after, "seeded afresh, not continued");
    }

    /// A thread's draws leave another thread's generator alone, and each thread's was
    /// seeded on its own (two draws from one shared generator would differ too, so the
    /// outputs alone prove nothing).
    #[test]
    fn threads_draw_from_generators_of_their_own() {
        let draw = || {
            let mut out = [0u8; 32];
            Drbg::fill(&mut out).unwrap();
            (
                drawn(),
                DRBG.with_borrow(|d| d.as_ref().unwrap().rng.get_seed()),
            )
        };
        let (mine, my_seed) = draw();
        let (theirs, their_seed) = std::thread::spawn(move || {
            let first = draw();
            draw();
            first
        })
        .join()
        .unwrap();
        assert_eq!(
            theirs,
            Some(1),
            "a new thread starts a generator of its own"
        );
        assert_eq!(drawn(), mine, "their draws are not counted here");
        assert_ne!(my_seed, their_seed, "seeded apart");
    }
}
