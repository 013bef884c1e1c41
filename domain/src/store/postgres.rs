//! The PostgreSQL store: the same tables as SQLite (one per [`Kind`], `(org, id,
//! created_at, doc, <indexed columns>)`), behind the same [`Store`]/[`Tx`], on the
//! blocking `postgres` driver and an `r2d2` pool (the `Store` trait is synchronous).
//!
//! Semantics, as on SQLite:
//!
//! - `read` is a consistent snapshot: `REPEATABLE READ READ ONLY`.
//! - `write` and `rehearse` run one at a time: every one takes a transaction-level
//!   advisory lock (one key per database schema) before anything else, so writers
//!   serialize exactly as behind SQLite's one writer connection. The domain relies on
//!   that: an event's `sequence` is `max + 1` (`Op::event`), the debtor's
//!   aggregates are read-modify-write deltas (`ops::aggregates`), outbox claims are
//!   read-then-write. The transaction is `READ COMMITTED`, so each statement sees every
//!   writer that committed before the lock was granted (a `REPEATABLE READ` snapshot
//!   would be taken by the lock's own statement, before the wait). With no concurrent
//!   writer, that is serializable. Unique constraints back it where a race would
//!   corrupt: idempotency keys (primary key, first write wins) and events'
//!   `(org, sequence)`.
//! - `write` commits on `Ok` and rolls back otherwise; `rehearse` always rolls back.
//!
//! Migrations are literal SQL under `migrations/postgres/`, numbered like SQLite's (the
//! same version is the same schema), applied at open in one transaction under another
//! advisory lock (two processes starting at once migrate once) and recorded in
//! `schema_migrations`. A database whose version is newer than this binary knows is
//! refused.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Config, IsolationLevel, NoTls, Statement, Transaction};
use serde_json::Value;

use super::{
    ColumnType, Cond, Kind, MemberEpoch, Order, Query, Remembered, Store, StoreError, Tx,
    changes_membership, identity, like_escape, parse_doc, upsert_sql,
};
use crate::error::DomainError;

/// Versioned migrations, frozen like SQLite's (`sqlite::MIGRATIONS`): a released one
/// never changes, a change of [`Kind::columns`] takes a new file here and there
/// (`the_frozen_schema_has_every_declared_column` fails on both stores until then).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/postgres/0001_entities.sql")),
    (2, include_str!("migrations/postgres/0002_tallies.sql")),
    (
        3,
        include_str!("migrations/postgres/0003_charges_by_debtor.sql"),
    ),
    (4, include_str!("migrations/postgres/0004_oauth_grants.sql")),
    (
        5,
        include_str!("migrations/postgres/0005_members_notify.sql"),
    ),
    (
        6,
        include_str!("migrations/postgres/0006_provider_messages.sql"),
    ),
];

/// The schema version this binary knows.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Prepared statements kept per connection; past this many the cache is emptied (the
/// query shapes are finite, this only bounds a surprise).
const STATEMENTS_KEPT: usize = 512;

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => Self(format!("postgres: {}: {}", db.code().code(), db.message())),
            None => Self(format!("postgres: {e}")),
        }
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(e: r2d2::Error) -> Self {
        Self(format!("postgres pool: {e}"))
    }
}

/// One pooled connection and its prepared statements.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// Opens connections for the pool (`r2d2_postgres` hands out a bare `Client`, with no
/// room for a statement cache; this is the same twenty lines with one).
struct Manager {
    config: Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
    }
}

/// PostgreSQL store.
pub struct PostgresStore {
    pool: r2d2::Pool<Manager>,
    /// Round trips so far (issue 12 asks them counted and kept minimal).
    trips: RoundTrips,
    /// `SELECT pg_advisory_xact_lock(<key>)`: the writers' lock of this schema.
    write_lock: String,
    /// A schema of its own to drop with the store (tests).
    scratch: Option<String>,
    /// Membership changes: this process's writes, and the others' as notified
    /// ([`members`]; the listener starts at the first question).
    members: Arc<MemberEpoch>,
    listening: Once,
    /// What the listener connects with.
    config: Config,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("connections", &self.pool.max_size())
            .field("scratch", &self.scratch)
            .finish_non_exhaustive()
    }
}

fn parse_url(url: &str) -> Result<Config, StoreError> {
    url.parse::<Config>()
        .map_err(|e| StoreError(format!("postgres: bad URL: {e}")))
}

/// A name safe to splice into SQL as an identifier.
fn check_ident(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError(format!(
            "postgres: schema name {name:?} is not a plain identifier"
        )))
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`), migrating the database when
    /// behind, with a pool of at most `connections`.
    pub fn open(url: &str, connections: u32) -> Result<Self, StoreError> {
        Self::with_config(parse_url(url)?, connections, None)
    }

    /// Like [`PostgresStore::open`], with every table in `schema` (which must exist):
    /// several stores in one database.
    pub fn open_in_schema(url: &str, schema: &str, connections: u32) -> Result<Self, StoreError> {
        check_ident(schema)?;
        let mut config = parse_url(url)?;
        config.options(&format!("-c search_path={schema}"));
        Self::with_config(config, connections, None)
    }

    /// A fresh schema of its own in the database at `url`, named by the database
    /// (`t_` and a random UUID), migrated, and dropped when the store is: every test
    /// its own store, as `SqliteStore::in_memory` gives on SQLite.
    pub fn scratch(url: &str) -> Result<Self, StoreError> {
        // Nothing of a scratch store outlives the test: no commit waits for the disk.
        let fast = "-c synchronous_commit=off";
        let mut admin = parse_url(url)?.options(fast).connect(NoTls)?;
        let row = admin.query_one(
            "SELECT 't_' || replace(gen_random_uuid()::text, '-', '')",
            &[],
        )?;
        let schema: String = row.get(0);
        admin.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
        let mut config = parse_url(url)?;
        config.options(&format!("-c search_path={schema} {fast}"));
        match Self::with_config(config, 4, Some(schema.clone())) {
            Ok(s) => Ok(s),
            Err(e) => {
                let _ = admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
                Err(e)
            }
        }
    }

    fn with_config(
        config: Config,
        connections: u32,
        scratch: Option<String>,
    ) -> Result<Self, StoreError> {
        // The first connection migrates and fails fast when the server is not there;
        // the pool opens the others on demand.
        let mut first = config.connect(NoTls)?;
        migrate(&mut first)?;
        let key: i64 = first
            .query_one(
                "SELECT hashtextextended('dunning-write:' || current_schema(), 0)",
                &[],
            )?
            .get(0);
        let pool = r2d2::Pool::builder()
            .max_size(connections.max(1))
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(10))
            .build_unchecked(Manager {
                config: config.clone(),
            });
        Ok(Self {
            pool,
            trips: RoundTrips::default(),
            write_lock: format!("SELECT pg_advisory_xact_lock({key})"),
            scratch,
            members: Arc::default(),
            listening: Once::new(),
            config,
        })
    }

    /// Runs `f` while holding a session-level advisory lock of this schema, on a
    /// connection of its own: what processes starting together must do once (seeding
    /// the demo data when the database has no organization) is done by the first, and
    /// the others find it done. `f` uses the store as usual (other connections).
    pub fn exclusively<R>(&self, f: impl FnOnce() -> R) -> Result<R, StoreError> {
        let mut conn = self.conn()?;
        conn.client.batch_execute(
            "SELECT pg_advisory_lock(hashtextextended('dunning-init:' || current_schema(), 0))",
        )?;
        let out = f();
        conn.client.batch_execute(
            "SELECT pg_advisory_unlock(hashtextextended('dunning-init:' || current_schema(), 0))",
        )?;
        Ok(out)
    }

    /// The scratch schema this store drops when dropped ([`PostgresStore::scratch`]).
    pub fn scratch_schema(&self) -> Option<&str> {
        self.scratch.as_deref()
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        Ok(self.pool.get()?)
    }

    /// Runs `f` in one transaction, counted in [`PostgresStore::round_trips`]. A read is
    /// a read-only snapshot (repeatable read) and always commits; a write takes the
    /// writers' lock first (the domain assumes one writer: `max + 1` sequences, checks
    /// then inserts) and commits only when `f` succeeded and `commit` says so.
    fn in_transaction(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        access: Access,
    ) -> Result<(), DomainError> {
        let mut conn = self.conn()?;
        let Conn { client, statements } = &mut *conn;
        let builder = client.build_transaction();
        let builder = match access {
            Access::Read => builder
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true),
            Access::Write { .. } => builder.isolation_level(IsolationLevel::ReadCommitted),
        };
        let mut tx = builder.start().map_err(StoreError::from)?;
        if let Access::Write { .. } = access {
            tx.batch_execute(&self.write_lock)
                .map_err(StoreError::from)?;
        }
        self.trips.transactions.fetch_add(1, Ordering::Relaxed);
        let mut t = PgTx {
            tx: &mut tx,
            statements,
            trips: &self.trips,
            members: false,
        };
        let out = f(&mut t);
        let members = t.members;
        match access {
            Access::Write { commit } if !(commit && out.is_ok()) => {
                tx.rollback().map_err(StoreError::from)?
            }
            Access::Write { .. } => {
                tx.commit().map_err(StoreError::from)?;
                if members {
                    // At once for this process; the others hear the trigger's NOTIFY.
                    self.members.bump();
                }
            }
            Access::Read => tx.commit().map_err(StoreError::from)?,
        }
        out
    }
}

/// What a transaction may do.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write { commit: bool },
}

impl Drop for PostgresStore {
    /// Drops a scratch store's schema on a connection of its own, not one of the pool's:
    /// the pool may be exhausted or its connections broken, and a schema left behind
    /// fails CI's sweep. A failure is said on stderr (scratch stores are the tests').
    fn drop(&mut self) {
        let Some(schema) = &self.scratch else { return };
        let drop_it = || -> Result<(), postgres::Error> {
            let mut admin = self.config.connect(NoTls)?;
            admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        };
        if let Err(e) = drop_it() {
            eprintln!("scratch schema {schema} not dropped: {e:?}");
        }
    }
}

/// Applies the pending migrations in one transaction, under an advisory lock of the
/// schema: a second process starting at the same moment waits, then finds them done.
fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('dunning-migrate:' || current_schema(), 0));
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )?
        .get(0);
    if current > SCHEMA_VERSION {
        return Err(StoreError(format!(
            "postgres: the database's schema is at version {current}, newer than this binary \
             knows ({SCHEMA_VERSION}): run the newer binary (or a backup made for this one)"
        )));
    }
    for &(version, sql) in MIGRATIONS {
        if version <= current {
            continue;
        }
        tx.batch_execute(sql)
            .map_err(|e| StoreError(format!("migration {version}: {}", StoreError::from(e))))?;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&version],
        )?;
    }
    tx.commit()?;
    Ok(())
}

impl Store for PostgresStore {
    fn read(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError> {
        self.in_transaction(f, Access::Read)
    }

    fn transact(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError> {
        self.in_transaction(f, Access::Write { commit })
    }

    fn members_epoch(&self) -> Option<u64> {
        self.listening
            .call_once(|| members::listen(self.config.clone(), &self.members));
        self.members.current()
    }

    fn ping(&self) -> bool {
        self.pool
            .get_timeout(Duration::from_secs(2))
            .is_ok_and(|mut c| c.client.simple_query("SELECT 1").is_ok())
    }
}

struct PgTx<'a, 'c> {
    tx: &'a mut Transaction<'c>,
    statements: &'a mut HashMap<String, Statement>,
    trips: &'a RoundTrips,
    /// A member or an organization was written ([`MemberEpoch`]).
    members: bool,
}

/// Round trips to PostgreSQL, counted so a test can hold them down: a transaction costs
/// a fixed frame (`BEGIN`, the writers' lock for a write, `COMMIT`), and each statement
/// the domain runs in it one more (two the first time a connection prepares it).
#[derive(Debug, Default)]
struct RoundTrips {
    transactions: AtomicU64,
    statements: AtomicU64,
}

impl PostgresStore {
    /// `(transactions, statements)` run so far: the statements are the domain's own
    /// (each prepare and each execution one round trip), the transactions' frames apart.
    pub fn round_trips(&self) -> (u64, u64) {
        (
            self.trips.transactions.load(Ordering::Relaxed),
            self.trips.statements.load(Ordering::Relaxed),
        )
    }
}

/// One bound parameter.
type Param = Box<dyn ToSql + Sync>;

/// The type of `col` in `kind` (`id` and `created_at` are text).
fn column_type(kind: Kind, col: &str) -> ColumnType {
    kind.columns()
        .iter()
        .find(|c| c.name == col)
        .map_or(ColumnType::Text, |c| c.ty)
}

/// A document field as text, as SQLite's TEXT affinity stores it.
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        other => Some(other.to_string()),
    }
}

fn as_real(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn as_integer(v: &Value) -> Option<i64> {
    match v {
        // As SQLite's conversion: integers as they are, anything else truncated.
        Value::Number(n) => Some(n.as_i64().unwrap_or_else(|| {
            #[allow(clippy::cast_possible_truncation)]
            let t = n.as_f64().unwrap_or_default() as i64;
            t
        })),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn as_tags(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| v.clone())
}

/// `v` bound as a value of a column of type `ty`.
fn param(v: &Value, ty: ColumnType) -> Param {
    match ty {
        ColumnType::Text => Box::new(as_text(v)),
        ColumnType::Real => Box::new(as_real(v)),
        ColumnType::Integer => Box::new(as_integer(v)),
        ColumnType::Tags => Box::new(as_tags(v)),
    }
}

/// `vs` bound as an array of the column's type (`col = ANY($n)`: one statement
/// whatever the list's length).
fn array_param(vs: &[Value], ty: ColumnType) -> Param {
    match ty {
        ColumnType::Text => Box::new(vs.iter().map(as_text).collect::<Vec<_>>()),
        ColumnType::Real => Box::new(vs.iter().map(as_real).collect::<Vec<_>>()),
        ColumnType::Integer => Box::new(vs.iter().map(as_integer).collect::<Vec<_>>()),
        ColumnType::Tags => Box::new(vs.iter().map(as_tags).collect::<Vec<_>>()),
    }
}

/// `WHERE` clause and its parameters (the org is always `$1`).
fn where_clause(kind: Kind, org: &str, conds: &[Cond]) -> Result<(String, Vec<Param>), StoreError> {
    let mut sql = String::from(" WHERE org = $1");
    let mut args: Vec<Param> = vec![Box::new(org.to_owned())];
    for c in conds {
        match c {
            Cond::Eq(col, v) | Cond::Ge(col, v) | Cond::Le(col, v) => {
                kind.check_column(col)?;
                let op = match c {
                    Cond::Eq(..) => "=",
                    Cond::Ge(..) => ">=",
                    _ => "<=",
                };
                args.push(param(v, column_type(kind, col)));
                sql.push_str(&format!(" AND {col} {op} ${}", args.len()));
            }
            Cond::In(col, vs) => {
                kind.check_column(col)?;
                if vs.is_empty() {
                    sql.push_str(" AND false");
                    continue;
                }
                args.push(array_param(vs, column_type(kind, col)));
                sql.push_str(&format!(" AND {col} = ANY(${})", args.len()));
            }
            Cond::Null(col, is_null) => {
                kind.check_column(col)?;
                let not = if *is_null { "" } else { " NOT" };
                sql.push_str(&format!(" AND {col} IS{not} NULL"));
            }
            Cond::Search(cols, needle) => {
                // ILIKE on "C"-collated text folds ASCII letters only, as SQLite's LIKE.
                args.push(Box::new(format!("%{}%", like_escape(needle))));
                let n = args.len();
                let mut ors = Vec::new();
                for col in cols {
                    kind.check_column(col)?;
                    let text = match column_type(kind, col) {
                        ColumnType::Text => (*col).to_owned(),
                        _ => format!("{col}::text"),
                    };
                    ors.push(format!("{text} ILIKE ${n}"));
                }
                if ors.is_empty() {
                    sql.push_str(" AND false");
                } else {
                    sql.push_str(&format!(" AND ({})", ors.join(" OR ")));
                }
            }
            Cond::Tag(col, tag) => {
                kind.check_column(col)?;
                if column_type(kind, col) != ColumnType::Tags {
                    return Err(StoreError(format!(
                        "{}.{col} is not a tags column",
                        kind.table()
                    )));
                }
                args.push(Box::new(Value::Array(vec![Value::String(tag.clone())])));
                sql.push_str(&format!(" AND {col} @> ${}", args.len()));
            }
        }
    }
    Ok((sql, args))
}

fn refs(args: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter().map(|a| &**a as &(dyn ToSql + Sync)).collect()
}

fn ms(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PgTx<'_, '_> {
    /// The prepared statement for `sql` on this connection.
    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.tx.prepare(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        if self.statements.len() >= STATEMENTS_KEPT {
            self.statements.clear();
        }
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    fn query(
        &mut self,
        sql: &str,
        args: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, StoreError> {
        let s = self.statement(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        Ok(self.tx.query(&s, args)?)
    }

    fn execute(&mut self, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        Ok(self.tx.execute(&s, args)?)
    }
}

impl Tx for PgTx<'_, '_> {
    fn get(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let sql = format!(
            "SELECT doc::text FROM {} WHERE org = $1 AND id = $2",
            kind.table()
        );
        let rows = self.query(&sql, &[&org, &id])?;
        rows.first()
            .map(|r| parse_doc(r.get::<_, String>(0)))
            .transpose()
    }

    fn put(&mut self, kind: Kind, org: &str, doc: &Value) -> Result<(), StoreError> {
        self.members |= changes_membership(kind);
        let (id, created) = identity(doc)?;
        let cols = kind.columns();
        let sql = upsert_sql(kind, |n| format!("${n}"), "$4::text::json");
        let mut args: Vec<Param> = vec![
            Box::new(org.to_owned()),
            Box::new(id.to_owned()),
            Box::new(created.to_owned()),
            Box::new(doc.to_string()),
        ];
        for c in cols {
            args.push(param(doc.get(c.name).unwrap_or(&Value::Null), c.ty));
        }
        self.execute(&sql, &refs(&args))?;
        Ok(())
    }

    fn delete(&mut self, kind: Kind, org: &str, id: &str) -> Result<bool, StoreError> {
        self.members |= changes_membership(kind);
        let sql = format!("DELETE FROM {} WHERE org = $1 AND id = $2", kind.table());
        Ok(self.execute(&sql, &[&org, &id])? > 0)
    }

    fn find_raw(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<String>, StoreError> {
        let (clause, args) = where_clause(kind, org, &q.conds)?;
        kind.check_column(q.sort.0)?;
        // NULLs first going up and last going down, as SQLite sorts them (and as the
        // indexes are built, so one index serves both directions).
        let (dir, key_dir) = match q.sort.1 {
            Order::Asc => ("ASC", "ASC NULLS FIRST"),
            Order::Desc => ("DESC", "DESC NULLS LAST"),
        };
        let limit = q.limit.map_or_else(|| "ALL".to_owned(), |l| l.to_string());
        let (t, col) = (kind.table(), q.sort.0);
        // The page's ids first (from an index), then only their documents: skipping
        // `offset` rows reads no document (as on SQLite).
        let sql = format!(
            "SELECT {t}.doc::text FROM \
             (SELECT id AS page_id, {col} AS page_key FROM {t}{clause} \
              ORDER BY {col} {key_dir}, id {dir} LIMIT {limit} OFFSET {off}) AS page \
             JOIN {t} ON {t}.org = $1 AND {t}.id = page.page_id \
             ORDER BY page.page_key {key_dir}, page.page_id {dir}",
            off = q.offset
        );
        let rows = self.query(&sql, &refs(&args))?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    fn count(&mut self, kind: Kind, org: &str, conds: &[Cond]) -> Result<u64, StoreError> {
        let t = kind.table();
        if conds.is_empty() {
            let rows = self.query(
                "SELECT n FROM tallies WHERE org = $1 AND tbl = $2",
                &[&org, &t],
            )?;
            let n: i64 = rows.first().map_or(0, |r| r.get(0));
            return Ok(u64::try_from(n).unwrap_or_default());
        }
        let (clause, args) = where_clause(kind, org, conds)?;
        let sql = format!("SELECT COUNT(*) FROM {t}{clause}");
        let rows = self.query(&sql, &refs(&args))?;
        let n: i64 = rows.first().map_or(0, |r| r.get(0));
        Ok(u64::try_from(n).unwrap_or_default())
    }

    fn organizations(&mut self) -> Result<Vec<String>, StoreError> {
        let rows = self.query("SELECT id FROM organizations ORDER BY id", &[])?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect())
    }

    fn recall(&mut self, org: &str, key: &str) -> Result<Option<Remembered>, StoreError> {
        let rows = self.query(
            "SELECT tool, digest, result::text, at_ms FROM idempotency WHERE org = $1 AND key = $2",
            &[&org, &key],
        )?;
        rows.first()
            .map(|r| {
                Ok(Remembered {
                    tool: r.get(0),
                    digest: r.get(1),
                    result: parse_doc(r.get::<_, String>(2))?,
                    at_ms: u64::try_from(r.get::<_, i64>(3)).unwrap_or_default(),
                })
            })
            .transpose()
    }

    fn remember(&mut self, org: &str, key: &str, r: &Remembered) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO idempotency (org, key, tool, digest, result, at_ms) \
             VALUES ($1, $2, $3, $4, $5::text::json, $6) ON CONFLICT (org, key) DO NOTHING",
            &[
                &org,
                &key,
                &r.tool,
                &r.digest,
                &r.result.to_string(),
                &ms(r.at_ms),
            ],
        )?;
        Ok(())
    }

    fn grant_get(&mut self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        let rows = self.query(
            "SELECT doc::text FROM oauth_grants WHERE kind = $1 AND id = $2",
            &[&kind, &id],
        )?;
        rows.first()
            .map(|r| parse_doc(r.get::<_, String>(0)))
            .transpose()
    }

    fn grant_put(
        &mut self,
        kind: &str,
        id: &str,
        doc: &Value,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO oauth_grants (kind, id, doc, expires_ms) VALUES ($1, $2, $3::text::json, $4) \
             ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc, expires_ms = excluded.expires_ms",
            &[&kind, &id, &doc.to_string(), &expires_ms.map(ms)],
        )?;
        Ok(())
    }

    fn grant_rewrite(&mut self, kind: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        let n = self.execute(
            "UPDATE oauth_grants SET doc = $1::text::json WHERE kind = $2 AND id = $3",
            &[&doc.to_string(), &kind, &id],
        )?;
        Ok(n > 0)
    }

    fn grant_sweep(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        self.execute(
            "DELETE FROM oauth_grants WHERE expires_ms < $1",
            &[&ms(before_ms)],
        )
    }

    fn link_message(
        &mut self,
        channel: &str,
        message_id: &str,
        org: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO provider_messages (channel, message_id, org, delivery_id) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (channel, message_id) DO UPDATE SET org = excluded.org, delivery_id = excluded.delivery_id",
            &[&channel, &message_id, &org, &delivery_id],
        )?;
        Ok(())
    }

    fn message_owner(
        &mut self,
        channel: &str,
        message_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let rows = self.query(
            "SELECT org, delivery_id FROM provider_messages WHERE channel = $1 AND message_id = $2",
            &[&channel, &message_id],
        )?;
        Ok(rows.first().map(|r| (r.get(0), r.get(1))))
    }

    fn rewrite_remembered(
        &mut self,
        org: &str,
        key: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        self.execute(
            "UPDATE idempotency SET result = $1::text::json WHERE org = $2 AND key = $3",
            &[&result.to_string(), &org, &key],
        )?;
        Ok(())
    }

    fn forget_before(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        self.execute(
            "DELETE FROM idempotency WHERE at_ms < $1",
            &[&ms(before_ms)],
        )
    }
}

/// Tests that need PostgreSQL itself (the schema, the migrations, the snapshot). They
/// run when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step) and say so and
/// pass otherwise; the store's contract (`store::tests`) runs on both stores.
#[cfg(test)]
mod tests;

mod members;
