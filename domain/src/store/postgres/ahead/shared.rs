//! The connections that first rounds share: a first round is one statement outside any
//! transaction, so the first rounds of many calls can be pipelined on one connection
//! (`tokio-postgres` writes every request queued since its last write at once, and reads
//! the answers as they come). A connection lent to each call cost both processes a
//! wake-up and a system call at each end for every page; pipelined, one write and one
//! read carry many (`docs/decisions.md`, "First rounds share their connections").
//!
//! In what order a first round picks its connection:
//! 1. the first open one that [`takes`](Muxed::takes) it: fewer than [`DEPTH`]
//!    statements in flight, and not [`STALL`] since it last answered one (a slow statement holds up only those already queued behind it);
//! 2. else a new one, up to the cap ([`Shared::new`]);
//! 3. else, at the cap, the one with the fewest in flight.
//!
//! A first round waits for its connection (its turn to open one included) for
//! [`super::CONNECTION_WAIT`] at most, as a lent one does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::{Asked, Conn, Pool, Rows, lock, within_wait};
use crate::store::StoreError;

/// Statements in flight on one connection before the next first round opens another.
pub(super) const DEPTH: usize = 16;

/// A connection with statements in flight and no answer for this long is passed over:
/// a page answers in well under a millisecond, so one waiting this long is a slow
/// statement, and anything queued behind it waits for it.
pub(super) const STALL: Duration = Duration::from_millis(5);

/// The shared connections of one [`Pool`], opened as first rounds need them.
pub(super) struct Shared {
    open: Mutex<Vec<Arc<Muxed>>>,
    /// Held while a connection is opened, so that first rounds arriving together open
    /// one, not one each.
    pub(super) opening: tokio::sync::Mutex<()>,
    cap: usize,
    /// [`STALL`] (tests set their own).
    pub(super) stall: Duration,
}

/// One shared connection.
struct Muxed {
    conn: Conn,
    /// Statements sent and not yet answered.
    in_flight: AtomicUsize,
    /// When a statement of it was last answered, or it last went from none in flight
    /// to one.
    progress: Mutex<Instant>,
}

impl Shared {
    /// A quarter of the pool's bound of lent connections, and at least one: one
    /// connection carries the first rounds of a core's worth of calls.
    pub(super) fn new(connections: u32) -> Self {
        Self {
            open: Mutex::default(),
            opening: tokio::sync::Mutex::default(),
            cap: (connections as usize / 4).max(1),
            stall: STALL,
        }
    }

    /// Sends `statements`, a first round, on a shared connection.
    pub(super) async fn round(
        &self,
        pool: &Pool,
        statements: &[Asked],
    ) -> Result<Vec<Rows>, StoreError> {
        // The wait for a connection as a whole is bounded, the turn to open one included:
        // while the database cannot be reached, first rounds queue behind each other's
        // attempts.
        let muxed = within_wait(self.pick(pool)).await?;
        let _busy = Busy::on(&muxed);
        muxed.conn.exchange(false, statements, &pool.trips).await
    }

    async fn pick(&self, pool: &Pool) -> Result<Arc<Muxed>, StoreError> {
        if let Some(m) = self.taking() {
            return Ok(m);
        }
        let _opening = self.opening.lock().await;
        // Another first round may have opened one meanwhile.
        if let Some(m) = self.taking() {
            return Ok(m);
        }
        if let Some(m) = self.least_at_cap() {
            return Ok(m);
        }
        let conn = Conn::open(&pool.config).await?;
        let m = Arc::new(Muxed {
            conn,
            in_flight: AtomicUsize::new(0),
            progress: Mutex::new(Instant::now()),
        });
        lock(&self.open).push(Arc::clone(&m));
        Ok(m)
    }

    /// The first open connection that takes another statement (closed ones dropped).
    fn taking(&self) -> Option<Arc<Muxed>> {
        let now = Instant::now();
        let mut open = lock(&self.open);
        open.retain(|m| !m.conn.client.is_closed());
        open.iter().find(|m| m.takes(now, self.stall)).cloned()
    }

    /// At the cap, the open connection with the fewest statements in flight.
    fn least_at_cap(&self) -> Option<Arc<Muxed>> {
        let open = lock(&self.open);
        if open.len() < self.cap {
            return None;
        }
        open.iter()
            .min_by_key(|m| m.in_flight.load(Ordering::Relaxed))
            .cloned()
    }

    /// How many shared connections are open (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.open).len()
    }
}

impl Muxed {
    fn takes(&self, now: Instant, stall: Duration) -> bool {
        match self.in_flight.load(Ordering::Relaxed) {
            0 => true,
            n if n >= DEPTH => false,
            _ => now.saturating_duration_since(*lock(&self.progress)) < stall,
        }
    }
}

/// A first round in flight on a [`Muxed`], until it is answered or dropped.
struct Busy<'a>(&'a Muxed);

impl<'a> Busy<'a> {
    fn on(m: &'a Muxed) -> Self {
        if m.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
            *lock(&m.progress) = Instant::now();
        }
        Self(m)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *lock(&self.0.progress) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
