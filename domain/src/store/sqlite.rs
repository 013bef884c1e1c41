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

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::{
    ColumnType, Cond, Kind, MemberEpoch, Order, Query, Remembered, Store, StoreError, Tx,
    changes_membership, identity, like_escape, parse_doc, upsert_sql,
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
    // families (issue 14), by kind and id, with an expiry for the sweep.
    (4, include_str!("migrations/0004_oauth_grants.sql")),
    // Membership changes counted by triggers, for the watch connection (issue 13).
    (5, include_str!("migrations/0005_member_changes.sql")),
    // Providers' message ids to their deliveries, for status callbacks.
    (6, include_str!("migrations/0006_provider_messages.sql")),
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

fn configure(c: &Connection) -> Result<(), StoreError> {
    c.busy_timeout(std::time::Duration::from_secs(10))?;
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY;",
    )?;
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
            r.busy_timeout(std::time::Duration::from_secs(10))?;
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
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Deferred)
                .map_err(StoreError::from)?;
            f(&mut SqlTx {
                conn: &tx,
                members: false,
            })
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

    fn transact(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError> {
        self.writer.write(commit, &self.members, |conn| {
            let mut t = SqlTx {
                conn,
                members: false,
            };
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

struct SqlTx<'a> {
    conn: &'a Connection,
    /// A member or an organization was written ([`MemberEpoch`]).
    members: bool,
}

fn to_sql(v: &Value, ty: ColumnType) -> Sql {
    match (v, ty) {
        (Value::Null, _) => Sql::Null,
        (Value::Bool(b), _) => Sql::Integer(i64::from(*b)),
        (Value::Number(n), ColumnType::Integer) => Sql::Integer(n.as_i64().unwrap_or_default()),
        (Value::Number(n), _) => Sql::Real(n.as_f64().unwrap_or_default()),
        (Value::String(s), _) => Sql::Text(s.clone()),
        (other, _) => Sql::Text(other.to_string()),
    }
}

fn cond_value(kind: Kind, col: &str, v: &Value) -> Sql {
    let ty = kind
        .columns()
        .iter()
        .find(|c| c.name == col)
        .map_or(ColumnType::Text, |c| c.ty);
    to_sql(v, ty)
}

/// The SQL of one page of `q` (`clause` from [`where_clause`]; its arguments, then
/// the organization once more).
fn page_sql(kind: Kind, q: &Query, clause: &str) -> Result<String, StoreError> {
    kind.check_column(q.sort.0)?;
    let dir = match q.sort.1 {
        Order::Asc => "ASC",
        Order::Desc => "DESC",
    };
    let limit = q.limit.map_or(-1, i64::from);
    let (t, col) = (kind.table(), q.sort.0);
    // An equality on a selective column (a document number, a parent's id) leaves a
    // few rows: search them by that column's index (`<table>_<column>`, migration 1)
    // and sort them. Without statistics (no ANALYZE) the planner takes `org = ?` for as
    // selective as that and walks the whole organization in key or sort order instead,
    // filtering: a debtor's creation checked the document number against every debtor
    // (issue 13).
    let narrowing = q.conds.iter().find_map(|c| match c {
        Cond::Eq(c, _) | Cond::In(c, _) if kind.is_selective(c) => Some(*c),
        _ => None,
    });
    let from = match narrowing {
        Some(c) => format!("{t} INDEXED BY {t}_{c}"),
        None => t.to_owned(),
    };
    // A deferred join: the page's ids come from an index alone (skipping `offset`
    // entries costs index steps, not document reads), then only those documents are
    // read, by primary key (CROSS JOIN keeps the page as the outer loop). Without it,
    // `OFFSET 50000` reads and discards 50,000 documents.
    Ok(format!(
        "SELECT {t}.doc FROM \
         (SELECT id AS page_id, {col} AS page_key FROM {from}{clause} \
          ORDER BY {col} {dir}, id {dir} LIMIT {limit} OFFSET {off}) AS page \
         CROSS JOIN {t} WHERE {t}.org = ? AND {t}.id = page.page_id \
         ORDER BY page.page_key {dir}, page.page_id {dir}",
        off = q.offset
    ))
}

/// `WHERE` clause and its parameters (the org is always the first).
fn where_clause(kind: Kind, org: &str, conds: &[Cond]) -> Result<(String, Vec<Sql>), StoreError> {
    let mut sql = String::from(" WHERE org = ?");
    let mut args = vec![Sql::Text(org.to_owned())];
    for c in conds {
        match c {
            Cond::Eq(col, v) | Cond::Ge(col, v) | Cond::Le(col, v) => {
                kind.check_column(col)?;
                let op = match c {
                    Cond::Eq(..) => "=",
                    Cond::Ge(..) => ">=",
                    _ => "<=",
                };
                sql.push_str(&format!(" AND {col} {op} ?"));
                args.push(cond_value(kind, col, v));
            }
            Cond::In(col, vs) => {
                kind.check_column(col)?;
                if vs.is_empty() {
                    sql.push_str(" AND 0");
                    continue;
                }
                let marks = vec!["?"; vs.len()].join(",");
                sql.push_str(&format!(" AND {col} IN ({marks})"));
                args.extend(vs.iter().map(|v| cond_value(kind, col, v)));
            }
            Cond::Null(col, is_null) => {
                kind.check_column(col)?;
                let not = if *is_null { "" } else { " NOT" };
                sql.push_str(&format!(" AND {col} IS{not} NULL"));
            }
            Cond::Search(cols, needle) => {
                let mut ors = Vec::new();
                for col in cols {
                    kind.check_column(col)?;
                    ors.push(format!("{col} LIKE ? ESCAPE '\\'"));
                    args.push(Sql::Text(format!("%{}%", like_escape(needle))));
                }
                sql.push_str(&format!(" AND ({})", ors.join(" OR ")));
            }
            Cond::Tag(col, tag) => {
                kind.check_column(col)?;
                sql.push_str(&format!(" AND {col} LIKE ? ESCAPE '\\'"));
                let quoted = Value::String(tag.clone()).to_string();
                args.push(Sql::Text(format!("%{}%", like_escape(&quoted))));
            }
        }
    }
    Ok((sql, args))
}

impl Tx for SqlTx<'_> {
    fn get(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let sql = format!("SELECT doc FROM {} WHERE org = ? AND id = ?", kind.table());
        let doc: Option<String> = self
            .conn
            .prepare_cached(&sql)?
            .query_row(params![org, id], |r| r.get(0))
            .optional()?;
        doc.map(parse_doc).transpose()
    }

    fn put(&mut self, kind: Kind, org: &str, doc: &Value) -> Result<(), StoreError> {
        self.members |= changes_membership(kind);
        let (id, created) = identity(doc)?;
        let cols = kind.columns();
        let sql = upsert_sql(kind, |_| "?".to_owned(), "?");
        let mut args: Vec<Sql> = vec![
            Sql::Text(org.to_owned()),
            Sql::Text(id.to_owned()),
            Sql::Text(created.to_owned()),
            Sql::Text(doc.to_string()),
        ];
        for c in cols {
            args.push(to_sql(doc.get(c.name).unwrap_or(&Value::Null), c.ty));
        }
        self.conn
            .prepare_cached(&sql)?
            .execute(rusqlite::params_from_iter(args))?;
        Ok(())
    }

    fn delete(&mut self, kind: Kind, org: &str, id: &str) -> Result<bool, StoreError> {
        self.members |= changes_membership(kind);
        let sql = format!("DELETE FROM {} WHERE org = ? AND id = ?", kind.table());
        Ok(self.conn.prepare_cached(&sql)?.execute(params![org, id])? > 0)
    }

    fn find_raw(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<String>, StoreError> {
        let (clause, args) = where_clause(kind, org, &q.conds)?;
        let sql = page_sql(kind, q, &clause)?;
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let params = args
            .into_iter()
            .chain(std::iter::once(Sql::Text(org.to_owned())));
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(0)
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        Ok(out)
    }

    fn count(&mut self, kind: Kind, org: &str, conds: &[Cond]) -> Result<u64, StoreError> {
        let (clause, args) = where_clause(kind, org, conds)?;
        let t = kind.table();
        if conds.is_empty() {
            let n: Option<i64> = self
                .conn
                .prepare_cached("SELECT n FROM tallies WHERE org = ? AND tbl = ?")?
                .query_row(params![org, t], |r| r.get(0))
                .optional()?;
            return Ok(u64::try_from(n.unwrap_or(0)).unwrap_or_default());
        }
        let sql = format!("SELECT COUNT(*) FROM {t}{clause}");
        let n: i64 = self
            .conn
            .prepare_cached(&sql)?
            .query_row(rusqlite::params_from_iter(args), |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or_default())
    }

    fn organizations(&mut self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM organizations ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn recall(&mut self, org: &str, key: &str) -> Result<Option<Remembered>, StoreError> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT tool, digest, result, at_ms FROM idempotency WHERE org = ? AND key = ?",
            )?
            .query_row(params![org, key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .optional()?;
        row.map(|(tool, digest, result, at)| {
            Ok(Remembered {
                tool,
                digest,
                result: parse_doc(result)?,
                at_ms: u64::try_from(at).unwrap_or_default(),
            })
        })
        .transpose()
    }

    fn rewrite_remembered(
        &mut self,
        org: &str,
        key: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE idempotency SET result = ? WHERE org = ? AND key = ?")?
            .execute(params![result.to_string(), org, key])?;
        Ok(())
    }

    fn remember(&mut self, org: &str, key: &str, r: &Remembered) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO idempotency (org, key, tool, digest, result, at_ms) VALUES (?, ?, ?, ?, ?, ?)",
            )?
            .execute(params![
                org,
                key,
                r.tool,
                r.digest,
                r.result.to_string(),
                i64::try_from(r.at_ms).unwrap_or(i64::MAX)
            ])?;
        Ok(())
    }

    fn forget_before(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM idempotency WHERE at_ms < ?")?
            .execute(params![i64::try_from(before_ms).unwrap_or(i64::MAX)])?;
        Ok(n as u64)
    }

    fn grant_get(&mut self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let doc: Option<String> = self
            .conn
            .prepare_cached("SELECT doc FROM oauth_grants WHERE kind = ? AND id = ?")?
            .query_row(params![kind, id], |r| r.get(0))
            .optional()?;
        doc.map(parse_doc).transpose()
    }

    fn grant_put(
        &mut self,
        kind: &str,
        id: &str,
        doc: &Value,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO oauth_grants (kind, id, doc, expires_ms) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc, expires_ms = excluded.expires_ms",
            )?
            .execute(params![
                kind,
                id,
                doc.to_string(),
                expires_ms.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
            ])?;
        Ok(())
    }

    fn grant_rewrite(&mut self, kind: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached("UPDATE oauth_grants SET doc = ? WHERE kind = ? AND id = ?")?
            .execute(params![doc.to_string(), kind, id])?;
        Ok(n > 0)
    }

    fn grant_sweep(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM oauth_grants WHERE expires_ms < ?")?
            .execute(params![i64::try_from(before_ms).unwrap_or(i64::MAX)])?;
        Ok(n as u64)
    }

    fn link_message(
        &mut self,
        channel: &str,
        message_id: &str,
        org: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO provider_messages (channel, message_id, org, delivery_id) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (channel, message_id) DO UPDATE SET org = excluded.org, delivery_id = excluded.delivery_id",
            )?
            .execute(params![channel, message_id, org, delivery_id])?;
        Ok(())
    }

    fn message_owner(
        &mut self,
        channel: &str,
        message_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT org, delivery_id FROM provider_messages WHERE channel = ? AND message_id = ?",
            )?
            .query_row(params![channel, message_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(!have.is_empty(), "table {} exists", kind.table());
            for col in kind.columns() {
                let ty = match col.ty {
                    ColumnType::Text | ColumnType::Tags => "TEXT",
                    ColumnType::Real => "REAL",
                    ColumnType::Integer => "INTEGER",
                };
                assert!(
                    have.iter().any(|(n, t)| n == col.name && t == ty),
                    "{}.{} {ty} is declared but no migration creates it",
                    kind.table(),
                    col.name
                );
            }
            // The reverse: a column the schema has but the entity no longer indexes is
            // a migration that was forgotten too.
            for (name, _) in &have {
                let fixed = ["org", "id", "created_at", "doc"].contains(&name.as_str());
                assert!(
                    fixed || kind.columns().iter().any(|c| c.name == name),
                    "{}.{name} is in the schema but not declared",
                    kind.table()
                );
            }
        }
    }

    /// The plan of a page: an equality on a selective column searches its index (not
    /// the sort column's across the organization); a status filter leaves the planner
    /// free to order by an index.
    #[test]
    fn a_selective_equality_searches_its_own_index() {
        let c = Connection::open_in_memory().expect("in-memory database");
        migrate(&c).expect("the migrations run");
        let plan = |kind: Kind, q: Query| -> String {
            let (clause, args) = where_clause(kind, "o", &q.conds).expect("clause");
            let sql = page_sql(kind, &q, &clause).expect("sql");
            let params = args
                .into_iter()
                .chain(std::iter::once(Sql::Text("o".into())));
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
        let (clause, _) = where_clause(Kind::Debtor, "o", &active.conds).expect("clause");
        let sql = page_sql(Kind::Debtor, &active, &clause).expect("sql");
        assert!(!sql.contains("INDEXED BY"), "{sql}");
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
        write(&b, |tx| Ok(tx.put(Kind::Member, "org1", &doc)?)).expect("b writes");
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
        write(&b, |tx| Ok(tx.put(Kind::Debtor, "org1", &debtor)?)).expect("b writes");
        a.look_for_member_changes();
        assert_eq!(a.members_epoch(), seen, "a debtor is not membership");
    }
}
