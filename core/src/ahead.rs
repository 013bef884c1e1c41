//! Reads ahead: a read-only tool call answered on an async adapter's reactor, its store
//! reads done by the adapter's runtime instead of a blocking thread.
//!
//! A store whose reads cross the network (PostgreSQL) makes a blocking adapter thread
//! sleep on every exchange, and the hand-off to that thread and back costs the server's
//! core more than the read's own work. With reads ahead the adapter runs the request
//! itself, in rounds, and never blocks:
//!
//! 1. [`Server::place`] places a read-only `tools/call` whose reads would wait, whose
//!    dispatcher can read ahead ([`Dispatch::ahead`]) and whose gate decides without
//!    waiting (a known token, an in-process limiter) in [`Place::Ahead`], with a fresh
//!    [`Ahead`];
//! 2. the adapter runs the request with it in [`Env::ahead`]: the dispatcher answers
//!    every read from what earlier rounds fetched and notes each read it does not have
//!    ([`Ahead::missed`]), failing the run;
//! 3. a run that missed reads is thrown away: the adapter awaits the missed reads (the
//!    future [`Ahead::missed`] gives, which keeps their answers in the `Ahead`) and runs
//!    the request again, with the same `Env`; the run that missed nothing is the answer.
//!
//! The core never polls the future; it only carries the `Ahead` from the adapter to the
//! dispatcher ([`crate::Ctx::ahead`]). Every run after the first skips the rate limiter:
//! one request is counted once ([`Ahead::rounds`]). A dispatcher's runs must be
//! deterministic given the same reads' answers, as read-only calls of one snapshot are.
//!
//! [`Server::place`]: crate::Server::place
//! [`Place::Ahead`]: crate::Place::Ahead
//! [`Dispatch::ahead`]: crate::dispatch::Dispatch::ahead
//! [`Env::ahead`]: crate::Env::ahead

use std::any::Any;
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

/// Reads a run missed, done when awaited; their answers are kept by the [`Ahead`] that
/// gave them.
pub type Reads = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One request's reads ahead, shared by its runs and its rounds of reads (see the module
/// docs). The dispatcher that made it is the only one that looks inside (`Any`).
pub trait Ahead: Any + Debug + Send + Sync {
    /// The reads the last run missed, to await before running the request again; `None`
    /// when it missed none (its answer stands).
    fn missed(&self) -> Option<Reads>;

    /// Rounds of reads done so far: a run after the first (`> 0`) is the same request
    /// run again.
    fn rounds(&self) -> u32;

    /// Asks the next runs to read the store as they would without reads ahead
    /// (blocking): an adapter gives up after too many rounds, and runs the request once
    /// more off its reactor.
    fn give_up(&self);
}
