//! [`Budget`]: the bytes every connection of a service may hold in request bodies at once,
//! and the [`Lease`] one body holds on it.
//!
//! A body is only read once its head passed authentication ([`crate::Service::check_head`]);
//! even then, the bodies in flight together may not exceed [`crate::Options::max_body_buffer`].
//! A `Content-Length` body leases its declared size up front (it is allocated once, at
//! that size); a chunked body leases as it arrives, by [`LEASE_STEP`]s. A lease that cannot
//! be had is answered `503` with `Retry-After` (the head: before any body byte is read).
//! Leases are returned when the request is answered or the connection dropped, whatever
//! happens: they are RAII.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A chunked body leases this many bytes at a time (fewer atomic updates).
pub(crate) const LEASE_STEP: usize = 64 * 1024;

/// Bytes leased for bodies in flight, against a cap.
#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    cap: usize,
}

impl Budget {
    /// An empty budget of `cap` bytes.
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicUsize::new(0),
            cap,
        })
    }

    /// Bytes leased now.
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Takes `n` more bytes if they fit under the cap.
    fn take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= self.cap)
            })
            .is_ok()
    }

    /// A lease of `n` bytes, or `None` when they do not fit.
    pub(crate) fn lease(self: &Arc<Self>, n: usize) -> Option<Lease> {
        self.take(n).then(|| Lease {
            budget: Arc::clone(self),
            bytes: n,
        })
    }
}

/// Bytes of a [`Budget`] held by one body; returned when dropped.
#[derive(Debug)]
pub struct Lease {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Lease {
    /// Grows the lease to cover at least `n` bytes (by [`LEASE_STEP`]s); false when the
    /// budget cannot give them (the lease is unchanged).
    pub(crate) fn cover(&mut self, n: usize) -> bool {
        if n <= self.bytes {
            return true;
        }
        let want = n.div_ceil(LEASE_STEP).saturating_mul(LEASE_STEP);
        let more = want - self.bytes;
        if !self.budget.take(more) {
            return false;
        }
        self.bytes = want;
        true
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_are_capped_grown_and_returned() {
        let b = Budget::new(2 * LEASE_STEP);
        let mut a = b.lease(10).unwrap();
        assert_eq!(b.used(), 10);
        assert!(a.cover(LEASE_STEP + 1));
        assert_eq!(b.used(), 2 * LEASE_STEP);
        assert!(b.lease(1).is_none());
        assert!(!a.cover(2 * LEASE_STEP + 1));
        drop(a);
        assert_eq!(b.used(), 0);
        assert!(b.lease(2 * LEASE_STEP).is_some());
        assert_eq!(b.used(), 0);
    }
}
