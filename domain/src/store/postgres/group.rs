//! Group commit per organization (`docs/decisions.md`, "Group commit per organization
//! on PostgreSQL").
//!
//! An organization's writes run one at a time (its advisory lock, taken by the write's
//! frame), and each `COMMIT` waits for PostgreSQL's WAL flush while that lock is held:
//! alone, the flush bounds an organization to one write per flush, whatever the number
//! of replicas, cores or connections. So, on one replica, writers of one organization
//! that queue behind one another share a transaction, as SQLite's writers share theirs
//! (`store/sqlite/group.rs`), in this order:
//!
//! ```text
//! writer A: lock org ─ frame (BEGIN, locks) ─ op ─ others queued? yes ─ wait ─────────────┐
//! writer B:  (queued)                 lock org ─ SAVEPOINT ─ op ─ others queued? no ─ COMMIT ─ wake A, B
//! ```
//!
//! The first write of a group runs without a savepoint: if it fails (or is a rehearsal)
//! the transaction holds nothing else and is rolled back whole, so a lone write costs the
//! round trips it did before grouping. A later write runs in a savepoint, undone alone if
//! it fails. Every writer returns only once the commit that holds its write has
//! returned, with that commit's outcome: an acknowledged write is as durable as before,
//! and a failed commit fails every write of its group.
//!
//! Groups are per organization: different organizations never share a transaction, a
//! connection or a wait (their writes take different locks; `store/scope.rs`). A
//! queued writer holds no connection of the pool while it waits for its turn.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use super::{Access, Open, PostgresStore, StoreError, WriteScope};
use crate::error::DomainError;
use crate::store::Tx;

/// The most writes one transaction holds: bounds how long its first writer waits, and
/// keeps a transaction's subtransactions (one per savepoint that writes) within what a
/// PostgreSQL backend caches (64).
const MAX_GROUP: usize = 32;

/// A nested writer's savepoint (each a new one of the same name), and what undoes the
/// latest.
const SAVEPOINT: &str = "SAVEPOINT w";
const UNDO: &str = "ROLLBACK TO SAVEPOINT w";

/// The writers of each organization that has writes in progress on this replica.
#[derive(Default)]
pub(super) struct Groups {
    orgs: Mutex<HashMap<String, Arc<OrgWriter>>>,
}

/// One organization's writers on this replica: the open group, and who waits to join.
#[derive(Default)]
struct OrgWriter {
    open: Mutex<Option<Group>>,
    /// Signalled when a group ends.
    finished: Condvar,
    /// Writers between wanting the group and holding it.
    queued: AtomicUsize,
}

/// The open transaction and the writes kept in it so far.
struct Group {
    open: Open,
    kept: usize,
    /// A kept write changed membership: bump the epoch after the commit.
    members: bool,
    /// Set once, when the group commits or fails; shared by its waiting writers.
    outcome: Arc<OnceLock<Result<(), String>>>,
}

/// A panic caught in a write, handed back to its caller.
type Panic = Box<dyn std::any::Any + Send>;

impl Groups {
    /// `org`'s writers, made when it has none.
    fn of(&self, org: &str) -> Arc<OrgWriter> {
        let mut orgs = lock(&self.orgs);
        Arc::clone(orgs.entry(org.to_owned()).or_default())
    }

    /// Forgets `org`'s writers when nobody else holds them (no write in progress or
    /// queued): the map holds only organizations writing now.
    fn release(&self, org: &str, writer: Arc<OrgWriter>) {
        let mut orgs = lock(&self.orgs);
        // Others take their handle under this lock: two holders are the map and us.
        if Arc::strong_count(&writer) == 2 {
            orgs.remove(org);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a write panicked; its work was undone (below) before
    // the panic went on.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Open {
    /// Undoes a nested writer: forgets what it has not sent, and rolls back to its
    /// savepoint when that was sent.
    fn undo(&mut self) -> Result<(), StoreError> {
        self.unsent.writes.clear();
        if let Some(before) = self.unsent.text.strip_suffix(SAVEPOINT) {
            // Never sent: nothing to roll back.
            let kept = before.trim_end_matches("; ").len();
            self.unsent.text.to_mut().truncate(kept);
            return Ok(());
        }
        self.say_now(UNDO)
    }
}

impl PostgresStore {
    /// Runs `f` as one write of `org`, kept when `keep` and it succeeds, in the group
    /// open for `org` on this replica (or a new one); returns once what was kept is
    /// committed, or has failed with its group.
    pub(super) fn grouped_write(
        &self,
        org: &str,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        keep: bool,
    ) -> Result<(), DomainError> {
        let writer = self.groups.of(org);
        let out = self.write_in_group(&writer, org, f, keep);
        self.groups.release(org, writer);
        match out {
            Ok(out) => out,
            Err(panic) => resume_unwind(panic),
        }
    }

    fn write_in_group(
        &self,
        writer: &OrgWriter,
        org: &str,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        keep: bool,
    ) -> Result<Result<(), DomainError>, Panic> {
        writer.queued.fetch_add(1, Ordering::AcqRel);
        let mut g = lock(&writer.open);
        writer.queued.fetch_sub(1, Ordering::AcqRel);
        let first = g.is_none();
        if first {
            let access = Access::Write {
                scope: WriteScope::Org(org),
                commit: true,
            };
            let open = match self.begin(access) {
                Ok(open) => open,
                Err(e) => return Ok(Err(e.into())),
            };
            *g = Some(Group {
                open,
                kept: 0,
                members: false,
                outcome: Arc::default(),
            });
        }
        let group = g.as_mut().expect("a group is open while its lock is held");
        let ran = catch_unwind(AssertUnwindSafe(|| {
            self.run_write(&mut group.open, !first, keep, f)
        }));
        let (out, kept) = match ran {
            Ok(r) => r,
            Err(panic) => {
                // Undone: its savepoint rolled back, or, when it ran first, the whole
                // transaction (by `settle`). The others' writes still wait for a commit.
                if !first && group.open.undo().is_err() {
                    group.open.conn.broken = true;
                }
                self.settle(writer, &mut g, first);
                return Err(panic);
            }
        };
        let mine = match kept {
            Some(changed) => {
                group.kept += 1;
                group.members |= changed;
                Some(Arc::clone(&group.outcome))
            }
            None => None,
        };
        self.settle(writer, &mut g, first && mine.is_none());
        if let Some(outcome) = mine {
            let g = writer
                .finished
                .wait_while(g, |_| outcome.get().is_none())
                .unwrap_or_else(PoisonError::into_inner);
            drop(g);
            if let Some(Err(e)) = outcome.get() {
                return Ok(Err(StoreError(e.clone()).into()));
            }
        }
        Ok(out)
    }

    /// Runs `f` on the group's transaction, in a savepoint when `nested`; returns its
    /// outcome and, when kept, whether it changed membership. A nested writer's deferred
    /// writes are sent before its outcome is decided, so a write refused there fails it
    /// alone; the first writer's go with the `COMMIT`, or before the next writer runs
    /// ([`PostgresStore::settle`]), and a refusal fails the transaction, which then
    /// holds nothing else. A write not kept is undone: its savepoint rolled back, or
    /// (first in its group) left for `settle` to roll the transaction back.
    fn run_write(
        &self,
        open: &mut Open,
        nested: bool,
        keep: bool,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> (Result<(), DomainError>, Option<bool>) {
        if nested {
            // Sent with the writer's first statement.
            open.unsent.say(SAVEPOINT);
        }
        let before = open.memory.clone();
        let (mut out, members) = open.run(f, self);
        if keep && out.is_ok() {
            if !nested {
                return (out, Some(members));
            }
            match open.flush(self) {
                Ok(()) => return (out, Some(members)),
                Err(e) => out = Err(e.into()),
            }
        }
        // Undone: what it read or counted is forgotten with it, and what it deferred.
        open.memory = before;
        if !nested {
            // First in its group: the whole transaction is rolled back (`settle`).
            open.unsent.writes.clear();
        } else if let Err(e) = open.undo() {
            // The transaction cannot be trusted any more: it fails with its group.
            open.conn.broken = true;
            return (Err(e.into()), None);
        }
        (out, None)
    }

    /// Ends the open group unless another writer is queued to join it (and it has
    /// room, its first write was not undone, and that write's deferred statements were
    /// accepted): commits what it kept, or rolls back a group that kept nothing or
    /// failed; then wakes its writers.
    fn settle(&self, writer: &OrgWriter, g: &mut Option<Group>, undone_first: bool) {
        let Some(group) = g.as_mut() else { return };
        let joined = writer.queued.load(Ordering::Acquire) > 0;
        let sound = !group.open.conn.broken;
        let mut refused = None;
        if joined && sound && !undone_first && group.kept < MAX_GROUP {
            // The next writer runs on what the group wrote: the first writer's deferred
            // writes go now, and a refusal fails the group (the first writer alone).
            match group.open.flush(self) {
                Ok(()) => return,
                Err(e) => refused = Some(e.to_string()),
            }
        }
        let mut group = g.take().expect("checked above");
        let commit = group.kept > 0 && sound && refused.is_none();
        let outcome = group.open.end(self, commit).map_err(|e| e.to_string());
        let outcome =
            match outcome {
                Ok(()) if group.kept > 0 && !commit => Err(refused
                    .unwrap_or_else(|| "the transaction failed before its commit".to_owned())),
                other => other,
            };
        if outcome.is_ok() && group.members {
            // At once for this process; the others hear the trigger's NOTIFY.
            self.members.bump();
        }
        let _ = group.outcome.set(outcome);
        writer.finished.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::store::{Kind, Query, Store, read, rehearse, write};
    use crate::testing::{pg_url, polled};

    /// Writes one event of `org` numbered as `Op::event` numbers it.
    fn append(store: &PostgresStore, org: &str, id: &str) -> Result<u64, DomainError> {
        write(store, WriteScope::Org(org), |tx| {
            let n = tx.next_event_sequence(org)?;
            let doc = json!({"id": id, "created_at": "2026-01-01T00:00:00Z", "sequence": n});
            tx.put(Kind::Event, org, &doc)?;
            Ok(n)
        })
    }

    /// The events of `org`, as (id, sequence), in sequence order.
    fn events(store: &PostgresStore, org: &str) -> Vec<(String, u64)> {
        read(store, |tx| {
            let q = Query {
                sort: ("sequence", crate::store::Order::Asc),
                ..Query::all()
            };
            Ok(tx
                .find(Kind::Event, org, &q)?
                .iter()
                .map(|e| {
                    (
                        e["id"].as_str().unwrap().to_owned(),
                        e["sequence"].as_u64().unwrap(),
                    )
                })
                .collect())
        })
        .unwrap()
    }

    /// Waits (at most a second) until `n` writers of `a` queue behind the one running;
    /// the test goes on either way, and its assertions say what ran.
    fn wait_queued(store: &PostgresStore, n: usize) {
        let _ = polled(50, Duration::from_millis(20), || {
            store.groups.of("a").queued.load(Ordering::Acquire) >= n
        });
    }

    /// While one write of an organization runs, its other writers queue; they then share
    /// its transaction: one commit for them all, each numbered after the ones before it.
    /// A write of the group that fails, one whose deferred write the database refuses,
    /// a rehearsal and a panic are undone alone; the others are committed, and each
    /// writer hears its own outcome.
    #[test]
    fn queued_writers_of_one_organization_share_a_commit_and_fail_alone() {
        let Some(url) = pg_url() else { return };
        let store = Arc::new(PostgresStore::scratch(&url).unwrap());
        let (started, first_runs) = mpsc::channel();
        let (release, go) = mpsc::channel::<()>();
        let (t0, _) = store.round_trips();
        std::thread::scope(|s| {
            let first = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        let n = tx.next_event_sequence("a")?;
                        let doc = json!({"id": "first", "created_at": "2026-01-01", "sequence": n});
                        tx.put(Kind::Event, "a", &doc)?;
                        started.send(()).unwrap();
                        // Bounded: a test that fails must not hang the suite.
                        let _ = go.recv_timeout(Duration::from_secs(30));
                        Ok(n)
                    })
                })
            };
            first_runs.recv().unwrap();
            let kept: Vec<_> = (0..4)
                .map(|i| {
                    let store = Arc::clone(&store);
                    s.spawn(move || append(&store, "a", &format!("kept-{i}")))
                })
                .collect();
            let failed = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        append_in(tx, "a", "failed")?;
                        Err::<(), _>(DomainError::Conflict("refused".into()))
                    })
                })
            };
            let refused = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        // The first writer's number: the unique `(org, sequence)` refuses
                        // it when the put is sent, after the closure returned.
                        let doc =
                            json!({"id": "refused", "created_at": "2026-01-01", "sequence": 1});
                        Ok(tx.put(Kind::Event, "a", &doc)?)
                    })
                })
            };
            let rehearsed = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    rehearse(&*store, WriteScope::Org("a"), |tx| {
                        append_in(tx, "a", "rehearsed")
                    })
                })
            };
            let panicked = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(
                        &*store,
                        WriteScope::Org("a"),
                        |tx| -> Result<(), DomainError> {
                            append_in(tx, "a", "panicked")?;
                            panic!("a write that panics");
                        },
                    )
                })
            };
            // The queued writers reach the group's lock.
            wait_queued(&store, 8);
            release.send(()).unwrap();
            assert_eq!(first.join().unwrap().unwrap(), 1);
            for k in kept {
                assert!(k.join().unwrap().is_ok());
            }
            assert!(failed.join().unwrap().is_err());
            assert!(refused.join().unwrap().is_err(), "a refused write fails");
            assert!(
                rehearsed.join().unwrap().is_ok(),
                "a rehearsal's own outcome"
            );
            assert!(panicked.join().is_err(), "the panic reaches its writer");
        });
        let (t1, _) = store.round_trips();
        assert_eq!(t1 - t0, 1, "one transaction for the group");
        let got = events(&store, "a");
        let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids.len(), 5, "the first and the four kept: {ids:?}");
        assert!(
            ids.iter()
                .all(|id| *id == "first" || id.starts_with("kept-"))
        );
        let numbers: Vec<u64> = got.iter().map(|(_, n)| *n).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5], "numbered without a gap");
        assert!(
            lock(&store.groups.orgs).is_empty(),
            "no organization is kept once its writes are done"
        );
    }

    /// Appends one event inside a write that is already open.
    fn append_in(tx: &mut dyn Tx, org: &str, id: &str) -> Result<(), DomainError> {
        let n = tx.next_event_sequence(org)?;
        let doc = json!({"id": id, "created_at": "2026-01-01", "sequence": n});
        Ok(tx.put(Kind::Event, org, &doc)?)
    }

    /// A lone write costs what it did before grouping (no savepoint: frame, its
    /// statements, commit), and a lone write that fails leaves nothing.
    #[test]
    fn a_lone_write_is_one_transaction_without_a_savepoint() {
        let Some(url) = pg_url() else { return };
        let store = PostgresStore::scratch(&url).unwrap();
        append(&store, "b", "warm").unwrap();
        let ((t0, s0), x0) = (store.round_trips(), store.exchanges());
        assert_eq!(append(&store, "b", "second").unwrap(), 2);
        let ((t1, s1), x1) = (store.round_trips(), store.exchanges());
        assert_eq!((t1 - t0, s1 - s0), (1, 2), "the number read, the event put");
        assert_eq!(
            x1 - x0,
            2,
            "the frame with the number's read, the put with the commit"
        );
        // A put the database refuses (the unique `(org, sequence)`), sent with the
        // commit: the write fails, nothing of it is kept, the session is idle again.
        let refused = write(&store, WriteScope::Org("b"), |tx| {
            let doc = json!({"id": "dup", "created_at": "2026-01-01", "sequence": 1});
            Ok(tx.put(Kind::Event, "b", &doc)?)
        });
        assert!(refused.is_err(), "a refused deferred write fails its write");
        let failed = write(&store, WriteScope::Org("b"), |tx| {
            append_in(tx, "b", "lost")?;
            Err::<(), _>(DomainError::Conflict("refused".into()))
        });
        assert!(failed.is_err());
        let ids: Vec<String> = events(&store, "b").into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["warm", "second"]);
        assert!(store.ping(), "the connection went back to the pool sound");
    }

    /// The first writer's deferred writes go before a queued writer runs (`settle`):
    /// when the database refuses one there, the first writer fails with its
    /// transaction, which held nothing else, and the writers queued behind it run in a
    /// group of their own, numbered on from what was committed.
    #[test]
    fn a_first_writers_refused_write_fails_it_and_not_the_writers_queued_behind() {
        let Some(url) = pg_url() else { return };
        let store = Arc::new(PostgresStore::scratch(&url).unwrap());
        assert_eq!(append(&store, "a", "warm").unwrap(), 1);
        let (started, first_runs) = mpsc::channel();
        let (release, go) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let first = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        // `warm`'s number: refused when the put is sent.
                        let doc = json!({"id": "dup", "created_at": "2026-01-01", "sequence": 1});
                        tx.put(Kind::Event, "a", &doc)?;
                        started.send(()).unwrap();
                        // Bounded: a test that fails must not hang the suite.
                        let _ = go.recv_timeout(Duration::from_secs(30));
                        Ok(())
                    })
                })
            };
            first_runs.recv().unwrap();
            let queued: Vec<_> = (0..2)
                .map(|i| {
                    let store = Arc::clone(&store);
                    s.spawn(move || append(&store, "a", &format!("queued-{i}")))
                })
                .collect();
            // The queued writers reach the group's lock.
            wait_queued(&store, 2);
            release.send(()).unwrap();
            assert!(first.join().unwrap().is_err(), "the refused writer fails");
            let mut numbers: Vec<u64> = queued
                .into_iter()
                .map(|q| q.join().unwrap().unwrap())
                .collect();
            numbers.sort_unstable();
            assert_eq!(numbers, [2, 3], "the queued writers go on");
        });
        let ids: Vec<String> = events(&store, "a").into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids.len(), 3, "{ids:?}");
        assert!(!ids.iter().any(|id| id == "dup"), "{ids:?}");
    }

    /// What a group's transaction has read is shared by its writers, and forgotten with
    /// a writer that is undone: a writer queued after one that changed the organization's
    /// document and failed reads the document as it was, in one statement fewer than a
    /// write of its own would send; a document written by a kept writer is read again.
    #[test]
    fn a_groups_writers_share_what_it_read_but_not_what_was_undone() {
        let Some(url) = pg_url() else { return };
        let store = Arc::new(PostgresStore::scratch(&url).unwrap());
        let org_doc = |name: &str| json!({"id": "a", "created_at": "2026-01-01", "name": name});
        write(&*store, WriteScope::Org("a"), |tx| {
            Ok(tx.put(Kind::Organization, "a", &org_doc("Original"))?)
        })
        .unwrap();
        let name_in = |tx: &mut dyn Tx| -> Result<String, DomainError> {
            let doc = tx.get(Kind::Organization, "a", "a")?.unwrap();
            Ok(doc["name"].as_str().unwrap().to_owned())
        };
        let (first_started, first_runs) = mpsc::channel();
        let (first_go, first_wait) = mpsc::channel::<()>();
        let (undone_started, undone_runs) = mpsc::channel();
        let (undone_go, undone_wait) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let first = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        let name = name_in(tx)?;
                        first_started.send(()).unwrap();
                        let _ = first_wait.recv_timeout(Duration::from_secs(30));
                        Ok(name)
                    })
                })
            };
            first_runs.recv().unwrap();
            let undone = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        tx.put(Kind::Organization, "a", &org_doc("Undone"))?;
                        assert_eq!(name_in(tx)?, "Undone", "its own write, read back");
                        undone_started.send(()).unwrap();
                        let _ = undone_wait.recv_timeout(Duration::from_secs(30));
                        Err::<(), _>(DomainError::Conflict("refused".into()))
                    })
                })
            };
            // The undone writer joins the group first.
            wait_queued(&store, 1);
            first_go.send(()).unwrap();
            undone_runs.recv().unwrap();
            let after = {
                let store = Arc::clone(&store);
                s.spawn(move || {
                    write(&*store, WriteScope::Org("a"), |tx| {
                        let (_, s0) = store.round_trips();
                        let name = name_in(tx)?;
                        let (_, s1) = store.round_trips();
                        Ok((name, s1 - s0))
                    })
                })
            };
            for _ in 0..50 {
                if store.groups.of("a").queued.load(Ordering::Acquire) >= 1 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            undone_go.send(()).unwrap();
            assert_eq!(first.join().unwrap().unwrap(), "Original");
            assert!(undone.join().unwrap().is_err());
            let (name, statements) = after.join().unwrap().unwrap();
            assert_eq!(name, "Original", "the undone write's document is forgotten");
            assert_eq!(statements, 0, "read once for the group");
        });
        let renamed = write(&*store, WriteScope::Org("a"), |tx| {
            tx.put(Kind::Organization, "a", &org_doc("Kept"))?;
            name_in(tx)
        });
        assert_eq!(
            renamed.unwrap(),
            "Kept",
            "a write's own document, read back"
        );
    }
}
