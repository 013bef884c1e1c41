//! Named trials over one shared fixture, for the suites run by `libtest-mimic`
//! (`harness = false` in `Cargo.toml`): each tool or case is its own trial, with its own
//! pass/fail line, run alone with `cargo test -p kobana-dunning --test NAME -- FILTER`.
//!
//! The fixture (a started server and what it was seeded with, or a sequence already run
//! against three servers) is made once, by the first trial that needs it, and kept for
//! the others; a panic while making it fails every trial that needs it, with its message
//! (made once: it is not retried by the next trial). [`run`] drops the fixture once the
//! trials are done, so servers stop and their data dirs and schemas go.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};

/// A fixture made on first use and shared by the trials of one test binary.
pub struct Shared<T> {
    cell: OnceLock<Result<T, String>>,
    make: Box<dyn Fn() -> T + Send + Sync>,
}

impl<T: Send + Sync> Shared<T> {
    pub fn new(make: impl Fn() -> T + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            cell: OnceLock::new(),
            make: Box::new(make),
        })
    }

    /// The fixture, made now if no trial made it yet; `Err` when making it panicked.
    pub fn get(&self) -> Result<&T, Failed> {
        self.cell
            .get_or_init(|| {
                catch_unwind(AssertUnwindSafe(|| (self.make)())).map_err(|p| panic_message(&*p))
            })
            .as_ref()
            .map_err(|e| format!("the shared set-up failed: {e}").into())
    }
}

/// The message a panic was raised with.
pub fn panic_message(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

/// `Ok` when `cond`, else the failure `msg`.
pub fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if cond { Ok(()) } else { Err(msg().into()) }
}

/// Runs `trials`, drops `fixture` (after every trial, and before exiting: `exit` runs no
/// destructor), and exits with the trials' status.
pub fn run<T>(args: &Arguments, trials: Vec<Trial>, fixture: Arc<Shared<T>>) -> ! {
    let conclusion = libtest_mimic::run(args, trials);
    drop(fixture);
    conclusion.exit()
}
