//! The embedded default store: SQLite in WAL mode, one table per [`Kind`].
//!
//! Each table is `(org, id, created_at, doc, <indexed columns>)` with primary key
//! `(org, id)` and an index `(org, column)` per indexed column, so every query is an
//! index range within one organization. One writer connection (`BEGIN IMMEDIATE`, so
//! writers serialize instead of failing on upgrade), a few reader connections (WAL lets
//! them read a snapshot while the writer commits). `synchronous=FULL`: an acknowledged
//! write survives a process kill and a power loss; writers queued together share one
//! commit ([`group`]), so that guarantee does not cost one disk wait per write.

mod group;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::types::{ToSqlOutput, Value as Sql, ValueRef};
use rusqlite::{Connection, OpenFlags};

use super::{
    MemberEpoch, Store, StoreError, Tx, WriteScope,
    sql::{Arg, Cell, Dialect, Driver, SqlTx},
};
use crate::error::DomainError;

/// Versioned migrations; each runs once, in order, inside one transaction. They are
/// frozen as literal SQL: a released migration never changes (a database created
/// yesterday and one created today must end with the same schema), so changing an
/// entity's indexed columns ([`Kind::columns`]) takes a new file here;
/// `the_frozen_schema_has_every_declared_column` fails until it exists.
const MIGRATIONS: &[(u32, &str)] = &[
    // Every entity table with its indexed columns, the idempotency table.
    (1, include_str!("migrations/0001_entities.sql")),
    // Per-organization row counts kept by triggers, so an unfiltered list's total is
    // one lookup instead of a count over every row (SQLite steps through each index
    // entry: ~7 ms for 100,000 charges). `put` is an upsert, so a replaced document is
    // an UPDATE and counts once.
    (2, include_str!("migrations/0002_tallies.sql")),
    // A debtor's oldest open charge is one seek (`ops::aggregates`), not a scan of the
    // debtor's charges.
    (3, include_str!("migrations/0003_charges_by_debtor.sql")),
    // The embedded authorization server's clients, codes, refresh tokens and token
    // families, by kind and id, with an expiry for the sweep.
    (4, include_str!("migrations/0004_oauth_grants.sql")),
    // Membership changes counted by triggers, for the watch connection.
    (5, include_str!("migrations/0005_member_changes.sql")),
    // Providers' message ids to their deliveries, for status callbacks.
    (6, include_str!("migrations/0006_provider_messages.sql")),
    // Money as whole centavos (`ColumnType::Money`).
    (7, include_str!("migrations/0007_money_centavos.sql")),
];

/// SQLite store.
pub struct SqliteStore {
    writer: group::Writer,
    readers: Vec<Mutex<Connection>>,
    next: AtomicUsize,
    /// Membership changes: this process's writes at once, and through [`Watch`] the
    /// commits of any other program writing the file.
    members: MemberEpoch,
    /// A read-only connection of its own that notices other commits (`None` in memory:
    /// no other program can write there).
    watch: Option<Mutex<Watch>>,
}

/// What the watch connection saw last: `PRAGMA data_version` (changes when any other
/// connection commits) and the `member_changes` count (migration 5).
struct Watch {
    conn: Connection,
    data_version: i64,
    changes: i64,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("readers", &self.readers.len())
            .finish_non_exhaustive()
    }
}

/// How much of the database file a reader maps: pages are read from the page cache of
/// the kernel in place, without a `pread` and a copy each (`docs/decisions.md`, "Readers
/// map the database").
const MMAP_BYTES: u64 = 1 << 30;

/// Prepared statements a connection keeps: every list's filters make a statement of their
/// own, and rusqlite's default of 16 had them evict each other.
const STATEMENTS_KEPT: usize = 256;

/// The page size of a new database file, in bytes.
///
/// Every table is `WITHOUT ROWID`: a row lives whole in its primary key's b-tree, and a
/// cell of such a tree keeps at most `(page - 12) * 64 / 255 - 23` bytes on its page
/// before the rest spills to overflow pages (1,002 at SQLite's default of 4,096, 2,030
/// at 8,192). A charge's row is its 1-1.4 KB document and its columns: at 4,096 every
/// charge overflowed, and SQLite, seeking a key among cells that overflow, copies each
/// one it compares whole (overflow pages read) into a buffer first. At 8,192 a page of
/// charges costs 11 % fewer instructions (test `a_charge_row_fits_its_page`;
/// `docs/decisions.md`, "Pages that hold a charge"). Only a new file takes it: an
/// existing database keeps its page size until it is rebuilt (README, "Backups").
const PAGE_BYTES: u32 = 8_192;

/// What every connection of a file store sets: how long it waits on a lock, and where
/// its temporary tables go.
fn configure_any(c: &Connection) -> Result<(), StoreError> {
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    c.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    c.execute_batch("PRAGMA temp_store=MEMORY;")?;
    Ok(())
}

/// The writer: the page size of a new file (before anything creates it), write-ahead
/// log, durable commits.
fn configure(c: &Connection) -> Result<(), StoreError> {
    configure_any(c)?;
    c.execute_batch(&format!("PRAGMA page_size={PAGE_BYTES};"))?;
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;")?;
    Ok(())
}

/// A reader: maps the file.
fn configure_reader(c: &Connection) -> Result<(), StoreError> {
    configure_any(c)?;
    c.execute_batch(&format!("PRAGMA mmap_size={MMAP_BYTES};"))?;
    Ok(())
}

impl SqliteStore {
    /// Opens (creating and migrating when new) the database at `path`.
    pub fn open(path: &Path, readers: usize) -> Result<Self, StoreError> {
        let writer = Connection::open(path)?;
        configure(&writer)?;
        migrate(&writer)?;
        // At least one: the writer's connection may hold an open group (`group`), so
        // a file store never reads on it.
        let readers = readers.max(1);
        let mut rs = Vec::with_capacity(readers);
        for _ in 0..readers {
            let r = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            configure_reader(&r)?;
            rs.push(Mutex::new(r));
        }
        Ok(Self {
            writer: group::Writer::new(writer, true),
            readers: rs,
            next: AtomicUsize::new(0),
            members: MemberEpoch::watched(),
            watch: Some(Mutex::new(Watch {
                conn: Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?,
                data_version: -1,
                changes: -1,
            })),
        })
    }

    /// A private in-memory database (tests, benches): one connection for everything.
    pub fn in_memory() -> Result<Self, StoreError> {
        let c = Connection::open_in_memory()?;
        migrate(&c)?;
        Ok(Self {
            writer: group::Writer::new(c, false),
            readers: Vec::new(),
            next: AtomicUsize::new(0),
            members: MemberEpoch::watched(),
            watch: None,
        })
    }
}

fn migrate(c: &Connection) -> Result<(), StoreError> {
    c.execute_batch("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")?;
    let current: u32 = c.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?;
    for &(version, sql) in MIGRATIONS {
        if version <= current {
            continue;
        }
        c.execute_batch(&format!(
            "BEGIN IMMEDIATE;\n{sql}\nINSERT INTO schema_migrations (version) VALUES ({version});\nCOMMIT;"
        ))?;
    }
    Ok(())
}

fn lock(m: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    // A poisoned lock only means another request panicked mid-transaction; SQLite rolled
    // that transaction back, so the connection is still sound.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Store for SqliteStore {
    fn read(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError> {
        let mut run = |conn: &mut Connection| {
            let tx = ReadTx::begin(conn)?;
            f(&mut SqlTx::new(Lite(tx.0)))
        };
        if self.readers.is_empty() {
            // In memory: the writer's connection, between writes (never grouped there;
            // a file store always has readers, `open`).
            return self.writer.with_conn(run);
        }
        // The first free connection from a rotating start; only when all are busy, wait
        // for one (a request never queues behind a busy connection while another idles).
        let n = self.readers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            match self.readers[(start + k) % n].try_lock() {
                Ok(mut conn) => return run(&mut conn),
                Err(std::sync::TryLockError::Poisoned(e)) => return run(&mut e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        run(&mut lock(&self.readers[start]))
    }

    /// An in-memory store reads on the writer's connection, which a write may hold.
    fn read_may_wait(&self) -> bool {
        !self.readers.iter().any(|r| r.try_lock().is_ok())
    }

    /// One writer for the whole file, whatever the scope: SQLite has no finer lock, and
    /// group commit already shares each fsync among the writers queued behind it.
    fn transact(
        &self,
        _scope: WriteScope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError> {
        self.writer.write(commit, &self.members, |conn| {
            let mut t = SqlTx::new(Lite(conn));
            let out = f(&mut t);
            group::Wrote {
                out,
                members: t.members,
            }
        })
    }

    fn members_epoch(&self) -> Option<u64> {
        self.members.current()
    }

    fn look_for_member_changes(&self) {
        let Some(w) = &self.watch else { return };
        // A connection nobody else uses; WAL readers never wait on the writer.
        let mut w = w.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Watch {
            conn,
            data_version,
            changes,
        } = &mut *w;
        // Prepared once (`query_row` on the text would parse it at every look).
        let number = |sql: &str| {
            conn.prepare_cached(sql)
                .and_then(|mut st| st.query_row([], |r| r.get::<_, i64>(0)))
        };
        // Either unreadable: assume a change (the cache rereads; nothing stale is used).
        match number("PRAGMA data_version") {
            Ok(v) if v == *data_version => {}
            Ok(v) => {
                match number("SELECT n FROM member_changes") {
                    Ok(n) if n == *changes => {}
                    Ok(n) => {
                        *changes = n;
                        self.members.bump();
                    }
                    Err(_) => self.members.bump(),
                }
                *data_version = v;
            }
            Err(_) => self.members.bump(),
        }
    }

    fn ping(&self) -> bool {
        self.writer
            .with_conn(|c| c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0)))
            .is_ok()
    }
}

/// The SQLite driver of the store's one [`SqlTx`]: every statement prepared once per
/// connection (`prepare_cached`), arguments bound without copies.
pub(super) struct Lite<'a>(pub(super) &'a Connection);

/// A read transaction, begun and ended by statements prepared once per connection
/// (rusqlite's `Transaction` parses `BEGIN` and `ROLLBACK` again at every read: 3 % of
/// a `dunning_me`). It ends when dropped, however the read went (an error, a panic), so
/// a pooled connection is never handed out inside a transaction. A read keeps nothing,
/// so it always ends with `ROLLBACK`.
struct ReadTx<'a>(&'a Connection);

impl<'a> ReadTx<'a> {
    fn begin(conn: &'a Connection) -> Result<Self, StoreError> {
        conn.prepare_cached("BEGIN DEFERRED")?.execute([])?;
        Ok(Self(conn))
    }
}

impl Drop for ReadTx<'_> {
    fn drop(&mut self) {
        let ended = self
            .0
            .prepare_cached("ROLLBACK")
            .and_then(|mut st| st.execute([]));
        if ended.is_err() {
            // Never left open: the statement cache itself may be what failed.
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Self::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Self::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            // A tags column holds its JSON text; lists are spelled out as one mark per
            // value on SQLite (`Dialect::in_list`) and never bound whole.
            Self::Json(v) => ToSqlOutput::Owned(Sql::Text(v.to_string())),
            Self::List(..) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "a list argument on SQLite".into(),
                ));
            }
        })
    }
}

fn cell(v: ValueRef<'_>) -> Cell {
    match v {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(n) => Cell::Int(n),
        ValueRef::Real(x) => Cell::Text(x.to_string()),
        // Valid text (all we write) is copied after `from_utf8`'s ASCII fast path; the
        // lossy decoder walks it in chunks and is several times slower.
        ValueRef::Text(t) | ValueRef::Blob(t) => Cell::Text(match std::str::from_utf8(t) {
            Ok(s) => s.to_owned(),
            Err(_) => String::from_utf8_lossy(t).into_owned(),
        }),
    }
}

impl Driver for Lite<'_> {
    const DIALECT: Dialect = Dialect::Sqlite;

    fn rows(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<Vec<Cell>>, StoreError> {
        let mut st = self.0.prepare_cached(sql)?;
        let n = st.column_count();
        let rows = st.query_map(rusqlite::params_from_iter(args), |r| {
            (0..n).map(|i| r.get_ref(i).map(cell)).collect()
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn texts(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<String>, StoreError> {
        let mut st = self.0.prepare_cached(sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let n = self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(args))?;
        Ok(n as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::{page_sql, where_clause};
    use crate::store::{ColumnType, Cond, Kind, Order, Pointed, Query};
    use serde_json::Value;

    /// A database path in a fresh directory of its own (named by the test and the
    /// process), removed with the directory when dropped, a failed assertion included.
    pub(super) struct ScratchFile {
        dir: std::path::PathBuf,
        pub(super) path: std::path::PathBuf,
    }

    impl ScratchFile {
        pub(super) fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("dunning-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a temp dir");
            let path = dir.join("store.db");
            Self { dir, path }
        }
    }

    impl Drop for ScratchFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// An entity's indexed columns ([`Kind::columns`]) must be in the frozen schema with
    /// their type: changing an entity without a new migration fails here, instead of
    /// silently giving new databases a schema old ones never get.
    #[test]
    fn the_frozen_schema_has_every_declared_column() {
        let c = Connection::open_in_memory().expect("in-memory database");
        migrate(&c).expect("the migrations run");
        for kind in Kind::ALL {
            let mut stmt = c
                .prepare(&format!("PRAGMA table_info({})", kind.table()))
                .expect("table_info");
            let have: Vec<(String, String)> = stmt
                .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
                .expect("columns")
                .collect::<Result<_, _>>()
                .expect("rows");
            crate::store::assert_columns_declared(kind, &have, "SQLite", |ty| match ty {
                ColumnType::Text | ColumnType::Tags => "TEXT",
                ColumnType::Integer | ColumnType::Money => "INTEGER",
            });
        }
    }

    /// Migration 7 turns the `REAL` amounts of a database written before it into whole
    /// centavos, from each document, and leaves the documents and the tallies as they were.
    #[test]
    fn money_columns_become_whole_centavos_from_their_documents() {
        let c = Connection::open_in_memory().expect("in-memory database");
        c.execute_batch("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
            .expect("versions");
        for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v < 7) {
            c.execute_batch(&format!(
                "{sql}\nINSERT INTO schema_migrations (version) VALUES ({version});"
            ))
            .expect("an earlier migration");
        }
        let doc = r#"{"id":"c1","created_at":"2026-01-01","amount":150.1}"#;
        c.execute(
            "INSERT INTO charges (org, id, created_at, doc, amount) VALUES ('o', 'c1', '2026-01-01', ?1, 150.1)",
            [doc],
        )
        .expect("a charge of the old schema");
        migrate(&c).expect("migration 7");
        let (amount, ty, stored): (i64, String, String) = c
            .query_row(
                "SELECT amount, typeof(amount), doc FROM charges WHERE id = 'c1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("the charge");
        assert_eq!(
            (amount, ty.as_str(), stored.as_str()),
            (15010, "integer", doc)
        );
        let n: i64 = c
            .query_row(
                "SELECT n FROM tallies WHERE org = 'o' AND tbl = 'charges'",
                [],
                |r| r.get(0),
            )
            .expect("the tally");
        assert_eq!(n, 1, "the tally still counts the charge once");
    }

    /// The plan of a page: an equality on a selective column searches its index (not
    /// the sort column's across the organization); a status filter leaves the planner
    /// free to order by an index.
    #[test]
    fn a_selective_equality_searches_its_own_index() {
        let c = Connection::open_in_memory().expect("in-memory database");
        migrate(&c).expect("the migrations run");
        let plan_of = |kind: Kind, q: Query, pointed: Option<Pointed>| -> String {
            let (clause, args) =
                where_clause(Dialect::Sqlite, kind, "o", &q.conds).expect("clause");
            let sql = page_sql(Dialect::Sqlite, kind, &q, &clause, pointed, None).expect("sql");
            let params = args.list;
            let mut st = c
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .expect("plan");
            st.query_map(rusqlite::params_from_iter(params), |r| {
                r.get::<_, String>(3)
            })
            .expect("rows")
            .map(|r| r.expect("row"))
            .collect::<Vec<_>>()
            .join("; ")
        };
        let plan = |kind: Kind, q: Query| plan_of(kind, q, None);
        for kind in Kind::ALL {
            for col in kind.columns().iter().filter(|c| c.selective) {
                let q = Query::all().with(Cond::Eq(col.name, Value::from("x")));
                let p = plan(kind, q);
                let index = format!("INDEX {}_{} ", kind.table(), col.name);
                assert!(p.contains(&index), "{}.{}: {p}", kind.table(), col.name);
            }
        }
        // A status leaves the planner free to order by an index.
        let active = Query::all().with(Cond::Eq("status", Value::from("active")));
        let (clause, _) =
            where_clause(Dialect::Sqlite, Kind::Debtor, "o", &active.conds).expect("clause");
        let sql =
            page_sql(Dialect::Sqlite, Kind::Debtor, &active, &clause, None, None).expect("sql");
        assert!(!sql.contains("INDEXED BY"), "{sql}");
        // The overdue page with its debtors' names: the page's ids from the index alone
        // (an offset skips index entries, never documents), then each row's charge and
        // debtor by primary key.
        let overdue = Query {
            conds: vec![Cond::In("status", vec![Value::from("overdue")])],
            sort: ("due_date", Order::Asc),
            limit: Some(10),
            offset: 10_000,
        };
        let names = Pointed {
            kind: Kind::Debtor,
            via: "debtor_id",
            column: "name",
        };
        let p = plan_of(Kind::Charge, overdue, Some(names));
        for step in [
            "SEARCH charges USING COVERING INDEX charges_status_due",
            "SEARCH charges USING PRIMARY KEY",
            "SEARCH pointed USING PRIMARY KEY",
        ] {
            assert!(p.contains(step), "{step}: {p}");
        }
    }

    /// A read takes a free reader connection, never waiting behind a busy one while
    /// another idles: reads nested in a read (the outer one holding a connection) each
    /// find the free one. Queuing on the rotation's pick would deadlock here.
    #[test]
    fn a_read_never_waits_behind_a_busy_connection_while_another_idles() {
        let file = ScratchFile::new("readers");
        let store = std::sync::Arc::new(SqliteStore::open(&file.path, 2).expect("store"));
        let (done, finished) = std::sync::mpsc::channel();
        let s = store.clone();
        std::thread::spawn(move || {
            let out = s.read(&mut |_outer| {
                for _ in 0..4 {
                    s.read(&mut |_inner| Ok(()))?;
                }
                Ok(())
            });
            let _ = done.send(out.is_ok());
        });
        let ok = finished.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(ok, Ok(true), "the nested reads found the idle connection");
    }

    /// A read may wait exactly when every reader connection is taken: the hint the
    /// core uses to run a read-only tool where its request is. The in-memory store
    /// reads on the writer's connection and always may.
    #[test]
    fn a_read_may_wait_only_when_every_reader_is_taken() {
        let file = ScratchFile::new("read-may-wait");
        let store = SqliteStore::open(&file.path, 2).expect("store");
        assert!(!store.read_may_wait(), "idle readers");
        store
            .read(&mut |_one| {
                assert!(!store.read_may_wait(), "one of two taken");
                store.read(&mut |_both| {
                    assert!(store.read_may_wait(), "both taken");
                    Ok(())
                })
            })
            .expect("reads");
        assert!(!store.read_may_wait(), "released");
        assert!(SqliteStore::in_memory().expect("memory").read_may_wait());
    }

    /// A read that fails or panics ends its transaction: the connection goes back to
    /// the pool outside any, and the next read on it sees what was written since.
    #[test]
    fn a_read_that_fails_or_panics_leaves_its_connection_outside_a_transaction() {
        let file = ScratchFile::new("read-ends");
        let store = SqliteStore::open(&file.path, 1).expect("store");
        let outside = |store: &SqliteStore| lock(&store.readers[0]).is_autocommit();
        let failed = store.read(&mut |_tx| Err(DomainError::not_found("thing", "x")));
        assert!(failed.is_err());
        assert!(outside(&store));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = store.read(&mut |tx| {
                tx.count(Kind::Debtor, "org", &[])?;
                panic!("a bug inside a read")
            });
        }));
        assert!(panicked.is_err());
        assert!(outside(&store), "the panic's unwinding rolled back");
        // A read left inside its snapshot would not see this.
        crate::store::write(&store, WriteScope::Org("org"), |tx| {
            let doc = serde_json::json!({"id": "d1", "created_at": "2026-01-01"});
            Ok(tx.put(Kind::Debtor, "org", &doc)?)
        })
        .expect("a write");
        let mut n = 0;
        store
            .read(&mut |tx| {
                n = tx.count(Kind::Debtor, "org", &[])?;
                Ok(())
            })
            .expect("the connection serves the next read");
        assert_eq!(n, 1, "the next read sees what was written since");
        assert!(outside(&store));
    }

    /// Every reader connection of a file store maps the database file; the writer does
    /// not (`configure_reader`).
    #[test]
    fn readers_map_the_database_file() {
        let file = ScratchFile::new("readers-map");
        let store = SqliteStore::open(&file.path, 2).expect("store");
        for r in &store.readers {
            let mapped: i64 = lock(r)
                .query_row("PRAGMA mmap_size", [], |row| row.get(0))
                .expect("mmap_size");
            assert_eq!(u64::try_from(mapped).ok(), Some(MMAP_BYTES));
        }
        let writer: i64 = store
            .writer
            .with_conn(|c| c.query_row("PRAGMA mmap_size", [], |row| row.get(0)))
            .expect("writer's mmap_size");
        assert_eq!(writer, 0, "the writer reads through pread");
    }

    /// Overflow pages of the demo's charges and debtors in the store at `path`, from
    /// SQLite's `dbstat` table (a `WITHOUT ROWID` row that does not fit its page spills).
    fn overflow_pages(path: &Path) -> i64 {
        Connection::open(path)
            .expect("a connection")
            .query_row(
                "SELECT COUNT(*) FROM dbstat WHERE name IN ('charges', 'debtors') AND pagetype = 'overflow'",
                [],
                |r| r.get(0),
            )
            .expect("dbstat")
    }

    /// A new file store has [`PAGE_BYTES`] pages, and every row of the demo's charges
    /// and debtors lies whole on its page; at SQLite's default page size the charges
    /// spill (so seeking a charge copies each row it compares, `PAGE_BYTES`).
    #[test]
    fn a_charge_row_fits_its_page() {
        let file = ScratchFile::new("page-size");
        let store = std::sync::Arc::new(SqliteStore::open(&file.path, 1).expect("store"));
        crate::demo::seed(&crate::Domain::new(store.clone()), crate::testing::T0).expect("demo");
        let size: u32 = store
            .writer
            .with_conn(|c| c.query_row("PRAGMA page_size", [], |r| r.get(0)))
            .expect("page_size");
        assert_eq!(size, PAGE_BYTES);
        assert_eq!(overflow_pages(&file.path), 0, "rows that spill at {size}");
        drop(store);
        // The same rows at the default size spill: the size is what keeps them whole.
        let c = Connection::open(&file.path).expect("a connection");
        c.execute_batch("PRAGMA journal_mode=DELETE; PRAGMA page_size=4096; VACUUM;")
            .expect("rebuilt at 4 KB");
        drop(c);
        assert!(overflow_pages(&file.path) > 0, "the charges spill at 4 KB");
    }

    /// A database created with other pages keeps them, and opens and migrates as before:
    /// only a rebuild changes a file's page size (README, "Page size").
    #[test]
    fn an_existing_files_page_size_is_kept() {
        let file = ScratchFile::new("page-kept");
        Connection::open(&file.path)
            .expect("a connection")
            .execute_batch(
                "PRAGMA page_size=4096; CREATE TABLE kept (x); INSERT INTO kept VALUES (1);",
            )
            .expect("an older file");
        let store = SqliteStore::open(&file.path, 1).expect("store");
        let (size, kept): (u32, i64) = store
            .writer
            .with_conn(|c| {
                Ok::<_, rusqlite::Error>((
                    c.query_row("PRAGMA page_size", [], |r| r.get(0))?,
                    c.query_row("SELECT COUNT(*) FROM kept", [], |r| r.get(0))?,
                ))
            })
            .expect("read back");
        assert_eq!((size, kept), (4096, 1));
        crate::store::write(&store, WriteScope::Org("org"), |tx| {
            let doc = serde_json::json!({"id": "d1", "created_at": "2026-01-01"});
            Ok(tx.put(Kind::Debtor, "org", &doc)?)
        })
        .expect("the migrated file takes writes");
    }

    /// The migrations are applied once: opening a migrated database again changes nothing.
    #[test]
    fn migrations_run_once() {
        let c = Connection::open_in_memory().expect("in-memory database");
        migrate(&c).expect("first run");
        migrate(&c).expect("second run is a no-op");
        let n: u32 = c
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .expect("count");
        assert_eq!(n as usize, MIGRATIONS.len());
    }

    /// Another program's commit to a member moves this store's epoch when the store
    /// looks ([`Store::look_for_member_changes`]), not before; its own write at once;
    /// other kinds never.
    #[test]
    fn another_programs_member_write_is_seen_at_the_next_look() {
        use crate::store::write;
        use serde_json::json;
        let file = ScratchFile::new("watch");
        let a = SqliteStore::open(&file.path, 1).expect("a");
        let b = SqliteStore::open(&file.path, 1).expect("b");
        a.look_for_member_changes();
        let before = a.members_epoch().expect("SQLite always tells");
        let doc = json!({"id": "m1", "created_at": "2026-01-01T00:00:00Z", "email": "x@y.z", "role": "viewer"});
        let own = b.members_epoch();
        write(&b, WriteScope::All, |tx| {
            Ok(tx.put(Kind::Member, "org1", &doc)?)
        })
        .expect("b writes");
        assert_ne!(
            b.members_epoch(),
            own,
            "the writer's own epoch moves at once"
        );
        assert_eq!(a.members_epoch(), Some(before), "not seen before a look");
        a.look_for_member_changes();
        let seen = a.members_epoch();
        assert_ne!(seen, Some(before), "seen at the look");
        a.look_for_member_changes();
        assert_eq!(a.members_epoch(), seen, "nothing new: unchanged");
        let debtor = json!({"id": "d1", "created_at": "2026-01-01T00:00:00Z", "name": "D"});
        write(&b, WriteScope::All, |tx| {
            Ok(tx.put(Kind::Debtor, "org1", &debtor)?)
        })
        .expect("b writes");
        a.look_for_member_changes();
        assert_eq!(a.members_epoch(), seen, "a debtor is not membership");
    }
}
