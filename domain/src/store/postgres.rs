//! The PostgreSQL store: the same tables as SQLite (one per [`Kind`], `(org, id,
//! created_at, doc, <indexed columns>)`), behind the same [`Store`]/[`Tx`], on the
//! blocking `postgres` driver and an `r2d2` pool (the `Store` trait is synchronous).
//!
//! Semantics, as on SQLite:
//!
//! - `read` is a consistent snapshot: `REPEATABLE READ READ ONLY`.
//! - `write` and `rehearse` of one organization run one at a time, and writes of
//!   different organizations side by side: a write first takes transaction-level
//!   advisory locks by its [`WriteScope`] (`store/scope.rs`), in one statement before
//!   anything else: the schema's key shared and its organization's key exclusive
//!   (`Org`), the grants' key exclusive (`Grants`), the schema's key shared (`Sweep`),
//!   or the schema's key exclusive (`All`, which so waits for every writer). The domain
//!   relies on one writer per organization: an event's `sequence` is `max + 1`
//!   (`Op::event`), the debtor's aggregates are read-modify-write deltas
//!   (`ops::aggregates`), outbox claims are read-then-write, all inside one
//!   organization. The transaction is `READ COMMITTED`, so each statement sees every
//!   writer that committed before the locks were granted (a `REPEATABLE READ` snapshot
//!   would be taken by the lock's own statement, before the wait). With no concurrent
//!   writer in its scope, that is serializable for what the scope lets it write. Unique
//!   constraints back it where a race would corrupt: idempotency keys (primary key,
//!   first write wins) and events' `(org, sequence)`.
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

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, Config, NoTls, Statement};
use sha2::{Digest, Sha256};

use super::{
    ColumnType, MemberEpoch, Store, StoreError, Tx, WriteScope,
    sql::{Arg, Cell, Dialect, Driver, Memory, SqlTx},
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
    (
        7,
        include_str!("migrations/postgres/0007_money_centavos.sql"),
    ),
    (
        8,
        include_str!("migrations/postgres/0008_members_notify_table_schema.sql"),
    ),
];

/// The schema version this binary knows.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Prepared statements kept per connection; past this many the cache is emptied (the
/// query shapes are finite, this only bounds a surprise).
const STATEMENTS_KEPT: usize = 512;

/// Executions after which a connection prepares its statements again.
///
/// PostgreSQL keeps a prepared statement's generic plan for the session, until the
/// table's statistics change, and makes it from the table's size when it is planned.
/// Planned on a nearly empty table (a new database, before autovacuum's first
/// `ANALYZE`), a page's `id IN (...)` lookup scanned the whole organization for every
/// row once the table had grown: `dunning_charges_list` fell from 2,000 to 250 req/s
/// after 4,500 debtors were created, and stayed there. Re-prepared every this many
/// executions, such a plan lasts seconds under load, for one extra round trip per
/// statement shape each time (`docs/decisions.md`, "PostgreSQL round trips").
const REPLAN_AFTER: u64 = 5_000;

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
    statements: Prepared,
    /// A transaction of it could not be ended: the pool drops it rather than hand out a
    /// session in an unknown state.
    broken: bool,
}

impl Conn {
    /// Sends a transaction's frame. The pool hands a connection out without pinging it
    /// first (a round trip per transaction): one found closed here (closed while idle),
    /// where nothing of the transaction ran, is replaced in place by a new session with
    /// none of the old statements, and the frame sent once more (`docs/decisions.md`,
    /// "PostgreSQL round trips").
    fn send_frame(&mut self, frame: &str, config: &Config) -> Result<(), StoreError> {
        match self.client.batch_execute(frame) {
            Ok(()) => Ok(()),
            Err(_) if self.client.is_closed() => {
                self.client = config.connect(NoTls)?;
                self.statements = Prepared::default();
                Ok(self.client.batch_execute(frame)?)
            }
            Err(e) => Err(e.into()),
        }
    }
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
            statements: Prepared::default(),
            broken: false,
        })
    }

    /// Only asked with `test_on_check_out`, which is off ([`PostgresStore::begin`]).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// PostgreSQL store.
pub struct PostgresStore {
    pool: r2d2::Pool<Manager>,
    /// Each organization's writers on this replica, sharing a transaction when they
    /// queue (`postgres/group.rs`).
    groups: group::Groups,
    /// Round trips so far, counted so that tests hold them minimal (`round_trips.rs`).
    trips: RoundTrips,
    /// The writers' lock keys of this schema ([`WriteScope`]).
    keys: LockKeys,
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
        let schema: String = first.query_one("SELECT current_schema()", &[])?.get(0);
        let pool = r2d2::Pool::builder()
            .max_size(connections.max(1))
            .min_idle(Some(0))
            .connection_timeout(Duration::from_secs(10))
            .test_on_check_out(false)
            .build_unchecked(Manager {
                config: config.clone(),
            });
        Ok(Self {
            pool,
            groups: group::Groups::default(),
            trips: RoundTrips::default(),
            keys: LockKeys::of(&schema),
            scratch,
            members: Arc::default(),
            listening: Once::new(),
            config,
        })
    }

    /// Runs `f` while holding a session-level advisory lock of this schema: what
    /// processes starting together must do once (seeding the demo data when the database
    /// has no organization) is done by the first, and the others find it done. `f` uses
    /// the store as usual (other connections).
    ///
    /// The lock is held on a connection of its own, outside the pool, and closed at the
    /// end: a session lock lives until it is unlocked or its session ends, so closing the
    /// session releases it on every path, a panic in `f` included. A pooled connection
    /// would go back to the pool still holding it, and every later start would wait.
    pub fn exclusively<R>(&self, f: impl FnOnce() -> R) -> Result<R, StoreError> {
        let mut session = self.config.connect(NoTls)?;
        session.batch_execute(
            "SELECT pg_advisory_lock(hashtextextended('dunning-init:' || current_schema(), 0))",
        )?;
        let out = f();
        // Dropping `session` closes it (and so unlocks) on unwinding too; closing it here
        // says when it fails.
        session.close()?;
        Ok(out)
    }

    /// The scratch schema this store drops when dropped ([`PostgresStore::scratch`]).
    pub fn scratch_schema(&self) -> Option<&str> {
        self.scratch.as_deref()
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        Ok(self.pool.get()?)
    }

    /// The statements that open a write of `scope`, sent as one round trip: `READ
    /// COMMITTED`, and its scope's locks taken before anything else (the domain assumes
    /// one writer per organization: `max + 1` sequences, checks then inserts). A read's
    /// frame is [`READ_FRAME`].
    fn write_frame(&self, scope: WriteScope<'_>) -> String {
        format!(
            "START TRANSACTION ISOLATION LEVEL READ COMMITTED; {}",
            self.keys.statement(scope)
        )
    }

    /// A pooled connection with a transaction of `access` open, or, for a read, about to
    /// be: a read's frame goes just before its first statement ([`Open::unsent`]), so a
    /// read that runs none (all it needs kept, `kept.rs`) costs no round trip. Either
    /// way the frame goes through [`Conn::send_frame`].
    fn begin(&self, access: Access<'_>) -> Result<Open, StoreError> {
        let mut open = Open {
            conn: self.conn()?,
            unsent: Some(READ_FRAME),
            memory: Memory::default(),
            ended: false,
        };
        if let Access::Write { scope, .. } = access {
            open.unsent = None;
            open.conn
                .send_frame(&self.write_frame(scope), &self.config)?;
        }
        Ok(open)
    }

    /// Runs `f` in one transaction ([`PostgresStore::begin`]), counted in
    /// [`PostgresStore::round_trips`]. A read always commits (when it began); a write
    /// commits only when `f` succeeded and `commit` says so.
    fn in_transaction(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        access: Access<'_>,
    ) -> Result<(), DomainError> {
        let mut open = self.begin(access)?;
        if open.unsent.is_none() {
            self.trips.transactions.fetch_add(1, Ordering::Relaxed);
        }
        let (out, members) = open.run(f, self);
        let commit = match access {
            Access::Write { commit, .. } => commit && out.is_ok(),
            Access::Read => true,
        };
        open.end(commit)?;
        if commit && members {
            // At once for this process; the others hear the trigger's NOTIFY.
            self.members.bump();
        }
        out
    }
}

/// The frame of every read.
const READ_FRAME: &str = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// One connection's prepared statements, by SQL text.
#[derive(Default)]
struct Prepared {
    kept: HashMap<String, Statement>,
    /// Executions since `kept` was last emptied ([`REPLAN_AFTER`]).
    uses: u64,
}

/// A pooled connection inside a transaction: ended by [`Open::end`], or rolled back when
/// dropped before (an error or a panic in the domain's closure).
struct Open {
    conn: r2d2::PooledConnection<Manager>,
    /// A read's frame, until its first statement sends it ([`PostgresStore::begin`]).
    unsent: Option<&'static str>,
    /// What the transaction has read, kept from one writer of a group to the next.
    memory: Memory,
    ended: bool,
}

impl Open {
    /// Runs `f` on this transaction of `store` (each statement counted in its round
    /// trips); returns its outcome and whether it wrote a member or an organization.
    fn run(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        store: &PostgresStore,
    ) -> (Result<(), DomainError>, bool) {
        let pg = Pg {
            conn: &mut self.conn,
            config: &store.config,
            trips: &store.trips,
            unsent: &mut self.unsent,
        };
        let mut t = SqlTx::resume(pg, std::mem::take(&mut self.memory));
        let out = f(&mut t);
        self.memory = t.memory;
        (out, t.members)
    }

    /// Ends the transaction with `COMMIT` (`commit`) or `ROLLBACK`; a read that never
    /// sent its frame has none to end.
    fn end(&mut self, commit: bool) -> Result<(), StoreError> {
        self.ended = true;
        if self.unsent.is_some() {
            return Ok(());
        }
        let out = self
            .conn
            .client
            .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" });
        if out.is_err() {
            self.conn.broken = true;
        }
        Ok(out?)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if !self.ended
            && self.unsent.is_none()
            && self.conn.client.batch_execute("ROLLBACK").is_err()
        {
            self.conn.broken = true;
        }
    }
}

/// What a transaction may do.
#[derive(Clone, Copy)]
enum Access<'s> {
    Read,
    Write { scope: WriteScope<'s>, commit: bool },
}

/// The advisory lock keys of one schema's writers. Keys are 64-bit digests of a name
/// that holds the schema, so two stores in one database (tests, clusters) never share a
/// lock, and an organization's key is computed here rather than by the server: the lock
/// statement is plain text with literal integers, sent with the transaction's first
/// round trip and never prepared.
#[derive(Debug)]
struct LockKeys {
    schema: String,
    all: i64,
    grants: i64,
}

impl LockKeys {
    fn of(schema: &str) -> Self {
        Self {
            schema: schema.to_owned(),
            all: lock_key(&format!("dunning-write:{schema}")),
            grants: lock_key(&format!("dunning-grants:{schema}")),
        }
    }

    /// The one statement a write of `scope` starts with.
    fn statement(&self, scope: WriteScope<'_>) -> String {
        let all = self.all;
        match scope {
            WriteScope::Org(org) => {
                let org = lock_key(&format!("dunning-org:{}:{org}", self.schema));
                format!("SELECT pg_advisory_xact_lock_shared({all}), pg_advisory_xact_lock({org})")
            }
            WriteScope::Grants => format!(
                "SELECT pg_advisory_xact_lock_shared({all}), pg_advisory_xact_lock({})",
                self.grants
            ),
            WriteScope::Sweep => format!("SELECT pg_advisory_xact_lock_shared({all})"),
            WriteScope::All => format!("SELECT pg_advisory_xact_lock({all})"),
        }
    }
}

/// The first 8 bytes of SHA-256 of `name`, as PostgreSQL's `bigint` lock key.
fn lock_key(name: &str) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
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

    /// An organization's writes are grouped per organization (`postgres/group.rs`);
    /// the others run in a transaction each.
    fn transact(
        &self,
        scope: WriteScope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError> {
        match scope {
            WriteScope::Org(org) => self.grouped_write(org, f, commit),
            _ => self.in_transaction(f, Access::Write { scope, commit }),
        }
    }

    fn members_epoch(&self) -> Option<u64> {
        self.listening
            .call_once(|| members::listen(self.config.clone(), &self.keys.schema, &self.members));
        self.members.current()
    }

    fn ping(&self) -> bool {
        self.pool
            .get_timeout(Duration::from_secs(2))
            .is_ok_and(|mut c| c.client.simple_query("SELECT 1").is_ok())
    }
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

/// The PostgreSQL driver of the store's one [`SqlTx`]: every statement prepared once
/// per connection and kept ([`STATEMENTS_KEPT`]), each prepare and execution counted.
struct Pg<'a> {
    conn: &'a mut Conn,
    /// To open a session in place of one found closed at a read's frame
    /// ([`Conn::send_frame`]).
    config: &'a Config,
    trips: &'a RoundTrips,
    /// The transaction's frame, when it is a read's not sent yet ([`Open::unsent`]).
    unsent: &'a mut Option<&'static str>,
}

impl ToSql for Arg {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Null => Ok(IsNull::Yes),
            Self::Text(s) => s.to_sql_checked(ty, out),
            Self::Int(n) => n.to_sql_checked(ty, out),
            Self::Json(v) => v.to_sql_checked(ty, out),
            // An array of the column's type (`= ANY($n)`: one statement whatever the
            // list's length).
            Self::List(col, items) => {
                fn each<T>(items: &[Arg], f: impl Fn(&Arg) -> Option<T>) -> Vec<Option<T>> {
                    items.iter().map(f).collect()
                }
                match col {
                    ColumnType::Text => each(items, |a| match a {
                        Self::Text(s) => Some(s.clone()),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                    ColumnType::Integer | ColumnType::Money => each(items, |a| match a {
                        Self::Int(n) => Some(*n),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                    ColumnType::Tags => each(items, |a| match a {
                        Self::Json(v) => Some(v.clone()),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                }
            }
        }
    }

    /// Whatever PostgreSQL inferred for the mark: each variant checks its own type
    /// when bound (`to_sql_checked` above).
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Pg<'_> {
    /// The prepared statement for `sql` on this connection, after the transaction's
    /// frame when it is still to be sent.
    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(frame) = *self.unsent {
            self.conn.send_frame(frame, self.config)?;
            *self.unsent = None;
            self.trips.transactions.fetch_add(1, Ordering::Relaxed);
        }
        let prepared = &mut self.conn.statements;
        prepared.uses += 1;
        if prepared.uses > REPLAN_AFTER {
            prepared.kept.clear();
            prepared.uses = 1;
        }
        if let Some(s) = prepared.kept.get(sql) {
            return Ok(s.clone());
        }
        let s = self.conn.client.prepare(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        let prepared = &mut self.conn.statements;
        if prepared.kept.len() >= STATEMENTS_KEPT {
            prepared.kept.clear();
        }
        prepared.kept.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    fn query(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<postgres::Row>, StoreError> {
        let s = self.statement(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        Ok(self.conn.client.query(&s, &refs)?)
    }
}

impl Driver for Pg<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    fn rows(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<Vec<Cell>>, StoreError> {
        let rows = self.query(sql, args)?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| {
                        Ok(match *r.columns()[i].type_() {
                            Type::INT8 => r.try_get::<_, Option<i64>>(i)?.map(Cell::Int),
                            Type::INT4 => r
                                .try_get::<_, Option<i32>>(i)?
                                .map(|n| Cell::Int(i64::from(n))),
                            _ => r.try_get::<_, Option<String>>(i)?.map(Cell::Text),
                        }
                        .unwrap_or(Cell::Null))
                    })
                    .collect()
            })
            .collect()
    }

    fn texts(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<String>, StoreError> {
        let rows = self.query(sql, args)?;
        Ok(rows
            .iter()
            .map(|r| r.try_get::<_, String>(0))
            .collect::<Result<_, _>>()?)
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        self.trips.statements.fetch_add(1, Ordering::Relaxed);
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a as _).collect();
        Ok(self.conn.client.execute(&s, &refs)?)
    }
}

/// Tests that need PostgreSQL itself (the schema, the migrations, the snapshot). They
/// run when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step) and say so and
/// pass otherwise; the store's contract (`store::tests`) runs on both stores.
#[cfg(test)]
mod tests;

mod group;
mod members;
