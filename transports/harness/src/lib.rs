//! # dunning-harness: the deterministic in-memory adapter
//!
//! The smallest adapter there is: raw request bytes in, raw response bytes out, with no
//! socket, no thread, no clock read and no randomness. Conformance fixtures, property
//! tests, fuzz seeds and benches drive the server through it, so every run of a case
//! produces the same bytes.
//!
//! Each [`Harness::send`] opens a fresh HTTP/1.1 connection (a `dunning-http1` [`Conn`],
//! the codec every socket adapter uses), feeds it the bytes (whole,
//! byte by byte, or in seeded random chunks: [`Split`]), answers every request it yields
//! with [`Server::handle`] under [`Env::fixed`] (the harness clock and a counter that
//! numbers requests), signals end of input, and returns everything the connection wrote.
//!
//! ```no_run
//! # fn demo<D: dunning_core::dispatch::Dispatch>(server: dunning_core::Server<D>) {
//! let mut h = dunning_harness::Harness::new(server);
//! let bytes = h.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
//! assert!(bytes.starts_with(b"HTTP/1.1 405"));
//! h.advance(301_000); // five minutes later, for expiry tests
//! # }
//! ```

use std::sync::Arc;

use dunning_core::dispatch::Dispatch;
use dunning_core::{Env, Load, Server, UnixTime};

use dunning_http1::{Conn, Limits, Output};

/// Where the harness clock starts: 2026-12-01T12:00:00Z.
pub const START: UnixTime = UnixTime::from_millis(1_796_126_400_000);

/// How [`Harness::send_split`] delivers the request bytes to the codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// One `handle_input` call with every byte.
    Whole,
    /// One `handle_input` call per byte.
    EveryByte,
    /// Chunks of 1 to 64 bytes, sizes drawn from a generator seeded with the value.
    Random(u64),
}

/// The in-memory adapter: a shared server, a fixed clock, a request counter.
pub struct Harness<D: Dispatch> {
    server: Arc<Server<D>>,
    clock: UnixTime,
    counter: u64,
    load: Load,
}

impl<D: Dispatch> Harness<D> {
    /// A harness owning `server`, clock at [`START`], counter at 0.
    pub fn new(server: Server<D>) -> Self {
        Self::shared(Arc::new(server))
    }

    /// A harness over a server shared with other adapters.
    pub fn shared(server: Arc<Server<D>>) -> Self {
        Self {
            server,
            clock: START,
            counter: 0,
            load: Load::Normal,
        }
    }

    /// The server behind the harness.
    pub fn server(&self) -> &Arc<Server<D>> {
        &self.server
    }

    /// The harness clock.
    pub fn now(&self) -> UnixTime {
        self.clock
    }

    /// How many requests the server has handled through this harness.
    pub fn requests(&self) -> u64 {
        self.counter
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&mut self, ms: u64) {
        self.clock = self.clock.plus_millis(ms);
    }

    /// Sets the load reported to the server with the next requests (`503` when not normal).
    pub fn set_load(&mut self, load: Load) {
        self.load = load;
    }

    /// Sends `raw` on a new connection in one piece; returns every byte written back.
    pub fn send(&mut self, raw: &[u8]) -> Vec<u8> {
        self.send_split(raw, Split::Whole)
    }

    /// Sends `raw` on a new connection, delivered as `split` says; returns every byte
    /// written back. The connection sees end of input after the last byte.
    pub fn send_split(&mut self, raw: &[u8], split: Split) -> Vec<u8> {
        let mut conn = Conn::new(Limits::default());
        conn.set_now(self.clock);
        let mut written = Vec::new();
        let mut rng = SplitMix(match split {
            Split::Random(seed) => seed,
            _ => 0,
        });
        let mut rest = raw;
        while !rest.is_empty() {
            let n = match split {
                Split::Whole => rest.len(),
                Split::EveryByte => 1,
                Split::Random(_) => 1 + (rng.next() % 64) as usize,
            }
            .min(rest.len());
            conn.handle_input(&rest[..n]);
            rest = &rest[n..];
            if self.drain(&mut conn, &mut written) {
                return written;
            }
        }
        conn.handle_eof();
        self.drain(&mut conn, &mut written);
        written
    }

    /// Drains the connection's outputs; `true` once it asked to close.
    fn drain(&mut self, conn: &mut Conn, written: &mut Vec<u8>) -> bool {
        while let Some(out) = conn.poll_output() {
            match out {
                Output::Request(req) => {
                    let mut env = Env::fixed(self.clock, self.counter);
                    env.load = self.load;
                    self.counter += 1;
                    let resp = req.with_core(|r| self.server.handle(r, &env));
                    conn.encode_response(&resp, self.clock, written);
                }
                // Decided from the head, as the socket adapters do (dunning-runtime); a
                // refusal takes a request number like any answer.
                Output::Head(req) => {
                    let mut env = Env::fixed(self.clock, self.counter);
                    env.load = self.load;
                    match req.with_core(|r| self.server.check_head(r, &env)) {
                        Some(resp) => {
                            self.counter += 1;
                            conn.refuse(&resp);
                        }
                        None => conn.admit(req),
                    }
                }
                Output::Transmit(bytes) => written.extend_from_slice(&bytes),
                Output::Close => return true,
            }
        }
        false
    }
}

/// SplitMix64: a tiny seeded generator, enough to pick chunk sizes.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
