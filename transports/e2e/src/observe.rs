//! [`Counts`]: an observer that counts what the adapters report, for assertions.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dunning_core::RequestLog;
use dunning_runtime::{CloseReason, Observer};

/// Counts connections and requests; remembers every close reason and status.
#[derive(Debug, Default)]
pub struct Counts {
    /// Connections accepted and counted.
    pub opened: AtomicUsize,
    /// Counted connections that ended.
    pub closed: AtomicUsize,
    /// Connections refused over the cap.
    pub refused: AtomicUsize,
    /// Requests answered by the core.
    pub requests: AtomicUsize,
    /// Why each connection ended, in order.
    pub reasons: Mutex<Vec<CloseReason>>,
    /// The status of each answered request, in order.
    pub statuses: Mutex<Vec<u16>>,
}

impl Counts {
    /// Connections open now.
    pub fn open(&self) -> usize {
        self.opened
            .load(Ordering::SeqCst)
            .saturating_sub(self.closed.load(Ordering::SeqCst))
    }

    /// Waits (at most `limit`) until `f` holds; returns whether it did.
    pub fn wait_until(&self, limit: Duration, f: impl Fn(&Self) -> bool) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if f(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        f(self)
    }

    /// Whether some connection ended for `reason`.
    pub fn saw(&self, reason: CloseReason) -> bool {
        self.reasons
            .lock()
            .map(|r| r.contains(&reason))
            .unwrap_or(false)
    }
}

impl Observer for Counts {
    fn connection_opened(&self) {
        self.opened.fetch_add(1, Ordering::SeqCst);
    }

    fn connection_refused(&self) {
        self.refused.fetch_add(1, Ordering::SeqCst);
    }

    fn connection_closed(&self, reason: CloseReason) {
        if let Ok(mut r) = self.reasons.lock() {
            r.push(reason);
        }
        self.closed.fetch_add(1, Ordering::SeqCst);
    }

    fn request_finished(&self, _id: &str, _log: &RequestLog, status: u16, _elapsed: Duration) {
        if let Ok(mut s) = self.statuses.lock() {
            s.push(status);
        }
        self.requests.fetch_add(1, Ordering::SeqCst);
    }
}
