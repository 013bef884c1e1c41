//! [`Connection`]: one TCP connection's codec, pending output and deadlines — everything
//! an adapter keeps per connection except the socket.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dunning_core::Response;
use dunning_core::dispatch::Dispatch;
use dunning_http1::{Conn, Output, OwnedRequest};

use crate::WRITE_SLICES;
use crate::budget::Lease;
use crate::env::EnvSource;
use crate::evict::Standing;
use crate::observer::CloseReason;
use crate::options::Options;
use crate::service::{ConnectionSlot, Service, Ticket};

/// What the adapter does next, from [`Connection::poll`].
#[derive(Debug)]
#[must_use]
pub enum Next {
    /// Answer this request ([`Service::handle`]), then call [`Connection::respond`].
    Request(OwnedRequest),
    /// Decide on this head before its body is read ([`Service::check_head`]), then call
    /// [`Connection::admit`]. Like a request, it may block (authentication).
    Head(OwnedRequest),
    /// Write [`Connection::output`], then read more (by [`Connection::deadline`]) — unless
    /// [`Connection::held`]: then poll again once the output is written, without reading.
    Read,
    /// Write [`Connection::output`], then close the connection.
    Close,
}

/// Where the connection is in its request cycle (for the deadlines).
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// Between requests, since then.
    Idle(Instant),
    /// A request head is arriving: its first byte came then.
    Head(Instant, HeadEnd),
    /// The head is complete, the body is arriving.
    Body(BodyClock),
    /// A request is with the core.
    Handling,
}

/// The clocks of a body being read: since when (head complete or admitted), last
/// progress, and how many bytes arrived since.
#[derive(Clone, Copy, Debug)]
struct BodyClock {
    start: Instant,
    last: Instant,
    bytes: u64,
}

impl BodyClock {
    fn new(now: Instant) -> Self {
        Self {
            start: now,
            last: now,
            bytes: 0,
        }
    }
}

/// Spots the end of a request head (the first CRLFCRLF after a non-empty line) in the bytes
/// as they arrive, so the header deadline stops applying once the head is complete. It only
/// times the connection: framing is the codec's business.
#[derive(Clone, Copy, Debug, Default)]
struct HeadEnd {
    started: bool,
    run: u8,
}

/// The end of a head.
const CRLFCRLF: &[u8] = b"\r\n\r\n";

impl HeadEnd {
    /// Scans `bytes`; true once the head's final CRLFCRLF went by. A run split across
    /// reads is followed byte by byte; within one read the end is searched at once
    /// (`memmem`: a byte at a time was 4 % of a small request's CPU).
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        if !self.started {
            match bytes.iter().position(|&b| b != b'\r' && b != b'\n') {
                Some(first) => bytes = &bytes[first..],
                None => return false,
            }
            self.started = true;
        }
        while self.run > 0 {
            let Some((&b, rest)) = bytes.split_first() else {
                return false;
            };
            self.step(b);
            if self.run == 4 {
                return true;
            }
            bytes = rest;
        }
        if memchr::memmem::find(bytes, CRLFCRLF).is_some() {
            return true;
        }
        // No end here: the run left is the longest end of `bytes` that starts one, which
        // its last three bytes decide.
        for &b in &bytes[bytes.len().saturating_sub(3)..] {
            self.step(b);
        }
        false
    }

    /// The run of CRLFCRLF after one more byte.
    fn step(&mut self, b: u8) {
        self.run = match (self.run, b) {
            (0 | 2, b'\r') | (1 | 3, b'\n') => self.run + 1,
            (_, b'\r') => 1,
            _ => 0,
        };
    }
}

/// Answers smaller than this are appended to the previous one still unsent (one write for
/// many small pipelined answers); larger ones get a buffer of their own, sized once, and
/// released as soon as it is written (no buffer doubling, no copy of what remains).
const COALESCE: usize = 16 * 1024;

/// One connection: the codec ([`dunning_http1::Conn`]), the bytes waiting to be written,
/// and the deadlines of [`Options`]. Holds no socket: the adapter reads into
/// [`Connection::received`] and writes [`Connection::output`].
///
/// Deadlines ([`Connection::deadline`]): a request head must be complete
/// [`Options::header_read_timeout`] after its first byte; a body
/// [`Options::body_read_timeout`] after its head, at no less than
/// [`Options::min_body_rate`] on average (after [`crate::BODY_RATE_GRACE`]); otherwise the
/// connection must make progress every [`Options::idle_timeout`] (idle between requests,
/// in a body, or writing). No deadline runs while a request or a head is with the core.
/// Bytes of a pipelined request that arrived with the previous one count as idle until
/// more arrive (a small, bounded leniency).
///
/// Memory: no body byte is read before its head was admitted (see [`Next::Head`]); an
/// admitted body holds a lease on the service's [`Options::max_body_buffer`]; no
/// further pipelined request is answered (nor input read) while
/// [`Options::max_pending_output`] bytes or more wait to be written
/// ([`Connection::held`]); and each answer's buffer is freed once it is written.
///
/// Eviction ([`Connection::enrol`]): while it has not authenticated and waits for a head,
/// the connection may be evicted for a new one at the connection cap; it then closes.
pub struct Connection {
    codec: Conn,
    env: Arc<dyn EnvSource>,
    /// Unsent answers, in order; the first one is written from `written` on.
    out: VecDeque<Vec<u8>>,
    written: usize,
    /// Bytes of `out` not written yet.
    pending: usize,
    /// Its standing in the eviction queue, until it authenticates.
    standing: Option<Arc<Standing>>,
    /// Whether it last asked to be in that queue.
    queued: bool,
    /// This connection's lease on the service's body budget (while a body is read and
    /// until its request is answered).
    lease: Option<Lease>,
    /// Counted as unauthenticated for its peer until a request passes authentication.
    ticket: Option<Ticket>,
    /// The peer's address, stamped on every request ([`Connection::set_peer`]).
    peer: Option<IpAddr>,
    /// Requests wait in the codec behind unsent output.
    held: bool,
    /// When the pending output last made progress (or was queued).
    write_since: Option<Instant>,
    phase: Phase,
    closing: bool,
    header_timeout: Duration,
    idle_timeout: Duration,
    body_timeout: Duration,
    min_body_rate: u64,
    max_output: usize,
}

impl Connection {
    /// A fresh connection under `opts`, idle since now.
    pub fn new(opts: &Options) -> Self {
        Self {
            codec: Conn::new(opts.limits),
            env: Arc::clone(&opts.env),
            out: VecDeque::new(),
            written: 0,
            pending: 0,
            standing: None,
            queued: false,
            lease: None,
            ticket: None,
            peer: None,
            held: false,
            write_since: None,
            phase: Phase::Idle(Instant::now()),
            closing: false,
            header_timeout: opts.header_read_timeout,
            idle_timeout: opts.idle_timeout,
            body_timeout: opts.body_read_timeout,
            min_body_rate: opts.min_body_rate,
            max_output: opts.max_pending_output,
        }
    }

    /// Feeds bytes read from the socket at `now`. Then [`Connection::poll`] (or
    /// [`Connection::answer_all`]).
    pub fn received(&mut self, bytes: &[u8], now: Instant) {
        if bytes.is_empty() {
            return;
        }
        self.phase = match self.phase {
            Phase::Idle(_) => Self::head(now, HeadEnd::default(), bytes, now),
            Phase::Head(since, scan) => Self::head(since, scan, bytes, now),
            Phase::Body(clock) => Phase::Body(BodyClock {
                last: now,
                bytes: clock.bytes.saturating_add(bytes.len() as u64),
                ..clock
            }),
            Phase::Handling => Phase::Handling,
        };
        self.codec.set_now(self.env.now());
        self.codec.handle_input(bytes);
        // A chunked body leases as it grows; past the budget it is refused mid-way.
        if let Some(lease) = &mut self.lease {
            if !lease.cover(self.codec.body_received()) {
                self.lease = None;
                self.codec.refuse(&crate::service::unavailable());
            }
        }
        self.settle();
    }

    /// The phase after head bytes: still the head, or the body from `now` on.
    fn head(since: Instant, mut scan: HeadEnd, bytes: &[u8], now: Instant) -> Phase {
        if scan.feed(bytes) {
            Phase::Body(BodyClock::new(now))
        } else {
            Phase::Head(since, scan)
        }
    }

    /// The peer closed its sending half. Requests already complete are still answered.
    pub fn received_eof(&mut self) {
        self.codec.handle_eof();
        self.settle();
    }

    /// Whether a worker has something to do: a head or request is complete, the codec
    /// has bytes of its own to write or closes, answers wait to be written, or the
    /// connection was evicted. A connection that is not ready only waits for input (a
    /// head still arriving, or nothing): it needs no thread (the blocking adapter's
    /// poller reads it until it is ready).
    pub fn ready(&self) -> bool {
        self.closing || self.pending > 0 || self.codec.has_output() || self.evicted()
    }

    /// Whether the connection waits for a request (idle, or a head still arriving) with
    /// nothing to write: it may be handed back to a poller.
    pub fn awaiting_request(&self) -> bool {
        matches!(self.phase, Phase::Idle(_) | Phase::Head(..)) && !self.ready()
    }

    /// Takes the connection's place from its slot ([`crate::Service::open_connection_from`]):
    /// its count as unauthenticated for its address ([`Connection::set_ticket`]) and its
    /// standing in the eviction queue, which the slot entered at accept (it waits for its
    /// first head).
    pub fn enrol(&mut self, slot: &mut ConnectionSlot) {
        self.ticket = slot.take_ticket();
        self.standing = slot.standing();
        self.queued = self.standing.is_some();
        self.settle();
    }

    /// Whether the connection was evicted for a new one at the connection cap
    /// ([`crate::CloseReason::Evicted`]): close it without a word.
    pub fn evicted(&self) -> bool {
        self.standing.as_ref().is_some_and(|s| s.is_evicted())
    }

    /// Its standing in the eviction queue, for an async adapter to await
    /// [`Standing::evicted`] (`None` once authenticated, or when never enrolled).
    pub fn standing(&self) -> Option<&Arc<Standing>> {
        self.standing.as_ref()
    }

    /// Enters or leaves the eviction queue as the connection's state says: in it while it
    /// waits for a head (idle or a head arriving) with nothing to answer or write, and
    /// has not authenticated.
    fn settle(&mut self) {
        let Some(standing) = &self.standing else {
            return;
        };
        let waiting = matches!(self.phase, Phase::Idle(_) | Phase::Head(..))
            && !self.closing
            && self.pending == 0
            && !self.codec.has_output()
            && !standing.is_evicted();
        if waiting != self.queued {
            standing.set_waiting(waiting);
            self.queued = waiting;
        }
    }

    /// The next thing to do. Call until it returns [`Next::Read`] or [`Next::Close`],
    /// answering each [`Next::Request`] with [`Connection::respond`] before polling again.
    pub fn poll(&mut self) -> Next {
        if self.evicted() {
            self.closing = true;
        }
        if self.closing {
            return Next::Close;
        }
        loop {
            // Backpressure: a peer that pipelines requests without reading the answers
            // gets no more answers (and no more reads) past the output bound.
            self.held = self.pending >= self.max_output;
            if self.held {
                return Next::Read;
            }
            let Some(out) = self.codec.poll_output() else {
                self.settle();
                return Next::Read;
            };
            match out {
                Output::Transmit(bytes) => self.queue(bytes, Instant::now()),
                Output::Request(mut req) => {
                    self.phase = Phase::Handling;
                    self.settle();
                    req.set_peer(self.peer);
                    return Next::Request(req);
                }
                Output::Head(req) => {
                    self.phase = Phase::Handling;
                    self.settle();
                    return Next::Head(req);
                }
                Output::Close => {
                    self.closing = true;
                    return Next::Close;
                }
            }
        }
    }

    /// Counts this connection as unauthenticated for its peer
    /// ([`Service::open_connection_from`]) until the core authenticates one of its
    /// requests (its answer names the caller's organization): `/healthz` or a `401` do
    /// not count.
    pub fn set_ticket(&mut self, ticket: Option<Ticket>) {
        self.ticket = ticket;
    }

    /// The address this connection comes from: stamped on each of its requests, and so
    /// in the core's [`dunning_core::Env::peer`] (the authorization server's endpoints
    /// are limited per address).
    pub fn set_peer(&mut self, peer: Option<IpAddr>) {
        self.peer = peer;
    }

    /// Whether requests wait behind [`Options::max_pending_output`] unsent bytes or more:
    /// after [`Next::Read`], write the output and poll again before reading.
    pub fn held(&self) -> bool {
        self.held
    }

    /// Applies the decision on the head last polled ([`Next::Head`]): read its body under
    /// the lease, or send the refusal and close. Then poll again.
    pub fn admit(&mut self, head: OwnedRequest, admission: Admission) {
        let now = Instant::now();
        match admission {
            Admission::Admit(lease) => {
                self.lease = Some(lease);
                self.phase = Phase::Body(BodyClock::new(now));
                self.codec.admit(head);
            }
            Admission::Refuse(resp) => {
                self.phase = Phase::Idle(now);
                self.codec.set_now(self.env.now());
                self.codec.refuse(&resp);
            }
        }
        self.settle();
    }

    /// Encodes the core's answer to the request last polled (framing and `Date` by the
    /// codec, the clock from [`Options::env`]).
    ///
    /// The body is queued as it is, not copied: a large answer costs its own size once.
    pub fn respond(&mut self, resp: Response) {
        let now = Instant::now();
        let fields: usize = resp
            .headers
            .iter()
            .map(|(n, v)| n.as_str().len() + v.len() + 4)
            .sum();
        // A small body joins its head in one buffer (`queue`): room for both at once.
        let joined = if resp.body.len() <= COALESCE {
            resp.body.len()
        } else {
            0
        };
        let mut head = Vec::with_capacity(fields + 160 + joined);
        let with_body = self
            .codec
            .encode_response_head(&resp, self.env.now(), &mut head);
        let authenticated = resp.log.organization.is_some();
        self.queue(head, now);
        if with_body {
            self.queue(resp.body, now);
        }
        self.phase = Phase::Idle(now);
        self.lease = None;
        if authenticated {
            // The core authenticated the caller: no longer counted, never evicted.
            self.ticket = None;
            if let Some(standing) = self.standing.take() {
                standing.set_waiting(false);
            }
            self.queued = false;
        }
        self.settle();
    }

    /// Answers every request the codec yields, calling the core inline through `service`.
    /// Returns true when the connection must close once [`Connection::output`] is written.
    pub fn answer_all<D: Dispatch>(&mut self, service: &Service<D>) -> bool {
        loop {
            match self.poll() {
                Next::Request(req) => {
                    let resp = service.handle(&req);
                    self.respond(resp);
                }
                Next::Head(head) => {
                    let admission = service.check_head(&head);
                    self.admit(head, admission);
                }
                Next::Read => return false,
                Next::Close => return true,
            }
        }
    }

    /// Queues `bytes` to be written after what is already queued.
    fn queue(&mut self, bytes: Vec<u8>, now: Instant) {
        if bytes.is_empty() {
            return;
        }
        if self.pending == 0 {
            self.write_since = Some(now);
        }
        self.pending += bytes.len();
        match self.out.back_mut() {
            Some(last) if last.len() + bytes.len() <= COALESCE => last.extend_from_slice(&bytes),
            _ => self.out.push_back(bytes),
        }
    }

    /// The next bytes to write: a prefix of everything waiting, in order (write it, call
    /// [`Connection::consume_output`], and repeat until it is empty).
    pub fn output(&self) -> &[u8] {
        self.out
            .front()
            .and_then(|first| first.get(self.written..))
            .unwrap_or_default()
    }

    /// The next bytes to write as up to [`WRITE_SLICES`] slices, in order, for one
    /// vectored write (a large answer's head and body in one system call and one
    /// segment): write `slices[..n]`, then [`Connection::consume_output`] with what was
    /// written.
    pub fn output_vectored(&self) -> ([std::io::IoSlice<'_>; WRITE_SLICES], usize) {
        let mut slices = [std::io::IoSlice::new(&[]); WRITE_SLICES];
        let mut n = 0;
        for (slot, buf) in slices.iter_mut().zip(&self.out) {
            let from = if n == 0 { self.written } else { 0 };
            *slot = std::io::IoSlice::new(buf.get(from..).unwrap_or_default());
            n += 1;
        }
        (slices, n)
    }

    /// Bytes waiting to be written, in all ([`Connection::output`] is their first part).
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// `n` bytes of the output ([`Connection::output`], or as many buffers as
    /// [`Connection::output_vectored`] gave) were written at `now`.
    pub fn consume_output(&mut self, n: usize, now: Instant) {
        let mut n = n.min(self.pending);
        if n == 0 {
            return;
        }
        self.pending -= n;
        while let Some(first) = self.out.front() {
            let left = first.len() - self.written;
            if n < left {
                self.written += n;
                break;
            }
            // Written: its buffer goes back at once.
            n -= left;
            self.out.pop_front();
            self.written = 0;
        }
        if self.pending == 0 {
            self.write_since = None;
            self.out = VecDeque::new();
            self.settle();
        } else {
            self.write_since = Some(now);
        }
    }

    /// When the connection must be cut if nothing happens before (`None` while a request is
    /// with the core).
    pub fn deadline(&self) -> Option<Instant> {
        if self.evicted() {
            return Some(Instant::now());
        }
        if let Some(since) = self.write_since {
            return Some(since + self.idle_timeout);
        }
        match self.phase {
            Phase::Idle(since) => Some(since + self.idle_timeout),
            Phase::Body(clock) => Some(self.body_deadline(clock).0),
            Phase::Head(since, _) => Some(since + self.header_timeout),
            Phase::Handling => None,
        }
    }

    /// The earliest of a body's deadlines, and whether it is the idle one.
    fn body_deadline(&self, c: BodyClock) -> (Instant, bool) {
        let idle = c.last + self.idle_timeout;
        let mut total = c.start + self.body_timeout;
        // `min_body_rate` 0: no minimum.
        if let Some(ms) = c.bytes.saturating_mul(1000).checked_div(self.min_body_rate) {
            let earned = Duration::from_millis(ms);
            total = total.min(c.start + crate::BODY_RATE_GRACE + earned);
        }
        if idle <= total {
            (idle, true)
        } else {
            (total, false)
        }
    }

    /// `Some(reason)` when the deadline has passed at `now`: close without another word.
    pub fn expired(&self, now: Instant) -> Option<CloseReason> {
        if self.evicted() {
            return Some(CloseReason::Evicted);
        }
        let deadline = self.deadline()?;
        if now < deadline {
            return None;
        }
        Some(match (self.write_since, self.phase) {
            (None, Phase::Head(..)) => CloseReason::HeaderTimeout,
            (None, Phase::Body(c)) if !self.body_deadline(c).1 => CloseReason::BodyTimeout,
            _ => CloseReason::IdleTimeout,
        })
    }

    /// Between requests with nothing to write: safe to close when draining.
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle(_)) && self.pending == 0 && !self.closing
    }

    /// Since when the connection is idle, when [`Connection::is_idle`].
    pub fn idle_since(&self) -> Option<Instant> {
        match self.phase {
            Phase::Idle(since) if self.is_idle() => Some(since),
            _ => None,
        }
    }

    /// Why the connection closes once [`Next::Close`] was polled: [`CloseReason::Codec`]
    /// after a framing error, else [`CloseReason::Done`].
    pub fn close_reason(&self) -> CloseReason {
        if self.evicted() {
            CloseReason::Evicted
        } else if self.codec.error().is_some() {
            CloseReason::Codec
        } else {
            CloseReason::Done
        }
    }
}

impl Drop for Connection {
    /// A connection that ends leaves the eviction queue (its slot may outlive it).
    fn drop(&mut self) {
        if let Some(standing) = &self.standing {
            standing.set_waiting(false);
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("phase", &self.phase)
            .field("pending", &self.pending)
            .field("closing", &self.closing)
            .field("held", &self.held)
            .field("leased", &self.lease.is_some())
            .finish_non_exhaustive()
    }
}

/// What [`Service::check_head`] decided for a head ([`Connection::admit`] applies it).
#[derive(Debug)]
#[must_use]
pub enum Admission {
    /// Read the body, holding this lease on the body budget.
    Admit(Lease),
    /// Send this answer and close; the body is never read.
    Refuse(Response),
}

#[cfg(test)]
mod tests {
    use super::HeadEnd;

    #[test]
    fn head_end_is_found_across_reads() {
        let mut s = HeadEnd::default();
        assert!(!s.feed(b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r"));
        assert!(!s.feed(b"\n\r"));
        assert!(s.feed(b"\nbody"));
        let mut s = HeadEnd::default();
        assert!(!s.feed(b"GET / HTTP/1.1\r\r\n\r"));
        assert!(s.feed(b"\n"));
    }

    /// The end as a byte-at-a-time reading finds it, whatever the reads' sizes.
    fn reference(bytes: &[u8]) -> Option<usize> {
        let start = bytes.iter().position(|&b| b != b'\r' && b != b'\n')?;
        let at = bytes[start..].windows(4).position(|w| w == b"\r\n\r\n")?;
        Some(start + at + 4)
    }

    #[test]
    fn head_end_is_where_a_byte_at_a_time_reading_finds_it() {
        let alphabet = [b'\r', b'\n', b'a', b' '];
        use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(23);
        let mut next = move || rng.next_u64();
        for _ in 0..20_000 {
            let len = usize::try_from(next() % 24).unwrap();
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[usize::try_from(next() % 4).unwrap()])
                .collect();
            let want = reference(&bytes);
            let mut s = HeadEnd::default();
            let mut got = None;
            let mut at = 0;
            while at < bytes.len() {
                let n = 1 + usize::try_from(next() % 5).unwrap();
                let end = (at + n).min(bytes.len());
                if s.feed(&bytes[at..end]) {
                    got = Some(end);
                    break;
                }
                at = end;
            }
            // Found in the read that holds the end's last byte.
            let read_of = |end: usize| want.is_some_and(|w| w <= end && end - w < 5);
            assert_eq!(got.is_some(), want.is_some(), "{bytes:?}");
            if let Some(end) = got {
                assert!(read_of(end), "{bytes:?}: found by {end}, ends at {want:?}");
            }
        }
    }
}
