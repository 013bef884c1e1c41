//! The planner's statistics, kept up with this store's own writes.
//!
//! PostgreSQL plans every statement from its tables' statistics, which `ANALYZE`
//! gathers; autovacuum runs it when a table has changed enough, but a database may run
//! without autovacuum, or a bulk load (the demo's seed, an import) may be read long
//! before autovacuum's next round. Planned blind, the overdue page's count scanned the
//! whole table and its names looked debtors up through the wrong index: one replica
//! served 4,800 pages a second on such tables against 6,500-6,900 once analyzed
//! (`docs/decisions.md`, "Statistics that follow the store's writes").
//!
//! The same holds for `VACUUM`, autovacuum's other half. Only it marks a table's pages
//! all-visible, and an index-only scan reads the table for every entry of a page not so
//! marked: the overdue page's count, answered from its index alone, read every overdue
//! charge's row on a table never vacuumed (PostgreSQL's CPU per page 82 µs, 66 once
//! vacuumed, `docs/decisions.md`, "Vacuumed with the statistics"); and a row updated
//! leaves its old version behind until a vacuum reclaims it.
//!
//! So once this store's committed rows have grown a step since the last run
//! ([`session::grown`], the doubling steps at which statements are prepared again), it
//! runs `VACUUM (ANALYZE)` on its entity tables on a connection and a thread of their
//! own, one run at a time, passing over a table another vacuum holds ([`Held`]): no
//! request waits for it (a vacuum locks out no read or write), and plans made before
//! it are made again by PostgreSQL itself (new statistics invalidate them). The steps
//! double, so the runs are few however large the tables grow, and a vacuum skips the
//! pages marked at the last one. A role that does not own the tables gets a warning
//! from PostgreSQL and nothing else; a failure waits for the next step.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use tokio_postgres::Config;

use super::session;
use crate::store::Kind;

/// When this store last analyzed its tables, and whether it is analyzing them now.
#[derive(Debug, Default)]
pub(super) struct Statistics {
    /// The store's rows written when the last run began.
    analyzed: AtomicU64,
    running: Arc<AtomicBool>,
}

impl Statistics {
    /// After a write committed, with `written` rows written by the store so far:
    /// analyzes its tables (on a thread of their own) when they have grown a step.
    pub(super) fn committed(&self, written: u64, config: &Config) {
        let last = self.analyzed.load(Ordering::Relaxed);
        if !session::grown(written, last) {
            return;
        }
        if self.running.swap(true, Ordering::AcqRel) {
            return; // the run under way sees most of them; the next step the rest
        }
        self.analyzed.store(written, Ordering::Relaxed);
        let running = Arc::clone(&self.running);
        let config = config.clone();
        let spawned = thread::Builder::new()
            .name("pg-vacuum".into())
            .spawn(move || {
                run(&config, Held::PassOver);
                running.store(false, Ordering::Release);
            });
        if spawned.is_err() {
            self.running.store(false, Ordering::Release);
        }
    }

    /// After a bulk load, with `written` rows written by the store so far: a run now,
    /// on the caller's thread, so what reads the load next is planned from its
    /// statistics and finds its pages all-visible. The load's last step may have been
    /// run while it went on, before most of its rows.
    pub(super) fn now(&self, written: u64, config: &Config) {
        self.analyzed.store(written, Ordering::Relaxed);
        run(config, Held::Wait);
    }
}

/// What a run does with a table another vacuum holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// Passes over it (`SKIP_LOCKED`): a step's run. The other run (another replica's,
    /// autovacuum's, an operator's) is doing the work, the next step takes what it
    /// missed, and a run that waited would hold its connection and show as a lock wait
    /// among the writers'.
    PassOver,
    /// Waits for it: after a bulk load, whose every row must be vacuumed before it is
    /// read, and a run begun before the load's end may not have seen them all.
    Wait,
}

/// One run over the entity tables; its failure waits for the next step.
pub(super) fn run(config: &Config, held: Held) {
    let tables: Vec<&str> = Kind::ALL.iter().map(|k| k.table()).collect();
    let options = match held {
        Held::PassOver => "ANALYZE, SKIP_LOCKED",
        Held::Wait => "ANALYZE",
    };
    let sql = format!("VACUUM ({options}) {}", tables.join(", "));
    let _ = super::blocking(config).and_then(|mut c| c.batch_execute(&sql));
}
