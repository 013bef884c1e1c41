//! Round trips to PostgreSQL, counted where they happen (the pooled sessions' exchanges
//! and the reads ahead's), so that tests hold them minimal (`round_trips.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Round trips to PostgreSQL, counted so a test can hold them down.
#[derive(Debug, Default)]
pub(super) struct RoundTrips {
    /// Transactions begun (their frames sent).
    pub(super) transactions: AtomicU64,
    /// Statements the domain ran, and each statement's prepare.
    pub(super) statements: AtomicU64,
    /// Exchanges with the server: a prepare, or a pipeline of all that was unsent and
    /// the statement whose answer is awaited.
    pub(super) exchanges: AtomicU64,
    /// Rows the deferred writes changed (`session::REPLAN_ROWS`).
    pub(super) written: AtomicU64,
}

impl RoundTrips {
    /// A statement prepared on a connection: an exchange of its own.
    pub(super) fn prepared(&self) {
        self.exchange(1);
    }

    /// One exchange carrying `statements` of the domain's statements.
    pub(super) fn exchange(&self, statements: usize) {
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        self.statements
            .fetch_add(statements as u64, Ordering::Relaxed);
    }
}
