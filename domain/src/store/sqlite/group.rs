//! Group commit on the one writer connection (`docs/decisions.md`, "Writes on SQLite").
//!
//! With `synchronous=FULL` a commit waits for the disk (an `fsync` of the WAL): alone,
//! that wait bounds the store to a few hundred writes per second whatever the CPU. So
//! writers that queue behind one another share a transaction:
//!
//! ```text
//! writer A: lock ─ BEGIN IMMEDIATE ─ SAVEPOINT ─ op ─ RELEASE ─ others queued? yes ─ wait ┐
//! writer B:        (queued)        lock ─ SAVEPOINT ─ op ─ RELEASE ─ others queued? no ─ COMMIT ─ wake A, B
//! ```
//!
//! Each write runs in a savepoint of the open transaction, so a write that fails (or a
//! rehearsal, always undone) is rolled back alone and the others stand. The one holding
//! the connection when nobody else is queued (or when the group is full) commits; every
//! writer of the group returns only once that commit has returned, with its outcome: an
//! acknowledged write is exactly as durable as before, and a failed commit fails every
//! write of its group (none of them is on disk). A write never waits for a later writer
//! that is not already queued, so a lone write costs what it did.
//!
//! What a group shares that single transactions did not: a rehearsal sees the writes of
//! its group that are not committed yet (as a later write would see them committed),
//! and a write's acknowledgement waits for the other writes of its group to run.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use rusqlite::Connection;

use super::super::{MemberEpoch, StoreError};
use crate::error::DomainError;

/// The most writes one transaction holds: bounds how long the first one waits.
const MAX_GROUP: usize = 64;

/// The writer connection and its open group.
pub(super) struct Writer {
    state: Mutex<State>,
    /// Signalled when a group finishes.
    finished: Condvar,
    /// Writers between wanting the connection and holding it.
    queued: AtomicUsize,
    /// Transactions committed (the tests' proof that writes were grouped).
    #[cfg(test)]
    commits: AtomicUsize,
    /// Whether writes are grouped (a file; in memory there is no disk to wait for, and
    /// the one connection also serves reads, which must not see an open group).
    grouped: bool,
}

struct State {
    conn: Connection,
    open: Option<Group>,
}

/// The open transaction: the writes kept in it so far.
struct Group {
    kept: usize,
    /// A kept write changed membership: bump the epoch after the commit.
    members: bool,
    /// Set once, when the group commits or fails; shared by its waiting writers.
    outcome: Arc<OnceLock<Result<(), String>>>,
}

/// What one write did, as the op's closure reports it.
pub(super) struct Wrote {
    /// The op's result: kept when `Ok` and the caller asked to keep it.
    pub out: Result<(), DomainError>,
    /// It wrote a member or an organization.
    pub members: bool,
}

impl Writer {
    pub(super) fn new(conn: Connection, grouped: bool) -> Self {
        Self {
            state: Mutex::new(State { conn, open: None }),
            finished: Condvar::new(),
            queued: AtomicUsize::new(0),
            #[cfg(test)]
            commits: AtomicUsize::new(0),
            grouped,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a write panicked; its savepoint was rolled back
        // (below) before the panic went on, so the connection is still sound.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection, between writes: `/readyz`'s ping (a `SELECT` is fine inside an
    /// open group) and, in memory only, reads (never grouped there, so none is open).
    pub(super) fn with_conn<R>(&self, f: impl FnOnce(&mut Connection) -> R) -> R {
        f(&mut self.lock().conn)
    }

    /// Runs `op` as one write on the connection, kept when `keep` and it succeeds, and
    /// returns once what was kept is committed (or has failed with its group).
    pub(super) fn write(
        &self,
        keep: bool,
        members: &MemberEpoch,
        op: impl FnOnce(&Connection) -> Wrote,
    ) -> Result<(), DomainError> {
        self.queued.fetch_add(1, Ordering::AcqRel);
        let mut g = self.lock();
        self.queued.fetch_sub(1, Ordering::AcqRel);
        if g.open.is_none() {
            g.conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(StoreError::from)?;
            g.open = Some(Group {
                kept: 0,
                members: false,
                outcome: Arc::default(),
            });
        }
        let ran = run_in_savepoint(&g.conn, keep, op);
        let (out, kept_members) = match ran {
            Ok(r) => r,
            Err(panic) => {
                // Undone already; the others' writes still wait for a commit.
                self.settle(&mut g, members);
                drop(g);
                resume_unwind(panic);
            }
        };
        let group = g
            .open
            .as_mut()
            .expect("a group is open while the lock is held");
        let mine = match kept_members {
            Some(changed) => {
                group.kept += 1;
                group.members |= changed;
                Some(group.outcome.clone())
            }
            None => None,
        };
        self.settle(&mut g, members);
        if let Some(outcome) = mine {
            let g = self
                .finished
                .wait_while(g, |_| outcome.get().is_none())
                .unwrap_or_else(PoisonError::into_inner);
            drop(g);
            if let Some(Err(e)) = outcome.get() {
                return Err(StoreError(e.clone()).into());
            }
        }
        out
    }

    /// Commits the open group unless another writer is queued to join it (and it has
    /// room); an empty group is just closed.
    fn settle(&self, g: &mut State, members: &MemberEpoch) {
        let Some(group) = &g.open else { return };
        let joined = self.grouped && self.queued.load(Ordering::Acquire) > 0;
        if joined && group.kept < MAX_GROUP {
            return;
        }
        let group = g.open.take().expect("checked above");
        let outcome = if group.kept == 0 {
            g.conn.execute_batch("ROLLBACK")
        } else {
            g.conn.execute_batch("COMMIT")
        };
        let outcome = outcome.map_err(|e| {
            // A failed COMMIT may leave the transaction open: end it, so the next
            // writer starts clean.
            if !g.conn.is_autocommit() {
                let _ = g.conn.execute_batch("ROLLBACK");
            }
            e.to_string()
        });
        if outcome.is_ok() && group.kept > 0 {
            #[cfg(test)]
            self.commits.fetch_add(1, Ordering::Relaxed);
            if group.members {
                members.bump();
            }
        }
        let _ = group.outcome.set(outcome);
        self.finished.notify_all();
    }
}

/// A panic caught in a write, handed back to its caller.
type Panic = Box<dyn std::any::Any + Send>;

/// Runs `op` in a savepoint: released when kept (`Some(op changed membership)`), rolled
/// back otherwise (`None`), also when it panics (the panic is handed back).
fn run_in_savepoint(
    conn: &Connection,
    keep: bool,
    op: impl FnOnce(&Connection) -> Wrote,
) -> Result<(Result<(), DomainError>, Option<bool>), Panic> {
    if let Err(e) = conn.execute_batch("SAVEPOINT w") {
        return Ok((Err(StoreError::from(e).into()), None));
    }
    let undo = |conn: &Connection| {
        let _ = conn.execute_batch("ROLLBACK TO w; RELEASE w");
    };
    let wrote = match catch_unwind(AssertUnwindSafe(|| op(conn))) {
        Ok(w) => w,
        Err(panic) => {
            undo(conn);
            return Err(panic);
        }
    };
    if keep && wrote.out.is_ok() {
        match conn.execute_batch("RELEASE w") {
            Ok(()) => Ok((wrote.out, Some(wrote.members))),
            Err(e) => {
                undo(conn);
                Ok((Err(StoreError::from(e).into()), None))
            }
        }
    } else {
        undo(conn);
        Ok((wrote.out, None))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::ScratchFile;
    use super::*;
    use std::thread;
    use std::time::Duration;

    /// A writer on a fresh file (WAL, `synchronous=FULL`, as the store opens it) with a
    /// table `t(x)`, and the file for a second connection. `u(x)` refers to `t` with a
    /// foreign key checked at `COMMIT`, so a write can make its group's commit fail.
    fn writer(name: &str) -> (Arc<Writer>, ScratchFile) {
        let file = ScratchFile::new(&format!("group-{name}"));
        let c = Connection::open(&file.path).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;
             CREATE TABLE t (x INTEGER PRIMARY KEY);
             CREATE TABLE u (x INTEGER REFERENCES t (x) DEFERRABLE INITIALLY DEFERRED);",
        )
        .unwrap();
        (Arc::new(Writer::new(c, true)), file)
    }

    fn rows(path: &std::path::Path) -> Vec<i64> {
        let c = Connection::open(path).unwrap();
        let mut st = c.prepare("SELECT x FROM t ORDER BY x").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    /// Inserts `x` (slowly: the others queue meanwhile); fails when `x` is a multiple
    /// of 3.
    fn insert(x: i64) -> impl FnOnce(&Connection) -> Wrote {
        move |c| {
            thread::sleep(Duration::from_millis(1));
            let put = c.execute("INSERT INTO t (x) VALUES (?1)", [x]);
            let out = match put {
                Ok(_) if x % 3 == 0 => Err(StoreError(format!("{x} refused")).into()),
                Ok(_) => Ok(()),
                Err(e) => Err(StoreError::from(e).into()),
            };
            Wrote {
                out,
                members: x == 1,
            }
        }
    }

    /// Concurrent writers share commits; each gets its own outcome; what failed or
    /// was rehearsed is not there, every acknowledged write is, read by another
    /// connection once the writers have returned.
    #[test]
    fn queued_writers_share_a_commit_and_keep_their_own_outcomes() {
        let (w, file) = writer("share");
        let epoch = Arc::new(MemberEpoch::watched());
        let before = epoch.current();
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (w, epoch) = (w.clone(), epoch.clone());
                thread::spawn(move || {
                    (0..10)
                        .map(|i| {
                            let x = t * 10 + i;
                            let keep = x % 5 != 4; // rehearsals
                            (x, keep, w.write(keep, &epoch, insert(x)).is_ok())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let results: Vec<(i64, bool, bool)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        for &(x, _, ok) in &results {
            assert_eq!(ok, x % 3 != 0, "{x}: its own outcome");
        }
        let want: Vec<i64> = results
            .iter()
            .filter(|&&(_, keep, ok)| keep && ok)
            .map(|&(x, ..)| x)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(rows(&file.path), want, "kept writes only, all committed");
        let commits = w.commits.load(Ordering::Relaxed);
        assert!(
            commits < want.len(),
            "{commits} commits for {} writes",
            want.len()
        );
        assert_ne!(epoch.current(), before, "x = 1 changed membership");
    }

    /// A lone write commits before it returns (nobody queued: no waiting for company).
    #[test]
    fn a_lone_write_is_committed_when_it_returns() {
        let (w, file) = writer("lone");
        let epoch = MemberEpoch::watched();
        w.write(true, &epoch, insert(7)).unwrap();
        assert_eq!(rows(&file.path), vec![7]);
        assert_eq!(w.commits.load(Ordering::Relaxed), 1);
        assert_eq!(epoch.current(), Some(0), "no membership written");
    }

    /// A write that panics is undone and its panic goes on; the writes queued with it
    /// still commit, and the connection serves the next write.
    #[test]
    fn a_panicking_write_is_undone_alone() {
        let (w, file) = writer("panic");
        let epoch = Arc::new(MemberEpoch::watched());
        let others: Vec<_> = [2, 4]
            .into_iter()
            .map(|x| {
                let (w, epoch) = (w.clone(), epoch.clone());
                thread::spawn(move || w.write(true, &epoch, insert(x)))
            })
            .collect();
        let (w2, epoch2) = (w.clone(), epoch.clone());
        let panicked = thread::spawn(move || {
            w2.write(true, &epoch2, |c| {
                c.execute("INSERT INTO t (x) VALUES (99)", []).unwrap();
                panic!("a bug in an op")
            })
        })
        .join();
        assert!(panicked.is_err(), "the panic reaches its caller");
        for h in others {
            h.join().unwrap().unwrap();
        }
        w.write(true, &epoch, insert(5)).unwrap();
        assert_eq!(rows(&file.path), vec![2, 4, 5]);
    }

    /// A commit that fails fails every write of its group (none of them is on disk),
    /// and the next write starts on a clean connection.
    #[test]
    fn a_failed_commit_fails_its_whole_group() {
        let (w, file) = writer("failed");
        let epoch = Arc::new(MemberEpoch::watched());
        // A writer counted as queued keeps the first write's group open.
        w.queued.fetch_add(1, Ordering::AcqRel);
        let first = {
            let (w, epoch) = (w.clone(), epoch.clone());
            thread::spawn(move || w.write(true, &epoch, insert(2)))
        };
        let mut waits = 0;
        while w.lock().open.as_ref().is_none_or(|g| g.kept == 0) {
            waits += 1;
            assert!(waits < 5_000, "the first write never joined a group");
            thread::sleep(Duration::from_millis(1));
        }
        // The queued one arrives: its row breaks a foreign key, checked at COMMIT.
        w.queued.fetch_sub(1, Ordering::AcqRel);
        let orphan = w.write(true, &epoch, |c| Wrote {
            out: c
                .execute("INSERT INTO u (x) VALUES (404)", [])
                .map(|_| ())
                .map_err(|e| StoreError::from(e).into()),
            members: false,
        });
        assert!(orphan.is_err(), "the committer is told");
        assert!(
            first.join().unwrap().is_err(),
            "so is the write it waited for"
        );
        assert_eq!(rows(&file.path), Vec::<i64>::new(), "neither is on disk");
        w.write(true, &epoch, insert(5)).unwrap();
        assert_eq!(rows(&file.path), vec![5], "the next write starts clean");
    }
}
