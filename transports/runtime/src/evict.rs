//! Eviction at the connection cap: a new connection takes the place of the oldest one
//! that has not authenticated and is waiting for a request head.
//!
//! Why: partial heads reopened before the header deadline, from enough addresses to stay
//! under the per-address cap, would otherwise fill [`crate::Options::max_connections`]
//! and have every other client refused. Such a connection has bought nothing (no request
//! of it was authenticated, none is with the core, nothing waits to be written), so
//! closing it costs its client one reconnection; the newest connections, those of
//! clients that send their request at once, are the last to go. See `docs/decisions.md`
//! ("Slow heads").
//!
//! In order: a [`crate::Connection`] enters the [`Queue`] while it waits for a head and
//! has not authenticated (from accept, and again each time it is idle after an
//! unauthenticated answer), and leaves it when a head is complete or when it
//! authenticates. [`Queue::evict_oldest`] takes the first one in, marks its [`Standing`]
//! evicted and wakes its task; the new connection takes over its count under the cap
//! (the evicted one's [`crate::ConnectionSlot`] does not give it back), so the cap holds
//! exactly however long the evicted one takes to close.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// The connections that may be evicted, oldest first (one per service).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    waiting: BTreeMap<u64, Arc<Standing>>,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Evicts the oldest connection in the queue; false when there is none.
    pub(crate) fn evict_oldest(&self) -> bool {
        let standing = {
            let mut inner = self.lock();
            let Some((_, standing)) = inner.waiting.pop_first() else {
                return false;
            };
            // Under the queue's lock, like every change of a standing's place.
            *standing.place() = Place::Evicted;
            standing.evicted.store(true, Ordering::Release);
            standing
        };
        let waker = standing
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(w) = waker {
            w.wake();
        }
        true
    }

    /// Connections that may be evicted now.
    pub(crate) fn len(&self) -> usize {
        self.lock().waiting.len()
    }
}

/// Where a connection stands. Changed only under its queue's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Not in the queue (busy, or authenticated).
    Out,
    /// In the queue, at this key.
    In(u64),
    /// Evicted: its count under the cap went to a new connection.
    Evicted,
    /// Closed (its slot is gone): never enters again.
    Closed,
}

/// One connection's standing in its service's eviction queue: shared by its
/// [`crate::ConnectionSlot`] (which then keeps its count under the cap) and its
/// [`crate::Connection`] (which then closes).
#[derive(Debug)]
pub struct Standing {
    queue: Arc<Queue>,
    place: Mutex<Place>,
    /// [`Place::Evicted`], readable without a lock.
    evicted: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Standing {
    pub(crate) fn new(queue: &Arc<Queue>) -> Arc<Self> {
        Arc::new(Self {
            queue: Arc::clone(queue),
            place: Mutex::new(Place::Out),
            evicted: AtomicBool::new(false),
            waker: Mutex::new(None),
        })
    }

    /// The place, locked; take the queue's lock first.
    fn place(&self) -> std::sync::MutexGuard<'_, Place> {
        self.place.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters the queue at its back (`true`) or leaves it (`false`); nothing once evicted
    /// or closed.
    pub(crate) fn set_waiting(self: &Arc<Self>, waiting: bool) {
        let mut inner = self.queue.lock();
        let mut place = self.place();
        match (*place, waiting) {
            (Place::Out, true) => {
                let key = inner.next;
                inner.next += 1;
                inner.waiting.insert(key, Arc::clone(self));
                *place = Place::In(key);
            }
            (Place::In(key), false) => {
                inner.waiting.remove(&key);
                *place = Place::Out;
            }
            _ => {}
        }
    }

    /// The connection is gone: out of the queue for good. Returns whether it had been
    /// evicted (then its count under the cap is no longer its own).
    pub(crate) fn close(&self) -> bool {
        let mut inner = self.queue.lock();
        let mut place = self.place();
        match *place {
            Place::Evicted => return true,
            Place::In(key) => {
                inner.waiting.remove(&key);
            }
            Place::Out | Place::Closed => {}
        }
        *place = Place::Closed;
        false
    }

    /// Whether the connection was evicted: close it without a word.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once the connection is evicted (for an async adapter's `select!`; the
    /// others see [`crate::Connection::expired`] on their next sweep).
    pub fn evicted(self: &Arc<Self>) -> Evicted {
        Evicted(Arc::clone(self))
    }
}

/// The future of [`Standing::evicted`].
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Evicted(Arc<Standing>);

impl Future for Evicted {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.is_evicted() {
            return Poll::Ready(());
        }
        *self.0.waker.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
        // Evicted between the first look and the waker's registration: not lost.
        if self.0.is_evicted() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
